"""How a value given to a TensorDict becomes an entry: the entries of a constructor's
source, Python values as tensors, clones for ``update(clone=True)``, the keys
``keys_to_update`` allows, nested collections fitted to their parent's batch size, and
the error of a failed indexed write or ``set_``."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, TypeVar, cast

import torch

from tclass._base._tensordict_base import TensorDictBase, Value
from tclass._base.implemented._collection import TensorCollection
from tclass._engine._tensor_write import kernel_refused
from tclass.errors import (
    BatchMismatchError,
    BatchSizeError,
    EntryTypeError,
    InPlaceKernelError,
    InPlaceWriteError,
    ReadOnlyError,
    SourceTypeError,
    TclassError,
)

__all__ = [
    "value_as_tensor",
    "deep_clone",
    "entries_of",
    "fit_to_batch",
    "keys_below",
    "raise_write_error",
    "copy_error",
    "check_dict_fits",
]

_Tensor = torch.Tensor


def entries_of(source: object) -> Iterator[tuple[Any, Any]]:
    """The entries of a constructor's source, in the order they are set: a mapping's
    string keys first, then its tuple (nested) keys, as the peer's constructor sets them
    (``{("a", "b"): 0, "c": 1}`` lists ``c`` first; ``{"a": 0, ("a", "b"): 1}`` meets the
    tensor ``a`` on its way to ``b`` and fails, it does not drop it)."""
    if type(source) is dict or isinstance(source, Mapping):
        if type(source) is dict and tuple in map(type, source):  # (a collection: str keys)
            items = list(source.items())
            return iter(
                [
                    *(i for i in items if type(i[0]) is not tuple),
                    *(i for i in items if type(i[0]) is tuple),
                ]
            )
        return iter(source.items())
    if isinstance(source, TensorCollection):
        return source._items()
    msg = (
        f"TensorDict() expects a mapping of entries (a dict or a collection), got "
        f"{type(source).__name__}; pass a dict, e.g. TensorDict({{'obs': tensor}}, batch_size)"
    )
    raise SourceTypeError(msg)


def value_as_tensor(key: object, value: Any, device: torch.device | None) -> torch.Tensor:
    if isinstance(value, (str, bytes)) or value is None:
        msg = (
            f"cannot store {type(value).__name__} value {value!r} under {key!r}: TensorDict "
            "entries are tensors, array-likes, tensor collections or dicts"
        )
        raise EntryTypeError(msg)
    try:
        return torch.as_tensor(value, device=device)
    except (TypeError, ValueError, RuntimeError) as error:
        msg = (
            f"cannot store {type(value).__name__} value under {key!r}: it is not a tensor, "
            f"an array-like, a tensor collection or a dict ({error})"
        )
        raise EntryTypeError(msg) from None


def raise_write_error(key: str, entry: Value, index: Any, value: Any, error: Exception) -> None:
    if isinstance(error, ReadOnlyError):  # its own message says what to do
        raise error
    if isinstance(error, NotImplementedError) and isinstance(entry, _Tensor):
        # no kernel for the dtype (a write the checks before it did not try)
        raise kernel_refused(key, entry.dtype, entry.shape, index, error, written=True) from None
    if isinstance(error, InPlaceKernelError):  # a nested entry's: still no kernel (the peer's)
        msg = f"cannot write into {key!r} (shape {list(entry.shape)}) at index {index!r}: {error}"
        raise InPlaceKernelError(msg) from None
    shape = list(value.shape) if isinstance(value, (_Tensor, TensorCollection)) else value
    if _fits_at(entry, index, value):  # the shapes agree: torch refused for its own reason
        msg = f"cannot write into {key!r} (shape {list(entry.shape)}) at index {index!r}: {error}"
        raise InPlaceWriteError(msg) from None
    msg = (
        f"cannot write a value of shape {shape} into {key!r} "
        f"(shape {list(entry.shape)}) at index {index!r}: shape or batch dimension "
        f"mismatch ({error})"
    )
    raise BatchSizeError(msg) from None


def _fits_at(entry: Value, index: Any, value: Any) -> bool:
    """Whether tensor ``value`` broadcasts to ``entry[index]``'s shape (read again on the
    error path only), so a failed write was not a shape mismatch (memory overlap); a
    Python number fits any selection (autograd's refusal of a leaf that requires grad)."""
    if type(value) in (int, float, bool, complex) and isinstance(entry, _Tensor):
        return True
    if not isinstance(value, _Tensor) or not isinstance(entry, _Tensor):
        return False
    try:
        target = entry[index].shape
        return bool(torch.broadcast_shapes(value.shape, target) == target)  # type: ignore[no-untyped-call]
    except (IndexError, RuntimeError, TypeError, ValueError):
        return False


def same_memory(target: _Tensor, source: _Tensor) -> bool:
    """Whether ``source`` reads ``target``'s own memory (a parameter's ``.data``, a
    detached copy of it): a failed ``target.copy_(source)`` then has nothing to write,
    as the peer's ``set_`` decides."""
    if not isinstance(source, _Tensor) or source.device != target.device:
        return False
    try:
        return bool(
            source.data.untyped_storage().data_ptr() == target.data.untyped_storage().data_ptr()
            and source.data.storage_offset() == target.data.storage_offset()
            and source.shape == target.shape
            and source.stride() == target.stride()
            and source.dtype == target.dtype
        )
    except (RuntimeError, NotImplementedError):  # (tensors without storage)
        return False


def copy_error(key: Any, source: _Tensor, target: _Tensor, error: Exception) -> TclassError:
    """Why ``target.copy_(source)`` (``set_`` of ``key``) failed: the shapes, or
    autograd refusing to write into a leaf that requires grad (a parameter, or a view of
    one), or else torch's reason."""
    if isinstance(error, ReadOnlyError):  # its own message says what to do
        return error
    if isinstance(key, tuple) and len(key) == 1:
        key = key[0]  # a top-level entry, named as keys() lists it
    try:
        fits = torch.broadcast_shapes(source.shape, target.shape) == target.shape  # type: ignore[no-untyped-call]
    except RuntimeError:
        fits = False
    if not fits:
        msg = (
            f"Failed to update {key!r} in place (set_): cannot copy a value of shape "
            f"{list(source.shape)} into its shape {list(target.shape)}: {error}"
        )
        return BatchSizeError(msg)
    if target.requires_grad and torch.is_grad_enabled():
        msg = (
            f"Failed to update {key!r} in place (set_): autograd refuses an in-place write "
            "into a tensor that requires grad (a parameter, or a view of one); write under "
            f"torch.no_grad() (as TensorDictParams' own set_ does), or set() a new tensor ({error})"
        )
        return InPlaceWriteError(msg)
    return InPlaceWriteError(f"set_: cannot copy into {key!r}: {error}")


def keys_below(
    path: tuple[str, ...], allowed: list[tuple[str, ...]]
) -> list[tuple[str, ...]] | None:
    """What ``keys_to_update`` allows under ``path``: ``None`` for everything (the key
    itself was listed), else the listed keys below it (empty: nothing)."""
    if path in allowed:
        return None
    depth = len(path)
    return [key[depth:] for key in allowed if len(key) > depth and key[:depth] == path]


def deep_clone(value: Any) -> Any:
    """A copy of a value being stored: tensors and collections cloned, dicts walked."""
    if isinstance(value, (_Tensor, TensorDictBase)):
        return value.clone()
    if isinstance(value, Mapping):
        return {key: deep_clone(item) for key, item in value.items()}
    return value


_C = TypeVar("_C", bound=TensorDictBase)


def fit_to_batch(value: _C, batch: torch.Size, key: object) -> _C:
    """A nested collection stored under a parent of batch size ``batch``: one whose batch
    size is a shorter prefix of ``batch`` (a TensorDict built without one, typically)
    becomes a shallow copy with the parent's batch size, as in the peer; the given one is
    left as it is.

    Raises:
        BatchMismatchError: if its batch size is not such a prefix, or its entries do not
            start with ``batch``.
    """
    own = value.batch_size
    if len(own) >= len(batch) or batch[: len(own)] != own or value._is_leaf_node:
        raise BatchMismatchError(key, own, batch)
    out = value.clone(recurse=False)
    try:
        out._check_new_batch_size(batch, ())
    except BatchMismatchError as error:
        raise error.under(key) if isinstance(key, str) else error from None
    out._assign_batch_size(batch)
    return out


def takes_lazy_layout(target: TensorCollection, value: Any, below: Any, inplace: bool) -> bool:
    """Whether updating the nested TensorDict ``target`` from ``value`` makes it a lazy
    stack: ``value`` is a lazy stack whose batch size starts with ``target``'s, stacked
    along one of those dims, and the whole node is updated (not in place, where the
    entries keep their tensors)."""
    if below is not None or inplace or not isinstance(value, TensorCollection):
        return False
    batch, lazy = target.batch_size, cast(Any, value)
    return bool(
        value._is_lazy and lazy.stack_dim < len(batch) and value.batch_size[: len(batch)] == batch
    )


def check_dict_fits(source: Mapping[Any, Any], batch: torch.Size) -> None:
    """Raises ``BatchMismatchError`` for the first tensor of ``source`` (nested dicts
    included) whose leading dims are not ``batch``: the dict ``set_`` copies into a
    nested collection, checked (and named by its own key) as the peer makes it a
    TensorDict of the batch size of the collection holding that nested one before it
    looks up its keys. A ragged size (a ``-1``)
    is not checked."""
    if any(size < 0 for size in batch):
        return
    for name, value in source.items():
        if type(value) is dict:
            check_dict_fits(value, batch)
        elif isinstance(value, _Tensor) and tuple(value.shape[: len(batch)]) != tuple(batch):
            raise BatchMismatchError(name, value.shape, batch)
