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
}
