"""``ParamsStorage``: a ``TensorDictParams`` as the storage of a record.

``Cls.from_tensordict(params)`` keeps ``params`` itself as the record's storage, as the
peer's record keeps it: the record reads and writes its fields through the storage
primitives below, as it does those of a TensorDict, a file or a view (``_tensors``,
``_batch_size``, ``_device``, ``_store_entry``, ``_remove_entry``). So a tensor the record
stores (``record.w = t``, ``set``, ``update``...) is converted as ``params`` converts it
(a float tensor an ``nn.Parameter``, another a buffer; ``no_convert``: buffers only), its
in-place writes (``set_``, ``update_``, rows) and locks are ``params``'s own: the one
place that converts is ``params``, whatever path wrote.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import torch

from tclass._base._tensordict_base import Value
from tclass._base.implemented._view_entries import ViewEntries
from tclass._interop._param_leaves import convert_tensors

if TYPE_CHECKING:
    from tclass._engine._td import TensorDict

__all__ = ["ParamsStorage"]


class ParamsStorage:
    """The storage primitives a record uses, answered by the wrapped TensorDict after
    converting what is stored (the record checked it, and the lock, before)."""

    if TYPE_CHECKING:
        _param_td: TensorDict
        _convert: Callable[[torch.Tensor], torch.Tensor]

        def _has_entry(self, key: str) -> bool: ...
        def _missing_key(self, key: object, *, popping: bool = False) -> Exception: ...
        def _entry(self, key: str) -> Value: ...
        def _key_names(self) -> list[str]: ...
    else:
        __slots__ = ()

    @property
    def _tensors(self) -> Mapping[str, Value]:
        """The entries as a record reads its fields (a write through it converts)."""
        return ViewEntries(self)

    @property
    def _batch_size(self) -> torch.Size:
        return self._param_td._batch_size

    @property
    def _device(self) -> torch.device | None:
        return self._param_td._device

    def _store_entry(self, key: str, value: Value, blank: bool = False) -> Value:
        """Stores a record's checked field, converted as ``set`` converts it (under a
        ``lock=True`` wrap too, as ``set``: the record checked this object's lock)."""
        converted: Any = convert_tensors(value, self._convert)
        return self._param_td._store_entry(key, converted, blank)

    def _check_writes_at(self, writes: Sequence[tuple[tuple[str, ...], Any, Any]]) -> None:
        """``update_``'s and ``update_at_``'s writes checked by the wrapped TensorDict
        before the first is made (one refused leaves every parameter as it was)."""
        self._param_td._check_writes_at(writes)

    def _remove_entry(self, key: str) -> Value:
        """Removes a record's field (set to None, deleted)."""
        return self._param_td._remove_entry(key)

    def _index(self, index: Any) -> Any:
        """Rows of the record: a TensorDict of the parameters' rows (plain tensors in the
        parameters' graph), as ``params[index]`` and the peer's record give."""
        return self._param_td._index(index)

    def _index_int(self, index: int) -> TensorDict:
        return self._param_td._index_int(index)

    def _index_slice(self, index: slice) -> TensorDict:
        return self._param_td._index_slice(index)
