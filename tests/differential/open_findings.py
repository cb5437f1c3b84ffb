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
    "shape/reshape/result: result.kind: peer 'TensorDict', tclass 'Laz": "x.reshape([1, 1, 1, 1]) of a lazy stack (stack dim 1 after a transpose, members of batch [1]) named ['i', None]: the peer's result is a dense TensorDict without names (its reshape into [1, 1, 1] stays lazy and keeps 'i'), tclass's stays lazy (`stacking-keeps`, `_stays_lazy`) and keeps 'i' on its first dim, where its TensorDict's reshape drops names; the top-level names line is what `_stays_lazy` does not cover (it allows it over no elements only): decide whether a lazy reshape into dims of size 1 keeps names, not done (fz33b's fresh window, seed 17,055,000, 1,000 programs L20 of methods,index,shape,combine, on main d74afc11; programs 17,055,200 (L20) of methods,index,shape,combine)",
    "extra/assert_close/family: peer ValueError (ValueError) tclass NotCloseError": "assert_close(x, x.apply(torch.zeros_like), rtol=0.1, atol=0.1) of a dense_stack_tds of a lazy stack of a named collection, indexed x[:, None] and written x[1, -1] = x[1, -1].to_dict(): the peer fails on its own names inside ('Not all dim names match', [None, 'i', None] against [None, None, None]), tclass reports the values not close (a NotCloseError, an AssertionError); a candidate for peer-fails-inside, not investigated (og33j's fresh window, seed 17,114,000, 600 programs L8, on main 3f4136c7 too; programs 17,114,086 (L8) of extra,index)",
    "entries/from_tuple/result: result.batch_size: peer (, , , ), tclass (, ": "TensorDict.from_tuple(tuple(x.values()), auto_batch_size=True) of an HDF5 file (to_h5) holding a nested empty TensorDict of batch [1, 4, 2, 4] beside a tensor of shape [1, 4, 2, 3, 1]: the peer's nested node keeps its batch size [1, 4, 2, 4], tclass's auto batch size gives it [1, 4, 2, 3, 1] (the tensor's shape, through the file's group); not investigated (hn33l's window, seed 33,338,000, 1,000 programs L6 of methods,index,shape,combine, on main 88f63f63; programs 33,338,862 (L6) of methods,index,shape,combine)",
}
