"""What a collection's batch size tells (``shape``, ``batch_dims``, ``ndim``, ``size``,
``numel``, ``len``, iteration over the first batch dim, the refused ``bool``), as the base
class ``BatchFacts`` of ``TensorCollection``, and the checks of an ``update`` that changes
the batch size (``update_batch_size=True``)."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, NoReturn, overload

import torch
from typing_extensions import Self

from tclass._core._batch import normalize_dim
from tclass._core._records import is_record
from tclass.errors import BatchSizeError, IndexTypeError, LockedError, UnsupportedError

if TYPE_CHECKING:
    from tclass._base.implemented._collection import TensorCollection

__all__ = ["BatchFacts", "check_replaced_keys"]


class BatchFacts:
    """The batch-size facts of every collection (the base of ``TensorCollection``)."""

    __slots__ = ()

    if TYPE_CHECKING:  # TensorCollection's primitive

        @property
        def batch_size(self) -> torch.Size: ...

    @property
    def shape(self) -> torch.Size:
        """Same as ``batch_size``, so collections answer shape questions like tensors."""
        return self.batch_size

    @property
    def batch_dims(self) -> int:
        """The number of batch dims."""
        return len(self.batch_size)

    @property
    def ndim(self) -> int:
        """Same as ``batch_dims``."""
        return len(self.batch_size)

    def dim(self) -> int:
        """Same as ``batch_dims``."""
        return len(self.batch_size)

    def ndimension(self) -> int:
        """Same as ``batch_dims`` (torch's older name)."""
        return len(self.batch_size)

    @overload
    def size(self, dim: None = None) -> torch.Size: ...
    @overload
    def size(self, dim: int) -> int: ...

    def size(self, dim: int | None = None) -> torch.Size | int:
        """The batch size, or the size of batch dim ``dim`` (negative counts from the
        end), as ``tensor.size()``.

        Raises:
            DimError: (an ``IndexError``, as the peer raises) if ``dim`` is not a batch dim.
        """
        batch_size = self.batch_size
        if dim is None:
            return batch_size
        return batch_size[normalize_dim(dim, len(batch_size), op="size")]

    def numel(self) -> int:
        """The number of elements in the batch: the product of the batch size, at least 1
        (as the peer: a batch size of ``[]`` or ``[0]`` gives 1, unlike ``Tensor.numel``);
        ``0 in td.batch_size`` tells an empty batch."""
        return max(1, math.prod(self.batch_size))

    def __len__(self) -> int:
        """The size of the first batch dim, or 0 when there are no batch dims."""
        batch_size = self.batch_size
        return batch_size[0] if batch_size else 0

    def __iter__(self) -> Iterator[Self]:
        """Iterates over the first batch dim, like a tensor does over its first dim."""
        if not self.batch_size:
            msg = (
                f"iteration over a 0-d tensordict: this {type(self).__name__} has no batch "
                "dims (batch_size []); iterate over keys(), values() or items() instead, or "
                "give it a batch size"
            )
            raise IndexTypeError(msg)
        return iter(self.unbind(0))

    def unbind(self, dim: int = 0) -> tuple[Self, ...]:
        raise NotImplementedError

    def __bool__(self) -> NoReturn:
        kind = "tensorclass" if is_record(self) else "tensordict"  # the peer's words
        msg = (
            f"Converting a {kind} to boolean value is not permitted: the truth value of a "
            f"{type(self).__name__} is ambiguous. Use (a == b).all() or .any() to compare, "
            "is_empty() to test for entries, or len(td.keys())"
        )
        raise UnsupportedError(msg)


def _check_batch_size_update(
    node: TensorCollection,
    source: TensorCollection,
    update_batch_size: bool,
    inplace: bool,
    keys_to_update: Sequence[Any] | None,
) -> None:
    """``update`` from a source whose batch size contradicts ``node``'s: only with
    ``update_batch_size``, and then not in place, for some keys or under a lock (as the
    peer)."""
    sizes = f"the source's batch size {list(source.batch_size)} and {list(node.batch_size)}"
    if not update_batch_size:
        msg = f"update: {sizes} differ; pass update_batch_size=True to take the source's"
        raise BatchSizeError(msg)
    if inplace or keys_to_update is not None:
        what = "inplace=True" if inplace else "keys_to_update"
        msg = (
            f"update(update_batch_size=True): {sizes} differ, which replaces every entry; "
            f"that cannot be done with {what}"
        )
        raise BatchSizeError(msg)
    if node.is_locked:
        msg = f"update(update_batch_size=True): {sizes} differ, and the collection is locked"
        raise LockedError(msg)


def check_replaced_keys(node: TensorCollection, source: TensorCollection) -> None:
    """``update(update_batch_size=True)`` that changes ``node``'s batch size replaces
    every entry of it: each must be in ``source``."""
    missing = [key for key in node.keys() if key not in source.keys()]
    if missing:
        msg = (
            f"update(update_batch_size=True): the source's batch size "
            f"{list(source.batch_size)} differs from {list(node.batch_size)} and these keys "
            f"are not in the source: {missing}; every entry must be replaced to change the "
            "batch size"
        )
        raise BatchSizeError(msg)
