"""The argument checks of ``MemoryMappedTensor``'s constructors (``_memmap.py``): sizes
(ints, one sequence of them, ``shape=``, a 2-d tensor of a nested tensor's element
shapes), dtypes, devices, tensors and paths, each refused with what is wrong."""

from __future__ import annotations

import operator
import os
import re
import warnings
from collections.abc import Sequence
from typing import Literal, SupportsIndex, TypeAlias, Union

import torch

from tclass.errors import ArgumentError, DeviceError, EntryTypeError, ShapeError

__all__ = [
    "DeviceLike",
    "Mode",
    "PathLike",
    "SizeLike",
    "abspath",
    "as_size",
    "check_cpu",
    "check_dtype",
    "check_tensor",
    "nested_numel",
    "nested_shape",
    "tensor_shape",
    "warn_pickling_internal",
]

Mode = Literal["r", "r+"]
SizeLike: TypeAlias = SupportsIndex | Sequence[SupportsIndex]
PathLike = Union[str, "os.PathLike[str]"]
DeviceLike: TypeAlias = str | torch.device | int


def as_size(size: tuple[SizeLike, ...], shape: SizeLike | None) -> tuple[int, ...]:
    """Normalize ``(2, 3)``, ``((2, 3),)``, ``(torch.Size(...),)`` or ``shape=``."""
    if shape is None and len(size) == 1 and size[0].__class__ is torch.Size:
        return size[0]  # a tensor's shape: non-negative ints
    if shape is not None:
        if size:
            msg = (
                f"pass the size either positionally or as shape=, not both: got {size!r} "
                f"and shape={shape!r}"
            )
            raise ArgumentError(msg)
        size = (shape,)
    elif not size:
        msg = "missing size: pass ints, a sequence of ints or shape=; () is a 0-d tensor"
        raise ArgumentError(msg)
    if len(size) == 1 and isinstance(size[0], (tuple, list, torch.Size)):
        size = tuple(size[0])
    dims: list[int] = []
    for item in size:
        dim = item if type(item) is int else _to_dim(item)
        if dim < 0:
            msg = f"a size must be non-negative ints or one sequence of them, got {size!r}"
            raise ShapeError(msg)
        dims.append(dim)
    return tuple(dims)


def _to_dim(item: object) -> int:
    """A size entry that is not a plain int (numpy int, 0-d tensor...); -1 if invalid."""
    if isinstance(item, bool) or not isinstance(item, SupportsIndex):
        return -1
    try:
        return operator.index(item)
    except TypeError:  # e.g. a float tensor
        return -1


def warn_pickling_internal(name: str) -> None:
    msg = (
        f"MemoryMappedTensor.{name} is deprecated (the peer removes it in TensorDict "
        "0.17): it describes the peer's pickles, and has no replacement"
    )
    warnings.warn(msg, DeprecationWarning, stacklevel=3)


def tensor_shape(shape: object) -> SizeLike | None:
    """``shape`` for a dense tensor (a tensor of element shapes is for nested inputs)."""
    if isinstance(shape, torch.Tensor) and shape.dim() == 2:
        msg = (
            "from_tensor: nested shapes (a tensor of element shapes) are for a nested "
            "input (torch.nested.nested_tensor); give a dense input a size"
        )
        raise ArgumentError(msg)
    return shape  # type: ignore[return-value]


def nested_shape(size: tuple[object, ...], shape: object) -> torch.Tensor | None:
    """The element shapes of a nested tensor when the size given is a 2-d integer tensor
    (one row per element, as ``nested_tensor_size()`` gives), else None."""
    given = shape if shape is not None else (size[0] if len(size) == 1 else None)
    if not isinstance(given, torch.Tensor) or given.dim() != 2:
        return None
    if given.is_floating_point() or given.is_complex() or given.dtype is torch.bool:
        msg = f"nested element shapes must be integers, got a {given.dtype} tensor"
        raise ShapeError(msg)
    if bool((given < 0).any()):
        msg = f"nested element shapes must be non-negative, got {given.tolist()}"
        raise ShapeError(msg)
    return given.to(torch.int64).cpu()


def nested_numel(nested: torch.Tensor) -> int:
    return int(nested.prod(-1).sum()) if nested.numel() else 0


def check_dtype(dtype: object) -> torch.dtype:
    if not isinstance(dtype, torch.dtype):
        msg = f"dtype must be a torch.dtype such as torch.float32, got {dtype!r}"
        raise ArgumentError(msg)
    return dtype


def check_cpu(device: DeviceLike) -> None:
    try:
        kind = torch.device(device).type
    except (RuntimeError, TypeError, ValueError) as err:
        msg = f"invalid device {device!r}"
        raise DeviceError(msg) from err
    if kind != "cpu":
        msg = (
            f"a MemoryMappedTensor lives in CPU memory, got device={device!r}; create "
            "it on CPU and move a copy with .to(device)"
        )
        raise DeviceError(msg)


def check_tensor(value: object, method: str) -> None:
    if not isinstance(value, torch.Tensor):
        kind = f"{type(value).__module__}.{type(value).__qualname__}"
        msg = (
            f"MemoryMappedTensor.{method} expects a torch.Tensor, got {kind}; convert "
            "it first with torch.as_tensor(value)"
        )
        raise EntryTypeError(msg)


def abspath(filename: PathLike) -> str:
    path: str | bytes = os.fspath(filename)
    if not isinstance(path, str):
        msg = (
            f"filename must be a str or os.PathLike[str], got {filename!r}; decode a bytes "
            "path first (os.fsdecode(filename))"
        )
        raise ArgumentError(msg)
    if path.startswith("/") and not _UNNORMALISED.search(path):
        return path  # already what abspath would return (saves a normpath per leaf)
    return os.path.abspath(path)


_UNNORMALISED = re.compile(r"//|/\.\.?(?:/|$)|./$")
