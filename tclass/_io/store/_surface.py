"""What a ``PersistentTensorDict`` answers beyond reading and writing its file: locking
(and ``with ptd.lock_(): ...`` blocks), the names of its batch dims (kept in memory, as
the peer keeps them: a file records none), its device (``cpu``/``cuda``,
``auto_device_``, ``clear_device_``), and the methods that make a new collection
(``select``, ``exclude``, ``replace``, ``rename_keys``), which read the entries they keep
into a plain TensorDict and leave the file unchanged. ``RowsInMemory``, shared with the
views of a store's rows: pieces read into memory, in-place math read, worked on and
written back."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, cast

import torch
from typing_extensions import Self

from tclass._base.implemented._collection import TensorCollection
from tclass._base.implemented._leaf_walk import Gather
from tclass._base.implemented._lock_blocks import LockBlocks
from tclass._base.implemented._shape_ops import ShapeOps
from tclass._base.implemented._staged_writes import StagedWrites
from tclass._core import _batch, _keys, _names
from tclass._core._device import DeviceLike, as_device
from tclass._core._names import DimName, Names
from tclass._core._options import OPTIONS
from tclass._core._records import storage_of
from tclass._engine._td import TensorDict
from tclass._io.store._protocol import is_group
from tclass._io.store._staged import applied, same_keys, stage_in_place
from tclass.errors import InPlaceKeysError, UnsupportedError

if TYPE_CHECKING:
    from tclass._io.store._persistent import PersistentTensorDict

__all__ = ["RowsInMemory", "StoreSurface", "in_memory"]


class StoreSurface(LockBlocks):
    """A mixin of ``PersistentTensorDict`` (first in its bases)."""

    if TYPE_CHECKING:  # PersistentTensorDict's slots
        _locked: bool
        _names: Names
        _nested: dict[str, PersistentTensorDict]
        _batch_size: torch.Size
        _device: torch.device | None

        def to_tensordict(self, *, retain_none: bool | None = None) -> TensorDict: ...
        def del_(self, key: Any) -> Self: ...
        def _check_nested_names(self, names: Names) -> None: ...
    else:
        __slots__ = ()

    # --- locking -------------------------------------------------------------------------

    def lock_(self) -> Self:
        """Refuse new or removed entries (in-place writes still work, and ``ptd[key] =
        value`` writes into an existing entry, as the peer's); also a context manager:
        ``with ptd.lock_(): ...`` unlocks on exit."""
        self._note_lock()
        self._lock_tree()
        return self

    def unlock_(self) -> Self:
        """Accept new and removed entries again; ``with ptd.unlock_(): ...`` locks again
        on exit.

        Raises:
            LockedError: (a ``RuntimeError``) if this group is nested in another locked
                collection that is alive: unlock that one first.
        """
        self._note_lock()
        self._unlock_tree()
        return self

    def _flag_lock(self, locked: bool) -> None:
        self._locked = locked

    def _lock_links(self) -> list[PersistentTensorDict]:
        return list(self._nested.values())  # the groups opened so far (others open locked)

    # --- names ---------------------------------------------------------------------------

    @property
    def names(self) -> list[Any]:  # str names usually: any hashable, as the peer
        """The names of the batch dims (``None`` for an unnamed dim). Assigning names
        them here and in the groups, and records them in the store (with the batch
        size) where it is open for writing; opening a store reads them back."""
        return _names.show(self._names, len(self._batch_size))

    @names.setter
    def names(self, value: Sequence[DimName] | None) -> None:
        names = _names.as_names(value, len(self._batch_size))
        self._check_nested_names(names)
        self._rename_all(names)

    @property
    def _dim_names(self) -> Names:
        return self._names

    def _assign_names(self, names: Names) -> None:
        self._names = names

    def _rename_all(self, names: Names) -> None:
        """Names here and in the opened groups (PersistentTensorDict records them)."""
        self._set_names(names)

    def _set_names(self, names: Names) -> None:
        """Names here and in the groups opened so far, in memory (each group once: one
        reached by several links is shared)."""
        stack: list[tuple[StoreSurface, Names]] = [(self, names)]
        seen: set[int] = set()
        while stack:
            node, given = stack.pop()
            if id(node) not in seen:
                seen.add(id(node))
                node._names = given
                stack += [(c, node._names_for(c)) for c in node._nested.values()]

    def _names_for(self, group: StoreSurface) -> Names:
        """The names of ``group``'s dims: this collection's for the dims they share (none
        named: unnamed), then the group's own, as a TensorDict's nested nodes keep them."""
        ndim = len(group._batch_size)
        shared = self._names or (None,) * len(self._batch_size)
        names = (shared + (group._names or ())[len(shared) :])[:ndim]
        names += (None,) * (ndim - len(names))
        return names if any(name is not None for name in names) else None

    # --- devices -------------------------------------------------------------------------

    def cpu(self) -> Self:
        """The same file, read onto the CPU."""
        return self.to("cpu")

    def cuda(self, device: int | DeviceLike = None) -> Self:
        """The same file, read onto a CUDA device (the current one by default)."""
        target = as_device("cuda" if device is None else device)
        torch.empty((), device=target)  # torch's error now if there is no such device
        return self.to(target)

    def auto_device_(self) -> Self:
        """Records the device tensors are read onto (the CPU unless one was given), here
        and in the groups, as the peer; ``None`` (here and in the groups) when the file
        holds no tensor (only Python values or empty groups), as a TensorDict without
        tensors answers in both."""
        found = _holds_tensor(cast("PersistentTensorDict", self))
        self._set_devices((self._device or torch.device("cpu")) if found else None)
        return self

    def clear_device_(self) -> Self:
        """Forgets the device (here and in the groups): entries are then read onto the
        CPU."""
        self._set_devices(None)
        return self

    def _assign_device(self, device: torch.device | None) -> None:
        self._device = device

    def _set_devices(self, device: torch.device | None) -> None:
        self._device = device
        for child in self._nested.values():  # the groups opened so far (others inherit)
            child._set_devices(device)

    def is_contiguous(self) -> bool:
        """False, as the peer: the entries are in the file, not in memory
        (``contiguous()`` reads them into a TensorDict)."""
        return False

    # --- reshaping and rewriting keys in place -------------------------------------------

    def view(
        self,
        *shape: int | Sequence[int] | torch.dtype,
        size: Sequence[int] | None = None,
        batch_size: Sequence[int] | None = None,
    ) -> Self:
        """Every tensor viewed as a dtype (read into a TensorDict), the file itself for
        its own batch size (as the peer), or, under ``set_lazy_legacy(True)``, a view
        that writes through to the file.

        Raises:
            UnsupportedError: (a ``RuntimeError``, as the peer raises) for a new batch
                size outside the legacy mode: the entries would be read into memory and
                writes into such a "view" would never reach the file.
        """
        if (len(shape) == 1 and isinstance(shape[0], torch.dtype)) or OPTIONS.lazy_legacy:
            return super().view(*shape, size=size, batch_size=batch_size)  # type: ignore[misc, no-any-return]
        given = size if size is not None else batch_size
        if torch.Size(_batch.shape_args(shape if given is None else (given,), "view")) == (
            self.batch_size
        ):
            return self  # as the peer: its own batch size, as given (no -1), is no change
        raise UnsupportedError(
            "Cannot call `view` on a PersistentTensorDict: its entries would be read into "
            "memory, and writes into that copy would not reach the file. Call `reshape` or "
            "`to_tensordict()` first for a copy in memory"
        )

    def flatten_keys(
        self,
        separator: str = ".",
        inplace: bool = False,
        is_leaf: Callable[[type], bool] | None = None,
    ) -> Self:
        """The entries with nested keys joined by ``separator``, read into a TensorDict.

        Raises:
            InPlaceKeysError: (a ``ValueError``, as the peer raises) with ``inplace=True``:
                the file keeps its groups.
        """
        self._refuse_keys_in_place("flatten_keys", inplace)
        return super().flatten_keys(separator, False, is_leaf)  # type: ignore[misc, no-any-return]

    def unflatten_keys(self, separator: str = ".", inplace: bool = False) -> Self:
        """The entries with keys split at ``separator`` into nested ones, read into a
        TensorDict.

        Raises:
            InPlaceKeysError: (a ``ValueError``, as the peer raises) with ``inplace=True``.
        """
        self._refuse_keys_in_place("unflatten_keys", inplace)
        nested = super().unflatten_keys(separator, False)  # type: ignore[misc]
        # The groups it kept whole read too (as the peer's, which unflattens a copy read
        # from the file): writes into the result stay in memory. ``with ptd.unflatten_keys()
        # as td:`` still writes td's entries back into the file on exit, as the peer's.
        out = _read(nested, deep=True)
        out._call_on_exit(lambda: self.update(out.flatten_keys(separator)))
        return out  # type: ignore[return-value]

    def _refuse_keys_in_place(self, method: str, inplace: bool) -> None:
        if inplace:
            raise InPlaceKeysError(
                f"Cannot call {method} in_place with a PersistentTensorDict: the file keeps "
                f"its groups and datasets as they are. Call ptd.{method}(...) (inplace=False) "
                "for a TensorDict read from the file, and write it back with "
                "PersistentTensorDict.from_dict(...) if the file should change"
            )

    # --- selecting -----------------------------------------------------------------------

    def select(self, *keys: Any, inplace: bool = False, strict: bool = True) -> Self:
        """The entries ``keys`` (nested keys too) read into a plain TensorDict.

        Raises:
            UnsupportedError: (a ``NotImplementedError``) with ``inplace=True``: the file
                keeps its entries (delete the others with ``del_``).
            KeyNotFoundError: for a missing key when ``strict``.
        """
        _keys.selection_keys(keys, "select")
        self._refuse_in_place("select", inplace)
        tops = {_keys.key_path(key)[0] for key in _flat_keys(keys)}
        shallow = self._shallow(key for key in self._key_names() if key in tops)
        for key in tops:
            if strict and not self._has_entry(key):
                raise self._missing_key(key)  # naming the file's keys
        return _read(shallow.select(*keys, strict=strict))  # type: ignore[return-value]

    def exclude(self, *keys: Any, inplace: bool = False) -> Self:
        """Every entry but ``keys`` (nested keys too) read into a plain TensorDict; with
        ``inplace=True``, the entries ``keys`` deleted from the file (as ``del_`` does,
        and as the peer's ``split_keys(inplace=True)``) and ``self`` returned.

        Raises:
            LockedError: with ``inplace=True`` on a locked PersistentTensorDict.
        """
        _keys.selection_keys(keys, "exclude")
        if inplace:
            here = set(self.keys(include_nested=True))
            self._drop_paths([key for key in _flat_keys(keys) if _keys.unravel_key(key) in here])
            return self
        gone = {key for key in _flat_keys(keys) if isinstance(key, str)}
        shallow = self._shallow(key for key in self._key_names() if key not in gone)
        return _read(shallow.exclude(*keys))  # type: ignore[return-value]

    def replace(self, *args: Mapping[Any, Any] | TensorCollection, **kwargs: Any) -> Self:
        """A TensorDict read from the file with the given entries written into it (see
        ``TensorDict.replace``); the file is not changed (the peer writes into it)."""
        return self.to_tensordict().replace(*args, **kwargs)  # type: ignore[return-value]

    def rename_keys(self, mapping: Mapping[Any, Any], *, strict: bool = True) -> Self:
        """A TensorDict read from the file with keys renamed (see
        ``TensorDict.rename_keys``); the file is not changed (the peer refuses)."""
        return self.to_tensordict().rename_keys(mapping, strict=strict)  # type: ignore[return-value]

    def _drop_paths(self, paths: Sequence[Any]) -> None:
        """The entries that ``separates``, ``cat_tensors`` and ``stack_tensors`` move
        elsewhere, deleted from the file."""
        for path in dict.fromkeys(paths):
            self.del_(path)

    def _shallow(self, keys: Iterator[str]) -> TensorDict:
        """The entries ``keys`` in a TensorDict: tensors read, groups not yet."""
        entries = {key: self._entry(key) for key in keys}
        out = TensorDict._new_unchecked(entries, self._batch_size, self.device)
        out._assign_names(self._names)
        return out

    def _refuse_in_place(self, method: str, inplace: bool) -> None:
        if inplace:
            msg = (
                f"Cannot call {method} in place on a PersistentTensorDict: the file keeps its "
                "entries; "
                f"delete entries with ptd.del_(key), or call ptd.{method}(...) for a "
                "TensorDict read from the file"
            )
            raise UnsupportedError(msg)


def _flat_keys(keys: tuple[Any, ...]) -> list[Any]:
    """``select``'s keys: given one by one or as one list."""
    if len(keys) == 1 and isinstance(keys[0], list):
        return list(keys[0])
    return list(keys)


def _math(
    foreach: Callable[..., Any] | None,
    each: Callable[..., Any],
    kwargs: dict[str, Any] | None,
    options: dict[str, Any],
    local: TensorDict,
    cut: tuple[Any, ...],
) -> None:
    """In-place math on one array's TensorDict: ``cut`` holds the operands, then the
    values of ``kwargs`` (in its order), each cut to the array's key."""
    count = len(cut) - len(kwargs or {})
    named = dict(zip(kwargs or {}, cut[count:]))
    local._pointwise_(foreach, each, cut[:count], named, **options)


def _read(td: TensorDict, *, deep: bool = False) -> TensorDict:
    """``td`` with the groups it still holds (nested PersistentTensorDicts) read; ``deep``:
    those under its nested TensorDicts too."""
    entries = {
        key: _read(value, deep=True) if deep and type(value) is TensorDict else in_memory(value)
        for key, value in td._items()
    }
    out = TensorDict._new_unchecked(entries, td.batch_size, td.device)
    out._assign_names(td._dim_names)
    return out


def in_memory(value: Any) -> Any:
    """An entry read into memory: a nested collection over a store, or a view of its
    rows (or a record over either), whole."""
    storage = storage_of(value)
    if not isinstance(storage, TensorCollection) or not storage._is_store:
        return value
    read = cast("PersistentTensorDict", storage).to_tensordict()
    return read if storage is value else type(value)._from_tensordict_unchecked(read)


def _holds_tensor(root: PersistentTensorDict) -> bool:
    """Whether a group of the file (``root``'s or one opened under it, each once) holds an
    array of tensor data; nothing is read."""
    stack, seen = [root], set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        group = node._live()
        for key in group.keys():
            entry = group[key]
            if not is_group(entry) and entry.dtype is not None:
                return True
        stack += node._nested.values()
    return False


class RowsInMemory(ShapeOps):
    """A mixin of ``PersistentTensorDict`` and its row views (before ``TensorDictBase``
    in their bases): the pieces that cut the rows give them read into memory, and
    in-place math reads the rows, works on them in memory and writes them back; and
    ``entry_class`` of a key the file lacks raises, as the peer's (which asks the file)."""

    if TYPE_CHECKING:

        def to_tensordict(self, *, retain_none: bool | None = None) -> TensorDict: ...
        def _write_back(self, local: TensorDict) -> None: ...
        def _staging(self) -> tuple[PersistentTensorDict, Any, torch.Size]: ...
    else:
        __slots__ = ()

    def _missing_entry_class(self, key: Any) -> type:
        """``entry_class`` of a key with no entry: a KeyNotFoundError (a ``KeyError``),
        as the peer's file, where a TensorDict's answers ``type(None)``."""
        raise self._missing_key(_keys.unravel_key(key))

    def _pointwise_(
        self,
        foreach: Callable[..., Any] | None,
        each: Callable[..., Any],
        operands: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
        **options: Any,
    ) -> Self:
        """In-place math (``td += 1``, ``mul_``, ``lerp_``...): an array at a time (see
        :meth:`_staged_math`), or, with a collection among the operands that lacks keys of
        this one or holds others (whose errors and subsets the whole collection decides),
        all the rows read, worked on in memory and written back."""
        if self._staged_math(None, foreach, each, operands, kwargs, options):
            return self
        local = self.to_tensordict()
        local._pointwise_(foreach, each, operands, kwargs, **options)
        self._write_back(local)
        return self

    def _collect(
        self, into: Gather, operands: tuple[Any, ...], batch_dims: int, prefix: tuple[str, ...]
    ) -> None:
        """The walk reaching these rows nested in another collection (their own
        :meth:`_pointwise_` not called): in an in-place write's walk, the rows read
        into memory give the tensors, written back once the kernels have run (a read of
        a file is a copy, which a kernel would write in vain)."""
        if into.written_back is None:  # (the walk's own: a mixin's next class has it)
            cast(Any, super())._collect(into, operands, batch_dims, prefix)
            return
        self._staging()[0]._writable()  # a read-only file refuses before anything is written
        local = self.to_tensordict()
        local._collect(into, operands, batch_dims, prefix)
        into.written_back.append(partial(self._write_back, local))

    def _staged_math(
        self,
        record: type | None,
        foreach: Callable[..., Any] | None,
        each: Callable[..., Any],
        operands: tuple[Any, ...],
        kwargs: dict[str, Any] | None,
        options: dict[str, Any],
    ) -> bool:
        """In-place math an array at a time: each read, worked on in memory, checked
        against the record holding it (``record``: the class of a record over this
        collection) and staged, all written once every result is (see ``_staged.py``).
        False, having done nothing, where an operand collection's keys differ."""
        every = (*operands, *(kwargs or {}).values())
        if not same_keys(self, every):
            return False
        work = partial(_math, foreach, each, kwargs, options)
        operation = str(options.get("operation") or getattr(each, "__name__", "?"))
        what = None
        if record is not None:
            owner = record.__name__
            what = (
                f"{owner}.{operation}(...)"
                if operation.isidentifier()
                else f"{owner} {operation} ..."
            )
        stage_in_place(*self._staging(), work, every, record, what)
        return True

    def _staged_apply(
        self,
        record: type | None,
        fn: Callable[..., torch.Tensor | None],
        others: tuple[Any, ...],
        outer: StagedWrites | None = None,
    ) -> None:
        """``apply_`` an array at a time, as :meth:`_staged_math` (``outer``: the staged
        writes of an ``apply_`` of a collection holding this one, which write these)."""
        what = None if record is None else f"{record.__name__}.apply_(...)"
        stage_in_place(*self._staging(), applied(fn), others, record, what, outer)

    def tensor_split(
        self, indices_or_sections: int | Sequence[int] | torch.Tensor, dim: int = 0
    ) -> tuple[Self, ...]:
        """Cuts batch dim ``dim`` as ``torch.tensor_split``; each piece's rows read into
        a TensorDict (as the peer's)."""
        pieces = super().tensor_split(indices_or_sections, dim)
        return tuple(in_memory(piece) for piece in pieces)

    def masked_select(self, mask: torch.Tensor, *, inplace: bool = False) -> Self:
        """The rows where ``mask`` is true, read into a TensorDict (as the peer's): the
        rows are read first, so the result's new dim is unnamed whatever the file's names
        (a view's names are the file's and cannot be changed)."""
        picked = cast(Self, self.to_tensordict().masked_select(mask))
        return self._in_place(picked, inplace, "masked_select")
