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
    "shape/reshape/result: result.kind: peer 'TensorDict', tclass 'Laz": "the results differ (2 in 32,034 programs, 2026-12-05, lead: reshape of a lazy stack into size-1 dims, which the peer densifies, dropping a nested collection's own size-1 dim as in its unflatten (fuzz27c's rule covers unflatten only); inv20b: no program known: index,combine,shape,entries 10,800,000-10,815,999 (--length 6, 4, 8), entries,combine 10,800,000-10,805,999 and the five families 0-31,999 (--length 4) show no program with it; by hand, reshape / view of lazy stacks (dims 0 and 1, one or two members with a nested collection of its own size-1 dims) into size-1 dims agree (stays-lazy's `_NESTED_DIM_OPS` takes reshape and view now)); fz27c: index,combine,shape,entries 15,730,000-15,730,999 (--length 6) and 15,740,000-15,740,999 (--length 8), the five families 15,750,000-15,750,999 (--length 4) show no program with it either",
}
