"""A record's conversions and the constructors from other forms: to and from TensorDicts
and dicts, over HDF5 files and zarr stores, loaded from a folder, allocated from the
schema, drawn at random (a mixin of ``TensorClass``, in ``tclass._tensorclass._record``,
which holds the storage in ``_tensordict``)."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import os
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal, cast

import torch
from typing_extensions import Self, Unpack

from tclass._base._tensordict_base import TensorDictBase
from tclass._base.declared._persistence import H5Options, PathLike, ZarrOptions
from tclass._core._batch import BatchSizeLike
from tclass._core._device import DeviceLike
from tclass._core._names import DimName
from tclass._core._records import is_record, is_record_class, storage_of
from tclass._engine._lazy._stack import LazyStackedTensorDict
from tclass._engine._nontensor import NonTensorData
from tclass._engine._nontensor_stack import NonTensorStack
from tclass._engine._td import TensorDict
from tclass._interop._constructors import infer_batch_size, resolve_batch_options, to_dict
from tclass._interop._params import TensorDictParams
from tclass._io.store._open import open_as, open_zarr_as, record_over
from tclass._io.store._persistent import PersistentTensorDict
from tclass._io.store._view import PersistentTensorDictView
from tclass._tensorclass._allocate import allocate
from tclass._tensorclass._builder import record_from_entries, shares_storage, takes_as_is
from tclass._tensorclass._generated import generated_build
from tclass._tensorclass._json_schema import json_schema
from tclass._tensorclass._random import TorchChooser, random_record
from tclass.errors import NotAMappingError, UnknownFieldError

if TYPE_CHECKING:
    from tclass._tensorclass._builder import ClassInfo
    from tclass._tensorclass._record import TensorClass

__all__ = ["RecordConversions"]


class RecordConversions(TensorDictBase):
    """What ``TensorClass`` converts to and builds from."""

    if TYPE_CHECKING:  # TensorClass's slot, class information and methods
        _tensordict: TensorDict | LazyStackedTensorDict
        __tclass_info__: ClassVar[ClassInfo]

        def _absent_fields(self) -> Sequence[str]: ...
        @classmethod
        def _from_tensordict_unchecked(cls, td: TensorDict | LazyStackedTensorDict) -> Self: ...
        @classmethod
        def _stack_lazily(cls, members: list[Any], dim: int, batch_size: torch.Size) -> Self: ...
    else:
        __slots__ = ()

    def to_tensordict(self, *, retain_none: bool | None = None) -> TensorDict:
        """A TensorDict copy: nested records become TensorDicts, Python values stay
        ``NonTensorData`` nodes; with ``retain_none``, absent fields are ``None`` values
        there. (``from_tensordict`` wraps without copying.) Its tensors are plain ones,
        as a TensorDict's ``to_tensordict`` gives (not the parameters of a
        ``TensorDictParams`` that holds the record, nor one held in a field)."""
        out = _as_plain(self._tensordict.to_tensordict())
        if retain_none:
            for name in self._absent_fields():
                out.set(name, NonTensorData(None, out.batch_size, out.device))
        return out

    @classmethod
    def from_h5(cls, filename: PathLike, **options: Unpack[H5Options]) -> Self:
        """A record of this class over an HDF5 file (``options`` as
        ``PersistentTensorDict.from_h5``'s), checked against the class as
        :meth:`load_memmap` checks a folder; nested records are their fields' classes."""
        return cast(Self, open_as(cls, filename, **options)._incoming())

    @classmethod
    def from_zarr(cls, filename: Any, **options: Unpack[ZarrOptions]) -> Self:
        """A record of this class over a zarr store (``options`` as
        ``PersistentTensorDict.from_zarr``'s), checked against the class as
        :meth:`load_memmap` checks a folder; nested records are their fields' classes."""
        return cast(Self, open_zarr_as(cls, filename, **options)._incoming())

    def to_h5(self, filename: PathLike, **kwargs: Any) -> Self:
        """A record of this class over a new HDF5 file holding this one's entries (see
        ``TensorDict.to_h5``), opened for reading and writing."""
        return cast(Self, super().to_h5(filename, **kwargs))

    def to_zarr(self, filename: Any, *, allow_pickle: bool | None = None, **kwargs: Any) -> Self:
        """A record of this class over a new zarr store holding this one's entries (see
        ``TensorDict.to_zarr``), opened for reading and writing."""
        return cast(Self, super().to_zarr(filename, allow_pickle=allow_pickle, **kwargs))

    def close(self) -> None:
        """Closes the HDF5 file or zarr store the record reads its fields from
        (``Cls.from_h5``, ``record.to_zarr``...); a record in memory or over a folder
        holds none: nothing to do."""
        storage: Any = self._tensordict
        if isinstance(storage, PersistentTensorDict):
            storage.close()

    @classmethod
    def _from_plain(cls, td: TensorDict) -> Self:
        """A TensorDict built by a classmethod (``fromkeys``, ``from_namedtuple``...)
        as a record of this class (see :meth:`from_tensordict`): data that comes in, so
        ``__post_init__`` runs."""
        return cls.from_tensordict(td)

    @classmethod
    def _item_builder(cls) -> Callable[..., Any]:
        return cls.from_dict

    @classmethod
    def from_tensordict(
        cls, td: TensorDictBase, non_tensordict: Mapping[str, Any] | None = None
    ) -> Self:
        """A record over ``td``'s entries, without copying tensors.

        The record keeps the TensorDict ``td`` itself as its storage, as the peer's (a
        key set through either is seen by the other, ``td.lock_()`` locks the record),
        when the class's checks keep its entries as they are; it builds its own over
        them when a field converts or casts an entry, a default is filled in,
        ``non_tensordict`` is given, a field has a spec or value constraint, or the class
        is frozen and ``td`` unlocked (see ``shares_storage``). A locked ``td`` gives a
        locked record. A ``TensorDictParams`` is kept itself where its TensorDict would
        be: the record's writes are converted as ``params`` converts them, its lock is
        ``params``'s (see ``ParamsStorage``).

        Its keys come in ``td``'s order, as the peer's (then the fields it lacks).
        Nested TensorDicts under tensorclass fields become those classes. Over an HDF5
        file or zarr store (a ``PersistentTensorDict``, or a view of its rows), the record
        reads and writes the file, as ``Cls.from_h5`` gives it (and checks the file as
        that does). The class's ``__post_init__`` runs once, as for every record that
        comes in (``from_dict``, ``fromkeys``, ``from_any``, a load...), after those of the
        nested records (as the peer's, ``skip_post_init_on_rebuild`` or not); what it
        raises propagates. A field that
        ``td`` does not hold takes its value in ``non_tensordict`` (the peer's argument,
        for Python values), else its declared default (the peer: ``None``); a required
        field that neither gives is not set yet (reads ``None``), as in the peer.

        Raises:
            UnknownFieldError: if ``td`` or ``non_tensordict`` has a key that is not a field.
            FieldTypeError: if an entry does not fit its field.
            SchemaMismatchError: if a file does not hold what the class declares.
        """
        storage: Any = td if td.__class__ is TensorDict else storage_of(td)
        kept = storage  # what a record that shares keeps
        if isinstance(storage, TensorDictParams):  # kept, checked as the TensorDict it wraps
            storage = _parameters_of(cls, storage)
        elif isinstance(storage, PersistentTensorDict) and not non_tensordict:
            return cast(Self, record_over(cls, storage, share=True)._incoming())
        if isinstance(storage, LazyStackedTensorDict):  # each member's, as the peer's
            members = [cls.from_tensordict(m, non_tensordict) for m in storage.tensordicts]
            if all(m._tensordict is t for m, t in zip(members, storage.tensordicts)):
                return cls._from_tensordict_unchecked(storage)  # the stack itself, shared
            stacked = cls._stack_lazily(members, storage.stack_dim, storage.batch_size)
            return stacked.lock_() if storage.is_locked else stacked
        shared = False if non_tensordict else shares_storage(_record_class(cls), storage)
        if shared:
            return cls._from_tensordict_unchecked(kept)._incoming()  # td itself, shared
        record = cls._rebuild(td, non_tensordict)
        if shared is None and _stored_as_is(storage, record._tensordict):
            record = cls._from_tensordict_unchecked(kept)
        elif type(storage) is TensorDict and kept.is_locked:
            record._tensordict.lock_()  # a copy of a locked TensorDict is, as the peer's
        return record._incoming()

    @classmethod
    def _rebuild(cls, td: TensorDictBase, non_tensordict: Mapping[str, Any] | None = None) -> Self:
        """:meth:`from_tensordict` without ``__post_init__``: the constructor of the
        records that operations make from existing ones (index, joins, pad, consolidate,
        field casting...), whose data the hook checked when it came in."""
        if td.__class__ is not TensorDict:  # (a plain TensorDict, the common case, is none)
            storage = storage_of(td)
            if isinstance(storage, LazyStackedTensorDict):  # stays lazy: one record per member
                members = [cls._rebuild(m, non_tensordict) for m in storage.tensordicts]
                return cls._stack_lazily(members, storage.stack_dim, storage.batch_size)
            if (
                isinstance(storage, (PersistentTensorDict, PersistentTensorDictView))
                and not non_tensordict
            ):
                return record_over(cls, storage)  # type: ignore[no-any-return]
        entries: Mapping[str, Any] = td._entries()
        if non_tensordict:
            entries = {**non_tensordict, **entries}
        record = record_from_entries(
            _record_class(cls), entries, td.batch_size, td.device, td._dim_names, entry_order=True
        )
        return cast(Self, record)

    def _incoming(self, built: frozenset[str] = frozenset()) -> Self:
        """Runs ``__post_init__`` on this record that came in from outside, after it ran
        on the nested records (their hooks first, as the peer's) but those of the fields
        ``built`` names (records given as they are: their hooks ran when they were
        built): InitVars take their defaults (none for a hook that can be called without
        them, as the peer's). A frozen record is unlocked while its hook sets what it
        derives; over a lazy stack, each member's runs (as the peer's)."""
        storage = self._tensordict
        if isinstance(storage, LazyStackedTensorDict):
            members: list[Any] = storage.tensordicts  # (their storages)
            for member in members:
                self._from_tensordict_unchecked(member)._incoming(built)
            return self
        tensors = storage._entries() if storage.__class__ is TensorDict else {}
        for name in type(self).__tclass_info__.field_names:
            if name in built or tensors.get(name).__class__ is torch.Tensor:  # (no record)
                continue
            if storage._has_entry(name) and storage._child(name) is not None:  # (no data read)
                nested = getattr(self, name)
                if is_record(nested):
                    nested._incoming()
        post_init = getattr(type(self), "__post_init__", None)
        if post_init is None:
            return self
        frozen = self.__tclass_info__.options["frozen"] and self._tensordict.is_locked
        if frozen:
            self._tensordict.unlock_()
        try:
            post_init(self, *_initvar_defaults(type(self), post_init))
        finally:
            if frozen:
                self._tensordict.lock_()
        return self

    @classmethod
    def rand(
        cls,
        batch_size: BatchSizeLike,
        dims: Mapping[str, int | Sequence[int]] | None = None,
        generator: torch.Generator | None = None,
        *,
        device: DeviceLike = None,
    ) -> Self:
        """A random record that satisfies everything the class declares: each tensor
        field one of its dtypes, its spec'd shape (each named dim one size, from
        ``dims`` or drawn from 1 to 4), values within its constraints; nested records
        alike; each Python-value field a random value of its annotation; optional
        fields set (but a record's own class inside it). Built by the constructor,
        which checks it. ``generator`` (a CPU ``torch.Generator``) makes it repeatable;
        ``tclass.testing.records(Cls)`` is the hypothesis strategy.

        Raises:
            FieldSpecError: a name in ``dims`` no spec uses, or a dtype without a value
                its constraints allow.
            FieldTypeError: a required field of a type tclass cannot build.
        """
        record = random_record(
            _record_class(cls), batch_size, dims, TorchChooser(generator), device
        )
        return cast(Self, record)

    @classmethod
    def json_schema(cls) -> dict[str, Any]:
        """The class as a JSON Schema document (draft 2020-12) describing a record's JSON
        form (``to_dict(convert_tensors=True)``): each tensor field's dtype, dims (batch
        dims marked) and value constraints, each Python-value field's JSON type, nested
        records by ``$ref``, optional fields not ``required``. Saving a record writes
        it into the folder; ``python -m tclass schema module:Class`` prints it."""
        return json_schema(cls)

    @classmethod
    def _from_saved(cls, td: TensorDictBase) -> Self:
        """:meth:`from_tensordict` for a loaded record: the loader compared the folder's
        shapes and dtypes with the class's specs before mapping a file, and checked the
        constrained values as it read them (one pass over each file, not two). A
        TensorDict holding just the fields, in order, each a tensor its field takes as it
        is (what a load of an all-tensor record gives) becomes the record's storage."""
        storage = storage_of(td)
        if isinstance(storage, LazyStackedTensorDict):
            members = [cls._from_saved(member) for member in storage.tensordicts]
            return cls._stack_lazily(members, storage.stack_dim, storage.batch_size)
        if storage is td and isinstance(td, TensorDict) and takes_as_is(_record_class(cls), td):
            return cls._from_tensordict_unchecked(td)
        entries, batch = td._entries(), td.batch_size
        record = record_from_entries(
            _record_class(cls), entries, batch, td.device, td._dim_names, False,
            entry_order=True, saved=True,
        )  # fmt: skip
        return cast(Self, record)

    def to_dict(
        self,
        *,
        retain_none: bool = True,
        convert_tensors: bool | Literal["numpy"] = False,
        tolist_first: bool = False,
    ) -> dict[str, Any]:
        """Nested plain dicts: tensors (lists with ``convert_tensors``, numpy arrays with
        ``"numpy"``), Python values,
        nested records as dicts (lists of dicts with ``tolist_first``, see
        ``TensorDict.to_dict``), and ``None`` for absent fields (nested records' too) unless
        not ``retain_none``."""
        out = to_dict(self._tensordict, convert_tensors, tolist_first, retain_none)
        if retain_none:
            for name in self._absent_fields():
                out[name] = None
        return out

    @classmethod
    def from_dict(
        cls,
        data: Mapping[str, Any],
        *,
        auto_batch_size: bool | None = None,
        batch_size: BatchSizeLike = None,
        device: DeviceLike = None,
        batch_dims: int | None = None,
        names: Sequence[DimName] | None = None,
    ) -> Self:
        """A record from a mapping of fields; nested mappings become nested records.

        Missing fields take their declared defaults, or ``None`` (not set yet: the peer
        fills them so too) for fields without one. Without ``batch_size``, the batch
        size is ``[]`` (the peer's default) unless ``auto_batch_size=True``,
        ``batch_dims`` or ``names`` asks for the largest leading shape the tensors share
        (at most ``batch_dims`` or as many dims as ``names``), as ``TensorDict.from_dict``
        infers it; a list or array given to a tensor field counts as the tensor it becomes,
        a list a Python-value field keeps one value per element as that stack.

        Raises:
            UnknownFieldError: for a key that is not a field.
        """
        info = cls.__tclass_info__
        if not hasattr(data, "keys"):
            msg = (
                f"{cls.__name__}.from_dict expects a mapping of fields (a dict or a tensor "
                f"collection), got {type(data).__name__} {data!r:.80}; pass e.g. "
                f"{cls.__name__}.from_dict({{'{info.init_names[0] if info.init_names else 'x'}'"
                ": value})"
            )
            raise NotAMappingError(msg)
        for key in data:
            if key not in info.init_names:
                raise UnknownFieldError(
                    f"{cls.__name__}.from_dict: {key!r} is not a field of {cls.__name__} "
                    f"(fields: {', '.join(info.init_names)})"
                )
        batch, cap = resolve_batch_options(
            f"{cls.__name__}.from_dict", batch_size, auto_batch_size, batch_dims, names=names
        )
        if batch is None:
            batch = infer_batch_size(_with_array_tensors(cls, data), cap)
            data = _nested_inferred(_record_class(cls), data, batch, cap, device)
        given = data
        data = {**dict.fromkeys(_required_fields(cls)), **data}
        # The generated constructor, not a class's own __init__ (whose arguments need not
        # be the fields): the mapping holds fields, as the peer's from_dict takes them.
        constructor: Callable[..., Self] = functools.partial(generated_build, cls)
        options = {"batch_size": batch, "device": device, "names": names}
        # A shadow field of that name: the constructor takes the field there, and the
        # option asked for goes to the storage (as the peer's, which builds it first).
        shadowed = {name: options.pop(name) for name in options.keys() & set(info.init_names)}
        record = constructor(**data, **options)
        _storage_options(record, shadowed)
        _in_key_order(record, given)
        return record

    @classmethod
    def allocate(
        cls,
        batch_size: BatchSizeLike,
        *,
        dims: Mapping[str, int | Sequence[int]] | None = None,
        prefix: str | os.PathLike[str] | None = None,
        device: DeviceLike = None,
    ) -> Self:
        """A zero-filled record built from the class's schema alone, no example needed.

        Every field annotated with a shape (``Annotated[Tensor, Spec(...)]`` or
        jaxtyping) gets zeros of its dtype and shape, nested records are allocated the
        same way, Python values take their defaults, optional fields stay unset.

        Args:
            batch_size: the batch size.
            dims: the sizes of the named dims the specs use (``{"h": 84, "w": 84}``; a
                variadic ``*name`` takes a tuple).
            prefix: memory-map the record there: sparse files, zero-filled, taking no
                disk space until written (as ``memmap_like``); the record is locked.
            device: where the tensors go (without ``prefix``).

        Raises:
            FieldSpecError: listing every field that cannot be allocated (a tensor field
                without a spec, a dim with no size) and every name in ``dims`` that no
                spec uses.
        """
        return cast(Self, allocate(_record_class(cls), batch_size, dims, prefix, device))


def _storage_options(record: RecordConversions, options: dict[str, Any]) -> None:
    """Gives ``record``'s storage the ``batch_size``, ``names`` and ``device`` asked for
    (those not None) that fields of the same names kept from its constructor."""
    storage = record._tensordict
    if options.get("batch_size") is not None:
        storage.batch_size = options["batch_size"]
    if options.get("names") is not None:
        storage.names = options["names"]
    if options.get("device") is not None:
        object.__setattr__(record, "_tensordict", storage.to(options["device"]))


def _parameters_of(cls: type, params: TensorDictParams) -> TensorDict | TensorDictParams:
    """What ``from_tensordict`` checks the fields of ``params`` in: the TensorDict it
    wraps (a record that shares keeps ``params`` itself, as the peer's, and writes
    through it: see ``ParamsStorage``); ``params`` (never shared: a record over a copy of
    its mapping) for a frozen class over unlocked ``params``, which the record would lock
    (the TensorDict it wraps may be locked alone, by ``lock=True``)."""
    wrapped = params._joined_as()
    frozen = cls.__tclass_info__.options["frozen"]  # type: ignore[attr-defined]
    return params if frozen and not params.is_locked else wrapped


def _stored_as_is(td: TensorDict, built: Any) -> bool:
    """Whether the storage ``from_tensordict`` built (``built``) holds ``td``'s entries as
    they are (the same objects, in the same order), with ``td``'s batch size, device and
    dim names: the record then keeps ``td`` itself instead, as the peer's (a key set,
    deleted or replaced through either is seen by the other, ``td.lock_()`` locks the
    record). See ``shares_storage`` for the classes and entries it is asked about."""
    if type(built) is not TensorDict:
        return False
    ours, theirs = built._entries(), td._entries()
    if len(ours) != len(theirs):
        return False
    for (key, value), (other_key, other) in zip(ours.items(), theirs.items()):
        if value is not other or key != other_key:
            return False
    return (
        built.batch_size == td.batch_size
        and built.device == td.device
        and built._dim_names == td._dim_names
    )


def _record_class(cls: type[RecordConversions]) -> type[TensorClass]:
    """``cls`` as the record class it is, for the checkers (``TensorClass`` is this
    mixin's one subclass): the builders it calls take record classes. Not through
    ``typing.cast``: under ``torch.compile`` its result loses the class's source, and
    reading the class's ``__tclass_info__`` from it broke the graph."""
    return cls  # type: ignore[return-value]


def _as_plain(td: TensorDict) -> TensorDict:
    """``td`` with nested records replaced by their TensorDicts and lazy stacks by dense
    copies, recursively (in place)."""
    for key, value in list(td._items()):
        storage = storage_of(value)
        if isinstance(storage, LazyStackedTensorDict):
            td._put(key, _as_plain(storage.to_tensordict()))
        elif isinstance(storage, TensorDict):
            td._put(key, _as_plain(storage))
    return td


def _in_key_order(record: Any, data: Mapping[str, Any]) -> None:
    """Orders the entries of a record ``from_dict`` just built (and of its nested records
    built from mappings) as ``data`` lists its keys, as the peer's ``from_dict`` stores
    them (``Rec.from_dict(loaded.to_dict())`` keeps a loaded record's order): fields
    ``data`` leaves out come after. A fresh record's own storage, no view shares it."""
    storage = storage_of(record)
    if not isinstance(storage, TensorDict):
        return
    entries = storage._entries()
    given = list(data.keys())  # not iter(data): a TensorDict given there iterates its rows
    order = [key for key in given if key in entries]
    if order != list(entries)[: len(order)]:
        rest = (k for k in entries if k not in given)
        items = [(key, entries[key]) for key in (*order, *rest)]
        entries.clear()
        entries.update(items)
    for key, value in data.items():
        if isinstance(value, Mapping) and is_record(entries.get(key)):
            _in_key_order(entries[key], value)


def _with_array_tensors(cls: type[Any], data: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` with each array-like given to a field that makes it a tensor replaced by
    that tensor, so that its shape counts when ``from_dict`` infers the batch size (the
    peer's ``from_dict`` makes tensors of lists first: ``{"a": [[1, 2]]}`` gives ``[1]``);
    a list that a Python-value field keeps one value per element counts as that stack
    (``{"label": []}`` under tensors of ``[0, 2]`` gives ``[0]``, as the peer's stack of it)."""
    rules = cls.__tclass_info__.rules
    out = dict(data)
    for key, value in data.items():
        rule = rules.get(key)
        if rule is None:
            continue
        nested = rule.convert_to
        if isinstance(value, Mapping) and nested is not None and is_record_class(nested):
            out[key] = _with_array_tensors(nested, value)  # a nested record's own fields
            continue
        tensor = rule.array_tensor(value)
        if tensor is not None:
            out[key] = tensor
        elif type(value) is list:
            stack = rule.store(value, torch.Size(), None)  # (at no batch: nothing checked)
            if isinstance(stack, NonTensorStack):
                out[key] = stack
    return out


def _nested_inferred(
    cls: type[TensorClass],
    data: Mapping[str, Any],
    batch: torch.Size,
    cap: int | None,
    device: DeviceLike,
) -> Mapping[str, Any]:
    """``data`` with each mapping given to a nested-record (or TensorDict) field built
    with its own inferred batch size, as ``TensorDict.from_dict`` infers each nested
    dict's (the peer's record ``from_dict`` too): ``{"inner": {"v": zeros(3, 2)}}``
    gives ``inner`` the batch size ``[3, 2]`` under a ``[3]`` record. A mapping whose
    inferred size does not extend ``batch`` (no tensors in it) takes ``batch``, by the
    constructor."""
    rules = cls.__tclass_info__.rules
    out = dict(data)
    for key, value in data.items():
        rule = rules.get(key)
        target: Any = None if rule is None else rule.convert_to
        if target is None or not isinstance(value, Mapping):
            continue
        nested = target.from_dict(value, auto_batch_size=True, batch_dims=cap, device=device)
        if nested.batch_size[: len(batch)] == batch:
            out[key] = nested
    return out


def _required_fields(cls: type) -> list[str]:
    """The ``__init__`` fields of ``cls`` without a default (from the class's info:
    ``torch.compile`` cannot trace ``dataclasses.fields`` of a class)."""
    return [
        f.name
        for f in _record_class(cls).__tclass_info__.fields
        if f.init and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    ]


def _initvar_defaults(cls: type, post_init: Callable[..., None]) -> tuple[Any, ...]:
    """The defaults of ``cls``'s InitVars, that its ``__post_init__`` gets outside
    ``__init__`` (none if it can be called without them, as the peer's)."""
    defaults = tuple(
        field.default
        for field in cls.__dataclass_fields__.values()  # type: ignore[attr-defined]
        if field._field_type is dataclasses._FIELD_INITVAR  # type: ignore[attr-defined]
    )
    if not defaults:
        return ()
    try:
        inspect.signature(post_init).bind(None)
    except TypeError:
        return defaults
    return ()
