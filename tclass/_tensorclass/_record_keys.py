"""The keys of a record: ``select``, ``exclude``, ``pop``, ``del_`` (and ``del record[key]``)
and ``rename_key_`` (a mixin of ``TensorClass``, in ``tclass._tensorclass._record``, which
holds the storage in ``_tensordict``); fields removed read ``None`` after."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Literal, overload

from typing_extensions import Self

from tclass._base._tensordict_base import TensorDictBase
from tclass._core._keys import key_path
from tclass._core._records import is_record
from tclass._tensorclass._builder import locked_write
from tclass._tensorclass._guards import check_rename
from tclass.errors import KeyNotFoundError

if TYPE_CHECKING:
    from tclass._engine._lazy._stack import LazyStackedTensorDict
    from tclass._engine._td import TensorDict
    from tclass._tensorclass._builder import ClassInfo
    from tclass.errors import UnknownFieldError

__all__ = ["RecordKeyOps"]

_NO_DEFAULT: Any = object()


class RecordKeyOps(TensorDictBase):
    """What ``TensorClass`` answers about the keys it holds."""

    if TYPE_CHECKING:  # TensorClass's slot, class information and methods
        _tensordict: TensorDict | LazyStackedTensorDict
        __tclass_info__: ClassVar[ClassInfo]

        def _result(self, result: TensorDictBase) -> Self: ...
        def _unknown_field(self, name: object) -> UnknownFieldError: ...
    else:
        __slots__ = ()

    @overload
    def select(
        self,
        *keys: Any,
        inplace: bool = False,
        strict: bool = True,
        as_tensordict: Literal[False] = False,
    ) -> Self: ...
    @overload
    def select(
        self, *keys: Any, inplace: bool = False, strict: bool = True, as_tensordict: Literal[True]
    ) -> TensorDict: ...

    def select(
        self, *keys: Any, inplace: bool = False, strict: bool = True, as_tensordict: bool = False
    ) -> Any:
        """A record with only the fields ``keys`` (the others absent: ``None``); with
        ``as_tensordict``, the TensorDict of those entries."""
        out = self._tensordict.select(*keys, inplace=inplace, strict=strict)
        if as_tensordict:
            return out
        return self if inplace else self._result(out)

    def exclude(self, *keys: Any, inplace: bool = False) -> Self:
        """A record without the fields ``keys`` (they read ``None``)."""
        out = self._tensordict.exclude(*keys, inplace=inplace)
        return self if inplace else self._result(out)

    def pop(self, key: Any, default: Any = _NO_DEFAULT) -> Any:
        """Removes the field ``key`` (it reads ``None`` after) and returns what it held: a
        Python value as its node (``NonTensorData``), as the peer and ``TensorDict.pop``."""
        if default is _NO_DEFAULT:
            return self._tensordict.pop(key)
        return self._tensordict.pop(key, default)

    def del_(self, key: Any) -> Self:
        """Removes the field ``key`` (it reads ``None`` after); a field that is already
        ``None``, in this record or a nested one, is left as it is (as the peer).

        Raises:
            KeyNotFoundError: ``key`` is neither a field nor an entry (checked before the
                lock, as the peer).
            LockedError: the record is locked.
        """
        path = key_path(key)
        storage = self._tensordict
        present = storage._has_entry(path[0])
        if len(path) == 1 and path[0] in self.__tclass_info__.field_names and not present:
            return self  # None already
        child = storage._child(path[0]) if len(path) > 1 and present else None
        if child is not None and is_record(child):
            child.del_(path[1:])
            return self
        try:
            storage.pop(key)  # a missing key before the lock, as the peer's records
        except KeyNotFoundError:
            raise KeyNotFoundError(f"cannot delete {key!r}: {self._unknown_field(key)}") from None
        return self

    def __delitem__(self, key: Any) -> None:
        """``del record[key]``: :meth:`del_` (the field reads ``None`` after; the peer
        has no ``__delitem__`` for records and raises ``AttributeError``); the lock is
        checked first, as the peer."""
        error = locked_write(self, key, verb="remove")
        if error is not None:
            raise error
        self.del_(key)

    def rename_key_(self, old_key: Any, new_key: Any, safe: bool = False) -> Self:
        """Moves the value of field ``old_key`` to field ``new_key``.

        Raises:
            LockedError: if the record is locked; KeyNotFoundError: if ``old_key`` is
                absent (both checked first, as the peer raises them).
            UnknownFieldError: if ``new_key`` is not a field.
            FieldTypeError: the value is of a kind the field ``new_key`` never holds (a
                tensor in a field of records or Python values, a string in a field of
                tensors), as when that field is assigned.
            FieldSpecError: the value does not fit the spec of ``new_key`` (its shape,
                dtype, named dims or values), as when that field is assigned.
        """
        storage = self._tensordict
        name = key_path(new_key)[0]  # an InvalidKeyError for no key at all
        info = self.__tclass_info__
        if name not in info.field_names:
            if storage.is_locked or old_key not in storage.keys(include_nested=True):
                storage.rename_key_(old_key, new_key, safe=safe)  # the peer's error first
            raise self._unknown_field(name)
        if isinstance(new_key, str) or len(new_key) == 1:  # onto a field: its kind checked
            probe: Any = storage
            while probe._is_lazy and probe.tensordicts:  # a member's: no stack is read
                probe = probe.tensordicts[0]
            moved = None if storage.is_locked else probe.get(old_key, None)
            if moved is not None:  # (locked or missing: the peer's error first, below)
                info.rules[name].check_written(moved)
        check_rename(self, old_key, new_key)
        storage.rename_key_(old_key, new_key, safe=safe)
        return self
