"""Reshaping and reordering a lazy stack (a layer of ``LazyStackedTensorDict`` over
``LazyStackOps``): ``view`` and ``reshape`` regroup the members into nested lazy stacks
when the new shape only merges or splits adjacent dims; ``flip``, ``roll``, ``narrow``,
``repeat``, ``repeat_interleave``, ``split``, ``tensor_split`` and ``chunk`` along the
stack dim reorder, share or select the members themselves, and along another dim run on
each member."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, TypeVar, cast

import torch
from typing_extensions import Self

from tclass._base._tensordict_base import TensorDictBase
from tclass._base.implemented._collection import TensorCollection
from tclass._base.implemented._shape_ops import Span, _section_bounds
from tclass._core import _batch
from tclass._core._batch import format_shape
from tclass._core._options import OPTIONS
from tclass._core._records import storage_of
from tclass._core._shape_op import ShapeOp
from tclass._engine._lazy._member_entries import LazyMemberEntries
from tclass._engine._lazy._parts import check_regular, stacked_size
from tclass._engine._lazy._roll import roll_in_place
from tclass._engine._nontensor_stack import NonTensorStack
from tclass._engine._ops import cat
from tclass.errors import DimError, HeterogeneousEntryError, ShapeError

__all__ = ["LazyReshapeOps"]

_R = TypeVar("_R")


class LazyReshapeOps(LazyMemberEntries):
    """The reshaping and reordering half of ``LazyStackedTensorDict``'s member-wise ops."""

    __slots__ = ()

    _no_select_in_place = "a LazyStackedTensorDict cannot change its batch size in place"

    # --- reshaping: regrouping the members where the shape allows it ---------------------

    def view(
        self,
        *shape: int | Sequence[int] | torch.dtype,
        size: Sequence[int] | None = None,
        batch_size: Sequence[int] | None = None,
    ) -> Self:
        """A view with another batch size: members regrouped into nested lazy stacks when
        the new shape only merges or splits dims (nothing is copied), or every member's
        tensors viewed as a dtype.

        Raises:
            ShapeError: (a ``RuntimeError``) for a shape that would mix the members'
                elements; use :meth:`reshape`, which copies.
        """
        if len(shape) == 1 and isinstance(shape[0], torch.dtype):
            return self._each("view", shape[0])
        given = size if size is not None else batch_size
        if given is not None:
            shape = (tuple(given),)
        asked = _batch.shape_args(shape, "view")
        if tuple(asked) == tuple(self._batch_size):  # its own batch size (a ragged -1 too)
            return self
        check_regular(self, range(len(self._batch_size)), "view")
        target = _batch.view_shape(asked, self._batch_size, "view")
        if OPTIONS.lazy_legacy and target != self._batch_size:
            batch = tuple(self._batch_size)
            return self._legacy(ShapeOp("view", tuple(target), len(batch), batch))
        regrouped = self._regroup(target)
        if regrouped is None and not math.prod(self._batch_size):
            # No element to mix: the dense stack reshaped, as the peer (the lock carried).
            return self._carry(self._reshaped(target), None)
        if regrouped is None:
            msg = (
                f"view: a lazy stack of batch size {format_shape(self._batch_size)} cannot be "
                f"viewed as {format_shape(target)} without mixing its members; use reshape() "
                "(a dense copy)"
            )
            raise ShapeError(msg)
        if regrouped is self:
            return self
        batch_size = self._batch_size
        regrouped = self._unnamed_regroup(regrouped, target)
        return self._carry(regrouped, None, inverse=lambda r: r.view(batch_size))

    def flatten(
        self, start_dim: int | None = None, end_dim: int | None = None, *, inplace: bool = False
    ) -> Self:
        """Merges batch dims ``start_dim`` to ``end_dim`` (inclusive; all when ``None``).
        Flattening one dim onto itself returns the stack itself, as the peer's does and as
        ``torch.flatten`` returns a tensor (a dense collection gets new nodes there, as in
        the peer)."""
        nb = len(self._batch_size)
        if nb:
            start = _batch.normalize_dim(0 if start_dim is None else start_dim, nb, op="flatten")
            end = _batch.normalize_dim(-1 if end_dim is None else end_dim, nb, op="flatten")
            if start == end:
                return self
        return super().flatten(start_dim, end_dim, inplace=inplace)

    def unflatten(
        self, dim: int, unflattened_size: Sequence[int], *, inplace: bool = False
    ) -> Self:
        """Splits batch dim ``dim`` into ``unflattened_size`` (one size may be -1); into
        one dim of the same size, it returns the stack itself, as ``flatten()`` of one dim
        does in both (the peer's, of a stack of one dim, is a new stack of its members). The
        members regrouped keep their own dim names and the new stack dims have none, as
        in the peer (a stack cannot rename its members, which other stacks may share)."""
        batch = self._batch_size
        at = _batch.normalize_dim(dim, len(batch), op="unflatten")
        sizes = tuple(unflattened_size)
        if len(sizes) == 1 and sizes[0] in (-1, batch[at]) and batch[at] != -1:
            return self
        check_regular(self, (at,), "unflatten")  # a ragged dim has no one size to split
        if inplace:
            return super().unflatten(dim, unflattened_size, inplace=inplace)
        part = _batch.view_shape(sizes, torch.Size([batch[at]]), "unflatten")
        # (a regular dim of a ragged stack too: its members regrouped, as the peer's)
        regrouped = self._regroup(batch[:at] + part + batch[at + 1 :], asked=(at, len(part)))
        if regrouped is None:
            return super().unflatten(dim, unflattened_size)
        if -1 in batch:  # (a ragged batch is no shape to reshape to)
            return self._carry(regrouped, None, inverse=lambda r: r.flatten(at, at + len(part) - 1))
        return self._carry(regrouped, None, inverse=lambda r: r.reshape(batch))

    def _reshaped(self, new: torch.Size, *, always: bool = False, span: Span | None = None) -> Self:
        # ``always`` is for dense leaves; a lazy stack regroups its members.
        if -1 in self._batch_size:  # ragged: only the flat stack of every element exists
            if span is not None and span[2] and -1 not in self._batch_size[span[0] : span[1] + 1]:
                regrouped = self._regroup(new)  # regular dims merged: as the peer's, regrouped
                if regrouped is not None:
                    return regrouped
            if 0 in self._batch_size:
                return self._no_elements(new)
            if len(new) != 1:
                check_regular(self, range(len(self._batch_size)), f"reshape to {list(new)}")
            return self._lazily(self._elements_in_order(), 0, None)
        regrouped = self._regroup(new)  # by the shape alone, as the peer's (not ``span``)
        if regrouped is not None:
            return regrouped if span is not None else self._unnamed_regroup(regrouped, new)
        return self._dense("reshape()").reshape(new)  # type: ignore[no-any-return]

    def _no_elements(self, new: torch.Size) -> Self:
        """A ragged lazy stack without elements reshaped to ``new`` (no elements either):
        the members' entries joined along their flattened batch, dense, as the peer's
        dense copy reshaped (members whose entries differ raise, as joining them does)."""
        flat = [member.reshape(-1) for member in self._members]
        return cast(Self, cat(flat, 0).reshape(new))

    def _elements_in_order(self) -> list[Any]:
        """Every element of a ragged lazy stack, in row-major order of its batch dims:
        along a later stack dim, each index of the dims before it takes the members'
        elements in turn (those dims must be regular)."""
        d = self._stack_dim
        members = self._members
        if d == 0:
            return [part for member in members for part in member.reshape(-1).unbind(0)]
        check_regular(self, range(d), "reshape to one dim")
        rows = [member.flatten(0, d - 1) if d > 1 else member for member in members]
        return [
            part
            for p in range(self._batch_size[:d].numel())
            for row in rows
            for part in row[p].reshape(-1).unbind(0)
        ]

    def _regroup(self, shape: torch.Size, asked: tuple[int, int] | None = None) -> Self | None:
        """The members regrouped as lazy stacks of lazy stacks with batch size ``shape``,
        when ``shape`` only merges or splits adjacent dims; else None. ``asked``: ``(dim,
        count)``, the split ``unflatten`` asks for, where the shape alone could be a
        split of another dim (dims of size 1): the peer regroups by the shape where the
        sizes that differ from the front and from the back meet, and otherwise unflattens
        a dense copy, whose dims are named as the split asked says."""
        batch = self._batch_size
        if shape == batch:
            return self
        alone = _batch.inserted_one(batch, shape)
        if alone is not None:  # as the peer: the stack itself, stacked alone along it
            return self._lazily([self], alone, shape)
        removed = _batch.inserted_one(shape, batch)
        if removed is not None:  # as the peer: its only part along that dim
            (only,) = self.unbind(removed)
            return only
        merged = _batch.flatten_span(batch, shape)
        split = _batch.unflatten_span(batch, shape)
        if merged is not None:
            i, j = merged
            if not math.prod(batch[i : j + 1]):
                return None  # no part to regroup: a dense copy keeps the keys and shapes
            parts: list[Any] = [self]
            for _ in range(i, j + 1):
                parts = [piece for part in parts for piece in part.unbind(i)]
            return self._lazily(parts, i, shape)
        if asked is not None and split != asked and not _batch.sizes_meet(batch, shape):
            split = asked
        if split is not None and batch[split[0]]:  # (a dim of size 0 has no part to split)
            i, count = split
            current: Any = self
            for k in range(i, i + count - 1):
                current = self._lazily(list(current.chunk(shape[k], dim=k)), k, None)
            return current  # type: ignore[no-any-return]
        return None

    def _unnamed_regroup(self, out: Self, shape: torch.Size) -> Self:
        """``out``, the regrouping of a ``view`` / ``reshape`` into ``shape``, with no name
        on the stack dims of the stacks it built where it merges or removes dims: unnamed,
        as a TensorDict's view in both libraries and the peer's lazy stack's (which keeps
        them where it splits a dim, as its ``unflatten``). The members keep their own
        names: other stacks may share them."""
        if out is self or len(shape) >= len(self._batch_size):
            return out
        originals: set[int] = set()  # this stack's members, at every depth
        walk: list[Any] = list(self._members)
        while walk:
            node = walk.pop()
            if id(node) not in originals:
                originals.add(id(node))
                walk.extend(node._members if node._is_lazy else ())
        pending: list[Any] = [out]
        while pending:
            node = pending.pop()
            if id(node) in originals or not node._is_lazy:
                continue
            node._stack_dim_name = None
            pending.extend(node._members)
        return out

    def _lazily(self, parts: list[Any], dim: int, size: torch.Size | None) -> Self:
        """A lazy stack of ``parts`` along ``dim`` (members of any kind)."""
        if size is None:
            size = stacked_size(parts, dim)
        return self._from_members(parts, dim, size)

    # --- reordering and selecting, member by member -----------------------------------------

    def flip(self, dims: int | Sequence[int]) -> Self:
        """Each member flipped along its own dims; along the stack dim, the members in
        reverse order (the members themselves)."""
        flat = _dims(dims, len(self._batch_size), "flip")
        d = self._stack_dim
        inner = [i if i < d else i - 1 for i in flat if i != d]
        members = [m.flip(inner) for m in self._members] if inner else list(self._members)
        if d in flat:
            members.reverse()
        out = self._densified(self._carry(self._restacked(members), self._dim_names))
        out = _each_element_a_member(out)
        return self._carry(out, None, lock=False, inverse=lambda r: r.flip(flat))

    def roll(
        self,
        shifts: int | Sequence[int],
        dims: int | Sequence[int] | None = None,
        *,
        inplace: bool = False,
    ) -> Self:
        """Each member rolled along its own dims; along the stack dim, the members
        rotated. Without ``dims`` (the flattened batch) the dense stack is rolled. With
        ``inplace=True``, the members' entries are replaced (see ``roll_in_place``)."""
        if inplace:
            roll_in_place(self, shifts, dims)
            return self
        return self._rolled(shifts, dims, nested=True)

    def _rolled(
        self, shifts: int | Sequence[int], dims: int | Sequence[int] | None, *, nested: bool
    ) -> Self:
        """:meth:`roll` (not in place); ``nested``: each element of its Python-value
        stacks a member (see ``_each_element_a_member``), else the members' values as the
        member-wise roll moved them (what ``roll_in_place`` writes back into them)."""
        if dims is None:  # a TensorDict, also over records (as the peer's)
            rolled = TensorDictBase.roll(self, shifts, dims, inplace=False)
            return self._densified(storage_of(rolled))
        flat = _dims(dims, len(self._batch_size), "roll")
        amounts = [shifts] if isinstance(shifts, int) else list(shifts)
        if len(amounts) != len(flat):
            msg = f"roll: {len(amounts)} shifts for {len(flat)} dims ({shifts!r}, {dims!r})"
            raise ShapeError(msg)
        d = self._stack_dim
        inner = [(i if i < d else i - 1, a) for i, a in zip(flat, amounts) if i != d]
        members = list(self._members)
        if inner:
            members = [m.roll([a for _, a in inner], [i for i, _ in inner]) for m in members]
        turn = sum(a for i, a in zip(flat, amounts) if i == d)
        if members and turn:
            turn %= len(members)
            members = members[-turn:] + members[:-turn]
        out = self._densified(self._carry(self._restacked(members), self._dim_names))
        out = _each_element_a_member(out) if nested else out
        back = [-a for a in amounts]
        return self._carry(out, None, lock=False, inverse=lambda r: r.roll(back, flat))

    def narrow(self, dim: int, start: int, length: int) -> Self:
        """Along the stack dim, the members ``start`` to ``start + length``; along another
        dim, each member narrowed."""
        d = self._stack_dim
        n = _batch.normalize_dim(dim, len(self._batch_size), op="narrow")
        if n != d:
            members = [m.narrow(n if n < d else n - 1, start, length) for m in self._members]
            return self._densified(self._carry(self._restacked(members), self._dim_names))
        count = len(self._members)
        begin = start + count if start < 0 else start
        if not 0 <= begin <= count or length < 0 or begin + length > count:
            msg = f"narrow: start {start} and length {length} do not fit {count} members"
            raise DimError(msg)
        if not length:
            return TensorDictBase.narrow(self, dim, start, length)
        members = self._members[begin : begin + length]
        return self._densified(self._carry(self._restacked(list(members)), self._dim_names))

    def tile(self, dims: int | Sequence[int]) -> Self:
        """:meth:`repeat` as ``torch.tile`` (see ``TensorDictBase.tile``); the names stay
        when the dims do, as the peer's lazy stack keeps them."""
        out = _each_element_a_member(self._densified(TensorDictBase.tile(self, dims)))
        if out.batch_dims == len(self._batch_size):  # as the peer's: the names, per dim
            out._rename_all(self._dim_names)
        return out

    def repeat(self, *repeats: int | Sequence[int] | torch.Tensor, inplace: bool = False) -> Self:
        """Each member repeated along its own dims; along the stack dim, the members
        repeated in turn (shared, not copied)."""
        counts = _batch.repeat_counts(repeats)
        if inplace or len(counts) != len(self._batch_size):
            return TensorDictBase.repeat(self, *counts, inplace=inplace)
        d = self._stack_dim
        inner = counts[:d] + counts[d + 1 :]
        members = [m.repeat(*inner) for m in self._members]
        return self._carry(self._restacked(members * counts[d]), self._dim_names)

    def repeat_interleave(
        self,
        repeats: torch.Tensor | int,
        dim: int | None = None,
        *,
        output_size: int | None = None,
        inplace: bool = False,
    ) -> Self:
        """Along the stack dim, each member repeated next to itself (shared); along
        another dim, each member's elements; ``inplace=True`` takes that result (a lazy
        stack cannot change its batch size in place: ``UnsupportedError``, a
        ``NotImplementedError``, as the peer's, ragged members too)."""
        if dim is None:
            return TensorDictBase.repeat_interleave(
                self, repeats, dim, output_size=output_size, inplace=inplace
            )
        if inplace:
            out = self.repeat_interleave(repeats, dim, output_size=output_size)
            return self._in_place(out, True, "repeat_interleave")
        d = self._stack_dim
        n = _batch.normalize_dim(dim, len(self._batch_size), op="repeat_interleave")
        if n != d:
            inner = n if n < d else n - 1
            members = [
                m.repeat_interleave(repeats, inner, output_size=output_size) for m in self._members
            ]
            return self._carry(self._restacked(members), self._dim_names)
        count = len(self._members)
        _batch.interleaved_length(repeats, count, output_size)  # checks repeats
        times = repeats.tolist() if isinstance(repeats, torch.Tensor) else repeats
        if not isinstance(times, list):
            times = [times] * count
        elif len(times) == 1:
            times = times * count
        members = [m for m, t in zip(self._members, times) for _ in range(int(t))]
        if members:
            return self._carry(self._restacked(members), self._dim_names)
        try:
            return TensorDictBase.repeat_interleave(self, repeats, dim, output_size=output_size)
        except HeterogeneousEntryError:  # no dense stack: none of the members, as x[:0]
            return self[(slice(None),) * d + (slice(0, 0),)]  # type: ignore[no-any-return]

    def split(self, split_size: int | Sequence[int], dim: int = 0) -> tuple[Self, ...]:
        dim = _batch.normalize_split_dim(dim, len(self._batch_size))
        d = self._stack_dim
        if dim == d:
            sizes = _batch.split_sizes(split_size, len(self._members))
            starts = [sum(sizes[:i]) for i in range(len(sizes))]
            before = (slice(None),) * d
            return tuple(  # lazy stacks, also of records (as the peer's)
                self._batch_item(before + (slice(start, start + size),))
                for start, size in zip(starts, sizes)
            )
        check_regular(self, [dim], "split")
        pieces = [m.split(split_size, dim if dim < d else dim - 1) for m in self._members]
        return tuple(self._restacked(list(group)) for group in zip(*pieces))

    def tensor_split(
        self, indices_or_sections: int | Sequence[int] | torch.Tensor, dim: int = 0
    ) -> tuple[Self, ...]:
        """As ``TensorDictBase.tensor_split``; along a dim other than the stack dim (and
        not ragged), each member's own ``tensor_split`` restacked, as ``split``: a
        member over a file gives its pieces read into memory, as the peer's."""
        n = _batch.normalize_dim(dim, len(self._batch_size), op="tensor_split")
        d = self._stack_dim
        if n == d and self._members:  # lazy stacks, also of records (as the peer's)
            bounds = _section_bounds(indices_or_sections, self._batch_size[n])
            lead = (slice(None),) * d
            return tuple(
                self._carry(self._batch_item(lead + (slice(start, stop),)), None)
                for start, stop in bounds
            )
        if n == d or self._batch_size[n] == -1 or not self._members:
            return TensorDictBase.tensor_split(self, indices_or_sections, dim)
        inner = n if n < d else n - 1
        pieces = [m.tensor_split(indices_or_sections, inner) for m in self._members]
        return tuple(self._carry(self._restacked(list(g)), None) for g in zip(*pieces))

    def chunk(self, chunks: int, dim: int = 0) -> tuple[Self, ...]:
        dim = _batch.normalize_dim(dim, len(self._batch_size), op="chunk")
        if dim != self._stack_dim:
            check_regular(self, [dim], "chunk")
        sizes = _batch.chunk_sizes(chunks, self._batch_size[dim])
        return self.split(sizes, dim)


def _dims(dims: int | Sequence[int], ndim: int, op: str) -> list[int]:
    flat = [dims] if isinstance(dims, int) else list(dims)
    return [_batch.normalize_dim(d, ndim, op=op) for d in flat]


def _each_element_a_member(out: _R) -> _R:
    """``out``, the dense result of a lazy stack's ``flip`` / ``roll`` / ``tile`` run
    member by member, with each element of its stacks of Python values a member of its
    own (nested along every dim), as the peer's, which runs these ops on its dense stack
    and picks each element anew (``PicksElements``); the members' grouping kept by the
    member-wise op is dropped. A result left lazy (members that differ) is as it is."""
    storage = storage_of(out)
    if storage._is_lazy:
        return out
    for value in storage._entries().values():
        if type(value) is NonTensorStack and not value._meta and value._stack_dims is not None:
            value._stack_dims = tuple(range(len(value._shape)))
        elif isinstance(value, TensorCollection) and not value._is_leaf_node:
            _each_element_a_member(value)
    return out
