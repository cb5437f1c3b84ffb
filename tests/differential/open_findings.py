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
    "index/getitem/result: result.<members>.is_locked: peer True, tclass False": "the results differ (1)",
    "shape/repeat_interleave/result: result.<members>.<members>.kind: peer 'LazyStackedTensorDict', ": "the results differ (1; fz-shape: repeats 0 on a lazy stack, as the result.kind line below)",
    "shape/repeat_interleave/result: result.batch_size: peer (, ), tclass (, , )": "the results differ (1; fz-shape: the peer drops the other batch dims for repeats 0 along a lazy stack's regrouped dim, a peer bug)",
    "shape/repeat_interleave/result: result: peer list of , tclass py ('st": "the results differ (12 in 90 s; fz-shape: along dim 0 of a 0-d batch tclass unsqueezes, keeping a Python value one value, README 'expand and unsqueeze keep a Python value one value'; the peer makes a per-element list)",
    "shape/repeat_interleave/result: result: peer values (('seq', 'list', [": "the results differ (6 in 90 s; fz-shape: as the 'peer list of' line above)",
    "index/getitem/result: result: peer py ('str', 'x y'), tclass": "the results differ (2, 2026-12-04)",
    "combine/maybe_dense_stack/result: result.kind: peer 'LazyStackedTensorDict', ": "the results differ (2 in 40,000 programs, 2026-12-04, fuzz27s: a lazy stack regrouped where the peer densifies, or the reverse (members of dims of size 0 or 1))",
    "shape/unbind/result: result: peer value (('py', 'NoneType',": "the results differ (1 in 40,000 programs, 2026-12-04, fuzz27s: a Python value the peer holds as a stack of stacks (unsqueezed or expanded twice, or over no elements), where tclass keeps one stack dim)",
    "index/setitem/peer-raises: peer RuntimeError": "tclass answers where the peer raises (4 in 30,000 programs, 2026-12-04, fuzz27i: a dict of a nested collection with more batch dims written at an index (`x[...] = x[...].to_dict()`): the peer expands it to the wrong size)",
    "shape/reshape/result: result.kind: peer 'TensorDict', tclass 'Laz": "the results differ (2 in 32,034 programs, 2026-12-05, lead: reshape of a lazy stack into size-1 dims, which the peer densifies, dropping a nested collection's own size-1 dim as in its unflatten (fuzz27c's rule covers unflatten only))",
    "entries/update/result: result: peer Tensor[torch.float, sha": "the results differ (2 in 32,034 programs, 2026-12-05, lead: update(x.to_dict()) of a record stacked twice over no elements; not investigated)",
    "math/|/peer-raises: peer KeyError": "tclass answers where the peer raises (1 in 30,000 shape,combine,math programs, 2026-12-05, fuzz27s2: as the '>' line)",
    "shape/squeeze/result: result.<members>: peer value (('py', 'int', -),": "the results differ (1 in 30,000 shape,combine,math programs, 2026-12-05, fuzz27s2: a Python value in the members of a stack of stacks: the peer's one value, tclass's per-element list)",
    "math/pow/result: result: peer py ('NoneType', None), tc": "the results differ (1 in 30,000 shape,combine,math programs, 2026-12-05, fuzz27s2: a record's label over no elements after tile: the peer's None, tclass's empty list)",
    "shape/unbind/result: result: peer py ('str', 'x y'), tclass": "the results differ (1 in 30,000 shape,combine,math programs, 2026-12-05, fuzz27s2: a record's label after where/stack/permute of a memory-mapped record, unbound: the peer's one value, tclass's list; not investigated)",
    "math/%/result: result: values differ": "the results differ (1 in 30,000 math programs, 2026-12-05, fuzz27s2: % of the product of a lazy stack's elements (prod() then % a number): the two products differ in their last bits, which % magnifies (likely the order of the multiplications; not investigated))",
    "entries/setattr/result: result.kind: peer 'TensorDict', tclass 'Inn": "the results differ (1 in 60,000 index,entries programs, 2026-12-05, fuzz30a: an empty TensorDict assigned to a field declared as a record, in a named indexed record: tclass casts it to the field's class (see \"Casting follows the annotation\"), the peer keeps a TensorDict; old35 gave the cast record the record's dim names, as a TensorDict's set does (they were lost); the kind left is the deliberate cast, whose rule (_cast_to_the_field) did not cover the names line)",
    "index/getitem/result: result.is_locked: peer True, tclass False": "the results differ (1 in 60,000 index,entries programs, 2026-12-05, fuzz30a: rows of rows of a saved collection without tensors: tclass locks the rows of the saved one (saved in a folder), not their rows (not saved, no tensor to be memory-mapped); the peer's flag goes on)",
    "entries/load_state_dict/result: result: peer 'str', tclass 'NoneType'": "the results differ (1 in 4,351 derived-world programs, 2026-12-05, kinds32p: load_state_dict of an unsqueezed, padded record: the padded slots of its Python value read None in tclass, the value in the peer; not investigated)",
    "shape/roll/result: result.names: peer , tclas": "the results differ (1 in 4,351 derived-world programs, 2026-12-05, kinds32p: roll of a named lazy stack: the peer drops the dim names, tclass keeps them (not specific to derived worlds); not investigated)",
    "records/select/result: result: peer list of , tclass py ('No": "the results differ (1 in 3,000 records programs, 2026-12-05, fuzz34a: select of a lazy stack of records over no elements (indexed, load_state_dict, apply, lazy_stack): the peer's int field an empty per-element list, tclass None)",
    "records/update/result: result: peer Tensor[torch.int, shape": "the results differ (1 in 3,000 records programs from seed 1,600,000, 2026-12-05, fuzz34c: update(x.to_dict()) of a lazy stack of nocast records: the peer splits the nested lists per element (and makes the int field a tensor), tclass gives each member the whole list of an Any field as one value; not investigated)",
    "world/world/result: result: peer list of , tclass error (": "the results differ (1 in 3,000 records programs, 2026-12-05, fuzz34d: lazy_stack of two Auto records whose Optional[Tensor] field got lists of other shapes ([3] and [1, 2]): the peer keeps the lists (a stack of them), tclass's autocast makes them tensors (a deliberate cast), so the field of the stack reads as the peer's ragged tensors do: a HeterogeneousEntryError; not decided)",
    "index/update_at_/peer-raises: peer TypeError": "tclass answers where the peer raises (1 in 6,000 programs at seed 2,400,000, 2026-12-05, fuzz35b: update_at_ of a lazy stack holding a Python value under a nested key set by setdefault: the peer fails inside ('NoneType' object is not iterable); not allowlisted yet)",
    "shape/squeeze/result: result: peer values (('seq', 'list', [": "the results differ (inv18c; left by inv18d, as the other 'over no elements' lines: 1 in shape,combine 10,000-14,999, program 10,347: `x.memmap(D); x.batch_size = [2]; x = x.expand([1, 2]); x = x.squeeze()` of a [2, 0] TensorDict with a nested NonTensorData(2, batch_size=[2, 0]): the peer's m.v reads as a per-element list of empty lists ([[], []]), tclass's as the one value 2 (a NonTensorData over no elements read whole: which is right is the open 'over no elements' question, not decided here))",
}
