"""MosaicML Streaming datasets (``to_mds``), as the peer writes them: one sample per
element along the first batch dim (a collection without batch dims is one sample),
tensors as NumPy arrays (0-d ones as Python numbers), Python values as they are. The
column encodings are inferred from the first sample unless given. Needs the
``mosaicml-streaming`` package (``from streaming import MDSWriter``), unless the caller
passes its own ``writer``.
"""

from __future__ import annotations

import contextlib
import warnings
from typing import Any

import numpy as np
import torch

from tclass._base._provided import IO
from tclass._engine._nontensor import NonTensorData
from tclass._engine._nontensor_stack import NonTensorStack
from tclass._io._optional import need
from tclass.errors import ArgumentValueError

__all__ = ["to_mds"]


def to_mds(
    collection: Any,
    *,
    columns: dict[str, str] | None = None,
    out: str | tuple[str, str] | None = None,
    keep_local: bool = False,
    compression: str | None = None,
    hashes: list[str] | None = None,
    size_limit: int | str | None = 1 << 26,
    writer: Any = None,
    finish_writer: bool | None = None,
    **kwargs: Any,
) -> None:
    """Writes ``collection`` to an MDS dataset (see ``TensorDictBase.to_mds``)."""
    if 0 in collection.batch_size:
        raise ArgumentValueError("cannot write an empty collection to a streaming dataset")
    options = {
        "out": out, "keep_local": keep_local, "compression": compression, "hashes": hashes,
        "size_limit": size_limit, **kwargs,
    }  # fmt: skip
    if collection.batch_dims:
        if writer is None:
            writer = _new_writer(columns or _columns(collection[0]), options)
            finish_writer = True
        elif finish_writer is None:
            warnings.warn(
                "to_mds finished the writer passed by the caller after a collection with "
                "batch dims (tensordict 0.17 will leave it open, as for one without); pass "
                "finish_writer=True or False to choose",
                FutureWarning,
                stacklevel=3,
            )
            finish_writer = True
        rows = collection.tolist(convert_tensors="numpy")
        with writer if finish_writer else contextlib.nullcontext(writer) as sink:
            for row in rows:
                sink.write(_plain(row))
        return
    created = writer is None
    if created:
        writer = _new_writer(columns or _columns(collection), options)
    sample = _sample(collection, writer, created)
    if created or finish_writer:
        with writer as sink:
            sink.write(sample)
    else:
        writer.write(sample)


def _new_writer(columns: dict[str, str], options: dict[str, Any]) -> Any:
    streaming = need("streaming", "mds", "to_mds (or pass writer=)")
    if options["out"] is None:
        raise ArgumentValueError("to_mds needs out= (a folder, a remote, or both) or writer=")
    return streaming.MDSWriter(columns=columns, **options)


def _sample(collection: Any, writer: Any, created: bool) -> Any:
    """The one sample of a collection without batch dims, as the writer takes it."""
    names = getattr(writer, "column_names", None)
    encodings = getattr(writer, "column_encodings", None)
    if names is None or encodings is None:
        return collection  # a writer without column encodings gets the collection
    # A caller's writer stores its "pkl" columns as the entries themselves.
    pickled = set() if created else {n for n, e in zip(names, encodings) if e == "pkl"}
    keys = set(collection.keys())
    wanted = [name for name in names if name not in pickled and name in keys]
    sample = _plain(collection.select(*wanted).tolist(convert_tensors="numpy"))
    for name in pickled & keys:
        sample[name] = collection[name]
    return sample


def _plain(row: dict[str, Any]) -> dict[str, Any]:
    return {
        key: value.item() if isinstance(value, np.ndarray) and value.shape == () else value
        for key, value in row.items()
    }


def _columns(sample: Any) -> dict[str, str]:
    return {key: _encoding(value) for key, value in sample.items()}


def _encoding(value: Any) -> str:
    """The MDS encoding of one sample's entry."""
    if isinstance(value, NonTensorStack):
        return _encoding(value.tolist())
    if isinstance(value, NonTensorData):
        return _encoding(value.data)
    if isinstance(value, list):
        return "json"
    if isinstance(value, bytes):
        return "bytes"
    if isinstance(value, (torch.Tensor, np.ndarray)):
        if value.shape:
            return "ndarray"
        if isinstance(value, torch.Tensor):
            dtype = value.dtype
            return str(dtype).removeprefix("torch.") if dtype.is_floating_point else "int"
        kind = value.dtype.kind
        return value.dtype.name if kind == "f" else "int" if kind in "ib" else "str"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, (int, bool)):
        return "int"
    if isinstance(value, str):
        return "str"
    msg = f"to_mds has no MDS encoding for a {type(value).__name__}: pass columns= to name one"
    raise ArgumentValueError(msg)


# --- implementations of the base layer's methods (``_base/_provided.py``) ---------------

IO.to_mds = to_mds
