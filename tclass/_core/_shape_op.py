"""One shape operation over the leading batch dims, with its inverse: what a view of the
peer's legacy lazy mode (``set_lazy_legacy(True)``) applies to the entries it reads and
undoes on the values it writes.

``unsqueeze``, ``squeeze``, ``permute`` (and ``transpose``, a permute) and ``view``
each act on the first ``ndim`` dims of a value (the batch dims of the collection they were
applied to) and leave the dims after them alone, so one operation applies alike to a
tensor, a nested collection with more batch dims, or a Python-value node. The view class
lives in the engine (``tclass._engine._lazy._legacy``), which registers its constructor
here so the base layer's shape methods can return views in that mode.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import torch

from tclass._core import _names
from tclass._core._memmap import MemoryMappedTensor
from tclass._core._names import Names
from tclass._core._options import OPTIONS
from tclass._core._unbatched import UnbatchedTensor

__all__ = ["KeepsDims", "PicksElements", "ShapeOp", "legacy_view", "register_legacy_view"]


class _TaggedOp:
    """A function of one value whose class tells a stack of Python values how the
    structural op it stands for moves the elements (see its subclasses)."""

    __slots__ = ("fn",)

    def __init__(self, fn: Callable[[Any], Any]) -> None:
        self.fn = fn

    def __call__(self, value: Any) -> Any:
        return self.fn(value)


class PicksElements(_TaggedOp):
    """A structural op that picks each element of the batch anew (``flip``, ``roll``,
    ``rot90``, ``tile``, ``gather``), as a function of one value. A stack of Python values
    then holds each element as a member of its own, as the peer's (which picks them by
    advanced indexing), even where the op keeps the elements in order (over dims of size
    1); a reshape, a view or a ``repeat`` keeps the stack's members."""

    __slots__ = ()


class KeepsDims(_TaggedOp):
    """A structural op that keeps every dim in its place and changes lengths only
    (``repeat_interleave``), as a function of one value. A stack of Python values keeps
    its stack dims through it, as the peer's stack, which repeats each member's elements
    (or, along its stack dim, the members)."""

    __slots__ = ()


class ShapeOp(NamedTuple):
    """``kind`` applied to the first ``ndim`` dims: ``dims`` are the positions of the
    new size-1 dims in the result (``unsqueeze``), the size-1 dims removed (``squeeze``),
    the order of the dims (``permute``), or the new sizes (``view``, from ``before``)."""

    kind: str
    dims: tuple[int, ...]
    ndim: int
    before: tuple[int, ...] = ()

    def out_size(self, size: torch.Size) -> torch.Size:
        """The shape of ``size`` (at least ``ndim`` dims) after the operation."""
        kind, dims, ndim = self.kind, self.dims, self.ndim
        if kind == "unsqueeze":
            sizes = list(size)
            for dim in dims:
                sizes.insert(dim, 1)
            return torch.Size(sizes)
        if kind == "squeeze":
            return torch.Size(s for i, s in enumerate(size) if i not in dims)
        if kind == "permute":
            return torch.Size([size[d] for d in dims]) + size[ndim:]
        return torch.Size(dims) + size[ndim:]

    def inverse(self) -> ShapeOp:
        """The operation that undoes this one."""
        kind, dims, ndim = self.kind, self.dims, self.ndim
        if kind == "unsqueeze":
            return ShapeOp("squeeze", dims, ndim + len(dims))
        if kind == "squeeze":
            return ShapeOp("unsqueeze", dims, ndim - len(dims))
        if kind == "permute":
            return ShapeOp("permute", tuple(dims.index(d) for d in range(ndim)), ndim)
        return ShapeOp("view", self.before, len(dims), dims)

    def names(self, names: Names) -> Names:
        """The names of the dims after the operation (``view`` unnames them all)."""
        if names is None or self.kind == "view":
            return None
        if self.kind == "unsqueeze":
            for dim in self.dims:
                names = _names.inserted(names, dim)
            return names
        if self.kind == "squeeze":
            return _names.removed(names, self.dims)
        return _names.permuted(names, self.dims + tuple(range(self.ndim, len(names))))

    def apply(self, value: Any) -> Any:
        """``value`` (a tensor, a collection, a record, a Python-value node) after the
        operation, as the plain shape methods give it (never a legacy view); a
        memory-mapped tensor stays one (a view of its file)."""
        if value.__class__ is UnbatchedTensor:
            return value._with_batch_size(self.out_size(value.batch_size))
        if isinstance(value, MemoryMappedTensor):  # a view of the same file: still mapped
            return value._wrap(self._applied(value.as_subclass(torch.Tensor)))
        previous = OPTIONS.lazy_legacy
        OPTIONS.lazy_legacy = False
        try:
            return self._applied(value)
        finally:
            OPTIONS.lazy_legacy = previous

    def _applied(self, value: Any) -> Any:
        kind, dims, ndim = self.kind, self.dims, self.ndim
        if kind == "unsqueeze":
            for dim in dims:
                value = value.unsqueeze(dim)
            return value
        if kind == "squeeze":
            for dim in reversed(dims):
                value = value.squeeze(dim)
            return value
        if kind == "permute":
            return value.permute(dims + tuple(range(ndim, len(value.shape))))
        return value.view(dims + tuple(value.shape[ndim:]))

    def __str__(self) -> str:
        if self.kind == "view":
            return f"view(size={list(self.dims)})"
        if self.kind == "permute":
            return f"permute(dims={list(self.dims)})"
        dims = self.dims[0] if len(self.dims) == 1 else list(self.dims)
        return f"{self.kind}(dim={dims})"


# The engine's view constructor: (collection, op, undo) -> a legacy view of the collection,
# or, with ``undo``, the collection ``op`` undoes when it is such a view.
_FACTORY: list[Callable[[Any, ShapeOp, bool], Any]] = []


def register_legacy_view(factory: Callable[[Any, ShapeOp, bool], Any]) -> None:
    """Installs the constructor of legacy views (called once, by the engine)."""
    _FACTORY[:] = [factory]


def legacy_view(collection: Any, op: ShapeOp, undo: bool = True) -> Any:
    """The legacy lazy view ``op`` gives of ``collection``: reads through it give the
    entries reshaped, writes go to ``collection`` (``undo``: ``collection`` itself when it
    is a view that ``op`` undoes, as ``td.unsqueeze(0).squeeze(0) is td``)."""
    return _FACTORY[0](collection, op, undo)
