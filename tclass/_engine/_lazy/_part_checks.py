"""The check ahead of ``lazy[index] = dict_or_collection``: each member's part of the
value tried against the member's entries before any member is written, so that a part
one member refuses (a shape torch cannot broadcast to its selection, a dtype an advanced
index refuses, a new key in a locked member) leaves every member as it was (the peer
writes the members before it)."""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Mapping
from typing import Any

import torch

from tclass._base.implemented._collection import TensorCollection
from tclass._core import _keys
from tclass._engine._lazy._ops import LazyStackOps
from tclass._engine._td_setitem import SetItemOps, direct_leaf_dtypes
from tclass._engine._tensor_write import tensor_targets
from tclass.errors import BatchSizeError, InPlaceWriteError, LockedError

__all__ = ["check_parts"]

_Path = tuple[str, ...]


def check_parts(writes: list[tuple[int, Any, Any, Any]]) -> None:
    """Checks each planned write ``(number, member, where, part)`` (``where`` the
    member's index, ``Ellipsis`` for all of it) as the member's own write would take it,
    before any is written.

    Raises:
        BatchSizeError: (a ``RuntimeError``, as torch's and the peer's) a tensor of the
            part does not broadcast to its entry's selection.
        InPlaceWriteError: (a ``RuntimeError``) an advanced index and a dtype torch's
            ``index_put`` refuses.
        LockedError: (a ``RuntimeError``) a new key for a locked member.
    """
    passed: set[Any] = set()  # the writes tried already (the members often alike)
    for number, member, where, part in writes:
        _check_part(number, member, where, part, passed)


def _check_part(number: int, member: Any, where: Any, part: Any, passed: set[Any]) -> None:
    """One member's part (see :func:`check_parts`)."""
    leaves = list(_part_leaves(part, ()))
    if not leaves:
        return
    targets = _leaves(member)
    known: set[_Path] | None = None
    for path, shape, dtype in leaves:
        found = targets.get(path)
        if found is None:
            if member.is_locked:
                known = {_keys.key_path(k) for k in member.keys(True)} if known is None else known
                if path not in known:
                    name = _keys.unravel_key(path)
                    msg = (
                        f"Cannot modify locked TensorDict: cannot add {name!r} to member "
                        f"{number} of the lazy stack (locked) at index {where!r}; nothing "
                        f"was written. Unlock it first, or write only the keys it holds"
                    )
                    raise LockedError(msg)
            continue  # a collection, a Python value or a new key: the write's own rules
        entry, entry_dtype = found
        if -1 in entry:
            continue  # a nested lazy stack's uneven entry: its members checked by its write
        tried = (entry, entry_dtype, shape, dtype, id(where))
        if tried not in passed:
            _try(number, path, entry, entry_dtype, where, shape, dtype)
            passed.add(tried)


def _leaves(collection: Any) -> dict[_Path, tuple[torch.Size, torch.dtype | None]]:
    """The tensors of ``collection`` (nested ones too) as ``{path: (shape, dtype)}``, read
    straight from a TensorDict's entries; ``dtype`` None where reading it would stack a
    lazy stack."""
    if isinstance(collection, SetItemOps):
        return {path: (shape, dtype) for path, dtype, shape in direct_leaf_dtypes(collection, ())}
    lazy = isinstance(collection, LazyStackOps)
    return {
        _keys.key_path(key): (shape, None if lazy else collection.get(key).dtype)
        for key, shape, _ in tensor_targets(collection, ...)
    }


def _try(
    number: int,
    path: _Path,
    entry: torch.Size,
    entry_dtype: torch.dtype | None,
    where: Any,
    shape: torch.Size,
    dtype: torch.dtype | None,
) -> None:
    """``entry[where] = value`` tried on stand-ins without data: on the meta device at a
    basic index; at an advanced index (torch's ``index_put``, whose shape and dtype
    checks the meta device skips) on one element seen at every position."""
    at = _on_cpu(where)
    try:
        if not _is_advanced(at):
            torch.empty(entry, device="meta")[at] = torch.empty(shape, device="meta")
            return
        wanted = entry_dtype if entry_dtype is not None and dtype is not None else dtype
        probe = torch.empty((), dtype=wanted or torch.float32).expand(entry)
        with warnings.catch_warnings():  # (torch warns of the write into an expanded tensor)
            warnings.simplefilter("ignore", UserWarning)
            probe[at] = torch.empty((), dtype=dtype or probe.dtype).expand(shape)
    except IndexError:
        return  # an index out of range: the same for every member, the write reports it
    except RuntimeError as error:
        name = _keys.unravel_key(path)
        if "dtype" in str(error):
            msg = (
                f"cannot write a {dtype} tensor into {name!r} ({entry_dtype}, shape "
                f"{list(entry)}) of member {number} of the lazy stack at index {where!r}: "
                f"{error}; nothing was written. Cast the value (.to({entry_dtype})) or "
                f"write the entries one by one"
            )
            raise InPlaceWriteError(msg) from None
        msg = (
            f"cannot write a tensor of shape {list(shape)} into {name!r} of member {number} "
            f"of the lazy stack (shape {list(entry)}) at index {where!r}: {error}; nothing "
            f"was written (the members differ there: write each member's part on its own, "
            f"or a value every member takes)"
        )
        raise BatchSizeError(msg) from None


def _part_leaves(part: Any, prefix: _Path) -> Iterator[tuple[_Path, torch.Size, Any]]:
    """The tensors of a member's part, as ``(path, shape, dtype)`` (``dtype`` None where
    reading it would stack a lazy stack); Python values left out (the write's own rules)."""
    if isinstance(part, torch.Tensor):
        yield prefix, part.shape, part.dtype
    elif isinstance(part, TensorCollection):
        for path, (shape, dtype) in _leaves(part).items():
            if -1 not in shape:
                yield (*prefix, *path), shape, dtype
    elif isinstance(part, Mapping):
        for key, sub in part.items():
            yield from _part_leaves(sub, (*prefix, *_keys.key_path(key)))
    elif hasattr(part, "__array__") and not isinstance(part, (int, float, complex)):
        tensor = torch.as_tensor(part)
        yield prefix, tensor.shape, tensor.dtype


def _on_cpu(where: Any) -> Any:
    """``where`` with its tensors on the CPU, for the stand-ins."""
    items = where if type(where) is tuple else (where,)
    moved = tuple(i.cpu() if isinstance(i, torch.Tensor) else i for i in items)
    return moved if type(where) is tuple else moved[0]


def _is_advanced(where: Any) -> bool:
    """Whether ``where`` has a list or a tensor (torch's ``index_put``)."""
    items = where if type(where) is tuple else (where,)
    return any(isinstance(item, (list, torch.Tensor)) for item in items)
