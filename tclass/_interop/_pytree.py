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

from collections.abc import Callable, Iterable
from typing import Any

import torch
import torch.utils._pytree as pytree
from torch._C._functorch import maybe_current_level

from tclass._base._tensordict_base import Value
from tclass._base.implemented._collection import TensorCollection
from tclass._core._unbatched import UnbatchedTensor
from tclass._engine._lazy._legacy import LegacyLazyView
from tclass._engine._lazy._stack import LazyStackedTensorDict
from tclass._engine._nontensor import _NonTensorNode, same_value
from tclass._engine._td import TensorDict
from tclass._interop._lazy_params import (
    LazyBufferStack,
    LazyStack,
    is_lazy_stack,
    mapped_by,
    token,
)

__all__ = ["register_collection"]


class _Static:
    """A Python-value node carried in a pytree context, compared by value."""

    __slots__ = ("node",)

    def __init__(self, node: _NonTensorNode) -> None:
        self.node = node

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _Static):
            return NotImplemented
        mine, theirs = self.node, other.node
        return (
            type(mine) is type(theirs)
            and mine.batch_size == theirs.batch_size
            and same_value(mine.tolist(), theirs.tolist())
        )

    def __hash__(self) -> int:
        return hash((type(self.node), self.node.batch_size))

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


Context = tuple[
    tuple[str, ...],
    tuple[tuple[str, "_Static | _Whole | _Lazy"], ...],
    torch.Size,
    "torch.device | None",
    int,  # the dims of the first child (a tensor's, a collection's batch dims), or -1
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
    return children, (tuple(keys), tuple(statics), collection.batch_size, collection.device, rank)


def _rebuilt(children: Iterable[Any], context: Context) -> TensorDict:
    keys, statics, batch, device, rank = context
    entries: dict[str, Value] = dict(zip(keys, children))
    if entries and not torch.compiler.is_compiling() and maybe_current_level() is not None:
        first = next(iter(entries.values()))
        now = _rank(first)
        grown = now - rank  # under vmap: -1 for its inputs, +1 for its outputs
        if (grown == 1 or (grown == -1 and batch)) and rank >= 0 and now >= 0:
            lead = first.batch_size if isinstance(first, TensorCollection) else first.shape
            batch = torch.Size(lead[: len(batch) + grown])
    unbatched = False
    for key, static in statics:
        if isinstance(static, _Whole):
            entries[key] = static.tensor._with_batch_size(batch)
            unbatched = True
        elif isinstance(static, _Lazy):
            entries[key] = mapped_by(static.stack, entries[key])
        else:
            entries[key] = static.node
    td = TensorDict._new_unchecked(entries, batch, device)
    if unbatched:
        td._mark_unbatched()
    return td


def register_collection(cls: type, wrap: Callable[[TensorDict], Any] | None = None) -> None:
    """Registers ``cls`` as a pytree node; ``wrap`` turns the rebuilt TensorDict into an
    instance of ``cls`` (a tensorclass), or ``None`` for TensorDict itself."""
    if cls in pytree.SUPPORTED_NODES:
        return  # a class rebuilt with other options keeps its registration

    def unflatten(children: Iterable[Any], context: Context) -> Any:
        td = _rebuilt(children, context)
        return td if wrap is None else wrap(td)

    def flatten_with_keys(collection: TensorCollection) -> tuple[list[tuple[Any, Value]], Context]:
        children, context = _flatten(collection)
        key_kind = pytree.MappingKey if wrap is None else pytree.GetAttrKey
        return [(key_kind(key), child) for key, child in zip(context[0], children)], context

    pytree.register_pytree_node(
        cls,
        _flatten,
        unflatten,
        serialized_type_name=f"{cls.__module__}.{cls.__qualname__}",
        flatten_with_keys_fn=flatten_with_keys,
    )


register_collection(TensorDict)
register_collection(LegacyLazyView)  # flattened as it reads, rebuilt as a TensorDict


# A lazy stack is a node whose children are its members, so tree utilities map over
# each member's tensors without ever stacking them.
LazyContext = tuple[int, torch.Size]


def _flatten_lazy(stack: LazyStackedTensorDict) -> tuple[list[Any], LazyContext]:
    return stack.tensordicts, (stack.stack_dim, stack.batch_size)


def _unflatten_lazy(children: Iterable[Any], context: LazyContext) -> LazyStackedTensorDict:
    return LazyStackedTensorDict._from_members(list(children), *context)


def _flatten_lazy_with_keys(
    stack: LazyStackedTensorDict,
) -> tuple[list[tuple[Any, Any]], LazyContext]:
    members, context = _flatten_lazy(stack)
    return [(pytree.SequenceKey(i), member) for i, member in enumerate(members)], context


pytree.register_pytree_node(
    LazyStackedTensorDict,
    _flatten_lazy,
    _unflatten_lazy,
    serialized_type_name="tclass.LazyStackedTensorDict",
    flatten_with_keys_fn=_flatten_lazy_with_keys,
)
