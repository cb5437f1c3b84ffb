"""Reductions and scans over the batch dims of a collection, with the peer's semantics.

``dim`` says what is reduced in every tensor:

* left out (``None``): each tensor whole, every dim (``logsumexp``: the batch dims);
* an int or a tuple of ints: those batch dims (negative ones count back from the last
  batch dim), the same dims in every tensor and nested collection;
* ``"feature"``: each tensor's dims after the batch dims of the collection holding it.

``keepdim`` keeps reduced dims with size 1. ``reduce=True`` gives one tensor for the
whole collection, as if its tensors were one: along batch dims, the tensors (which must
agree beyond the batch dims) are joined along the first of them and keep their other
dims, as in the peer; with ``dim="feature"``, each tensor is flattened beyond the batch
dims and they are joined there.

Results keep the class and the Python values; a Python value that differs between the
elements a reduction merges is an error naming its key. A lazy stack reduces its members
where the reduced dims leave the stack dim alone, reduces the members' elements together
for a whole reduction (so members may differ in shape), and needs the members to agree
in shape to reduce along the stack dim.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable
from typing import Any, Literal, TypeAlias, cast, overload

import torch
from typing_extensions import Self

from tclass._base.implemented._math import MathOps, into_out, refuse_out_with_grad
from tclass._base.implemented._reduce_tensors import (
    Along,
    LeafDims,
    ValuesIndices,
    _all_true,
    _any_true,
    _legacy_empty_skipped,
    _no_tensor,
    _pair,
    _reduce_tensor,
    _running_over_nothing,
    _Tensor,
    _values_indices,
    _values_shared,
)
from tclass._core._batch import as_int_arg, format_shape
from tclass._core._dispatch import implements
from tclass._core._unbatched import UnbatchedTensor
from tclass.errors import (
    DimError,
    HeterogeneousEntryError,
    OperandError,
    ReductionError,
    TclassError,
    UnsupportedError,
)

__all__ = ["Along", "Dims", "ReductionOps", "ValuesIndices"]

Dims: TypeAlias = int | tuple[int, ...] | list[int] | Literal["feature"] | None
KeyTransform: TypeAlias = Callable[[str], str] | None

_PLAIN = frozenset({torch.Tensor})  # entries of exactly this type take the mapped fast path


class ReductionOps(MathOps):
    """Reductions (``sum``, ``mean``, ``std``, ``max``...) and scans (``cumsum``,
    ``softmax``...) over batch dims, shared by every collection."""

    __slots__ = ()

    # --- the walk ------------------------------------------------------------------------

    def _reduced(self, along: Along) -> tuple[Self, ...]:
        """``along`` applied to every tensor: ``along.outputs`` collections shaped like
        this one, with batch sizes ``along.batch(...)``."""
        mine = self._entries()
        batch = along.batch(self.batch_size)
        whole = along.whole
        if whole is not None and set(map(type, mine.values())) <= _PLAIN:
            mapped = dict(zip(mine, map(whole, mine.values())))  # type: ignore[arg-type]
            out = (self._new_like(mapped, batch, self.device),)
            # Whole tensors reduced: no dim (and no name) is left unless with keepdim.
            return self._named_after(along, out) if along.keepdim else out
        parts: list[dict[str, Any]] = [{} for _ in range(along.outputs)]
        batch_dims = self.batch_dims
        for key, value in mine.items():
            if isinstance(value, _Tensor):
                result: Any
                if along.keep_unbatched and value.__class__ is UnbatchedTensor:
                    result = value if along.outputs == 1 else (value,) * along.outputs
                elif whole is not None:
                    result = whole(value)
                else:
                    result = along.fn(value, along.leaf_dims(value, batch_dims))
                results = (result,) if along.outputs == 1 else result
            else:
                try:
                    results = value._reduced(along)
                except ReductionError as error:
                    raise ReductionError(f"entry {key!r}: {error}") from None
            for part, item in zip(parts, results):
                part[key] = item
        return self._named_after(
            along, tuple(self._new_like(part, batch, self.device) for part in parts)
        )

    def _named_after(self, along: Along, outs: tuple[Self, ...]) -> tuple[Self, ...]:
        """``outs`` (results of ``along``) given the names of this collection's dims that
        they keep (a result over the same batch already has them)."""
        names = self._dim_names
        if names is not None and along.batch(self.batch_size) != self.batch_size:
            kept = along.names(names)
            for out in outs:
                out._assign_names(kept)
        return outs

    def _renamed(self, key_transform: Callable[[str], str]) -> Self:
        """A copy (sharing tensors) with every key ``k`` renamed ``key_transform(k)``."""
        values = {
            key_transform(key): (
                value
                if isinstance(value, _Tensor) or value._is_value_node
                else value._renamed(key_transform)
            )
            for key, value in self._entries().items()
        }
        return self._new_like(values, self.batch_size, self.device)

    # --- the helpers ---------------------------------------------------------------------

    def _batch_dims_for(
        self, dim: Dims, operation: str, reduce: bool | None = None
    ) -> tuple[int, ...] | Literal["feature"] | None:
        """``dim`` checked against the batch size: sorted non-negative batch dims. With
        ``reduce=True`` the ints are dims of the joined tensors, as the peer's (checked by
        ``_joined_along``), and come back as given."""
        if dim is None or dim == "feature":
            return dim
        batch = self.batch_size
        ndim = len(batch)
        if isinstance(dim, (tuple, list)):  # numpy integers as ints, as torch reads them
            given = [d if (value := as_int_arg(d)) is None else value for d in dim]
        elif (one := as_int_arg(dim)) is not None:
            given = [one]
        else:
            msg = (
                f"{operation}: dim must be an int, a tuple of ints, 'feature' or None, got {dim!r}"
            )
            raise OperandError(msg)
        if reduce and all(isinstance(d, int) and not isinstance(d, bool) for d in given):
            return tuple(given)
        dims = set()
        for d in given:
            if not isinstance(d, int) or isinstance(d, bool):  # a name too: a TypeError
                msg = f"{operation}: dim must be a tuple of ints, got {d!r} in {dim!r}"
                raise OperandError(msg)
            if not -ndim <= d < ndim:
                msg = (
                    f"{operation}: dim {d!r} is out of range for {ndim} batch dim(s) (batch size "
                    f"{format_shape(batch)}; expected a value in [{-ndim}, {ndim - 1}], or "
                    "dim='feature' for the dims after the batch dims)"
                )
                raise DimError(msg)
            dims.add(d % ndim)
        return tuple(sorted(dims))

    def _reduce(
        self,
        fn: Callable[..., torch.Tensor],
        dim: Dims,
        keepdim: bool,
        reduce: bool | None,
        key_transform: KeyTransform,
        operation: str,
        kwargs: dict[str, Any],
        tuple_dims: Literal["yes", "one at a time", "flatten"] = "yes",
        keep_unbatched: bool = True,
    ) -> Any:
        """``fn`` over ``dim`` in every tensor (see the module docstring); an
        ``UnbatchedTensor`` is left as it is unless ``keep_unbatched`` is false (``all``
        and ``any`` reduce it, as the peer's)."""
        dims = self._batch_dims_for(dim, operation, reduce)
        if dims == "feature" and keepdim:
            msg = f"{operation}: dim='feature' is incompatible with keepdim=True (as in the peer)"
            raise OperandError(msg)
        if reduce:
            return self._reduce_together(fn, dim, dims, keepdim, operation, kwargs, tuple_dims)

        def leaf(tensor: torch.Tensor, leaf_dims: LeafDims) -> torch.Tensor:
            return _reduce_tensor(fn, tensor, leaf_dims, keepdim, kwargs, tuple_dims)

        whole = None
        if dims is None and not keepdim:
            whole = functools.partial(fn, **kwargs) if kwargs else fn
        along = Along(leaf, dims, keepdim, whole=whole, keep_unbatched=keep_unbatched)
        try:
            (out,) = self._reduced(along)
        except RuntimeError as error:  # torch refused one tensor (mean of integers): named
            if isinstance(error, TclassError):
                raise
            raise self._refused_leaf(operation, along, error) from error
        return out if key_transform is None else out._renamed(key_transform)

    def _refused_leaf(
        self, operation: str, along: Along, error: RuntimeError
    ) -> ReductionError | UnsupportedError:
        """The error for a reduction torch refused on one of the tensors (the walk redone
        tensor by tensor to find it: only on this path), naming its key and dtype: an
        ``UnsupportedError`` (a ``NotImplementedError``) where torch's was one (no kernel
        for the dtype), else a ``ReductionError``."""
        kind = UnsupportedError if isinstance(error, NotImplementedError) else ReductionError
        for key in self.keys(include_nested=True, leaves_only=True):  # (Python values too)
            try:
                value = self.get(key)
            except HeterogeneousEntryError:  # a lazy stack's ragged entry: no dense value
                continue  # (to look at; the refused one is another, or the message says)
            if not isinstance(value, _Tensor):
                continue
            try:
                if along.whole is not None:
                    along.whole(value)
                else:
                    along.fn(value, along.leaf_dims(value, self.batch_dims))
            except RuntimeError:
                msg = (
                    f"{operation}: torch refuses the entry {key!r} ({value.dtype}, shape "
                    f"{list(value.shape)}): {error}. Cast it first (td.float(), or "
                    f"td.to(torch.float32)) or leave it out (td.exclude({key!r}))"
                )
                return kind(msg)
        return kind(f"{operation}: {error}")

    def _reduce_together(
        self,
        fn: Callable[..., torch.Tensor],
        dim: Dims,
        dims: tuple[int, ...] | Literal["feature"] | None,
        keepdim: bool,
        operation: str,
        kwargs: dict[str, Any],
        tuple_dims: Literal["yes", "one at a time", "flatten"],
    ) -> torch.Tensor:
        """``reduce=True``: one tensor for all the tensors together. Whole (no ``dim``):
        every element; ``"feature"``: per batch element; batch dims: the tensors joined
        along the first of them, reduced along them (feature dims kept), as the peer."""
        if dims is None or not dims:
            leaves = self._walk_leaves()
            if not leaves:
                raise _no_tensor(operation)
            return fn(torch.cat([leaf.reshape(-1) for leaf in leaves]), **kwargs)
        if dims == "feature":
            return _reduce_tensor(fn, self._joined_features(operation), (-1,), False, kwargs, "yes")
        joined, leaf_dims = self._joined_along(dim, operation)
        return _reduce_tensor(fn, joined, leaf_dims, keepdim, kwargs, tuple_dims)

    def _leaves_to_join(self, operation: str) -> list[torch.Tensor]:
        """Every tensor (a lazy stack's stacked ones), for ``reduce=True``."""
        leaves = [
            leaf
            for leaf in self.values(include_nested=True, leaves_only=True)
            if isinstance(leaf, _Tensor)
        ]
        if not leaves:
            raise _no_tensor(operation)
        return leaves

    def _joined_features(self, operation: str) -> torch.Tensor:
        """The tensors flattened beyond the batch dims and joined along a last dim."""
        batch = self.batch_size
        nb = len(batch)
        leaves = self._leaves_to_join(operation)
        return torch.cat([leaf.reshape(*batch, math.prod(leaf.shape[nb:])) for leaf in leaves], -1)

    def _joined_along(self, dim: Dims, operation: str) -> tuple[torch.Tensor, tuple[int, ...]]:
        """The tensors joined along the first dim of ``dim``, and the (sorted) dims of the
        joined tensor that ``dim`` names. As in the peer, a negative dim counts from the
        end of the tensors (a ``FutureWarning`` says so where they have feature dims)."""
        every = self._leaves_to_join(operation)
        leaves = _legacy_empty_skipped(every)  # checked without them; joined with them
        given = list(dim) if isinstance(dim, (tuple, list)) else [cast(int, dim)]
        ndim = leaves[0].ndim
        for d in given:
            if not -ndim <= d < ndim:
                msg = (
                    f"{operation}(dim={dim}, reduce=True): dim {d} is out of range for the "
                    f"{ndim} dim(s) of the tensors it joins (expected a value in "
                    f"[{-ndim}, {ndim - 1}])"
                )
                raise DimError(msg)
        if ndim != self.batch_dims and any(d < 0 for d in given):
            msg = (
                f"{operation}(dim={dim}, reduce=True) counts a negative dim from the end of "
                "each tensor, as the peer (tensordict 0.15) does; pass a non-negative dim for "
                "a batch dim"
            )
            warnings.warn(msg, FutureWarning, stacklevel=4)
        leaf_dims = [d % ndim for d in given]
        along, first = leaf_dims[0], leaves[0].shape
        agree = all(
            leaf.ndim == ndim
            and all(a == b for i, (a, b) in enumerate(zip(leaf.shape, first)) if i != along)
            for leaf in leaves
        )
        try:
            joined = torch.cat(every, along) if agree else None  # (their dtypes promote)
        except RuntimeError:
            joined = None
        if joined is None:
            shapes = ", ".join(format_shape(leaf.shape) for leaf in leaves)
            msg = (
                f"{operation}(dim={dim}, reduce=True) joins the tensors along dim "
                f"{leaf_dims[0]}, so they must agree in shape elsewhere; got {shapes} (reduce "
                "them with dim='feature', or without dim, instead)"
            )
            raise ReductionError(msg) from None
        return joined, tuple(sorted(set(leaf_dims)))

    def _scan(
        self,
        fn: Callable[..., Any],
        dim: int,
        operation: str,
        outputs: int = 1,
        lazy: bool = True,
        **kwargs: Any,
    ) -> tuple[Self, ...]:
        """``fn(tensor, dim, **kwargs)`` along the batch dim ``dim``, batch size unchanged
        (an ``UnbatchedTensor`` has no batch dim to scan: it is left as it is)."""
        dims = self._scan_dim(dim, operation)

        def leaf(tensor: torch.Tensor, leaf_dims: LeafDims) -> Any:
            assert leaf_dims is not None
            return fn(tensor, leaf_dims[0], **kwargs)

        along = Along(leaf, dims, scan=True, outputs=outputs, lazy=lazy, keep_unbatched=True)
        try:
            return self._reduced(along)
        except RuntimeError as error:  # torch refused one tensor (softmax of integers): named
            if isinstance(error, TclassError):
                raise
            raise self._refused_leaf(operation, along, error) from error

    def _scan_dim(self, dim: int, operation: str, reduce: bool | None = None) -> tuple[int]:
        """``dim`` checked as one batch dim: ``(dim,)``, non-negative; with ``reduce=True``
        a dim of the joined tensors, as given (``_joined_along`` checks it)."""
        one = as_int_arg(dim)
        if one is None:
            msg = f"{operation}: dim must be one int, got {dim!r}"
            raise OperandError(msg)
        dims = self._batch_dims_for(one, operation, reduce)
        assert isinstance(dims, tuple)
        return (dims[0],)

    # --- truth -------------------------------------------------------------------------

    @overload
    def all(self, dim: None = None) -> bool: ...
    @overload
    def all(self, dim: int | tuple[int, ...] | list[int]) -> Self: ...

    @implements(torch.all)
    def all(self, dim: int | tuple[int, ...] | list[int] | None = None) -> Any:
        """With no ``dim``: whether every element of every tensor is true (a ``bool``;
        ``True`` without tensors). With ``dim``: a collection reduced over those batch dims."""
        if dim is None:
            return _all_true(self._walk_leaves())
        return self._reduce(torch.all, dim, False, None, None, "all", {}, keep_unbatched=False)

    @overload
    def any(self, dim: None = None) -> bool: ...
    @overload
    def any(self, dim: int | tuple[int, ...] | list[int]) -> Self: ...

    @implements(torch.any)
    def any(self, dim: int | tuple[int, ...] | list[int] | None = None) -> Any:
        """With no ``dim``: whether any element of any tensor is true (a ``bool``). With
        ``dim``: a collection reduced over those batch dims."""
        if dim is None:
            return _any_true(self._walk_leaves())
        return self._reduce(torch.any, dim, False, None, None, "any", {}, keep_unbatched=False)

    # --- sums and means ------------------------------------------------------------------

    @overload
    def sum(
        self, dim: Dims = None, keepdim: bool = False, *, dtype: torch.dtype | None = None,
        reduce: Literal[True], key_transform: KeyTransform = None,
    ) -> torch.Tensor: ...  # fmt: skip
    @overload
    def sum(
        self, dim: Dims = None, keepdim: bool = False, *, dtype: torch.dtype | None = None,
        reduce: Literal[False] | None = None, key_transform: KeyTransform = None,
    ) -> Self: ...  # fmt: skip

    @implements(torch.sum)
    def sum(
        self, dim: Dims = None, keepdim: bool = False, *, dtype: torch.dtype | None = None,
        reduce: bool | None = None, key_transform: KeyTransform = None,
    ) -> Self | torch.Tensor:  # fmt: skip
        """The sum over ``dim`` of every tensor (see the module docstring for ``dim``,
        ``reduce``); ``key_transform`` renames the keys of the result."""
        kwargs = {} if dtype is None else {"dtype": dtype}
        return self._reduce(torch.sum, dim, keepdim, reduce, key_transform, "sum", kwargs)  # type: ignore[no-any-return]

    @overload
    def nansum(
        self, dim: Dims = None, keepdim: bool = False, *, dtype: torch.dtype | None = None,
        reduce: Literal[True],
    ) -> torch.Tensor: ...  # fmt: skip
    @overload
    def nansum(
        self, dim: Dims = None, keepdim: bool = False, *, dtype: torch.dtype | None = None,
        reduce: Literal[False] | None = None,
    ) -> Self: ...  # fmt: skip

    @implements(torch.nansum)
    def nansum(
        self, dim: Dims = None, keepdim: bool = False, *, dtype: torch.dtype | None = None,
        reduce: bool | None = None,
    ) -> Self | torch.Tensor:  # fmt: skip
        """The sum over ``dim`` of every tensor, NaNs counted as zero."""
        kwargs = {} if dtype is None else {"dtype": dtype}
        return self._reduce(torch.nansum, dim, keepdim, reduce, None, "nansum", kwargs)  # type: ignore[no-any-return]

    @overload
    def mean(
        self, dim: Dims = None, keepdim: bool = False, *, dtype: torch.dtype | None = None,
        reduce: Literal[True], key_transform: KeyTransform = None,
    ) -> torch.Tensor: ...  # fmt: skip
    @overload
    def mean(
        self, dim: Dims = None, keepdim: bool = False, *, dtype: torch.dtype | None = None,
        reduce: Literal[False] | None = None, key_transform: KeyTransform = None,
    ) -> Self: ...  # fmt: skip

    @implements(torch.mean)
    def mean(
        self, dim: Dims = None, keepdim: bool = False, *, dtype: torch.dtype | None = None,
        reduce: bool | None = None, key_transform: KeyTransform = None,
    ) -> Self | torch.Tensor:  # fmt: skip
        """The mean over ``dim`` of every tensor (floating-point tensors, as torch)."""
        kwargs = {} if dtype is None else {"dtype": dtype}
        return self._reduce(torch.mean, dim, keepdim, reduce, key_transform, "mean", kwargs)  # type: ignore[no-any-return]

    @overload
    def nanmean(
        self, dim: Dims = None, keepdim: bool = False, *, dtype: torch.dtype | None = None,
        reduce: Literal[True],
    ) -> torch.Tensor: ...  # fmt: skip
    @overload
    def nanmean(
        self, dim: Dims = None, keepdim: bool = False, *, dtype: torch.dtype | None = None,
        reduce: Literal[False] | None = None,
    ) -> Self: ...  # fmt: skip

    @implements(torch.nanmean)
    def nanmean(
        self, dim: Dims = None, keepdim: bool = False, *, dtype: torch.dtype | None = None,
        reduce: bool | None = None,
    ) -> Self | torch.Tensor:  # fmt: skip
        """The mean over ``dim`` of every tensor, NaNs left out."""
        kwargs = {} if dtype is None else {"dtype": dtype}
        return self._reduce(torch.nanmean, dim, keepdim, reduce, None, "nanmean", kwargs)  # type: ignore[no-any-return]

    @overload
    def prod(
        self, dim: Dims = None, keepdim: bool = False, *, dtype: torch.dtype | None = None,
        reduce: Literal[True],
    ) -> torch.Tensor: ...  # fmt: skip
    @overload
    def prod(
        self, dim: Dims = None, keepdim: bool = False, *, dtype: torch.dtype | None = None,
        reduce: Literal[False] | None = None,
    ) -> Self: ...  # fmt: skip

    @implements(torch.prod)
    def prod(
        self, dim: Dims = None, keepdim: bool = False, *, dtype: torch.dtype | None = None,
        reduce: bool | None = None,
    ) -> Self | torch.Tensor:  # fmt: skip
        """The product over ``dim`` of every tensor."""
        kwargs = {} if dtype is None else {"dtype": dtype}
        return self._reduce(torch.prod, dim, keepdim, reduce, None, "prod", kwargs, "one at a time")  # type: ignore[no-any-return]

    # --- spread --------------------------------------------------------------------------

    @overload
    def std(
        self, dim: Dims = None, keepdim: bool = False, *, correction: int = 1,
        reduce: Literal[True], key_transform: KeyTransform = None,
    ) -> torch.Tensor: ...  # fmt: skip
    @overload
    def std(
        self, dim: Dims = None, keepdim: bool = False, *, correction: int = 1,
        reduce: Literal[False] | None = None, key_transform: KeyTransform = None,
    ) -> Self: ...  # fmt: skip

    @implements(torch.std)
    def std(
        self, dim: Dims = None, keepdim: bool = False, *, correction: int = 1,
        reduce: bool | None = None, key_transform: KeyTransform = None,
    ) -> Self | torch.Tensor:  # fmt: skip
        """The standard deviation over ``dim`` of every tensor (``correction`` as torch)."""
        kwargs = {"correction": correction}
        return self._reduce(torch.std, dim, keepdim, reduce, key_transform, "std", kwargs)  # type: ignore[no-any-return]

    @overload
    def var(
        self, dim: Dims = None, keepdim: bool = False, *, correction: int = 1,
        reduce: Literal[True], key_transform: KeyTransform = None,
    ) -> torch.Tensor: ...  # fmt: skip
    @overload
    def var(
        self, dim: Dims = None, keepdim: bool = False, *, correction: int = 1,
        reduce: Literal[False] | None = None, key_transform: KeyTransform = None,
    ) -> Self: ...  # fmt: skip

    @implements(torch.var)
    def var(
        self, dim: Dims = None, keepdim: bool = False, *, correction: int = 1,
        reduce: bool | None = None, key_transform: KeyTransform = None,
    ) -> Self | torch.Tensor:  # fmt: skip
        """The variance over ``dim`` of every tensor (``correction`` as torch)."""
        kwargs = {"correction": correction}
        return self._reduce(torch.var, dim, keepdim, reduce, key_transform, "var", kwargs)  # type: ignore[no-any-return]

    @overload
    def quantile(
        self, q: float | torch.Tensor, dim: Dims = None, keepdim: bool = False, *,
        interpolation: str = "linear", reduce: Literal[True], key_transform: KeyTransform = None,
    ) -> torch.Tensor: ...  # fmt: skip
    @overload
    def quantile(
        self, q: float | torch.Tensor, dim: Dims = None, keepdim: bool = False, *,
        interpolation: str = "linear", reduce: Literal[False] | None = None,
        key_transform: KeyTransform = None,
    ) -> Self: ...  # fmt: skip

    @implements(torch.quantile)
    def quantile(
        self, q: float | torch.Tensor, dim: Dims = None, keepdim: bool = False, *,
        interpolation: str = "linear", reduce: bool | None = None,
        key_transform: KeyTransform = None,
    ) -> Self | torch.Tensor:  # fmt: skip
        """The ``q``-th quantile over ``dim`` of every tensor. A 1-D ``q`` over batch dims
        gives one result per quantile, stacked along a new first batch dim (as torch
        puts the quantiles first, and the peer)."""
        if isinstance(q, torch.Tensor) and q.ndim == 1 and dim is not None and not reduce:
            if self._batch_dims_for(dim, "quantile", reduce) not in (None, "feature"):
                parts = [
                    self.quantile(q[i], dim, keepdim, interpolation=interpolation)
                    for i in range(len(q))
                ]
                stacked: Any = torch.stack(cast("list[torch.Tensor]", parts), 0)
                return cast("Self", _values_shared(self, stacked))

        def quantile(tensor: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
            return torch.quantile(tensor, q, *args, interpolation=interpolation, **kwargs)

        result = self._reduce(
            quantile, dim, keepdim, reduce, key_transform, "quantile", {}, "flatten"
        )
        return cast("Self | torch.Tensor", result)

    # --- extremes ------------------------------------------------------------------------

    @overload
    def amax(
        self, dim: Dims = None, keepdim: bool = False, *, reduce: Literal[True]
    ) -> torch.Tensor: ...
    @overload
    def amax(
        self, dim: Dims = None, keepdim: bool = False, *, reduce: Literal[False] | None = None
    ) -> Self: ...

    @implements(torch.amax)
    def amax(
        self, dim: Dims = None, keepdim: bool = False, *, reduce: bool | None = None
    ) -> Self | torch.Tensor:
        """The maximum over ``dim`` of every tensor (values only)."""
        return self._reduce(torch.amax, dim, keepdim, reduce, None, "amax", {})  # type: ignore[no-any-return]

    @overload
    def amin(
        self, dim: Dims = None, keepdim: bool = False, *, reduce: Literal[True]
    ) -> torch.Tensor: ...
    @overload
    def amin(
        self, dim: Dims = None, keepdim: bool = False, *, reduce: Literal[False] | None = None
    ) -> Self: ...

    @implements(torch.amin)
    def amin(
        self, dim: Dims = None, keepdim: bool = False, *, reduce: bool | None = None
    ) -> Self | torch.Tensor:
        """The minimum over ``dim`` of every tensor (values only)."""
        return self._reduce(torch.amin, dim, keepdim, reduce, None, "amin", {})  # type: ignore[no-any-return]

    @overload
    def max(
        self, dim: None = None, keepdim: bool = False, *, reduce: Literal[False] | None = None,
        return_indices: bool = True,
    ) -> Self: ...  # fmt: skip
    @overload
    def max(
        self, dim: Dims = None, keepdim: bool = False, *, reduce: Literal[True],
        return_indices: bool = True,
    ) -> Any: ...  # fmt: skip
    @overload
    def max(
        self, dim: int | tuple[int, ...] | list[int], keepdim: bool = False, *,
        reduce: Literal[False] | None = None, return_indices: Literal[False],
    ) -> Self: ...  # fmt: skip
    @overload
    def max(
        self, dim: int | tuple[int, ...] | list[int], keepdim: bool = False, *,
        reduce: Literal[False] | None = None, return_indices: Literal[True] = True,
    ) -> ValuesIndices[Self]: ...  # fmt: skip

    def max(
        self, dim: Dims = None, keepdim: bool = False, *, reduce: bool | None = None,
        return_indices: bool = True,
    ) -> Any:  # fmt: skip
        """The maximum of every tensor: whole (a collection of values) or along one batch
        ``dim`` (``values, indices`` unless ``return_indices=False``)."""
        return self._extreme(torch.max, torch.amax, dim, keepdim, reduce, return_indices, "max")

    @overload
    def min(
        self, dim: None = None, keepdim: bool = False, *, reduce: Literal[False] | None = None,
        return_indices: bool = True,
    ) -> Self: ...  # fmt: skip
    @overload
    def min(
        self, dim: Dims = None, keepdim: bool = False, *, reduce: Literal[True],
        return_indices: bool = True,
    ) -> Any: ...  # fmt: skip
    @overload
    def min(
        self, dim: int | tuple[int, ...] | list[int], keepdim: bool = False, *,
        reduce: Literal[False] | None = None, return_indices: Literal[False],
    ) -> Self: ...  # fmt: skip
    @overload
    def min(
        self, dim: int | tuple[int, ...] | list[int], keepdim: bool = False, *,
        reduce: Literal[False] | None = None, return_indices: Literal[True] = True,
    ) -> ValuesIndices[Self]: ...  # fmt: skip

    def min(
        self, dim: Dims = None, keepdim: bool = False, *, reduce: bool | None = None,
        return_indices: bool = True,
    ) -> Any:  # fmt: skip
        """The minimum of every tensor: whole (a collection of values) or along one batch
        ``dim`` (``values, indices`` unless ``return_indices=False``)."""
        return self._extreme(torch.min, torch.amin, dim, keepdim, reduce, return_indices, "min")

    def _extreme(
        self,
        with_indices: Callable[..., Any],
        values_only: Callable[..., torch.Tensor],
        dim: Dims,
        keepdim: bool,
        reduce: bool | None,
        return_indices: bool,
        operation: str,
    ) -> Any:
        dims = self._batch_dims_for(dim, operation, reduce)
        if reduce and dims == "feature":  # the peer's: values and indices per batch element
            return with_indices(self._joined_features(operation), -1)
        if not isinstance(dims, tuple) or not dims or not (return_indices or reduce):
            return self._reduce(values_only, dim, keepdim, reduce, None, operation, {})
        if len(dims) != 1:
            msg = (
                f"{operation}: indices exist along one dim, got dims {dim!r}; pass "
                f"return_indices=False (or use a{operation}) to reduce several"
            )
            raise OperandError(msg)
        if reduce:  # the peer's: the tensors joined along dim (indices into the join)
            joined, (leaf_dim,) = self._joined_along(dim, operation)
            return with_indices(joined, leaf_dim, keepdim=keepdim)

        def leaf(tensor: torch.Tensor, leaf_dims: LeafDims) -> tuple[torch.Tensor, ...]:
            assert leaf_dims is not None
            found = with_indices(tensor, leaf_dims[0], keepdim=keepdim)
            return found.values, found.indices

        values, indices = self._reduced(Along(leaf, dims, keepdim, outputs=2, keep_unbatched=True))
        return _values_indices(with_indices, values, indices)

    @implements(torch.logsumexp)
    def logsumexp(self, dim: Dims = None, keepdim: bool = False, *, out: Any = None) -> Self:
        """``torch.logsumexp`` over ``dim`` (by default every batch dim) of every tensor."""
        if dim is None:
            dim = tuple(range(self.batch_dims))
        result = self._reduce(torch.logsumexp, dim, keepdim, None, None, "logsumexp", {})
        if out is not None:
            refuse_out_with_grad(result, "logsumexp")  # the peer's calls torch's out= kernel
        return cast(Self, into_out(out, result, "logsumexp"))

    def norm(
        self, *, out: Any = None, dtype: torch.dtype | None = None,
        key_transform: KeyTransform = None,
    ) -> Self:  # fmt: skip
        """The (2-)norm of every tensor, whole."""
        kwargs = {} if dtype is None else {"dtype": dtype}
        result = self._reduce(
            torch.linalg.vector_norm, None, False, None, key_transform, "norm", kwargs
        )
        if self.is_locked and out is None and key_transform is None:
            # as the peer's norm (its other reductions, and its norm's copy with renamed
            # keys, give unlocked results)
            result.lock_()
        return cast(Self, into_out(out, result, "norm"))

    # --- scans ---------------------------------------------------------------------------

    @implements(torch.cumsum)
    def cumsum(self, dim: int, *, dtype: torch.dtype | None = None) -> Self:
        """The cumulative sum of every tensor along the batch dim ``dim``."""
        return self._scan(torch.cumsum, dim, "cumsum", dtype=dtype)[0]

    @implements(torch.cumprod)
    def cumprod(self, dim: int, *, dtype: torch.dtype | None = None) -> Self:
        """The cumulative product of every tensor along the batch dim ``dim``."""
        return self._scan(torch.cumprod, dim, "cumprod", dtype=dtype)[0]

    @overload
    def cummax(
        self, dim: int, *, reduce: bool | None = None, return_indices: Literal[True] = True
    ) -> ValuesIndices[Self]: ...
    @overload
    def cummax(
        self, dim: int, *, reduce: bool | None = None, return_indices: Literal[False]
    ) -> Self: ...

    @implements(torch.cummax)
    def cummax(self, dim: int, *, reduce: bool | None = None, return_indices: bool = True) -> Any:
        """The running maximum of every tensor along the batch dim ``dim`` (values and
        indices unless ``return_indices=False``)."""
        return self._running(torch.cummax, dim, reduce, return_indices, "cummax")

    @overload
    def cummin(
        self, dim: int, *, reduce: bool | None = None, return_indices: Literal[True] = True
    ) -> ValuesIndices[Self]: ...
    @overload
    def cummin(
        self, dim: int, *, reduce: bool | None = None, return_indices: Literal[False]
    ) -> Self: ...

    @implements(torch.cummin)
    def cummin(self, dim: int, *, reduce: bool | None = None, return_indices: bool = True) -> Any:
        """The running minimum of every tensor along the batch dim ``dim``."""
        return self._running(torch.cummin, dim, reduce, return_indices, "cummin")

    def _running(
        self,
        fn: Callable[..., Any],
        dim: int,
        reduce: bool | None,
        return_indices: bool,
        operation: str,
    ) -> Any:
        if reduce:  # the peer's: the tensors joined along dim, then the running extreme
            self._scan_dim(dim, operation, reduce)
            try:
                joined, (leaf_dim,) = self._joined_along(dim, operation)
            except DimError as error:
                return _running_over_nothing(fn, self._leaves_to_join(operation), dim, error)
            return fn(joined, leaf_dim)
        values, indices = self._scan(_pair(fn), dim, operation, outputs=2, lazy=False)
        return _values_indices(fn, values, indices) if return_indices else values

    @implements(torch.softmax)
    def softmax(self, dim: int, dtype: torch.dtype | None = None) -> Self:
        """``torch.softmax`` of every tensor along the batch dim ``dim``."""
        return self._scan(torch.softmax, dim, "softmax", dtype=dtype)[0]
