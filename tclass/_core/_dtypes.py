"""The dtypes whose bytes a raw file or buffer holds faithfully, by their ``str()``:
the names the on-disk format, consolidated buffers and the wire format write."""

from __future__ import annotations

import torch

from tclass.errors import MetadataError

__all__ = ["DTYPES", "dtype_name", "dtype_named"]

# Quantized dtypes (which need scales) and sub-byte ones (several values per byte) are
# refused on save.
_SAVABLE = [
    "bool", "uint8", "uint16", "uint32", "uint64", "int8", "int16", "int32", "int64",
    "float16", "bfloat16", "float32", "float64", "complex32", "complex64", "complex128",
    "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu",
]  # fmt: skip
DTYPES: dict[str, torch.dtype] = {
    str(getattr(torch, name)): getattr(torch, name) for name in _SAVABLE if hasattr(torch, name)
}


_NAMES: dict[torch.dtype, str] = {dtype: name for name, dtype in DTYPES.items()}


def dtype_name(dtype: torch.dtype) -> str | None:
    """``str(dtype)`` if the format can hold it, else None."""
    return _NAMES.get(dtype)


def dtype_named(name: str, where: str) -> torch.dtype:
    """The dtype ``name`` names; a MetadataError naming ``where`` if it names none."""
    dtype = DTYPES.get(name)
    if dtype is None:
        raise MetadataError(f"{where} names an unknown dtype {name!r}")
    return dtype
