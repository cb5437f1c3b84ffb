"""The short differential run: random programs in tclass and the peer, outcomes compared.

Deterministic: hypothesis is derandomized (the same programs every run) and the seeded
programs are numbered as the standalone runner numbers them (``python -m
tests.differential.run --replay N`` shows program N). A failure prints the program as a
script; anything the allowlist does not cover is a bug to fix in tclass.
"""

from __future__ import annotations

import pathlib
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from . import allowlist
from .chooser import DataChooser, RandomChooser
from .engine import Finding, Stats, Step, run_program
from .libs import Lib, libraries
from .ops import FAMILIES, generators, world_of

pytestmark = pytest.mark.peer

PROGRAMS = settings(
    max_examples=40,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
README = pathlib.Path(__file__).parents[2] / "README.md"
# The records family's programs write folders (memmap, save, consolidate): fewer of them,
# and fewer numbered programs, keep the run as long as it was with five families.
EXAMPLES = {"records": 24}
NUMBERED = 160


@pytest.fixture(scope="module")
def libs() -> tuple[Lib, Lib]:
    pytest.importorskip("tensordict")
    found = libraries()
    assert found is not None
    return found


def _check(stats: Stats) -> None:
    bugs = [finding for finding in stats.findings if finding.is_bug]
    assert not bugs, "\n\n".join(finding.report() for finding in bugs[:3])


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_programs_of_one_family(family: str, libs: tuple[Lib, Lib]) -> None:
    gens = generators([family])
    build = world_of([family])

    @settings(PROGRAMS, max_examples=EXAMPLES.get(family, PROGRAMS.max_examples))
    @given(st.data())
    def run(data: st.DataObject) -> None:
        stats = Stats()
        run_program(DataChooser(data), libs, gens, stats, length=4, build=build)
        _check(stats)

    run()


@PROGRAMS
@given(data=st.data())
def test_programs_of_every_family(data: st.DataObject) -> None:
    libs = libraries()
    if libs is None:
        pytest.skip("needs the peer library tensordict")
    stats = Stats()
    run_program(DataChooser(data), libs, generators(sorted(FAMILIES)), stats, length=6)
    _check(stats)


def test_numbered_programs(libs: tuple[Lib, Lib]) -> None:
    """Programs 0..159 of the runner (all families, 4 ops each)."""
    stats = Stats()
    gens = generators(list(FAMILIES))  # the runner's order: program n is the runner's n
    for n in range(NUMBERED):
        run_program(RandomChooser(n), libs, gens, stats, length=4)
    assert stats.programs == NUMBERED and sum(stats.steps.values()) > 2 * NUMBERED
    _check(stats)


def test_the_runner_reports_and_exits_clean(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("tensordict")
    from .run import main

    assert main(["--examples", "20", "--seed", "5000", "--stats"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^20 programs, \d+ steps compared", out, re.M)
    assert "\n0 discrepancies" in out


def test_the_runner_lists_the_open_signatures_it_saw(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--open-seen``: each OPEN signature a run showed, with its programs, then each
    new one; allowed findings are not listed."""
    pytest.importorskip("tensordict")
    from . import run

    def fake(
        chooser: RandomChooser, libs: object, gens: object, stats: Stats, *rest: object
    ) -> None:
        n = stats.programs  # programs 0.. in order (--seed 0)
        stats.programs += 1
        if n % 2:
            step = Step(src="x.op()", op="op", family="fam")
            why = {1: "open", 3: "open", 5: None}[n]
            stats.findings.append(
                Finding("result", step, ["x"], ["result: peer 1, tclass 2"], open=why)
            )

    monkeypatch.setattr(run, "run_program", fake)
    assert run.main(["--examples", "6", "--seed", "0", "--open-seen"]) == 1  # program 5 is new
    out = capsys.readouterr().out
    seen = [line for line in out.splitlines() if line.endswith("]")]
    assert seen == [
        "open-seen 'fam/op/result: result: peer , tclass ' programs [1, 3]",
        "new-seen 'fam/op/result: result: peer , tclass ' programs [5]",
    ]


def test_every_allowed_difference_cites_the_readme() -> None:
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Differences from tensordict") :]
    names = [entry.name for entry in allowlist.ENTRIES]
    # One entry per documented rule; the cap keeps the set small enough to review.
    assert len(names) == len(set(names)) and len(names) <= 24
    for entry in allowlist.ENTRIES:
        assert entry.readme in section, f"{entry.name}: {entry.readme!r} not in the README"
