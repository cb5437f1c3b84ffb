"""Lazy stacks whose members are of different kinds (records of two tensorclasses, or a
record and a TensorDict), checked against the peer: the stack is a plain
``LazyStackedTensorDict`` whose members keep their kinds (a record member keeps its class
through indexing, ``unbind``, the math walks and a save to disk); the dense forms
(``contiguous``, ``to_tensordict``) are TensorDicts. A lazy stack of records of one class
is still a record over a lazy stack (``test_lazy_records.py``)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

import tclass
from tclass import LazyStackedTensorDict, TensorDict, errors

peer = pytest.importorskip("tensordict")

Build = Callable[[Any, Any, Any], Any]

# How the stack is built, from a lib and its classes A and B.
BUILDS: dict[str, Callable[[Any, type, type], Any]] = {
    "lazy_stack(A, TD)": lambda lib, A, B: lib.lazy_stack([_a(A), _td(lib)]),
    "lazy_stack(TD, A)": lambda lib, A, B: lib.lazy_stack([_td(lib), _a(A)]),
    "lazy_stack(A, B)": lambda lib, A, B: lib.lazy_stack([_a(A), _b(B)]),
    "lazy_stack(A, B, TD)": lambda lib, A, B: lib.lazy_stack([_a(A), _b(B), _td(lib)]),
    "lazy_stack(A, TD, dim=1)": lambda lib, A, B: lib.lazy_stack([_a(A), _td(lib)], 1),
    "LazyStackedTensorDict(A, TD)": lambda lib, A, B: lib.LazyStackedTensorDict(_a(A), _td(lib)),
    "LazyStackedTensorDict(TD, B)": lambda lib, A, B: lib.LazyStackedTensorDict(_td(lib), _b(B)),
    "LazyStackedTensorDict.lazy_stack": lambda lib, A, B: lib.LazyStackedTensorDict.lazy_stack(
        [_b(B), _a(A)]
    ),
}

# What users do with the stack.
OPS: dict[str, Callable[[Any], Any]] = {
    "itself": lambda s: s,
    "[0]": lambda s: s[0],
    "[1]": lambda s: s[1],
    "[-1]": lambda s: s[-1],
    "[1:]": lambda s: s[1:],
    "[:1]": lambda s: s[:1],
    "[::-1]": lambda s: s[::-1],
    "[:, 0]": lambda s: s[:, 0],
    "[:, :2]": lambda s: s[:, :2],
    "[tensor]": lambda s: s[torch.tensor([1, 0])],
    "[2-d tensor]": lambda s: s[torch.tensor([[1, 0], [0, 1]])],
    "[:, tensor]": lambda s: s[:, torch.tensor([2, 0])],
    "[tensor, tensor]": lambda s: s[torch.tensor([1, 0]), torch.tensor([2, 0])],
    "[mask]": lambda s: s[torch.tensor([True, False] + [False] * (s.batch_size[0] - 2))],
    "['x']": lambda s: s["x"],
    "get('x')": lambda s: s.get("x"),
    ".x": lambda s: s.x,  # an AttributeError in both: a lazy stack has no fields
    "unbind(0)": lambda s: s.unbind(0),
    "unbind(1)": lambda s: s.unbind(1),
    "+ 1": lambda s: s + 1,
    "(+ 1)[0]": lambda s: (s + 1)[0],
    "== s": lambda s: s == s,
    "clone": lambda s: s.clone(),
    "clone()[0]": lambda s: s.clone()[0],
    "apply": lambda s: s.apply(lambda v: v * 2),
    "apply()[1]": lambda s: s.apply(lambda v: v * 2)[1],
    "to(cpu)": lambda s: s.to("cpu"),
    "select": lambda s: s.select("x"),
    "exclude": lambda s: s.exclude("x"),
    "contiguous": lambda s: s.contiguous(),
    "to_tensordict": lambda s: s.to_tensordict(),
    "torch.stack([s, s])": lambda s: torch.stack([s, s]),
    "torch.stack([s, s])[0]": lambda s: torch.stack([s, s])[0],
    "torch.cat([s, s])": lambda s: torch.cat([s, s]),
    "lazy_stack([s, s])[0, 0]": lambda s: type(s).lazy_stack([s, s])[0, 0],
    "unsqueeze(0)[0]": lambda s: s.unsqueeze(0)[0],
}


def _a(A: type) -> Any:
    return A(x=torch.arange(3.0), batch_size=[3])


def _b(B: type) -> Any:
    return B(x=torch.arange(3.0) + 10, batch_size=[3])


def _td(lib: Any) -> Any:
    return lib.TensorDict(x=torch.arange(3.0) + 20, batch_size=[3])


def _classes(lib: Any) -> tuple[type, type]:
    @lib.tensorclass
    class A:
        x: torch.Tensor

    @lib.tensorclass
    class B:
        x: torch.Tensor

    return A, B


def _describe(value: Any, A: type, B: type) -> Any:
    """What a result is, the same words for both libraries: its kind (A, B, a TensorDict,
    a lazy stack and its members' kinds), batch size and values."""
    if isinstance(value, (tuple, list)):
        return [_describe(part, A, B) for part in value]
    if isinstance(value, torch.Tensor):
        return ("tensor", value.tolist())
    kind = "A" if isinstance(value, A) else "B" if isinstance(value, B) else type(value).__name__
    members = None
    if kind == "LazyStackedTensorDict":
        members = [_describe(member, A, B)[0] for member in value.tensordicts]
    x = value.get("x", None)
    return (kind, list(value.batch_size), members, None if x is None else x.tolist())


def _run(lib: Any, build: str, op: str) -> Any:
    A, B = _classes(lib)
    return _describe(OPS[op](BUILDS[build](lib, A, B)), A, B)


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("build", list(BUILDS))
def test_a_mixed_lazy_stack_behaves_as_the_peers(build: str, op: str) -> None:
    try:
        theirs = _run(peer, build, op)
    except Exception as error:  # the peer refuses: so does tclass, catchable the same way
        with pytest.raises(type(error)):
            _run(tclass, build, op)
        return
    assert _run(tclass, build, op) == theirs


def test_the_comparison_is_not_vacuous() -> None:
    """Each kind comes back: the members keep theirs, a dense form is a TensorDict."""
    assert _run(tclass, "lazy_stack(A, B, TD)", "itself")[2] == ["A", "B", "TensorDict"]
    assert [part[0] for part in _run(tclass, "lazy_stack(A, B, TD)", "unbind(0)")] == [
        "A",
        "B",
        "TensorDict",
    ]
    assert _run(tclass, "lazy_stack(A, TD)", "contiguous")[0] == "TensorDict"
    assert _run(tclass, "lazy_stack(A, TD)", "[:1]")[0] == "A"  # one class: a record


def _subclass_kinds(lib: Any) -> list[str]:
    @lib.tensorclass
    class Base:
        x: torch.Tensor

    @lib.tensorclass
    class Sub(Base):
        pass

    base, sub = Base(x=torch.zeros(3), batch_size=[3]), Sub(x=torch.ones(3), batch_size=[3])
    lazy = lib.lazy_stack([sub, base])
    return [
        *(type(member).__name__ for member in lazy.tensordicts),
        type(lazy).__name__,
        type(lazy[1]).__name__,
        type(lazy.contiguous()).__name__,
        type(torch.stack([sub, base])).__name__,  # related classes stack densely
    ]


def test_records_of_a_class_and_its_subclass_as_the_peer() -> None:
    mine = _subclass_kinds(tclass)
    assert mine == _subclass_kinds(peer)
    assert mine == ["Sub", "Base", "LazyStackedTensorDict", "Base", "TensorDict", "Sub"]


def test_a_member_is_the_record_given_and_writes_reach_it() -> None:
    A, _ = _classes(tclass)
    a, td = _a(A), _td(tclass)
    stack = tclass.lazy_stack([a, td])
    assert stack[0] is a and stack[1] is td
    stack["x"] = torch.zeros(2, 3)
    assert a.x.tolist() == [0.0, 0.0, 0.0] and td["x"].tolist() == [0.0, 0.0, 0.0]


def test_records_of_one_class_still_stack_into_a_record() -> None:
    A, _ = _classes(tclass)
    stacked = tclass.lazy_stack([_a(A), _a(A)])
    assert type(stacked) is A and type(stacked._tensordict) is LazyStackedTensorDict
    built = LazyStackedTensorDict(_a(A), _a(A))
    assert [type(member) for member in built.tensordicts] == [A, A]
    assert type(built[0]) is A


def test_maybe_dense_stack_of_mixed_kinds_is_lazy() -> None:
    """The peer's raises an ``AttributeError`` from inside (its dense stack reads a dict's
    batch size); tclass gives the lazy stack, which keeps every member."""
    A, _ = _classes(tclass)
    stacked = tclass.maybe_dense_stack([_a(A), _td(tclass)])
    assert type(stacked) is LazyStackedTensorDict
    assert [type(member) for member in stacked.tensordicts] == [A, TensorDict]
    with pytest.raises(AttributeError):
        peer.maybe_dense_stack([_a(_classes(peer)[0]), _td(peer)])


@pytest.mark.parametrize("kinds", ["A, TD", "A, B"])
def test_a_dense_stack_of_mixed_kinds_is_refused_as_the_peer(kinds: str) -> None:
    """``torch.stack`` of a record and another kind has no dense result: a ``TypeError``
    naming the members, where the peer fails inside (``AttributeError`` or ``TypeError``)."""
    A, B = _classes(tclass)
    second = _td(tclass) if kinds == "A, TD" else _b(B)
    with pytest.raises(errors.StackTypeError, match="member 1 is a .* but member 0 is a A"):
        torch.stack([_a(A), second])
    pA, pB = _classes(peer)
    with pytest.raises((AttributeError, TypeError)):
        torch.stack([_a(pA), _td(peer) if kinds == "A, TD" else _b(pB)])


def test_append_insert_extend_refuse_a_record_as_the_peer() -> None:
    """The peer's ``append``/``insert``/``extend`` refuse a record (``TypeError``:
    "Expected new value to be TensorDictBase instance"); so does tclass, for a stack of
    TensorDicts and for the lazy stack a record of records is over (where the record
    member was read back wrapped twice: ``AttributeError: no attribute '_tensors'``).
    The record's storage is taken, as the peer's."""
    A, B = _classes(tclass)
    stack = tclass.lazy_stack([_td(tclass), _td(tclass)])
    for grow in (stack.append, lambda r: stack.insert(0, r), lambda r: stack.extend([r])):
        with pytest.raises(errors.StackTypeError, match="got a A record.*record._tensordict"):
            grow(_a(A))
    assert [type(member) for member in stack.tensordicts] == [TensorDict, TensorDict]
    stack.append(_a(A)._tensordict)
    assert stack.batch_size == (3, 3) and stack[-1]["x"].tolist() == [0.0, 1.0, 2.0]
    with pytest.raises(errors.StackTypeError, match="member 1 is a str"):
        stack.append("not a collection")  # type: ignore[arg-type]
    records = tclass.lazy_stack(
        [A(x=torch.zeros(2), batch_size=[2]), A(x=torch.ones(3), batch_size=[3])]
    )
    with pytest.raises(TypeError, match="Expected new value to be TensorDictBase"):
        records._tensordict.append(records[0])
    records._tensordict.append(records[1]._tensordict)
    assert records[2].x.tolist() == [1.0, 1.0, 1.0] and type(records[2]) is A
    pA, _ = _classes(peer)
    with pytest.raises(TypeError, match="Expected new value to be TensorDictBase"):
        peer.lazy_stack([_td(peer), _td(peer)]).append(_a(pA))


def test_nested_entries_of_mixed_kinds() -> None:
    A, _ = _classes(tclass)
    stack = tclass.lazy_stack(
        [TensorDict(n=_a(A), batch_size=[3]), TensorDict(n=_td(tclass), batch_size=[3])]
    )
    nested = stack["n"]
    assert [type(member) for member in nested.tensordicts] == [A, TensorDict]
    assert type(stack[0]["n"]) is A
    dense = stack.contiguous()
    assert type(dense["n"]) is TensorDict and dense["n", "x"][1].tolist() == [20.0, 21.0, 22.0]


def test_a_dense_form_with_keys_that_differ_is_still_refused() -> None:
    """The peer's ``contiguous`` keeps the keys all members have and drops the rest;
    tclass refuses to drop them (deliberate difference, README)."""

    @tclass.tensorclass
    class Named:
        x: torch.Tensor
        env: str = "pong"

    stack = tclass.lazy_stack([Named(x=torch.zeros(3), batch_size=[3]), _td(tclass)])
    assert stack[0].env == "pong"
    with pytest.raises(errors.HeterogeneousEntryError, match=r"'env' in members \[0\]"):
        stack.contiguous()


@tclass.tensorclass
class SavedA:
    x: torch.Tensor


@tclass.tensorclass
class SavedB:
    x: torch.Tensor


def test_memmap_round_trip_keeps_each_members_class(tmp_path: Path) -> None:
    A, B = SavedA, SavedB
    stack = tclass.lazy_stack([_a(A), _b(B), _td(tclass)])
    saved = stack.memmap(tmp_path / "s")
    assert [type(member) for member in saved.tensordicts] == [A, B, TensorDict]
    loaded = tclass.load_memmap(tmp_path / "s")
    assert type(loaded) is LazyStackedTensorDict
    assert [type(member) for member in loaded.tensordicts] == [A, B, TensorDict]
    assert torch.equal(loaded["x"], stack["x"])
    assert type(loaded[0]) is A and loaded[1].x.tolist() == [10.0, 11.0, 12.0]


_SCRIPT = """
import sys, torch, tensordict, tclass
save, load, folder = sys.argv[1:]
S = tensordict if save == "peer" else tclass
L = tensordict if load == "peer" else tclass

def declare(lib):
    @lib.tensorclass
    class A:
        x: torch.Tensor
        env: str = "a"
    return A

A = declare(S)
S.lazy_stack([A(x=torch.arange(3.0), env="pong", batch_size=[3]),
              S.TensorDict(x=torch.ones(3), batch_size=[3])]).memmap(folder)
A = declare(L)  # the loader's class, found as __main__.A
out = L.LazyStackedTensorDict.load_memmap(folder)
print([type(m).__name__ for m in out.tensordicts], out[0].env, out["x"].tolist())
"""


@pytest.mark.parametrize(("save", "load"), [("peer", "tclass"), ("tclass", "peer")])
def test_a_saved_mixed_stack_reads_back_in_the_other_library(
    tmp_path: Path, save: str, load: str
) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "PYTHONWARNINGS": "ignore"}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_SCRIPT), save, load, str(tmp_path / "s")],
        capture_output=True,
        text=True,
        env=env,
        check=False,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == (
        "['A', 'TensorDict'] pong [[0.0, 1.0, 2.0], [1.0, 1.0, 1.0]]"
    )


@pytest.mark.parametrize("lib", [tclass, peer], ids=["tclass", "peer"])
def test_extend_is_all_or_nothing_as_the_peer(lib: Any) -> None:
    """A part ``extend`` refuses (another batch size) leaves the stack as it was, the
    parts before it included, as the peer's: no partial growth."""
    stack = lib.lazy_stack([_td(lib), _td(lib)])
    good, bad = (
        lib.TensorDict(x=torch.ones(3), batch_size=[3]),
        lib.TensorDict(x=torch.ones(4), batch_size=[4]),
    )
    with pytest.raises(ValueError, match="Batch sizes in tensordicts differs"):
        stack.extend([good, bad])
    assert stack.batch_size == (2, 3) and len(stack.tensordicts) == 2
    stack.extend([good, good])
    assert stack.batch_size == (4, 3) and stack[-1]["x"].tolist() == [1.0, 1.0, 1.0]
