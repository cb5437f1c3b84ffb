"""``TensorDictBase``: the full API every dictionary-like collection answers.

It joins the primitives of :class:`~tclass._collection.TensorCollection` with the shape
and element-wise operations written against them. ``TensorDict`` derives from it, and so
will lazy stacks; code that accepts "any collection" annotates ``TensorDictBase``.
"""

from __future__ import annotations

from typing import TypeAlias, Union

import torch

from tclass._elementwise import ElementwiseOps
from tclass._shape_ops import ShapeOps

__all__ = ["TensorDictBase", "Value"]


class TensorDictBase(ShapeOps, ElementwiseOps):
    """Abstract parent of TensorDict (and lazy stacks): a collection of tensors sharing
    batch dims, answering tensor-like methods over those dims."""

    __slots__ = ()


Value: TypeAlias = Union[torch.Tensor, TensorDictBase]
"""What a collection stores under a key: a tensor or a nested collection."""
