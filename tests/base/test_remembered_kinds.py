"""The tensors' kinds (class, dtype, ``requires_grad``) that math with a number reads
for the 0-d route and the all-or-nothing check, taken from a guard of the last tensors
of one kind (``_inplace.remembered_kinds``): what changed since (a dtype, a class,
``requires_grad``, even in place) is read again and decides as it did."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
import torch

from tclass import TensorDict
from tclass._base.implemented import _inplace, _scalar_operand
from tclass.errors import InPlaceWriteError


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Nothing remembered; each tensor whose kind is read is counted."""
    monkeypatch.setattr(_inplace, "_KINDS", {})
    monkeypatch.setattr(_inplace, "_KIND_BUILDS", {})
    counted: list[int] = []
    kind_of = _scalar_operand._kind_of

    def read(tensor: Any) -> Any:
        counted.append(1)
        return kind_of(tensor)

    monkeypatch.setattr(_scalar_operand, "_kind_of", read)
    yield counted


def _tree() -> TensorDict:
    return TensorDict({"a": torch.ones(3), "n": {"b": torch.ones(3, 2), "c": torch.ones(3)}}, [3])


def _calls(reads: list[int], run: Callable[[], Any]) -> int:
    reads.clear()
    run()
    return len(reads)


def test_tensors_of_the_kind_last_read_are_not_read_again(reads: list[int]) -> None:
    td = _tree()
    assert _calls(reads, lambda: td.mul_(2.0)) == 3
    assert _calls(reads, lambda: td.mul_(2.0)) == 0
    assert torch.equal(td["n", "b"], torch.full((3, 2), 4.0))
    # any tensors of that kind with as many dims, whatever their sizes
    other = TensorDict({"x": torch.ones(5), "y": {"z": torch.ones(2, 7), "w": torch.ones(9)}})
    assert _calls(reads, lambda: other.mul_(3.0)) == 0
    out = other + 1  # out of place too
    assert _calls(reads, lambda: out + 1) == 0
    assert torch.equal((out + 1)["y", "w"], torch.full((9,), 5.0))


def test_a_dtype_changed_in_place_is_read_and_refused(reads: list[int]) -> None:
    td = _tree()
    td.mul_(2.0)
    td["n", "c"].data = torch.ones(3, dtype=torch.int64)  # same tensor, another dtype
    before = {key: value.clone() for key, value in td.items(True, True)}
    with pytest.raises(InPlaceWriteError, match=r"\('n', 'c'\)"):
        td.mul_(0.5)
    assert all(torch.equal(td[key], value) for key, value in before.items())
    assert len(reads) == 3 + 3


def test_requires_grad_set_in_place_is_read_and_refused(reads: list[int]) -> None:
    td = _tree()
    td.add_(1)
    td["a"].requires_grad_()
    with pytest.raises(InPlaceWriteError, match="requires grad"):
        td.add_(1)
    assert torch.equal(td["n", "b"], torch.full((3, 2), 2.0))
    out = td * 2  # not routed: autograd records torch's own node
    assert out["a"].grad_fn is not None
    assert out["a"].grad_fn.name() == "ForeachMulBackward1Scalar"  # (the number's node)


def test_a_parameter_or_another_dtype_is_read_again(reads: list[int]) -> None:
    td = _tree()
    td.mul_(2.0)
    with torch.no_grad():
        params = TensorDict(
            {
                "a": torch.nn.Parameter(torch.ones(3)),
                "n": {"b": torch.ones(3, 2), "c": torch.ones(3)},
            },
            [3],
        )
        assert _calls(reads, lambda: params.mul_(2.0)) == 3
    doubles = _tree().double()
    assert _calls(reads, lambda: doubles.mul_(2.0)) == 3
    assert _calls(reads, lambda: td.mul_(2.0)) == 0  # the float32 tree's guard is still held
    assert doubles["a"].dtype == torch.float64
    assert torch.equal(doubles["a"], torch.full((3,), 2.0, dtype=torch.float64))


def test_mixed_kinds_are_read_each_time_and_guards_stop_after_misses(reads: list[int]) -> None:
    mixed = TensorDict({"a": torch.ones(3), "i": torch.ones(3, dtype=torch.int64)}, [3])
    mixed.add_(1)
    assert _calls(reads, lambda: mixed.add_(1)) == 2  # two kinds: never remembered
    assert _inplace._KINDS == {}
    for dims in range(1, _inplace._MOST_KIND_BUILDS + 3):  # a new layout each call
        TensorDict({"a": torch.ones([1] * dims), "b": torch.ones(1)}).mul_(1.0)
    assert _inplace._KIND_BUILDS[2] == _inplace._MOST_KIND_BUILDS
    assert len(_inplace._KINDS[2]) == _inplace._MOST_KIND_GUARDS
    last = [1] * _inplace._MOST_KIND_BUILDS  # the layout of the last guard built
    same = TensorDict({"a": torch.ones(last), "b": torch.ones(1)})
    assert _calls(reads, lambda: same.mul_(1.0)) == 0  # a held guard passes: building resumes
    assert _inplace._KIND_BUILDS[2] == 0


def test_without_the_guard_every_call_reads(
    reads: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_inplace, "_GUARDS_WORK", False)
    td = _tree()
    td.mul_(2.0)
    assert _calls(reads, lambda: td.mul_(2.0)) == 3
    assert _inplace._KINDS == {}
