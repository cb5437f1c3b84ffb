"""Episodes of different lengths in one lazy stack, as a new user handles them: nested
tensors written into and used as masks of a ragged stack (one component per member, as
the peer splits them), and ``get`` with ``as_list`` / ``as_padded_tensor`` /
``as_nested_tensor`` of entries that are not tensors (Python values, nested
collections), which the peer stacks as it does without the option.
"""

from __future__ import annotations

import pytest
import torch

import tclass
from tclass import TensorClass, TensorDict, errors

pytestmark = pytest.mark.filterwarnings(
    "ignore:The PyTorch API of nested tensors is in prototype stage"
)


def _episodes(*lengths: int) -> tclass.LazyStackedTensorDict:
    return tclass.lazy_stack(
        [
            TensorDict(
                reward=torch.arange(float(n)) + 10 * i,
                obs=torch.arange(n * 2.0).reshape(n, 2),
                batch_size=[n],
            )
            for i, n in enumerate(lengths)
        ]
    )


def _nested(*parts: list[float]) -> torch.Tensor:
    return torch.nested.nested_tensor([torch.tensor(p) for p in parts])


def _mask() -> torch.Tensor:
    return torch.nested.nested_tensor(
        [torch.tensor([True, False, True]), torch.tensor([False, True, True, False, True])]
    )


@pytest.mark.parametrize("layout", [torch.strided, torch.jagged])
def test_set_of_a_nested_tensor_gives_each_member_its_component(layout: torch.layout) -> None:
    stack = _episodes(3, 5)
    value = torch.nested.nested_tensor([torch.ones(3), torch.arange(5.0)], layout=layout)
    stack.set("v", value)
    assert [t.tolist() for t in stack.get("v", as_list=True)] == [[1.0] * 3, [0, 1, 2, 3, 4]]
    stack["w"] = torch.nested.nested_tensor([torch.ones(3, 2), torch.zeros(5, 2)])
    assert stack[0]["w"].shape == (3, 2) and stack[1]["w"].shape == (5, 2)
    stack.set_("reward", _nested([7.0, 8.0, 9.0], [1.0] * 5))
    assert stack[0]["reward"].tolist() == [7.0, 8.0, 9.0] and stack[1]["reward"].sum() == 5
    stack.update({"u": _nested([1.0, 2.0, 3.0], [4.0] * 5)})
    assert stack[1]["u"].tolist() == [4.0] * 5


def test_a_nested_tensor_read_from_the_stack_writes_back() -> None:
    stack = _episodes(3, 5)
    stack.set("twice", stack.get("obs", as_nested_tensor=True, layout=torch.strided) * 2)
    assert torch.equal(stack[1]["twice"], stack[1]["obs"] * 2)


def test_a_nested_tensor_that_does_not_fit_the_members_is_refused() -> None:
    stack = _episodes(3, 5)
    with pytest.raises(errors.ShapeError, match="3 components .* 2 along dim 0"):
        stack.set("v", _nested([1.0] * 3, [1.0] * 5, [1.0, 2.0]))
    # the peer writes a [4] tensor into a member of batch size [3]; tclass refuses
    with pytest.raises(errors.BatchMismatchError):
        stack.set("v", _nested([1.0] * 4, [1.0] * 5))
    assert "v" not in stack.keys()


def test_where_with_a_nested_condition_picks_member_by_member() -> None:
    stack = _episodes(3, 5)
    kept = stack.where(_mask(), 0.0)
    assert isinstance(kept, tclass.LazyStackedTensorDict) and kept.batch_size == (2, -1)
    assert [t.tolist() for t in kept.get("reward", as_list=True)] == [
        [0.0, 0.0, 2.0],
        [0.0, 11.0, 12.0, 0.0, 14.0],
    ]
    assert kept[0]["obs"].tolist() == [[0.0, 1.0], [0.0, 0.0], [4.0, 5.0]]
    flipped = stack.select("reward").where(_mask(), -stack.select("reward"))
    assert flipped[0]["reward"].tolist() == [0.0, -1.0, 2.0]
    filled = stack.select("reward").masked_fill(_mask(), -1.0)
    assert filled[1]["reward"].tolist() == [10.0, -1.0, -1.0, 13.0, -1.0]


class _Episode(TensorClass):
    obs: torch.Tensor
    task: str


def test_get_with_a_list_option_of_python_values_and_collections_stacks_them() -> None:
    stack = tclass.lazy_stack(
        [TensorDict(task="walk", sub={"x": torch.ones(n)}, batch_size=[n]) for n in (3, 5)]
    )
    for option in ("as_list", "as_padded_tensor", "as_nested_tensor"):
        tasks = stack.get("task", **{option: True})
        assert isinstance(tasks, tclass.NonTensorStack) and tasks.batch_size == (2, -1)
        assert tasks.tolist() == [["walk"] * 3, ["walk"] * 5]
        sub = stack.get("sub", **{option: True})
        assert isinstance(sub, tclass.LazyStackedTensorDict) and sub.batch_size == (2, -1)
    records = tclass.lazy_stack(
        [
            _Episode(torch.zeros(3), "walk", batch_size=[3]),
            _Episode(torch.zeros(2), "run", batch_size=[2]),
        ]
    )
    assert records.get("task", as_list=True) == [["walk"] * 3, ["run"] * 2]
