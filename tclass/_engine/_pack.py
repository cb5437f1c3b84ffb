"""``pack``: every tensor of a collection flattened after the batch dims and joined into one
tensor of features, and :class:`PackLayout`, which records where each leaf went so that
:meth:`PackLayout.unpack` rebuilds the collection (its records included) from the packed
tensor, or from rows of it.

The columns follow the sorted leaf keys (``keys(True, True, sort=True)``), so they depend
on the set of keys only; a layout given to ``pack`` fixes them instead.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Any

import torch

from tclass._base._provided import ENGINE
from tclass._base.implemented._collection import TensorCollection
from tclass._core._batch import format_shape, normalize_dim
from tclass._core._records import is_record, is_record_class
from tclass._engine._td import TensorDict
from tclass.errors import EntryTypeError, KeyNotFoundError, ShapeError

__all__ = ["PackLayout", "pack"]

Key = str | tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class PackLayout:
    """Where :meth:`~tclass.TensorDict.pack` put each leaf of a collection, and how to
    rebuild it: frozen, hashable and compared by value (a module may cache it).

    Attributes:
        keys: the leaf keys in column order.
        shapes: each leaf's feature shape (its shape after the root's batch dims).
        dim: where the packed dim is in the packed tensor, counted from the end.
        nested: ``(key, batch_shape, cls)`` per nested collection: its batch dims after
            the root's, and its tensorclass (``None`` for a TensorDict).
        device: the packed collection's device.
        cls: the packed collection's tensorclass, or ``None``.
        offsets: the first column of each leaf.
        numel: the number of columns.
    """

    keys: tuple[Key, ...]
    shapes: tuple[torch.Size, ...]
    dim: int = -1
    nested: tuple[tuple[Key, torch.Size, type | None], ...] = ()
    device: torch.device | None = None
    cls: type | None = None
    offsets: tuple[int, ...] = dataclasses.field(init=False, repr=True, compare=False)
    numel: int = dataclasses.field(init=False, repr=True, compare=False)

    def __post_init__(self) -> None:
        shapes = tuple(torch.Size(shape) for shape in self.shapes)
        nested = tuple((key, torch.Size(size), cls) for key, size, cls in self.nested)
        if len(shapes) != len(self.keys):
            msg = f"PackLayout: {len(self.keys)} keys but {len(shapes)} shapes"
            raise ShapeError(msg)
        sizes = [shape.numel() for shape in shapes]
        object.__setattr__(self, "shapes", shapes)
        object.__setattr__(self, "nested", nested)
        object.__setattr__(self, "offsets", tuple(itertools.accumulate([0, *sizes[:-1]])))
        object.__setattr__(self, "numel", sum(sizes))

    def unpack(self, flat: torch.Tensor) -> Any:
        """The collection ``flat`` packs (views of it where the reshapes allow): its batch
        dims are ``flat``'s other dims, so ``flat[rows]`` gives those rows, and extra
        leading dims add batch dims.

        Raises:
            ShapeError: ``flat`` has another number of columns along :attr:`dim`.
        """
        if flat.ndim < -self.dim:
            msg = f"unpack: a tensor of {flat.ndim} dim(s) has no dim {self.dim}"
            raise ShapeError(msg)
        d = flat.ndim + self.dim
        if flat.shape[d] != self.numel:
            msg = (
                f"unpack: the layout has {self.numel} columns along dim {self.dim}, the "
                f"tensor of shape {format_shape(flat.shape)} has {flat.shape[d]}"
            )
            raise ShapeError(msg)
        batch = flat.shape[:d] + flat.shape[d + 1 :]
        columns = flat.movedim(d, -1)
        out = TensorDict(batch_size=batch, device=self.device)
        for key, size, _ in sorted(self.nested, key=lambda item: len(_path(item[0]))):
            out.set(key, TensorDict(batch_size=batch + size, device=self.device))
        for key, shape, start in zip(self.keys, self.shapes, self.offsets):
            piece = columns.narrow(-1, start, shape.numel())
            out.set(key, piece.reshape(batch + shape))
        for key, _, cls in sorted(self.nested, key=lambda item: -len(_path(item[0]))):
            if cls is not None:
                out.set(key, cls._rebuild(out.get(key)))  # type: ignore[attr-defined]
        return self.cls._rebuild(out) if self.cls is not None else out  # type: ignore[attr-defined]


def pack(node: Any, dim: int, layout: PackLayout | None) -> tuple[torch.Tensor, PackLayout]:
    """``node.pack(dim, layout=)``: see ``TensorDictBase.pack``."""
    nb = node.batch_dims
    position = normalize_dim(dim, nb, op="pack", inclusive=True)
    stored = position - (nb + 1)
    leaves = dict(_leaves(node))
    if layout is None:
        keys = tuple(sorted(leaves, key=_path))
        batch = node.batch_size
        layout = PackLayout(
            keys=keys,
            shapes=tuple(leaves[key].shape[nb:] for key in keys),
            dim=stored,
            nested=tuple(_nested(node, (), nb)),
            device=node.device,
            cls=type(node) if is_record(node) else None,
        )
    else:
        batch = node.batch_size
        _check_layout(layout, leaves, nb, stored)
    parts = [leaves[key] for key in layout.keys]
    _check_uniform(layout.keys, parts)
    if not parts:  # no columns: an empty float tensor of the batch size, as the peer's
        empty = torch.empty(batch + (0,), device=node.device)
        return empty.movedim(-1, position).contiguous(), layout
    # each leaf's columns counted from its feature shape (a -1 is ambiguous over no rows)
    columns = [batch + (shape.numel(),) for shape in layout.shapes]
    flat = torch.cat([part.reshape(size) for part, size in zip(parts, columns)], dim=-1)
    if position != nb or not flat.is_contiguous():
        flat = flat.movedim(-1, position).contiguous()
    return flat, layout


def _path(key: Key) -> tuple[str, ...]:
    return (key,) if isinstance(key, str) else key


def _key(path: tuple[str, ...]) -> Key:
    return path[0] if len(path) == 1 else path


def _leaves(node: TensorCollection) -> list[tuple[Key, torch.Tensor]]:
    out: list[tuple[Key, torch.Tensor]] = []
    for key, value in node.items(include_nested=True):
        if isinstance(value, torch.Tensor):
            out.append((key, value))
        elif value._is_value_node:
            msg = (
                f"pack: {key!r} holds Python values, which cannot be packed; drop them "
                "first (filter_non_tensor_data())"
            )
            raise EntryTypeError(msg)
    return out


def _nested(
    node: TensorCollection, prefix: tuple[str, ...], nb: int
) -> list[tuple[Key, torch.Size, type | None]]:
    out: list[tuple[Key, torch.Size, type | None]] = []
    for key in sorted(node._key_names()):
        child = node._child(key)
        if child is None or child._is_leaf_node:
            continue
        path = prefix + (key,)
        cls = type(child) if is_record_class(type(child)) else None
        out.append((_key(path), child.batch_size[nb:], cls))
        out.extend(_nested(child, path, nb))
    return out


def _check_layout(
    layout: PackLayout, leaves: dict[Key, torch.Tensor], nb: int, stored: int
) -> None:
    if set(layout.keys) != set(leaves):
        msg = (
            f"pack: the leaves of the collection ({sorted(leaves, key=_path)}) differ from "
            f"the keys of the layout ({list(layout.keys)})"
        )
        raise KeyNotFoundError(msg)
    if layout.dim != stored:
        msg = f"pack: the layout packs along dim {layout.dim}, not along {stored}"
        raise ShapeError(msg)
    for key, shape in zip(layout.keys, layout.shapes):
        if leaves[key].shape[nb:] != shape:
            msg = (
                f"pack: the leaf {key!r} has feature shape {format_shape(leaves[key].shape[nb:])}, "
                f"the layout {format_shape(shape)}"
            )
            raise ShapeError(msg)


def _check_uniform(keys: tuple[Key, ...], parts: list[torch.Tensor]) -> None:
    for key, part in zip(keys[1:], parts[1:]):
        first = parts[0]
        if part.dtype != first.dtype:
            msg = (
                f"pack: the leaves have different dtypes ({first.dtype} at {keys[0]!r}, "
                f"{part.dtype} at {key!r}); cast them first (float(), ...)"
            )
            raise EntryTypeError(msg)
        if part.device != first.device:
            msg = (
                f"pack: the leaves are on different devices ({first.device} at "
                f"{keys[0]!r}, {part.device} at {key!r}); move them first (to(device))"
            )
            raise EntryTypeError(msg)


# --- implementations of the base layer's methods (``_base/_provided.py``) ---------------

ENGINE.pack = pack
