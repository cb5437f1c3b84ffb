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
    "index/getitem/result: result: peer py ('str', 'x y'), tclass": "the results differ (2, 2026-12-04; inv20b: not shown again, no program known (its old program 8,192 of the five families shows nothing now): index,combine,shape,entries 10,800,000-10,815,999 (--length 6, 4, 8), entries,combine 10,800,000-10,805,999 and the five families 0-31,999 (--length 4) show no program with it; by hand, value stacks of 'x y' expanded, unsqueezed or lazily stacked twice and indexed by ints, (), None, ..., a list, a mask or a 0-d tensor agree (the peer's NonTensorData[()] raises, tclass's answers))",
    "shape/unbind/result: result: peer value (('py', 'NoneType',": "the results differ (1 in 40,000 programs, 2026-12-04, fuzz27s: a Python value the peer holds as a stack of stacks (unsqueezed or expanded twice, or over no elements), where tclass keeps one stack dim; inv20b: not shown again (its old program 57,124 shows nothing now): index,combine,shape,entries 10,800,000-10,815,999 (--length 6, 4, 8), entries,combine 10,800,000-10,805,999 and the five families 0-31,999 (--length 4) show no program with it; by hand, `unbind(0/1/-1)` after two unsqueeze / expand / lazy_stack of a TensorDict holding NonTensorData(None) or a str, or of a Rec, over 0 and 2 elements, agree)",
    "shape/reshape/result: result.kind: peer 'TensorDict', tclass 'Laz": "the results differ (2 in 32,034 programs, 2026-12-05, lead: reshape of a lazy stack into size-1 dims, which the peer densifies, dropping a nested collection's own size-1 dim as in its unflatten (fuzz27c's rule covers unflatten only); inv20b: no program known: index,combine,shape,entries 10,800,000-10,815,999 (--length 6, 4, 8), entries,combine 10,800,000-10,805,999 and the five families 0-31,999 (--length 4) show no program with it; by hand, reshape / view of lazy stacks (dims 0 and 1, one or two members with a nested collection of its own size-1 dims) into size-1 dims agree (stays-lazy's `_NESTED_DIM_OPS` takes reshape and view now))",
}
