"""Operations that act on each entry and keep the batch shape.

``apply`` and friends, clone/detach/contiguous, ``fill_``, the equality comparisons
``==`` / ``!=`` (which also compare Python values) and the ``all``/``any`` reductions.
Arithmetic, ``where`` and ``masked_fill`` are in ``_pointwise.py`` and ``_operators.py``.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import torch
from typing_extensions import Self

from tclass._base._collection import TensorCollection
from tclass._core import _batch
from tclass.errors import BatchMismatchError, BatchSizeError, KeyNotFoundError

if TYPE_CHECKING:
    from tclass._base._tensordict_base import Value

__all__ = ["ElementwiseOps", "align_right"]


def align_right(tensor: torch.Tensor, ndim: int) -> torch.Tensor:
    """``tensor`` with size-1 dims appended up to ``ndim`` dims (a view)."""
    missing = ndim - tensor.ndim
    if missing <= 0:
        return tensor
    return tensor.reshape(tensor.shape + (1,) * missing)


class ElementwiseOps(TensorCollection):
    """Entry-by-entry operations shared by every collection."""

    __slots__ = ()

    # --- apply ---------------------------------------------------------------------------

    def apply(
        self,
        fn: Callable[..., torch.Tensor | None],
        *others: TensorCollection,
        batch_size: _batch.BatchSizeLike = None,
        inplace: bool = False,
    ) -> Self:
        """A new collection holding ``fn(tensor, *other_tensors)`` for every tensor.

        ``others`` are collections with the same keys, whose tensors are passed alongside.
        An entry for which ``fn`` returns ``None`` is left out. Results must keep the batch
        dims, unless ``batch_size`` gives the new batch size. ``inplace=True`` copies the
        results into the existing tensors instead (see :meth:`apply_`).
        """
        if inplace:
            return self._apply_in_place(fn, others)
        target = self.batch_size if batch_size is None else _batch.as_batch_size(batch_size)
        if not others:
            return self._apply_plain(fn, target, ())
        return self._apply_nested(lambda key, value, *rest: fn(value, *rest), others, target, ())

    def _apply_plain(
        self,
        fn: Callable[[torch.Tensor], torch.Tensor | None],
        batch_size: torch.Size,
        prefix: tuple[str, ...],
    ) -> Self:
        """``apply(fn)`` with nothing zipped: the common case, kept lean."""
        n = len(batch_size)
        first = batch_size[0] if n else 0
        own_dims = self.batch_dims
        out: dict[str, Value] = {}
        for key, value in self._items():
            if isinstance(value, TensorCollection):
                nested_size = batch_size + value.batch_size[own_dims:]
                out[key] = value._apply_plain(fn, nested_size, prefix + (key,))
                continue
            result = fn(value)
            if result is None:
                continue
            if n:
                shape = result.shape
                if (not shape or shape[0] != first) if n == 1 else shape[:n] != batch_size:
                    raise BatchMismatchError(prefix + (key,) if prefix else key, shape, batch_size)
            out[key] = result
        return self._new_like(out, batch_size, _result_device(self.device, out))

    def named_apply(
        self,
        fn: Callable[..., torch.Tensor | None],
        *others: TensorCollection,
        nested_keys: bool = False,
        batch_size: _batch.BatchSizeLike = None,
    ) -> Self:
        """Like :meth:`apply`, with the key as first argument: ``fn(key, tensor, *others)``.

        The key is the entry's own name, or its full nested tuple if ``nested_keys``.
        """
        target = self.batch_size if batch_size is None else _batch.as_batch_size(batch_size)
        if nested_keys:
            # Top-level entries get their string key, as keys(include_nested=True) lists them.
            return self._apply_nested(
                lambda path, value, *rest: fn(path if len(path) > 1 else path[0], value, *rest),
                others,
                target,
                (),
            )
        return self._apply_nested(
            lambda path, value, *rest: fn(path[-1], value, *rest), others, target, ()
        )

    def _apply_nested(
        self,
        fn: Callable[..., torch.Tensor | None],
        others: tuple[Any, ...],
        batch_size: torch.Size,
        prefix: tuple[str, ...],
    ) -> Self:
        nb = len(batch_size)
        out: dict[str, Value] = {}
        for key, value in self._items():
            paired = [other._entry(key) for other in others] if others else ()
            if isinstance(value, TensorCollection):
                nested_size = batch_size + value.batch_size[self.batch_dims :]
                out[key] = value._apply_nested(fn, tuple(paired), nested_size, prefix + (key,))
                continue
            result = fn(prefix + (key,), value, *paired)
            if result is None:
                continue
            if result.shape[:nb] != batch_size:
                path = prefix + (key,)
                raise BatchMismatchError(path if prefix else key, result.shape, batch_size)
            out[key] = result
        return self._new_like(out, batch_size, _result_device(self.device, out))

    def apply_(self, fn: Callable[..., torch.Tensor], *others: TensorCollection) -> Self:
        """Writes ``fn(tensor, *others)`` into every tensor in place; returns ``self``.

        The data is written, not the entries replaced, so this works on locked and
        memory-mapped collections (the results reach the files).
        """
        return self._apply_in_place(fn, others)

    def _apply_in_place(
        self, fn: Callable[..., torch.Tensor | None], others: tuple[Any, ...]
    ) -> Self:
        for key, value in self._items():
            paired = tuple(other._entry(key) for other in others)
            if isinstance(value, TensorCollection):
                value._apply_in_place(fn, paired)
                continue
            result = fn(value, *paired)
            if result is not None:
                value.copy_(result)
        return self

    # --- copies --------------------------------------------------------------------------

    def clone(self, recurse: bool = True) -> Self:
        """A copy; with ``recurse=False`` the new collection shares the tensors."""
        if recurse:
            values = {key: value.clone() for key, value in self._items()}
        else:  # new containers all the way down, sharing the tensors
            values = {
                key: value.clone(False) if isinstance(value, TensorCollection) else value
                for key, value in self._items()
            }
        return self._new_like(values, self.batch_size, self.device)

    def detach(self) -> Self:
        """Every tensor detached from the autograd graph (shares storage)."""
        values = {key: value.detach() for key, value in self._items()}
        return self._new_like(values, self.batch_size, self.device)

    def contiguous(self) -> Self:
        """Every tensor made contiguous (tensors already contiguous are kept)."""
        values = {key: value.contiguous() for key, value in self._items()}
        return self._new_like(values, self.batch_size, self.device)

    # --- in-place fills ------------------------------------------------------------------

    def fill_(self, key: Any, value: float | bool | torch.Tensor) -> Self:
        """Fills the entry ``key`` (a tensor, or every tensor of a nested collection)."""
        target = self.get(key, _MISSING)
        if target is _MISSING:
            raise self._missing_key(key)
        if isinstance(target, ElementwiseOps):
            target.apply_(lambda t: t.fill_(value))
        else:
            target.fill_(value)
        return self

    # --- comparisons and reductions ------------------------------------------------------

    def __eq__(self, other: object) -> Self:  # type: ignore[override]
        """Entry-by-entry ``==`` with a collection (same keys), a tensor or a number."""
        return self._compare(other, operator.eq)

    def __ne__(self, other: object) -> Self:  # type: ignore[override]
        """Entry-by-entry ``!=``; see ``__eq__``."""
        return self._compare(other, operator.ne)

    __hash__ = None  # type: ignore[assignment]

    def _compare(self, other: object, op: Callable[[Any, Any], Any]) -> Self:
        batch_size = self.batch_size
        if isinstance(other, TensorCollection):
            other_size = other.batch_size
            if other_size != batch_size:
                batch_size = _broadcast(batch_size, other_size)
            pairs = _same_keys(self, other)
            # A nested collection compares itself with its counterpart, so `op` fits both.
            out = {key: op(value, pairs[key]) for key, value in self._items()}
        elif isinstance(other, torch.Tensor):  # over the batch dims, as arithmetic takes it
            return self._pointwise(None, op, (other,), lock=False)  # type: ignore[attr-defined,no-any-return]
        elif isinstance(other, (int, float, bool, complex)):
            out = {key: op(value, other) for key, value in self._items()}
        else:
            return NotImplemented  # type: ignore[no-any-return]
        return self._new_like(out, batch_size, self.device)


_MISSING: Any = object()


def _broadcast(a: torch.Size, b: torch.Size) -> torch.Size:
    """The broadcast of two batch sizes, with torch's rules."""
    try:
        return torch.Size(torch.broadcast_shapes(a, b))  # type: ignore[no-untyped-call]
    except RuntimeError:
        msg = f"cannot broadcast batch sizes {list(a)} and {list(b)}"
        raise BatchSizeError(msg) from None


def _same_keys(a: TensorCollection, b: TensorCollection) -> Mapping[str, Value]:
    """``b``'s entries, after checking that ``a`` and ``b`` have the same keys."""
    mine = a._entries()
    theirs = b._entries()
    if mine.keys() != theirs.keys():
        only_a = sorted(mine.keys() - theirs.keys())
        only_b = sorted(theirs.keys() - mine.keys())
        msg = (
            f"cannot compare collections with different keys: only in the left one: "
            f"{only_a}, only in the right one: {only_b}"
        )
        raise KeyNotFoundError(msg)
    return theirs


def _result_device(device: torch.device | None, values: dict[str, Value]) -> torch.device | None:
    """Keeps the device only if every result is still there (``fn`` may move tensors)."""
    if device is None:
        return None
    for value in values.values():
        if value.device != device:
            return None
    return device
