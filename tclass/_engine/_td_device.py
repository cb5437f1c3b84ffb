"""Devices of a TensorDict (a mixin of ``TensorDict``, which holds the slots these
methods change): ``to`` moves and/or casts every tensor (one consolidated buffer when the
TensorDict has one), ``cuda``, ``cpu`` and ``clear_device_``, and the accessors through
which the other layers put entries, detach held views and adopt a saved copy's state."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

import torch
from typing_extensions import Self

from tclass._base._tensordict_base import TensorDictBase, Value
from tclass._base.implemented._collection import TensorCollection, ToArg
from tclass._core._device import (
    DeviceLike,
    as_device,
    move_error,
    parse_to_args,
    pop_to_options,
    wait_for_device_copies,
)

if TYPE_CHECKING:
    from tclass._engine._consolidate import Consolidated
    from tclass._engine._saved import SavedAt
    from tclass._engine._td import TensorDict

__all__ = ["DeviceOps", "moved_node"]

_DEVICE_TYPES = frozenset({str, torch.device})  # to(device) called with one of these


def moved_node(moved: TensorCollection, source: TensorCollection) -> TensorCollection:
    """A nested node of a ``to`` result (``moved``, the ``to`` of the node ``source``)
    as the peer's ``to`` gives it: a new node even where nothing moved (never the
    source's own: ``clone(False)``, over the same tensors), unlocked whatever the
    source's lock. The peer rebuilds the whole tree and locks it when the root is locked
    (``_fast_apply(propagate_lock=True)``); the caller locks its result so."""
    if moved is source:
        return source.clone(False)
    return moved.unlock_() if moved.is_locked else moved


def _as_data(move: Callable[[Any], Any], device: torch.device | None) -> Callable[[Any], Any]:
    """``move`` for the values of a TensorDict: a nested collection that moves as its
    data (a TensorDictParams) gives a TensorDict over its moved tensors, which stay
    connected to its parameters' graph, as the peer's (its own ``to`` makes new
    parameters); any other nested collection a :func:`moved_node`."""

    def each(value: Any) -> Any:
        if isinstance(value, TensorCollection):
            if value._moves_as_data:
                return value._map_values(each, value.batch_size, device)
            return moved_node(move(value), value)
        return move(value)

    return each


class DeviceOps(TensorDictBase):
    """The device methods of ``TensorDict`` (see the module docstring)."""

    if TYPE_CHECKING:  # TensorDict's slots and methods
        _tensors: dict[str, Value]
        _batch_size: torch.Size
        _device: torch.device | None
        _locked: bool
        _consolidated: Consolidated | None
        _saved_at: SavedAt | None

        def _map_values(
            self, fn: Callable[[Value], Value], batch_size: torch.Size, device: Any = ...
        ) -> Self: ...
    else:
        __slots__ = ()

    def to(self, *args: ToArg, **kwargs: Any) -> Self:
        """Moves and/or casts every tensor: ``to(device)``, ``to(dtype)``,
        ``to(device, dtype)``, ``to(tensor)`` or ``to(other_collection)``, with
        ``non_blocking=``. Returns ``self`` when nothing would change. ``cast_filter(key,
        tensor) -> bool`` limits a dtype cast to the tensors it picks (as ``float()``...).
        The peer's ``batch_size=``, ``inplace=``, ``non_blocking_pin=`` and
        ``num_threads=`` as it reads them (see ``_to_with``), and torch's
        ``memory_format=`` (4-d and 5-d tensors, as ``nn.Module.to``)."""
        if not kwargs and len(args) == 1 and args[0].__class__ in _DEVICE_TYPES:
            return self._to_device(cast("str | torch.device", args[0]))  # the usual call
        if args and isinstance(args[0], TensorCollection):
            # A positional collection is the peer's attrs: each leaf moved and cast as the
            # TensorAttrs under its key says (a plain collection gives none: every leaf
            # kept, device None). Its device and dtype are read with ``other=``.
            kwargs.pop("cast_filter", None)  # the attrs give each leaf its dtype (the peer)
            return self._to_attrs(args, kwargs)  # td.to(other.attrs()): leaf by leaf
        options = pop_to_options(kwargs)
        if options is not None:
            return self._to_with(args, kwargs, options)
        cast_filter = kwargs.pop("cast_filter", None)
        if cast_filter is not None:
            request = parse_to_args(args, kwargs)
            placed = self
            if request.device is not None:
                placed = self.to(request.device, non_blocking=request.non_blocking)
            return placed if request.dtype is None else placed._cast(request.dtype, cast_filter)
        if len(args) == 1 and not kwargs and isinstance(args[0], (str, torch.device)):
            return self._to_device(args[0])
        request = parse_to_args(args, kwargs)
        device, dtype, non_blocking = request.device, request.dtype, request.non_blocking
        if dtype is None and (device is None or device == self._device):
            return self
        new_device = self._device if device is None else device
        try:
            if dtype is None and device is not None and self._consolidated is not None:
                moved = self._consolidated.moved(self, device, non_blocking)
                if moved is not None:
                    return moved  # type: ignore[no-any-return]
            result = self._map_values(
                _as_data(
                    lambda v: v.to(device=device, dtype=dtype, non_blocking=non_blocking),
                    new_device,
                ),
                self._batch_size,
                new_device,
            )
        except (AssertionError, RuntimeError) as error:
            raise move_error(error, device, self) from error
        if non_blocking and device is not None and device.type == "cpu":
            wait_for_device_copies()
        return result.lock_() if self._locked else result

    def _to_device(self, to: str | torch.device) -> Self:
        """``to(device)``: ``self`` when already there."""
        device = as_device(to)
        if device == self._device:
            return self
        try:
            if self._consolidated is not None:
                moved = self._consolidated.moved(self, device, False)
                if moved is not None:
                    return moved  # type: ignore[no-any-return]
            if device is not None and device.type == "cuda":
                result = self._queued_to(device)
            else:
                result = self._map_values(
                    _as_data(lambda v: v.to(device), device), self._batch_size, device
                )
        except (AssertionError, RuntimeError) as error:
            raise move_error(error, device, self) from error
        return result.lock_() if self._locked else result

    def _queued_to(self, device: torch.device) -> Self:
        """A blocking ``to(device)`` onto a GPU, as fast as a non-blocking one: every copy
        is queued at once. The driver has read a pageable source by the time its copy
        returns, so only copies from pinned memory are waited for (once, at the end),
        and the source may be changed as soon as this returns (the peer does not wait)."""
        pinned = False

        def move(value: Any) -> Any:
            nonlocal pinned
            if isinstance(value, torch.Tensor):
                pinned = pinned or value.is_pinned()
                return value.to(device, non_blocking=True)
            if isinstance(value, TensorCollection) and value._moves_as_data:
                return value._map_values(move, value.batch_size, device)
            if isinstance(value, TensorCollection):  # the same, with its own wait
                return moved_node(value.to(device), value)
            return value.to(device)

        moved = self._map_values(move, self._batch_size, device)
        if pinned:
            wait_for_device_copies(device)
        return moved

    def cuda(self, device: int | DeviceLike = None) -> Self:
        """Same as ``to("cuda")`` (or ``to("cuda:<device>")``)."""
        if device is None:
            return self.to("cuda")
        if isinstance(device, int):
            return self.to(torch.device("cuda", device))
        return self.to(device)

    def cpu(self) -> Self:
        """Same as ``to("cpu")``."""
        return self.to("cpu")

    def clear_device_(self) -> Self:
        """Sets ``device`` to ``None`` (here and in nested TensorDicts) without moving data."""
        self._device = None
        for value in self._tensors.values():
            if isinstance(value, TensorCollection):
                value.clear_device_()
        return self

    # --- accessors for the other layers (see TensorDict's; these move or adopt data) ---

    def _put(self, key: str, value: Value) -> None:
        """Stores ``value`` under ``key`` in memory only, unchecked (no lock, batch size
        or folder): for a caller that built the value to fit, as a loader does."""
        self._tensors[key] = value

    def _detach_held_views(self) -> None:
        for key, value in self._tensors.items():  # same keys: the dict keeps its size
            if isinstance(value, TensorCollection):
                value._detach_held_views()
            elif isinstance(value, torch.Tensor) and value.requires_grad:
                self._tensors[key] = value.detach()  # a view: torch detaches none in place

    def _adopt(self, source: TensorDict) -> None:
        """Takes the batch size, device and folder of ``source``, a saved copy of this
        node (grown, after an append) whose leaves the caller has just adopted with
        :meth:`_put`."""
        self._batch_size = source._batch_size
        self._device = source._device
        self._saved_at = source._saved_at
