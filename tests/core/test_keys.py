"""Tests for tclass._core._keys and the key/shape protocol of tclass._base.implemented._collection
(views, len, iter)."""

from __future__ import annotations

import enum
from typing import Any

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import tclass
from tclass import TensorDict, errors
from tclass._core._keys import key_path, unravel_key


def _td() -> TensorDict:
    """a: leaf; b: {c: leaf, e: {f: leaf}}; g: leaf; h: {} (an empty nested TensorDict)."""
    return TensorDict(
        {
            "a": torch.zeros(4),
            "b": {"c": torch.zeros(4, 2), "e": {"f": torch.ones(4)}},
            "g": torch.zeros(4, 3),
            "h": {},
        },
        batch_size=[4],
    )


@tclass.tensorclass
class _Rec:
    a: torch.Tensor
    s: str
    n: TensorDict


# --- pure key arithmetic ------------------------------------------------------------------


class TestUnravelKey:
    @pytest.mark.parametrize(
        "key, expected",
        [("a", "a"), (("a",), "a"), ((("a",),), "a"), (("a", "b"), ("a", "b")),
         (("a", ("b", "c")), ("a", "b", "c")), ((("a", "b"), ("c",)), ("a", "b", "c")),
         (("",), "")],
    )  # fmt: skip
    def test_flattens(self, key: Any, expected: Any) -> None:
        assert unravel_key(key) == expected
        assert key_path(key) == ((expected,) if isinstance(expected, str) else expected)

    def test_str_subclasses_become_plain_str(self) -> None:
        class Name(str, enum.Enum):
            OBS = "obs"

        out = unravel_key(Name.OBS)
        assert out == "obs" and type(out) is str
        out2 = unravel_key((Name.OBS, "x"))
        assert out2 == ("obs", "x") and all(type(p) is str for p in out2)

    @pytest.mark.parametrize(
        "key", [(), ("a", ()), ("a", 1), 1, 1.5, None, b"a", ["a", "b"], object(), ("a", ["b"])]
    )
    def test_invalid(self, key: Any) -> None:
        with pytest.raises(errors.InvalidKeyError, match="invalid key") as info:
            unravel_key(key)
        assert isinstance(info.value, TypeError) and isinstance(info.value, KeyError)
        with pytest.raises(errors.InvalidKeyError):
            key_path(key)

    @given(
        st.recursive(
            st.text(max_size=3), lambda inner: st.lists(inner, min_size=1, max_size=3).map(tuple)
        )
    )
    def test_flattening_is_idempotent(self, key: Any) -> None:
        flat = unravel_key(key)
        assert unravel_key(flat) == flat
        path = key_path(key)
        assert len(path) >= 1 and all(type(p) is str for p in path)
        assert unravel_key(path) == flat


# --- keys views ---------------------------------------------------------------------------


class TestKeysView:
    def test_default_is_top_level(self) -> None:
        assert list(_td().keys()) == ["a", "b", "g", "h"]

    def test_include_nested(self) -> None:
        # A nested collection comes after its own keys, as in the peer.
        assert list(_td().keys(include_nested=True)) == [
            "a", ("b", "c"), ("b", "e", "f"), ("b", "e"), "b", "g", "h",
        ]  # fmt: skip

    def test_leaves_only(self) -> None:
        assert list(_td().keys(leaves_only=True)) == ["a", "g"]

    def test_include_nested_leaves_only(self) -> None:
        assert list(_td().keys(True, True)) == ["a", ("b", "c"), ("b", "e", "f"), "g"]

    @pytest.mark.parametrize(
        "nested, leaves, length",
        [(False, False, 4), (True, False, 7), (False, True, 2), (True, True, 4)],
    )
    def test_len(self, nested: bool, leaves: bool, length: int) -> None:
        view = _td().keys(include_nested=nested, leaves_only=leaves)
        assert len(view) == length == len(list(view))

    def test_contains(self) -> None:
        td = _td()
        top = td.keys()
        assert "a" in top and "b" in top and ("a",) in top
        assert ("b", "c") not in top and "zz" not in top
        nested = td.keys(include_nested=True)
        assert ("b", "c") in nested and ("b", ("e", "f")) in nested and ("b", "e") in nested
        assert ("b", "zz") not in nested and ("a", "x") not in nested
        leaves = td.keys(include_nested=True, leaves_only=True)
        assert ("b", "e", "f") in leaves and "a" in leaves
        assert "zz" not in leaves and ("b", "zz") not in leaves
        # Membership agrees with iteration (the peer's lazy stack; its TensorDict lets
        # leaves_only not filter membership): nested collections are not leaves.
        assert "b" not in leaves and ("b", "e") not in leaves and "h" not in leaves
        assert "b" not in td.keys(leaves_only=True) and "b" in td.keys()
        assert "b" in td.keys(True, True, is_leaf=lambda cls: True)

    @pytest.mark.parametrize("kind", ["td", "lazy", "record", "record_stack"])
    @pytest.mark.parametrize(
        "nested, leaves", [(False, False), (False, True), (True, False), (True, True)]
    )
    def test_contains_agrees_with_iteration(self, kind: str, nested: bool, leaves: bool) -> None:
        # Found by fz26e: "s" in ls.keys(leaves_only=True) held while iterating left it out.
        td = TensorDict({"a": torch.zeros(3), "s": "x", "n": {"b": torch.zeros(3), "t": "y"}}, [3])
        obj: Any = {
            "td": td,
            "lazy": tclass.LazyStackedTensorDict(td, td.clone()),
            "record": _Rec(a=torch.zeros(3), s="x", n=td["n"], batch_size=[3]),
            "record_stack": torch.stack(
                [_Rec(a=torch.zeros(3), s="x", n=td["n"], batch_size=[3])] * 2
            ),
        }[kind]
        view = obj.keys(include_nested=nested, leaves_only=leaves)
        listed = set(view)
        for key in ["a", "s", "n", "zz", ("n", "b"), ("n", "t"), ("n", "zz")]:
            assert (key in view) == (key in listed), key
        assert (
            listed
            == {
                (False, False): {"a", "s", "n"},
                (False, True): {"a"},
                (True, False): {"a", "s", "n", ("n", "b"), ("n", "t")},
                (True, True): {"a", ("n", "b")},
            }[nested, leaves]
        )

    @pytest.mark.parametrize("item", [1, None, (), ("b", 1), object(), ["a"]])
    def test_contains_invalid_is_a_type_error(self, item: Any) -> None:
        # As the peer's keys view, a TypeError (nu26a).
        with pytest.raises(TypeError, match="membership checks take a string"):
            _ = item in _td().keys(include_nested=True)

    def test_equality(self) -> None:
        td = _td()
        assert td.keys() == {"a", "b", "g", "h"}
        # A set, as dict.keys() and the peer's: never equal to a list or a tuple.
        assert td.keys() != ["a", "b", "g", "h"] and td.keys() != ("a", "b", "g", "h")
        assert td.keys() == dict.fromkeys("hgba").keys() == td.keys(sort=True)
        assert dict.fromkeys("hgba").keys() == td.keys() and {"a", "b", "g", "h"} == td.keys()
        assert td.keys() != {"a", "b"}
        assert td.keys(True, True) == {"a", ("b", "c"), ("b", "e", "f"), "g"}
        assert (
            td.keys()
            == TensorDict({"h": {}, "g": torch.zeros(2), "b": {}, "a": torch.zeros(2)}, [2]).keys()
        )
        assert td.keys() != td.keys(include_nested=True)
        assert (td.keys() == 3) is False

    def test_set_operations_and_reversed(self) -> None:
        keys = _td().keys()
        assert keys & {"a", "zz"} == {"a"} and keys - {"a", "b"} == {"g", "h"}
        assert keys | {"zz"} == {"a", "b", "g", "h", "zz"}
        assert keys ^ {"a", "zz"} == {"b", "g", "h", "zz"}
        assert {"a"} <= keys < {"a", "b", "g", "h", "zz"} and keys.isdisjoint({"zz"})
        assert list(reversed(keys)) == list(keys)[::-1]
        nested = _td().keys(include_nested=True, leaves_only=True)
        assert nested & {("b", "c"), "zz"} == {("b", "c")}
        assert list(reversed(nested)) == list(nested)[::-1]

    def test_unhashable(self) -> None:
        with pytest.raises(TypeError):
            hash(_td().keys())

    def test_live_view(self) -> None:
        td = _td()
        view = td.keys(include_nested=True)
        td["new"] = torch.zeros(4)
        td["b", "e", "x"] = torch.zeros(4)
        del td["a"]
        assert "new" in view and ("b", "e", "x") in view and "a" not in view
        assert list(view)[-1] == "new" and len(view) == 8

    def test_repr(self) -> None:
        # the peer's text, so that printing keys reads the same in both libraries
        assert repr(_td().keys(leaves_only=True)) == (
            "_TensorDictKeysView(['a', 'g'],\n    include_nested=False,\n    leaves_only=True)"
        )
        assert (
            repr(TensorDict(a=torch.zeros(1), b={}).keys()) == "_StringKeys(dict_keys(['a', 'b']))"
        )
        lazy = tclass.lazy_stack([TensorDict(a=torch.zeros(1)), TensorDict(a=torch.zeros(1))])
        assert repr(lazy.keys(True)) == "_LazyStackedTensorDictKeysView(('a',))"

    @pytest.mark.parametrize(
        "nested, leaves", [(False, False), (True, False), (False, True), (True, True)]
    )
    def test_values_and_items_follow_keys(self, nested: bool, leaves: bool) -> None:
        td = _td()
        keys = list(td.keys(nested, leaves))
        values = list(td.values(nested, leaves))
        items = list(td.items(nested, leaves))
        # The peer lists items parents first and keys children first: same entries.
        if nested and not leaves:
            assert set(keys) == {k for k, _ in items}
            keys = [k for k, _ in items]
        assert [k for k, _ in items] == keys
        assert len(values) == len(keys)
        for key, value, (_, item_value) in zip(keys, values, items):
            assert value is td[key] and item_value is value

    def test_values_nested_are_collections(self) -> None:
        td = _td()
        kinds = [type(v) for v in td.values(include_nested=True)]
        assert kinds.count(TensorDict) == 3
        assert all(isinstance(v, torch.Tensor) for v in td.values(True, True))


# --- containment on the collection --------------------------------------------------------


class TestContains:
    def test_in_collection(self) -> None:
        td = _td()
        assert "a" in td and ("b", "c") in td and ("b", ("e", ("f",))) in td
        assert ("b", "e") in td and "h" in td and ("a",) in td
        assert "zz" not in td and ("b", "zz") not in td and ("a", "x") not in td
        assert ("zz", "y", "x") not in td

    @pytest.mark.parametrize("not_a_key", [1, (), [], None])
    def test_an_object_that_is_no_key_is_refused_by_in(self, not_a_key: object) -> None:
        with pytest.raises(errors.UnravelKeyError, match="NestedKey") as info:
            not_a_key in _td()  # noqa: B015
        assert isinstance(info.value, RuntimeError)


# --- len, iter, bool, emptiness, shape facts ----------------------------------------------


class TestShapeFacts:
    def test_len(self) -> None:
        assert len(TensorDict({}, [4, 3])) == 4
        assert len(TensorDict({}, [0, 3])) == 0
        assert len(TensorDict({"a": torch.zeros(2)})) == 0

    def test_iter_over_first_dim(self) -> None:
        c = torch.arange(6).reshape(3, 2)
        td = TensorDict({"a": torch.arange(6.0).reshape(3, 2), "b": {"c": c}}, [3, 2])
        rows = list(td)
        assert len(rows) == 3
        for i, row in enumerate(rows):
            assert type(row) is TensorDict and row.batch_size == torch.Size([2])
            assert torch.equal(row["a"], td["a"][i]) and torch.equal(row["b", "c"], c[i])
            assert row["a"].data_ptr() == td["a"][i].data_ptr()
        assert list(TensorDict({}, [0])) == []

    def test_iter_without_batch_dims(self) -> None:
        with pytest.raises(TypeError, match="no batch dims"):
            iter(TensorDict({"a": torch.zeros(2)}))

    @pytest.mark.parametrize("td", [TensorDict(), TensorDict({"a": torch.ones(1)}, [1])])
    def test_bool_raises(self, td: TensorDict) -> None:
        with pytest.raises(RuntimeError, match="ambiguous"):
            bool(td)
        with pytest.raises(RuntimeError):
            if td:
                pass

    def test_is_empty(self) -> None:
        assert TensorDict().is_empty()
        assert TensorDict({"h": {}, "n": {"m": {}}}, [2]).is_empty()
        assert not TensorDict({"n": {"m": {"x": torch.zeros(2)}}}, [2]).is_empty()
        assert not TensorDict({"x": torch.zeros(0)}, [0]).is_empty()

    @pytest.mark.parametrize("batch", [[], [0], [4], [4, 3], [2, 0, 5]])
    def test_shape_ndim_numel(self, batch: list[int]) -> None:
        td = TensorDict({}, batch)
        assert td.shape == td.batch_size == torch.Size(batch)
        assert type(td.shape) is torch.Size
        assert td.ndim == td.batch_dims == td.dim() == len(batch)
        assert td.numel() == max(1, torch.empty(batch).numel())  # at least 1, as the peer
        assert type(td.numel()) is int


def test_str_subclass_keys_read_entries() -> None:
    class K(str):
        pass

    td = _td()
    assert td.get(K("a")) is td["a"]
    assert td[(K("b"), K("c"))] is td["b", "c"]
    td.set(K("new"), torch.zeros(4))
    assert [type(k) for k in td.keys()] == [str] * 5
