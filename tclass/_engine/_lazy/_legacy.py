"""The views of the peer's legacy lazy mode: under ``set_lazy_legacy(True)``,
``unsqueeze``, ``squeeze``, ``permute``, ``transpose`` and ``view`` of a collection (and
``torch.unsqueeze`` & co.) return a :class:`LegacyLazyView` of it, which writes through.

A view holds its source and one :class:`~tclass._core._shape_op.ShapeOp`. Reads give the
source's entries reshaped by the operation (tensors as views of the source's, nested
collections as views of the source's nested ones); writes go to the source with the
inverse operation applied: ``v = td.unsqueeze(0); v.set("a", ones)`` sets ``td["a"]``
to ``ones.squeeze(0)``, a new key of ``v`` is a new key of ``td``, and ``set_``,
``v[index] = ...``, ``update``, deletions, renames and the lock reach ``td`` too. The
inverse operation returns the source itself (``td.unsqueeze(0).squeeze(0) is td``).

What builds a new collection from a view (indexing, ``clone``, ``apply``, math,
``to_tensordict``...) gives a plain TensorDict, as the peer's views do. Outside the mode
the shape operations above refuse a view (``ShapeError``, a ``RuntimeError``, as the
peer's "make it dense" error): its ``to_tensordict()`` is the dense copy to reshape.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import torch
from typing_extensions import Self

from tclass._base._tensordict_base import TensorDictBase, Value
from tclass._base.implemented._collection import TensorCollection, ToArg
from tclass._base.implemented._leaf_walk import Gather
from tclass._base.implemented._lock_blocks import SourceLock
from tclass._base.implemented._view_entries import ViewEntries
from tclass._core import _keys, _names
from tclass._core._batch import as_batch_size, format_shape
from tclass._core._names import DimName, Names
from tclass._core._options import OPTIONS
from tclass._core._records import is_record, storage_of
from tclass._core._shape_op import ShapeOp, register_legacy_view
from tclass._engine._td import TensorDict
from tclass._engine._td_index import _raise_through_tensor
from tclass.errors import (
    ArgumentError,
    BatchSizeError,
    DimNameError,
    ShapeError,
    UnsupportedError,
)

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from tclass._base.declared._persistence import PathLike, SaveOptions
    from tclass._core._device import DeviceLike

__all__ = ["LegacyLazyView", "legacy_view"]

_MISSING: Any = object()
_NO_DEFAULT: Any = object()


def legacy_view(collection: Any, op: ShapeOp, undo: bool = True) -> Any:
    """The view ``op`` gives of ``collection``, or (``undo``) the source of
    ``collection`` when ``collection`` is a view that ``op`` undoes."""
    if undo and isinstance(collection, LegacyLazyView) and collection._op.inverse() == op:
        return collection._source
    return LegacyLazyView(collection, op)


register_legacy_view(legacy_view)


class LegacyLazyView(SourceLock, TensorDictBase):
    """A write-through view of a collection through one shape operation (see the module
    docstring): made by the shape methods under ``set_lazy_legacy(True)``."""

    __slots__ = ("_source", "_op", "_lock_block", "__weakref__")

    _source: TensorDictBase

    _saved_at = None  # never saved in a folder itself (what records check before writes)
    _consolidated = None

    def __init__(self, source: TensorDictBase, op: ShapeOp) -> None:
        self._source = source
        self._op = op
        self._lock_block = None

    # --- the operation both ways --------------------------------------------------------

    def _plain(self, leaf_by_leaf: bool = False) -> Any:
        """The source reshaped by the plain operation: a collection of views of the
        source's tensors (in-place writes into it reach the source, new entries do not).
        ``leaf_by_leaf``: each tensor reshaped alone, memory-mapped ones staying so (what
        saving checks), names and lock left behind."""
        source: Any = self._source
        if isinstance(source, LegacyLazyView):
            source = source._plain(leaf_by_leaf)
        return _leaf_by_leaf(source, self._op) if leaf_by_leaf else self._op.apply(source)

    def _forward(self, value: Any) -> Any:
        """An entry of the source as this view reads it."""
        if isinstance(value, TensorCollection) and not value._is_leaf_node:
            if is_record(value):
                return value._wrap(legacy_view(storage_of(value), self._op))  # type: ignore[attr-defined]
            return legacy_view(value, self._op)
        return self._op.apply(value)

    def _backward(self, value: Any) -> Any:
        """A value written into this view as the source stores it."""
        if isinstance(value, LegacyLazyView):
            if value._op == self._op:
                return value._source
            value = value._plain()
        if isinstance(value, (torch.Tensor, TensorCollection)):
            return self._op.inverse().apply(value)
        return value

    def _checked(self, key: str, value: Any) -> Value:
        """``value`` as this view would store it under ``key``: converted (a dict, an
        array, a Python value) and checked against this view's batch size and device."""
        probe = TensorDict._new_unchecked({}, self.batch_size, self.device)
        return probe._validate(key, value)

    # --- collection primitives ----------------------------------------------------------

    @property
    def batch_size(self) -> torch.Size:
        """The source's batch size reshaped by the operation; assigning another size is
        refused (a view cannot change its source's)."""
        return self._op.out_size(self._source.batch_size)

    @batch_size.setter
    def batch_size(self, value: Any) -> None:
        self._assign_batch_size(as_batch_size(value))

    @property
    def _batch_size(self) -> torch.Size:  # what records read
        return self.batch_size

    @property
    def device(self) -> torch.device | None:
        """The source's device."""
        return self._source.device

    @property
    def _device(self) -> torch.device | None:
        return self._source.device

    @property
    def _tensors(self) -> ViewEntries:
        """The entries as a mapping read through the view (a record's fields use it)."""
        return ViewEntries(self)

    def _items(self) -> Iterator[tuple[str, Value]]:
        forward = self._forward
        for key, value in self._source._items():
            yield key, forward(value)

    def _key_names(self) -> list[str]:
        return self._source._key_names()

    def _has_entry(self, key: str) -> bool:
        return self._source._has_entry(key)

    def _entry(self, key: str) -> Value:
        return self._forward(self._source._entry(key))  # type: ignore[no-any-return]

    def _new_like(
        self, values: dict[str, Value], batch_size: torch.Size, device: torch.device | None
    ) -> Self:
        out = TensorDict._new_unchecked(values, batch_size, device)
        names = self._dim_names
        if names is not None and batch_size == self.batch_size:
            out._assign_names(names)
        return out  # type: ignore[return-value]

    def _map_values(
        self, fn: Callable[[Value], Value], batch_size: torch.Size, device: Any = ...
    ) -> Self:
        values = {key: fn(value) for key, value in self._items()}
        return self._new_like(values, batch_size, self.device if device is ... else device)

    def _map_batch(
        self, fn: Callable[[Value], Value], batch_size: torch.Size, device: Any = ...
    ) -> Self:
        return self._plain()._map_batch(fn, batch_size, device)  # type: ignore[no-any-return]

    def _map_values_split(
        self, fn: Callable[[Value], Sequence[Value]], batch_sizes: Sequence[torch.Size]
    ) -> tuple[Self, ...]:
        return self._plain()._map_values_split(fn, batch_sizes)  # type: ignore[no-any-return]

    # In-place writes go through the plain reshaped source, whose tensors are views of the
    # source's (of its members', for a lazy stack, whose read entries are stacked copies).

    def _entries(self) -> Mapping[str, Value]:
        return self._plain()._entries()  # type: ignore[no-any-return]

    def _tensor_leaves(self) -> Iterator[torch.Tensor]:
        return self._plain()._tensor_leaves()  # type: ignore[no-any-return]

    def _collect(
        self, into: Gather, operands: tuple[Any, ...], batch_dims: int, prefix: tuple[str, ...]
    ) -> None:
        self._plain()._collect(into, operands, batch_dims, prefix)

    def _stage_in_place(
        self, fn: Callable[..., torch.Tensor | None], others: tuple[Any, ...], staged: Any
    ) -> None:
        self._plain()._stage_in_place(fn, others, staged)

    def set_at_(self, key: Any, value: Any, index: Any, *, non_blocking: bool = False) -> Self:
        """Writes ``value`` into the elements ``index`` (of this view) of the entry ``key``."""
        self._plain().set_at_(key, value, index, non_blocking=non_blocking)
        return self

    def fill_(self, key: Any, value: float | bool | torch.Tensor) -> Self:
        """Fills the source's entry ``key``."""
        self._source.fill_(key, value)
        return self

    def _check_batch_size(self, new: torch.Size, prefix: tuple[str, ...]) -> None:
        if self.batch_size[: len(new)] != new:
            self._refuse_batch_size(new, prefix)

    def _assign_batch_size(self, new: torch.Size) -> None:
        if new != self.batch_size:
            self._refuse_batch_size(new, ())

    def _refuse_batch_size(self, new: torch.Size, prefix: tuple[str, ...]) -> None:
        msg = (
            f"cannot give batch size {format_shape(new)} to a legacy lazy view of batch size "
            f"{format_shape(self.batch_size)}{_at(prefix)}: a view cannot change its "
            "source's batch size; call to_tensordict() first for a dense TensorDict"
        )
        raise BatchSizeError(msg)

    # --- names ---------------------------------------------------------------------------

    @property
    def _dim_names(self) -> Names:
        return self._op.names(self._source._dim_names)

    @property
    def names(self) -> list[Any]:  # str names usually: any hashable, as the peer
        """The source's dim names carried through the operation (``view`` unnames);
        assigning other names is refused: rename the source, or a dense copy."""
        return _names.show(self._dim_names, len(self.batch_size))

    @names.setter
    def names(self, value: Sequence[DimName] | None) -> None:
        self._rename_all(_names.as_names(value, len(self.batch_size)))

    def _assign_names(self, names: Names) -> None:
        self._rename_all(names)

    def _rename_all(self, names: Names) -> None:
        if names == self._dim_names:
            return
        msg = (
            f"Names of a lazy tensordict cannot be modified: this legacy lazy view's names "
            f"({self.names}) are its source's; rename the source, or call to_tensordict() first"
        )
        raise DimNameError(msg)

    # --- reading -------------------------------------------------------------------------

    def get(self, key: Any, default: Any = _NO_DEFAULT) -> Any:
        """The entry at ``key`` read through the view, or ``default`` when absent (see
        ``TensorDict.get``)."""
        path = _keys.key_path(key)
        node: Any = self
        for depth, part in enumerate(path):
            if not isinstance(node, TensorCollection):
                if default is _NO_DEFAULT:
                    _raise_through_tensor(path, depth)
                return default
            if not node._has_entry(part):
                if default is _NO_DEFAULT and not OPTIONS.get_defaults_to_none:
                    raise self._missing_key(path[0] if len(path) == 1 else path)
                return None if default is _NO_DEFAULT else default
            node = node._entry(part)
        return node

    def __getitem__(self, index: Any) -> Any:
        """An entry (``v["a"]``, a Python value as the value) read through the view, or
        the batch elements ``index`` selects as a TensorDict of views."""
        if type(index) is str or (type(index) is tuple and _keys.is_key_tuple(index)):
            value = self.get(index, _MISSING)
            if value is _MISSING:
                raise self._missing_key(index)
            return value._read() if isinstance(value, TensorCollection) else value
        return self._plain()[index]

    def unbind(self, dim: int = 0) -> tuple[Self, ...]:
        return self._plain().unbind(dim)  # type: ignore[no-any-return]

    def to_tensordict(self, *, retain_none: bool | None = None) -> TensorDict:
        """A dense TensorDict copy of the view's entries."""
        return self._plain().to_tensordict(retain_none=retain_none)  # type: ignore[no-any-return]

    # --- writing: into the source, through the inverse operation ----------------------------

    def set(
        self, key: Any, value: Any, inplace: bool = False, *, non_blocking: bool = False
    ) -> Self:
        """Sets ``value`` (shaped like this view's entries) in the source, reshaped back."""
        path = _keys.key_path(key)
        back = self._backward(self._checked(path[-1], value))
        self._source.set(key, back, inplace=inplace, non_blocking=non_blocking)
        return self

    def set_(self, key: Any, value: Any, *, non_blocking: bool = False) -> Self:
        """Writes ``value`` into the source's existing entry ``key``, in place."""
        if isinstance(value, Mapping) or (
            hasattr(value, "__array__") and not isinstance(value, torch.Tensor)
        ):
            value = self._checked(_keys.key_path(key)[-1], value)  # a dict, an array
        self._source.set_(key, self._backward(value), non_blocking=non_blocking)
        return self

    def _store_entry(self, key: str, value: Value, blank: bool = False) -> Value:
        self._source.set(key, self._backward(value))
        return value

    def _remove_entry(self, key: str) -> Value:
        return self._op.apply(self._source.pop(key))  # type: ignore[no-any-return]

    def __setitem__(self, index: Any, value: Any) -> None:
        """``v["a"] = x`` sets an entry of the source (in place when it is locked, as
        ``td["a"] += 1`` does); ``v[index] = x`` writes the selected elements of the
        source's tensors."""
        if type(index) is str or (type(index) is tuple and _keys.is_key_tuple(index)):
            self.set(index, value, inplace=self.is_locked)
            return
        dense = self._plain()
        dense[index] = value
        _push_new_entries(dense, self._source, self._op.inverse())

    def _update_entries(
        self,
        source: Mapping[Any, Any] | TensorCollection,
        clone: bool,
        inplace: bool,
        keys_to_update: Sequence[Any] | None,
        is_leaf: Callable[[type], bool] | None,
    ) -> Self:
        probe = TensorDict._new_unchecked({}, self.batch_size, self.device)
        probe.update(source, clone=clone)
        self._source.update(
            self._backward(probe), inplace=inplace, keys_to_update=keys_to_update, is_leaf=is_leaf
        )
        return self

    def del_(self, key: Any) -> Self:
        """Deletes ``key`` from the source."""
        self._source.del_(key)
        return self

    def __delitem__(self, key: Any) -> None:
        self._source.del_(key)

    def pop(self, key: Any, default: Any = _MISSING) -> Any:
        """Removes ``key`` from the source; returns the entry as this view read it."""
        value = self.get(key, _MISSING)
        if value is _MISSING:
            if default is _MISSING:
                raise self._missing_key(key)
            return default
        self._source.del_(key)
        return value

    def rename_key_(self, old_key: Any, new_key: Any, safe: bool = False) -> Self:
        """Renames the source's entry ``old_key``."""
        cast(Any, self._source).rename_key_(old_key, new_key, safe=safe)
        return self

    def select(self, *keys: Any, inplace: bool = False, strict: bool = True) -> Self:
        """The entries ``keys`` as a TensorDict of views; ``inplace``: the source keeps
        only those."""
        if inplace:
            self._source.select(*keys, inplace=True, strict=strict)
            return self
        return self._plain().select(*keys, strict=strict)  # type: ignore[no-any-return]

    def exclude(self, *keys: Any, inplace: bool = False) -> Self:
        """The other entries as a TensorDict of views; ``inplace``: removed from the
        source."""
        if inplace:
            self._source.exclude(*keys, inplace=True)
            return self
        return self._plain().exclude(*keys)  # type: ignore[no-any-return]

    def clear_device_(self) -> Self:
        self._source.clear_device_()
        return self

    # --- copies and devices ----------------------------------------------------------------

    def clone(self, recurse: bool = True) -> Self:
        """A dense TensorDict copy; ``recurse=False``: the same view of a shallow copy of
        the source (new containers, the same tensors)."""
        if recurse:
            return self._plain().clone()  # type: ignore[no-any-return]
        return type(self)(self._source.clone(False), self._op)

    def to(self, *args: ToArg, **kwargs: Any) -> Self:
        """The same view of the source moved or cast (see ``TensorDict.to``); ``self``
        when nothing changes.

        Raises:
            ArgumentError: (a ``TypeError``, as the peer raises) for ``inplace=True`` or
                ``batch_size=``: move or cast the source, or a dense copy, instead.
        """
        if kwargs.get("inplace") or kwargs.get("batch_size") is not None:
            what = (  # the peer's words for each
                f"Cannot use inplace=True with {type(self).__name__}.to()"
                if kwargs.get("inplace")
                else f"Cannot pass batch-size to {type(self).__name__}.to()"
            )
            msg = (
                f"{what}: a legacy lazy view is neither moved in place nor given a batch "
                "size; call it on the view's source (the view reads the moved entries), or "
                "on to_tensordict()"
            )
            raise ArgumentError(msg)
        moved: Any = self._source.to(*args, **kwargs)
        if moved is self._source:
            return self
        if isinstance(moved, TensorDictBase):
            return type(self)(moved, self._op)
        return moved  # type: ignore[no-any-return]  # a TensorDictFuture (non_blocking_pin)

    def cuda(self, device: int | DeviceLike = None) -> Self:
        """Same as ``to("cuda")`` (or ``to("cuda:<device>")``)."""
        if device is None:
            return self.to("cuda")
        return self.to(torch.device("cuda", device) if isinstance(device, int) else device)

    def cpu(self) -> Self:
        """Same as ``to("cpu")``."""
        return self.to("cpu")

    def _take_moved(self, moved: Self) -> None:
        msg = (
            "a legacy lazy view cannot move its source in place; move the source, or call "
            "to_tensordict() first"
        )
        raise UnsupportedError(msg)

    # --- saving, sharing -------------------------------------------------------------------

    def memmap_(
        self,
        prefix: PathLike | None = None,
        copy_existing: bool = False,
        **options: Unpack[SaveOptions],
    ) -> Self:
        """Saves this view's entries in ``prefix``, laid out as the view reads them (so
        ``load_memmap(prefix)`` equals this view, as the peer's), and makes the source
        hold the saved memory-mapped tensors, reshaped back: writes through the source or
        the view reach the files. Returns this view; the source is locked, as ``memmap_``
        leaves a collection.

        Raises:
            UnsupportedError: for ``return_early=True`` (save the source instead).
        """
        if options.get("return_early"):
            msg = (
                "memmap_(return_early=True) of a legacy lazy view is not supported: save it "
                "without return_early, or call memmap_ on the view's source"
            )
            raise UnsupportedError(msg)
        saved = self._plain(leaf_by_leaf=True).memmap(prefix, copy_existing, **options)
        source = self._source
        source.unlock_()
        try:
            source.update(_leaf_by_leaf(saved, self._op.inverse()))
        finally:
            source._lock_each()  # each level on its own, as memmap_ leaves a collection
        return self

    def memmap(
        self,
        prefix: PathLike | None = None,
        copy_existing: bool = False,
        **options: Unpack[SaveOptions],
    ) -> Self:
        """A memory-mapped TensorDict copy of this view's entries saved in ``prefix``
        (see ``TensorDict.memmap``)."""
        plain = self._plain(leaf_by_leaf=True)
        return plain.memmap(prefix, copy_existing, **options)  # type: ignore[no-any-return]

    def is_memmap(self) -> bool:
        """Whether the source's tensors are memory-mapped (read through the view, they
        are views of the mapped files)."""
        return self._source.is_memmap()

    def is_shared(self) -> bool:
        """Whether the source's tensors are in shared memory."""
        return self._source.is_shared()

    def memmap_like(
        self,
        prefix: PathLike | None = None,
        copy_existing: bool = False,
        **options: Unpack[SaveOptions],
    ) -> Self:
        """A memory-mapped collection shaped like this view (allocated, not filled;
        see ``TensorDict.memmap_like``)."""
        return self._plain().memmap_like(prefix, copy_existing, **options)  # type: ignore[no-any-return]

    def auto_batch_size_(
        self, batch_dims: int | None = None, keep_compliant_size: bool = False
    ) -> Self:
        """Refused: a view's batch size is its source's, reshaped."""
        msg = (
            f"auto_batch_size_: a legacy lazy view (batch size {format_shape(self.batch_size)}) "
            "cannot change its source's batch size; call it on the source, or on "
            "to_tensordict()"
        )
        raise BatchSizeError(msg)

    def _become(self, other: Self) -> None:
        """Refused: the in-place key rewrites (``flatten_keys`` / ``unflatten_keys`` /
        ``select`` ... with ``inplace=True``) would exclude the source's entries through
        the view."""
        msg = (
            f"Cannot call exclude (nor another in-place rewrite of keys or shape) on a legacy "
            f"lazy view ({self._op} of a {type(self._source).__name__}): call it with "
            "inplace=False, or on the view's source, or on to_tensordict()"
        )
        raise UnsupportedError(msg)

    # --- the shape operations: views of views in the mode, refused outside it ---------------

    def _outside_mode(self, method: str) -> ShapeError:
        return ShapeError(
            f"Cannot call `{method}` on a legacy lazy view ({self._op} of a "
            f"{type(self._source).__name__}) outside set_lazy_legacy(True). Make it dense "
            "first with to_tensordict(), or call it under set_lazy_legacy(True)"
        )

    def unsqueeze(self, dim: int) -> Self:
        if not OPTIONS.lazy_legacy:
            raise self._outside_mode("unsqueeze")
        return super().unsqueeze(dim)

    def squeeze(self, dim: int | None = None) -> Self:
        if not OPTIONS.lazy_legacy:
            raise self._outside_mode("squeeze")
        return super().squeeze(dim)

    def permute(self, *dims_list: int | Sequence[int], dims: Sequence[int] | None = None) -> Self:
        if not OPTIONS.lazy_legacy:
            raise self._outside_mode("permute")
        return super().permute(*dims_list, dims=dims)

    def transpose(self, dim0: int, dim1: int) -> Self:
        if not OPTIONS.lazy_legacy:
            raise self._outside_mode("transpose")
        return super().transpose(dim0, dim1)

    def view(
        self,
        *shape: int | Sequence[int] | torch.dtype,
        size: Sequence[int] | None = None,
        batch_size: Sequence[int] | None = None,
    ) -> Self:
        if not OPTIONS.lazy_legacy and not (len(shape) == 1 and isinstance(shape[0], torch.dtype)):
            raise self._outside_mode("view")
        return super().view(*shape, size=size, batch_size=batch_size)

    # --- python protocols ----------------------------------------------------------------

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self._source, self._op))

    def __repr__(self) -> str:
        source = repr(self._source).replace("\n", "\n    ")
        return f"{type(self).__name__}(\n    source={source},\n    op={self._op})"


def _push_new_entries(dense: Any, source: Any, back: ShapeOp) -> None:
    """Entries a write into ``dense`` (the plain reshaped source) added, set in
    ``source`` reshaped back by ``back`` (nested collections both hold: key by key)."""
    for key in dense._key_names():
        value = dense._entry(key)
        if not source._has_entry(key):
            source.set(key, back.apply(value))
            continue
        held = source._entry(key)
        if _is_branch(value) and _is_branch(held):
            _push_new_entries(storage_of(value), storage_of(held), back)


def _leaf_by_leaf(value: Any, op: ShapeOp) -> Any:
    """``value`` after ``op``, applied to each tensor alone (so that memory-mapped tensors
    stay memory-mapped tensors, views of their files)."""
    if _is_branch(value):
        return value._map_batch(lambda v: _leaf_by_leaf(v, op), op.out_size(value.batch_size))
    return op.apply(value)


def _is_branch(value: object) -> bool:
    return isinstance(value, TensorCollection) and not value._is_leaf_node


def _at(prefix: tuple[str, ...]) -> str:
    return f" (at {prefix!r})" if prefix else ""
