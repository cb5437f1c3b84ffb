"""Batch-shape operations that rearrange the batch dims: names, ``reshape``, ``view``,
``flatten``, ``squeeze``, ``unsqueeze``, ``permute``, ``transpose``, ``flip``, ``roll``...

The base of ``ShapeOps`` (``_shape_ops.py``, which has the module's rules): it also holds
what every result inherits (``_carry``, ``_legacy``, ``_in_place``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from types import EllipsisType
from typing import TYPE_CHECKING, Any

import torch
from typing_extensions import Self

from tclass._base.implemented._collection import TensorCollection
from tclass._core import _batch, _names
from tclass._core._names import DimName, Names
from tclass._core._options import OPTIONS
from tclass._core._shape_op import PicksElements, ShapeOp, legacy_view
from tclass.errors import (
    DimError,
    DimNameError,
    ShapeError,
    TclassError,
    UnsupportedError,
)

if TYPE_CHECKING:
    from tclass._base._tensordict_base import Value

__all__ = ["ReshapeOps", "Span"]

# What flatten / unflatten pass to ``_reshaped``: the first and last dims of the span,
# and whether they are merged (flatten) or split from the first (unflatten).
Span = tuple[int, int, bool]


class ReshapeOps(TensorCollection):
    """Names, reshape, view, flatten, unflatten, squeeze, unsqueeze, permute, transpose,
    movedim, flip, roll... over the batch dims, and what results inherit."""

    __slots__ = ()

    # Whether what an op that copies each element anew gives (``flip``, ``roll``, ``rot90``,
    # ``tile``; ``expand`` to another batch size) is locked as this collection: a
    # collection's is, as the peer's; a stack of Python values' is not (the peer's holds
    # new members there, unlocked as any new node).
    _copies_keep_lock = True

    # --- what results inherit ------------------------------------------------------------

    def _carry(
        self,
        result: Self,
        names: Names,
        *,
        lock: bool = True,
        inverse: Callable[[Self], Self] | None = None,
        view: bool = False,
    ) -> Self:
        """``result`` with ``names`` and, if ``lock`` (a rearranging operation), the lock.

        ``inverse`` undoes the operation: a ``with`` block on the result then writes the
        entries it holds on exit back into this collection (``with td.transpose(0, 1) as
        t: t["c"] = ...`` adds ``c`` to ``td``), as the peer does. ``view``: the result
        is a view the peer keeps memory-mapped (``unsqueeze``, ``permute``, ``unbind``...):
        one of a saved collection without tensors is saved too (see ``_mark_view_of``)."""
        if names is not None:
            result._assign_names(names)
        if lock and self._results_locked():
            result.lock_()
            if view:
                self._mark_view_of(result)
        if inverse is not None:

            def write_back() -> None:
                # a locked collection takes the data in place (new keys stay refused)
                self.update(inverse(result), inplace=self.is_locked)

            result._call_on_exit(write_back)
        return result

    def _legacy(self, op: ShapeOp, undo: bool = True) -> Self:
        """The write-through view ``op`` gives under ``set_lazy_legacy(True)`` (the
        peer's legacy lazy mode): writes into it go to this collection."""
        return legacy_view(self, op, undo)  # type: ignore[no-any-return]

    def _in_place(self, result: Self, inplace: bool, op: str) -> Self:
        """``result``, or ``self`` holding it (``inplace=True`` of the method ``op``)."""
        if not inplace:
            return result
        try:
            self._become(result)
        except UnsupportedError as error:
            msg = f"{op}(inplace=True): {error}"
            raise UnsupportedError(msg) from None
        return self

    def _mark_view_of(self, view: Self) -> None:
        """Marks ``view`` (a locked view of this locked collection) as saved where this
        one is saved and ``view`` holds no tensor to tell it, so that its rows are locked
        and ``is_memmap()`` holds, as the peer's views of what it memory-mapped; a
        TensorDict implements it (other collections tell by their tensors)."""

    def _views_stay_locked(self) -> bool:
        """Whether views of this collection (``unbind``'s slices, an index's) are locked
        when it is, as the peer's are: when it is memory-mapped or in shared memory (a
        saved TensorDict also when it holds no tensor)."""
        collection: Any = self  # every collection has is_memmap and is_shared
        return bool(collection.is_memmap() or collection.is_shared())

    # --- names ---------------------------------------------------------------------------

    def refine_names(self, *names: str | None | EllipsisType) -> Self:
        """Names the dims that have no name yet, in place (nested collections too), as
        the peer does; returns ``self`` (``...`` stands for the dims not listed;
        ``None`` keeps a dim's name).

        Raises:
            DimNameError: (a ``RuntimeError`` and a ``ValueError``) if a dim already has
                another name, or a name repeats.
        """
        refined = _names.refined(self._dim_names, names, self.batch_dims)
        self._check_nested_names(refined)
        self._rename_all(refined)
        return self

    def rename(self, *names: str | None, **rename_map: str) -> Self:
        """A shallow copy with its dims renamed: ``rename("a", "b")`` names every dim,
        ``rename(None)`` unnames them, ``rename(old="new")`` renames some."""
        renamed = _names.renamed(self._dim_names, names, rename_map, self.batch_dims)
        self._check_nested_names(renamed)
        out = self.clone(recurse=False)
        out._rename_all(renamed)
        return out

    def rename_(self, *names: str | None, **rename_map: str) -> Self:
        """:meth:`rename` in place (nested collections too); returns ``self``. With
        neither names nor ``old=new`` pairs, a collection without batch dims is left as
        it is (no dim to name: the peer's no-op), others raise ``DimNameError``."""
        if not names and not rename_map and not self.batch_size:
            return self
        renamed = _names.renamed(self._dim_names, names, rename_map, self.batch_dims)
        self._check_nested_names(renamed)
        self._rename_all(renamed)
        return self

    def _check_nested_names(self, names: Names) -> None:
        """Checks that naming the batch dims ``names`` keeps the dim names of every nested
        collection unique (they share these dims, then name their own), before anything
        is renamed.

        Raises:
            DimNameError: (a ``ValueError``, as the peer raises) naming the nested key,
                the names it would get and how to fix it.
        """
        if names is not None:
            _check_nested(self, names, (), names)

    # --- reshaping -------------------------------------------------------------------------

    def reshape(
        self, *shape: int | Sequence[int], size: Sequence[int] | None = None, inplace: bool = False
    ) -> Self:
        """A collection with batch size ``shape`` (or ``size=``; one dim may be -1);
        copies as torch does."""
        if size is not None:
            if shape:
                msg = f"reshape takes the shape once (arguments or size=): got {shape}, size={size}"
                raise ShapeError(msg)
            shape = (tuple(size),)
        batch_size = self.batch_size
        # A ragged lazy stack (a -1 size) has numel() elements in no regular shape (none
        # with a size 0: numel() counts at least 1).
        known = batch_size
        if -1 in batch_size:
            known = torch.Size([0 if 0 in batch_size else self.numel()])
        new = _batch.view_shape(_batch.shape_args(shape, "reshape"), known, "reshape")
        if new == batch_size:
            return self  # as the peer (and torch for a contiguous tensor): no copy
        names = None
        return self._in_place(self._carry(self._reshaped(new), names), inplace, "reshape")

    def view(
        self,
        *shape: int | Sequence[int] | torch.dtype,
        size: Sequence[int] | None = None,
        batch_size: Sequence[int] | None = None,
    ) -> Self:
        """A view with batch size ``shape`` (or ``size=`` / ``batch_size=``), or with every
        tensor viewed as a dtype (``view(torch.uint8)``; with ``batch_size=``, the result
        and its nested collections get that batch size, as the peer's)."""
        if len(shape) == 1 and isinstance(shape[0], torch.dtype):
            new_size = None if batch_size is None else torch.Size(batch_size)
            return self._view_dtype(shape[0], new_size)
        given = size if size is not None else batch_size
        if given is not None:
            shape = (tuple(given),)
        current = self.batch_size
        new = _batch.view_shape(_batch.shape_args(shape, "view"), current, "view")
        if new == current:
            return self  # as the peer
        nb = len(current)
        if OPTIONS.lazy_legacy and not self._is_leaf_node:
            return self._legacy(ShapeOp("view", tuple(new), nb, tuple(current)))
        try:
            out = self._map_batch(lambda v: v.view(new + v.shape[nb:]), new)
        except RuntimeError as error:
            if isinstance(error, TclassError):
                raise
            msg = (
                f"Cannot call `view` to batch size {list(new)} on this "
                f"{type(self).__name__}: a tensor's strides do not allow it ({error}); use "
                "reshape(...), or contiguous() first"
            )
            raise ShapeError(msg) from None
        return self._carry(out, None, inverse=lambda r: r.view(current), view=True)

    def _view_dtype(self, dtype: torch.dtype, new_size: torch.Size | None) -> Self:
        batch_size = self.batch_size if new_size is None else new_size
        nb = len(batch_size)
        values: dict[str, Value] = {}
        for key, value in self._items():
            out: torch.Tensor | TensorCollection
            if new_size is not None and isinstance(value, TensorCollection):
                out = value.view(dtype, batch_size=new_size)
            else:
                out = value.view(dtype)
            if out.shape[:nb] != batch_size:
                msg = (
                    f"view({dtype}) would change the batch dims of {key!r} from "
                    f"{list(value.shape)} to {list(out.shape)}: a dtype of another size "
                    "changes the last dim, which must be a feature dim (or give the "
                    "batch size of the result, view(dtype, batch_size=...))"
                )
                raise ShapeError(msg)
            values[key] = out
        names = self._dim_names if new_size is None or new_size == self.batch_size else None
        return self._carry(self._new_like(values, batch_size, self.device), names)

    def flatten(
        self, start_dim: int | None = None, end_dim: int | None = None, *, inplace: bool = False
    ) -> Self:
        """Merges batch dims ``start_dim`` to ``end_dim`` (inclusive; all when ``None``)."""
        start_dim = 0 if start_dim is None else start_dim
        end_dim = -1 if end_dim is None else end_dim
        batch_size = self.batch_size
        nb = len(batch_size)
        if nb == 0:
            # As for a 0-d tensor: dims 0 and -1 are valid and the result has one dim,
            # added as unsqueeze(0) adds it (Python values per element, as the peer).
            _batch.normalize_dim(start_dim, 1, op="flatten")
            _batch.normalize_dim(end_dim, 1, op="flatten")
            added = self._map_batch(lambda v: v.unsqueeze(0), torch.Size([1]))
            return self._in_place(self._carry(added, None), inplace, "flatten")
        start = _batch.normalize_dim(start_dim, nb, op="flatten")
        end = _batch.normalize_dim(end_dim, nb, op="flatten")
        if start > end:
            msg = f"flatten: start_dim {start_dim} comes after end_dim {end_dim}"
            raise ShapeError(msg)
        merged = 1
        for size in batch_size[start : end + 1]:
            merged *= size
        names = _names.flattened(self._dim_names, start, end)
        new = batch_size[:start] + (merged,) + batch_size[end + 1 :]
        # Nested collections flatten themselves: as the peer, new nodes (holding the same
        # leaves) even when nothing merges, where a lazy stack gives itself.
        out = self._reshaped(new, span=(start, end, True))
        if names is None and self._dim_names is not None:
            out._assign_names(None)  # the only named dim flattened: no names left
        carried = self._carry(out, names, inverse=lambda r: r.reshape(batch_size))
        return self._in_place(carried, inplace, "flatten")

    def unflatten(
        self, dim: int, unflattened_size: Sequence[int], *, inplace: bool = False
    ) -> Self:
        """Splits batch dim ``dim`` into ``unflattened_size`` (one size may be -1)."""
        batch_size = self.batch_size
        dim = _batch.normalize_dim(dim, len(batch_size), op="unflatten")
        sizes = tuple(unflattened_size)
        part = _batch.view_shape(sizes, torch.Size([batch_size[dim]]), "unflatten")
        names = _names.unflattened(self._dim_names, dim, len(sizes))
        new = batch_size[:dim] + part + batch_size[dim + 1 :]
        # As the peer, even a size that changes nothing reshapes the leaves (plain tensors
        # from memory-mapped ones); nested collections unflatten themselves.
        out = self._reshaped(new, always=True, span=(dim, dim + len(part) - 1, False))
        carried = self._carry(out, names, inverse=lambda r: r.reshape(batch_size))
        return self._in_place(carried, inplace, "unflatten")

    def _reshaped(self, new: torch.Size, *, always: bool = False, span: Span | None = None) -> Self:
        """The reshape to ``new``, without what ``reshape`` passes on (callers do); one
        that changes nothing keeps the leaves as they are unless ``always``. ``span``
        (``flatten`` / ``unflatten``): ``(i, j, merged)``, the dims ``i..j`` of the longer
        of the two shapes merged into (``merged``), or split from, its dim ``i``; nested
        collections then make the same call (a lazy stack itself regroups its members by
        the shape alone, as the peer's)."""
        nb = len(self.batch_size)
        unchanged = new == self.batch_size and not always

        def reshape(value: Any) -> Any:
            if span is not None and isinstance(value, ReshapeOps):
                i, j, merged = span  # the same call as this one, over its batch dims
                if merged:
                    return value.flatten(i, j)
                return value.unflatten(i, tuple(new[i : j + 1]))
            return value if unchanged else value.reshape(new + value.shape[nb:])

        if unchanged and span is None:
            return self._map_batch(_identity, new)
        return self._map_batch(reshape, new)

    # --- adding and removing dims ------------------------------------------------------------

    def squeeze(self, dim: int | None = None) -> Self:
        """Removes size-1 batch dims (all of them, or ``dim`` if it has size 1)."""
        batch_size = self.batch_size
        dims = _batch.squeeze_dims(batch_size, dim)
        if not dims:
            return self  # nothing to squeeze: the peer returns the collection itself
        if OPTIONS.lazy_legacy and not self._is_leaf_node:
            # squeeze() undoes no view, as the peer's: it only squeezes a view further
            return self._legacy(ShapeOp("squeeze", dims, len(batch_size)), dim is not None)
        new = torch.Size(s for i, s in enumerate(batch_size) if i not in dims)
        if len(dims) == 1:
            (only,) = dims
            out = self._map_batch(lambda v: v.squeeze(only), new)
        else:
            # Squeeze from the last dim down so earlier dims keep their positions.
            ordered = sorted(dims, reverse=True)
            out = self._map_batch(lambda v: _squeeze_all(v, ordered), new)
        names = _names.removed(self._dim_names, dims)
        return self._carry(out, names, inverse=lambda r: _unsqueeze_all(r, sorted(dims)), view=True)

    def unsqueeze(self, dim: int) -> Self:
        """Inserts a batch dim of size 1 at ``dim`` (-1 means after the last batch dim)."""
        batch_size = self.batch_size
        pos = _batch.normalize_dim(dim, len(batch_size), op="unsqueeze", inclusive=True)
        if OPTIONS.lazy_legacy and not self._is_leaf_node:
            return self._legacy(ShapeOp("unsqueeze", (pos,), len(batch_size)))
        new = batch_size[:pos] + (1,) + batch_size[pos:]
        out = self._map_batch(lambda v: v.unsqueeze(pos), torch.Size(new))
        names = _names.inserted(self._dim_names, pos)
        return self._carry(out, names, inverse=lambda r: r.squeeze(pos), view=True)

    def atleast_1d(self) -> Self:
        """``self`` with one batch dim of size 1 added if it has none (else ``self``)."""
        return self if self.batch_size else self.unsqueeze(0)

    def atleast_2d(self) -> Self:
        """``self`` with leading batch dims of size 1 added to reach 2 (else ``self``);
        views, usable as a ``with`` block as :meth:`unsqueeze`."""
        return self._at_least(2)

    def atleast_3d(self) -> Self:
        """``self`` with leading batch dims of size 1 added to reach 3 (else ``self``).
        Unlike ``torch.atleast_3d`` the new dims always come first, as in the peer."""
        return self._at_least(3)

    def _at_least(self, ndim: int) -> Self:
        out = self
        for _ in range(ndim - self.batch_dims):
            out = out.unsqueeze(0)
        return out

    # --- reordering dims ---------------------------------------------------------------------

    def permute(self, *dims_list: int | Sequence[int], dims: Sequence[int] | None = None) -> Self:
        """Reorders the batch dims (a view, as for tensors): ``permute(1, 0)``,
        ``permute((1, 0))`` or ``permute(dims=(1, 0))``."""
        batch_size = self.batch_size
        nb = len(batch_size)
        order = _batch.permute_dims(_batch.permute_args(dims_list, dims), nb)
        if order == tuple(range(nb)):
            return self  # the identity: the peer returns the collection itself
        if OPTIONS.lazy_legacy and not self._is_leaf_node:
            return self._legacy(ShapeOp("permute", order, nb))
        new = torch.Size(batch_size[d] for d in order)
        out = self._map_batch(lambda v: v.permute(order + tuple(range(nb, v.ndim))), new)
        back = tuple(order.index(d) for d in range(nb))
        names = _names.permuted(self._dim_names, order)
        return self._carry(out, names, inverse=lambda r: r.permute(back), view=True)

    def transpose(self, dim0: int, dim1: int) -> Self:
        """Swaps two batch dims.

        Raises:
            DimError: (an ``IndexError`` and a ``ValueError``, as the peer raises) if a dim
                is not a batch dim.
        """
        batch_size = self.batch_size
        nb = len(batch_size)
        a, b = _batch.normalize_dim_pair(dim0, dim1, nb, op="transpose")
        if a == b:
            return self  # as the peer
        order = list(range(nb))
        order[a], order[b] = b, a
        if OPTIONS.lazy_legacy and not self._is_leaf_node:
            return self._legacy(ShapeOp("permute", tuple(order), nb))
        sizes = list(batch_size)
        sizes[a], sizes[b] = sizes[b], sizes[a]
        out = self._map_batch(lambda v: v.transpose(a, b), torch.Size(sizes))
        names = _names.permuted(self._dim_names, order)
        return self._carry(out, names, inverse=lambda r: r.transpose(a, b), view=True)

    def swapaxes(self, axis0: int, axis1: int) -> Self:
        """Same as :meth:`transpose`."""
        return self.transpose(axis0, axis1)

    def swapdims(self, dim0: int, dim1: int) -> Self:
        """Same as :meth:`transpose`."""
        return self.transpose(dim0, dim1)

    def movedim(self, source: int | Sequence[int], destination: int | Sequence[int]) -> Self:
        """Moves batch dims ``source`` to positions ``destination``, as ``torch.movedim``."""
        nb = self.batch_dims
        src = _dim_list(source, nb, "movedim")
        dst = _dim_list(destination, nb, "movedim")
        if len(src) != len(dst):
            msg = (
                f"movedim: source and destination must have the same number of elements, got "
                f"{len(src)} source dims and {len(dst)} destination dims"
            )
            raise ShapeError(msg)
        order = _batch.moved_order(src, dst, nb)
        if src == dst:
            return self  # nothing moves: the collection itself, as the peer (any kind)
        return self.permute(order)

    def moveaxis(self, source: int | Sequence[int], destination: int | Sequence[int]) -> Self:
        """Same as :meth:`movedim` (numpy's name)."""
        return self.movedim(source, destination)

    def rot90(self, k: int = 1, dims: Sequence[int] = (0, 1)) -> Self:
        """Rotates the batch by 90 degrees ``k`` times in the plane of two batch dims, as
        ``torch.rot90`` (from the first dim towards the second)."""
        nb = self.batch_dims
        if nb < 2:
            msg = f"rot90 requires at least 2 batch dims, the batch size is {list(self.batch_size)}"
            raise DimError(msg)
        if len(dims) != 2:
            msg = f"rot90: dims must name two batch dims, got {list(dims)}"
            raise ShapeError(msg)
        a = _batch.normalize_dim(dims[0], nb, op="rot90")
        b = _batch.normalize_dim(dims[1], nb, op="rot90")
        if a == b:
            msg = f"rot90: the two dims must differ, got {list(dims)}"
            raise ShapeError(msg)
        sizes = list(self.batch_size)
        order = list(range(nb))
        if k % 2:
            sizes[a], sizes[b] = sizes[b], sizes[a]
            order[a], order[b] = b, a
        out = self._map_batch(PicksElements(lambda v: v.rot90(k, (a, b))), torch.Size(sizes))
        names = _names.permuted(self._dim_names, order)
        lock = self._copies_keep_lock
        return self._carry(out, names, lock=lock, inverse=lambda r: r.rot90(-k, (a, b)))

    def flip(self, dims: int | Sequence[int]) -> Self:
        """Reverses the order of the elements along batch dims ``dims`` (a copy)."""
        flat = _dim_list(dims, self.batch_dims, "flip")
        if len(set(flat)) != len(flat):
            msg = f"flip: repeated dim in {dims!r}"
            raise ShapeError(msg)
        out = self._map_batch(PicksElements(lambda v: v.flip(flat)), self.batch_size)
        lock = self._copies_keep_lock
        return self._carry(out, self._dim_names, lock=lock, inverse=lambda r: r.flip(flat))

    def fliplr(self) -> Self:
        """``flip(1)``, as ``torch.fliplr``: left and right swapped over batch dim 1.

        Raises:
            DimError: (a ``RuntimeError``, as the peer raises) with fewer than 2 batch dims.
        """
        if self.batch_dims < 2:
            msg = (
                f"fliplr requires at least 2 batch dims, the batch size is {list(self.batch_size)}"
            )
            raise DimError(msg)
        return self.flip(1)

    def flipud(self) -> Self:
        """``flip(0)``, as ``torch.flipud``: up and down swapped over batch dim 0.

        Raises:
            DimError: (a ``RuntimeError``, as the peer raises) with no batch dim.
        """
        if self.batch_dims < 1:
            msg = "flipud needs at least 1 batch dim, the batch size is []"
            raise DimError(msg)
        return self.flip(0)

    def roll(
        self,
        shifts: int | Sequence[int],
        dims: int | Sequence[int] | None = None,
        *,
        inplace: bool = False,
    ) -> Self:
        """Rolls the elements along batch dims ``dims`` by ``shifts``, as ``torch.roll``;
        without ``dims``, the batch is rolled as if flattened."""
        batch_size = self.batch_size
        nb = len(batch_size)
        if dims is None:
            if not isinstance(shifts, int):
                msg = f"roll: without dims, shifts must be one int, got {shifts!r}"
                raise ShapeError(msg)
            out = self._map_batch(PicksElements(lambda v: _roll_flat(v, shifts, nb)), batch_size)
            back: Callable[[Self], Self] = lambda r: r.roll(-shifts)  # noqa: E731
        else:
            flat = _dim_list(dims, nb, "roll")
            amounts = [shifts] if isinstance(shifts, int) else list(shifts)
            if len(amounts) != len(flat):
                msg = f"roll: {len(amounts)} shifts for {len(flat)} dims ({shifts!r}, {dims!r})"
                raise ShapeError(msg)
            out = self._map_batch(PicksElements(lambda v: v.roll(amounts, flat)), batch_size)
            back = lambda r: r.roll([-a for a in amounts], flat)  # noqa: E731
        lock = self._copies_keep_lock
        if inplace:
            return self._in_place(self._carry(out, self._dim_names, lock=lock), inplace, "roll")
        return self._carry(out, self._dim_names, lock=lock, inverse=back)


def _identity(value: Value) -> Value:
    return value


def _unsqueeze_all(value: Any, dims_ascending: list[int]) -> Any:
    for dim in dims_ascending:
        value = value.unsqueeze(dim)
    return value


def _squeeze_all(value: Value, dims_descending: list[int]) -> Value:
    for dim in dims_descending:
        value = value.squeeze(dim)
    return value


def _dim_list(dims: int | Sequence[int], ndim: int, op: str) -> tuple[int, ...]:
    flat = (dims,) if isinstance(dims, int) else tuple(dims)
    return tuple(_batch.normalize_dim(d, ndim, op=op) for d in flat)


def _roll_flat(value: Any, shift: int, nb: int) -> Any:
    """``value`` rolled by ``shift`` over its first ``nb`` dims taken as one."""
    if nb == 0:
        return value.clone()
    batch = value.shape[:nb]
    return value.flatten(0, nb - 1).roll(shift, 0).reshape(batch + value.shape[nb:])


def _check_nested(
    node: TensorCollection, names: tuple[DimName, ...], path: tuple[str, ...], given: Names
) -> None:
    nb = len(names)
    # Only the nested collections are read: a ragged lazy stack has no dense tensors.
    leaves = set(node.keys(leaves_only=True))
    for key in node._key_names():
        if key in leaves:
            continue
        value = node.get(key)
        if not isinstance(value, TensorCollection) or value._is_leaf_node:
            continue
        own = value._dim_names
        extra = (None,) * (value.batch_dims - nb) if own is None else own[nb:]
        new = names + extra
        named = [name for name in new if name is not None]
        if len(set(named)) != len(named):
            msg = (
                f"names {list(given or ())}: the nested collection at key {(*path, key)} "
                f"would name its dims {list(new)} (its own dims past the shared ones are "
                f"named {list(extra)}); some dimension names are non-unique. Give names its "
                "own dims do not use, or rename the nested collection's dims first"
            )
            raise DimNameError(msg)
        _check_nested(value, new, (*path, key), given)
