"""The peer's remaining entry-level methods, on TensorDicts, lazy stacks and records.

Keys (``flatten_keys``, ``unflatten_keys``, ``keys(is_leaf=, sort=)``, ``sorted_keys``,
``split_keys``), reads and writes at an index (``get_at``, ``set_at_``, ``update_``,
``update_at_``, ``setdefault``), facts (``bytes``, ``data_ptr``, ``depth``,
``is_empty``), inference (``auto_batch_size_``, ``auto_device_``), filters
(``filter_non_tensor_data``, ``filter_empty_``), new collections shaped like this one
(``new_empty`` ... ``new_tensor``, ``empty(recurse=)``, ``copy``), conversions
(``tolist``, ``to_struct_array``) and the record spellings of ``select`` / ``exclude`` /
``pop`` / ``del_`` / ``rename_key_``. Results are checked against torch on the leaves,
and against the peer when it is installed.
"""

from __future__ import annotations

import warnings
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
    NonTensorData,
    NonTensorStack,
    TensorClass,
    TensorDict,
    errors,
)

from collection_kinds import COMPARED, assert_as_the_peer  # noqa: E402
from strategies import SETTINGS, leaf_items, make_values, tensordicts  # noqa: E402


class Inner(TensorClass):
    x: torch.Tensor


class Frame(TensorClass):
    obs: torch.Tensor
    reward: torch.Tensor | None = None
    inner: Inner | None = None
    env: str = "pong"


class FrozenFrame(TensorClass, frozen=True):
    obs: torch.Tensor
    reward: torch.Tensor | None = None


def _td() -> TensorDict:
    return TensorDict(
        {
            "a": make_values([2, 3]),
            "b": TensorDict({"c": make_values([2, 3, 4]), "d": make_values([2, 3])}, [2, 3]),
        },
        [2, 3],
    )


def _frame() -> Frame:
    return Frame(
        obs=make_values([3, 2]),
        reward=make_values([3]),
        inner=Inner(x=make_values([3]), batch_size=[3]),
        batch_size=[3],
    )


# --- keys --------------------------------------------------------------------------------


def test_flatten_keys_joins_nested_keys() -> None:
    td = _td()
    flat = td.flatten_keys()
    assert list(flat.keys()) == ["a", "b.c", "b.d"]
    assert flat["b.c"] is td["b", "c"]  # the tensors are shared
    assert list(td.flatten_keys("/").keys()) == ["a", "b/c", "b/d"]
    assert flat.batch_size == td.batch_size


def test_unflatten_keys_is_the_inverse() -> None:
    td = _td()
    back = td.flatten_keys().unflatten_keys()
    assert (back == td).all()
    assert back["b"].batch_size == td.batch_size
    assert list(td.flatten_keys("/").unflatten_keys("/").keys(True, True)) == [
        "a",
        ("b", "c"),
        ("b", "d"),
    ]


def test_flatten_keys_inplace() -> None:
    td = _td()
    out = td.flatten_keys(inplace=True)
    assert out is td and list(td.keys()) == ["a", "b.c", "b.d"]
    assert td.unflatten_keys(inplace=True) is td
    assert list(td.keys()) == ["a", "b"]
    # as the peer: in place, the entries that were not nested keep their places and the
    # flattened ones follow (out of place, each takes its nested entry's place)
    mixed = TensorDict({"n": {"x": torch.zeros(2)}, "a": torch.zeros(2), "s": "v"}, [2])
    assert list(mixed.flatten_keys().keys()) == ["n.x", "a", "s"]
    assert list(mixed.flatten_keys(inplace=True).keys()) == ["a", "s", "n.x"]


def test_flatten_keys_refuses_a_collision() -> None:
    td = TensorDict({"b.c": torch.zeros(2), "b": {"c": torch.ones(2)}}, [2])
    with pytest.raises(errors.KeyConflictError):
        td.flatten_keys()


def test_flatten_keys_keeps_python_values() -> None:
    td = TensorDict({"b": {"s": NonTensorData("x", [2]), "c": torch.zeros(2)}}, [2])
    flat = td.flatten_keys()
    assert set(flat.keys()) == {"b.s", "b.c"}
    assert flat.get("b.s").data == "x"


def test_flatten_keys_of_a_lazy_stack() -> None:
    lazy = tclass.lazy_stack([TensorDict({"n": {"x": torch.ones(i + 1)}}, []) for i in range(2)])
    flat = lazy.flatten_keys()
    assert [m["n.x"].shape for m in flat.tensordicts] == [torch.Size([1]), torch.Size([2])]


def test_keys_is_leaf_and_sort() -> None:
    td = TensorDict({"z": torch.zeros(1), "a": {"y": torch.zeros(1), "b": torch.zeros(1)}}, [1])
    assert list(td.keys(True, True, sort=True)) == [("a", "b"), ("a", "y"), "z"]
    assert list(td.keys(True, sort=True)) == ["a", ("a", "b"), ("a", "y"), "z"]
    collections_only = list(td.keys(True, True, is_leaf=lambda cls: issubclass(cls, TensorDict)))
    assert collections_only == ["a"]
    everything = list(td.keys(True, True, is_leaf=lambda cls: True))
    assert set(everything) == {"z", "a", ("a", "y"), ("a", "b")}


def test_items_with_is_leaf_list_a_node_before_its_entries_as_without() -> None:
    # The peer's items() lists a nested node before the entries below it, is_leaf given
    # or not (its keys() lists it after them); values() follows items().
    td = TensorDict(
        {"x": {"y": torch.ones(2), "m": {"d": torch.zeros(2)}}, "z": torch.ones(2)}, [2]
    )
    nodes_and_tensors = lambda cls: issubclass(cls, (tclass.TensorDictBase, torch.Tensor))  # noqa: E731
    expected = ["x", ("x", "y"), ("x", "m"), ("x", "m", "d"), "z"]
    assert [key for key, _ in td.items(True, True, is_leaf=nodes_and_tensors)] == expected
    assert [key for key, _ in td.items(True)] == expected  # as without is_leaf
    assert [key for key, _ in td.items(True, False, is_leaf=nodes_and_tensors)] == expected
    values = list(td.values(True, True, is_leaf=nodes_and_tensors))
    assert [sorted(v.keys()) if isinstance(v, TensorDict) else v.shape for v in values] == [
        ["m", "y"],
        torch.Size([2]),
        ["d"],
        torch.Size([2]),
        torch.Size([2]),
    ]
    lazy = tclass.lazy_stack([td, td])
    assert [key for key, _ in lazy.items(True, True, is_leaf=nodes_and_tensors)] == expected
    # keys() keeps its own order; sort=True sorts both
    assert list(td.keys(True, True, is_leaf=nodes_and_tensors))[:2] == [("x", "y"), ("x", "m", "d")]
    assert [k for k, _ in td.items(True, sort=True)] == list(td.keys(True, sort=True))


def test_sorted_keys() -> None:
    td = TensorDict({"z": torch.zeros(1), "a": {"y": torch.zeros(1)}}, [1])
    assert td.sorted_keys == ["a", "z"]
    assert _frame().sorted_keys == ["env", "inner", "obs", "reward"]


def test_items_and_values_without_options_are_live_views() -> None:
    td = TensorDict({"a": torch.zeros(2), "b": {"c": torch.ones(2)}, "s": "x"}, [2])
    items, values = td.items(), td.values()
    assert len(items) == len(values) == 3
    assert [key for key, _ in items] == [key for key, _ in items] == ["a", "b", "s"]
    assert list(values)[0] is td["a"] and list(values)[1] is td["b"]
    assert ("a", td["a"]) in items and ("zz", td["a"]) not in items and td["a"] in values
    td["d"] = torch.ones(2)  # live, as dict views
    assert len(items) == len(values) == 4 and [key for key, _ in items][-1] == "d"
    assert repr(TensorDict({"a": 1}).values()) == "dict_values([tensor(1)])"
    assert repr(TensorDict({"a": 1}).items()) == "dict_items([('a', tensor(1))])"


@pytest.mark.parametrize(
    "options", [{"include_nested": True}, {"leaves_only": True}, {"sort": True}]
)
def test_items_and_values_with_options_are_generators(options: dict[str, bool]) -> None:
    td = TensorDict({"b": torch.zeros(2), "a": {"c": torch.ones(2)}}, [2])
    items, values = td.items(**options), td.values(**options)
    assert next(items)[0] in ("b", "a", ("a", "c")) and next(values) is not None
    assert not hasattr(items, "__len__") and not hasattr(values, "__len__")
    # The view and the generator agree where both apply.
    assert list(td.items(include_nested=False)) == list(td.items(False, False, sort=False))


def test_record_and_lazy_stack_items_and_values_are_views_of_their_entries() -> None:
    frame = _frame()
    assert [key for key, _ in frame.items()] == ["obs", "reward", "inner", "env"]
    assert len(frame.values()) == 4 and frame.obs in frame.values()
    lazy = LazyStackedTensorDict(_td(), _td())  # the peer's lazy stack gives generators
    assert len(lazy.items()) == 2 and [key for key, _ in lazy.items()] == ["a", "b"]
    assert list(lazy.values())[0].shape == torch.Size([2, 2, 3])


def test_items_view_lookups_give_what_its_iteration_gives() -> None:
    u = tclass.UnbatchedTensor(torch.arange(3))
    td = TensorDict({"u": u, "s": "x", "n": {"c": torch.ones(2)}}, [2])
    pairs = list(td.items())
    assert [type(value) for _, value in pairs] == [type(u), NonTensorData, TensorDict]
    assert all(pair in td.items() for pair in pairs)  # `in` reads each entry as iterated


def test_split_keys() -> None:
    td = _td()
    first, rest = td.split_keys(["a"])
    assert list(first.keys()) == ["a"] and list(rest.keys()) == ["b"]
    inner, rest = td.split_keys([("b", "c")])
    assert list(inner.keys(True, True)) == [("b", "c")]
    assert set(rest.keys(True, True)) == {"a", ("b", "d")}
    with pytest.raises(KeyError):
        td.split_keys(["nope"])
    a, rest = td.split_keys(["a", "nope"], strict=False)
    assert list(a.keys()) == ["a"]
    kept = td.clone()
    parts = kept.split_keys(["a"], ["b"], inplace=True)
    assert len(parts) == 3 and list(kept.keys()) == []


def test_split_keys_through_a_tensor() -> None:
    # a nested key through a tensor: the peer's _KeyThroughLeafError is a ValueError,
    # KeyThroughTensorError both a KeyError and a ValueError
    td = TensorDict(zz=torch.zeros(2), a=torch.ones(2), batch_size=[2])
    with pytest.raises(errors.KeyThroughTensorError, match="'zz'"):
        td.split_keys([], [("zz", "a")])
    _, part, _ = td.split_keys([], [("zz", "a")], strict=False)
    assert list(part.keys()) == []


def test_split_keys_takes_a_key_once() -> None:
    # As the peer, which moves each key out of the source: a key given again (in the same
    # set or a later one, or under a nested key it held) is missing the second time.
    td = TensorDict(d=torch.ones(2), m=TensorDict(v=torch.zeros(2), w=torch.ones(2)))
    with pytest.raises(KeyError, match="d"):
        td.split_keys(["d", ("d",)])
    with pytest.raises(KeyError, match="d"):
        td.split_keys(["d"], ["d"], inplace=True)
    assert list(td.keys()) == ["d", "m"]  # nothing moved
    first, second, rest = td.split_keys([("zz",), "d"], ["d"], strict=False)
    assert list(first.keys()) == ["d"] and list(second.keys()) == [] and "d" not in rest
    # as the peer: strict ignores default; without strict, a None default skips the key
    with pytest.raises(KeyError, match="zz"):
        td.split_keys([("m", "zz")], default=None)
    with pytest.raises(KeyError, match="zz"):
        td.split_keys(["zz"], default=torch.zeros(()))
    filled, _ = td.split_keys(["zz"], default=torch.zeros(()), strict=False)
    assert list(filled.keys()) == ["zz"]
    skipped, _ = td.split_keys(["zz"], default=None, strict=False)
    assert list(skipped.keys()) == []
    inner, rest = td.split_keys([("m", "v"), "m"], strict=False)
    assert list(inner.keys(True, True)) == [("m", "v"), ("m", "w")]
    assert list(rest.keys()) == ["d"]


def test_split_keys_of_a_locked_collection_gives_unlocked_trees() -> None:
    # As the peer: every part is a new tree, its nested collections unlocked too.
    td = _td().lock_()
    first, rest = td.split_keys([("b", "c")])
    assert not first["b"].is_locked and not rest["b"].is_locked
    assert rest["b"] is not td["b"] and td["b"].is_locked
    whole, rest = td.split_keys(["b"])
    assert not whole["b"].is_locked and whole["b"] is not td["b"]
    assert torch.equal(whole["b", "c"], td["b", "c"])


def test_frozen_records_split_and_rename_keys() -> None:
    # As the peer: neither assigns a field of this record, so a frozen one answers too.
    frozen = FrozenFrame(obs=torch.zeros(3), reward=torch.ones(3), batch_size=[3])
    obs, rest = frozen.split_keys(["obs"])
    assert type(obs) is FrozenFrame and obs.reward is None and torch.equal(obs.obs, frozen.obs)
    assert rest.obs is None and torch.equal(rest.reward, frozen.reward)
    swapped = frozen.rename_keys({"obs": "reward", "reward": "obs"})
    assert type(swapped) is FrozenFrame and swapped.is_locked
    assert swapped.obs.sum() == 3 and swapped.reward.sum() == 0 and frozen.obs.sum() == 0
    with pytest.raises(AttributeError, match="has no field 'zz'"):
        frozen.rename_keys({"obs": "zz"})
    with pytest.raises(AttributeError, match="has no field 'zz'"):
        frozen.split_keys(["zz"], default=torch.zeros(3), strict=False)


def test_split_keys_by_predicate() -> None:
    td = TensorDict(
        s=torch.zeros(10),
        v=torch.zeros(10, 3),
        nested=TensorDict(t=torch.zeros(10, 3), u=torch.zeros(10)),
        name="x",
        batch_size=[10],
    )
    seen: list[tuple[str, ...]] = []

    def vectors(key: tuple[str, ...], value: torch.Tensor) -> bool:
        seen.append(key)
        return value.ndim == 2

    vec, others, rest = td.split_keys(vectors, lambda key, value: True)
    assert seen == [("s",), ("v",), ("nested", "t"), ("nested", "u")]  # tensor leaves, tuples
    assert list(vec.keys(True, True)) == ["v", ("nested", "t")]
    assert list(others.keys(True, True)) == ["s", ("nested", "u")]
    assert list(rest.keys()) == ["name"]  # the emptied "nested" goes, as the peer
    nested, vec, rest = td.split_keys(["nested"], vectors)  # taken keys are not asked again
    assert list(vec.keys()) == ["v"] and list(rest.keys()) == ["s", "name"]
    first, rest = td.split_keys(lambda key, value: key == ("s",), inplace=True)
    assert rest is td and list(first.keys()) == ["s"] and "s" not in td.keys()


# --- reads and writes at an index -------------------------------------------------------


def test_numpy_arrays_are_written_as_set_takes_them() -> None:
    td = TensorDict({"a": torch.zeros(4, 3)}, [4])
    td.set("k", np.ones((4, 10)))
    td.set_at_("k", np.full(10, 42.0), 2)  # as the peer: arrays become tensors
    td[0] = {"k": np.full(10, 3.0)}
    stack = tclass.lazy_stack([td[0], td[1]])
    stack.set_at_("k", np.full(10, 7.0), 1)
    assert td["k"][2].eq(42).all() and td["k"][0].eq(3).all() and stack[1]["k"].eq(7).all()


def test_get_at_and_set_at_() -> None:
    td = _td()
    assert torch.equal(td.get_at("a", 1), td["a"][1])
    assert torch.equal(td.get_at(("b", "c"), (0, 2)), td["b", "c"][0, 2])
    assert td.get_at("nope", 0, "dflt") == "dflt"
    assert td.get_at("nope", 0, default=None) is None
    out = td.set_at_("a", torch.tensor([7.0, 8.0, 9.0]), 0)
    assert out is td and td["a"][0].tolist() == [7.0, 8.0, 9.0]
    with pytest.raises(KeyError):
        td.set_at_("nope", torch.zeros(3), 0)
    assert td.get_at(("b", "nope"), 0) is None and td.get_at(("nope", "c"), 0, 5) == 5
    # A nested key through a tensor is no absent entry: refused even with a default, as get
    # and the peer's get_at (tclass answered None or the default).
    for holder in (td, tclass.lazy_stack([td, td.clone()])):
        for default in ((), (5,)):
            with pytest.raises(errors.KeyThroughTensorError, match=r"\('a',\) is a tensor"):
                holder.get_at(("a", "x"), 0, *default)


def test_update_writes_in_place_only() -> None:
    td = _td()
    before = td["a"]
    new = torch.zeros(2, 3)
    assert td.update_({"a": new}) is td
    assert td["a"] is before and bool((before == 0).all())
    td.update_(a=torch.ones(2, 3))
    assert bool((before == 1).all())
    td.update_({"b": {"d": torch.full((2, 3), 5.0)}})
    assert bool((td["b", "d"] == 5).all())
    td.update_({"a": torch.zeros(2, 3), "b": {"c": torch.zeros(2, 3, 4)}}, keys_to_update=["a"])
    assert bool((td["b", "c"] != 0).any())
    with pytest.raises(KeyError):
        td.update_({"nope": torch.zeros(2, 3)})


class _Optional(TensorClass):
    y: torch.Tensor
    z: torch.Tensor | None = None


class _Holder(TensorClass):
    x: torch.Tensor
    inner: _Optional
    opt: torch.Tensor | None = None


def test_record_update_in_place_leaves_absent_fields_given_as_none() -> None:
    record = _Holder(
        x=torch.zeros(2, 3), inner=_Optional(y=torch.zeros(2), batch_size=[2]), batch_size=[2]
    )
    values = record.to_dict()  # {'x': ..., 'inner': {'y': ..., 'z': None}, 'opt': None}
    values["x"] = torch.ones(2, 3)
    values["inner"]["y"] = torch.full((2,), 2.0)
    assert record.update_(values) is record
    assert record.x.tolist() == [[1.0] * 3] * 2 and record.inner.y.tolist() == [2.0, 2.0]
    assert record.opt is None and record.inner.z is None
    assert "opt" not in record._tensordict.keys()
    with pytest.raises(ValueError, match="no field 'nope'"):
        record.update_({"nope": None})  # not a field: still refused (a ValueError, as the peer)
    with pytest.raises(KeyError):
        TensorDict({"a": torch.zeros(2)}, [2]).update_({"b": None})  # a TensorDict: as the peer


def test_update_at_writes_the_indexed_elements() -> None:
    td = _td()
    td.update_at_({"a": torch.tensor([1.0, 2.0, 3.0])}, 1)
    assert td["a"][1].tolist() == [1.0, 2.0, 3.0]
    td.update_at_(TensorDict({"a": torch.zeros(2)}, [2]), (slice(None), 0))
    assert td["a"][:, 0].tolist() == [0.0, 0.0]
    with pytest.raises(KeyError):
        td.update_at_({"nope": torch.zeros(3)}, 0)


def test_update_at_reads_an_ellipsis_over_a_nested_collections_batch_dims() -> None:
    # as the peer: rows given as a collection write a nested one as nested[idx] = rows,
    # its `...` covering the nested batch dims; a leaf of the collection reads it as is
    td = TensorDict(
        {"a": torch.zeros(2, 1), "n": TensorDict({"d": torch.zeros(2, 1, 3, 3)}, [2, 1, 3])},
        [2, 1],
    )
    index = (..., 0, None)  # on [2, 1]: dim 1; on the nested [2, 1, 3]: dim 2
    rows = TensorDict(
        {"a": torch.ones(2, 1), "n": TensorDict({"d": torch.ones(2, 1, 1, 3)}, [2, 1, 1])}, [2, 1]
    )
    td.update_at_(rows, index)
    assert td["n", "d"][:, :, 0].eq(1).all() and td["n", "d"][:, :, 1:].eq(0).all()
    assert td["a"].eq(1).all()
    flat = TensorDict({"n": TensorDict({"d": torch.zeros(2, 1, 3)}, [2, 1])}, [2])
    # rows as a mapping: each leaf reads the index as it is, as the peer's
    flat.update_at_({"n": {"d": torch.full((2, 1, 1), 2.0)}}, (..., 0, None))
    assert flat["n", "d"][..., 0].eq(2).all() and flat["n", "d"][..., 1:].eq(0).all()


def test_in_place_writes_replace_python_values() -> None:
    td = TensorDict({"a": torch.zeros(2), "env": "pong", "n": {"tag": "t"}}, [2]).lock_()
    td.update_({"env": "breakout", "n": {"tag": "u"}})  # as the peer: locked, in place
    assert td["env"] == "breakout" and td["n", "tag"] == "u"
    td.set_("env", "pong")
    assert td["env"] == "pong"
    td.set_at_("env", "q", 0)  # one element: the value becomes per element
    assert td["env"] == ["q", "pong"]
    td.update_at_({"n": {"tag": "v"}}, 1)
    assert td["n", "tag"] == ["u", "v"]


def test_setdefault() -> None:
    td = _td()
    value = torch.zeros(2, 3)
    assert td.setdefault("new", value) is value
    assert td["new"] is value
    assert td.setdefault("a", torch.ones(2, 3)) is td["a"]
    nested = td.setdefault(("q", "r"), torch.zeros(2, 3))
    assert td["q", "r"] is nested


def test_lazy_stack_writes_at_an_index_reach_the_members() -> None:
    lazy = tclass.lazy_stack([TensorDict({"a": torch.zeros(3)}, [3]) for _ in range(2)])
    lazy.set_at_("a", torch.ones(3), 1)
    assert lazy.tensordicts[1]["a"].tolist() == [1.0, 1.0, 1.0]
    lazy.update_({"a": torch.full((2, 3), 2.0)})
    assert lazy.tensordicts[0]["a"].tolist() == [2.0, 2.0, 2.0]
    assert torch.equal(lazy.get_at("a", (0, 1)), torch.tensor(2.0))


# --- facts -------------------------------------------------------------------------------


def test_bytes_counts_every_leaf_and_shared_storage_once_if_asked() -> None:
    td = _td()
    expected = sum(leaf.numel() * leaf.element_size() for _, leaf in leaf_items(td))
    assert td.bytes() == expected
    base = torch.zeros(10)
    shared = TensorDict({"a": base, "b": base}, [])
    assert shared.bytes() == 80
    assert shared.bytes(count_duplicates=False) == 40


def test_bytes_counts_gradients_and_the_parts_of_jagged_tensors() -> None:
    values, offsets, lengths = torch.ones(3), torch.tensor([0, 1, 3]), torch.tensor([1, 2])
    jagged = torch.nested.nested_tensor_from_jagged(values, offsets, lengths=lengths)
    again = torch.nested.nested_tensor_from_jagged(values, offsets, lengths=lengths)
    trained = torch.ones(3, requires_grad=True)
    trained.sum().backward()
    td = TensorDict(trained=trained, jagged=jagged, again=again)
    assert td.bytes() == 24 + 52 + 52  # 12 + its gradient's 12; 12 + 24 + 16 for each
    assert td.bytes(count_duplicates=False) == 24 + 52  # `again` shares every part


def test_data_ptr_is_a_tensordict_of_addresses() -> None:
    td = _td()
    ptrs = td.data_ptr()
    assert isinstance(ptrs, TensorDict) and ptrs.batch_size == torch.Size([])
    assert int(ptrs["a"]) == td["a"].data_ptr()
    assert int(ptrs["b", "c"]) == td["b", "c"].data_ptr()
    view = td["a"][1:]
    assert int(TensorDict({"v": view}, []).data_ptr(storage=True)["v"]) == (
        view.untyped_storage().data_ptr()
    )
    lazy = tclass.lazy_stack([td, td])
    assert list(lazy.data_ptr().keys()) == ["0", "1"]


def test_depth() -> None:
    assert _td().depth == 1
    assert TensorDict({"a": torch.zeros(1)}, []).depth == 0
    assert TensorDict({"a": {"b": {"c": torch.zeros(1)}}}, []).depth == 2
    assert TensorDict().depth == 0
    assert _frame().depth == 1


def test_is_empty_sees_python_values() -> None:
    assert TensorDict().is_empty()
    assert TensorDict({"a": {}}, []).is_empty()
    assert not TensorDict({"s": NonTensorData("x")}, []).is_empty()
    assert not _td().is_empty()


# --- inference ---------------------------------------------------------------------------


def test_auto_batch_size_() -> None:
    td = TensorDict({"a": torch.zeros(2, 3), "b": {"c": torch.zeros(2, 3, 4)}}, [])
    assert td.auto_batch_size_() is td
    assert td.batch_size == torch.Size([2, 3])
    assert td["b"].batch_size == torch.Size([2, 3, 4])
    td = TensorDict({"a": torch.zeros(2, 3), "b": {"c": torch.zeros(2, 3, 4)}}, [])
    td.auto_batch_size_(batch_dims=1)
    assert td.batch_size == torch.Size([2]) and td["b"].batch_size == torch.Size([2])
    td = TensorDict({"a": torch.zeros(2, 3), "b": {"c": torch.zeros(2, 3, 4)}}, [2])
    td.auto_batch_size_(keep_compliant_size=True)
    assert td.batch_size == torch.Size([2, 3])
    mixed = TensorDict({"a": torch.zeros(2, 3), "b": torch.zeros(2, 4)}, [])
    assert mixed.auto_batch_size_().batch_size == torch.Size([2])
    # nothing to infer from: the batch size kept, cut to batch_dims if given (as the peer)
    assert TensorDict({}, [0, 1]).auto_batch_size_().batch_size == (0, 1)
    assert TensorDict({}, [0, 1]).auto_batch_size_(1).batch_size == (0,)
    assert TensorDict({"s": "a"}, [2, 3]).auto_batch_size_(batch_dims=1).batch_size == (2,)


def test_auto_batch_size_counts_python_values() -> None:
    """A Python value counts with its batch size, and one shared value is cut to
    ``batch_dims`` dims, as the peer's (fuzz35b: its value stayed ``[3, 4, 3]``)."""
    td = TensorDict({"s": "x y", "n": {"v": "q"}}, [3, 4, 3], names=["i", None, "k"])
    td.clone().auto_batch_size_(1)  # a clone: the original keeps its values
    assert td.get("s").batch_size == (3, 4, 3)
    td.auto_batch_size_(1)
    assert td.batch_size == (3,) and td.names == ["i"]
    assert td.get("s").batch_size == (3,) and td.get(("n", "v")).batch_size == (3,)
    assert td["s"] == "x y" and td[0]["n", "v"] == "q"
    # the value's dims bound the batch size a longer tensor would give
    td = TensorDict({"s": "x", "t": torch.zeros(3, 4, 5)}, [3])
    assert td.auto_batch_size_().batch_size == (3,)
    td = TensorDict({"s": "x", "t": torch.zeros(3, 4, 5)}, [3, 4])
    assert td.auto_batch_size_().batch_size == (3, 4)
    td = TensorDict({"n": {"v": "q", "t": torch.zeros(3, 4, 3, 2)}}, [3, 4, 3])
    assert td.auto_batch_size_()["n"].batch_size == (3, 4, 3)
    # a stack of values counts too and keeps its batch size (the peer's is lazy)
    td = TensorDict({"s": NonTensorStack("a", "b", "c"), "t": torch.zeros(3, 4)}, [3])
    assert td.auto_batch_size_().batch_size == (3,)
    stacks = NonTensorStack(*[NonTensorStack("a", "b") for _ in range(3)])
    td = TensorDict({"s": stacks, "t": torch.zeros(3, 2, 4)}, [3, 2]).auto_batch_size_(1)
    assert td.batch_size == (3,) and td.get("s").batch_size == (3, 2)
    # a value without batch dims does not count; a locked collection is cut as well
    td = TensorDict({"s": NonTensorData("x"), "t": torch.zeros(3, 4)}, [])
    assert td.auto_batch_size_().batch_size == (3, 4)
    td = TensorDict({"s": "x", "t": torch.zeros(3, 4)}, [3, 4]).lock_()
    assert td.auto_batch_size_(1).get("s").batch_size == (3,) and td["s"] == "x"


def test_auto_device_() -> None:
    td = TensorDict({"a": torch.zeros(2), "b": {"c": torch.zeros(2)}}, [2])
    assert td.device is None
    assert td.auto_device_() is td
    assert td.device == torch.device("cpu") and td["b"].device == torch.device("cpu")
    mixed = TensorDict({"a": torch.zeros(2), "m": torch.zeros(2, device="meta")}, [2])
    assert mixed.auto_device_().device is None


# --- filters -----------------------------------------------------------------------------


def test_filter_non_tensor_data() -> None:
    td = TensorDict(
        {"a": torch.zeros(2), "s": NonTensorData("x", [2]), "n": {"t": torch.zeros(2)}}, [2]
    )
    out = td.filter_non_tensor_data()
    assert set(out.keys(True)) == {"a", "n", ("n", "t")}
    assert "s" in td.keys()
    record = _frame().filter_non_tensor_data()
    assert type(record) is Frame and record.env is None


def test_filter_empty_() -> None:
    td = TensorDict({"a": torch.zeros(2), "b": {}, "c": {"d": {}}, "e": {"f": torch.zeros(2)}}, [2])
    assert td.filter_empty_() is td
    assert set(td.keys(True)) == {"a", "e", ("e", "f")}


# --- new collections like this one --------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "fill"), [("new_zeros", 0), ("new_ones", 1), ("new_empty", None)]
)
def test_new_collections_keep_dtypes_and_feature_dims(method: str, fill: int | None) -> None:
    td = _td()
    out = getattr(td, method)(4, 5)
    assert type(out) is TensorDict and out.batch_size == torch.Size([4, 5])
    assert out["b"].batch_size == torch.Size([4, 5])
    for path, leaf in leaf_items(td):
        new = out.get(path)
        assert new.shape == torch.Size([4, 5]) + leaf.shape[2:] and new.dtype == leaf.dtype
        if fill is not None:
            assert bool((new == fill).all())
    cast = getattr(td, method)((3,), dtype=torch.float64)
    assert all(v.dtype == torch.float64 for _, v in leaf_items(cast))
    assert cast.batch_size == torch.Size([3])


def test_new_full_and_new_tensor() -> None:
    td = _td()
    out = td.new_full((4,), 7)
    assert out.batch_size == torch.Size([4])
    assert all(bool((v == 7).all()) for _, v in leaf_items(out))
    grad = td.new_ones((2,), requires_grad=True)
    assert grad["a"].requires_grad
    data = torch.arange(5)
    with pytest.warns(UserWarning, match="To copy construct from a tensor"):
        made = td.new_tensor(data)
    assert made.batch_size == torch.Size([5])
    assert made["a"].dtype == td["a"].dtype and made["a"].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]


def test_new_tensor_of_a_tensor_warns_as_torch() -> None:
    """A tensor or a collection given to ``new_tensor`` is copied with torch's
    ``UserWarning`` (``Tensor.new_tensor(tensor)`` warns; the peer calls it per entry); a
    list or a number is not a tensor to copy and gives none."""
    td = _td()
    with pytest.warns(UserWarning, match="To copy construct from a tensor") as caught:
        torch.zeros(2).new_tensor(torch.ones(2))
    assert "recommended" in str(caught[0].message)
    with pytest.warns(UserWarning, match="To copy construct from a tensor"):
        assert td.new_tensor(torch.ones(4)).batch_size == torch.Size([4])
    with pytest.warns(UserWarning, match="To copy construct from a tensor"):
        made = td.new_tensor(td[0] * 0)
    assert made.batch_size == torch.Size([3]) and bool((made == 0).all())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert td.new_tensor([1, 2, 3]).batch_size == torch.Size([3])
        assert td.new_tensor(np.zeros(2)).batch_size == torch.Size([2])


def test_new_collections_of_records_keep_the_class() -> None:
    frame = _frame()
    out = frame.new_zeros(5)
    assert type(out) is Frame and out.batch_size == torch.Size([5])
    assert out.env == "pong" and out.obs.shape == torch.Size([5, 2])


def test_empty_with_and_without_recurse() -> None:
    td = _td()
    shell = td.empty()
    assert shell.batch_size == td.batch_size and list(shell.keys()) == []
    deep = td.empty(recurse=True)
    assert list(deep.keys(True)) == ["b"] and deep["b"].batch_size == td.batch_size
    assert td.empty(batch_size=[2]).batch_size == torch.Size([2])
    assert td.empty(device="cpu").device == torch.device("cpu")


def test_copy_is_a_shallow_copy() -> None:
    td = _td()
    c = td.copy()
    assert c is not td and c["a"] is td["a"]
    c["z"] = torch.zeros(2, 3)
    assert "z" not in td.keys()
    lazy = tclass.lazy_stack([td, td])
    lc = lazy.copy()
    assert isinstance(lc, LazyStackedTensorDict) and lc.tensordicts[0] is not td
    assert lc.tensordicts[0]["a"] is td["a"]


# --- conversions -------------------------------------------------------------------------


def test_tolist_gives_nested_lists_of_dicts() -> None:
    td = TensorDict({"a": torch.arange(4.0).reshape(2, 2), "b": {"c": torch.ones(2, 2, 3)}}, [2, 2])
    out = td.tolist()
    assert len(out) == 2 and len(out[0]) == 2
    assert torch.equal(out[1][0]["a"], torch.tensor(2.0))
    assert torch.equal(out[0][1]["b"]["c"], torch.ones(3))
    converted = td.tolist(convert_tensors=True)
    assert converted[1][1] == {"a": 3.0, "b": {"c": [1.0, 1.0, 1.0]}}
    arrays = td.tolist(convert_tensors="numpy")
    assert isinstance(arrays[0][0]["a"], np.ndarray)
    assert TensorDict({"a": torch.zeros(())}, []).tolist() == {"a": torch.zeros(())}
    with_value = TensorDict({"a": torch.zeros(2), "s": NonTensorData("x", [2])}, [2])
    assert with_value.tolist(convert_tensors=True) == [{"a": 0.0, "s": "x"}, {"a": 0.0, "s": "x"}]
    nodes = with_value.tolist(convert_nodes=False)
    assert all(isinstance(node, TensorDict) for node in nodes)


def test_tolist_first_lists_nested_batch_dims_and_tensors_need_nodes() -> None:
    nested = TensorDict(c=torch.arange(12).reshape(2, 3, 2), batch_size=(2, 3, 2))
    td = TensorDict(a=torch.arange(24).view(2, 3, 4), b=nested, batch_size=(2, 3))
    first = td.tolist(tolist_first=True)[0][0]
    assert first["b"] == [{"c": torch.tensor(0)}, {"c": torch.tensor(1)}]
    assert td.tolist(tolist_first=True, convert_tensors=True)[0][0]["b"] == [{"c": 0}, {"c": 1}]
    assert torch.equal(td.tolist()[0][0]["b"]["c"], torch.tensor([0, 1]))  # a dict by default
    with pytest.raises(errors.ArgumentError, match="pass convert_nodes=True"):
        td.tolist(convert_nodes=False, convert_tensors=True)  # a TypeError, as the peer


def test_tolist_of_values_that_differ_along_every_dim() -> None:
    rows = NonTensorStack(NonTensorStack("a", "b", "c"), NonTensorStack("d", "e", "f"))
    td = TensorDict({"env": rows}, [2, 3])
    assert [[element["env"] for element in row] for row in td.tolist()] == [
        ["a", "b", "c"],
        ["d", "e", "f"],
    ]
    assert td[0][1]["env"] == "b" and td.unbind(0)[1]["env"] == ["d", "e", "f"]


def test_tolist_keeps_a_nested_shared_value_one_value_past_the_walked_dims() -> None:
    nested = TensorDict({"d": torch.zeros(2, 3), "z": NonTensorData("q", [2, 3])}, [2, 3])
    nested["s"] = NonTensorStack(NonTensorStack("a", "b", "c"), NonTensorStack("d", "e", "f"))
    nested["n"] = NonTensorData(None, [2, 3])
    td = TensorDict({"m": nested, "top": "w"}, [2])
    element = td.tolist()[1]["m"]  # the rows of "m" past dim 0 are not walked: as the peer
    assert element["z"] == "q" and element["n"] is None  # one value, not a list of three
    assert element["s"] == ["d", "e", "f"] and type(element["s"]) is list  # the stack's row
    assert torch.equal(element["d"], torch.zeros(3)) and td.tolist()[0]["top"] == "w"
    assert td.tolist(convert_tensors=True)[0]["m"] == {
        "d": [0.0, 0.0, 0.0], "z": "q", "s": ["a", "b", "c"], "n": None,
    }  # fmt: skip
    assert td.tolist(tolist_first=True)[0]["m"][2] == {"d": torch.tensor(0.0), "z": "q",
                                                      "s": "c", "n": None}  # fmt: skip


def test_tolist_of_records_and_lazy_stacks() -> None:
    frame = _frame()
    rows = frame.tolist(convert_tensors=True)
    assert (
        len(rows) == 3
        and rows[0]["env"] == "pong"
        and rows[0]["inner"]["x"] == frame.inner.x[0].item()
    )
    lazy = tclass.lazy_stack([TensorDict({"a": torch.ones(i + 1)}, []) for i in range(2)])
    assert [row["a"].tolist() for row in lazy.tolist()] == [[1.0], [1.0, 1.0]]


def test_struct_arrays_share_memory_both_ways() -> None:
    array = np.zeros(3, dtype=[("a", "<f8"), ("b", "<i8")])
    td = tclass.from_struct_array(array)
    array["a"][0] = 5.0
    assert td["a"][0].item() == 5.0  # a view, as the peer's from_struct_array
    td["b"][1] = 7
    assert array["b"][1] == 7
    back = td.to_struct_array()
    assert np.shares_memory(back, array)
    back["a"][2] = 3.0
    assert td["a"][2].item() == 3.0
    fresh = TensorDict({"a": torch.arange(3.0)}, [3]).to_struct_array()
    assert fresh["a"].tolist() == [0.0, 1.0, 2.0]


def test_to_namedtuple() -> None:
    nt = _td().to_namedtuple()
    assert nt.a.shape == torch.Size([2, 3]) and nt.b.c.shape == torch.Size([2, 3, 4])


# --- records: the key-level methods -------------------------------------------------------


def test_record_select_and_exclude_keep_the_class() -> None:
    frame = _frame()
    picked = frame.select("obs")
    assert type(picked) is Frame and picked.reward is None and picked.env is None
    assert picked.obs is frame.obs
    assert type(frame.select("obs", as_tensordict=True)) is TensorDict
    dropped = frame.exclude("reward", "env")
    assert type(dropped) is Frame and dropped.reward is None and dropped.env is None
    assert frame.reward is not None


def test_record_pop_del_and_rename() -> None:
    frame = _frame()
    reward = frame.reward
    assert frame.pop("reward") is reward and frame.reward is None
    assert frame.pop("reward", 3) == 3
    with pytest.raises(KeyError):
        frame.pop("nope")
    assert frame.del_("inner") is frame and frame.inner is None
    other = _frame()
    assert other.rename_key_("reward", "obs") is other
    assert other.reward is None and other.obs.shape == torch.Size([3])
    with pytest.raises(errors.UnknownFieldError):
        _frame().rename_key_("reward", "not_a_field")


def test_record_rename_key_raises_the_peers_error_before_the_field_check() -> None:
    # The peer refuses a locked record (RuntimeError) and a missing or wrong old key
    # (KeyError / ValueError) before anything else; a new name that is no field comes
    # after (tclass's UnknownFieldError), so code catching the peer's errors keeps working.
    with pytest.raises(errors.LockedError) as locked:
        _frame().lock_().rename_key_("reward", "not_a_field")
    assert isinstance(locked.value, RuntimeError)
    with pytest.raises(errors.KeyNotFoundError, match="'zz'"):
        _frame().rename_key_("zz", "not_a_field")
    with pytest.raises(errors.KeyThroughTensorError) as through:
        _frame().rename_key_(("reward", "x"), "not_a_field")
    assert isinstance(through.value, ValueError)
    frame = _frame()
    with pytest.raises(errors.UnknownFieldError):
        frame.rename_key_("reward", "not_a_field")
    assert frame.reward is not None  # nothing moved


def test_record_setdefault_and_indexed_writes() -> None:
    frame = Frame(obs=torch.zeros(3, 2), batch_size=[3])
    value = frame.setdefault("reward", torch.full((3,), 4.0))
    assert torch.equal(frame.reward, value)
    frame.set_at_("reward", torch.tensor(1.0), 0)
    assert frame.reward[0].item() == 1.0
    frame.update_at_({"obs": torch.ones(2)}, 2)
    assert frame.obs[2].tolist() == [1.0, 1.0]
    frame.update_({"obs": torch.full((3, 2), 2.0)})
    assert bool((frame.obs == 2).all())
    assert torch.equal(frame.get_at("obs", 1), torch.full((2,), 2.0))


# --- property test: new_* against torch -------------------------------------------------


@SETTINGS
@given(td=tensordicts(max_dims=2), size=st.lists(st.integers(0, 3), max_size=2))
def test_new_zeros_is_torch_new_zeros_per_leaf(td: TensorDict, size: list[int]) -> None:
    out = td.new_zeros(size)
    nb = td.batch_dims
    for path, leaf in leaf_items(td):
        expected = leaf.new_zeros((*size, *leaf.shape[nb:]))
        got = out.get(path)
        assert got.shape == expected.shape and got.dtype == expected.dtype
        assert torch.equal(got, expected)


# --- against the peer ------------------------------------------------------------------


@pytest.mark.peer
def test_entry_methods_agree_with_the_peer() -> None:
    peer = pytest.importorskip("tensordict")
    source = {
        "a": make_values([2, 3]),
        "b": {"c": make_values([2, 3, 4]), "d": make_values([2, 3])},
    }
    ours = TensorDict(source, [2, 3])
    theirs = peer.TensorDict({"a": source["a"], "b": peer.TensorDict(source["b"], [2, 3])}, [2, 3])
    assert ours.bytes() == theirs.bytes()
    assert ours.depth == theirs.depth
    assert ours.sorted_keys == theirs.sorted_keys
    assert list(ours.flatten_keys().keys()) == list(theirs.flatten_keys().keys())
    assert list(ours.keys(True, sort=True)) == list(theirs.keys(True, sort=True))
    ours_split = [sorted(map(str, p.keys(True))) for p in ours.split_keys([("b", "c")])]
    theirs_split = [sorted(map(str, p.keys(True))) for p in theirs.split_keys([("b", "c")])]
    assert ours_split == theirs_split
    assert ours.tolist(convert_tensors=True) == theirs.tolist(convert_tensors=True)
    for key in theirs.keys(True, True):
        assert torch.equal(ours.new_full((2,), 3).get(key), theirs.new_full((2,), 3).get(key))
    assert str(ours.to_struct_array().dtype) == str(theirs.to_struct_array().dtype)


def test_unflatten_keys_order_and_nested_collections_as_the_peer() -> None:
    """Found by the differential fuzzer: plain keys first, then the groups in the order
    their prefix first appears; nested collections keep their keys as they are."""
    z = torch.zeros(1)
    td = TensorDict(
        {
            "a/x": z,
            "b": z,
            "c/y/q": z,
            "a/z": z,
            "d": z,
            "c/w": z,
            "e": TensorDict({"f/g": z}, [1]),
        },
        [1],
    )
    out = td.unflatten_keys("/")
    assert list(out.keys()) == ["b", "d", "e", "a", "c"]
    assert list(out["c"].keys()) == ["y", "w"] and list(out["e"].keys()) == ["f/g"]
    flat = TensorDict({"m": {"d": z, "c": z}, "c": z}, [1]).flatten_keys("/")
    assert list(flat.unflatten_keys("/").keys()) == ["c", "m"]


def test_unflatten_keys_gives_new_nested_nodes() -> None:
    """Found by the differential fuzzer: a nested collection of the result is a new node
    sharing the tensors (as the peer's), so keys and locks written later stay apart."""
    td = TensorDict({"n": {"b": torch.zeros(2)}, "m.c": torch.zeros(2)}, [2])
    out = td.unflatten_keys()
    assert out["n"] is not td["n"] and out["n", "b"] is td["n", "b"]
    out["n", "z"] = torch.ones(2)
    out.lock_()
    assert list(td["n"].keys()) == ["b"] and not td["n"].is_locked


# --- update: the peer's whole signature ---------------------------------------------------


class _Row(TensorClass):
    x: torch.Tensor
    y: torch.Tensor | None = None


def test_update_keys_to_update_sets_a_missing_nested_collection_whole() -> None:
    """As the peer: asking for keys under a nested collection the destination lacks sets
    that collection (they were silently dropped)."""
    t = torch.zeros(2)
    source = TensorDict({"My": {"father": {"was": t, "a": t}, "relentlessly": t}, "x": t}, [2])
    td = TensorDict({"a": torch.ones(2)}, [2])
    td.update(source, keys_to_update=[("My", "father", "was"), ("My", "relentlessly")])
    assert set(td.keys(True, True)) == {
        "a",
        ("My", "father", "was"),
        ("My", "father", "a"),
        ("My", "relentlessly"),
    }
    td.update(source.apply(lambda x: x + 1), keys_to_update=[("My", "relentlessly")])
    assert td["My", "relentlessly"].eq(1).all() and td["My", "father", "was"].eq(0).all()


def test_update_keyword_entries_and_positional_flags() -> None:
    td = TensorDict(a=torch.zeros(3), batch_size=[3])
    assert td.update(c=torch.zeros(3)) is td  # the keyword form
    td.update({"b": torch.ones(3)}, a=torch.ones(3))  # both: keywords win
    assert sorted(td.keys()) == ["a", "b", "c"] and bool((td["a"] == 1).all())
    td.update(TensorDict(d=torch.ones(3), batch_size=[3]), e=torch.ones(3))  # a collection too
    assert sorted(td.keys()) == ["a", "b", "c", "d", "e"]
    value = torch.full((3,), 5.0)
    td.update({"a": value}, True, False)  # clone, inplace given by position, as the peer
    assert td["a"] is not value and bool((td["a"] == 5).all())
    assert td.update(None) is td and td.update(td) is td
    assert td.update({"a": torch.zeros(3)}, keys_to_update=[]) is td and bool((td["a"] == 5).all())
    row = _Row(x=torch.zeros(2), batch_size=[2])
    row.update(y=torch.ones(2))
    assert bool((row.y == 1).all())
    stack = LazyStackedTensorDict(TensorDict(a=torch.zeros(2)), TensorDict(a=torch.zeros(2)))
    stack.update(a=torch.ones(2, 2))
    assert bool((stack["a"] == 1).all())


def test_update_is_leaf_sets_collections_whole() -> None:
    td = TensorDict(n=TensorDict(x=torch.zeros(3)), batch_size=[3])
    new = TensorDict(y=torch.ones(3), batch_size=[3])
    td.update({"n": new})
    assert sorted(td["n"].keys()) == ["x", "y"]  # merged by default
    td.update({"n": new}, is_leaf=lambda cls: issubclass(cls, (TensorDict, torch.Tensor)))
    assert td["n"] is new


def test_update_batch_size() -> None:
    td = TensorDict(a=torch.zeros(3), batch_size=[3])
    td.update(TensorDict(a=torch.ones(4), batch_size=[4]), update_batch_size=True)
    assert td.batch_size == torch.Size([4]) and bool((td["a"] == 1).all())
    wider = TensorDict(a=torch.zeros(4, 2), b=torch.zeros(4, 2), batch_size=[4, 2])
    td.update(wider, update_batch_size=True)  # [4] starts [4, 2]: kept, as the peer
    assert td.batch_size == torch.Size([4])
    with pytest.raises(errors.BatchSizeError, match=r"\['a', 'b'\]") as info:
        td.update(TensorDict(c=torch.ones(5), batch_size=[5]), update_batch_size=True)
    assert isinstance(info.value, RuntimeError)  # the peer's builtin
    assert td.batch_size == torch.Size([4])  # nothing changed


def test_update_of_another_batch_size_needs_update_batch_size() -> None:
    td, other = TensorDict(batch_size=[3]), TensorDict(batch_size=[4])
    with pytest.raises(RuntimeError, match="update_batch_size"):
        td.update(other)
    for options in ({"inplace": True}, {"keys_to_update": ["a"]}):
        with pytest.raises(RuntimeError, match=next(iter(options))):
            td.update(other, update_batch_size=True, **options)
    with pytest.raises(errors.LockedError):
        TensorDict(batch_size=[3], lock=True).update(other, update_batch_size=True)
    assert td.update(other, update_batch_size=True).batch_size == (4,)


def test_update_batch_size_keeps_nested_collections_and_records() -> None:
    @tclass.tensorclass
    class Pair:
        a: str
        b: torch.Tensor

    def tree(n: int, text: str) -> TensorDict:
        inner = TensorDict(foo=torch.full((n,), float(n)), batch_size=[n])
        pair = Pair(a=text, b=torch.zeros(n), batch_size=[n])
        return TensorDict(td=inner, pair=pair)

    dest, source = tree(3, "x"), tree(2, "y")
    inner, pair = dest["td"], dest["pair"]
    dest.update(source, update_batch_size=True)
    assert dest["td"] is inner and inner.batch_size == (2,) and inner["foo"].tolist() == [2, 2]
    assert dest["pair"] is pair and pair.batch_size == (2,) and pair.a == "y"


def test_update_on_a_locked_collection() -> None:
    td = TensorDict(a=torch.zeros(3), batch_size=[3]).lock_()
    td.update({"a": torch.ones(3)}, inplace=True)
    assert bool((td["a"] == 1).all())
    with pytest.raises(errors.LockedError) as info:
        td.update({"a": torch.zeros(3)})
    assert isinstance(info.value, RuntimeError)
    with pytest.warns(FutureWarning, match="ignore_lock"), pytest.raises(errors.LockedError):
        td.update({"b": torch.zeros(3)}, ignore_lock=True)  # deprecated, and does not unlock


def test_update_matches_the_peer() -> None:
    peer = pytest.importorskip("tensordict")
    results = []
    for lib in (tclass, peer):
        td = lib.TensorDict(a=torch.zeros(3), n=lib.TensorDict(x=torch.zeros(3)), batch_size=[3])
        td.update({"n": {"y": torch.ones(3)}}, c=torch.ones(3))
        source = lib.TensorDict(a=torch.ones(3), n={"x": torch.ones(3)}, batch_size=[3])
        td.update(source, keys_to_update=[("n", "x")])
        results.append({k: v.tolist() for k, v in td.items(True, True)})
    assert results[0] == results[1]


# --- on every kind of collection, as the peer ---------------------------------------------

_NEW_COLLECTIONS = {
    "new_ones": lambda c: c.new_ones(2, 2),
    "new_zeros": lambda c: c.new_zeros((2, 2)),
    "new_empty_shape": lambda c: (lambda out: (out.batch_size, out.names))(c.new_empty(2)),
    "new_full": lambda c: c.new_full((2,), 7),
    "new_ones_more_dims": lambda c: c.new_ones(1, 2, 3, dtype=torch.float64),
    "new_tensor": lambda c: c.new_tensor(torch.zeros(3)),
    "new_tensor_list": lambda c: c.new_tensor([1, 2]),
}


@pytest.mark.peer
@pytest.mark.parametrize("kind", COMPARED)
@pytest.mark.parametrize("method", sorted(_NEW_COLLECTIONS))
def test_new_collections_on_every_kind_as_the_peer(kind: str, method: str, tmp_path: Path) -> None:
    assert_as_the_peer(kind, tmp_path, _NEW_COLLECTIONS[method])


def test_new_collections_keep_the_last_names() -> None:
    """The new batch dims are named from the right, as the peer names them: the last dims
    keep the last names, new leading dims have none; nested collections too."""
    td = _td()
    td.names = ["x", "y"]
    assert td.new_ones(4).names == ["y"]
    assert td.new_zeros(4, 5).names == ["x", "y"]
    out = td.new_empty(1, 4, 5)
    assert out.names == [None, "x", "y"] and out["b"].names == [None, "x", "y"]
    assert td.new_full((4,), 1.0)["b"].names == ["y"]
    assert td.new_ones(()).batch_size == torch.Size([])  # a 0-d batch has no names
    td.names = ["x", None]
    assert td.new_ones(4).names == [None]


def test_new_tensor_is_on_the_data_device() -> None:
    """As the peer: the result is on ``data``'s device (the CPU for a list), not on the
    collection's, unless ``device=`` says otherwise."""
    td = TensorDict({"a": torch.zeros(2), "n": {"b": torch.zeros(2)}}, [2])
    made = td.new_tensor([1, 2])
    assert made.device == torch.device("cpu") and made["n"].device == torch.device("cpu")
    with pytest.warns(UserWarning, match="To copy construct from a tensor"):
        assert td.new_tensor(torch.ones(3), device=None).device is None
    with pytest.warns(UserWarning, match="To copy construct from a tensor"):
        assert td.to("cpu").new_tensor(torch.ones(3)).device == torch.device("cpu")


def test_filter_empty_on_a_ragged_lazy_stack_reads_no_tensor() -> None:
    members = [
        TensorDict({"a": torch.zeros(3, i + 1), "e": {}, "f": {"g": torch.zeros(3)}}, [3])
        for i in range(2)
    ]
    ragged = tclass.lazy_stack(members)
    assert ragged.filter_empty_() is ragged
    assert set(ragged.keys(True)) == {"a", "f", ("f", "g")}
    assert all("e" not in member.keys() for member in ragged.tensordicts)


def _auto_batch_of_values_only(lib: Any) -> None:
    td = lib.TensorDict({"a": torch.zeros(4, 3)}, batch_size=[4, 3])
    td.set_non_tensor(("d", "s"), "text")
    td.batch_size = []
    td.auto_batch_size_()
    assert td.batch_size == torch.Size([4, 3]), lib.__name__
    assert td["d"].batch_size == torch.Size([4, 3]), lib.__name__
    assert td.get_non_tensor(("d", "s")) == "text"
    empty = lib.TensorDict({}, batch_size=[4]).auto_batch_size_()
    assert empty.batch_size == torch.Size([4]), lib.__name__


def test_auto_batch_size_keeps_the_batch_of_a_level_holding_only_python_values() -> None:
    _auto_batch_of_values_only(tclass)
    td = TensorDict({"a": torch.zeros(4, 3, 2)}, batch_size=[])
    assert td.auto_batch_size_().batch_size == torch.Size([4, 3, 2])  # tensors still count


@pytest.mark.peer
def test_auto_batch_size_of_python_values_as_the_peer() -> None:
    _auto_batch_of_values_only(pytest.importorskip("tensordict"))


def test_flatten_keys_of_a_locked_collection_gives_its_own_value_nodes() -> None:
    """Found by the differential fuzzer: the flat result of a locked collection holds new
    Python-value nodes (sharing the values), as the peer, so it unlocks while the source
    stays locked; its tensors are still shared."""
    td = TensorDict({"m": {"q": "z"}, "s": None, "a": torch.zeros(4)}, batch_size=[4]).lock_()
    flat = td.flatten_keys(".")
    assert not flat.is_locked and flat["a"] is td["a"]
    assert flat.get("s") is not td.get("s") and flat["m.q"] == "z" and flat["s"] is None
    assert flat.swapaxes(0, 0).unlock_().is_locked is False
    assert td.is_locked and td.get("s").is_locked


_SEVENS = torch.full((2, 3), 7.0)
# Each nested in-place write into the lazy stack at "s", and what its members hold after.
NESTED_WRITES = {
    "set_": (lambda td: td.set_(("s", "x"), _SEVENS), _SEVENS),
    "set_at_": (
        lambda td: td.set_at_(("s", "x"), _SEVENS[1], 1),
        torch.tensor([[0.0, 0.0, 0.0], [7.0, 7.0, 7.0]]),
    ),
    "update_": (lambda td: td.update_({"s": {"x": _SEVENS}}), _SEVENS),
    "update_at_": (
        lambda td: td.update_at_({("s", "x"): _SEVENS[:, :2]}, (slice(None), slice(0, 2))),
        torch.tensor([[7.0, 7.0, 0.0], [7.0, 7.0, 0.0]]),
    ),
    "fill_": (lambda td: td.fill_(("s", "x"), 7.0), _SEVENS),
}


@pytest.mark.parametrize("write", list(NESTED_WRITES))
def test_a_nested_in_place_write_reaches_the_members_of_a_lazy_stack_it_holds(write: str) -> None:
    """``td.set_(("s", "x"), v)`` with ``s`` a lazy stack writes into its members (as
    the peer), not into the stacked copy that ``td.get(("s", "x"))`` gives."""
    members = [TensorDict({"x": torch.zeros(3)}, [3]) for _ in range(2)]
    td = TensorDict({"s": tclass.lazy_stack(members)}, [2])
    run, expected = NESTED_WRITES[write]
    run(td)
    assert torch.equal(torch.stack([m["x"] for m in members]), expected)


def test_a_nested_in_place_write_to_a_missing_key_names_the_whole_key() -> None:
    td = TensorDict({"s": tclass.lazy_stack([TensorDict({"x": torch.zeros(3)}, [3])] * 2)}, [2])
    for write in (
        lambda: td.set_at_(("s", "nope"), 1.0, 0),
        lambda: td.fill_(("s", "nope"), 1.0),
        lambda: td.set_(("s", "nope"), torch.zeros(2, 3)),
    ):
        with pytest.raises(errors.KeyNotFoundError, match=r"\('s', 'nope'\)"):
            write()
