"""Reductions at the level of one tensor, below the collection methods of ``_reductions.py``:
``Along`` (an operation along some dims of every tensor and what it does to batch sizes
and dim names), the values/indices result of ``max``/``min``/``cummax``/``cummin``, and
the tensor kernels (a reduction over several dims, the short-circuit ``all``/``any``)."""

from __future__ import annotations

import ctypes
import dataclasses
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Literal, Protocol, TypeAlias, TypeVar

import torch

from tclass._core._names import DimName, Names
from tclass._core._tracing import tracing
from tclass.errors import DimError, ReductionError

__all__ = ["Along", "LeafDims", "ValuesIndices"]

LeafDims: TypeAlias = tuple[int, ...] | None

_Tensor = torch.Tensor
_BOOL = torch.bool
_STRIDED = torch.strided
T_co = TypeVar("T_co", covariant=True)


class ValuesIndices(Protocol[T_co]):
    """What ``max``/``min``/``cummax``/``cummin`` along a dim give, as the peer: torch's
    own result (``torch.return_types.max``...), holding collections shaped like the
    result: ``values, indices = td.max(0)``, ``r.values``, ``r[1]``."""

    @property
    def values(self) -> T_co: ...
    @property
    def indices(self) -> T_co: ...
    def __getitem__(self, index: int, /) -> T_co: ...
    def __iter__(self) -> Iterator[T_co]: ...
    def __len__(self) -> int: ...


def _values_indices(kind: Callable[..., Any], values: Any, indices: Any) -> Any:
    """``torch.return_types.<kind>`` of ``values`` and ``indices`` (``kind``: the torch
    function whose result type it is: ``torch.max``, ``torch.cummin``...)."""
    return getattr(torch.return_types, kind.__name__)((values, indices))


@dataclasses.dataclass(frozen=True)
class Along:
    """An operation along some dims of every tensor, and what it does to batch sizes.

    ``fn(tensor, dims)`` gives the result for one tensor (a tuple of ``outputs`` results
    when ``outputs > 1``), ``dims`` being that tensor's dims to work along (None: all).
    ``dims`` here: None (whole tensors), ``"feature"``, or batch dims of the collection
    the operation started from. ``scan``: the batch size is unchanged (cumsum, softmax).
    ``whole``: for whole tensors, the same ``fn`` taking only the tensor (``torch.sum``):
    a collection of tensors only then maps it over them in one C-level loop.
    ``lazy``: a lazy stack's result stays a lazy stack (as the peer's ``softmax``); other
    results of lazy stacks are dense where the members' results line up, as the peer's.
    ``keep_unbatched``: an ``UnbatchedTensor`` (it has no batch dims) is left as it is,
    as the peer's reductions leave it.
    """

    fn: Callable[[torch.Tensor, LeafDims], Any]
    dims: tuple[int, ...] | Literal["feature"] | None
    keepdim: bool = False
    scan: bool = False
    outputs: int = 1
    whole: Callable[[torch.Tensor], Any] | None = None
    lazy: bool = False
    keep_unbatched: bool = False

    def leaf_dims(self, leaf: torch.Tensor, batch_dims: int) -> LeafDims:
        """The dims of ``leaf`` to work along; ``batch_dims``: its collection's."""
        if self.dims == "feature":
            return tuple(range(batch_dims, leaf.ndim))
        return self.dims  # batch dims sit at the same place in every tensor

    def batch(self, size: torch.Size) -> torch.Size:
        """A node's batch size after the operation."""
        if self.scan or self.dims == "feature":
            return size
        if self.dims is None:
            return torch.Size([1] * len(size) if self.keepdim else [])
        if self.keepdim:
            return torch.Size(1 if i in self.dims else s for i, s in enumerate(size))
        return torch.Size(s for i, s in enumerate(size) if i not in self.dims)

    def names(self, names: tuple[DimName, ...]) -> Names:
        """A node's dim names after the operation: a reduced dim's goes with it (kept
        with ``keepdim``), as in the peer."""
        if self.scan or self.dims == "feature" or self.keepdim:
            return names
        if self.dims is None:
            return None
        dims = self.dims
        kept = tuple(name for i, name in enumerate(names) if i not in dims)
        return kept if any(name is not None for name in kept) else None

    def without(self, stack_dim: int) -> Along:
        """This operation for the members of a lazy stack (whose batch lacks ``stack_dim``)."""
        if self.dims is None or self.dims == "feature":
            return self
        dims = tuple(d if d < stack_dim else d - 1 for d in self.dims if d != stack_dim)
        return dataclasses.replace(self, dims=dims)

    def stack_dim_after(self, stack_dim: int) -> int:
        """Where a lazy stack's stack dim ends up when its members reduce ``self.dims``."""
        if self.scan or self.keepdim or not isinstance(self.dims, tuple):
            return stack_dim
        return stack_dim - sum(1 for d in self.dims if d < stack_dim)


def _running_over_nothing(
    fn: Callable[..., Any], leaves: list[torch.Tensor], dim: int, error: DimError
) -> Any:
    """``cummax`` / ``cummin`` with ``reduce=True`` along a dim out of the tensors' range
    (``error``): where no tensor has an element, torch joins and scans them along any dim
    that ``torch.cat`` takes (a 1-d tensor of no elements takes any), as the peer does;
    otherwise ``error`` stands."""
    if any(leaf.numel() for leaf in leaves):
        raise error
    try:
        return fn(torch.cat(leaves, dim), dim)
    except (IndexError, RuntimeError):
        raise error from None


def _no_tensor(operation: str) -> ReductionError:
    msg = f"{operation}(reduce=True) reduces the tensors together, and there is no tensor"
    return ReductionError(msg)


def _legacy_empty_skipped(leaves: list[torch.Tensor]) -> list[torch.Tensor]:
    """``leaves`` without the 1-D tensors of no elements (shape ``[0]``) where another
    leaf has another shape, as ``torch.cat`` skips them (its legacy rule, which the peer's
    ``reduce=True`` with a ``dim`` follows): they hold no element to reduce."""
    kept = [leaf for leaf in leaves if leaf.ndim != 1 or leaf.shape[0]]
    return kept if kept and len(kept) < len(leaves) else leaves


def _pair(fn: Callable[..., Any]) -> Callable[..., tuple[torch.Tensor, torch.Tensor]]:
    def values_and_indices(tensor: torch.Tensor, dim: int) -> tuple[torch.Tensor, torch.Tensor]:
        found = fn(tensor, dim)
        return found.values, found.indices

    return values_and_indices


def _reduce_tensor(
    fn: Callable[..., torch.Tensor],
    tensor: torch.Tensor,
    dims: LeafDims,
    keepdim: bool,
    kwargs: dict[str, Any],
    tuple_dims: Literal["yes", "one at a time", "flatten"],
) -> torch.Tensor:
    """``fn`` over ``dims`` of one tensor (all of it when None), whatever ``fn`` takes."""
    if dims is None:
        if not keepdim or tensor.ndim == 0:
            return fn(tensor, **kwargs)
        dims = tuple(range(tensor.ndim))
    elif not dims:  # no dim to reduce: reduce over a new one of size 1, as the peer does
        return fn(tensor.unsqueeze(-1), tensor.ndim, keepdim=False, **kwargs)
    if len(dims) == 1:
        return fn(tensor, dims[0], keepdim=keepdim, **kwargs)
    if tuple_dims == "yes":
        return fn(tensor, dims, keepdim=keepdim, **kwargs)
    if tuple_dims == "one at a time":
        for d in sorted(dims, reverse=True):
            tensor = fn(tensor, d, keepdim=keepdim, **kwargs)
        return tensor
    return _flattened_reduce(fn, tensor, dims, keepdim, kwargs)


def _flattened_reduce(
    fn: Callable[..., torch.Tensor],
    tensor: torch.Tensor,
    dims: Sequence[int],
    keepdim: bool,
    kwargs: dict[str, Any],
) -> torch.Tensor:
    """``fn`` over several dims at once for a ``fn`` that takes one: those dims moved last
    and flattened into one."""
    rest = [d for d in range(tensor.ndim) if d not in dims]
    moved = tensor.permute(*rest, *dims).flatten(len(rest))
    out = fn(moved, -1, keepdim=False, **kwargs)
    if keepdim:
        offset = out.ndim - len(rest)  # dims fn puts in front (quantile's q)
        for d in sorted(dims):
            out = out.unsqueeze(d + offset)
    return out


def _all_true(leaves: list[torch.Tensor]) -> bool:
    """Whether every element of every tensor is true, stopping at the first that is not.
    On CPU as a count of the nonzero elements: the same answer (NaN is true, an empty
    tensor holds nothing false) in about half the time of ``all()`` there; a plain
    contiguous ``bool`` tensor (what ``==`` gives) by looking for a zero byte in its
    memory, a third of the count's time (not while torch.compile traces: no memory)."""
    bytes_readable = not tracing()
    for leaf in leaves:
        if leaf.is_cpu:
            if bytes_readable and type(leaf) is _Tensor and leaf.dtype is _BOOL:
                found = _zero_byte(leaf)
                if found is not None:
                    if found:
                        return False
                    continue
            if leaf.dtype in _NOT_COUNTED:
                if not leaf.all():
                    return False
            elif int(leaf.count_nonzero()) != leaf.numel():
                return False
        elif not leaf.all():
            return False
    return True


# dtypes whose elements torch's CPU ``count_nonzero`` cannot count: ``all()`` / ``any()``
_NOT_COUNTED = frozenset({torch.uint16, torch.uint32, torch.uint64})
_BYTES_READ_LIMIT = 1 << 16  # elements (bytes) of a bool tensor read through its memory


def _zero_byte(leaf: torch.Tensor) -> bool | None:
    """Whether the memory of the CPU ``bool`` tensor ``leaf`` holds a zero byte (a false
    element), or None where it cannot be read as one block of bytes (a sparse or strided
    layout, a view with gaps, a tensor without storage such as a functorch wrapper), or
    too large to copy into bytes cheaply (torch's count then runs on its threads, no copy)."""
    n = leaf.numel()
    if not n:
        return False
    if n > _BYTES_READ_LIMIT or leaf.layout is not _STRIDED or not leaf.is_contiguous():
        return None
    try:
        address = leaf.data_ptr()
    except RuntimeError:  # no storage of its own (vmap, functionalization)
        return None
    # bool elements are one byte each; an int operand of ``in`` is one memchr (a bytes
    # operand is a substring search: 5x as long)
    return 0 in ctypes.string_at(address, n)


def _any_true(leaves: list[torch.Tensor]) -> bool:
    """Whether any element of any tensor is true (see :func:`_all_true`)."""
    for leaf in leaves:
        if leaf.is_cpu and leaf.dtype not in _NOT_COUNTED:
            if int(leaf.count_nonzero()):
                return True
        elif leaf.any():
            return True
    return False


def _values_shared(source: Any, stacked: Any) -> Any:
    """``stacked`` (the quantiles of ``source``, stacked along a new first dim) with each
    Python value ``source`` holds once (a ``NonTensorData``) held once again over the new
    batch size, as the peer's quantile keeps it (the stack of its copies is a value
    stack)."""
    for path, node in source.non_tensor_items(include_nested=True):
        key = path if isinstance(path, tuple) else (path,)
        if node._is_value_node and not node._is_lazy:  # one value, not one per element
            batch = stacked.get(key[:-1]).batch_size if len(key) > 1 else stacked.batch_size
            stacked.set(key, node._map_values(lambda value: value, batch))
    return stacked
