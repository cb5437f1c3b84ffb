"""The element-wise walk of a tree of TensorDicts, in one pass of its own.

Math on a model's parameters (``params + 1``, ``torch.exp(params)``, ``target.lerp_(online,
tau)``) works on a tree of TensorDicts nested in each other, holding tensors. The general
walk (``_base/implemented/_leaf_walk.py``) handles every kind of collection and operand:
it gathers the tensors, node by node through each collection's own methods, rebuilds the
result, then walks it once more for nested collections left empty. On such a tree it
spends more time in Python than the fused kernels on 200 small tensors, so a TensorDict
whose nested collections are all TensorDicts of its own class (holding tensors, such
TensorDicts and Python values, with no operand, a number or one such tree holding the
same keys) is walked here instead: one pass gathering the tensors and marking the nodes
that hold only tensors, and, out of place, one pass building the result from the marks.
Anything else (a record or a lazy stack in the tree, a tensor subclass, a nested
collection holding nothing, keys that differ) is left to the general walk, which gives
the same results and raises what is wrong.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import torch
from typing_extensions import Self

from tclass._base._tensordict_base import TensorDictBase, Value
from tclass._base.implemented._leaf_walk import Gather, run_flat
from tclass._core._tracing import tracing

__all__ = ["TreeWalkOps"]

_Tensor = torch.Tensor
_PYTHON_NUMBERS = (int, float, bool, complex)
_only_tensors = frozenset({torch.Tensor}).issuperset  # of map(type, values)
_NOTHING: Iterator[Any] = iter(())  # the results a Python-value node is rebuilt from


class TreeWalkOps(TensorDictBase):
    """The one-pass walk of ``TensorDict`` trees (see the module docstring)."""

    if TYPE_CHECKING:  # TensorDict's slots
        _tensors: dict[str, Value]
        _batch_size: torch.Size
        _device: torch.device | None
    else:
        __slots__ = ()

    def _flat_pointwise(
        self,
        foreach: Callable[..., Any] | None,
        each: Callable[..., Any],
        operands: tuple[Any, ...],
        kwargs: dict[str, Any] | None,
    ) -> tuple[Self, list[torch.Tensor]] | None:
        theirs = None
        if operands:
            other = operands[0]
            if other.__class__ is self.__class__:
                shape = other._batch_size
                if shape and (shape != self._batch_size or tracing()):
                    # a broadcast (the general walk resizes), or traced: sizes compared
                    # on the leaves there
                    return super()._flat_pointwise(foreach, each, operands, kwargs)
                theirs = other._tensors
            elif other.__class__ not in _PYTHON_NUMBERS:  # a record, a tensor...
                return super()._flat_pointwise(foreach, each, operands, kwargs)
        leaves: list[torch.Tensor] = []
        pieces: list[torch.Tensor] = []
        mixed: list[bool] = []
        if not self._walk_tree(theirs, leaves, pieces, mixed):
            return None
        results = run_flat(foreach, each, leaves, operands if theirs is None else (pieces,), kwargs)
        return self._tree_rebuilt(iter(results), iter(mixed)), leaves

    def _gather_tree(self, into: Gather, other: Any) -> bool:
        if other is None:
            theirs = None
        elif other.__class__ is self.__class__:
            theirs = other._tensors
        else:
            return False
        leaves: list[torch.Tensor] = []
        pieces: list[torch.Tensor] = []
        if not self._walk_tree(theirs, leaves, pieces, []):
            return False
        into.leaves = leaves
        if theirs is not None:
            into.operands[0] = pieces
        return True

    def _walk_tree(
        self,
        theirs: dict[str, Value] | None,
        leaves: list[torch.Tensor],
        pieces: list[torch.Tensor],
        mixed: list[bool],
    ) -> bool:
        """Appends this tree's tensors to ``leaves`` and (with ``theirs``, the entries of
        an operand's node) their counterparts to ``pieces``, depth first in key order as
        the general walk; appends to ``mixed``, node by node in the same order, whether
        the node holds more than tensors. False where this walk does not apply."""
        mine = self._tensors
        if theirs is not None and len(theirs) != len(mine):  # (each key is looked up)
            return False
        if _only_tensors(map(type, mine.values())):
            if not mine:  # nothing here: the general walk decides what it gives
                return False
            if theirs is not None:
                try:
                    found = list(map(theirs.__getitem__, mine))
                except KeyError:
                    return False
                if not _only_tensors(map(type, found)):
                    return False
                pieces.extend(found)
            leaves.extend(mine.values())  # type: ignore[arg-type]
            mixed.append(False)
            return True
        mixed.append(True)
        cls = self.__class__
        for key, value in mine.items():
            if value.__class__ is _Tensor:
                if theirs is not None:
                    piece = theirs.get(key)
                    if piece.__class__ is not _Tensor:  # (or not there: None)
                        return False
                    pieces.append(piece)
                leaves.append(value)
            elif value.__class__ is cls:
                sub = None
                if theirs is not None:
                    node = theirs.get(key)
                    if node.__class__ is not cls:
                        return False
                    sub = node._tensors
                if not value._walk_tree(sub, leaves, pieces, mixed):
                    return False
            elif not getattr(value, "_is_value_node", False) or (
                theirs is not None and key not in theirs
            ):  # a record, a lazy stack, a tensor subclass, a key the operand lacks
                return False
        return True

    def _tree_rebuilt(self, results: Iterator[torch.Tensor], mixed: Iterator[bool]) -> Self:
        """This tree with the next ``results`` for its tensors, in the order of
        :meth:`_walk_tree`, whose marks ``mixed`` gives; each Python-value node a new one."""
        mine = self._tensors
        if not next(mixed):
            entries: dict[str, Value] = dict(zip(mine, results))  # mine first: stops in time
        else:
            cls = self.__class__
            entries = {}
            for key, value in mine.items():
                if value.__class__ is _Tensor:
                    entries[key] = next(results)
                elif value.__class__ is cls:
                    entries[key] = value._tree_rebuilt(results, mixed)
                else:  # a Python value
                    entries[key] = value._rebuilt(_NOTHING, None)
        return self._new_like(entries, self._batch_size, self._device)
