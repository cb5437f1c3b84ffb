"""Entries of a lazy stack, member by member (a layer of ``LazyStackedTensorDict``):
key flattening and renames, writes at an index (``set_at_``, ``update_at_``),
``masked_select``, the class and shape of an entry read from the members without stacking
them, ``empty`` and ``auto_batch_size_``."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import torch
from typing_extensions import Self

from tclass._base._tensordict_base import TensorDictBase
from tclass._base.implemented._collection import TensorCollection
from tclass._core import _batch, _keys, _names
from tclass._core._names import DimName
from tclass._core._unbatched import UnbatchedTensor
from tclass._engine._lazy._index_writes import (
    member_writes,
    refuse_empty_grad_write,
    write_lazy,
)
from tclass._engine._lazy._ops import LazyStackOps
from tclass._engine._lazy._parts import (
    remove_dim,
    split_operand,
    stack_entries,
)
from tclass._engine._part_checks import grouped_parts
from tclass._engine._td import TensorDict
from tclass._engine._tensor_write import check_tensor_write
from tclass.errors import (
    HeterogeneousEntryError,
)

__all__ = ["LazyMemberEntries"]

_NO_DEVICE: Any = object()


class LazyMemberEntries(LazyStackOps):
    """The entry-wise methods of ``LazyStackedTensorDict`` run member by member."""

    if not TYPE_CHECKING:
        __slots__ = ()

    def flatten_keys(
        self,
        separator: str = ".",
        inplace: bool = False,
        is_leaf: Callable[[type], bool] | None = None,
    ) -> Self:
        """Every member's keys flattened (see ``TensorDict.flatten_keys``)."""
        members = [m.flatten_keys(separator, inplace, is_leaf) for m in self._members]
        if inplace:
            return self
        out = self._restacked(members)
        out._call_on_exit(lambda: self.update(out.unflatten_keys(separator)))
        return out

    def unflatten_keys(self, separator: str = ".", inplace: bool = False) -> Self:
        """Every member's keys unflattened (see ``TensorDict.unflatten_keys``)."""
        members = [m.unflatten_keys(separator, inplace) for m in self._members]
        if inplace:
            return self
        out = self._restacked(members)
        out._call_on_exit(lambda: self.update(out.flatten_keys(separator)))
        return out

    def filter_non_tensor_data(self) -> Self:
        """Every member without its Python values."""
        return self._each("filter_non_tensor_data")

    def set_at_(self, key: Any, value: Any, index: Any, *, non_blocking: bool = False) -> Self:
        """Writes ``value`` into the elements ``index`` of entry ``key`` of the members."""
        path = _keys.key_path(key)
        if not self._has_path(path):
            raise self._missing_key(key)
        if isinstance(value, (list, tuple)) and isinstance(
            self._members[0].get(path), torch.Tensor
        ):
            value = torch.as_tensor(value)  # into a tensor entry, as a TensorDict's (the peer)
        if _ellipsis_reaches_features(index):
            entry = self._members[0].get(path)  # (members' batch dims: one less than ours)
            if isinstance(entry, torch.Tensor) and entry.ndim >= self.batch_dims:
                # torch reads an Ellipsis followed by more on the whole tensor, feature
                # dims too: written through the stacked entry, as a TensorDict's (the peer)
                if -1 in self._batch_size:
                    raise _no_stacked_entry(self, key, index)
                stacked = self.get(path)
                try:
                    stacked[index] = value
                except RuntimeError as error:  # as a TensorDict's: torch's words, the shapes
                    raise _batch.entry_write_error(key, value, index, stacked, error) from error
                self.set_(path, stacked, non_blocking=non_blocking)
                return self
        feature = self._feature_dims(path) if isinstance(value, torch.Tensor) else None
        if feature is not None and (value.numel() == 1 or value.ndim <= feature):
            while value.ndim > feature and value.shape[0] == 1:  # (torch ignores them)
                value = value.squeeze(0)
            self._set_at_each(path, value, index, non_blocking)
            return self
        nested: Any = value
        for part in reversed(path):
            nested = {part: nested}
        self[index] = nested
        return self

    def _feature_dims(self, path: tuple[str, ...]) -> int | None:
        """How many dims the tensor entry ``path`` has past the batch dims (read in the
        first member), None where it is no such tensor. A value of no more dims (or of
        one element) is the same for every element: each member takes it as it is, as
        torch broadcasts it (the peer's), where lined up with the selection it would
        need batch dims it does not have."""
        node: Any = self
        while isinstance(node, LazyStackOps) and node._members:
            node = node._members[0]
        try:
            entry = node.get(path)
        except (KeyError, RuntimeError, ValueError):
            return None
        if not isinstance(entry, torch.Tensor) or isinstance(entry, UnbatchedTensor):
            return None
        return int(entry.ndim) - len(node.batch_size)

    def _set_at_each(
        self, path: tuple[str, ...], value: torch.Tensor, index: Any, non_blocking: bool
    ) -> None:
        """``value`` written as it is at each member's part of ``index``, each part
        checked to take it before any is written."""
        writes = [
            (member, where) for _, member, where, _ in member_writes(cast(Any, self), index, value)
        ]
        if not writes:  # no element selected: the members picked are written all the same
            refuse_empty_grad_write(cast(Any, self), index, {path: value})
        for member, where in writes:
            entry = member.get(path) if not isinstance(member, LazyStackOps) else None
            if isinstance(entry, torch.Tensor):
                check_tensor_write(member.select(path), where, value)
        for member, where in writes:
            member.set_at_(path, value, where, non_blocking=non_blocking)

    def update_at_(
        self,
        input_dict_or_td: Mapping[Any, Any] | TensorCollection,
        idx: Any,
        clone: bool = False,
        *,
        non_blocking: bool = False,
        keys_to_update: Sequence[Any] | None = None,
    ) -> Self:
        """Writes every value into the elements ``idx`` of the existing entry of its key;
        a lazy source (whose members' entries may differ in shape, with no dense value) is
        written member by member, as the peer: split among the members ``idx`` picks,
        nothing stacked.

        Raises:
            KeyNotFoundError: for a key this collection does not have.
        """
        source = input_dict_or_td
        if (
            not (isinstance(source, TensorCollection) and source._is_lazy)
            or _ellipsis_reaches_features(idx)  # read entry by entry, as set_at_ reads it
        ):
            return super().update_at_(
                source, idx, clone, non_blocking=non_blocking, keys_to_update=keys_to_update
            )
        if keys_to_update is not None:
            source = source.select(*keys_to_update, strict=False)
        for path in source.keys(True, True):  # (not read: members may differ in shape)
            if path not in self:
                raise self._missing_key(path)
        self[idx] = source.clone() if clone else source
        return self

    def _check_writes_at(self, writes: Sequence[tuple[tuple[str, ...], Any, Any]]) -> None:
        """``update_at_``'s (and ``update_``'s) writes, each index's parts checked on
        every member before any is written, where the peer writes the entries before
        the one refused. A tensor written whole that does not start with the batch size
        (it broadcasts into the entry) is checked by each member with its own part."""
        n = len(self._batch_size)
        whole = [
            (path, value)
            for path, value, index in writes
            if index is Ellipsis
            and isinstance(value, torch.Tensor)
            and value.shape[:n] != self._batch_size
            and not value.is_nested
        ]
        for path, value in whole:
            parts = split_operand(value, self, path, fill=True)
            for member, part in zip(self._members, parts, strict=True):
                member._check_writes_at([(path, part, ...)])
        writes = [w for w in writes if not any(w[0] is p and w[1] is v for p, v in whole)]
        for index, part in grouped_parts(writes):
            if -1 not in self._batch_size:  # (a ragged stack's members: each write's own)
                write_lazy(cast(Any, self), index, part, check_only=True)

    def _has_path(self, path: tuple[str, ...]) -> bool:
        return bool(self._members) and all(path in m.keys(True) for m in self._members)

    def _tensor_leaves(self) -> Iterator[torch.Tensor]:
        for member in self._members:
            yield from member._tensor_leaves()

    def _check_grad_dtypes(self, prefix: tuple[str, ...]) -> None:
        for member in self._members:  # (nothing stacked: entries may differ in shape)
            member._check_grad_dtypes(prefix)

    def is_contiguous(self) -> bool:
        """False, as the peer: the members are separate collections (``contiguous()``
        stacks them into one TensorDict)."""
        return False

    def masked_select(self, mask: torch.Tensor, *, inplace: bool = False) -> Self:
        """The elements where ``mask`` is true, in one batch dim, as the peer: a
        TensorDict of the selected entries (tensors stacked; nested stacks stay lazy).
        Members whose entries differ in shape (no dense value) give a lazy stack."""
        result = TensorDictBase.masked_select(self, mask, inplace=inplace)
        if inplace or not result._is_lazy:
            return result
        try:
            entries = dict(result._items())
        except HeterogeneousEntryError:
            return result
        out = TensorDict._new_unchecked(entries, result.batch_size, result.device)
        out._assign_names(result._dim_names)
        return cast(Self, out)

    def _detach_held_views(self) -> None:
        for member in self._members:
            member._detach_held_views()

    # --- entries by key, read from the members without stacking them ----------------------

    def _entry_class(self, key: str) -> type:
        """A tensor's class is the first member's (a ``MemoryMappedTensor`` of memory-mapped
        members, as the peer's), found without stacking; of a first member that is a lazy
        stack, the class its stacked value has (``torch.stack`` of ``MemoryMappedTensor``
        or ``Parameter`` parts is a ``torch.Tensor``), as the peer reads that member's."""
        first = self._members[0] if self._members else None
        if isinstance(first, LazyStackOps):
            nested = first._entry_class(key)
            if issubclass(nested, torch.Tensor):
                return _stacked_class(nested)  # (nothing stacked: members may be ragged)
        parts = self._parts(key)
        if isinstance(parts[0], torch.Tensor):
            return type(parts[0])
        return type(stack_entries(parts, self._stack_dim, (key,)))

    def _item_shape(self, key: str) -> torch.Size:
        """The members' shapes at ``key`` with the stack dim, -1 where they differ (a
        nested lazy stack's own, read without stacking its members, which may differ)."""
        if not self._has_entry(key):
            self._parts(key)  # raises, naming the members that lack it
        shapes = [member._item_shape(key) for member in self._members]
        if len({len(shape) for shape in shapes}) != 1:
            msg = (
                f"get_item_shape: entry {key!r} has a different number of dims in the "
                f"members of this lazy stack ({[list(shape) for shape in shapes]})"
            )
            raise HeterogeneousEntryError(msg)
        sizes = [group[0] if len(set(group)) == 1 else -1 for group in zip(*shapes)]
        d = self._stack_dim
        return torch.Size([*sizes[:d], len(shapes), *sizes[d:]])

    def rename_keys(self, mapping: Mapping[Any, Any], *, strict: bool = True) -> Self:
        """The keys renamed in every member (see ``TensorDict.rename_keys``)."""
        return self._restacked([m.rename_keys(mapping, strict=strict) for m in self._members])

    def create_nested(self, key: Any) -> Self:
        """An empty nested collection at ``key`` in every member; returns ``self``."""
        for member in self._members:
            member.create_nested(key)
        return self

    def is_empty(self) -> bool:
        """Whether no member holds a leaf."""
        return all(member.is_empty() for member in self._members)

    @property
    def depth(self) -> int:
        """The deepest nesting among the members."""
        return max((member.depth for member in self._members), default=0)

    def empty(
        self,
        recurse: bool = False,
        *,
        batch_size: _batch.BatchSizeLike = None,
        device: Any = _NO_DEVICE,
        names: Sequence[DimName] | None = _NO_DEVICE,
    ) -> Self:
        """A lazy stack of the members emptied, as the peer: also for a ``batch_size``
        that keeps the dims up to the stack dim (the members get it without the stack
        dim); a TensorDict for another one. ``names=None``: unnamed dims (as the peer's
        ``TensorDict.empty``; its lazy stacks keep them)."""
        size = self._batch_size if batch_size is None else _batch.as_batch_size(batch_size)
        keep = self._stack_dim + 1
        fits = size[:keep] == self._batch_size[:keep] and len(size) >= keep and -1 not in size
        if names is None:
            out = self.empty(recurse, batch_size=batch_size, device=device)
            out._rename_all(None)
            return out
        given_any = batch_size is not None or names is not _NO_DEVICE
        if given_any and fits and (names is _NO_DEVICE or len(names) == len(size)):
            kept = remove_dim(size, self._stack_dim)
            given = {} if device is _NO_DEVICE else {"device": device}
            out = self._restacked(
                [m.empty(recurse, batch_size=kept, **given) for m in self._members],
                batch_size=size,
            )
            if names is not _NO_DEVICE:
                out._rename_all(_names.as_names(names, len(size)))
            return out
        if given_any:
            named: dict[str, Any] = {} if names is _NO_DEVICE else {"names": names}
            if device is _NO_DEVICE:  # this module's "not given", not the base class's
                return TensorDictBase.empty(self, recurse, batch_size=batch_size, **named)
            return TensorDictBase.empty(
                self, recurse, batch_size=batch_size, device=device, **named
            )
        return self._restacked(
            [m.empty(recurse, device=device) for m in self._members]
            if device is not _NO_DEVICE
            else [m.empty(recurse) for m in self._members]
        )

    def auto_batch_size_(
        self, batch_dims: int | None = None, keep_compliant_size: bool = False
    ) -> Self:
        """The largest leading shape the stack's entries share (at most ``batch_dims``
        dims), as the peer infers it: a dim whose size differs between the members ends
        it, and the nested collections (lazy stacks of the members') keep their batch
        sizes, as the peer leaves lazy ones (``keep_compliant_size`` has nothing to keep).
        A new batch size is set as ``batch_size = ...`` sets it: one that keeps the stack
        dim changes the members' (the peer refuses any change).

        Raises:
            BatchSizeError: if the inferred batch size drops the stack dim.
        """
        shapes = [
            self._item_shape(key)
            for key in self._key_names()
            if not isinstance(self._parts(key)[0], UnbatchedTensor)
        ]
        if not shapes:  # nothing to infer a batch size from: cut to batch_dims, as the peer
            common = self._batch_size[:batch_dims] if batch_dims else self._batch_size
        else:
            common = _batch.common_prefix(shapes)
            if -1 in common:  # a dim the members differ in is no batch dim
                common = common[: common.index(-1)]
            common = common if batch_dims is None else common[:batch_dims]
        if common != self._batch_size:
            self.batch_size = common  # type: ignore[misc]  # (the stack's setter)
        return self


def _no_stacked_entry(stack: Any, key: Any, index: Any) -> HeterogeneousEntryError:
    """``set_at_`` at an index whose Ellipsis reaches the feature dims, of a ragged stack
    (the peer fails stacking the entry too)."""
    msg = (
        f"set_at_({key!r}, value, {index!r}): an Ellipsis followed by more indexes the whole "
        "stacked entry, its feature dims too (as torch and the peer read it), and this lazy "
        f"stack of batch size {list(stack.batch_size)} has no stacked entry: its members "
        "differ in size along the ragged dim (-1). Write each member (for member in "
        f"stack.tensordicts: member.set_at_({key!r}, value, {index!r})), or spell out the "
        "batch dims the index takes instead of ..."
    )
    return HeterogeneousEntryError(msg)


def _ellipsis_reaches_features(index: Any) -> bool:
    """Whether ``index`` has an Ellipsis with more after it (which torch reads on a
    tensor's every dim, so it may reach the dims after the batch dims)."""
    return isinstance(index, tuple) and any(part is Ellipsis for part in index[:-1])


def _stacked_class(cls: type[torch.Tensor]) -> type[torch.Tensor]:
    """The class ``torch.stack`` gives of tensors of class ``cls``: ``torch.Tensor`` for a
    subclass that turns torch functions off (``MemoryMappedTensor``, ``Parameter``),
    else ``cls``."""
    disabled = torch._C._disabled_torch_function_impl
    return torch.Tensor if cls.__torch_function__ is disabled else cls
