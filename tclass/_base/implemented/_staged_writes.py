"""The results of an ``apply_`` waiting to be written (all or nothing).

``apply_`` computes every result first and writes them once the last is computed, so a
function that raises, or a result that cannot be written, leaves every tensor as it
was. Nodes with their own in-place rules (an HDF5 file or zarr store, the parameters of
a ``TensorDictParams``, a record whose fields bound their values) stage their results
by those rules and hand the outer walk a deferred write (:meth:`StagedWrites.defer`),
run with the others: nothing of theirs is written before every sibling has its result.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch

from tclass._core import _batch
from tclass.errors import InPlaceWriteError, ReadOnlyError

__all__ = [
    "Shadows",
    "StagedWrites",
    "any_shared",
    "empty_grad_view",
    "shares_memory",
    "write_refused",
]

_Tensor = torch.Tensor


class StagedWrites:
    """The results waiting to be written. A tensor that shares its storage with one
    already waiting gets the waiting ones written first, so that ``fn`` sees it as the
    peer's one-at-a-time walk does."""

    __slots__ = ("closers", "deferred", "pending", "storages")

    def __init__(self) -> None:
        self.pending: list[tuple[str, _Tensor, Any] | Callable[[], object]] = []
        self.storages: set[int] = set()
        self.deferred: set[int] = set()  # (ids of the tensors the deferred writes write)
        self.closers: list[Callable[[], object]] = []

    def before(self, value: _Tensor) -> bool:
        """Writes the waiting results first when ``value`` shares memory with one (then
        True), so that ``value`` is read as the peer's one-at-a-time walk reads it (a
        tensor a deferred write writes is passed: its result is waiting already)."""
        if self.storages and _storage_of(value) in self.storages:
            if id(value) in self.deferred:
                return False
            self.write()
            return True
        return False

    def add(self, key: str, value: _Tensor, result: Any) -> None:
        self.pending.append((key, value, result))
        self.storages.add(_storage_of(value))

    def defer(
        self,
        write: Callable[[], object],
        close: Callable[[], object] | None = None,
        shares: Iterable[_Tensor] = (),
    ) -> None:
        """``write`` run in turn with the results added (a nested node's staged results,
        checked by its own rules); ``close`` run once the walk is over, written or not
        (a scratch folder removed); ``shares``: the tensors ``write`` writes into, so
        that a tensor sharing memory with one gets it written first (see :meth:`before`)."""
        self.pending.append(write)
        for tensor in shares:
            self.storages.add(_storage_of(tensor))
            self.deferred.add(id(tensor))
        if close is not None:
            self.closers.append(close)

    def stage_without_grad(self, stage: Callable[[StagedWrites], object]) -> None:
        """``stage`` (a nested node's walk, given a ``StagedWrites`` of its own) run
        outside autograd, its results deferred here and written outside autograd too
        (the parameters of a ``TensorDictParams``: their data)."""
        inner = StagedWrites()
        with torch.no_grad():
            stage(inner)
        self.defer(inner.write_without_grad, inner.close)

    def write_without_grad(self) -> None:
        with torch.no_grad():
            self.write()

    def write(self) -> None:
        pending, self.pending = self.pending, []
        self.storages.clear()
        self.deferred.clear()
        for item in pending:
            if callable(item):
                item()
                continue
            key, value, result = item
            try:
                value.copy_(result)
            except ReadOnlyError:
                raise
            except RuntimeError as error:
                if _batch.writes_nothing(value, result) and not empty_grad_view(value):
                    continue  # no element to write (a parameter holding none, as the peer)
                raise write_refused(key, value, error) from None

    def close(self) -> None:
        """Drops what is left unwritten and runs the deferred writes' ``close``."""
        self.pending.clear()
        closers, self.closers = self.closers, []
        for close in closers:
            close()


class Shadows:
    """Stand-ins for memory that several bounded tensors share (two fields over one
    buffer), for results computed before any is written: each result lands in a copy
    of that memory, so that the next tensor over it is read as the peer's one-at-a-time
    walk reads it, after the earlier writes. Tensors sharing no memory are read as they
    are (a copy is made only for a second tensor over the same memory)."""

    __slots__ = ("copies", "seen")

    def __init__(self) -> None:
        self.seen: dict[int, list[tuple[_Tensor, _Tensor]]] = {}
        self.copies: dict[int, _Tensor] = {}

    def read(self, value: _Tensor) -> _Tensor:
        """``value``'s elements as the results recorded so far left them: a view of the
        copy of its memory, or ``value`` itself."""
        key = _storage_of(value)
        earlier = self.seen.get(key)
        if not key or not earlier:
            return value
        whole = self.copies.get(key)
        if whole is None:
            if any(tensor.dtype != value.dtype for tensor, _ in earlier):
                return value  # (one memory read as two dtypes: as before, each on its own)
            whole = self.copies[key] = _whole_copy(value)
            for tensor, result in earlier:
                _over(whole, tensor).copy_(result)
        return _over(whole, value)

    def wrote(self, value: _Tensor, result: _Tensor) -> None:
        """Records ``result`` as what ``value`` will hold."""
        key = _storage_of(value)
        whole = self.copies.get(key)
        if whole is not None and whole.dtype == value.dtype:
            _over(whole, value).copy_(result)
        elif key:
            self.seen.setdefault(key, []).append((value, result))


def _whole_copy(value: _Tensor) -> _Tensor:
    """A copy of all of ``value``'s memory, as a flat tensor of its dtype."""
    storage = value.untyped_storage()
    flat = torch.empty(0, dtype=value.dtype, device=value.device)
    flat.set_(storage, 0, (storage.nbytes() // value.element_size(),), (1,))
    return flat.clone()


def _over(whole: _Tensor, value: _Tensor) -> _Tensor:
    """The elements of ``whole`` (a copy of ``value``'s memory) that ``value`` views."""
    return whole.as_strided(value.size(), value.stride(), value.storage_offset())


def empty_grad_view(value: _Tensor) -> bool:
    """A view with no element of a leaf that requires grad (``params[3:-1]``): torch
    refuses an in-place write into it even of no element, as the peer's
    ``apply(inplace=True)`` does, where a parameter without elements lets one pass."""
    return value.numel() == 0 and value.requires_grad and value._is_view()


def shares_memory(target: object, value: object) -> bool:
    """Whether tensor ``value`` shares memory with the tensor ``target`` it is written
    into or read beside (``td.set_at_("x", td["x"][:3], slice(1, 4))``, a mask that is
    one of the collection's own tensors): it is then read before anything is written."""
    if not (isinstance(target, _Tensor) and isinstance(value, _Tensor)):
        return False
    if target.layout is not torch.strided or value.layout is not torch.strided:
        return False
    if target.device != value.device or target.device.type == "meta":
        return False
    if torch.compiler.is_compiling():  # no storage to compare in a traced graph
        return False
    return bool(target.untyped_storage().data_ptr() == value.untyped_storage().data_ptr())


def any_shared(tensors: list[_Tensor]) -> bool:
    """Whether two of ``tensors`` share memory (two bounded fields over one buffer); a
    tensor without storage to compare (under ``torch.vmap``, on ``meta``) shares none."""
    found = [key for key in map(_storage_of, tensors) if key]
    return len(set(found)) < len(found)


def _storage_of(value: _Tensor) -> int:
    """Where the tensor's storage starts (0 where it has none to compare)."""
    try:
        return int(value.untyped_storage().data_ptr())
    except (RuntimeError, NotImplementedError):
        return 0


def write_refused(key: str, value: _Tensor, error: RuntimeError) -> InPlaceWriteError:
    """Why ``apply(inplace=True)`` could not write its result into the tensor at ``key``."""
    if value.requires_grad and torch.is_grad_enabled():
        msg = (
            f"Failed to update {key!r} in place (apply(inplace=True)): autograd refuses an "
            "in-place write into a tensor that requires grad (a parameter, or a view of one) "
            "while it records; run it under torch.no_grad(), use apply_() on a "
            "TensorDictParams (which writes its parameters' data), or use inplace=False"
        )
    else:
        msg = (
            f"Failed to update {key!r} in place (apply(inplace=True)): cannot write the "
            f"result into it (shape {list(value.shape)}, "
            f"{'expanded' if 0 in value.stride() else 'strided'}): {error}. Clone the "
            "collection first (td.clone()) or use inplace=False"
        )
    return InPlaceWriteError(msg)
