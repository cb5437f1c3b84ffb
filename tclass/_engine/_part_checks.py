"""The check ahead of ``td[index] = dict_or_collection`` and ``lazy[index] = ...``: each
part of the value (each member's, for a lazy stack) tried against the entries it is
written into before any is written, so that a part one entry refuses (a shape torch
cannot broadcast to its selection, a dtype an advanced index refuses, a new key in a
locked node) leaves every entry as it was (the peer writes the entries before it)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import torch

from tclass._base.implemented._collection import TensorCollection
from tclass._core import _batch, _keys
from tclass._core._spec import viewable
from tclass._engine._nontensor import NonTensorData
from tclass._engine._td_setitem import SetItemOps, direct_leaf_dtypes
from tclass._engine._tensor_write import (
    check_kernels_at,
    check_number_write,
    fits_every_dtype,
    indexes_every_way,
    kernel_refused,
    probe_index_put,
)
from tclass.errors import (
    BatchSizeError,
    DimError,
    EntryTypeError,
    IndexTypeError,
    InPlaceWriteError,
    LockedError,
    MetaTensorError,
)

__all__ = ["check_entries", "check_parts", "grouped_parts"]

_Path = tuple[str, ...]


def check_parts(writes: Sequence[tuple[int | None, Any, Any, Any]]) -> None:
    """Checks each planned write ``(number, member, where, part)`` (``where`` the
    member's index, ``Ellipsis`` for all of it; ``number`` the member's in its lazy
    stack, None for a TensorDict written on its own) as the member's own write would
    take it, before any is written. A shape that broadcasts to its selection (of the
    same dtype at an advanced index) passes without a stand-in.

    Raises:
        BatchSizeError: (a ``RuntimeError``, as torch's and the peer's) a tensor of the
            part does not broadcast to its entry's selection.
        InPlaceWriteError: (a ``RuntimeError``) an advanced index and a dtype torch's
            ``index_put`` refuses.
        LockedError: (a ``RuntimeError``) a new key for a locked member (or node).
    """
    passed: set[Any] = set()  # the writes tried already (the members often alike)
    for number, member, where, part in writes:
        _check_part(number, member, where, part, passed)


def check_entries(td: TensorCollection, where: Any, part: Any) -> None:
    """:func:`check_parts` for ``td[where] = part`` (``td`` a TensorDict, ``part`` a
    dict or a collection), after one cheap pass that passes the usual value at once: a
    tensor for each of ``td``'s direct tensors, of the shape it selects (of its dtype at
    an advanced index)."""
    if not isinstance(part, TensorCollection) or not part._is_lazy:
        entries = part._entries() if isinstance(part, TensorCollection) else part
        selected = _selected(td, where)
        if selected is not None and _fit_plainly(td, entries, selected, _is_advanced(where)):
            return
    check_parts([(None, td, where, part)])


def grouped_parts(writes: Sequence[tuple[_Path, Any, Any]]) -> list[tuple[Any, dict[Any, Any]]]:
    """``(path, value, index)`` writes (``update_at_``'s, ``update_``'s at ``...``) as
    ``(index, part)``, one part (a dict by key) for each index, for the checks above;
    Python numbers left out at ``...`` (``update_`` copies them, as the peer, where an
    indexed write refuses one the dtype cannot hold)."""
    first = writes[0][2] if writes else None
    if first is not Ellipsis and all(write[2] is first for write in writes):  # (the usual)
        return [(first, {p[0] if len(p) == 1 else p: value for p, value, _ in writes})]
    groups: dict[int, tuple[Any, dict[Any, Any]]] = {}
    for path, value, index in writes:
        if index is Ellipsis and type(value) in (int, float):
            continue
        key = path[0] if len(path) == 1 else path
        groups.setdefault(id(index), (index, {}))[1][key] = value
    return list(groups.values())


def _fit_plainly(
    td: TensorCollection, entries: Mapping[Any, Any], selected: torch.Size, advanced: bool
) -> bool:
    """Whether each of ``entries`` is a plain tensor written into a plain tensor of
    ``td``, of the shape ``selected`` (the selected batch) and the entry's dims past the
    batch; of the entry's dtype too at an advanced index. A Python value (a record's
    ``str`` field) passes: :func:`check_parts` reads no leaf of it either (the write's own
    rules check it)."""
    targets = td._entries()
    dims = len(td.batch_size)
    for key, sub in entries.items():
        entry = targets.get(key)
        if sub.__class__ is NonTensorData and entry.__class__ is not torch.Tensor:
            continue
        if sub.__class__ is not torch.Tensor or entry.__class__ is not torch.Tensor:
            return False
        if sub.is_meta:
            return False  # (no data to copy: check_parts refuses it, named)
        want = entry.shape[dims:]
        if sub.shape != (selected + want if selected else want):
            return False
        if advanced and (sub.dtype != entry.dtype or not indexes_every_way(entry.dtype)):
            return False  # (a dtype torch has no kernel for at an advanced index: tried)
    return True


def _check_part(number: int | None, member: Any, where: Any, part: Any, passed: set[Any]) -> None:
    """One member's part (see :func:`check_parts`)."""
    advanced = _is_advanced(where)
    parts = list(_part_leaves(part, (), where is Ellipsis))
    # (a Python number every dtype holds, the usual 0, is checked at a mask or rows only,
    # where torch may have no kernel for an entry's dtype: uint16's masked_fill)
    leaves = [leaf for leaf in parts if leaf[1] is not None or not fits_every_dtype(leaf[2])]
    if not leaves and not (advanced and parts):
        if isinstance(part, Mapping):
            _check_values(number, member, where, part, ())
        return
    targets = _leaves(member)
    _check_values(number, member, where, part, ())
    if advanced and len(leaves) < len(parts):
        if not all(dtype is None or indexes_every_way(dtype) for _, dtype in targets.values()):
            leaves = parts
    if not leaves:
        return
    selected = _selected(member, where)
    dims = len(member.batch_size)
    known: set[_Path] | None = None
    for path, shape, dtype in leaves:
        if shape is None:
            _check_number(number, where, path, dtype, targets)
            continue
        found = targets.get(path)
        if found is None:
            if member.is_locked or len(path) > 1:
                known = {_keys.key_path(k) for k in member.keys(True)} if known is None else known
                _check_new_key(number, member, where, path, known)
            continue  # a collection, a Python value or a new key: the write's own rules
        entry, entry_dtype = found
        if -1 in entry:
            continue  # a nested lazy stack's uneven entry: its members checked by its write
        if selected is not None and (not advanced or _same_indexed(dtype, entry_dtype)):
            want = (*selected, *entry[dims:])
            if shape == want or _batch.broadcasts_to(shape, want):
                continue  # (the common case: no stand-in needed)
        tried = (entry, entry_dtype, shape, dtype, id(where))
        if tried not in passed:
            _try(number, path, entry, entry_dtype, where, shape, dtype)
            passed.add(tried)


def _same_indexed(dtype: torch.dtype | None, entry_dtype: torch.dtype | None) -> bool:
    """Whether a tensor of ``dtype`` is written at an advanced index into an entry of
    ``entry_dtype`` without a stand-in: the same dtype, one torch has the kernels for."""
    return dtype == entry_dtype and (dtype is None or indexes_every_way(dtype))


def _past_batch_dims(where: Any, batch_dims: int) -> bool:
    """Whether the index ``where`` consumes more dims than ``batch_dims``."""
    items = where if type(where) is tuple else (where,)
    return sum(map(_batch.index_dims_consumed, items)) > batch_dims


def _selected(member: Any, where: Any) -> torch.Size | None:
    """The batch size ``where`` selects of ``member``; None where it is not known here
    (a ragged lazy stack, an index of a kind the write reports).

    Raises:
        DimError: (an ``IndexError``, as the peer's) ``where`` is out of range for the
            batch size (or a mask of another shape), within the batch dims (one that
            reaches past them, into nested collections' batch dims, is left to the
            entries, as the peer's ``update_at_``): every entry refuses it, so it is
            refused here, once, before any is written (the peer writes the entries
            before the first that torch refuses).
    """
    batch_size: torch.Size = member.batch_size
    if -1 in batch_size:
        return None
    if type(where) is int and batch_size:
        return batch_size[1:]  # (the usual row; out of range: the first write reports it)
    try:
        return _batch.indexed_shape(batch_size, _on_cpu(where))
    except IndexTypeError:
        return None  # (an index of a type that indexes nothing: the write reports it)
    except DimError:
        if _past_batch_dims(where, len(batch_size)):
            return None  # (reaching into nested batch dims, as update_at_ may: per entry)
        raise
    except (IndexError, RuntimeError, TypeError, ValueError):
        return None


def _owner(number: int | None) -> str:
    """The destination's name in the messages."""
    return "the TensorDict" if number is None else f"member {number} of the lazy stack"


def _check_new_key(
    number: int | None, member: Any, where: Any, path: _Path, known: set[_Path]
) -> None:
    """Refuses ``path``, a key ``member`` does not hold, where the node it would be
    added to is locked (``known``: ``member``'s keys, nested ones too)."""
    if path in known:
        return
    depth = next(i for i in range(len(path)) if path[: i + 1] not in known)
    node = member.get(path[:depth]) if depth else member
    if not isinstance(node, TensorCollection) or not node.is_locked:
        return
    if isinstance(node, SetItemOps) and node._can_fill(path[depth]):
        return  # an absent field of the record it stores: allocated by the write
    name = _keys.unravel_key(path)
    owner = _owner(number)
    if depth:  # a nested node locked on its own
        owner = f"{_keys.unravel_key(path[:depth])!r} of {owner}"
    msg = (
        f"Cannot modify locked TensorDict: cannot add {name!r} to {owner} (locked) at "
        f"index {where!r}; nothing was written. Unlock it first, or write only the keys "
        f"it holds"
    )
    raise LockedError(msg)


def _leaves(collection: Any) -> dict[_Path, tuple[torch.Size, torch.dtype | None]]:
    """The tensors of ``collection`` (nested ones too) as ``{path: (shape, dtype)}``, read
    straight from a TensorDict's entries; ``dtype`` None where reading it would stack a
    lazy stack."""
    found = direct_leaf_dtypes(collection, (), stack=False)
    return {path: (shape, dtype) for path, dtype, shape in found}


def _try(
    number: int | None,
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
    wanted = (entry_dtype if entry_dtype is not None and dtype is not None else dtype) or (
        torch.float32
    )
    try:
        if not _is_advanced(at):
            torch.empty(entry, device="meta")[at] = torch.empty(shape, device="meta")
            return
        probe_index_put(entry, wanted, at, torch.empty((), dtype=dtype or wanted).expand(shape))
    except IndexError:
        return  # an index out of range: the same for every member, the write reports it
    except NotImplementedError as error:  # no kernel for the dtype (uint16)
        raise kernel_refused(path, wanted, entry, where, error, _owner(number)) from None
    except RuntimeError as error:
        name = _keys.unravel_key(path)
        if "dtype" in str(error):
            msg = (
                f"cannot write a {dtype} tensor into {name!r} ({entry_dtype}, shape "
                f"{list(entry)}) of {_owner(number)} at index {where!r}: "
                f"{error}; nothing was written. Cast the value (.to({entry_dtype})) or "
                f"write the entries one by one"
            )
            raise InPlaceWriteError(msg) from None
        hint = (
            "index the value or the destination so that the shapes agree"
            if number is None
            else "the members differ there: write each member's part on its own, or a "
            "value every member takes"
        )
        msg = (
            f"cannot write a tensor of shape {list(shape)} into {name!r} of {_owner(number)} "
            f"(shape {list(entry)}) at index {where!r}: {error}; nothing was written "
            f"({hint})"
        )
        raise BatchSizeError(msg) from None


def _part_leaves(
    part: Any, prefix: _Path, lists: bool = False
) -> Iterator[tuple[_Path, torch.Size | None, Any]]:
    """The tensors of a member's part, as ``(path, shape, dtype)`` (``dtype`` None where
    reading it would stack a lazy stack), and its Python numbers as ``(path, None,
    number)`` (a ``bool``, an ``int`` or a ``float``, which the write keeps a number, as
    torch's ``entry[where] = 300``; a complex becomes a tensor, cast as torch casts one);
    a list at ``...`` (``lists``: ``update_``'s) as the tensor it becomes; other Python
    values left out (the write's own rules)."""
    if type(part) in (bool, int, float):
        yield prefix, None, part
    elif isinstance(part, torch.Tensor):
        yield prefix, part.shape, part.dtype
    elif isinstance(part, TensorCollection):
        for path, (shape, dtype) in _leaves(part).items():
            if -1 not in shape:
                yield (*prefix, *path), shape, dtype
    elif isinstance(part, Mapping):
        for key, sub in part.items():
            path = (*prefix, key) if type(key) is str else (*prefix, *_keys.key_path(key))
            if isinstance(sub, torch.Tensor):  # (the usual entry, without a nested call)
                yield path, sub.shape, sub.dtype
            else:
                yield from _part_leaves(sub, path, lists)
    elif hasattr(part, "__array__") and not isinstance(part, (int, float, complex)):
        tensor = torch.as_tensor(viewable(part))
        yield prefix, tensor.shape, tensor.dtype
    elif lists and type(part) in (list, tuple):  # (update_'s: an indexed write reads its own)
        try:
            tensor = torch.as_tensor(part)
        except (TypeError, ValueError, RuntimeError):
            return  # (not a tensor's data: the write's own rules)
        yield prefix, tensor.shape, tensor.dtype


def _check_values(number: int | None, member: Any, where: Any, part: Any, prefix: _Path) -> None:
    """Refuses, before anything is written, what no write of a tensor entry takes: a
    meta tensor (no data) for an entry that is not one, and a ``str`` (or ``bytes``) for a
    tensor entry (the peer writes the entries before it, or skips the key silently).

    Raises:
        MetaTensorError: (a ``NotImplementedError``, as torch's) a meta tensor.
        InPlaceWriteError: (a ``ValueError``, as ``update_`` raised) a ``str`` at ``...``.
        EntryTypeError: (a ``TypeError``, as an indexed write raised) a ``str`` at an index.
    """
    if not isinstance(part, Mapping) or (isinstance(part, TensorCollection) and part._is_lazy):
        return  # (a lazy stack's entries not read: its members may differ in shape)
    for key, sub in part.items():
        path = (*prefix, key) if type(key) is str else (*prefix, *_keys.key_path(key))
        if isinstance(sub, torch.Tensor):
            if not sub.is_meta:
                continue
        elif isinstance(sub, Mapping):
            _check_values(number, member, where, sub, path)
            continue
        elif sub.__class__ is NonTensorData and type(sub.data) in (str, bytes):
            sub = sub.data  # (td[index] = {"c": "x"}: read as a Python value)
        elif type(sub) not in (str, bytes):
            continue
        entry = member.get(path, None)
        if not isinstance(entry, torch.Tensor) or (isinstance(sub, torch.Tensor) and entry.is_meta):
            continue  # (a new key, a Python value's entry, a meta entry: the write's rules)
        name = _keys.unravel_key(path)
        if isinstance(sub, torch.Tensor):
            msg = (
                f"cannot write a meta tensor (no data) into {name!r} of {_owner(number)} at "
                f"index {where!r}; nothing was written"
            )
            raise MetaTensorError(msg)
        msg = (
            f"a {type(sub).__name__} cannot be copied into the tensor {name!r} of "
            f"{_owner(number)} at index {where!r}; nothing was written"
        )
        raise (InPlaceWriteError if where is Ellipsis else EntryTypeError)(msg)


def _check_number(
    number: int | None,
    where: Any,
    path: _Path,
    value: complex,
    targets: dict[_Path, tuple[torch.Size, torch.dtype | None]],
) -> None:
    """Refuses the Python number ``value`` at ``path`` (an entry, or a node: each
    tensor under it) where an entry's dtype cannot hold it, or torch has no kernel to
    write it at ``where`` (``uint16`` at a mask), as torch refuses ``entry[where] =
    value``, before anything is written."""
    reached = [
        (key, dtype, shape)
        for key, (shape, dtype) in targets.items()
        if key[: len(path)] == path and dtype is not None
    ]
    if fits_every_dtype(value):  # (the usual 0): only the kernel can refuse it
        check_kernels_at(value, _on_cpu(where), reached, _owner(number))
    else:
        check_number_write(value, where, reached, _owner(number))


def _on_cpu(where: Any) -> Any:
    """``where`` with its tensors on the CPU, for the stand-ins."""
    items = where if type(where) is tuple else (where,)
    moved = tuple(i.cpu() if isinstance(i, torch.Tensor) else i for i in items)
    return moved if type(where) is tuple else moved[0]


def _is_advanced(where: Any) -> bool:
    """Whether ``where`` has a list or a tensor (torch's ``index_put``)."""
    items = where if type(where) is tuple else (where,)
    return any(isinstance(item, (list, torch.Tensor)) for item in items)
