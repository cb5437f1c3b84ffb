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
    "index/getitem/result: result.<members>.kind: peer 'LazyStackedTensorDict', ": "x[None, mask] (a bool mask over dims 1-2) of a lazy stack (LazyStackedTensorDict(x, stack_dim=1)) of a lazy stack (stacked at 3) of collections over no elements (batch [3, 3, 0], a nested collection of batch [3, 3, 0, 1]): the peer's result members are lazy stacks of 3 members (nested ones too), tclass's are dense TensorDicts; not investigated (og34a's fresh window, seed 17,183,000, 1,000 programs L8 of methods,index,shape,combine, on main 7d5ee15a too; programs 17,183,251 (L8) of methods,index,shape,combine)",
    "index/setitem/peer-raises: peer NotImplementedError": "x[:3] = x[:3].apply(torch.ones_like) of a shared-memory (share_memory_()) collection holding a None value, rebuilt by from_pytree(x.to_pytree()) of a maybe_dense_stack: the peer raises NotImplementedError ('Updating NoneType within a shared/memmaped structure is not supported'), tclass writes; a candidate for peer-fails-inside (check what tclass writes into the None value), not investigated (og34a's fresh window, seed 17,183,000, 1,000 programs L8 of methods,index,shape,combine, on main 7d5ee15a too; programs 17,183,258 (L8) of methods,index,shape,combine)",
}
