"""Stacking, padding and densifying, as methods and classmethods of every collection.

The peer spells its module functions as classmethods too (``TensorDict.stack``,
``LazyStackedTensorDict.lazy_stack``) and as methods (``td.pad``); these are one-line
forwarders to the engine's functions (``tclass._engine._ops``, ``_engine._lazy._build``,
``_engine._pad``, read from ``_provided.ENGINE``), which build on the collections
deriving from this mixin.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, TypedDict, cast

import torch
from typing_extensions import Self, Unpack

from tclass._base._provided import ENGINE
from tclass._base.implemented._collection import TensorCollection
from tclass._core._device import DeviceLike
from tclass._core._names import DimName

__all__ = ["LazyStackOptions", "StackOps"]


class LazyStackOptions(TypedDict, total=False):
    """The keywords of ``lazy_stack`` (the peer's): ``out`` receives the result in place;
    ``stack_dim_name`` names the new dim; ``as_list``, ``as_padded_tensor``
    (``padding_value``, ``padding_side``) and ``as_nested_tensor`` (``layout``) apply to
    a list of tensors; ``strict_shape=True`` refuses members whose batch sizes differ
    (by default they give a ragged stack, ``-1`` where they differ); ``device`` is
    accepted as the peer accepts it (a lazy stack takes its members' device)."""

    out: Any
    device: DeviceLike
    stack_dim_name: DimName
    strict_shape: bool
    as_list: bool
    as_padded_tensor: bool
    as_nested_tensor: bool
    padding_side: Literal["left", "right"]
    layout: torch.layout | None
    padding_value: float


class StackOps(TensorCollection):
    """stack / cat / lazy_stack / maybe_dense_stack classmethods, pad, to_lazystack and
    densify."""

    __slots__ = ()

    @classmethod
    def stack(cls, input: Sequence[Self], dim: int = 0, *, out: Self | None = None) -> Self:
        """Same as :func:`tclass.stack`."""
        return cast(Self, ENGINE.stack(cast(Any, input), dim, out=out))

    @classmethod
    def cat(cls, input: Sequence[Self], dim: int = 0, *, out: Self | None = None) -> Self:
        """Same as :func:`tclass.cat`."""
        return cast(Self, ENGINE.cat(cast(Any, input), dim, out=out))

    @classmethod
    def lazy_stack(
        cls, input: Sequence[Any], dim: int = 0, **options: Unpack[LazyStackOptions]
    ) -> Self:
        """Same as :func:`tclass.lazy_stack`: records give a record over a lazy stack
        (``TensorDict.lazy_stack`` gives a ``LazyStackedTensorDict``)."""
        return cast(Self, ENGINE.lazy_stack(input, dim, **options))

    @classmethod
    def maybe_dense_stack(
        cls, input: Sequence[Any], dim: int = 0, *, out: Any = None, strict: bool = False
    ) -> Self:
        """Same as :func:`tclass.maybe_dense_stack` (for ``TensorDict``, a lazy stack when
        the members differ)."""
        return cast(Self, ENGINE.maybe_dense_stack(input, dim, out=out, strict=strict))

    def to_lazystack(self, dim: int = 0) -> Self:
        """A lazy stack of the slices along batch dim ``dim`` (views, nothing copied).

        Raises:
            DimError: (an ``IndexError``) if ``dim`` is not a batch dim.
        """
        return cast(Self, ENGINE.to_lazystack(self, dim))

    def pad(
        self, pad_size: Sequence[int], value: float = 0.0, inplace: bool = False, safe: bool = True
    ) -> Self:
        """Same as :func:`tclass.pad` (``inplace=True`` pads this collection itself)."""
        return cast(Self, ENGINE.pad(cast(Any, self), pad_size, value, inplace, safe))

    def densify(self, layout: torch.layout = torch.strided) -> Self:
        """A dense copy in which every lazy stack (nested ones too) is stacked, entries of
        different shapes as nested tensors of ``layout``."""
        return cast(Self, ENGINE.densify(self, layout))
