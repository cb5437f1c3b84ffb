"""``from_schema``: a zero-filled collection allocated from a schema of shapes and dtypes,
in memory, in shared memory, in a folder of memory-mapped files, in an HDF5 file or in a
zarr store.

The entries start as stride-0 views of one zero per dtype, so nothing the size of the
buffer exists in memory before the chosen storage allocates it: a folder gets sparse
files (no byte written), shared memory fresh zero pages.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch

from tclass._base._provided import IO
from tclass._core._batch import as_batch_size
from tclass._core._device import DeviceLike, as_device
from tclass._core._records import is_record_class
from tclass._engine._td import TensorDict
from tclass.errors import ArgumentError, ArgumentValueError, ShapeError, UnsupportedError

__all__ = ["from_schema"]

Schema = Mapping[Any, tuple[Sequence[int] | torch.Size, torch.dtype]]
_STORAGES = (None, "memmap", "h5", "zarr", "shared")
_ELSEWHERE = ("redis", "dragonfly")


def from_schema(
    cls: Any,
    schema: Schema,
    *,
    batch_size: Sequence[int] | torch.Size | None = None,
    storage: str | None = None,
    device: DeviceLike = None,
    **kwargs: Any,
) -> Any:
    """What ``cls.from_schema(...)`` gives: see ``TensorDictBase.from_schema``."""
    if storage not in _STORAGES:
        if storage in _ELSEWHERE:
            msg = (
                f"from_schema(storage={storage!r}) is not supported by tclass (no key-value "
                "store backend); use storage='memmap', 'h5' or 'zarr'"
            )
            raise UnsupportedError(msg)
        msg = f"from_schema: Unknown storage backend {storage!r}; expected one of {list(_STORAGES)}"
        raise ArgumentValueError(msg)
    batch = as_batch_size(batch_size)
    in_memory = storage in (None, "shared")
    target = as_device(device) if device is not None and storage is None else None
    source: dict[Any, torch.Tensor] = {}
    for key, spec in schema.items():
        shape, dtype = _entry_spec(key, spec)
        if in_memory:
            source[key] = torch.zeros(batch + shape, dtype=dtype, device=target)
        else:  # a stride-0 stand-in: the storage allocates the entry
            source[key] = torch.zeros((), dtype=dtype).expand(batch + shape)
    # built as the constructor builds a dict with nested keys (the peer's): the top-level
    # entries first, then the nested collections
    blank = TensorDict(source, batch_size=batch, device=target)
    if storage == "memmap":
        made = _as_class(cls, blank)
        return made.memmap_like(kwargs.pop("prefix", None), **kwargs)
    if storage in ("h5", "zarr"):
        filename = kwargs.pop("filename", None)
        if filename is None:
            what = "HDF5 file" if storage == "h5" else "zarr store"
            msg = f"from_schema(storage={storage!r}) needs filename=<path of the new {what}>"
            raise ArgumentError(msg)
        made = _as_class(cls, blank)
        return (
            made.to_h5(filename, **kwargs) if storage == "h5" else made.to_zarr(filename, **kwargs)
        )
    if kwargs:
        msg = f"from_schema(storage={storage!r}) takes no options {sorted(kwargs)}"
        raise ArgumentError(msg)
    made = _as_class(cls, blank)
    return made.share_memory_() if storage == "shared" else made


def _entry_spec(key: object, spec: object) -> tuple[torch.Size, torch.dtype]:
    if isinstance(spec, (tuple, list)) and len(spec) == 2:
        shape, dtype = spec
        if isinstance(dtype, torch.dtype) and isinstance(shape, Sequence):
            return torch.Size(shape), dtype
    msg = (
        f"from_schema: the schema entry {key!r} must be a pair (element shape, dtype), "
        f"as ([84, 84, 3], torch.uint8); got {spec!r}"
    )
    raise ShapeError(msg)


def _as_class(cls: Any, td: TensorDict) -> Any:
    """``td`` as an instance of ``cls``: a record for a tensorclass, a TensorDict for
    the dictionary kinds (a lazy stack included, as the peer)."""
    if is_record_class(cls):
        return cls.from_tensordict(td)
    return td


# --- implementations of the base layer's methods (``_base/_provided.py``) ---------------

IO.from_schema = from_schema
