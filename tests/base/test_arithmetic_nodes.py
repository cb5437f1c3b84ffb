"""Which nested collections a binary arithmetic result keeps, and ``bool ** bool``.

As the peer: a binary operation with a number, a 0-d tensor or another collection leaves
out the nested collections that hold nothing, unless the collection holds no tensor at
all (then the result is a copy of its structure); a tensor operand with dims (spread over
the batch dims) keeps them; ``&`` leaves them out in every case, ``%``, ``bitwise_and``
and ``logical_and`` also without a tensor. ``clamp`` with one bound
is ``clamp_min`` / ``clamp_max``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import pytest
import torch

import tclass
from tclass import TensorDict, lazy_stack


def _with_tensor(lib: Any) -> Any:
    empty = lib.TensorDict({}, batch_size=[3])
    return lib.TensorDict({"d": torch.ones(3, 2), "m": empty, "s": "a"}, batch_size=[3])


def _without_tensor(lib: Any) -> Any:
    return lib.TensorDict({"m": lib.TensorDict({}, batch_size=[3]), "s": "a"}, batch_size=[3])


CALLS: dict[str, Callable[[Any], Any]] = {
    "mul number": lambda x: x * 2,
    "0-d tensor": lambda x: x - torch.tensor(0.5),
    "batch tensor": lambda x: x / torch.full((3,), 2.0),
    "reflected": lambda x: 0.5 / x,
    "collection": lambda x: x.add(x.clone()),
    "pow": lambda x: x.pow(2),
    "maximum": lambda x: x.maximum(x.clone()),
    "clamp min": lambda x: x.clamp(0, None),
    "torch.clamp max": lambda x: torch.clamp(x, max=0.5),
    "clamp both": lambda x: x.clamp(0, 1),
    "clamp_max": lambda x: x.clamp_max(0.5),
    "unary": lambda x: x.abs(),
    "and number": lambda x: x.bool() & True,
    "and batch tensor": lambda x: x.bool() & torch.ones(1, dtype=torch.bool),
    "mod number": lambda x: x % 2,
    "mod collection": lambda x: x.mod(x.clone()),
    "mod batch tensor": lambda x: x % torch.full((3,), 2.0),
    "bitwise_and mask": lambda x: x.bool().bitwise_and(x != 0),
    "bitwise_and batch tensor": lambda x: x.bool().bitwise_and(torch.ones(3, dtype=torch.bool)),
    "logical_and mask": lambda x: x.logical_and(x != 0),
}

EXPECTED: dict[str, tuple[list[str], list[str]]] = {
    # name: (keys with a tensor, keys without one)
    "mul number": (["d", "s"], ["m", "s"]),
    "0-d tensor": (["d", "s"], ["m", "s"]),
    "batch tensor": (["d", "m", "s"], ["m", "s"]),
    "reflected": (["d", "s"], ["m", "s"]),
    "collection": (["d", "s"], ["m", "s"]),
    "pow": (["d", "s"], ["m", "s"]),
    "maximum": (["d", "s"], ["m", "s"]),
    "clamp min": (["d", "s"], ["m", "s"]),
    "torch.clamp max": (["d", "s"], ["m", "s"]),
    "clamp both": (["d", "m", "s"], ["m", "s"]),
    "clamp_max": (["d", "s"], ["m", "s"]),
    "unary": (["d", "m", "s"], ["m", "s"]),
    "and number": (["d", "s"], ["s"]),  # the peer's `&` leaves them out in every case
    "and batch tensor": (["d", "s"], ["s"]),
    "mod number": (["d", "s"], ["s"]),  # the peer's `%` makes no copy without a tensor
    "mod collection": (["d", "s"], ["s"]),
    "mod batch tensor": (["d", "m", "s"], ["m", "s"]),
    # bitwise_and / logical_and: as `%`, also without a tensor (found by the fuzzer)
    "bitwise_and mask": (["d", "s"], ["s"]),
    "bitwise_and batch tensor": (["d", "m", "s"], ["m", "s"]),
    "logical_and mask": (["d", "s"], ["s"]),
}


@pytest.mark.parametrize("name", list(CALLS))
def test_empty_nested_collections_kept_or_dropped(name: str) -> None:
    with_tensor, without_tensor = EXPECTED[name]
    assert sorted(CALLS[name](_with_tensor(tclass)).keys()) == with_tensor
    assert sorted(CALLS[name](_without_tensor(tclass)).keys()) == without_tensor


def test_a_lazy_stack_without_tensors_keeps_its_nodes() -> None:
    member = TensorDict({"m": TensorDict({}, batch_size=[2]), "s": "pong"}, batch_size=[2])
    stacked = lazy_stack([member], 1)
    out = stacked.clamp_min(0)
    assert sorted(out.keys()) == ["m", "s"]
    assert sorted(out.tensordicts[0].keys()) == ["m", "s"]
    with_tensor = lazy_stack([TensorDict({"m": TensorDict({}, [2]), "d": torch.ones(2)}, [2])], 1)
    assert list(with_tensor.sub(torch.tensor(0.5)).keys()) == ["d"]


@pytest.mark.peer
@pytest.mark.parametrize("name", list(CALLS))
def test_the_same_nodes_as_the_peer(name: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        peer = pytest.importorskip("tensordict")
        for build in (_with_tensor, _without_tensor):
            expected = sorted(CALLS[name](build(peer)).keys())
            assert sorted(CALLS[name](build(tclass)).keys()) == expected, build.__name__


def _attrs_of(lib: Any) -> Any:
    """An ``attrs()`` result: records (``TensorAttrs``) without tensors beside an empty
    nested collection, so a collection that holds no tensor at all."""
    empty = lib.TensorDict({}, batch_size=[3])
    return lib.TensorDict({"d": torch.ones(3, 2), "m": empty}, batch_size=[3]).attrs()


# (fz29d: program 15,920,689 of features,math,index, --length 12: clamp_max of attrs())
ATTRS_EXPECTED = {"and number", "and batch tensor", "mod number", "mod collection"}


@pytest.mark.parametrize("name", list(CALLS))
def test_records_without_tensors_leave_the_collection_without_tensors(name: str) -> None:
    kept = ["d"] if name in ATTRS_EXPECTED or name.endswith(" mask") else ["d", "m"]
    assert sorted(CALLS[name](_attrs_of(tclass)).keys()) == kept


@tclass.tensorclass
class _Point:
    y: torch.Tensor | None = None
    tag: str | None = None


def test_a_record_holding_a_tensor_counts_as_one() -> None:
    empty = TensorDict({}, batch_size=[3])
    point = _Point(y=torch.ones(3), batch_size=[3])
    assert sorted(TensorDict({"p": point, "m": empty}, [3]).clamp_max(0.5).keys()) == ["p"]
    tagged = _Point(tag="a", batch_size=[3])  # no tensor: the empty node is kept
    assert sorted(TensorDict({"p": tagged, "m": empty}, [3]).clamp_max(0.5).keys()) == ["m", "p"]


@pytest.mark.peer
@pytest.mark.parametrize("name", list(CALLS))
def test_attrs_results_keep_the_nodes_as_the_peer(name: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        peer = pytest.importorskip("tensordict")
        expected = sorted(CALLS[name](_attrs_of(peer)).keys())
    assert sorted(CALLS[name](_attrs_of(tclass)).keys()) == expected


def test_a_lazy_stack_of_lazy_stacks_slices_a_tensor_down_to_its_members() -> None:
    """As the peer: each member of a lazy stack of lazy stacks of members without batch
    dims takes a 0-d slice of a tensor operand, a scalar to it, so the result keeps the
    lock and leaves out the empty nested collections, as with a number."""
    members = [
        TensorDict({"m": TensorDict({}, []), "d": torch.full((2,), i + 1.0)}, []) for i in range(3)
    ]
    inner = lazy_stack(members, 0)
    outer = lazy_stack([inner, inner.clone()], 1).lock_()
    divisor = torch.arange(1.0, 7.0).reshape(3, 2)
    out = outer / divisor
    assert out.batch_size == torch.Size([3, 2]) and out.is_locked
    assert list(out.keys()) == ["d"]
    expected = torch.stack([m["d"] for m in members])[:, None, :] / divisor[..., None]
    torch.testing.assert_close(out["d"], expected)
    # one level of members with a batch dim: the tensor is spread over it, nothing dropped
    dense = lazy_stack([TensorDict({"m": TensorDict({}, [2]), "d": torch.ones(2)}, [2])], 0)
    assert list((dense.lock_() / torch.ones(1, 2)).keys()) == ["m", "d"]


def test_bool_to_a_bool_power() -> None:
    x = TensorDict({"a": torch.tensor([True, False]), "h": torch.ones(2, dtype=torch.float16)}, [2])
    for exponent, expected in ((True, [True, False]), (False, [True, True])):
        for out in (x**exponent, x.pow(torch.tensor(exponent))):
            assert out["a"].dtype is torch.bool
            assert out["a"].tolist() == expected
            assert out["h"].dtype is torch.float16
    # torch has no bool kernel for a bool tensor exponent with dims: its error, as the peer's
    with pytest.raises(NotImplementedError, match="pow"):
        x.pow(x)
    with pytest.raises(NotImplementedError, match="pow"):
        x ** torch.tensor([True, False])


def test_the_lock_is_kept_when_empty_nodes_are_left_out() -> None:
    """As the peer: a locked collection's arithmetic result is locked, also when its
    empty nested collections are left out."""
    x = TensorDict({"m": TensorDict({}, [2, 3]), "a": torch.ones(2, 2)}, [2]).lock_()
    for out in (x * 2, x.clamp_max(0), x.swapaxes(0, -1).clamp_max(0)):
        assert out.is_locked and list(out.keys()) == ["a"]


LOCK_CALLS: dict[str, Callable[[Any], Any]] = {
    "abs": lambda x: x.abs(),
    "neg": lambda x: -x,
    "exp": lambda x: x.exp(),
    "round": lambda x: x.round(),
    "lerp": lambda x: x.lerp(x, 0.5),
    "lerp batch tensor": lambda x: x.lerp(torch.ones(2), 0.5),
    "addcmul": lambda x: x.addcmul(x, x),
    "clamp one bound": lambda x: x.clamp(0, None),
    "clamp two bounds": lambda x: x.clamp(0, 1),
    "cast": lambda x: x.float(),
    "where": lambda x: x.where(torch.ones(2, dtype=torch.bool), 0),
    "isfinite": lambda x: x.isfinite(),
}


@pytest.mark.parametrize("name", list(LOCK_CALLS))
def test_pointwise_math_keeps_the_lock_as_the_peer(name: str) -> None:
    """The peer's rule: pointwise math on a locked collection gives a locked result,
    unless the collection holds no tensor (the peer copies it) or an operand is a tensor
    with dims; with two bounds ``clamp`` unlocks; casts, ``where`` and ``isfinite``
    keep the lock even without tensors."""
    with_tensor = TensorDict({"a": torch.ones(2, 3)}, [2]).lock_()
    without = TensorDict({"s": "a", "m": {}}, [2]).lock_()
    keeps = name in ("cast", "where", "isfinite")
    expected = name not in ("lerp batch tensor", "clamp two bounds")
    assert LOCK_CALLS[name](with_tensor).is_locked is expected
    assert LOCK_CALLS[name](without).is_locked is keeps


PAIRED_CALLS: dict[str, tuple[Callable[[Any, Any], Any], bool]] = {
    # name: (call with the collection x and a collection operand o, locked result)
    "addcmul tensor, collection": (lambda x, o: x.addcmul(torch.ones(2, 3), o), True),
    "addcdiv collection, tensor": (lambda x, o: x.addcdiv(o, torch.ones(3)), True),
    "lerp collection, tensor": (lambda x, o: x.lerp(o, torch.ones(2, 3)), True),
    "addcmul 0-d tensor": (lambda x, o: x.addcmul(torch.tensor(1.0), o), False),
    "lerp collection, number": (lambda x, o: x.lerp(o, 0.5), False),
    "addcmul collections": (lambda x, o: x.addcmul(o, o), False),
    "addcmul tensors": (lambda x, o: x.addcmul(torch.ones(2, 3), torch.ones(2, 3)), False),
    "add collection": (lambda x, o: x.add(o), False),
}


def _values_only(lib: Any) -> list[Any]:
    """Locked collections holding Python values and no tensor (a TensorDict, one with
    them nested, a lazy stack) and one holding nothing at all."""
    return [
        lib.TensorDict({"s": "a"}, [2, 3]).lock_(),
        lib.TensorDict({"n": {"s": "a"}, "m": {}}, [2, 3]).lock_(),
        lib.lazy_stack([lib.TensorDict({"s": "a"}, [3]) for _ in range(2)]).lock_(),
        lib.TensorDict({"m": {}}, [2, 3]).lock_(),
    ]


@pytest.mark.parametrize("name", list(PAIRED_CALLS))
def test_python_values_paired_beside_a_tensor_keep_the_lock(name: str) -> None:
    """As the peer: a collection without tensors gives an unlocked copy, except when it
    holds Python values and a collection operand is paired key by key beside a tensor
    operand with dims (the peer's ``apply`` then keeps the lock; a fuzzer program:
    ``rec.memmap(...).addcmul(t, rec.apply(torch.ones_like))`` of a record whose
    tensor fields are ``None``)."""
    call, locked = PAIRED_CALLS[name]
    *holding, empty = _values_only(tclass)
    for x in holding:
        out = call(x, x.apply(torch.ones_like))
        assert out.is_locked is locked, type(x).__name__
        assert out.is_empty() is False  # the values are kept
    assert call(empty, empty.clone()).is_locked is False


@pytest.mark.peer
@pytest.mark.parametrize("name", list(PAIRED_CALLS))
def test_python_values_paired_beside_a_tensor_lock_as_the_peers(name: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        peer = pytest.importorskip("tensordict")
        call = PAIRED_CALLS[name][0]
        for mine, theirs in zip(_values_only(tclass), _values_only(peer), strict=True):
            expected = call(theirs, theirs.apply(torch.ones_like)).is_locked
            assert call(mine, mine.apply(torch.ones_like)).is_locked is expected


MASK_CALLS: dict[str, tuple[Callable[[Any], Any], bool]] = {
    # name: (call with the bool collection x, locked result of one of Python values only)
    "bitwise_and collection": (lambda x: x.bitwise_and(x.clone()), True),
    "bitwise_and number": (lambda x: x.bitwise_and(True), True),
    "bitwise_and 0-d tensor": (lambda x: x.bitwise_and(torch.tensor(True)), True),
    "bitwise_and default": (lambda x: x.bitwise_and(x.clone(), default="intersection"), True),
    "logical_and collection": (lambda x: x.logical_and(x.clone()), True),
    "remainder collection": (lambda x: x.int() % x.int().clone(), True),
    "add collection": (lambda x: x.int() + x.int().clone(), False),
}


@pytest.mark.parametrize("name", list(MASK_CALLS))
def test_bitwise_and_and_remainder_of_python_values_keep_the_lock(name: str) -> None:
    """As the peer (program 16,220,449 L8 of features,entries,math,records:
    ``x.bool().bitwise_and(x.clone() != 0)``): ``bitwise_and``, ``logical_and`` and ``%``
    of a locked collection holding Python values and no tensor are locked, as ``&`` is
    and as they are of one holding tensors (``+`` gives an unlocked copy); a tensor
    operand with dims unlocks a TensorDict's, and one holding nothing stays unlocked."""
    call, locked = MASK_CALLS[name]
    *holding, empty = _values_only(tclass)
    for x in holding:
        assert call(x.bool()).is_locked is locked, type(x).__name__
    assert not call(empty.bool()).is_locked
    dims = torch.ones(2, 3, dtype=torch.bool)
    assert not holding[0].bool().bitwise_and(dims).is_locked


@pytest.mark.peer
@pytest.mark.parametrize("name", list(MASK_CALLS))
def test_bitwise_and_and_remainder_of_python_values_lock_as_the_peers(name: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        peer = pytest.importorskip("tensordict")
        call = MASK_CALLS[name][0]
        for mine, theirs in zip(_values_only(tclass)[:3], _values_only(peer)[:3], strict=True):
            assert call(mine.bool()).is_locked is call(theirs.bool()).is_locked
