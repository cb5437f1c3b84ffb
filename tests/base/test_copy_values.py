"""``copy_`` writes the source's Python values as well as its tensors, as the peer's
``copy_`` (its ``update_``) does: a record's ``str`` field, a TensorDict's string, a
stack's values, into memory and into a memory-mapped folder. Found by the new-user
programs of session 22 (nu22b: refilling a saved replay buffer with ``copy_``)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import tclass
from tclass import TensorDict, errors, tensorclass


@tensorclass
class _Step:
    obs: torch.Tensor
    info: str = "x"


def _batch(value: float, n: int = 3) -> _Step:
    return _Step(obs=torch.full((n, 2), value), info=f"s{value:g}", batch_size=[n])


def _stacked(value: float, n: int = 3) -> _Step:
    return tclass.stack([_Step(obs=torch.full((2,), value), info=f"s{value:g}") for _ in range(n)])


@pytest.mark.parametrize("make", [_batch, _stacked])
def test_copy_writes_a_records_python_values(make: object) -> None:
    dest = make(0.0)  # type: ignore[operator]
    out = dest.copy_(make(5.0))  # type: ignore[operator]
    assert out is dest
    assert dest.obs.tolist() == [[5.0, 5.0]] * 3
    expected = "s5" if make is _batch else ["s5", "s5", "s5"]
    assert dest.info == expected


@pytest.mark.parametrize("make", [_batch, _stacked])
def test_copy_into_a_saved_record_reaches_its_folder(make: object, tmp_path: Path) -> None:
    dest = make(0.0).memmap(tmp_path / "buf")  # type: ignore[operator]
    dest.copy_(make(5.0))  # type: ignore[operator]
    loaded = _Step.load_memmap(tmp_path / "buf")
    assert loaded.obs.tolist() == [[5.0, 5.0]] * 3
    expected = "s5" if make is _batch else ["s5", "s5"]
    assert loaded[torch.tensor([0, 2])].info == expected


def test_copy_writes_a_tensordicts_nested_string() -> None:
    td = TensorDict({"a": torch.zeros(3), "n": {"s": "old"}, "info": "a"}, [3])
    td.copy_(TensorDict({"a": torch.ones(3), "n": {"s": "new"}, "info": "b"}, [3]))
    assert td["a"].tolist() == [1.0, 1.0, 1.0]
    assert td["info"] == "b"
    assert td["n", "s"] == "new"


def test_copy_of_a_value_the_destination_lacks_writes_nothing() -> None:
    td = TensorDict({"a": torch.zeros(3)}, [3])
    with pytest.raises(errors.KeyNotFoundError, match="info") as caught:
        td.copy_(TensorDict({"a": torch.ones(3), "info": "b"}, [3]))
    assert isinstance(caught.value, KeyError)
    assert td["a"].tolist() == [0.0, 0.0, 0.0]


def test_copy_into_a_lazy_stack_of_records_writes_each_members_value() -> None:
    stack = tclass.lazy_stack([_Step(obs=torch.zeros(2), info=f"a{i}") for i in range(3)])
    stack.copy_(tclass.lazy_stack([_Step(obs=torch.ones(2), info=f"b{i}") for i in range(3)]))
    assert stack.obs.tolist() == [[1.0, 1.0]] * 3
    assert stack.info == ["b0", "b1", "b2"]
    assert stack[1].info == "b1"


def test_copy_into_a_locked_tensordict_writes_its_nested_value() -> None:
    td = TensorDict({"a": torch.zeros(3), "n": {"s": "x"}}, [3]).lock_()
    td.copy_(TensorDict({"a": torch.ones(3), "n": {"s": "y"}}, [3]))
    assert td.is_locked
    assert td["n", "s"] == "y"
    assert td["a"].tolist() == [1.0, 1.0, 1.0]


def _ragged(width: int, value: float, label: str) -> TensorDict:
    node = TensorDict({"b": torch.full((width,), value), "s": label}, [])
    return TensorDict({"a": torch.full((3, width), value), "n": node}, [])


def test_copy_between_lazy_stacks_of_members_of_different_shapes(tmp_path: Path) -> None:
    # fz22f, program 11,910,227 of entries,records,shape --length 12: the search for the
    # source's Python values stacked its tensors, which members of two widths cannot be
    source = tclass.lazy_stack([_ragged(2, 1.0, "x"), _ragged(3, 2.0, "y")])
    for target in (
        tclass.lazy_stack([_ragged(2, 0.0, "p"), _ragged(3, 0.0, "q")]),
        source.memmap_like(tmp_path / "like"),
    ):
        assert target.copy_(source) is target
        assert [t.tolist() for t in target.get("a", as_list=True)] == [
            [[1.0, 1.0]] * 3,
            [[2.0, 2.0, 2.0]] * 3,
        ]
        assert [t.tolist() for t in target.get(("n", "b"), as_list=True)] == [
            [1.0, 1.0],
            [2.0, 2.0, 2.0],
        ]
        assert [target[0]["n", "s"], target[1]["n", "s"]] == ["x", "y"]


@tensorclass
class _Ragged:
    x: torch.Tensor
    y: torch.Tensor
    info: str = "x"


def _ragged_record(value: float) -> _Ragged:
    members = [
        _Ragged(
            x=torch.full((2,), value),
            y=torch.full((2, width), value),
            info=f"s{width}",
            batch_size=[2],
        )
        for width in (3, 2)
    ]
    return tclass.lazy_stack(members, 1)


def test_copy_into_a_record_over_a_lazy_stack_of_ragged_members() -> None:
    # the source's Python values are found member by member: its ragged entry 'y' (no
    # dense value) is not read, so copy_ writes each member as the peer's does
    dest = _ragged_record(0.0)
    out = dest.copy_(_ragged_record(5.0))
    assert out is dest
    assert dest.x.tolist() == [[5.0, 5.0], [5.0, 5.0]]
    assert [m.y.tolist() for m in dest.unbind(1)] == [[[5.0] * 3] * 2, [[5.0] * 2] * 2]
    assert dest.info == [["s3", "s2"], ["s3", "s2"]]
