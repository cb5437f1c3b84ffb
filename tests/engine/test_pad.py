"""Tests for tclass._engine._pad (``pad``: grow or crop batch dims) and _pad_sequence
(``pad_sequence``: pad members to a common length and stack them), with records, Python
values, masks, every error path, and the peer's results where ``tensordict`` is installed.

Leaf values are distinct (``arange``-based) so that a misplaced element changes the
comparison; expected results are written out by hand or built with plain torch.
"""

from __future__ import annotations

import pathlib
import warnings
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given
from hypothesis import strategies as st

import tclass
from tclass import (
    MetaData,
    NonTensorData,
    NonTensorStack,
    TensorClass,
    TensorDict,
    errors,
    pad,
    pad_sequence,
)

from strategies import SETTINGS  # noqa: E402

ShapeError = errors.ShapeError
StackError = errors.StackError
DimError = errors.DimError


class Inner(TensorClass):
    x: torch.Tensor


class Episode(TensorClass):
    obs: torch.Tensor
    reward: torch.Tensor
    env: str


class Nested(TensorClass):
    obs: torch.Tensor
    inner: Inner


def _values(*shape: int, start: int = 0) -> torch.Tensor:
    """Distinct float values of ``shape``, counting from ``start``."""
    count = 1
    for size in shape:
        count *= size
    return torch.arange(start, start + count, dtype=torch.float32).reshape(shape)


def _member(length: int, start: int = 0) -> TensorDict:
    """batch [length]: a feature leaf, an int leaf, a nested TensorDict."""
    return TensorDict(
        {
            "x": _values(length, 2, start=start),
            "y": torch.arange(start, start + length),
            "n": TensorDict({"z": _values(length, 3, start=start + 100)}, [length]),
        },
        [length],
    )


def _episode(length: int, env: str = "cartpole", start: int = 0) -> Episode:
    return Episode(
        obs=_values(length, 4, start=start),
        reward=_values(length, start=start + 50),
        env=env,
        batch_size=[length],
    )


def _peer() -> Any:
    return pytest.importorskip("tensordict")


def _quiet(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Calls the peer with its own deprecation warnings silenced (warnings are errors)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kwargs)


# --- pad: tensors -----------------------------------------------------------------------


@pytest.mark.parametrize("amounts", [(1, 2), (0, 3), (2, 0), (0, 0)])
def test_pad_1d_batch_pads_every_leaf_at_dim_0(amounts: tuple[int, int]) -> None:
    td = _member(3)
    out = pad(td, amounts, value=-1.0)
    left, right = amounts
    assert out.batch_size == torch.Size([3 + left + right])
    assert torch.equal(out["x"], F.pad(td["x"], (0, 0, left, right), value=-1.0))
    assert torch.equal(out["y"], F.pad(td["y"], (left, right), value=-1))
    assert out["y"].dtype == torch.int64
    assert out["x"][left : left + 3].equal(td["x"])
    assert (out["x"][:left] == -1).all() and (out["x"][left + 3 :] == -1).all()


def test_pad_2d_batch_pads_both_dims_not_features() -> None:
    td = TensorDict({"a": _values(2, 3, 4), "b": _values(2, 3)}, [2, 3])
    out = pad(td, [1, 0, 0, 2])
    assert out.batch_size == torch.Size([3, 5])
    assert out["a"].shape == torch.Size([3, 5, 4])
    expected = torch.zeros(3, 5, 4)
    expected[1:, :3] = td["a"]
    assert torch.equal(out["a"], expected)
    assert torch.equal(out["b"], F.pad(td["b"], (0, 2, 1, 0)))


def test_pad_with_fewer_pairs_than_batch_dims_leaves_later_dims_alone() -> None:
    td = TensorDict({"a": _values(2, 3)}, [2, 3])
    out = pad(td, (1, 1))
    assert out.batch_size == torch.Size([4, 3])
    assert torch.equal(out["a"], torch.cat([torch.zeros(1, 3), td["a"], torch.zeros(1, 3)]))


def test_pad_negative_amounts_crop_like_functional_pad() -> None:
    td = TensorDict({"a": _values(5, 2)}, [5])
    out = pad(td, [-1, 2], value=7.0)
    assert out.batch_size == torch.Size([6])
    assert torch.equal(out["a"][:4], td["a"][1:])
    assert (out["a"][4:] == 7).all()
    cropped = pad(td, [-2, -3])
    assert cropped.batch_size == torch.Size([0])
    assert cropped["a"].shape == torch.Size([0, 2])


def test_pad_keeps_bool_dtype_and_fills_with_value() -> None:
    td = TensorDict({"done": torch.tensor([True, False])}, [2])
    out = pad(td, [1, 1], value=1)
    assert out["done"].dtype == torch.bool
    assert out.get("done").tolist() == [True, True, False, True]


def test_pad_nested_collection_keeps_its_own_extra_batch_dims() -> None:
    inner = TensorDict({"z": _values(3, 4, 2)}, [3, 4])
    td = TensorDict({"inner": inner, "x": _values(3)}, [3])
    out = pad(td, [1, 1])
    assert out.batch_size == torch.Size([5])
    assert out.get("inner").batch_size == torch.Size([5, 4])
    assert torch.equal(out["inner", "z"][1:4], inner["z"])
    assert (out["inner", "z"][[0, 4]] == 0).all()


def test_pad_returns_a_new_collection_and_leaves_input_alone() -> None:
    td = _member(2)
    before = td.clone()
    out = pad(td, [])
    assert out is not td
    assert out["x"].data_ptr() != td["x"].data_ptr()
    assert (out == td).all()
    pad(td, [1, 1])
    assert (td == before).all()
    assert td.batch_size == torch.Size([2])


def test_pad_copies_a_nested_lazy_stack_padded_along_its_stack_dim_only() -> None:
    """Found by the differential fuzzer: the members kept were the source's own (a later
    write into the source showed in the padded result); F.pad, and the peer, copy."""
    members = [TensorDict({"b": torch.zeros(2)}, [2]) for _ in range(3)]
    td = TensorDict({"n": tclass.lazy_stack(members, 0)}, [3, 2])
    out = pad(td, [0, 1])
    assert out.batch_size == torch.Size([4, 2])
    for member in members:
        member["b"].add_(1)
        member["z"] = torch.ones(2)
    assert torch.equal(out["n", "b"], torch.zeros(4, 2))
    assert "z" not in out["n"].keys()


def test_pad_keeps_device_and_lock_free() -> None:
    td = TensorDict({"x": _values(2)}, [2], device="cpu")
    out = pad(td, [0, 1])
    assert out.device == torch.device("cpu")
    assert not out.is_locked


# --- pad: records and Python values --------------------------------------------------


def test_pad_record_keeps_its_class_and_fields() -> None:
    episode = _episode(3)
    out = pad(episode, [2, 0])
    assert type(out) is Episode
    assert out.batch_size == torch.Size([5])
    assert torch.equal(out.obs[2:], episode.obs)
    assert (out.obs[:2] == 0).all()
    assert torch.equal(out.reward, F.pad(episode.reward, (2, 0)))
    assert out.env == [None, None, "cartpole", "cartpole", "cartpole"]  # new slots: None


def test_pad_nested_record_stays_its_class() -> None:
    record = Nested(obs=_values(2, 2), inner=Inner(x=_values(2, 3), batch_size=[2]), batch_size=[2])
    out = pad(record, [0, 1], value=5.0)
    assert type(out.inner) is Inner
    assert out.inner.batch_size == torch.Size([3])
    assert out.inner.x[2].tolist() == [5.0, 5.0, 5.0]


def test_pad_record_over_a_lazy_stack_is_a_record_over_one_dense_tensordict() -> None:
    """Found by the differential fuzzer: a record over a lazy stack (``lazy_stack`` of
    records) stayed lazy, where a plain lazy stack (and the peer's record) is padded as
    its dense stack; a ``narrow`` of the result was then a copy, not a view."""
    episode = _episode(4)
    lazy = tclass.lazy_stack(list(episode.chunk(2, 0)), 0)  # batch [2, 2]
    out = pad(lazy, [1, 0], value=1.5)
    assert type(out) is Episode
    assert out.batch_size == torch.Size([3, 2])
    expected = F.pad(episode.obs.reshape(2, 2, -1), (0, 0, 0, 0, 1, 0), value=1.5)
    assert torch.equal(out.obs, expected)
    view = out.narrow(1, 0, 2)
    view.obs.add_(1)  # a view of the padded record, as for a TensorDict
    assert torch.equal(out.obs, expected + 1)


def test_pad_keeps_names_on_nested_collections_and_lazy_stacks() -> None:
    td = TensorDict(
        {"m": {"a": torch.arange(4.0).reshape(4, 1)}, "c": torch.arange(4.0)}, [4], names=["i"]
    )
    out = pad(td, [1, 0])
    assert out.names == ["i"]
    assert out["m"].names == ["i"]  # as the peer: nested collections keep the names too
    lazy = tclass.lazy_stack([td, td.clone()], 1)
    padded = pad(lazy, [1, 0])  # densified, as the peer
    assert padded.names == ["i", None]
    assert padded["m"].names == ["i", None]
    assert torch.equal(padded["c"][1:], torch.stack([td["c"], td["c"]], 1))


def test_pad_keeps_the_names_of_a_nested_collections_own_dims() -> None:
    inner = TensorDict({"a": torch.zeros(1, 2, 2, 1)}, [1, 2, 2, 1], names=[None, "i", "j", None])
    td = TensorDict({"n": inner}, [1])
    padded = pad(td, [2, 0], value=-1.0)
    assert padded.names == [None]
    assert padded["n"].names == [None, "i", "j", None]
    assert padded["n"]["a"].shape == (3, 2, 2, 1)


def test_pad_shared_value_becomes_a_stack_with_none_in_new_slots() -> None:
    td = TensorDict({"x": _values(2), "label": NonTensorData("cat", [2])}, [2])
    node = pad(td, [1, 2]).get("label")
    assert type(node) is NonTensorStack
    assert node.tolist() == [None, "cat", "cat", None, None]  # as the peer
    assert pad(td, [-1, 0]).get("label").tolist() == ["cat"]
    assert type(pad(td, [0, 0]).get("label")) is NonTensorData  # unchanged: kept shared
    listed = TensorDict({"tags": NonTensorData([1, 2], [1, 2])}, [1, 2])
    assert pad(listed, [0, 0, 0, 1]).get("tags").tolist() == [[[1, 2], [1, 2], None]]


def test_pad_of_a_shared_value_along_dim_0_reads_one_value_per_row() -> None:
    # Rows stacked beside the new slots, as the peer nests them: a row reads one value.
    td = TensorDict({"x": torch.zeros(2, 3), "label": NonTensorData("cat", [2, 3])}, [2, 3])
    out = pad(td, [1, 1])
    assert [row["label"] for row in out.unbind(0)] == [None, "cat", "cat", None]
    assert out[1, 2]["label"] == "cat" and out[0, 1]["label"] is None
    assert out.get("label").tolist() == [[None] * 3, ["cat"] * 3, ["cat"] * 3, [None] * 3]


def test_pad_of_a_shared_value_along_a_later_dim_reads_a_list_per_row() -> None:
    td = TensorDict({"label": NonTensorData("cat", [2, 2])}, [2, 2])
    out = pad(td, [0, 0, 0, 1])
    assert out[0]["label"] == ["cat", "cat", None]  # the row holds padded slots
    assert out[0, 1]["label"] == "cat" and out[1, 2]["label"] is None


def test_pad_sequence_of_shared_values_reads_one_value_per_padded_row() -> None:
    short = TensorDict({"x": torch.zeros(2, 2), "s": "a"}, [2, 2])
    long = TensorDict({"x": torch.zeros(3, 2), "s": "b"}, [3, 2])
    out = pad_sequence([short, long])
    assert [out[0, i]["s"] for i in range(3)] == ["a", "a", None]
    assert [out[1, i]["s"] for i in range(3)] == ["b", "b", "b"]
    assert out[0]["s"] == [["a", "a"], ["a", "a"], [None, None]]


def test_pad_sequence_keeps_one_value_node_per_member() -> None:
    """Each member's Python values are padded on their own and kept as one member of the
    result's stack, as the peer's lazy stack of them: a member that is not padded reads
    back as it was (one value), and ``unpad_sequence`` gives each member back as its
    input's kind (program 17,000,114 L4 of extra; tclass scattered every member's values
    into one per-element array, so every row read a list)."""
    x = TensorDict({"s": "a", "x": torch.zeros(4, 2, 2)}, [4, 2])
    out = pad_sequence([x, x[:1]], return_mask=True)
    node = out.get("s")
    assert isinstance(node, NonTensorStack) and node.batch_size == (2, 4, 2)
    assert [type(m) for m in node.tensordicts] == [NonTensorData, NonTensorStack]
    assert out[0]["s"] == "a" and out[0, 3]["s"] == "a"
    assert out[1, 0]["s"] == "a" and out[1, 1]["s"] is None
    assert out["s"] == [[["a", "a"]] * 4, [["a", "a"]] + [[None, None]] * 3]
    assert (node == "a").tolist() == [[[True, True]] * 4, [[True, True]] + [[False, False]] * 3]
    assert (out == out.clone()).all()
    back = tclass.unpad_sequence(out)
    assert [type(m.get("s")) for m in back.tensordicts] == [NonTensorData, NonTensorStack]
    assert back[0]["s"] == "a" and back[1]["s"] == [["a", "a"]]
    # stacked or concatenated again: every row still read as its member's
    assert tclass.stack([out, out], 1)[0, 0]["s"] == "a"
    assert tclass.cat([out, out], 1).get("s").tolist()[1][4:] == [["a", "a"]] + [[None] * 2] * 3


def test_pad_sequence_of_kept_members_saves_and_loads(tmp_path: pathlib.Path) -> None:
    x = TensorDict({"s": "a", "x": torch.zeros(4, 2)}, [4])
    out = pad_sequence([x, x[:1]])
    expected = [["a"] * 4, ["a", None, None, None]]
    out.memmap(tmp_path / "mm")
    assert TensorDict.load_memmap(tmp_path / "mm").get("s").tolist() == expected  # as the peer
    torch.save(out, tmp_path / "td.pt")
    loaded = torch.load(tmp_path / "td.pt", weights_only=False)
    assert loaded.get("s").tolist() == expected and loaded[0]["s"] == "a"
    assert out.consolidate().get("s").tolist() == expected
    assert out.clone().contiguous(inplace=True).get("s").tolist() == expected


def test_pad_sequence_of_values_over_no_elements_keeps_them_as_stack_does() -> None:
    """No member padded (one member, or members of one length) over no elements: the
    values are stacked as ``torch.stack`` stacks them, so each row reads its member's
    value back (``unpad_sequence`` too), as the peer's, where the scattered per-element
    array of no elements kept none (program 17,000,471 L4 of extra)."""
    empty = TensorDict(
        {"a": torch.zeros(2, 3, 0), "v": NonTensorData(7, batch_size=[2, 3, 0])}, [2, 3, 0]
    )
    out = pad_sequence([empty])
    row = out[0].get("v")
    assert type(row) is NonTensorData and row.data == 7 and row.batch_size == (2, 3, 0)
    back = tclass.unpad_sequence(pad_sequence([empty], return_mask=True))
    assert [m.get("v").data for m in back.tensordicts] == [7]
    assert [pad_sequence([empty, empty.clone()])[i].get("v").data for i in range(2)] == [7, 7]


def test_pad_in_place_of_a_shared_value_itself_is_refused() -> None:
    node = NonTensorData("a", batch_size=[2])
    with pytest.raises(errors.UnsupportedError, match="cannot preserve the identity") as info:
        pad(node, [0, 1], inplace=True)
    assert isinstance(info.value, RuntimeError) and node.batch_size == torch.Size([2])
    assert pad(node, [0, 0], inplace=True) is node


def test_pad_per_element_values_get_none_in_new_slots() -> None:
    td = TensorDict({"x": _values(3), "name": NonTensorStack.from_list(["a", "b", "c"])}, [3])
    out = pad(td, [1, 2])
    assert type(out.get("name")) is NonTensorStack
    assert out.get("name").tolist() == [None, "a", "b", "c", None, None]


def test_pad_per_element_values_crop() -> None:
    td = TensorDict({"name": NonTensorStack.from_list(["a", "b", "c", "d"])}, [4])
    assert pad(td, [-1, -1]).get("name").tolist() == ["b", "c"]
    assert pad(td, [-3, 1]).get("name").tolist() == ["d", None]
    assert pad(td, [-4, 0]).get("name").tolist() == []


def test_pad_per_element_values_in_two_dims() -> None:
    stack = tclass.stack(
        [NonTensorStack.from_list(["a", "b"]), NonTensorStack.from_list(["c", "d"])]
    )
    td = TensorDict({"name": stack}, [2, 2])
    out = pad(td, [0, 1, 1, 0])
    assert out.get("name").tolist() == [[None, "a", "b"], [None, "c", "d"], [None, None, None]]


def test_pad_per_element_list_values_are_kept_whole() -> None:
    tags = NonTensorStack(NonTensorData([1, 2]), NonTensorData([3]))  # a list per element
    td = TensorDict({"tags": tags}, [2])
    assert pad(td, [1, 0]).get("tags").tolist() == [None, [1, 2], [3]]


def test_pad_ragged_value_stack_as_the_peer() -> None:
    # from_list of ragged lists is a ragged stack [2, -1]: padded as a lazy stack, new
    # members empty along the ragged dim (read as [], as the peer's)
    td = TensorDict({"tags": NonTensorStack.from_list([[1, 2], [3]])}, [2])
    padded = pad(td, [1, 0]).get("tags")
    assert padded.batch_size == (3, -1) and padded.tolist() == [[], [1, 2], [3]]
    both = pad(NonTensorStack.from_list([["a", "b"], ["c"]]), [1, 1])
    assert both.tolist() == [[], ["a", "b"], ["c"], []]
    # along the ragged dim: each member padded with None
    inner = pad(NonTensorStack.from_list([[1, 2], [3]]), [0, 0, 1, 0])
    assert inner.batch_size == (2, -1) and inner.tolist() == [[None, 1, 2], [None, 3]]
    # a crop to members of one size is dense again
    cropped = pad(NonTensorStack.from_list([[1, 2], [3]]), [-1, 0])
    assert cropped.batch_size == (1, 1) and cropped.tolist() == [[3]]
    deeper = pad(NonTensorStack.from_list([[[1], [2, 3]], [[4], [5, 6]]]), [0, 1])
    assert deeper.batch_size == (3, 2, -1) and deeper.tolist()[2] == [[], []]


def test_pad_record_with_different_str_values() -> None:
    episodes = tclass.stack([_episode(2, "a"), _episode(2, "b")])
    out = pad(episodes, [0, 1])
    assert out.env == [["a", "a"], ["b", "b"], [None, None]]


def test_pad_python_value_node_directly() -> None:
    assert pad(NonTensorData("v", [2]), [1, 1]).batch_size == torch.Size([4])
    assert pad(NonTensorStack.from_list([1, 2]), [0, 1]).tolist() == [1, 2, None]


def test_pad_in_place_keeps_a_stack_of_values_and_pads_it() -> None:
    td = TensorDict({"x": _values(3), "instr": NonTensorStack("a", "b", "c")}, [3])
    instr = td.get("instr")
    assert pad(td, [0, 2], inplace=True) is td
    assert td.get("instr") is instr and instr.tolist() == ["a", "b", "c", None, None]
    stack = NonTensorStack("a", "b")
    assert pad(stack, [0, 1], inplace=True) is stack and stack.tolist() == ["a", "b", None]
    assert stack.batch_size == torch.Size([3])
    with pytest.raises(errors.LockedError, match="locked TensorDict \\(a NonTensorStack"):
        pad(stack.lock_(), [0, 1], inplace=True)


def test_pad_in_place_of_a_lazy_stack_along_the_members_dims() -> None:
    lazy = tclass.lazy_stack([TensorDict(x=torch.ones(4), batch_size=[4]) for _ in range(2)])
    members = lazy.tensordicts
    assert lazy.pad([0, 0, 0, 1], inplace=True) is lazy and lazy.tensordicts == members
    assert lazy.batch_size == torch.Size([2, 5]) and members[0]["x"].tolist()[-1] == 0.0


@pytest.mark.parametrize("fill", [-1, 300])
def test_pad_lazy_stack_members_refuse_a_fill_their_dtype_cannot_hold(fill: int) -> None:
    # New members along the stack dim check the fill as F.pad does for the members' dims
    # (torch.full_like would wrap -1 to 255 silently).
    td = TensorDict(b=torch.zeros(2, 3, dtype=torch.uint8), batch_size=[2])
    lazy = tclass.lazy_stack([td[0], td[1]], 0)
    with pytest.raises(RuntimeError, match="cannot be converted to type uint8_t"):
        F.pad(td["b"], [0, 0, 1, 0], value=fill)
    for inplace in (False, True):
        with pytest.raises(RuntimeError, match="cannot be converted to type uint8_t"):
            pad(lazy, [1, 0], value=fill, inplace=inplace)
    assert lazy.batch_size == torch.Size([2]) and len(lazy.tensordicts) == 2
    assert (
        pad(lazy, [1, 0], value=1.5)["b"].tolist()
        == F.pad(td["b"], [0, 0, 1, 0], value=1.5).tolist()
    )


# --- pad: errors ------------------------------------------------------------------------


def test_pad_odd_length_raises() -> None:
    with pytest.raises(ShapeError, match=r"odd number of entries \(3\).*\(left, right\) pair"):
        pad(_member(2), [1, 1, 1])


def test_pad_more_pairs_than_batch_dims_raises() -> None:
    with pytest.raises(ShapeError, match=r"pads 2 dims but the batch size \[2\] has 1"):
        pad(_member(2), [0, 1, 0, 1])


@pytest.mark.parametrize("bad", [[1.0, 0], [True, 0], ["1", "0"]])
def test_pad_non_int_entries_raise(bad: Any) -> None:
    with pytest.raises(ShapeError, match="every entry must be an int"):
        pad(_member(2), bad)


@pytest.mark.parametrize("bad", [3, "ab", None])
def test_pad_non_sequence_raises(bad: Any) -> None:
    with pytest.raises(ShapeError, match="must be a sequence of ints"):
        pad(_member(2), bad)


def test_pad_crop_past_zero_raises_naming_the_dim() -> None:
    td = TensorDict({"a": _values(2, 3)}, [2, 3])
    with pytest.raises(
        ShapeError,
        match=r"crops batch dim 1 \(size 3\) to a negative output size -1; crop at most 3",
    ):
        pad(td, [0, 0, -2, -2])


def test_pad_errors_are_value_errors_and_tclass_errors() -> None:
    with pytest.raises(ValueError) as info:
        pad(_member(2), [1])
    assert isinstance(info.value, tclass.TclassError)
    assert isinstance(info.value, RuntimeError)  # what the peer raises


@SETTINGS
@given(
    st.lists(st.integers(1, 3), min_size=1, max_size=3),
    st.data(),
)
def test_pad_then_crop_gives_back_the_input(batch: list[int], data: st.DataObject) -> None:
    td = TensorDict({"a": _values(*batch, 2)}, batch)
    pairs = data.draw(st.lists(st.integers(0, 2), min_size=2 * len(batch), max_size=2 * len(batch)))
    out = pad(td, pairs, value=-1.0)
    assert out.batch_size == torch.Size(
        [b + pairs[2 * i] + pairs[2 * i + 1] for i, b in enumerate(batch)]
    )
    assert (out["a"] == -1).sum() == out["a"].numel() - td["a"].numel()
    back = pad(out, [-p for p in pairs])
    assert torch.equal(back["a"], td["a"])


@pytest.mark.peer
@pytest.mark.parametrize("amounts", [[1, 2], [0, 0, 1, 1], [-1, 1, 2, -1], [2, -3]])
def test_pad_matches_the_peer_on_tensors(amounts: list[int]) -> None:
    peer = _peer()
    source = {
        "a": _values(4, 3, 2),
        "b": torch.arange(12).reshape(4, 3),
        "n": {"c": _values(4, 3, 5)},
    }
    ours = pad(TensorDict(source, [4, 3]), amounts, value=3.0)
    theirs = _quiet(peer.pad, peer.TensorDict(source, [4, 3]), amounts, value=3.0)
    assert ours.batch_size == theirs.batch_size
    for key in [("a",), ("b",), ("n", "c")]:
        assert torch.equal(ours[key], theirs[key]), key


# --- pad_sequence: padding a batch dim ---------------------------------------------------


def test_pad_sequence_batch_dim_right() -> None:
    members = [_member(2), _member(3, start=10)]
    out = pad_sequence(members)
    assert type(out) is TensorDict
    assert out.batch_size == torch.Size([2, 3])
    assert out.get("x").tolist() == [
        [[0.0, 1.0], [2.0, 3.0], [0.0, 0.0]],
        [[10.0, 11.0], [12.0, 13.0], [14.0, 15.0]],
    ]
    assert out.get("y").tolist() == [[0, 1, 0], [10, 11, 12]]
    assert out.get("n").batch_size == torch.Size([2, 3])
    assert torch.equal(out["n", "z"][0, :2], members[0]["n", "z"])
    assert (out["n", "z"][0, 2] == 0).all()


def test_pad_sequence_batch_dim_left_and_padding_value() -> None:
    out = pad_sequence([_member(1), _member(3, start=10)], padding_value=-1, padding_side="left")
    assert out.get("y").tolist() == [[-1, -1, 0], [10, 11, 12]]
    assert out["x"][0].tolist() == [[-1.0, -1.0], [-1.0, -1.0], [0.0, 1.0]]


@pytest.mark.parametrize("side", ["right", "left"])
def test_pad_sequence_masks_are_exact(side: str) -> None:
    out = pad_sequence([_member(1), _member(3), _member(2)], return_mask=True, padding_side=side)
    masks = out["masks"]
    assert isinstance(masks, TensorDict)
    assert masks.batch_size == torch.Size([3, 3])
    expected = (
        [[True, False, False], [True, True, True], [True, True, False]]
        if side == "right"
        else [[False, False, True], [True, True, True], [False, True, True]]
    )
    assert set(masks.keys(include_nested=True, leaves_only=True)) == {"x", "y", ("n", "z")}
    for key in ["x", "y", ("n", "z")]:
        assert masks[key].dtype == torch.bool
        assert masks[key].tolist() == expected, key


def test_pad_sequence_masks_are_independent_tensors() -> None:
    out = pad_sequence([_member(1), _member(2)], return_mask=True)
    out["masks", "x"][0, 0] = False
    assert out["masks", "y"][0, 0]


def test_pad_sequence_mask_under_custom_and_nested_key() -> None:
    members = [_member(1), _member(2)]
    custom = pad_sequence(members, return_mask="valid")
    assert custom["valid", "y"].tolist() == [[True, False], [True, True]]
    assert "masks" not in custom.keys()
    nested = pad_sequence(members, return_mask=("extra", "valid"))
    assert nested["extra", "valid", "x"].tolist() == [[True, False], [True, True]]
    assert nested.get("extra").batch_size == torch.Size([2, 2])


def test_pad_sequence_without_masks_adds_no_key() -> None:
    out = pad_sequence([_member(1), _member(2)], return_mask=False)
    assert set(out.keys()) == {"x", "y", "n"}


def test_pad_sequence_existing_mask_key_raises() -> None:
    members = [TensorDict({"masks": _values(n)}, [n]) for n in (1, 2)]
    with pytest.raises(errors.KeyConflictError, match="already has an entry 'masks'.*another key"):
        pad_sequence(members, return_mask=True)
    assert pad_sequence(members, return_mask="valid")["valid", "masks"].shape == (2, 2)


def test_pad_sequence_second_batch_dim() -> None:
    members = [TensorDict({"a": _values(2, n, 3, start=10 * n)}, [2, n]) for n in (1, 3)]
    out = pad_sequence(members, pad_dim=1, return_mask=True)
    assert out.batch_size == torch.Size([2, 2, 3])
    assert out["a"].shape == torch.Size([2, 2, 3, 3])
    assert torch.equal(out["a"][0, :, :1], members[0]["a"])
    assert (out["a"][0, :, 1:] == 0).all()
    assert torch.equal(out["a"][1], members[1]["a"])
    assert out["masks", "a"].tolist() == [[[True, False, False]] * 2, [[True, True, True]] * 2]


def test_pad_sequence_first_of_two_batch_dims() -> None:
    members = [TensorDict({"a": _values(n, 2)}, [n, 2]) for n in (3, 1)]
    out = pad_sequence(members, return_mask=True)
    assert out.batch_size == torch.Size([2, 3, 2])
    assert out["masks", "a"].tolist() == [
        [[True, True]] * 3,
        [[True, True], [False, False], [False, False]],
    ]


def test_pad_sequence_nested_collection_with_extra_batch_dims() -> None:
    members = [TensorDict({"n": TensorDict({"z": _values(n, 4, 2)}, [n, 4])}, [n]) for n in (2, 1)]
    out = pad_sequence(members, return_mask=True)
    assert out.get("n").batch_size == torch.Size([2, 2, 4])
    assert torch.equal(out["n", "z"][1, 0], members[1]["n", "z"][0])
    assert (out["n", "z"][1, 1] == 0).all()
    assert out["masks", "n", "z"].shape == torch.Size([2, 2])


def test_pad_sequence_zero_length_members() -> None:
    out = pad_sequence([_member(0), _member(2)], return_mask=True)
    assert out.batch_size == torch.Size([2, 2])
    assert out["masks", "y"].tolist() == [[False, False], [True, True]]
    empty = pad_sequence([_member(0), _member(0)])
    assert empty.batch_size == torch.Size([2, 0])


def test_pad_sequence_single_member_is_a_stack_of_one() -> None:
    member = _member(3)
    out = pad_sequence([member])
    assert out.batch_size == torch.Size([1, 3])
    assert torch.equal(out["x"][0], member["x"])


def test_pad_sequence_promotes_dtypes_like_stack() -> None:
    members = [
        TensorDict({"a": torch.tensor([1, 2])}, [2]),
        TensorDict({"a": torch.tensor([0.5])}, [1]),
    ]
    out = pad_sequence(members)
    assert out["a"].dtype == torch.float32
    assert out.get("a").tolist() == [[1.0, 2.0], [0.5, 0.0]]


def test_pad_sequence_members_with_and_without_device() -> None:
    members = [TensorDict({"a": _values(1)}, [1], device="cpu"), TensorDict({"a": _values(2)}, [2])]
    out = pad_sequence(members)
    assert out.device is None
    assert out.get("a").tolist() == [[0.0, 0.0], [0.0, 1.0]]
    same = pad_sequence([TensorDict({"a": _values(n)}, [n], device="cpu") for n in (1, 2)])
    assert same.device == torch.device("cpu")


def test_pad_sequence_leaves_members_alone() -> None:
    members = [_member(1), _member(2)]
    copies = [m.clone() for m in members]
    pad_sequence(members, return_mask=True)
    for member, copy in zip(members, copies):
        assert (member == copy).all()
        assert "masks" not in member.keys()


# --- pad_sequence: Python values -----------------------------------------------------


def test_pad_sequence_equal_values_are_per_element_with_none_padding() -> None:
    members = [TensorDict({"x": _values(n), "s": NonTensorData("hi", [n])}, [n]) for n in (1, 3)]
    out = pad_sequence(members, return_mask=True)
    node = out.get("s")
    assert isinstance(node, NonTensorStack) and node.batch_size == torch.Size([2, 3])
    assert out["s"] == [["hi", None, None], ["hi", "hi", "hi"]]  # as the peer
    assert set(out["masks"].keys()) == {"x"}  # Python values have no masks
    with pytest.warns(DeprecationWarning, match="capture"):
        capture = tclass.set_capture_non_tensor_stack(True)
    with capture:  # one value describing every element, padded ones included
        assert pad_sequence(members).get("s").data == "hi"


@pytest.mark.parametrize("side", ["right", "left"])
def test_pad_sequence_different_values_go_at_valid_positions(side: str) -> None:
    members = [
        TensorDict({"s": NonTensorData("a", [1])}, [1]),
        TensorDict({"s": NonTensorStack.from_list(["b", "c", "d"])}, [3]),
        TensorDict({"s": NonTensorData("a", [2])}, [2]),
    ]
    out = pad_sequence(members, padding_side=side)
    assert isinstance(out.get("s"), NonTensorStack)
    if side == "right":
        assert out.get("s").tolist() == [["a", None, None], ["b", "c", "d"], ["a", "a", None]]
    else:
        assert out.get("s").tolist() == [[None, None, "a"], ["b", "c", "d"], [None, "a", "a"]]


def test_pad_sequence_feature_dim_stacks_python_values_like_stack() -> None:
    members = [
        TensorDict({"a": _values(2, n), "s": NonTensorData(s, [2])}, [2])
        for n, s in ((1, "u"), (3, "u"))
    ]
    shared = pad_sequence(members, pad_dim=1)
    assert type(shared.get("s")) is NonTensorStack and shared.batch_size == torch.Size([2, 2])
    assert shared["s"] == [["u", "u"], ["u", "u"]]
    members[1]["s"] = NonTensorData("v", [2])
    out = pad_sequence(members, pad_dim=1)
    assert out.get("s").tolist() == [["u", "u"], ["v", "v"]]


# --- pad_sequence: padding a feature dim -------------------------------------------------


def test_pad_sequence_feature_dim_pads_each_key_to_its_own_length() -> None:
    members = [
        TensorDict({"a": _values(2, 3), "b": _values(2, 4, 5)}, [2]),
        TensorDict({"a": _values(2, 5, start=10), "b": _values(2, 1, 5, start=100)}, [2]),
    ]
    out = pad_sequence(members, pad_dim=1, return_mask=True)
    assert out.batch_size == torch.Size([2, 2])
    assert out["a"].shape == torch.Size([2, 2, 5])
    assert out["b"].shape == torch.Size([2, 2, 4, 5])
    assert torch.equal(out["a"][0], F.pad(members[0]["a"], (0, 2)))
    assert torch.equal(out["b"][1, :, :1], members[1]["b"])
    assert out["masks", "a"].tolist() == [[[True] * 3 + [False] * 2] * 2, [[True] * 5] * 2]
    assert out["masks", "b"].tolist() == [[[True] * 4] * 2, [[True, False, False, False]] * 2]


def test_pad_sequence_feature_dim_left() -> None:
    members = [TensorDict({"a": _values(1, n)}, [1]) for n in (1, 3)]
    out = pad_sequence(members, pad_dim=1, padding_side="left", padding_value=9, return_mask=True)
    assert out.get("a").tolist() == [[[9.0, 9.0, 0.0]], [[0.0, 1.0, 2.0]]]
    assert out["masks", "a"].tolist() == [[[False, False, True]], [[True, True, True]]]


def test_pad_sequence_deeper_feature_dim_mask_shape() -> None:
    members = [TensorDict({"a": _values(2, 3, n)}, [2]) for n in (2, 4)]
    out = pad_sequence(members, pad_dim=2, return_mask=True)
    assert out["a"].shape == torch.Size([2, 2, 3, 4])
    mask = out["masks", "a"]
    assert mask.shape == torch.Size([2, 2, 3, 4])
    assert mask.sum().item() == 2 * 3 * 2 + 2 * 3 * 4
    assert mask[0, 1, 2].tolist() == [True, True, False, False]


def test_pad_sequence_feature_dim_with_nested_batch_padding() -> None:
    members = [
        TensorDict({"a": _values(2, n), "n": TensorDict({"z": _values(2, n, 3)}, [2, n])}, [2])
        for n in (1, 2)
    ]
    out = pad_sequence(members, pad_dim=1, return_mask=True)
    assert out.get("n").batch_size == torch.Size([2, 2, 2])
    assert out["n", "z"].shape == torch.Size([2, 2, 2, 3])
    assert out["masks", "n", "z"].tolist() == [[[True, False]] * 2, [[True, True]] * 2]


def test_pad_sequence_feature_dim_leaf_without_that_dim_raises() -> None:
    members = [TensorDict({"a": _values(2, n), "b": _values(2)}, [2]) for n in (1, 2)]
    with pytest.raises(DimError, match=r"entry 'b' has shape \[2\], which has no dim 1"):
        pad_sequence(members, pad_dim=1)


def test_pad_sequence_feature_dim_needs_equal_batch_sizes() -> None:
    members = [TensorDict({"a": _values(b, 2)}, [b]) for b in (2, 3)]
    with pytest.raises(
        StackError,
        match=r"member 1 has batch size \[3\] but member 0 has \[2\]; pad_dim 1 is not a batch dim",
    ):
        pad_sequence(members, pad_dim=1)


# --- pad_sequence: records ------------------------------------------------------------


def test_pad_sequence_records_without_masks_return_the_record() -> None:
    out = pad_sequence([_episode(2), _episode(1)])
    assert type(out) is Episode
    assert out.batch_size == torch.Size([2, 2])
    assert out.env == [["cartpole", "cartpole"], ["cartpole", None]]  # as the peer
    assert out.reward.tolist() == [[50.0, 51.0], [50.0, 0.0]]


def test_pad_sequence_records_with_masks_return_record_and_masks() -> None:
    result = pad_sequence([_episode(2), _episode(3)], return_mask=True)
    assert isinstance(result, tuple)
    padded, masks = result
    assert type(padded) is Episode
    assert type(masks) is TensorDict
    assert set(masks.keys()) == {"obs", "reward"}
    assert masks.get("obs").tolist() == [[True, True, False], [True, True, True]]
    assert masks.batch_size == padded.batch_size


def test_pad_sequence_records_with_different_str_values() -> None:
    padded = pad_sequence([_episode(1, "a"), _episode(2, "b")], padding_side="left")
    assert padded.env == [[None, "a"], ["b", "b"]]
    assert padded[1, 0].env == "b"
    assert padded[0, 0].env is None


def test_pad_sequence_records_along_a_second_batch_dim_with_per_row_values() -> None:
    members = [tclass.stack([_episode(n, "a"), _episode(n, "b")]) for n in (1, 2)]
    padded, masks = pad_sequence(members, pad_dim=1, return_mask=True)
    assert padded.batch_size == torch.Size([2, 2, 2])
    assert padded.env == [[["a", None], ["b", None]], [["a", "a"], ["b", "b"]]]
    assert masks.get("reward").tolist() == [[[True, False]] * 2, [[True, True]] * 2]
    assert torch.equal(padded.obs[0, :, :1], members[0].obs)


def test_pad_sequence_mixes_tensordicts_and_lazy_stacks() -> None:
    lazy = tclass.lazy_stack([TensorDict({"a": torch.arange(2.0)}, [])], 0)
    out = pad_sequence([lazy, TensorDict({"a": torch.zeros(0, 2)}, [0])], return_mask=True)
    assert type(out) is TensorDict
    assert out.batch_size == torch.Size([2, 1])
    assert torch.equal(out["a"], torch.tensor([[[0.0, 1.0]], [[0.0, 0.0]]]))
    assert out["masks", "a"].tolist() == [[True], [False]]
    nested = [
        TensorDict({"n": lazy}, [1]),
        TensorDict({"n": TensorDict({"a": torch.ones(2, 2)}, [2])}, [2]),
    ]
    out = pad_sequence(nested)  # nested entries mix the two kinds too, as in the peer
    assert out["n", "a"].shape == torch.Size([2, 2, 2])
    assert torch.equal(out["n", "a"][0], torch.tensor([[0.0, 1.0], [0.0, 0.0]]))


def test_pad_sequence_nested_records_keep_their_class() -> None:
    members = [
        Nested(
            obs=_values(n, 2), inner=Inner(x=_values(n, start=7), batch_size=[n]), batch_size=[n]
        )
        for n in (1, 2)
    ]
    padded, masks = pad_sequence(members, return_mask="ignored for records")
    assert type(padded.inner) is Inner
    assert padded.inner.x.tolist() == [[7.0, 0.0], [7.0, 8.0]]
    assert masks["inner", "x"].tolist() == [[True, False], [True, True]]


@pytest.mark.parametrize("side", ["right", "left"])
def test_pad_sequence_round_trip_through_the_mask(side: str) -> None:
    members = [_member(n, start=10 * n) for n in (3, 1, 4)]
    out = pad_sequence(members, return_mask=True, padding_side=side)
    for i, member in enumerate(members):
        recovered = out[i][out["masks", "x"][i]]
        assert recovered.batch_size == member.batch_size
        for key in ["x", "y", ("n", "z")]:
            assert torch.equal(recovered[key], member[key]), key
    episodes = [_episode(n, env, start=n) for n, env in ((2, "a"), (4, "b"))]
    padded, masks = pad_sequence(episodes, return_mask=True, padding_side=side)
    for i, episode in enumerate(episodes):
        back = padded[i][masks["obs"][i]]
        assert torch.equal(back.obs, episode.obs) and torch.equal(back.reward, episode.reward)
        # the longest member, not padded, is kept as it was: one value (as the peer's)
        assert back.env == (episode.env if i else [episode.env] * len(episode.obs))


@SETTINGS
@given(st.lists(st.integers(0, 5), min_size=1, max_size=5), st.sampled_from(["right", "left"]))
def test_pad_sequence_random_lengths(lengths: list[int], side: str) -> None:
    members = [TensorDict({"a": _values(n, 2, start=100 * i)}, [n]) for i, n in enumerate(lengths)]
    out = pad_sequence(members, padding_value=-1.0, return_mask=True, padding_side=side)
    longest = max(lengths)
    assert out.batch_size == torch.Size([len(lengths), longest])
    mask = out["masks", "a"]
    assert mask.sum(1).tolist() == lengths
    for i, n in enumerate(lengths):
        span = slice(longest - n, longest) if side == "left" else slice(0, n)
        assert torch.equal(out["a"][i, span], members[i]["a"])
        assert mask[i, span].all()
        assert (out["a"][i][~mask[i]] == -1).all()


# --- pad_sequence: errors ---------------------------------------------------------------


def test_pad_sequence_empty_raises() -> None:
    with pytest.raises(StackError, match="non-empty sequence"):
        pad_sequence([])


def test_pad_sequence_mixed_types_raise() -> None:
    # a record and a TensorDict pad as member 0's class (tests/engine/test_join_mixed_kinds.py);
    # a member with other keys is refused, as between TensorDicts
    nested = Nested(obs=_values(1, 2), inner=Inner(x=_values(1), batch_size=[1]), batch_size=[1])
    with pytest.raises(StackError, match="member 1 has different keys from member 0"):
        pad_sequence([_episode(1), nested])
    with pytest.raises(StackError, match="member 1 is a NonTensorData but member 0 is a Episode"):
        pad_sequence([_episode(1), tclass.NonTensorData("a", batch_size=[2])])
    with pytest.raises(
        StackError, match="expects TensorDicts or tensorclass records, got a Tensor"
    ):
        pad_sequence([torch.zeros(2)])  # type: ignore[type-var]


def test_pad_sequence_different_keys_name_the_first_difference() -> None:
    a = TensorDict({"x": _values(1), "y": _values(1)}, [1])
    b = TensorDict({"x": _values(2), "z": _values(2)}, [2])
    with pytest.raises(
        StackError,
        match=r"member 1 has different keys from member 0: 'y' is missing \(missing: "
        r"\['y'\], extra: \['z'\]\)",
    ):
        pad_sequence([a, b])
    c = TensorDict({"x": _values(2), "y": _values(2), "w": _values(2)}, [2])
    with pytest.raises(StackError, match=r"member 1 .* 'w' is extra"):
        pad_sequence([a, c])


def test_pad_sequence_nested_key_mismatch_names_the_level() -> None:
    a = TensorDict({"n": TensorDict({"p": _values(1)}, [1])}, [1])
    b = TensorDict({"n": TensorDict({"q": _values(2)}, [2])}, [2])
    with pytest.raises(StackError, match=r"pad_sequence at \('n',\): member 1 .* 'p' is missing"):
        pad_sequence([a, b])


def test_pad_sequence_batch_sizes_differing_outside_pad_dim_raise() -> None:
    a = TensorDict({"x": _values(2, 3)}, [2, 3])
    b = TensorDict({"x": _values(4, 5)}, [4, 5])
    with pytest.raises(
        StackError,
        match=r"member 1 has batch size \[4, 5\] but member 0 has \[2, 3\]; batch sizes "
        r"may differ only at pad_dim 0",
    ):
        pad_sequence([a, b])
    with pytest.raises(
        StackError, match=r"member 1 has batch size \[4\] but member 0 has \[2, 3\]"
    ):
        pad_sequence([a, TensorDict({"x": _values(4)}, [4])])


@pytest.mark.parametrize(
    "other",
    [torch.zeros(2, 1), torch.zeros(2, 4), torch.zeros(2, 3, 1), torch.zeros(2)],
    ids=["broadcastable", "wider", "more-dims", "fewer-dims"],
)
def test_pad_sequence_feature_shapes_must_match(other: torch.Tensor) -> None:
    a = TensorDict({"x": _values(1, 3)}, [1])
    b = TensorDict({"x": other}, [2])
    with pytest.raises(
        StackError,
        match=r"entry 'x' has shape \[2.*\] in member 1 but \[1, 3\] in member 0; shapes "
        r"may differ only at pad_dim 0",
    ):
        pad_sequence([a, b])


def test_pad_sequence_feature_shape_mismatch_hidden_in_the_element_count() -> None:
    # 3 + 2 + 7 elements, as many as three matching members would hold: still caught.
    members = [TensorDict({"x": torch.zeros(n, d)}, [n]) for n, d in ((1, 3), (2, 1), (1, 7))]
    with pytest.raises(StackError, match=r"entry 'x' has shape \[2, 1\] in member 1 but \[1, 3\]"):
        pad_sequence(members)
    moved = [TensorDict({"x": torch.zeros(2, n, d)}, [2, n]) for n, d in ((1, 3), (2, 1), (1, 7))]
    with pytest.raises(StackError, match=r"shape \[2, 2, 1\] in member 1 .* at pad_dim 1"):
        pad_sequence(moved, pad_dim=1)


def test_pad_sequence_feature_shape_mismatch_with_a_zero_dim() -> None:
    a = TensorDict({"x": torch.zeros(1, 0, 3)}, [1])
    b = TensorDict({"x": torch.zeros(2, 0, 1)}, [2])
    with pytest.raises(StackError, match=r"shape \[2, 0, 1\] in member 1"):
        pad_sequence([a, b])


def test_pad_sequence_tensor_against_collection_raises() -> None:
    a = TensorDict({"x": _values(1)}, [1])
    b = TensorDict({"x": TensorDict({}, [2])}, [2])
    with pytest.raises(
        StackError, match="entry 'x' is a tensor in member 0 but a TensorDict in member 1"
    ):
        pad_sequence([a, b])
    with pytest.raises(
        StackError, match="entry 'x' is a TensorDict in member 0 but a Tensor in member 1"
    ):
        pad_sequence([b, a])


def test_pad_sequence_python_value_against_tensor_raises() -> None:
    a = TensorDict({"s": NonTensorData("a", [1])}, [1])
    b = TensorDict({"s": _values(2)}, [2])
    with pytest.raises(
        StackError, match="entry 's' holds a Python value in member 0 but a Tensor in member 1"
    ):
        pad_sequence([a, b])


def test_pad_sequence_devices_differing_raise() -> None:
    members = [
        TensorDict({"a": _values(1)}, [1], device="cpu"),
        TensorDict({"a": _values(2)}, [2], device="meta"),
    ]
    with pytest.raises(StackError, match="member 1 is on meta but an earlier member is on cpu"):
        pad_sequence(members)
    loose = [
        TensorDict({"a": _values(1)}, [1]),
        TensorDict({"a": torch.zeros(2, device="meta")}, [2]),
    ]
    with pytest.raises(StackError, match="entry 'a' is on meta in member 1 but on cpu in member 0"):
        pad_sequence(loose)


def test_pad_sequence_negative_pad_dim_counts_from_the_last_dim() -> None:
    # as the peer: -1 is each entry's last dim (here a feature dim: the batch stays [2])
    members = [TensorDict(a=torch.ones(2, n), b=torch.ones(2, n)) for n in (1, 3)]
    for member in members:
        member.batch_size = [2]
    out = pad_sequence(members, pad_dim=-1, return_mask=True)
    assert out.batch_size == (2, 2) and out["a"].shape == (2, 2, 3)
    assert out["a"][0].tolist() == [[1.0, 0.0, 0.0]] * 2
    assert (
        out["masks", "b"].tolist()
        == pad_sequence(members, pad_dim=1, return_mask=True)["masks", "b"].tolist()
    )
    # on a batch dim of every entry, the batch is padded
    ragged = [TensorDict(a=torch.ones(n), batch_size=[n]) for n in (1, 2)]
    assert pad_sequence(ragged, pad_dim=-1).batch_size == (2, 2)


def test_pad_sequence_bad_arguments_raise() -> None:
    members = [_member(1), _member(2)]
    with pytest.raises(ValueError, match="padding_side must be 'right' or 'left', got 'middle'"):
        pad_sequence(members, padding_side="middle")
    # entries of 2 and 1 dims: a negative pad_dim would name different dims of them
    with pytest.raises(DimError, match=r"pad_dim \(-1\) .* have \[1, 2\] dims"):
        pad_sequence(members, pad_dim=-1)
    with pytest.raises(DimError, match=r"pad_dim \(-3\) .* names no dim of them"):
        pad_sequence([TensorDict(a=torch.zeros(2)), TensorDict(a=torch.zeros(3))], pad_dim=-3)
    with pytest.raises(errors.InvalidKeyError, match="return_mask must be a bool"):
        pad_sequence(members, return_mask=3)  # type: ignore[call-overload]


# --- pad_sequence: the peer ------------------------------------------------------------


@pytest.mark.peer
@pytest.mark.parametrize("side", ["right", "left"])
def test_pad_sequence_matches_the_peer_along_a_batch_dim(side: str) -> None:
    peer = _peer()
    sources: list[dict[str, Any]] = [
        {"x": _values(n, 2, start=n), "y": torch.arange(n), "n": {"z": _values(n, 3)}}
        for n in (2, 5, 1)
    ]
    ours = pad_sequence(
        [TensorDict(s, [len(s["y"])]) for s in sources],
        padding_value=-2,
        return_mask=True,
        padding_side=side,
    )
    members = [peer.TensorDict(s, [len(s["y"])]) for s in sources]
    theirs = _quiet(
        peer.pad_sequence, members, padding_value=-2, return_mask=True, padding_side=side
    )
    assert ours.batch_size == theirs.batch_size
    for key in ["x", "y", ("n", "z"), ("masks", "x"), ("masks", "y"), ("masks", "n", "z")]:
        assert torch.equal(ours[key], theirs[key]), key


@pytest.mark.peer
def test_pad_sequence_matches_the_peer_along_a_feature_dim() -> None:
    peer = _peer()
    sources = [{"a": _values(2, n), "b": _values(2, 4 - n, 3)} for n in (1, 3)]
    ours = pad_sequence([TensorDict(s, [2]) for s in sources], pad_dim=1, return_mask=True)
    members = [peer.TensorDict(s, [2]) for s in sources]
    theirs = _quiet(peer.pad_sequence, members, pad_dim=1, return_mask=True)
    for key in ["a", "b", ("masks", "a"), ("masks", "b")]:
        assert torch.equal(ours[key], theirs[key]), key


def test_pad_sequence_padding_value_per_key() -> None:
    samples = [
        TensorDict(
            ids=torch.ones(n, dtype=torch.long),
            labels=torch.ones(n, dtype=torch.long),
            n=TensorDict(z=torch.ones(n)),
        )
        for n in (2, 3)
    ]
    out = pad_sequence(samples, padding_value={"ids": 7, ("n", "z"): -1.0})
    assert out["ids"].tolist() == [[1, 1, 7], [1, 1, 1]]
    assert out["labels"].tolist() == [[1, 1, 0], [1, 1, 1]]  # not named: 0
    assert out["n", "z"].tolist() == [[1.0, 1.0, -1.0], [1.0, 1.0, 1.0]]
    with pytest.raises(errors.KeyNotFoundError, match=r"'n'.*tensor leaves") as info:
        pad_sequence(samples, padding_value={"n": 3.0})  # a collection, not a leaf
    assert isinstance(info.value, KeyError)  # as the peer raises


def test_pad_sequence_padding_value_per_key_matches_the_peer() -> None:
    peer = pytest.importorskip("tensordict")
    results = []
    for lib in (tclass, peer):
        samples = [
            lib.TensorDict(ids=torch.ones(n, dtype=torch.long), x=torch.ones(n, 2)) for n in (2, 3)
        ]
        out = lib.pad_sequence(samples, padding_value={"ids": 7}, padding_side="left")
        results.append({key: value.tolist() for key, value in out.items()})
    assert results[0] == results[1]


def test_pad_sequence_masks_only_tensors_as_the_peer() -> None:
    """Found by the differential fuzzer: no tensor, no ``"masks"`` entry; a nested
    collection without tensors has no mask collection."""
    for entries in ({}, {"s": "x"}, {"m": {}}):
        td = TensorDict(entries, batch_size=[1])
        assert "masks" not in tclass.pad_sequence([td, td], return_mask=True).keys()
    td = TensorDict({"a": torch.zeros(1, 2), "m": {}}, batch_size=[1])
    out = tclass.pad_sequence([td, td], return_mask=True)
    assert list(out["masks"].keys()) == ["a"]


def test_pad_of_python_values_over_no_elements() -> None:
    # A Python value turned per-element over a batch of no elements (unsqueeze, expand)
    # pads into a NonTensorStack of None, as the peer (it used to fail inside numpy).
    td = TensorDict({"s": "a", "x": torch.zeros(3, 0, 3)}, batch_size=[3, 0, 3])
    padded = pad(td.unsqueeze(2), [0, 2, 1, 2, 1, 2, 1, 0])
    assert padded.batch_size == torch.Size([5, 3, 4, 4])
    assert padded["x"].shape == (5, 3, 4, 4) and not padded["x"].any()
    assert padded.get("s").tolist() == [[[[None] * 4] * 4] * 3] * 5


def test_pad_sequence_of_python_values_over_no_elements() -> None:
    td = TensorDict({"s": "a", "x": torch.ones(2, 0, 4)}, batch_size=[2, 0, 4])
    grown = td.expand(2, 2, 0, 4)
    out = pad_sequence([grown, grown[:1]], pad_dim=0)
    assert out.batch_size == torch.Size([2, 2, 2, 0, 4])
    assert out.get("s").batch_size == out.batch_size and out["x"].numel() == 0


def test_a_lazy_stack_of_records_beside_its_empty_slice() -> None:
    """``x[:0]`` of a lazy stack holding records is a record: padded with the stack as
    member 0's kind, as the peer pads them (a TensorDict after the stack, a record after
    the record); a record of another class pads into member 0's class where it fits
    (tests/engine/test_join_mixed_kinds.py), and is refused where it does not."""
    records = [Inner(x=_values(2, 3, start=6 * i), batch_size=[2]) for i in range(3)]
    stack = tclass.LazyStackedTensorDict(*records, stack_dim=0)
    empty = stack[:0]
    assert isinstance(empty, Inner)
    after_stack = pad_sequence([stack, empty])
    assert type(after_stack) is TensorDict and after_stack.batch_size == (2, 3, 2)
    assert after_stack["x"][0].tolist() == stack["x"].tolist()
    assert after_stack["x"][1].abs().sum().item() == 0.0
    after_record = pad_sequence([empty, stack])
    assert type(after_record) is Inner and after_record.x[1].tolist() == stack["x"].tolist()
    episode = Episode(obs=torch.zeros(3), reward=torch.zeros(3), env="a", batch_size=[3])
    with pytest.raises(errors.StackError, match="batch sizes may differ only at pad_dim 0"):
        pad_sequence([empty, episode])


def test_a_pad_by_nothing_keeps_how_a_value_stack_is_nested() -> None:
    """A value stacked over no elements keeps its one value through ``pad(..., [0, 0])``
    (a copy of the stack, as the peer's): squeezing the stack dim away gives it back."""
    td = torch.stack([TensorDict(x=torch.zeros(0), label="pong", batch_size=[0])], 1)
    padded = pad(td, [0, 0], value=0)
    assert padded.batch_size == td.batch_size == (0, 1)
    assert padded.squeeze(-1)["label"] == td.squeeze(-1)["label"] == "pong"
    assert padded.get("label") is not td.get("label")
    assert pad(td, [0, 1]).get("label").tolist() == [[None]]  # a new slot: None


def test_pad_of_a_ragged_lazy_stack_keeps_the_ragged_dim() -> None:
    # the batch size along a ragged dim (-1) is the members', not -1 plus the padding
    for entries in ({"a": torch.zeros(2)}, {}):
        first = TensorDict(dict(entries), [2])
        second = TensorDict({k: v[:1] for k, v in entries.items()}, [1])
        stack = tclass.lazy_stack([first, second])
        assert stack.batch_size == (2, -1)
        out = tclass.pad(stack, [1, 0, 1, 1], value=-1)
        assert out.batch_size == (3, -1)
        assert [m.batch_size for m in out.tensordicts] == [(4,), (4,), (3,)]  # new: as member 0
        if entries:
            assert out.tensordicts[1]["a"].tolist() == [-1.0, 0.0, 0.0, -1.0]


def test_pad_of_a_ragged_lazy_stack_pads_its_nested_collections_alike() -> None:
    # a nested collection without leaves, stacked along the last dim: the peer pads a dense
    # stack of batch size (0, 5) (-1 plus the padding); tclass's stays ragged, as its parent
    source = TensorDict({"m": TensorDict({}, [3, 3])}, [3])
    stack = tclass.lazy_stack(list(source.chunk(2, -1)), -1)
    assert stack.batch_size == (-1, 2) and stack["m"].batch_size == (-1, 2, 3)
    out = tclass.pad(stack, [0, 1, 2, 1])
    assert isinstance(out, tclass.LazyStackedTensorDict) and out.batch_size == (-1, 5)
    assert out["m"].batch_size == (-1, 5, 3)
    assert [m["m"].batch_size for m in out.tensordicts] == [(3, 3)] * 3 + [(2, 3), (3, 3)]


def test_pad_sequence_keeps_an_unbatched_tensor_as_stack_does() -> None:
    # it was padded and stacked as a batched entry ([2, 5]); stack keeps member 0's, and
    # so does pad_sequence now, with no mask (the peer fails: "pad_sequence failed")
    shared = tclass.UnbatchedTensor(torch.arange(5.0))
    td = TensorDict({"a": torch.zeros(3, 2), "u": shared, "n": {"v": shared[:2]}}, [3])
    out = tclass.pad_sequence([td, td[:2]], return_mask=True)
    assert out.batch_size == torch.Size([2, 3]) and out["a"].shape == (2, 3, 2)
    unbatched = out.get("u")
    assert type(unbatched) is tclass.UnbatchedTensor and torch.equal(unbatched, shared)
    assert unbatched.batch_size == torch.Size([2, 3])
    assert out["n"].get("v").shape == (2,)
    assert sorted(out["masks"].keys(True, True)) == ["a"]
    assert torch.stack([td, td]).get("u").shape == unbatched.shape


@pytest.mark.parametrize("value", ["a", torch.arange(3.0)])
def test_pad_sequence_refuses_a_lazy_stack_ragged_at_pad_dim(value: Any) -> None:
    # fz23i (program 13,010,482 of index,shape,combine --length 12): members [2] and [1]
    # stacked at -1 are ragged at dim 0 (size -1); its -1 was taken as a length (a
    # [2, 0, 2] result whose values failed to read). The peer refuses it too.
    stack = tclass.lazy_stack(list(TensorDict({"s": value}, [3]).chunk(2, -1)), -1)
    assert stack.batch_size == torch.Size([-1, 2])
    with pytest.raises(StackError, match=r"member 0 .*ragged \(-1\) at pad_dim 0"):
        pad_sequence([stack, stack[:0]], pad_dim=0)
    padded = pad_sequence(list(stack.tensordicts))  # as the message says
    assert padded.batch_size == torch.Size([2, 2])
    if isinstance(value, str):
        assert padded[1].tolist() == [{"s": "a"}, {"s": None}]
    else:
        assert padded["s"].tolist() == [[0.0, 1.0], [2.0, 0.0]]


def test_pad_sequence_keeps_one_metadata_when_no_member_is_padded() -> None:
    # The peer stacks the members' MetaData as lazy_stack does: one MetaData when they hold
    # one object and none is padded (program 15,600,586 of features,index,shape,combine L8)
    td = TensorDict({"b": torch.zeros(2, 3)}, batch_size=[2])
    td.set("md", MetaData([1, 2], batch_size=[2]))
    out = pad_sequence([td, td])
    assert type(out.get("md")) is MetaData
    assert out.get("md").data == [1, 2]
    assert out.get("md").batch_size == torch.Size([2, 2])
    # a member padded: one value per element, None where padded (as the peer)
    padded = pad_sequence([td, td[:1]])
    assert isinstance(padded.get("md"), NonTensorStack)
    assert [type(m) for m in padded.get("md").tensordicts] == [MetaData, NonTensorStack]
    assert padded.get("md").tolist() == [[[1, 2], [1, 2]], [[1, 2], None]]


def test_pad_keeps_an_unbatched_tensors_data_under_the_new_batch_size() -> None:
    # The peer's pad keeps the very object, whose batch_size still reads the old one.
    shared = tclass.UnbatchedTensor(torch.randn(7, 11))
    td = TensorDict({"a": torch.randn(4, 3, 5), "u": shared}, [4, 3])
    out = pad(td, [0, 1, 0, 2])
    assert out.batch_size == (5, 5)
    kept = out.get("u")
    assert type(kept) is tclass.UnbatchedTensor and kept.shape == (7, 11)
    assert kept.data_ptr() == shared.data_ptr() and kept.batch_size == (5, 5)
    assert td.get("u").batch_size == (4, 3)  # the entry of td is left as it was
