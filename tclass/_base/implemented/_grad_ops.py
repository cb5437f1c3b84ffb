"""Autograd over every tensor of a collection: ``requires_grad_``, ``grad``, ``zero_grad``,
``backward``, ``detach_``, as ``torch.Tensor`` has them for one tensor.

Written against ``_tensor_leaves()`` (a lazy stack and a record over one give their
members' own tensors, never stacked copies, so flags and gradients land on the tensors
the collection holds) and ``_apply_in_place`` (pairs the leaves with another
collection's, member by member for a lazy stack).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch
from typing_extensions import Self

from tclass._base.implemented._apply import ApplyOps
from tclass._base.implemented._collection import TensorCollection
from tclass.errors import ArgumentError, GradError, KeyNotFoundError

if TYPE_CHECKING:
    from tclass._base._tensordict_base import TensorDictBase

__all__ = ["GradOps"]

_MISSING: Any = object()


class GradOps(ApplyOps):
    """requires_grad, requires_grad_, grad, zero_grad, backward, detach_."""

    __slots__ = ()

    @property
    def requires_grad(self) -> bool:
        """Whether any tensor (nested ones included) requires gradients."""
        return any(leaf.requires_grad for leaf in self._tensor_leaves())

    def requires_grad_(self, requires_grad: bool = True) -> Self:
        """Sets ``requires_grad`` on every tensor, in place (locked collections too:
        the entries stay the same tensors); returns ``self``.

        Raises:
            GradError: (a ``RuntimeError``, as torch raises) if ``requires_grad`` is true
                and a tensor is not floating point or complex: only those can require
                gradients. Nothing is changed then.
        """
        leaves = list(self._tensor_leaves())
        if requires_grad:
            self._check_grad_dtypes(())
        for leaf in leaves:
            leaf.requires_grad_(requires_grad)
        return self

    def _check_grad_dtypes(self, prefix: tuple[str, ...]) -> None:
        """Raises a GradError for the first tensor (under ``prefix``) that cannot require
        gradients; read entry by entry (a lazy stack checks its members instead: its
        entries may have no dense value)."""
        for key, value in self._items():
            path = (*prefix, key)
            if isinstance(value, torch.Tensor):
                if not (value.is_floating_point() or value.is_complex()):
                    where = path[0] if len(path) == 1 else path
                    msg = (
                        f"requires_grad_: the tensor at {where!r} has dtype {value.dtype}, and "
                        "only floating-point and complex tensors can require gradients; "
                        "exclude it first (td.exclude(key).requires_grad_()) or cast it"
                    )
                    raise GradError(msg)
            elif isinstance(value, GradOps) and not value._is_value_node:
                value._check_grad_dtypes(path)

    @property
    def grad(self) -> Self | None:
        """The ``.grad`` of every tensor, in a collection shaped like this one; tensors
        without one are left out (and nested collections left empty), Python values
        kept; ``None`` when no tensor has a gradient, as the peer.

        Assigning ``td.grad = other`` gives each tensor the gradient under its key in
        ``other`` (copied into its existing ``.grad``, if it has one); ``td.grad =
        None`` clears them all. Locked as ``data`` is: when this collection's views are
        (a TensorDictParams's: when its TensorDict is, as the peer's).
        """
        out = self.apply(_grad_of, filter_empty=True, propagate_lock=True)
        if out is not None and self._results_locked() and not out.is_locked:
            out.lock_()
        return out

    @grad.setter
    def grad(self, grads: TensorDictBase | None) -> None:
        if grads is None:
            self.zero_grad(set_to_none=True)
            return
        self._apply_in_place(_assign_grad, (grads,))

    def zero_grad(self, set_to_none: bool = True) -> Self:
        """Clears the gradients of every tensor: sets each ``.grad`` to ``None``, or
        with ``set_to_none=False`` fills the existing ones with zeros; returns ``self``."""
        for leaf in self._tensor_leaves():
            if set_to_none:
                leaf.grad = None
            elif leaf.grad is not None:
                leaf.grad.zero_()
        return self

    def backward(
        self,
        gradient: TensorDictBase | None = None,
        retain_graph: bool | None = None,
        create_graph: bool = False,
        inputs: TensorDictBase | Sequence[torch.Tensor] | None = None,
    ) -> None:
        """Back-propagates from every tensor that requires gradients, in one
        ``torch.autograd.backward`` call (the others are ignored): ``losses.backward()``
        for a collection of scalar losses, or ``out.backward(grads)`` with a collection
        holding the gradient of each tensor under its key. Gradients accumulate in the
        ``.grad`` of the graph's leaves, as ``tensor.backward()``.

        Args:
            gradient: the gradient of each tensor that requires gradients, by key;
                ``None`` needs every such tensor to have one element (gradient 1).
            retain_graph: keep the graph for another backward (default: ``create_graph``).
            create_graph: build the graph of the derivative, for higher-order ones.
            inputs: the tensors (or a collection's) whose ``.grad`` receives gradients;
                ``None``: every leaf of the graph.

        Raises:
            GradError: (a ``RuntimeError``) no tensor requires gradients, or one has
                more than one element and no ``gradient`` is given.
            KeyNotFoundError: (a ``KeyError``) ``gradient`` lacks a tensor's key.
            ArgumentError: (a ``TypeError``) ``gradient`` is not a collection.
        """
        given_gradient: object = gradient  # checked: callers not type-checked pass tensors
        if given_gradient is not None and not isinstance(given_gradient, TensorCollection):
            msg = (
                "backward(gradient): the gradient must be a TensorDictBase (a collection "
                "holding the gradient of each tensor under its key), got a "
                f"{type(given_gradient).__name__}; wrap it: TensorDict(key=grad, ...)"
            )
            raise ArgumentError(msg)
        outputs: list[torch.Tensor] = []
        grads: list[torch.Tensor | None] = []
        for path, leaf in self.items(include_nested=True, leaves_only=True):
            if not leaf.requires_grad:
                continue
            if gradient is None:
                if leaf.numel() != 1:
                    msg = (
                        f"backward(): the tensor at {path!r} has shape {list(leaf.shape)}, "
                        "and grad can be implicitly created only for scalar outputs: pass "
                        "backward(gradient) with a collection of the gradient of each "
                        "tensor, or reduce them first (td.sum())"
                    )
                    raise GradError(msg)
                grads.append(None)
            else:
                grad = gradient.get(path, _MISSING)
                if grad is _MISSING:
                    name = path[0] if isinstance(path, tuple) and len(path) == 1 else path
                    msg = (
                        f"backward(): Missing gradient entry for key {name!r}: the gradient "
                        "collection has no entry for the tensor there, which requires gradients"
                    )
                    raise KeyNotFoundError(msg)
                grads.append(grad)
            outputs.append(leaf)
        if not outputs:
            msg = (
                "backward(): the collection has no leaf tensor requiring gradients; compute "
                "it from tensors that do (requires_grad_())"
            )
            raise GradError(msg)
        given: Sequence[torch.Tensor] | None = None
        if inputs is not None:
            given = (
                list(inputs._tensor_leaves())
                if isinstance(inputs, TensorCollection)
                else list(inputs)
            )
        torch.autograd.backward(
            outputs,
            grad_tensors=grads,
            retain_graph=retain_graph,
            create_graph=create_graph,
            inputs=given,
        )

    def detach_(self) -> Self:
        """Detaches every tensor from the autograd graph in place; returns ``self``. A
        tensor that requires no gradients is left as it is; one that does stays the same
        tensor (``Tensor.detach_()``), except a view, which torch cannot detach in place:
        the collection holds its ``detach()`` instead (the same data). The peer raises
        torch's ``RuntimeError`` for any view, even one that requires no gradients.

        Raises:
            GradError: (a ``RuntimeError``) a view that requires gradients in a collection
                that cannot hold another tensor in its place (a legacy lazy view, which
                computes its tensors from its source): ``detach_()`` the source.
        """
        views = False
        for leaf in self._tensor_leaves():
            if not leaf.requires_grad:
                continue
            if leaf._is_view():
                views = True
            else:
                leaf.detach_()
        if views:
            self._detach_held_views()
        return self

    def _detach_held_views(self) -> None:
        """Holds ``detach()`` in place of each tensor that still requires gradients
        (views), nested collections included. The kinds that hold their tensors
        (TensorDicts, lazy stacks' members, records' storages) override this."""
        if not any(leaf.requires_grad for leaf in self._tensor_leaves()):
            return  # nothing to replace (a Python value, a file's tensors)
        msg = (
            f"detach_: a {type(self).__name__} holds a view that requires gradients, which "
            "torch cannot detach in place, and it cannot hold the detached tensor instead; "
            "call detach() for a detached copy, or detach_() the collection it comes from"
        )
        raise GradError(msg)


def _grad_of(tensor: torch.Tensor) -> torch.Tensor | None:
    return tensor.grad


def _assign_grad(tensor: torch.Tensor, grad: torch.Tensor) -> None:
    if tensor.grad is None:
        tensor.grad = grad
    else:
        tensor.grad.copy_(grad)
