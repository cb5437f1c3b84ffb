"""Running a program in both libraries and judging each step.

A step is one line of source. ``let`` steps evaluate an expression, compare the results
and, when the result is a collection, make it the next ``x``; ``eval`` steps compare the
result and keep ``x``; ``exec`` steps run a statement (``x[0] = ...``, ``del x["a"]``) and
compare ``x`` afterwards. The first step whose outcomes differ ends the program with a
``Finding`` (allowlisted or not); a step that raises in both libraries ends it too, once
the two errors are checked to share the peer's builtin family. At the end, every
collection a step returned is compared again, which catches a result that shares memory
with its source in one library and not in the other.
"""

from __future__ import annotations

import builtins
import os
import re
import tempfile
import warnings
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from . import allowlist
from .chooser import Chooser
from .compare import Snap, builtin_family, differences, is_collection, snapshot
from .info import Info, describe
from .libs import Lib
from .world import Facts, I, t, world


@dataclass(frozen=True)
class Step:
    src: str
    op: str
    family: str
    mode: str = "let"  # "let", "eval" or "exec"
    needs: tuple[str, ...] = ()  # attributes of x tclass must have (else: skipped)
    tags: frozenset[str] = frozenset()  # what the generator knows (allowlist conditions)

    @property
    def line(self) -> str:
        return f"x = {self.src}" if self.mode == "let" else self.src


@dataclass
class Outcome:
    value: Any = None
    snap: Snap = None
    error: BaseException | None = None


@dataclass
class Finding:
    kind: str  # "result", "tclass-raises", "peer-raises", "family", "alias"
    step: Step
    lines: list[str]  # the program up to and including the step
    detail: list[str]
    allowed: str | None = None  # the allowlist entry that covers it
    open: str | None = None  # the open discrepancy it is (allowlist.OPEN), if any

    @property
    def is_bug(self) -> bool:
        """Neither a deliberate difference nor a known open one."""
        return self.allowed is None and self.open is None

    def signature(self) -> str:
        """Findings of one cause share a signature: the op, the kind, and the first
        difference without its keys, numbers and messages."""
        first = self.detail[0]
        if self.kind == "result":
            first = re.sub(
                r"\[[^\]]*\]|\d+", "", first.split(": ")[0] + ": " + first.split(": ")[1][:30]
            )
        else:
            first = " ".join(part.split(":")[0] for part in self.detail[:2])
        return f"{self.step.family}/{self.step.op}/{self.kind}: {first}"

    def report(self) -> str:
        lines = "\n".join(f"    {line}" for line in self.lines)
        details = "\n".join(f"  - {d}" for d in self.detail[:8])
        return f"[{self.kind}] {self.step.family}/{self.step.op}\n{lines}\n{details}"


@dataclass
class Stats:
    programs: int = 0
    steps: Counter[str] = field(default_factory=Counter)  # op -> steps compared
    both_raised: Counter[str] = field(default_factory=Counter)
    missing: Counter[str] = field(default_factory=Counter)  # tclass lacks the method
    peer_lacks: Counter[str] = field(default_factory=Counter)  # the peer lacks the method
    findings: list[Finding] = field(default_factory=list)


Generator = Callable[[Chooser, Info, Facts], "Step | None"]
World = Callable[[Chooser], tuple[list[str], Facts]]


def namespace(lib: Lib, folder: str) -> dict[str, Any]:
    return {
        "__builtins__": builtins,
        "L": lib.module,
        "torch": torch,
        "t": t,
        "I": I,
        "D": folder,
        "x": None,
        **lib.classes(),
    }


def execute(step: Step, ns: dict[str, Any]) -> Outcome:
    code = compile(step.src, "<step>", "exec" if step.mode == "exec" else "eval")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            if step.mode == "exec":
                exec(code, ns)
                value = ns["x"]
            else:
                value = eval(code, ns)
            snap = snapshot(value)
        except Exception as error:
            return Outcome(error=error)
    if step.mode == "let" and is_collection(value):
        ns["x"] = value
    return Outcome(value, snap)


def judge(step: Step, peer: Outcome, mine: Outcome) -> tuple[str, list[str]] | None:
    if peer.error is not None and mine.error is not None:
        family = builtin_family(peer.error)
        if isinstance(mine.error, family):
            return None
        return "family", [
            f"peer {type(peer.error).__name__} ({family.__name__}): {_message(peer.error)}",
            f"tclass {type(mine.error).__name__}: {_message(mine.error)}",
        ]
    if peer.error is not None:
        return "peer-raises", [f"peer {type(peer.error).__name__}: {_message(peer.error)}"]
    if mine.error is not None:
        return "tclass-raises", [f"tclass {type(mine.error).__name__}: {_message(mine.error)}"]
    found = list(differences(peer.snap, mine.snap))
    if "any-order" in step.tags:  # the peer's order is its threads' or a set's
        found = [line for line in found if ": key order: " not in line]
    return ("result", found) if found else None


def _lacks(error: BaseException | None, src: str) -> bool:
    """Whether ``error`` says the peer has no method or function the step calls (its
    records have no ``__delitem__``: ``del record[key]`` raises ``AttributeError``)."""
    if not isinstance(error, AttributeError):
        return False
    if src.startswith("del ") and str(error) == "__delitem__":
        return True
    found = re.search(r"has no attribute (?:or field )?'(\w+)'", str(error))
    return found is not None and (f".{found.group(1)}(" in src or f".{found.group(1)}_(" in src)


def _message(error: BaseException) -> str:
    return " ".join(str(error).split())[:300]


class Program:
    """One program: its world, then up to ``length`` ops drawn from ``generators``."""

    def __init__(self, peer: Lib, mine: Lib, folder: str) -> None:
        os.makedirs(f"{folder}/peer")
        os.makedirs(f"{folder}/tclass")
        self.peer_ns = namespace(peer, f"{folder}/peer")
        self.my_ns = namespace(mine, f"{folder}/tclass")
        self.lines: list[str] = []
        self.kept: list[tuple[int, Any, Any]] = []  # results compared again at the end

    def has(self, names: tuple[str, ...]) -> bool:
        """Whether tclass has the methods (``"L.name"``: module functions) a step needs."""
        for name in names:
            owner = self.my_ns["L"] if name.startswith("L.") else self.my_ns["x"]
            if not hasattr(owner, name.removeprefix("L.")):
                return False
        return True

    def step(self, step: Step, facts: Facts, stats: Stats) -> Finding | None | bool:
        """The finding, None to go on, or False when both raised (the program ends)."""
        self.lines.append(step.line)
        peer, mine = execute(step, self.peer_ns), execute(step, self.my_ns)
        if _lacks(peer.error, step.src):
            stats.peer_lacks[step.op] += 1  # code written for the peer never calls it
            return False
        stats.steps[step.op] += 1
        verdict = judge(step, peer, mine)
        if verdict is None:
            if peer.error is not None:
                stats.both_raised[step.op] += 1
                return False
            if "any-order" in step.tags:
                return False  # what follows would see the keys in another order
            if is_collection(peer.value) and is_collection(mine.value):
                self.kept.append((len(self.lines), peer.value, mine.value))
            return None
        kind, detail = verdict
        finding = Finding(kind, step, list(self.lines), detail)
        finding.allowed = allowlist.covering(finding, facts, peer, mine)
        if finding.allowed is None:
            finding.open = allowlist.open_issue(finding)
        return finding

    def recheck(self) -> tuple[Finding, Outcome, Outcome] | None:
        """Results that changed differently since their step (a view in one library),
        with the two results."""
        for index, peer, mine in self.kept:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                found = list(differences(snapshot(peer), snapshot(mine)))
            if found:
                step = Step(f"<result of line {index}>", "alias", "alias", "eval")
                finding = Finding("alias", step, list(self.lines), found)
                return finding, Outcome(peer), Outcome(mine)
        return None


def run_program(
    c: Chooser,
    libs: tuple[Lib, Lib],
    generators: list[tuple[str, int, Generator]],
    stats: Stats,
    length: int = 4,
    build: World = world,
) -> Finding | None:
    """Build a world (``build``: the family's own, else ``world.world``), apply up to
    ``length`` ops, return the first finding."""
    stats.programs += 1
    lines, facts = build(c)
    with tempfile.TemporaryDirectory(prefix="tclass-fuzz-") as folder:
        program = Program(*libs, folder)
        steps = [Step(line[len("x = ") :], "world", "world") for line in lines[:]]
        steps = [
            s if line.startswith("x = ") else Step(line, "world", "world", "exec")
            for s, line in zip(steps, lines)
        ]
        for count in range(len(steps) + length):
            if count < len(steps):
                step: Step | None = steps[count]
            else:
                info = describe(program.peer_ns["x"])
                step = _draw(c, generators)(c, info, facts)
            if step is None:
                continue
            if not program.has(step.needs):
                stats.missing[step.op] += 1
                continue
            outcome = program.step(step, facts, stats)
            if outcome is False:
                return None
            if outcome is not None:
                assert isinstance(outcome, Finding)
                stats.findings.append(outcome)
                return outcome
        changed = program.recheck()
        if changed is None:
            return None
        finding, peer, mine = changed
        finding.allowed = allowlist.covering(finding, facts, peer, mine)
        if finding.allowed is None:
            finding.open = allowlist.open_issue(finding)
        stats.findings.append(finding)
        return finding


def _draw(c: Chooser, generators: list[tuple[str, int, Generator]]) -> Generator:
    total = sum(weight for _, weight, _ in generators)
    pick = c.integer(0, total - 1)
    for _, weight, generate in generators:
        if pick < weight:
            return generate
        pick -= weight
    raise AssertionError("unreachable")
