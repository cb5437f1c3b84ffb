"""``pad_sequence`` and ``cat`` of members of different kinds, as the peer's.

``pad_sequence``: with a record first, TensorDicts and records of other classes with the
same keys pad into a record of member 0's class (nested entries too); with a TensorDict
first, a TensorDict. ``cat`` of records of one class and TensorDicts: a TensorDict with a
TensorDict first, as the peer's; a record of member 0's class with a record first, where
the peer fails inside (``RuntimeError``: "Expected a TensorDictBase instance"). Members
with other keys are refused, as between TensorDicts (``cat``'s error a ``KeyError``, as
the peer's); records of two unrelated classes do not ``cat`` (the peer's dispatch refuses
them: a ``TypeError``)."""

from __future__ import annotations

from typing import Any

import pytest
import torch

import tclass
from tclass import errors

tensordict = pytest.importorskip("tensordict")


def _classes(lib: Any) -> tuple[type, type, type]:
    @lib.tensorclass
    class A:
        x: torch.Tensor

    @lib.tensorclass
    class B:
        x: torch.Tensor

    @lib.tensorclass
    class E:
        x: torch.Tensor
        s: str

    return A, B, E


CASES = ["A,TD", "TD,A", "A,B", "A,TD,A", "E,TD", "nested"]


def _members(lib: Any, case: str) -> list[Any]:
    A, B, E = _classes(lib)
    TD = lib.TensorDict
    made = {
        "A,TD": lambda: [A(x=torch.zeros(3), batch_size=[3]), TD(x=torch.ones(2), batch_size=[2])],
        "TD,A": lambda: [TD(x=torch.ones(2), batch_size=[2]), A(x=torch.zeros(3), batch_size=[3])],
        "A,B": lambda: [A(x=torch.zeros(3), batch_size=[3]), B(x=torch.ones(2), batch_size=[2])],
        "A,TD,A": lambda: [
            A(x=torch.zeros(3), batch_size=[3]),
            TD(x=torch.ones(2), batch_size=[2]),
            A(x=torch.full((1,), 2.0), batch_size=[1]),
        ],
        "E,TD": lambda: [
            E(x=torch.zeros(3), s="a", batch_size=[3]),
            TD(x=torch.ones(2), s="b", batch_size=[2]),
        ],
        "nested": lambda: [
            TD(n=A(x=torch.zeros(3), batch_size=[3])),
            TD(n=TD(x=torch.ones(2), batch_size=[2])),
        ],
    }
    return made[case]()  # type: ignore[no-any-return]


def _seen(out: Any) -> dict[str, Any]:
    kinds = {"": type(out).__name__}
    for key, value in out.items(include_nested=True):
        name = "/".join(key) if isinstance(key, tuple) else key
        if isinstance(value, torch.Tensor):
            kinds[name] = value.tolist()
        elif hasattr(value, "tolist"):
            kinds[name] = value.tolist()
        else:
            kinds[name] = type(value).__name__
    return {"batch": list(out.batch_size), **kinds}


@pytest.mark.parametrize("case", CASES)
def test_mixed_kinds_pad_as_the_peer(case: str) -> None:
    expected = _seen(tensordict.pad_sequence(_members(tensordict, case)))
    assert _seen(tclass.pad_sequence(_members(tclass, case))) == expected


def test_the_record_is_checked_by_its_class() -> None:
    A, _, _ = _classes(tclass)
    out = tclass.pad_sequence(
        [A(x=torch.zeros(3), batch_size=[3]), tclass.TensorDict(x=torch.ones(2), batch_size=[2])]
    )
    assert type(out) is A
    assert out.x.tolist() == [[0.0, 0.0, 0.0], [1.0, 1.0, 0.0]]


def test_masks_of_mixed_kinds_come_beside_the_record() -> None:
    A, _, _ = _classes(tclass)
    out, masks = tclass.pad_sequence(
        [A(x=torch.zeros(3), batch_size=[3]), tclass.TensorDict(x=torch.ones(2), batch_size=[2])],
        return_mask=True,
    )
    assert type(out) is A
    assert masks["x"].tolist() == [[True, True, True], [True, True, False]]


def test_a_member_with_other_keys_is_refused() -> None:
    A, _, _ = _classes(tclass)
    extra = tclass.TensorDict(x=torch.ones(2), y=torch.ones(2), batch_size=[2])
    with pytest.raises(errors.StackError, match="member 1 has different keys from member 0"):
        tclass.pad_sequence([A(x=torch.zeros(3), batch_size=[3]), extra])


def _cat_members(lib: Any, case: str) -> list[Any]:
    A, _, E = _classes(lib)
    TD = lib.TensorDict
    made = {
        "TD,A": lambda: [TD(x=torch.ones(2), batch_size=[2]), A(x=torch.zeros(2), batch_size=[2])],
        "A,TD": lambda: [A(x=torch.zeros(2), batch_size=[2]), TD(x=torch.ones(2), batch_size=[2])],
        "TD,E": lambda: [
            TD(x=torch.ones(2), s="b", batch_size=[2]),
            E(x=torch.zeros(2), s="a", batch_size=[2]),
        ],
        "nested": lambda: [
            TD(n=TD(x=torch.ones(2), batch_size=[2]), batch_size=[2]),
            TD(n=A(x=torch.zeros(2), batch_size=[2]), batch_size=[2]),
        ],
        "nested-rev": lambda: [
            TD(n=A(x=torch.zeros(2), batch_size=[2]), batch_size=[2]),
            TD(n=TD(x=torch.ones(2), batch_size=[2]), batch_size=[2]),
        ],
    }
    return made[case]()  # type: ignore[no-any-return]


@pytest.mark.parametrize("case", ["TD,A", "TD,E", "nested"])
@pytest.mark.parametrize("join", ["torch.cat", "cat"])
def test_cat_of_a_tensordict_then_a_record_is_the_peers(case: str, join: str) -> None:
    def run(lib: Any) -> Any:
        members = _cat_members(lib, case)
        return torch.cat(members) if join == "torch.cat" else lib.cat(members)

    expected = _seen(run(tensordict))
    assert _seen(run(tclass)) == expected
    assert expected[""] == "TensorDict"


@pytest.mark.parametrize("case", ["A,TD", "nested-rev"])
def test_cat_with_a_record_first_is_of_its_class(case: str) -> None:
    with pytest.raises(RuntimeError, match="Expected a TensorDictBase instance"):
        torch.cat(_cat_members(tensordict, case))  # the peer fails inside
    out = torch.cat(_cat_members(tclass, case))
    record = out if case == "A,TD" else out["n"]
    assert type(record).__name__ == "A" and tclass.is_tensorclass(record)
    assert record.x.tolist() == [0.0, 0.0, 1.0, 1.0]
    assert out.batch_size == (4,)


def test_cat_of_records_and_tensordicts_with_other_keys_is_a_key_error() -> None:
    A, _, _ = _classes(tclass)
    extra = tclass.TensorDict(x=torch.ones(2), y=torch.ones(2), batch_size=[2])
    with pytest.raises(KeyError, match="different keys"):  # the peer: KeyError too
        torch.cat([extra, A(x=torch.zeros(2), batch_size=[2])])
    pA, _, _ = _classes(tensordict)
    peer_extra = tensordict.TensorDict(x=torch.ones(2), y=torch.ones(2), batch_size=[2])
    with pytest.raises(KeyError):
        torch.cat([peer_extra, pA(x=torch.zeros(2), batch_size=[2])])


def test_cat_of_two_unrelated_record_classes_is_refused_as_the_peer() -> None:
    A, B, _ = _classes(tclass)
    with pytest.raises(TypeError, match="member 1 is a B but member 0 is a A"):
        torch.cat([A(x=torch.zeros(2), batch_size=[2]), B(x=torch.ones(2), batch_size=[2])])
    pA, pB, _ = _classes(tensordict)
    with pytest.raises(TypeError):
        torch.cat([pA(x=torch.zeros(2), batch_size=[2]), pB(x=torch.ones(2), batch_size=[2])])
