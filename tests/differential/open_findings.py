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
    "entries/setdefault/result: result: peer py ('str', ''), tclass li": "x.setdefault((\"n\", \"zz\"), \"\") of LazyStackedTensorDict.load_memmap(...) of a lazy stack [1, 2] (stack dim 1) whose nested 'n' is [1, 2, 3]: both store one '' per element, but the peer's NonTensorStack of batch [1, 2, 3] holds its members' NonTensorData (one '' each: tolist() [['', '']], one level less than its batch size) where tclass's lists [[['', '', ''], ['', '', '']]]; the snapshots differ only after load_memmap (device cpu); not decided (ol31a's fresh window, seed 16,301,000, 1,000 programs, L8, on main 6ef83196 too; programs 16,301,688 (L8) of features,entries,math,records)",
    "extra/merge_tensordicts/result: result.kind: peer 'Rec', tclass 'TensorDict": "merge_tensordicts(rec, rec.clone(), ...) with a record first: the peer's result is a record of its class (its None fields kept), tclass's a TensorDict (its merge lives in the engine layer, below records; a record's None fields unset); a candidate for a result of the first input's kind where every input is a record of its class, not decided (fz31b, session 31: the new extra family, 16,491,000-16,491,399 L4; programs 16,491,036 (L4) of extra)",
    "extra/merge_tensordicts/result: result.kind: peer 'LazyStackedTensorDict', ": "merge_tensordicts with a lazy stack without tensors first: the peer's result is a lazy stack (its first input's empty(recurse=True)), tclass's a TensorDict; with tensors the peer fails inside (decided, `_merge_of_lazy_fails_inside`); not decided (fz31b, session 31: the extra family; programs 16,491,009 (L4) of extra)",
    "extra/unpad_sequence/result: result: key order": "unpad_sequence(pad_sequence([x, x[:1], ...], return_mask=True)) of an HDF5 file (to_h5): tclass lists the keys sorted ('a', 'c', 'd', as its file reads them), the peer in its own order ('d', 'c', 'a'); not investigated further (fz31b, session 31: the extra family; programs 16,491,010 (L4) of extra)",
    "extra/merge_tensordicts/result: result: keys": "merge_tensordicts(x.select('b'), x.exclude('b')): the peer's result drops an empty nested collection 'm' that only a later input holds (its merge walks tensors), tclass keeps it (fz31b; programs 16,435,281 (L4) of extra)",
    "extra/merge_tensordicts/result: result.batch_size: peer (, ), tclass (, , )": "merge_tensordicts of a select and an exclude: a nested collection only the later input holds ('n', 'm' of batch [0, 3, 3]) gets its parent node's batch [0, 3] in the peer (dropping its own dim), its own in tclass (fz31b; programs 16,435,799 (L4) of extra)",
    "extra/collate/result: result.kind: peer 'TensorDict', tclass 'Laz": "collate of the rows of a lazy stack of HDF5 files whose nested entries differ in shape: tclass's result is a lazy stack of the rows (the files), the peer's a TensorDict; not investigated (fz31b; programs 16,435,545 (L4) of extra)",
    "entries/grad/tclass-raises: tclass HeterogeneousEntryError": "x.float().requires_grad_().grad of L.cat([x, x[:1]], 0) of a lazy stack of uneven chunks (members [2, 3, 3] and [1, 3, 3]) after a backward: tclass's read of the grad stacks the members' grads and raises HeterogeneousEntryError, the peer answers; not investigated (hn32h's window, seed 32,871, 1,000 programs L6, on main 194711be too; programs 33,374 (L6) of features,index,shape,combine)",
}
