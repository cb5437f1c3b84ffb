"""Tests for tclass._engine._nontensor: NonTensorData (one Python value over a batch) and
NonTensorStack (one value per element), alone and inside TensorDicts.

Structural ops on a stack are checked against doing the same thing to a numpy object
array holding the same values.
"""

from __future__ import annotations

import copy
import math
import pickle
import typing
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import tclass
from tclass import NonTensorData, NonTensorStack, TensorDict, errors
from tclass._engine._value_positions import _View, positions_now, removed_dim
from tclass.utils import LinkedList

from strategies import SETTINGS, basic_indices, batch_shapes, dims  # noqa: E402

EntryTypeError = errors.EntryTypeError


def _objects(shape: tuple[int, ...]) -> np.ndarray:
    """An object array of distinct strings ``"v0"``, ``"v1"``... shaped ``shape``."""
    flat = np.empty(math.prod(shape), dtype=object)
    for i in range(flat.size):
        flat[i] = f"v{i}"
    return flat.reshape(shape)


def _stack(shape: tuple[int, ...]) -> NonTensorStack:
    return NonTensorStack.from_list(_objects(shape).tolist())


# --- NonTensorData ---------------------------------------------------------------------------


class TestNonTensorData:
    def test_construction(self) -> None:
        node = NonTensorData("cat", batch_size=[4, 2])
        assert node.data == "cat" and node.batch_size == torch.Size([4, 2])
        assert node.shape == torch.Size([4, 2]) and node.device is None and not node.is_locked
        assert NonTensorData(3).batch_size == torch.Size([])
        assert NonTensorData("x", [2], device="cpu").device == torch.device("cpu")

    def test_refuses_collections(self) -> None:
        with pytest.raises(EntryTypeError, match="NonTensorData holds Python values"):
            NonTensorData(TensorDict({}, [2]), [2])

    def test_a_tensor_is_a_value_as_the_peer(self) -> None:
        t1, t2 = torch.tensor([1.0, 2.0, 3.0]), torch.ones(4)
        assert NonTensorData(t1, [2]).data is t1
        for stack in (torch.stack([NonTensorData(t1), NonTensorData(t2)]),
                      NonTensorStack(NonTensorData(t1), NonTensorData(t2))):  # fmt: skip
            assert type(stack) is NonTensorStack and stack.tolist() == [t1, t2]

    def test_a_node_given_as_value_is_unwrapped(self) -> None:
        assert NonTensorData(NonTensorData("x"), [2]).data == "x"

    @pytest.mark.parametrize(
        "op, expected",
        [(lambda n: n[0], [3]), (lambda n: n[-1, 1], []), (lambda n: n[1:3], [2, 3]),
         (lambda n: n[::2], [2, 3]), (lambda n: n[None], [1, 4, 3]), (lambda n: n[..., 0], [4]),
         (lambda n: n[[0, 0, 1]], [3, 3]), (lambda n: n[torch.tensor([1, 2])], [2, 3]),
         (lambda n: n[torch.tensor([True, False, True, False])], [2, 3]),
         (lambda n: n.reshape(-1), [12]), (lambda n: n.view(3, 4), [3, 4]),
         (lambda n: n[:1].expand(5, 3), [5, 3]),
         (lambda n: n.permute(1, 0), [3, 4]), (lambda n: n.transpose(0, 1), [3, 4]),
         (lambda n: n.flatten(), [12]), (lambda n: n[:, :1].squeeze(1), [4]),
         (lambda n: n.unbind(1)[0], [4]), (lambda n: n.split(3, 0)[1], [1, 3]),
         (lambda n: n[torch.ones(4, 3, dtype=torch.bool)], [12]),
         (lambda n: n[torch.tensor([[0, 1], [2, 3]])], [2, 2, 3]), (lambda n: n[2:2], [0, 3])],
    )  # fmt: skip
    def test_shape_changes_keep_value(self, op: Any, expected: list[int]) -> None:
        value = {"k": [1, 2]}
        got = op(NonTensorData(value, [4, 3]))
        assert type(got) is NonTensorData
        assert got.batch_size == torch.Size(expected)
        assert got.data is value

    def test_growing_the_batch_gives_a_stack_as_the_peer(self) -> None:
        # expand to new leading dims and unsqueeze give a NonTensorStack of the value (the
        # peer stacks the node); stretching size-1 dims only keeps one NonTensorData.
        value = {"k": [1, 2]}
        grown = NonTensorData(value, [3]).expand(2, 3)
        assert type(grown) is NonTensorStack and grown.batch_size == torch.Size([2, 3])
        assert grown.stack_dim == 0 and all(v is value for v in grown._flat())
        assert type(grown[0]) is NonTensorData and grown[0].data is value
        assert type(NonTensorData(value, [1]).expand(2, 3)) is NonTensorStack
        assert type(NonTensorData(value, [1]).expand(3)) is NonTensorData
        assert NonTensorData(value, [3]).expand(3).data is value
        row = NonTensorData(value, [2]).unsqueeze(1)
        assert type(row) is NonTensorStack and row.batch_size == torch.Size([2, 1])
        assert row.stack_dim == 1 and type(row[:, 0]) is NonTensorData
        # squeezing the stack dim gives the value back as one node, as the peer's member
        assert type(row.squeeze(1)) is NonTensorData and row.squeeze().data is value
        assert type(row.unsqueeze(0)) is NonTensorStack and row.unsqueeze(0).stack_dim == 2
        assert type(row.reshape(2)) is NonTensorStack
        assert type(NonTensorData(value, [3]).broadcast_to((2, 3))) is NonTensorData  # the peer
        assert type(tclass.MetaData(value, [2]).unsqueeze(0)) is tclass.MetaData  # as the peer
        assert type(tclass.MetaData(value, [2]).expand(3, 2)) is tclass.MetaData

    def test_writing_an_element_is_refused_as_the_peer(self) -> None:
        # one value spans the batch: the peer's ValueError, pointing at maybe_to_stack
        node = NonTensorData("x", [3])
        with pytest.raises(ValueError, match="maybe_to_stack"):
            node[0] = "y"
        assert node.data == "x"

    def test_growing_a_collection_stacks_its_values_as_the_peer(self) -> None:
        td = TensorDict(foo=NonTensorData(3))
        grown = td.unsqueeze(0)
        assert type(grown.get("foo")) is NonTensorStack and grown["foo"] == [3]
        assert type(grown.squeeze().get("foo")) is NonTensorData and grown.squeeze()["foo"] == 3
        assert type(grown.squeeze(0).get("foo")) is NonTensorData
        wide = TensorDict(foo=NonTensorData("x", [3]), batch_size=[3]).expand(2, 3)
        assert type(wide.get("foo")) is NonTensorStack and wide["foo"] == [["x"] * 3] * 2
        broadcast = TensorDict(foo=NonTensorData("x", [3]), batch_size=[3]).broadcast_to((2, 3))
        assert type(broadcast.get("foo")) is NonTensorData and broadcast["foo"] == "x"

    @SETTINGS
    @given(data=st.data(), batch=batch_shapes(1, 3, 1, 4))
    def test_index_shape_matches_tensor(self, data: st.DataObject, batch: torch.Size) -> None:
        node = NonTensorData("x", batch)
        probe = torch.zeros(batch)
        dim = data.draw(dims(len(batch)))
        index = (slice(None),) * (dim % len(batch)) + (data.draw(st.integers(0, batch[dim] - 1)),)
        assert node[index].batch_size == probe[index].shape
        assert node.unsqueeze(dim).batch_size == probe.unsqueeze(dim).shape
        assert node.flatten().batch_size == probe.flatten().shape

    def test_out_of_range(self) -> None:
        with pytest.raises(IndexError):
            NonTensorData("x", [2])[2]

    def test_tolist(self) -> None:
        assert NonTensorData("q", [2, 3]).tolist() == [["q"] * 3] * 2
        assert NonTensorData("q").tolist() == "q"
        # a list value is one value, never unpacked into the batch
        assert NonTensorData([1, 2], [2]).tolist() == [[1, 2], [1, 2]]
        assert NonTensorData([1, 2], [2]).data == [1, 2]

    def test_clone_deep_copies_mutable(self) -> None:
        value = {"k": [1, 2]}
        node = NonTensorData(value, [3])
        got = node.clone()
        assert got.data == value and got.data is not value and got.data["k"] is not value["k"]
        assert got.batch_size == node.batch_size
        assert node.clone(recurse=False).data is value
        assert copy.deepcopy(node).data is not value

    def test_pickle(self) -> None:
        node = NonTensorData({"a": (1, 2)}, [2, 1], device="cpu")
        back = pickle.loads(pickle.dumps(node))
        assert type(back) is NonTensorData and back.data == {"a": (1, 2)}
        assert back.batch_size == torch.Size([2, 1]) and back.device == torch.device("cpu")

    def test_repr(self) -> None:
        assert (
            repr(NonTensorData("cat", [4]))
            == "NonTensorData(data=cat, batch_size=torch.Size([4]), device=None)"
        )
        long = repr(NonTensorData("ab" * 150))  # cut in the middle, as the peer's
        assert long.startswith("NonTensorData(data=" + "ab" * 10 + "  ...  " + "ab" * 10 + ",")

    def test_to_device_records_it(self) -> None:
        node = NonTensorData("x", [2])
        moved = node.to("cpu")
        assert moved.device == torch.device("cpu") and moved.data == "x"
        assert moved.to("cpu") is moved
        cast = node.to(torch.float64)  # a new node with the same value, as the peer's
        assert cast is not node and cast.data == "x" and cast.device is None
        assert moved.clear_device_().device is None

    def test_has_no_entries(self) -> None:
        node = NonTensorData("x", [2])
        assert list(node.keys()) == [] and node.get("a", 5) == 5
        with pytest.raises(EntryTypeError):
            node.set("a", torch.zeros(2))
        with pytest.raises(KeyError):
            node["a"]

    def test_equality(self) -> None:
        a, b = NonTensorData("x", [2, 3]), NonTensorData("x", [2, 3])
        assert torch.equal(a == b, torch.ones(2, 3, dtype=torch.bool))
        assert torch.equal(a != NonTensorData("y", [2, 3]), torch.ones(2, 3, dtype=torch.bool))
        assert not (a == NonTensorData(1, [2, 3])).any()
        assert (a == NonTensorData("x", [1, 3])).shape == torch.Size([2, 3])
        assert torch.equal(NonTensorData("x", [3]) == "x", torch.ones(3, dtype=torch.bool))

    def test_calling_it_calls_the_value(self) -> None:
        # A function stored in a collection is called through its node, so apply can
        # call per-key functions (the peer).
        funcs = TensorDict(a=lambda x, y: x - y, b=lambda x, y: x + y)
        ones, twos = TensorDict(a=1, b=1), TensorDict(a=2, b=2)
        out = ones.apply(lambda x, y, func: func(x, y), twos, funcs)
        assert (out["a"].item(), out["b"].item()) == (-1, 3)
        with pytest.raises(TypeError, match="not callable"):
            NonTensorData("text")()


# --- NonTensorStack --------------------------------------------------------------------------


class TestNonTensorStack:
    def test_writing_elements_in_place_as_the_peer(self) -> None:
        stack = NonTensorStack("a", "b")
        shared = stack.clone(recurse=False)
        stack[0] = "z"
        assert stack.tolist() == ["z", "b"] and shared.tolist() == ["a", "b"]
        for i in (None, True):  # the peer's test_setitem_edge_case
            stack = NonTensorStack("0", "1")
            stack[:, i] = NonTensorStack(NonTensorStack("2", "3"), stack_dim=1)
            assert stack.tolist() == ["2", "3"]
        stack[1:] = NonTensorData("q", [1])
        assert stack.tolist() == ["2", "q"] and stack[1].data == "q"
        with pytest.raises(errors.LockedError, match="unlock"):
            stack.lock_()[0] = "y"
        assert stack.tolist() == ["2", "q"]

    def test_from_list(self) -> None:
        s = NonTensorStack.from_list(["a", "b", "c"])
        assert s.batch_size == torch.Size([3]) and s.tolist() == ["a", "b", "c"]
        assert s.data == ["a", "b", "c"] and s.device is None
        assert NonTensorStack.from_list(["a", "a"]).data == "a"  # one value for all

    def test_from_list_of_items_nesting_to_different_depths(self) -> None:
        # lists beside a tuple (a value): the peer refuses; tclass keeps a 1-d stack of
        # the items as values, as from_dict stores such a list
        s = NonTensorStack.from_list([[1, 2], [3], (4,)])
        assert s.batch_size == torch.Size([3])
        assert s.tolist() == [[1, 2], [3], (4,)] and s[1].data == [3]
        assert NonTensorStack.from_list([[1, 2], 3]).tolist() == [[1, 2], 3]

    def test_values_of_different_batch_sizes(self) -> None:
        ragged = NonTensorStack(NonTensorData("a", [2]), NonTensorData("b", [3]))
        assert ragged.batch_size == (2, -1) and ragged.tolist() == [["a"] * 2, ["b"] * 3]
        with pytest.raises(errors.StackError, match=r"different batch sizes \(\[2\], \[\]\)"):
            NonTensorStack(NonTensorData("a", [2]), "b")
        with pytest.raises(errors.BatchSizeError, match="batch_size=\\[3\\]"):
            NonTensorStack("a", "b", batch_size=[3])

    def test_nested_lists(self) -> None:
        s = _stack((2, 3))
        assert s.tolist() == [["v0", "v1", "v2"], ["v3", "v4", "v5"]] == s.data
        assert s.batch_size == torch.Size([2, 3])

    @pytest.mark.parametrize(
        "index",
        [1, -1, (1, 2), (0, -1, 1), slice(1, 3), slice(None, None, 2), [2, 0, 0], (Ellipsis, 1),
         None, (None, 0), Ellipsis, (slice(None), [0, 2]), torch.tensor([3, 1]),
         torch.tensor([True, False, True, False]), torch.tensor([[0, 1], [2, 3]]),
         (torch.tensor([0, 1]), torch.tensor([2, 0]))],
        ids=repr,
    )  # fmt: skip
    def test_indexing_matches_object_array(self, index: Any) -> None:
        ref = _objects((4, 3, 2))
        got = _stack((4, 3, 2))[index]
        np_index = (
            tuple(i.numpy() if isinstance(i, torch.Tensor) else i for i in index)
            if type(index) is tuple
            else (index.numpy() if isinstance(index, torch.Tensor) else index)
        )
        expected = ref[np_index]
        if isinstance(expected, np.ndarray):
            assert type(got) is NonTensorStack
            assert got.batch_size == torch.Size(expected.shape)
            assert got.tolist() == expected.tolist()
        else:
            assert type(got) is NonTensorData and got.data == expected
            assert got.batch_size == torch.Size([])

    def test_full_shape_mask(self) -> None:
        mask = torch.tensor([[True, False], [False, True], [True, True]])
        got = _stack((3, 2))[mask]
        assert got.tolist() == _objects((3, 2))[mask.numpy()].tolist()

    def test_single_element_is_data(self) -> None:
        s = NonTensorStack.from_list(["a", "b"])
        assert type(s[0]) is NonTensorData and s[0].data == "a"
        assert type(s[0:1]) is NonTensorStack and s[0:1].tolist() == ["a"]

    @SETTINGS
    @given(batch=batch_shapes(1, 3, 1, 4), data=st.data())
    def test_structural_ops_match_numpy(self, batch: torch.Size, data: st.DataObject) -> None:
        shape = tuple(batch)
        ref = _objects(shape)
        s = NonTensorStack.from_list(ref.tolist())
        nd = len(shape)
        order = data.draw(st.permutations(range(nd)))
        assert s.permute(*order).tolist() == ref.transpose(order).tolist()
        a, b = data.draw(dims(nd)), data.draw(dims(nd))
        assert s.transpose(a, b).tolist() == np.swapaxes(ref, a, b).tolist()
        assert s.reshape(-1).tolist() == ref.reshape(-1).tolist()
        flipped = tuple(reversed(shape))
        if math.prod(shape):
            assert s.reshape(*flipped).tolist() == ref.reshape(flipped).tolist()
        new = data.draw(dims(nd, inclusive=True))
        assert s.unsqueeze(new).tolist() == np.expand_dims(ref, new).tolist()
        dim = data.draw(dims(nd))
        assert [p.tolist() for p in s.unbind(dim)] == [
            np.asarray(np.take(ref, i, axis=dim)).tolist() for i in range(shape[dim])
        ]
        size = data.draw(st.integers(1, 3))
        cuts = list(range(size, shape[dim], size))
        assert [p.tolist() for p in s.split(size, dim)] == [
            p.tolist() for p in np.split(ref, cuts, axis=dim)
        ]
        lead = data.draw(st.integers(1, 3))
        assert s.expand(lead, *shape).tolist() == np.broadcast_to(ref, (lead, *shape)).tolist()

    def test_expand_size_one_dim(self) -> None:
        s = NonTensorStack.from_list(["a", "b"]).unsqueeze(0)
        assert s.expand(3, 2).tolist() == [["a", "b"]] * 3
        assert s.squeeze(0).tolist() == ["a", "b"]

    def test_chunk_and_flatten(self) -> None:
        s = _stack((4, 3))
        assert [p.tolist() for p in s.chunk(2)] == [
            p.tolist() for p in np.array_split(_objects((4, 3)), 2)
        ]
        assert s.flatten().tolist() == _objects((12,)).tolist()
        assert s.unflatten(1, (3, 1)).tolist() == _objects((4, 3, 1)).tolist()

    def test_equality_elementwise(self) -> None:
        a = NonTensorStack.from_list(["a", "b", "c"])
        b = NonTensorStack.from_list(["a", "x", "c"])
        assert torch.equal(a == b, torch.tensor([True, False, True]))
        assert torch.equal(a != b, torch.tensor([False, True, False]))
        assert torch.equal(a == "b", torch.tensor([False, True, False]))
        assert torch.equal(a == NonTensorData("c", [3]), torch.tensor([False, False, True]))
        assert torch.equal(NonTensorData("c", [3]) == a, torch.tensor([False, False, True]))
        assert (a == a).dtype is torch.bool

    def test_equality_broadcasts(self) -> None:
        a = _stack((2, 3))
        row = NonTensorStack.from_list(_objects((1, 3)).tolist())
        assert torch.equal(a == row, torch.tensor([[True] * 3, [False] * 3]))

    def test_equality_compares_type(self) -> None:
        a = NonTensorStack.from_list([1, 1.0, True])
        assert torch.equal(a == 1, torch.tensor([True, False, False]))

    def test_clone(self) -> None:
        s = NonTensorStack.from_list([{"k": [1]}, {"k": [2]}])
        got = s.clone()
        assert got.tolist() == s.tolist()
        got[0].data["k"].append(9)
        assert s.tolist() == [{"k": [1]}, {"k": [2]}]
        shallow = s.clone(recurse=False)
        assert shallow[0].data is s[0].data

    def test_pickle(self) -> None:
        s = _stack((2, 2))
        back = pickle.loads(pickle.dumps(s))
        assert type(back) is NonTensorStack and back.tolist() == s.tolist()
        assert back.batch_size == s.batch_size

    def test_repr(self) -> None:
        # the peer's form: one line each for the values, the batch size and the device
        assert repr(NonTensorStack.from_list(["a", "b"])) == (
            "NonTensorStack(\n    ['a', 'b'],\n    batch_size=torch.Size([2]),\n    device=None)"
        )
        long = repr(NonTensorStack.from_list(["x" * 30, "y" * 30]))
        assert long.splitlines()[1] == "    " + repr(["x" * 30, "y" * 30])[:50] + "...,"

    def test_it_is_its_own_contiguous_form(self) -> None:
        stack = NonTensorStack("a", "b")
        assert stack.contiguous() is stack and stack.contiguous(canonical=True) is stack

    def test_where_picks_element_by_element(self) -> None:
        mine = NonTensorStack(NonTensorData(["a"]), NonTensorData(["a"]))
        theirs = NonTensorStack(NonTensorData(["b"]), NonTensorData(["b"]))
        condition = torch.tensor([True, False])
        assert mine.where(condition, theirs).tolist() == [["a"], ["b"]]
        out = NonTensorStack(NonTensorData(["none"]), NonTensorData(["none"]))
        assert mine.where(condition, theirs, out=out) is out
        assert out.tolist() == [["a"], ["b"]]
        out.lock_()
        with pytest.raises(errors.LockedError):
            mine.where(condition, theirs, out=out)


# --- element positions under torch.compile ---------------------------------------------------


class TestViewPositions:
    """Under ``torch.compile`` the element positions of views are worked out from sizes
    and strides (no tensor read): the same positions, and errors, as torch's ops give."""

    @SETTINGS
    @given(st.data(), batch_shapes())
    def test_basic_index(self, data: st.DataObject, shape: torch.Size) -> None:
        index = data.draw(basic_indices(shape))
        got = _View.of(shape).indexed(index).positions()
        assert got == positions_now(shape, lambda numbers: numbers[index])[0]

    @pytest.mark.parametrize(
        ("shape", "index", "error"),
        [
            ((2, 3), (2,), IndexError),
            ((2, 3), (0, -4), IndexError),
            ((2,), (0, 0), IndexError),
            ((3,), (slice(None, None, -1),), ValueError),
        ],
    )
    def test_basic_index_errors(self, shape: tuple[int, ...], index: Any, error: type) -> None:
        with pytest.raises(error):
            torch.arange(math.prod(shape)).reshape(shape)[index]
        with pytest.raises(error):
            _View.of(shape).indexed(index)

    @pytest.mark.parametrize(
        ("shape", "new"),
        [((), (2, 3)), ((3,), (2, 3)), ((1, 3), (4, -1)), ((2, 1), (2, 0)), ((2, 1), (5, 2, 4))],
    )
    def test_expand(self, shape: tuple[int, ...], new: tuple[int, ...]) -> None:
        got = _View.of(shape).expanded(new).positions()
        assert got == positions_now(torch.Size(shape), lambda numbers: numbers.expand(new))[0]

    @pytest.mark.parametrize(
        ("shape", "new"), [((3,), (2, 4)), ((2, 3), (3,)), ((1,), (-1, 1)), ((2,), (2, -2))]
    )
    def test_expand_errors(self, shape: tuple[int, ...], new: tuple[int, ...]) -> None:
        with pytest.raises(RuntimeError):
            torch.zeros(shape).expand(new)
        with pytest.raises(RuntimeError):
            _View.of(shape).expanded(new)

    @pytest.mark.parametrize(
        ("shape", "dim"), [((2, 3, 4), 1), ((1, 1), 0), ((1, 1), 1), ((3, 1, 0), 1)]
    )
    def test_removed_dim_tells_dims_of_size_one_apart(
        self, shape: tuple[int, ...], dim: int
    ) -> None:
        assert removed_dim(torch.Size(shape), lambda numbers: numbers.unbind(dim)) == dim


# --- joining nodes ---------------------------------------------------------------------------


class TestJoinNodes:
    @pytest.mark.parametrize("join", [torch.stack, tclass.stack])
    def test_stack_equal_data_gives_a_stack_as_the_peer(self, join: Any) -> None:
        got = join([NonTensorData("a", [2]), NonTensorData("a", [2])])
        assert type(got) is NonTensorStack and got.batch_size == torch.Size([2, 2])
        assert got.tolist() == [["a", "a"], ["a", "a"]] and got.data == "a"

    def test_cat_equal_data_stays_data(self) -> None:
        got = torch.cat([NonTensorData("a", [1]), NonTensorData("a", [2])])
        assert type(got) is NonTensorData and got.data == "a" and got.batch_size == (3,)

    @pytest.mark.parametrize("join", [torch.stack, tclass.stack])
    def test_stack_different_data_gives_stack(self, join: Any) -> None:
        got = join([NonTensorData("a", [2]), NonTensorData("b", [2])])
        assert type(got) is NonTensorStack and got.tolist() == [["a", "a"], ["b", "b"]]

    def test_cat_different_data_gives_stack(self) -> None:
        got = torch.cat([NonTensorData("a", [1]), NonTensorData("b", [2])])
        assert type(got) is NonTensorStack and got.tolist() == ["a", "b", "b"]

    def test_stack_of_stacks(self) -> None:
        s = NonTensorStack.from_list(["a", "b"])
        got = torch.stack([s, s])
        assert got.tolist() == [["a", "b"], ["a", "b"]]


# --- inside TensorDicts ----------------------------------------------------------------------


def _td(value: Any, batch: tuple[int, ...] = (2, 3)) -> TensorDict:
    return TensorDict(
        {"x": torch.arange(math.prod(batch)).reshape(batch), "e": NonTensorData(value, batch)},
        batch,
    )


class TestInTensorDict:
    def test_a_new_key_written_by_index_holds_the_value_everywhere(self) -> None:
        # As the peer: the other rows get the written value (tensors get zeros), or None
        # where the values written differ per element (a value stack).
        data = TensorDict({}, [1, 10])
        data[0, 0] = TensorDict({"a": 0, "b": "a string!"}, [])
        assert data.get("b").tolist() == [["a string!"] * 10] and data["a"].sum() == 0
        data[0, 1] = TensorDict({"a": 0, "b": "another string!"}, [])
        assert data.get("b").tolist() == [["a string!", "another string!"] + ["a string!"] * 8]
        fresh = TensorDict({}, [4])
        fresh[1:3] = TensorDict({"b": NonTensorStack("x", "y")}, [2])
        assert fresh.get("b").tolist() == [None, "x", "y", None]

    @pytest.mark.parametrize("make", ["new_empty", "new_zeros", "new_ones"])
    def test_new_filled_of_python_values(self, make: str) -> None:
        # As the peer: a node of the new batch size, holding the (first) value.
        stack = NonTensorStack("a", "b").unsqueeze(-1)
        td = TensorDict(a=stack, b=NonTensorData("x", [2]), batch_size=[2])
        for size in (4, 1, 2):
            out = getattr(td, make)(size)
            assert type(out.get("a")) is NonTensorStack and out.get("a").batch_size == (size, 1)
            assert out.get("a").tolist() == [["a"]] * size
            assert type(out.get("b")) is NonTensorData and out.get("b").data == "x"
        assert td.new_full((3,), 5.0).get_non_tensor("b") == "x"
        # over no elements, the one value is still there (as the peer's)
        empty = TensorDict(b=NonTensorData("x", [0]), batch_size=[0])
        assert getattr(empty, make)(2).get_non_tensor("b") == "x"
        assert getattr(empty, make)(()).get_non_tensor("b") == "x"

    def test_or_and_xor_of_two_values_are_masks_as_the_peer(self) -> None:
        values = {k: NonTensorData(v, [2]) for k, v in {"t": True, "f": False, "n": 3}.items()}
        td = TensorDict({**values, "x": torch.ones(2, dtype=torch.bool)}, [2])
        assert (td | td)["t"].tolist() == [True, True] and (td ^ td)["t"].tolist() == [False] * 2
        assert (td | td)["f"].tolist() == [False, False] and (td | td)["n"].dtype is torch.bool
        assert (td | td)["x"].all()  # tensors: as before
        assert (td | 1).get_non_tensor("t") is True  # a number: the value is kept
        node = NonTensorData(True, [3])
        assert (node | NonTensorData(False, [3])).tolist() == [True] * 3
        assert (node ^ node).tolist() == [False] * 3

    def test_index(self) -> None:
        td = _td("a")
        assert type(td[0].get("e")) is NonTensorData and td[0].get("e").data == "a"
        assert td[0].get("e").batch_size == torch.Size([3]) and td[1, 2].get(
            "e"
        ).batch_size == torch.Size([])
        assert td[:, [0, 2]].get("e").batch_size == torch.Size([2, 2])

    def test_reshape(self) -> None:
        td = _td("a").reshape(6)
        assert td.get("e").batch_size == torch.Size([6]) and td.get("e").data == "a"
        assert _td("a").unsqueeze(0).expand(4, 2, 3).get("e").batch_size == torch.Size([4, 2, 3])

    @pytest.mark.parametrize("dim", [0, 1, -1])
    def test_stack_different_values(self, dim: int) -> None:
        got = torch.stack([_td("a"), _td("b")], dim)
        node = got.get("e")
        assert type(node) is NonTensorStack and node.batch_size == got.batch_size
        expected = np.stack(
            [np.full((2, 3), "a", dtype=object), np.full((2, 3), "b", dtype=object)], dim
        )
        assert node.tolist() == expected.tolist()
        assert torch.equal(got["x"], torch.stack([_td("a")["x"], _td("b")["x"]], dim))

    def test_stack_equal_values(self) -> None:
        got = tclass.stack([_td("a"), _td("a")])
        assert type(got.get("e")) is NonTensorStack and got.get("e").data == "a"
        assert got.get("e").batch_size == torch.Size([2, 2, 3])
        assert got["e"] == [[["a"] * 3] * 2] * 2 and got[1, 0]["e"] == "a"

    def test_cat_different_values(self) -> None:
        got = torch.cat([_td("a", (1, 2)), _td("b", (2, 2))])
        assert got.get("e").tolist() == [["a", "a"], ["b", "b"], ["b", "b"]]
        assert got[1:].get("e").tolist() == [["b", "b"], ["b", "b"]]

    def test_stacked_then_indexed(self) -> None:
        got = torch.stack([_td("a"), _td("b")])
        assert got[1].get("e").tolist() == [["b"] * 3] * 2
        assert got[1, 0, 2].get("e").data == "b"
        assert got[:, 0, 0].get("e").tolist() == ["a", "b"]
        assert got.permute(2, 1, 0)[0, 0].get("e").tolist() == ["a", "b"]

    def test_write_different_value(self) -> None:
        td = _td("a")
        td[1] = _td("b")[0]
        assert type(td.get("e")) is NonTensorStack
        assert td.get("e").tolist() == [["a"] * 3, ["b"] * 3]

    def test_clone_and_pickle(self) -> None:
        td = torch.stack([_td({"k": 1}), _td({"k": 2})])
        back = pickle.loads(pickle.dumps(td))
        assert back.get("e").tolist() == td.get("e").tolist()
        cloned = td.clone()
        assert cloned.get("e").tolist() == td.get("e").tolist()
        cloned.get("e")[0, 0, 0].data["k"] = 5
        assert td.get("e")[0, 0, 0].data == {"k": 1}

    def test_compare_tensordicts(self) -> None:
        eq = _td("a") == _td("b")
        assert not eq["e"].any() and eq["x"].all()
        assert (_td("a") == _td("a")).all()


def test_saved_python_values_are_on_the_cpu_with_their_collection(tmp_path: Path) -> None:
    """Found by the differential fuzzer: a memory-mapped copy is on the CPU, its Python
    values too, so that ``apply`` (which keeps the device only if every result is on
    it) keeps the device, as in the peer."""
    td = TensorDict({"x": torch.zeros(2), "s": NonTensorData("a", batch_size=[2])}, [2])
    saved = td.memmap(tmp_path / "td")
    assert saved.device == torch.device("cpu")
    assert saved.apply(lambda v: v + 1).device == torch.device("cpu")
    stacked = TensorDict({"x": torch.zeros(2), "s": NonTensorStack("a", "b")}, [2])
    assert stacked.memmap(tmp_path / "st").apply(lambda v: v + 1).device.type == "cpu"


class TestSubscripted:
    """``MetaData[T]`` and ``NonTensorStack[T]`` name the type of the values, as the
    peer's do (``NonTensorData[T]`` is refused there and here)."""

    def test_metadata_of_a_type_builds_metadata(self) -> None:
        node = tclass.MetaData[str]("run-7", batch_size=[3])
        assert type(node) is tclass.MetaData and node.data == "run-7"
        assert node.batch_size == torch.Size([3])
        assert tclass.MetaData[int](3).data == 3
        stacked = torch.stack([node, tclass.MetaData[str]("run-7", batch_size=[3])])
        assert type(stacked) is tclass.MetaData and stacked.batch_size == torch.Size([2, 3])

    def test_metadata_of_a_type_checks_the_value_and_instances(self) -> None:
        # As the peer: MetaData[int] is a (cached) subclass of MetaData.
        node = tclass.MetaData[int](0, batch_size=(3,))
        assert node.data == 0 and isinstance(node, tclass.MetaData[int])
        assert not isinstance(node, tclass.MetaData[str]) and not isinstance(
            0, tclass.MetaData[int]
        )
        assert issubclass(tclass.MetaData[int], tclass.MetaData)
        assert tclass.MetaData[int] is tclass.MetaData[int]
        with pytest.raises(errors.EntryTypeError, match=r"got str \('a string'\): MetaData\[int\]"):
            tclass.MetaData[int]("a string")
        assert isinstance(tclass.MetaData([1]), tclass.MetaData[list[int]])
        assert pickle.loads(pickle.dumps(node)).data == 0

    def test_stack_of_a_type(self) -> None:
        assert typing.get_origin(NonTensorStack[str]) is NonTensorStack
        assert NonTensorStack[str]("a", "b").tolist() == ["a", "b"]
        with pytest.raises(TypeError):
            NonTensorData[str]  # type: ignore[misc]

    def test_fields_annotated_with_them(self) -> None:
        @tclass.tensorclass
        class Run:
            x: torch.Tensor
            name: tclass.MetaData[str]
            tags: NonTensorStack[str] | None = None
            note: typing.Optional[tclass.MetaData[str]] = None  # noqa: UP045

        run = Run(x=torch.zeros(3), name="a", batch_size=[3])
        assert run.name == "a" and run.tags is None and run.note is None
        other = Run(x=torch.zeros(3), name=tclass.MetaData("b"), note="n", batch_size=[3])
        assert other.name == "b" and other.note == "n"
        assert torch.cat([run, run]).name == "a"
        assert run.clone()[1:].name == "a"

    @pytest.mark.peer
    def test_as_the_peer(self) -> None:
        peer = pytest.importorskip("tensordict")
        for lib in (tclass, peer):
            assert lib.MetaData[str]("x", batch_size=[2]).data == "x"
            assert isinstance(lib.MetaData[str]("x"), lib.MetaData)
            with pytest.raises(TypeError):
                lib.NonTensorData[str]


class TestLinkedList:
    """``td[key]`` of a NonTensorStack is the peer's ``LinkedList``: a list whose item
    writes reach the stack."""

    def test_reads_as_a_list_with_the_peers_repr(self) -> None:
        td = TensorDict(a=NonTensorStack("foo", "bar"), batch_size=(2,))
        values = td["a"]
        assert isinstance(values, LinkedList) and isinstance(values, list)
        assert values == ["foo", "bar"] and values.linked() is td.get("a")
        assert str(values) == repr(values) == "LinkedList(['foo', 'bar'])"
        assert pickle.loads(pickle.dumps(values)) == ["foo", "bar"]

    def test_item_and_slice_writes_reach_the_stack(self) -> None:
        td = TensorDict(a=NonTensorStack("foo", "bar"), batch_size=(2,))
        td["a"][0] = "baz"
        assert td["a"] == ["baz", "bar"] and td[0]["a"] == "baz"
        td["a"][:2] = ["x", "y"]
        assert td["a"] == ["x", "y"]
        grid = TensorDict(
            a=NonTensorStack(NonTensorStack("a", "b"), NonTensorStack("c", "d")), batch_size=(2, 2)
        )
        rows = grid["a"]
        rows[0][1] = "Z"
        rows[1] = ["u", "v"]
        assert grid["a"] == [["a", "Z"], ["u", "v"]] and isinstance(rows[1], LinkedList)

    def test_length_changes_unlink_and_locks_refuse(self) -> None:
        td = TensorDict(a=NonTensorStack("foo", "bar"), batch_size=(2,))
        values = td["a"]
        values.append("more")
        values[0] = "only the list"
        assert values.linked() is None and td["a"] == ["foo", "bar"]
        td.lock_()
        values = td["a"]
        with pytest.raises(RuntimeError, match="locked"):
            values[0] = "w"
        assert values == ["foo", "bar"] and td["a"] == ["foo", "bar"]

    def test_stored_elsewhere_as_its_values(self, tmp_path: Path) -> None:
        td = TensorDict(a=NonTensorStack("foo", "bar"), batch_size=(2,))
        other = TensorDict(b=td["a"], batch_size=(2,))
        other["b"][0] = "changed"
        assert td["a"] == ["foo", "bar"] and other["b"] == ["changed", "bar"]
        other.set("whole", NonTensorData(["p", "q"]))
        other.memmap(tmp_path / "o")
        assert TensorDict.load_memmap(tmp_path / "o")["b"] == ["changed", "bar"]

    def test_tolist_as_linked_list_writes_back(self) -> None:
        td = TensorDict(a=NonTensorStack("foo", "bar"), x=torch.zeros(2), batch_size=[2])
        rows = td.tolist(as_linked_list=True)
        assert isinstance(rows, LinkedList) and rows[1] == {"a": "bar", "x": torch.tensor(0.0)}
        rows[0] = {"a": "q", "x": torch.tensor(1.0)}
        assert td["a"] == ["q", "bar"] and td["x"].tolist() == [1.0, 0.0]
        values = td.get("a").tolist(as_linked_list=True)
        values[1] = "z"
        assert td["a"] == ["q", "z"]


def test_writing_a_stack_of_the_shared_value_keeps_it_shared() -> None:
    """Found by the differential fuzzer, as the peer: rows whose per-element values all
    equal the value a NonTensorData holds (``td[i] = td[i].clone()`` through a lazy stack
    of records, a stack of equal values) leave it one value; a different one makes the
    node per-element."""
    td = TensorDict({"v": "pong", "a": torch.zeros(4, 2)}, [4, 2])
    same = NonTensorStack(NonTensorStack("pong", "pong"))
    td[1:2] = TensorDict({"v": same, "a": torch.ones(1, 2)}, [1, 2])
    assert type(td.get("v")) is NonTensorData and td["v"] == "pong"
    assert td["a"][1].tolist() == [1.0, 1.0]
    other = NonTensorStack(NonTensorStack("pong", "x"))
    td[1:2] = TensorDict({"v": other, "a": torch.zeros(1, 2)}, [1, 2])
    assert type(td.get("v")) is NonTensorStack and td["v"][1] == ["pong", "x"]
    stacked = tclass.lazy_stack([td.clone(), td.clone()])
    stacked[0, 2:3] = stacked[0, 2:3].clone()
    assert stacked.tensordicts[0]["v"][2] == ["pong", "pong"]


class TestWritesIntoIndexedElements:
    """``stack[i]`` gives a node whose writes by index reach the stack, as writes into the
    peer's members (which ``stack[i]`` returns) do; a node of batch size ``[]`` takes a
    value at an index that selects its one element."""

    @pytest.mark.parametrize("index", [True, None, ..., (True,), torch.tensor(True)], ids=str)
    def test_a_0d_node_takes_a_value_at_the_whole_index(self, index: Any) -> None:
        node = NonTensorData("a", batch_size=[])
        node[index] = NonTensorStack("b")  # squeezed to its one value
        assert node.data == "b"
        node[index] = "c"
        assert node.data == "c"

    def test_other_indices_and_several_values_are_refused(self) -> None:
        with pytest.raises(errors.InPlaceWriteError, match="index 0 of a NonTensorData"):
            NonTensorData("a", batch_size=[2])[0] = "b"
        node = NonTensorData("a", batch_size=[])
        with pytest.raises(errors.InPlaceWriteError, match=r"batch size \[2\] \(several values"):
            node[True] = NonTensorStack("b", "c")
        assert node.data == "a"
        node.lock_()
        with pytest.raises(errors.LockedError):
            node[True] = "b"

    def test_setting_data_of_a_locked_node_is_refused_as_in_the_peer(self) -> None:
        node = NonTensorData("a", batch_size=[3])
        node.data = 1  # unlocked: the value is replaced
        assert node.data == 1 and node.tolist() == [1, 1, 1]
        node.lock_()
        with pytest.raises(errors.LockedError, match="set its data; unlock it") as caught:
            node.data = 2
        assert isinstance(caught.value, RuntimeError) and node.data == 1
        td = TensorDict({"x": NonTensorData("a", batch_size=[3])}, [3]).lock_()
        with pytest.raises(errors.LockedError):
            td.get("x").data = "b"  # locked by the collection holding it
        td.set_("x", "b")  # the in-place write the message points to
        assert td["x"] == "b"
        td.unlock_()
        td.get("x").data = "c"
        assert td["x"] == "c"

    def test_a_write_into_an_element_reaches_the_stack(self) -> None:
        s = NonTensorStack("a string", "b")
        s[0][True] = NonTensorStack("another string")
        assert s.tolist() == ["another string", "b"] and s[0].data == "another string"

    def test_a_write_into_a_nested_element_reaches_every_level(self) -> None:
        s = NonTensorStack.from_list([["a", "b"], ["c", "d"]])
        s[1][0] = "x"
        assert s.tolist() == [["a", "b"], ["x", "d"]]
        s[0][1][...] = "y"
        assert s.tolist() == [["a", "y"], ["x", "d"]]
        row = s[1]
        row[1] = "z"
        assert s.tolist() == [["a", "y"], ["x", "z"]] and row.tolist() == ["x", "z"]

    def test_a_locked_stack_refuses_writes_into_its_elements(self) -> None:
        s = NonTensorStack("a", "b")
        s.lock_()
        element = s[0]
        with pytest.raises(
            errors.LockedError,
            match=r"locked TensorDict \(a NonTensorStack\): cannot write into an element",
        ):
            element[True] = "x"
        assert s.tolist() == ["a", "b"]

    def test_copies_are_not_linked(self) -> None:
        s = NonTensorStack("a", "b")
        copied = s[0].clone()
        copied[True] = "x"
        assert s.tolist() == ["a", "b"] and copied.data == "x"

    @pytest.mark.peer
    def test_as_the_peer(self) -> None:
        peer = pytest.importorskip("tensordict")
        results = []
        for lib in (tclass, peer):
            s = lib.NonTensorStack("a string", "b")
            s[0][True] = lib.NonTensorStack("another string")
            nested = lib.NonTensorStack(lib.NonTensorStack("a", "b"), lib.NonTensorStack("c", "d"))
            nested[1][0] = "x"
            results.append((s.tolist(), nested.tolist()))
        assert results[0] == results[1]


class TestUpdateFromValueNodes:
    """update / update_ / update_at_ of a value node from another value node write its
    value(s), as the peer (they did nothing: a node has no entries to merge)."""

    def test_one_value_is_replaced_in_place(self) -> None:
        node = NonTensorData("a")
        assert node.update(NonTensorData("b")) is node and node.data == "b"
        assert node.update_(NonTensorData("c")) is node and node.data == "c"
        assert node.update_at_(NonTensorData("d"), ()).data == "d"
        spread = NonTensorData("a", batch_size=[2])
        spread.update(NonTensorData("b"))  # one value, over the node's own batch
        assert spread.batch_size == (2,) and spread.tolist() == ["b", "b"]

    def test_clone_copies_the_value(self) -> None:
        source = NonTensorData({"k": [1]})
        node = NonTensorData(None)
        node.update(source, clone=True)
        assert node.data == {"k": [1]} and node.data is not source.data
        node.update(source)
        assert node.data is source.data

    def test_the_collection_and_the_stack_holding_the_node_see_the_write(self) -> None:
        td = TensorDict(v=NonTensorData("a"))
        td.get("v").update(NonTensorData("q"))
        assert td["v"] == "q"
        s = NonTensorStack("a", "b")
        s[0].update_(NonTensorData("q"))
        assert s.tolist() == ["q", "b"]

    def test_a_stack_takes_values_per_element_or_broadcast(self) -> None:
        s = NonTensorStack("a", "b")
        s.update(NonTensorStack("c", "d"))
        assert s.tolist() == ["c", "d"]
        s.update(NonTensorData("z"), inplace=True)
        assert s.tolist() == ["z", "z"]
        s.update_at_(NonTensorData("y"), 1)
        assert s.tolist() == ["z", "y"]
        ragged = NonTensorStack.from_list([["a", "b"], ["c"]])
        ragged.update_(NonTensorStack.from_list([["x", "y"], ["z"]]))
        assert ragged.tolist() == [["x", "y"], ["z"]]

    def test_what_cannot_be_written_is_refused_and_changes_nothing(self) -> None:
        node = NonTensorData("a", batch_size=[2])
        with pytest.raises(errors.InPlaceWriteError, match="maybe_to_stack"):
            node.update(NonTensorStack("b", "c"))
        with pytest.raises(ValueError, match=r"at 0: it holds one value"):
            node.update_at_(NonTensorData("b"), 0)
        with pytest.raises(EntryTypeError, match="no entries to update"):
            node.update({"x": 1})
        assert node.tolist() == ["a", "a"]
        node.lock_()
        with pytest.raises(errors.LockedError, match=r"update\(\) replaces its value"):
            node.update(NonTensorData("b"))
        # in place too: a locked node may be saved in a folder it cannot reach
        with pytest.raises(RuntimeError, match=r"update_\(\) writes into it.*td.set_"):
            node.update_(NonTensorData("b"))
        assert node.tolist() == ["a", "a"]

    @pytest.mark.peer
    def test_as_the_peer(self) -> None:
        peer = pytest.importorskip("tensordict")
        results = []
        for lib in (tclass, peer):
            node = lib.NonTensorData("a", batch_size=[2])
            node.update(lib.NonTensorData("b"))
            s = lib.NonTensorStack("a", "b")
            s.update(lib.NonTensorStack("c", "d"))
            s.update_at_(lib.NonTensorData("z"), 0)
            td = lib.TensorDict(v=lib.NonTensorData("a"))
            td.get("v").update_(lib.NonTensorData("q"))
            results.append((node.tolist(), s.tolist(), td["v"]))
        assert results[0] == results[1] == (["b", "b"], ["z", "d"], "q")


@pytest.mark.parametrize(("repeats", "dim"), [(2, 0), (1, -1), (0, 0)])
def test_repeat_interleave_of_a_0d_value_keeps_one_value(repeats: int, dim: int) -> None:
    """A NonTensorData with no batch dims repeated along dim 0 / -1 (which torch adds)
    stays one value over the new dim, as the peer's; a 0-d TensorDict's value is stacked
    per element, as its unsqueeze stacks it (the peer's too)."""
    node = NonTensorData("x y").repeat_interleave(repeats, dim=dim)
    assert type(node) is NonTensorData
    assert node.batch_size == torch.Size([repeats])
    assert node.data == "x y" and node.tolist() == ["x y"] * repeats
    td = TensorDict({"s": "x y"}, []).repeat_interleave(repeats, dim=dim)
    assert type(td.get("s")) is NonTensorStack
    assert td.batch_size == torch.Size([repeats]) and td["s"] == ["x y"] * repeats


def test_a_0_d_integer_tensor_index_picks_like_an_int_through_a_stack_of_values() -> None:
    """inv20h (reducing program 10,801,465 of index,combine,shape,entries --length 6):
    ``x[torch.tensor(0)]`` selects as ``x[0]`` (torch's rule): the stack dim it removes
    leaves one ``NonTensorData``, as the peer's (tclass kept a stack of equal values)."""
    x = TensorDict({"s": NonTensorData(2, batch_size=[2])}, [2])
    x = torch.stack([x, x.clone()], 0)
    for index in (torch.tensor(0), (torch.tensor(1),), (torch.tensor(0), slice(None))):
        out = x[index]
        assert out.batch_size == (2,) and out.entry_class("s") is NonTensorData
        assert out["s"] == 2
    assert x[torch.tensor([0])].entry_class("s") is NonTensorStack  # a 1-d index keeps it
