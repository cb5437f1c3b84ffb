"""The conformance matrix: each (kind, method) pair runs the method's recipe on the kind
and on its dense TensorDict equivalent, and on the peer's equivalent where the peer is
installed, and compares the outcomes (see README.md).

``TCLASS_MATRIX=full`` runs every pair; the default run takes a sample under a fixed seed.
"""

from __future__ import annotations

import importlib
import importlib.util
import random
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import tclass

from .compare import Outcome, differences, error_differences, run, snapshot
from .gaps import DENSE_DIFFERS, KNOWN_GAPS, NO_WRITE_THROUGH, NOT_APPLICABLE, PEER_DIFFERS
from .kinds import KIND_NAMES, KINDS, Built, Kind, declare
from .methods import NOT_RUN, RECIPES, Env, Recipe, api_names
from .sampling import FULL, SAMPLE_SEED

pytestmark = pytest.mark.conformance

HAS_PEER = importlib.util.find_spec("tensordict") is not None
KINDS_PER_METHOD = 2  # in the default run: each method on this many kinds, drawn by the seed
BY_NAME = {kind.name: kind for kind in KINDS}


def all_pairs() -> list[tuple[str, str]]:
    return [(kind, method) for method in sorted(RECIPES) for kind in KIND_NAMES]


def sampled_pairs() -> list[tuple[str, str]]:
    """Each method on ``KINDS_PER_METHOD`` kinds, and every pair of the reviewed tables
    (so that a fix flips its strict xfail in the default run too)."""
    rng = random.Random(SAMPLE_SEED)
    chosen = {
        (kind, m) for m in sorted(RECIPES) for kind in rng.sample(KIND_NAMES, KINDS_PER_METHOD)
    }
    chosen |= set(KNOWN_GAPS) | set(NOT_APPLICABLE)
    return sorted(chosen, key=lambda pair: (pair[1], pair[0]))


def _params() -> Iterator[Any]:
    for kind, method in all_pairs() if FULL else sampled_pairs():
        marks = []
        if (kind, method) in KNOWN_GAPS:
            marks.append(pytest.mark.xfail(reason=KNOWN_GAPS[kind, method], strict=True))
        yield pytest.param(kind, method, id=f"{kind}-{method}", marks=marks)


def _build(kind: Kind, module: Any, tmp: Path, floats: bool) -> Built:
    tmp.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings():  # the peer's autocast records warn as they are built
        warnings.simplefilter("ignore")
        return kind.build(declare(module), tmp, floats)


def _env(kind: Kind, module: Any, tmp: Path, floats: bool) -> Env:
    counter = iter(range(1000))
    return Env(
        module,
        tmp / "env",
        lambda: _build(kind, module, tmp / f"other{next(counter)}", floats).value,
    )


def _apply(recipe: Recipe, value: Any, env: Env) -> Outcome:
    return run(lambda: recipe.call(value, env))


def _compare(
    want: Outcome, got: Outcome, classes: bool, label: str, ignore: frozenset[str] = frozenset()
) -> list[str]:
    if want.error is not None and got.error is not None:
        return (
            [f"{label}: {line}" for line in error_differences(want.error, got.error)]
            if not classes
            else []
        )
    if want.error is not None:  # where the peer raises, tclass may answer (README)
        return [] if classes else [f"{label}: raised {type(want.error).__name__}; tclass ran"]
    if got.error is not None:
        return [f"{label}: ran; tclass raised {type(got.error).__name__}: {got.error}"]
    return [f"{label}: {line}" for line in differences(want.snap, got.snap, classes, ignore=ignore)]


def check_pair(kind_name: str, method: str, tmp: Path) -> list[str]:
    """What is wrong with ``method`` on ``kind_name`` (nothing: an empty list)."""
    kind, recipe = BY_NAME[kind_name], RECIPES[method]
    mine = _build(kind, tclass, tmp / "tclass", recipe.floats)
    got = _apply(recipe, mine.value, _env(kind, tclass, tmp / "tclass", recipe.floats))
    if (kind_name, method) in NOT_APPLICABLE:
        return _not_applicable(got, kind_name, method, type(mine.value).__name__)
    problems: list[str] = []
    ignore = frozenset({"is_locked"} if kind.locked_results else ())
    if mine.dense is not None and (kind_name, method) not in DENSE_DIFFERS:
        oracle = Env(
            tclass, tmp / "dense", lambda: _build(kind, tclass, tmp / "o", recipe.floats).dense
        )
        want = _apply(recipe, mine.dense, oracle)
        problems += _compare(want, got, False, "dense", ignore)
        after = differences(snapshot(mine.dense), snapshot(mine.value), False, "after")
        problems += [f"dense: {line}" for line in after] if not problems else []
    if mine.check is not None and got.error is None and method not in NO_WRITE_THROUGH:
        problems += [f"view: {line}" for line in _check(mine)]
    if HAS_PEER and method not in PEER_DIFFERS and (kind_name, method) not in PEER_DIFFERS:
        problems += _peer(kind, recipe, got, tmp, ignore)
    return problems


def _check(built: Built) -> list[str]:
    assert built.check is not None
    outcome = run(built.check)
    return [] if outcome.error is None else [f"{type(outcome.error).__name__}: {outcome.error}"]


def _peer(kind: Kind, recipe: Recipe, got: Outcome, tmp: Path, ignore: frozenset[str]) -> list[str]:
    peer = importlib.import_module("tensordict")
    theirs = _build(kind, peer, tmp / "peer", recipe.floats)
    want = _apply(recipe, theirs.value, _env(kind, peer, tmp / "peer", recipe.floats))
    return _compare(want, got, True, "peer", ignore)


def _not_applicable(got: Outcome, kind_name: str, method: str, type_name: str) -> list[str]:
    error = got.error
    if error is None:
        return [f"listed as not applicable, but ran: {NOT_APPLICABLE[kind_name, method]}"]
    names = (method.strip("_"), BY_NAME[kind_name].name, type_name)
    if not isinstance(error, tclass.TclassError) or not any(n in str(error) for n in names):
        return [
            f"not a TclassError naming {method!r} or the class: {type(error).__name__}: {error}"
        ]
    return []


@pytest.mark.parametrize(("kind", "method"), list(_params()))
def test_pair(kind: str, method: str, tmp_path: Path) -> None:
    needs = KINDS[KIND_NAMES.index(kind)].needs
    if needs is not None:
        pytest.importorskip(needs, reason=f"the {kind} kind needs {needs} (the test extra)")
    problems = check_pair(kind, method, tmp_path)
    assert not problems, "\n".join(problems)


def test_every_method_has_a_recipe_or_a_reason() -> None:
    names = set(api_names())
    missing = sorted(names - set(RECIPES) - set(NOT_RUN))
    assert not missing, (
        f"methods with neither a recipe in methods.py nor a NOT_RUN reason: {missing}"
    )
    stale = sorted((set(RECIPES) | set(NOT_RUN)) - names)
    assert not stale, f"recipes or NOT_RUN entries for names the API lacks: {stale}"
    assert not set(RECIPES) & set(NOT_RUN)
    assert all(reason.strip() for reason in NOT_RUN.values())


def test_the_tables_name_real_pairs() -> None:
    tables = {"KNOWN_GAPS": KNOWN_GAPS, "NOT_APPLICABLE": NOT_APPLICABLE, "DENSE": DENSE_DIFFERS}
    for table_name, table in tables.items():
        for kind, method in table:
            assert kind in BY_NAME and method in RECIPES, f"{table_name}: {(kind, method)}"
            assert table[kind, method].strip(), f"{table_name}: {(kind, method)} has no reason"
    assert not set(KNOWN_GAPS) & set(NOT_APPLICABLE)
    assert all(method in RECIPES for method in NO_WRITE_THROUGH)
    for entry in PEER_DIFFERS:
        method = entry if isinstance(entry, str) else entry[1]
        assert method in RECIPES, f"PEER_DIFFERS: {entry}"


def test_every_kind_builds_its_batch(tmp_path: Path) -> None:
    for kind in filter(Kind.available, KINDS):
        built = _build(kind, tclass, tmp_path / kind.name, False)
        want = (3, 4, 1) if kind.name == "unsqueezed" else (3, 4)
        assert tuple(built.value.batch_size) == want, kind.name
        if built.dense is not None:
            assert type(built.dense) is tclass.TensorDict
            assert built.dense.is_locked == built.value.is_locked, kind.name
