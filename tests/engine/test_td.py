"""Tests for tclass._engine._td.TensorDict: construction, reading, writing, indexing,
locking, pickling."""

from __future__ import annotations

import copy
import io
import pickle
import warnings
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import tclass
from tclass import (
    LazyStackedTensorDict,
    MemoryMappedTensor,
    NonTensorData,
    NonTensorStack,
    TensorDict,
    UnbatchedTensor,
    errors,
)

BatchSizeError = errors.BatchSizeError
DimError = errors.DimError
DimNameError = errors.DimNameError
EntryTypeError = errors.EntryTypeError
InPlaceWriteError = errors.InPlaceWriteError
InvalidKeyError = errors.InvalidKeyError
KeyConflictError = errors.KeyConflictError
KeyNotFoundError = errors.KeyNotFoundError
KeyThroughTensorError = errors.KeyThroughTensorError
LockedError = errors.LockedError


def _td(batch: tuple[int, ...] = (4,)) -> TensorDict:
    """a: [*batch, 3] float, b: {c: [*batch] long, d: [*batch, 2] float}."""
    n = int(np.prod(batch)) if batch else 1
    a = torch.arange(n * 3, dtype=torch.float32).reshape(*batch, 3)
    c = torch.arange(n).reshape(batch)
    d = -torch.arange(n * 2, dtype=torch.float32).reshape(*batch, 2)
    return TensorDict({"a": a, "b": {"c": c, "d": d}}, batch_size=list(batch))


def _id(value: Any) -> str:
    """A stable test id (no memory addresses)."""
    return "object()" if type(value) is object else repr(value)


def _same_storage(x: torch.Tensor, y: torch.Tensor) -> bool:
    return x.untyped_storage().data_ptr() == y.untyped_storage().data_ptr()


class TestConstruction:
    def test_from_dict_keeps_tensors_and_order(self) -> None:
        a, b = torch.zeros(4, 3), torch.ones(4)
        td = TensorDict({"b": b, "a": a}, batch_size=[4])
        assert td["a"] is a and td["b"] is b
        assert list(td.keys()) == ["b", "a"]
        assert td.batch_size == torch.Size([4]) and td.device is None
        assert not td.is_locked

    def test_nested_dict_becomes_tensordict_with_parent_batch(self) -> None:
        c = torch.zeros(4, 2, 5)
        td = TensorDict({"n": {"m": {"c": c}}}, batch_size=[4, 2])
        assert type(td["n"]) is TensorDict and type(td["n", "m"]) is TensorDict
        assert td["n"].batch_size == torch.Size([4, 2])
        assert td["n", "m"].batch_size == torch.Size([4, 2])
        assert td["n", "m", "c"] is c

    def test_tuple_keys_create_nested(self) -> None:
        x = torch.ones(3)
        td = TensorDict({("a", "b"): x, ("a", "c"): x + 1, "d": x}, batch_size=[3])
        assert td["a", "b"] is x
        assert torch.equal(td["a"]["c"], x + 1)
        assert td["a"].batch_size == torch.Size([3])
        # the string keys are set first, then the tuple ones, as the peer's constructor
        assert list(td.keys()) == ["d", "a"]
        with pytest.raises(errors.KeyThroughTensorError):  # "d" is set before ("d", "e")
            TensorDict({("d", "e"): x, "d": x}, batch_size=[3])

    @pytest.mark.parametrize("batch_size", [[3, 2], [], [3]], ids=_id)
    @pytest.mark.parametrize("device", [None, "cpu"], ids=_id)
    def test_tuple_keys_wait_for_plain_keys(self, batch_size: list[int], device: Any) -> None:
        # Every path of the constructor (one batch dim or not, a device or not) sets a
        # dict's tuple keys after its plain keys, whatever their order in the dict.
        x, y = torch.ones(3, 2), torch.zeros(3, 2)
        source = {("a", "b"): x, "d": y, ("a", "c"): x + 1, "e": {"f": x}}
        td = TensorDict(source, batch_size=batch_size, device=device)
        assert list(td.keys()) == ["d", "e", "a"]
        assert list(td["a"].keys()) == ["b", "c"]
        assert torch.equal(td["a", "c"], x + 1) and torch.equal(td["e", "f"], x)
        assert td["a"].batch_size == torch.Size(batch_size)
        with pytest.raises(errors.KeyThroughTensorError):  # "d" is set before ("d", "e")
            TensorDict({("d", "e"): x, "d": x}, batch_size=batch_size, device=device)

    def test_kwargs(self) -> None:
        td = TensorDict(batch_size=[2], a=torch.zeros(2), b={"c": torch.ones(2, 1)})
        assert set(td.keys(include_nested=True)) == {"a", "b", ("b", "c")}
        assert td.batch_size == torch.Size([2])

    def test_from_other_tensordict_shares_leaves(self) -> None:
        src = _td()
        td = TensorDict(src, batch_size=[4])
        assert td is not src
        assert td["a"] is src["a"] and td["b", "c"] is src["b", "c"]
        td["new"] = torch.zeros(4)
        assert "new" not in src
        td = TensorDict(_td((4, 2)), batch_size=[4])
        assert td.batch_size == torch.Size([4]) and td["b"].batch_size == torch.Size([4, 2])

    @pytest.mark.parametrize(
        "batch_size, expected",
        [([4, 3], (4, 3)), ((4, 3), (4, 3)), (4, (4,)), (torch.Size([4, 3]), (4, 3)),
         (None, ()), ([], ()), ((), ()), ([4], (4,)), (range(4, 5), (4,)),
         ([np.int64(4)], (4,)), ((np.int64(4), np.int32(3)), (4, 3))],
        ids=_id,
    )  # fmt: skip
    def test_batch_size_spellings(self, batch_size: Any, expected: tuple[int, ...]) -> None:
        data = torch.zeros(4, 3, 2)
        td = TensorDict({"x": data}, batch_size=batch_size)
        assert type(td.batch_size) is torch.Size
        assert td.batch_size == torch.Size(expected)

    @pytest.mark.parametrize(
        "bad", [-1, [-1], [4, -2], True, [True], [4, False], 4.0, [4.0], "4", ["4"], b"4",
                object(), [None], {4: 4}],
        ids=_id,
    )  # fmt: skip
    def test_malformed_batch_size(self, bad: Any) -> None:
        with pytest.raises(BatchSizeError, match="invalid batch_size") as info:
            TensorDict({"x": torch.zeros(4)}, batch_size=bad)
        assert isinstance(info.value, ValueError) and isinstance(info.value, RuntimeError)

    def test_ragged_batch_dim_matches_a_strided_nested_leaf(self) -> None:
        """-1 after the first dim is a ragged dim (as the peer takes it): it must be one
        of the leaves, whose shape reads -1 there."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch's prototype warning for this layout
            nested = torch.nested.nested_tensor([torch.ones(3, 4, 5), torch.ones(3, 6, 5)])
        td = TensorDict({"n": nested}, batch_size=[2, 3, -1])
        assert td.batch_size == (2, 3, -1) and td["n"] is nested
        assert TensorDict({}, batch_size=(3, -1)).batch_size == (3, -1)
        doubled = td.apply(lambda x: x * 2)
        assert doubled.batch_size == (2, 3, -1) and td[1].batch_size == (3, -1)
        padded = torch.nested.to_padded_tensor(doubled["n"], 0.0)
        assert torch.equal(padded, 2 * torch.nested.to_padded_tensor(nested, 0.0))
        td.batch_size = [2, 3]
        assert td.batch_size == (2, 3)
        with pytest.raises(BatchSizeError, match=r"'n'.*\[2, 3, -1, 5\].*\[2, -1\]"):
            TensorDict({"n": nested}, batch_size=[2, -1])
        with pytest.raises(BatchSizeError, match=r"'x'.*\[2, 3, 4\].*\[2, 3, -1\]"):
            TensorDict({"n": nested, "x": torch.zeros(2, 3, 4)}, batch_size=[2, 3, -1])
        with pytest.raises(BatchSizeError, match=r"'x'.*\[2, 3, 4\].*\[2, -1, 4\]"):
            TensorDict({"x": torch.zeros(2, 3, 4)}, batch_size=[2, -1, 4])
        with pytest.raises(BatchSizeError, match=r"'n'.*\[2, 3, -1, 5\].*\[2, 3, 4\]"):
            td.batch_size = [2, 3, 4]
        with pytest.raises(BatchSizeError, match="invalid batch_size"):  # counts: never ragged
            TensorDict({}, batch_size=[-1, 3])

    def test_leaf_mismatch_names_key_and_shapes(self) -> None:
        with pytest.raises(BatchSizeError, match=r"'x'.*\[3, 2\].*\[4\]"):
            TensorDict({"a": torch.zeros(4), "x": torch.zeros(3, 2)}, batch_size=[4])
        with pytest.raises(BatchSizeError, match=r"'x'.*\[4, 2\].*\[4, 3\]"):
            TensorDict({"x": torch.zeros(4, 2)}, batch_size=[4, 3])
        with pytest.raises(BatchSizeError, match=r"'x'.*\[\].*\[4\]"):
            TensorDict({"x": torch.tensor(1.0)}, batch_size=[4])
        with pytest.raises(BatchSizeError, match=r"'x'.*\[\].*\[4\]"):  # the device loop
            TensorDict({"x": torch.tensor(1.0)}, batch_size=[4], device="cpu")
        with pytest.raises(BatchSizeError, match=r"'x'.*\[3\].*\[4\]"):  # keyword entries
            TensorDict(batch_size=[4], a=torch.zeros(4), x=torch.zeros(3))

    def test_nested_leaf_mismatch_names_full_key(self) -> None:
        with pytest.raises(BatchSizeError, match=r"\('b', 'c'\).*\[3\].*\[4\]"):
            TensorDict({"b": {"c": torch.zeros(3)}}, batch_size=[4])

    def test_nested_tensordict_with_wrong_batch(self) -> None:
        inner = TensorDict({"c": torch.zeros(3)}, batch_size=[3])
        with pytest.raises(BatchSizeError, match="'b'"):
            TensorDict({"b": inner}, batch_size=[4])

    def test_array_likes_go_through_as_tensor(self) -> None:
        arr = np.arange(6, dtype=np.float64).reshape(3, 2)
        td = TensorDict({"l": [1, 2, 3], "n": arr, "f": [1.5, 2.5, 3.5]}, batch_size=[3])
        assert torch.equal(td["l"], torch.tensor([1, 2, 3]))
        assert td["n"].dtype is torch.float64 and torch.equal(td["n"], torch.from_numpy(arr))
        assert td["f"].dtype is torch.float32
        scalars = TensorDict({"i": 3, "f": 2.5, "b": True, "c": 1 + 2j})
        assert torch.equal(scalars["i"], torch.tensor(3))
        assert scalars["f"].dtype is torch.float32 and scalars["f"].item() == 2.5
        assert scalars["b"].dtype is torch.bool
        assert scalars["c"] == 1 + 2j  # complex numbers are Python values, as in the peer

    @pytest.mark.parametrize("value", ["text", b"bytes", None, object(), [1, "a"]])
    def test_python_values_are_stored_as_values(self, value: Any) -> None:
        td = TensorDict({"k": value})
        assert isinstance(td.get("k"), NonTensorData | NonTensorStack)
        assert td["k"] is value or td["k"] == value

    def test_lock_argument(self) -> None:
        td = TensorDict({"a": torch.zeros(2), "b": {"c": torch.zeros(2)}}, [2], lock=True)
        assert td.is_locked and td["b"].is_locked
        with pytest.raises(LockedError):
            td["z"] = torch.zeros(2)

    def test_source_and_kwargs_together(self) -> None:
        with pytest.raises(TypeError, match="not both"):
            TensorDict({"a": torch.zeros(2)}, [2], b=torch.zeros(2))
        with pytest.raises(ValueError, match="not both"):  # the peer's ValueError
            TensorDict(a=1, source={"b": 2})

    @pytest.mark.parametrize("source", [[("a", torch.zeros(2))], torch.zeros(2), 3])
    def test_source_must_be_a_mapping(self, source: Any) -> None:
        with pytest.raises(TypeError, match="mapping"):
            TensorDict(source, [2])


class TestReading:
    def test_key_spellings(self) -> None:
        td = _td()
        c = td["b"]["c"]
        assert td["b", "c"] is c
        assert td[("b", ("c",))] is c
        assert td[(("b",), "c")] is c
        assert td[("a",)] is td["a"]
        assert td.get(("b", "c")) is c and td.get("b")["c"] is c

    def test_get_default(self) -> None:
        td = _td()
        sentinel = object()
        assert td.get("zz") is None
        assert td.get("zz", sentinel) is sentinel
        assert td.get(("b", "zz"), sentinel) is sentinel
        assert td.get(("zz", "c"), sentinel) is sentinel

    def test_get_through_tensor_returns_default(self) -> None:
        # As in the peer: with a default given, a key that passes through a tensor is absent.
        sentinel = object()
        assert _td().get(("a", "x"), sentinel) is sentinel

    def test_get_through_a_record_gives_the_node(self) -> None:
        # As the peer: a nested key through a record gives the entry's node (a Python
        # value's NonTensorData), as through a TensorDict; td[key] gives the value.
        class Rec(tclass.TensorClass):
            a: torch.Tensor
            z: str

        td = TensorDict({"r": Rec(a=torch.zeros(3), z="hi", batch_size=[3])}, [3])
        node = td.get(("r", "z"))
        assert isinstance(node, tclass.NonTensorData) and node.data == "hi"
        assert td["r", "z"] == "hi" and td.get(("r", "a")).shape == (3,)
        assert td.get(("r", "zz"), "default") == "default"

    def test_missing_key_lists_keys(self) -> None:
        td = _td()
        with pytest.raises(KeyNotFoundError, match=r"'zz'.*\['a', 'b'\]") as info:
            td["zz"]
        assert isinstance(info.value, KeyError)
        with pytest.raises(KeyNotFoundError, match=r"'zz'.*\['c', 'd'\]"):
            td["b", "zz"]

    @pytest.mark.parametrize("key", [("b", 1), (), ("b", ()), 1.5, object(), ("a", None)])
    def test_invalid_key_in_get(self, key: Any) -> None:
        with pytest.raises(InvalidKeyError, match="invalid key") as info:
            _td().get(key)
        assert isinstance(info.value, TypeError) and isinstance(info.value, KeyError)

    def test_invalid_key_in_getitem(self) -> None:
        with pytest.raises(InvalidKeyError, match="invalid key"):
            _td()["b", 1]
        with pytest.raises(InvalidKeyError):
            _td()[("b", ())]

    def test_reading_through_a_tensor(self) -> None:
        # The peer raises KeyError from get() and ValueError from td[key]: this is both.
        with pytest.raises(KeyThroughTensorError, match=r"'a'.*tensor.*no entry 'x'") as info:
            _td()["a", "x"]
        assert isinstance(info.value, KeyError) and isinstance(info.value, ValueError)
        with pytest.raises(KeyThroughTensorError):
            _td().get(("a", "x"))
        with pytest.raises(KeyThroughTensorError, match=r"delete it first"):
            _td().set(("a", "x"), torch.zeros(4))


class TestSet:
    def test_set_new_and_overwrite(self) -> None:
        td = _td()
        x, y = torch.zeros(4, 7), torch.ones(4)
        assert td.set("x", x) is td
        assert td["x"] is x
        td.set("x", y)
        assert td["x"] is y
        td["z"] = y
        assert td["z"] is y

    def test_set_nested_creates_intermediates(self) -> None:
        td = _td((4, 2))
        x = torch.ones(4, 2, 5)
        td.set(("p", "q", "r"), x)
        assert td["p", "q", "r"] is x
        assert td["p"].batch_size == torch.Size([4, 2])
        assert td["p", "q"].batch_size == torch.Size([4, 2])
        td["b", "e"] = x
        assert td["b"]["e"] is x and "c" in td["b"].keys()
        td["n"] = {"m": torch.zeros(4, 2, 5)}
        assert type(td["n"]) is TensorDict and td["n"].batch_size == torch.Size([4, 2])

    def test_set_through_tensor_fails(self) -> None:
        with pytest.raises(KeyThroughTensorError, match=r"\('a',\)"):
            _td().set(("a", "x"), torch.zeros(4))

    def test_set_wrong_batch(self) -> None:
        td = _td()
        with pytest.raises(BatchSizeError, match=r"'x'.*\[5\].*\[4\]"):
            td["x"] = torch.zeros(5)
        with pytest.raises(BatchSizeError, match=r"\[3\]"):
            td.set(("b", "x"), torch.zeros(3))
        assert "x" not in td.keys() and "x" not in td["b"].keys()

    def test_set_array_like_and_bad_values(self) -> None:
        td = _td()
        td["l"] = [1, 2, 3, 4]
        assert torch.equal(td["l"], torch.tensor([1, 2, 3, 4]))
        td["s"] = "hello"
        assert td["s"] == "hello" and td.get("s").batch_size == td.batch_size
        td.set("s", None)
        assert td["s"] is None
        with pytest.raises(EntryTypeError, match="mapping"):
            TensorDict(3)  # type: ignore[arg-type]

    def test_set_inplace(self) -> None:
        td = _td()
        a = td["a"]
        td.set("a", torch.full((4, 3), 7.0), inplace=True)
        assert td["a"] is a and torch.equal(a, torch.full((4, 3), 7.0))
        td.set("new", torch.ones(4), inplace=True)  # missing: plain set
        assert torch.equal(td["new"], torch.ones(4))


class TestSetInPlace:
    def test_keeps_data_identity(self) -> None:
        td = _td()
        a, ptr = td["a"], td["a"].data_ptr()
        assert td.set_("a", torch.ones(4, 3)) is td
        assert td["a"] is a and a.data_ptr() == ptr and torch.equal(a, torch.ones(4, 3))

    def test_broadcast_and_casting(self) -> None:
        td = _td()
        td.set_("a", torch.tensor([1.0, 2.0, 3.0]))
        assert torch.equal(td["a"], torch.tensor([1.0, 2.0, 3.0]).expand(4, 3))
        td.set_(("b", "c"), 5)
        assert torch.equal(td["b", "c"], torch.full((4,), 5)) and td["b", "c"].dtype is torch.int64

    def test_nested_collection_value(self) -> None:
        td = _td()
        d = td["b", "d"]
        td.set_("b", {"d": torch.zeros(4, 2)})
        assert td["b", "d"] is d and torch.equal(d, torch.zeros(4, 2))

    def test_missing_key(self) -> None:
        with pytest.raises(KeyNotFoundError, match="'zz'"):
            _td().set_("zz", torch.zeros(4))
        with pytest.raises(KeyNotFoundError, match="'zz'"):
            _td().set_(("b", "zz"), torch.zeros(4))

    def test_missing_parent_is_created(self) -> None:
        # As the peer: a nested key whose parent collection is missing is a plain set.
        td = _td()
        assert td.set_(("zz", "a"), torch.ones(4)) is td
        assert torch.equal(td["zz", "a"], torch.ones(4))
        td.set_(("b", "q", "r"), torch.ones(4))
        assert torch.equal(td["b", "q", "r"], torch.ones(4))
        with pytest.raises(LockedError):
            _td().lock_().set_(("zz", "a"), torch.ones(4))

    def test_shape_error(self) -> None:
        td = _td()
        before = td["a"].clone()
        with pytest.raises(BatchSizeError, match=r"'a'.*\[4, 3\]"):
            td.set_("a", torch.zeros(5, 3))
        assert torch.equal(td["a"], before)
        # a ValueError naming the entry and both shapes, in the peer's words
        scalar = TensorDict({"a": torch.rand(())}, [])
        with pytest.raises(ValueError, match=r"Failed to update 'a'.*shape \[2\].*shape \[\]"):
            scalar.set_("a", torch.randn(2))


class TestUpdate:
    def test_nested_merge(self) -> None:
        td = _td()
        d = td["b", "d"]
        e = torch.ones(4)
        td.update({"b": {"e": e}, "x": torch.zeros(4)})
        assert set(td["b"].keys()) == {"c", "d", "e"}
        assert td["b", "e"] is e and td["b", "d"] is d
        other = TensorDict({"b": {"c": torch.zeros(4, dtype=torch.long)}}, [4])
        assert td.update(other) is td
        assert td["b", "c"] is other["b", "c"] and td["b", "e"] is e
        td.update({("b", "f"): torch.ones(4)})
        assert torch.equal(td["b", "f"], torch.ones(4))

    def test_clone(self) -> None:
        td = _td()
        x, y = torch.ones(4), torch.ones(4)
        src = TensorDict({"x": x, "n": {"y": y}}, [4])
        td.update(src, clone=True)
        assert torch.equal(td["x"], x) and not _same_storage(td["x"], x)
        assert not _same_storage(td["n", "y"], y)

    def test_clone_with_plain_dicts(self) -> None:
        td = _td()
        x, y = torch.ones(4), torch.ones(4)
        td.update({"b": {"x": x}, "new": {"y": y}}, clone=True)
        assert torch.equal(td["b", "x"], x) and not _same_storage(td["b", "x"], x)
        assert torch.equal(td["new", "y"], y) and not _same_storage(td["new", "y"], y)

    def test_inplace(self) -> None:
        td = _td()
        a, d = td["a"], td["b", "d"]
        td.update({"a": torch.ones(4, 3), "b": {"d": torch.ones(4, 2)}}, inplace=True)
        assert td["a"] is a and torch.equal(a, torch.ones(4, 3))
        assert td["b", "d"] is d and torch.equal(d, torch.ones(4, 2))

    def test_keys_to_update(self) -> None:
        td = _td()
        td.update({"a": torch.ones(4, 3), "x": torch.ones(4)}, keys_to_update=["x"])
        assert "x" in td.keys() and not torch.equal(td["a"], torch.ones(4, 3))

    def test_keys_to_update_nested(self) -> None:
        td = _td()
        src = {"b": {"c": torch.zeros(4, dtype=torch.long), "d": torch.ones(4, 2)}}
        td.update(src, keys_to_update=[("b", "d")])
        assert td["b", "d"] is src["b"]["d"]
        assert not torch.equal(td["b", "c"], src["b"]["c"])


class TestRemove:
    def test_pop(self) -> None:
        td = _td()
        a = td["a"]
        assert td.pop("a") is a and "a" not in td.keys()
        c = td["b", "c"]
        assert td.pop(("b", "c")) is c and set(td["b"].keys()) == {"d"}
        assert td.pop("zz", 5) == 5 and td.pop(("b", "zz"), None) is None
        with pytest.raises(KeyNotFoundError, match="'zz'"):
            td.pop("zz")
        with pytest.raises(KeyNotFoundError):
            td.pop(("zz", "y"))

    def test_del(self) -> None:
        td = _td()
        assert td.del_("a") is td and "a" not in td.keys()
        del td["b", "c"]
        assert list(td["b"].keys()) == ["d"]
        del td["b"]
        assert list(td.keys()) == []
        with pytest.raises(KeyNotFoundError) as raised:
            del td["b"]
        # a del names the missing key, without pop's advice about a default
        assert "'b' was not found in TensorDict" in str(raised.value)
        assert "pop" not in str(raised.value) and isinstance(raised.value, KeyError)
        with pytest.raises(KeyNotFoundError, match=r"\('b', 'c'\) was not found"):
            td.del_(("b", "c"))


class TestRename:
    def test_rename(self) -> None:
        td = _td()
        a = td["a"]
        assert td.rename_key_("a", "z") is td
        assert td["z"] is a and "a" not in td.keys()
        c = td["b", "c"]
        td.rename_key_(("b", "c"), ("q", "r"))
        assert td["q", "r"] is c and "c" not in td["b"].keys()
        assert td["q"].batch_size == td.batch_size

    def test_safe_conflict(self) -> None:
        td = _td()
        a, d = td["a"], td["b", "d"]
        with pytest.raises(KeyConflictError, match="'b'") as info:
            td.rename_key_("a", "b", safe=True)
        assert isinstance(info.value, KeyError)
        with pytest.raises(KeyConflictError):
            td.rename_key_("a", ("b", "d"), safe=True)
        assert td["a"] is a and td["b", "d"] is d
        td.rename_key_("a", ("b", "d"))  # unsafe overwrites
        assert td["b", "d"] is a and "a" not in td.keys()
        with pytest.raises(KeyNotFoundError, match="'zz'"):
            td.rename_key_("zz", "y")

    def test_safe_rename_into_itself_moves_the_entry_down(self) -> None:
        # Found by the differential fuzzer: ("b", "d") exists only inside the entry that
        # moves, so as in the peer it is no conflict.
        td = _td()
        b = td["b"]
        td.rename_key_("b", ("b", "d"), safe=True)
        assert td["b", "d"] is b and set(td["b"].keys()) == {"d"}

    def test_failure_restores(self) -> None:
        td = _td()
        c = td["b", "c"]
        with pytest.raises(KeyThroughTensorError):
            td.rename_key_(("b", "c"), ("a", "x"))  # a is a tensor
        assert td["b", "c"] is c
        with pytest.raises(InvalidKeyError):
            td.rename_key_("a", ("x", 1))
        assert "a" in td.keys()

    def test_a_key_through_a_tensor_is_a_value_error_as_the_peer(self) -> None:
        # The peer raises a ValueError (its _KeyThroughLeafError) for an old key that
        # passes through a tensor, in pop / del / rename_key_ as in get.
        td = _td()
        for remove in (
            lambda: td.pop(("a", "x")),
            lambda: td.del_(("a", "x", "y")),
            lambda: td.rename_key_(("a", "x"), "q"),
            lambda: LazyStackedTensorDict(td, td.clone()).rename_key_(("a", "x"), "q"),
        ):
            with pytest.raises(KeyThroughTensorError, match=r"\('a',\) is a tensor") as info:
                remove()
            assert isinstance(info.value, ValueError) and isinstance(info.value, KeyError)
        assert td.pop(("a", "x"), 5) == 5 and "a" in td.keys()


class TestSelectExclude:
    def test_select(self) -> None:
        td = _td()
        out = td.select("a", ("b", "c"))
        assert out is not td and out.batch_size == td.batch_size
        assert set(out.keys(include_nested=True)) == {"a", "b", ("b", "c")}
        assert out["a"] is td["a"] and out["b", "c"] is td["b", "c"]
        assert set(td.keys(include_nested=True, leaves_only=True)) == {"a", ("b", "c"), ("b", "d")}
        out["b", "z"] = torch.zeros(4)
        assert "z" not in td["b"].keys()

    def test_select_strict(self) -> None:
        td = _td()
        with pytest.raises(KeyNotFoundError, match="'zz'"):
            td.select("a", "zz")
        with pytest.raises(KeyNotFoundError):
            td.select(("b", "zz"))
        # as the peer: the nested collection a missing nested key names is kept, empty
        out = td.select("a", "zz", ("b", "zz"), strict=False)
        assert list(out.keys()) == ["a", "b"] and out["b"].is_empty()

    def test_select_inplace(self) -> None:
        td = _td()
        a = td["a"]
        assert td.select("a", inplace=True) is td and list(td.keys()) == ["a"] and td["a"] is a

    def test_exclude(self) -> None:
        td = _td()
        out = td.exclude("a", ("b", "c"), "zz", ("zz", "y"))
        assert set(out.keys(include_nested=True)) == {"b", ("b", "d")}
        assert out["b", "d"] is td["b", "d"]
        assert set(td["b"].keys()) == {"c", "d"} and "a" in td.keys()

    def test_exclude_inplace(self) -> None:
        td = _td()
        sub = td["b"]
        assert td.exclude(("b", "c"), inplace=True) is td
        assert td["b"] is sub
        assert list(sub.keys()) == ["d"]

    @pytest.mark.parametrize("keys", [(("b", "c"), "b"), ("b", ("b", "c")), ("b", ("b", "c"), "a")])
    def test_exclude_inplace_a_key_with_its_parent(self, keys: tuple[Any, ...]) -> None:
        """As the peer: a key under another excluded one is not removed on its own, so a
        nested TensorDict shared with another collection (``exclude`` out of place shares
        them) is left whole."""
        td = _td()
        sub = td["b"]
        out = td.exclude("zz")
        assert out["b"] is sub
        assert out.exclude(*keys, inplace=True) is out and "b" not in out.keys()
        assert set(sub.keys()) == {"c", "d"} and td["b"] is sub
        assert out.exclude(("a",), ("a", "x"), inplace=True) is out and "a" not in out.keys()

    def test_locked(self) -> None:
        td = _td().lock_()
        assert list(td.select("a").keys()) == ["a"]  # out of place is fine
        with pytest.raises(LockedError):
            td.select("a", inplace=True)
        with pytest.raises(LockedError):
            td.exclude("a", inplace=True)
        assert set(td.keys()) == {"a", "b"}


class TestBatchSizeSetter:
    def test_shrink_and_grow(self) -> None:
        td = _td((4, 3))
        td.batch_size = [4]
        assert td.batch_size == torch.Size([4])
        assert td["b"].batch_size == torch.Size([4, 3])  # nested keeps what it can
        td.batch_size = []
        assert td.batch_size == torch.Size([])
        td.batch_size = (4, 3)
        assert td.batch_size == torch.Size([4, 3]) and td["b"].batch_size == torch.Size([4, 3])

    def test_grow_adjusts_nested(self) -> None:
        td = TensorDict({"a": torch.zeros(4, 3, 2), "b": {"c": torch.zeros(4, 3)}}, [4])
        td.batch_size = [4, 3]
        assert td["b"].batch_size == torch.Size([4, 3])

    def test_a_nested_collection_without_tensors_takes_a_size_it_does_not_begin(self) -> None:
        # every nested batch size begins with its parent's (the peer leaves m at [4, 3])
        td = TensorDict({"m": {"k": {}}, "e": {}}, [4, 3])
        td.batch_size = [4, 2]
        assert td["m"].batch_size == td["m", "k"].batch_size == torch.Size([4, 2])
        td.batch_size = [4]  # [4, 2] begins with [4]: kept, as in the peer
        assert td["m"].batch_size == td["e"].batch_size == torch.Size([4, 2])

    @pytest.mark.parametrize("bad", [[5], [4, 2], [-1], [4.0], "x"])
    def test_invalid_changes_nothing(self, bad: Any) -> None:
        td = _td((4, 3))
        with pytest.raises(BatchSizeError):
            td.batch_size = bad
        assert td.batch_size == torch.Size([4, 3]) and td["b"].batch_size == torch.Size([4, 3])

    def test_nested_leaf_blocks(self) -> None:
        td = TensorDict({"a": torch.zeros(4, 3), "b": {"c": torch.zeros(4)}}, [4])
        with pytest.raises(BatchSizeError, match=r"\('b', 'c'\)"):
            td.batch_size = [4, 3]
        assert td.batch_size == torch.Size([4]) and td["b"].batch_size == torch.Size([4])

    def test_python_value_keeps_its_dims_when_the_batch_shrinks(self) -> None:
        # As a nested collection: td[0] still holds the value over [3] (the peer's too).
        td = TensorDict({"s": "pong", "a": torch.zeros(4, 3, 2)}, [4, 3])
        td.batch_size = [4]
        assert td.get("s").batch_size == torch.Size([4, 3]) and td["s"] == "pong"
        assert td[0].get("s").batch_size == torch.Size([3])
        stacked = torch.stack([td, td], 0).get("s")
        assert stacked.batch_size == torch.Size([2, 4, 3])
        assert stacked.tolist() == [[["pong"] * 3] * 4] * 2
        td.batch_size = [4, 3, 2]  # and grows with it
        assert td.get("s").batch_size == torch.Size([4, 3, 2])

    def test_python_value_of_other_dims_blocks(self) -> None:
        td = TensorDict({"s": "pong", "a": torch.zeros(4, 3, 5)}, [4, 3])
        td.batch_size = [4]
        with pytest.raises(BatchSizeError, match=r"key 's': its shape \[4, 3\]"):
            td.batch_size = [4, 5]
        assert td.batch_size == torch.Size([4]) and td.get("s").batch_size == (4, 3)


def _normalize(index: Any, batch_dims: int) -> Any:
    """The index as it applies to a leaf: Ellipsis spelled out over batch dims only."""
    items = index if isinstance(index, tuple) else (index,)
    if not any(item is Ellipsis for item in items):
        return index
    consumed = sum(
        0 if item is None or item is Ellipsis
        else (item.ndim if isinstance(item, torch.Tensor) and item.dtype is torch.bool else 1)
        for item in items
    )  # fmt: skip
    at = next(i for i, item in enumerate(items) if item is Ellipsis)
    return items[:at] + (slice(None),) * (batch_dims - consumed) + items[at + 1 :]


@st.composite
def _batch_and_index(draw: st.DrawFn, basic_only: bool = False) -> tuple[tuple[int, ...], Any]:
    batch = tuple(draw(st.lists(st.integers(0, 4), min_size=1, max_size=3)))
    n = len(batch)
    k = draw(st.integers(0, n))
    ellipsis_at = draw(st.integers(0, k)) if draw(st.booleans()) else None
    advanced_left = 0 if basic_only else 1
    items: list[Any] = []
    for i in range(k):
        dim = i if ellipsis_at is None or i < ellipsis_at else n - k + i
        size = batch[dim]
        kinds = ["slice"] + (["int"] if size else [])
        if advanced_left:
            kinds += ["list", "tensor", "mask"]
        kind = draw(st.sampled_from(kinds))
        if kind == "slice":
            start = draw(st.none() | st.integers(-size - 1, size + 1))
            stop = draw(st.none() | st.integers(-size - 1, size + 1))
            items.append(slice(start, stop, draw(st.none() | st.integers(1, 3))))
        elif kind == "int":
            items.append(draw(st.integers(-size, size - 1)))
        else:
            advanced_left -= 1
            if kind == "mask":
                items.append(
                    torch.tensor(
                        draw(st.lists(st.booleans(), min_size=size, max_size=size)),
                        dtype=torch.bool,
                    )
                )
            else:
                rows = draw(st.lists(st.integers(-size, size - 1), max_size=4)) if size else []
                items.append(rows if kind == "list" else torch.tensor(rows, dtype=torch.long))
    if ellipsis_at is not None:
        items.insert(ellipsis_at, Ellipsis)
    for _ in range(draw(st.integers(0, 2))):
        items.insert(draw(st.integers(0, len(items))), None)
    if len(items) == 1 and draw(st.booleans()):
        return batch, items[0]
    return batch, tuple(items)


def _indexing_td(batch: tuple[int, ...]) -> TensorDict:
    n = int(np.prod(batch))
    leaf = torch.arange(n * 2, dtype=torch.float32).reshape(*batch, 2)
    flat = torch.arange(n).reshape(batch)
    inner = torch.arange(n * 6).reshape(*batch, 2, 3)
    return TensorDict(
        {"x": leaf, "y": flat, "n": TensorDict({"z": inner}, [*batch, 2])}, list(batch)
    )


class TestIndexing:
    @settings(max_examples=150, deadline=None)
    @given(_batch_and_index())
    def test_matches_leaves(self, case: tuple[tuple[int, ...], Any]) -> None:
        batch, index = case
        td = _indexing_td(batch)
        expected = torch.empty(batch)[index].shape
        out = td[index]
        assert type(out) is TensorDict and out.batch_size == expected
        norm = _normalize(index, len(batch))
        assert torch.equal(out["x"], td["x"][norm])
        assert torch.equal(out["y"], td["y"][norm])
        assert out["n"].batch_size == expected + (2,)
        assert torch.equal(out["n", "z"], td["n", "z"][norm])

    @settings(max_examples=60, deadline=None)
    @given(_batch_and_index())
    def test_empty_tensordict(self, case: tuple[tuple[int, ...], Any]) -> None:
        batch, index = case
        assert TensorDict({}, list(batch))[index].batch_size == torch.empty(batch)[index].shape

    @settings(max_examples=80, deadline=None)
    @given(_batch_and_index(basic_only=True))
    def test_basic_indexing_is_a_view(self, case: tuple[tuple[int, ...], Any]) -> None:
        batch, index = case
        td = _indexing_td(batch)
        out = td[index]
        assert _same_storage(out["x"], td["x"]) and _same_storage(out["n", "z"], td["n", "z"])

    @settings(max_examples=80, deadline=None)
    @given(_batch_and_index())
    def test_setitem_scalar_matches_leaves(self, case: tuple[tuple[int, ...], Any]) -> None:
        batch, index = case
        td = _indexing_td(batch)
        expected = {k: v.clone() for k, v in td.items(include_nested=True, leaves_only=True)}
        norm = _normalize(index, len(batch))
        for value in expected.values():
            value[norm] = -1
        td[index] = -1
        for key, value in expected.items():
            assert torch.equal(td[key], value), key

    def test_ellipsis_means_batch_dims(self) -> None:
        x = torch.arange(60.0).reshape(4, 3, 5)
        td = TensorDict({"x": x}, [4, 3])
        assert torch.equal(td[..., 0]["x"], x[:, 0])
        assert td[..., 0].batch_size == torch.Size([4])
        assert torch.equal(td[0, ...]["x"], x[0])
        assert torch.equal(td[..., 1, 2]["x"], x[1, 2])
        assert td[...]["x"] is x and td[...].batch_size == td.batch_size
        with pytest.raises(IndexError, match="single ellipsis"):
            td[..., 0, ...]

    def test_int(self) -> None:
        td = _td((4, 3))
        assert torch.equal(td[-1]["a"], td["a"][3]) and td[-1].batch_size == torch.Size([3])
        assert td[1]["b"].batch_size == torch.Size([3])
        for bad in (4, -5):
            with pytest.raises(IndexError):
                td[bad]
        with pytest.raises(DimError, match="out of bounds"):
            TensorDict({}, [4])[4]

    def test_slice(self) -> None:
        td = _td((5,))
        assert torch.equal(td[1::2]["a"], td["a"][1::2]) and td[1::2].batch_size == torch.Size([2])
        assert td[3:1].batch_size == torch.Size([0]) and td[3:1]["a"].shape == (0, 3)
        assert TensorDict({}, [5])[1:10:3].batch_size == torch.Size([2])
        only_nested = TensorDict({"n": {"z": torch.zeros(5, 2)}}, [5, 2])
        assert only_nested[1:4].batch_size == torch.Size([3, 2])  # no tensor to read it off
        assert only_nested[1:4]["n"].batch_size == torch.Size([3, 2])
        for bad in (slice(None, None, -1), slice(None, None, 0)):
            with pytest.raises(ValueError):
                td[bad]
        with pytest.raises(ValueError):
            _td((5, 2))[:, ::-1]

    def test_list_and_tensor(self) -> None:
        td = _td((4, 3))
        out = td[[0, 2, 2]]
        assert out.batch_size == torch.Size([3, 3]) and torch.equal(out["a"], td["a"][[0, 2, 2]])
        out = td[torch.tensor([3, 0])]
        assert torch.equal(out["b", "d"], td["b", "d"][torch.tensor([3, 0])])
        assert not _same_storage(out["a"], td["a"])

    def test_bool_mask(self) -> None:
        td = _td((4, 3))
        mask = torch.tensor([True, False, True, True])
        out = td[mask]
        assert out.batch_size == torch.Size([3, 3]) and torch.equal(out["a"], td["a"][mask])
        assert torch.equal(out["b", "c"], td["b", "c"][mask])
        full = td["b", "c"] % 2 == 0
        out = td[full]
        assert out.batch_size == torch.Size([int(full.sum())])
        assert torch.equal(out["a"], td["a"][full]) and torch.equal(
            out["b", "d"], td["b", "d"][full]
        )

    def test_bool_mask_wrong_length(self) -> None:
        td = _td((4, 3))
        with pytest.raises(IndexError, match=r"\[3\].*4"):
            td[torch.tensor([True, False, True])]
        with pytest.raises(IndexError):
            td[torch.ones(4, 2, dtype=torch.bool)]
        with pytest.raises(IndexError, match=r"\[3\].*4"):
            TensorDict({}, [4])[torch.tensor([True, False, True])]

    def test_none(self) -> None:
        td = _td((4,))
        assert td[None].batch_size == torch.Size([1, 4])
        assert torch.equal(td[None]["a"], td["a"][None])
        assert td[:, None].batch_size == torch.Size([4, 1])
        assert td[:, None]["a"].shape == (4, 1, 3)

    @pytest.mark.parametrize("index", [(0, 0, 0), (slice(None),) * 3, (0, ..., 0, 0)])
    def test_too_many_indices(self, index: Any) -> None:
        with pytest.raises(DimError, match="too many indices") as info:
            _td((4, 3))[index]
        assert isinstance(info.value, IndexError)

    @pytest.mark.parametrize(
        "index", [0, slice(None), [0], torch.tensor([0]), torch.tensor([True])]
    )
    def test_no_batch_dims(self, index: Any) -> None:
        td = TensorDict({"a": torch.zeros(3)})
        with pytest.raises(DimError):
            td[index]
        with pytest.raises(DimError):
            TensorDict()[index]

    def test_result_is_unlocked_and_keeps_device(self) -> None:
        out = TensorDict({"a": torch.zeros(4)}, [4], device="cpu", lock=True)[1:]
        assert out.device == torch.device("cpu") and not out.is_locked


class TestSetItemIndex:
    def test_from_tensordict(self) -> None:
        td = _td((4, 3))
        a = td["a"]
        src = TensorDict({"a": torch.ones(2, 3, 3), "b": {"c": torch.full((2, 3), 9)}}, [2, 3])
        td[1:3] = src
        assert td["a"] is a and torch.equal(a[1:3], torch.ones(2, 3, 3))
        assert torch.equal(td["b", "c"][1:3], torch.full((2, 3), 9))
        assert td["b", "c"][0].tolist() == [0, 1, 2]

    def test_from_dict(self) -> None:
        td = _td()
        td[torch.tensor([0, 3])] = {"a": torch.ones(2, 3), ("b", "d"): torch.ones(2, 2)}
        assert torch.equal(td["a"][[0, 3]], torch.ones(2, 3))
        assert torch.equal(td["b", "d"][[0, 3]], torch.ones(2, 2))
        assert torch.equal(td["a"][1], torch.tensor([3.0, 4.0, 5.0]))

    def test_tensor_lines_up_with_each_entrys_last_dims(self) -> None:
        """As the peer (and torch's ``td[key][0] = t``): the tensor is written into each
        entry as torch writes it; one entry that refuses it leaves every entry as it was."""
        td = TensorDict({"a": torch.zeros(4, 3, 3), "c": torch.zeros(4, 3)}, [4, 3])
        td[0] = torch.tensor([10.0, 20.0, 30.0])
        assert td["a"][0].tolist() == [[10.0, 20.0, 30.0]] * 3
        assert td["c"][0].tolist() == [10.0, 20.0, 30.0] and td["a"][1:].eq(0).all()
        before = TensorDict({"a": torch.zeros(4, 3, 3), "b": {"d": torch.zeros(4, 3, 2)}}, [4, 3])
        td = before.clone()
        with pytest.raises(BatchSizeError, match=r"'b', 'd'.*\[4, 3, 2\].*value\[\.\.\., None\]"):
            td[0] = torch.tensor([10.0, 20.0, 30.0])  # b.d selects [3, 2]: the peer raises
        assert (td == before).all()  # checked before writing: a unchanged
        td[0] = torch.tensor([10.0, 20.0, 30.0])[..., None]  # the fix the message names
        assert td["a"][0].tolist() == [[10.0] * 3, [20.0] * 3, [30.0] * 3]
        assert td["b", "d"][0].tolist() == [[10.0] * 2, [20.0] * 2, [30.0] * 2]

    def test_scalar_and_mask(self) -> None:
        td = _td()
        mask = torch.tensor([True, False, False, True])
        td[mask] = 0
        assert td["a"][mask].eq(0).all() and td["a"][~mask].ne(0).any()
        assert td["b", "c"].tolist() == [0, 1, 2, 0]
        td[...] = 1.5
        assert td["a"].eq(1.5).all() and td["b", "c"].eq(1).all()

    def test_preallocates_missing_keys(self) -> None:
        td = _td((4, 3))
        td[1] = {"new": torch.ones(3, 2), "nn": {"m": torch.full((3,), 7)}}
        assert td["new"].shape == (4, 3, 2) and td["new"].dtype is torch.float32
        assert torch.equal(td["new"][1], torch.ones(3, 2)) and td["new"][0].eq(0).all()
        assert td["nn"].batch_size == torch.Size([4, 3])
        assert td["nn", "m"].dtype is torch.int64 and td["nn", "m"].tolist()[1] == [7, 7, 7]
        td[:, 0] = TensorDict({"other": torch.ones(4, 5)}, [4])
        assert td["other"].shape == (4, 3, 5) and td["other"][:, 0].eq(1).all()
        assert td["other"][:, 1:].eq(0).all()

    def test_nested_with_extra_batch_dims(self) -> None:
        td = TensorDict({"n": TensorDict({"z": torch.zeros(4, 2, 3)}, [4, 2])}, [4])
        td[1] = TensorDict({"n": TensorDict({"z": torch.ones(2, 3)}, [2])}, [])
        assert td["n", "z"][1].eq(1).all() and td["n", "z"][0].eq(0).all()
        td[2] = torch.tensor(5.0)
        assert td["n", "z"][2].eq(5).all()
        td[3] = {"n": {"z": torch.full((2, 3), 3.0)}}
        assert td["n", "z"][3].eq(3).all()

    def test_shape_mismatch_names_key(self) -> None:
        td = _td()
        before = td["a"].clone()
        with pytest.raises(BatchSizeError, match=r"'a'.*\[4, 3\]"):
            td[0:2] = TensorDict({"a": torch.ones(2, 5)}, [2])
        with pytest.raises(BatchSizeError, match="'a'"):
            td[0:2] = {"a": torch.ones(3, 3)}
        assert torch.equal(td["a"], before)

    def test_source_batch_that_does_not_broadcast_names_both_batch_sizes(self) -> None:
        td = TensorDict({"a": torch.zeros(3, 4, 5), "b": {"c": torch.zeros(3, 4)}}, [3, 4])
        with pytest.raises(
            BatchSizeError,
            match=r"the indexed destination TensorDict batch size is \[3, 2\], and the "
            r"source's batch size \[3, 4\] does not broadcast",
        ):
            td[:, [1, 2]] = td.clone()
        with pytest.raises(BatchSizeError, match=r"destination TensorDict batch size is \[2, 4\]"):
            td[:2] = TensorDict({"a": torch.ones(3, 5)}, [3])
        td[:2] = TensorDict({"a": torch.ones(4, 5)}, [4])  # broadcast over the indexed batch
        assert td["a"][:2].eq(1).all() and td["a"][2].eq(0).all()

    def test_bad_indices(self) -> None:
        td = TensorDict({"a": torch.zeros(3)})
        for index in (0, slice(None), torch.tensor([0]), (0, 0)):
            with pytest.raises(DimError):
                td[index] = 1.0
        with pytest.raises(DimError, match="too many"):
            _td()[0, 0] = 1.0


class TestLock:
    def test_forbidden_operations(self) -> None:
        td = _td().lock_()
        assert td.is_locked and td["b"].is_locked
        snapshot = dict(td.items(include_nested=True))
        forbidden = [
            lambda: td.set("x", torch.zeros(4)),
            lambda: td.set("a", torch.zeros(4, 3)),
            lambda: td.__setitem__("x", torch.zeros(4)),
            lambda: td.__setitem__(("b", "x"), torch.zeros(4)),
            lambda: td.set(("new", "x"), torch.zeros(4)),
            lambda: td.pop("a"),
            lambda: td.del_(("b", "c")),
            lambda: td.__delitem__("a"),
            lambda: td.rename_key_("a", "z"),
            lambda: td.update({"x": torch.zeros(4)}),
            lambda: td["b"].set("x", torch.zeros(4)),
            lambda: td.__setitem__(0, {"x": torch.zeros(())}),
        ]
        for op in forbidden:
            with pytest.raises(LockedError, match="locked") as info:
                op()
            assert isinstance(info.value, RuntimeError)
        assert dict(td.items(include_nested=True)) == snapshot
        assert td.batch_size == torch.Size([4])
        # as in the peer: the batch size of a locked TensorDict may change
        td.batch_size = []
        assert td.batch_size == torch.Size([]) and td.is_locked

    def test_in_place_writes_allowed(self) -> None:
        td = _td().lock_()
        a = td["a"]
        td.set_("a", torch.zeros(4, 3))
        td[1:3] = 5.0
        td[0] = {"a": torch.full((3,), 2.0)}
        td.set("a", torch.ones(4, 3), inplace=True)
        td.update({"b": {"d": torch.ones(4, 2)}}, inplace=True)
        assert td["a"] is a and a.eq(1).all() and td["b", "d"].eq(1).all()

    def test_unlock_propagates(self) -> None:
        td = _td().lock_()
        assert td.unlock_() is td
        assert not td.is_locked and not td["b"].is_locked
        td["x"] = torch.zeros(4)

    def test_context_managers_restore(self) -> None:
        td = _td()
        with td.lock_() as same:
            assert same is td and td.is_locked and td["b"].is_locked
            with td.unlock_():
                assert not td.is_locked and not td["b"].is_locked
                td["x"] = torch.zeros(4)
                with td.lock_():
                    assert td.is_locked
                assert not td.is_locked
            assert td.is_locked and td["b"].is_locked
        assert not td.is_locked and not td["b"].is_locked

    def test_context_restores_after_exception(self) -> None:
        td = _td().lock_()
        with pytest.raises(ZeroDivisionError):
            with td.unlock_():
                assert not td.is_locked
                raise ZeroDivisionError
        assert td.is_locked and td["b"].is_locked

    def test_to_locks_its_new_tree_as_the_root_is(self) -> None:
        """Found by the differential fuzzer (program 11,501,179, six families --length 8):
        a nested collection kept its own lock in a ``to`` result (and the one already on
        the target device was the source's node); the peer's ``to`` rebuilds every node,
        locked when the root is."""
        for moved in (lambda td: td.to(torch.uint8), lambda td: td.to("cpu"), _cpu_f64):
            nested = TensorDict(c=torch.ones(2), batch_size=[2], device="cpu")
            td = TensorDict(a=torch.zeros(2), b=nested, batch_size=[2])
            nested.lock_()
            out = moved(td)
            assert not out.is_locked and not out["b"].is_locked and out["b"] is not nested
            out["b", "x"] = torch.zeros(2)  # the new node takes entries, the source's not
            assert nested.is_locked and "x" not in nested.keys()
            locked = moved(td.lock_())
            assert locked.is_locked and locked["b"].is_locked and locked["b"] is not nested
            td.unlock_()

    def test_lock_inside_already_locked(self) -> None:
        td = _td().lock_()
        with td.lock_():
            assert td.is_locked
        assert td.is_locked
        td.unlock_()
        with td.unlock_():
            assert not td.is_locked
        assert not td.is_locked


class TestPickleCopy:
    def test_round_trip(self) -> None:
        td = TensorDict({"a": torch.arange(4.0), "b": {"c": torch.ones(4, 2)}}, [4], device="cpu")
        td.lock_()
        out = pickle.loads(pickle.dumps(td))
        assert type(out) is TensorDict and out.batch_size == torch.Size([4])
        assert out.device == torch.device("cpu") and out["b"].device == torch.device("cpu")
        assert out.is_locked and out["b"].is_locked
        assert torch.equal(out["a"], td["a"]) and torch.equal(out["b", "c"], td["b", "c"])
        assert type(out["b"]) is TensorDict and out["b"].batch_size == torch.Size([4])

    def test_round_trip_unlocked_no_device(self) -> None:
        out = pickle.loads(pickle.dumps(_td((2, 3))))
        assert out.device is None and not out.is_locked and out.batch_size == torch.Size([2, 3])
        out["x"] = torch.zeros(2, 3)

    def test_copy_shares_leaves_not_dict(self) -> None:
        td = _td()
        out = copy.copy(td)
        assert out is not td and out["a"] is td["a"] and out.batch_size == td.batch_size
        out["x"] = torch.zeros(4)
        del out["a"]
        assert set(td.keys()) == {"a", "b"}

    def test_deepcopy(self) -> None:
        td = _td()
        out = copy.deepcopy(td)
        assert torch.equal(out["a"], td["a"]) and not _same_storage(out["a"], td["a"])
        assert out["b"] is not td["b"] and not _same_storage(out["b", "c"], td["b", "c"])
        assert out.batch_size == td.batch_size and out["b"].batch_size == td.batch_size

    def test_memmap_leaves_pickle_as_file_reference(self, tmp_path: Any) -> None:
        data = torch.arange(250_000, dtype=torch.float32).reshape(1000, 250)
        mm = MemoryMappedTensor.from_tensor(data, filename=tmp_path / "x")
        td = TensorDict({"x": mm, "n": {"y": mm[:, 0]}}, [1000])
        blob = pickle.dumps(td)
        assert len(blob) < 10_000
        out = pickle.loads(blob)
        assert isinstance(out["x"], MemoryMappedTensor)
        assert out["x"].filename == mm.filename == str(tmp_path / "x")
        assert torch.equal(out["x"], data) and torch.equal(out["n", "y"], data[:, 0])
        out["x"][0, 0] = -1.0  # same file, same pages
        assert mm[0, 0].item() == -1.0


def _weights_only_round_trip(obj: Any) -> Any:
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=True)


class _Reduced:
    """Pickles as ``fn(*args)``: what an older tclass, or a crafted file, holds."""

    def __init__(self, fn: Any, *args: Any) -> None:
        self.fn, self.args = fn, args

    def __reduce__(self) -> tuple[Any, ...]:
        return (self.fn, self.args)


class TestWeightsOnlyLoad:
    """torch.load(f, weights_only=True) rebuilds collections without the user allowing
    anything (tclass puts its rebuild functions on torch's allowlist when imported)."""

    def test_tensordicts_nested_named_locked_with_python_values(self) -> None:
        td = TensorDict(
            {
                "a": torch.arange(6.0).reshape(3, 2),
                "b": {"c": torch.tensor([True, False, True]), "s": "hello"},
                "meta": NonTensorData({"k": [1, 2.5, None, "q"]}, batch_size=[3]),
                "per_row": NonTensorStack("x", "y", "z"),
                "table": UnbatchedTensor(torch.ones(5)),
            },
            [3],
            names=["t"],
            device="cpu",
        ).lock_()
        out = _weights_only_round_trip(td)
        assert type(out) is TensorDict and out.batch_size == (3,) and out.names == ["t"]
        assert out.is_locked and out.device == torch.device("cpu")
        assert torch.equal(out["a"], td["a"]) and torch.equal(out["b", "c"], td["b", "c"])
        assert out["b", "s"] == "hello" and out["meta"] == {"k": [1, 2.5, None, "q"]}
        assert out["per_row"] == ["x", "y", "z"] and type(out.get("per_row")) is NonTensorStack
        assert type(out["table"]) is UnbatchedTensor and out["table"].shape == (5,)

    def test_lazy_stacks_and_consolidated_collections(self) -> None:
        lazy = tclass.lazy_stack([TensorDict(a=torch.zeros(2)), TensorDict(a=torch.ones(3))])
        out = _weights_only_round_trip(TensorDict(stack=lazy, batch_size=[2]))
        assert type(out["stack"]) is tclass.LazyStackedTensorDict
        assert [m["a"].tolist() for m in out["stack"].tensordicts] == [[0.0, 0.0], [1.0] * 3]
        packed = _weights_only_round_trip(_td().consolidate())
        assert (packed == _td()).all() and packed.batch_size == (4,)

    def test_what_names_files_or_code_is_not_allowed(self, tmp_path: Any) -> None:
        allowed = set(torch.serialization.get_safe_globals())
        assert TensorDict in allowed and MemoryMappedTensor not in allowed
        with pytest.raises(pickle.UnpicklingError, match="MemoryMappedTensor|_rebuild_from_file"):
            _weights_only_round_trip(_td().memmap(tmp_path / "td"))  # a file reference

    def test_a_crafted_pickle_builds_only_collections(self) -> None:
        rebuild = _td().__reduce__()[0]
        crafted = _Reduced(rebuild, torch.Size, {}, torch.Size([]), None, False, None)
        with pytest.raises(errors.PickleRefusedError, match="not a TensorDict"):
            pickle.loads(pickle.dumps(crafted))
        with pytest.raises(errors.PickleRefusedError, match="not a TensorDict"):
            _weights_only_round_trip(crafted)
        stuffed = _Reduced(rebuild, TensorDict, {"a": "text"}, torch.Size([]), None, False, None)
        with pytest.raises(errors.PickleRefusedError, match="not tensors"):
            pickle.loads(pickle.dumps(stuffed))
        values = NonTensorStack("a", "b").__reduce__()
        short = _Reduced(values[0], ["a"], torch.Size([2]), None, None)
        with pytest.raises(errors.PickleRefusedError, match="one value per element"):
            pickle.loads(pickle.dumps(short))

    def test_pickles_of_python_values_from_older_versions_still_load(self) -> None:
        older = _Reduced(NonTensorData._make, "v", torch.Size([2]), None)  # via getattr
        node = pickle.loads(pickle.dumps(older))
        assert type(node) is NonTensorData and node.data == "v" and node.batch_size == (2,)


class TestTupleIndexVersusKey:
    def test_a_tuple_of_ints_first_is_an_advanced_index_as_for_tensors(self) -> None:
        a = torch.arange(12).reshape(4, 3)
        td = TensorDict({"a": a}, [4, 3])
        assert torch.equal(td[(0, 1), 0]["a"], a[(0, 1), 0])

    def test_nested_tuples_of_strings_are_keys(self) -> None:
        td = TensorDict({"n": {"x": torch.zeros(4)}}, [4])
        assert td[("n", ("x",))] is td["n", "x"]
        td[(("n",), "y")] = torch.ones(4)
        assert torch.equal(td["n", "y"], torch.ones(4))


class TestPeerKeywords:
    """Keywords of the peer's constructor are keywords here too, never entries."""

    def test_names_are_stored_and_none_means_unnamed(self) -> None:
        assert TensorDict({"a": torch.zeros(4)}, [4], names=["time"]).names == ["time"]
        td = TensorDict({"a": torch.zeros(4)}, [4], names=[None])
        assert list(td.keys()) == ["a"] and td.names == [None]

    def test_non_blocking_is_accepted_and_not_an_entry(self) -> None:
        td = TensorDict({"a": torch.zeros(4)}, [4], device="meta", non_blocking=True)
        assert list(td.keys()) == ["a"] and td["a"].device.type == "meta"


def test_select_groups_nested_keys_as_the_peer() -> None:
    """Found by the differential fuzzer: keys come in the order their first part is
    named; a nested key selects within an entry also selected whole."""
    td = TensorDict({"a": torch.zeros(2), "n": {"b": torch.zeros(2), "c": torch.zeros(2)}}, [2])
    assert list(td.select(("n", "c"), "a", ("n", "b")).keys(True)) == [
        ("n", "c"), ("n", "b"), "n", "a"
    ]  # fmt: skip
    assert list(td.select("n", ("n", "b")).keys(True)) == [("n", "b"), "n"]


def test_set__of_a_tensor_into_a_nested_collection_is_a_value_error() -> None:
    """Found by the differential fuzzer: the peer raises a ValueError (not an
    AttributeError from inside)."""
    td = TensorDict({"n": {"v": torch.zeros(4)}}, [4])
    with pytest.raises(ValueError, match="'n' is a nested collection"):
        td.set_("n", torch.zeros(4, 1))
    td.set_("n", {"v": torch.ones(4)})
    assert torch.equal(td["n", "v"], torch.ones(4))


def test_rename_key_to_itself_and_on_a_locked_td() -> None:
    """Found by the differential fuzzer: renaming a key to itself keeps its place; a
    locked TensorDict refuses before looking the key up (as the peer)."""
    td = TensorDict({"d": torch.zeros(4), "a": torch.zeros(4)}, [4])
    assert list(td.rename_key_("d", "d").keys()) == ["d", "a"]
    with pytest.raises(KeyError):
        td.rename_key_("zz", "zz")
    with pytest.raises(LockedError):
        td.lock_().rename_key_(("zz", "a"), "renamed")


def test_rename_key_of_a_missing_key_names_the_rename_not_a_pop() -> None:
    """A missing key is a KeyNotFoundError listing the keys (it spoke of a ``pop``, the
    step it failed in); a key through a tensor stays a KeyThroughTensorError (as the peer)."""
    td = TensorDict({"a": torch.zeros(3), "n": {"b": torch.zeros(3)}}, [3])
    for key in ("zz", ("n", "zz")):
        with pytest.raises(KeyNotFoundError, match=r"not found in TensorDict with keys") as info:
            td.rename_key_(key, "y")
        assert "pop" not in str(info.value)
    with pytest.raises(tclass.errors.KeyThroughTensorError):
        td.rename_key_(("a", "x"), "y")
    for old, new in ((("a", "x"), "a"), (("a", "x"), ("a", "x")), (("a", "x", "y"), "a")):
        # onto the tensor it passes through, or onto itself: the peer's ValueError too
        with pytest.raises(tclass.errors.KeyThroughTensorError) as through:
            td.rename_key_(old, new)
        assert isinstance(through.value, ValueError) and isinstance(through.value, KeyError)
    assert set(td.keys(True)) == {"a", "n", ("n", "b")}  # nothing moved


def test_rename_key_onto_the_node_that_holds_it_replaces_that_node_whole() -> None:
    """``rename_key_(("m", "d"), "m")`` replaces node ``m`` with its entry ``d``, and
    leaves ``m`` as it was for what else holds it (a ``select`` result's source), as the
    peer; a missing entry is a KeyError."""
    source = TensorDict({"m": {"c": torch.zeros(3), "d": torch.ones(3)}}, [3])
    selected = source.select("m")
    assert selected.rename_key_(("m", "d"), "m") is selected
    assert list(selected.keys(True)) == ["m"] and selected["m"].tolist() == [1.0] * 3
    assert list(source["m"].keys()) == ["c", "d"]
    with pytest.raises(KeyNotFoundError):
        source.rename_key_(("m", "zz"), "m")
    assert list(source["m"].keys()) == ["c", "d"]


def test_del_on_a_locked_collection_refuses_before_looking_the_key_up() -> None:
    """Found by the differential fuzzer: as the peer, ``del_`` (and ``del td[key]``) of a
    locked TensorDict or lazy stack is a LockedError even for a missing key; ``pop``
    looks the key up first, as the peer's."""
    td = TensorDict({"a": torch.zeros(3)}, [3]).lock_()
    stack = LazyStackedTensorDict(td.clone(), td.clone()).lock_()
    for remove in (lambda: td.del_(("n", "zz")), lambda: stack.del_("zz")):
        with pytest.raises(LockedError):
            remove()
    with pytest.raises(LockedError):
        del td["zz"]
    with pytest.raises(KeyNotFoundError):
        td.pop("zz")
    with pytest.raises(LockedError):
        td.select("zz", inplace=True)  # select in place too


def test_set__of_a_python_value_into_a_tensor_is_a_value_error() -> None:
    """Found by the differential fuzzer: the peer raises a ValueError."""
    td = TensorDict({"d": torch.zeros(4)}, [4])
    with pytest.raises(ValueError, match="a str cannot be copied into the tensor 'd'"):
        td.set_("d", "x y")


def test_an_index_out_of_range_is_a_dim_error_with_or_without_entries() -> None:
    """Found by the differential fuzzer: the peer raises RuntimeError where torch raises
    IndexError (a write whose value does not fit, a broadcast of masks); DimError is
    both, for reads and writes, of TensorDicts with or without entries and lazy stacks."""
    empty = TensorDict({}, [0, 1])
    full = TensorDict({"a": torch.zeros(0)}, [0])
    stack = LazyStackedTensorDict(*[TensorDict({"a": torch.zeros(1, 2)}, [1])] * 3)[:, None]
    for call in (
        lambda: empty[[0]],
        lambda: full.__setitem__([0, 0], full.clone()),
        lambda: stack[torch.ones(3, 1, 1, dtype=torch.bool), torch.zeros(1, dtype=torch.bool)],
    ):
        with pytest.raises(DimError) as info:
            call()
        assert isinstance(info.value, IndexError) and isinstance(info.value, RuntimeError)


def test_set__into_a_view_of_a_parameter_says_autograd_refuses() -> None:
    """The peer raises a RuntimeError, as autograd does: the message says why (not a
    shape mismatch) and how to write (under ``torch.no_grad()``)."""
    weight = torch.nn.Parameter(torch.zeros(3, 2))
    td = TensorDict({"w": weight.transpose(0, 1)}, [2])
    with pytest.raises(InPlaceWriteError, match="'w'.*requires grad.*torch.no_grad") as info:
        td.set_("w", torch.ones(2, 3))
    assert isinstance(info.value, RuntimeError) and "shape" not in str(info.value)
    with pytest.raises(BatchSizeError, match=r"shape \[4\]"):
        td.set_("w", torch.ones(4))
    with torch.no_grad():
        td.set_("w", torch.ones(2, 3))
    assert bool((weight == 1).all())


def test_exclude_of_no_key_is_a_copy() -> None:
    """As the peer: ``exclude()`` is ``copy()``, whose nested TensorDicts are new objects,
    unlocked; with keys (even missing ones) the nested TensorDicts are shared, locked."""
    td = TensorDict({"a": torch.zeros(3), "n": {"b": torch.zeros(3)}}, [3]).lock_()
    out = td.exclude()
    assert not out.is_locked and not out["n"].is_locked
    assert out["n"] is not td["n"] and out["a"] is td["a"]
    assert td["n"].is_locked
    kept = td.exclude("missing")
    assert kept["n"] is td["n"] and kept["n"].is_locked
    assert td.exclude(inplace=True) is td


def test_set__keeps_an_entry_s_kind_and_keys() -> None:
    """Found by the differential fuzzer, as the peer: ``set_`` into a Python value takes a
    Python value (a tensor or a collection is an ``InPlaceWriteError``, a ``ValueError``
    and ``RuntimeError``), and ``set_`` of a dict into a nested collection writes its
    existing keys only (a new one is a ``KeyNotFoundError``)."""
    td = TensorDict({"v": "a", "n": {"d": torch.zeros(2)}}, [2])
    for value in (torch.zeros(2), TensorDict({}, [2]), {"q": torch.ones(2)}):
        with pytest.raises(InPlaceWriteError, match="'v' holds a Python value") as info:
            td.set_("v", value)
        assert isinstance(info.value, ValueError) and isinstance(info.value, RuntimeError)
    assert td.set_("v", "b")["v"] == "b"
    for number in (3, 4.5, True):  # a Python value still (torch would make it a tensor)
        assert td.set_("v", number)["v"] == number and td.update_({"v": number})["v"] == number
        assert type(td.get("v")) is type(TensorDict({"v": "a"}, [2]).get("v"))
    with pytest.raises(KeyNotFoundError, match="'q'"):
        td.set_("n", {"q": torch.ones(2)})
    assert list(td["n"].keys()) == ["d"]
    td.set_("n", {"d": torch.ones(2)})
    assert td["n", "d"].tolist() == [1.0, 1.0]


def test_rename_needs_names() -> None:
    """As the peer: ``rename()`` with neither names nor old=new pairs is an error."""
    td = TensorDict({}, [2], names=["i"])
    for call in (td.rename, td.rename_):
        with pytest.raises(DimNameError, match="no names given") as info:
            call()
        assert isinstance(info.value, ValueError)
    assert td.rename(None).names == [None] and td.rename(i="j").names == ["j"]


def test_rows_of_a_view_of_a_saved_collection_without_tensors_stay_locked(
    tmp_path: Any,
) -> None:
    # Nothing tells that its data is mapped but the folder: a view at an index that
    # keeps the data pointer stays locked, and so do its own rows (as the source's).
    saved = TensorDict({"n": TensorDict({}, [2])}, [2]).memmap(tmp_path / "w")
    assert saved.is_locked and saved[0].is_locked
    for view in (saved[None, ...], saved[None], saved[:, None]):
        assert view.is_locked
        assert view[0].is_locked and view[:, 0].is_locked and view[0]["n"].is_locked
        assert all(row.is_locked for row in view.unbind(0))
    # The rows of a collection locked by hand are not locked.
    plain = TensorDict({}, [2]).lock_()
    assert not plain[None].is_locked and not plain[None][0].is_locked


def test_a_locked_update_that_replaces_nothing_is_accepted() -> None:
    """An update giving a nested collection no entries writes nothing: a locked
    TensorDict takes it (as it takes its own entries written back); one that adds or
    replaces an entry is refused."""
    td = tclass.TensorDict({"m": {"a": torch.zeros(2)}}, [2]).lock_()
    nested = td["m"]
    assert td.update({"m": tclass.TensorDict({}, [2])}) is td and td["m"] is nested
    with pytest.raises(tclass.errors.LockedError):
        td.update({"m": {"b": torch.ones(2)}})
    assert list(td.keys(True, True)) == [("m", "a")]


def test_select_in_place_keeps_nested_collections_and_prunes_them() -> None:
    """Found by the differential fuzzer: ``select(..., inplace=True)`` with nested keys
    replaced the nested TensorDicts by new ones; as the peer, they are pruned in place
    (what shares them sees it), after every key is checked."""
    td = tclass.TensorDict(
        {"d": torch.zeros(1), "n": {"c": torch.ones(1), "b": torch.ones(1)}}, [1]
    )
    nested = td["n"]
    assert td.select(("n", "c"), "zz", "n", strict=False, inplace=True) is td
    assert td["n"] is nested and list(nested.keys()) == ["c"] and list(td.keys()) == ["n"]
    with pytest.raises(KeyError):
        td.select(("n", "missing"), inplace=True)
    assert list(nested.keys()) == ["c"]


def test_a_tensordict_takes_no_new_attributes() -> None:
    # README "A TensorDict takes no new attributes": the peer's `td.a = t` stores a Python
    # attribute and leaves the entry `a` as it was; tclass refuses, entries stay as set.
    td = TensorDict({"a": torch.zeros(2)}, [2])
    with pytest.raises(AttributeError, match="'foo'"):
        td.foo = torch.ones(2)  # type: ignore[attr-defined]
    with pytest.raises(AttributeError):
        td.a = torch.ones(2)  # type: ignore[attr-defined]
    assert list(td.keys()) == ["a"] and not td["a"].any()

    class Tagged(TensorDict):
        pass

    tagged = Tagged({"a": torch.zeros(2)}, [2])
    tagged.source = "env-3"  # a subclass takes attributes, as any Python class
    assert tagged.source == "env-3" and list(tagged.keys()) == ["a"]


def _cpu_f64(td: TensorDict) -> TensorDict:
    return td.to("cpu", torch.float64)
