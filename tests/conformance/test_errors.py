"""The differential check of errors: every bad call of ``bad_calls.py`` on each kind of
collection a user holds, in tclass and, where it is installed, in the peer.

tclass's own contract (always checked): the call raises a :class:`tclass.TclassError`
whose message names the key, field, shape or dim that is wrong (one of the call's
words), or, for an error the user's own function raised, that very error unchanged.

The default run takes each bad call on two kinds drawn under a fixed seed (every kind at
least once, every pair of the tables below); ``TCLASS_MATRIX=full`` runs every pair.

Against the peer (skipped without ``tensordict``): where the peer raises a builtin ``E``,
tclass's error is an ``E`` too; where the peer runs the call and tclass refuses it, the
pair is in ``PEER_LOSSY`` (the peer's answer is wrong or loses data; README "Differences
from tensordict" says so); where the peer crashes on its own internals, the pair is in
``PEER_CRASHES`` and tclass's error is the clearest builtin instead; where the peer
raises and tclass answers, the pair is in ``TCLASS_ANSWERS``.
"""

from __future__ import annotations

import importlib.util
import random
import warnings
from pathlib import Path
from typing import Any

import pytest

import tclass

from .bad_calls import BadCall, bad_calls
from .compare import family
from .kinds import KINDS, Kind, declare
from .methods import Env
from .sampling import FULL, SAMPLE_SEED

pytestmark = pytest.mark.conformance

HAS_PEER = importlib.util.find_spec("tensordict") is not None
# A TensorDict flat and nested, records (one frozen), lazy stacks along each dim, a
# memory-mapped TensorDict, TensorDictParams, an indexed view that writes through, a
# consolidated TensorDict, a TypedTensorDict, h5 and zarr files and rows of them.
CHECKED_KINDS = (
    "td_flat td_nested rec_flat rec_nested rec_frozen lazy_dim0 lazy_dim1 memmapped params "
    "view consolidated typed h5 zarr h5_rows zarr_rows"
).split()
BY_NAME: dict[str, Kind] = {kind.name: kind for kind in KINDS}
CALLS: dict[str, BadCall] = {call.name: call for call in bad_calls()}

# The peer answers, wrongly: tclass refuses (README "Differences from tensordict").
_DIM_WRAPS = "the peer wraps the out-of-range dim -6 around (a stack along dim 0)"
_LAZY_ROWS = "the peer's rows of a file at a bad index are a view that fails on every read"
_ZARR_DEL = "the peer's zarr files warn and go on at a missing key (its h5 files raise)"
_ZARR_BROADCAST = "the peer writes a zarr array of another shape into the entry unchecked"
PEER_LOSSY: dict[str, str] = {
    "dim_stack_-6": _DIM_WRAPS,
    "size_split_sizes@lazy_dim0": "the peer's split of a lazy stack drops the rest of the dim",
    "size_permute_repeated@lazy_dim0": "the peer's lazy stack takes permute(0, 0) as no-op",
    "names_twice@lazy_dim0": "the peer's lazy stack takes a name repeated across dims",
    "names_twice@lazy_dim1": "the peer's lazy stack takes a name repeated across dims",
    "to_unavailable@h5": "the peer's file on a device the machine lacks fails on every read",
    "to_unavailable@zarr": "the peer's file on a device the machine lacks fails on every read",
    "index_float@h5": _LAZY_ROWS,
    "index_float@zarr": _LAZY_ROWS,
    "index_float@h5_rows": _LAZY_ROWS,
    "index_float@zarr_rows": _LAZY_ROWS,
    "index_tensor_range@h5": _LAZY_ROWS,
    "index_tensor_range@zarr": _LAZY_ROWS,
    "index_tensor_range@h5_rows": _LAZY_ROWS,
    "index_tensor_range@zarr_rows": _LAZY_ROWS,
    "missing_key_del@zarr": _ZARR_DEL,
    "missing_key_delitem@zarr": _ZARR_DEL,
    "missing_key_del@zarr_rows": _ZARR_DEL,
    "missing_key_delitem@zarr_rows": _ZARR_DEL,
    "set_inplace_shape@zarr": _ZARR_BROADCAST,
    "set_inplace_shape@zarr_rows": _ZARR_BROADCAST,
}
# The peer fails on its own internals: tclass raises the clearest builtin instead.
_NO_SELECT = "the peer refuses select on a PersistentTensorDict (tclass reads the keys)"
_NO_EXCLUDE = "the peer refuses exclude on a PersistentTensorDict (the call builds a member)"
PEER_CRASHES: dict[str, str] = {
    "dim_cumsum_5": "the peer's cumsum gets an AttributeError on its own result",
    "dim_cumsum_-6": "the peer's cumsum gets an AttributeError on its own result",
    "missing_key_select@h5": _NO_SELECT,
    "missing_key_select@zarr": _NO_SELECT,
    "stack_keys@h5": _NO_EXCLUDE,
    "stack_keys@zarr": _NO_EXCLUDE,
    "cat_keys@h5": _NO_EXCLUDE,
    "cat_keys@zarr": _NO_EXCLUDE,
    "set_at_shape@zarr": "the peer hands the write to zarr, which fails on its own indexing",
}
# Both libraries refuse the method itself on the kind: the message names the method (the
# word given) instead of the call's; the reason says why.
_VIEW = "view() of a file would give a copy in memory that writes do not reach"
METHOD_REFUSED: dict[str, tuple[str, str]] = {
    "size_view@h5": ("view", _VIEW),
    "size_view@zarr": ("view", _VIEW),
    "size_view_two@h5": ("view", _VIEW),
    "size_view_two@zarr": ("view", _VIEW),
}
# The peer refuses, tclass answers correctly.
TCLASS_ANSWERS: dict[str, str] = {
    "stack_keys@lazy_dim0": "torch.stack of lazy stacks is a lazy stack: members may differ",
    "stack_keys@lazy_dim1": "torch.stack of lazy stacks is a lazy stack: members may differ",
}


KINDS_PER_CALL = 2  # in the default run: each bad call on this many kinds, drawn by the seed


def all_pairs() -> list[tuple[str, str]]:
    return [
        (kind, call.name)
        for kind in CHECKED_KINDS
        for call in CALLS.values()
        if call.applies_to(kind)
    ]


def sampled_pairs() -> list[tuple[str, str]]:
    """Each bad call on ``KINDS_PER_CALL`` of the kinds it applies to, each kind at
    least once, and every pair the reviewed tables name (so that an entry that no longer
    holds fails the default run too)."""
    rng = random.Random(SAMPLE_SEED)
    pairs = all_pairs()
    chosen: set[tuple[str, str]] = set()
    for name in sorted(CALLS):
        kinds = [kind for kind, call in pairs if call == name]
        chosen.update((kind, name) for kind in rng.sample(kinds, min(KINDS_PER_CALL, len(kinds))))
    for kind in CHECKED_KINDS:
        if not any(pair[0] == kind for pair in chosen):
            chosen.add(rng.choice([pair for pair in pairs if pair[0] == kind]))
    tables = (PEER_LOSSY, PEER_CRASHES, METHOD_REFUSED, TCLASS_ANSWERS)
    chosen.update(pair for pair in pairs if any(f"{pair[1]}@{pair[0]}" in t for t in tables))
    return sorted(chosen, key=lambda pair: (pair[1], pair[0]))


def _pairs() -> list[Any]:
    return [
        pytest.param(kind, name, id=f"{name}@{kind}")
        for kind, name in (all_pairs() if FULL else sampled_pairs())
    ]


def _entry(table: dict[str, str], kind: str, name: str) -> str | None:
    return table.get(f"{name}@{kind}", table.get(name))


def _outcome(module: Any, kind: str, call: BadCall, tmp: Path) -> BaseException | None:
    """The error ``call`` raises on a fresh collection of ``kind`` in ``module``, or
    None when it runs."""
    lib = declare(module)
    built = BY_NAME[kind]
    for folder in (tmp / "value", tmp / "other"):
        folder.mkdir(parents=True, exist_ok=True)
    with warnings.catch_warnings():  # the peer warns as it builds and runs some calls
        warnings.simplefilter("ignore")
        value = built.build(lib, tmp / "value", False).value
        env = Env(module, tmp / "env", lambda: built.build(lib, tmp / "other", False).value)
        try:
            call.call(value, env)
        except Exception as error:  # noqa: BLE001 - every error is compared
            return error
    return None


@pytest.mark.parametrize(("kind", "name"), _pairs())
def test_tclass_error(kind: str, name: str, tmp_path: Path) -> None:
    """The call raises a TclassError naming what is wrong (or the user's own error)."""
    call = CALLS[name]
    error = _outcome(tclass, kind, call, tmp_path)
    if error is None:
        assert _entry(TCLASS_ANSWERS, kind, name), f"{name} on {kind} raised nothing"
        return
    assert _entry(TCLASS_ANSWERS, kind, name) is None, f"{name} on {kind} now raises: {error}"
    message = str(error)
    if call.user_error:
        assert type(error) is ValueError and message == "boom"
        return
    assert isinstance(error, tclass.TclassError), f"{type(error).__name__}: {message}"
    refused = METHOD_REFUSED.get(f"{name}@{kind}")
    words = call.words if refused is None else (refused[0],)
    assert any(word in message for word in words), (
        f"{name} on {kind}: the message names none of {words}: {message}"
    )


@pytest.mark.skipif(not HAS_PEER, reason="tensordict (the peer) is not installed")
@pytest.mark.parametrize(("kind", "name"), _pairs())
def test_same_error_as_peer(kind: str, name: str, tmp_path: Path) -> None:
    """Where the peer raises builtin E, tclass raises an E; the reviewed tables list
    where they differ on purpose (each entry must still differ)."""
    import tensordict

    call = CALLS[name]
    want = _outcome(tensordict, kind, call, tmp_path / "peer")
    got = _outcome(tclass, kind, call, tmp_path / "tclass")
    lossy, crash = _entry(PEER_LOSSY, kind, name), _entry(PEER_CRASHES, kind, name)
    answers = _entry(TCLASS_ANSWERS, kind, name)
    if want is None:
        assert lossy and got is not None, f"{name} on {kind}: the peer runs it; tclass: {got}"
        return
    assert lossy is None, f"{name} on {kind}: the peer now raises {want!r}"
    if got is None:
        assert answers, f"{name} on {kind}: the peer raises {want!r}, tclass answers"
        return
    if crash is not None:
        assert not isinstance(got, type(want)), f"{name} on {kind}: the peer no longer crashes"
        return
    builtin = family(want)
    assert builtin in {c.__name__ for c in type(got).__mro__ if c.__module__ == "builtins"}, (
        f"{name} on {kind}: the peer raises {builtin} ({want}), tclass {type(got).__name__}"
    )


def test_the_default_sample_holds_every_kind_call_and_table_pair() -> None:
    sample = sampled_pairs()
    assert {kind for kind, _ in sample} == set(CHECKED_KINDS)
    assert {name for _, name in sample} == set(CALLS)
    tables = {**PEER_LOSSY, **PEER_CRASHES, **METHOD_REFUSED, **TCLASS_ANSWERS}
    assert {f"{name}@{kind}" for kind, name in sample} >= {key for key in tables if "@" in key}
    assert set(sample) <= set(all_pairs()) and len(sample) < len(all_pairs()) / 4
