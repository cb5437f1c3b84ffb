"""The rest of the peer's method surface, on TensorDicts, lazy stacks, records and
Python-value nodes: entry facts and edits (``size``, ``entry_class``, ``popitem``,
``replace``, ``rename_keys``, ``separates``, ``cat_tensors``, ``copy_at_``...), autograd
(``requires_grad_``, ``grad``, ``zero_grad``, ``backward``, ``detach_``), shape
(``tensor_split``, ``atleast_2d/3d``, ``fliplr/flipud``, ``moveaxis``), conversions
(``numpy``, ``as_tensor``, ``from_dict_instance``, ``from_schema``, the quantized casts,
``attrs``), saved folders (``saved_path``, ``make_memmap*``, ``memmap_refresh_``,
``load_``), packing (``pack``, ``to_padded_tensor``), ``map`` / ``map_iter``, and the
members of stacks (``extend``, ``insert``, ``valid_keys``, ``get_nestedtensor``).
Results are checked against torch on the leaves, and against the peer when installed.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import tclass
from tclass import (
    LazyStackedTensorDict,
    MemoryMappedTensor,
    NonTensorData,
    NonTensorStack,
    PackLayout,
    TensorAttrs,
    TensorClass,
    TensorDict,
    errors,
)

from strategies import SETTINGS, assert_leafwise, dims, tensordicts  # noqa: E402


class Pair(TensorClass):
    x: torch.Tensor
    y: torch.Tensor
    tag: str = "t"


def _td() -> TensorDict:
    return TensorDict(
        {
            "a": torch.arange(24.0).reshape(2, 3, 4),
            "n": {"b": torch.arange(6).reshape(2, 3), "s": "x"},
            "c": torch.ones(2, 3, 1),
        },
        batch_size=[2, 3],
    )


def _lazy() -> LazyStackedTensorDict:
    return LazyStackedTensorDict.lazy_stack(
        [
            TensorDict(a=torch.ones(3), b=torch.zeros(3, 2), batch_size=[3]),
            TensorDict(a=torch.zeros(3), b=torch.ones(3, 2), batch_size=[3]),
        ]
    )


# --- shape methods against torch on the leaves ------------------------------------------


@SETTINGS
@given(data=st.data(), td=tensordicts(min_dims=1, min_side=1))
def test_tensor_split_is_torch_tensor_split_on_each_leaf(data: Any, td: TensorDict) -> None:
    dim = data.draw(dims(td.batch_dims))
    side = td.batch_size[dim]
    spec: int | list[int] = data.draw(
        st.integers(1, side + 1) | st.lists(st.integers(0, side), max_size=3).map(sorted)
    )
    parts = td.tensor_split(spec, dim)
    nb = td.batch_dims
    for position, part in enumerate(parts):

        def by_hand(leaf: torch.Tensor, position: int = position) -> torch.Tensor:
            return leaf.tensor_split(spec, dim % nb)[position]

        expected = by_hand(torch.empty(td.batch_size)).shape
        assert_leafwise(part, td, by_hand, expected, view=None)
    assert len(parts) == len(torch.empty(td.batch_size).tensor_split(spec, dim))


@SETTINGS
@given(td=tensordicts(max_dims=2))
def test_atleast_adds_leading_dims_as_torch(td: TensorDict) -> None:
    for method, ndim in (("atleast_2d", 2), ("atleast_3d", 3)):
        out = getattr(td, method)()
        missing = max(0, ndim - td.batch_dims)
        size = torch.Size([1] * missing) + td.batch_size

        def by_hand(leaf: torch.Tensor, missing: int = missing) -> torch.Tensor:
            return leaf.reshape((1,) * missing + leaf.shape)

        assert_leafwise(out, td, by_hand, size)


@SETTINGS
@given(td=tensordicts(min_dims=2, max_dims=3))
def test_fliplr_flipud_moveaxis_are_torch_on_the_batch_dims(td: TensorDict) -> None:
    nb = td.batch_dims
    assert_leafwise(td.flipud(), td, lambda leaf: leaf.flip(0), td.batch_size)
    assert_leafwise(td.fliplr(), td, lambda leaf: leaf.flip(1), td.batch_size)
    moved = td.moveaxis(0, nb - 1)
    order = [*range(1, nb), 0]
    size = torch.Size(td.batch_size[i] for i in order)
    assert_leafwise(moved, td, lambda leaf: leaf.movedim(0, nb - 1), size)


def test_shape_methods_refuse_what_torch_refuses() -> None:
    with pytest.raises(IndexError, match="tensor_split: dim 5"):
        _td().tensor_split(2, dim=5)
    with pytest.raises(errors.DimError):
        _td().moveaxis(0, 4)
    with pytest.raises(ValueError):
        TensorDict(a=torch.ones(3), batch_size=[3]).fliplr()  # one batch dim: no dim 1


def test_shape_methods_keep_the_class_of_records_and_lazy_stacks() -> None:
    pair = Pair(x=torch.ones(2, 3), y=torch.zeros(2, 3), batch_size=[2, 3])
    assert type(pair.moveaxis(0, 1)) is Pair and pair.moveaxis(0, 1).batch_size == (3, 2)
    assert [p.batch_size for p in pair.tensor_split(2, 1)] == [(2, 2), (2, 1)]
    lazy = _lazy()
    assert isinstance(lazy.atleast_3d(), LazyStackedTensorDict | TensorDict)
    assert lazy.atleast_3d().batch_size == (1, 2, 3)
    assert lazy.fliplr()["a"].tolist() == lazy["a"].flip(1).tolist()


# --- entry facts and edits ------------------------------------------------------------------


def test_entry_facts() -> None:
    td = _td()
    assert td.size() == torch.Size([2, 3]) and td.size(1) == 3 and td.size(-1) == 3
    assert td.ndimension() == 2
    assert td.entry_class("a") is torch.Tensor
    assert td.entry_class("n") is TensorDict
    assert td.entry_class(("n", "s")) is NonTensorData
    assert td.get_item_shape("a") == (2, 3, 4) and td.get_item_shape("n") == (2, 3)
    assert td.is_non_tensor(("n", "s")) and not td.is_non_tensor("a")
    assert td.non_tensor_items() == ()
    [(key, node)] = td.non_tensor_items(include_nested=True)
    assert key == ("n", "s") and node.data == "x"
    assert td.param_count() == 24 + 6 + 6
    shared = torch.ones(3)
    assert TensorDict(a=shared, b=shared).param_count(count_duplicates=False) == 3
    assert TensorDict(a=shared, b=shared).param_count() == 6


def test_entry_facts_name_missing_keys() -> None:
    with pytest.raises(KeyError, match="'zz' was not found"):
        _td().get_item_shape("zz")
    assert _td().entry_class("zz") is type(None)  # as the peer: no entry, no class
    with pytest.raises(IndexError):
        _td().size(2)


def test_popitem_and_clear() -> None:
    td = _td()
    key, value = td.popitem()
    assert key not in td.keys() and len(td.keys()) == 2
    assert isinstance(value, torch.Tensor | TensorDict)
    assert td.clear() is td and list(td.keys()) == []
    with pytest.raises(KeyError, match="holds no entry"):
        td.popitem()
    with pytest.raises(RuntimeError, match="locked"):
        _td().lock_().clear()
    # the lock is checked before the emptiness, as the peer: a locked empty one (a
    # TensorDict, a lazy stack) raises the lock error, not the KeyError
    empties = [TensorDict({}, [4, 3]), tclass.lazy_stack([TensorDict({}, [1])] * 2)]
    for empty in empties:
        with pytest.raises(RuntimeError, match="locked"):
            empty.lock_().popitem()
    # A locked collection refuses popitem before looking for an entry, as the peer's
    with pytest.raises(errors.LockedError, match="locked"):
        td.lock_().popitem()
    assert list(td.keys()) == []


def test_replace_gives_a_copy_with_entries_changed() -> None:
    td = _td()
    out = td.replace(a=torch.zeros(2, 3, 4), z=torch.ones(2, 3))
    assert out is not td and out["a"].sum() == 0 and "z" in out.keys()
    assert td["a"].sum() > 0 and "z" not in td.keys()
    assert out["c"] is td["c"]  # the untouched entries are shared, as the peer's copy
    assert td.replace() is td
    assert td.replace({"c": torch.zeros(2, 3, 1)})["c"].sum() == 0
    with pytest.raises(TypeError, match="takes a dict"):
        td.replace(3)  # type: ignore[arg-type]
    pair = Pair(x=torch.ones(2), y=torch.ones(2), batch_size=[2])
    changed = pair.replace(x=torch.zeros(2))
    assert type(changed) is Pair and changed.x.sum() == 0 and pair.x.sum() == 2


def test_rename_keys() -> None:
    td = _td()
    out = td.rename_keys({"a": "z", ("n", "b"): "top"})
    assert set(out.keys()) == {"z", "n", "c", "top"}
    assert torch.equal(out["top"], td["n", "b"])
    assert td.rename_keys({"a": "c", "c": "a"})["c"].shape == (2, 3, 4)  # a swap
    assert set(td.rename_keys({"zz": "y"}, strict=False).keys()) == set(td.keys())
    with pytest.raises(KeyError, match="'zz' was not found"):
        td.rename_keys({"zz": "y"})
    with pytest.raises(ValueError, match="already an entry"):
        td.rename_keys({"a": "n"})


def test_separates_moves_keys_out() -> None:
    td = _td()
    out = td.separates("a", ("n", "b"))
    assert set(out.keys(True)) == {"a", "n", ("n", "b"), ("n", "s")}  # values go with both
    assert set(td.keys(True)) == {"c", "n", ("n", "s")}
    assert td.separates("zz", default=None)["zz"] is None
    with pytest.raises(KeyError):
        td.separates("zz")
    twice = TensorDict(d=torch.ones(2))
    with pytest.raises(KeyError, match="d"):  # as the peer: gone the second time
        twice.separates("d", ("d",))
    assert "d" in twice.keys()  # nothing removed
    assert torch.equal(twice.separates("d", "d", strict=False)["d"], torch.ones(2))
    emptied = TensorDict(n={"b": torch.ones(2)}, batch_size=[2])
    emptied.separates(("n", "b"))
    assert "n" not in emptied.keys()  # filter_empty removes the emptied node
    kept = TensorDict(n={"b": torch.ones(2)}, batch_size=[2])
    kept.separates(("n", "b"), filter_empty=False)
    assert "n" in kept.keys()


def test_separates_key_order_as_the_peer() -> None:
    # the peer fills an empty copy of the tree (its nodes and Python values first, in
    # their order), then sets the keys in the order given, a missing one among them
    td = TensorDict(n={"b": torch.ones(1)}, a=torch.ones(1), c=torch.ones(1), batch_size=[1])
    assert list(td.clone().separates("a", "n").keys()) == ["n", "a"]
    out = td.separates("c", "zz", "a", strict=False)
    assert list(out.keys()) == ["c", "zz", "a"] and out["zz"] is None


def test_separates_a_key_and_the_collection_holding_it() -> None:
    """A key given after one inside it takes that one's whole collection, so every entry
    removed is in the result (tclass returned only ``("n", "b")``, ``("n", "c")`` lost;
    the peer's later key overwrites the earlier one's part, losing ``("n", "b")``); a
    key after the collection holding it is gone the second time, as in the peer."""
    for keys in ((("n", "b"), "n"), ("n", ("n", "b"))):
        td = TensorDict(n={"b": torch.ones(2), "c": torch.zeros(2)}, batch_size=[2])
        out = td.separates(*keys, strict=False, filter_empty=False)
        assert set(out.keys(True, True)) == {("n", "b"), ("n", "c")}
        assert torch.equal(out["n", "b"], torch.ones(2)) and "n" not in td.keys()
    td = TensorDict(n={"b": torch.ones(2), "c": torch.zeros(2)}, batch_size=[2])
    with pytest.raises(KeyError, match="'n', 'b'"):
        td.separates("n", ("n", "b"))
    assert set(td.keys(True, True)) == {("n", "b"), ("n", "c")}  # nothing removed


def test_create_nested_and_joined_tensors() -> None:
    td = _td()
    assert td.create_nested("q") is td and td["q"].batch_size == (2, 3)
    assert len(td["q"].keys()) == 0
    td = TensorDict(a=torch.ones(2, 3), b=torch.zeros(2, 3), batch_size=[2])
    out = td.cat_tensors("a", "b", out_key="z", dim=-1)
    assert out is td and set(td.keys()) == {"z"}
    assert torch.equal(td["z"], torch.cat([torch.ones(2, 3), torch.zeros(2, 3)], -1))
    kept = TensorDict(a=torch.ones(2, 3), b=torch.zeros(2, 3), batch_size=[2])
    kept.stack_tensors("a", "b", out_key="z", dim=1, keep_entries=True)
    assert set(kept.keys()) == {"a", "b", "z"} and kept["z"].shape == (2, 2, 3)
    with pytest.raises(RuntimeError, match="batch dimension mismatch"):
        TensorDict(a=torch.ones(2, 3), batch_size=[2, 3]).cat_tensors(
            "a", "a", out_key="z", keep_entries=True
        )


def test_copy_at_writes_the_rows_in_place() -> None:
    td = _td().exclude(("n", "s"))
    leaf = td["a"]
    source = td[1].clone().zero_()
    assert td.copy_at_(source, 0) is td
    assert td["a"] is leaf and td["a"][0].sum() == 0 and td["a"][1].sum() > 0
    td.copy_at_({"c": torch.full((3, 1), 5.0)}, 1)
    assert td["c"][1].tolist() == [[5.0]] * 3
    lazy = _lazy()
    lazy.copy_at_(lazy[1].clone(), 0)
    assert lazy["a"].tolist() == [[0.0] * 3] * 2
    with pytest.warns(errors.IgnoredValuesWarning, match="fast=False"):
        _td().copy_at_(_td()[1], 0)  # a Python value is not written by the fast path
    values = _td()
    values.copy_at_(_td().set(("n", "s"), "y")[1], 0, fast=False)
    assert list(values[0]["n", "s"]) == ["y"] * 3 and list(values[1]["n", "s"]) == ["x"] * 3
    assert values["a"][0].tolist() == _td()["a"][1].tolist()


def test_copy_at_reads_an_ellipsis_over_the_batch_dims() -> None:
    """``copy_at_(src, (..., i))``: the ``...`` covers the batch dims only, as
    ``td[(..., i)]`` reads them (as the peer spells it out), so a leaf with feature dims is
    written at batch dim ``-1``, not at its own last dim."""
    td = TensorDict(b=torch.ones(3, 2, 2), c=torch.ones(3, 2, 2, 2), batch_size=[3, 2, 2])
    index = (..., slice(None, -1, 3))
    td.copy_at_(td[index].clone().zero_(), index)
    assert td["c"][:, :, 0].sum() == 0 and td["c"][:, :, 1].sum() == 12
    assert td["b"][:, :, 0].sum() == 0 and td["b"][:, :, 1].sum() == 6


# --- autograd -------------------------------------------------------------------------------


def _with_grads() -> TensorDict:
    a = torch.arange(6.0).reshape(2, 3).clone()
    td = TensorDict(a=a, n={"b": torch.ones(2, 3)}, batch_size=[2])
    td.requires_grad_()
    (td["a"].sum() + 2 * td["n", "b"].sum()).backward()
    return td


def test_requires_grad_grad_zero_grad() -> None:
    td = _with_grads()
    assert td.requires_grad
    grad = td.grad
    assert grad is not None and torch.equal(grad["n", "b"], torch.full((2, 3), 2.0))
    assert td.zero_grad(set_to_none=False) is td
    assert td["a"].grad is not None and td["a"].grad.sum() == 0
    td.zero_grad()
    assert td["a"].grad is None and td.grad is None
    td.grad = TensorDict(a=torch.ones(2, 3), n={"b": torch.ones(2, 3)}, batch_size=[2])
    assert td["n", "b"].grad is not None and td["n", "b"].grad.sum() == 6
    assert td.detach_() is td and not td.requires_grad and td["a"].grad_fn is None
    with pytest.raises(RuntimeError, match="floating-point"):
        TensorDict(a=torch.ones(2, dtype=torch.long)).requires_grad_()


def test_grad_of_a_record_without_gradients_is_none_as_a_tensordicts() -> None:
    # The peer's record fails there ("Expected a TensorDictBase instance but got
    # NoneType"), in grad, zero_grad() and clip_grad_norm_ of a record alike.
    # (A record holding a Python value keeps it in a record of None gradients, in both.)

    class Vec(TensorClass):
        x: torch.Tensor
        y: torch.Tensor

    vec = Vec(x=torch.ones(3), y=torch.zeros(3), batch_size=[3])
    assert vec.grad is None and vec.requires_grad_().grad is None
    (vec.x * 2).sum().backward()
    assert type(vec.grad) is Vec and torch.equal(vec.grad.x, torch.full((3,), 2.0))
    assert vec.grad.y is None and vec.detach().grad is None
    assert vec.zero_grad() is vec and vec.grad is None and vec.x.grad is None
    assert Pair(x=torch.ones(3), y=torch.ones(3), batch_size=[3]).grad.x is None


def test_math_with_a_0d_tensor_requiring_grad_backpropagates_into_it() -> None:
    # The peer's fused kernel records a backward that fails: "inconsistent range for
    # TensorList output".
    w = torch.tensor(2.0, requires_grad=True)
    td = TensorDict(a=torch.arange(6.0).reshape(3, 2), n={"b": torch.ones(3)}, batch_size=[3])
    out = td * w
    out.mul_(3)
    out.sum(reduce=True).backward()
    assert w.grad is not None and w.grad.item() == 3 * (15.0 + 3.0)
    pair = Pair(x=torch.ones(3), y=torch.arange(3.0), batch_size=[3])
    w.grad = None
    (pair * w).sum(reduce=True).backward()
    assert w.grad.item() == 6.0


def test_detach_of_views() -> None:
    # torch refuses view.detach_(): a view that requires no gradients is left as it is
    # (the peer raises there), one that does is held as its detach() (the same data).
    td = TensorDict(a=torch.zeros(5, 2), n={"b": torch.ones(5)}, batch_size=[5])
    rows = td[1:4]
    kept = rows["a"]
    assert rows.detach_() is rows and rows["a"] is kept
    x = torch.ones(5, 2, requires_grad=True)
    graph = TensorDict(a=x * 2, n={"b": (x * 3)[:, 0]}, batch_size=[5])
    for view in (graph[1:4], graph[:3].lock_(), LazyStackedTensorDict(*graph[:2].unbind(0))):
        assert view.requires_grad
        view.detach_()
        assert not view.requires_grad and all(
            leaf.grad_fn is None for leaf in view.values(True, True)
        )
    pair = Pair(x=(x * 2)[:, 0], y=torch.zeros(5), batch_size=[5])
    data = pair.x
    assert not pair.detach_().requires_grad and pair.x.data_ptr() == data.data_ptr()
    assert graph["a"].requires_grad  # the source of the views is left as it was


def test_backward_of_a_scalar_collection() -> None:
    x = torch.ones(3, requires_grad=True)
    TensorDict(loss=(x**2).sum()).backward()
    assert x.grad is not None and x.grad.tolist() == [2.0] * 3
    y = torch.ones(2, requires_grad=True)
    TensorDict(v=y * 3, batch_size=[2]).backward(TensorDict(v=torch.ones(2), batch_size=[2]))
    assert y.grad is not None and y.grad.tolist() == [3.0, 3.0]


def test_backward_refuses_a_gradient_that_is_not_a_collection() -> None:
    y = torch.ones(2, requires_grad=True)
    out = TensorDict(v=y * 3, batch_size=[2])
    with pytest.raises(
        errors.ArgumentError, match="gradient must be a TensorDictBase.*got a Tensor"
    ):
        out.backward(torch.ones(2))  # type: ignore[arg-type]
    assert y.grad is None  # refused before any backward pass
    with pytest.raises(TypeError):
        out.backward({"v": torch.ones(2)})  # type: ignore[arg-type]


# --- conversions ----------------------------------------------------------------------------


def test_numpy_and_as_tensor() -> None:
    td = _td()
    arrays = td.numpy()
    assert isinstance(arrays["a"], np.ndarray) and arrays["n"]["s"] == "x"
    assert np.shares_memory(arrays["a"], td["a"].numpy())
    locked = td.exclude(("n", "s")).lock_()
    converted = locked.as_tensor()
    assert converted.is_locked and torch.equal(converted["a"], td["a"])


def test_as_tensor_keeps_its_own_names_not_the_nested_ones() -> None:
    inner = TensorDict(a=torch.zeros(3), batch_size=[3], names=["i"])
    td = TensorDict.from_tuple((inner, torch.zeros(3)), auto_batch_size=True)  # unnamed
    assert td.names == [None] and td.apply(lambda t: t).names == ["i"]  # as the peer's
    out = td.as_tensor()
    assert out.names == [None] and out["0"].names == ["i"]
    assert TensorDict(b=torch.zeros(3), batch_size=[3], names=["k"]).as_tensor().names == ["k"]


def test_from_dict_instance_keeps_the_nested_classes() -> None:
    template = TensorDict(p=Pair(x=torch.ones(2), y=torch.ones(2), batch_size=[2]), batch_size=[2])
    out = template.from_dict_instance(
        {"p": {"x": torch.zeros(4), "y": torch.ones(4), "tag": "new"}}, batch_size=[4]
    )
    assert type(out) is TensorDict and type(out["p"]) is Pair
    assert out["p"].tag == "new" and out.batch_size == (4,)


def test_from_dict_instance_reads_a_none_as_a_field_not_set() -> None:
    template = TensorDict(p=Pair(x=torch.ones(2), y=None, batch_size=[2]), batch_size=[2])
    data = template.to_dict()
    assert data["p"]["y"] is None  # to_dict writes the field not set as None
    out = template.from_dict_instance(data, batch_size=[2])
    assert type(out["p"]) is Pair and out["p"].y is None and torch.equal(out["p"].x, torch.ones(2))


@pytest.mark.parametrize("storage", [None, "shared", "memmap"])
def test_from_schema_allocates_zeros(storage: str | None, tmp_path: Path) -> None:
    schema = {"obs": ([3], torch.uint8), ("n", "r"): ([], torch.float32)}
    options = {"prefix": tmp_path / "s"} if storage == "memmap" else {}
    td = TensorDict.from_schema(schema, batch_size=[5], storage=storage, **options)
    assert td["obs"].shape == (5, 3) and td["obs"].dtype == torch.uint8
    assert td["n", "r"].shape == (5,) and td["n", "r"].sum() == 0
    assert td.is_shared() == (storage == "shared")  # a mapped file is not shared memory
    assert td.is_memmap() == (storage == "memmap")
    with pytest.raises(ValueError, match="must be a pair"):
        TensorDict.from_schema({"a": torch.uint8}, batch_size=[2])  # type: ignore[dict-item]
    with pytest.raises(errors.ArgumentValueError, match="Unknown storage backend 'nope'.*zarr"):
        TensorDict.from_schema(schema, batch_size=[5], storage="nope")  # a ValueError, as the peer


def test_quantized_casts_refuse_without_a_scale() -> None:
    with pytest.raises(RuntimeError, match="scale and a zero point"):
        TensorDict(a=torch.ones(2)).qint8()
    assert TensorDict(n=NonTensorData("x")).quint8()["n"] == "x"  # nothing to convert


def test_attrs_move_another_collection() -> None:
    source = TensorDict(a=torch.ones(2, dtype=torch.float64), n={"b": torch.ones(1)})
    attrs = source.attrs()
    assert isinstance(attrs["a"], TensorAttrs)
    assert attrs["a"].tgt_dtype == torch.float64 and attrs["a"].tgt_shape == (2,)
    other = TensorDict(a=torch.zeros(2), n={"b": torch.zeros(1, dtype=torch.int32)})
    moved = other.to(attrs)
    assert moved["a"].dtype == torch.float64 and moved["n", "b"].dtype == torch.float32


def test_attrs_move_takes_the_peers_keywords_and_refuses_the_rest() -> None:
    source = TensorDict(a=torch.ones(3, dtype=torch.int32), batch_size=[3])
    attrs = source.attrs()
    td = TensorDict(a=torch.zeros(3), batch_size=[3])
    kept = td["a"]
    assert td.to(attrs, non_blocking=True, num_threads=2)["a"].dtype == torch.int32
    assert td["a"] is kept  # not in place by default
    assert td.to(attrs, inplace=True) is td and td["a"].dtype == torch.int32
    # An extra device or dtype would be ignored silently: refused, as in the peer.
    with pytest.raises(errors.ArgumentError, match="does not accept additional positional"):
        td.to(attrs, "cpu")
    with pytest.raises(errors.ArgumentError, match=r"unexpected keyword.*\['dtype'\]"):
        td.to(attrs, dtype=torch.float64)
    with pytest.raises(errors.UnsupportedError, match="non_blocking_pin") as info:
        td.to(attrs, non_blocking_pin=True)
    assert isinstance(info.value, NotImplementedError)


def test_tensor_attrs_from_tensor() -> None:
    attrs = TensorAttrs.from_tensor(torch.zeros(2, 3), fields=("dtype",))
    assert attrs.tgt_dtype == torch.float32 and attrs.tgt_shape is None
    full = TensorAttrs.from_tensor(torch.zeros(2, 3, dtype=torch.int8))
    assert (full.tgt_device, full.tgt_dtype, full.tgt_shape) == (
        torch.device("cpu"),
        torch.int8,
        torch.Size([2, 3]),
    )
    with pytest.raises(errors.ArgumentError, match="unknown fields"):
        TensorAttrs.from_tensor(torch.zeros(1), fields=("stride",))


# --- saved folders --------------------------------------------------------------------------


def test_saved_folder_methods(tmp_path: Path) -> None:
    td = TensorDict(a=torch.ones(2), batch_size=[2]).memmap(tmp_path / "td")
    assert td.saved_path == tmp_path / "td"
    made = td.make_memmap("m", (2, 3), dtype=torch.float16)
    assert type(made) is MemoryMappedTensor and td["m"].dtype == torch.float16
    copied = td.make_memmap_from_tensor(("n", "c"), torch.full((2,), 7.0))
    assert copied.tolist() == [7.0, 7.0] and (tmp_path / "td" / "n").is_dir()
    assert TensorDict.load_memmap(tmp_path / "td")["n", "c"].tolist() == [7.0, 7.0]
    with pytest.raises(ValueError):
        td.make_memmap("bad", (3,))  # not the batch size
    loaded = TensorDict.load_memmap(tmp_path / "td").apply(torch.zeros_like)
    assert loaded.load_(tmp_path / "td") is loaded
    assert loaded["a"].tolist() == [1.0, 1.0] and loaded["n", "c"].tolist() == [7.0, 7.0]
    assert td.memmap_refresh_() is td
    with pytest.raises(RuntimeError):
        TensorDict(a=torch.ones(2)).saved_path  # noqa: B018


def test_make_memmap_from_storage_refuses_a_storage_of_another_file(tmp_path: Path) -> None:
    base = TensorDict(a=torch.arange(4.0), batch_size=[4]).memmap(tmp_path / "td")
    td = TensorDict.load_memmap(tmp_path / "td")
    from_memory = td.make_memmap_from_storage("b", torch.ones(4).untyped_storage(), shape=[4])
    assert from_memory.tolist() == [1.0] * 4  # copied into the folder
    other = MemoryMappedTensor.from_tensor(torch.ones(4), filename=tmp_path / "other.memmap")
    with pytest.raises(errors.FileConflictError, match="other.memmap"):  # the peer refuses too
        td.make_memmap_from_storage("c", other.untyped_storage(), shape=[4])
    assert "c" not in td.keys() and base["a"].tolist() == [0.0, 1.0, 2.0, 3.0]


def test_make_memmap_from_storage_takes_the_storage_of_the_entrys_own_file(
    tmp_path: Path,
) -> None:
    """A folder just saved maps its leaves in the staging folder renamed into place: the
    storage's name is stale, and the file it maps is still the entry's own (the peer's
    test_make_memmap_from_storage)."""
    base = TensorDict({"a": torch.zeros(3, 4), ("b", "c"): torch.zeros(5, 6)}).memmap_(tmp_path)
    td = TensorDict()
    td.memmap_(tmp_path)
    td.make_memmap_from_storage("a", base["a"].untyped_storage(), shape=[3, 4])
    td.make_memmap_from_storage(("b", "c"), base["b", "c"].untyped_storage(), shape=[5, 6])
    assert td.is_memmap() and td.is_locked and td["b"].is_locked and bool((td == 0).all())
    assert td["a"].filename == str(tmp_path / "a.memmap")


def test_memmap_in_place_without_prefix_keeps_the_saved_folder(tmp_path: Path) -> None:
    TensorDict(a=torch.ones(2), batch_size=[2]).memmap_(tmp_path / "td")
    loaded = TensorDict.load_memmap(tmp_path / "td")
    again = loaded.memmap_()  # no prefix: stays in its folder, as in the peer
    assert again is loaded and again.saved_path == tmp_path / "td"
    assert again["a"].filename == str(tmp_path / "td" / "a.memmap")
    assert TensorDict(a=torch.ones(2)).memmap_().is_memmap()  # unsaved: anonymous files


# --- packing --------------------------------------------------------------------------------


def test_pack_and_unpack_round_trip() -> None:
    td = TensorDict(a=torch.arange(6.0).reshape(2, 3), n={"b": torch.ones(2, 1)}, batch_size=[2])
    flat, layout = td.pack()
    assert isinstance(layout, PackLayout) and flat.shape == (2, 4)
    assert flat[:, :3].tolist() == td["a"].tolist()
    back = layout.unpack(flat * 2)
    assert torch.equal(back["n", "b"], td["n", "b"] * 2)
    again, same = (td + 1).pack(layout=layout)
    assert same == layout and torch.equal(again, flat + 1)
    with pytest.raises(TypeError, match="different dtypes"):
        TensorDict(a=torch.ones(2), b=torch.ones(2, dtype=torch.long), batch_size=[2]).pack()


def test_to_padded_tensor_pads_nested_leaves() -> None:
    nested = torch.nested.nested_tensor([torch.ones(2), torch.ones(3)], layout=torch.jagged)
    td = TensorDict(a=nested, b=torch.zeros(2), batch_size=[2])
    out = td.to_padded_tensor(padding=-1.0, mask_key="mask")
    assert out["a"].tolist() == [[1.0, 1.0, -1.0], [1.0, 1.0, 1.0]]
    assert out["mask"].tolist() == [[True, True, False], [True, True, True]]
    assert torch.equal(out["b"], td["b"])


def test_to_padded_tensor_of_a_ragged_batch_takes_the_padded_lengths() -> None:
    stack = TensorDict.lazy_stack(
        [
            TensorDict(a=torch.zeros(3), b=torch.zeros(3, 2), batch_size=[3]),
            TensorDict(a=torch.ones(4), b=torch.ones(4, 2), batch_size=[4]),
        ]
    )
    td = stack.densify(layout=torch.jagged)
    assert td.batch_size == torch.Size([2, -1])
    out = td.to_padded_tensor(padding=-1.0, mask_key="mask")
    assert out.batch_size == torch.Size([2, 4]) and out["b"].shape == (2, 4, 2)
    assert out["a"].tolist() == [[0.0, 0.0, 0.0, -1.0], [1.0, 1.0, 1.0, 1.0]]
    assert out["mask"].tolist() == [[True, True, True, False], [True] * 4]


def _strided_nested() -> torch.Tensor:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch's prototype warning for the strided layout
        parts = [torch.ones(3, 4, 5), 2 * torch.ones(3, 6, 5)]
        return torch.nested.nested_tensor(parts)


def test_to_padded_tensor_of_a_strided_nested_leaf_with_a_ragged_batch_dim() -> None:
    """As the peer: ``batch_size=[2, 3, -1]`` names the ragged dim of the leaf; padding
    gives it the longest length, and the mask marks the data."""
    td = TensorDict({"nested": _strided_nested()}, batch_size=[2, 3, -1])
    assert td.batch_size == (2, 3, -1) and "nested: f32[5]" in repr(td)
    out = td.to_padded_tensor(padding=0, mask_key="mask")
    assert out.batch_size == (2, 3, 6) and out["nested"].shape == (2, 3, 6, 5)
    assert out["mask"].sum(-1).tolist() == [[4] * 3, [6] * 3]
    assert (out[out["mask"]]["nested"] != 0).all() and (out[~out["mask"]]["nested"] == 0).all()


@pytest.mark.peer
def test_to_padded_tensor_of_a_ragged_batch_dim_as_the_peer() -> None:
    tensordict = pytest.importorskip("tensordict")
    outs = []
    for lib in (tensordict, tclass):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            td = lib.TensorDict({"nested": _strided_nested()}, batch_size=[2, 3, -1])
        outs.append(td.to_padded_tensor(padding=-1.0, mask_key="mask"))
    assert outs[0].batch_size == outs[1].batch_size
    for key in ("nested", "mask"):
        assert torch.equal(outs[0][key], outs[1][key])


def test_to_padded_tensor_of_a_locked_collection_is_unlocked() -> None:
    # As the peer: the padded collection is new and unlocked, so the mask can be written.
    stack = TensorDict.lazy_stack(
        [
            TensorDict(
                a=torch.zeros(3), n=TensorDict(c=torch.zeros(3), batch_size=[3]), batch_size=[3]
            ),
            TensorDict(
                a=torch.ones(4), n=TensorDict(c=torch.ones(4), batch_size=[4]), batch_size=[4]
            ),
        ]
    )
    td = stack.densify(layout=torch.jagged).lock_()
    out = td.to_padded_tensor(padding=-1.0, mask_key="mask")
    assert not out.is_locked and not out["n"].is_locked
    assert out["mask"].tolist() == [[True, True, True, False], [True] * 4]
    plain = TensorDict(a=torch.zeros(2, 3), batch_size=[2]).lock_().to_padded_tensor()
    assert not plain.is_locked


# --- map / map_iter -------------------------------------------------------------------------


def _double(td: TensorDict) -> TensorDict:
    return td * 2


def test_map_and_map_iter_over_chunks() -> None:
    td = TensorDict(a=torch.arange(8.0), batch_size=[8])
    out = td.map(_double, num_workers=2, chunksize=3)
    assert out["a"].tolist() == (torch.arange(8.0) * 2).tolist()
    chunks = list(td.map_iter(_double, num_workers=2, chunksize=4, index_with_generator=False))
    assert sorted(v for c in chunks for v in c["a"].tolist()) == out["a"].tolist()
    with pytest.raises(ValueError, match="not both"):  # the peer's ValueError
        td.map(_double, num_workers=1, chunksize=2, num_chunks=2)
    with pytest.raises(RuntimeError, match="index_with_generator"):
        td.map_iter(_double, num_workers=1, shuffle=True, index_with_generator=False)


# --- stacks and Python-value nodes ----------------------------------------------------------


def test_lazy_stack_members() -> None:
    lazy = _lazy()
    lazy.extend([TensorDict(a=torch.full((3,), 5.0), b=torch.ones(3, 2), batch_size=[3])])
    assert lazy.batch_size == (3, 3) and lazy["a"][2].tolist() == [5.0] * 3
    assert sorted(lazy.valid_keys()) == ["a", "b"]
    ragged = LazyStackedTensorDict.lazy_stack(
        [TensorDict(a=torch.ones(2)), TensorDict(a=torch.ones(3))]
    )
    nested = ragged.get_nestedtensor("a", layout=torch.jagged)
    assert nested.is_nested and [t.shape[0] for t in nested.unbind()] == [2, 3]


def test_non_tensor_stack_members() -> None:
    stack = NonTensorStack("a", "b")
    stack.append("c")
    stack.insert(0, NonTensorData("z"))
    stack.insert(-1, "m")
    stack.extend(["q", NonTensorStack("r", "s")[1]])
    assert stack.tolist() == ["z", "a", "b", "m", "c", "q", "s"]
    assert stack.batch_size == (7,) and stack[0].data == "z"
    assert list(stack.valid_keys()) == []
    rows = NonTensorStack(NonTensorStack("a", "b"), NonTensorStack("c", "d"))
    rows.append(NonTensorStack("e", "f"))
    assert rows.tolist() == [["a", "b"], ["c", "d"], ["e", "f"]]
    with pytest.raises(ValueError, match="batch size \\[1\\]"):
        rows.append(NonTensorStack("e"))
    with pytest.raises(RuntimeError, match="locked"):
        NonTensorStack("a").lock_().append("b")


def test_non_tensor_data_nodes() -> None:
    node = NonTensorData.from_tensordict(TensorDict(data="x", batch_size=[2]))
    assert node.data == "x" and node.batch_size == (2,)
    assert NonTensorData.from_tensordict(TensorDict(), {"data": 3}).data == 3
    with pytest.raises(ValueError, match="only 'data'"):
        NonTensorData.from_tensordict(TensorDict(a=torch.ones(())))
    value = NonTensorData("v", batch_size=[2])
    assert value.select() is value and list(value.keys()) == []
    with pytest.raises(KeyError):
        value.pop("a")
    assert NonTensorStack.from_nontensordata(value).tolist() == ["v", "v"]


def test_record_fields_and_extend() -> None:
    assert [f.name for f in Pair.fields()] == ["x", "y", "tag"]
    pairs = LazyStackedTensorDict.lazy_stack(
        [Pair(x=torch.ones(2), y=torch.ones(2), batch_size=[2])] * 2
    )
    assert pairs.batch_size == (2, 2)


# --- against the peer -----------------------------------------------------------------------


def _peer_td(peer: Any) -> Any:
    return peer.TensorDict(
        {
            "a": torch.arange(24.0).reshape(2, 3, 4),
            "n": peer.TensorDict({"b": torch.arange(6).reshape(2, 3), "s": "x"}, [2, 3]),
            "c": torch.ones(2, 3, 1),
        },
        batch_size=[2, 3],
    )


def _plain(value: Any) -> Any:
    """A comparable form of a result of either library."""
    if isinstance(value, torch.Tensor):
        return (value.dtype, tuple(value.shape), value.tolist())
    if isinstance(value, tuple | list):
        return [_plain(item) for item in value]
    kind = type(value).__name__
    if kind == "NonTensorData":
        return value.data
    if kind == "NonTensorStack":
        return value.tolist()
    if hasattr(value, "batch_size") and hasattr(value, "items"):
        items = sorted((str(k), _plain(v)) for k, v in value.items())
        return (tuple(value.batch_size), items)
    return value


CASES: dict[str, Callable[[Any], Any]] = {
    "size": lambda td: (td.size(), td.size(1), td.ndimension()),
    "entry_class": lambda td: [td.entry_class(k).__name__ for k in ("a", "n", ("n", "s"))],
    "item_shape": lambda td: (td.get_item_shape("a"), td.get_item_shape("n")),
    "param_count": lambda td: td.param_count(),
    "popitem": lambda td: (td.popitem(), sorted(td.keys())),
    "replace": lambda td: td.replace(a=torch.zeros(2, 3, 4)),
    "rename_keys": lambda td: td.rename_keys({"a": "z", ("n", "b"): "q"}),
    "non_tensor_items": lambda td: td.non_tensor_items(include_nested=True),
    "separates": lambda td: (td.separates("a", ("n", "b")), sorted(map(str, td.keys(True)))),
    "tensor_split": lambda td: td.tensor_split([1, 2], dim=1),
    "atleast_3d": lambda td: td.exclude(("n", "s")).atleast_3d(),
    "fliplr": lambda td: td.fliplr(),
    "moveaxis": lambda td: td.moveaxis([0, 1], [1, 0]),
    "numpy": lambda td: sorted((k, type(v).__name__) for k, v in td.numpy().items()),
    "as_tensor": lambda td: td.exclude(("n", "s")).as_tensor(),
    "copy_at_": lambda td: td.exclude(("n", "s")).copy_at_(td[0].exclude(("n", "s")), 1),
    "create_nested": lambda td: td.create_nested("q")["q"],
    "grad": lambda td: td.exclude("n").requires_grad_().grad,
    "zero_grad": lambda td: td.exclude("n").zero_grad(),
    "cat_tensors": lambda td: td.exclude("n").cat_tensors("a", "c", out_key="z", dim=-1),
    "pack": lambda td: td.exclude("n").pack()[0],
    "to_padded_tensor": lambda td: td.exclude(("n", "s")).to_padded_tensor(),
    "dict_instance": lambda td: td.from_dict_instance({"a": torch.zeros(4)}, batch_size=[4]),
}


@pytest.mark.peer
@pytest.mark.parametrize("name", sorted(CASES))
def test_methods_agree_with_the_peer(name: str) -> None:
    peer = pytest.importorskip("tensordict")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the peer's deprecation warnings
        theirs = _plain(CASES[name](_peer_td(peer)))
    assert _plain(CASES[name](_td())) == theirs


@pytest.mark.peer
def test_lazy_stack_methods_agree_with_the_peer() -> None:
    peer = pytest.importorskip("tensordict")

    def build(lib: Any) -> Any:
        return lib.LazyStackedTensorDict.lazy_stack(
            [
                lib.TensorDict(a=torch.ones(3), b=torch.zeros(3, 2), batch_size=[3]),
                lib.TensorDict(a=torch.zeros(3), b=torch.ones(3, 2), batch_size=[3]),
            ]
        )

    checks: list[Callable[[Any], Any]] = [
        lambda s: s.tensor_split(2, 1),
        lambda s: s.moveaxis(0, 1),
        lambda s: s.replace(a=torch.zeros(2, 3)),
        lambda s: (s.popitem()[0], sorted(s.keys())),
        lambda s: s.to_padded_tensor(),
        lambda s: s.rename_keys({"a": "q"}),
        lambda s: sorted(s.valid_keys()),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = [_plain(check(build(peer))) for check in checks]
    assert [_plain(check(build(__import__("tclass")))) for check in checks] == theirs


# --- the peer's keywords --------------------------------------------------------------------


def test_items_and_values_take_is_leaf_and_sort() -> None:
    td = TensorDict({"b": torch.ones(2), "a": {"z": torch.ones(2), "s": "x"}}, batch_size=[2])
    assert [k for k, _ in td.items(True, True, sort=True)] == [("a", "z"), "b"]
    kinds = [type(v).__name__ for v in td.values(True, sort=True)]
    assert kinds == ["TensorDict", "NonTensorData", "Tensor", "Tensor"]
    everything = dict(td.items(True, True, is_leaf=lambda kind: True))
    assert set(everything) == {"b", "a", ("a", "z"), ("a", "s")}
    assert everything["a"] is td["a"]


def test_named_apply_takes_apply_keywords() -> None:
    def scale(key: str, leaf: torch.Tensor) -> torch.Tensor:
        return leaf * (2 if key == "b" else 3)

    td = TensorDict({"a": torch.ones(2), "n": {"b": torch.ones(2, 3)}}, batch_size=[2])
    out = td.lock_().named_apply(scale, propagate_lock=True, names=["t"])
    assert out.is_locked and out.names == ["t"] and out["n", "b"][0, 0] == 2
    td.unlock_()
    assert td.named_apply(scale, inplace=True) is td and td["a"].tolist() == [3.0, 3.0]
    lazy = _lazy().named_apply(lambda k, x: x + 1 if k == "a" else None, filter_empty=False)
    assert isinstance(lazy, LazyStackedTensorDict) and list(lazy.keys()) == ["a"]
    pair = Pair(x=torch.ones(2), y=torch.ones(2), batch_size=[2])
    assert type(pair.named_apply(lambda k, v: v, device="cpu")) is Pair


def test_to_dict_tolist_first() -> None:
    td = TensorDict(a=torch.ones(2), n={"b": torch.ones(2)}, batch_size=[2])
    assert td.to_dict(convert_tensors=True, tolist_first=True) == {
        "a": [1.0, 1.0],
        "n": [{"b": 1.0}, {"b": 1.0}],
    }
    assert td.to_dict(convert_tensors=True) == {"a": [1.0, 1.0], "n": {"b": [1.0, 1.0]}}


def test_memory_mapped_from_tensor_keywords(tmp_path: Path) -> None:
    blank = MemoryMappedTensor.from_tensor(torch.full((3,), 5.0), copy_data=False)
    assert blank.tolist() == [0.0] * 3 and blank.dtype == torch.float32
    on_disk = MemoryMappedTensor.from_tensor(
        torch.ones(2), filename=tmp_path / "f", copy_data=False
    )
    assert on_disk.tolist() == [0.0, 0.0] and (tmp_path / "f").stat().st_size == 8
    wide = MemoryMappedTensor.from_tensor(torch.arange(3.0), shape=(2, 3))
    assert wide.tolist() == [[0.0, 1.0, 2.0]] * 2
    with pytest.raises(RuntimeError):
        MemoryMappedTensor.from_tensor(torch.ones(3), shape=(2, 4))
    with pytest.raises(TypeError, match="nested shapes"):
        MemoryMappedTensor.from_tensor(torch.ones(3), shape=torch.tensor([[3]]))


def test_load_memmap_takes_robust_key(tmp_path: Path) -> None:
    TensorDict(a=torch.ones(2), batch_size=[2]).memmap(tmp_path / "td")
    loaded = TensorDict(a=torch.zeros(2), batch_size=[2])
    assert loaded.load_memmap_(tmp_path / "td", True)["a"].tolist() == [1.0, 1.0]


@pytest.mark.peer
def test_keywords_agree_with_the_peer() -> None:
    peer = pytest.importorskip("tensordict")

    def build(lib: Any) -> Any:
        inner = lib.TensorDict({"z": torch.arange(2.0), "s": "x"}, batch_size=[2])
        return lib.TensorDict({"b": torch.ones(2), "a": inner}, batch_size=[2])

    def checks(lib: Any) -> list[Any]:
        td = build(lib)
        return [
            [str(k) for k, _ in td.items(True, True, sort=True)],
            _plain(list(td.values(True, True, sort=True))),
            td.to_dict(convert_tensors=True, tolist_first=True),
            _plain(td.named_apply(lambda k, v: v * 2 if k == "z" else None, nested_keys=True)),
            lib.MemoryMappedTensor.from_tensor(torch.arange(2.0), shape=(3, 2)).tolist(),
        ]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = checks(peer)
    assert checks(__import__("tclass")) == theirs


def test_update_takes_the_peers_keywords() -> None:
    td = TensorDict(a=torch.ones(2), batch_size=[2])
    assert td.update(b=torch.zeros(2)) is td and set(td.keys()) == {"a", "b"}
    td.update({"a": torch.zeros(2)}, c=torch.ones(2), non_blocking=True)
    assert td["a"].sum() == 0 and "c" in td.keys()
    wider = TensorDict(a=torch.zeros(3), b=torch.ones(3), c=torch.ones(3), batch_size=[3])
    assert td.update(wider, update_batch_size=True).batch_size == (3,)
    assert torch.equal(td["b"], torch.ones(3))
    with pytest.raises(RuntimeError, match="not in the source"):
        TensorDict(z=torch.ones(2), batch_size=[2]).update(wider, update_batch_size=True)
    nested = TensorDict(n={"x": torch.ones(2)}, batch_size=[2])
    nested.update({"n": TensorDict(y=torch.ones(2), batch_size=[2])}, is_leaf=lambda kind: True)
    assert set(nested.keys(True)) == {"n", ("n", "y")}  # set whole, not merged
    locked = TensorDict(a=torch.ones(2), batch_size=[2]).lock_()
    with pytest.raises(RuntimeError, match="locked"):
        locked.update({"a": torch.zeros(2)})
    locked.update({"a": torch.zeros(2)}, inplace=True)
    assert locked.is_locked and locked["a"].sum() == 0
    pair = Pair(x=torch.ones(2), y=torch.ones(2), batch_size=[2])
    assert pair.update(x=torch.zeros(2)) is pair and pair.x.sum() == 0
    lazy = _lazy()
    lazy.update({"a": torch.full((2, 3), 7.0)}, is_leaf=None)
    assert lazy["a"].sum() == 42


def test_set_takes_non_blocking() -> None:
    td = TensorDict(a=torch.zeros(2), n={"b": torch.zeros(2)}, batch_size=[2])
    leaf = td["a"]
    td.set("a", torch.ones(2), True, non_blocking=True)  # inplace given positionally
    assert td["a"] is leaf and leaf.tolist() == [1.0, 1.0]
    td.set_(("n", "b"), torch.full((2,), 2.0), non_blocking=True)
    assert td["n", "b"].tolist() == [2.0, 2.0]
    lazy = _lazy()
    lazy.set_("a", torch.full((2, 3), 4.0), non_blocking=True)
    assert lazy["a"].sum() == 24


def test_select_as_tensordict_and_clamp_out() -> None:
    td = _td()
    assert type(td.select("a", as_tensordict=True)) is TensorDict
    assert isinstance(_lazy().select("a", as_tensordict=True), LazyStackedTensorDict)
    source = TensorDict(a=torch.arange(4.0), batch_size=[4])
    out = TensorDict(a=torch.zeros(4), batch_size=[4])
    leaf = out["a"]
    assert source.clamp(1.0, 2.0, out=out) is out
    assert out["a"] is leaf and leaf.tolist() == [1.0, 1.0, 2.0, 2.0]
    assert torch.clamp(source, max=1.0)["a"].tolist() == [0.0, 1.0, 1.0, 1.0]


def test_lazy_stack_from_a_list_of_dicts() -> None:
    lazy = LazyStackedTensorDict.from_dict(
        [{"a": torch.ones(2)}, {"a": torch.zeros(3), "b": "x"}], stack_dim_name="s"
    )
    assert isinstance(lazy, LazyStackedTensorDict) and lazy.batch_size == (2,)
    assert lazy.names == ["s"] and [sorted(m.keys()) for m in lazy.tensordicts] == [
        ["a"],
        ["a", "b"],
    ]
    keyed = LazyStackedTensorDict.from_dict(
        {"0": {"a": torch.ones(2)}, "1": {"a": torch.ones(2)}}, batch_size=[2], names=["s", "t"]
    )
    assert keyed.batch_size == (2, 2) and keyed.names == ["s", "t"]
    with pytest.raises(KeyError, match="one dict per member"):
        LazyStackedTensorDict.from_dict({"0": {"a": torch.ones(2)}, "2": {"a": torch.ones(2)}})


@pytest.mark.peer
def test_lazy_stack_from_dict_agrees_with_the_peer() -> None:
    peer = pytest.importorskip("tensordict")

    def build(lib: Any) -> Any:
        parts = [{"a": torch.zeros(3, 2)}, {"a": torch.ones(3, 2)}]
        return lib.LazyStackedTensorDict.from_dict(parts, batch_size=[3], stack_dim=1)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = build(peer)
    ours = build(__import__("tclass"))
    assert ours.batch_size == theirs.batch_size == (3, 2)
    assert torch.equal(ours["a"], theirs["a"])


def test_where_into_an_out_of_another_batch_size() -> None:
    td = TensorDict(a=torch.arange(3.0), batch_size=[3])
    out = TensorDict(a=torch.zeros(2), batch_size=[2])
    keep = torch.tensor([True, False, True])
    assert td.where(keep, 0.0, out=out, update_batch_size=True) is out
    assert out.batch_size == (3,) and out["a"].tolist() == [0.0, 0.0, 2.0]
    with pytest.raises(RuntimeError):
        td.where(keep, 0.0, out=TensorDict(a=torch.zeros(2), batch_size=[2]))


def _add_key(td: TensorDict) -> TensorDict:
    td["b"] = td["a"] + 1
    return td


def test_map_options(tmp_path: Path) -> None:
    td = TensorDict(a=torch.arange(12.0).reshape(6, 2), batch_size=[6])
    expected = (torch.arange(12.0).reshape(6, 2) * 2)[:, 0].tolist()
    assert td.map(_double, num_workers=2, num_chunks=3)["a"][:, 0].tolist() == expected
    assert td.map(_double, num_workers=2, chunksize=0).batch_size == (6,)
    assert sorted(td.map(_add_key, num_workers=2, chunksize=3).keys()) == ["a", "b"]
    out = TensorDict(a=torch.zeros(6, 2), batch_size=[6]).memmap_(tmp_path / "out")
    assert td.map(_double, num_workers=2, chunksize=2, out=out) is out
    assert out["a"][:, 0].tolist() == expected  # written by the workers into the files
    wide = TensorDict(a=torch.arange(12.0).reshape(2, 6), batch_size=[2, 6])
    by_columns = wide.map(_double, dim=1, num_workers=2, chunksize=3)
    assert by_columns.batch_size == (2, 6) and torch.equal(by_columns["a"], wide["a"] * 2)


def test_to_module_writes_the_previous_tensors_into_swap_dest() -> None:
    module = torch.nn.Linear(2, 2)
    weight = module.weight
    zeros = TensorDict.from_module(module).apply(torch.zeros_like)
    dest = TensorDict()
    with zeros.to_module(module, swap_dest=dest) as swap:
        assert swap is dest and dest["weight"] is weight
        assert module.weight.sum() == 0
    assert module.weight is weight  # put back by the with block on swap_dest


def test_clamp_of_bool_tensors_is_torch_clamp() -> None:
    # As torch.clamp (and the peer, which calls it per tensor): collection bounds are
    # refused for a bool tensor, number bounds promote it.
    td = TensorDict(b=torch.tensor([True, False]), f=torch.tensor([0.5, 2.0]), batch_size=[2])
    with pytest.raises(NotImplementedError, match="Bool"):
        td.clamp(min=td.apply(torch.zeros_like), max=td.apply(torch.ones_like))
    out = td.clamp(0, 1)
    assert out["b"].tolist() == [1, 0] and out["b"].dtype is torch.int64
    assert out["f"].tolist() == [0.5, 1.0]
    assert td.clamp(min=0)["b"].dtype is torch.int64
