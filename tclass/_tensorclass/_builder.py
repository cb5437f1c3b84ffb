"""Builds a tensorclass: collect fields, validate, decide, generate, attach.

Runs once per class, from ``TensorClass.__init_subclass__`` (both declaration forms end
there). The pipeline, in order:

1. refuse what cannot work (a user ``__init__`` or ``__setattr__``);
2. let ``dataclasses`` collect the fields (so ``dataclasses.fields`` and
   ``is_dataclass`` see a real dataclass), asking it to generate nothing;
3. refuse field names that are tensorclass attributes, tensor defaults, frozen/non-frozen
   inheritance mixes;
4. generate ``__init__`` from source (one ``exec`` per class, registered in ``linecache``
   so tracebacks show the code) and one property per field;
5. register the class (for forward references, pytree and the DataLoader collate).

What a user writes in the class body always wins over what a base provides; nothing the
user defined is ever replaced.
"""

from __future__ import annotations

import dataclasses
import linecache
import weakref
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import torch

from tclass._base._tensordict_base import Value
from tclass._core._batch import BatchSizeLike, as_batch_size
from tclass._core._device import DeviceLike, as_device
from tclass._core._registry import register_class
from tclass._engine._lazy._stack import LazyStackedTensorDict
from tclass._engine._nontensor import NonTensorData, NonTensorStack
from tclass._engine._td import TensorDict, _refuse_names, field_getter, tensor_field_setter
from tclass._tensorclass._fields import FieldRule, resolve_annotations, rule_for
from tclass._tensorclass._interop import register_pytree
from tclass.errors import (
    ClassDefinitionError,
    FieldTypeError,
    FrozenInstanceError,
    LockedError,
    ReservedNameError,
    UnknownFieldError,
)

if TYPE_CHECKING:
    from tclass._tensorclass._record import TensorClass

__all__ = ["ClassInfo", "build_class", "record_from_entries", "store_field"]

_Tensor = torch.Tensor
_R = TypeVar("_R", bound="TensorClass")
_NODES = (NonTensorData, NonTensorStack)


class _Factory:
    """The default of a parameter whose field has a default_factory."""

    def __repr__(self) -> str:
        return "<factory>"  # what inspect.signature shows, as for dataclasses


_FACTORY = _Factory()
# Tensorclasses by module and name, for string annotations naming a class defined in a
# function body. Weak, so that classes defined in tests do not pile up.
_REGISTRY: dict[str, weakref.WeakValueDictionary[str, type]] = {}


class ClassInfo:
    """Per-class facts, computed when the class is built; rules resolved at first use
    when an annotation names a class that does not exist yet."""

    __slots__ = (
        "cls",
        "field_names",
        "init_names",
        "frozen",
        "kw_only",
        "setters",
        "_rules",
    )

    def __init__(
        self, cls: type, fields: list[dataclasses.Field[Any]], frozen: bool, kw_only: bool
    ) -> None:
        self.cls = cls
        self.field_names: tuple[str, ...] = tuple(f.name for f in fields)
        self.init_names: tuple[str, ...] = tuple(f.name for f in fields if f.init)
        self.frozen = frozen
        self.kw_only = kw_only
        self.setters: dict[str, Callable[[Any, Any], None]] = {}
        self._rules: dict[str, FieldRule] | None = None

    @property
    def rules(self) -> dict[str, FieldRule]:
        """The casting rule of every field, by name."""
        rules = self._rules
        if rules is None:
            rules = self._rules = _resolve_rules(self)
        return rules


def _resolve_rules(info: ClassInfo) -> dict[str, FieldRule]:
    cls = info.cls
    try:
        hints = resolve_annotations(cls, info.field_names, _REGISTRY.get(cls.__module__, {}))
    except NameError as error:
        msg = (
            f"{cls.__name__}: cannot resolve the field annotations ({error}); define or "
            "import the named class before creating instances"
        )
        raise FieldTypeError(msg) from None
    return {name: rule_for(name, cls.__name__, hints[name]) for name in info.field_names}


# --- the pipeline ------------------------------------------------------------------------


def build_class(
    cls: type[TensorClass], base: type, *, frozen: bool | None, kw_only: bool | None
) -> None:
    """Turns ``cls`` (a new subclass of ``base``, TensorClass) into a tensorclass, in
    place; no field may be named like an attribute of ``base``."""
    _refuse_generated_names(cls)
    parent = _parent_info(cls)
    frozen = _frozen_option(cls, parent, frozen)
    kw_only = bool(kw_only if kw_only is not None else (parent.kw_only if parent else False))
    if "__dataclass_fields__" not in cls.__dict__:
        _prepare_fields(cls)
        dataclasses.dataclass(cls, init=False, repr=False, eq=False, kw_only=kw_only)
    fields = list(dataclasses.fields(cls))
    _refuse_reserved_names(cls, base, fields)
    info = ClassInfo(cls, fields, frozen, kw_only)
    type.__setattr__(cls, "__tclass_info__", info)
    type.__setattr__(cls, "__init__", _make_init(cls, info))
    for field in fields:
        _attach_property(cls, info, field.name)
    if frozen and "__hash__" not in cls.__dict__:
        type.__setattr__(cls, "__hash__", object.__hash__)  # by identity: see the README
    _REGISTRY.setdefault(cls.__module__, weakref.WeakValueDictionary())[cls.__name__] = cls
    register_class(cls)  # loadable from a saved folder by its module and qualname
    register_pytree(cls)


def _parent_info(cls: type) -> ClassInfo | None:
    for base in cls.__mro__[1:]:
        info = base.__dict__.get("__tclass_info__")
        if info is not None:
            return info  # type: ignore[no-any-return]
    return None


def _frozen_option(cls: type, parent: ClassInfo | None, frozen: bool | None) -> bool:
    if parent is None:
        return bool(frozen)
    if frozen is None or frozen == parent.frozen:
        return parent.frozen
    kind = "frozen" if parent.frozen else "non-frozen"
    msg = (
        f"{cls.__name__} (frozen={frozen}) cannot derive from the {kind} tensorclass "
        f"{parent.cls.__name__}: a subclass must keep its base's frozen option"
    )
    raise ClassDefinitionError(msg)


def _refuse_generated_names(cls: type) -> None:
    for name, advice in (
        ("__init__", "use __post_init__ for checks, or a classmethod for other constructors"),
        ("__setattr__", "use a property with a setter for computed attributes"),
    ):
        if name in cls.__dict__ and not hasattr(cls.__dict__[name], "__tclass_generated__"):
            msg = f"{cls.__name__} defines {name}, which a tensorclass generates; {advice}"
            raise ClassDefinitionError(msg)


def _prepare_fields(cls: type) -> None:
    """Checks the class body before ``dataclasses`` reads it."""
    own = cls.__dict__.get("__annotations__", {})
    for name in own:
        value = cls.__dict__.get(name, dataclasses.MISSING)
        if value is dataclasses.MISSING:
            # A field re-declared in a subclass, or replacing a member (`data`): the
            # inherited property is not a default.
            inherited = getattr(cls, name, None)
            replaced = _is_field_property(cls, name) or name in _REPLACEABLE_MEMBERS
            if isinstance(inherited, property) and replaced:
                type.__setattr__(cls, name, dataclasses.field())
            continue
        if (
            callable(value)
            and not isinstance(value, (type, _Tensor))
            and hasattr(value, "__code__")
        ):
            msg = f"{cls.__name__}.{name} is annotated as a field but also defined as a method"
            raise ClassDefinitionError(msg)
        default = value.default if isinstance(value, dataclasses.Field) else value
        if isinstance(default, _Tensor):
            msg = (
                f"{cls.__name__}.{name} has a tensor default, which every instance would "
                "share (an in-place write to one would change all); use "
                f"dataclasses.field(default_factory=lambda: ...) for {name}"
            )
            raise ClassDefinitionError(msg)


def _is_field_property(cls: type, name: str) -> bool:
    for base in cls.__mro__[1:]:
        info = base.__dict__.get("__tclass_info__")
        if info is not None and name in info.field_names:
            return True
    return False


# Members a field may replace, as the peer allows (a record's `data` field is common).
_REPLACEABLE_MEMBERS = ("data", "fields")


def _refuse_reserved_names(cls: type, base: type, fields: list[dataclasses.Field[Any]]) -> None:
    for field in fields:
        member = hasattr(base, field.name) and field.name not in _REPLACEABLE_MEMBERS
        if member or field.name in ("_tensordict", "self"):
            msg = (
                f"{cls.__name__}.{field.name}: {field.name!r} is a tensorclass attribute or "
                "method and cannot be a field name; rename the field"
            )
            raise ReservedNameError(msg)


# --- generated code ----------------------------------------------------------------------


def _make_init(cls: type, info: ClassInfo) -> Callable[..., None]:
    """``__init__(self, <fields>, *, batch_size=None, device=None, names=None)``."""
    all_fields = list(cls.__dataclass_fields__.values())  # type: ignore[attr-defined]
    params: list[str] = []
    kw_params: list[str] = []
    body: list[str] = []
    namespace: dict[str, Any] = {
        "__tclass_init__": init_record,
        "__tclass_info__": info,
        "__tclass_factory__": _FACTORY,
    }
    initvars: list[str] = []
    for field in all_fields:
        name = field.name
        is_initvar = field._field_type is dataclasses._FIELD_INITVAR  # type: ignore[attr-defined]
        if is_initvar:
            initvars.append(name)
        default = ""
        if field.default is not dataclasses.MISSING:
            namespace[f"__tclass_dflt_{name}__"] = field.default
            default = f"=__tclass_dflt_{name}__"
        elif field.default_factory is not dataclasses.MISSING:
            namespace[f"__tclass_factory_{name}__"] = field.default_factory
            default = "=__tclass_factory__"
            factory_call = f"__tclass_factory_{name}__()"
            if field.init:
                body.append(
                    f"    if {name} is __tclass_factory__:\n        {name} = {factory_call}"
                )
            else:
                body.append(f"    {name} = {factory_call}")
        if not field.init:
            if field.default is not dataclasses.MISSING:
                body.append(f"    {name} = __tclass_dflt_{name}__")
            continue
        if field.kw_only is True or info.kw_only:
            kw_params.append(f"{name}{default}")
            continue
        if not default and params and "=" in params[-1]:
            previous = params[-1].split("=")[0]
            msg = (
                f"{cls.__name__}: the field {name!r} has no default but follows {previous!r}, "
                "which has one; give it a default, or make it keyword-only "
                f"(class {cls.__name__}(..., kw_only=True), or dataclasses.field(kw_only=True))"
            )
            raise ClassDefinitionError(msg)
        params.append(f"{name}{default}")
    kw_params += ["batch_size=None", "device=None", "names=None"]
    signature = ", ".join(["__tclass_self__", *params, "*", *kw_params])
    values = "".join(f"{name}, " for name in info.field_names)
    body.append(
        f"    __tclass_init__(__tclass_self__, __tclass_info__, ({values}), batch_size, "
        "device, names)"
    )
    if hasattr(cls, "__post_init__"):
        body.append(f"    __tclass_self__.__post_init__({', '.join(initvars)})")
    source = f"def __init__({signature}):\n" + "\n".join(body) + "\n"
    filename = f"<tclass generated __init__ {cls.__module__}.{cls.__qualname__}>"
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    init: Callable[..., None] = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__tclass_generated__ = True  # type: ignore[attr-defined]  # rebuilds may replace it
    return init


def _attach_property(cls: type, info: ClassInfo, name: str) -> None:
    rule = _rule_if_known(info, name)
    entries_only = rule is not None and not rule.value_field

    def store(self: Any, value: Any) -> None:
        td = self._tensordict
        if (td.is_locked and not td._can_fill(name)) or info.frozen:
            _refuse_assignment(cls, info, name, td)
        _store(info, td, name, value)

    def deleter(self: Any) -> None:
        setter(self, None)

    get = field_getter(name, values=not entries_only)
    setter = tensor_field_setter(name, store) if entries_only and rule.tensor else store  # type: ignore[union-attr]
    for function, role in ((get, "get"), (setter, "set"), (deleter, "delete")):
        function.__qualname__ = f"{cls.__qualname__}.{name}.<{role}>"
    info.setters[name] = setter
    type.__setattr__(cls, name, property(get, setter, deleter, doc=f"The field {name!r}."))


def _rule_if_known(info: ClassInfo, name: str) -> FieldRule | None:
    """The field's rule if the annotations resolve now (else later, at first use)."""
    try:
        return info.rules[name]
    except FieldTypeError:
        return None


def _refuse_assignment(cls: type, info: ClassInfo, name: str, td: Any) -> None:
    if info.frozen:
        msg = f"cannot assign to field {name!r}: {cls.__name__} is frozen (use replace())"
        raise FrozenInstanceError(msg)
    saved = td._saved
    if saved is not None and not isinstance(td._entries().get(name), _NODES):
        # Replacing a saved tensor or record is a change in memory only: say so.
        msg = (
            f"cannot assign to field {name!r}: this {cls.__name__} is locked. It is saved in "
            f"{saved.folder!r}: write in place (record.{name}[:] = ...) to change the saved "
            "data. Replacing the field after record.unlock_() changes memory only (the folder "
            "keeps its data; save again with memmap_())"
        )
        raise LockedError(msg)
    msg = (
        f"cannot assign to field {name!r}: this {cls.__name__} is locked. Unlock it first "
        f"(with record.unlock_(): ...), or write in place (record.{name}[:] = ...)"
    )
    if saved is not None:
        msg += "; a Python value assigned after unlocking is saved in its folder too"
    raise LockedError(msg)


# --- storing values ----------------------------------------------------------------------


def init_record(
    record: Any,
    info: ClassInfo,
    values: tuple[Any, ...],
    batch_size: BatchSizeLike,
    device: DeviceLike,
    names: Any,
) -> None:
    """The body of every generated ``__init__``: checks and stores the fields."""
    if names is not None:
        _refuse_names(names)
    batch = as_batch_size(batch_size)
    dev = None if device is None else as_device(device)
    rules = info.rules
    n = len(batch)
    tensors: dict[str, Value] = {}
    for name, value in zip(info.field_names, values):
        rule = rules[name]
        if value.__class__ is _Tensor and rule.tensor:
            # The common case inline: a plain tensor for a tensor field.
            if dev is not None and value.device != dev:
                value = value.to(dev)
            if n and value.shape[:n] != batch:
                rule._check_batch(value, batch)
            tensors[name] = value
            continue
        stored = rule.store(value, batch, dev)
        if stored is not None:
            tensors[name] = stored
    td = TensorDict._new_unchecked(tensors, batch, dev)
    record._tensordict = td
    if info.frozen:
        td.lock_()


def _store(info: ClassInfo, td: TensorDict | LazyStackedTensorDict, name: str, value: Any) -> None:
    stored = info.rules[name].store(value, td.batch_size, td.device)
    if stored is not None:
        td._store_entry(name, stored)  # a record saved in a folder writes it there too
    elif td._has_entry(name):
        td._remove_entry(name)


def store_field(
    cls: type[TensorClass], td: TensorDict | LazyStackedTensorDict, name: str, value: Any
) -> None:
    """Stores ``value`` as field ``name`` in ``td`` (checked), ignoring locks."""
    _store(cls.__tclass_info__, td, name, value)


def record_from_entries(
    cls: type[_R],
    entries: Mapping[str, Value],
    batch_size: torch.Size,
    device: torch.device | None,
) -> _R:
    """A record over existing entries (not copied), each checked against its field;
    absent fields take their defaults."""
    info = cls.__tclass_info__
    for key in entries:
        if key not in info.field_names:
            msg = (
                f"{cls.__name__}.from_tensordict: {key!r} is not a field of {cls.__name__} "
                f"(fields: {', '.join(info.field_names)})"
            )
            raise UnknownFieldError(msg)
    td = TensorDict._new_unchecked({}, as_batch_size(batch_size), device)
    for field in dataclasses.fields(cls):
        if field.name in entries:
            value: Any = entries[field.name]
        elif field.default is not dataclasses.MISSING:
            value = field.default
        elif field.default_factory is not dataclasses.MISSING:
            value = field.default_factory()
        elif info.rules[field.name].optional:
            continue
        else:
            msg = f"{cls.__name__}.from_tensordict: the required field {field.name!r} is missing"
            raise FieldTypeError(msg)
        _store(info, td, field.name, value)
    return cls._from_tensordict_unchecked(td)
