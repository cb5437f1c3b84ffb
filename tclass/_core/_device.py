"""Device parsing and the argument rules of ``to()``.

``device=None`` on a container means its entries may live on different devices; any
other value means every entry lives there. Parsing is cached because ``to`` and
construction sit on hot paths.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple, NoReturn, TypeAlias

import torch

from tclass.errors import (
    ArgumentError,
    DeviceError,
    DeviceUnavailableError,
    DtypeArgumentError,
    MetaTensorError,
    TclassError,
    UnsupportedError,
)

__all__ = [
    "DeviceLike",
    "ToArgs",
    "as_device",
    "move_error",
    "moved",
    "parse_to_args",
    "require_device",
    "refuse_device_assignment",
    "wait_for_device_copies",
]

DeviceLike: TypeAlias = torch.device | str | int | None

_CACHE: dict[object, torch.device] = {}
_cuda_initialized: Callable[[], bool] = torch.cuda.is_initialized  # untyped in torch


def as_device(device: object) -> torch.device | None:
    """``device`` as a ``torch.device`` (``None`` stays ``None``).

    ``"cuda"`` without an index means the current CUDA device, so that two containers
    built with ``"cuda"`` and ``"cuda:0"`` compare equal.

    Raises:
        DeviceError: if ``device`` is not a device, a device string or an ordinal.
    """
    if device is None:
        return None
    if device.__class__ is not bool:  # True == 1 would hit the cache entry of device 1
        try:
            return _CACHE[device]
        except (KeyError, TypeError):
            pass
    parsed = _parse(device)
    if isinstance(device, (str, int, torch.device)):
        _CACHE[device] = parsed
    return parsed


def _parse(device: object) -> torch.device:
    if isinstance(device, bool) or not isinstance(device, (str, int, torch.device)):
        msg = (
            f"invalid device {device!r}: expected a torch.device, a string such as "
            "'cpu' or 'cuda:0', or an int"
        )
        raise DeviceError(msg)
    try:
        parsed = torch.device(device)
    except (RuntimeError, ValueError) as error:
        msg = f"invalid device {device!r}: {error}"
        if isinstance(device, str) and isinstance(getattr(torch, device, None), torch.dtype):
            msg += f"; {device!r} names a dtype: give it as torch.{device} (to(torch.{device}))"
        raise DeviceError(msg) from None
    index: int | None = parsed.index  # None for "cuda" without an ordinal
    if parsed.type == "cuda" and index is None and torch.cuda.is_available():
        parsed = torch.device("cuda", torch.cuda.current_device())
    return parsed


def _dtype_as_string(name: str) -> str:
    """The message for ``to(device, "name")``: torch's ``to`` refuses a string there
    with a ``TypeError`` (as the peer's), however the string reads."""
    msg = f"to(): the second argument must be a torch.dtype, got the string {name!r}"
    if isinstance(getattr(torch, name, None), torch.dtype):
        return f"{msg}; {name!r} names a dtype: give it as torch.{name} (to(device, torch.{name}))"
    return f"{msg}; give a torch.dtype such as torch.float32"


class ToArgs(NamedTuple):
    """What a call to ``to(...)`` asks for."""

    device: torch.device | None
    dtype: torch.dtype | None
    non_blocking: bool


class ToOptions(NamedTuple):
    """The peer's keywords of ``to(...)`` beyond torch's: ``batch_size`` (of the result),
    ``non_blocking_pin`` (pin the tensors, then copy them asynchronously),
    ``num_threads`` (for the pinning) and ``inplace`` (this collection takes the result);
    and torch's ``memory_format`` (each tensor's, as ``Tensor.to`` takes it)."""

    batch_size: object
    non_blocking_pin: bool
    num_threads: int | None
    inplace: bool
    memory_format: torch.memory_format | None = None


_TO_OPTIONS = frozenset(
    {"batch_size", "non_blocking_pin", "num_threads", "inplace", "memory_format"}
)


def pop_to_options(kwargs: dict[str, Any]) -> ToOptions | None:
    """Takes the peer's extra keywords of ``to(...)`` out of ``kwargs`` (None: none set)."""
    if not kwargs.keys() & _TO_OPTIONS:
        return None
    memory_format = kwargs.pop("memory_format", None)
    if memory_format is not None and not isinstance(memory_format, torch.memory_format):
        msg = (
            f"to(): memory_format must be a torch.memory_format (e.g. "
            f"torch.channels_last), got {memory_format!r}"
        )
        raise ArgumentError(msg)
    return ToOptions(
        kwargs.pop("batch_size", None),
        bool(kwargs.pop("non_blocking_pin", False)),
        kwargs.pop("num_threads", None),
        bool(kwargs.pop("inplace", False)),
        None if memory_format is torch.preserve_format else memory_format,
    )


def parse_to_args(args: tuple[object, ...], kwargs: dict[str, object]) -> ToArgs:
    """Reads ``to(device)``, ``to(dtype)``, ``to(device, dtype)``, ``to(tensor)`` and
    ``to(other)`` (anything with a ``device``), plus ``device=``/``dtype=``/``non_blocking=``
    and ``other=`` (a collection: its device, and the dtype its tensors share, as the
    peer)."""
    device: object = kwargs.pop("device", None)
    dtype: object = kwargs.pop("dtype", None)
    non_blocking = bool(kwargs.pop("non_blocking", False))
    if "other" in kwargs:  # to(other=collection): its device, and its dtype if it has one
        other: Any = kwargs.pop("other")
        device = other.device
        dtypes = {leaf.dtype for leaf in other.values(True, True) if isinstance(leaf, torch.Tensor)}
        if len(dtypes) == 1:
            dtype = dtypes.pop()
    if "copy" in kwargs:  # torch's keyword, which the peer refuses with a RuntimeError
        msg = (
            "to() does not accept copy=: it returns a new collection whenever a device or "
            "dtype changes, and the collection itself otherwise; call clone() for a copy"
        )
        raise UnsupportedError(msg)
    if kwargs:
        msg = (
            f"to() got unexpected keyword argument(s) {sorted(kwargs)}; it takes device=, "
            "dtype=, non_blocking= and other="
        )
        raise ArgumentError(msg)
    if len(args) > 2:
        msg = (
            f"to() takes at most 2 positional arguments (a device and a dtype), got "
            f"{len(args)}: {args!r}"
        )
        raise ArgumentError(msg)
    if len(args) == 2 and isinstance(args[1], str):
        raise DtypeArgumentError(_dtype_as_string(args[1]))
    for arg in args:
        if arg is None:  # to(None), to(None, dtype): no device asked for, as torch's
            continue
        if isinstance(arg, torch.dtype):
            dtype = arg
        elif isinstance(arg, torch.Tensor):
            device, dtype = arg.device, arg.dtype
        elif isinstance(arg, (str, int, torch.device)) and not isinstance(arg, bool):
            device = arg
        elif hasattr(arg, "device") and hasattr(arg, "batch_size"):
            device = arg.device
        else:
            msg = (
                f"to() expected a device, a dtype, a tensor or a tensor collection, got "
                f"{arg!r} (a {type(arg).__name__}); pass e.g. to('cpu') or to(torch.float32)"
            )
            raise ArgumentError(msg)
    if dtype is not None and not isinstance(dtype, torch.dtype):
        msg = f"to(): dtype must be a torch.dtype (e.g. torch.float32), got {dtype!r}"
        raise ArgumentError(msg)
    return ToArgs(as_device(device), dtype, non_blocking)


def moved(value: torch.Tensor, device: torch.device, key: object = None) -> torch.Tensor:
    """``value.to(device)``, or the :func:`move_error` of a move that cannot be done."""
    try:
        return value.to(device)
    except (AssertionError, RuntimeError) as error:
        raise move_error(error, device, value, key) from error


def move_error(
    error: BaseException, device: torch.device | None, value: object = None, key: object = None
) -> BaseException:
    """The error to raise for a failed move of ``value`` (the entry ``key``, or a whole
    collection) onto ``device``: a :class:`MetaTensorError` for a meta tensor or a
    collection holding one (no data to copy), a :class:`DeviceUnavailableError` for a
    device this machine does not have, or ``error`` itself (a TclassError already, or
    another failure)."""
    if isinstance(error, TclassError) or device is None:
        return error
    meta = _meta_leaf(value, key) if device.type != "meta" else None
    if meta is not None:
        name = "" if meta[0] is None else f" {meta[0]!r}"
        return MetaTensorError(
            f"cannot copy the meta tensor{name} of shape {list(meta[1].shape)} onto {device}: "
            "a meta tensor holds a shape and a dtype but no data; build the tensor on "
            f"{device} (e.g. torch.zeros(..., device={str(device)!r})), or keep it in a "
            "collection built with device=None or device='meta'"
        )
    if not _available(device):
        what = "" if key is None else f" {key!r}"
        return DeviceUnavailableError(
            f"cannot move{what or ' the tensors'} to {device}: this machine has no such "
            f"device ({_devices_present(device)}); pick one of its devices, e.g. 'cpu'"
        )
    return error


def require_device(device: torch.device | None) -> None:
    """Raises the :class:`DeviceUnavailableError` of a move onto ``device`` when this
    machine does not have it (for a collection that reads its entries onto its device
    later, as a file's: the error comes at ``to()``, not at every read)."""
    if device is not None and not _available(device):
        raise move_error(DeviceUnavailableError(str(device)), device)


def _meta_leaf(value: object, key: object) -> tuple[object, torch.Tensor] | None:
    """``(key, value)`` if ``value`` is a meta tensor, else the first meta leaf of a
    collection with its key."""
    if isinstance(value, torch.Tensor):
        return (key, value) if value.is_meta else None
    items = getattr(value, "items", None)
    if items is None:
        return None
    leaves = ((k, v) for k, v in items(True, True) if isinstance(v, torch.Tensor))
    return next(((k, v) for k, v in leaves if v.is_meta), None)


def _available(device: torch.device) -> bool:
    if device.type in ("cpu", "meta"):
        return True
    module = getattr(torch, device.type, None)
    is_available = getattr(module, "is_available", None)
    if is_available is None or not is_available():
        return False
    count = getattr(module, "device_count", None)
    return device.index is None or count is None or device.index < count()


def _devices_present(device: torch.device) -> str:
    module = getattr(torch, device.type, None)
    count = getattr(module, "device_count", None)
    if count is None or not getattr(module, "is_available", lambda: False)():
        return f"{device.type} is not available"
    return f"it has {count()} {device.type} device(s), numbered from 0"


def wait_for_device_copies(device: torch.device | None = None) -> None:
    """Wait for the copies queued on the current CUDA stream (of ``device``, a CUDA
    device; the current one by default); a no-op without CUDA.

    A device-to-host copy with ``non_blocking=True`` returns before the data has arrived;
    tclass issues every leaf's copy asynchronously, then waits once here, so that the
    result it returns is safe to read. A blocking host-to-device move queues every copy
    and waits here once if a source is pinned (a pageable one has been read by the time
    its copy returns), so that its source may be changed as soon as it returns.
    """
    if torch.cuda.is_available() and _cuda_initialized():
        torch.cuda.current_stream(device).synchronize()


def refuse_device_assignment(collection: object, value: object) -> NoReturn:
    """The setter of ``device``: a collection's device is fixed once built (the peer
    raises a RuntimeError too; UnsupportedError is a NotImplementedError, one)."""
    name = type(collection).__name__
    raise UnsupportedError(
        f"cannot assign {name}.device: the device cannot be set using tensorclass.device = "
        f"device (a collection's device is fixed when it is built); use .to({value!r}) for "
        "a copy on that device"
    )
