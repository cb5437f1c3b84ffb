"""``x[index] = tensor`` over a collection, as the peer writes it: into each tensor entry
as torch writes ``entry[index] = tensor`` (the tensor lined up with the last dims of the
entry's selection, leading dims of size 1 dropped), every entry checked before any is
written, so that a tensor one entry refuses leaves all of them as they were."""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from typing import Any, cast

import torch

from tclass._base._tensordict_base import TensorDictBase
from tclass._core import _batch, _keys
from tclass._core._tracing import tracing
from tclass._core._unbatched import UnbatchedTensor
from tclass.errors import BatchSizeError, InPlaceKernelError, InPlaceWriteError

__all__ = [
    "check_kernels_at",
    "check_number_write",
    "check_tensor_write",
    "fits_every_dtype",
    "indexes_every_way",
    "kernel_refused",
    "leaf_dtypes",
    "number_refused",
    "probe_index_put",
    "tensor_refused",
    "tensor_targets",
]


def _is_tensor_leaf(cls: type) -> bool:
    """The leaves a tensor is written into: tensors, not an unbatched entry (which an
    indexed write leaves alone) nor a collection or a node of Python values."""
    return issubclass(cls, torch.Tensor) and not issubclass(cls, UnbatchedTensor)


def tensor_targets(
    collection: TensorDictBase, index: Any
) -> list[tuple[Any, torch.Size, torch.Size | None]]:
    """Each tensor leaf of ``collection`` (nested ones too) as ``(key, shape, selected)``:
    its shape, without stacking a lazy stack's tensors, and the shape that ``index``
    (over the batch dims, already checked against them) selects of it; ``selected`` is
    None where the shape has a ``-1`` (the members of a lazy stack differ there)."""
    targets: list[tuple[Any, torch.Size, torch.Size | None]] = []
    for key in collection.keys(True, True, is_leaf=_is_tensor_leaf):
        shape = collection.get_item_shape(key)
        selected = None if -1 in shape else _batch.indexed_shape(shape, index)
        targets.append((key, shape, selected))
    return targets


def leaf_dtypes(collection: TensorDictBase) -> list[tuple[Any, torch.dtype, torch.Size]]:
    """Each tensor leaf of ``collection`` (nested ones too) as ``(key, dtype, shape)``,
    for :func:`check_number_write` (read through ``get``: for collections in memory)."""
    out = []
    for key in collection.keys(True, True, is_leaf=_is_tensor_leaf):
        tensor = collection.get(key)
        out.append((key, tensor.dtype, tensor.shape))
    return out


def check_tensor_write(collection: TensorDictBase, index: Any, value: torch.Tensor) -> None:
    """Checks that every tensor leaf of ``collection`` takes ``value`` at ``index`` as
    torch broadcasts it (``leaf[index] = value``), before anything is written.

    Raises:
        DimError: (an ``IndexError``) ``index`` does not fit the batch size.
        BatchSizeError: (a ``RuntimeError``, as torch's and the peer's) naming the first
            leaf that refuses it, both shapes, and how to line the tensor up with the
            batch dims instead.
    """
    batch = collection.batch_size
    if not value.ndim:
        return  # a 0-dim tensor fills any selection
    if -1 not in batch:  # the index first, as it is checked for a tensor of the batch size
        _batch.indexed_shape(batch, index)
    nb = len(batch)
    for key, shape, selected in tensor_targets(collection, index):
        if selected is not None and not _batch.broadcasts_to(value.shape, selected):
            raise tensor_refused(key, shape, index, value.shape, selected, nb)


def tensor_refused(
    key: Any, shape: torch.Size, index: Any, value: torch.Size, selected: torch.Size, nb: int
) -> BatchSizeError:
    """The error for an entry ``key`` of ``shape`` (``nb`` batch dims) whose selection
    ``selected`` at ``index`` does not take a tensor of shape ``value``."""
    name = _keys.unravel_key(key)
    feature = len(shape) - nb  # the entry's dims past the batch dims
    hint = ""
    if feature > 0 and _batch.broadcasts_to((*value, *(1,) * feature), selected):
        spelled = ", ".join(["...", *["None"] * feature])
        hint = (
            f"; to line it up with the batch dims instead (one value per batch element), "
            f"write value[{spelled}]"
        )
    msg = (
        f"shape mismatch: cannot write a tensor of shape {list(value)} at index {index!r}: "
        f"entry {name!r} "
        f"(shape {list(shape)}) selects {list(selected)} there, and torch broadcasts a "
        f"tensor to the last dims of the selection, which {list(value)} does not fit; "
        f"nothing was written{hint}, or write the entries one by one "
        f"(td[index] = {{key: value}})"
    )
    return BatchSizeError(msg)


def fits_every_dtype(value: int | float | complex) -> bool:
    """Whether every dtype holds the Python number ``value`` (a bool, or a real number
    within ``int8``'s range: the common ``td[idx] = 0``), so that no entry need be
    checked for it."""
    if type(value) is bool:
        return True
    if isinstance(value, complex):
        return False
    return -128 <= value <= 127  # (False for a nan)


def number_refused(value: complex, dtype: torch.dtype) -> str | None:
    """torch's reason for refusing ``tensor[index] = value`` of the Python number
    ``value`` into ``dtype`` (``300`` into ``int8``, ``nan`` into an integer), or None
    where it takes it: tried on a scratch tensor of one element."""
    try:
        torch.empty(1, dtype=dtype).fill_(value)  # (torch's check for entry[i] = value)
    except (RuntimeError, OverflowError) as error:
        return str(error)
    return None


def check_number_write(
    value: complex,
    index: Any,
    targets: Iterable[tuple[Any, torch.dtype, torch.Size]],
    owner: str = "",
) -> None:
    """Checks that every tensor of ``targets`` (``(key, dtype, shape)``) takes the
    Python number ``value`` as torch writes ``tensor[index] = value`` (which refuses a
    number its dtype cannot hold: ``300`` into ``int8``, ``nan`` into an integer, a
    complex into a real dtype), before anything is written: each dtype is tried once, on
    a scratch tensor of one element (``owner``: what holds the entries, for messages).

    Raises:
        InPlaceWriteError: (a ``RuntimeError``, as torch's and the peer's) naming the
            first entry whose dtype refuses it (see :func:`check_kernels_at` too).
    """
    targets = list(targets)
    check_kernels_at(value, index, targets, owner)
    tried: set[torch.dtype] = set()
    for key, dtype, shape in targets:
        if dtype in tried:
            continue
        tried.add(dtype)
        error = number_refused(value, dtype)
        if error is not None:
            msg = (
                f"cannot write {value!r} into {_keys.unravel_key(key)!r} ({dtype}, shape "
                f"{list(shape)}){f' of {owner}' if owner else ''} at index {index!r}: {error}; "
                "nothing was written. Write a "
                f"value that {dtype} holds, or write the entries one by one "
                f"(td[index] = {{key: value}})"
            )
            raise InPlaceWriteError(msg) from None


def check_kernels_at(
    value: torch.Tensor | complex,
    index: Any,
    targets: Iterable[tuple[Any, torch.dtype | None, torch.Size]],
    owner: str = "",
) -> None:
    """Checks ``tensor[index] = value`` for each tensor of ``targets`` (``(key, dtype,
    shape)``; ``dtype`` None: not known here) whose dtype torch may have no kernel for
    at ``index`` (:func:`indexes_every_way`), on a stand-in, before anything is written.

    Raises:
        InPlaceKernelError: (a ``NotImplementedError``, as torch's and the peer's) naming
            the first entry torch has no kernel for.
    """
    for key, dtype, shape in targets:
        if dtype is None or indexes_every_way(dtype):
            continue
        try:
            probe_index_put(shape, dtype, index, value)
        except NotImplementedError as missing:
            raise kernel_refused(key, dtype, shape, index, missing, owner) from None
        except (IndexError, RuntimeError):
            pass  # (another reason: the other checks, or the write, report it)


# dtype -> whether torch writes it at an advanced index (filled by indexes_every_way)
_INDEXES_EVERY_WAY: dict[torch.dtype, bool] = {}
# what torch 2.4-2.13 lack (the answer while torch.compile traces, where no probe runs)
_KNOWN_WITHOUT_KERNELS = frozenset({torch.uint16, torch.uint32, torch.uint64})


def indexes_every_way(dtype: torch.dtype) -> bool:
    """Whether torch writes ``dtype`` at an advanced index (``index_put`` for rows,
    ``masked_fill`` for a number at a mask; tried once on the CPU): not ``uint16``,
    ``uint32`` nor ``uint64``, whose basic writes alone have kernels (nor a float8 dtype's
    ``masked_fill``). Their writes are tried on a stand-in before any entry is written.
    A plain dict, not ``functools.cache``: torch.compile refuses a traced cache wrapper."""
    known = _INDEXES_EVERY_WAY.get(dtype)
    if known is not None:
        return known
    if tracing():
        return dtype not in _KNOWN_WITHOUT_KERNELS
    scratch = torch.zeros(1, dtype=dtype)
    answer = True
    try:
        scratch[torch.tensor([0])] = torch.zeros(1, dtype=dtype)
        scratch[torch.tensor([True])] = 0
    except NotImplementedError:
        answer = False
    except RuntimeError:
        pass  # (another reason: the write itself reports it)
    _INDEXES_EVERY_WAY[dtype] = answer
    return answer


def kernel_refused(
    key: Any,
    dtype: torch.dtype,
    shape: Any,
    index: Any,
    error: Exception,
    owner: str = "",
    written: bool = False,
) -> InPlaceKernelError:
    """The error for a write at ``index`` into entry ``key`` (``dtype``, ``shape``) that
    torch has no kernel for (``"index_put" not implemented for 'UInt16'``); ``written``:
    the write itself found it, not a check before it (as the peer's, the entries before
    it are written then)."""
    where = f" of {owner}" if owner else ""
    done = "any entry before it was written" if written else "nothing was written"
    msg = (
        f"cannot write into {_keys.unravel_key(key)!r} ({dtype}, shape {list(shape)}){where} "
        f"at index {index!r}: torch has no kernel for it ({error}); {done}. Write at ints "
        f"and slices (which {dtype} takes), or convert the entry to a dtype torch indexes "
        f"(e.g. x.apply(lambda t: t.to(torch.int64)))"
    )
    return InPlaceKernelError(msg)


def probe_index_put(
    shape: torch.Size,
    dtype: torch.dtype,
    index: Any,
    value: torch.Tensor | complex,
    device: Any = None,
) -> None:
    """``entry[index] = value`` tried on a stand-in of the entry's ``shape`` and ``dtype``
    (one element seen at every position, so no data is read or written): torch's
    ``index_put`` checks the shapes and dtypes as for the entry (a Python number: its
    kernel, ``masked_fill`` at a mask). Raises torch's error."""
    probe = torch.empty((), dtype=dtype, device=device).expand(shape)
    with warnings.catch_warnings():  # (torch warns of a write into an expanded tensor)
        warnings.simplefilter("ignore", UserWarning)
        probe[index] = cast(Any, value)  # (a complex too, which torch's stubs leave out)
