"""Stacks of stacks of Python values: a collection holding a value, unsqueezed or expanded
twice, or stacked again, is the peer's ``NonTensorStack`` whose members are stacks. Each
dim the values were stacked along is a stack dim: an element read with all of them
indexed away is one ``NonTensorData``, with any left a ``NonTensorStack`` (``tensordicts``
gives its members). Values, shapes and kinds are checked against torch (the same op on a
tensor of element numbers) and, in the ``peer`` tests, against tensordict.
"""

from __future__ import annotations

import pickle
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch

from tclass import NonTensorData, NonTensorStack, TensorDict, errors

from peer_scenarios import Scenario, scenario_tests  # noqa: E402


def _plain(value: Any) -> Any:
    """Nested lists (the peer's are ``LinkedList``) as plain lists."""
    return [_plain(item) for item in value] if isinstance(value, list) else value


def _tree(node: Any) -> Any:
    """A node's nesting as the peer shows it: a stack is its stack dim, batch size and
    members; a single value is its batch size and value."""
    if type(node).__name__ == "NonTensorStack":
        members = [_tree(member) for member in node.tensordicts]
        return ("stack", node.stack_dim, list(node.batch_size), members)
    return ("value", list(node.batch_size), node.data)


def _letters(shape: list[int]) -> tuple[NonTensorStack, torch.Tensor]:
    """A stack of distinct values over ``shape`` and the tensor of their numbers."""
    numbers = torch.arange(int(torch.tensor(shape).prod())).reshape(shape)
    return NonTensorStack.from_list([f"v{n}" for n in numbers.reshape(-1).tolist()]).reshape(
        *shape
    ), numbers


def _named(numbers: torch.Tensor) -> Any:
    """The values the numbers stand for, as nested lists (``tolist()`` of a stack)."""
    if numbers.ndim == 0:
        return f"v{int(numbers)}"
    return [_named(row) for row in numbers]


# --- tclass alone: kinds and values against torch ----------------------------------------


def test_unsqueezed_twice_each_new_dim_is_a_stack_dim() -> None:
    td = TensorDict(a=torch.zeros(2), s="pong", batch_size=[2])
    twice = td.unsqueeze(0).unsqueeze(0)
    node = twice.get("s")
    assert type(node) is NonTensorStack and node.batch_size == torch.Size([1, 1, 2])
    assert twice["s"] == [[["pong", "pong"]]]
    # one stack dim indexed away leaves a stack (the peer's member is a stack)...
    assert type(twice[0].get("s")) is NonTensorStack
    assert type(twice[:, 0].get("s")) is NonTensorStack
    assert twice[0]["s"] == [["pong", "pong"]]
    # ...both give the value back, over the dims that are left
    assert type(twice[0, 0].get("s")) is NonTensorData
    assert twice[0, 0]["s"] == "pong" and twice[0, 0].get("s").batch_size == torch.Size([2])
    (member,) = node.tensordicts
    assert type(member) is NonTensorStack and type(member.tensordicts[0]) is NonTensorData


def test_a_stack_of_stacks_unbinds_into_stacks_then_values() -> None:
    inner = TensorDict(a=torch.zeros(2), s=NonTensorStack("x", "y"), batch_size=[2])
    stacked = torch.stack([inner, inner], 0)
    twice = torch.stack([stacked, stacked], 1)  # batch [2, 2, 2]
    node = twice.get("s")
    assert node.stack_dim == 1 and [type(m) for m in node.tensordicts] == [NonTensorStack] * 2
    assert twice["s"] == [[["x", "y"]] * 2] * 2
    for dim in range(3):
        pieces = twice.unbind(dim)
        assert all(type(piece.get("s")) is NonTensorStack for piece in pieces)
    assert type(twice[0, 0].get("s")) is NonTensorStack  # the innermost dim is left
    assert twice[0, 0]["s"] == ["x", "y"] and twice[1, 0, 1]["s"] == "y"
    assert type(twice[0, 0, 1].get("s")) is NonTensorData


def test_squeeze_gives_the_value_once_every_stack_dim_is_gone() -> None:
    node = NonTensorData("p", batch_size=[2]).unsqueeze(0).unsqueeze(0)  # [1, 1, 2]
    assert type(node.squeeze(0)) is NonTensorStack and node.squeeze(0).batch_size == (1, 2)
    squeezed = node.squeeze()
    assert type(squeezed) is NonTensorData and squeezed.batch_size == torch.Size([2])
    assert squeezed.data == "p"


def test_a_value_over_no_elements_comes_back_after_unsqueeze_and_squeeze() -> None:
    td = TensorDict(a=torch.zeros(2, 0), s="pong", batch_size=[2, 0])
    back = td.unsqueeze(0).squeeze()
    assert type(back.get("s")) is NonTensorData and back["s"] == "pong"
    assert back.batch_size == torch.Size([2, 0])


@pytest.mark.parametrize(
    ("op", "dim"),
    [
        (lambda x: torch.movedim(x, 0, 2), 0),
        (lambda x: x.transpose(0, 2), 1),
        (lambda x: x.permute(2, 1, 0), 1),
        (lambda x: x.narrow(2, 1, 2), 1),
    ],
    ids=["movedim", "transpose", "permute", "narrow"],
)
def test_a_value_over_no_elements_follows_its_stack_dim_through_view_ops(op: Any, dim: int) -> None:
    td = TensorDict(x=torch.zeros(0, 4), s="x y", batch_size=[0, 4]).unsqueeze(1)
    moved = op(td)
    assert moved.batch_size == op(torch.zeros(td.batch_size)).shape
    assert [p["s"] for p in moved.unbind(dim)] == ["x y"]  # the size-1 stack dim
    assert moved.squeeze(dim)["s"] == "x y"


def test_members_over_no_elements_keep_their_value_through_a_cat() -> None:
    td = TensorDict(x=torch.zeros(0, 4), s="pong", batch_size=[0, 4])
    stacked = torch.stack([td, td.clone(), td.clone()], -1)
    for dim in (0, 1):
        pieces = torch.cat([stacked, stacked], dim).unbind(2)  # the members, as before
        assert [type(p.get("s")) for p in pieces] == [NonTensorData] * 3
        assert [p["s"] for p in pieces] == [td["s"]] * 3
        assert {p.batch_size for p in pieces} == {torch.cat([td, td], dim).batch_size}


@pytest.mark.parametrize(
    "op",
    [
        lambda x: x.permute(2, 0, 1),
        lambda x: x.transpose(0, 2),
        lambda x: x.flatten(0, 1),
        lambda x: x.reshape(6, 2),
        lambda x: x.unflatten(2, (2, 1)),
        lambda x: x.expand(4, 2, 3, 2),
        lambda x: x[:, [2, 0]],
        lambda x: x.flip(1),
    ],
    ids=["permute", "transpose", "flatten", "reshape", "unflatten", "expand", "list", "flip"],
)
def test_shape_ops_move_the_values_as_torch_moves_elements(op: Any) -> None:
    stack, numbers = _letters([2, 3, 2])
    nested = NonTensorStack(*[stack[i] for i in range(2)], stack_dim=0)  # members stacks
    out, expected = op(nested), op(numbers)
    assert out.batch_size == expected.shape
    assert out.tolist() == _named(expected)
    index = (0,) * expected.ndim
    assert type(out[index]) is NonTensorData and out[index].data == f"v{expected[index]}"


def test_reshape_regroups_the_members_as_the_peer() -> None:
    # [4, 1, 3] stacked along the size-1 dim: dropping that dim gives the member back
    td = TensorDict(a=torch.zeros(4, 3), s="p", batch_size=[4, 3])
    stacked = torch.stack([td], 1)
    for out in (stacked.flatten(1, 2), stacked.reshape(4, 3), stacked.view(4, 3)):
        assert type(out.get("s")) is NonTensorData and out["s"] == "p"
    # a real flatten makes each element of the flattened dims a member
    assert type(stacked.reshape(12).get("s")) is NonTensorStack
    assert stacked.reshape(12)["s"] == ["p"] * 12
    row = NonTensorData("p", batch_size=[2]).unsqueeze(1)  # [2, 1] along dim 1
    assert type(row.reshape(2)) is NonTensorStack and row.reshape(2).tolist() == ["p", "p"]


@pytest.mark.parametrize("op", ["flip", "roll", "rot90", "tile"])
def test_ops_that_pick_elements_make_each_a_member(op: str) -> None:
    # over dims of size 1 these keep the order of the elements, yet (as in the peer) each
    # element becomes a member: a reshape that drops a dim keeps a stack, where it gives
    # the member back after an op that keeps the members (a view, a repeat)
    td = TensorDict(s="p", b=torch.zeros(1, 1, 2), batch_size=[1, 1]).unsqueeze(-2)
    picked = {
        "flip": td.flip(1), "roll": td.roll(1, 0), "rot90": td.rot90(1), "tile": td.tile(1),
    }[op]  # fmt: skip
    assert picked.get("s").stack_dim == 0 and len(picked.get("s").tensordicts) == 1
    out = picked.reshape(1, 1)
    assert type(out.get("s")) is NonTensorStack and out["s"] == [["p"]]
    for kept in (td, td.repeat(1, 1, 1), td[:, :1]):
        assert type(kept.reshape(1, 1).get("s")) is NonTensorData
        assert kept.reshape(1, 1)["s"] == "p"


@pytest.mark.parametrize("counts", [(2, 1), (1, 3), (2, 3)])
def test_repeat_keeps_the_stack_dims(counts: tuple[int, int]) -> None:
    """``repeat`` keeps every dim in its place: the stack of an unsqueezed value repeats
    its members (each still one value over the other dims), so a row of it reads one
    value, as the peer's (fz28f, program 15,881,429); a stack of two values too."""
    td = TensorDict(s="p", n=TensorDict(s="q", batch_size=[2, 3]), batch_size=[2])
    out = td.unsqueeze(0).repeat(*counts)
    node = out.get("s")
    assert node.stack_dim == 0 and node.batch_size == torch.Size([counts[0], 2 * counts[1]])
    assert all(type(member) is NonTensorData for member in node.tensordicts)
    assert type(out[0].get("s")) is NonTensorData and out[-1]["s"] == "p"
    assert type(out[0].get(("n", "s"))) is NonTensorData and out[0]["n", "s"] == "q"
    two = torch.stack([TensorDict(s=s, batch_size=[2]) for s in "ab"]).repeat(*counts)
    assert [m.data for m in two.get("s").tensordicts] == ["a", "b"] * counts[0]
    assert two["s"] == [["a"] * 2 * counts[1], ["b"] * 2 * counts[1]] * counts[0]


@pytest.mark.parametrize("shape", [[1, 1], [2, 1], [1, 2], [2, 3]])
def test_transpose_moves_the_stack_dim_over_dims_of_size_one(shape: list[int]) -> None:
    # a transpose of size-1 dims keeps the elements in order, as a reshape, yet moves the
    # stack dim as the peer's does: the rows of the result are stacks, whatever the sizes
    rows = [TensorDict(a=torch.zeros(shape[1]), s=s, batch_size=shape[1:]) for s in "ab"]
    stacked = torch.stack(rows[: shape[0]], 0)
    swapped = stacked.transpose(1, 0)
    node = swapped.get("s")
    assert node.stack_dim == 1 and node.batch_size == torch.Size(shape[::-1])
    assert _tree(node)[3] == [("value", [shape[1]], s) for s in "ab"[: shape[0]]]
    for row in swapped.unbind(0):
        assert type(row.get("s")) is NonTensorStack and row["s"] == list("ab"[: shape[0]])
    back = swapped.permute(1, 0)  # and back: stacked along dim 0 again
    assert back.get("s").stack_dim == 0 and back["s"] == stacked["s"]


def test_nested_stacks_save_and_load_with_their_values(tmp_path: Path) -> None:
    inner = TensorDict(a=torch.zeros(2), s=NonTensorStack("x", "y"), batch_size=[2])
    twice = torch.stack([torch.stack([inner, inner]), torch.stack([inner, inner])], 1)
    saved = twice.memmap(tmp_path / "td")
    loaded = TensorDict.load_memmap(tmp_path / "td")
    for out in (saved, loaded):
        assert out.batch_size == torch.Size([2, 2, 2])
        assert out["s"] == twice["s"]
        assert type(out[0, 0].get("s")) is NonTensorStack and out[0, 0]["s"] == ["x", "y"]
        assert type(out[1, 1, 0].get("s")) is NonTensorData and out[1, 1, 0]["s"] == "x"
    # what memmap() returns nests as what was saved
    assert _tree(saved.get("s")) == _tree(twice.get("s"))


def test_repr_shows_the_nested_values() -> None:
    node = NonTensorData("p", batch_size=[2]).unsqueeze(0).unsqueeze(-1)
    assert repr(node).splitlines() == [
        "NonTensorStack(",
        "    [[['p'], ['p']]],",
        "    batch_size=torch.Size([1, 2, 1]),",
        "    device=None)",
    ]


def test_pickle_keeps_the_stack_dims() -> None:
    node = NonTensorData("p", batch_size=[2]).unsqueeze(0).unsqueeze(0)
    back = pickle.loads(pickle.dumps(node))
    assert _tree(back) == _tree(node)
    assert type(back[0, 0]) is NonTensorData
    rebuild, (values, shape, device, *_) = node.__reduce__()
    with pytest.raises(errors.PickleRefusedError, match="stack dims"):
        rebuild(values, shape, device, (0, 7))
    assert rebuild(values, shape, device, 1).stack_dim == 1  # an older pickle's one dim


@pytest.mark.parametrize("way", ["pickle", "consolidate", "consolidate, pickle"])
def test_a_value_over_no_elements_survives_pickle_and_consolidate(way: str) -> None:
    """The one value of an unsqueezed value over no elements comes back at ``[0]`` after
    a pickle or ``consolidate`` (as the peer's member keeps it; both gave an empty list)."""
    td = TensorDict(a=torch.zeros(0), s="q", batch_size=[0]).unsqueeze(0)
    if "consolidate" in way:
        td = td.consolidate()
    if "pickle" in way:
        td = pickle.loads(pickle.dumps(td))
    assert td.batch_size == torch.Size([1, 0]) and td.get("s").tolist() == [[]]
    assert type(td[0].get("s")) is NonTensorData and td[0]["s"] == "q"


@pytest.mark.parametrize("way", ["memmap", "memmap_like"])
def test_a_saved_value_over_no_elements_keeps_it_in_memory(way: str, tmp_path: Path) -> None:
    """The saved result of an unsqueezed value over no elements gives its one value back at
    ``[0]``, as the peer's does (it gave an empty list: program 1,910,055 of ``records``); a
    reload of the folder, which holds no value, reads an empty list in both libraries."""
    td = TensorDict(a=torch.zeros(0), s="q", batch_size=[0]).unsqueeze(0)
    saved = getattr(td, way)(tmp_path / "td")
    assert saved[0]["s"] == "q" and saved.get("s").tolist() == [[]]
    if way == "memmap":
        assert TensorDict.load_memmap(tmp_path / "td")[0]["s"] == []


def test_a_pickle_of_a_held_value_is_checked() -> None:
    node = NonTensorData("p", batch_size=[0]).unsqueeze(0)
    rebuild, args = node.__reduce__()
    assert args[-1] == ("p",)  # the held value travels
    values, shape, device, dims, _ = args
    with pytest.raises(errors.PickleRefusedError, match="not a tuple of one value"):
        rebuild(values, shape, device, dims, ["p", "q"])
    assert rebuild(values, shape, device, dims)[0].tolist() == []  # an older pickle's


# --- the same programs on the peer -------------------------------------------------------


def _unsqueezed(lib: ModuleType) -> Any:
    td = lib.TensorDict({"a": torch.zeros(2), "s": "pong"}, batch_size=[2])
    twice = td.unsqueeze(0).unsqueeze(0)
    return (
        _tree(twice.get("s")), _plain(twice["s"]), _tree(twice[0].get("s")),
        _tree(twice[:, 0].get("s")), _tree(twice[0, 0].get("s")),
        _plain(twice.get("s").tolist()), _tree(twice.squeeze(0).get("s")),
    )  # fmt: skip


def _stacked(lib: ModuleType) -> Any:
    td = lib.TensorDict({"a": torch.zeros(2), "s": lib.NonTensorStack("x", "y")}, [2])
    st = torch.stack([td, td], 0)
    twice = torch.stack([st, st], 1)
    node = twice.get("s")
    return (
        _tree(node), [_tree(p.get("s")) for p in twice.unbind(2)],
        _tree(twice[..., 0].get("s")), _tree(twice[0, 0].get("s")),
        _tree(twice[[0, 1]].get("s")), _tree(twice[:, [1]].get("s")),
        _tree(twice.permute(2, 0, 1).get("s")),
    )  # fmt: skip


def _regrouped(lib: ModuleType) -> Any:
    td = lib.TensorDict({"a": torch.zeros(4, 3)}, [4, 3])
    td["s"] = "p"
    st = torch.stack([td], 1)
    pair = lib.TensorDict({"s": lib.NonTensorStack("a", "b")}, [2]).unsqueeze(0).unsqueeze(-1)
    return (
        _tree(st.flatten(1, 2).get("s")), _tree(st.reshape(4, 3).get("s")),
        _tree(st.reshape(12).get("s")), _tree(st.unflatten(2, (3, 1)).get("s")),
        _tree(st.transpose(0, 2).get("s")), _tree(st.expand(2, 4, 1, 3).get("s")),
        _tree(st[:, :, 0].get("s")), _tree(pair.flatten().get("s")),
        _tree(pair.flatten(0, 1).get("s")), _tree(pair.flatten(1, 2).get("s")),
        _tree(pair[:, 1].get("s")),
    )  # fmt: skip


def _grown(lib: ModuleType) -> Any:
    value = lib.NonTensorData("p", batch_size=[2])
    empty = lib.TensorDict({"a": torch.zeros(2, 0), "s": "q"}, [2, 0])
    return (
        _tree(value.expand(4, 3, 2)), _tree(value.unsqueeze(1).reshape(2)),
        _tree(lib.NonTensorData("p").unsqueeze(0)),
        _tree(empty.unsqueeze(0).squeeze().get("s")),
    )  # fmt: skip


def _picked(lib: ModuleType) -> Any:
    """``where`` of a stack runs member by member along its stack dim and stacks the
    results there again, as the peer's (fz42b: it gave a stack of stacks along dim 0,
    whose elements read back as stacks, not values); picked values that are all the
    same give one value."""
    a = lib.NonTensorData("a", batch_size=[2, 2])
    same = lib.NonTensorStack(*[lib.NonTensorData("a", batch_size=[2])] * 2, stack_dim=1)
    bs = lib.NonTensorStack(*[lib.NonTensorData("b", batch_size=[2])] * 2, stack_dim=0)
    rows, cols = torch.tensor([[True, False]] * 2), torch.tensor([[True] * 2, [False] * 2])
    td = lib.TensorDict({"n": lib.TensorDict({"v": "", "b": torch.zeros(2, 1, 1)}, [2, 1])}, [2])
    st = lib.maybe_dense_stack([td], dim=1)
    kept = st.where(torch.ones(2, 1, dtype=torch.bool), st.clone())
    return (
        _tree(same.where(rows, same)), _tree(a.where(cols, same)), _tree(bs.where(cols, a)),
        _tree(bs.where(rows, same)), _tree(same.where(rows, bs)),
        _tree(kept.get(("n", "v"))), _tree(kept[-2, -1, None].get(("n", "v"))),
    )  # fmt: skip


def _reordered(lib: ModuleType) -> Any:
    # flip, roll, rot90, tile and gather pick each element anew, even over dims of size 1
    # that keep the order: each element is then a member, and a reshape keeps a stack
    td = lib.TensorDict({"s": "", "b": torch.zeros(1, 1, 2)}, [1, 1]).unsqueeze(-2)
    ops = (
        lambda x: x.flip(0),
        lambda x: x.roll(1, 2),
        lambda x: x.rot90(-1),
        lambda x: x.tile((1, 1, 1)),
        lambda x: x.gather(0, torch.zeros(1, 1, 1).long()),
        lambda x: x.repeat(1, 1, 1),
        lambda x: x[[0]],
        lambda x: x.transpose(0, 2),
    )
    return [(_tree(op(td).get("s")), _tree(op(td).reshape(1, 1).get("s"))) for op in ops]


def _advanced(lib: ModuleType) -> Any:
    """Tensors over the stack dim and the members' dims (10,813,332): which dims still
    run over members, whatever the rest of the index."""
    stack = lib.NonTensorStack(
        *[lib.NonTensorData(s, batch_size=[2, 4]) for s in "abc"], stack_dim=1
    )
    zero, one, two = torch.tensor([0]), torch.tensor([1]), torch.tensor([2])
    indices = [
        (zero, two),
        (zero, two, one),
        (0, torch.tensor([1, 2]), torch.tensor([0, 3])),
        (one, slice(None), torch.tensor([0, 3])),
        (one, 2, torch.tensor([0, 3])),
        (torch.tensor([[1], [0]]), torch.tensor([0, 2]), torch.tensor([3])),
        (torch.tensor([True, False]), None, torch.tensor([2, 0])),
        (slice(None), two, one),
        (None, torch.tensor([[0, 1]]), slice(None), torch.tensor([3])),
        (torch.tensor([1]), torch.tensor([False] * 3)),
    ]
    return [_tree(stack[index]) for index in indices]


def _two_d_over_no_elements(lib: ModuleType) -> Any:
    """A 2-d tensor at the stack dim of a lazy stack whose selection holds no element
    (an empty slice beside it) gives torch's batch size, as the peer (it raised a
    ``TypeError`` reading the 2-d tensor as member numbers)."""
    rows = [lib.TensorDict({"s": f"v{i}", "a": torch.zeros(3)}, [3]) for i in range(2)]
    nested = lib.lazy_stack([lib.lazy_stack([row], 0) for row in rows], 0)  # [2, 1, 3]
    empty = nested[1:1, torch.tensor([[0, 0]])]
    picked = lib.lazy_stack(rows, 0)[torch.tensor([[1], [0]]), 3:]
    return (
        list(empty.batch_size), _plain(empty.get("s").tolist()), list(picked.batch_size),
        _plain(picked["s"]), list(picked["a"].shape),
    )  # fmt: skip


def _one_element_per_member(lib: ModuleType) -> Any:
    """A mask over the stack dim and a member's dim, ``None`` and an int: each member
    gives one element under a new dim, one value over it (the peer indexes the member
    by ints and ``None``; coordinate tensors made that dim a stack dim: a stack of one)."""
    held = [
        lib.TensorDict(
            {"s": lib.NonTensorStack(lib.NonTensorData(f"w{i}", batch_size=[3])),
             "a": torch.zeros(1, 3)},
            [1, 3],
        )
        for i in range(3)
    ]  # fmt: skip
    one = lib.lazy_stack(held, 1)[torch.tensor([[True, True, False]]), None, 1]
    return _tree(one.get("s")), [_tree(p.get("s")) for p in one.unbind(0)], one[1]["s"]


def _parts_by_basic_index(lib: ModuleType) -> Any:
    """Tensors over the stack dim and a member's dim: each member's part is the member
    indexed by ints, slices and ``None`` (as the peer indexes it), so a Python value keeps
    the stack dims a slice keeps, and a new dim (``None``) or a dim a tensor took is no
    stack dim (coordinate tensors made each one; the whole-member and one-row shortcuts
    mistook the new dim for the member's own)."""
    held = [
        lib.TensorDict(
            {"s": lib.NonTensorStack(lib.NonTensorData(f"w{i}", batch_size=[3])),
             "a": torch.zeros(1, 3)},
            [1, 3],
        )
        for i in range(3)
    ]  # fmt: skip
    flat = lib.lazy_stack(held, 0)  # [3, 1, 3], each member a stack along its dim 0
    two = torch.tensor([0, 1])
    cells = [lib.TensorDict({"s": f"v{n}", "a": torch.zeros(2)}, [2]) for n in range(4)]
    rows = [lib.lazy_stack(cells[2 * i : 2 * i + 2]) for i in (0, 1)]
    nested = lib.lazy_stack([lib.lazy_stack([row]) for row in rows], 1)  # [1, 2, 2, 2]

    def leaf(n: int) -> Any:
        value = lib.NonTensorStack(lib.NonTensorData(f"v{n}", batch_size=[1]))
        return lib.TensorDict({"s": value, "a": torch.zeros(1, 1)}, [1, 1])

    deep = lib.lazy_stack([lib.lazy_stack([lib.lazy_stack([leaf(n)], 1)]) for n in (0, 1)])
    zero = torch.tensor(0)
    cells = [lib.TensorDict({"s": f"u{n}", "a": torch.zeros(1, 2)}, [1, 2]) for n in range(9)]
    grid = lib.lazy_stack([lib.lazy_stack(cells[3 * i : 3 * i + 3]) for i in range(3)], 1)
    pick = (
        None,
        torch.tensor([False, True, True]),
        slice(None, 3, 2),
        torch.tensor([[True, False]]),
    )
    return (
        _tree(flat[two, 0:1, torch.tensor([2])].get("s")),  # the slice keeps a stack
        _tree(flat[two, torch.tensor([0]), 1:2].get("s")),  # the tensor takes it
        _tree(nested[torch.tensor([[True, True]]), None].get("s")),
        _tree(deep[torch.tensor([True, True]), :, -1, zero, zero].get("s")),
        _tree(grid[pick].get("s")),  # tensors on both sides of the slice at the stack dim
    )


def test_members_parts_are_indexed_as_the_peer_indexes_them() -> None:
    kept, taken, new_dim, sliced, apart = _parts_by_basic_index(sys.modules["tclass"])
    assert kept == (
        "stack",
        0,
        [2, 1],
        [("stack", 0, [1], [("value", [], f"w{i}")]) for i in (0, 1)],
    )
    assert taken == ("stack", 0, [2, 1], [("value", [1], "w0"), ("value", [1], "w1")])
    assert new_dim[:3] == ("stack", 0, [2, 1, 2, 2])
    assert new_dim[3][1] == (
        "stack",
        1,
        [1, 2, 2],
        [("value", [1, 2], "v2"), ("value", [1, 2], "v3")],
    )
    assert sliced == (
        "stack",
        0,
        [2, 1],
        [("stack", 0, [1], [("value", [], f"v{n}")]) for n in (0, 1)],
    )
    rows = [[("value", [1], f"u{n}") for n in pair] for pair in ((1, 2), (7, 8))]
    assert apart == ("stack", 2, [2, 1, 2], [("stack", 0, [2, 1], row) for row in rows])


def test_a_2d_tensor_over_no_elements_gives_torchs_batch_size() -> None:
    assert _two_d_over_no_elements(sys.modules["tclass"]) == (
        [0, 1, 2, 3], [], [2, 1, 0], [[[]], [[]]], [2, 1, 0],
    )  # fmt: skip


def test_one_element_of_each_member_keeps_its_value_one_value() -> None:
    tree, parts, value = _one_element_per_member(sys.modules["tclass"])
    assert tree == ("stack", 0, [2, 1], [("value", [1], "w0"), ("value", [1], "w1")])
    assert parts == tree[3] and value == "w1"


def _picked_then_indexed(lib: ModuleType) -> Any:
    """Each element a member after flip / roll / tile, every dim a stack dim: a mask over
    them with a new dim gives members of one element each, and an int taking one of them
    its one value (program 15,803,399 of features,index,shape,combine --length 12); a lazy
    stack's flip / roll / tile, run on its members and made dense, nests its values so
    too (program 15,831,059 of methods,index,shape,combine --length 8)."""
    td = lib.TensorDict({"s": "a", "b": torch.zeros(2)}, [2]).expand(1, 2)
    mask = torch.tensor([[True, True]])
    out = [_tree(td.flip(1)[mask, None][0].get("s"))]
    member = lib.TensorDict({"s": "a", "b": torch.zeros(1)}, [1])
    lazy = lib.lazy_stack([member, member.clone()], 0)
    ops = (
        lambda x: x.flip(0),
        lambda x: x.flip(1),
        lambda x: x.roll(1, 0),
        lambda x: x.tile([2, 2]),
    )
    for op in ops:
        picked = op(lazy)
        out += [_tree(picked.get("s")), _tree(picked[0, ..., ::3].get("s"))]
    return out


SCENARIOS: dict[str, Scenario] = {
    "picked-then-indexed": _picked_then_indexed,
    "unsqueezed": _unsqueezed, "stacked": _stacked, "regrouped": _regrouped, "grown": _grown,
    "picked": _picked,
    "reordered": _reordered,
    "advanced": _advanced,
    "two-d-over-no-elements": _two_d_over_no_elements,
    "one-element-per-member": _one_element_per_member,
    "parts-by-basic-index": _parts_by_basic_index,
}  # fmt: skip


test_scenario_on_tclass, test_same_as_the_peer = scenario_tests(SCENARIOS)


def test_consolidate_keeps_the_stack_dims(tmp_path: Path) -> None:
    # a value unsqueezed then expanded is nested along its one stack dim; consolidated
    # (in memory, in a file, read back) it stays so: unbind along the other dim gives
    # one value per piece, as before and as the peer's
    td = TensorDict(a=torch.zeros(4), s="a", batch_size=[4]).unsqueeze(-1).expand(4, 3)
    dims = td.get("s")._stack_dims
    td.consolidate(filename=tmp_path / "f.mmap")
    for packed in (
        td.consolidate(),
        TensorDict.from_consolidated(tmp_path / "f.mmap"),
        pickle.loads(pickle.dumps(td.consolidate())),
    ):
        assert packed.get("s")._stack_dims == dims == (1,)
        piece = packed.unbind(1)[0]
        assert type(piece.get("s")) is NonTensorData and piece["s"] == "a"
        assert packed["s"] == [["a"] * 3] * 4


def test_a_consolidated_buffer_with_stack_dims_out_of_the_batch_is_refused() -> None:
    td = TensorDict(s="a", batch_size=[2]).unsqueeze(0)
    buffer = td.consolidate()._consolidated["storage"]
    text = bytes(buffer.tolist()).replace(b'"stack_dims": [0]', b'"stack_dims": [5]')
    assert text != bytes(buffer.tolist())
    with pytest.raises(errors.MetadataError, match="stack dims"):
        TensorDict.from_consolidated(torch.frombuffer(bytearray(text), dtype=torch.uint8))


@pytest.mark.parametrize(("repeats", "dim"), [(2, -1), (2, 0), (0, -1), ([1, 0, 2], 1)])
def test_repeat_interleave_keeps_the_stack_dims(repeats: Any, dim: int) -> None:
    """Found by the differential fuzzer: ``repeat_interleave`` keeps every dim in place,
    so a value stack keeps its stack dims (the peer repeats each member, or the members
    along its stack dim), over no elements too (the members' one value is kept, so a
    ``squeeze`` of the stack dim gives it back), where each element became a member."""
    td = TensorDict({"v": "s", "d": torch.zeros(3, 2)}, [3, 2]).unsqueeze(0)
    reps = torch.tensor(repeats) if isinstance(repeats, list) else repeats
    out = td.repeat_interleave(reps, dim=dim)
    node = out.get("v")
    expected = torch.zeros(1, 3, 2).repeat_interleave(reps, dim=dim).shape
    assert type(node) is NonTensorStack and node.batch_size == expected
    assert [type(m) for m in node.tensordicts] == [NonTensorData] * expected[0]
    assert all(m.data == "s" and m.batch_size == expected[1:] for m in node.tensordicts)
    if expected[0] == 1:
        squeezed = out.squeeze(0).get("v")
        assert type(squeezed) is NonTensorData and squeezed.data == "s"
        assert squeezed.batch_size == expected[1:]


def test_squeeze_of_a_dim_beside_the_stack_dim_keeps_the_stack() -> None:
    """Found by the differential fuzzer: ``squeeze(0)`` of a value stack whose stack dim
    is dim 1 removes a dim of its members only, so the stack (now along dim 0) stays, as
    the peer's; a reshape over the size-1 dims had made it one value."""
    td = TensorDict({"n": TensorDict({"s": None}, [1, 4])}, [1])
    stacked = torch.stack([td], -1)
    assert stacked.get(("n", "s")).stack_dim == 1
    for node in (stacked.squeeze(0).get(("n", "s")), stacked.get(("n", "s")).squeeze(0)):
        assert type(node) is NonTensorStack and node.batch_size == torch.Size([1, 4])
        assert node.stack_dim == 0
        (member,) = node.tensordicts
        assert type(member) is NonTensorData and member.batch_size == torch.Size([4])
        assert member.data is None
    whole = stacked.squeeze()  # every stack dim removed: one value, as before
    assert type(whole.get(("n", "s"))) is NonTensorData


@pytest.mark.parametrize(
    "op",
    [
        lambda td: torch.clamp(td, min=0),
        lambda td: td + 1,
        lambda td: td.abs(),
        lambda td: td.to(torch.float64),
        lambda td: td.apply(lambda v: v),
        lambda td: td.clone(),
        lambda td: td.copy(),
    ],
    ids=["clamp", "add", "abs", "to", "apply", "clone", "copy"],
)
def test_math_and_apply_keep_the_value_held_over_no_elements(op: Any) -> None:
    """Found by the differential fuzzer (six families, seed 7,900,000): a stack of Python
    values over no elements keeps the one value its members hold (``unsqueeze`` of a
    ``[2, 0]`` collection); math and ``apply`` results dropped it, so a later ``squeeze``
    gave lists of no elements where the peer gives the value back."""
    td = TensorDict(
        {"s": "pong", "m": {"s": NonTensorData(2, batch_size=[2, 0])}, "b": torch.zeros(2, 0, 3)},
        batch_size=[2, 0],
    ).unsqueeze(-1)
    back = op(td).squeeze(-1)
    assert back["s"] == "pong" and back["m", "s"] == 2


def _abc() -> NonTensorStack:
    """Three values, each over ``[2, 4]``, stacked along dim 1: ``[2, 3, 4]``."""
    return NonTensorStack(*[NonTensorData(s, batch_size=[2, 4]) for s in "abc"], stack_dim=1)


@pytest.mark.parametrize(
    ("index", "tree"),
    [
        # tensors over the stack dim and another: the dims they give run over members,
        # each member's part is one value (fuzz program 10,813,332 of
        # index,combine,shape,entries --length 8: a stack of equal values, not one)
        ((torch.tensor([0]), torch.tensor([2])), ("stack", 0, [1, 4], [("value", [4], "c")])),
        (
            (0, torch.tensor([1, 2]), torch.tensor([0, 3])),
            ("stack", 0, [2], [("value", [], "b"), ("value", [], "c")]),
        ),
        # a slice there: every member indexed alike, the stack dim where the slice leaves it
        (
            (torch.tensor([1]), slice(None), torch.tensor([0, 3])),
            ("stack", 1, [2, 3], [("value", [2], s) for s in "abc"]),
        ),
        # an int there: that member's part, one value
        ((torch.tensor([1]), 2, torch.tensor([0, 3])), ("value", [2], "c")),
        ((torch.tensor([1]), torch.tensor([False] * 3)), ("stack", 0, [0, 4], [])),
    ],
    ids=["tensors", "int-elsewhere", "slice-at-stack-dim", "int-at-stack-dim", "no-member"],
)
def test_tensors_over_the_stack_dim_index_members_as_the_peer(index: Any, tree: Any) -> None:
    assert _tree(_abc()[index]) == tree


def test_a_member_taken_by_tensors_reads_as_its_value_once_squeezed() -> None:
    """Found by the differential fuzzer (10,813,332): a value stack indexed by a mask over
    its stack dim and a tensor over its members' dim, then squeezed, is the member's one
    value (a ``NonTensorData``), as the peer's; it read as a list of equal values."""
    td = TensorDict({"s": None, "b": torch.zeros(2, 5, 4)}, [2, 5, 4])
    stacked = torch.stack([td, td.clone(), td.clone()], 1)  # [2, 3, 5, 4] along dim 1
    mask = torch.tensor([[False, False, True], [False, False, False]])
    picked = stacked[mask, torch.tensor([0])]
    assert picked.batch_size == torch.Size([1, 4])
    out = picked.squeeze(0)
    assert type(out.get("s")) is NonTensorData and out["s"] is None


def _stack_of_stacks() -> Any:
    """A value per member of a stack of stacks: ``[2, 3]`` stacks of ``[3]``, along dim 1
    then dim 0 of each member: batch ``[2, 3, 3]``, ``v{i}{j}`` for member ``i, j``."""
    rows = [
        [TensorDict({"s": f"v{i}{j}", "a": torch.zeros(3)}, [3]) for j in range(2)]
        for i in range(3)
    ]
    return torch.stack([torch.stack(row) for row in rows], 1)


@pytest.mark.parametrize(
    ("index", "tree", "squeezed"),
    [
        # a mask and a tensor over the two stack dims: one member's part, one value
        # over the dim the members' tensors give (was: each element a member)
        (
            (torch.tensor([False, True]), torch.tensor([2])),
            ("stack", 0, [1, 3], [("value", [3], "v21")]),
            ("value", [3], "v21"),
        ),
        # two tensors: a stack along the dim they give of each member's part
        (
            (torch.tensor([0, 1]), torch.tensor([1, 0])),
            ("stack", 0, [2, 3], [("value", [3], "v10"), ("value", [3], "v01")]),
            ("stack", 0, [2, 3], [("value", [3], "v10"), ("value", [3], "v01")]),
        ),
        # a tensor and an int over the stack dims
        (
            (torch.tensor([1, 1]), 0),
            ("stack", 0, [2, 3], [("value", [3], "v01"), ("value", [3], "v01")]),
            ("stack", 0, [2, 3], [("value", [3], "v01"), ("value", [3], "v01")]),
        ),
    ],
    ids=["mask-and-tensor", "two-tensors", "tensor-and-int"],
)
def test_a_stack_of_stacks_under_tensors_keeps_each_members_part_one_value(
    index: Any, tree: Any, squeezed: Any
) -> None:
    picked = _stack_of_stacks()[index]
    assert _tree(picked.get("s")) == tree
    assert (
        _tree(picked.squeeze(0).get("s") if picked.shape[0] == 1 else picked.get("s")) == squeezed
    )
    assert [_tree(part.get("s")) for part in picked.unbind(0)] == tree[3]


@pytest.mark.parametrize(
    "index",
    [
        (None, torch.tensor([False]), torch.tensor(1), 1),
        (None, torch.tensor([False]), -1, 1),
        (None, torch.tensor([False]), 1),
    ],
    ids=["0-d-tensor", "negative-int", "rest-whole"],
)
def test_an_int_at_the_stack_dim_selecting_no_element_gives_the_members_value(
    index: Any,
) -> None:
    """A mask of no ``True`` elsewhere selects no element, but the int at the stack dim
    still takes the member: its one value over no elements, as the peer (was: a stack of
    no values, whose ``data`` is ``[]``)."""
    stack = NonTensorStack(*[NonTensorData(s, batch_size=[1, 3]) for s in "ab"], stack_dim=1)
    picked = stack[index]
    assert type(picked) is NonTensorData and picked.data == "b"
    assert picked.batch_size.numel() == 0
