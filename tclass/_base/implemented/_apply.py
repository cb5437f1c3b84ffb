"""Operations that act on each entry and keep the batch shape.

``apply`` and friends, copies (``clone``, ``detach``, ``contiguous``, ``as_tensor``,
``to_tensordict``), ``fill_`` and the equality comparisons ``==`` / ``!=`` (which also
compare Python values). Arithmetic, ``where`` and ``masked_fill`` are in ``_math.py`` and
``_operators.py``; ``all`` / ``any`` in ``_reductions.py``.
"""

from __future__ import annotations

import operator
import warnings
from collections.abc import Callable, Mapping, Sequence
from copy import copy as shallow_copy
from typing import TYPE_CHECKING, Any, Literal, TypedDict, TypeVar, cast, overload

import torch
from typing_extensions import Self, Unpack

from tclass._base._provided import ENGINE
from tclass._base.implemented._collection import TensorCollection
from tclass._base.implemented._grad_writes import writes_as_set_
from tclass._base.implemented._leaf_kernels import mismatched_operands
from tclass._base.implemented._leaf_rules import unnamed
from tclass._base.implemented._staged_writes import StagedWrites, empty_grad_view, write_refused
from tclass._core import _batch, _names
from tclass._core._jagged import leaf_shape
from tclass._core._names import DimName, Names
from tclass._core._records import field_names_of, storage_of
from tclass._core._unbatched import UnbatchedTensor
from tclass.errors import (
    BatchMismatchError,
    BatchSizeError,
    IgnoredKeywordWarning,
    InPlaceWriteError,
    KeyNotFoundError,
)

if TYPE_CHECKING:
    from tclass._base._tensordict_base import Value
    from tclass._engine._td import TensorDict

__all__ = ["ApplyOptions", "ApplyRules", "ApplyOps", "align_right"]

_Tensor = torch.Tensor
# What ``fn`` gets (and gives) where no option makes it see nested collections or a
# default: one tensor of this collection (and one of each other collection given).
LeafFn = Callable[[_Tensor], _Tensor | None]
PairFn = Callable[[_Tensor, _Tensor], _Tensor | None]
# Otherwise (more others, a default, call_on_nested, is_leaf): values of any kind.
AnyFn = Callable[..., _Tensor | TensorCollection | None]
_O = TypeVar("_O", bound=Mapping[str, Any])
_C = TypeVar("_C", bound=TensorCollection)


def _refuse_grad_leaf_fill(key: Any, target: Any) -> None:
    """``fill_`` of a leaf tensor that requires grad (a parameter) under grad mode, which
    autograd refuses: an ``InPlaceWriteError`` (a ``RuntimeError``, as torch's, and the
    ``ValueError`` the peer's lazy stacks raise) naming the entry, found before any
    tensor of a nested collection is filled."""
    if not torch.is_grad_enabled():
        return
    if isinstance(target, _Tensor):
        leaves: list[Any] = [target]
    elif isinstance(target, TensorCollection):
        leaves = list(target.values(True, True))
    else:
        return
    if any(isinstance(t, _Tensor) and t.requires_grad and t.is_leaf for t in leaves):
        msg = (
            f"Failed to update {key!r} in place (fill_): it holds a leaf tensor that "
            "requires grad (a parameter), which autograd does not let an in-place "
            "operation change; fill under torch.no_grad() or fill the tensor's .data"
        )
        raise InPlaceWriteError(msg)


def _known_options(method: str, options: _O, known: type[_O]) -> _O:
    """``options`` without the keywords ``method`` does not know, which are ignored with a
    ``FutureWarning``, as the peer ignores them (its 0.17 raises a ``TypeError``)."""
    names = known.__required_keys__ | known.__optional_keys__  # type: ignore[attr-defined]
    unknown = [key for key in options if key not in names]
    if not unknown:
        return options
    listed = ", ".join(repr(key) for key in unknown)
    warnings.warn(
        IgnoredKeywordWarning(
            f"{method}() ignores the keyword argument(s) {listed}: it takes "
            f"{', '.join(sorted(names))}. Starting with TensorDict 0.17, unknown keyword "
            "arguments raise a TypeError; remove them."
        ),
        stacklevel=3,
    )
    return cast(_O, {key: value for key, value in options.items() if key in names})


def _prefixed(fn: AnyFn, prefix: tuple[str, ...]) -> AnyFn:
    """``fn`` called with ``prefix`` before each nested key, as the peer's ``prefix=``."""

    def call(key: str | tuple[str, ...], *rest: Any) -> Any:
        return fn(prefix + (key if isinstance(key, tuple) else (key,)), *rest)

    return call


def align_right(tensor: torch.Tensor, ndim: int) -> torch.Tensor:
    """``tensor`` with size-1 dims appended up to ``ndim`` dims (a view)."""
    missing = ndim - tensor.ndim
    if missing <= 0:
        return tensor
    return tensor.reshape(tensor.shape + (1,) * missing)


class ApplyOps(TensorCollection):
    """Entry-by-entry operations shared by every collection."""

    __slots__ = ()

    # --- apply ---------------------------------------------------------------------------

    @overload
    def apply(self, fn: LeafFn, **options: Unpack[TensorApplyOptions]) -> Self: ...
    @overload
    def apply(
        self, fn: PairFn, other: TensorCollection, /, **options: Unpack[TensorApplyOptions]
    ) -> Self: ...
    @overload
    def apply(
        self, fn: AnyFn, *others: TensorCollection, **options: Unpack[ApplyOptions]
    ) -> Self: ...
    def apply(self, fn: AnyFn, *others: TensorCollection, **options: Unpack[ApplyOptions]) -> Self:
        """A new collection holding ``fn(tensor, *other_tensors)`` for every tensor.

        ``others`` are collections with the same keys, whose tensors are passed alongside
        (``default`` stands in for a key one of them lacks). An entry for which ``fn``
        returns ``None`` is left out, and so is a nested collection left empty (with
        ``filter_empty=True`` also one that was empty; ``False`` keeps them); when
        nothing is left, the result is ``None``, as in the peer (typed ``Self``: the case
        only arises from an ``fn`` that returns ``None`` for everything). Results must keep the
        batch dims, unless ``batch_size`` gives the new batch size. See
        :class:`ApplyOptions` for ``device``, ``names``, ``inplace``, ``propagate_lock``,
        ``call_on_nested``, ``is_leaf`` and ``out``.

        For type checkers ``fn`` takes tensors (one, or two with one ``other``) unless
        ``default``, ``call_on_nested`` or ``is_leaf`` is given (then it may get other
        values: nested collections, the default).

        The peer's ``named=True`` makes it :meth:`named_apply` (``fn(key, tensor,
        *others)``, with its ``nested_keys`` and ``prefix``); without it, those two are
        ignored, as the peer's.
        """
        given = cast(dict[str, Any], options)
        if "named" in given or "nested_keys" in given or "prefix" in given:
            return self._apply_named_keywords(fn, others, given)
        return self._apply_all(fn, others, _known_options("apply", options, ApplyOptions))

    def _apply_named_keywords(
        self, fn: AnyFn, others: tuple[TensorCollection, ...], given: dict[str, Any]
    ) -> Self:
        """``apply`` given the peer's ``named`` / ``nested_keys`` / ``prefix``, which it
        passes on to its walker: ``named_apply`` when ``named``, else plain ``apply``."""
        options = dict(given)
        named, nested_keys = options.pop("named", False), options.pop("nested_keys", False)
        if not named:
            options.pop("prefix", None)
            return self.apply(fn, *others, **options)
        return self.named_apply(fn, *others, nested_keys=nested_keys, **options)

    def _apply_all(
        self, fn: Callable[..., Any], others: tuple[TensorCollection, ...], options: ApplyOptions
    ) -> Self:
        """:meth:`apply`'s work (a record and a lazy stack answer it their way)."""
        if not options:  # the common case, kept lean
            if others:
                result = self._apply_nested(_with_leaf(fn), others, self.batch_size, (), None)
            else:
                result = self._apply_plain(fn, self.batch_size, ())
            if not result._entries() and self._key_names():
                return None  # type: ignore[return-value]
            return result
        if options.get("inplace") and options.keys() <= _IN_PLACE_WALK:
            watched = _Watched(fn)
            self._apply_in_place(watched, others)
            if watched.answered or not self._key_names() or _keeps_entries(self):
                return self
            return None  # type: ignore[return-value]  # as apply(fn) without inplace
        return self._apply_with(_with_leaf(fn), others, options)  # type: ignore[return-value]

    def _apply_with(
        self,
        keyed: Callable[..., torch.Tensor | None],
        others: tuple[Any, ...],
        options: ApplyOptions,
    ) -> Self | None:
        """``apply`` with options; ``keyed(path, tensor, *others)``."""
        in_place = bool(options.get("inplace"))
        if in_place:  # named_apply: the results written into the tensors
            options = {**options, "inplace": False, "propagate_lock": False, "out": self}
        size = options.get("batch_size")
        target = self.batch_size if size is None else _batch.as_batch_size(size)
        rules = _Rules(options)
        result = self._apply_nested(keyed, others, target, (), rules)
        filter_empty = options.get("filter_empty")
        if filter_empty is not False and not result._key_names():
            if filter_empty or self._key_names():
                return None
        if "device" in options:
            device = options["device"]
            result = result.clear_device_() if device is None else result.to(device)
        if "names" in options:
            result._rename_all(_names.as_names(options["names"], len(target)))
        elif size is not None:  # as the peer: a new batch size comes without names
            result._rename_all(None)
        if options.get("propagate_lock") and self.is_locked:
            result.lock_()
        out = options.get("out")
        if out is not None:
            # out=: its entries become the results (their dtypes too), as the peer's; in
            # place, or into a locked out (a memory-mapped buffer, which the peer refuses):
            # the results written into its tensors.
            if in_place or out.is_locked:
                with writes_as_set_():
                    out.update_(result)
            else:
                out.update(result)
            return cast(Self, out)
        return result

    def _apply_plain(
        self,
        fn: Callable[[torch.Tensor], torch.Tensor | None],
        batch_size: torch.Size,
        prefix: tuple[str, ...],
    ) -> Self:
        """``apply(fn)`` with nothing zipped: the common case, kept lean. A nested
        collection that ``fn`` leaves empty is left out."""
        n = len(batch_size)
        first = batch_size[0] if n else 0
        own_dims = self.batch_dims
        out: dict[str, Value] = {}
        for key, value in self._items():
            if isinstance(value, TensorCollection):
                nested_size = batch_size + value.batch_size[own_dims:]
                sub = value._apply_plain(fn, nested_size, prefix + (key,))
                if value._is_leaf_node or sub._key_names() or not value._key_names():
                    out[key] = sub
                continue
            result: Any = fn(value)  # fn may give a Python value
            if result is None:
                continue
            if not isinstance(result, (torch.Tensor, TensorCollection)):
                # a Python value (a number, a string, a list): stored as set() would
                result = ENGINE.stored_value(result, batch_size, self.device)
            if n:
                try:
                    shape = result.shape
                except RuntimeError:  # a strided nested tensor: no shape, ragged dims
                    shape = leaf_shape(result)
                if (not shape or shape[0] != first) if n == 1 else shape[:n] != batch_size:
                    if result.__class__ is not UnbatchedTensor:
                        path = prefix + (key,) if prefix else key
                        raise BatchMismatchError(path, shape, batch_size)
                    result = result._with_batch_size(batch_size)
            out[key] = result
        return _named_from_nested(self, out, batch_size)

    @overload
    def named_apply(
        self,
        fn: Callable[[str, _Tensor], _Tensor | None],
        *,
        nested_keys: Literal[False] = False,
        batch_size: _batch.BatchSizeLike = None,
        **options: Unpack[TensorApplyRules],
    ) -> Self: ...
    @overload
    def named_apply(
        self,
        fn: Callable[[str | tuple[str, ...], _Tensor], _Tensor | None],
        *,
        nested_keys: Literal[True],
        batch_size: _batch.BatchSizeLike = None,
        **options: Unpack[TensorApplyRules],
    ) -> Self: ...
    @overload
    def named_apply(
        self,
        fn: Callable[[str, _Tensor, _Tensor], _Tensor | None],
        other: TensorCollection,
        /,
        *,
        nested_keys: Literal[False] = False,
        batch_size: _batch.BatchSizeLike = None,
        **options: Unpack[TensorApplyRules],
    ) -> Self: ...
    @overload
    def named_apply(
        self,
        fn: Callable[[str | tuple[str, ...], _Tensor, _Tensor], _Tensor | None],
        other: TensorCollection,
        /,
        *,
        nested_keys: Literal[True],
        batch_size: _batch.BatchSizeLike = None,
        **options: Unpack[TensorApplyRules],
    ) -> Self: ...
    @overload
    def named_apply(
        self,
        fn: AnyFn,
        *others: TensorCollection,
        nested_keys: bool = False,
        batch_size: _batch.BatchSizeLike = None,
        **options: Unpack[ApplyRules],
    ) -> Self: ...
    def named_apply(
        self,
        fn: AnyFn,
        *others: TensorCollection,
        nested_keys: bool = False,
        batch_size: _batch.BatchSizeLike = None,
        **options: Unpack[ApplyRules],
    ) -> Self:
        """Like :meth:`apply`, with the key as first argument: ``fn(key, tensor, *others)``
        (and :meth:`apply`'s keywords, :class:`ApplyRules`).

        The key is the entry's own name, or its full nested tuple if ``nested_keys``
        (a top-level entry's is its string, as ``keys(include_nested=True)`` lists it).
        As with :meth:`apply`, the result is ``None`` when ``fn`` drops every entry.
        With ``nested_keys``, the peer's ``prefix=`` (a tuple of strings) is put before
        every key (``fn(("root", "a"), tensor)``).
        """
        prefix = cast(dict[str, Any], options).pop("prefix", None)
        if prefix and nested_keys:
            fn = _prefixed(fn, tuple(prefix))
        known = _known_options("named_apply", options, ApplyRules)
        return self._named_apply_all(fn, others, nested_keys, batch_size, known)

    def _named_apply_all(
        self,
        fn: Callable[..., Any],
        others: tuple[TensorCollection, ...],
        nested_keys: bool,
        batch_size: _batch.BatchSizeLike,
        options: ApplyRules,
    ) -> Self:
        """:meth:`named_apply`'s work (a record and a lazy stack answer it their way)."""
        target = self.batch_size if batch_size is None else _batch.as_batch_size(batch_size)
        rules = None if batch_size is None else _Rules({"batch_size": target})
        if nested_keys:
            keyed: Callable[..., Any] = lambda path, value, *rest: fn(  # noqa: E731
                path if len(path) > 1 else path[0], value, *rest
            )
        else:
            keyed = lambda path, value, *rest: fn(path[-1], value, *rest)  # noqa: E731
        if options:
            full = cast(ApplyOptions, {**options})
            if batch_size is not None:
                full["batch_size"] = target
            return self._apply_with(keyed, others, full)  # type: ignore[return-value]
        result = self._apply_nested(keyed, others, target, (), rules)
        if not result._entries() and self._key_names():
            return None  # type: ignore[return-value]  # fn dropped every entry, as apply
        if batch_size is not None:  # as the peer: a new batch size comes without names
            result._rename_all(None)
        return result

    def _apply_nested(
        self,
        fn: Callable[..., torch.Tensor | None],
        others: tuple[Any, ...],
        batch_size: torch.Size,
        prefix: tuple[str, ...],
        rules: _Rules | None,
    ) -> Self:
        """``fn(path, value, *paired)`` over the entries, following ``rules`` (the
        options of :meth:`apply`; None: the defaults)."""
        nb = len(batch_size)
        out: dict[str, Value] = {}
        for key, value in self._items():
            paired = [_paired_entry(other, key, rules) for other in others] if others else ()
            path = prefix + (key,)
            if isinstance(value, TensorCollection) and not (rules and rules.leaf(value)):
                nested_size = (
                    batch_size
                    if rules is not None and rules.fixed_batch
                    else batch_size + value.batch_size[self.batch_dims :]
                )
                if not value._applies_at(nested_size):
                    continue  # per-element values fn cannot follow: left out, as the peer
                sub = value._apply_nested(fn, tuple(paired), nested_size, path, rules)
                if _kept(sub, value, rules):
                    out[key] = sub
                continue
            result: Any = fn(path, value, *paired)  # a Python value, from a value node
            if result is None:
                continue
            if not isinstance(result, (torch.Tensor, TensorCollection)):
                # fn called on a Python-value node gave a Python value: stored as set() would
                result = ENGINE.stored_value(result, batch_size, self.device)
            shape = leaf_shape(result) if isinstance(result, torch.Tensor) else result.shape
            if shape[:nb] != batch_size:
                if result.__class__ is not UnbatchedTensor:
                    raise BatchMismatchError(path if prefix else key, shape, batch_size)
                result = result._with_batch_size(batch_size)
            out[key] = result
        return _named_from_nested(self, out, batch_size)

    def _applies_at(self, batch_size: torch.Size) -> bool:
        """Whether ``apply`` with a new batch size keeps this nested collection (a
        per-element value stack cannot follow the batch dims ``fn`` reshapes)."""
        return True

    @overload
    def apply_(self, fn: LeafFn, /, **options: Unpack[TensorApplyRules]) -> Self: ...
    @overload
    def apply_(
        self, fn: PairFn, other: TensorCollection, /, **options: Unpack[TensorApplyRules]
    ) -> Self: ...
    @overload
    def apply_(
        self, fn: AnyFn, *others: TensorCollection, **options: Unpack[ApplyRules]
    ) -> Self: ...
    def apply_(self, fn: AnyFn, *others: TensorCollection, **options: Unpack[ApplyRules]) -> Self:
        """Writes ``fn(tensor, *others)`` into every tensor in place (a ``None`` result
        leaves the tensor alone); returns ``self``.

        The data is written, not the entries replaced, so this works on locked and
        memory-mapped collections (the results reach the files). ``options`` are
        :meth:`apply`'s (``default``, ``call_on_nested``, ``is_leaf``,
        ``num_threads``...), as the peer's ``apply(fn, *others, inplace=True, ...)``.
        """
        if options.keys() <= _IN_PLACE_WALK:
            return self._apply_in_place(cast(Callable[..., torch.Tensor | None], fn), others)
        self._apply_all(fn, others, cast(ApplyOptions, {**options, "inplace": True}))
        return self

    def _apply_in_place(
        self, fn: Callable[..., torch.Tensor | None], others: tuple[Any, ...]
    ) -> Self:
        """``apply_``'s walk, all or nothing: every result is computed and checked to
        fit its tensor first, then all are written (a result that fits as it is goes in
        as it is); a function that raises or a result that cannot be written leaves
        every tensor as it was."""
        staged = StagedWrites()
        try:
            self._stage_in_place(fn, others, staged)
            staged.write()
        finally:
            staged.close()
        return self

    def _stage_in_place(
        self,
        fn: Callable[..., torch.Tensor | None],
        others: tuple[Any, ...],
        staged: StagedWrites,
    ) -> None:
        """``_apply_in_place``'s first pass: the results added to ``staged``
        (collections with their own in-place rules override it, and add a deferred
        write of the results they staged by those rules)."""
        for key, value in self._items():
            paired = tuple(other._entry(key) for other in others)
            if isinstance(value, TensorCollection):
                value._stage_in_place(fn, paired, staged)
                continue
            staged.before(value)
            result: Any = fn(value, *paired)
            if result is None or result is value:  # (the tensor itself: nothing to write)
                continue
            if not isinstance(result, (torch.Tensor, TensorCollection)):
                result = _python_result(key, value, result, self.batch_size)
            if isinstance(result, torch.Tensor) and result.shape != value.shape:
                try:
                    result.expand(value.shape)  # copy_ broadcasts the result, no further
                except RuntimeError as error:
                    if _batch.writes_nothing(value, result) and not empty_grad_view(value):
                        continue  # no element to write (a parameter holding none, as the peer)
                    raise write_refused(key, value, error) from None
            staged.add(key, value, result)

    # --- copies --------------------------------------------------------------------------

    def clone(self, recurse: bool = True) -> Self:
        """A copy; with ``recurse=False`` the new collection shares the tensors."""
        if recurse:
            values = {key: value.clone() for key, value in self._items()}
        else:  # new containers all the way down, sharing the tensors
            values = {
                key: value._shallow_clone() if isinstance(value, TensorCollection) else value
                for key, value in self._items()
            }
        return self._new_like(values, self.batch_size, self.device)

    def __copy__(self) -> Self:
        """``copy.copy`` and ``copy()``: ``clone(recurse=False)``, as the peer's (new
        collections all the way down, nested ones and Python-value nodes included, over
        the same tensors); a node of Python values copies its ``dict`` / ``list`` /
        ``tuple`` containers too, as the peer's ``copy()`` of one (``_shallow_clone``)."""
        return self._shallow_clone()

    def __deepcopy__(self, memo: dict[int, Any]) -> Self:
        """``copy.deepcopy``: ``clone()``, as the peer's (the tensors copied; the copy is
        not locked, whatever the source)."""
        return self.clone()

    def _shallow_clone(self) -> Self:
        """What a parent's ``clone(recurse=False)`` holds in this one's place: its own
        ``clone(False)``; a node of Python values (engine) copies their ``dict`` /
        ``list`` / ``tuple`` containers too, as the peer's collections do (its ``tree_map``
        copy), so that editing a shallow copy's dict leaves the source's alone (the
        node's own ``clone(False)`` shares the value, as the peer's)."""
        return self.clone(False)

    def detach(self) -> Self:
        """Every tensor detached from the autograd graph (shares storage); the lock
        carries over, as in the peer (and only it: the nested results of an unlocked one
        are unlocked, though a nested source is locked, a TensorDictParams's TensorDict)."""
        values = {key: value.detach() for key, value in self._items()}
        out = self._new_like(values, self.batch_size, self.device)
        if self.is_locked:
            return out.lock_()
        if any(isinstance(v, TensorCollection) and v.is_locked for v in values.values()):
            out.unlock_()
        return out

    def contiguous(self, *, canonical: bool = False, inplace: bool = False) -> Self:
        """Every tensor made contiguous (tensors already contiguous are kept; with
        ``canonical``, also copied unless their strides are the row-major ones). With
        ``inplace``, the entries of this collection are replaced and ``self`` returned."""
        values = {
            key: value.contiguous(canonical=canonical)
            if isinstance(value, TensorCollection)
            else _contiguous(value, canonical)
            for key, value in self._items()
        }
        out = self._new_like(values, self.batch_size, self.device)
        if inplace:
            self._become(out)
            return self
        return out

    def is_contiguous(self) -> bool:
        """Whether every tensor is contiguous; a record's storage answers for it (over a
        lazy stack: False, as the peer)."""
        storage = storage_of(self)
        if storage is not self:
            return bool(storage.is_contiguous())
        return all(
            value.is_contiguous()
            for _, value in self._items()  # collections: theirs
        )

    def as_tensor(self) -> Self:
        """A collection whose leaves are converted with their own ``as_tensor()`` where
        they have one (no torch tensor does: the result holds the same tensors); the
        lock and this collection's names carry over (none taken from nested ones)."""
        out = self.apply(_leaf_as_tensor, propagate_lock=True)
        if out._dim_names != self._dim_names:  # apply took them from a nested result
            out._assign_names(self._dim_names)
        return out

    def to_tensordict(self, *, retain_none: bool | None = None) -> TensorDict:
        """A TensorDict copy (tensors cloned), its nested collections TensorDicts too,
        recursively (a lazy stack's dense stack, a record's storage), as the peer's;
        ``retain_none`` is for records (absent fields kept as ``None``)."""
        values = {
            key: value.to_tensordict(retain_none=retain_none)
            if isinstance(value, TensorCollection) and not value._is_value_node
            else value.clone()
            for key, value in self._items()
        }
        names = names_from_nested(self, values, self.batch_dims)  # (as the peer's)
        out = cast("TensorDict", self._new_like(values, self.batch_size, self.device))
        if names is not None:
            out._rename_all(names)
        return out

    # --- in-place fills ------------------------------------------------------------------

    def fill_(self, key: Any, value: float | bool | torch.Tensor) -> Self:
        """Fills the entry ``key`` (a tensor, or every tensor of a nested collection)."""
        owner, name = cast(Any, self)._holder_of(key)  # (a mixin of KeyOps)
        if owner is not self:  # filled by what holds it (a record checks its fields)
            owner.fill_(name, value)
            return self
        target = self.get(key, _MISSING)
        if target is _MISSING:
            raise self._missing_key(key)
        _refuse_grad_leaf_fill(key, target)
        if isinstance(target, ApplyOps):
            target.apply_(lambda t: t.fill_(value))
        else:
            target.fill_(value)
        return self

    # --- comparisons and reductions ------------------------------------------------------

    def __eq__(self, other: object) -> Self:  # type: ignore[override]
        """Entry-by-entry ``==`` with a collection or a dict (same keys; a dict's values
        may be tensors, numbers or dicts), a tensor or a number."""
        return unnamed(self._compare(other, operator.eq), other)

    def __ne__(self, other: object) -> Self:  # type: ignore[override]
        """Entry-by-entry ``!=``; see ``__eq__``."""
        return unnamed(self._compare(other, operator.ne), other)

    __hash__ = None  # type: ignore[assignment]

    def _compare(self, other: object, op: Callable[[Any, Any], Any]) -> Self:
        batch_size = self.batch_size
        if isinstance(other, TensorCollection):
            other_size = other.batch_size
            if other_size != batch_size:
                batch_size = _broadcast(batch_size, other_size)
            mine = self._entries()
            pairs = other._entries()
            if len(mine) != len(pairs):
                mine, pairs = _unset_fields_left_out(self, other, mine, pairs)
                _same_keys(mine, pairs)
            # A nested collection compares itself with its counterpart, so `op` fits both;
            # two plain tensors go to the tensor method (no Python operator wrapper).
            leaf_op = _TENSOR_COMPARISONS.get(op, op)
            out = {}
            try:  # as many keys on both sides: a key of mine missing there is a KeyError
                for key, value in mine.items():
                    piece = pairs[key]
                    if type(value) is _Tensor and type(piece) is _Tensor:  # per leaf
                        out[key] = leaf_op(value, piece)
                    else:
                        out[key] = _compared(op, value, piece)
            except KeyError:
                _same_keys(mine, pairs)  # names the keys on each side, if they differ
                raise  # (else a nested collection's own error)
            except RuntimeError as error:  # entries whose shapes do not broadcast: named
                problem = mismatched_operands(self, (other,), op, error)
                if problem is None:
                    raise
                raise problem from error
        elif isinstance(other, torch.Tensor):  # over the batch dims, as arithmetic takes it
            return self._pointwise(None, op, (other,), lock=False)  # type: ignore[attr-defined,no-any-return]
        elif isinstance(other, (int, float, bool, complex)):
            # Python values are kept, not compared with the number: as with a tensor (and
            # the peer), so `(td == 0).all()` looks at the tensors.
            out = {
                key: op(value, other)
                if value.__class__ is _Tensor or not getattr(value, "_is_value_node", False)
                else value
                for key, value in self._items()
            }
        elif isinstance(other, Mapping):  # td == td.to_dict(): key by key, as the peer
            mine = self._entries()
            pairs = _same_keys(mine, other)
            out = {key: op(value, pairs[key]) for key, value in mine.items()}
        else:
            return NotImplemented  # type: ignore[no-any-return]
        return self._new_like(out, batch_size, self.device)


_MISSING: Any = object()
# ``==`` and ``!=`` on two plain tensors, as the tensor methods they end in.
_TENSOR_COMPARISONS: dict[Callable[[Any, Any], Any], Callable[[Any, Any], Any]] = {
    operator.eq: _Tensor.eq,
    operator.ne: _Tensor.ne,
}


def _compared(op: Callable[[Any, Any], Any], mine: Any, theirs: Any) -> Any:
    """``op(mine, theirs)``; a Python value facing a tensor is kept, not compared (as a
    number or tensor operand leaves Python values, and as the peer)."""
    if isinstance(mine, torch.Tensor) or isinstance(theirs, torch.Tensor):
        if getattr(mine, "_is_value_node", False):
            return mine
        if getattr(theirs, "_is_value_node", False):
            return theirs
    return op(mine, theirs)


def _contiguous(tensor: torch.Tensor, canonical: bool) -> torch.Tensor:
    """``tensor.contiguous()``; with ``canonical``, a copy unless its strides are the
    row-major strides of its shape (``is_contiguous`` ignores the strides of size-1 dims)."""
    if canonical and tensor.stride() != _batch.row_major_strides(tensor.shape):
        return tensor.clone(memory_format=torch.contiguous_format)
    return tensor.contiguous()


class TensorApplyRules(TypedDict, total=False):
    """The keywords of :class:`ApplyRules` that leave ``fn`` getting tensors only.

    ``num_threads`` is accepted for the peer's code, which calls ``fn`` from that many
    threads: tclass calls it in the calling thread, leaf after leaf, so the results and
    the exception ``fn`` raises (propagated as it is) are the same, whatever the value.
    """

    device: Any
    names: Sequence[DimName] | None
    inplace: bool
    filter_empty: bool | None
    propagate_lock: bool
    out: Any
    num_threads: int


class _Watched:
    """``fn``, noting whether it returned anything but ``None``: ``apply(fn, inplace=True)``
    returns ``None`` where ``fn`` answered ``None`` for every tensor and nothing else is
    left, as ``apply(fn)`` does (and the peer's in-place one)."""

    __slots__ = ("answered", "fn")

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn, self.answered = fn, False

    def __call__(self, *args: Any) -> Any:
        result = self.fn(*args)
        if result is not None:
            self.answered = True
        return result


def _keeps_entries(node: TensorCollection) -> bool:
    """Whether ``apply`` of a function answering ``None`` everywhere keeps an entry of
    ``node``: a Python value, or a nested collection that was empty."""
    for _, value in node._items():
        if isinstance(value, TensorCollection) and (
            value._is_leaf_node or not value._key_names() or _keeps_entries(value)
        ):
            return True
    return False


# The options an in-place apply takes that leave its walk as it is (leaf by leaf, no
# defaults, no calls on nested collections).
_IN_PLACE_WALK = frozenset({"inplace", "num_threads", "propagate_lock"})


class ApplyRules(TensorApplyRules, total=False):
    """The keywords of :meth:`ApplyOps.named_apply` (and, with ``batch_size``, of
    :class:`ApplyOptions`), as the peer names them.

    ``device``: the result's device (its tensors are moved there; ``None`` records
    none). ``names``: the result's dim names. ``inplace``: write the results into the
    existing tensors (see ``apply_``). ``default``: what stands in for a key an ``other``
    lacks. ``filter_empty``: ``True`` also drops nested collections that were empty,
    ``False`` keeps those ``fn`` emptied (and never gives ``None``). ``propagate_lock``:
    lock the result if this collection is locked. ``call_on_nested``: call ``fn`` on
    nested collections themselves instead of their tensors. ``is_leaf``: the types of
    nested collections ``fn`` is called on. ``out``: a collection to write the results
    into.
    """

    default: Any
    call_on_nested: bool
    is_leaf: Callable[[type], bool] | None


class TensorApplyOptions(TensorApplyRules, total=False):
    """The keywords of :class:`ApplyOptions` that leave ``fn`` getting tensors only."""

    batch_size: _batch.BatchSizeLike


class ApplyOptions(ApplyRules, total=False):
    """The keywords of :meth:`ApplyOps.apply`: :class:`ApplyRules` and
    ``batch_size``, the results' batch size when ``fn`` changes it."""

    batch_size: _batch.BatchSizeLike


class _Rules:
    """The options of an ``apply`` call that change how the tree is walked."""

    __slots__ = ("default", "filter_empty", "call_on_nested", "is_leaf", "fixed_batch")

    def __init__(self, options: ApplyOptions) -> None:
        # As the peer: a batch size given is the batch size of the nested results too.
        self.fixed_batch = options.get("batch_size") is not None
        self.default = options.get("default", _MISSING)
        self.filter_empty = options.get("filter_empty")
        self.call_on_nested = options.get("call_on_nested", False)
        self.is_leaf = options.get("is_leaf")

    def leaf(self, value: TensorCollection) -> bool:
        """Whether ``fn`` is called on the nested collection ``value`` itself: with
        ``call_on_nested``, or when ``is_leaf`` says its type is a leaf (a Python-value
        node too, as the peer's ``is_leaf=is_leaf_nontensor``)."""
        if self.call_on_nested:
            return True
        return self.is_leaf is not None and self.is_leaf(type(value))


def _with_leaf(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn(value, *paired)`` as ``_apply`` calls it (with the path first)."""
    return lambda path, value, *rest: fn(value, *rest)


def _paired_entry(other: Any, key: str, rules: _Rules | None) -> Any:
    if rules is None or rules.default is _MISSING:
        return other._entry(key)
    if not isinstance(other, TensorCollection):  # the default, standing in for a subtree
        return other
    return other.get(key, rules.default)


def _kept(result: TensorCollection, source: TensorCollection, rules: _Rules | None) -> bool:
    """Whether a nested result stays in the output: not when it is empty and either
    ``fn`` emptied it or ``filter_empty=True`` (``filter_empty=False`` keeps them all)."""
    if source._is_leaf_node or result._key_names():
        return True
    filter_empty = None if rules is None else rules.filter_empty
    if filter_empty is False:
        return True
    return not filter_empty and not source._key_names()


def _broadcast(a: torch.Size, b: torch.Size) -> torch.Size:
    """The broadcast of two batch sizes, with torch's rules."""
    try:
        return torch.Size(torch.broadcast_shapes(a, b))  # type: ignore[no-untyped-call]
    except RuntimeError:
        msg = f"cannot broadcast batch sizes {list(a)} and {list(b)}"
        raise BatchSizeError(msg) from None


def _named_from_nested(source: _C, out: dict[str, Any], batch_size: torch.Size) -> _C:
    """The result of ``apply`` built from ``out`` (see :func:`names_from_nested`)."""
    names = names_from_nested(source, out, len(batch_size))
    result = source._new_like(out, batch_size, _result_device(source.device, out))
    if names is not None:
        result._rename_all(names)
    return result


def names_from_nested(source: TensorCollection, out: dict[str, Any], n: int) -> Names:
    """The names a result built from ``out`` (its entries: ``apply``, ``to_tensordict``,
    ``filter_non_tensor_data``) takes over the unnamed ``source``: those of the first
    nested result that names one of the ``n`` dims they share, as a TensorDict built
    from those entries does (the peer's results set each entry so). The other nested
    results in ``out`` become copies named so too. None when nothing is taken: a named
    ``source`` (the result carries its names), no nested names, or a nested result that
    names a shared dim otherwise (where the peer raises inside itself)."""
    own = source._dim_names
    if not n or (own is not None and any(name is not None for name in own)):
        return None
    nested = {
        key: value
        for key, value in out.items()
        if isinstance(value, TensorCollection) and not value._is_leaf_node
    }
    found = [value._dim_names for value in nested.values()]
    wanted = next(
        (names[:n] for names in found if names and any(x is not None for x in names[:n])), None
    )
    if wanted is None:
        return None
    for names in found:
        if names is not None and any(b not in (None, a) for a, b in zip(wanted, names[:n])):
            return None  # a nested result names a shared dim otherwise: none taken
    for key, value in nested.items():
        names = value._dim_names
        if names is None or names[:n] != wanted:
            copy = shallow_copy(value)  # (fn may give back a collection of the caller's)
            extra = (None,) * (value.batch_dims - n) if names is None else names[n:]
            copy._rename_all(wanted + extra)
            out[key] = copy
    return wanted


def _python_result(
    key: str, value: torch.Tensor, result: object, batch_size: torch.Size
) -> torch.Tensor:
    """A Python value ``fn`` gave ``apply(inplace=True)``: a number or list becomes a
    tensor as ``set`` makes one (written if it starts with the batch size, as the
    peer's); anything else, or one of another batch size, is refused."""
    if isinstance(result, (bool, int, float, complex, list, tuple)):
        try:
            tensor = torch.as_tensor(result, device=value.device)
        except (TypeError, ValueError, RuntimeError):
            tensor = None
        if tensor is not None and tensor.shape[: len(batch_size)] == batch_size:
            return tensor
    raise InPlaceWriteError(
        f"Failed to update {key!r} in place (apply(inplace=True)): fn returned "
        f"{type(result).__name__} {result!r:.60}, not a tensor whose shape starts with the "
        f"batch size {list(batch_size)}; return a tensor of the entry's shape "
        "(torch.full_like(x, value)) or use inplace=False"
    )


def _unset_fields_left_out(
    a: TensorCollection, b: TensorCollection, mine: Mapping[str, Any], pairs: Mapping[str, Any]
) -> tuple[Mapping[str, Any], Mapping[str, Any]]:
    """The entries to compare when one side is a record: a field that is not set (it
    reads None, and is no entry) matches a None value on the other side (what
    ``record.to_dict()`` and ``to_tensordict()`` give for it), as in the peer."""
    fields_a, fields_b = field_names_of(a), field_names_of(b)
    if not (fields_a or fields_b):
        return mine, pairs
    mine = {k: v for k, v in mine.items() if not (k in fields_b and k not in pairs and _none(v))}
    pairs = {k: v for k, v in pairs.items() if not (k in fields_a and k not in mine and _none(v))}
    return mine, pairs


def _none(value: Any) -> bool:
    """Whether ``value`` is a Python value node holding None."""
    return bool(getattr(value, "_is_value_node", False)) and value.data is None


def _same_keys(mine: Mapping[str, Any], theirs: Mapping[str, Any]) -> Mapping[str, Any]:
    """``theirs``, after checking that both entry mappings have the same keys."""
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


def _leaf_as_tensor(tensor: torch.Tensor) -> torch.Tensor:
    if tensor.__class__ is UnbatchedTensor:  # its payload has no batch dims: kept, as the peer
        return tensor
    convert = getattr(tensor, "as_tensor", None)
    return tensor if convert is None else cast(torch.Tensor, convert())
