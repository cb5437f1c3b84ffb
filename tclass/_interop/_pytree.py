"""Collections as ``torch.utils._pytree`` nodes, so tree utilities and ``torch.compile``
see through them.

The children are the entries holding batched tensors (tensors and nested collections,
which are pytree nodes themselves); everything else, the keys, the batch size, the
device, the Python values and the ``UnbatchedTensor`` entries (which belong to the whole
batch: ``torch.vmap`` must not map over them), goes in the context. Unflattening trusts
the children to keep the batch size, as every pytree node must, except under a functorch
transform (``torch.vmap``): children with one dim less than when flattened (vmap's
inputs, the mapped dim gone) or one more (its outputs, the dim back) give the batch
size with one dim less or more, read from their leading dims (the peer's collections
have the batch size of the mapped tensors there too).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from types import FrameType
from typing import Any

import torch
import torch.utils._pytree as pytree
from torch._C._functorch import maybe_current_level, maybe_get_bdim, maybe_get_level

from tclass._base._tensordict_base import Value
from tclass._base.implemented._collection import TensorCollection
from tclass._core._batch import format_shape
from tclass._core._linked_list import LinkedList
from tclass._core._names import DimName, Names
from tclass._core._records import storage_of
from tclass._core._registry import on_collection_class
from tclass._core._unbatched import UnbatchedTensor
from tclass._engine._lazy._legacy import LegacyLazyView
from tclass._engine._lazy._stack import LazyStackedTensorDict
from tclass._engine._nontensor import NonTensorData, _NonTensorNode, same_value
from tclass._engine._td import TensorDict
from tclass._interop._lazy_params import (
    LazyBufferStack,
    LazyStack,
    is_lazy_stack,
    mapped_by,
    token,
)
from tclass._interop._lazy_tree import VMAP_INPUT_SIDE, register_lazy_stack, vmap_caller
from tclass._interop._vmap_outputs import VmapStep, vmap_step
from tclass.errors import DimError, UnsupportedError

__all__ = ["register_collection"]


class _Static:
    """A Python-value node carried in a pytree context, compared by value: one value
    shared by the batch (a ``NonTensorData``) by that value and its number of batch dims
    (as the collection's batch size, see ``_Batch``), values per element one by one."""

    __slots__ = ("node",)

    def __init__(self, node: _NonTensorNode) -> None:
        self.node = node

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _Static):
            return NotImplemented
        mine, theirs = self.node, other.node
        if type(mine) is not type(theirs):
            return False
        if isinstance(mine, NonTensorData):
            return len(mine.batch_size) == len(theirs.batch_size) and same_value(
                mine.data, theirs.data
            )
        return mine.batch_size == theirs.batch_size and same_value(mine.tolist(), theirs.tolist())

    def __hash__(self) -> int:
        return hash((type(self.node), len(self.node.batch_size)))

    def __repr__(self) -> str:
        return f"_Static({self.node!r})"


class _Whole:
    """An ``UnbatchedTensor`` carried in a pytree context (vmap leaves it alone),
    compared by identity."""

    __slots__ = ("tensor",)

    def __init__(self, tensor: UnbatchedTensor) -> None:
        self.tensor = tensor

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Whole) and other.tensor is self.tensor

    def __hash__(self) -> int:
        return id(self.tensor)

    def __repr__(self) -> str:
        return f"_Whole({self.tensor!r})"


class _Lazy:
    """A stack of lazy modules' parameters (``from_modules``), carried in a pytree context
    by identity; a token child of its ensemble shape stands in its place, whose mapping
    by vmap the stack notes when rebuilt (see ``_lazy_params``)."""

    __slots__ = ("stack",)

    def __init__(self, stack: LazyStack | LazyBufferStack) -> None:
        self.stack = stack

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Lazy) and other.stack is self.stack

    def __hash__(self) -> int:
        return id(self.stack)

    def __repr__(self) -> str:
        return f"_Lazy({self.stack.ensemble})"


class _Meta:
    """The dim names and lock of a flattened collection: carried in its context, but no
    part of its structure (trees that differ only there, a locked primal and its
    tangent, compare equal)."""

    __slots__ = ("locked", "names")

    def __init__(self, names: Names, locked: bool) -> None:
        self.names = names
        self.locked = locked

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Meta)

    def __hash__(self) -> int:
        return 0

    def __repr__(self) -> str:
        return f"_Meta({self.names!r}, locked={self.locked})"


class _Batch:
    """The batch size of a flattened collection and the dims of its first child (a
    tensor's, a collection's batch dims; -1 for anything else). Only the number of batch
    dims is part of its structure, as in the peer's: collections of one key set and
    batch sizes ``[2]`` and ``[3]`` are one structure to ``tree_map(fn, a, b)`` (merging
    batches: ``tree_map(lambda *x: torch.cat(x), *batches)``), ``[2]`` and ``[2, 3]`` two."""

    __slots__ = ("rank", "size")

    def __init__(self, size: torch.Size, rank: int) -> None:
        self.size = size
        self.rank = rank

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Batch) and len(other.size) == len(self.size)

    def __hash__(self) -> int:
        return len(self.size)

    def __repr__(self) -> str:
        return f"_Batch({list(self.size)}, rank={self.rank})"


Context = tuple[
    tuple[str, ...],
    tuple[tuple[str, "_Static | _Whole | _Lazy"], ...],
    _Batch,
    "torch.device | None",
    "_Meta",
]


def _rank(child: Any) -> int:
    """A child's dims (a collection's batch dims); -1 for anything else (tree utilities
    may rebuild a node from other leaves)."""
    if isinstance(child, TensorCollection):
        return len(child.batch_size)
    return child.dim() if isinstance(child, torch.Tensor) else -1


def _flatten(collection: TensorCollection) -> tuple[list[Value], Context]:
    keys: list[str] = []
    children: list[Value] = []
    statics: list[tuple[str, _Static | _Whole | _Lazy]] = []
    for key, value in collection._items():
        if isinstance(value, _NonTensorNode):
            statics.append((key, _Static(value)))
        elif value.__class__ is UnbatchedTensor:
            statics.append((key, _Whole(value)))
        elif is_lazy_stack(value):
            statics.append((key, _Lazy(value)))  # type: ignore[arg-type]
            keys.append(key)
            children.append(token(value))  # type: ignore[arg-type]
        else:
            keys.append(key)
            children.append(value)
    rank = _rank(children[0]) if children else -1
    meta = _Meta(collection._dim_names, collection.is_locked)
    batch = _Batch(collection.batch_size, rank)
    return children, (tuple(keys), tuple(statics), batch, collection.device, meta)


def _lead(child: Any) -> torch.Size | None:
    """A child's leading dims: a collection's batch size, a tensor's shape (None for
    anything else)."""
    if isinstance(child, TensorCollection):
        return child.batch_size
    return child.shape if isinstance(child, torch.Tensor) else None


def _batch_of(children: list[Any], batch: torch.Size, rank: int) -> torch.Size:
    """The batch size of a node rebuilt from ``children``, flattened with ``batch`` from a
    first child of ``rank`` dims: under vmap, one dim less (its inputs) or more (its
    outputs), read from the first child. Otherwise ``batch`` if every child still starts
    with it; else the dims all children share in front, at most one more than ``batch``
    if they grew (``torch.func.jacrev``/``jacfwd`` rebuild nodes from basis vectors of one
    leading dim more, and their Jacobians from children of the input's or output's
    shape), at most ``batch``'s count if not (vmap's ``chunk_size`` concatenates the
    chunks' children)."""
    first = children[0]
    now = _rank(first)
    if now < 0 or rank < 0:
        return batch
    grown = now - rank
    mapped = (grown == -1 and bool(batch)) or (grown == 1 and _vmap_output() is not None)
    if mapped and maybe_current_level() is not None:
        if grown == 1:
            caller = _vmap_output()
            _check_out_dim(now, batch, caller.f_locals.get("out_dims") if caller else None)
        return torch.Size(_lead(first)[: len(batch) + grown])  # type: ignore[index]
    leads = [lead for lead in map(_lead, children) if lead is not None]
    if all(lead[: len(batch)] == batch for lead in leads):
        return batch
    shared = 0
    for dim in range(min(len(lead) for lead in leads)):
        if shared == len(batch) + (grown > 0) or any(lead[dim] != leads[0][dim] for lead in leads):
            break
        shared += 1
    return torch.Size(leads[0][:shared])


def _compiled_batch(children: list[Any], context: Context) -> torch.Size:
    """``_batch_of`` under ``torch.compile``, where vmap's frames and functorch's levels
    cannot be read: vmap's step noted under way tells its inputs (children of one dim
    less: the batch size without the mapped dim, or ``batch`` where every ``in_dims``
    maps a dim past the batch dims, as the peer keeps it) from its outputs (one dim
    more: the mapped dim back, read from the first child); anything else keeps
    ``batch``, as every pytree node must. Its inputs' ``in_dims`` are checked as
    outside ``torch.compile`` (see :func:`_past_batch`)."""
    batch, rank = context[2].size, context[2].rank
    step, now = vmap_step(), _rank(children[0])
    if step is None or now < 0 or rank < 0 or now - rank != (-1 if step.inputs else 1):
        return batch
    if step.inputs:
        dims = _in_dims_of(step, context)
        if dims is None:  # (not found in vmap's tree: every leaf's in_dims)
            found = [dim for dim in step.dims if dim is not None]
            past = bool(found) and min(found) >= len(batch)
        else:
            mapped = _mapped_dims(context[0], children, dims)
            negative = any(dim is not None and dim < 0 for dim in dims)
            past = bool(batch) and _past_batch(mapped, batch, negative)
        if not batch or past:
            return batch
        return torch.Size(_lead(children[0])[: len(batch) - 1])  # type: ignore[index]
    _check_out_dim(now, batch, step.dims)
    return torch.Size(_lead(children[0])[: len(batch) + 1])  # type: ignore[index]


def _static_node(node: _NonTensorNode, batch: torch.Size) -> _NonTensorNode:
    """A Python-value node of a collection rebuilt with another ``batch`` (what vmap
    leaves of it, or gives back): one value for the whole batch (a ``NonTensorData``, or
    a stack holding one value) takes it; other stacks are kept as they are."""
    if node.batch_size == batch:
        return node
    if isinstance(node, NonTensorData):
        return node._rebatched(batch)
    values = node._flat()
    if values and all(same_value(value, values[0]) for value in values[1:]):
        return NonTensorData._make(values[0], batch, node.device)
    return node


def _rebuilt(
    children: Iterable[Any], context: Context, cls: type[TensorDict] = TensorDict
) -> TensorDict:
    keys, statics, shape, device, meta = context
    flattened, rank = shape.size, shape.rank
    entries: dict[str, Value] = dict(zip(keys, children))
    batch = flattened
    first = next(iter(entries.values()), None)
    if entries and torch.compiler.is_compiling():
        batch = _compiled_batch(list(entries.values()), context)
    elif entries:
        past = False
        if len(flattened) and maybe_current_level() is not None:
            past = _check_mapped(entries, context)
        if not past:  # a dim past the batch dims leaves them as they are
            batch = _batch_of(list(entries.values()), batch, rank)
    elif not entries:
        batch = _empty_output_batch(batch, context)
    unbatched = False
    for key, static in statics:
        if isinstance(static, _Whole):
            entries[key] = static.tensor._with_batch_size(batch)
            unbatched = True
        elif isinstance(static, _Lazy):
            entries[key] = mapped_by(static.stack, entries[key])
        else:
            entries[key] = _static_node(static.node, batch)
    if len(batch) == len(flattened) - 1:  # vmap's input: mapped in each batched entry
        for value in entries.values():
            if isinstance(value, TensorCollection) and not pytree.tree_leaves(value):
                _unmapped(value, len(flattened), batch)
    td = cls._new_unchecked(entries, batch, device)
    if unbatched:
        td._mark_unbatched()
    grown = len(batch) - len(flattened)  # under vmap: -1 inside, +1 for its outputs
    if meta.names is not None:
        td._assign_names(_names_after(meta.names, grown, first))
    if meta.locked and grown:
        td.lock_()  # under vmap, as outside (the peer's vmap too)
    return td


def _unmapped(collection: TensorCollection, mapped: int, batch: torch.Size) -> None:
    """Gives a nested collection without batched entries (an empty one, or one of Python
    values: vmap had no tensor to map in it) its parent's ``batch`` in place of the
    ``mapped`` leading dims it still has, and so for its own nested ones and its Python
    values, innermost first, as vmap's other entries lost a dim."""
    storage = storage_of(collection)
    if isinstance(storage, TensorDict):
        for key, value in list(storage._items()):
            if isinstance(value, _NonTensorNode):
                if len(value.batch_size) >= mapped:
                    size = torch.Size((*batch, *value.batch_size[mapped:]))
                    storage._store_entry(key, _static_node(value, size))
            elif isinstance(value, TensorCollection):
                _unmapped(value, mapped, batch)
    if len(collection.batch_size) >= mapped:
        collection.batch_size = torch.Size((*batch, *collection.batch_size[mapped:]))  # type: ignore[misc]


def _check_mapped(entries: dict[str, Value], context: Context) -> bool:
    """Whether vmap mapped one dim past the batch dims in every tensor of a collection
    flattened with ``context`` (see :func:`_past_batch`), read off the tensors batched at
    this level, vmap's inputs.

    Raises:
        DimError: naming the entry and the dim mapped, and the ``in_dims`` to give.
    """
    aside = {key for key, static in context[1] if isinstance(static, _Lazy)}
    level = maybe_current_level()
    mapped: dict[int, str] = {}
    for key, value in entries.items():
        if isinstance(value, torch.Tensor) and key not in aside and maybe_get_level(value) == level:
            mapped.setdefault(maybe_get_bdim(value), key)
    step = vmap_step()
    noted = step is not None and step.inputs and step.given is not None
    dims = _in_dims_of(step, context) if step is not None and noted else None
    if dims is None:  # another transform, a node not in vmap's tree
        return _past_batch(mapped, context[2].size, _negative_in_dims())
    return _past_batch(mapped, context[2].size, any(dim is not None and dim < 0 for dim in dims))


def _past_batch(mapped: dict[int, str], batch: torch.Size, negative: bool = False) -> bool:
    """Whether vmap maps a feature dim of a collection of size ``batch`` (one dim past
    its batch dims in every tensor, as the peer maps it: the batch size stays), given the
    dims it maps (``mapped``: each with the first entry mapped there); ``negative``: the
    ``in_dims`` were negative. Raises unless it maps that or one batch dim: ``in_dims``
    apply to each tensor, so a negative one (counted from each tensor's last dim) would
    map different dims in different entries, or a feature dim where the peer maps a
    batch dim.

    Raises:
        DimError: naming the entry and the dim mapped, and the ``in_dims`` to give.
    """
    if len(mapped) <= 1 and all(dim < len(batch) for dim in mapped):
        return False
    if len(mapped) == 1 and not negative:
        return True  # one feature dim of every tensor, as the peer maps it
    dims = ", ".join([f"dim {dim} of {key!r}" for dim, key in mapped.items()])
    msg = (
        f"torch.vmap mapped {dims} of a collection of batch size {format_shape(batch)}: "
        "in_dims must name one of its batch dims, counted from the first "
        f"(0..{len(batch) - 1}; a negative in_dims counts from each tensor's last dim); "
        "give that dim as a non-negative number"
    )
    raise DimError(msg)


def _negative_in_dims() -> bool:
    """Whether vmap's ``in_dims`` being applied hold a negative dim (or are not known)."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None and frame.f_code.co_name != "vmap_impl":
        frame = frame.f_back
    if frame is None or "in_dims" not in frame.f_locals:
        return True
    dims = pytree.tree_leaves(frame.f_locals["in_dims"])
    return any(isinstance(dim, int) and dim < 0 for dim in dims)


def _mapped_dims(
    keys: tuple[str, ...], children: list[Any], dims: list[int | None]
) -> dict[int, str]:
    """The dims vmap maps in the tensors among ``children`` (of ``keys``; batched ones,
    a dim less) by their ``in_dims`` ``dims``, counted from the first, each with the first
    entry mapped there: what functorch's levels tell outside ``torch.compile``."""
    mapped: dict[int, str] = {}
    for key, child, dim in zip(keys, children, dims):
        if dim is not None and isinstance(child, torch.Tensor):
            mapped.setdefault(dim % (child.dim() + 1), key)
    return mapped


def _in_dims_of(step: VmapStep, context: Context) -> list[int | None] | None:
    """The ``in_dims`` given to vmap for each child of the collection flattened with
    ``context`` (negative ones too; ``None`` for a nested collection, whose own are its
    leaves'), found in the tree of its inputs noted with its ``step``; None where the
    collection is not in it. Where the ``in_dims`` as given are not known (the peer,
    imported after tclass, replaced the step that notes them), torch's non-negative
    ones."""
    if step.spec is None:
        return None
    flat = step.dims if step.given is None else step.given
    start, pending = 0, [step.spec]
    while pending:
        node = pending.pop()
        if node.is_leaf():
            start += 1
            continue
        children = node.children()
        if node.context is context:
            dims: list[int | None] = []
            for child in children:
                dims.append(flat[start] if child.is_leaf() else None)
                start += child.num_leaves
            return dims
        pending += reversed(children)
    return None


def _names_after(names: tuple[DimName, ...], grown: int, first: Any) -> Names:
    """The dim names of a collection rebuilt with ``grown`` batch dims more: without the
    dim vmap maps (the first child's), or with an unnamed dim where vmap's ``out_dims``
    puts it back; None where that dim is not known."""
    if grown == 0:
        return names
    step = vmap_step() if torch.compiler.is_compiling() else None
    if grown == -1:
        if step is not None:  # the one in_dims of every leaf, if one
            dims = set(step.dims) - {None}
            mapped = dims.pop() if len(dims) == 1 else -1
        else:
            mapped = maybe_get_bdim(first) if isinstance(first, torch.Tensor) else -1
        return names[:mapped] + names[mapped + 1 :] if mapped >= 0 else None
    if step is not None:
        out_dims = step.dims
    else:
        caller = vmap_caller()
        out_dims = caller.f_locals.get("out_dims") if caller is not None else None
    if grown != 1 or not isinstance(out_dims, int):
        return None
    at = out_dims % (len(names) + 1)
    return (*names[:at], None, *names[at:])


def _vmap_output() -> FrameType | None:
    """vmap's ``_unwrap_batched`` when it is rebuilding its outputs (not another
    transform rebuilding a node under vmap, as ``jacrev`` its Jacobians), else None."""
    caller = vmap_caller()
    return caller if caller is not None and caller.f_code.co_name == "_unwrap_batched" else None


def _check_out_dim(rank: int, batch: torch.Size, out_dims: Any) -> None:
    """Raises unless vmap's int ``out_dims`` put the mapped dim among the batch dims of
    a collection it returns (``batch`` inside, its first entry of ``rank`` dims now): vmap
    applies it to each tensor, so a dim past the batch dims (``-1`` of an entry with
    feature dims) would leave a feature dim in the batch size.

    Raises:
        DimError: naming the dim and the batch size, as the peer refuses it.
    """
    if not isinstance(out_dims, int) or isinstance(out_dims, bool):
        return
    at = out_dims if out_dims >= 0 else out_dims + rank
    if at <= len(batch):
        return
    msg = (
        f"torch.vmap's out_dims={out_dims} puts the mapped dim at dim {at} of a returned "
        f"collection's entries, past its batch size {format_shape(batch)}: vmap applies "
        "out_dims to each tensor; give a non-negative out_dims of at most "
        f"{len(batch)} (the number of batch dims)"
    )
    raise DimError(msg)


def _empty_output_batch(batch: torch.Size, context: Context) -> torch.Size:
    """The batch size of a collection without batched entries that vmap gives back:
    ``batch`` with vmap's size inserted at its entry of ``out_dims`` (``context`` is its
    node's), as the peer's, which gives each collection its entry; no child carries the
    mapped dim to read it from."""
    if torch.compiler.is_compiling():  # its step noted, the tree of outputs not known
        step = vmap_step()
        if step is None or step.inputs:
            return batch
        return _inserted(batch, step.size, step.dims if isinstance(step.dims, int) else 0)
    caller = _vmap_output()
    if caller is None:
        return batch
    size, out_dims = caller.f_locals.get("batch_size"), caller.f_locals.get("out_dims")
    if not isinstance(size, int):
        return batch
    spec = caller.f_locals.get("output_spec")
    if not isinstance(out_dims, int) and isinstance(spec, pytree.TreeSpec):
        out_dims = _out_dim_of(out_dims, spec, context)
    return _inserted(batch, size, out_dims if isinstance(out_dims, int) else 0)


def _inserted(batch: torch.Size, size: int, at: int) -> torch.Size:
    """``batch`` with vmap's ``size`` inserted at its ``out_dims`` ``at``."""
    at = min(max(at if at >= 0 else at + len(batch) + 1, 0), len(batch))
    return torch.Size((*batch[:at], size, *batch[at:]))


def _out_dim_of(out_dims: Any, spec: pytree.TreeSpec, context: Context) -> Any:
    """The entry of vmap's ``out_dims`` (a prefix of the outputs' tree ``spec``) that
    covers the node whose context is ``context`` (an int, or None where not found)."""
    pending = [(out_dims, spec)]
    while pending:
        dims, node = pending.pop()
        if node.context is context:
            return dims if isinstance(dims, int) else None
        if node.is_leaf():
            continue
        children = node.children()
        if dims is None or isinstance(dims, int):  # one entry for the whole subtree
            pending += [(dims, child) for child in children]
            continue
        if isinstance(dims, dict) and node.type is dict and set(dims) == set(node.context):
            parts: list[Any] = [dims[key] for key in node.context]
        elif isinstance(dims, (list, tuple)) and len(dims) == len(children):
            parts = list(dims)
        else:
            continue
        pending += list(zip(parts, children))
    return None


def _vmap_input() -> bool:
    """Whether ``torch.vmap`` is flattening its inputs (the caller is a flatten)."""
    caller = vmap_caller()
    return caller is not None and caller.f_code.co_name in VMAP_INPUT_SIDE


# The context of a record over a lazy stack: its one child is the stack (members, never
# stacked: stacking inside a transform would give tensors of the transform's level).
_OVER_STACK = "a record over a lazy stack"


def register_collection(
    cls: type, wrap: Callable[[Any], Any] | None = None, *, no_vmap: str | None = None
) -> None:
    """Registers ``cls`` as a pytree node; ``wrap`` turns the rebuilt TensorDict into an
    instance of ``cls`` (a tensorclass), or ``None`` for TensorDict itself and its
    subclasses (``TypedTensorDict``...), rebuilt as ``cls``. ``no_vmap``: the message of
    the ``UnsupportedError`` (a ``RuntimeError``) raised when ``torch.vmap`` is given one
    as an input (an HDF5 file, as the peer refuses it); other tree code reads it."""
    if cls in pytree.SUPPORTED_NODES:
        return  # a class rebuilt with other options keeps its registration
    as_cls = cls if wrap is None and issubclass(cls, TensorDict) else TensorDict

    def flatten(collection: TensorCollection) -> tuple[list[Any], Any]:
        if no_vmap is not None and _vmap_input():
            raise UnsupportedError(no_vmap)
        storage = storage_of(collection) if wrap is not None else collection
        if isinstance(storage, LazyStackedTensorDict):
            return [storage], _OVER_STACK
        return _flatten(collection)

    def unflatten(children: Iterable[Any], context: Any) -> Any:
        if context == _OVER_STACK:
            (storage,) = children
            return wrap(storage) if isinstance(storage, TensorCollection) and wrap else storage
        td = _rebuilt(children, context, as_cls)
        return td if wrap is None else wrap(td)

    def flatten_with_keys(collection: TensorCollection) -> tuple[list[tuple[Any, Value]], Any]:
        children, context = flatten(collection)
        if context == _OVER_STACK:
            return [(pytree.GetAttrKey("_tensordict"), children[0])], context
        key_kind = pytree.MappingKey if wrap is None else pytree.GetAttrKey
        return [(key_kind(key), child) for key, child in zip(context[0], children)], context

    pytree.register_pytree_node(
        cls,
        flatten,
        unflatten,
        serialized_type_name=f"{cls.__module__}.{cls.__qualname__}",
        flatten_with_keys_fn=flatten_with_keys,
    )


register_collection(TensorDict)
on_collection_class(register_collection)  # its subclasses: TypedTensorDict, a user's own
# The lists of a NonTensorStack's values (td["tags"]) are lists to tree utilities too
# (tree_map reaches their items), rebuilt as plain lists, as the peer's.
pytree.register_pytree_node(
    LinkedList,
    pytree._list_flatten,
    pytree._list_unflatten,
    serialized_type_name="tclass.utils.LinkedList",
    flatten_with_keys_fn=pytree._list_flatten_with_keys,
)
register_collection(LegacyLazyView)  # flattened as it reads, rebuilt as a TensorDict


register_lazy_stack()  # its members, or under torch.vmap children aligned on its batch dims
