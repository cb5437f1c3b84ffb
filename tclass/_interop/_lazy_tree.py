"""Lazy stacks as ``torch.utils._pytree`` nodes, and how ``torch.vmap`` maps over them.

For tree utilities (``tree_map``, ``torch.func.grad``, ``functional_call``...) a lazy stack
is a node whose children are its members, so its tensors are mapped member by member and
never stacked (ragged members included), as the peer's.

``torch.vmap`` needs more: it slices every leaf of a node along the dim its ``in_dims``
names (and puts the mapped dim back at ``out_dims``), so that dim must be the same batch
dim of the collection in every leaf. A member's leaves lack the stack dim, so when vmap
flattens a lazy stack (its inputs in ``_process_batched_inputs``, its outputs in
``_unwrap_batched`` and, with ``chunk_size``, ``_flatten_chunks_output``: found by the
caller's frame), the children are aligned on the stack's batch dims instead:

* inputs: a token (the member index along the stack dim, expanded over the batch dims
  without memory), then each member as a view with the stack dim put back (expanded, no
  copy). Rebuilt inside vmap, the token says which dim vmap mapped: another dim than the
  stack dim gives the lazy stack of the mapped members (member ``j`` is taken from its own
  child, still no copy); the stack dim itself gives the dense stack of the members that
  the lanes (the token's values: a chunk's) see, mapped along it: each lane sees one
  member, which no lazy stack can express. Members whose entry shapes differ there raise
  ``HeterogeneousEntryError`` naming the entry.
* outputs: a token with the stack's batch size and ``0`` at the stack dim (no memory),
  then each member with the stack dim put back as a dim of size 1. vmap inserts its dim
  at ``out_dims`` in all of them; the token's zero then says where the stack dim went.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from types import FrameType
from typing import Any

import torch
import torch.utils._pytree as pytree
from torch._C._functorch import _add_batch_dim, get_unwrapped, maybe_get_bdim, maybe_get_level

from tclass._engine._lazy._parts import check_regular, remove_dim
from tclass._engine._lazy._stack import LazyStackedTensorDict

__all__ = ["VMAP_INPUT_SIDE", "register_lazy_stack", "vmap_caller"]

# The torch functions (and the peer's replacements, of the same names) whose flattening
# of a lazy stack must align its children on the stack's batch dims.
_INPUT_SIDE = VMAP_INPUT_SIDE = frozenset({"_process_batched_inputs"})
_OUTPUT_SIDE = frozenset({"_unwrap_batched", "_flatten_chunks_output"})
_TREE_MODULES = frozenset({"torch.utils._pytree", __name__, "tclass._interop._pytree"})


class _Inputs:
    """The context of a lazy stack flattened for vmap's inputs: the stack itself (by
    identity: its children are views of its members)."""

    __slots__ = ("stack",)

    def __init__(self, stack: LazyStackedTensorDict) -> None:
        self.stack = stack

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Inputs) and other.stack is self.stack

    def __hash__(self) -> int:
        return id(self.stack)

    def __repr__(self) -> str:
        return f"_Inputs(stack_dim={self.stack.stack_dim}, batch_size={self.stack.batch_size})"


class _Outputs:
    """The context of a lazy stack flattened for vmap's outputs: its member count."""

    __slots__ = ("count",)

    def __init__(self, count: int) -> None:
        self.count = count

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Outputs) and other.count == self.count

    def __hash__(self) -> int:
        return self.count

    def __repr__(self) -> str:
        return f"_Outputs({self.count})"


LazyContext = tuple[int, torch.Size]


def vmap_caller() -> FrameType | None:
    """vmap's function flattening the tree (its inputs or outputs: the first caller
    outside the tree code is one of them), or None."""
    if torch.compiler.is_compiling():
        return None
    frame: FrameType | None = sys._getframe(2)
    while frame is not None and frame.f_globals.get("__name__") in _TREE_MODULES:
        frame = frame.f_back
    if frame is None or frame.f_code.co_name not in _INPUT_SIDE | _OUTPUT_SIDE:
        return None
    return frame


def _spread(collection: Any, dim: int, batch: torch.Size) -> Any:
    """``collection`` with a new batch dim at ``dim`` expanded to ``batch`` (a view; a
    lazy stack stays lazy, each member spread along its own dims)."""
    if isinstance(collection, LazyStackedTensorDict):
        d = collection.stack_dim
        new_d = d + 1 if dim <= d else d
        inner = dim if dim <= d else dim - 1
        members = [_spread(m, inner, remove_dim(batch, new_d)) for m in collection.tensordicts]
        return collection._restacked(members, new_d, batch)
    return collection.unsqueeze(dim).expand(batch)


def _squeezed(collection: Any, dim: int) -> Any:
    """``collection`` without its batch dim ``dim`` of size 1 (a lazy stack stays lazy)."""
    if isinstance(collection, LazyStackedTensorDict):
        d = collection.stack_dim
        new_d = d - 1 if dim < d else d
        inner = dim if dim < d else dim - 1
        members = [_squeezed(m, inner) for m in collection.tensordicts]
        return collection._restacked(members, new_d, remove_dim(collection.batch_size, dim))
    return collection.squeeze(dim)


def _flatten_members(stack: LazyStackedTensorDict) -> tuple[list[Any], Any]:
    caller = vmap_caller()
    if caller is None:
        return stack.tensordicts, (stack.stack_dim, stack.batch_size)
    batch = stack.batch_size
    check_regular(stack, range(len(batch)), "torch.vmap")  # a ragged batch dim: no leaf shape
    d, count = stack.stack_dim, len(stack.tensordicts)
    if caller.f_code.co_name in _INPUT_SIDE:
        lanes = [count if i == d else 1 for i in range(len(batch))]
        token = torch.arange(count).reshape(lanes).expand(batch)
        members = [_spread(m, d, batch) for m in stack.tensordicts]
        return [token, *members], _Inputs(stack)
    token = torch.empty([0 if i == d else size for i, size in enumerate(batch)])
    level = caller.f_locals.get("vmap_level")
    if isinstance(level, int):  # inside vmap: batched, as torch moves only those to out_dims
        token = _add_batch_dim(token.expand(caller.f_locals["batch_size"], *token.shape), 0, level)
    single = torch.Size([1 if i == d else size for i, size in enumerate(batch)])
    return [token, *(_spread(m, d, single) for m in stack.tensordicts)], _Outputs(count)


def _mapped_inputs(children: list[Any], context: _Inputs) -> Any:
    """The stack vmap's function sees (see the module docstring), locked if the stack
    is, as a TensorDict mapped by vmap stays locked (the peer's too)."""
    stack = context.stack
    token, *members = children
    if maybe_get_level(token) == -1:
        return stack  # not mapped (in_dims None)
    seen = _lanes_seen(stack, token, members)
    return seen.lock_() if stack.is_locked else seen


def _lanes_seen(stack: LazyStackedTensorDict, token: torch.Tensor, members: list[Any]) -> Any:
    """The mapped stack vmap's function sees, before its lock."""
    mapped, level = maybe_get_bdim(token), maybe_get_level(token)
    d = stack.stack_dim
    if mapped != d:
        new_d = d - 1 if mapped < d else d
        at = (slice(None),) * new_d
        picked = [member[at + (j,)] for j, member in enumerate(members)]
        return stack._restacked(picked, new_d, remove_dim(stack.batch_size, mapped))
    lanes = get_unwrapped(token)
    if lanes.numel():
        lanes = lanes[tuple(slice(None) if i == d else 0 for i in range(lanes.dim()))]
    seen = list(range(lanes.shape[0])) if not lanes.numel() else lanes.tolist()
    members = stack.tensordicts
    keys = stack.keys()  # those of every member, as the lazy stack shows them
    picked = [members[i] for i in seen]
    if any(len(member.keys()) != len(keys) for member in picked):
        picked = [member.select(*keys) for member in picked]
    same = len(picked) == len(members) and all(a is b for a, b in zip(picked, members))
    source = stack if same else stack._restacked(picked)
    dense = source._dense(f"torch.vmap over the stack dim {d}")
    leaves, spec = pytree.tree_flatten(dense)
    return pytree.tree_unflatten([_add_batch_dim(leaf, d, level) for leaf in leaves], spec)


def _mapped_outputs(children: list[Any], context: _Outputs) -> LazyStackedTensorDict:
    """The lazy stack back from vmap's outputs, its stack dim where the token's zero is."""
    token, *members = children
    shape = list(token.shape)
    zeros = [i for i, size in enumerate(shape) if size == 0]
    d = zeros[0]
    if len(zeros) > 1:  # vmap mapped a dim of size 0: the stack dim is where members have 1
        d = next((i for i in zeros if all(m.batch_size[i : i + 1] == (1,) for m in members)), d)
    shape[d] = context.count
    batch = torch.Size(shape)
    single = torch.Size([1 if i == d else size for i, size in enumerate(batch)])
    for member in members:
        if member.batch_size != single and not member.keys():
            member._assign_batch_size(single)  # no leaf told its rebuilt batch size
    squeezed = [_squeezed(member, d) for member in members]
    return LazyStackedTensorDict._from_members(squeezed, d, batch)


def _unflatten_members(children: Iterable[Any], context: Any) -> Any:
    if isinstance(context, (_Inputs, _Outputs)):
        leaves = list(children)
        if not isinstance(leaves[0], torch.Tensor):
            # vmap rebuilds the tree from placeholders only to count its leaves per
            # in_dims/out_dims entry: a list of the children flattens to as many.
            return leaves
        if isinstance(context, _Inputs):
            return _mapped_inputs(leaves, context)
        return _mapped_outputs(leaves, context)
    return LazyStackedTensorDict._from_members(list(children), *context)


def _flatten_members_with_keys(
    stack: LazyStackedTensorDict,
) -> tuple[list[tuple[Any, Any]], Any]:
    members, context = _flatten_members(stack)
    return [(pytree.SequenceKey(i), member) for i, member in enumerate(members)], context


def register_lazy_stack() -> None:
    """Registers :class:`LazyStackedTensorDict` as a pytree node (once)."""
    if LazyStackedTensorDict in pytree.SUPPORTED_NODES:
        return
    pytree.register_pytree_node(
        LazyStackedTensorDict,
        _flatten_members,
        _unflatten_members,
        serialized_type_name="tclass.LazyStackedTensorDict",
        flatten_with_keys_fn=_flatten_members_with_keys,
    )
