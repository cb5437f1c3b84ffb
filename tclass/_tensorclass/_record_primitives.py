"""The primitives a collection answers (``TensorCollection``'s private surface: entries,
batch size, names, device, the lock graph, the hooks of the math walks), which a record
reads from its storage (a mixin of ``TensorClass``, in ``tclass._tensorclass._record``,
which holds the storage in ``_tensordict``); results come back in the record's class."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import torch
from typing_extensions import Self

from tclass._base._tensordict_base import TensorDictBase, Value
from tclass._base.implemented._collection import TensorCollection
from tclass._base.implemented._leaf_kernels import run_flat
from tclass._base.implemented._leaf_walk import Gather, Resize, flat_split
from tclass._base.implemented._lock_graph import LockGraph, Ref
from tclass._base.implemented._reductions import Along
from tclass._core._names import Names
from tclass._core._tracing import tracing
from tclass._engine._record_fields import dense_entries
from tclass._engine._td import TensorDict
from tclass._tensorclass._guards import guard_leaves
from tclass.errors import UnknownFieldError

if TYPE_CHECKING:
    from tclass._engine._lazy._stack import LazyStackedTensorDict
    from tclass._tensorclass._builder import ClassInfo

__all__ = ["RecordPrimitives"]

_PYTHON_NUMBERS = (int, float, bool, complex)


class RecordPrimitives(TensorDictBase):
    """What ``TensorClass`` answers from its storage as every collection answers it."""

    if TYPE_CHECKING:  # TensorClass's slot, class information and methods
        _tensordict: TensorDict | LazyStackedTensorDict
        __tclass_info__: ClassVar[ClassInfo]

        def _wrap(self, td: TensorDict | LazyStackedTensorDict) -> Self: ...
        @classmethod
        def _from_tensordict_unchecked(cls, td: TensorDict | LazyStackedTensorDict) -> Self: ...
    else:
        __slots__ = ()

    def _lock_state(self) -> bool:
        """Whether fields can be assigned (in-place writes to tensors always can)."""
        return self._tensordict._lock_state()

    def _items(self) -> Iterator[tuple[str, Value]]:
        return self._tensordict._items()

    def _entries(self) -> Mapping[str, Value]:
        return self._tensordict._entries()

    def _entry(self, key: str) -> Value:
        return self._tensordict._entry(key)

    def _child(self, key: str) -> TensorCollection | None:
        return self._tensordict._child(key)  # a lazy storage reads no leaf to answer

    def is_empty(self) -> bool:
        """Whether no field holds a leaf, as the storage answers it (a lazy stack member by
        member: a ragged one has no dense entries to read)."""
        return self._tensordict.is_empty()

    def _child_type(self, key: str) -> type[TensorCollection] | None:
        return self._tensordict._child_type(key)

    def _new_like(
        self, values: dict[str, Value], batch_size: torch.Size, device: torch.device | None
    ) -> Self:
        storage = self._tensordict
        if storage.__class__ is TensorDict:  # its names and unbatched flag carry over
            return self._from_tensordict_unchecked(storage._new_like(values, batch_size, device))
        td = TensorDict._new_unchecked(values, batch_size, device)  # over a lazy stack
        td._mark_unbatched_if_any()
        return self._named_like_self(self._from_tensordict_unchecked(td))

    def _map_values(
        self, fn: Callable[[Value], Value], batch_size: torch.Size, device: Any = ...
    ) -> Self:
        if device is ...:
            return self._wrap(self._tensordict._map_values(fn, batch_size))
        return self._wrap(self._tensordict._map_values(fn, batch_size, device))

    def _map_batch(
        self, fn: Callable[[Value], Value], batch_size: torch.Size, device: Any = ...
    ) -> Self:
        if device is ...:
            return self._wrap(self._tensordict._map_batch(fn, batch_size))
        return self._wrap(self._tensordict._map_batch(fn, batch_size, device))

    def _map_values_split(
        self, fn: Callable[[Value], Sequence[Value]], batch_sizes: Sequence[torch.Size]
    ) -> tuple[Self, ...]:
        return tuple(map(self._wrap, self._tensordict._map_values_split(fn, batch_sizes)))

    def _check_new_batch_size(self, new: torch.Size, prefix: tuple[str, ...]) -> None:
        self._tensordict._check_new_batch_size(new, prefix)

    def _assign_batch_size(self, new: torch.Size) -> None:
        self._tensordict._assign_batch_size(new)

    def _key_names(self) -> list[str]:
        return self._tensordict._key_names()

    def _has_entry(self, key: str) -> bool:
        return self._tensordict._has_entry(key)

    def _repr_items(self) -> Iterator[tuple[str, Any]]:
        hidden = self.__tclass_info__.repr_hidden  # field(repr=False), as the peer's repr
        items = self._tensordict._repr_items()
        return (item for item in items if item[0] not in hidden) if hidden else items

    def _repr_absent(self) -> Sequence[str]:
        hidden = self.__tclass_info__.repr_hidden
        return [name for name in self._absent_fields() if name not in hidden]

    @property
    def _dim_names(self) -> Names:
        return self._tensordict._dim_names

    def _assign_names(self, names: Names) -> None:
        self._tensordict._assign_names(names)

    def _rename_all(self, names: Names) -> None:
        self._tensordict._rename_all(names)

    def _become(self, other: Self) -> None:
        self._tensordict._become(other._tensordict)  # type: ignore[arg-type]

    def _assign_device(self, device: torch.device | None) -> None:
        self._tensordict._assign_device(device)

    def _call_on_exit(self, callback: Callable[[], object]) -> None:
        self._tensordict._call_on_exit(callback)

    # --- math: the storage's tensors, the result in this record's class --------------------

    def _collect(
        self, into: Gather, operands: tuple[Any, ...], batch_dims: int, prefix: tuple[str, ...]
    ) -> None:
        if into.guards is None:
            self._tensordict._collect(into, operands, batch_dims, prefix)
            return
        specs = self.__tclass_info__.specs  # an in-place write: bounded fields listed
        start = len(into.leaves)
        self._tensordict._collect(into, operands, batch_dims, prefix)
        if specs is not None and specs.constrained:
            guard_leaves(self, into, start, specs)

    def _rebuilt(
        self,
        results: Iterator[torch.Tensor],
        resize: Resize | None,
        values: Iterator[Any] | None = None,
    ) -> Self:
        return self._wrap(self._tensordict._rebuilt(results, resize, values))

    def _flat_entries(self) -> Mapping[str, Value] | None:
        return dense_entries(self)  # (None over a lazy stack: its walk)

    def _flat_pointwise(
        self,
        foreach: Callable[..., Any] | None,
        each: Callable[..., Any],
        operands: tuple[Any, ...],
        kwargs: dict[str, Any] | None,
    ) -> tuple[Self, list[torch.Tensor]] | None:
        # LeafWalkOps._flat_pointwise with the storages read directly, for a record kept
        # in one TensorDict with no operand, a number, or a record or TensorDict kept so
        # over the same batch size or none (record normalisation, ``(obs - mean) / std``:
        # the calls saved are most of what it adds to the kernels); else the general form.
        storage = self._tensordict
        if storage.__class__ is not TensorDict:
            return None  # over a lazy stack: its walk
        theirs = None
        if operands:
            other = operands[0]
            node = other._tensordict if isinstance(other, RecordPrimitives) else other
            if node.__class__ is TensorDict:
                shape = node._batch_size
                # traced: the general form compares the sizes on the leaves (batch sizes
                # compared as ints would be more inputs of the graph)
                if shape and (tracing() or shape != storage._batch_size):
                    return super()._flat_pointwise(foreach, each, operands, kwargs)
                theirs = node._tensors
                if len(theirs) != len(storage._tensors):  # (the split finds each key)
                    return None
            elif type(other) not in _PYTHON_NUMBERS:
                return super()._flat_pointwise(foreach, each, operands, kwargs)
        split = flat_split(storage._tensors, theirs)
        if split is None:
            return None
        leaves, pieces, keys, entries = split
        results = run_flat(foreach, each, leaves, operands if theirs is None else (pieces,), kwargs)
        entries.update(zip(keys, results))
        td = storage._new_like(entries, storage._batch_size, storage._device)
        return self._from_tensordict_unchecked(td), leaves

    def _reduced(self, along: Along) -> tuple[Self, ...]:
        return tuple(map(self._wrap, self._tensordict._reduced(along)))

    def _renamed(self, key_transform: Callable[[str], str]) -> Self:
        """As every collection's, where each new key is a field of the class: a key
        renamed to one that is not is an ``UnknownFieldError`` (a ``ValueError``, as the
        peer raises building the record), nested records first (``key_transform`` of a
        reduction)."""
        out = self._tensordict._renamed(key_transform)
        fields = self.__tclass_info__.field_names
        unknown = [key for key in out._key_names() if key not in fields]
        if unknown:
            name = type(self).__name__
            msg = (
                f"key_transform renames entries of the {name} to {unknown}, which are not "
                f"fields of {name} (fields: {', '.join(fields)}); rename the keys of a "
                "TensorDict instead (x.to_tensordict())"
            )
            raise UnknownFieldError(msg)
        return self._wrap(out)

    def _default_cast_filter(self) -> Callable[[tuple[str, ...], torch.Tensor], bool] | None:
        return self.__tclass_info__.options["cast_filter"]  # the class option (float(), half()...)

    # The lock graph (_lock_graph.py) sees through a record to its storage.
    def _own_lock(self) -> bool | None:
        return self._tensordict._own_lock()

    def _lock_down(self, above: list[Ref] | None, link: bool = True) -> None:
        self._tensordict._lock_down(above, link)

    def _unlock_down(self, reached: list[LockGraph]) -> None:
        if not self.__tclass_info__.options["frozen"]:
            self._tensordict._unlock_down(reached)

    def _lock_refs(self) -> list[Ref]:
        return self._tensordict._lock_refs()

    def _keep_lock_refs(self, refs: list[Ref]) -> None:
        self._tensordict._keep_lock_refs(refs)
