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
    "entries/share_memory_/peer-raises: peer RuntimeError": "x.share_memory_() of x.memmap(D).permute([0]) tiled (torch.tile(x, [2, 2])) and viewed: the peer's tile result holds plain tensors yet keeps its is_memmap() flag True, so its share_memory_ refuses it ('memmap and shared memory are mutually exclusive features'; its clone() shares), where tclass shares; a candidate for peer-fails-inside, not done (og34l's fresh window, seed 17,271,000, 1,000 programs L6 of methods,index,shape,combine, on main 74910799 too; programs 17,271,328 (L6) of methods,index,shape,combine)",
    "records/to_tensordict/peer-raises: peer IndexError": "x.to_tensordict() of a Rec over no elements (batch [0, 0], opt None) unsqueezed (x[:, None]), stacked with its clone along dim 1, indexed x[::2, bool mask [2, 1, 0]] and cast to float64: the peer raises 'list assignment index out of range' (IndexError) inside, where tclass answers; not investigated (og34l's fresh window, seed 17,272,000, 1,000 programs L8 of features,entries,math,records, on main 74910799 too; programs 17,272,023 (L8) of features,entries,math,records)",
}
