"""Tests for tensorclass records as batched values: indexing, writing, shape ops, torch
functions, stacking, conversions, state dicts, pickling, DataLoader, pytree and compile.

Every record here is built from module-level classes (so that they pickle): ``Rec`` has a
tensor field with a feature dim, a nested record, a ``str`` field and an optional
``dict`` field; ``Inner`` is the nested record.
"""

from __future__ import annotations

import copy
import dataclasses
import io
import math
import pickle
from typing import Any

import numpy as np
import pytest
import torch
import torch.utils._pytree as pytree
from hypothesis import given
from hypothesis import strategies as st
from torch.utils.data import DataLoader, Dataset

import tclass
from tclass import NonTensorData, NonTensorStack, TensorClass, TensorDict, errors, tensorclass

from strategies import SETTINGS, basic_indices, batch_shapes, same_storage  # noqa: E402

FieldIndexError = errors.FieldIndexError
FieldTypeError = errors.FieldTypeError
LockedError = errors.LockedError
StackError = errors.StackError
UnknownFieldError = errors.UnknownFieldError


class Inner(TensorClass):
    x: torch.Tensor


class Rec(TensorClass):
    obs: torch.Tensor
    inner: Inner
    env: str
    meta: dict | None = None


class Other(TensorClass):
    """Rec's fields plus one more (for writes of a record of another class)."""

    obs: torch.Tensor
    inner: Inner
    env: str
    extra: torch.Tensor


class Twin(TensorClass):
    """Same fields as Inner, another class (stacking different classes)."""

    x: torch.Tensor


class WithDefaults(TensorClass):
    obs: torch.Tensor
    env: str = "default"
    count: int = 3
    tags: list = dataclasses.field(default_factory=lambda: ["t"])
    label: torch.Tensor | None = None


class Tagged(TensorClass):
    x: torch.Tensor
    tag: str


class Outer(TensorClass):
    t: Tagged
    name: str


class Frozen(TensorClass, frozen=True):
    x: torch.Tensor
    env: str


@tensorclass
class Deco:
    obs: torch.Tensor
    env: str


class Counted(TensorClass):
    x: torch.Tensor

    def __post_init__(self) -> None:
        _POST_INIT_CALLS.append(1)


_POST_INIT_CALLS: list[int] = []


def make(batch: tuple[int, ...] = (4, 3), env: str = "pong", offset: int = 0) -> Rec:
    """obs: [*batch, 2] float, inner.x: [*batch] long; values distinct per offset."""
    n = math.prod(batch)
    obs = torch.arange(offset, offset + 2 * n, dtype=torch.float32).reshape(*batch, 2)
    x = torch.arange(offset, offset + n).reshape(batch)
    return Rec(obs, Inner(x, batch_size=batch), env, batch_size=batch)


def on_batch(index: Any, nb: int) -> Any:
    """``index`` with its ``...`` spelled out over ``nb`` batch dims, so that indexing a
    tensor with feature dims leaves them alone (as the record does)."""
    items = index if type(index) is tuple else (index,)
    if not any(item is Ellipsis for item in items):
        return index
    used = 0
    for item in items:
        if isinstance(item, torch.Tensor) and item.dtype is torch.bool:
            used += item.ndim
        elif item is not None and item is not Ellipsis:
            used += 1
    out: list[Any] = []
    for item in items:
        out.extend([slice(None)] * (nb - used) if item is Ellipsis else [item])
    return tuple(out)


def assert_same_rec(got: Rec, obs: torch.Tensor, x: torch.Tensor, env: Any = "pong") -> None:
    assert type(got) is Rec and type(got.inner) is Inner
    assert got.batch_size == x.shape
    assert got.inner.batch_size == x.shape
    assert torch.equal(got.obs, obs) and torch.equal(got.inner.x, x)
    node = got._tensordict.get("env")  # one value, or (stacked) the same value per element
    assert node.data == env and node.batch_size == got.batch_size


# --- indexing ------------------------------------------------------------------------------


_INDICES = [
    0, -1, 3, slice(1, 3), slice(None, None, 2), slice(None, None, -1 + 3), [0, 2, 2],
    torch.tensor([3, 0]), torch.tensor([True, False, True, True]), None, Ellipsis,
    (0, 1), (slice(None), 0), (Ellipsis, -1), (None, 1), (slice(1, None), [0, 2]),
    (torch.tensor([0, 1]), torch.tensor([2, 0])), (0, None, slice(None, 2)),
    torch.tensor([[0, 1], [2, 3]]),
]  # fmt: skip


class TestIndexing:
    @pytest.mark.parametrize("index", _INDICES, ids=repr)
    def test_matches_indexing_each_tensor(self, index: Any) -> None:
        rec = make()
        got = rec[index]
        assert_same_rec(got, rec.obs[on_batch(index, rec.ndim)], rec.inner.x[index])

    def test_full_shape_mask(self) -> None:
        rec = make()
        mask = rec.inner.x % 3 == 0
        got = rec[mask]
        assert_same_rec(got, rec.obs[mask], rec.inner.x[mask])
        assert got.batch_size == torch.Size([int(mask.sum())])

    @pytest.mark.parametrize(
        "index", [0, -2, slice(1, 3), slice(None, None, 2), None, Ellipsis, (1, slice(None)),
                  (Ellipsis, 0), (None, 2)], ids=repr,
    )  # fmt: skip
    def test_basic_indices_give_views(self, index: Any) -> None:
        rec = make()
        got = rec[index]
        assert same_storage(got.obs, rec.obs) and same_storage(got.inner.x, rec.inner.x)
        got.obs.fill_(-7)
        assert (rec.obs[on_batch(index, 2)] == -7).all()

    def test_advanced_indices_copy(self) -> None:
        rec = make()
        got = rec[[0, 1]]
        got.obs.fill_(-7)
        assert not (rec.obs == -7).any()

    @pytest.mark.parametrize("index", ["obs", ("obs",), ("inner", "x"), "nope"], ids=repr)
    def test_string_index_raises(self, index: Any) -> None:
        with pytest.raises(FieldIndexError, match="indexed along its batch dims") as info:
            make()[index]
        assert isinstance(info.value, ValueError)

    def test_string_index_write_raises(self) -> None:
        rec = make()
        # the fix named is a write (set), not the read (get) that rec["obs"] gets
        with pytest.raises(FieldIndexError, match=r"with \.set\('obs', value\)"):
            rec["obs"] = torch.zeros(4, 3, 2)
        with pytest.raises(FieldIndexError, match=r"with \.get\('obs'\)"):
            rec["obs"]

    def test_out_of_range(self) -> None:
        with pytest.raises(IndexError):
            make()[4]

    def test_decorated_class_indexes_the_same(self) -> None:
        d = Deco(torch.arange(6).reshape(3, 2), "e", batch_size=[3])
        got = d[1:]
        assert type(got) is Deco and got.batch_size == torch.Size([2]) and got.env == "e"
        assert torch.equal(got.obs, torch.arange(2, 6).reshape(2, 2))

    @SETTINGS
    @given(data=st.data(), batch=batch_shapes(1, 3, 1, 4))
    def test_basic_indices_match_tensors(self, data: st.DataObject, batch: torch.Size) -> None:
        rec = make(tuple(batch))
        index = data.draw(basic_indices(batch))
        got = rec[index]
        assert_same_rec(got, rec.obs[on_batch(index, rec.ndim)], rec.inner.x[index])
        if rec.inner.x[index].numel():
            assert same_storage(got.inner.x, rec.inner.x)

    @SETTINGS
    @given(data=st.data(), batch=batch_shapes(1, 3, 1, 4))
    def test_advanced_indices_match_tensors(self, data: st.DataObject, batch: torch.Size) -> None:
        rec = make(tuple(batch))
        kind = data.draw(st.sampled_from(["list", "long", "mask1", "maskfull", "pair"]))
        if kind == "list":
            index: Any = data.draw(st.lists(st.integers(-batch[0], batch[0] - 1), max_size=5))
        elif kind == "long":
            shape = data.draw(st.lists(st.integers(0, 3), min_size=1, max_size=2))
            index = torch.randint(0, batch[0], tuple(shape))
        elif kind == "mask1":
            index = torch.tensor(
                data.draw(st.lists(st.booleans(), min_size=batch[0], max_size=batch[0]))
            )
        elif kind == "maskfull":
            index = torch.rand(batch) > 0.5
        else:
            first = torch.randint(0, batch[0], (data.draw(st.integers(1, 3)),))
            index = (first, slice(None)) if len(batch) > 1 else (first,)
        got = rec[index]
        assert_same_rec(got, rec.obs[on_batch(index, rec.ndim)], rec.inner.x[index])


class TestValuesUnderShapeOps:
    @pytest.mark.parametrize(
        "op",
        [lambda r: r[0], lambda r: r[1:, 0], lambda r: r[[0, 0, 1]], lambda r: r[None],
         lambda r: r.reshape(-1), lambda r: r.expand(4, 3), lambda r: r.broadcast_to((2, 4, 3)),
         lambda r: r.permute(1, 0), lambda r: r.flatten(), lambda r: r.unbind(1)[0],
         lambda r: r.split(2)[1], lambda r: r.view(12).unflatten(0, (2, 6))],
    )  # fmt: skip
    def test_str_field_keeps_single_value(self, op: Any) -> None:
        rec = make()
        meta = {"k": [1]}
        rec.meta = meta
        got = op(rec)
        assert got.env == "pong"
        assert got.meta is meta  # the value itself, never copied
        assert type(got._tensordict._tensors.get("env")) is NonTensorData
        assert got._tensordict._tensors.get("env").batch_size == got.batch_size

    def test_new_dims_give_one_value_per_element(self) -> None:
        """As the peer: unsqueeze and expand to new dims stack the value per element."""
        rec = make()
        assert rec.unsqueeze(0).env == [[["pong"] * 3] * 4]
        assert rec.expand(2, 4, 3).env == [[["pong"] * 3] * 4] * 2
        assert type(rec.unsqueeze(0)._tensordict._tensors.get("env")) is NonTensorStack

    def test_expand_keeps_value(self) -> None:
        rec = make((1, 3))
        assert rec.expand(1000, 3).env == "pong"
        assert rec.expand(1000, 3).batch_size == torch.Size([1000, 3])


# --- writing -------------------------------------------------------------------------------


class TestSetItem:
    def test_write_record_in_place(self) -> None:
        rec, src = make(), make(offset=100)
        obs_ptr, x_ptr = rec.obs.data_ptr(), rec.inner.x.data_ptr()
        rec[1:3] = src[:2]
        assert rec.obs.data_ptr() == obs_ptr and rec.inner.x.data_ptr() == x_ptr
        assert torch.equal(rec.obs[1:3], src.obs[:2])
        assert torch.equal(rec.inner.x[1:3], src.inner.x[:2])
        assert torch.equal(rec.obs[0], make().obs[0])
        assert rec.env == "pong"

    @pytest.mark.parametrize(
        "index", [0, (1, 2), [0, 3], torch.tensor([True, False, False, True])], ids=repr
    )
    def test_write_at_any_index(self, index: Any) -> None:
        rec, src = make(), make(offset=100)
        rec[index] = src[index]
        assert torch.equal(rec.obs[index], src.obs[index])
        assert torch.equal(rec.inner.x[index], src.inner.x[index])

    def test_different_str_becomes_per_element(self) -> None:
        rec = make(env="a")
        rec[1] = make((3,), env="b")
        assert rec.env == [["a"] * 3, ["b"] * 3, ["a"] * 3, ["a"] * 3]
        assert rec[1].env == ["b"] * 3 and rec[1, 0].env == "b" and rec[0, 0].env == "a"
        assert rec[:, 0].env == ["a", "b", "a", "a"]
        assert type(rec._tensordict._tensors.get("env")) is NonTensorStack

    @pytest.mark.parametrize(
        "index", [2, slice(1, 3), slice(None, None, 2), [3, 0], torch.tensor([1, 2]),
                  torch.tensor([True, False, False, True])], ids=repr,
    )  # fmt: skip
    def test_different_str_matches_object_array(self, index: Any) -> None:
        rec = make((4,), env="a")
        src = make((4,), env="b")
        rec[index] = src[index]
        expected = np.array(["a"] * 4, dtype=object)
        expected[index.numpy() if isinstance(index, torch.Tensor) else index] = "b"
        assert rec.env == expected.tolist()
        assert [rec[i].env for i in range(4)] == expected.tolist()

    def test_write_per_element_values(self) -> None:
        rec = make((4,))
        rec[1:3] = torch.stack([make((), env="u"), make((), env="v")])
        assert rec.env == ["pong", "u", "v", "pong"]
        rec[:] = make((4,), env="w")
        assert rec.env == ["w"] * 4 and rec[2].env == "w"

    def test_same_str_stays_single(self) -> None:
        rec = make(env="a")
        rec[1] = make((3,), env="a")
        assert rec.env == "a"
        assert type(rec._tensordict._tensors.get("env")) is NonTensorData

    def test_write_nested_record(self) -> None:
        rec = make()
        rec.inner[2] = Inner(torch.full((3,), -1), batch_size=[3])
        assert (rec.inner.x[2] == -1).all()

    def test_write_other_class_with_unknown_field(self) -> None:
        rec = make()
        other = Other(
            torch.zeros(4, 3, 2),
            Inner(torch.zeros(4, 3, dtype=torch.long), batch_size=[4, 3]),
            "z",
            torch.zeros(4, 3),
            batch_size=[4, 3],
        )
        with pytest.raises(UnknownFieldError, match="extra") as info:
            rec[0] = other[0]
        assert isinstance(info.value, ValueError)  # as the peer raises, in its words:
        assert "only allowed for same-class or compatible class" in str(info.value)
        with pytest.raises(UnknownFieldError, match="nope"):
            rec[0] = {"nope": torch.zeros(3)}

    def test_write_dict_of_fields(self) -> None:
        rec = make()
        rec[0] = {"obs": torch.full((3, 2), 5.0)}
        assert (rec.obs[0] == 5).all() and rec.env == "pong"

    @pytest.mark.parametrize("value", [0, 2.5, torch.tensor(7), torch.arange(3)], ids=repr)
    def test_broadcast_number_or_tensor(self, value: Any) -> None:
        rec = make()
        rec.meta = {"m": 1}
        rec[1] = value
        expected = torch.as_tensor(value)
        assert (rec.obs[1] == expected.unsqueeze(-1).to(rec.obs.dtype)).all()
        assert (rec.inner.x[1] == expected.to(rec.inner.x.dtype)).all()
        assert rec.env == "pong" and rec.meta == {"m": 1}
        assert (rec.obs[0] == make().obs[0]).all()


# --- shape ops and torch functions ---------------------------------------------------------


def _leafwise(rec: Rec, result: Any, fn: Any) -> None:
    """``result`` is ``fn`` applied over the batch dims of every tensor of ``rec``."""
    nb = rec.batch_dims
    obs_by_hand = fn(rec.obs, nb)
    x_by_hand = fn(rec.inner.x, nb)
    assert_same_rec(result, obs_by_hand, x_by_hand)


_SHAPE_OPS = {
    "reshape": (lambda r: r.reshape(2, 6), lambda t, nb: t.reshape((2, 6) + t.shape[nb:])),
    "reshape-1": (lambda r: r.reshape(-1), lambda t, nb: t.reshape((12,) + t.shape[nb:])),
    "view": (lambda r: r.view(3, 4), lambda t, nb: t.view((3, 4) + t.shape[nb:])),
    "flatten": (lambda r: r.flatten(), lambda t, nb: t.flatten(0, nb - 1)),
    "unflatten": (lambda r: r.unflatten(0, (2, 2)), lambda t, nb: t.unflatten(0, (2, 2))),
    "unsqueeze0": (lambda r: r.unsqueeze(0), lambda t, nb: t.unsqueeze(0)),
    "unsqueeze-1": (lambda r: r.unsqueeze(-1), lambda t, nb: t.unsqueeze(nb)),
    "squeeze": (lambda r: r.unsqueeze(1).squeeze(1), lambda t, nb: t),
    "squeeze-all": (lambda r: r.unsqueeze(0).unsqueeze(2).squeeze(), lambda t, nb: t),
    "permute": (lambda r: r.permute(1, 0), lambda t, nb: t.transpose(0, 1)),
    "transpose": (lambda r: r.transpose(0, 1), lambda t, nb: t.transpose(0, 1)),
    "expand": (lambda r: r[:1].expand(5, 3), lambda t, nb: t[:1].expand((5, 3) + t.shape[nb:])),
    "torch.reshape": (
        lambda r: torch.reshape(r, (12,)),
        lambda t, nb: t.reshape((12,) + t.shape[nb:]),
    ),
    "torch.squeeze": (lambda r: torch.squeeze(r.unsqueeze(0), 0), lambda t, nb: t),
    "torch.unsqueeze": (lambda r: torch.unsqueeze(r, 1), lambda t, nb: t.unsqueeze(1)),
    "torch.permute": (lambda r: torch.permute(r, (1, 0)), lambda t, nb: t.transpose(0, 1)),
    "torch.clone": (lambda r: torch.clone(r), lambda t, nb: t),
    "torch.zeros_like": (lambda r: torch.zeros_like(r), lambda t, nb: torch.zeros_like(t)),
    "torch.ones_like": (lambda r: torch.ones_like(r), lambda t, nb: torch.ones_like(t)),
    "torch.full_like": (lambda r: torch.full_like(r, 4), lambda t, nb: torch.full_like(t, 4)),
    "torch.where": (
        lambda r: torch.where(torch.tensor([True, False, True, False]), r, 0),
        lambda t, nb: torch.where(
            torch.tensor([True, False, True, False]).reshape((4,) + (1,) * (t.ndim - 1)), t, 0
        ),
    ),
}


class TestShapeOps:
    @pytest.mark.parametrize("name", list(_SHAPE_OPS))
    def test_same_class_and_values(self, name: str) -> None:
        op, by_hand = _SHAPE_OPS[name]
        rec = make()
        _leafwise(rec, op(rec), by_hand)

    @pytest.mark.parametrize(
        "name, op, by_hand",
        [("split", lambda r: r.split([1, 3]), lambda t: t.split([1, 3])),
         ("split-dim1", lambda r: r.split(2, dim=1), lambda t: t.split(2, dim=1)),
         ("chunk", lambda r: r.chunk(2), lambda t: t.chunk(2)),
         ("unbind", lambda r: r.unbind(0), lambda t: t.unbind(0)),
         ("unbind1", lambda r: r.unbind(1), lambda t: t.unbind(1)),
         ("torch.split", lambda r: torch.split(r, 3), lambda t: torch.split(t, 3)),
         ("torch.chunk", lambda r: torch.chunk(r, 3, 1), lambda t: torch.chunk(t, 3, 1)),
         ("torch.unbind", lambda r: torch.unbind(r, 1), lambda t: torch.unbind(t, 1)),
         ("iter", lambda r: list(r), lambda t: list(t))],
        ids=lambda v: v if isinstance(v, str) else "",
    )  # fmt: skip
    def test_pieces(self, name: str, op: Any, by_hand: Any) -> None:
        rec = make()
        pieces = op(rec)
        obs_pieces, x_pieces = by_hand(rec.obs), by_hand(rec.inner.x)
        assert len(pieces) == len(x_pieces)
        for got, obs, x in zip(pieces, obs_pieces, x_pieces):
            assert_same_rec(got, obs, x)
            if name != "split":
                assert same_storage(got.obs, rec.obs)

    def test_where_with_records(self) -> None:
        a, b = make((2,), offset=0), make((2,), offset=50)
        got = torch.where(torch.tensor([True, False]), a, b)
        assert_same_rec(
            got, torch.cat([a.obs[:1], b.obs[1:]]), torch.cat([a.inner.x[:1], b.inner.x[1:]])
        )

    def test_where_takes_python_values_from_other(self) -> None:
        a, b = make((2,), env="a"), make((2,), env="b")
        got = torch.where(torch.tensor([True, False]), a, b)
        assert got.env == ["a", "b"]

    def test_view_shares_storage(self) -> None:
        rec = make()
        got = rec.view(12)
        assert same_storage(got.obs, rec.obs) and same_storage(got.inner.x, rec.inner.x)

    def test_nested_with_more_dims(self) -> None:
        rec = make()
        rec.inner = Inner(torch.arange(24).reshape(4, 3, 2), batch_size=[4, 3, 2])
        got = rec.permute(1, 0)
        assert type(got.inner) is Inner and got.inner.batch_size == torch.Size([3, 4, 2])
        assert torch.equal(got.inner.x, rec.inner.x.transpose(0, 1))
        assert rec.reshape(-1).inner.batch_size == torch.Size([12, 2])

    def test_shape_errors(self) -> None:
        with pytest.raises(errors.ShapeError):
            make().reshape(5)
        with pytest.raises(IndexError):
            make().unsqueeze(4)


# --- element-wise ops, copies, devices -----------------------------------------------------


class TestApplyAndCopies:
    def test_apply(self) -> None:
        rec = make()
        got = rec.apply(lambda t: t * 2)
        assert_same_rec(got, rec.obs * 2, rec.inner.x * 2)

    def test_apply_with_other(self) -> None:
        a, b = make(), make(offset=50)
        got = a.apply(lambda s, t: s + t, b)
        assert_same_rec(got, a.obs + b.obs, a.inner.x + b.inner.x)

    def test_apply_batch_size(self) -> None:
        rec = make()
        got = rec.apply(lambda t: t[:, 0], batch_size=[4])
        assert_same_rec(got, rec.obs[:, 0], rec.inner.x[:, 0])

    def test_clone_is_deep(self) -> None:
        rec = make()
        rec.meta = {"a": [1, 2]}
        got = rec.clone()
        assert_same_rec(got, rec.obs, rec.inner.x)
        assert not same_storage(got.obs, rec.obs) and not same_storage(got.inner.x, rec.inner.x)
        assert got.meta == rec.meta and got.meta is not rec.meta
        assert got.meta["a"] is not rec.meta["a"]
        got.meta["a"].append(3)
        assert rec.meta == {"a": [1, 2]}

    def test_clone_per_element_list_values(self) -> None:
        a, b = make((3,)), make((3,))
        a.meta, b.meta = {"v": [1]}, {"v": [2]}
        s = torch.stack([a, b])
        got = s.clone()
        assert got.meta == s.meta
        got[0, 0].meta["v"].append(9)
        assert s.meta[0][0] == {"v": [1]}

    def test_clone_no_recurse_shares(self) -> None:
        rec = make()
        got = rec.clone(False)
        assert got.obs is rec.obs and got.inner is not rec.inner and got.inner.x is rec.inner.x

    def test_detach(self) -> None:
        rec = make()
        rec.obs.requires_grad_(True)
        got = rec.detach()
        assert not got.obs.requires_grad and same_storage(got.obs, rec.obs)
        assert type(got) is Rec and got.env == "pong"

    def test_to_cpu_and_back(self) -> None:
        rec = make()
        got = rec.to("cpu")
        assert type(got) is Rec and got.device == torch.device("cpu")
        assert got.inner.device == torch.device("cpu")
        assert got.env == "pong"
        assert got.to("cpu") is got and got.cpu() is got
        assert got.to(torch.device("cpu")) is got

    def test_to_nothing_returns_self(self) -> None:
        rec = make()
        assert rec.to() is rec

    def test_to_dtype(self) -> None:
        rec = make()
        got = rec.to(torch.float64)
        assert got.obs.dtype is torch.float64 and got.inner.x.dtype is torch.float64
        assert type(got.inner) is Inner and got.env == "pong"
        assert torch.equal(got.obs, rec.obs.double())

    def test_clear_device(self) -> None:
        rec = make().to("cpu")
        assert rec.clear_device_() is rec
        assert rec.device is None and rec.inner.device is None

    def test_cpu_on_deviceless(self) -> None:
        got = make().cpu()
        assert got.device == torch.device("cpu") and type(got) is Rec


class TestCompare:
    def test_equal_records(self) -> None:
        eq = make() == make()
        assert type(eq) is Rec and eq.obs.dtype is torch.bool
        assert eq.all() and not (make() != make()).any()

    def test_different_tensors(self) -> None:
        a, b = make(), make()
        b.obs[0, 0, 0] = -1
        eq = a == b
        assert not eq.all() and eq.any()
        assert (a != b).any()
        assert not eq.obs[0, 0, 0] and eq.obs[1].all() and eq.inner.x.all()

    def test_different_str_field(self) -> None:
        a, b = make(env="a"), make(env="b")
        assert not (a == b).all()
        assert (a != b).any()

    def test_stack_of_equal_values_equals_single(self) -> None:
        a = make((2,), env="a")
        b = make((2,), env="a")
        one = b[1].clone()
        one.env = "z"
        b[1] = one
        one.env = "a"
        b[1] = one  # a per-element stack holding one value
        assert type(b._tensordict._tensors.get("env")) is NonTensorStack
        assert (a == b).all() and not (a != b).any()

    def test_per_element_str(self) -> None:
        a, b = make((2,), env="a"), make((2,), env="a")
        a[1] = make((), env="z")
        eq = a == b
        assert not eq.all()
        assert eq[0].all() and not eq[1].all()

    def test_compare_with_number(self) -> None:
        rec = make()
        eq = rec == 0
        assert eq.obs[0, 0, 0] and not eq.obs[0, 0, 1] and eq.inner.x[0, 0]

    def test_all_any_with_dim(self) -> None:
        eq = make() == make()
        reduced = eq.all(dim=1)
        assert type(reduced) is Rec and reduced.batch_size == torch.Size([4])
        assert reduced.obs.all()

    def test_bool_is_ambiguous(self) -> None:
        with pytest.raises(RuntimeError, match="ambiguous"):
            bool(make() == make())


class TestLockAndFacts:
    def test_get_reads_a_public_attribute_that_is_no_field(self) -> None:
        rec = make()  # as the peer: get("batch_size") is the batch size, whatever default
        assert rec.get("batch_size") == rec.get("batch_size", "d") == torch.Size([4, 3])
        assert rec.get("device") is None and rec.get("ndim") == 2
        assert rec.get("meta") is None and rec.get("nope", "d") == "d"  # fields, then default
        assert rec.get("_tensordict", "d") == "d"  # private names are not read

    def test_lock_forbids_assignment(self) -> None:
        rec = make()
        rec.lock_()
        assert rec.is_locked
        with pytest.raises(LockedError, match=r"or write in place \(record\.obs\[:\] = "):
            rec.obs = torch.zeros(4, 3, 2)
        with pytest.raises(LockedError, match=r"record\.unlock_\(\): \.\.\.\)$"):
            rec.env = "z"  # a Python value: unlocking is the fix, there is no [:] to write
        rec.obs[0] = 9.0  # in-place writes stay allowed
        rec[1] = make(offset=100)[1]
        assert (rec.obs[0] == 9).all()
        rec.unlock_()
        rec.env = "z"
        assert rec.env == "z" and not rec.is_locked

    def test_lock_as_context_manager(self) -> None:
        rec = make()
        with rec.lock_():
            assert rec.is_locked
            with pytest.raises(LockedError):
                rec.env = "z"
        assert not rec.is_locked
        rec.lock_()
        with rec.unlock_():
            rec.env = "z"
        assert rec.is_locked

    def test_lock_reaches_nested(self) -> None:
        rec = make().lock_()
        with pytest.raises(LockedError):
            rec.inner.x = torch.zeros(4, 3)

    def test_facts(self) -> None:
        rec = make()
        assert rec.batch_size == rec.shape == torch.Size([4, 3])
        assert rec.ndim == rec.batch_dims == rec.dim() == 2
        assert rec.numel() == 12 and len(rec) == 4
        assert rec.names == [None, None] and rec.device is None

    def test_batch_size_assign(self) -> None:
        inner = Inner(torch.arange(12).reshape(4, 3), batch_size=[4, 3])
        inner.batch_size = [4]
        assert inner.batch_size == torch.Size([4]) and inner[0].batch_size == torch.Size([])
        with pytest.raises(errors.BatchSizeError):
            inner.batch_size = [5]

    def test_batch_size_assign_with_python_value(self) -> None:
        rec = make()
        rec.batch_size = [4]
        assert rec.batch_size == torch.Size([4]) and rec.inner.batch_size == torch.Size([4, 3])
        assert rec[0].env == "pong" and rec[0].batch_size == torch.Size([])

    def test_iteration(self) -> None:
        rec = make()
        items = list(rec)
        assert len(items) == 4 and all(
            type(i) is Rec and i.batch_size == torch.Size([3]) for i in items
        )
        assert torch.equal(items[2].obs, rec.obs[2])
        with pytest.raises(TypeError):
            iter(make(()))

    def test_len_no_batch(self) -> None:
        assert len(make(())) == 0


# --- stack and cat -------------------------------------------------------------------------


_JOINS = [torch.stack, tclass.stack]
_CATS = [torch.cat, tclass.cat]


class TestStackCat:
    @pytest.mark.parametrize("stack", _JOINS, ids=["torch", "tclass"])
    def test_stack_values(self, stack: Any) -> None:
        a, b = make(offset=0), make(offset=100)
        s = stack([a, b])
        assert_same_rec(s, torch.stack([a.obs, b.obs]), torch.stack([a.inner.x, b.inner.x]))

    @pytest.mark.parametrize("stack", _JOINS, ids=["torch", "tclass"])
    def test_stack_dim_last(self, stack: Any) -> None:
        a, b = make(offset=0), make(offset=100)
        s = stack([a, b], -1)
        assert s.batch_size == torch.Size([4, 3, 2])
        assert torch.equal(s.inner.x, torch.stack([a.inner.x, b.inner.x], -1))
        assert torch.equal(s.obs, torch.stack([a.obs, b.obs], 2))

    @pytest.mark.parametrize("cat", _CATS, ids=["torch", "tclass"])
    @pytest.mark.parametrize("dim", [0, -1])
    def test_cat_values(self, cat: Any, dim: int) -> None:
        a, b = make(offset=0), make(offset=100)
        c = cat([a, b], dim)
        tdim = dim if dim >= 0 else a.batch_dims + dim
        assert_same_rec(c, torch.cat([a.obs, b.obs], tdim), torch.cat([a.inner.x, b.inner.x], tdim))

    def test_equal_values_stack_per_element_and_cat_to_one(self) -> None:
        s = torch.stack([make((3,), env="a"), make((3,), env="a")])
        assert s.env == [["a"] * 3] * 2 and type(s._tensordict.get("env")) is NonTensorStack
        assert s[1].env == "a" and s[:, 0].env == ["a", "a"]  # as the peer
        c = torch.cat([make(env="a"), make(env="a")])
        assert c.env == "a" and type(c._tensordict.get("env")) is NonTensorData

    def test_different_values_per_element(self) -> None:
        s = torch.stack([make((3,), env="a"), make((3,), env="b")])
        assert s.env == [["a"] * 3, ["b"] * 3]
        # Indexing the stack dim away gives the member's one value, as in the peer.
        assert s[1].env == "b" and s[1, 0].env == "b" and s[0, 2].env == "a"
        assert s[:, 0].env == ["a", "b"]
        assert s[:, 1:].env == [["a"] * 2, ["b"] * 2]

    def test_different_values_1d(self) -> None:
        s = torch.stack([make((), env="a"), make((), env="b")])
        assert (
            s.env == ["a", "b"]
            and s[1].env == "b"
            and s[torch.tensor([1, 1, 0])].env == ["b", "b", "a"]
        )

    def test_stack_last_dim_values(self) -> None:
        s = torch.stack([make((3,), env="a"), make((3,), env="b")], dim=-1)
        assert s.env == [["a", "b"]] * 3
        assert s[:, 1].env == "b" and s[1].env == ["a", "b"]

    def test_restack_and_shape_ops_move_values(self) -> None:
        s = torch.stack([make((), env="a"), make((), env="b")])
        ss = torch.stack([s, s])
        assert ss.env == [["a", "b"], ["a", "b"]]
        assert ss.transpose(0, 1).env == [["a", "a"], ["b", "b"]]
        assert ss.reshape(-1).env == ["a", "b", "a", "b"]
        assert ss.permute(1, 0)[0].env == ["a", "a"]
        assert s.unsqueeze(0).expand(3, 2).env == [["a", "b"]] * 3
        assert [p.env for p in ss.unbind(1)] == [["a", "a"], ["b", "b"]]

    def test_cat_of_stacks(self) -> None:
        s1 = torch.stack([make((), env="a"), make((), env="b")])
        s2 = torch.stack([make((), env="c"), make((), env="c")])
        c = torch.cat([s1, s2])
        assert c.env == ["a", "b", "c", "c"] and c.batch_size == torch.Size([4])
        c2 = tclass.cat([s1, make((2,), env="d")])
        assert c2.env == ["a", "b", "d", "d"]

    def test_stack_out(self) -> None:
        a, b = make((3,), offset=0), make((3,), offset=100)
        out = make((2, 3), env="a")
        ptr = out.obs.data_ptr()
        got = torch.stack([a, b], out=out)
        assert got is out and out.obs.data_ptr() == ptr
        assert torch.equal(out.obs, torch.stack([a.obs, b.obs]))
        assert torch.equal(out.inner.x, torch.stack([a.inner.x, b.inner.x]))
        assert out.env == [["pong"] * 3] * 2

    def test_cat_out(self) -> None:
        a, b = make((2, 3), offset=0), make((2, 3), offset=100)
        out = make((4, 3))
        got = tclass.cat([a, b], 0, out=out)
        assert got is out and torch.equal(out.obs, torch.cat([a.obs, b.obs]))

    def test_out_wrong_size(self) -> None:
        with pytest.raises(StackError, match="out="):
            torch.stack([make((3,)), make((3,))], out=make((3, 2)))

    def test_different_classes(self) -> None:
        a = Inner(torch.zeros(3), batch_size=[3])
        b = Twin(torch.zeros(3), batch_size=[3])
        for join in (torch.stack, tclass.stack, torch.cat, tclass.cat):
            with pytest.raises(StackError, match="member 1 is a Twin"):
                join([a, b])
            with pytest.raises(TypeError):  # the peer: torch's dispatch fails, a TypeError
                join([a, b])

    def test_different_batch_sizes(self) -> None:
        with pytest.raises(StackError, match="batch size"):
            torch.stack([make((3,)), make((2,))])

    def test_post_init_not_called(self) -> None:
        _POST_INIT_CALLS.clear()
        a = Counted(torch.zeros(3), batch_size=[3])
        b = Counted(torch.ones(3), batch_size=[3])
        assert len(_POST_INIT_CALLS) == 2
        s = torch.stack([a, b])
        s[0]
        s.reshape(-1).clone()
        torch.cat([a, b])
        assert len(_POST_INIT_CALLS) == 2 and type(s) is Counted

    @SETTINGS
    @given(
        envs=st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=5),
        dim=st.sampled_from([0, -1]),
    )
    def test_stacked_values_in_order(self, envs: list[str], dim: int) -> None:
        s = torch.stack([make((2,), env=e) for e in envs], dim)
        by_element = np.stack([np.array([e, e], dtype=object) for e in envs], dim)
        assert s.batch_size == torch.Size(by_element.shape)
        assert s.env == by_element.tolist()  # per element, equal values included
        assert s.reshape(-1).env == by_element.reshape(-1).tolist()
        assert s[0, 0].env == by_element[0, 0]

    def test_nested_python_values_per_element(self) -> None:
        o1 = Outer(Tagged(torch.zeros(2), "p", batch_size=[2]), "n", batch_size=[2])
        o2 = Outer(Tagged(torch.ones(2), "q", batch_size=[2]), "n", batch_size=[2])
        s = torch.stack([o1, o2])
        assert type(s.t) is Tagged and s.name == [["n", "n"], ["n", "n"]]
        assert s.t.tag == [["p", "p"], ["q", "q"]] and s[:, 0].t.tag == ["p", "q"]
        back = Outer.from_tensordict(s.to_tensordict())
        assert type(back.t) is Tagged and back.t.tag == s.t.tag and back[1, 1].t.tag == "q"
        assert pickle.loads(pickle.dumps(s)).t.tag == s.t.tag

    def test_nested_keeps_class(self) -> None:
        s = torch.stack([make(), make()])
        assert type(s.inner) is Inner and s.inner.batch_size == torch.Size([2, 4, 3])


# --- conversions ---------------------------------------------------------------------------


class TestTensorDictConversion:
    def test_to_tensordict_is_a_copy(self) -> None:
        rec = make()
        td = rec.to_tensordict()
        assert type(td) is TensorDict and type(td.get("inner")) is TensorDict
        assert td.batch_size == rec.batch_size
        assert torch.equal(td["obs"], rec.obs) and torch.equal(td["inner", "x"], rec.inner.x)
        assert not same_storage(td["obs"], rec.obs) and not same_storage(
            td["inner", "x"], rec.inner.x
        )
        assert type(td.get("env")) is NonTensorData and td.get("env").data == "pong"
        assert "meta" not in td.keys()

    def test_from_tensordict_shares(self) -> None:
        td = TensorDict({"obs": torch.zeros(4, 2), "inner": {"x": torch.arange(4)},
                         "env": NonTensorData("e", [4])}, [4])  # fmt: skip
        rec = Rec.from_tensordict(td)
        assert type(rec) is Rec and type(rec.inner) is Inner
        assert rec.obs is td["obs"] and rec.inner.x is td["inner", "x"]
        assert rec.env == "e" and rec.meta is None and rec.batch_size == torch.Size([4])

    def test_from_tensordict_keeps_the_key_order(self) -> None:
        # As the peer (a record read back from a folder lists its keys as read, and
        # from_tensordict(rec.to_tensordict()) keeps them so); tclass sorted them by field.
        td = TensorDict({"env": NonTensorData("e", [4]), "obs": torch.zeros(4, 2)}, [4])
        rec = Rec.from_tensordict(td)
        assert list(rec.keys()) == ["env", "obs"]
        assert list(rec.to_dict()) == ["env", "obs", "inner", "meta"]
        assert list(Rec.from_tensordict(rec.to_tensordict()).keys()) == ["env", "obs"]

    def test_from_tensordict_leaves_missing_required_fields_unset(self) -> None:
        rec = Rec.from_tensordict(TensorDict({"obs": torch.zeros(4, 2)}, [4]))
        assert rec.inner is None and rec.env is None and rec.meta is None  # as the peer
        assert list(rec.keys()) == ["obs"] and rec[1].env is None

    def test_from_tensordict_takes_non_tensordict_values(self) -> None:
        td = TensorDict({"obs": torch.zeros(4, 2)}, [4])
        rec = Rec.from_tensordict(td, non_tensordict={"env": "e", "meta": {"k": 1}})
        assert rec.env == "e" and rec[3].env == "e" and rec.meta == {"k": 1}
        assert rec.obs is td["obs"]
        with pytest.raises(errors.UnknownFieldError, match="'envv' is not a field of Rec"):
            Rec.from_tensordict(td, non_tensordict={"envv": "e"})

    def test_round_trip(self) -> None:
        rec = make()
        rec.meta = {"a": 1}
        back = Rec.from_tensordict(rec.to_tensordict())
        assert_same_rec(back, rec.obs, rec.inner.x)
        assert back.meta == {"a": 1}

    def test_from_tensordict_unknown_key(self) -> None:
        td = TensorDict({"obs": torch.zeros(4), "bogus": torch.zeros(4)}, [4])
        with pytest.raises(UnknownFieldError, match="bogus"):
            WithDefaults.from_tensordict(td)

    def test_from_tensordict_defaults(self) -> None:
        rec = WithDefaults.from_tensordict(TensorDict({"obs": torch.zeros(4)}, [4]))
        assert rec.env == "default" and rec.count == 3 and rec.tags == ["t"] and rec.label is None

    def test_from_tensordict_missing_required_is_not_set_yet(self) -> None:
        rec = WithDefaults.from_tensordict(TensorDict({"env": NonTensorData("x", [4])}, [4]))
        assert rec.obs is None and rec.env == "x"

    def test_to_dict(self) -> None:
        rec = make((2,))
        out = rec.to_dict()
        assert set(out) == {"obs", "inner", "env", "meta"}
        assert out["obs"] is rec.obs and out["inner"] == {"x": rec.inner.x}
        assert out["env"] == "pong" and out["meta"] is None
        assert "meta" not in rec.to_dict(retain_none=False)

    def test_to_dict_retain_none_reaches_nested_records(self) -> None:
        # As the peer: retain_none=False leaves out the absent fields at every level,
        # those of a record nested in a record or in a TensorDict too.
        class Holder(TensorClass):
            t: WithDefaults

        rec = Holder(t=WithDefaults(obs=torch.zeros(2), batch_size=[2]), batch_size=[2])
        assert rec.to_dict()["t"]["label"] is None
        assert "label" not in rec.to_dict(retain_none=False)["t"]
        holder = TensorDict(r=rec.t, batch_size=[2])
        assert holder.to_dict()["r"]["label"] is None
        assert set(holder.to_dict(retain_none=False)["r"]) == {"obs", "env", "count", "tags"}

    def test_to_dict_convert_tensors(self) -> None:
        out = make((2,)).to_dict(convert_tensors=True)
        assert out["obs"] == [[0.0, 1.0], [2.0, 3.0]] and out["inner"] == {"x": [0, 1]}

    def test_from_dict(self) -> None:
        rec = Rec.from_dict({"obs": torch.zeros(4, 2), "inner": {"x": torch.arange(4)}, "env": "e"},
                            batch_size=[4])  # fmt: skip
        assert type(rec.inner) is Inner and rec.inner.batch_size == torch.Size([4])
        assert rec.env == "e" and rec.meta is None

    def test_from_dict_round_trip(self) -> None:
        rec = make()
        back = Rec.from_dict(rec.to_dict(), batch_size=rec.batch_size)
        assert_same_rec(back, rec.obs, rec.inner.x)

    def test_equal_to_its_dict_with_a_field_left_none(self) -> None:
        """``meta`` is ``None``: ``to_dict`` lists it as ``None``, and so does a
        TensorDict built from that dict; both compare equal, as in the peer."""
        rec = make((2,))
        for other in (rec.to_dict(), TensorDict(rec.to_dict(), batch_size=[2])):
            same = rec == other
            assert type(same) is Rec and same.meta is None and bool(same.all())
            assert same.obs.shape == (2, 2) and same.obs.dtype is torch.bool
        zeroed = rec.to_dict() | {"obs": torch.zeros(2, 2)}
        assert (rec != zeroed).obs.tolist() == [[False, True], [True, True]]
        nested = TensorDict(rec=rec, batch_size=[2])
        assert bool((nested == nested.to_dict()).all())

    def test_equal_to_a_dict_still_needs_its_other_keys(self) -> None:
        rec = make((2,))
        with pytest.raises(errors.KeyNotFoundError, match=r"only in the left one: \['env'\]"):
            _ = rec == {key: v for key, v in rec.to_dict().items() if key != "env"}
        with pytest.raises(errors.KeyNotFoundError, match=r"only in the right one: \['extra'\]"):
            _ = rec == rec.to_dict() | {"extra": None}

    @pytest.mark.peer
    def test_equal_to_its_dict_as_the_peer(self) -> None:
        tensordict = pytest.importorskip("tensordict")
        for lib in (tclass, tensordict):

            class Node(lib.TensorClass):  # type: ignore[name-defined,misc]
                x: torch.Tensor
                child: Node | None = None
                tag: str | None = None

            rec = Node(torch.ones(3), Node(torch.zeros(3), batch_size=[3]), "t", batch_size=[3])
            holder = lib.TensorDict(rec=rec, batch_size=[3])
            assert bool((holder == holder.to_dict()).all()), lib
            assert bool((holder == lib.TensorDict(holder.to_dict(), batch_size=[3])).all()), lib
            assert (rec == rec.to_dict()).child.tag is None, lib

    def test_from_dict_defaults(self) -> None:
        rec = WithDefaults.from_dict({"obs": torch.zeros(2)}, batch_size=[2])
        assert rec.env == "default" and rec.count == 3 and rec.tags == ["t"]
        other = WithDefaults.from_dict({"obs": torch.zeros(2)}, batch_size=[2])
        assert other.tags is not rec.tags

    def test_from_dict_leaves_a_missing_required_field_unset(self) -> None:
        # As the peer's from_dict: None (not set yet), also for a nested dict.
        rec = Rec.from_dict({"obs": torch.zeros(4, 2), "inner": {}}, batch_size=[4])
        assert rec.env is None and rec.meta is None and "env" not in rec.keys()
        assert type(rec.inner) is Inner and rec.inner.x is None
        with pytest.raises(
            errors.ArgumentError,
            match="missing 1 required positional argument \\(the field 'env'\\)",
        ):
            Rec(obs=torch.zeros(4, 2), inner=None, batch_size=[4])  # the constructor: as before

    def test_from_dict_unknown_key(self) -> None:
        with pytest.raises(UnknownFieldError, match="nope"):
            WithDefaults.from_dict({"obs": torch.zeros(2), "nope": 1})

    @pytest.mark.parametrize("batch_dims, expected", [(0, []), (1, [4]), (2, [4, 3]), (3, [4, 3])])
    def test_from_dict_batch_dims(self, batch_dims: int, expected: list[int]) -> None:
        data = {"obs": torch.zeros(4, 3, 2), "inner": {"x": torch.zeros(4, 3)}, "env": "e"}
        rec = Rec.from_dict(data, batch_dims=batch_dims)
        assert rec.batch_size == torch.Size(expected)

    def test_replace(self) -> None:
        rec = make()
        got = rec.replace(env="new", obs=torch.ones(4, 3, 2))
        assert got.env == "new" and (got.obs == 1).all() and got.inner is rec.inner
        assert rec.env == "pong" and not (rec.obs == 1).all()
        with pytest.raises(UnknownFieldError):
            rec.replace(bogus=1)
        with pytest.raises(FieldTypeError):
            rec.replace(env=torch.zeros(4))


class TestStateDict:
    def test_keys_and_detached(self) -> None:
        rec = make()
        rec.obs.requires_grad_(True)
        rec.meta = {"k": 1}
        sd = rec.state_dict()
        assert list(sd) == ["obs", "inner.x"] or set(sd) == {"obs", "inner.x"}
        assert not sd["obs"].requires_grad and same_storage(sd["obs"], rec.obs)
        assert sd._metadata[""]["_non_tensor"] == {"env": "pong", "meta": {"k": 1}}
        assert sd._metadata[""]["batch_size"] == (4, 3)

    def test_keep_vars(self) -> None:
        rec = make()
        sd = rec.state_dict(keep_vars=True)
        assert sd["obs"] is rec.obs and sd["inner.x"] is rec.inner.x

    def test_load_in_place(self) -> None:
        src, dst = make(env="src", offset=100), make(env="dst")
        src.meta = {"m": 2}
        ptrs = (dst.obs.data_ptr(), dst.inner.x.data_ptr())
        assert dst.load_state_dict(src.state_dict()) is dst
        assert (dst.obs.data_ptr(), dst.inner.x.data_ptr()) == ptrs
        assert_same_rec(dst, src.obs, src.inner.x, env="src")
        assert dst.meta == {"m": 2}

    def test_load_strict(self) -> None:
        dst = make()
        sd = make().state_dict()
        sd["bogus"] = torch.zeros(1)
        with pytest.raises(KeyError, match="bogus"):
            dst.load_state_dict(sd)
        missing = make().state_dict()
        del missing["inner.x"]
        with pytest.raises(KeyError, match="inner.x"):
            dst.load_state_dict(missing)

    def test_load_not_strict(self) -> None:
        dst = make()
        sd = make(offset=100).state_dict()
        del sd["inner.x"]
        sd["bogus"] = torch.zeros(1)
        dst.load_state_dict(sd, strict=False)
        assert torch.equal(dst.obs, make(offset=100).obs)
        assert torch.equal(dst.inner.x, make().inner.x)

    def test_torch_save_round_trip(self, tmp_path: Any) -> None:
        src = make(env="saved", offset=5)
        path = tmp_path / "sd.pt"
        torch.save(src.state_dict(), path)
        dst = make()
        dst.load_state_dict(torch.load(path))
        assert_same_rec(dst, src.obs, src.inner.x, env="saved")

    def test_load_per_element_values(self) -> None:
        src = torch.stack([make((), env="a"), make((), env="b")])
        dst = torch.stack([make(()), make(())])
        dst.load_state_dict(src.state_dict())
        assert dst.env == ["a", "b"]


class _Reduced:
    """Pickles as ``fn(*args)``: what a crafted file holds."""

    def __init__(self, fn: Any, *args: Any) -> None:
        self.fn, self.args = fn, args

    def __reduce__(self) -> tuple[Any, ...]:
        return (self.fn, self.args)


class TestConsolidated:
    def test_the_buffer_attribute_exists_once_consolidated(self) -> None:
        rec = make()
        assert not hasattr(rec, "_consolidated")  # as the peer's record
        with pytest.raises(errors.NotConsolidatedError, match="Rec is not consolidated"):
            rec._consolidated  # noqa: B018
        packed = rec.consolidate()
        assert hasattr(packed, "_consolidated") and packed.is_consolidated()
        assert packed.env == "pong" and torch.equal(packed.obs, rec.obs)
        assert not hasattr(packed.clone(), "_consolidated")  # a copy has its own tensors


class TestCopyPickle:
    def _rich(self) -> Rec:
        s = torch.stack([make((3,), env="a"), make((3,), env="b", offset=100)])
        s.meta = {"k": [1, 2]}
        return s

    def test_pickle_round_trip(self) -> None:
        rec = self._rich()
        back = pickle.loads(pickle.dumps(rec))
        assert_same_rec(back, rec.obs, rec.inner.x, env=rec.env)
        assert back.meta == {"k": [1, 2]} and back[1, 0].env == "b"

    def test_pickle_locked_and_decorated(self) -> None:
        d = Deco(torch.zeros(2), "e", batch_size=[2]).lock_()
        back = pickle.loads(pickle.dumps(d))
        assert type(back) is Deco and back.env == "e" and back.is_locked

    def test_frozen(self) -> None:
        f = Frozen(torch.arange(3), "e", batch_size=[3])
        back = pickle.loads(pickle.dumps(f))
        assert type(back) is Frozen and back.env == "e" and torch.equal(back.x, f.x)
        with pytest.raises(errors.FrozenInstanceError):
            back.env = "z"
        changed = f.replace(env="z")
        assert changed.env == "z" and f.env == "e" and changed.x is f.x
        assert type(f[1:]) is Frozen and f[1:].is_locked

    def test_torch_load_weights_only_once_the_classes_are_allowed(self) -> None:
        rec = self._rich()
        buffer = io.BytesIO()
        torch.save([rec, Deco(torch.zeros(2), "e", batch_size=[2]).lock_()], buffer)
        buffer.seek(0)
        with pytest.raises(pickle.UnpicklingError, match="Rec"):  # not allowed yet
            torch.load(buffer, weights_only=True)
        buffer.seek(0)
        with torch.serialization.safe_globals([Rec, Inner, Deco]):
            back, deco = torch.load(buffer, weights_only=True)
        assert type(back) is Rec and type(back.inner) is Inner
        assert_same_rec(back, rec.obs, rec.inner.x, env=rec.env)
        assert back.meta == {"k": [1, 2]} and type(deco) is Deco and deco.is_locked
        lazy = tclass.lazy_stack([make((2,)), make((3,), env="b")])
        buffer = io.BytesIO()
        torch.save(lazy, buffer)
        buffer.seek(0)
        with torch.serialization.safe_globals([Rec, Inner]):
            back_lazy = torch.load(buffer, weights_only=True)
        assert type(back_lazy) is Rec and back_lazy[1].env == "b"

    def test_a_pickle_naming_another_class_is_refused(self) -> None:
        rebuild, (_, fields) = make().__reduce__()
        crafted = pickle.dumps(_Reduced(rebuild, torch.Size, fields))
        with pytest.raises(errors.PickleRefusedError, match="not a TensorClass"):
            pickle.loads(crafted)

    def test_copy_shares_tensors(self) -> None:
        rec = make()
        got = copy.copy(rec)
        assert got is not rec and got.obs is rec.obs and got.inner is rec.inner
        got.obs = torch.zeros(4, 3, 2)
        got.env = "other"
        assert rec.env == "pong" and not (rec.obs == 0).all()

    def test_deepcopy(self) -> None:
        rec = self._rich()
        got = copy.deepcopy(rec)
        assert_same_rec(got, rec.obs, rec.inner.x, env=rec.env)
        assert not same_storage(got.obs, rec.obs) and not same_storage(got.inner.x, rec.inner.x)
        assert got.meta is not rec.meta and got.meta == rec.meta


# --- DataLoader ----------------------------------------------------------------------------


class _Items(Dataset):
    def __init__(self, rec: Rec) -> None:
        self.rec = rec

    def __len__(self) -> int:
        return len(self.rec)

    def __getitem__(self, i: int) -> Rec:
        return self.rec[i]


class TestDataLoader:
    def test_record_as_dataset(self) -> None:
        rec = make((10, 3))
        batches = list(DataLoader(rec, batch_size=4))
        assert [b.batch_size for b in batches] == [torch.Size([4, 3])] * 2 + [torch.Size([2, 3])]
        assert all(type(b) is Rec and b.env == "pong" for b in batches)
        assert torch.equal(torch.cat([b.obs for b in batches]), rec.obs)

    def test_getitems(self) -> None:
        rec = make((6,))
        got = rec.__getitems__([5, 0, 2])
        assert_same_rec(got, rec.obs[[5, 0, 2]], rec.inner.x[[5, 0, 2]])

    def test_shuffle(self) -> None:
        rec = make((8,))
        batches = list(DataLoader(rec, batch_size=4, shuffle=True))
        assert all(type(b) is Rec and b.batch_size == torch.Size([4]) for b in batches)
        seen = torch.cat([b.inner.x for b in batches])
        assert sorted(seen.tolist()) == list(range(8))
        for b in batches:
            assert torch.equal(b.obs, rec.obs[b.inner.x])

    def test_map_style_default_collate(self) -> None:
        rec = make((8,))
        rec[3] = make((), env="odd")
        batches = list(DataLoader(_Items(rec), batch_size=4))
        assert all(type(b) is Rec and b.batch_size == torch.Size([4]) for b in batches)
        assert torch.equal(batches[1].obs, rec.obs[4:])
        assert batches[0].env == ["pong", "pong", "pong", "odd"] and batches[1].env == ["pong"] * 4


# --- pytree and compile --------------------------------------------------------------------


class TestPytree:
    def test_flatten_gives_tensor_leaves(self) -> None:
        rec = make()
        rec.meta = {"k": 1}
        leaves, spec = pytree.tree_flatten(rec)
        assert len(leaves) == 2
        assert any(leaf is rec.obs for leaf in leaves) and any(
            leaf is rec.inner.x for leaf in leaves
        )
        back = pytree.tree_unflatten(leaves, spec)
        assert_same_rec(back, rec.obs, rec.inner.x)
        assert back.meta == {"k": 1}

    def test_tree_map(self) -> None:
        rec = torch.stack([make((3,), env="a"), make((3,), env="b")])
        got = pytree.tree_map(lambda t: t + 1, rec)
        assert_same_rec(got, rec.obs + 1, rec.inner.x + 1, env=rec.env)

    def test_in_containers(self) -> None:
        rec = make()
        leaves, _ = pytree.tree_flatten({"a": [rec, torch.zeros(1)]})
        assert len(leaves) == 3

    def test_specs_equal_for_equal_values(self) -> None:
        _, spec_a = pytree.tree_flatten(make(env="a"))
        _, spec_b = pytree.tree_flatten(make(env="a", offset=3))
        _, spec_c = pytree.tree_flatten(make(env="c"))
        assert spec_a == spec_b and spec_a != spec_c


def _compile_body(rec: Rec) -> Rec:
    out = rec.clone()
    out.obs = out.obs * 2
    part = out[1:]
    stacked = torch.stack([part, part]).reshape(-1, 3)
    fresh = Rec(stacked.obs + 1, stacked.inner, stacked.env, batch_size=stacked.batch_size)
    return fresh


class TestCompile:
    def test_eager_backend(self) -> None:
        torch._dynamo.reset()
        rec = make()
        expected = _compile_body(rec)
        got = torch.compile(_compile_body, fullgraph=True, backend="eager")(rec)
        assert_same_rec(got, expected.obs, expected.inner.x)

    def test_eager_backend_index_write(self) -> None:
        def fn(rec: Rec) -> Rec:
            rec = rec.clone()
            rec[0] = rec[1]
            return rec.unsqueeze(0)[:, 1:]

        torch._dynamo.reset()
        rec = make()
        expected = fn(rec)
        got = torch.compile(fn, fullgraph=True, backend="eager")(rec)
        assert_same_rec(got, expected.obs, expected.inner.x)

    def test_a_value_per_element(self) -> None:
        """Views of per-element Python values stay in the graph (fullgraph); an index by
        a tensor picks the values outside the trace (a graph break)."""

        def views(rec: Rec) -> Rec:
            return rec[1:].reshape(-1)[::2].unsqueeze(0)[..., None, 1:].expand(3, 1, 1)

        def by_tensor(rec: Rec) -> Rec:
            return rec[torch.tensor([1, 0])].reshape(-1)

        rec = torch.stack([make((3,), env="a"), make((3,), env="b")])
        assert rec.env == [["a"] * 3, ["b"] * 3]
        for fn, fullgraph in ((views, True), (by_tensor, False), (by_tensor, False)):
            torch._dynamo.reset()
            expected = fn(rec)
            got = torch.compile(fn, fullgraph=fullgraph, backend="eager")(rec)
            assert got.env == expected.env and got.batch_size == expected.batch_size
            assert torch.equal(got.obs, expected.obs) and torch.equal(got.inner.x, expected.inner.x)

    @pytest.mark.filterwarnings("ignore:`torch.jit.script_method` is deprecated:DeprecationWarning")
    def test_inductor_backend(self) -> None:
        def fn(rec: Rec) -> Rec:
            return rec.apply(lambda t: t * 3 + 1).reshape(-1)

        torch._dynamo.reset()
        rec = make()
        expected = fn(rec)
        got = torch.compile(fn, fullgraph=True, backend="inductor")(rec)
        assert_same_rec(got, expected.obs, expected.inner.x)


def test_select_of_a_nested_field_keeps_the_nested_record_class() -> None:
    """Found by the differential fuzzer: ``rec.select("obs", ("inner", "x"))`` selects
    within the nested record, which stays an ``Inner`` (as in the peer)."""
    rec = Rec(
        obs=torch.zeros(3), inner=Inner(x=torch.ones(3, 2), batch_size=[3]), env="a", batch_size=[3]
    )
    out = rec.select("obs", ("inner", "x"))
    assert type(out) is Rec and type(out.inner) is Inner
    assert torch.equal(out.inner.x, rec.inner.x) and out.env is None
    td = TensorDict({"r": rec}, [3])
    assert type(td.select(("r", "inner", "x"))["r"].inner) is Inner


def test_nested_record_fields_excluded_popped_and_deleted() -> None:
    """Found by the differential fuzzer: a nested key through a record reaches the
    nested record's field (it reads None after), as in the peer."""
    rec = Rec(
        obs=torch.zeros(3), inner=Inner(x=torch.ones(3, 2), batch_size=[3]), env="a", batch_size=[3]
    )
    assert rec.exclude(("inner", "x")).inner.x is None and rec.inner.x is not None
    td = TensorDict({"r": rec.clone()}, [3])
    td.exclude(("r", "inner", "x"), inplace=True)
    assert td["r"].inner.x is None
    copy_ = rec.clone()
    assert torch.equal(copy_.pop(("inner", "x")), rec.inner.x) and copy_.inner.x is None
    assert rec.clone().del_(("inner", "x")).inner.x is None
    assert rec.clone().pop(("inner", "x"), None) is not None


def test_del_item_deletes_the_field() -> None:
    """``del rec[key]`` is ``rec.del_(key)``, as ``del td[key]`` (the peer's records have
    no ``__delitem__``); a frozen record refuses it."""
    rec = Rec(
        obs=torch.zeros(3), inner=Inner(x=torch.ones(3, 2), batch_size=[3]), env="a", batch_size=[3]
    )
    del rec["obs"]
    del rec["inner", "x"]
    assert rec.obs is None and rec.inner.x is None and "obs" not in rec.keys()
    rec.lock_()
    with pytest.raises(RuntimeError, match="locked"):
        del rec["env"]


def test_deleting_a_field_that_is_none_leaves_it_none() -> None:
    """Found by the differential fuzzer: as the peer, ``del_`` of a field that is
    already ``None`` (here or in a nested record, of a lazy stack too) changes nothing;
    ``pop`` still raises."""
    rec = Rec(obs=torch.zeros(3), inner=Inner(x=None, batch_size=[3]), env=None, batch_size=[3])
    assert rec.del_("env") is rec and rec.env is None
    assert rec.del_(("inner", "x")).inner.x is None
    stack = tclass.lazy_stack([rec, rec.clone()])
    assert stack.del_(("inner", "x")) is stack and stack.del_("env").env is None
    with pytest.raises(KeyError):
        rec.pop("env")
    with pytest.raises(KeyError):
        rec.del_(("env", "a"))


def test_del_of_a_missing_key_on_a_locked_record_is_a_key_error() -> None:
    """Found by the differential fuzzer: a locked record looks ``key`` up before its lock,
    as the peer's records (a ``TensorDict`` refuses on the lock first, in both)."""
    rec = Rec(obs=torch.zeros(3), inner=Inner(x=None, batch_size=[3]), env="a", batch_size=[3])
    rec.lock_()
    with pytest.raises(KeyError, match="zz"):
        rec.del_("zz")
    with pytest.raises(LockedError):
        rec.del_("obs")
    assert torch.equal(rec.obs, torch.zeros(3)) and rec.env == "a"


def test_pop_of_a_python_value_field_gives_its_node_as_the_peer() -> None:
    """Found by the differential fuzzer: ``pop`` returns what the storage held, as the
    peer's and as ``TensorDict.pop``: a Python value comes back as its ``NonTensorData``
    (a per-member stack as its ``NonTensorStack``), not read."""
    rec = Rec(obs=torch.zeros(3), inner=Inner(x=None, batch_size=[3]), env="a", batch_size=[3])
    popped = rec.pop("env")
    assert isinstance(popped, tclass.NonTensorData) and popped.data == "a"
    assert popped.batch_size == torch.Size([3]) and rec.env is None
    pair = [
        Rec(obs=torch.zeros(3), inner=Inner(x=None, batch_size=[3]), env=env, batch_size=[3])
        for env in ("a", "b")
    ]
    assert isinstance(tclass.stack(pair).pop("env"), tclass.NonTensorStack)
    assert rec.pop("env", "default") == "default"


def test_update_in_place_with_a_key_that_is_no_field_names_the_fields() -> None:
    """Found by the differential fuzzer: the peer raises a ValueError for a key that is
    not a field; tclass's UnknownFieldError is one (and names the fields)."""
    rec = Rec(obs=torch.zeros(3), inner=Inner(x=None, batch_size=[3]), env="a", batch_size=[3])
    for source in ({"zz": torch.ones(3)}, {("zz", "a"): torch.ones(3)}):
        with pytest.raises(ValueError, match="has no field 'zz'") as info:
            rec.update_(source)
        assert isinstance(info.value, errors.UnknownFieldError)
    assert rec.update_({"obs": torch.ones(3)}).obs.sum() == 3


class Pair(TensorClass):
    y: torch.Tensor
    z: torch.Tensor | None = None


class Holder(TensorClass):
    a: torch.Tensor
    pair: Pair


@pytest.mark.parametrize(
    "given",
    [
        lambda: {"y": torch.zeros(3)},
        lambda: TensorDict({"y": torch.zeros(3)}, [3]),
        lambda: Pair(y=torch.zeros(3), batch_size=[3]),  # z None: not given
    ],
)
def test_update_merges_a_nested_record_key_by_key(given: Any) -> None:
    """Found by the differential fuzzer: ``update`` replaced a nested record with what it
    was given, so fields the source did not hold became None (data lost); the peer (and a
    TensorDict's update) merges nested collections key by key."""
    holder = Holder(a=torch.ones(3), pair=Pair(y=torch.ones(3), z=torch.ones(3)), batch_size=[3])
    pair = holder.pair
    assert holder.update({"pair": given()}) is holder
    assert holder.pair is pair and type(holder.pair) is Pair
    assert torch.equal(holder.pair.y, torch.zeros(3)) and torch.equal(holder.pair.z, torch.ones(3))
    clone = holder.clone()
    clone.update(holder.select(("pair", "y")))  # a selection lacks z: z is kept
    assert torch.equal(clone.pair.z, torch.ones(3))
    replaced = Holder(a=torch.ones(3), pair=None, batch_size=[3])
    replaced.update({"pair": given()})  # no record there yet: the value becomes one
    assert type(replaced.pair) is Pair and torch.equal(replaced.pair.y, torch.zeros(3))


def test_a_field_set_to_none_through_update_is_unset_at_every_level() -> None:
    """``rec.update(rec.to_dict())`` keeps every field's data, and a ``None`` field of a
    nested record stays unset (no key), as a top field set to ``None`` does (README,
    "A field set to `None` is not set, at every level"); a ``None`` given for a set field
    unsets it."""
    holder = Holder(a=torch.ones(3), pair=Pair(y=torch.arange(3.0)), batch_size=[3])
    holder.update(holder.to_dict())
    assert torch.equal(holder.pair.y, torch.arange(3.0)) and holder.pair.z is None
    assert list(holder.pair.keys()) == ["y"]
    assert ("pair", "z") not in holder.to_tensordict().keys(True)
    stacked = torch.stack([holder, holder.clone()])
    assert stacked.pair.z is None and stacked.pair.y.shape == (2, 3)
    full = Holder(a=torch.ones(3), pair=Pair(y=torch.ones(3), z=torch.ones(3)), batch_size=[3])
    full.update({"pair": {"z": None}})
    assert full.pair.z is None and list(full.pair.keys()) == ["y"]
    assert torch.equal(full.pair.y, torch.ones(3))


class Labelled(TensorClass):
    x: torch.Tensor
    label: str


def test_a_dict_given_to_a_python_value_field_through_update_is_kept() -> None:
    """``update`` gives a ``str`` field a dict as the assignment does: kept as given (the
    peer's update makes a TensorDict of it, its assignment keeps the dict)."""
    given = {"q": torch.ones(2)}
    for write in ("update", "setattr", "set"):
        rec = Labelled(x=torch.zeros(2), label="s", batch_size=[2])
        if write == "update":
            rec.update({"label": given})
        elif write == "setattr":
            rec.label = given  # type: ignore[assignment]
        else:
            rec.set("label", given)
        assert type(rec.label) is dict and rec.label["q"] is given["q"]


def test_the_truth_value_of_a_record_is_refused_in_the_peers_words() -> None:
    with pytest.raises(errors.UnsupportedError, match="Converting a tensorclass to boolean"):
        bool(make())
    with pytest.raises(RuntimeError, match="Converting a tensordict to boolean"):
        bool(make().to_tensordict())
