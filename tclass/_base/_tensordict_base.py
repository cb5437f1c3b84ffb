"""``TensorDictBase``: the full API every dictionary-like collection answers.

It joins the primitives of :class:`~tclass._base.implemented._collection.TensorCollection`
with the shape and element-wise operations written against them. ``TensorDict`` derives
from it, and so will lazy stacks; code that accepts "any collection" annotates ``TensorDictBase``.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeAlias

import torch
from typing_extensions import Self

from tclass._base.declared._conversions import ConversionOps
from tclass._base.declared._dist_ops import DistributedOps
from tclass._base.declared._formats import FormatOps
from tclass._base.declared._map_ops import MapOps
from tclass._base.declared._module_ops import ModuleOps
from tclass._base.declared._packing import PackingOps
from tclass._base.declared._persistence import PersistenceOps
from tclass._base.declared._stack_ops import StackOps
from tclass._base.implemented._apply import ApplyOps
from tclass._base.implemented._casts import CastOps
from tclass._base.implemented._device_ops import DeviceOps
from tclass._base.implemented._entry_ops import EntryOps
from tclass._base.implemented._grad_ops import GradOps
from tclass._base.implemented._key_ops import KeyOps
from tclass._base.implemented._leaf_joins import LeafJoinOps
from tclass._base.implemented._lock_graph import LockGraph
from tclass._base.implemented._operators import OperatorOps
from tclass._base.implemented._reductions import ReductionOps
from tclass._base.implemented._shape_ops import ShapeOps
from tclass._core._dispatch import TORCH_FUNCTIONS
from tclass._core._method_names import name_methods_after

if TYPE_CHECKING:
    from tclass._engine._td import TensorDict

__all__ = ["TensorDictBase", "Value"]


@name_methods_after
class TensorDictBase(
    ShapeOps,
    KeyOps,
    EntryOps,
    StackOps,
    GradOps,
    LeafJoinOps,
    ApplyOps,
    OperatorOps,
    ReductionOps,
    CastOps,
    DeviceOps,
    PackingOps,
    PersistenceOps,
    FormatOps,
    ModuleOps,
    MapOps,
    ConversionOps,
    DistributedOps,
    LockGraph,
):
    """Abstract parent of TensorDict (and lazy stacks): a collection of tensors sharing
    batch dims, answering tensor-like methods over those dims."""

    __slots__ = ()

    def __class_getitem__(cls, item: Any) -> types.GenericAlias:
        """``TensorDict[str, Tensor]`` in an annotation, as for any mapping (the peer's
        collections are ``MutableMapping`` generics); the alias's origin is the class."""
        return types.GenericAlias(cls, item)

    @classmethod
    def _from_plain(cls, td: TensorDict) -> Self:
        # TensorDictBase.from_dict(...) and the like give a TensorDict, the default kind.
        if cls is TensorDictBase:
            return td  # type: ignore[return-value]
        return super()._from_plain(td)

    def _joined_as(self) -> TensorDictBase:
        """What ``torch.stack`` / ``torch.cat`` join for this collection: itself (a
        wrapper, such as TensorDictParams, gives what it wraps)."""
        return self

    def _adopt_wrapped(self, saved: Any, adopt: Callable[[Any, Any], None]) -> bool:
        """For ``memmap_`` of a collection holding this one (a lazy stack's member): a
        wrapper (TensorDictParams) has ``adopt(wrapped, saved)`` give what it wraps the
        saved leaves, keeps its own objects over them and returns True; others, False."""
        return False

    def _load_wrapped(self, load: Callable[[Any], None]) -> bool:
        """For ``load_memmap_`` into a collection holding this one (a lazy stack's
        member): a wrapper (TensorDictParams) has ``load(wrapped)`` load into what it
        wraps, keeps its own objects over the loaded data and returns True; others, False."""
        return False

    @classmethod
    def __torch_function__(
        cls,
        func: Callable[..., Any],
        types: tuple[type, ...],
        args: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
    ) -> Any:
        """``torch.stack([a, b])`` and the rest of the table in ``_dispatch.py``, for
        every kind of collection."""
        implementation = TORCH_FUNCTIONS.get(func)
        if implementation is None:
            return NotImplemented
        return implementation(*args, **(kwargs or {}))


Value: TypeAlias = torch.Tensor | TensorDictBase
"""What a collection stores under a key: a tensor or a nested collection."""
