"""Device parsing and the argument rules of ``to()``.

``device=None`` on a container means its entries may live on different devices; any
other value means every entry lives there. Parsing is cached because ``to`` and
construction sit on hot paths.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple, NoReturn, TypeAlias

import torch

from tclass.errors import ArgumentError, DeviceError, UnsupportedError

__all__ = [
    "DeviceLike",
    "ToArgs",
    "as_device",
    "parse_to_args",
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
        raise DeviceError(msg) from None
    index: int | None = parsed.index  # None for "cuda" without an ordinal
    if parsed.type == "cuda" and index is None and torch.cuda.is_available():
        parsed = torch.device("cuda", torch.cuda.current_device())
    return parsed


class ToArgs(NamedTuple):
    """What a call to ``to(...)`` asks for."""

    device: torch.device | None
    dtype: torch.dtype | None
    non_blocking: bool


class ToOptions(NamedTuple):
    """The peer's keywords of ``to(...)`` beyond torch's: ``batch_size`` (of the result),
    ``non_blocking_pin`` (pin the tensors, then copy them asynchronously),
    ``num_threads`` (for the pinning) and ``inplace`` (this collection takes the result)."""

    batch_size: object
    non_blocking_pin: bool
    num_threads: int | None
    inplace: bool


def pop_to_options(kwargs: dict[str, Any]) -> ToOptions | None:
    """Takes the peer's extra keywords of ``to(...)`` out of ``kwargs`` (None: none set)."""
    if not kwargs.keys() & {"batch_size", "non_blocking_pin", "num_threads", "inplace"}:
        return None
    return ToOptions(
        kwargs.pop("batch_size", None),
        bool(kwargs.pop("non_blocking_pin", False)),
        kwargs.pop("num_threads", None),
        bool(kwargs.pop("inplace", False)),
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
