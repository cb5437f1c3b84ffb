"""Nested tensors (``torch.nested``, both layouts) as leaves of a saved folder.

A nested leaf ``key`` takes two raw files in its node's folder, as the peer writes a
nested tensor of the strided layout:

* ``<key>.memmap``: the elements of its components back to back, each component in C
  order (no padding, no header);
* ``<key>.shape.memmap``: an int64 table ``[N, ndim - 1]``, row ``i`` the shape of
  component ``i`` (the peer's "size table").

Its ``meta.json`` entry is the peer's leaf entry with ``"is_nested": true`` and the table's
shape as ``"shape"``, plus tclass's ``"_tclass": {"nested_format": 1, "layout": ...}``
(``"strided"`` or ``"jagged"``), which the peer ignores: the peer loads either as a nested
tensor of the strided layout, and an entry without it (a peer's) loads as one. Like any
empty leaf, a file that would hold no bytes is not written (a table of 0-dim components,
components with no elements); the entry rebuilds it.

Checked when read (see ``sizes_total``): the entry's fields; the table file's size; each
size non-negative, the elements' total within int64 and the data file's size; the
node's batch dims against each component (the first against ``N``); for the jagged
layout, components that differ in their first dim only. A jagged tensor is saved when
its ragged dim is its dim 1 (the layout torch builds); one of no component is refused.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import torch

from tclass._core._dtypes import DTYPES, dtype_name
from tclass._core._memmap import MemoryMappedTensor
from tclass._io.memmap._format import MAX_FILE_BYTES
from tclass.errors import MetadataError, UnsupportedError

__all__ = [
    "NESTED_FORMAT",
    "SIZES_SUFFIX",
    "NestedParts",
    "NestedSpec",
    "build_nested",
    "nested_entry",
    "nested_parts",
    "entry_dtype",
    "load_nested",
    "nested_spec",
    "sizes_total",
]

# The version of the nested entry (``"_tclass": {"nested_format": ...}``); an entry of a
# later one is refused, naming it.
NESTED_FORMAT = 1
SIZES_SUFFIX = ".shape.memmap"
_LAYOUTS = {"strided": torch.strided, "jagged": torch.jagged}
_INT64_MAX = (1 << 63) - 1
_ELEMENTS_MAX = float(1 << 59)  # elements of a nested leaf: their bytes must fit int64
_HOW = (
    "convert it to a supported form first (a strided one: torch.nested.nested_tensor("
    "list(t.unbind()), layout=torch.strided); or a dense, padded one: t.to_padded_tensor(0))"
)


class NestedParts(NamedTuple):
    """What a nested tensor is written as: ``values`` (1-d, the components' elements back
    to back, on the CPU), ``sizes`` (int64 ``[N, ndim - 1]``) and its layout's name."""

    values: torch.Tensor
    sizes: torch.Tensor
    layout: str


def nested_parts(tensor: torch.Tensor, where: str, data: bool = True) -> NestedParts:
    """The parts of the nested ``tensor`` saved at ``where`` (a file name, for messages);
    an UnsupportedError for one the format does not hold. Without ``data``
    (``memmap_like``), the values are a zero-stride stand-in of the right size."""
    if dtype_name(tensor.dtype) is None:
        msg = (
            f"cannot save {where!r}: dtype {tensor.dtype} has no faithful raw-file form "
            "(quantized and sub-byte dtypes are refused); convert it, e.g. .to(torch.uint8)"
        )
        raise UnsupportedError(msg)
    tensor = tensor.detach()
    if tensor.layout not in (torch.strided, torch.jagged):
        msg = f"cannot save {where!r}: a nested tensor of layout {tensor.layout}; {_HOW}"
        raise UnsupportedError(msg)
    ragged = getattr(tensor, "_ragged_idx", 1)
    if ragged != 1:
        msg = (
            f"cannot save {where!r}: a jagged nested tensor is saved with its ragged dim "
            f"at dim 1 (as torch.nested builds it), this one has it at dim {ragged}; "
            f"transpose it back (t.transpose(1, {ragged})) or {_HOW}"
        )
        raise UnsupportedError(msg)
    if tensor.size(0) == 0:
        msg = (
            f"cannot save {where!r}: a nested tensor of no components (its element shapes "
            "are unknown, and torch cannot rebuild it); leave the entry out, or save a "
            "dense empty tensor"
        )
        raise UnsupportedError(msg)
    jagged = tensor.layout is torch.jagged
    sizes = _jagged_sizes(tensor) if jagged else tensor._nested_tensor_size().cpu()
    if sizes.numel() * 8 > MAX_FILE_BYTES:  # loads read it whole: refused there too
        msg = (
            f"cannot save {where!r}: its size table ({list(sizes.shape)}) would take more "
            f"than the {MAX_FILE_BYTES >> 20} MiB a load reads into memory; split it into "
            "several entries, or pad it (t.to_padded_tensor(0))"
        )
        raise UnsupportedError(msg)
    if not data:
        total = int(sizes.prod(1).sum())
        values = torch.zeros((), dtype=tensor.dtype).expand(total)
    elif jagged:
        values = _jagged_values(tensor)
    else:
        values = torch.cat([part.reshape(-1) for part in tensor.unbind()])
    return NestedParts(values.cpu(), sizes.to(torch.int64), "jagged" if jagged else "strided")


def _jagged_sizes(tensor: torch.Tensor) -> torch.Tensor:
    """A jagged tensor's size table: each component's rows, then the values' other dims."""
    jagged: Any = tensor  # torch's NestedTensor subclass: offsets() and lengths()
    lengths = jagged.lengths()
    rows = jagged.offsets().diff() if lengths is None else lengths
    rest = torch.tensor(jagged.values().shape[1:], dtype=torch.int64)
    return torch.cat([rows.cpu().to(torch.int64).unsqueeze(1), rest.expand(len(rows), -1)], 1)


def _jagged_values(tensor: torch.Tensor) -> torch.Tensor:
    """A jagged tensor's components' elements back to back (1-d)."""
    jagged: Any = tensor
    offsets, lengths = jagged.offsets().cpu(), jagged.lengths()
    values: torch.Tensor = jagged.values()
    if lengths is None:  # contiguous: one slice of its values
        return values[int(offsets[0]) : int(offsets[-1])].reshape(-1)
    # Holes between the components: each one's rows, gathered.
    starts, counts = offsets[:-1].tolist(), lengths.cpu().tolist()
    return torch.cat([values[a : a + n].reshape(-1) for a, n in zip(starts, counts)])


def nested_entry(tensor: torch.Tensor, parts: NestedParts, device_json: str) -> str:
    """The ``meta.json`` entry of a nested leaf, as JSON text (see the module's docstring)."""
    shape = ", ".join(map(str, parts.sizes.shape))
    return (
        f'{{"device": {device_json}, "shape": [{shape}], "dtype": "{dtype_name(tensor.dtype)}", '
        f'"is_nested": true, "_tclass": {{"nested_format": {NESTED_FORMAT}, '
        f'"layout": "{parts.layout}"}}}}'
    )


class NestedSpec(NamedTuple):
    """A nested leaf's entry, checked: its dtype, the table's shape ``[N, ndim - 1]`` and
    its layout."""

    dtype: torch.dtype
    table: list[int]
    layout: str


def nested_spec(entry: dict[str, Any], key: str, batch: list[int], where: str) -> NestedSpec:
    """The checked entry of the nested leaf ``key`` in the meta.json ``where``, in a node
    of batch size ``batch``; a MetadataError (an UnsupportedError for a later format)."""
    dtype_text = entry.get("dtype")
    dtype = DTYPES.get(dtype_text) if isinstance(dtype_text, str) else None
    if dtype is None:
        msg = f"{where!r}: nested entry {key!r} has dtype {dtype_text!r:.80}, not one tclass reads"
        raise MetadataError(msg)
    table = entry.get("shape")
    if not (
        isinstance(table, list)
        and len(table) == 2
        and all(type(size) is int and 0 <= size <= _INT64_MAX for size in table)
    ):
        msg = (
            f"{where!r}: nested entry {key!r} has shape {table!r:.80}; a nested leaf's shape "
            "is its size table's, [components, dims]: the folder is damaged or crafted"
        )
        raise MetadataError(msg)
    if table[0] * table[1] * 8 > MAX_FILE_BYTES:  # read whole, as the format's small files
        msg = (
            f"{where!r}: nested entry {key!r} has a size table of {table[0]} x {table[1]}, "
            f"more than the {MAX_FILE_BYTES >> 20} MiB tclass reads into memory: the folder "
            "is damaged or crafted"
        )
        raise MetadataError(msg)
    marker = entry.get("_tclass", {"layout": "strided", "nested_format": NESTED_FORMAT})
    layout = _layout(marker, key, where)
    count, dims = table
    if count == 0 or dims + 1 < len(batch) or batch[:1] not in ([], [count]):
        msg = (
            f"{where!r}: nested entry {key!r} has {count} components of {dims + 1} dims "
            f"(its size table {table}), which does not fit the node's batch size {batch}"
        )
        raise MetadataError(msg)
    return NestedSpec(dtype, table, layout)


def _layout(marker: object, key: str, where: str) -> str:
    if not isinstance(marker, dict):
        raise MetadataError(f"{where!r}: nested entry {key!r} has _tclass {marker!r:.80}")
    version = marker.get("nested_format")
    if type(version) is int and version > NESTED_FORMAT:
        msg = (
            f"{where!r}: nested entry {key!r} is of nested_format {version}, written by a "
            f"later tclass (this one reads {NESTED_FORMAT}); upgrade tclass to load it"
        )
        raise UnsupportedError(msg)
    layout = marker.get("layout")
    if version != NESTED_FORMAT or layout not in _LAYOUTS:
        msg = (
            f"{where!r}: nested entry {key!r} has _tclass {marker!r:.80}; tclass reads "
            f'{{"nested_format": {NESTED_FORMAT}, "layout": "strided" | "jagged"}}'
        )
        raise MetadataError(msg)
    return str(layout)


def sizes_total(
    table: torch.Tensor, spec: NestedSpec, key: str, batch: list[int], where: str
) -> int:
    """The number of elements of the components of size table ``table`` (int64
    ``spec.table``), checked as the module's docstring says."""
    problem = None
    if bool((table < 0).any()):
        problem = "holds a negative size"
    elif len(batch) > 1 and not bool((table[:, : len(batch) - 1] == torch.tensor(batch[1:])).all()):
        problem = f"has components whose dims do not start with the node's batch dims {batch[1:]}"
    elif spec.layout == "jagged" and (
        spec.table[1] == 0 or bool((table[1:, 1:] != table[:1, 1:]).any())
    ):
        problem = "is not a jagged tensor's (its components must differ in their first dim only)"
    elif float(table.double().prod(1).sum()) >= _ELEMENTS_MAX:  # exact below: no overflow
        problem = "describes more elements than a file can hold"
    else:
        return int(table.prod(1).sum())
    msg = (
        f"{where!r}: the size table of nested entry {key!r} {problem}: the folder is damaged "
        "or crafted"
    )
    raise MetadataError(msg)


def build_nested(values: torch.Tensor, sizes: torch.Tensor, layout: str) -> torch.Tensor:
    """The nested tensor of ``layout`` whose components have the shapes ``sizes`` (int64
    ``[N, ndim - 1]``, N > 0) and whose elements are ``values`` (1-d, exactly theirs): a
    view of ``values`` (a MemoryMappedTensor for the strided layout, over its file)."""
    if layout == "jagged":
        rows = sizes[:, 0]
        offsets = torch.cat([rows.new_zeros(1), rows.cumsum(0)])
        flat = (
            values.as_subclass(torch.Tensor) if isinstance(values, MemoryMappedTensor) else values
        )
        shaped = flat.view(int(offsets[-1]), *sizes[0, 1:].tolist())
        return torch.nested.nested_tensor_from_jagged(shaped, offsets.to(values.device))
    if isinstance(values, MemoryMappedTensor):
        return values._nested_view(sizes)
    strides, offsets = torch._nested_compute_contiguous_strides_offsets(sizes)
    # The offsets count from the storage's start (an archive's entry starts further on).
    offsets = offsets.add(values.storage_offset())
    return torch._nested_view_from_buffer(values, sizes, strides, offsets)


def entry_dtype(entry: dict[str, Any]) -> torch.dtype:
    """The dtype of an entry ``nested_spec`` checked."""
    return DTYPES[entry["dtype"]]


def load_nested(
    entry: dict[str, Any],
    key: str,
    batch: list[int],
    where: str,
    read_table: Callable[[list[int]], torch.Tensor],
    map_values: Callable[[int], torch.Tensor],
    archive_r_plus: str | None,
    placeholder: bool,
) -> torch.Tensor:
    """The nested leaf ``key`` of ``entry`` in the meta.json ``where``, of a node of
    batch size ``batch``: ``read_table(shape)`` maps its size table, ``map_values(n)``
    its ``n`` elements (none: no file, as for any empty leaf). ``archive_r_plus``: the
    archive being loaded with mode="r+" (refused, as the peer refuses it);
    ``placeholder``: shapes only (device="meta", fake tensors), for which torch has no
    nested view: the table's shape, empty."""
    spec = nested_spec(entry, key, batch, where)
    if archive_r_plus is not None:
        msg = (
            f"cannot open {archive_r_plus!r} with mode='r+': entry {key!r} is a nested "
            "tensor, whose in-place writes tclass does not carry to an archive (nor does "
            "tensordict); load it with mode='r' (writes stay in memory), or unpack it "
            "(unpack_memmap) and load the folder with mode='r+'"
        )
        raise UnsupportedError(msg)
    table = torch.zeros(spec.table, dtype=torch.int64)  # no file: an empty table
    if 0 not in spec.table:
        table = read_table(spec.table).clone()
    total = sizes_total(table, spec, key, batch, where)
    values = map_values(total)
    if placeholder:
        return torch.empty(spec.table, dtype=spec.dtype, device=values.device)
    return build_nested(values, table, spec.layout)
