"""``roll(..., inplace=True)`` of a lazy stack, as the peer's: the stack and its members
keep their identity (and so do the nested collections they share), and every entry the
stack reads (its members' common keys, nested ones too) is replaced in each member by
its rolled value (a copy, as ``roll`` copies). All or nothing: the rolled values are all
computed first, and a write a member refuses (a locked or read-only member) puts back
the entries already replaced before the error goes on."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from tclass._base._tensordict_base import TensorDictBase
from tclass._core._records import is_record
from tclass._engine._nontensor import is_non_tensor
from tclass.errors import LockedError

__all__ = ["roll_in_place"]

# (member, key, new value) for each entry to replace, in order
_Write = tuple[Any, str, Any]


def roll_in_place(
    stack: Any, shifts: int | Sequence[int], dims: int | Sequence[int] | None
) -> None:
    """Rolls ``stack`` (a ``LazyStackedTensorDict``) in place; see the module's doc.

    Raises:
        LockedError: (a ``RuntimeError``, as the peer's) if the stack is locked; a
            locked member raises its own error, with no entry of any member changed.
    """
    if stack.is_locked:
        msg = (
            "roll(inplace=True): cannot modify a locked LazyStackedTensorDict; unlock it "
            "first (unlock_()) or use inplace=False"
        )
        raise LockedError(msg)
    members = list(stack.tensordicts)
    pieces = list(stack._rolled(shifts, dims, nested=False).unbind(stack.stack_dim))
    writes: list[_Write] = []
    _plan(members, pieces, list(stack.keys()), writes)
    _write_all(writes)


def _is_node(value: Any) -> bool:
    """Whether ``value`` is a nested collection whose entries are rolled one by one (a
    node of Python values is an entry itself, as the peer's)."""
    return (isinstance(value, TensorDictBase) or is_record(value)) and not is_non_tensor(value)


def _plan(members: list[Any], pieces: list[Any], keys: list[str], writes: list[_Write]) -> None:
    """Appends to ``writes`` the entries ``keys`` of ``members`` (one level of a lazy
    stack) replaced by those of ``pieces`` (the rolled stack's members, in order)."""
    for key in keys:
        values = [member.get(key) for member in members]
        if all(_is_node(value) for value in values):
            common = [k for k in values[0].keys() if all(k in v.keys() for v in values[1:])]
            _plan(values, [piece.get(key) for piece in pieces], common, writes)
            continue
        owned = {id(value) for value in values}
        for member, piece in zip(members, pieces, strict=True):
            new = piece.get(key)
            if isinstance(new, torch.Tensor) and id(new) in owned:
                new = new.clone()  # another member's tensor, rotated: roll copies
            writes.append((member, key, new))


def _write_all(writes: list[_Write]) -> None:
    """Replaces every entry of ``writes``; if one write fails, the entries replaced
    before it are put back and the error is raised."""
    done: list[_Write] = []
    try:
        for member, key, new in writes:
            old = member.get(key)
            member.set(key, new)
            done.append((member, key, old))
    except BaseException:
        for member, key, old in reversed(done):
            member.set(key, old)
        raise
