"""Batch-size arithmetic: parsing, checking leading dims, and what each shape op does.

A container's batch size is the shape its entries share at the front: a leaf of shape
``batch_size + feature_dims``. Every function here works on shapes and indices alone,
without touching data, and raises errors that name the shapes involved.
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Sequence
from typing import Any, NoReturn, SupportsIndex, TypeAlias, cast

import numpy as np
import torch

from tclass._core._options import OPTIONS
from tclass._core._tracing import tracing
from tclass.errors import (
    ArgumentError,
    BatchSizeError,
    BatchSizeTypeError,
    DimError,
    HeterogeneousEntryError,
    IndexTypeError,
    ShapeError,
    TclassError,
)

__all__ = [
    "as_int_arg",
    "advanced_block",
    "is_basic_item",
    "selects_first",
    "ONE_DIM_SIZES",
    "all_equal",
    "BatchSizeLike",
    "as_batch_size",
    "broadcasts_to",
    "chunk_sizes",
    "expand_shape",
    "format_shape",
    "index_dims_consumed",
    "indexed_shape",
    "normalize_dim",
    "normalize_index",
    "permute_dims",
    "row_major_strides",
    "shape_args",
    "split_sizes",
    "squeeze_dims",
    "view_shape",
]

BatchSizeLike: TypeAlias = torch.Size | Sequence[int] | int | None

_EMPTY = torch.Size([])


def all_equal(sizes: list[torch.Size], size: torch.Size) -> bool:
    """Whether every one of ``sizes`` equals ``size`` (in a C-level pass; compared one by
    one under torch.compile, which cannot trace ``list.count`` over sizes)."""
    if tracing():
        return all(s == size for s in sizes)
    return sizes.count(size) == len(sizes)


def format_shape(shape: Sequence[int]) -> str:
    """``[4, 3]``: the compact form used in every message (under ``torch.compile``, the
    list formatted: Dynamo traces neither ``str`` of a symbolic size nor ``str.join``)."""
    if tracing():
        return f"{list(shape)}"
    return "[" + ", ".join(str(s) for s in shape) + "]"


_SIZES: dict[tuple[int, ...], torch.Size] = {}
# One-dim sizes by their size (validated), for the common `[n]` without building a tuple.
_ONE_DIM: dict[int, torch.Size] = {}
_SIZES_LIMIT = 4096
# The same sizes for constructors that look `[n]` up inline, without a call (read only:
# as_batch_size fills it, and only while torch.compile is not tracing).
ONE_DIM_SIZES = _ONE_DIM


def as_batch_size(value: object, *, ragged: bool = False) -> torch.Size:
    """Parses a batch size: ``None`` (no batch dims), an int, or a sequence of ints.
    ``ragged``: a size after the first may be -1, a dim whose length differs between
    elements (a strided nested tensor's, see ``_jagged.leaf_shape``), as the peer's
    TensorDict takes it (the first dim counts the elements: it is never ragged).

    Raises:
        BatchSizeError: for negative sizes, non-integers (bools included), or other types.
    """
    if ragged and _has_ragged(value):
        first, *rest = cast("Sequence[object]", value)
        return torch.Size([_as_int(first, value), *(_as_int(v, value, ragged=True) for v in rest)])
    if value is None:
        return _EMPTY
    kind = type(value)
    if kind is list and len(cast("list[object]", value)) == 1:  # `[n]`, the common spelling
        first = cast("list[object]", value)[0]
        one = _ONE_DIM.get(first) if type(first) is int and not tracing() else None
        if one is not None:
            return one
    if kind is list or kind is tuple or kind is torch.Size:
        sizes: tuple[int, ...] = tuple(cast("Sequence[int]", value))
        for size in sizes:
            if type(size) is not int or size < 0:
                sizes = tuple(_as_int(v, value) for v in sizes)  # numpy ints and the like
                kind = tuple
                break
        if kind is torch.Size:
            return value  # type: ignore[return-value]
        if tracing():  # symbolic sizes: a lookup by them would pin them (see _tracing)
            return torch.Size(sizes)
        # Batch sizes repeat endlessly in a program; building a torch.Size costs more
        # than looking one up, so validated sizes are kept.
        cached = _SIZES.get(sizes)
        if cached is None:
            if len(_SIZES) >= _SIZES_LIMIT:
                _SIZES.clear()
                _ONE_DIM.clear()
            cached = _SIZES[sizes] = torch.Size(sizes)
        if len(sizes) == 1:
            _ONE_DIM[sizes[0]] = cached
        return cached
    if kind is int:
        if value < 0:  # type: ignore[operator]
            _raise_bad_batch_size(value)
        return as_batch_size((value,))
    if isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        return as_batch_size(tuple(_as_int(v, value) for v in value))
    if isinstance(value, (torch.Tensor, np.ndarray)):  # the peer accepts these too
        if value.ndim > 1 or not _is_integer_array(value):
            _raise_bad_batch_size(value, of_type=not _is_integer_array(value))
        return as_batch_size(tuple(value.reshape(-1).tolist()))
    if isinstance(value, SupportsIndex) and not isinstance(value, bool):  # a numpy int
        return as_batch_size((_as_int(value, value),))
    _raise_bad_batch_size(value, of_type=True)


def _is_integer_array(array: torch.Tensor | np.ndarray) -> bool:
    if isinstance(array, np.ndarray):
        return array.dtype.kind in "iu"
    dtype = array.dtype
    return not (dtype.is_floating_point or dtype.is_complex or dtype is torch.bool)


def _has_ragged(value: object) -> bool:
    """Whether ``value`` is a sequence of sizes with a -1 after the first."""
    kind = type(value)
    if kind is list or kind is tuple or kind is torch.Size:
        return -1 in cast("Sequence[object]", value)[1:]
    return False


def _as_int(value: object, whole: object, *, ragged: bool = False) -> int:
    if isinstance(value, bool) or not isinstance(value, SupportsIndex):
        _raise_bad_batch_size(whole, of_type=True)
    size = value.__index__()
    if size < 0 and not (ragged and size == -1):
        _raise_bad_batch_size(whole)
    return size


def _raise_bad_batch_size(value: object, *, of_type: bool = False) -> NoReturn:
    """``of_type``: the value is not made of ints (a ``BatchSizeTypeError``, also a
    ``TypeError``), rather than holding a negative size."""
    msg = (
        f"invalid batch_size {value!r}: expected a sequence of non-negative ints "
        "(a list, tuple or torch.Size), an int, or None"
    )
    raise (BatchSizeTypeError if of_type else BatchSizeError)(msg)


def row_major_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """The strides of a contiguous (row-major) tensor of ``shape``, in elements (a size-0
    dim counts as 1, as torch's)."""
    strides = []
    step = 1
    for size in reversed(shape):
        strides.append(step)
        step *= max(size, 1)
    return tuple(reversed(strides))


def normalize_dim(dim: int, ndim: int, *, op: str, inclusive: bool = False) -> int:
    """A possibly negative batch dim as an index in ``[0, ndim)`` (``[0, ndim]`` if inclusive).

    ``inclusive`` is for ops that insert a dim (``unsqueeze``, ``stack``), where ``-1``
    means after the last batch dim.
    """
    if type(dim) is not int:
        if isinstance(dim, bool) or not hasattr(dim, "__index__"):
            msg = (
                f"{op}: dim must be an int, got {dim!r} (batch dims are addressed by "
                "position; dims.index(name) of td.names gives a named dim's)"
            )
            raise ArgumentError(msg)
        dim = int(dim)
    bound = ndim + 1 if inclusive else ndim
    if -bound <= dim < bound:
        return dim + bound if dim < 0 else dim
    msg = (
        f"{op}: dim {dim} is out of range for {ndim} batch dim(s) "
        f"(expected a value in [{-bound}, {bound - 1}])"
    )
    raise DimError(msg)


def normalize_dim_pair(dim0: int, dim1: int, ndim: int, *, op: str) -> tuple[int, int]:
    """``normalize_dim`` of the two dims ``transpose``/``swapaxes`` exchange; the error
    says that both must be batch dims (and, under ``set_lazy_legacy(True)``, that they are
    incompatible with the batch size, as the peer says there)."""
    try:
        return normalize_dim(dim0, ndim, op=op), normalize_dim(dim1, ndim, op=op)
    except DimError as error:
        msg = f"{op}: dim0 and dim1 must be within the range of the number of dimensions; {error}"
        if OPTIONS.lazy_legacy:  # the peer's words in its legacy lazy mode
            msg = f"The provided dimensions are incompatible with the batch size. {msg}"
        raise DimError(msg) from None


def normalize_split_dim(dim: int, ndim: int) -> int:
    """``normalize_dim`` for ``split``, whose error names the dim as incompatible, as the
    peer's does."""
    try:
        return normalize_dim(dim, ndim, op="split")
    except DimError as error:
        msg = f"split: Incompatible dim {dim}; {str(error).removeprefix('split: ')}"
        raise DimError(msg) from None


def as_int_arg(value: object) -> int | None:
    """``value`` as the int torch reads it as, for a size or a dim: an int or a numpy
    integer (``np.int64(2)``, what numpy code computes); None for anything else (a bool,
    a float, a numpy bool, a sequence)."""
    if type(value) is int:
        return value
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return int(value)
    return None


def shape_args(args: tuple[object, ...], op: str) -> tuple[int, ...]:
    """Accepts ``op(2, 3)``, ``op((2, 3))`` and ``op(torch.Size([2, 3]))`` alike; numpy
    integers as ints, as torch does."""
    if len(args) == 1 and as_int_arg(args[0]) is None and not isinstance(args[0], int):
        (only,) = args
        if not isinstance(only, Sequence):
            msg = f"{op}: expected ints or one sequence of ints, got {only!r}"
            raise ArgumentError(msg)
        args = tuple(only)
    sizes = []
    for size in args:
        value = as_int_arg(size)
        if value is None:
            msg = f"{op}: sizes must be ints, got {size!r} in {args!r}"
            raise ArgumentError(msg)
        sizes.append(value)
    return tuple(sizes)


def permute_args(dims_list: tuple[object, ...], dims: Sequence[int] | None) -> tuple[int, ...]:
    """The order ``permute`` is given: ``permute(1, 0)``, ``permute((1, 0))`` or, as the
    peer also takes it, ``permute(dims=(1, 0))``."""
    if dims is None:
        return shape_args(dims_list, "permute")
    if dims_list:
        msg = f"permute: give the order once, not both {dims_list!r} and dims={dims!r}"
        raise ArgumentError(msg)
    return shape_args((dims,), "permute")


def view_shape(target: tuple[int, ...], batch_size: torch.Size, op: str) -> torch.Size:
    """The batch size a reshape/view to ``target`` gives (one ``-1`` is inferred)."""
    numel = math.prod(batch_size)
    unknown = [i for i, size in enumerate(target) if size == -1]
    if len(unknown) > 1 or any(size < -1 for size in target):
        msg = f"{op}: invalid shape {list(target)}: only one dim may be -1 and none below it"
        raise ShapeError(msg)
    known = math.prod([size for size in target if size != -1])
    if unknown:
        if known == 0 or numel % known:
            msg = (
                f"{op}: shape {list(target)} is invalid for a batch of {numel} elements "
                f"(batch size {format_shape(batch_size)})"
            )
            raise ShapeError(msg)
        target = target[: unknown[0]] + (numel // known,) + target[unknown[0] + 1 :]
    elif known != numel:
        msg = (
            f"{op}: shape {list(target)} is invalid for a batch of {numel} elements "
            f"(batch size {format_shape(batch_size)})"
        )
        raise ShapeError(msg)
    return torch.Size(target)


def expand_shape(target: tuple[int, ...], batch_size: torch.Size) -> torch.Size:
    """The batch size after ``expand(*target)``, with torch's broadcasting rules.

    Raises:
        ShapeError: the target does not broadcast the batch size.
        HeterogeneousEntryError: (a ``ValueError`` and ``RuntimeError``) the target
            gives a ragged dim (``-1``: a lazy stack's members differ there) a size.
    """
    extra = len(target) - len(batch_size)
    if extra < 0:
        msg = (
            f"expand: the target shape {list(target)} has fewer dims than the batch size "
            f"{format_shape(batch_size)}"
        )
        raise ShapeError(msg)
    out = list(target)
    for i, size in enumerate(batch_size):
        want = target[extra + i]
        if want == -1:
            out[extra + i] = size
        elif size == -1 and want != -1:  # a lazy stack's ragged dim: no one size to expand
            msg = (
                f"expand: dim {i} of this lazy stack (batch size {format_shape(batch_size)}) "
                f"is ragged: its members differ in size there, so it cannot be expanded to "
                f"{want}; keep it with -1 in the target shape, or pad the members with "
                "tclass.pad_sequence"
            )
            raise HeterogeneousEntryError(msg)
        elif want != size and size != 1:
            msg = (
                f"expand: cannot expand batch size {format_shape(batch_size)} to "
                f"{list(target)}: dim {i} has size {size}, which is neither {want} nor 1"
            )
            raise ShapeError(msg)
    # A dim kept with -1 may be a ragged lazy-stack dim (size -1); other sizes must be >= 0.
    kept = {extra + i for i, size in enumerate(batch_size) if target[extra + i] == -1}
    if any(size < 0 and i not in kept for i, size in enumerate(out)):
        msg = f"expand: -1 is only allowed for existing dims, got {list(target)}"
        raise ShapeError(msg)
    return torch.Size(out)


def squeeze_dims(batch_size: torch.Size, dim: int | None) -> tuple[int, ...]:
    """The batch dims ``squeeze(dim)`` removes: all size-1 dims, or ``dim`` if it is 1."""
    if dim is None:
        return tuple(i for i, size in enumerate(batch_size) if size == 1)
    dim = normalize_dim(dim, len(batch_size), op="squeeze")
    return (dim,) if batch_size[dim] == 1 else ()


def permute_dims(dims: tuple[int, ...], ndim: int) -> tuple[int, ...]:
    """Validates a permutation of the batch dims (negative dims allowed). As in the peer,
    fewer dims than batch dims reorder the leading dims only: ``dims`` must then be a
    permutation of ``range(len(dims))`` and the other dims keep their place."""
    if len(dims) > ndim:
        msg = f"permute: expected at most {ndim} dims (one per batch dim), got {list(dims)}"
        raise ShapeError(msg)
    out = tuple(normalize_dim(d, ndim, op="permute") for d in dims)
    if sorted(out) != list(range(len(out))):
        msg = (
            f"permute: {list(dims)} is not a permutation of the leading batch dims "
            f"{list(range(len(out)))}"
        )
        raise ShapeError(msg)
    return out + tuple(range(len(out), ndim))


def split_sizes(split_size: int | Sequence[int], dim_size: int) -> list[int]:
    """The sizes ``split(split_size)`` cuts a dim of ``dim_size`` into, as torch does."""
    listed = isinstance(split_size, Sequence) and not isinstance(split_size, (str, bytes))
    items: list[object] = list(cast("Sequence[object]", split_size)) if listed else [split_size]
    if not all(isinstance(s, SupportsIndex) and not isinstance(s, bool) for s in items):
        msg = f"split: split_size must be int or list of ints, got {split_size!r}"
        raise ArgumentError(msg)
    # a symbolic size (``td.shape[0] - 2`` under torch.compile) as it is: its
    # ``__index__`` would make the trace break
    sizes = [
        cast("int", size)
        if isinstance(size, (int, torch.SymInt))
        else cast("SupportsIndex", size).__index__()
        for size in items
    ]
    if not listed:
        (size,) = sizes
        if size <= 0:
            msg = f"split: split_size must be positive, got {size} (a piece has an element or more)"
            raise ShapeError(msg)
        full, rest = dim_size // size, dim_size % size  # divmod breaks a trace
        return [size] * full + ([rest] if rest else []) or [0]
    if not sizes and dim_size:
        msg = (
            f"split: Insufficient number of elements in split_size [] for a dim of size {dim_size}"
        )
        raise ShapeError(msg)
    if sum(sizes) != dim_size or any(s < 0 for s in sizes):
        msg = (
            f"split: sizes {sizes} do not add up to the dim size {dim_size} (split expects "
            "split_size to sum exactly to it)"
        )
        raise ShapeError(msg)
    return sizes


def chunk_sizes(chunks: int, dim_size: int) -> list[int]:
    """The sizes ``chunk(chunks)`` cuts a dim into, as torch does (maybe fewer chunks)."""
    if chunks <= 0:
        msg = f"chunk: the number of chunks must be positive, got {chunks}"
        raise ShapeError(msg)
    if dim_size == 0:
        return [0] * chunks  # torch gives `chunks` empty pieces
    return split_sizes(-(-dim_size // chunks), dim_size)


def indexed_shape(batch_size: torch.Size, index: object) -> torch.Size:
    """The batch size after ``index``, worked out on a stride-0 stand-in (no data).

    Raises:
        DimError: (an ``IndexError``) for an index out of range or that does not fit.
    """
    try:
        return _stand_in(batch_size)[index].shape  # type: ignore[index]
    except IndexError as error:
        raise index_error(index, batch_size, error) from None


# Stride-0 stand-ins of the batch sizes indexed lately (one element of storage each):
# making one (``torch.empty``, ``expand``) took two thirds of ``indexed_shape``'s time.
_STAND_INS: dict[torch.Size, torch.Tensor] = {}
_STAND_IN_LIMIT = 64


def _stand_in(batch_size: torch.Size) -> torch.Tensor:
    # Not while tracing (a lookup by a symbolic size pins it), under a dispatch mode (a
    # fake mode refuses a real tensor made outside it) or a function mode (a default
    # device: a meta stand-in kept would check no index's range afterwards).
    if (
        tracing()
        or torch._C._len_torch_dispatch_stack()
        or torch._C._len_torch_function_stack()
        or type(batch_size) is not torch.Size
    ):
        return torch.empty(()).expand(batch_size)
    stand_in = _STAND_INS.get(batch_size)
    if stand_in is None:
        if len(_STAND_INS) >= _STAND_IN_LIMIT:
            _STAND_INS.clear()
        stand_in = _STAND_INS[batch_size] = torch.empty(()).expand(batch_size)
    return stand_in


def broadcasts_to(source: Sequence[int], target: Sequence[int]) -> bool:
    """Whether a value of shape ``source`` can be written into ``target`` as torch writes
    ``tensor[index] = value``: leading dims of size 1 dropped, then broadcast."""
    leading = 0
    while leading < len(source) - len(target) and source[leading] == 1:
        leading += 1
    return len(source) - leading <= len(target) and all(
        s in (1, t) for s, t in zip(reversed(source), reversed(target), strict=False)
    )


# what :func:`index_error` says before torch's words
_SAID = re.compile(r"index .+? is out of range for the batch size \[[\d, ]*\]: ")


def index_error(index: object, batch_size: Sequence[int], error: IndexError) -> DimError:
    """The error for ``index``, which torch refused (``error``) for a tensor of the batch
    size: an ``IndexTypeError`` (also a ``TypeError``) for an index of a type that
    indexes nothing (a set...), else a ``DimError`` (out of range, too many indices).
    ``error`` may be this error already, of a nested collection indexed with the same
    index: torch's words are then taken from it, not repeated after its own."""
    text = str(error)
    if isinstance(error, DimError):
        while (said := _SAID.match(text)) is not None:
            text = text[said.end() :]
    if "valid indices" in text or "tensors used as indices" in text:
        msg = f"Invalid index {_shown(index)} for the batch size {list(batch_size)}: {text}"
        return IndexTypeError(msg)
    if "shape of the mask" in text:
        return DimError(_mask_mismatch(index, batch_size))
    msg = f"index {_shown(index)} is out of range for the batch size {list(batch_size)}: {text}"
    return DimError(msg)


def entry_index_error(call: str, key: object, entry: object, error: IndexError) -> IndexError:
    """``get_at`` / ``set_at_``'s error for an index that the entry refuses (``call``
    as written, e.g. ``"get_at('a', 9)"``): torch's words, an ``IndexError`` as the
    peer's, with the key and the entry's shape when it has one (``entry``; None when
    it is not at hand, e.g. a dataset in a file)."""
    if isinstance(error, TclassError):  # a collection's own error says it already
        return error
    shape = getattr(entry, "shape", getattr(entry, "batch_size", None))
    has = "" if shape is None else f" (the entry {key!r} has shape {format_shape(shape)})"
    msg = (
        f"{call}: {error}{has}; the index selects elements of the entry itself, its "
        "feature dims included"
    )
    return DimError(msg)


def entry_write_error(
    key: object, value: object, index: object, entry: Any, error: Exception
) -> ShapeError:
    """``set_at_``'s error for a value that torch does not broadcast to the elements
    ``index`` of the entry (``entry``: the tensor written into): torch's words, with the
    key and both shapes, a ``ShapeError`` (a ``RuntimeError``, as torch's and the peer's)."""
    shape = format_shape(getattr(value, "shape", ()))
    msg = (
        f"set_at_({key!r}, value, {index!r}): cannot write a value of shape {shape} "
        f"into elements {index!r} of the entry of shape {format_shape(entry.shape)}: "
        f"{error}; give a value of the selected elements' shape (or one that broadcasts to it)"
    )
    return ShapeError(msg)


def _shown(index: object) -> str:
    """``index`` as an error message shows it: a tensor of more than 8 elements by its
    dtype and shape (its repr would fill the message)."""
    items = index if type(index) is tuple else (index,)
    if not any(isinstance(item, torch.Tensor) and item.numel() > 8 for item in items):
        return repr(index)
    shown = [
        f"<{str(item.dtype).removeprefix('torch.')} tensor of shape {list(item.shape)}>"
        if isinstance(item, torch.Tensor) and item.numel() > 8
        else repr(item)
        for item in items
    ]
    return f"({', '.join(shown)})" if type(index) is tuple else shown[0]


def _mask_mismatch(index: object, batch_size: Sequence[int]) -> str:
    """The message for a boolean mask whose shape is not that of the batch dims it
    covers (torch's names the shape of a leaf, feature dims included)."""
    items = index if type(index) is tuple else (index,)
    dim = 0
    for item in items:
        if item is Ellipsis:
            dim = len(batch_size) - sum(index_dims_consumed(i) for i in items)
            continue
        if isinstance(item, torch.Tensor) and item.dtype is torch.bool:
            covered = list(batch_size[dim : dim + item.ndim])
            if list(item.shape) != covered:
                where = (
                    f"batch dim {dim}"
                    if item.ndim == 1
                    else f"batch dims {dim}..{dim + item.ndim - 1}"
                )
                return (
                    f"the mask has shape {list(item.shape)} but {where} of the batch size "
                    f"{list(batch_size)} {'has size' if item.ndim == 1 else 'have sizes'} "
                    f"{covered[0] if item.ndim == 1 and covered else covered}; a boolean index "
                    "must match the batch dims it covers (the shape of the mask does not match "
                    "the shape of the indexed tensor)"
                )
        dim += index_dims_consumed(item)
    return (
        f"index {_shown(index)} does not fit the batch size {list(batch_size)}: a boolean index "
        "must match the batch dims it covers (the shape of the mask does not match the shape "
        "of the indexed tensor)"
    )


def index_dims_consumed(item: object) -> int:
    """How many batch dims one element of an index tuple consumes."""
    if item is None or item is Ellipsis or isinstance(item, bool):
        return 0
    if isinstance(item, torch.Tensor) and item.dtype is torch.bool:
        return item.ndim  # a 0-d bool tensor adds a dim, like a Python bool
    return 1


def is_first_class_dim(item: object) -> bool:
    """Whether ``item`` is a first-class dim (``functorch.dim.dims()``): as an index it
    takes its dim out of the shape, as an int does, and binds it to the dim object. None
    exists unless ``functorch.dim`` was imported, so it is not imported here."""
    module = sys.modules.get("functorch.dim")
    return module is not None and isinstance(item, module.Dim)


def is_basic_item(item: object) -> bool:
    """``None``, an int or a slice: an index item that is not a tensor or a list."""
    return item is None or type(item) is int or type(item) is slice


def selects_first(item: object) -> bool:
    """An int, or a 0-d integer tensor: torch selects along its dim first (it neither
    adds a dim nor parts the tensor indices around it)."""
    if isinstance(item, torch.Tensor):
        return item.ndim == 0 and item.dtype is not torch.bool
    return type(item) is int


def advanced_block(items: tuple[Any, ...]) -> tuple[int, int]:
    """Where the dims the tensors of the index ``items`` (lists made tensors, at least
    one) give land in the result, as ``(first dim, count)``: torch's rule, in place when
    nothing parts the tensors, in front otherwise; an int selects first, so it does not
    part them (unlike numpy's); a mask of any dims gives one dim."""
    tensors = [i for i, item in enumerate(items) if not is_basic_item(item)]
    advanced = [i for i in tensors if not selects_first(items[i])] or tensors
    between = items[advanced[0] : advanced[-1] + 1]
    contiguous = not any(item is None or type(item) is slice for item in between)
    start = sum(not selects_first(item) for item in items[: advanced[0]]) if contiguous else 0
    ndims = [
        1 if item.dtype is torch.bool else item.ndim
        for item in items
        if isinstance(item, torch.Tensor)
    ]
    return start, max(ndims)


def is_whole_index(index: object, batch_dims: int) -> bool:
    """Whether ``index`` selects everything as it is (``...``, ``()``, ``:``, ``..., :``):
    the peer then returns the collection itself, not a view of it."""
    items = index if type(index) is tuple else (index,)
    full = 0
    for item in items:
        if item.__class__ is slice:
            if item.start is not None or item.stop is not None or item.step is not None:
                return False
            full += 1
        elif item is not Ellipsis:
            return False
    return full <= batch_dims and sum(1 for item in items if item is Ellipsis) <= 1


def keeps_data_pointer(index: object) -> bool:
    """The peer's test for an index whose result it treats as a view of the same memory
    (ints, ``None``, ``...`` and slices from the start, alone or in a tuple)."""
    if type(index) is tuple:
        return all(keeps_data_pointer(item) for item in index)
    if type(index) is slice:
        return index.start is None or index.start == 0
    return index is None or index is Ellipsis or type(index) is int


def refuse_key_list(item: object) -> None:
    """Refuses a list index holding keys (``td[["a", "b"]]``), which indexes no batch dim.

    Raises:
        IndexTypeError: (a ``TypeError``, as the peer raises) naming the keys and
            ``select``, which takes them.
    """
    if type(item) is not list:
        return
    keys = [part for part in item if isinstance(part, str) or _is_str_tuple(part)]
    if keys:
        hint = "a list index selects rows with ints or bools, not entries by key"
        if len(keys) == len(item):
            hint += f"; to keep these entries, use select({', '.join(map(repr, keys))})"
        raise IndexTypeError(f"Invalid index {item!r}: {hint}")


def _key_in_index(index: tuple[object, ...], key: str) -> IndexTypeError:
    """The error for a key among the batch indices of a subscript (``td[0, "a"]``)."""
    rows = tuple(item for item in index if not isinstance(item, str))
    where = rows[0] if len(rows) == 1 else rows
    msg = (
        f"Invalid index {index!r}: {key!r} is a key, and a subscript takes either a key "
        "(first, as td['a'] or td['a', 'b']) or batch indices, not both; read the entry "
        f"and index it (td[{key!r}][{where!r}]), or write it with "
        f"td.set_at_({key!r}, value, {where!r})"
    )
    return IndexTypeError(msg)


def _is_str_tuple(part: object) -> bool:
    return type(part) is tuple and bool(part) and all(isinstance(p, str) for p in part)


def normalize_index(
    index: tuple[object, ...], batch_dims: int, *, keys: bool = False
) -> tuple[object, ...]:
    """An index tuple that indexes only batch dims, with its Ellipsis spelled out.

    Leaves have feature dims after the batch dims, so ``...`` must mean "the remaining
    *batch* dims" (``td[..., 0]`` indexes the last batch dim, not the last leaf dim).

    ``keys``: a key may follow the batch indices (a lazy stack's ``lazy[0, "a"]``, the
    member then its entry, as the peer's); else one is an ``IndexTypeError``.

    Raises:
        DimError: if the index addresses more dims than there are batch dims, or has
            more than one Ellipsis.
        IndexTypeError: (a ``TypeError``, as torch's) for a key among batch indices.
    """
    consumed = 0
    ellipsis_at = -1
    for position, item in enumerate(index):
        refuse_key_list(item)
        if not keys and isinstance(item, str):
            raise _key_in_index(index, item)
        if item is Ellipsis:
            if ellipsis_at >= 0:
                msg = "an index can only have a single ellipsis ('...')"
                raise DimError(msg)
            ellipsis_at = position
        else:
            consumed += index_dims_consumed(item)
    if consumed > batch_dims:
        msg = (
            f"too many indices: {index!r} indexes {consumed} dims but there are only "
            f"{batch_dims} batch dims. To index the leaves' feature dims, use "
            "apply(lambda x: x[...]) instead"
        )
        raise DimError(msg)
    if ellipsis_at < 0:
        return index
    fill = (slice(None),) * (batch_dims - consumed)
    return index[:ellipsis_at] + fill + index[ellipsis_at + 1 :]


def convert_ellipsis_to_idx(idx: Any, batch_size: Sequence[int]) -> Any:
    """``idx`` with its ``...`` spelled out as one ``slice(None)`` per batch dim it
    covers (``(..., 0)`` on ``[1, 2, 3]`` gives ``(:, :, 0)``); an index without ``...``
    is returned as it is. Deprecated, as the peer's ``tensordict.utils`` function of that
    name (``tclass.utils`` warns when it is looked up): index the collection instead.

    Raises:
        DimError: (a ``RuntimeError``, as the peer raises) for two ``...``, or an index
            with ``...`` that addresses more dims than ``batch_size`` has.
    """
    if idx is Ellipsis:
        idx = (idx,)
    elif type(idx) is not tuple or not any(item is Ellipsis for item in idx):
        return idx
    return normalize_index(idx, len(batch_size), keys=True)


def writes_nothing(target: torch.Tensor, source: torch.Tensor) -> bool:
    """Whether ``target.copy_(source)`` changes no element: ``target`` has none and
    ``source`` broadcasts to its shape, or ``source`` is ``target``'s own elements (its
    ``.data``, or the result of an in-place op on it: the same memory, shape, strides and
    dtype). A failed copy of that kind (autograd refusing a parameter) is then a no-op,
    as the peer's write of it is (``params.apply_(lambda p: p.data.mul_(2))``)."""
    if target.numel() != 0:
        return (
            source.dtype == target.dtype
            and source.shape == target.shape
            and source.stride() == target.stride()
            and source.device == target.device
            and not source.is_nested
            and not target.is_nested
            and source.data_ptr() == target.data_ptr()
        )
    try:
        fits = torch.broadcast_shapes(source.shape, target.shape) == target.shape  # type: ignore[no-untyped-call]
    except RuntimeError:
        return False
    return bool(fits)


def moved_order(source: Sequence[int], destination: Sequence[int], ndim: int) -> tuple[int, ...]:
    """The permutation ``movedim(source, destination)`` applies (dims non-negative): for
    each result dim, the dim it comes from.

    Raises:
        ShapeError: if a dim repeats in ``source`` or in ``destination``.
    """
    for name, dims in (("source", source), ("destination", destination)):
        if len(set(dims)) != len(dims):
            msg = f"movedim: repeated dim in {name} {list(dims)}"
            raise ShapeError(msg)
    order: list[int | None] = [None] * ndim
    for src, dst in zip(source, destination):
        order[dst] = src
    rest = iter(d for d in range(ndim) if d not in source)
    return tuple(d if d is not None else next(rest) for d in order)


def repeat_counts(repeats: tuple[object, ...]) -> tuple[int, ...]:
    """``repeat``'s counts given as ints, one sequence of ints, a ``torch.Size`` or a tensor."""
    if len(repeats) == 1 and not isinstance(repeats[0], int):
        (only,) = repeats
        if isinstance(only, torch.Tensor):
            values: Any = only.tolist()
            return (int(values),) if only.ndim == 0 else tuple(int(v) for v in values)
        if not isinstance(only, Sequence):
            msg = f"repeat: expected ints, a sequence of ints or a tensor, got {only!r}"
            raise ShapeError(msg)
        repeats = tuple(only)
    counts = tuple(_as_count(count, repeats) for count in repeats)
    return counts


def _as_count(count: object, whole: object) -> int:
    if isinstance(count, bool) or not isinstance(count, SupportsIndex):
        msg = f"repeat: counts must be non-negative ints, got {whole!r}"
        raise ShapeError(msg)
    value = count.__index__()
    if value < 0:
        msg = f"repeat: counts must be non-negative ints, got {whole!r}"
        raise ShapeError(msg)
    return value


def interleaved_length(repeats: object, size: int, output_size: int | None) -> int:
    """The length of a dim of ``size`` after ``repeat_interleave(repeats)``, checked as
    torch checks it (``output_size`` is trusted, as torch trusts it)."""
    if isinstance(repeats, torch.Tensor):
        if (
            repeats.dtype.is_floating_point
            or repeats.dtype.is_complex
            or repeats.dtype is torch.bool
        ):
            msg = (  # (a TypeError, as the peer's, which makes a torch.Size of the counts)
                f"repeat_interleave: repeats must be an int or an integer tensor, got "
                f"{repeats} of dtype {repeats.dtype}; give repeats.long()"
            )
            raise ArgumentError(msg)
        if repeats.ndim > 1:
            msg = (
                f"repeat_interleave: repeats must be an int or a 1-d integer tensor, got {repeats}"
            )
            raise ShapeError(msg)
        if repeats.numel() == 1:
            count = int(repeats.reshape(()).item())
        elif repeats.numel() == size:
            if output_size is not None:
                return output_size
            if bool((repeats < 0).any()):
                msg = f"repeat_interleave: repeats must be non-negative, got {repeats.tolist()}"
                raise ShapeError(msg)
            return int(repeats.sum())
        else:
            msg = (
                f"repeat_interleave: {repeats.numel()} repeats for a dim of size {size}; give "
                "one count, or one per element"
            )
            raise ShapeError(msg)
    elif isinstance(repeats, int) and not isinstance(repeats, bool):
        count = repeats
    else:
        msg = f"repeat_interleave: repeats must be an int or an integer tensor, got {repeats!r}"
        raise ShapeError(msg)
    if count < 0:
        msg = f"repeat_interleave: repeats must be non-negative, got {count}"
        raise ShapeError(msg)
    return size * count if output_size is None else output_size


def check_gather_index(index: object, batch_size: torch.Size, dim: int) -> None:
    """Checks a ``gather`` index: an integer tensor with one dim per batch dim, no larger
    than the batch outside ``dim``."""
    if (
        not isinstance(index, torch.Tensor)
        or index.dtype.is_floating_point
        or index.dtype
        in (
            torch.bool,
            torch.complex64,
            torch.complex128,
        )
    ):
        kind = getattr(index, "dtype", type(index).__name__)
        msg = f"gather: the index must be an integer tensor, got {kind}"
        raise ShapeError(msg)
    if index.ndim != len(batch_size):
        msg = (
            f"gather: the index has {index.ndim} dims but the batch size "
            f"{format_shape(batch_size)} has {len(batch_size)}; give one index dim per batch dim"
        )
        raise ShapeError(msg)
    for d, (want, have) in enumerate(zip(index.shape, batch_size)):
        if d != dim and want > have:
            msg = (
                f"gather: the index shape {format_shape(index.shape)} is larger than the "
                f"batch size {format_shape(batch_size)} at dim {d}"
            )
            raise ShapeError(msg)


def check_gather_bounds(index: torch.Tensor, batch_size: torch.Size, dim: int) -> None:
    """Checks a ``gather`` index's values against the batch dim they pick from: run
    where torch refused the index (a collection with no tensors gathers nothing, which
    no index value makes wrong, as in the peer)."""
    # (on another device the check would wait for it; a ragged dim has no size)
    if index.device.type == "cpu" and index.numel() and batch_size[dim] >= 0:
        low, high = (int(v) for v in torch.aminmax(index))
        if low < 0 or high >= batch_size[dim]:
            bad = low if low < 0 else high
            msg = (
                f"gather: index {bad} is out of bounds for batch dim {dim} of size "
                f"{batch_size[dim]} (batch size {format_shape(batch_size)}); the index "
                f"values must be in [0, {batch_size[dim] - 1}]"
            )
            raise DimError(msg)


def flatten_span(batch: Sequence[int], shape: Sequence[int]) -> tuple[int, int] | None:
    """``(i, j)`` when ``shape`` is ``batch`` with dims ``i..j`` (``j > i``) merged into
    one, else None."""
    if len(shape) >= len(batch):
        return None
    i = 0
    while i < len(shape) and shape[i] == batch[i]:
        i += 1
    if i == len(shape):
        if i == 0:
            return None
        i -= 1  # trailing size-1 dims merged into the last dim ([2, 3, 1] -> [2, 3])
    rest = len(shape) - i - 1
    j = len(batch) - rest - 1
    if tuple(batch[j + 1 :]) != tuple(shape[i + 1 :]) or math.prod(batch[i : j + 1]) != shape[i]:
        return None
    return i, j


def inserted_one(batch: Sequence[int], shape: Sequence[int]) -> int | None:
    """The position ``i`` when ``shape`` is ``batch`` with one dim of size 1 inserted at
    ``i`` where the first size that differs from the front and the first from the back
    meet (``[3, 2]`` to ``[3, 1, 2]``: 1, ``[2, 1]`` to ``[2, 1, 1]``: 1), else None. The
    peer's lazy stack stacks itself alone along such a dim; a 1 inserted at either end,
    or in a run of dims of size 1, splits a neighbour instead."""
    if len(shape) != len(batch) + 1 or not batch:
        return None
    i = _first_difference(shape, batch)
    j = _first_difference(shape[::-1], batch[::-1])
    if i != len(shape) - j - 1 or len(batch) - j != i:
        return None
    return i if tuple(shape) == (*batch[:i], 1, *batch[i:]) else None


def sizes_meet(batch: Sequence[int], shape: Sequence[int]) -> bool:
    """Whether the first size of ``shape`` that differs from ``batch`` counted from the
    front and the first counted from the back are at one dim of ``batch``: where the
    peer's lazy stack regroups its members for a reshape (``[2, 3]`` to ``[2, 1, 3]``),
    rather than reshaping a dense copy (``[3, 2, 1]`` to ``[3, 2, 1, 1, 1]``)."""
    if not batch or not shape:
        return False
    i = _first_difference(batch, shape)
    j = _first_difference(batch[::-1], shape[::-1])
    return i == len(batch) - j - 1


def _first_difference(a: Sequence[int], b: Sequence[int]) -> int:
    """The first index where ``a`` and ``b`` differ; the last common index if none does."""
    for k, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return k
    return min(len(a), len(b)) - 1


def unflatten_span(batch: Sequence[int], shape: Sequence[int]) -> tuple[int, int] | None:
    """``(i, count)`` when ``shape`` is ``batch`` with dim ``i`` split into ``count``
    dims (``count > 1``), else None."""
    span = flatten_span(shape, batch)
    return None if span is None else (span[0], span[1] - span[0] + 1)


def common_prefix(shapes: Sequence[Sequence[int]]) -> torch.Size:
    """The longest leading shape every one of ``shapes`` starts with (``[]`` for none)."""
    if not shapes:
        return _EMPTY
    first = shapes[0]
    length = min(len(shape) for shape in shapes)
    for dim in range(length):
        if any(shape[dim] != first[dim] for shape in shapes):
            length = dim
            break
    return torch.Size(first[:length])
