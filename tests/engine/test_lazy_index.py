"""Indexing a lazy stack (``_engine/_lazy/_index.py``): what the results hold."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import tclass
from tclass import MemoryMappedTensor, TensorDict
from tclass.errors import DimError


def test_a_none_index_keeps_the_members_memory_mapped_leaves(tmp_path: Path) -> None:
    """``stack[None]`` indexes every member with ``None``, as ``td[None]`` does for a
    TensorDict: views of the files, still memory-mapped and writing through to them."""
    members = [TensorDict({"a": torch.full((3,), float(i))}, batch_size=[]) for i in range(2)]
    saved = tclass.lazy_stack(members).memmap(tmp_path / "s")
    stack = tclass.load_memmap(tmp_path / "s")
    out = stack[None]
    assert out.batch_size == (1, 2) and out.stack_dim == 1
    assert all(type(member["a"]) is MemoryMappedTensor for member in out.tensordicts)
    assert type(TensorDict({"a": torch.ones(2)}, [2]).memmap(tmp_path / "d")[None]["a"]) is (
        MemoryMappedTensor
    )
    out.tensordicts[1]["a"].fill_(7.0)
    assert tclass.load_memmap(tmp_path / "s")["a"].tolist() == [[0.0] * 3, [7.0] * 3]
    assert saved.batch_size == (2,)


def test_a_none_index_keeps_the_lock_names_and_a_ragged_dim() -> None:
    stack = tclass.lazy_stack([TensorDict({"a": torch.ones(3, 2)}, [3]) for _ in range(2)], 1)
    stack.names = ["i", "j"]
    stack.lock_()
    out = stack[None]
    assert out.batch_size == (1, 3, 2) and out.names == [None, "i", "j"] and out.is_locked
    assert out.stack_dim == 2 and all(member.is_locked for member in out.tensordicts)
    ragged = tclass.lazy_stack([TensorDict(a=torch.zeros(n), batch_size=[n]) for n in (2, 3)])
    assert ragged[None].batch_size == (1, 2, -1) and ragged[None].stack_dim == 1


def test_a_list_of_keys_is_a_type_error_that_names_select() -> None:
    # The peer's TypeError (torch's, or a raw ValueError for a lazy stack).
    dense = TensorDict(a=torch.zeros(3), b=torch.ones(3), batch_size=[3])
    record = tclass.tensorclass(
        type("Rec", (), {"__annotations__": {"a": torch.Tensor}, "__module__": __name__})
    )(a=torch.zeros(3), batch_size=[3])
    for collection in (dense, tclass.lazy_stack([dense, dense], 1), record):
        with pytest.raises(tclass.errors.IndexTypeError, match=r"select\('a'\)") as caught:
            collection[["a"]]
        assert isinstance(caught.value, TypeError)
    with pytest.raises(TypeError, match=r"select\('a', 'b'\)"):
        dense[["a", "b"]] = torch.zeros(())
    assert torch.equal(dense[[0, 2]]["b"], torch.ones(2))  # rows by a list of ints, still


def test_an_index_of_a_type_that_indexes_nothing_is_a_type_error_too() -> None:
    lazy = tclass.lazy_stack([TensorDict(a=torch.zeros(3), batch_size=[3]) for _ in range(2)])
    dense = TensorDict(a=torch.zeros(2, 3), batch_size=[2, 3])
    for collection in (lazy, dense):
        for index in ({0, 1}, (slice(None), {1, 2})):
            with pytest.raises(tclass.errors.IndexTypeError, match=r"Invalid index.*got set") as e:
                collection[index]
            assert isinstance(e.value, TypeError) and isinstance(e.value, IndexError)
        with pytest.raises(tclass.errors.IndexTypeError, match="Invalid index"):
            collection[{0}] = torch.ones(())
    with pytest.raises(tclass.errors.DimError, match="out of range") as caught:
        lazy[5]
    assert not isinstance(caught.value, TypeError)  # out of range stays an IndexError only


def test_a_tensor_along_the_stack_dim_picks_members_without_elements() -> None:
    """Members with no elements left (``lazy[mask, 4:]``) are picked all the same: a lazy
    stack of the picked members, with the batch size torch gives a tensor."""
    members = [TensorDict({"a": torch.full((4, 2), float(i))}, [4]) for i in range(3)]
    stack = tclass.lazy_stack(members, 1)  # batch [4, 3]
    reference = torch.zeros(4, 3)
    for index in [
        (slice(4, None), torch.tensor([True, False, True])),
        (slice(0, 0), torch.tensor([2, 0, 0])),
        (slice(4, None), torch.tensor([-1])),
    ]:
        out = stack[index]
        assert isinstance(out, tclass.LazyStackedTensorDict)
        assert out.batch_size == reference[index].shape
        picked = index[1].nonzero().squeeze(-1) if index[1].dtype is torch.bool else index[1]
        assert [m["a"].shape for m in out.tensordicts] == [(0, 2)] * len(picked)
        assert out["a"].shape == reference[index].shape + (2,)
    nothing = stack[:0, torch.tensor([False, False, False])]
    assert nothing.batch_size == (0, 0) and nothing["a"].shape == (0, 0, 2)


def test_an_empty_selection_is_shaped_by_the_member_an_int_picks() -> None:
    """``stack[1, []]`` selects nothing of member 1: the empty result has member 1's
    feature shapes (as ``stack[1][[]]``), not member 0's."""
    members = [TensorDict({"c": torch.zeros(1, 3)}, [1]), TensorDict({"c": torch.ones(1, 1)}, [1])]
    stack = tclass.lazy_stack(members)
    for index in ((1, []), (-1, [], None), (1, torch.zeros(1, dtype=torch.bool))):
        out = stack[index]
        expected = members[1][index[1:]]
        assert out.batch_size == expected.batch_size and out["c"].shape == expected["c"].shape
    assert stack[0, []]["c"].shape == (0, 3)


def test_no_member_of_a_stack_of_ragged_lazy_stacks_is_dense_above_the_ragged_entry() -> None:
    """Selecting no member of a stack of lazy stacks whose members differ only in a
    nested entry: a TensorDict whose nested collection is a lazy stack of no elements, as
    the peer's (``maybe_dense_stack`` of the empty pieces), not a lazy stack at the top;
    where a top-level entry differs, a lazy stack (program 10,904,829 of index,combine)."""

    def member(n: int, ragged_top: bool = False) -> TensorDict:
        nested = TensorDict({"d": torch.zeros(4, n)}, [4])
        return TensorDict({"b": torch.ones(4, n if ragged_top else 1), "m": nested}, [4])

    inner = tclass.lazy_stack([member(2), member(3)], stack_dim_name="s")
    stack = tclass.lazy_stack([inner, inner.clone(), inner.clone()], 1, stack_dim_name="o")
    for index in ((slice(None), []), (slice(None), slice(0, 0)), (slice(None), [False] * 3)):
        out = stack[index]
        assert type(out) is TensorDict and out.batch_size == (2, 0, 4)
        assert out.names == ["s", "o", None] and not out.is_locked
        assert out["b"].shape == (2, 0, 4, 1)
        nested = out.get("m")
        assert type(nested) is tclass.LazyStackedTensorDict and nested.stack_dim == 0
        assert [m["d"].shape for m in nested.tensordicts] == [(0, 4, 2), (0, 4, 3)]
    ragged = tclass.lazy_stack([member(2, True), member(3, True)])
    out = tclass.lazy_stack([ragged, ragged.clone()], 1)[:, :0]
    assert type(out) is tclass.LazyStackedTensorDict and out.batch_size == (2, 0, 4)


@pytest.mark.parametrize("lib_name", ["tclass", "tensordict"])
def test_no_element_of_one_member_of_a_lazy_stack_keeps_a_nested_entry_lazy(
    lib_name: str,
) -> None:
    """``view[0:1, :0, 0]`` of a view of a lazy stack whose members' nested entry differs
    in shape: a TensorDict whose nested entry stays a lazy stack, of the one member the
    index keeps, as it is where it keeps two (or elements), as in the peer (program
    17,003,898 L8 of features,index,shape,combine)."""
    lib = pytest.importorskip(lib_name)

    def member(n: int) -> object:
        nested = lib.TensorDict({"a": torch.zeros(1), "b": torch.zeros(1, n)}, [1])
        return lib.TensorDict({"m": nested, "a": torch.zeros(())}, [])

    view = lib.lazy_stack([member(3), member(1)]).view(2, 1, 1)
    for rows, widths in ((slice(0, 1), [3]), (slice(1, 2), [1]), (slice(None), [3, 1])):
        out = view[rows, :0, 0]
        assert type(out) is lib.TensorDict and out.batch_size == (len(widths), 0)
        nested = out.get("m")
        assert type(nested) is lib.LazyStackedTensorDict and nested.stack_dim == 0
        assert [m["b"].shape for m in nested.tensordicts] == [(0, 1, w) for w in widths]
    assert type(view[0:1, 0:1, 0].get("m")) is lib.LazyStackedTensorDict


def test_update_replaces_a_ragged_entry_with_a_collection() -> None:
    """``update`` of a lazy stack replaces a tensor entry whose members differ in shape
    with the collection given for it: the tensors are not stacked first."""
    stack = tclass.lazy_stack([TensorDict({"d": torch.zeros(n)}, []) for n in (1, 3)])
    out = stack.update({"d": TensorDict({}, batch_size=[2])})
    assert out is stack
    assert all(type(member.get("d")) is TensorDict for member in stack.tensordicts)
    assert stack.get("d").batch_size == (2,) and not list(stack.get("d").keys())


def test_a_mask_over_the_stack_dim_keeps_a_member_per_element_when_nothing_is_left() -> None:
    """A mask over the stack dim and another dim picks one member per masked element; an
    empty slice elsewhere (or a dim of size 0) leaves them no element but keeps them: a
    lazy stack with the batch size torch gives a tensor, as with elements left."""
    dense = torch.arange(48.0).reshape(3, 4, 4)
    stack = tclass.lazy_stack([TensorDict({"c": row}, [4, 4]) for row in dense], 0)
    mask = torch.tensor([[True, False, False, True], [False] * 4, [False, True, False, False]])
    for rest in (slice(4, None, 3), slice(1, None, 3)):
        out = stack[mask, rest]
        assert isinstance(out, tclass.LazyStackedTensorDict) and out.stack_dim == 0
        assert len(out.tensordicts) == 3 and out.batch_size == dense[mask, rest].shape
        assert torch.equal(out["c"], dense[mask, rest])
    empty = stack[mask, 4::3]
    assert [m.batch_size for m in empty.tensordicts] == [(0,)] * 3
    assert not empty.is_locked and empty.keys() == {"c"}
    inner = tclass.lazy_stack([TensorDict({"b": torch.ones(2, 0, 1)}, [2, 0])], 1)  # [2, 1, 0]
    picked = inner[torch.tensor([[True], [False]])]
    assert isinstance(picked, tclass.LazyStackedTensorDict)
    assert picked.batch_size == torch.zeros(2, 1, 0)[torch.tensor([[True], [False]])].shape
    assert [m.batch_size for m in picked.tensordicts] == [(0,)]
    nothing = stack[torch.zeros(3, 4, dtype=torch.bool)]
    assert type(nothing) is TensorDict and nothing.batch_size == (0, 4)


def test_negative_step_picks_members_backwards() -> None:
    """On the stack dim a negative step picks the members backwards, as a list slice (and
    the peer's lazy stack); reads, writes and in-place math reach the members."""
    a = tclass.TensorDict({"x": torch.zeros(3)}, [3])
    b = tclass.TensorDict({"x": torch.ones(3)}, [3])
    lazy = tclass.lazy_stack([a, b])
    backwards = lazy[::-1]
    assert isinstance(backwards, tclass.LazyStackedTensorDict)
    assert backwards.batch_size == torch.Size([2, 3])
    assert torch.equal(backwards["x"], lazy["x"].flip(0))
    assert lazy[::-2].batch_size == torch.Size([1, 3])
    assert torch.equal(lazy[::-2]["x"], torch.ones(1, 3))
    assert torch.equal(lazy[1::-1]["x"], lazy["x"].flip(0))
    lazy[::-1] = tclass.TensorDict({"x": torch.arange(6.0).reshape(2, 3)}, [2, 3])
    assert torch.equal(a["x"], torch.arange(3.0, 6.0)) and torch.equal(b["x"], torch.arange(3.0))
    lazy[::-1, 1:] = tclass.TensorDict({"x": torch.full((2, 2), 9.0)}, [2, 2])
    assert a["x"].tolist() == [3.0, 9.0, 9.0] and b["x"].tolist() == [0.0, 9.0, 9.0]
    backwards["x"] += 100  # the members themselves, not copies
    assert a["x"][0] == 103.0 and b["x"][0] == 100.0
    # the stack dim second: a negative step on it picks the members, on dim 0 it fails
    lazy1 = tclass.lazy_stack([a, b], 1)
    assert torch.equal(lazy1[:, ::-1]["x"], lazy1["x"].flip(1))


@pytest.mark.parametrize("rows", [0, 2], ids=["no-elements", "elements"])
def test_an_int_on_the_stack_dim_with_a_tensor_elsewhere_indexes_that_member(rows: int) -> None:
    """``stack[:1, -3, mask]`` with the int on the stack dim: the member it picks,
    indexed by the rest (torch selects an int first), so a member that is a lazy stack
    stays one, as in the peer, also where the mask selects nothing; the values are the
    dense stack's."""
    members = [
        TensorDict({"b": torch.arange(rows * 3 * 2.0).reshape(rows, 3, 2) + i}, [rows, 3])
        for i in range(2)
    ]
    inner = tclass.lazy_stack(members, 0)
    outer = tclass.lazy_stack([inner, inner.clone(), inner.clone() + 10], 1)
    mask = torch.zeros(rows, 3, dtype=torch.bool)
    if rows:
        mask[0, 1] = mask[1, 2] = True
    got = outer[0:3:3, -3, mask]
    assert type(got) is tclass.LazyStackedTensorDict and got.batch_size == (1, int(mask.sum()))
    assert type(got.tensordicts[0]) is TensorDict
    torch.testing.assert_close(got["b"], outer.contiguous()[0:3:3, -3, mask]["b"])
    whole = outer[0, -1, mask]
    assert type(whole) is TensorDict
    torch.testing.assert_close(whole["b"], outer.contiguous()[0, -1, mask]["b"])


def test_an_int_before_a_slice_does_not_move_the_dims_a_tensor_picks_members_along() -> None:
    """``stack[0, :2, idx]`` with ``idx`` on the stack dim: torch selects the int first,
    so the tensor's dim stays in place (batch size ``[1, 3]``, unlike numpy's ``[3, 1]``)
    and the result is a lazy stack along it of the picked members' parts, as the peer's."""
    member = TensorDict({"d": torch.arange(2.0).reshape(2, 1, 1)}, [2, 1])
    for count in (1, 2):
        stack = tclass.lazy_stack([member.clone() + i for i in range(count)], 2)
        got = stack[0, :2, torch.tensor([0, -1, -1])]
        assert got.batch_size == (1, 3) and got.stack_dim == 1
        assert all(type(part) is TensorDict and part.batch_size == (1,) for part in got.tensordicts)
        dense = stack.contiguous()[0, :2, torch.tensor([0, -1, -1])]
        torch.testing.assert_close(got["d"], dense["d"])


def test_the_names_and_dims_of_tensor_indices_around_an_int_follow_torch() -> None:
    """An int (or a 0-d integer tensor) selects first in torch, so tensor indices around
    it are adjacent (``td[:, i, 0, i]`` keeps their dim in place, named ``None`` after
    ``"a"``) and a 0-d tensor on a lazy stack's stack dim picks the member."""
    td = TensorDict({"a": torch.zeros(2, 3, 4, 5)}, [2, 3, 4, 5], names=["a", "b", "c", "d"])
    i = torch.tensor([0, 1])
    assert td[:, i, 0, i].names == ["a", None]
    assert td[torch.tensor(0), :, i].names == ["b", "c", "d"]
    stack = tclass.lazy_stack([TensorDict({"a": torch.zeros(2, 4, 5)}, [2, 4, 5])] * 3, 1)
    got = stack[torch.tensor(0), :, [0, 1]]
    assert got.batch_size == (3, 2, 5) and got.stack_dim == 0


@pytest.mark.parametrize("ragged", [False, True], ids=["regular", "ragged"])
def test_a_0d_tensor_on_the_stack_dim_with_a_tensor_elsewhere_indexes_that_member(
    ragged: bool,
) -> None:
    """``stack[torch.tensor(1), idx]``: a 0-d integer tensor selects as an int does (in
    torch and in the peer), so the result is member 1 indexed by ``idx``, a TensorDict
    as the peer's (it was a lazy stack of its rows), also on a ragged stack; out of range
    it is the int's DimError (an IndexError, as the peer's)."""
    members = [
        TensorDict({"a": torch.arange(4.0) + i, "r": torch.ones(4, i + 1 if ragged else 1)}, [4])
        for i in range(3)
    ]
    stack = tclass.lazy_stack(members, 0)
    for picker in (torch.tensor(1), torch.tensor(-2)):
        got = stack[picker, torch.tensor([0, 2])]
        assert type(got) is TensorDict and got.batch_size == (2,)
        assert got["a"].tolist() == [1.0, 3.0] and got["r"].shape == (2, 2 if ragged else 1)
        masked = stack[picker, torch.tensor([True, False, True, False])]
        assert type(masked) is TensorDict and masked["a"].tolist() == [1.0, 3.0]
    assert stack[torch.tensor(1)] is members[1]
    with pytest.raises(DimError, match="index 5 is out of range") as caught:
        stack[torch.tensor(5), torch.tensor([0])]
    assert isinstance(caught.value, IndexError)


@pytest.mark.parametrize("lib_name", ["tclass", "tensordict"])
@pytest.mark.parametrize(
    ("rest", "part_size"), [((), (3,)), ((None,), (1, 3)), ((1,), ()), ((1, None), (1,))]
)
def test_a_mask_over_lazy_members_takes_their_members_parts(
    lib_name: str, rest: tuple[object, ...], part_size: tuple[int, ...]
) -> None:
    """A mask over the stack dim and the stack dim of lazy members (a lazy stack of lazy
    stacks, as ``flatten().unflatten()`` gives): each element is a part of one member
    of a member, a TensorDict, not a lazy stack of one, as in the peer."""
    lib = pytest.importorskip(lib_name)

    def inner(first: float) -> object:
        rows = [lib.TensorDict({"b": torch.full((3,), first + i)}, [3]) for i in range(2)]
        return lib.lazy_stack(rows, 0)

    stack = lib.lazy_stack([inner(0.0), inner(2.0)], 0).lock_()
    mask = torch.tensor([[True, False], [True, True]])
    out = stack[(mask, *rest)]
    assert out.batch_size == (3, *part_size) and out.is_locked
    assert all(type(part) is lib.TensorDict for part in out.tensordicts)
    assert all(part.batch_size == part_size for part in out.tensordicts)
    firsts = [part["b"].reshape(-1)[0].item() for part in out.tensordicts]
    assert firsts == [0.0, 2.0, 3.0]


@pytest.mark.parametrize("lib_name", ["tclass", "tensordict"])
def test_a_slice_over_a_lazy_members_stack_dim_keeps_it_lazy(lib_name: str) -> None:
    """As above, but the members' own stack dim (the last) is left to a slice: each
    element is a lazy stack of what the slice takes, even of one member, as in the peer;
    an int there takes that member's part."""
    lib = pytest.importorskip(lib_name)

    def inner(first: float) -> object:
        rows = [lib.TensorDict({"b": torch.full((3,), first + i)}, [3]) for i in range(2)]
        return lib.lazy_stack(rows, 1)

    stack = lib.lazy_stack([inner(0.0), inner(2.0)], 0)  # batch [2, 3, 2]
    mask = torch.tensor([[True, False, True], [True, True, False]])
    kept = stack[mask, 0:1]
    assert kept.batch_size == (4, 1)
    assert all(type(part) is lib.LazyStackedTensorDict for part in kept.tensordicts)
    assert [part["b"].tolist() for part in kept.tensordicts] == [[0.0], [0.0], [2.0], [2.0]]
    taken = stack[mask, 1]
    assert all(type(part) is lib.TensorDict for part in taken.tensordicts)
    assert taken["b"].tolist() == [1.0, 1.0, 3.0, 3.0]


@pytest.mark.parametrize("rows", [[0, 1], []])
def test_tensors_parted_by_the_stack_dim_and_another_dim_index_each_member(
    rows: list[int],
) -> None:
    # x[t, ..., t] with the stack dim in the ellipsis: tensors a slice still parts in each
    # member put their dims in front, in the members as in the dense stack, so the result
    # stays a lazy stack, as the peer's (fuzzer program 8,704,743 of index,shape,combine)
    members = [TensorDict({"a": torch.randn(4, 2, 3, 5)}, [4, 2, 3]) for _ in range(3)]
    lazy = tclass.lazy_stack(members, 1)
    index = torch.tensor(rows, dtype=torch.long)
    out = lazy[index, ..., index]
    want = torch.stack([m["a"] for m in members], 1)[index, :, :, index]
    assert isinstance(out, tclass.LazyStackedTensorDict) and out.stack_dim == 1
    assert out.batch_size == want.shape[:3] and torch.equal(out["a"], want)
    # only the stack dim between them, after a slice: the members would put the dims in
    # place, the dense stack in front (torch's rule), as tclass's result does
    inner = tclass.lazy_stack(members, 2)
    picked = inner[:, torch.tensor([0, 1]), :, torch.tensor([1, 0])]
    whole = torch.stack([m["a"] for m in members], 2)[:, [0, 1], :, [1, 0]]
    assert picked.batch_size == whole.shape[:3] and torch.equal(picked["a"], whole)


@pytest.mark.parametrize("lib_name", ["tclass", "tensordict"])
def test_a_full_slice_keeps_the_members_themselves(lib_name: str, tmp_path: Path) -> None:
    """``stack[:]`` of a stack along a later dim indexes no member (as the peer: a full
    slice keeps a member whole), so a file's member stays the file, not a view of its rows;
    a slice that takes part of the dim still indexes each member."""
    pytest.importorskip("h5py")
    lib = pytest.importorskip(lib_name)
    plain = lib.TensorDict({"a": torch.arange(2.0)}, [2])
    source = lib.TensorDict({"a": torch.zeros(2)}, [2])
    saved = lib.PersistentTensorDict.from_dict(source, str(tmp_path / "f.h5"))
    stack = lib.lazy_stack([plain, saved], 1)
    whole = stack[:]
    assert whole.batch_size == (2, 2) and whole.stack_dim == 1
    assert whole.tensordicts[0] is plain
    assert type(whole.tensordicts[1]) is lib.PersistentTensorDict
    whole[1, 1] = lib.TensorDict({"a": torch.tensor(5.0)}, [])
    assert saved["a"].tolist() == [0.0, 5.0]
    part = stack[:1]
    assert part.batch_size == (1, 2) and part.tensordicts[0] is not plain
    assert type(part.tensordicts[1]) is not lib.PersistentTensorDict


@pytest.mark.parametrize("mask", [[True, False], [True, True]])
def test_tensors_parted_by_the_stack_dim_alone_in_front_index_each_member(
    mask: list[bool],
) -> None:
    # nothing before the first tensor: its dims lead in each member as in the dense
    # stack, so the result stays a lazy stack along the slice, as the peer's (program
    # 114,209 of index,entries: a TensorDict)
    members = [TensorDict({"b": torch.arange(8).reshape(4, 2) * (k + 1)}, [4, 2]) for k in range(2)]
    for lazy in (tclass.lazy_stack(members[:1], 1), tclass.lazy_stack(members, 1)):
        index = (torch.tensor([-3, -1]), slice(0, 1, 3), torch.tensor(mask))
        out = lazy[index]
        want = torch.stack([m["b"] for m in lazy.tensordicts], 1)[index]
        assert isinstance(out, tclass.LazyStackedTensorDict) and out.stack_dim == 1
        assert out.batch_size == want.shape and torch.equal(out["b"], want)


def test_elements_picked_from_a_locked_lazy_member_stay_locked() -> None:
    """A mask over a stack of lazy stacks, one of them locked (``lazy_stack([x,
    x.clone()])`` of a locked ``x``): the elements that come from the locked member are
    locked, those from the unlocked clone are not, as the peer's (it indexes the locked
    member, whose result is locked, then takes its elements; fuzz program 10,900,824 of
    index,combine --length 6). Before, every element came out unlocked."""

    def row(seed: float) -> TensorDict:
        return TensorDict({"c": torch.arange(3.0) + seed}, batch_size=[3])

    locked = tclass.lazy_stack([row(0.0), row(10.0)], 0).lock_()
    stack = tclass.lazy_stack([locked, locked.clone()], 0)
    mask = torch.tensor([[[True, False, False], [False, True, False]], [[True, False, True]] * 2])
    out = stack[mask]
    assert out.batch_size == (6,) and not out.is_locked
    assert [part["c"].item() for part in out.tensordicts] == [0.0, 11.0, 0.0, 2.0, 10.0, 12.0]
    assert [part.is_locked for part in out.tensordicts] == [True, True] + [False] * 4
    # all the elements from the locked member: the result is locked, as the peer's
    only_locked = stack[torch.tensor([[True, False], [False, False]]), 1]
    assert [part.is_locked for part in only_locked.tensordicts] == [True]
    assert only_locked.is_locked and only_locked["c"].tolist() == [1.0]
    # no element selected (an empty slice first): each part keeps its member's lock
    wide = tclass.lazy_stack([locked[None], locked[None].clone()], 2)
    picks = torch.tensor([[[True, False, False], [True, True, False]], [[False, False, True]] * 2])
    empty = wide[:0, picks]
    assert empty.batch_size == (0, 5) and not empty.is_locked
    assert [part.is_locked for part in empty.tensordicts] == [True, False, False, True, False]


def test_parts_keeping_a_locked_lazy_members_stack_dim_are_unlocked() -> None:
    """A slice keeps the stack dim of a locked lazy member, a mask takes the others: each
    part is a new lazy stack of copies of that member's rows, unlocked with its members,
    as the peer's (it unbinds the member's locked result along another dim, which gives
    new stacks). Before, the parts from the locked member came out locked."""

    def row(seed: float) -> TensorDict:
        return TensorDict({"c": torch.arange(3.0) + seed}, batch_size=[3])

    locked = tclass.lazy_stack([row(0.0), row(10.0)], 0).lock_()
    stack = tclass.lazy_stack([locked, locked.clone()], 2)
    out = stack[:, torch.tensor([[True, False], [False, False], [True, True]])]
    assert out.batch_size == (2, 3) and out.stack_dim == 1 and not out.is_locked
    assert [part.is_locked for part in out.tensordicts] == [False] * 3
    assert not any(row.is_locked for part in out.tensordicts for row in part.tensordicts)
    assert out[:, 0]["c"].tolist() == [0.0, 10.0] and locked.is_locked
    assert all(member.is_locked for member in locked.tensordicts)


def test_in_place_math_on_a_file_member_held_twice_keeps_every_write(tmp_path: Path) -> None:
    """inv20e (found reducing program 10,814,992 of index,combine,shape,entries --length
    8): ``torch.cat`` of a lazy stack of files with its own slice holds each file twice;
    ``masked_fill_`` writes the file once with both places' fills, as the peer and as a
    stack in memory (tclass read each place into its own copy and wrote both back, the
    second undoing the first)."""
    files = [
        TensorDict({"b": torch.arange(3) + 10 * i}, [3]).to_h5(str(tmp_path / f"w{i}.h5"))
        for i in range(2)
    ]
    stack = tclass.LazyStackedTensorDict.lazy_stack([tclass.lazy_stack(files, 1)], dim=-1)
    stack = torch.cat([stack, stack[:, :, :1]], -1)  # [3, 2, 2]: each file at [..., 0] and [..., 1]
    mask = torch.zeros(3, 2, 2, dtype=torch.bool)
    mask[0, 0, 0] = mask[1, 0, 1] = True
    stack.masked_fill_(mask, -1)
    assert files[0]["b"].tolist() == [-1, -1, 2] and files[1]["b"].tolist() == [10, 11, 12]
    assert stack["b"][:, 0].tolist() == [[-1, -1], [-1, -1], [2, 2]]


def test_a_mask_picking_whole_members_of_lazy_members_shares_them() -> None:
    """A mask over a lazy stack's stack dim and its lazy members' stack dim picks those
    members' members whole: the result holds them, shared, as the peer's (it indexes each
    lazy member with a tensor at its stack dim, which picks its members, and unbinds
    that), so a write at the result's index reaches the source (fuzz program 10,900,216
    of index,combine --length 6). Before, each was a copy and the write was lost."""

    def inner() -> tclass.LazyStackedTensorDict:
        rows = [TensorDict({"c": torch.zeros(1)}, [1]) for _ in range(2)]
        return tclass.lazy_stack(rows, 1)  # batch (1, 2)

    members = [tclass.lazy_stack([inner(), inner()], 0) for _ in range(3)]  # (2, 1, 2)
    stack = tclass.LazyStackedTensorDict(*members, stack_dim=1)  # (2, 3, 1, 2)
    out = stack[torch.tensor([[False, True, False], [True, False, False]]),]
    assert out.batch_size == (2, 1, 2)
    assert out.tensordicts[0] is members[1].tensordicts[0]
    assert out.tensordicts[1] is members[0].tensordicts[1]
    out[0] = out[0].clone().apply(lambda t: t + 7)
    assert stack["c"][:, :, 0].tolist() == [[[0.0, 0.0], [7.0, 7.0], [0.0, 0.0]], [[0.0, 0.0]] * 3]


def test_members_of_a_lazy_member_picked_whole_keep_their_memory_mapped_leaves(
    tmp_path: Path,
) -> None:
    """``LazyStackedTensorDict(files, stack_dim=1)[[2, 1, 0], mask]`` takes the members of
    its one lazy member whole: they are the loaded members, whose leaves stay
    ``MemoryMappedTensor``, as the peer's and as ``files[[2, 1, 0]]`` gives in both (fuzz
    program 10,903,557 of index,combine --length 6). Before, they were plain copies."""
    rows = [TensorDict({"a": torch.full((3, 1), float(i))}, batch_size=[]) for i in range(3)]
    files = tclass.lazy_stack(rows, 0).memmap(tmp_path / "w")
    out = tclass.LazyStackedTensorDict(files, stack_dim=1)[[-1, 1, -3], torch.tensor([True])]
    assert out.batch_size == (3,)
    assert [type(member["a"]) for member in out.tensordicts] == [MemoryMappedTensor] * 3
    assert [member["a"][0, 0].item() for member in out.tensordicts] == [2.0, 1.0, 0.0]
    assert all(type(member["a"]) is MemoryMappedTensor for member in files[[2, 1]].tensordicts)


def test_elements_an_int_takes_from_a_locked_lazy_members_member_are_unlocked() -> None:
    """``lazy_stack([x, x.clone()], 1)[0, mask]`` of a locked lazy ``x``: the int at
    ``x``'s stack dim picks one of its members, whose elements the mask takes as copies,
    unlocked, as the peer's (it takes that member's part as it gives it, without the lock
    of ``x``'s own results). Before, the elements from ``x`` came out locked."""
    rows = [TensorDict({"c": torch.arange(3.0) + 10 * i}, [3]) for i in range(2)]
    locked = tclass.lazy_stack(rows, 0).lock_()  # batch (2, 3)
    stack = tclass.lazy_stack([locked, locked.clone()], 1)  # (2, 2, 3)
    out = stack[0, torch.tensor([[True, False, True], [False, True, False]])]
    assert out.batch_size == (3,) and not out.is_locked
    assert [part.is_locked for part in out.tensordicts] == [False, False, False]
    assert out["c"].tolist() == [0.0, 2.0, 1.0]
    # a tensor there (no int) still gives the locked member's elements locked
    assert stack[torch.tensor([[[True, False, False]] * 2] * 2)].tensordicts[0].is_locked


def test_in_place_math_through_views_of_the_same_file_rows_keeps_every_view_s_writes(
    tmp_path: Path,
) -> None:
    """inv20h (program 10,814,992 of index,combine,shape,entries --length 8): members
    that are separate view objects of the same file rows (overlapping slices, or indexed
    after ``torch.cat`` with the stack's own slice) are each read into their own copy;
    each now writes back only the elements its math changed, over the file as it is then,
    so every view's writes are kept, as the peer's and as views of one tensor in memory
    (the later copy undid the earlier one's writes: row 1 stayed 1.0). NaN and -0.0 are
    compared bit for bit."""
    values = {"b": torch.tensor([0.0, 1.0, 2.0, float("nan")]), "n": {"c": torch.arange(4)}}
    file = TensorDict(values, [4]).to_h5(str(tmp_path / "w.h5"))
    stack = tclass.lazy_stack([file[0:2], file[1:3]], 0)  # row 1 in both views
    stack.masked_fill_(torch.tensor([[False, True], [False, True]]), -0.0)
    assert file["b"].tolist()[:3] == [0.0, -0.0, -0.0] and file["b"][3].isnan()
    assert file["b"][1].signbit() and file["n", "c"].tolist() == [0, 0, 0, 3]
    assert stack["b"].tolist() == [[0.0, -0.0], [-0.0, -0.0]]
    stack = tclass.lazy_stack([file[torch.tensor([1, 3])], file[torch.tensor([3, 1])]], 0)
    stack.masked_fill_(torch.tensor([[True, False], [True, False]]), 7)
    assert file["b"].tolist() == [0.0, 7.0, -0.0, 7.0] and file["n", "c"].tolist() == [0, 7, 0, 7]


def test_a_mask_picking_whole_rows_of_members_takes_each_row_as_an_int_index_does() -> None:
    """inv20h (program 10,801,465 of index,combine,shape,entries --length 6): a mask over
    a lazy stack's dim and its dense members' first dim takes each picked row whole, as
    ``member[row]`` gives it (as the peer's): a stack of one value over the row is that
    one ``NonTensorData`` (tclass gave a stack of the equal values); a copy still."""
    member = TensorDict({"a": torch.arange(4.0).reshape(2, 2)}, [2, 2])
    member["s"] = tclass.NonTensorStack(*[tclass.NonTensorData(2, batch_size=[2])] * 2)
    lazy = tclass.lazy_stack([member, member.clone()], 0)
    mask = torch.tensor([[True, False], [False, True]])
    out = lazy[mask]
    assert out.batch_size == (2, 2) and out["a"].tolist() == [[0.0, 1.0], [2.0, 3.0]]
    assert [m.entry_class("s") for m in out.tensordicts] == [tclass.NonTensorData] * 2
    out.tensordicts[0]["a"].add_(1)
    assert member["a"].tolist() == [[0.0, 1.0], [2.0, 3.0]]


@pytest.mark.parametrize("lib_name", ["tclass", "tensordict"])
def test_a_mask_over_a_locked_stack_of_records_gives_a_locked_record(lib_name: str) -> None:
    """fz23j (program 13,110,472 of combine,records,index --length 10): a mask over every
    dim of a locked lazy stack of records gives a record over a lazy stack, locked as the
    peer's (and as a stack of TensorDicts gave it); tclass's result was unlocked, a write
    into it then reached no member."""
    lib = pytest.importorskip(lib_name)
    namespace = {"__annotations__": {"a": torch.Tensor}, "__module__": __name__}
    rec = lib.tensorclass(type("Rec", (), namespace))
    member = rec(a=torch.arange(4.0).reshape(2, 2), batch_size=[2, 2]).lock_()
    for stack_dim, others in ((-1, 0), (0, 0), (0, 1)):
        members = [member] + [member.clone().lock_()] * others
        stack = lib.LazyStackedTensorDict(*members, stack_dim=stack_dim)
        out = stack[torch.ones(stack.batch_size, dtype=torch.bool)]
        assert type(out) is rec and out.is_locked
        assert out.batch_size == (4 * (1 + others),)
        assert out.a.tolist() == [0.0, 1.0, 2.0, 3.0] * (1 + others)
    partial = stack[torch.tensor([[[True, False], [False, True]]] * 2)]
    assert partial.is_locked and partial.a.tolist() == [0.0, 3.0] * 2


@pytest.mark.parametrize("lib_name", ["tclass", "tensordict"])
def test_numpy_integer_indices_read_and_write_a_lazy_stack(lib_name: str) -> None:
    """A numpy integer (``np.int64(2)``, what a replay buffer's numpy sampler gives) indexes
    a lazy stack and a stack of Python values as an int does, alone or in a tuple, read and
    written; tclass failed inside ("max() arg is an empty sequence")."""
    lib = pytest.importorskip(lib_name)
    np = pytest.importorskip("numpy")
    dense = lib.TensorDict({"obs": torch.arange(24.0).view(4, 3, 2)}, [4, 3])
    for stack_dim in (0, 1):
        lazy = lib.lazy_stack(list(dense.clone().unbind(stack_dim)), stack_dim)
        for index in (np.int64(2), np.int32(-1), (np.int64(1), np.int64(2)), (..., np.uint8(0))):
            assert lazy[index].batch_size == dense[index].batch_size
            assert torch.equal(lazy[index]["obs"], dense[index]["obs"])
            lazy[index] = lazy[index].apply(lambda x: -x)
            assert torch.equal(lazy[index]["obs"], -dense[index]["obs"])
            lazy[index] = dense[index]
    values = lib.NonTensorStack(
        *[lib.NonTensorStack(*[lib.NonTensorData(f"{i}{j}") for j in range(3)]) for i in range(2)]
    )
    assert values[np.int64(1)].tolist() == ["10", "11", "12"]
    values[np.int64(0), np.int64(2)] = "z"
    assert values.tolist() == [["00", "01", "z"], ["10", "11", "12"]]
