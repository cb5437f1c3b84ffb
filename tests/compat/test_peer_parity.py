"""Differences from the peer found by comparing results, each fixed and kept fixed.

Every test here failed before its fix: a lazy stack that ignored ``load_state_dict``,
``device=Ellipsis`` leaking out of lazy stacks, ``pad`` of a lazy stack of 0-dim
members, ``merge_tensordicts``'s callback called on nested collections, ``cat`` mixing
lazy and dense stacks, shape ops used as context managers, the order of keys and of
state-dict entries, the lock state through shape ops, and the builtin errors the peer
raises.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

import tclass
from tclass import LazyStackedTensorDict, TensorClass, TensorDict, errors


def _lazy() -> LazyStackedTensorDict:
    return tclass.lazy_stack(
        [TensorDict({"a": torch.full((3,), float(i + 1))}, [3]) for i in range(2)]
    )


def _td() -> TensorDict:
    return TensorDict(
        {"a": torch.arange(6.0).reshape(2, 3), "b": {"c": torch.ones(2, 3, 4)}}, [2, 3]
    )


def test_load_state_dict_into_a_lazy_stack_writes_its_members() -> None:
    lazy = _lazy()
    copy = lazy.clone().zero_()
    assert copy.load_state_dict(lazy.state_dict()) is copy
    assert copy["a"].tolist() == [[1.0] * 3, [2.0] * 3]
    assert copy.tensordicts[1]["a"].tolist() == [2.0] * 3


def test_lazy_results_never_have_an_ellipsis_device() -> None:
    lazy = _lazy()
    assert lazy.view(-1).device is None
    assert tclass.pad(lazy, [0, 1]).device is None
    on_cpu = lazy.to("cpu")
    assert on_cpu.view(-1).device == torch.device("cpu")
    assert tclass.pad(on_cpu, [0, 1]).device == torch.device("cpu")
    for result in (lazy.reshape(6), lazy.flatten(), lazy.unsqueeze(0), lazy.clone()):
        assert result.device is None or isinstance(result.device, torch.device)


def test_pad_of_a_lazy_stack_of_scalar_members() -> None:
    lazy = tclass.lazy_stack([TensorDict({"a": torch.ones(3)}, []) for _ in range(2)])
    same = tclass.pad(lazy, [0, 0])
    assert same.batch_size == torch.Size([2]) and torch.equal(same["a"], torch.ones(2, 3))
    grown = tclass.pad(lazy, [1, 0])
    assert grown["a"].tolist() == [[0.0] * 3, [1.0] * 3, [1.0] * 3]


def test_merge_callback_merges_nested_collections_key_by_key() -> None:
    a = TensorDict({"x": {"y": torch.ones(2), "z": torch.ones(2)}, "w": torch.ones(2)}, [2])
    b = TensorDict({"x": {"y": torch.full((2,), 3.0)}, "w": torch.full((2,), 5.0)}, [2])
    seen: list[type] = []

    def add(*values: torch.Tensor) -> torch.Tensor:
        seen.extend(type(v) for v in values)
        return values[0] + values[1]

    merged = tclass.merge_tensordicts(a, b, callback_exist=add)
    assert merged["x", "y"].tolist() == [4.0, 4.0]
    assert merged["x", "z"].tolist() == [1.0, 1.0]
    assert merged["w"].tolist() == [6.0, 6.0]
    assert set(seen) == {torch.Tensor}


@pytest.mark.parametrize("dim", [0, 1])
def test_cat_of_a_lazy_stack_and_a_tensordict(dim: int) -> None:
    lazy = _lazy()
    dense = TensorDict({"a": torch.zeros(2, 3)}, [2, 3])
    out = torch.cat([lazy, dense], dim)
    expected = torch.cat([lazy["a"], dense["a"]], dim)
    assert out.batch_size == expected.shape
    assert torch.equal(out["a"], expected)
    reverse = torch.cat([dense, lazy], dim)
    assert torch.equal(reverse["a"], torch.cat([dense["a"], lazy["a"]], dim))


def test_view_of_a_lazy_stack() -> None:
    lazy = _lazy()
    assert lazy.view(2, 3) is lazy
    flat = lazy.view(-1)
    assert flat.batch_size == torch.Size([6])
    assert torch.equal(flat["a"], lazy["a"].reshape(-1))


def test_an_empty_lazy_stack() -> None:
    empty = LazyStackedTensorDict(stack_dim=0)
    assert empty.batch_size == torch.Size([0])
    assert list(empty.keys()) == [] and empty.tensordicts == []


CONTEXT_OPS: list[tuple[str, Callable[[TensorDict], Any], tuple[int, ...]]] = [
    ("transpose", lambda t: t.transpose(1, 0), (3, 2)),
    ("permute", lambda t: t.permute(1, 0), (3, 2)),
    ("unsqueeze", lambda t: t.unsqueeze(0), (1, 2, 3)),
    ("view", lambda t: t.view(6), (6,)),
    ("flatten", lambda t: t.flatten(), (6,)),
    ("unflatten", lambda t: t.unflatten(1, (3, 1)), (2, 3, 1)),
    ("movedim", lambda t: t.movedim(0, 1), (3, 2)),
    ("swapaxes", lambda t: t.swapaxes(0, 1), (3, 2)),
    ("swapdims", lambda t: t.swapdims(0, 1), (3, 2)),
]


@pytest.mark.parametrize(("name", "op", "shape"), CONTEXT_OPS, ids=[n for n, _, _ in CONTEXT_OPS])
def test_shape_ops_as_context_managers_write_back(
    name: str, op: Callable[[TensorDict], Any], shape: tuple[int, ...]
) -> None:
    td = _td()
    with op(td) as view:
        view.set("c", torch.arange(6.0).reshape(shape))
        view.set("a", torch.zeros(shape))
    assert "c" in td.keys(), name
    assert td["c"].shape == torch.Size([2, 3])
    assert torch.equal(op(td)["c"], torch.arange(6.0).reshape(shape)), name
    assert bool((td["a"] == 0).all()), name


@pytest.mark.parametrize(("name", "op", "shape"), CONTEXT_OPS, ids=[n for n, _, _ in CONTEXT_OPS])
def test_context_managers_on_a_locked_collection_write_in_place(
    name: str, op: Callable[[TensorDict], Any], shape: tuple[int, ...]
) -> None:
    """As the peer's (issue 27): the block's data goes back in place, new keys stay
    refused."""
    td = _td().lock_()
    with op(td) as view:
        view.set_("a", torch.zeros(shape))
    assert bool((td["a"] == 0).all()) and td.is_locked, name
    with pytest.raises(errors.LockedError, match="'new'"), op(td) as view, view.unlock_():
        view.set("new", torch.zeros(shape))
    assert "new" not in td.keys(), name


def test_squeeze_as_a_context_manager_writes_back() -> None:
    td = TensorDict({"a": torch.zeros(2, 1, 3)}, [2, 1, 3])
    with td.squeeze(1) as view:
        view.set("c", torch.ones(2, 3))
    assert td["c"].shape == torch.Size([2, 1, 3])


def test_context_manager_write_back_on_records() -> None:
    class Frame(TensorClass):
        obs: torch.Tensor
        extra: torch.Tensor | None = None

    frame = Frame(obs=torch.zeros(2, 3), batch_size=[2, 3])
    with frame.transpose(0, 1) as view:
        view.extra = torch.ones(3, 2)
    assert frame.extra is not None and frame.extra.shape == torch.Size([2, 3])


def test_keys_list_a_parent_after_its_children() -> None:
    td = TensorDict({"x": {"y": {"z": torch.zeros(2)}}, "w": torch.zeros(2)}, [2])
    assert list(td.keys(True)) == [("x", "y", "z"), ("x", "y"), "x", "w"]
    assert list(_td().keys(True)) == ["a", ("b", "c"), "b"]
    assert [k for k, _ in td.items(True)] == ["x", ("x", "y"), ("x", "y", "z"), "w"]


def test_state_dict_orders_keys_as_the_peer() -> None:
    td = TensorDict({"x": {"y": {"z": torch.zeros(2)}}, "w": torch.zeros(2)}, [2])
    assert list(td.state_dict().keys()) == ["x.y.z", "w"]
    assert list(td.state_dict(flatten=False).keys()) == ["x", "w"]


LOCK_KEEPING: list[tuple[str, Callable[[TensorDict], Any]]] = [
    ("reshape", lambda t: t.reshape(3, 2)),
    ("view", lambda t: t.view(6)),
    ("unsqueeze", lambda t: t.unsqueeze(0)),
    ("squeeze", lambda t: t.squeeze()),
    ("permute", lambda t: t.permute(1, 0)),
    ("transpose", lambda t: t.transpose(1, 0)),
    ("expand", lambda t: t.expand(4, 2, 3)),
    ("flatten", lambda t: t.flatten()),
    ("unflatten", lambda t: t.unflatten(1, (3, 1))),
    ("split", lambda t: t.split(1)[0]),
    ("chunk", lambda t: t.chunk(2)[0]),
    ("ellipsis", lambda t: t[...]),
    ("to", lambda t: t.to(torch.float64)),
    ("detach", lambda t: t.detach()),
    ("repeat", lambda t: t.repeat(1, 2)),
    ("flip", lambda t: t.flip(0)),
    ("movedim", lambda t: t.movedim(0, 1)),
]
LOCK_DROPPING: list[tuple[str, Callable[[TensorDict], Any]]] = [
    ("int", lambda t: t[0]),
    ("slice", lambda t: t[:1]),
    ("mask", lambda t: t[torch.tensor([True, False])]),
    ("unbind", lambda t: t.unbind(0)[0]),
    ("clone", lambda t: t.clone()),
    ("apply", lambda t: t.apply(lambda x: x + 1)),
    ("contiguous", lambda t: t.contiguous()),
    ("stack", lambda t: torch.stack([t, t])),
    ("gather", lambda t: t.gather(1, torch.zeros(2, 1, dtype=torch.long))),
    ("masked_select", lambda t: t.masked_select(torch.ones(2, 3, dtype=torch.bool))),
]


@pytest.mark.parametrize(("name", "op"), LOCK_KEEPING, ids=[n for n, _ in LOCK_KEEPING])
def test_shape_ops_carry_the_lock(name: str, op: Callable[[TensorDict], Any]) -> None:
    out = op(_td().lock_())
    assert out.is_locked and out["b"].is_locked, name
    assert not op(_td()).is_locked, name


@pytest.mark.parametrize(("name", "op"), LOCK_DROPPING, ids=[n for n, _ in LOCK_DROPPING])
def test_copies_and_indexing_start_unlocked(name: str, op: Callable[[TensorDict], Any]) -> None:
    assert not op(_td().lock_()).is_locked, name


@pytest.mark.peer
def test_lock_rules_are_the_peers() -> None:
    peer = pytest.importorskip("tensordict")
    theirs = peer.TensorDict(
        {
            "a": torch.arange(6.0).reshape(2, 3),
            "b": peer.TensorDict({"c": torch.ones(2, 3, 4)}, [2, 3]),
        },
        [2, 3],
    ).lock_()
    for name, op in LOCK_KEEPING:
        assert op(theirs).is_locked, name
    for name, op in LOCK_DROPPING:
        assert not op(theirs).is_locked, name


def test_error_families_are_the_peers_builtins() -> None:
    with pytest.raises(ValueError) as transposed:
        TensorDict({"a": torch.zeros(())}, []).transpose(0, 0)
    assert isinstance(transposed.value, errors.TclassError)
    with pytest.raises(RuntimeError) as padded:
        tclass.pad_sequence(
            [TensorDict({"a": torch.tensor(1.0)}, []), TensorDict({"a": torch.tensor(2.0)}, [])]
        )
    assert isinstance(padded.value, errors.TclassError)
    expanded = TensorDict({"a": torch.zeros(3).expand(2, 3)}, [2])
    with pytest.raises(ValueError) as applied:
        expanded.apply(lambda x: x + 1, inplace=True)
    assert isinstance(applied.value, errors.TclassError)


def test_indexed_write_of_a_dict_builds_it_at_the_indexed_batch_size() -> None:
    # As the peer: the dict is read as the constructor reads it, with the batch size of
    # the indexed destination, so a number is a 0-dim tensor that does not fit it.
    td = TensorDict({"v": "s", "a": torch.zeros(3, 1)}, [3, 1])
    with pytest.raises(RuntimeError, match="batch dimension mismatch"):
        td[1:2] = {"v": 8}  # a 0-dim tensor, not a Python value of the selection
    td[1:2] = {"a": 2.0}  # into a tensor: written over the selection, as td[1:2] = 2.0
    with pytest.raises(RuntimeError, match="batch dimension mismatch"):
        td[1:2] = {"a": torch.ones(1)}
    td[1:2] = {"a": torch.ones(1, 1), "v": "q"}
    assert td["a"].flatten().tolist() == [0.0, 1.0, 0.0]
    assert td["v"] == [["s"], ["q"], ["s"]]
    td[3:] = {"a": torch.ones(0, 1)}  # an empty selection still checks shapes
    assert td["a"].sum().item() == 1.0


def test_a_python_value_written_from_more_batch_dims_becomes_a_stack() -> None:
    # The peer turns the value into one per element when the source has more batch dims
    # than the indexed destination (its values stay the same).
    td = TensorDict({"v": "a", "a": torch.zeros(2, 1)}, [2, 1])
    td[0, 0] = td[1].clone()
    assert type(td.get("v")).__name__ == "NonTensorStack"
    assert td["v"] == [["a"], ["a"]]
    same = TensorDict({"v": "a", "a": torch.zeros(2, 1)}, [2, 1])
    same[0] = same[1].clone()
    assert type(same.get("v")).__name__ == "NonTensorData"


def test_an_index_out_of_range_in_a_nested_write_is_an_index_error() -> None:
    td = TensorDict({"n": TensorDict({"d": torch.zeros(1, 4, 3)}, [1, 4])}, [1, 4])
    with pytest.raises(IndexError):
        td[0, -5, None] = td[0, -1].clone()


def test_a_locked_memory_mapped_collection_keeps_a_value_written_over_itself(
    tmp_path: Any,
) -> None:
    # The peer's shared write finds the value equal and keeps it (unlocked: a stack).
    td = TensorDict({"v": "a", "a": torch.zeros(1, 1)}, [1, 1]).memmap(tmp_path / "w")
    td[0:] = td[None, :2].clone()
    assert type(td.get("v")).__name__ == "NonTensorData"
    loaded = tclass.load_memmap(tmp_path / "w")
    loaded[0:] = loaded[None, :2].clone()
    assert type(loaded.get("v")).__name__ == "NonTensorStack"
