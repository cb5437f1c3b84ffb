"""Differential fuzzing of tclass against the peer, tensordict 0.15.3.

A *program* is a few lines of Python source: one builds a random collection, the others
apply public operations to it (``x.reshape(-1)``, ``x[0, 1:] = x[0, 1:].clone().zero_()``,
``torch.stack([x, x.clone()], 1)``...). Each line runs in both libraries, in namespaces
that differ only in which library ``L`` is, and the outcomes are compared: the results
(structure, keys and their order, batch size, names, dtypes, values, Python values as
read), raising versus not raising, and the builtin family of the errors. Because the
program is source, a discrepancy is reported as a script that reproduces it.

- ``chooser.py``: where the random choices come from (``random.Random`` or hypothesis).
- ``libs.py``: the two libraries and the tensorclasses declared in each.
- ``world.py``: the random collections (nested TensorDicts, Python values, lazy stacks,
  tensorclasses, memory-mapped copies, HDF5 files) and the tensor helper ``t`` the sources use.
- ``ops_*.py``: the operations, one generator per op, grouped in families; the
  ``records`` family (``ops_records.py``) starts from a world of its own: records of
  each class option, built every way, carried through I/O and conversions.
- ``compare.py``: snapshots of results in library-neutral form, and their differences.
- ``allowlist.py``: the deliberate differences, each citing the README bullet it comes from
  (their rules in the ``allow_*.py`` beside it: ``allow_ops.py``, ``allow_fields.py``,
  ``allow_structure.py``, ``allow_values.py``, ``allow_names.py``, ``allow_records.py``,
  ``allow_h5.py``, ``allow_saved.py`` and others; what they share in ``allow_common.py``,
  and a detail line's key path is ``compare.key_path``).
- ``engine.py``: runs a program in both libraries and reports the first discrepancy.
- ``run.py``: the standalone runner (``python -m tests.differential.run --examples 20000``).
- ``test_differential.py``: the short pytest run (hypothesis, marker ``peer``).
"""
