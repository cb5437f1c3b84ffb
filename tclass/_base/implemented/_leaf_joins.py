"""Every tensor of a collection joined into one tensor (``cat_from_tensordict``,
``stack_from_tensordict``), and nested-tensor leaves made dense (``to_padded_tensor``),
written against the collection primitives. (``pack``, which joins them into one tensor
with a layout to unpack them by, is declared in ``declared/_packing.py``.)
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any, cast

import torch
from typing_extensions import Self

from tclass._base.implemented._apply import ApplyOps
from tclass._core._keys import unravel_key
from tclass.errors import KeyNotFoundError, ShapeError

__all__ = ["LeafJoinOps"]


class LeafJoinOps(ApplyOps):
    """cat_from_tensordict, stack_from_tensordict, to_padded_tensor."""

    __slots__ = ()

    def cat_from_tensordict(
        self,
        dim: int = 0,
        *,
        sorted: bool | Sequence[Any] | None = None,
        out: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """``torch.cat`` of every tensor (nested ones included, Python values left out)
        along ``dim``, counted in the tensors' own dims.

        Args:
            sorted: the order of the tensors: ``True`` sorts the keys, ``False`` or
                ``None`` keeps the key order, a list of keys gives it (it must name
                every tensor).
            out: a tensor to write the result into.

        Raises:
            KeyNotFoundError: a list ``sorted`` that does not name every tensor.
        """
        return torch.cat(self._ordered_tensors(sorted), dim, out=out)

    def stack_from_tensordict(
        self,
        dim: int = 0,
        *,
        sorted: bool | Sequence[Any] | None = None,
        out: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """``torch.stack`` of every tensor (nested ones included, Python values left out)
        along the new dim ``dim``; ``sorted`` and ``out`` as :meth:`cat_from_tensordict`."""
        return torch.stack(self._ordered_tensors(sorted), dim, out=out)

    def _ordered_tensors(self, order: bool | Sequence[Any] | None) -> list[torch.Tensor]:
        leaves = {
            unravel_key(key): value
            for key, value in self.items(include_nested=True, leaves_only=True)
        }
        if order is None or order is False:
            return list(leaves.values())
        if order is True:
            keys = builtins.sorted(leaves, key=lambda k: (k,) if isinstance(k, str) else k)
            return [leaves[key] for key in keys]
        wanted = [unravel_key(key) for key in order]
        if builtins.sorted(map(str, wanted)) != builtins.sorted(map(str, leaves)):
            msg = (
                f"the keys given to sort the tensors ({wanted}) must be the keys of every "
                f"tensor of the collection ({list(leaves)})"
            )
            raise KeyNotFoundError(msg)
        return [leaves[key] for key in wanted]

    def to_padded_tensor(self, padding: float = 0.0, mask_key: Any = None) -> Self:
        """A collection whose nested-tensor leaves (``densify()`` of a lazy stack of
        members of different shapes gives them) are padded dense tensors
        (``torch.nested.to_padded_tensor``); other leaves are kept.

        ``mask_key``: also write there a boolean mask of the valid (not padded) elements
        of the ragged dims of the first nested leaf (in key order), shaped like those
        dims of its padded tensor: ``[batch, longest]`` for a stack of sequences.

        Raises:
            ShapeError: ``mask_key`` is given but no leaf is a nested tensor.
        """
        first: list[torch.Tensor] = []
        done: dict[int, torch.Tensor] = {}

        def padded(tensor: torch.Tensor) -> torch.Tensor:
            if not tensor.is_nested:
                return tensor
            if not first:
                first.append(tensor)
            out = done.pop(id(tensor), None)
            if out is None:
                out = cast(torch.Tensor, torch.nested.to_padded_tensor(tensor, padding))
            return out

        batch = self.batch_size
        new_batch = None
        if -1 in batch:  # ragged batch dims (densify of a ragged stack): the padded lengths
            for leaf in self.values(include_nested=True, leaves_only=True):
                if isinstance(leaf, torch.Tensor) and leaf.is_nested:
                    done[id(leaf)] = shaped = padded(leaf)
                    first.clear()
                    new_batch = torch.Size(
                        shaped.shape[i] if size == -1 else size for i, size in enumerate(batch)
                    )
                    break
        out = self.apply(padded, batch_size=new_batch)  # new and unlocked, as the peer
        if mask_key is not None:
            if not first:
                msg = (
                    "to_padded_tensor(mask_key=...): no leaf is a nested tensor, so nothing "
                    "is padded and there is no mask to write"
                )
                raise ShapeError(msg)
            out.set(mask_key, _valid_mask(first[0]))
        return out


def _valid_mask(nested: torch.Tensor) -> torch.Tensor:
    """Which elements of ``to_padded_tensor(nested)`` are data, over the dims up to the
    last ragged one (the dims after it are whole for every element)."""
    shapes = [part.shape for part in nested.unbind()]
    ragged = [i for i in range(len(shapes[0])) if len({shape[i] for shape in shapes}) > 1]
    keep = 1 + (ragged[-1] + 1 if ragged else 0)
    valid: torch.Tensor = torch.nested.to_padded_tensor(torch.ones_like(nested), 0.0) != 0
    if valid.ndim > keep:
        valid = valid.flatten(keep).all(-1)
    return valid
