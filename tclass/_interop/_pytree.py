"""Collections as ``torch.utils._pytree`` nodes, so tree utilities and ``torch.compile``
see through them.

The children are the entries holding tensors (tensors and nested collections, which are
pytree nodes themselves); everything else, the keys, the batch size, the device and the
Python values, goes in the context. Unflattening trusts the children to keep the batch
size, as every pytree node must.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch
import torch.utils._pytree as pytree

from tclass._base._collection import TensorCollection
from tclass._base._tensordict_base import Value
from tclass._engine._lazy._legacy import LegacyLazyView
from tclass._engine._lazy._stack import LazyStackedTensorDict
from tclass._engine._nontensor import _NonTensorNode, same_value
from tclass._engine._td import TensorDict

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


Context = tuple[tuple[str, ...], tuple[tuple[str, _Static], ...], torch.Size, "torch.device | None"]


def _flatten(collection: TensorCollection) -> tuple[list[Value], Context]:
    keys: list[str] = []
    children: list[Value] = []
    statics: list[tuple[str, _Static]] = []
    for key, value in collection._items():
        if isinstance(value, _NonTensorNode):
            statics.append((key, _Static(value)))
        else:
            keys.append(key)
            children.append(value)
    return children, (tuple(keys), tuple(statics), collection.batch_size, collection.device)


def _entries(children: Iterable[Any], context: Context) -> dict[str, Value]:
    keys, statics, _, _ = context
    entries: dict[str, Value] = dict(zip(keys, children))
    for key, static in statics:
        entries[key] = static.node
    return entries


def register_collection(cls: type, wrap: Callable[[TensorDict], Any] | None = None) -> None:
    """Registers ``cls`` as a pytree node; ``wrap`` turns the rebuilt TensorDict into an
    instance of ``cls`` (a tensorclass), or ``None`` for TensorDict itself."""
    if cls in pytree.SUPPORTED_NODES:
        return  # a class rebuilt with other options keeps its registration

    def unflatten(children: Iterable[Any], context: Context) -> Any:
        td = TensorDict._new_unchecked(_entries(children, context), context[2], context[3])
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
