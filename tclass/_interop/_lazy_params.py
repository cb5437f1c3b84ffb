"""Stacks of lazy modules' parameters: ``from_modules`` of ``nn.LazyLinear``... modules.

A lazy module's parameter has no shape until the module first runs. The stack of such
parameters (one per module) is an uninitialized parameter that knows its ensemble size:
when the module it was put into (``to_module``) materializes it with a shape, it takes
the ensemble dims first, so that the stack holds one set of weights per module. Under
``torch.vmap``, the module must then see one member: :func:`watch_materialization`
registers a pre-forward hook that, once the module's own hook has materialized the stack,
puts the mapped view of it into the module (as the peer's ``from_modules`` of lazy
modules, whose test trains such an ensemble).

In pytrees (what ``torch.vmap`` maps over) the stack is carried aside, and a child
without memory of the ensemble's shape (:func:`token`) stands in its place: what vmap
does to that child (the dim it maps, at which level) is what the module's view follows.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch._C._functorch import _add_batch_dim, is_batchedtensor, maybe_get_bdim, maybe_get_level

__all__ = [
    "LazyBufferStack",
    "LazyStack",
    "is_lazy",
    "is_lazy_stack",
    "mapped_by",
    "stack_lazy",
    "token",
    "watch_materialization",
]


class _Mapping:
    """Which dim of the stack ``torch.vmap`` maps, at which level (None: not mapped)."""

    ensemble: torch.Size
    vmap_dim: int | None = None
    vmap_level: int | None = None

    def materialize(
        self, shape: tuple[int, ...], device: Any = None, dtype: torch.dtype | None = None
    ) -> None:
        """Gives the stack its shape: the ensemble dims, then ``shape`` (a member's)."""
        full = (*self.ensemble, *shape)
        super().materialize(full, device=device, dtype=dtype)  # type: ignore[misc]


class LazyStack(_Mapping, nn.UninitializedParameter):
    """The stack of the uninitialized parameters of ``len(ensemble)`` lazy modules; a
    ``torch.nn.Parameter`` of shape ``(*ensemble, *shape)`` once materialized."""


class LazyBufferStack(_Mapping, nn.UninitializedBuffer):
    """As :class:`LazyStack`, for the uninitialized buffers of lazy modules."""


def is_lazy(value: object) -> bool:
    """Whether ``value`` is an uninitialized parameter or buffer (of a lazy module):
    torch's ``nn.parameter.is_lazy`` as an ``isinstance`` Dynamo traces (it takes
    torch's function for an op of the graph, which cannot return a bool, and gives up
    the frame: ``to_module`` in compiled code ran eagerly)."""
    return isinstance(value, (nn.UninitializedParameter, nn.UninitializedBuffer))


def is_lazy_stack(value: object) -> bool:
    """Whether ``value`` is a stack of lazy parameters or buffers not materialized yet."""
    return isinstance(value, (LazyStack, LazyBufferStack))


def stack_lazy(values: list[torch.Tensor]) -> LazyStack | LazyBufferStack:
    """The stack of the uninitialized ``values`` (parameters or buffers of lazy modules
    of one architecture: the caller checks that)."""
    first = values[0]
    kind = LazyStack if isinstance(first, nn.UninitializedParameter) else LazyBufferStack
    make: Any = kind  # torch's stubs lack the uninitialized kinds' own signature
    out: LazyStack | LazyBufferStack = make(
        requires_grad=first.requires_grad, device=first.device, dtype=first.dtype
    )
    out.ensemble = torch.Size([len(values)])
    return out


def token(stack: LazyStack | LazyBufferStack) -> torch.Tensor:
    """A tensor of the stack's ensemble shape, without memory, for pytrees to map."""
    return torch.zeros((), device=stack.device).expand(stack.ensemble)


def mapped_by(stack: LazyStack | LazyBufferStack, child: Any) -> LazyStack | LazyBufferStack:
    """``stack``, noting how vmap mapped ``child`` (its :func:`token`): the dim and level
    the module's view of it will follow, or none outside vmap."""
    if isinstance(child, torch.Tensor) and is_batchedtensor(child):
        stack.vmap_dim, stack.vmap_level = maybe_get_bdim(child), maybe_get_level(child)
    else:
        stack.vmap_dim = stack.vmap_level = None
    return stack


class _AddMappedView:
    """A forward pre-hook: once the module's lazy hook has materialized the stacks put
    into it, puts vmap's view of each (one member) in their place, then removes itself."""

    def __init__(self, names: list[str]) -> None:
        self.names = names
        self.handle: Any = None

    def __call__(self, module: nn.Module, args: Any, kwargs: Any) -> None:
        slots_of: tuple[dict[str, Any], ...] = (module._parameters, module._buffers)
        for name in self.names:
            for slots in slots_of:
                value: Any = slots.get(name)
                level = getattr(value, "vmap_level", None)  # kept once materialized
                if level is not None and not is_lazy(value):
                    slots[name] = _add_batch_dim(value, value.vmap_dim, level)
        self.handle.remove()


def watch_materialization(module: nn.Module, names: list[str]) -> None:
    """Registers the hook of :class:`_AddMappedView` on ``module`` for the stacks put
    under ``names``; it runs after the module's own (lazy) pre-forward hook."""
    hook = _AddMappedView(names)
    hook.handle = module.register_forward_pre_hook(hook, with_kwargs=True)
