"""A write into a lazy stack at an index that selects no element still writes into the
members the index picks, in the peer (each member's ``member[where] = part``), and
autograd refuses an in-place write into a leaf that requires grad, or a view of one,
even of no element: tclass refuses it too, naming the entry and the member
(``refuse_grad_members`` in ``tclass/_engine/_lazy/_index_writes.py``), whichever way
the write is spelled; an index that picks no such member, or a mask over the stack dim
and others that picks no position (the peer splits it among the members where it picks
some: each member it picks is written), writes nothing and passes, as in the peer.
Fuzz program 15,620,291 (features,index,shape,combine ``--length 8``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

import tclass
from tclass import errors

tensordict = pytest.importorskip("tensordict")

NONE = torch.tensor([False, False])


def _stacks(lib: Any) -> tuple[Any, Any]:
    """Two lazy stacks (dims 1 and 0) of a member whose leaf requires grad and one
    whose leaf does not."""
    grad = lib.TensorDict({"b": torch.ones(2, 3, requires_grad=True)}, [2])
    plain = lib.TensorDict({"b": torch.ones(2, 3)}, [2])
    return lib.lazy_stack([grad, plain], 1), lib.lazy_stack([grad, plain], 0)


def _rows(stack: Any, index: Any) -> Any:
    return stack[index].clone().detach()


WRITES: list[Any] = [
    pytest.param(lambda s1, s0: s1.update_at_(_rows(s1, (NONE, 0)), (NONE, 0)), True, id="mask-0"),
    pytest.param(lambda s1, s0: s1.update_at_(_rows(s1, (NONE, 1)), (NONE, 1)), False, id="mask-1"),
    pytest.param(
        lambda s1, s0: s1.update_at_(_rows(s1, slice(0, 0)), slice(0, 0)), True, id="empty-slice"
    ),
    pytest.param(
        lambda s1, s0: s0.update_at_(_rows(s0, (0, NONE)), (0, NONE)), True, id="stack-dim-0"
    ),
    pytest.param(
        lambda s1, s0: s0.update_at_(_rows(s0, (1, NONE)), (1, NONE)), False, id="other-member"
    ),
    pytest.param(
        lambda s1, s0: s1.__setitem__((NONE, 0), _rows(s1, (NONE, 0))), True, id="setitem"
    ),
    pytest.param(lambda s1, s0: s1.set_at_("b", torch.zeros(0, 3), (NONE, 0)), True, id="set_at_"),
    pytest.param(
        lambda s1, s0: s1.copy_at_(_rows(s1, (NONE, 0)), (NONE, 0), fast=False), True, id="copy_at_"
    ),
    pytest.param(
        lambda s1, s0: s1.update_at_(
            _rows(s1, torch.zeros(2, 2, dtype=torch.bool)), torch.zeros(2, 2, dtype=torch.bool)
        ),
        False,
        id="mask-over-stack-dim",
    ),
]


@pytest.mark.parametrize(("write", "refused"), WRITES)
def test_a_write_of_no_element_is_refused_where_the_peer_raises(
    write: Callable[[Any, Any], Any], refused: bool
) -> None:
    try:
        write(*_stacks(tensordict))
        peer_raises = False
    except RuntimeError:
        peer_raises = True
    assert peer_raises is refused
    if not refused:
        write(*_stacks(tclass))
        return
    with pytest.raises(
        errors.InPlaceWriteError, match=r"'b'.*member \[0\].*torch\.no_grad"
    ) as info:
        write(*_stacks(tclass))
    assert isinstance(info.value, RuntimeError)


def test_a_write_of_no_element_passes_without_grad_mode_or_from_a_non_leaf() -> None:
    s1, _ = _stacks(tclass)
    with torch.no_grad():
        s1.update_at_(_rows(s1, (NONE, 0)), (NONE, 0))
    member = tclass.TensorDict({"b": torch.ones(2, 3, requires_grad=True) * 2}, [2])
    stack = tclass.lazy_stack([member, member.clone()], 1)
    stack.update_at_(_rows(stack, (NONE, 0)), (NONE, 0))  # not a leaf: autograd lets it
    assert stack[:, 0]["b"].grad_fn is not None


def _nested(lib: Any) -> Any:
    """The lazy stack of fuzz program 15,830,725 (features,index,shape,combine
    ``--length 8``): one leaf requiring grad held three times, reshaped to ``[1, 1, 3]``,
    so that the stack's member is itself a lazy stack (of a lazy stack, in both)."""
    member = lib.TensorDict({"b": torch.zeros(2)}, [])
    stack = lib.LazyStackedTensorDict(member, stack_dim=0)[[0, 0, 0]].reshape((1, 1, 3))
    stack.float().requires_grad_()
    return stack


EMPTY = torch.tensor([], dtype=torch.long)
NESTED: list[Any] = [
    pytest.param((EMPTY, slice(None, 1), None), False, id="empty-tensor-slice-none"),
    pytest.param((EMPTY,), False, id="empty-tensor"),
    pytest.param((slice(0, 0),), False, id="empty-slice"),
    pytest.param((0, 0, EMPTY), False, id="ints-then-empty-tensor"),
    pytest.param((slice(None), slice(None), slice(0, 0)), False, id="empty-slice-last"),
    pytest.param((0, 0, slice(None)), True, id="whole-innermost"),
]


@pytest.mark.parametrize(("index", "refused"), NESTED)
def test_a_member_that_is_a_lazy_stack_takes_the_rest_of_the_index(
    index: Any, refused: bool
) -> None:
    """The nested stack writes only into the members the rest of the index picks (none
    for an empty slice or tensor on its stack dim), as the peer's nested setitem does."""
    for lib in (tensordict, tclass):
        stack = _nested(lib)
        value = stack[index].clone().detach()
        if not refused:
            stack[index] = value
            continue
        with pytest.raises(RuntimeError) as info:
            stack[index] = value
    if refused:
        assert isinstance(info.value, errors.InPlaceWriteError)
        assert "'b'" in str(info.value) and "torch.no_grad" in str(info.value)


def _empty_rows(lib: Any) -> Any:
    """Batch [2, 2, 0]: a member whose leaf requires grad and one whose leaf does not,
    stacked on dim 1, each of a dim of size 0 past the stack dim."""
    grad = lib.TensorDict({"b": torch.ones(2, 0, 3, requires_grad=True)}, [2, 0])
    plain = lib.TensorDict({"b": torch.ones(2, 0, 3)}, [2, 0])
    return lib.lazy_stack([grad, plain], 1)


GATHERS: list[Any] = [
    pytest.param(torch.tensor([[True, False], [False, True]]), True, id="both-members"),
    pytest.param(torch.tensor([[False, True], [False, True]]), False, id="plain-member"),
    pytest.param(torch.tensor([[True, False], [False, False]]), True, id="grad-member"),
    pytest.param((torch.tensor([1, 0]), torch.tensor([0, 0])), True, id="numbers"),
]


@pytest.mark.parametrize(("index", "refused"), GATHERS)
@pytest.mark.parametrize("nested", [False, True])
def test_a_gather_over_the_stack_dim_of_no_element_writes_the_members_it_picks(
    index: Any, refused: bool, nested: bool
) -> None:
    """Tensors over the stack dim and another dim, a dim of size 0 after them: no
    element selected, but the peer writes each member they pick at its positions, and
    autograd refuses it for the member whose leaf requires grad (program 15,822,487 of
    features,index,shape,combine --length 12: a mask over a stack of stacks, fz29e)."""
    where = index
    if nested:
        where = (slice(None), *(index if isinstance(index, tuple) else (index,)))
    for lib in (tensordict, tclass):
        stack = _empty_rows(lib)
        if nested:  # a stack of that stack and a copy (whose leaf is no leaf)
            stack = lib.lazy_stack([stack, stack.apply(lambda t: t * 1)], 0)[:1]
        value = stack[where].clone().detach()
        if not refused:
            stack.update_at_(value, where)
            continue
        with pytest.raises(RuntimeError) as info:
            stack.update_at_(value, where)
        if lib is tclass:
            assert isinstance(info.value, errors.InPlaceWriteError)
            assert "'b'" in str(info.value) and "torch.no_grad" in str(info.value)


@pytest.mark.parametrize("number", [1.5, 0, True])
def test_a_number_written_at_no_element_is_refused_for_a_leaf_that_requires_grad(
    number: Any,
) -> None:
    """``stack[::2] = 1.5`` of members of no element whose leaves require grad: the peer
    writes the number into each member it picks, which autograd refuses; tclass refuses
    it too, as for a tensor written there (program 15,954,147 of
    features,index,shape,combine --length 8, fz30c)."""
    for lib in (tensordict, tclass):
        members = [lib.TensorDict({"b": torch.zeros(0, 4)}, [0]) for _ in range(3)]
        stack = lib.lazy_stack(members, 0).float().requires_grad_()
        with pytest.raises(RuntimeError) as info:
            stack[::2] = number
    assert isinstance(info.value, errors.InPlaceWriteError)
    assert "'b'" in str(info.value) and "torch.no_grad" in str(info.value)
    with torch.no_grad():
        stack[::2] = number  # outside grad mode: nothing to write, nothing refused


@pytest.mark.parametrize("rows", [3, 0])
def test_a_number_written_into_a_leaf_that_requires_grad_is_autograds_refusal(
    rows: int,
) -> None:
    """Not a shape mismatch: the ``InPlaceWriteError`` (a ``RuntimeError``, as torch's in
    the peer) names the entry and gives autograd's message."""
    td = tclass.TensorDict({"b": torch.zeros(rows, 4)}, [rows]).float().requires_grad_()
    with pytest.raises(
        errors.InPlaceWriteError, match="'b'.*leaf Variable that requires grad"
    ) as info:
        td[::2] = 1.5
    assert not isinstance(info.value, errors.BatchSizeError)


@pytest.mark.parametrize("made", ["unbind", "split"])
def test_a_write_of_no_element_into_a_view_unbind_made_is_refused(made: str) -> None:
    """Members whose tensors are views that ``unbind`` (or ``split``) made of a tensor
    that requires grad, not a leaf (``to_lazystack`` of a flipped TensorDict whose leaf
    requires grad): autograd refuses an in-place write into such a view, even of no
    element, as the peer meets it; tclass refused views of leaves only and wrote nothing
    (fz32c: program 17,030,266 L14 of features,index,shape,combine). Outside grad mode,
    nothing is refused."""
    for lib in (tensordict, tclass):
        source = torch.zeros(2, 3, requires_grad=True).flip(0)
        parts = source.unbind(0) if made == "unbind" else source.split(1, 0)
        shape = [3] if made == "unbind" else [1, 3]
        members = [lib.TensorDict({"c": part}, shape) for part in parts]
        stack = lib.lazy_stack(members, 0)
        with pytest.raises(RuntimeError) as info:
            stack[1, 0:0] = stack[1, 0:0].apply(torch.ones_like)
        if lib is tclass:
            assert isinstance(info.value, errors.InPlaceWriteError)
            assert "'c'" in str(info.value) and "unbind / split" in str(info.value)
            assert "member [1]" in str(info.value)
        with torch.no_grad():
            stack[1, 0:0] = stack[1, 0:0].apply(torch.ones_like)
