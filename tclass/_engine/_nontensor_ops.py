"""What a Python-value node answers as a collection (the base of ``_NonTensorNode``,
in ``tclass._engine._nontensor``): it holds no entries, records a device (there is no
tensor to move) and a lock flag, lists its values in row-major order, and keeps its
value through math, only the batch size following."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import torch
from typing_extensions import Self

from tclass._base._tensordict_base import Value
from tclass._base.implemented._collection import TensorCollection, ToArg
from tclass._base.implemented._leaf_walk import Resize
from tclass._base.implemented._lock_graph import Ref
from tclass._base.implemented._reductions import Along
from tclass._core._device import DeviceLike, parse_to_args
from tclass._core._linked_list import linked_values
from tclass._engine._keyless import KeylessOps
from tclass._engine._value_positions import expanded, nested
from tclass.errors import EntryTypeError

__all__ = ["NonTensorOps"]

_NO_ENTRIES: Mapping[str, Value] = {}
_NO_REFS: list[Ref] = []  # (read-only)


class NonTensorOps(KeylessOps):
    """The base of ``_NonTensorNode``: what both node kinds answer without knowing which
    kind they are."""

    if TYPE_CHECKING:  # _NonTensorNode's slots
        _device: torch.device | None
        _locked: bool
        _lock_parents: list[Ref]  # set on first use: see _lock_refs
    else:
        __slots__ = ()

    @property
    def device(self) -> torch.device | None:
        return self._device

    def _lock_state(self) -> bool:
        return self._locked

    def tolist(
        self,
        *,
        convert_nodes: bool = True,
        convert_tensors: bool | Literal["numpy"] = False,
        tolist_first: bool = False,
        as_linked_list: bool = False,
    ) -> Any:
        """The value of every element, as nested lists shaped like the batch
        (:class:`~tclass.utils.LinkedList` objects writing into the node with
        ``as_linked_list=True``)."""
        if as_linked_list:
            return linked_values(self._flat(), self.batch_size, self)
        return nested(self._flat(), self.batch_size)

    def to_dict(
        self,
        *,
        retain_none: bool = True,
        convert_tensors: bool | Literal["numpy"] = False,
        tolist_first: bool = False,
        as_linked_list: bool = False,
    ) -> Any:
        """What the node holds, as the peer's (not a dict: it has no entries): the values
        as nested lists shaped like the batch (:meth:`tolist`); a ``NonTensorData``'s
        value."""
        return self.tolist(convert_tensors=convert_tensors, as_linked_list=as_linked_list)

    def _items(self) -> Iterator[tuple[str, Value]]:
        return iter(())

    def _entries(self) -> Mapping[str, Value]:
        return _NO_ENTRIES

    def _entry(self, key: str) -> Value:
        raise self._missing_key(key)

    def get(self, key: Any, default: Any = None) -> Any:
        return default

    def set(
        self, key: Any, value: Any, inplace: bool = False, *, non_blocking: bool = False
    ) -> Self:
        msg = (
            f"{type(self).__name__} holds a Python value and has no entries; cannot set "
            f"{key!r} under it: replace the value with a collection first, or set the entry "
            "under another key"
        )
        raise EntryTypeError(msg)

    def _update_entries(
        self,
        source: Any,
        clone: bool,
        inplace: bool,
        keys_to_update: Sequence[Any] | None,
        is_leaf: Callable[[type], bool] | None,
    ) -> Self:
        if isinstance(source, NonTensorOps):  # another value node: its value(s), the peer
            return self._take_values(source, ..., clone, inplace, "update")
        if len(source) == 0:
            return self
        msg = (
            f"{type(self).__name__} holds a Python value and has no entries to update; "
            "update it from another NonTensorData / NonTensorStack"
        )
        raise EntryTypeError(msg)

    def update_(
        self,
        input_dict_or_td: Mapping[Any, Any] | TensorCollection | None = None,
        clone: bool = False,
        *,
        non_blocking: bool = False,
        keys_to_update: Sequence[Any] | None = None,
        **kwargs: Any,
    ) -> Self:
        """From another Python-value node: its value(s) written into this node in place
        (see :meth:`_take_values`)."""
        if isinstance(input_dict_or_td, NonTensorOps) and not kwargs:
            return self._take_values(input_dict_or_td, ..., clone, True, "update_")
        return super().update_(
            input_dict_or_td,
            clone,
            non_blocking=non_blocking,
            keys_to_update=keys_to_update,
            **kwargs,
        )

    def copy_(self, src: TensorCollection | Any, non_blocking: bool = False) -> Self:
        """From another Python-value node: its value(s) written into this node in place,
        as the peer's (see :meth:`_take_values`; a locked node refuses); the base copies
        tensors only, so it wrote nothing here, without a word."""
        if isinstance(src, NonTensorOps):
            return self._take_values(src, ..., False, True, "copy_")
        return super().copy_(src, non_blocking)

    def update_at_(
        self,
        input_dict_or_td: Mapping[Any, Any] | TensorCollection,
        idx: Any,
        clone: bool = False,
        *,
        non_blocking: bool = False,
        keys_to_update: Sequence[Any] | None = None,
    ) -> Self:
        """From another Python-value node: its value(s) written at ``idx`` in place (see
        :meth:`_take_values`)."""
        if isinstance(input_dict_or_td, NonTensorOps):
            return self._take_values(input_dict_or_td, idx, clone, True, "update_at_")
        return super().update_at_(
            input_dict_or_td,
            idx,
            clone,
            non_blocking=non_blocking,
            keys_to_update=keys_to_update,
        )

    def _take_values(
        self, source: NonTensorOps, index: Any, clone: bool, inplace: bool, op: str
    ) -> Self:
        """``update`` / ``update_`` / ``update_at_`` from another Python-value node: its
        value(s) written at ``index`` (``...``: everywhere), as the peer writes them."""
        raise NotImplementedError

    def to(self, *args: ToArg, **kwargs: Any) -> Self:
        """Records a new device (there is no tensor to move; a dtype changes nothing but
        gives a new node, as a cast of a collection gives new ones: locked as its source,
        as the peer's, but not saved in its folder, and sharing no node with it, so it
        unlocks on its own). A collection
        given is the peer's attrs (``to(td.attrs())``): nothing to cast, a new node with
        no device, as a TensorDict's ``to(collection)`` gives."""
        if args and isinstance(args[0], TensorCollection):  # locked as its source, too
            moved = self._map_values(_keep, self.batch_size, None)
            return moved.lock_() if self.is_locked else moved
        request = parse_to_args(args, kwargs)
        device = request.device
        if device is None or device == self._device:
            if request.dtype is None:
                return self
            device = self._device
        moved = self._map_values(_keep, self.batch_size, device)  # locked as its source, as
        return moved.lock_() if self.is_locked else moved  # the peer's (a collection's cast)

    def cpu(self) -> Self:
        return self.to("cpu")

    def cuda(self, device: int | DeviceLike = None) -> Self:
        return self.to(
            torch.device("cuda", device) if isinstance(device, int) else device or "cuda"
        )

    def clear_device_(self) -> Self:
        self._device = None
        return self

    def _assign_device(self, device: torch.device | None) -> None:
        """Records ``device`` (a holder's ``auto_device_``); the value does not move."""
        self._device = device

    def lock_(self) -> Self:
        self._lock_tree()
        return self

    def unlock_(self) -> Self:
        """Unlocks the node.

        Raises:
            LockedError: (a ``RuntimeError``) if the node is nested in another locked
                collection that is alive: unlock that one first.
        """
        self._unlock_tree()
        return self

    def _flag_lock(self, locked: bool) -> None:
        self._locked = locked

    def _lock_links(self) -> tuple[()]:
        return ()

    def _lock_refs(self) -> list[Ref]:
        return getattr(self, "_lock_parents", _NO_REFS)  # (unset until a lock links it)

    def _keep_lock_refs(self, refs: list[Ref]) -> None:
        self._lock_parents = refs

    def _check_new_batch_size(self, new: torch.Size, prefix: tuple[str, ...]) -> None:
        """A parent's new batch size must fit this node (see each kind)."""

    def _assign_batch_size(self, new: torch.Size) -> None:
        """Follows a parent's new batch size (see each kind)."""

    def _flat(self) -> list[Any]:
        """The value of each element, in row-major order."""
        raise NotImplementedError

    def _flat_as(self, shape: torch.Size) -> list[Any]:
        """The value of each element of the batch broadcast to ``shape``, row-major.

        Raises:
            RuntimeError: if the batch size does not broadcast to ``shape``.
        """
        flat = self._flat()
        if self.batch_size == shape:
            return flat
        _, positions = expanded(self.batch_size, shape)
        return [flat[i] for i in positions]

    def _as_array(self) -> np.ndarray[Any, Any]:
        """The values as a numpy object array shaped like the batch (a new array)."""
        if self.batch_size.numel() == 0:  # a stack of no elements may keep its value
            return np.empty(tuple(self.batch_size), dtype=object)
        flat = self._flat()
        array = np.empty(len(flat), dtype=object)
        for position, value in enumerate(flat):
            array[position] = value  # item by item: numpy would unpack a list value
        return array.reshape(tuple(self.batch_size))

    # --- math: the value is kept (shared), the batch size follows ------------------------

    def _with_each_value(self, fn: Callable[[Any], Any]) -> Self:
        """This node with ``fn`` applied to the value of each element, batch and device
        kept: ``self`` when ``fn`` gives every value back unchanged (a field's cast)."""
        raise NotImplementedError

    def _rebuilt(
        self,
        results: Iterator[torch.Tensor],
        resize: Resize | None,
        values: Iterator[Any] | None = None,
    ) -> Self:
        if resize is None:
            return self._map_values(_keep, self.batch_size)
        return self._rebatched(resize(self.batch_size))

    def _reduced(self, along: Along) -> tuple[Self, ...]:
        return (self._rebatched(along.batch(self.batch_size)),) * along.outputs

    def _renamed(self, key_transform: Callable[[str], str]) -> Self:
        return self

    def _rebatched(self, batch_size: torch.Size) -> Self:
        """The value(s) over a new batch size: broadcast, or merged where equal."""
        raise NotImplementedError


def _keep(value: Value) -> Value:
    return value
