"""``TensorClass``: the base every tensorclass derives from, whichever form declared it.

An instance holds one ``TensorDict``, ``_tensordict``: tensor fields as tensors, nested
records and TensorDicts as nested collections, Python values as ``NonTensorData`` nodes
(or a ``NonTensorStack`` when elements hold different values). Absent optional fields are
simply not stored. Every operation is written once, here or in the engine's mixins
(``ShapeOps``, ``ApplyOps``), against the collection primitives below; results are
new instances of the same class built without calling ``__init__``, so ``__post_init__``
runs only when a user constructs a record.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Generic

import torch
from typing_extensions import Self, Unpack

from tclass._base._inline import inline_inherited
from tclass._base._tensordict_base import TensorDictBase, Value
from tclass._base.implemented._collection import TensorCollection, ToArg
from tclass._core._class_options import OPTIONS, ClassOptions, named_options, option_listing
from tclass._core._device import DeviceLike, parse_to_args
from tclass._core._keys import BatchIndex, key_path, unravel_key
from tclass._core._method_names import name_methods_after
from tclass._core._records import is_record, storage_of
from tclass._core._safe_globals import allow_unpickling, checked_class
from tclass._engine._consolidate import Consolidated, consolidation_of
from tclass._engine._lazy._stack import LazyStackedTensorDict
from tclass._engine._nontensor import _NonTensorNode
from tclass._engine._record_fields import (
    dense_entries,
    members_field,
    record_batch_size,
    record_entries,
)
from tclass._engine._repr import compact_repr, shows_compact_repr
from tclass._engine._td import TensorDict
from tclass._tensorclass._builder import (
    ClassInfo,
    build_class,
    check_specs,
    locked_update,
    locked_write,
    missing_attribute,
    store_field,
)
from tclass._tensorclass._meta import TensorClassMeta
from tclass._tensorclass._options import FLAGS, UNSET, flags_from_item
from tclass._tensorclass._record_convert import RecordConversions
from tclass._tensorclass._record_keys import RecordKeyOps
from tclass._tensorclass._record_primitives import RecordPrimitives
from tclass._tensorclass._record_storage import RecordStorageOps
from tclass._tensorclass._typing import (
    BatchSizeField,
    DeviceField,
    NamesField,
    constructor_keyword,
)
from tclass._tensorclass._update import check_update, hooked_source, merged_changes, update_record
from tclass._tensorclass._writes import (
    check_entry_write,
    check_kinds_kept,
    check_nested_mapping,
    check_row_write,
    check_written_keys,
    check_written_types,
    refuse_none_field,
    replaced_storage,
    replacements,
    stored_rows,
    stored_value,
    unset_dropped,
)
from tclass.errors import (
    ClassDefinitionError,
    FieldIndexError,
    HeterogeneousEntryError,
    KeyNotFoundError,
    NotConsolidatedError,
    TclassError,
    UnknownFieldError,
    UnsupportedError,
)

__all__ = ["TensorClass"]

_new_instance = object.__new__
# The bases TensorClass[flags] made, by (class, flags): one per set of flags.
_FLAGGED: dict[tuple[type, tuple[str, ...]], type] = {}


def _rewrap(record: TensorClass, result: Any) -> Any:
    if result is record._tensordict:
        return record
    kind = type(result)
    if kind is TensorDict or kind is LazyStackedTensorDict:
        return record._from_tensordict_unchecked(result)
    if kind is tuple:
        return tuple(_rewrap(record, item) for item in result)
    return result  # a bool from all()/any(), or NotImplemented from a comparison


@name_methods_after
class TensorClass(
    RecordConversions,
    RecordKeyOps,
    RecordPrimitives,
    RecordStorageOps,
    TensorDictBase,
    metaclass=TensorClassMeta,
):
    """Base class of every tensorclass.

    Derive from it (``class Transition(TensorClass): ...``, options as class keywords:
    ``class Frame(TensorClass, frozen=True)``) or decorate a class with
    :func:`tclass.tensorclass`; both give the same class. Annotated attributes become
    fields, and the generated constructor takes them (by position or keyword) plus the
    keyword-only ``batch_size``, ``device`` and ``names``.
    """

    __slots__ = ("_tensordict", "__weakref__")

    # Annotated for checkers only, so that typing.get_type_hints(Record) gives the fields
    # of the record's class alone, as for the peer's (its records have no annotated base).
    if TYPE_CHECKING:
        __tclass_info__: ClassVar[ClassInfo]
        # The names of the fields (ClassVar attributes are not fields), as the peer's.
        __expected_keys__: ClassVar[frozenset[str]] = frozenset()

        # Each class gets a generated __init__ taking its fields (checkers synthesise it
        # through the metaclass's dataclass_transform) plus these keyword-only arguments:
        # descriptors, declared as fields with constructor_keyword (see _typing.py).
        batch_size: BatchSizeField = constructor_keyword(default=BatchSizeField(), kw_only=True)
        device: DeviceField = constructor_keyword(default=DeviceField(), kw_only=True)
        names: NamesField = constructor_keyword(default=NamesField(), kw_only=True)

        # The fields live in a TensorDict, or in a lazy stack of the TensorDicts of several
        # records (tclass.lazy_stack), which answers the same private surface.
        _tensordict: TensorDict | LazyStackedTensorDict = dataclasses.field(init=False)

        # C-level accessors for stack and cat, which read them from every member.
        _get_entries: ClassVar[Callable[[Any], Mapping[str, Value]]] = record_entries
        _get_batch_size: ClassVar[Callable[[Any], torch.Size]] = record_batch_size
    else:  # the same attributes at runtime
        __expected_keys__ = frozenset()
        batch_size = BatchSizeField()
        device = DeviceField()
        names = NamesField()
        _get_entries = record_entries
        _get_batch_size = record_batch_size

    @named_options
    def __init_subclass__(cls, **options: Unpack[ClassOptions]) -> None:
        """Builds the subclass with the class options given as class keywords (their
        list: ``tclass/_core/_class_options.py``); other keywords go to the bases."""
        given: dict[str, Any] = dict(options)
        others = {name: given.pop(name) for name in list(given) if name not in OPTIONS}
        try:
            super().__init_subclass__(**others)
        except TypeError as error:
            if not others:
                raise
            msg = (
                f"{cls.__name__}: unknown class keyword(s) {', '.join(map(repr, others))}; the "
                f"tensorclass options are {option_listing()} ({error})"
            )
            raise ClassDefinitionError(msg) from None
        build_class(cls, TensorClass, **given)

    def __class_getitem__(cls, item: Any) -> Any:
        """``TensorClass["frozen", "nocast"]``: a base class with those options (one per
        set of flags); for a generic tensorclass, its type arguments (``Box[int]``)."""
        items = item if isinstance(item, tuple) else (item,)
        if issubclass(cls, Generic) and not all(flag in FLAGS for flag in items):
            return Generic.__dict__["__class_getitem__"].__get__(None, cls)(item)
        flags = flags_from_item(item)
        key = (cls, flags)
        base = _FLAGGED.get(key)
        if base is None:
            name = f"{cls.__name__}_{'_'.join(flags)}"
            namespace = {"__module__": cls.__module__, "__qualname__": name}
            base = _FLAGGED[key] = TensorClassMeta(
                name, (cls,), namespace, **dict.fromkeys(flags, True)
            )
        return base

    if not TYPE_CHECKING:  # checkers see each class's own synthesised __init__

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            """The class's generated constructor: what ``super().__init__(...)`` in a
            tensorclass's own ``__init__`` reaches."""
            info = getattr(type(self), "__tclass_info__", None)
            if info is None:
                msg = (  # the peer's NotImplementedError for its abstract base
                    "TensorClass is a base class and cannot be instantiated directly: "
                    "derive a tensorclass from it"
                )
                raise UnsupportedError(msg)
            info.generated_init(self, *args, **kwargs)

    # --- building instances without __init__ ---------------------------------------------

    @classmethod
    def _from_tensordict_unchecked(cls, td: TensorDict | LazyStackedTensorDict) -> Self:
        record = _new_instance(cls)
        info = cls.__tclass_info__
        if info.setattr_hook:  # the slot itself, past the __setattr__ the class defines
            object.__setattr__(record, "_tensordict", td)
        else:
            record._tensordict = td
        if info.options["frozen"]:
            td.lock_()
        return record

    @property
    def _consolidated(self) -> Consolidated:
        """The one buffer of a consolidated record's tensors (the peer's attribute, which
        a record has only once consolidated: ``hasattr(record, "_consolidated")``)."""
        state = consolidation_of(self)
        if state is None:
            msg = (
                f"this {type(self).__name__} is not consolidated: record.consolidate() "
                "returns one that is"
            )
            raise NotConsolidatedError(msg)
        return state

    def _wrap(self, td: TensorDict | LazyStackedTensorDict) -> Self:
        return self._from_tensordict_unchecked(td)

    @classmethod
    def _stack_lazily(cls, members: list[Any], dim: int, batch_size: torch.Size) -> Self:
        storages = [member._tensordict for member in members]
        return cls._from_tensordict_unchecked(
            LazyStackedTensorDict._from_members(storages, dim, batch_size)
        )

    # --- collection primitives, the math walks' hooks, the lock graph: see RecordPrimitives
    # (_record_primitives.py) -------------------------------------------------------------

    def _absent_fields(self) -> Sequence[str]:
        names = self.__tclass_info__.field_names
        entries = dense_entries(self)  # over one TensorDict: its dict, looked up as it is
        if entries is not None:
            return [name for name in names if name not in entries]
        present = set(self._tensordict._key_names())
        return [name for name in names if name not in present]

    # --- entries by key ------------------------------------------------------------------

    def get(self, key: Any, default: Any = None, **options: Any) -> Any:
        """The field ``key`` (or the nested entry at a tuple key), or ``default``; a field
        that is not set reads ``None``, as its attribute, whatever the default (as the
        peer's, which reads the attribute).

        A record over a lazy stack takes the lazy stack's ``get`` options for fields
        whose shapes differ between members (``as_list``, ``as_padded_tensor``, ...).
        A name that is no field nor entry but a public attribute of the record
        (``"batch_size"``, ``"device"``...) reads that attribute, as the peer's does.
        """
        if (
            type(key) is str
            and key not in self.__tclass_info__.field_names
            and key[:1] != "_"
            and hasattr(type(self), key)
            and not self._tensordict._has_entry(key)
        ):
            return getattr(self, key)
        path = key if type(key) is tuple else (key,)
        if path and type(path[0]) is str and path[0] in self.__tclass_info__.field_names:
            if len(path) == 1:
                default = None  # an unset field reads None whatever the default (the peer)
            elif is_record(head := getattr(self, path[0])):  # its own fields alike
                return head.get(path[1:] if len(path) > 2 else path[1], default, **options)
        try:
            value = self._tensordict.get(key, default, **options)
        except HeterogeneousEntryError:  # a field set in some members of a lazy stack only
            if options or key not in self.__tclass_info__.field_names:
                raise
            return members_field(self._tensordict, key)
        return value._read() if isinstance(value, _NonTensorNode) else value

    def set(
        self, key: Any, value: Any, inplace: bool = False, *, non_blocking: bool = False
    ) -> Self:
        """Sets a field like attribute assignment (a nested tuple key sets below a field)."""
        if type(key) is str or (type(key) is tuple and len(key) == 1):
            name = key if type(key) is str else key[0]
            if inplace and isinstance(self._tensordict._entries().get(name), torch.Tensor):
                check_entry_write(self, name, value, ..., "set")
                # the storage's own in-place set: parameters refuse it as autograd does
                self._tensordict.set(name, value, inplace=True)
                return self
            setter = self.__tclass_info__.setters.get(name)
            if setter is None:
                raise self._unknown_write(name)
            setter(self, value)
            return self
        path = unravel_key(key)
        if type(path) is tuple and path[0] not in self.__tclass_info__.field_names:
            raise self._unknown_field(path[0])  # before the lock, as the peer's nested set
        if type(path) is tuple:
            check_nested_mapping(self, path, value)
        if inplace or (type(path) is tuple and not is_record(self.get(path[0]))):
            # below a field that holds no record, the write makes one: its values checked
            check_entry_write(self, key, value, ..., "set" if inplace else "set(new)")
        self._tensordict.set(key, value, inplace=inplace)
        return self

    def set_(self, key: Any, value: Any, *, non_blocking: bool = False) -> Self:
        """Copies ``value`` into the existing tensor ``key`` in place (allowed when locked).
        A nested key under a name that is not a field is an ``UnknownFieldError``, as in
        :meth:`set` (the peer adds the node, and its record then refuses to be saved)."""
        path = unravel_key(key)
        if type(path) is tuple and path[0] not in self.__tclass_info__.field_names:
            if not self.is_locked:  # the peer's LockedError first
                raise self._unknown_field(path[0])
        if isinstance(value, _NonTensorNode):  # a node of Python values: their constraints
            check_written_types(self, {key: value})
        check_entry_write(self, key, value, ..., "set_")
        try:
            self._tensordict.set_(key, stored_value(self, path, value))
        except KeyNotFoundError:
            refuse_none_field(self, key_path(key))
            raise
        return self

    def _update_entries(
        self,
        source: Mapping[Any, Any] | TensorCollection,
        clone: bool,
        inplace: bool,
        keys_to_update: Sequence[Any] | None,
        is_leaf: Callable[[type], bool] | None,
    ) -> Self:
        """Sets each field of ``source`` (a mapping, TensorDict or record) as :meth:`set`,
        each checked before the first is written (see ``_update.py``)."""
        if not inplace and not len(source.keys()) and (error := locked_update(self)):
            raise error  # nothing to write, but the peer refuses it when locked
        if keys_to_update is None and self._members_match(source):
            # a record of this class over a lazy stack like this one's: member by member
            # (their entries may differ in shape, as a lazy stack's update allows)
            self._tensordict.update(storage_of(source), clone, inplace, is_leaf=is_leaf)
            return self
        source = hooked_source(self, source)  # a dict: the class's __post_init__ on it
        update_record(self, source, clone, inplace, keys_to_update, is_leaf)
        return self

    def _check_update(
        self,
        source: Any,
        inplace: bool,
        allowed: list[tuple[str, ...]] | None,
        is_leaf: Callable[[type], bool] | None,
    ) -> None:
        """What :meth:`_update_entries` would refuse, checked without writing (a
        collection holding this record checks before its first write)."""
        if allowed is None and self._members_match(source):
            self._tensordict._check_update(storage_of(source), inplace, None, is_leaf)
            return
        check_update(self, source, inplace, allowed, is_leaf)

    def _unknown_write(self, name: object) -> TclassError:
        """``set`` of a name that is not a field: the lock first, as the peer."""
        unknown = self._unknown_field(name)
        return locked_write(self, name, str(unknown)) or unknown

    if not TYPE_CHECKING:  # checkers still flag unknown attributes

        def __getattr__(self, name: str) -> Any:
            if hasattr(type(self), name):  # a property that raised: its own error
                return object.__getattribute__(self, name)
            if name.startswith("_") or torch.compiler.is_compiling():
                # a probe (hasattr(x, "__array__"), a private name, compiled code): Python's
                raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
            raise missing_attribute(self, name)

    def _members_match(self, source: object) -> bool:
        """Whether ``source`` is a record of this class over a lazy stack of as many
        members along the same dim as this record's."""
        if type(source) is not type(self):
            return False
        mine, theirs = self._tensordict, storage_of(source)
        return (
            isinstance(mine, LazyStackedTensorDict)
            and isinstance(theirs, LazyStackedTensorDict)
            and mine.stack_dim == theirs.stack_dim
            and len(mine.tensordicts) == len(theirs.tensordicts)
        )

    def _unknown_field(self, name: object) -> UnknownFieldError:
        fields = self.__tclass_info__.field_names
        hint = difflib.get_close_matches(str(name), fields, n=1)
        suggestion = f"; did you mean {hint[0]!r}?" if hint else ""
        return UnknownFieldError(
            f"{type(self).__name__} has no field {name!r} (fields: {', '.join(fields)}){suggestion}"
        )

    # --- indexing ------------------------------------------------------------------------

    def __getitem__(self, index: BatchIndex) -> Self:
        """Indexes every field along the batch dims (views for basic indices)."""
        lazy = isinstance(self._tensordict, LazyStackedTensorDict)
        if index.__class__ is int and not lazy:
            return self._wrap(self._tensordict._index_int(index))
        if index.__class__ is slice and not lazy:
            return self._wrap(self._tensordict._index_slice(index))
        if isinstance(index, str) or (type(index) is tuple and index and isinstance(index[0], str)):
            raise self._string_index(index)
        if lazy:  # its own indexing: a result of a locked stack is locked, as the peer's
            return self._wrap(self._tensordict[index])
        return self._wrap(self._tensordict._index(index))

    def __setitem__(self, index: BatchIndex, value: Any) -> None:
        """Writes ``value`` (a record with these fields, a mapping, a tensor or a number)
        into every field at ``index``, in place."""
        if isinstance(index, str) or (type(index) is tuple and index and isinstance(index[0], str)):
            raise self._string_index(index, write=True)
        check_written_keys(self, value)
        check_row_write(self, index, value)
        self._tensordict[index] = stored_rows(self, index, value)

    def _string_index(self, index: object, write: bool = False) -> FieldIndexError:
        how = (
            f"write a field as an attribute or with .set({index!r}, value)"
            if write
            else f"read a field as an attribute or with .get({index!r})"
        )
        return FieldIndexError(
            f"{type(self).__name__}[{index!r}]: a tensorclass is indexed along its batch dims "
            f"only; {how}"
        )

    # --- locking, devices ----------------------------------------------------------------

    def lock_(self) -> Self:
        """Forbids assigning fields (in-place data writes stay allowed); also a context
        manager (``with record.lock_(): ...`` unlocks on exit)."""
        self._tensordict.lock_()
        return self

    def unlock_(self) -> Self:
        """Allows assigning fields again (a frozen class stays frozen and locked).

        Raises:
            LockedError: (a ``RuntimeError``) if the record is nested in another locked
                collection that is alive: unlock that one first.
        """
        if not self.__tclass_info__.options["frozen"]:
            self._tensordict.unlock_()
        return self

    def __enter__(self) -> Self:
        self._tensordict.__enter__()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._tensordict.__exit__(*exc_info)

    def to(self, *args: ToArg, cast_filter: Any = UNSET, **kwargs: Any) -> Self:
        """Moves and/or casts every tensor (see ``TensorDict.to``); returns ``self`` when
        nothing would change.

        A dtype cast applies to the leaves ``cast_filter(key, tensor)`` selects (``key``
        the nested key as a tuple): by default the class's ``cast_filter`` option, none
        (every leaf) if it has none or ``cast_filter=None`` is passed.
        """
        selects = (
            self.__tclass_info__.options["cast_filter"] if cast_filter is UNSET else cast_filter
        )
        if selects is not None:
            request = parse_to_args(args, kwargs)
            if request.dtype is not None:
                moved = (
                    self
                    if request.device is None
                    else self.to(
                        request.device, cast_filter=None, non_blocking=request.non_blocking
                    )
                )
                dtype = request.dtype
                return moved._apply_nested(
                    lambda key, value: value.to(dtype) if selects(key, value) else value,
                    (),
                    moved.batch_size,
                    (),
                    None,
                )
        td = self._tensordict.to(*args, **kwargs)
        return self if td is self._tensordict else self._wrap(td)

    def cuda(self, device: int | DeviceLike = None) -> Self:
        """Same as ``to("cuda")`` (or ``to("cuda:<device>")``)."""
        td = self._tensordict.cuda(device)
        return self if td is self._tensordict else self._wrap(td)

    def cpu(self) -> Self:
        """Same as ``to("cpu")`` (also where a field named ``to`` hides it: shadow=True)."""
        td = self._tensordict.cpu()
        return self if td is self._tensordict else self._wrap(td)

    def clear_device_(self) -> Self:
        """Sets ``device`` to ``None`` without moving data."""
        self._tensordict.clear_device_()
        return self

    # --- operations answered by the storage: see RecordStorageOps (_record_storage.py) ----

    # --- keys of a record: see RecordKeyOps (_record_keys.py) -----------------------------

    def split(self, split_size: int | Sequence[int], dim: int = 0) -> tuple[Self, ...]:
        return self._results(self._tensordict.split(split_size, dim))

    def chunk(self, chunks: int, dim: int = 0) -> tuple[Self, ...]:
        return self._results(self._tensordict.chunk(chunks, dim))

    def tensor_split(
        self, indices_or_sections: int | Sequence[int] | torch.Tensor, dim: int = 0
    ) -> tuple[Self, ...]:
        # the storage's pieces (a lazy stack's keep its members and their locks, as split's)
        return self._results(self._tensordict.tensor_split(indices_or_sections, dim))

    def unbind(self, dim: int = 0) -> tuple[Self, ...]:
        return self._results(self._tensordict.unbind(dim))

    def numel(self) -> int:
        return self._tensordict.numel()

    def update_(
        self,
        input_dict_or_td: Mapping[Any, Any] | TensorCollection | None = None,
        clone: bool = False,
        *,
        non_blocking: bool = False,
        keys_to_update: Sequence[Any] | None = None,
        **kwargs: Any,
    ) -> Self:
        """Copies every value into its existing field, in place; a key that is not a
        field is an ``UnknownFieldError`` (a ``ValueError``, as the peer raises)."""
        if kwargs and (input_dict_or_td is None or type(input_dict_or_td) is dict):
            input_dict_or_td, kwargs = {**(input_dict_or_td or {}), **kwargs}, {}
        input_dict_or_td = hooked_source(self, input_dict_or_td)  # as update's
        source = storage_of(unset_dropped(self, input_dict_or_td))
        self._require_fields([*(source.keys() if source is not None else ()), *kwargs])
        keys = None if keys_to_update is None else [key_path(k) for k in keys_to_update]
        check_written_types(self, source)
        check_written_types(self, kwargs)
        check_row_write(self, ..., source, keys, "update_")
        check_row_write(self, ..., kwargs, keys, "update_")
        check_kinds_kept(self, source, "update_", keys)
        check_kinds_kept(self, kwargs, "update_", keys)
        options = {"non_blocking": non_blocking, "keys_to_update": keys_to_update, **kwargs}
        return self._result(self._tensordict.update_(source, clone, **options))

    def update_at_(
        self,
        input_dict_or_td: Mapping[Any, Any] | TensorCollection,
        idx: Any,
        clone: bool = False,
        *,
        non_blocking: bool = False,
        keys_to_update: Sequence[Any] | None = None,
    ) -> Self:
        """Writes every value into the elements ``idx`` of its field (all checked first)."""
        keys = None if keys_to_update is None else [key_path(k) for k in keys_to_update]
        check_written_types(self, input_dict_or_td)
        check_row_write(self, idx, input_dict_or_td, keys, "update_at_")
        source = storage_of(stored_rows(self, idx, input_dict_or_td))
        self._tensordict.update_at_(source, idx, clone, keys_to_update=keys_to_update)
        return self

    def _check_row_write(self, index: Any, value: Any) -> None:
        check_row_write(self, index, value)

    def _check_in_place(self, values: Mapping[str, Any], index: Any, op: str) -> None:
        check_written_types(self, values)
        if index is ...:
            check_kinds_kept(self, values, op)
        check_row_write(self, index, values, None, op)

    def _result(self, result: TensorDictBase) -> Self:
        """What the storage returned, as a record: ``self`` for the storage itself."""
        if result is self._tensordict:
            return self
        return self._from_tensordict_unchecked(result)  # type: ignore[arg-type]

    def _results(self, results: tuple[TensorDictBase, ...]) -> tuple[Self, ...]:
        return tuple(map(self._result, results))

    def insert(self, index: int, tensordict: Any) -> None:
        """Inserts a record (or a collection of its fields) as a new member before
        position ``index`` of the lazy stack this record is over (``tclass.lazy_stack``
        of records gives one), as the peer (its storage's ``insert``); the new member
        is checked as a row written into this class is.

        Raises:
            UnknownFieldError: (an ``AttributeError``, as the peer's) the record is over
                one TensorDict, not a lazy stack; or a key of ``tensordict`` is no field.
            FieldTypeError, FieldSpecError: a value its field never holds, or that does
                not fit the field's spec.
            StackTypeError, StackError, LockedError: as ``LazyStackedTensorDict.insert``
                (not a collection; another batch size; a locked stack).
        """
        storage = self._lazy_storage("insert")
        storage.insert(index, self._new_member(tensordict, "insert"))

    def append(self, tensordict: Any) -> None:
        """Adds a record as the last member of the lazy stack this record is over (see
        :meth:`insert`)."""
        storage = self._lazy_storage("append")
        storage.append(self._new_member(tensordict, "append"))

    def _lazy_storage(self, op: str) -> LazyStackedTensorDict:
        storage = self._tensordict
        if isinstance(storage, LazyStackedTensorDict):
            return storage
        cls = type(self).__name__
        msg = (
            f"{cls}.{op}: this {cls} holds one TensorDict, not a lazy stack, so it has no "
            f"member to {op} (the peer: {cls!r} object has no attribute {op!r}); build a "
            "lazy stack of records with tclass.lazy_stack([rec, other]), or join them "
            "with torch.cat([rec, other])"
        )
        raise UnknownFieldError(msg)

    def _new_member(self, value: Any, op: str) -> Any:
        """The storage of ``value`` added to this record's lazy stack, checked as a row
        of this class (a record of this class was checked when it was built); anything
        but a collection goes to the stack, which refuses it as the peer's."""
        if not isinstance(value, TensorCollection):
            return value
        check_written_keys(self, value)
        member = storage_of(value)
        if type(value) is not type(self):
            check_row_write(self._from_tensordict_unchecked(member), ..., value, None, op)
        return member

    def extend(self, tensordict: Sequence[Any] | TensorCollection) -> None:
        """Appends records (a list, or the parts of one along the stack dim) to the lazy
        stack this record is over, each checked first (see :meth:`insert`)."""
        storage = self._lazy_storage("extend")
        if isinstance(tensordict, TensorCollection):
            tensordict = tensordict.unbind(storage.stack_dim)
        storage.extend([self._new_member(part, "extend") for part in tensordict])

    @classmethod
    def fields(cls) -> tuple[dataclasses.Field[Any], ...]:
        """The fields of the class, as ``dataclasses.fields(cls)`` (the peer's older
        spelling)."""
        return dataclasses.fields(cls)

    # --- conversions, constructors from other forms: see RecordConversions
    # (_record_convert.py) ----------------------------------------------------------------

    def replace(self, *args: Mapping[str, Any] | TensorCollection, **changes: Any) -> Self:
        """A new record with some fields changed (the others' tensors and values shared,
        not copied), given as keywords and/or one mapping or collection (keywords win);
        works on frozen records too. Its nested records are new ones over the same
        tensors, as the peer's: setting a field of one leaves this record's as it was. A
        mapping or collection given for a nested record or TensorDict field is merged into
        (a copy of) it, as the peer's: the keys it lacks keep their values."""
        if args:
            changes = {**replacements(args), **changes}
        changes = merged_changes(self, changes)
        td = replaced_storage(self._tensordict, changes)
        for name, value in changes.items():
            if name not in self.__tclass_info__.field_names:
                raise self._unknown_field(name)
            store_field(type(self), td, name, value, check_spec=False)
        check_specs(type(self), td)  # the new record's fields together: several may change
        return self._from_tensordict_unchecked(td)

    # --- python protocols ----------------------------------------------------------------

    @shows_compact_repr
    def __repr__(self) -> str:
        return compact_repr(self)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self._tensordict))


def _rebuild(cls: type[TensorClass], td: TensorDict) -> TensorClass:
    """A record from its pickle. ``torch.load(f, weights_only=True)`` rebuilds one once
    the user allows its class (``torch.serialization.safe_globals([Cls])``)."""
    checked_class(cls, TensorClass, "a record")
    checked_class(type(td), TensorDictBase, f"the fields of a {cls.__name__}")
    return cls._from_tensordict_unchecked(td)


allow_unpickling(_rebuild)

inline_inherited(TensorClass)  # for torch.compile's guards: see _base/_inline.py
