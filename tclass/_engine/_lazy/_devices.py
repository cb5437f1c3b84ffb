"""Devices and dim names of a lazy stack (a layer of ``LazyStackedTensorDict``): ``to``
moves or casts every member (one consolidated buffer when the stack has one); the stack's
device is the members' common one; the members name the batch dims but the stack dim,
whose name the stack keeps."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch
from typing_extensions import Self

from tclass._base.implemented._collection import TensorCollection, ToArg
from tclass._core import _names
from tclass._core._batch import as_batch_size
from tclass._core._device import DeviceLike, as_device, parse_to_args, pop_to_options
from tclass._core._names import DimName, Names
from tclass._engine._lazy._parts import common_device
from tclass._engine._lazy._reshape import LazyReshapeOps
from tclass._engine._td_device import moved_node
from tclass.errors import ArgumentError, BatchSizeError, DimNameError

if TYPE_CHECKING:
    from tclass._engine._consolidate import Consolidated

__all__ = ["LazyDevices"]


class LazyDevices(LazyReshapeOps):
    """``to``, ``cuda``, ``cpu``, the device setters and ``names`` of a lazy stack."""

    if TYPE_CHECKING:  # LazyStackedTensorDict's slot
        _consolidated: Consolidated | None
    else:
        __slots__ = ()

    def to(self, *args: ToArg, **kwargs: Any) -> Self:
        """Moves or casts every member (see ``TensorDict.to``); ``self`` if none changed.

        Raises:
            ArgumentError: (a ``TypeError``, as the peer raises) for a ``batch_size=``
                that does not keep the stack dim, before anything is moved.
        """
        options = pop_to_options(kwargs)
        if options is not None:
            if options.batch_size is not None:
                self._check_to_batch_size(options.batch_size)
            return self._to_with(args, kwargs, options)
        if self._consolidated is not None and not (args and isinstance(args[0], TensorCollection)):
            request = parse_to_args(args, dict(kwargs))  # (a collection: attrs, member-wise)
            moved = (
                None
                if request.dtype is not None
                else self._consolidated.moved(self, request.device, request.non_blocking)
            )
            if moved is not None:
                return moved  # type: ignore[no-any-return]
        members = [member.to(*args, **kwargs) for member in self._members]
        if all(new is old for new, old in zip(members, self._members)):
            return self
        members = [moved_node(new, old) for new, old in zip(members, self._members)]
        result = self._restacked(members, self._stack_dim, self._batch_size)
        return result.lock_() if self.is_locked else result  # new members, locked as self

    def _check_to_batch_size(self, batch_size: Any) -> None:
        try:
            self._check_new_batch_size(as_batch_size(batch_size), ())
        except BatchSizeError as error:
            msg = (
                f"Cannot pass batch-size to a LazyStackedTensorDict that changes its stack "
                f"dim ({error}); give the members their batch size, or call "
                "to_tensordict().to(..., batch_size=...)"
            )
            raise ArgumentError(msg) from error

    def _take_moved(self, moved: Self) -> None:
        for member, new in zip(self._members, moved._members):
            member._take_moved(new)
        self._device = moved._device

    def _adopt(self, source: Self) -> None:
        """Takes the device of ``source``, a saved copy of this stack whose members'
        leaves the caller has just adopted (see ``TensorDict._adopt``)."""
        self._device = source._device

    def cuda(self, device: int | DeviceLike = None) -> Self:
        """Same as ``to("cuda")`` (or ``to("cuda:<device>")``)."""
        if device is None:
            return self.to("cuda")
        return self.to(
            torch.device("cuda", device) if isinstance(device, int) else as_device(device)
        )

    def cpu(self) -> Self:
        """Same as ``to("cpu")``."""
        return self.to("cpu")

    def clear_device_(self) -> Self:
        """Sets every member's device to ``None`` without moving data."""
        for member in self._members:
            member.clear_device_()
        self._device = None
        return self

    def auto_device_(self) -> Self:
        """Sets every member's device (and its nested collections') to the one its
        tensors are on, and this stack's to the device they share (None if several);
        nothing is stacked."""
        for member in self._members:
            member.auto_device_()
        self._device = common_device(self._members)
        return self

    # --- names -------------------------------------------------------------------------

    @property
    def stack_dim_name(self) -> Any:
        """The name of the stack dim (the members name the other dims)."""
        return self._stack_dim_name

    @property
    def names(self) -> list[Any]:  # str names usually: any hashable, as the peer
        """The names of the batch dims: the members', with the stack dim's.

        Raises:
            DimNameError: (a ``ValueError`` and ``RuntimeError``, as the peer raises) if
                the members name their dims differently (one renamed through another
                stack that shares it), or have different numbers of dims (one's batch
                size set through a view or another stack that holds it).
        """
        members = self._members
        if not members:
            return [self._stack_dim_name]
        out = list(members[0].names)
        first, dims = members[0]._dim_names, len(out)
        for position, member in enumerate(members):
            differs = member._dim_names != first or member.batch_dims != dims
            if differs and list(member.names) != out:
                msg = (
                    f"Not all dim names match: the members of this lazy stack name their "
                    f"dims {out} (member 0) and {list(member.names)} (member {position}), "
                    "as after renaming or resizing a member through another stack or a "
                    "view that holds it; give them one set of names with "
                    "lazy.names = [...] (and one batch size)"
                )
                raise DimNameError(msg)
        out.insert(self._stack_dim, self._stack_dim_name)
        return out

    @names.setter
    def names(self, value: Sequence[DimName] | None) -> None:
        names = _names.as_names(value, len(self._batch_size))
        self._check_nested_names(names)
        # (unnamed: only these dims, nested collections keep the names of their own dims)
        self._rename_all((None,) * len(self._batch_size) if names is None else names)

    @property
    def _dim_names(self) -> Names:
        named = any(member._dim_names is not None for member in self._members)
        if not named and self._stack_dim_name is None:
            return None
        return tuple(self.names)

    def _assign_names(self, names: Names) -> None:
        # The members keep their own names (they may be shared with other stacks).
        self._stack_dim_name = None if names is None else names[self._stack_dim]

    def _rename_all(self, names: Names) -> None:
        self._assign_names(names)
        member_names = None  # (None: every name, the nested collections' too)
        if names is not None:  # (all unnamed: the members' dims, not their nodes' own)
            unnamed = (None,) * (len(names) - 1)
            member_names = _names.removed(names, (self._stack_dim,)) or unnamed
        for member in self._members:
            member._rename_all(member_names)

    def _assign_device(self, device: torch.device | None) -> None:
        self._device = device
