"""``TypedTensorDict``: a TensorDict whose fields are declared as class annotations, as
a ``TypedDict``'s are (the peer's experimental class of 0.15).

A subclass declares ``eta: Tensor``; its instances are TensorDicts (every operation,
``td["eta"]``, ``**td``) with attribute access to the fields, a constructor that takes
them by keyword and checks that every required field is given and no other, defaults
(a class value, returned while the field is not set), ``NotRequired[...]`` fields,
inheritance of fields and options, and ``from_tensordict`` to view an existing
TensorDict with the class's fields. Every operation returns the subclass, as the
engine's results keep their class.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, get_origin

import torch
import typing_extensions

from tclass._base.implemented._key_ops import KeyOps
from tclass._base.implemented._leaf_walk import Gather
from tclass._core._class_options import OPTIONS
from tclass._core._device import DeviceLike
from tclass._core._names import DimName
from tclass._core._records import storage_of
from tclass._engine._td import TensorDict
from tclass._engine._typed_source import SourceEntries, source_of
from tclass.errors import (
    ArgumentError,
    ArgumentValueError,
    ReservedNameError,
    UnknownFieldError,
    UnsetFieldError,
)

__all__ = ["TypedTensorDict"]

# The TensorClass options a TypedTensorDict takes (ClassOptions says which), and of these
# the ones accepted and inert, as the peer.
_OPTIONS = tuple(name for name, how in OPTIONS.items() if how.typed is not None)
_IGNORED = tuple(name for name, how in OPTIONS.items() if how.typed == "inert")
_NOT_REQUIRED = {typing_extensions.NotRequired}
if sys.version_info >= (3, 11):
    import typing

    _NOT_REQUIRED.add(typing.NotRequired)
_MISSING: Any = object()
_RESERVED: frozenset[str] = frozenset(dir(TensorDict))


class _TypedMeta(type):
    """Gives ``TypedTensorDict["frozen"]``: a base class with those options on."""

    def __getitem__(cls, options: str | tuple[str, ...]) -> type:
        chosen = options if isinstance(options, tuple) else (options,)
        for option in chosen:
            if option not in _OPTIONS:
                msg = f"Unknown TypedTensorDict option: {option!r}. Valid options: {_OPTIONS}"
                raise ArgumentValueError(msg)
            if option in _IGNORED:
                _warn_ignored(option, stacklevel=3)
        name = f"TypedTensorDict_{'_'.join(chosen)}"
        return type(cls)(name, (cls,), {"_option_base": True}, **dict.fromkeys(chosen, True))


class TypedTensorDict(TensorDict, metaclass=_TypedMeta):
    """A TensorDict with fields declared as class annotations::

        class State(TypedTensorDict):
            eta: Tensor
            X: Tensor
            steps: NotRequired[Tensor]

        state = State(eta=torch.zeros(5, 3), X=torch.zeros(5, 4), batch_size=[5])
        state.eta, state["X"], state[0]  # a State

    Options, inherited by subclasses: ``shadow`` (a field may take the name of a
    TensorDict attribute, which it then hides) and ``frozen`` (instances are locked), as
    ``class State(TypedTensorDict, frozen=True)`` or ``TypedTensorDict["frozen"]``.
    ``autocast``, ``nocast`` and ``tensor_only`` are accepted and change nothing (the
    peer deprecates them, with a ``DeprecationWarning``)."""

    __slots__ = ()
    __expected_keys__: ClassVar[frozenset[str]] = frozenset()
    __required_keys__: ClassVar[frozenset[str]] = frozenset()
    __optional_keys__: ClassVar[frozenset[str]] = frozenset()
    __field_defaults__: ClassVar[dict[str, Any]] = {}
    _shadow: ClassVar[bool] = False
    _frozen: ClassVar[bool] = False

    def __init_subclass__(cls, **options: Any) -> None:
        chosen = {name: options.pop(name) for name in _OPTIONS if name in options}
        super().__init_subclass__(**options)
        for name, value in chosen.items():
            if name in _IGNORED and not cls.__dict__.get("_option_base", False):
                _warn_ignored(name, stacklevel=4)
            setattr(cls, f"_{name}", bool(value))
        if cls.__dict__.get("_option_base", False):
            return
        _declare_fields(cls)

    def __init__(
        self,
        _source: Any = None,
        *,
        batch_size: Any = None,
        device: DeviceLike = None,
        names: Sequence[DimName] | None = None,
        non_blocking: bool | None = None,
        lock: bool = False,
        **fields: Any,
    ) -> None:
        cls = type(self)
        if _source is None:
            missing = cls.__required_keys__.difference(fields)
            if missing:
                msg = f"{cls.__name__}() missing required field(s): {', '.join(sorted(missing))}"
                raise ArgumentError(msg)
            unknown = set(fields).difference(cls.__expected_keys__)
            if unknown:
                msg = f"{cls.__name__}() got unexpected field(s): {', '.join(sorted(unknown))}"
                raise ArgumentError(msg)
            _source = fields
        elif fields:
            raise ArgumentError(f"{cls.__name__}() takes a source or fields, not both")
        super().__init__(
            _source, batch_size, device, names, non_blocking=bool(non_blocking), lock=lock
        )
        if fields is not _source:
            _warn_missing(cls, self, f"{cls.__name__}(source)")
        if cls._frozen:
            self.lock_()

    if not TYPE_CHECKING:  # checkers still flag unknown attributes

        def __getattr__(self, name: str) -> Any:
            """An attribute that is neither a field nor a method: an
            ``UnknownFieldError`` (an ``AttributeError``, as the peer's) naming the
            fields; a private name or one read in compiled code, Python's own."""
            if hasattr(type(self), name):  # a field not set (a property): its own error
                return object.__getattribute__(self, name)
            if name.startswith("_") or torch.compiler.is_compiling():
                raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
            fields = ", ".join(sorted(type(self).__expected_keys__))
            msg = f"{type(self).__name__!r} object has no attribute or field {name!r} "
            raise UnknownFieldError(msg + f"(fields: {fields})")

    def __setitem__(self, index: Any, value: Any) -> None:
        """An entry (by key) as a TensorDict sets it; rows (any other index) of an
        instance over another kind of collection are written into that collection."""
        source = source_of(self)
        is_key = isinstance(index, str) or (
            isinstance(index, tuple) and all(isinstance(part, str) for part in index)
        )
        if source is None or is_key:
            super().__setitem__(index, value)
        else:
            source[index] = value

    # --- in-place writes: an instance over another kind of collection writes into it -------
    # The in-place methods (``add_``, ``+=``, ``copy_``, ``set_``, ``apply_``...) reach the
    # tensors they write into through the accessors below, which an instance whose
    # entries are read through a source (a lazy stack's stacked tensors, a file's rows:
    # copies) answers with that source's own: its members' tensors, its rows read and
    # written back, the collection holding a key by its own rules.

    def _collect(
        self, into: Gather, operands: tuple[Any, ...], batch_dims: int, prefix: tuple[str, ...]
    ) -> None:
        """An in-place write's walk gathers the source's tensors (see ``Gather``)."""
        source = source_of(self) if into.in_place else None
        if source is None:
            super()._collect(into, operands, batch_dims, prefix)
        else:
            source._collect(into, operands, batch_dims, prefix)

    def _gather_tree(self, into: Gather, other: Any) -> bool:
        """The fast walk of an in-place write is the source's (see :meth:`_collect`)."""
        source = source_of(self) if into.in_place else None
        if source is None:
            return super()._gather_tree(into, other)
        return source._gather_tree(into, other)

    def _stage_in_place(
        self, fn: Callable[..., torch.Tensor | None], others: tuple[Any, ...], staged: Any
    ) -> None:
        """``apply_``'s walk: the source's, by its rules."""
        source = source_of(self)
        if source is None:
            super()._stage_in_place(fn, others, staged)
        else:
            source._stage_in_place(fn, others, staged)

    def _tensor_leaves(self) -> Iterator[torch.Tensor]:
        """The source's tensors, unstacked (``requires_grad_``, ``detach_`` and
        ``share_memory_`` reach them)."""
        source = source_of(self)
        return super()._tensor_leaves() if source is None else source._tensor_leaves()

    def _holder(self, path: tuple[str, ...]) -> KeyOps | None:
        """The collection holding the entry ``path`` (which writes it by its own rules:
        ``set_``, ``set_at_``, ``fill_``, ``update_``...): the source's."""
        source = source_of(self)
        return super()._holder(path) if source is None else source._holder(path)

    def to_tensordict(self, *, retain_none: bool | None = None) -> TensorDict:
        """A plain TensorDict copy (tensors cloned), as the peer gives."""
        copy = self.clone()
        out = TensorDict._new_unchecked(copy._tensors, copy._batch_size, copy._device)
        out._assign_names(copy._dim_names)
        return out

    @classmethod
    def from_tensordict(cls, td: Any, *, check: bool = True) -> Any:
        """An instance of this class over ``td``'s entries, without copying: entries set
        or replaced through either one are seen by the other (a record's storage
        included).

        ``td`` may be any collection (a lazy stack, a file-backed one...): the instance
        then reads and writes its entries through ``td`` (``inst.a = x`` sets ``td``'s
        ``"a"``; row writes and in-place methods such as ``set_`` or ``add_`` write into
        ``td``), as the peer's wrapper does; what an operation returns (``inst[0]``,
        ``clone``, ``torch.stack``) is an in-memory instance of this class.

        Args:
            td: a collection (or a record, viewed through its storage).
            check: refuse a ``td`` that lacks a required field (with False, reading
                such a field is an ``AttributeError``).

        Raises:
            ArgumentError: (a ``TypeError``) ``check`` and a required field is missing.
        """
        storage = storage_of(td)
        if isinstance(storage, TensorDict):
            entries: Any = storage._tensors
            batch_size, device = storage._batch_size, storage._device
        else:
            entries = SourceEntries(storage)
            batch_size, device = storage.batch_size, storage.device
        if check:
            missing = cls.__required_keys__.difference(entries)
            if missing:
                msg = (
                    f"{cls.__name__}.from_tensordict() missing required field(s): "
                    f"{', '.join(sorted(missing))}"
                )
                raise ArgumentError(msg)
        out = cls._new_unchecked(entries, batch_size, device)
        out._assign_names(storage._dim_names)
        # The entries are shared: an UnbatchedTensor may be there or be set through td
        # later, so shape ops look for one (else they would index its payload).
        out._mark_unbatched()
        return out


def _declare_fields(cls: type[TypedTensorDict]) -> None:
    """Collects the fields of ``cls`` and its TypedTensorDict bases, checks their names,
    and installs one property per field."""
    hints: dict[str, Any] = {}
    defaults: dict[str, Any] = {}
    for base in reversed(cls.__mro__):
        if not issubclass(base, TypedTensorDict) or base is TypedTensorDict:
            continue
        own = _own_hints(base)
        hints.update(own)
        defaults.update(base.__dict__.get("__field_defaults__", {}))
        for name in own:
            value = base.__dict__.get(name, _MISSING)
            if value is not _MISSING and not isinstance(value, property):
                defaults[name] = value
    expected, required = set(), set()
    for name, hint in hints.items():
        if name.startswith("_") or get_origin(hint) is ClassVar or hint is ClassVar:
            continue
        expected.add(name)
        if get_origin(hint) not in _NOT_REQUIRED and name not in defaults:
            required.add(name)
    if not cls._shadow:
        for name in sorted(expected & _RESERVED):
            msg = (
                f"Field '{name}' shadows a TensorDictBase attribute. Use "
                "TypedTensorDict['shadow'] to allow this."
            )
            raise ReservedNameError(msg)
    cls.__expected_keys__ = frozenset(expected)
    cls.__required_keys__ = frozenset(required)
    cls.__optional_keys__ = frozenset(expected - required)
    cls.__field_defaults__ = {name: defaults[name] for name in expected if name in defaults}
    for name in expected:
        setattr(cls, name, _field(name, defaults.get(name, _MISSING)))


def _own_hints(cls: type) -> dict[str, Any]:
    """The annotations ``cls`` declares itself; strings are evaluated in its module (as
    ``typing.get_type_hints`` does), kept as strings when they do not resolve."""
    raw = cls.__dict__.get("__annotations__") or {}
    module = sys.modules.get(cls.__module__)
    namespace = dict(vars(module)) if module is not None else {}
    resolved = {}
    for name, hint in raw.items():
        if isinstance(hint, str):
            try:
                hint = eval(hint, namespace, {cls.__name__: cls})  # noqa: S307 (an annotation)
            except Exception:  # noqa: BLE001 (kept as written, as the peer does)
                pass
        resolved[name] = hint
    return resolved


def _field(name: str, default: Any) -> property:
    def read(self: TypedTensorDict) -> Any:
        value = self._tensors.get(name, _MISSING)
        if value is not _MISSING:
            return value
        if default is not _MISSING:
            return default
        msg = (
            f"'{type(self).__name__}' has field '{name}' declared but not set: set it first "
            f"(instance.{name} = value, or instance[{name!r}] = value), or give the class a "
            "default for it"
        )
        raise UnsetFieldError(msg)

    def write(self: TypedTensorDict, value: Any) -> None:
        self[name] = value

    return property(read, write, doc=f"The field {name!r} (the entry of that key).")


def _warn_ignored(option: str, stacklevel: int) -> None:
    warnings.warn(
        f"The TypedTensorDict option {option!r} has no effect (the peer deprecates it; "
        "TensorClass supports it)",
        DeprecationWarning,
        stacklevel=stacklevel,
    )


def _warn_missing(cls: type[TypedTensorDict], td: TensorDict, call: str) -> None:
    missing = cls.__required_keys__.difference(td._tensors)
    if missing:
        warnings.warn(
            f"{call} returns an instance of {cls.__name__} that misses the required "
            f"field(s) {', '.join(sorted(missing))} (tensordict 0.17 will raise the "
            "TypeError the constructor raises); pass these fields, or use "
            "from_tensordict(..., check=False)",
            FutureWarning,
            stacklevel=3,
        )
