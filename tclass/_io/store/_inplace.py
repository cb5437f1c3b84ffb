"""Writing into what a ``PersistentTensorDict``'s store already holds (a mixin of
``PersistentTensorDict``, in ``_persistent.py``), through the Store protocol: ``set_``
and ``update_`` into existing entries, ``ptd[idx] = rows`` into the rows of every array,
and the in-place methods (``zero_``, ``apply_``, ``td += 1``...), whose results are
written back to the store."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import torch
from typing_extensions import Self

from tclass._base._tensordict_base import TensorDictBase
from tclass._base.implemented._collection import TensorCollection
from tclass._core._records import is_record, storage_of
from tclass._engine._nontensor import NonTensorData, NonTensorStack
from tclass._io.store._datasets import fill, to_numpy, to_tensor, write_rows
from tclass._io.store._protocol import Node, StoreGroup, is_group
from tclass._io.store._records import source_items
from tclass.errors import InPlaceWriteError

if TYPE_CHECKING:
    from tclass._io.store._persistent import PersistentTensorDict

__all__ = ["StoreInPlaceWrites"]

_MISSING: Any = object()


class StoreInPlaceWrites(TensorDictBase):
    """A mixin of ``PersistentTensorDict`` (see the module docstring)."""

    if TYPE_CHECKING:  # PersistentTensorDict's slots and methods
        _batch_size: torch.Size

        @property
        def _label(self) -> str: ...
        def _writable(self) -> StoreGroup: ...
        def _child_of(self, key: str, group: StoreGroup) -> PersistentTensorDict: ...
        def _group_at(self, path: Sequence[str]) -> PersistentTensorDict: ...
        def _write_values(
            self, group: StoreGroup, key: str, value: NonTensorData | NonTensorStack
        ) -> None: ...
    else:
        __slots__ = ()

    def _existing(self, key: Any) -> tuple[PersistentTensorDict, StoreGroup, str, Node]:
        """For a write in place at ``key``: the node holding it, its writable group, the
        entry's name and the entry (an array or a group).

        Raises:
            KeyNotFoundError: (a ``KeyError``) ``key`` is not in the file.
        """
        path = (key,) if isinstance(key, str) else tuple(key)
        node = self._group_at(path[:-1])
        group = node._writable()
        name = path[-1]
        if name not in group:
            raise self._missing_key(key)
        return node, group, name, group[name]

    def set_(self, key: Any, value: Any, *, non_blocking: bool = False) -> Self:
        """Write ``value`` into the existing entry ``key`` (a dataset, or a group entry
        by entry)."""
        node, group, name, target = self._existing(key)
        nested = isinstance(storage_of(value), (Mapping, TensorCollection))
        if is_group(target) != (nested and not isinstance(value, (NonTensorData, NonTensorStack))):
            held = "a group" if is_group(target) else "a dataset"
            msg = (
                f"cannot write a {type(value).__name__} into {name!r} in place: the file holds "
                f"{held} there; unlock the collection and set the entry to replace it"
            )
            raise InPlaceWriteError(msg)
        if is_group(target):
            node._child_of(name, target).update(value, inplace=True)
        elif isinstance(value, (NonTensorData, NonTensorStack)):
            node._write_values(group, name, value)
        else:
            write_rows(target, Ellipsis, value, 0, self._label)
        return self

    def set_at_(self, key: Any, value: Any, index: Any, *, non_blocking: bool = False) -> Self:
        """Write ``value`` into the rows ``index`` of the existing entry ``key`` (a
        dataset, or every dataset of a group); ``update_at_`` and ``copy_at_`` write
        through here."""
        node, group, name, target = self._existing(key)
        if isinstance(index, list):
            index = torch.tensor(index)
        if is_group(target):
            node._child_of(name, target)._write_rows(index, value)
        elif target.dtype is not None:
            write_rows(target, index, value, len(node._batch_size), self._label)
        else:  # a Python value: through the group's rows, as ptd[index] = {...}
            node[index] = {name: value}
        return self

    def update_(
        self,
        input_dict_or_td: Any = None,
        clone: bool = False,
        *,
        non_blocking: bool = False,
        keys_to_update: Sequence[Any] | None = None,
        **kwargs: Any,
    ) -> Self:
        """Write every entry of ``input_dict_or_td`` (and ``kwargs``) into the existing
        datasets."""
        source = dict(kwargs) if input_dict_or_td is None else input_dict_or_td
        if input_dict_or_td is not None and kwargs:
            source = {**dict(source_items(input_dict_or_td)), **kwargs}
        return self.update(source, clone=clone, inplace=True, keys_to_update=keys_to_update)

    def _write_rows(self, index: Any, value: Any) -> None:
        group = self._writable()
        if isinstance(index, list):
            index = torch.tensor(index)
        if is_record(value):
            value = storage_of(value)
        for key in self._key_names():
            node = group[key]
            if isinstance(value, (int, float, bool)):
                part: Any = value
            elif isinstance(value, Mapping) or isinstance(value, TensorCollection):
                part = value.get(key, _MISSING)
                if part is _MISSING:
                    continue
            else:
                part = value
            if is_group(node):
                self._child_of(key, node)._write_rows(index, part)
            elif node.dtype is not None:
                write_rows(node, index, part, len(self._batch_size), self._label)

    # --- in-place: written back to the file ----------------------------------------------

    def _apply_in_place(
        self, fn: Callable[..., torch.Tensor | None], others: tuple[Any, ...]
    ) -> Self:
        group = self._writable()
        for key in self._key_names():
            node = group[key]
            paired = tuple(other._entry(key) for other in others)
            if is_group(node):
                self._child_of(key, node)._apply_in_place(fn, paired)
            elif node.dtype is not None:
                tensor = to_tensor(node.read())
                result = fn(tensor, *paired)
                node.write(..., to_numpy(tensor if result is None else result, self._label))
        return self

    def _pointwise_(
        self,
        foreach: Callable[..., Any] | None,
        each: Callable[..., Any],
        operands: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
        **options: Any,
    ) -> Self:
        """In-place math (``td += 1``, ``mul_``, ``lerp_``...) on the file: the datasets
        read, worked on in memory, written back."""
        local = self.to_tensordict()
        local._pointwise_(foreach, each, operands, kwargs, **options)
        return self.update_(local)

    def zero_(self) -> Self:
        """Write zeros into every array (nothing is read)."""
        return self._fill_all(0)

    def _fill_all(self, value: float | bool) -> Self:
        group = self._writable()
        for key in self._key_names():
            node = group[key]
            if is_group(node):
                self._child_of(key, node)._fill_all(value)
            elif node.dtype is not None and 0 not in (node.shape or ()):
                fill(node, node.dtype, value)
        return self
