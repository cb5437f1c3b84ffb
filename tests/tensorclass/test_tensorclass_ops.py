"""Tests for tensorclass records as batched values: indexing, writing, shape ops, torch
functions, stacking. Conversions, state dicts, pickling, DataLoader, pytree and compile
are in ``test_tensorclass_conversions.py``; removing and updating fields in
``test_tensorclass_key_ops.py``.

Every record here is built from module-level classes (so that they pickle): ``Rec`` has a
tensor field with a feature dim, a nested record, a ``str`` field and an optional
``dict`` field; ``Inner`` is the nested record (both in ``helpers/ops_records.py``).
"""

from __future__ import annotations

import pickle
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from ops_records import Deco, Inner, Rec, assert_same_rec, make  # noqa: E402

import tclass
from tclass import NonTensorData, NonTensorStack, TensorClass, errors

from strategies import SETTINGS, basic_indices, batch_shapes, same_storage  # noqa: E402

FieldIndexError = errors.FieldIndexError
LockedError = errors.LockedError
StackError = errors.StackError
UnknownFieldError = errors.UnknownFieldError


class Other(TensorClass):
    """Rec's fields plus one more (for writes of a record of another class)."""

    obs: torch.Tensor
    inner: Inner
    env: str
    extra: torch.Tensor


class Twin(TensorClass):
    """Same fields as Inner, another class (stacking different classes)."""

    x: torch.Tensor


class Tagged(TensorClass):
    x: torch.Tensor
    tag: str


class Outer(TensorClass):
    t: Tagged
    name: str


class Counted(TensorClass):
    x: torch.Tensor

    def __post_init__(self) -> None:
        _POST_INIT_CALLS.append(1)


_POST_INIT_CALLS: list[int] = []


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

    @pytest.mark.parametrize("value", [0, 2.5, torch.tensor(7)], ids=repr)
    def test_broadcast_number_or_tensor(self, value: Any) -> None:
        rec = make()
        rec.meta = {"m": 1}
        rec[1] = value
        expected = torch.as_tensor(value)
        assert (rec.obs[1] == expected.unsqueeze(-1).to(rec.obs.dtype)).all()
        assert (rec.inner.x[1] == expected.to(rec.inner.x.dtype)).all()
        assert rec.env == "pong" and rec.meta == {"m": 1}
        assert (rec.obs[0] == make().obs[0]).all()

    def test_a_tensor_goes_into_each_field_as_torch_writes_it(self) -> None:
        """As the peer: ``rec[1] = t`` is ``field[1] = t`` for each field (lined up with
        the last dims): ``arange(3)`` fits inner.x's [3], not obs's [3, 2]; refused before
        any field is written (the peer writes the fields before obs)."""
        rec = make()
        with pytest.raises(errors.BatchSizeError, match=r"'obs' \(shape \[4, 3, 2\]\)") as info:
            rec[1] = torch.arange(3)
        assert isinstance(info.value, RuntimeError)
        assert (rec.obs == make().obs).all() and (rec.inner.x == make().inner.x).all()
        rec[1] = torch.tensor([[5]])  # [1, 1] fits both selections, [3, 2] and [3]
        assert (rec.obs[1] == 5).all() and (rec.inner.x[1] == 5).all()


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

    def test_tensor_split_of_a_lazy_stack_keeps_its_members(self) -> None:
        """``tensor_split`` along the stack dim of a lazy stack of records gives lazy
        stacks of its members, each piece locked when its members are (a shared record),
        as ``split`` / ``chunk`` and the peer's; it was a copy, unlocked (fuzzer: program
        15,953,493 L12 of methods,index,shape,combine, fz30a)."""
        shared = make((2,)).share_memory_()
        stack = tclass.lazy_stack([shared, make((2,), offset=9)], 0)
        for pieces in (stack.tensor_split(2, 0), stack.tensor_split([1], 0)):
            assert [type(p) for p in pieces] == [Rec, Rec]
            assert [p.is_locked for p in pieces] == [True, False]
            assert pieces[0]._tensordict.tensordicts[0] is shared._tensordict
            assert torch.equal(pieces[1].obs, stack.obs[1:])
        assert [p.is_locked for p in stack.split(1, 0)] == [True, False]
        assert [p.batch_size for p in stack.tensor_split([1, 1], 0)] == [(1, 2), (0, 2), (1, 2)]

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

    def test_get_of_an_unset_field_is_none_whatever_the_default(self) -> None:
        # The peer's get reads the attribute: an unset field is None, the default is for
        # names that are no field; a nested key reads through the nested record alike.
        @tclass.tensorclass
        class Inner:
            r: torch.Tensor
            info: dict[str, int] | None = None

        @tclass.tensorclass
        class Outer:
            inner: Inner
            opt: Inner | None = None

        inner = Inner(r=torch.zeros(2), batch_size=[2])
        outer = Outer(inner=inner, batch_size=[2])
        assert inner.get("info", "d") is None and inner.get(("info",), "d") is None
        assert inner.get("nope", "d") == "d"
        assert outer.get(("inner", "info"), "d") is None
        assert outer.get(("inner", "nope"), "d") == "d"
        assert outer.get("opt", "d") is None and outer.get(("opt", "r"), "d") == "d"
        assert torch.equal(outer.get(("inner", "r"), "d"), torch.zeros(2))
        assert tclass.lazy_stack([inner, inner]).get("info", "d") is None

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

    def test_index_of_a_locked_lazy_stack_is_locked(self) -> None:
        """As the peer: a record over a locked lazy stack indexes to locked records (its
        stack's own indexing), and the fields of a string index are still refused; a
        record over a locked TensorDict indexes to unlocked ones."""
        stack = tclass.lazy_stack([make(), make(offset=1)], 1).lock_()
        for index in (0, None, (None, 0), slice(0, 2), (slice(None), 0), ...):
            assert stack[index].is_locked, index
            assert stack[index].inner.is_locked, index
        assert not tclass.lazy_stack([make(), make()], 1)[0].is_locked
        assert not make().lock_()[0].is_locked
        with pytest.raises(errors.FieldIndexError, match="indexed along its batch dims"):
            stack["obs"]

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


def test_the_truth_value_of_a_record_is_refused_in_the_peers_words() -> None:
    with pytest.raises(errors.UnsupportedError, match="Converting a tensorclass to boolean"):
        bool(make())
    with pytest.raises(RuntimeError, match="Converting a tensordict to boolean"):
        bool(make().to_tensordict())


def test_is_contiguous_of_a_record_over_a_lazy_stack_is_false_as_the_peers() -> None:
    """A record over a lazy stack answers as its storage (its members are separate
    collections), not from the stacked values its fields read."""
    peer = pytest.importorskip("tensordict")
    answers = []
    for lib in (tclass, peer):

        @lib.tensorclass
        class Piece:
            x: torch.Tensor

        members = [Piece(x=torch.zeros(2), batch_size=[2]), Piece(x=torch.ones(2), batch_size=[2])]
        lazy = lib.lazy_stack(members)
        answers.append((lazy.is_contiguous(), lazy.contiguous().is_contiguous()))
        answers.append((Piece(x=torch.zeros(2, 3).t(), batch_size=[3]).is_contiguous(),))
    assert answers[0] == answers[2] == (False, True)
    assert answers[1] == answers[3] == (False,)


def test_grads_of_a_record_over_a_lazy_stack_of_uneven_members() -> None:
    """requires_grad_ and grad of a record over a lazy stack whose members' tensors differ
    in shape work member by member (no stacked value is read), as the peer's; the dtype
    check still refuses an integer tensor in any member."""

    class Piece(TensorClass):
        x: torch.Tensor

    first = Piece(x=torch.ones(2, 3), batch_size=[2])
    lazy = tclass.lazy_stack([first, Piece(x=torch.ones(1, 3), batch_size=[1])])
    assert lazy.requires_grad_() is lazy
    assert lazy.requires_grad and lazy.grad is None  # (no gradient yet)
    for member in lazy._tensordict.tensordicts:
        (member.get("x") * 2).sum().backward()
    grads = lazy.grad._tensordict.get("x", as_list=True)
    assert [g.tolist() for g in grads] == [[[2.0] * 3] * 2, [[2.0] * 3]]
    second = Piece(x=torch.ones(1, 3, dtype=torch.int64), batch_size=[1])
    ints = tclass.lazy_stack([first.detach(), second])
    with pytest.raises(errors.GradError, match="only floating-point"):
        ints.requires_grad_()
    assert not any(m.get("x").requires_grad for m in ints._tensordict.tensordicts)
