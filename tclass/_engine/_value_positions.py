"""Where each element of a Python-value node goes under indexing and shape ops: its
flat positions, computed by applying the op to a tensor of element numbers (so every
index torch takes is understood; under ``torch.compile`` the views are worked out from
sizes and strides instead), plus the nested-list, shape and value-equality helpers the
nodes share."""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence
from typing import Any, TypeVar, cast

import numpy as np
import torch

from tclass._base._provided import ENGINE
from tclass._core._batch import index_error
from tclass.errors import ArgumentValueError, DimError, ShapeError, StackError

Positions = tuple[torch.Size, list[int]]


def element_positions(shape: torch.Size, fn: Callable[[torch.Tensor], Any]) -> list[Positions]:
    """What a structural op ``fn`` (a torch op, or one that returns several tensors) does
    to the elements of a batch of size ``shape``: the shape and the row-major element
    numbers of each result, worked out on ``arange(numel).reshape(shape)``.

    Under ``torch.compile`` the op runs outside the trace (a graph break), since Python
    values picked by tensor data cannot be part of a graph; the views below
    (:func:`indexed` with ints and slices, :func:`expanded`) are worked out from sizes
    alone, inside the trace.
    """
    if not torch.compiler.is_compiling():
        return positions_now(shape, fn)
    return _outside_trace(positions_now)(shape, fn)


def indexed(shape: torch.Size, index: Any) -> Positions:
    """:func:`element_positions` of ``numbers[index]``."""
    items = index if type(index) is tuple else (index,)
    if torch.compiler.is_compiling() and all(type(item) in _BASIC for item in items):
        return _View.of(shape).indexed(items).positions()
    try:
        return element_positions(shape, lambda numbers: numbers[index])[0]
    except IndexError as error:  # out of range, an index of no type torch takes
        if isinstance(error, DimError):
            raise
        raise index_error(index, shape, error) from None


def expanded(shape: torch.Size, new: torch.Size) -> Positions:
    """:func:`element_positions` of ``numbers.expand(new)``.

    Raises:
        RuntimeError: if ``shape`` does not broadcast to ``new`` (as ``expand``).
    """
    if torch.compiler.is_compiling():
        return _View.of(shape).expanded(new).positions()
    return positions_now(shape, lambda numbers: numbers.expand(new))[0]


def positions_now(shape: torch.Size, fn: Callable[[torch.Tensor], Any]) -> list[Positions]:
    return viewed_positions(shape, fn)[0]


def element_views(
    shape: torch.Size, fn: Callable[[torch.Tensor], Any]
) -> tuple[list[Positions], bool]:
    """:func:`element_positions`, and whether each result is a view that reads every
    element it holds once (torch's ``view``, ``permute``, ``unsqueeze``, a split, an
    ``expand`` adding no element twice...; not ``flip``, ``roll``, ``repeat`` or an
    ``expand`` that repeats elements): the peer's node of such an op shares its source's
    Python values, so a write into it reaches the source. Never, under ``torch.compile``."""
    if torch.compiler.is_compiling():
        return element_positions(shape, fn), False
    return viewed_positions(shape, fn)


def viewed_positions(
    shape: torch.Size, fn: Callable[[torch.Tensor], Any]
) -> tuple[list[Positions], bool]:
    numbers = torch.arange(math.prod(shape)).reshape(shape)
    result = fn(numbers)
    pieces: list[torch.Tensor] = [result] if isinstance(result, torch.Tensor) else list(result)
    found = [(piece.shape, piece.reshape(-1).tolist()) for piece in pieces]
    storage = numbers.untyped_storage().data_ptr()
    views = all(
        piece.untyped_storage().data_ptr() == storage and len(set(at)) == len(at)
        for piece, (_, at) in zip(pieces, found)
    )
    return found, views


_F = TypeVar("_F", bound=Callable[..., Any])
_OUTSIDE: dict[Callable[..., Any], Callable[..., Any]] = {}


def _outside_trace(fn: _F) -> _F:
    """``fn`` marked to run outside a ``torch.compile`` trace. Marking imports
    ``torch._dynamo`` (over a second), so it is done the first time a trace needs it (the
    call to ``torch.compiler.disable`` is itself a graph break), never by ``import
    tclass``."""
    marked = _OUTSIDE.get(fn)
    if marked is None:
        marked = _OUTSIDE[fn] = torch.compiler.disable(fn)  # type: ignore[no-untyped-call]
    return cast(_F, marked)


_BASIC = frozenset({int, slice, type(None), type(...)})


class _View:
    """A view of a row-major batch as sizes and strides in elements (and an offset):
    the element numbers of an index of ints and slices, an expand or a select, worked
    out without a tensor, so that ``torch.compile`` keeps them in the trace."""

    def __init__(self, dims: list[tuple[int, int]], offset: int) -> None:
        self.dims = dims  # (size, stride) of each dim
        self.offset = offset

    @classmethod
    def of(cls, shape: Sequence[int]) -> _View:
        dims: list[tuple[int, int]] = []
        stride = 1
        for size in reversed(shape):
            dims.insert(0, (size, stride))
            stride *= size
        return cls(dims, 0)

    def indexed(self, items: Sequence[Any]) -> _View:
        """The view of ``[*items]`` (ints, slices, ``None`` and one ``...``), with
        torch's errors."""
        nb = len(self.dims)
        taken = sum(type(item) is int or type(item) is slice for item in items)
        if taken > nb:
            raise DimError(f"too many indices for tensor of dimension {nb}")
        dims: list[tuple[int, int]] = []
        offset, source = self.offset, 0
        for item in items:
            if item is None:
                dims.append((1, 0))
            elif item is ...:
                dims += self.dims[source : source + nb - taken]
                source += nb - taken
            else:
                size, stride = self.dims[source]
                if type(item) is int:
                    if not -size <= item < size:
                        msg = (
                            f"index {item} is out of bounds for dimension {source} with size {size}"
                        )
                        raise DimError(msg)
                    offset += (item % size) * stride
                else:
                    if item.step is not None and item.step <= 0:
                        raise ArgumentValueError("step must be greater than zero")
                    start, stop, step = item.indices(size)
                    dims.append((len(range(start, stop, step)), stride * step))
                    offset += start * stride
                source += 1
        return _View(dims + self.dims[source:], offset)

    def expanded(self, new: Sequence[int]) -> _View:
        """The view of ``.expand(new)``, with torch's error."""
        lead = len(new) - len(self.dims)
        dims = [(size, 0) for size in new[:lead]]
        for (size, stride), target in zip(self.dims, new[lead:]):
            if target == -1 or target == size:
                dims.append((size, stride))
            elif size == 1 and target >= 0:
                dims.append((target, 0))
            else:
                break
        if lead < 0 or len(dims) != len(new) or any(size < 0 for size, _ in dims):
            msg = (
                f"The expanded size of the tensor {list(new)} does not match the existing "
                f"size {[size for size, _ in self.dims]}"
            )
            raise ShapeError(msg)
        return _View(dims, self.offset)

    def positions(self) -> Positions:
        flat = [self.offset]
        for size, stride in self.dims:
            flat = [position + i * stride for position in flat for i in range(size)]
        return torch.Size([size for size, _ in self.dims]), flat


def batch_shapes(a: torch.Size, b: torch.Size) -> torch.Size:
    if a == b:
        return a
    return torch.Size(np.broadcast_shapes(tuple(a), tuple(b)))


def nested(values: list[Any], shape: torch.Size) -> Any:
    """Flat row-major ``values`` as nested lists shaped ``shape`` (the value for ``[]``)."""
    if not shape:
        return values[0]
    out: list[Any] = list(values)
    for dim in range(len(shape) - 1, 0, -1):
        size = shape[dim]
        out = [out[g * size : (g + 1) * size] for g in range(math.prod(shape[:dim]))]
    return out


def dim_after_index(index: Any, dim: int) -> int | None:
    """Where batch dim ``dim`` is after ``index`` (ints, slices and ``None`` only): -1
    if an int removed it, ``None`` if the index is of another kind."""
    items = index if type(index) is tuple else (index,)
    masks = [item for item in items if _is_mask(item)]
    if masks and sum(type(item) not in (int, slice, type(None)) for item in items) > 1:
        return None  # (a mask beside another advanced index: the dims broadcast together)
    source = out = 0
    for item in items:
        if item is None:
            out += 1
        elif _is_mask(item):
            # one dim for all the mask's, a stack dim when it spans one, as the peer's
            # stack, which takes each selected member at the rest of the mask
            if source <= dim < source + item.ndim:
                return out
            source += item.ndim
            out += 1
        elif type(item) is int:
            if source == dim:
                return -1
            source += 1
        elif type(item) is slice:
            if source == dim:
                return out
            source += 1
            out += 1
        else:
            return None
    return out + dim - source


def _is_mask(item: Any) -> bool:
    """Whether an index item is a boolean mask (a tensor or an array)."""
    if isinstance(item, torch.Tensor):
        return item.dtype == torch.bool and item.ndim > 0
    return isinstance(item, np.ndarray) and item.dtype == np.bool_ and item.ndim > 0


def removed_dim(
    shape: torch.Size, unbind: Callable[[torch.Tensor], Sequence[torch.Tensor]]
) -> int | None:
    """The dim of a batch of size ``shape`` that ``unbind`` removes, read off the strides of
    its pieces of a meta tensor whose dims all have distinct strides (element numbers
    cannot tell dims of size 1 apart: ``[1, 1]`` unbound along either gives ``[0]``)."""
    if not torch.compiler.is_compiling():
        return _removed_dim(shape, unbind)
    return _outside_trace(_removed_dim)(shape, unbind)


def _removed_dim(
    shape: torch.Size, unbind: Callable[[torch.Tensor], Sequence[torch.Tensor]]
) -> int | None:
    strides = [0] * len(shape)
    running = 1
    for dim in reversed(range(len(shape))):
        strides[dim] = running
        running *= max(shape[dim], 1)
    # A dim of size 1 never moves along the data: any stride does, one of its own.
    strides = [s if shape[d] > 1 else running + d for d, s in enumerate(strides)]
    pieces = unbind(torch.empty_strided(tuple(shape), tuple(strides), device="meta"))
    if not pieces:
        return None
    kept = set(pieces[0].stride())
    missing = [dim for dim, stride in enumerate(strides) if stride not in kept]
    return missing[0] if len(missing) == 1 else None


def joined_shape(shapes: list[torch.Size], op: str, dim: int, path: tuple[str, ...]) -> torch.Size:
    """The batch size of ``shapes`` stacked or concatenated along ``dim``.

    Raises:
        StackError: if they do not join (naming the entry and the batch sizes).
    """
    first = shapes[0]
    if op == "stack":
        if all(shape == first for shape in shapes):
            return torch.Size((*first[:dim], len(shapes), *first[dim:]))
    elif dim < len(first) and all(
        len(shape) == len(first)
        and shape[:dim] == first[:dim]
        and shape[dim + 1 :] == first[dim + 1 :]
        for shape in shapes
    ):
        total = sum(shape[dim] for shape in shapes)
        return torch.Size((*first[:dim], total, *first[dim + 1 :]))
    name = path[0] if len(path) == 1 else path
    shown = ", ".join(str(list(shape)) for shape in shapes)
    msg = (
        f"{op}: the Python values under {name!r} have batch sizes that do not join along "
        f"dim {dim}: {shown}"
    )
    raise StackError(msg)


def same_value(a: object, b: object) -> bool:
    """Whether two non-tensor values are interchangeable (same type, equal; arrays of
    one shape and dtype equal element by element, as the peer's ``cat`` compares them)."""
    if a is b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        b = cast(np.ndarray, b)
        return a.shape == b.shape and a.dtype == b.dtype and bool((a == b).all())
    try:
        return bool(a == b)
    except Exception:  # an __eq__ that returns arrays or raises: treat as different
        return False


def unchanged_by(new: object, old: object) -> bool:
    """Whether writing ``new`` where ``old`` is held changes nothing, as the peer's write
    asks: the same type and ``new != old`` false. A value that compares element by
    element (an array) or raises, or is not equal to itself (``nan``), counts as a change
    even when it is the very object held, so the write makes a stack of it."""
    if type(new) is not type(old):
        return False
    try:
        return not bool(new != old)
    except Exception:  # an array's element-wise answer, or an __ne__ that raises
        return False


_ATOMIC = (str, int, float, bool, complex, bytes, type(None))


def copy_value(value: object) -> object:
    """A deep copy of a non-tensor value (immutable atoms are shared)."""
    return value if isinstance(value, _ATOMIC) else copy.deepcopy(value)


def copy_containers(value: object) -> object:
    """``value`` with new ``dict``, ``list`` and ``tuple`` containers all the way down and
    the same leaves: what a shallow clone gives each Python value, as the peer's (its
    ``tree_map`` copy), so that editing a clone's dict leaves the source's alone."""
    kind = type(value)
    if kind is dict:
        return {key: copy_containers(item) for key, item in value.items()}  # type: ignore[attr-defined]
    if kind is list:
        return [copy_containers(item) for item in value]  # type: ignore[attr-defined]
    if kind is tuple:
        return tuple(copy_containers(item) for item in value)  # type: ignore[attr-defined]
    return value


# --- where the stack dims of a value stack go ----------------------------------------------
# A NonTensorStack knows the dims its values were stacked along (``StackDims``: the dims
# of the peer's stack of stacks, outermost first; ``None`` when an operation mixed the
# elements, so that each element is its own member). Indexing every one of them away
# gives one value back; these helpers say where they are after an op.

StackDims = tuple[int, ...] | None


def dims_after_write(dims: StackDims, ndim: int) -> StackDims:
    """``dims`` once some elements of a stack of ``ndim`` dims are written: kept when
    they are every dim (each element its own member, as in the peer's stack that a
    write into one value makes: nested along each dim), else ``None`` (a member may now
    hold different values)."""
    return dims if dims is not None and sorted(dims) == list(range(ndim)) else None


def shifted_in(dims: tuple[int, ...], dim: int) -> tuple[int, ...]:
    """``dims`` once a dim is inserted at ``dim``, which becomes a stack dim itself (a
    stacked or unsqueezed dim: the peer's members, or a stack of the one member)."""
    return (dim, *(d + 1 if d >= dim else d for d in dims))


def dims_after_index(index: Any, dims: StackDims, shape: torch.Size) -> StackDims:
    """Where ``dims`` (of a batch of size ``shape``) are after ``index``: the ones an
    int removed are left out; for an index of tensors, where the peer's lazy stack puts
    its stack dims (``_lazy/_value_nesting.py``); ``None`` for any other (but ``()`` where ints
    remove every dim: the peer's nesting, whatever it is, then gives the member holding
    that element, a ``NonTensorData``)."""
    if dims is None:
        return () if _ints_remove_all(_zero_d_as_int(index), len(shape)) else None
    plain = _one_list_as_slice(_zero_d_as_int(index))
    moved = [dim_after_index(plain, dim) for dim in dims]
    if any(dim is None for dim in moved):
        return ENGINE.LazyStackedTensorDict._value_nesting(index, dims, shape)
    # (in order: the outer stack first; a mask merges the ones it spans into one)
    return tuple(dict.fromkeys(dim for dim in moved if dim is not None and dim >= 0))


def _ints_remove_all(index: Any, ndim: int) -> bool:
    """Whether ``index`` is ints (one per dim), ``None`` and ``...`` only."""
    items = index if type(index) is tuple else (index,)
    if any(item is not None and item is not ... and type(item) is not int for item in items):
        return False
    return sum(type(item) is int for item in items) == ndim


def _zero_d_as_int(index: Any) -> Any:
    """``index`` with each 0-d integer tensor read as the int it holds: it selects as an
    int does (torch's rule), removing the dim, and so the stack dim too (the peer's
    ``x[torch.tensor(0)]`` of a stack of one value gives a ``NonTensorData``)."""
    items = index if type(index) is tuple else (index,)
    if not any(_is_zero_d_int(item) for item in items):
        return index
    out = tuple(int(item) if _is_zero_d_int(item) else item for item in items)
    return out if type(index) is tuple else out[0]


def _is_zero_d_int(item: Any) -> bool:
    return (
        isinstance(item, torch.Tensor)
        and item.ndim == 0
        and not item.dtype.is_floating_point
        and item.dtype is not torch.bool
        and not item.is_complex()
    )


def _one_list_as_slice(index: Any) -> Any:
    """``index`` with its one advanced item (a list or 1-d tensor of positions) read as a
    slice: both keep the dim where it is, which the peer's stack keeps as a stack dim."""
    items = index if type(index) is tuple else (index,)
    advanced = [
        i
        for i, item in enumerate(items)
        if item is not None and item is not ... and type(item) not in (int, slice)
    ]
    if len(advanced) != 1:
        return index
    item = items[advanced[0]]
    if isinstance(item, (list, torch.Tensor, np.ndarray)) and _ndim(item) == 1:
        if not isinstance(item, list) or all(type(i) is int for i in item):
            return (*items[: advanced[0]], slice(None), *items[advanced[0] + 1 :])
    return index


def _ndim(item: Any) -> int:
    """The dims of an index item (a tensor's read off it: traced, numpy cannot read it)."""
    return item.ndim if isinstance(item, torch.Tensor) else int(np.ndim(item))


def dims_after_squeeze(dims: StackDims, removed: Sequence[int]) -> StackDims:
    """Where ``dims`` are once the dims ``removed`` (of size 1) are gone."""
    if dims is None:
        return None
    return tuple(d - sum(r < d for r in removed) for d in dims if d not in removed)


def dims_after_reshape(old: torch.Size, new: torch.Size, dims: StackDims) -> StackDims:
    """Where ``dims`` are after a reshape that keeps the elements in order, as the peer
    regroups its stack by the shapes alone: when ``new`` flattens dims ``i..j`` of
    ``old`` (all the sizes before ``i`` and after ``j`` match), each element of them is
    a member, stacked along ``i``; when it unflattens dim ``i`` into ``i..j``, the new
    dims ``i..j-1`` are stack dims (``j`` too if ``i`` was one), and when it only drops
    size-1 dims at ``i``, they are indexed away. Any other reshape gives each element as
    a member (``None``)."""
    if dims is None or old == new:
        return dims
    span = _peer_flatten_span(new, old)
    if span is not None:
        i, j = span
        if j < i:
            return None
        return (i, *(d if d < i else d - (j - i) for d in dims if not i <= d <= j))
    span = _peer_flatten_span(old, new)
    if span is None:
        return None
    i, j = span
    removed = len(old) - len(new)
    if removed > 0:
        if j > i or any(size != 1 for size in old[i : i + removed]):
            return None
        return dims_after_squeeze(dims, range(i, i + removed))
    moved = (j if d == i else d if d < i else d + (j - i) for d in dims)
    return (*range(j - 1, i - 1, -1), *moved)  # the new stacks hold the old one


def _peer_flatten_span(new: torch.Size, old: torch.Size) -> tuple[int, int] | None:
    """``(i, j)`` when ``new`` reads as ``old`` with its dims ``i..j`` flattened: the
    first size that differs from the start and the first from the end meet at ``i`` of
    ``new`` (the peer's test, which also matches shapes that only drop size-1 dims:
    ``j`` is then before ``i``)."""
    if not new or not old or math.prod(new) != math.prod(old):
        return None
    pairs = list(zip(new, old))
    i = next((k for k, (a, b) in enumerate(pairs) if a != b), len(pairs) - 1)
    back = list(zip(reversed(new), reversed(old)))
    j = next((k for k, (a, b) in enumerate(back) if a != b), len(back) - 1)
    if i != len(new) - j - 1:
        return None
    return i, len(old) - j - 1


def dims_after_view_op(
    shape: torch.Size, fn: Callable[[torch.Tensor], Any], dims: StackDims
) -> StackDims:
    """Where ``dims`` are after a view op ``fn`` that moves dims (permute, transpose,
    expand, narrow...), read off the strides of ``fn`` applied to a meta tensor whose
    dims have distinct strides: a dim that keeps a source dim's stride is that dim, an
    expanded size-1 dim is still its dim, and a new dim is a stack dim (the peer stacks
    the members along it). ``None`` when ``fn`` copies (a stride is unknown)."""
    if dims is None or torch.compiler.is_compiling():
        return None
    base = 1 << 20
    strides = [base * (d + 2) for d in range(len(shape))]
    try:
        out = fn(torch.empty_strided(tuple(shape), tuple(strides), device="meta"))
    except Exception:  # an op meta tensors do not run (an index tensor on another device)
        return None
    if not isinstance(out, torch.Tensor):
        return None
    return _dims_from_strides(shape, list(out.stride()), strides, dims)


def dims_after_expand(shape: torch.Size, new: torch.Size, dims: StackDims) -> StackDims:
    """:func:`dims_after_view_op` of ``expand(new)`` (a reshape, as there, when it adds
    no element), from the sizes alone: what ``torch.compile`` keeps in the trace."""
    if dims is None or math.prod(new) == math.prod(shape):
        return dims_after_reshape(shape, new, dims)
    base = 1 << 20
    strides = [base * (d + 2) for d in range(len(shape))]
    lead = len(new) - len(shape)
    # (an expanded dim has stride 0; the sizes were checked by the expand itself)
    kept = [
        stride if size == target else 0 for size, target, stride in zip(shape, new[lead:], strides)
    ]
    return _dims_from_strides(shape, [0] * lead + kept, strides, dims)


def _dims_from_strides(
    shape: torch.Size, out_strides: list[int], strides: list[int], dims: tuple[int, ...]
) -> StackDims:
    """The stack dims of a view with ``out_strides`` of a batch of size ``shape`` whose
    dims had the distinct ``strides`` (see :func:`dims_after_view_op`)."""
    lead = len(out_strides) - len(shape)
    result: list[int] = []
    for k, stride in enumerate(out_strides):
        if stride in strides:
            source = strides.index(stride)
        elif stride == 0 and k >= lead >= 0 and shape[k - lead] == 1:
            source = k - lead  # an expanded size-1 dim
        elif stride == 0 and k < lead:
            result.append(k)  # a new leading dim of an expand
            continue
        else:
            return None
        if _rank_in(dims, source) is not None:
            result.append(k)
    ordered = sorted(result, key=lambda k: _source_rank(k, out_strides, strides, dims, lead))
    return tuple(ordered)


def permutes_dims(shape: torch.Size, fn: Callable[[torch.Tensor], Any]) -> bool:
    """Whether the structural op ``fn`` reorders the dims of ``shape`` (``permute``,
    ``transpose``, ``movedim``): its result on a meta tensor whose dims have distinct
    strides has exactly those strides, in another order. Over dims of size 1 such an op
    keeps the elements in order, as a reshape does, yet the peer's stack moves its stack
    dims with it (``transpose`` of a ``[1, 1]`` stack along dim 0 stacks along dim 1)."""
    if torch.compiler.is_compiling() or len(shape) < 2:
        return False
    strides = [(1 << 20) * (d + 2) for d in range(len(shape))]
    try:
        out = fn(torch.empty_strided(tuple(shape), tuple(strides), device="meta"))
    except Exception:  # an op meta tensors do not run: no reordering read off it
        return False
    if not isinstance(out, torch.Tensor) or out.ndim != len(shape):
        return False
    found = list(out.stride())
    return found != strides and sorted(found) == strides


def _source_rank(
    k: int, out_strides: Sequence[int], strides: list[int], dims: tuple[int, ...], lead: int
) -> int:
    """The nesting rank of output dim ``k``: the source order, then new dims (the peer
    expands each member along them)."""
    stride = out_strides[k]
    rank = _rank_in(dims, strides.index(stride)) if stride in strides else None
    if rank is None and stride == 0 and k >= lead:
        rank = _rank_in(dims, k - lead)
    return len(dims) + k if rank is None else rank


def _rank_in(dims: tuple[int, ...], dim: int) -> int | None:
    """Where ``dim`` is in ``dims`` (None if not there), compared with ``==``: a stack dim
    worked out in a ``torch.compile`` trace may be a symbolic int, which Dynamo's ``in``
    and ``index`` compare by identity."""
    for rank, found in enumerate(dims):
        if found == dim:
            return rank
    return None
