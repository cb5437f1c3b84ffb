"""Dense stacking of TensorDicts and tensorclass records: ``tclass.stack`` / ``torch.stack``
and ``tclass.cat`` / ``torch.cat`` along any batch dim, with ``out=``, nested collections,
the errors that name what differs, Python values (equal ones stay one ``NonTensorData``,
different ones become a ``NonTensorStack``), and unbind/split round trips.

Every expected value is built by hand with ``torch.stack`` / ``torch.cat`` on the members'
tensors, or as nested lists for Python values.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import tclass
from tclass import NonTensorData, NonTensorStack, TensorClass, TensorDict, errors

from strategies import SETTINGS, dims, leaf_items, make_values, tensordicts  # noqa: E402

StackError = errors.StackError

STACKS = [tclass.stack, torch.stack]
CATS = [tclass.cat, torch.cat]


class Inner(TensorClass):
    x: torch.Tensor


class Twin(TensorClass):
    """Inner's fields, another class."""

    x: torch.Tensor


class Rec(TensorClass):
    obs: torch.Tensor
    name: str
    inner: Inner


class Other(TensorClass):
    obs: torch.Tensor
    name: str
    inner: Inner


def _rec(name: str, batch: tuple[int, ...] = (2, 3)) -> Rec:
    """A record with distinct values: ``obs`` has a feature dim of 4, ``inner.x`` one of 2."""
    return Rec(
        obs=make_values([*batch, 4]),
        name=name,
        inner=Inner(x=make_values([*batch, 2]), batch_size=list(batch)),
        batch_size=list(batch),
    )


def _td(batch: tuple[int, ...] = (2, 3), label: str | None = None) -> TensorDict:
    """A TensorDict with a feature leaf, an int leaf and a nested TensorDict."""
    td = TensorDict(
        {
            "a": make_values([*batch, 4]),
            "b": make_values(batch, torch.int64),
            "n": TensorDict({"c": make_values([*batch, 2])}, list(batch)),
        },
        list(batch),
    )
    if label is not None:
        td["s"] = NonTensorData(label, list(batch))
    return td


def _assert_same(got: Any, expected: Any) -> None:
    """Same class, batch size, keys, tensors and Python values (compared as lists)."""
    assert type(got) is type(expected)
    assert got.batch_size == expected.batch_size
    got_keys = set(got.keys(include_nested=True))
    assert got_keys == set(expected.keys(include_nested=True))
    for key in got_keys:
        a, b = got.get(key), expected.get(key)
        if isinstance(a, torch.Tensor):
            assert isinstance(b, torch.Tensor) and torch.equal(a, b), key
        elif isinstance(a, (NonTensorData, NonTensorStack)):
            assert a.tolist() == b.tolist(), key
        else:  # a nested collection: its leaves are compared under their own keys
            assert type(a) is type(b) and a.batch_size == b.batch_size, key


# --- TensorDicts: dims, out=, nesting --------------------------------------------------


@pytest.mark.parametrize("stack", STACKS)
@pytest.mark.parametrize("dim", [-3, -2, -1, 0, 1, 2])
def test_stack_tensordicts_any_dim(stack: Any, dim: int) -> None:
    members = [_td(), _td(), _td()]
    out = stack(members, dim)
    pos = dim % 3
    assert type(out) is TensorDict
    assert out.batch_size == torch.stack([torch.empty(2, 3)] * 3, pos).shape
    for key in ["a", "b", ("n", "c")]:
        assert torch.equal(out[key], torch.stack([m[key] for m in members], pos)), key
    assert type(out.get("n")) is TensorDict
    assert out.get("n").batch_size == out.batch_size


@pytest.mark.parametrize("cat", CATS)
@pytest.mark.parametrize("dim", [-2, -1, 0, 1])
def test_cat_tensordicts_any_dim(cat: Any, dim: int) -> None:
    members = [_td(), _td()]
    out = cat(members, dim)
    assert out.batch_size == torch.cat([torch.empty(2, 3)] * 2, dim).shape
    for key in ["a", "b", ("n", "c")]:
        assert torch.equal(out[key], torch.cat([m[key] for m in members], dim % 2)), key


@pytest.mark.parametrize("dim", [0, -1])
def test_stack_out_written_in_place(dim: int) -> None:
    members = [_td(), _td()]
    out = torch.zeros_like(tclass.stack(members, dim))
    ptr = out["a"].data_ptr()
    result = tclass.stack(members, dim, out=out)
    assert result is out
    assert out["a"].data_ptr() == ptr
    assert torch.equal(out["a"], torch.stack([m["a"] for m in members], dim % 3))
    assert torch.equal(out["n", "c"], torch.stack([m["n", "c"] for m in members], dim % 3))


def test_cat_out_written_in_place() -> None:
    members = [_td(), _td()]
    out = torch.zeros_like(tclass.cat(members, 1))
    ptr = out["b"].data_ptr()
    assert torch.cat(members, 1, out=out) is out
    assert out["b"].data_ptr() == ptr
    assert torch.equal(out["b"], torch.cat([m["b"] for m in members], 1))


@pytest.mark.parametrize("dim", [0, 1])
def test_a_collection_given_for_the_members_stands_for_its_rows(dim: int) -> None:
    # torch.stack(batch), as a DataLoader's collate_fn=torch.stack gets one batch (the peer)
    td = TensorDict({"a": torch.arange(12).reshape(4, 3), "n": {"b": torch.ones(4, 3)}}, [4, 3])
    stacked = torch.stack(td, dim)
    assert type(stacked) is TensorDict
    assert torch.equal(stacked["a"], torch.stack(list(td["a"]), dim))
    joined = torch.cat(td)
    assert joined.batch_size == (12,) and torch.equal(joined["a"], torch.arange(12))
    assert torch.equal(tclass.stack(td)["n", "b"], td["n", "b"])


def test_out_of_wrong_batch_size_is_refused() -> None:
    members = [_td(), _td()]
    wrong = torch.zeros_like(tclass.stack(members, 1)).permute(2, 1, 0).clone()  # [3, 2, 2]
    with pytest.raises(StackError, match=r"out= has batch size \[3, 2, 2\], expected \[2, 2, 3\]"):
        tclass.stack(members, 0, out=wrong)
    with pytest.raises(StackError, match="out= has batch size"):
        tclass.cat(members, 0, out=wrong)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_stack_records_keeps_nested_types(dim: int) -> None:
    a, b = _rec("x"), _rec("x")
    out = tclass.stack([a, b], dim)
    pos = dim % 3
    assert type(out) is Rec and type(out.inner) is Inner
    assert type(out._tensordict) is TensorDict
    assert out.batch_size == torch.stack([torch.empty(2, 3)] * 2, pos).shape
    assert torch.equal(out.obs, torch.stack([a.obs, b.obs], pos))
    assert torch.equal(out.inner.x, torch.stack([a.inner.x, b.inner.x], pos))
    assert out._tensordict.get("name").data == "x" and out.unbind(pos)[1].name == "x"


@pytest.mark.parametrize("dim", [0, 1, -1, -2])
def test_cat_records_keeps_nested_types(dim: int) -> None:
    a, b = _rec("x"), _rec("y")
    out = torch.cat([a, b], dim)
    assert type(out) is Rec and type(out.inner) is Inner
    assert torch.equal(out.obs, torch.cat([a.obs, b.obs], dim % 2))
    assert torch.equal(out.inner.x, torch.cat([a.inner.x, b.inner.x], dim % 2))
    expected = [["x"] * 3] * 2 + [["y"] * 3] * 2 if dim % 2 == 0 else [["x"] * 3 + ["y"] * 3] * 2
    assert out.name == expected


def test_stack_records_out() -> None:
    a, b = _rec("x"), _rec("y")
    out = tclass.stack([a, a], 1).clone()
    out.zero_()
    assert tclass.stack([a, b], 1, out=out) is out
    assert type(out) is Rec and type(out.inner) is Inner
    assert torch.equal(out.obs, torch.stack([a.obs, b.obs], 1))
    assert torch.equal(out.inner.x, torch.stack([a.inner.x, b.inner.x], 1))
    assert out.name == [[["x"] * 3, ["y"] * 3]] * 2


def test_stack_nested_tensordict_holding_record() -> None:
    a = TensorDict({"r": _rec("x")}, [2, 3])
    b = TensorDict({"r": _rec("x")}, [2, 3])
    out = tclass.stack([a, b], 2)
    assert type(out.get("r")) is Rec and type(out["r"].inner) is Inner
    assert torch.equal(out["r"].obs, torch.stack([a["r"].obs, b["r"].obs], 2))


# --- errors ------------------------------------------------------------------------------


@pytest.mark.parametrize("join", [tclass.stack, tclass.cat, torch.stack, torch.cat])
def test_shape_mismatch_names_key_and_shapes(join: Any) -> None:
    a = _td()
    b = a.clone()
    b["a"] = make_values([2, 3, 5])
    with pytest.raises(
        StackError, match=r"entry 'a' has shape \[2, 3, 5\] in member 1 but \[2, 3, 4\] in member 0"
    ) as info:
        join([a, b], 0)
    assert "lazy_stack" in str(info.value)


def test_shape_mismatch_first_differing_key_is_named() -> None:
    a = _td()
    b = a.clone()
    b["b"] = make_values([2, 3, 7], torch.int64)
    b["a"] = make_values([2, 3, 9])
    # "a" comes first in member 0's order, so it is the one named
    with pytest.raises(StackError, match=r"entry 'a' has shape \[2, 3, 9\]"):
        tclass.stack([a, b])


def test_nested_shape_mismatch_names_nested_key() -> None:
    a = _rec("x")
    b = _rec("x")
    b.inner = Inner(x=make_values([2, 3, 5]), batch_size=[2, 3])
    with pytest.raises(
        StackError,
        match=r"entry \('inner', 'x'\) has shape \[2, 3, 5\] in member 1 but \[2, 3, 2\]",
    ) as info:
        tclass.stack([a, b])
    assert "lazy_stack" in str(info.value)


def test_batch_size_mismatch_mentions_lazy_stack() -> None:
    with pytest.raises(
        StackError, match=r"member 1 has batch size \[3, 3\] but member 0 has \[2, 3\]"
    ) as info:
        tclass.stack([_td(), _td((3, 3))])
    assert "lazy_stack" in str(info.value)


def test_key_sets_differ_names_missing_and_extra() -> None:
    a = _td()
    b = a.exclude("b")
    b["z"] = make_values([2, 3])
    for join in [tclass.stack, tclass.cat]:
        with pytest.raises(
            StackError,
            match=r"member 1 has different keys from member 0 \(missing: \['b'\], extra: \['z'\]\)",
        ) as info:
            join([a, b])
        assert "lazy_stack" in str(info.value)
        assert isinstance(info.value, KeyError)  # as the peer's cat raises


def test_mixing_tensordict_and_record_names_member() -> None:
    td = _rec("x").to_tensordict()
    with pytest.raises(StackError, match="member 1 is a Rec but member 0 is a TensorDict"):
        tclass.stack([td, _rec("x")])
    with pytest.raises(StackError, match="member 2 is a TensorDict but member 0 is a Rec"):
        tclass.stack([_rec("x"), _rec("x"), td])
    # cat joins them into member 0's kind (tests/engine/test_join_mixed_kinds.py)
    assert type(tclass.cat([td, _rec("x")])) is TensorDict
    assert type(tclass.cat([_rec("x"), _rec("x"), td])) is type(_rec("x"))


def test_mixing_record_classes_names_member() -> None:
    other = Other(
        obs=make_values([2, 3, 4]),
        name="x",
        inner=Inner(x=make_values([2, 3, 2]), batch_size=[2, 3]),
        batch_size=[2, 3],
    )
    with pytest.raises(StackError, match="member 1 is a Other but member 0 is a Rec"):
        tclass.stack([_rec("x"), other])
    with pytest.raises(StackError, match="member 1 is a Twin but member 0 is a Inner"):
        torch.stack(
            [Inner(x=torch.zeros(2), batch_size=[2]), Twin(x=torch.zeros(2), batch_size=[2])]
        )


def test_nested_record_classes_differ() -> None:
    a = TensorDict({"r": Inner(x=torch.zeros(2), batch_size=[2])}, [2])
    b = TensorDict({"r": Twin(x=torch.zeros(2), batch_size=[2])}, [2])
    with pytest.raises(StackError, match="Twin"):
        tclass.stack([a, b])


def test_python_value_against_tensor() -> None:
    a = TensorDict({"s": NonTensorData("a", [2])}, [2])
    b = TensorDict({"s": torch.zeros(2)}, [2])
    with pytest.raises(StackError, match="entry 's'"):
        tclass.stack([a, b])
    with pytest.raises(StackError, match="entry 's'"):
        tclass.stack([b, a])


# --- Python values -------------------------------------------------------------------------


@pytest.mark.parametrize("dim", [0, 1, 2, -1])
def test_equal_python_values_stack_per_element(dim: int) -> None:
    out = tclass.stack([_td(label="cat"), _td(label="cat")], dim)
    node = out.get("s")
    assert type(node) is NonTensorStack and node.data == "cat"
    assert node.batch_size == out.batch_size and node.stack_dim == dim % out.batch_dims
    assert set(_flat(out["s"])) == {"cat"} and len(_flat(out["s"])) == out.numel()
    rec = tclass.stack([_rec("cat"), _rec("cat")], dim)
    assert set(_flat(rec.name)) == {"cat"} and rec._tensordict.get("name").data == "cat"
    assert rec.unbind(dim % rec.batch_dims)[0].name == "cat"
    with pytest.warns(DeprecationWarning, match="capture"):
        capture = tclass.set_capture_non_tensor_stack(True)
    with capture:
        assert tclass.stack([_rec("cat"), _rec("cat")], dim).name == "cat"


def _flat(values: Any) -> list[Any]:
    return [v for item in values for v in _flat(item)] if isinstance(values, list) else [values]


def test_equal_python_values_cat_stay_one_value() -> None:
    out = tclass.cat([_td(label="cat"), _td(label="cat")], 1)
    assert type(out.get("s")) is NonTensorData and out.get("s").batch_size == torch.Size([2, 6])
    assert tclass.cat([_rec("v"), _rec("v")], 0).name == "v"


@pytest.mark.parametrize(
    ("dim", "expected"),
    [
        (0, [[["a"] * 3] * 2, [["b"] * 3] * 2]),
        (1, [[["a"] * 3, ["b"] * 3]] * 2),
        (2, [[["a", "b"]] * 3] * 2),
        (-1, [[["a", "b"]] * 3] * 2),
    ],
)
def test_different_python_values_become_a_stack(dim: int, expected: list[Any]) -> None:
    out = tclass.stack([_td(label="a"), _td(label="b")], dim)
    node = out.get("s")
    assert type(node) is NonTensorStack
    assert node.batch_size == out.batch_size
    assert node.tolist() == expected
    rec = torch.stack([_rec("a"), _rec("b")], dim)
    assert rec.name == expected


def test_python_value_stack_is_indexable() -> None:
    rec = tclass.stack([_rec("a"), _rec("b")], 2)  # [2, 3, 2]
    assert rec[0, 0, 1].name == "b"
    assert rec[..., 0].name == "a"  # the stack dim indexed away: the member's value
    assert rec[1, :, 1].name == "b"
    assert rec[1].name == [["a", "b"]] * 3
    assert rec[:, :, torch.tensor([1, 0, 1])].name == [[["b", "a", "b"]] * 3] * 2
    node = rec._tensordict._tensors["name"]
    assert type(node[0, 0, 0]) is NonTensorData and node[0, 0, 0].data == "a"
    assert node[0].tolist() == [["a", "b"]] * 3


def test_stack_of_python_value_stacks() -> None:
    first = tclass.stack([_td((2,), "a"), _td((2,), "b")])  # s: [[a, a], [b, b]]
    second = tclass.stack([_td((2,), "c"), _td((2,), "c")])  # s: "c" in each element
    assert type(second.get("s")) is NonTensorStack and second.get("s").data == "c"
    both = tclass.stack([first, second], 1)
    assert both.get("s").tolist() == [[["a", "a"], ["c", "c"]], [["b", "b"], ["c", "c"]]]
    again = tclass.stack([first, first])
    assert again.get("s").tolist() == [[["a", "a"], ["b", "b"]]] * 2


def test_stack_nodes_directly() -> None:
    s = tclass.stack([NonTensorData("x", [2]), NonTensorData("y", [2])])
    assert type(s) is NonTensorStack and s.tolist() == [["x", "x"], ["y", "y"]]
    mixed = torch.stack([s, NonTensorData("z", [2, 2])], 1)
    assert mixed.tolist() == [[["x", "x"], ["z", "z"]], [["y", "y"], ["z", "z"]]]
    assert tclass.cat([s, NonTensorData("z", [1, 2])]).tolist() == [
        ["x", "x"],
        ["y", "y"],
        ["z", "z"],
    ]
    same = tclass.stack([NonTensorData("q", [2]), NonTensorData("q", [2])])
    assert type(same) is NonTensorStack and same.batch_size == torch.Size([2, 2])
    assert same.tolist() == [["q", "q"], ["q", "q"]] and same[1].data == "q"


@pytest.mark.parametrize("dim", [0, 1, 2])
def test_python_values_survive_unbind(dim: int) -> None:
    a, b = _rec("a"), _rec("b")
    out = tclass.stack([a, b], dim)
    back = out.unbind(dim)
    assert len(back) == 2
    for piece, original in zip(back, [a, b]):
        assert type(piece) is Rec
        assert torch.equal(piece.obs, original.obs)
        assert piece.name == original.name  # the member's one value, as in the peer
        assert torch.equal(piece.inner.x, original.inner.x)


def test_python_values_different_per_element_after_cat_and_index() -> None:
    out = tclass.cat([_rec("a", (2,)), _rec("b", (1,)), _rec("c", (2,))], 0)
    assert out.name == ["a", "a", "b", "c", "c"]
    assert [r.name for r in out] == ["a", "a", "b", "c", "c"]
    assert out[torch.tensor([4, 2, 0])].name == ["c", "b", "a"]
    assert out[1:3].name == ["a", "b"]


# --- round trips -------------------------------------------------------------------------


@SETTINGS
@given(st.data())
def test_unbind_stack_round_trip(data: st.DataObject) -> None:
    td = data.draw(tensordicts(min_dims=1, min_side=1))
    dim = data.draw(dims(td.batch_dims))
    back = tclass.stack(td.unbind(dim), dim)
    assert back.batch_size == td.batch_size
    for path, leaf in leaf_items(td):
        assert torch.equal(back.get(path), leaf), path


@SETTINGS
@given(st.data())
def test_split_cat_round_trip(data: st.DataObject) -> None:
    td = data.draw(tensordicts(min_dims=1, min_side=1))
    dim = data.draw(dims(td.batch_dims))
    size = data.draw(st.integers(1, max(1, td.batch_size[dim])))
    back = torch.cat(td.split(size, dim), dim)
    assert back.batch_size == td.batch_size
    for path, leaf in leaf_items(td):
        assert torch.equal(back.get(path), leaf), path


@SETTINGS
@given(
    labels=st.lists(st.sampled_from(["a", "b"]), min_size=1, max_size=3),
    stack_dim=st.integers(-3, 2),
    dim=st.integers(-3, 2),
    size=st.integers(1, 3),
)
def test_record_round_trips_with_python_values(
    labels: list[str], stack_dim: int, dim: int, size: int
) -> None:
    x = tclass.stack([_rec(label) for label in labels], stack_dim)  # 3 batch dims
    _assert_same(tclass.stack(x.unbind(dim), dim).to_tensordict(), x.to_tensordict())
    _assert_same(tclass.cat(x.split(size, dim), dim).to_tensordict(), x.to_tensordict())
    again = tclass.stack(x.unbind(dim), dim)
    assert type(again) is Rec and again.name == x.name


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_tensordict_round_trip_with_python_values(dim: int) -> None:
    x = tclass.stack([_td(label="a"), _td(label="b"), _td(label="a")], 1)  # [2, 3, 3]
    _assert_same(tclass.stack(x.unbind(dim), dim), x)
    _assert_same(tclass.cat(x.split(2, dim), dim), x)
    _assert_same(torch.cat(x.chunk(3, dim), dim), x)


def test_stack_of_a_lazy_stack_of_heterogeneous_lazy_stacks() -> None:
    # Members that are lazy stacks of different shapes: their keys are found without
    # reading a leaf, and stacking goes member by member, as the peer's.
    inner = tclass.lazy_stack(
        [TensorDict({"d": torch.zeros(4, 1, 3)}, [4]), TensorDict({"d": torch.ones(4, 1, 1)}, [4])]
    )
    outer = tclass.LazyStackedTensorDict(inner, inner.clone(), stack_dim=2)
    assert list(outer.keys(True, True)) == ["d"]
    out = torch.stack([outer], -3)
    assert isinstance(out, tclass.LazyStackedTensorDict)
    assert out.batch_size == torch.Size([2, 1, 4, 2])
    assert out.stack_dim == 3
    assert [m.batch_size for m in out.tensordicts] == [torch.Size([2, 1, 4])] * 2
    assert torch.equal(out[1, 0, :, 0]["d"], torch.ones(4, 1, 1))
    both = tclass.maybe_dense_stack([outer, outer.clone()], -3)
    assert both.batch_size == torch.Size([2, 2, 4, 2])
    assert torch.equal(both[0, 1, :, 1]["d"], torch.zeros(4, 1, 3))


# --- lazy stacks indexed by tensors keep their layout, as in the peer --------------------


def _layout(node: Any) -> Any:
    """The nesting of a result: kind, batch size, stack dim and members, recursively."""
    if isinstance(node, tclass.LazyStackedTensorDict):
        members = [_layout(member) for member in node.tensordicts]
        return ("lazy", tuple(node.batch_size), node.stack_dim, members)
    return ("dense", tuple(node.batch_size))


def _two(*batch: int, count: int = 2, dim: int = 0) -> Any:
    members = [
        TensorDict({"a": torch.arange(math.prod(batch)).reshape(batch) + 10 * i}, batch)
        for i in range(count)
    ]
    return tclass.lazy_stack(members, dim)


def test_tensor_index_off_the_stack_dim_indexes_every_member() -> None:
    stack = _two(4, count=1, dim=1)
    stack.lock_()
    out = stack[[1, 2]]
    assert _layout(out) == ("lazy", (2, 1), 1, [("dense", (2,))])
    assert out.is_locked
    assert out["a"].tolist() == [[1], [2]]
    sliced = _two(3, dim=1)[[-1, 2], :2:3]  # the slice picks member 0 only: still lazy
    assert _layout(sliced) == ("lazy", (2, 1), 1, [("dense", (2,))])
    assert _layout(_two(3, dim=1)[[]]) == ("lazy", (0, 2), 1, [("dense", (0,))] * 2)
    grid = _two(3, dim=1)[torch.tensor([[0, 1], [2, 0]])]
    assert _layout(grid) == ("lazy", (2, 2, 2), 2, [("dense", (2, 2))] * 2)
    assert grid["a"][:, :, 1].tolist() == [[10, 11], [12, 10]]
    before = _two(3, dim=1)[None, [0, 2]]
    assert _layout(before) == ("lazy", (1, 2, 2), 2, [("dense", (1, 2))] * 2)


def test_tensor_index_on_the_stack_dim_runs_over_members_once_per_tensor_dim() -> None:
    stack = tclass.lazy_stack([TensorDict({"a": torch.zeros(4, 1)}, [4, 1])], 1)
    assert _layout(stack[:, [0, 0]]) == ("lazy", (4, 2, 1), 1, [("dense", (4, 1))] * 2)
    inner = ("lazy", (4, 2, 1), 1, [("dense", (4, 1))] * 2)
    assert _layout(stack[:, torch.tensor([[0, 0], [0, 0]])]) == (
        "lazy",
        (4, 2, 2, 1),
        1,
        [inner, inner],
    )
    mask = torch.tensor([[True], [False]])
    out = tclass.lazy_stack([TensorDict({}, [1]), TensorDict({}, [1])], 0)[None, mask]
    assert _layout(out) == ("lazy", (1, 1), 1, [("dense", (1,))])


@pytest.mark.peer
def test_tensor_indices_on_lazy_stacks_match_the_peer() -> None:
    td = pytest.importorskip("tensordict")

    def build(lib: Any, batch: tuple[int, ...], count: int, dim: int) -> Any:
        members = [
            lib.TensorDict({"a": torch.arange(math.prod(batch)).reshape(batch) + 10 * i}, batch)
            for i in range(count)
        ]
        return lib.lazy_stack(members, dim)

    def layout(node: Any) -> Any:
        if hasattr(node, "tensordicts"):
            return (tuple(node.batch_size), node.stack_dim, [layout(m) for m in node.tensordicts])
        return tuple(node.batch_size)

    cases: list[tuple[tuple[int, ...], int, int, Any]] = [
        ((4,), 1, 1, [1, 2]),
        ((3,), 2, 1, ([-1, 2], slice(None, 2, 3))),
        ((3,), 2, 1, torch.tensor([[0, 1], [2, 0]])),
        ((2, 3), 2, 1, (slice(None), slice(None), [0, 2])),
        ((2, 3), 2, 1, ([0, 1], slice(None), [0, 2])),
        ((4, 1), 1, 1, (slice(None), [0, 0])),
        ((4, 1), 2, 1, (slice(None), torch.tensor([[0, 1], [1, 0]]))),
    ]
    for batch, count, dim, index in cases:
        mine, peer = build(tclass, batch, count, dim)[index], build(td, batch, count, dim)[index]
        assert layout(mine) == layout(peer), index
        assert torch.equal(mine["a"], peer["a"]), index


def test_stack_and_cat_of_plain_tensors_are_torchs() -> None:
    """As the peer, ``tclass.stack`` / ``tclass.cat`` of tensors only are torch's."""
    parts = [torch.zeros(2), torch.ones(2)]
    assert torch.equal(tclass.cat(parts), torch.cat(parts))
    assert torch.equal(tclass.stack(parts, 1), torch.stack(parts, 1))
    out = torch.empty(4)
    assert tclass.cat(parts, out=out) is out and out.tolist() == [0.0, 0.0, 1.0, 1.0]
    with pytest.raises(
        errors.StackError, match="member 1 is a TensorDict but member 0 is a Tensor"
    ):
        tclass.stack([torch.zeros(2), TensorDict({}, [2])])


def _members() -> tuple[TensorDict, TensorDict, Any]:
    a = TensorDict({"x": torch.zeros(3), "n": {"y": torch.zeros(3, 2)}}, [3])
    b = TensorDict({"x": torch.zeros(3), "n": {"y": torch.zeros(3, 2)}}, [3])
    return a, b, tclass.lazy_stack([a, b])


def _row(value: float, size: int) -> TensorDict:
    return TensorDict(
        {"x": torch.full((size,), value), "n": {"y": torch.full((size, 2), value)}}, [size]
    )


@pytest.mark.parametrize(("dim", "count", "size"), [(0, 2, 3), (1, 3, 2)])
def test_stack_into_a_lazy_stack_writes_its_members(dim: int, count: int, size: int) -> None:
    a, b, out = _members()
    rows = [_row(float(i + 1), size) for i in range(count)]
    assert torch.stack(rows, dim, out=out) is out
    assert torch.equal(torch.stack([a["x"], b["x"]]), torch.stack([r["x"] for r in rows], dim))
    assert torch.equal(b["n", "y"], torch.stack([r["n", "y"] for r in rows], dim)[1])


def test_cat_into_a_lazy_stack_and_a_collection_holding_one_write_the_members() -> None:
    a, b, out = _members()
    part = _row(1.0, 3).unsqueeze(0)
    torch.cat([part, part], out=out)
    assert (a["x"] == 1).all() and (b["n", "y"] == 1).all()
    holder = TensorDict({"s": out}, [2])
    torch.stack([TensorDict({"s": _row(4.0, 3)}, [])] * 2, out=holder)
    assert (a["x"] == 4).all() and (b["n", "y"] == 4).all()
    with pytest.raises(StackError, match=r"out= has batch size \[2, 3\], expected \[3, 3\]"):
        torch.cat([part, part, part], out=out)
    assert (a["x"] == 4).all()
