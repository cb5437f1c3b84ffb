# ruff: noqa: E501  (a data file: one signature per line)
"""Discrepancies the fuzzer found and that are not fixed yet: signatures (``Finding.
signature()``: family/op/kind and the first difference, numbers and keys left out) and
what they are. These are bugs or undecided differences, not deliberate ones (those are
``allowlist.ENTRIES``); the runner reports them as "open" apart from new discrepancies,
and the pytest run fails only on new ones. Remove a line when its discrepancy is fixed.
A signature is removed when none of the programs that showed it before a change shows it
after (as open or new); signatures that random runs merely stopped showing stay. The
history of the runs and prunings, with each branch's windows and before/after numbers, is
in ``open_findings_log.md`` beside this file: add one paragraph there per change.
"""

from __future__ import annotations

OPEN: dict[str, str] = {
    "extra/unpad_sequence/result: result: key order": "unpad_sequence(pad_sequence([x, x[:1]], return_mask=True)) of a collection holding a Python value ('s': 'a' over [4, 2]): the peer's padded value stack keeps one member per sequence, so a member it did not pad reads back as its input's kind (one NonTensorData); tclass's pad_sequence scatters every member's values into one flat per-element array (`_scatter_values`, stack dims the union of the members': `_scattered_stack_dims`), so once any member is padded every row reads per element (a list of 'a'); where no member is padded it stacks them as stack does (og33a: a value over no elements kept, 17,000,471 shows only the decided key order now). Tried (og33a): `_stack_ragged_values` (pad each member, join_non_tensor 'stack') for every case still flattens a NonTensorData beside a padded NonTensorStack; a fix needs pad_sequence of values to keep a member per sequence (a lazy value stack, as for ragged values); the key order in these findings is decided (`_merged_in_order_of_holders`: the peer's pad_sequence sets the leaves in the order of a set of keys) (og32a's fresh window, seed 17,000,000, 600 programs L4 of extra; programs 17,000,114 (L4) of extra)",
    "entries/from_dataclass/result: result: peer Tensor[torch.int, shape": "L.TensorDict.from_dataclass(x, as_tensorclass=True) of a record over a maybe_dense_stack (then unflatten) whose 'label' was set to a MetaData([1, 2]): the peer's result reads 'label' as a tensor of the list and 'inner' as a dict, tclass's keeps the list and the Inner record; a candidate for records-predictable (peer lossy), not investigated (og33a's fresh window, seed 17,100,000, 1,000 programs L8, on main d74afc11 too; programs 17,100,599 (L8) of features,index,shape,combine)",
    "index/update_at_/peer-raises: peer RuntimeError": "x.update_at_(x[idx].apply(torch.zeros_like), I[idx]) (a tensor index) of a collection given share_memory_() that holds a NonTensorData (6, over no elements): the peer refuses ('attempting to update a leaf in-place with a shared tensordict, but the new value does not match the previous'), over elements it fails inside ('Synchronized' object cannot be interpreted as an integer); tclass writes (the value kept); a candidate for peer-fails-inside (og33a's fresh window, seed 17,101,000, 1,000 programs L8, on main d74afc11 too; programs 17,101,482 (L8) of methods,index,shape,combine)",
    "index/setitem/result: result: peer Tensor[torch.float, sha": "x[mask] = 1.5 of a cat of a lazy stack of a TensorDictParams whose nested 'm' was replaced by set_non_tensor('m', [1, 2]): the peer's value elements at the mask read a float tensor (1.5 written into the Python value), tclass's keep the list [1, 2]; a candidate for values-kept-shared, not investigated (og33a's fresh window, seed 17,101,000, 1,000 programs L8, on main d74afc11 too; programs 17,101,901 (L8) of methods,index,shape,combine)",
}
