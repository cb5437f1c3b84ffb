"""Builds a tensorclass: collect fields, validate, decide, generate, attach.

Runs once per class, from ``TensorClass.__init_subclass__`` (all declaration forms end
there). The pipeline, in order:

1. work out the class options (``_options.py``: given ones over the base's, into
   ``ClassInfo.options``);
2. let ``dataclasses`` collect the fields (so ``dataclasses.fields`` and
   ``is_dataclass`` see a real dataclass), asking it to generate nothing; warn about
   tensor defaults, which every instance shares;
3. refuse field names that are tensorclass attributes (unless ``shadow``);
4. generate ``__init__`` from source (``_generated.py``), or keep the class's own, and
   one property per field;
5. register the class (for forward references, pytree and the DataLoader collate).

What a user writes in the class body always wins over what a base provides; nothing the
user defined is ever replaced.
"""

from __future__ import annotations

import dataclasses
import difflib
import inspect
import sys
import warnings
import weakref
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import torch

from tclass._base._tensordict_base import Value
from tclass._base.implemented._collection import TensorCollection
from tclass._core._batch import ONE_DIM_SIZES, BatchSizeLike, as_batch_size
from tclass._core._device import DeviceLike, as_device
from tclass._core._jagged import leaf_shape
from tclass._core._names import Names
from tclass._core._record_spec import RecordSpecs
from tclass._core._records import is_record
from tclass._core._registry import register_class
from tclass._core._tracing import tracing
from tclass._core._unbatched import UnbatchedTensor
from tclass._engine._lazy._stack import LazyStackedTensorDict
from tclass._engine._nontensor import NonTensorData
from tclass._engine._nontensor_stack import NonTensorStack
from tclass._engine._record_fields import field_getter, tensor_field_setter
from tclass._engine._scope import name_built, named_to_fit
from tclass._engine._td import TensorDict
from tclass._io._schema import FieldSchema
from tclass._tensorclass._fields import FieldRule, may_hold_collections, rule_for
from tclass._tensorclass._generated import generated_init, is_generated, user_init
from tclass._tensorclass._hints import Unresolved, enclosing_names, resolve_annotations
from tclass._tensorclass._init_body import lock_at_init, unrolled_init
from tclass._tensorclass._interop import register_pytree
from tclass._tensorclass._json_schema import class_document
from tclass._tensorclass._options import ClassOptions, class_options
from tclass._tensorclass._schema import field_schemas, record_specs
from tclass._tensorclass._writes import PENDING, RowCheck, build_row_check
from tclass.errors import (
    ClassDefinitionError,
    FieldSpecError,
    FrozenInstanceError,
    LockedError,
    ReservedNameError,
    SharedDefaultWarning,
    UnknownFieldError,
)

if TYPE_CHECKING:
    from tclass._tensorclass._record import TensorClass

__all__ = [
    "ClassInfo",
    "build_class",
    "locked_update",
    "locked_write",
    "missing_attribute",
    "record_from_entries",
    "store_field",
]

_Tensor = torch.Tensor
_R = TypeVar("_R", bound="TensorClass")
_NODES = (NonTensorData, NonTensorStack)


# Tensorclasses by module and name, for string annotations naming a class defined in a
# function body. Weak, so that classes defined in tests do not pile up.
_REGISTRY: dict[str, weakref.WeakValueDictionary[str, type]] = {}


class ClassInfo:
    """Per-class facts, computed when the class is built; rules resolved at first use
    when an annotation names a class that does not exist yet."""

    __slots__ = (
        "cls",
        "fields",
        "field_names",
        "init_names",
        "repr_hidden",
        "non_none_defaults",
        "options",
        "setters",
        "generated_init",
        "has_user_init",
        "_rules",
        "_specs",
        "_schema",
        "_row_check",
        "_hints",
        "_json_schema",
        "_tensors_as_they_are",
        "_bounds_values",
        "_hooked",
        "setattr_hook",
    )

    def __init__(
        self, cls: type, fields: list[dataclasses.Field[Any]], options: ClassOptions
    ) -> None:
        self.cls = cls
        # ``dataclasses.fields(cls)``, which ``torch.compile`` cannot trace on a class.
        self.fields: tuple[dataclasses.Field[Any], ...] = tuple(fields)
        self.field_names: tuple[str, ...] = tuple(f.name for f in fields)
        self.init_names: tuple[str, ...] = tuple(f.name for f in fields if f.init)
        # ``field(repr=False)``: the reprs leave these out, as the peer's do.
        self.repr_hidden: frozenset[str] = frozenset(f.name for f in fields if not f.repr)
        # The fields whose default is not None (a load takes None for those saved so).
        self.non_none_defaults: frozenset[str] = frozenset(
            f.name
            for f in fields
            if f.default_factory is not dataclasses.MISSING
            or (f.default is not dataclasses.MISSING and f.default is not None)
        )
        self.options = options  # every option, inherited ones included
        self.setters: dict[str, Callable[[Any, Any], None]] = {}
        self.generated_init: Callable[..., None] | None = None
        self.has_user_init = False
        # Whether the class (or a base) defines __setattr__: the storage is then set past it.
        self.setattr_hook = False
        self._rules: dict[str, FieldRule] | None = None
        self._specs: RecordSpecs | None = None
        self._schema: tuple[FieldSchema, ...] = ()
        self._row_check: RowCheck | None | object = PENDING
        self._hints: dict[str, object] = {}
        self._json_schema: dict[str, Any] | None = None  # built at first use (_json_schema)
        self._tensors_as_they_are: bool | None = None  # see tensors_as_they_are
        self._bounds_values: bool | None = None  # see bounds_values
        self._hooked: bool | None = None  # see _update._hooked

    @property
    def rules(self) -> dict[str, FieldRule]:
        """The casting rule of every field, by name."""
        rules = self._rules
        if rules is None:
            rules = self._rules = _resolve_rules(self)
        return rules  # type: ignore[return-value]

    @property
    def specs(self) -> RecordSpecs | None:
        """The checker of the spec'd fields (None when no field has a spec)."""
        if self._rules is None:
            self._rules = _resolve_rules(self)  # and the specs
        return self._specs

    @property
    def row_check(self) -> RowCheck | None:
        """What a write into the rows of a record checks (None: nothing), worked out at
        the first write."""
        check = self._row_check
        if check is PENDING:
            check = self._row_check = build_row_check(self)
        return check  # type: ignore[return-value]

    @property
    def hints(self) -> dict[str, object]:
        """The annotation of every field, forward references resolved."""
        if self._rules is None:
            self._rules = _resolve_rules(self)  # and the hints
        return self._hints

    @property
    def json_schema(self) -> dict[str, Any]:
        """The class's JSON Schema document, built at first use (not to be changed)."""
        return class_document(self.cls)

    @property
    def schema(self) -> tuple[FieldSchema, ...]:
        """What the class declares of each field (written into saved folders)."""
        if self._rules is None:
            self._rules = _resolve_rules(self)  # and the schema
        return self._schema

    @property
    def bounds_values(self) -> bool:
        """Whether a field bounds its values: a tensor's (``Spec(ge=0)``, ``Ge(0)``) or
        Python values' (``Annotated[int, Ge(0)]``, ``Literal[...]``); worked out once."""
        bounded = self._bounds_values
        if bounded is None:
            specs = self.specs
            bounded = self._bounds_values = bool(specs is not None and specs.constrained) or any(
                rule.values is not None for rule in self.rules.values()
            )
        return bounded

    @property
    def tensors_as_they_are(self) -> bool:
        """Whether every field takes a tensor as it is (no cast: a record of tensors)."""
        taken = self._tensors_as_they_are
        if taken is None:
            taken = self._tensors_as_they_are = all(
                rule.cast is None and (rule.tensor or rule.number or rule.any_value)
                for rule in self.rules.values()
            )
        return taken

    @property
    def unchecked_values(self) -> bool:
        """Whether no field bounds what it holds beyond its type: no spec (shape,
        dtype, value constraints) and no constraint on Python values (``Literal``,
        annotated-types). Only then may a record share a TensorDict it was built from,
        whose writes do not pass through the record's checks."""
        return self.specs is None and not self.bounds_values


def _resolve_rules(info: ClassInfo, first_use: bool = True) -> dict[str, FieldRule] | None:
    """The rules of every field; ``None`` when a name is not found yet and this is not
    the first use. At first use, a field whose annotation names something that cannot be
    found (imported only under ``TYPE_CHECKING``, or defined after the first instance)
    takes any value, as in the peer. With the rules, the class's specs and schema."""
    cls = info.cls
    classes: Mapping[str, type] = _REGISTRY.get(cls.__module__, {}) if first_use else {}
    hints = resolve_annotations(cls, info.field_names, classes)
    rules: dict[str, FieldRule] = {}
    for name in info.field_names:
        hint = hints[name]
        if not isinstance(hint, Unresolved):
            rules[name] = rule_for(name, cls.__name__, hint, info.options)
        elif not first_use:
            return None
        else:
            rules[name] = dataclasses.replace(rule_for(name, cls.__name__, Any), text=hint.text)
    info._specs = record_specs(cls.__name__, rules)
    info._schema = field_schemas(cls, rules, hints)
    info._hints = hints
    return rules


# --- the pipeline ------------------------------------------------------------------------


def build_class(cls: type[TensorClass], base: type, **given: Any) -> None:
    """Turns ``cls`` (a new subclass of ``base``, TensorClass) into a tensorclass, in
    place, with the class options ``given`` (``None`` or ``UNSET`` where not given)."""
    parent = _parent_info(cls)
    options = class_options(
        cls.__name__,
        parent.options if parent else None,
        given,
        parent.cls.__name__ if parent else "",
    )
    own_init = _own_init(cls)
    scope = enclosing_names(cls.__dict__.get("__annotations__", {}))
    if scope:  # names of the function declaring the class, read before the module's
        type.__setattr__(cls, "__tclass_scope__", scope)
    if "__dataclass_fields__" not in cls.__dict__:
        _prepare_fields(cls, base)
        dataclasses.dataclass(
            cls, init=False, repr=False, eq=False, kw_only=bool(options["kw_only"])
        )
    fields = list(dataclasses.fields(cls))
    _refuse_reserved_names(cls, base, fields, bool(options["shadow"]))
    info = ClassInfo(cls, fields, options)
    type.__setattr__(cls, "__tclass_info__", info)
    type.__setattr__(cls, "__expected_keys__", frozenset(info.field_names))
    for field in fields:
        _attach_property(cls, info, field.name)  # resolves the rules if it can, here
    if _settled(info):  # what a row write checks (and reads), now rather than at the
        info._row_check = build_row_check(info)  # first write, which may be in a trace
        info._bounds_values = info.bounds_values
    own = set(cls.__dict__.get("__annotations__", {}))
    # A class whose rules are known now gets its own storage step (_init_body.py); one
    # that defines __setattr__ has each field set through it (the peer's dataclass).
    info.setattr_hook = cls.__setattr__ is not object.__setattr__
    body = init_through_setattr if info.setattr_hook and not options["frozen"] else None
    body = body or unrolled_init(info) or init_record
    info.generated_init = generated_init(cls, info, own, body)
    if own_init is not None:  # the class's own __init__ is kept (super() reaches ours)
        info.has_user_init = True
        type.__setattr__(cls, "__init__", user_init(own_init))
    elif parent is not None and parent.has_user_init:  # inherited, as in plain Python
        info.has_user_init = True
        if "__init__" in cls.__dict__:
            type.__delattr__(cls, "__init__")
    else:
        type.__setattr__(cls, "__init__", info.generated_init)
    if options["frozen"] and "__hash__" not in cls.__dict__:
        type.__setattr__(cls, "__hash__", object.__hash__)  # by identity: see the README
    _attribute_hooks_first(cls, base)
    _REGISTRY.setdefault(cls.__module__, weakref.WeakValueDictionary())[cls.__name__] = cls
    register_class(cls)  # loadable from a saved folder by its module and qualname
    register_pytree(cls)


def _attribute_hooks_first(cls: type, base: type) -> None:
    """Puts the default ``__getattribute__`` (``object``'s very slot wrapper) and
    ``__getattr__`` (``base``'s) in the class's own dict, unless the class resolves
    either to its own. A record defines ``__getattr__``, so each attribute read looks both
    up on its type; CPython 3.11 caches those lookups in 4,096 slots, and where two record
    classes share slots, each read missed and walked the 33-class MRO to ``object``
    (2x 'tc nested read'). Found first, a miss costs one dict lookup; the slot wrapper
    keeps CPython's generic attribute lookup (not a call through ``__getattribute__``)."""
    defaults = {
        "__getattribute__": object.__getattribute__,
        "__getattr__": vars(base)["__getattr__"],
    }
    for name, default in defaults.items():
        found = next(vars(klass)[name] for klass in cls.__mro__ if name in vars(klass))
        if found is default and name not in vars(cls):
            type.__setattr__(cls, name, default)


def _settled(info: ClassInfo) -> bool:
    """Whether the class's rules are known, and the row checks of the record classes its
    fields may hold (itself aside): then its own row check is worked out when the class
    is built. Worked out at the first write, it could be inside a torch.compile trace,
    which cannot run the code generation it takes."""
    if info._rules is None:
        return False
    for rule in info._rules.values():
        for cls in rule.collections:
            inner = getattr(cls, "__tclass_info__", None)
            if inner is not None and inner is not info and inner._row_check is PENDING:
                return False
    return True


def _parent_info(cls: type) -> ClassInfo | None:
    for base in cls.__mro__[1:]:
        info = base.__dict__.get("__tclass_info__")
        if info is not None:
            return info  # type: ignore[no-any-return]
    return None


def _own_init(cls: type) -> Callable[..., None] | None:
    """The ``__init__`` the class body defines (not one tclass made), or None."""
    init = cls.__dict__.get("__init__")
    if init is None:
        return None
    original = getattr(init, "__tclass_user_init__", None)
    if original is not None:  # a class built again keeps the user's __init__
        return original  # type: ignore[no-any-return]
    return None if is_generated(init) else init


def _prepare_fields(cls: type, base: type) -> None:
    """Checks the class body before ``dataclasses`` reads it."""
    own = cls.__dict__.get("__annotations__", {})
    for name in own:
        value = cls.__dict__.get(name, dataclasses.MISSING)
        if value is dataclasses.MISSING:
            # A field re-declared in a subclass, or replacing a member (`data`, the
            # `fields()` classmethod, `device` under shadow=True): the inherited member
            # is not a default (dataclasses would read any inherited attribute as one).
            inherited = getattr(cls, name, None)
            replaced = _is_field_property(cls, name) or name in _REPLACEABLE_MEMBERS
            member = inspect.getattr_static(base, name, dataclasses.MISSING)
            if member is not dataclasses.MISSING and member is inspect.getattr_static(cls, name):
                type.__setattr__(cls, name, dataclasses.field())  # a tclass member it hides
            elif replaced and (isinstance(inherited, property) or name in _REPLACEABLE_MEMBERS):
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
        if isinstance(default, (_Tensor, TensorCollection)):
            msg = (
                f"the {type(default).__name__} default of {cls.__name__}.{name} is shared by "
                "every instance (an in-place write to one changes all, and the default); use "
                f"dataclasses.field(default_factory=lambda: ...) to give each its own {name}"
            )
            warnings.warn(SharedDefaultWarning(msg), stacklevel=_user_stacklevel())
            if type(default).__hash__ is None:  # dataclasses refuses it as a default
                type.__setattr__(cls, name, dataclasses.field(default_factory=_shared(default)))


def _shared(default: object) -> Callable[[], object]:
    """A default factory that gives every instance the same object."""
    return lambda: default


# Standard-library modules a class statement passes through on its way to the builder
# (`ABCMeta.__new__` runs `__init_subclass__`): a warning names the user's line, not theirs.
_PASS_THROUGH_MODULES = frozenset({"abc", "dataclasses", "functools", "typing"})


def _user_stacklevel() -> int:
    """The stack level of the first frame outside tclass (the class statement)."""
    frame = sys._getframe(1)
    level = 1
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if not (module.startswith("tclass.") or module in _PASS_THROUGH_MODULES):
            break
        frame = frame.f_back  # type: ignore[assignment]
        level += 1
    return level


def _is_field_property(cls: type, name: str) -> bool:
    for base in cls.__mro__[1:]:
        info = base.__dict__.get("__tclass_info__")
        if info is not None and name in info.field_names:
            return True
    return False


# Members a field may replace, as the peer allows (a record's `data` field is common, and
# `close` a price's: the peer's records have no `close`, `append` or `insert` of their own).
_REPLACEABLE_MEMBERS = ("data", "fields", "close", "append", "insert")


def _refuse_reserved_names(
    cls: type, base: type, fields: list[dataclasses.Field[Any]], shadow: bool
) -> None:
    for field in fields:
        name = field.name
        if name in ("_tensordict", "self") or name.startswith("__tclass"):
            msg = f"{cls.__name__}.{name}: {name!r} is used by tclass itself; rename the field"
            raise ReservedNameError(msg)
        if not shadow and hasattr(base, name) and name not in _REPLACEABLE_MEMBERS:
            msg = (
                f"{cls.__name__}.{name}: Attribute name {name} can't be used with @tensorclass: "
                "it is a tensorclass attribute or method; rename the field, or let fields hide "
                "members with shadow=True "
                f"(class {cls.__name__}(TensorClass, shadow=True), TensorClass['shadow'] or "
                "@tensorclass(shadow=True))"
            )
            raise ReservedNameError(msg)


# --- field properties ------------------------------------------------------------------


def _attach_property(cls: type, info: ClassInfo, name: str) -> None:
    rule = _rule_if_known(info, name)
    entries_only = info.options["tensor_only"] or (rule is not None and not rule.value_field)
    frozen = info.options["frozen"]

    def store(self: Any, value: Any) -> None:
        td = self._tensordict
        # a frozen record is unlocked only while __post_init__ runs (see lock_at_init)
        if _locked(td, name, value is None) and (frozen or not _can_fill(td, name)):
            _refuse_assignment(cls, info, name, td)
        _store(info, td, name, value)

    def assign(self: Any, value: Any) -> None:
        """``record.name = value`` of a tensor_only record: None over an unset field
        changes nothing, and the peer lets it pass when locked (not ``set()`` nor ``del``)."""
        td = self._tensordict
        if value is None and _locked(td) and not _holds(td, name):
            return
        store(self, value)

    def deleter(self: Any) -> None:
        store(self, None)

    # the one collection class a nested field holds is looked for first, else a tensor
    held = rule.convert_to if rule is not None and not rule.tensor else None
    get = field_getter(
        name,
        values=not entries_only,
        nodes=bool(info.options["tensor_only"]),
        first=torch.Tensor if held is None else held,
    )
    inline = info._specs.inline if info._specs is not None else None
    check = inline.assign.get(name) if inline is not None else None
    spec = rule.spec if rule is not None else None
    fast = entries_only and rule is not None and rule.tensor and rule.cast is None
    fast = fast and (spec is None or (check is not None and spec.constraints is None))
    setter = tensor_field_setter(name, store, check) if fast else store
    attribute = setter
    if info.options["tensor_only"] and not frozen:
        attribute = tensor_field_setter(name, assign, check) if fast else assign
    for function, role in ((get, "get"), (attribute, "set"), (deleter, "delete")):
        function.__qualname__ = f"{cls.__qualname__}.{name}.<{role}>"
    info.setters[name] = setter
    type.__setattr__(cls, name, property(get, attribute, deleter, doc=f"The field {name!r}."))


def _locked(td: TensorDict | LazyStackedTensorDict, name: str = "", unset: bool = False) -> bool:
    """Whether ``td`` refuses a write of field ``name``: locked, or a lazy stack with a
    locked member the write would reach (to ``unset`` it, None: only the members that hold
    it, as the peer, which removes it from those and lets None over an unset field pass)."""
    if td.is_locked:
        return True
    if not isinstance(td, LazyStackedTensorDict):
        return False
    reached = (m for m in _members(td) if not unset or _holds(m, name))
    return any(_locked(m, name, unset) for m in reached)


def _rule_if_known(info: ClassInfo, name: str) -> FieldRule | None:
    """The field's rule if the annotations resolve now (else later, at first use). While
    the module runs, the module's earlier classes of a name are not looked at: a class of
    that name defined later is the one meant."""
    if info._rules is None:
        info._rules = _resolve_rules(info, first_use=False)
        if info._rules is None:
            return None
    return info._rules[name]


def _can_fill(td: Any, name: str) -> bool:
    """Whether the locked storage ``td`` still takes the field ``name`` (an absent field of
    a saved folder); a file (PersistentTensorDict) takes none."""
    return isinstance(td, (TensorDict, LazyStackedTensorDict)) and td._can_fill(name)


def _refuse_assignment(cls: type, info: ClassInfo, name: str, td: Any) -> None:
    if info.options["frozen"]:
        msg = f"cannot assign to field {name!r}: {cls.__name__} is frozen (use replace())"
        raise FrozenInstanceError(msg)
    saved = getattr(td, "_saved", None)  # a file is no saved folder
    value = isinstance(td._entries().get(name), _NODES)  # a Python value: no [:] to write
    if saved is not None and not value:
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
        "(with record.unlock_(): ...)"
    )
    if not value:
        msg += f", or write in place (record.{name}[:] = ...)"
    if saved is not None:
        msg += "; a Python value assigned after unlocking is saved in its folder too"
    raise LockedError(msg)


def locked_update(record: Any) -> LockedError | None:
    """The error of ``record.update(...)`` (not in place) if it is locked, else None:
    the peer refuses it even with nothing to write (``update({})``, ``update(3)``)."""
    if not record.is_locked:
        return None
    cls = type(record).__name__
    if type(record).__tclass_info__.options["frozen"]:
        return FrozenInstanceError(f"cannot update a {cls}: it is frozen (use replace())")
    msg = (
        f"cannot update this {cls}: it is locked (unlock it first with unlock_(), or write "
        "into its existing fields with update(..., inplace=True))"
    )
    return LockedError(msg)


def locked_write(
    record: Any, name: object, why: str = "", verb: str = "write"
) -> LockedError | None:
    """The error of writing or removing ``name`` in ``record`` if it is locked (frozen
    records: a ``FrozenInstanceError``), else None; checked before whether ``name`` is a
    field, as the peer (``why`` adds what else is wrong)."""
    if not record.is_locked:
        return None
    cls = type(record).__name__
    why = f"; besides, {why}" if why else ""
    if type(record).__tclass_info__.options["frozen"]:
        return FrozenInstanceError(f"cannot {verb} {name!r}: {cls} is frozen (use replace()){why}")
    msg = f"cannot {verb} {name!r}: this {cls} is locked (unlock it first with unlock_()){why}"
    return LockedError(msg)


def missing_attribute(record: Any, name: str) -> UnknownFieldError:
    """The error of reading ``record.name`` where ``name`` is neither an attribute nor a
    field (an ``AttributeError``, as Python's, naming the fields as the peer's)."""
    cls = type(record)
    info = getattr(cls, "__tclass_info__", None)
    fields = info.field_names if info is not None else ()
    hint = [] if name.startswith("_") else difflib.get_close_matches(name, fields, n=1)
    msg = f"{cls.__name__!r} object has no attribute or field {name!r} (fields: "
    msg += ", ".join(fields) + ")" + (f"; did you mean {hint[0]!r}?" if hint else "")
    storage = getattr(record, "_tensordict", None)
    if not hint and isinstance(storage, LazyStackedTensorDict) and hasattr(storage, name):
        # the peer falls through to its storage (deprecated); tclass names where it is
        msg += f"; the lazy stack this record is over has it: record._tensordict.{name}"
    return UnknownFieldError(msg)


# --- storing values ----------------------------------------------------------------------


def init_record(
    record: Any,
    info: ClassInfo,
    values: tuple[Any, ...],
    batch_size: BatchSizeLike,
    device: DeviceLike,
    names: Any,
) -> None:
    """The storage step of the generated ``__init__`` of a class whose rules were not
    known when it was built (see ``_init_body.py``): checks and stores the fields."""
    batch = None
    if type(batch_size) is list and len(batch_size) == 1 and not tracing():
        # `batch_size=[n]`, the common spelling, looked up without a call.
        batch = ONE_DIM_SIZES.get(batch_size[0]) if type(batch_size[0]) is int else None
    if batch is None:
        batch = as_batch_size(batch_size)
    dev = None if device is None else as_device(device)
    rules = info._rules or info.rules
    n = len(batch)
    first = batch[0] if n == 1 else -1
    tensors: dict[str, Value] = {}
    unbatched = False
    for name, value in zip(info.field_names, values):
        rule = rules[name]
        if value.__class__ is _Tensor and rule.tensor:
            # The common case inline: a plain tensor for a tensor field.
            if dev is not None and value.device != dev:
                value = value.to(dev)
            if n:
                shape = leaf_shape(value) if value.is_nested else value.shape
                if (not shape or shape[0] != first) if n == 1 else shape[:n] != batch:
                    rule._check_batch(value, batch)
            tensors[name] = value
            continue
        stored = rule.store(value, batch, dev)
        if stored is not None:
            tensors[name] = stored
            unbatched = unbatched or stored.__class__ is UnbatchedTensor
    specs = info._specs
    if specs is not None:
        specs.check(tensors, n)
    td = TensorDict._new_unchecked(tensors, batch, dev)
    if unbatched:
        td._mark_unbatched()
    if names is not None or may_hold_collections(rules.values()):
        name_built(td, names)
    if info.setattr_hook:  # a frozen class defining __setattr__: its storage set past it
        object.__setattr__(record, "_tensordict", td)
    else:
        record._tensordict = td
    if lock_at_init(info):
        td.lock_()


def init_through_setattr(
    record: Any,
    info: ClassInfo,
    values: tuple[Any, ...],
    batch_size: BatchSizeLike,
    device: DeviceLike,
    names: Any,
) -> None:
    """The body of the generated ``__init__`` of a class defining ``__setattr__`` (not
    frozen): the storage first, then each field set through the class's ``__setattr__``,
    in order, as the peer's dataclass ``__init__`` does."""
    td = TensorDict._new_unchecked({}, as_batch_size(batch_size), as_device(device))
    if names is not None:
        td.names = names
    object.__setattr__(record, "_tensordict", td)
    for name, value in zip(info.field_names, values):
        setattr(record, name, value)


def _store(
    info: ClassInfo,
    td: TensorDict | LazyStackedTensorDict,
    name: str,
    value: Any,
    check_spec: bool = True,
) -> None:
    rule = info.rules[name]
    if isinstance(td, LazyStackedTensorDict):
        value = rule.over_stack(value, td.batch_size, td.device)
        items = rule.per_member(value, td.batch_size, td.stack_dim)
        if items is not None:
            _store_members(info, td, name, items, check_spec)
            return
    try:
        stored = rule.store(value, td.batch_size, td.device)
    except FieldSpecError as error:
        raise _mutated(error, td, name, value) from None
    if check_spec and rule.spec is not None and isinstance(stored, _Tensor):
        specs: Any = info.specs
        # A lazy stack's members may differ: the tensor is checked against its spec only.
        others = td._entries() if isinstance(td, TensorDict) else {}
        specs.check_assign(others, name, stored, len(td.batch_size))
    if isinstance(stored, TensorCollection) and not stored._is_leaf_node:
        names = td._dim_names  # (a lazy stack's too: its members get their parts named)
        if names is not None and any(n is not None for n in names):
            stored = named_to_fit(stored, names, name)  # the record's dim names, as a set()
    if stored is not None:
        td._store_entry(name, stored)  # a record saved in a folder writes it there too
    else:
        _unset(td, name)


def _mutated(
    error: FieldSpecError, td: TensorDict | LazyStackedTensorDict, name: str, value: Any
) -> FieldSpecError:
    """``error`` as is, unless the record already holds ``value`` itself: a list changed
    in place before it was assigned back (``record.tags += [...]``), which nothing can
    undo; the message says so instead of "Nothing was written"."""
    current = td._entries().get(name) if isinstance(td, TensorDict) else None
    if not isinstance(current, NonTensorData) or current.data is not value:
        return error
    message = str(error).removesuffix("; give a value that meets it. Nothing was written")
    owner = message.partition(" ")[0]  # Owner.field, as the message starts
    return FieldSpecError(
        f"{message}. The value was changed in place before it was assigned back (as "
        f"`record.{name} += [...]` does), so {owner} holds it now; assign a new value "
        f"(`record.{name} = record.{name} + [...]`), which is checked before it is stored",
        error.problems,
    )


def _store_members(
    info: ClassInfo,
    td: LazyStackedTensorDict,
    name: str,
    items: list[Any],
    check_spec: bool,
) -> None:
    """Each member of the lazy stack ``td`` stores its item of a value split along the
    stack dim (:meth:`FieldRule.per_member`) as a record of the class stores it; every
    item is checked before any is written, so a refused one leaves all members as they
    were."""
    rule = info.rules[name]
    members = _members(td)
    for member, item in zip(members, items, strict=True):
        rule.store(item, member.batch_size, member.device)
    for member, item in zip(members, items, strict=True):
        _store(info, member, name, item, check_spec)


def _members(td: LazyStackedTensorDict) -> list[Any]:
    """The members of a record's lazy stack storage: its members' storages (TensorDicts,
    lazy stacks of them), which the stack's type does not say."""
    return td.tensordicts


def _holds(td: TensorDict | LazyStackedTensorDict, name: str) -> bool:
    """Whether ``td`` (a lazy stack: any member) holds an entry ``name``."""
    if isinstance(td, LazyStackedTensorDict):
        return any(_holds(member, name) for member in _members(td))
    return td._has_entry(name)


def _unset(td: TensorDict | LazyStackedTensorDict, name: str) -> None:
    """Removes the entry ``name``; a lazy stack's from each member that holds it (all,
    some, and whatever kinds of value they hold there: nothing is stacked)."""
    if isinstance(td, LazyStackedTensorDict):
        for member in _members(td):
            _unset(member, name)
    elif td._has_entry(name):
        td._remove_entry(name)


def store_field(
    cls: type[TensorClass],
    td: TensorDict | LazyStackedTensorDict,
    name: str,
    value: Any,
    check_spec: bool = True,
) -> None:
    """Stores ``value`` as field ``name`` in ``td`` (checked; its spec against the other
    fields unless not ``check_spec``: see :func:`check_specs`), ignoring locks."""
    _store(cls.__tclass_info__, td, name, value, check_spec)


def check_specs(
    cls: type[TensorClass], td: TensorDict | LazyStackedTensorDict, values: bool = True
) -> None:
    """Checks the fields of ``td`` against the specs of ``cls``, together (their values
    too unless not ``values``: a lazy stack's, member by member)."""
    specs = cls.__tclass_info__.specs
    if specs is None:
        return
    if isinstance(td, TensorDict):
        specs.check(td._entries(), len(td.batch_size), values)
    elif values and specs.constrained and isinstance(td, LazyStackedTensorDict):
        for member in td.tensordicts:
            specs.check_values(member._entries())


def takes_as_is(cls: type[TensorClass], td: TensorDict) -> bool:
    """Whether the record class ``cls`` takes the TensorDict ``td`` as its storage
    unchanged, checked as :func:`record_from_entries` checks each field but for what
    the caller guarantees (specs, and the leaves on ``td``'s device: a loaded record's):
    ``td`` holds exactly the fields, each a value its field keeps as it is (a tensor, a
    record or TensorDict of an accepted class and of the record's batch size and device,
    a Python value's NonTensorData). Anything else (a cast, a default to fill, a spec, dim
    names) is left to :func:`record_from_entries`."""
    info = cls.__tclass_info__
    entries = td._entries()
    if type(td) is not TensorDict:
        return False
    if _record_of_tensors(info, entries):
        return True
    if len(entries) != len(info.field_names) or info.specs is not None:
        return False
    return _kept_as_they_are(info.rules, entries, td.batch_size, td.device, td._dim_names)


def shares_storage(cls: type[TensorClass], td: Any) -> bool | None:
    """Whether ``cls.from_tensordict(td)`` keeps the TensorDict ``td`` itself as the
    record's storage, as the peer's (checked before :func:`record_from_entries` would
    store the same entries): True when no field of ``cls`` has a spec or a value
    constraint, each entry of ``td`` is a field's tensor that the field takes as it is
    (batched on ``td``'s batch size and device) or a field's Python value that it keeps
    as it is, and each field ``td`` lacks has no default to fill in (None or none).
    None (maybe: the caller compares what it built with ``td``) when an entry is a
    collection its field may keep as it is (a record of the field's class, a TensorDict
    in a ``TensorDict`` field...). False when the record cannot share ``td``: an entry
    that is cast, converted (a TensorDict under a record field: a record over it), or
    refused; nor for a ``frozen`` class over an unlocked ``td``, as locking the record
    would lock ``td``."""
    info = cls.__tclass_info__
    if type(td) is not TensorDict or not info.unchecked_values:
        return False
    entries, rules = td._entries(), info.rules
    batch = device = None  # (read at the first leaf: a nested record exits before)
    maybe = False
    for key, value in entries.items():
        rule = rules.get(key)
        if rule is None or rule.cast is not None:
            return False
        kind = value.__class__
        if kind is TensorDict:  # kept in a TensorDict (or Any) field, a record over it else
            if rule.convert_to is not None and rule.convert_to is not TensorDict:
                return False
            maybe = True
            continue
        if batch is None:
            batch, device = td.batch_size, td.device
        if kind is NonTensorData:
            if not rule.value_field or rule.store(value, batch, device) is not value:
                return False
        elif isinstance(value, _Tensor):
            if not (rule.tensor or rule.number or rule.any_value):
                return False
            if device is not None and value.device != device:
                return False
            if kind is UnbatchedTensor or value.shape[: len(batch)] != batch:
                maybe = True
        else:  # a record, a lazy stack...: the field may keep it as it is
            maybe = True
    if not all(name in entries for name in info.non_none_defaults):
        return False
    if info.options["frozen"] and not td.is_locked:
        return False
    return None if maybe else True


def _kept_as_they_are(
    rules: dict[str, FieldRule],
    entries: Mapping[str, Value],
    batch: torch.Size,
    device: torch.device | None,
    names: Names,
) -> bool:
    """Whether each entry is what ``FieldRule.store`` of its field returns unchanged (of a
    saved record: a tensor in a value field is an op's result it held, see
    :func:`record_from_entries`)."""
    n = len(batch)
    for key, value in entries.items():
        rule = rules.get(key)
        if rule is None or rule.cast is not None:
            return False
        if isinstance(value, _Tensor):
            if value.__class__ is UnbatchedTensor or value.shape[:n] != batch:
                return False
            if not (rule.tensor or rule.number or rule.any_value or rule.value_field):
                return False
        elif value.__class__ is NonTensorData:
            if not rule.value_field or value.batch_size[:n] != batch:
                return False
        elif value.__class__ is TensorDict or is_record(value):
            if names is not None and any(name is not None for name in names):
                return False  # named_to_fit's business
            if not (rule.any_value or rule.tensor or isinstance(value, rule.collections)):
                return False  # converted to the annotated class
            size = value.batch_size
            if n and size != batch and size[:n] != batch:
                return False
        else:
            return False
        if device is not None and value.device != device:
            return False
    return True


def _record_of_tensors(
    info: ClassInfo,
    entries: Mapping[str, Value],
    batch: torch.Size | None = None,
    device: torch.device | None = None,
) -> bool:
    """Whether ``entries`` are the record's fields in declaration order, each a tensor
    its field takes as it is (no cast) and, where given, of the batch size ``batch`` and
    on ``device`` (``None``: the caller guarantees it, as a loader does)."""
    if not info.tensors_as_they_are or tuple(entries) != info.field_names:
        return False
    n = 0 if batch is None else len(batch)
    for value in entries.values():
        if (
            not isinstance(value, _Tensor)
            or value.__class__ is UnbatchedTensor
            or (device is not None and value.device != device)
            or (batch is not None and value.shape[:n] != batch)
        ):
            return False
    return True


def record_from_entries(
    cls: type[_R],
    entries: Mapping[str, Value],
    batch_size: torch.Size,
    device: torch.device | None,
    names: Names = None,
    check_values: bool = True,
    entry_order: bool = False,
    saved: bool = False,
) -> _R:
    """A record over existing entries (not copied), each checked against its field
    (their values against the constraints unless not ``check_values``: a loaded
    record's were, as they were read); absent fields take their defaults. Its keys come
    in declaration order, or with ``entry_order`` in the order of ``entries`` (then the
    defaults): a loaded record lists them as its folder was read, as the peer. A
    ``saved`` record keeps a tensor in a value field as it is: an op's result the record
    held when saved (``record != other`` makes a ``str`` field a bool tensor), which the
    loader's schema comparison accepted (see ``_schema._op_result``)."""
    info = cls.__tclass_info__
    size = as_batch_size(batch_size)
    if info.specs is None and _record_of_tensors(info, entries, size, device):  # stored as is
        td = TensorDict._new_unchecked(dict(entries), size, device)
        td._assign_names(names)
        return cls._from_tensordict_unchecked(td)
    for key in entries:
        if key not in info.field_names:
            msg = (
                f"{cls.__name__}.from_tensordict: {key!r} is not a field of {cls.__name__} "
                f"(fields: {', '.join(info.field_names)})"
            )
            raise UnknownFieldError(msg)
    td = TensorDict._new_unchecked({}, size, device)
    td._assign_names(names)
    batch, n, rules = td.batch_size, len(td.batch_size), info.rules
    fields = info.fields
    if entry_order:
        position = {key: i for i, key in enumerate(entries)}
        fields = tuple(sorted(fields, key=lambda f: position.get(f.name, len(position))))
    for field in fields:
        if field.name in entries:
            value: Any = entries[field.name]
            rule = rules[field.name]
            if (  # a tensor its field takes as it is (every leaf of a loaded record)
                rule.cast is None
                and (rule.tensor or rule.number or rule.any_value or (saved and rule.value_field))
                and isinstance(value, _Tensor)
                and value.__class__ is not UnbatchedTensor
                and (device is None or value.device == device)
                and value.shape[:n] == batch
            ):
                td._store_entry(field.name, value)  # what _store does with it
                continue
        elif field.default is not dataclasses.MISSING:
            value = field.default
        elif field.default_factory is not dataclasses.MISSING:
            value = field.default_factory()
        else:
            continue  # not set yet, as None
        _store(info, td, field.name, value, check_spec=False)
    check_specs(cls, td, check_values)  # together: each field's named dims against the others'
    return cls._from_tensordict_unchecked(td)
