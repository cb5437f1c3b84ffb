"""A mypy plugin that types ``@tensorclass``-decorated classes like ``TensorClass``
subclasses: every method, property and constructor keyword (``batch_size``, ``device``,
``names``) of a tensorclass.

Enable it in the project's mypy configuration::

    [tool.mypy]
    plugins = ["tclass.mypy"]

(or ``plugins = tclass.mypy`` in ``mypy.ini``). Without it, mypy still types the fields
of a decorated class and its field-wise constructor (``dataclass_transform``), but not
what the class gains from ``TensorClass``; the base-class form ``class X(TensorClass)``
needs no plugin.

How: the decorator rebuilds the class with ``TensorClass`` as a base at runtime; the
plugin makes the same change to mypy's view of the class, before mypy synthesises its
``__init__``, so the two forms type-check the same.

The plugin also types ``record.replace(field=value)`` (both forms) as the runtime checks
it: each keyword is a field of the record's class, of that field's type (an unknown
field or a value of the wrong type is an error, as ``dataclasses.replace`` is checked),
``record.get("field")`` as that field's type (with a default: or the default's type),
and ``torch.stack`` / ``torch.cat`` of a list or tuple of tensor collections (records,
TensorDicts) as returning that collection type, as they do at runtime (torch's stubs take
tensors only).
"""

from __future__ import annotations

from collections.abc import Callable

from mypy.expandtype import expand_type_by_instance
from mypy.mro import calculate_mro
from mypy.nodes import ARG_NAMED_OPT, ARG_STAR, CallExpr, StrExpr, TypeInfo
from mypy.plugin import (
    ClassDefContext,
    FunctionSigContext,
    MethodContext,
    MethodSigContext,
    Plugin,
    SemanticAnalyzerPluginInterface,
)
from mypy.typeops import make_simplified_union
from mypy.types import (
    CallableType,
    FunctionLike,
    Instance,
    NoneType,
    TupleType,
    Type,
    TypeVarType,
    UnionType,
    get_proper_type,
)

__all__ = ["TclassPlugin", "plugin"]

_DECORATOR = "tclass._tensorclass._decorator.tensorclass"
_BASE = "tclass._tensorclass._record.TensorClass"
# mypy's dataclass transform stashes each class's field-wise ``replace`` signature (every
# field keyword-only and optional, of its declared type) under this name, for
# ``dataclasses.replace``; older mypys without it leave ``replace`` as declared.
_FIELDS_SIGNATURE = "__mypy-replace"
_COLLECTION = "tclass._base.implemented._collection.TensorCollection"
# torch's functions that take a sequence of tensors and return one, and run on tensor
# collections through ``__torch_function__``.
_JOINS = frozenset(
    f"torch._C._VariableFunctions.{name}" for name in ("stack", "cat", "concat", "concatenate")
)
# TensorClass's own constructor keywords, which ``replace`` does not take.
_KEYWORDS = frozenset({"batch_size", "device", "names"})


class TclassPlugin(Plugin):
    """Gives ``@tensorclass`` classes the ``TensorClass`` base, as the runtime does."""

    def get_class_decorator_hook(self, fullname: str) -> Callable[[ClassDefContext], None] | None:
        return _add_tensorclass_base if fullname == _DECORATOR else None

    def get_class_decorator_hook_2(self, fullname: str) -> Callable[[ClassDefContext], bool] | None:
        # The class is now a TensorClass subclass, which TensorClass's metaclass transforms
        # (with the options moved to class keywords); the decorator's own transform, for
        # users without this plugin, must not run a second time.
        return _already_transformed if fullname == _DECORATOR else None

    def get_function_signature_hook(
        self, fullname: str
    ) -> Callable[[FunctionSigContext], FunctionLike] | None:
        return _join_signature if fullname in _JOINS else None

    def get_method_signature_hook(
        self, fullname: str
    ) -> Callable[[MethodSigContext], FunctionLike] | None:
        return _replace_signature if self._record_method(fullname, "replace") else None

    def get_method_hook(self, fullname: str) -> Callable[[MethodContext], Type] | None:
        return _get_type if self._record_method(fullname, "get") else None

    def _record_method(self, fullname: str, name: str) -> bool:
        """Whether ``fullname`` is method ``name`` of a tensorclass (mypy names a method
        by the receiver's class: ``pkg.Step.replace``)."""
        owner, _, method = fullname.rpartition(".")
        if method != name:
            return False
        symbol = self.lookup_fully_qualified(owner)
        info = symbol.node if symbol is not None else None
        return isinstance(info, TypeInfo) and any(base.fullname == _BASE for base in info.mro)


def _add_tensorclass_base(ctx: ClassDefContext) -> None:
    """``@tensorclass(frozen=True) class X`` becomes ``class X(TensorClass, frozen=True)``."""
    info = ctx.cls.info
    base = _lookup_base(ctx.api)
    if base is None or any(ancestor.fullname == _BASE for ancestor in info.mro):
        return
    if isinstance(ctx.reason, CallExpr):
        for name, value in zip(ctx.reason.arg_names, ctx.reason.args):
            if name is not None:
                ctx.cls.keywords[name] = value
    info.bases = [b for b in info.bases if b.type.fullname != "builtins.object"] + [
        Instance(base, [])
    ]
    info.mro = []
    calculate_mro(info)
    info.metaclass_type = info.calculate_metaclass_type()


def _field_types(receiver: Type) -> dict[str, Type] | None:
    """The fields of a record's class and their declared types (type variables of a
    generic record bound as in ``receiver``); None if mypy does not say."""
    receiver = get_proper_type(receiver)
    if not isinstance(receiver, Instance) or receiver.type.fullname == _BASE:
        return None  # TensorClass itself: any record, whose fields are not known
    stashed = receiver.type.get_method(_FIELDS_SIGNATURE)
    fields = get_proper_type(stashed.type) if stashed is not None else None
    if not isinstance(fields, CallableType):
        return None
    fields = expand_type_by_instance(fields, receiver)
    return {
        name: typ
        for name, typ in zip(fields.arg_names, fields.arg_types)
        if name is not None and name not in _KEYWORDS
    }


def _replace_signature(ctx: MethodSigContext) -> FunctionLike:
    """``replace(mapping=..., /, **fields)`` with one optional keyword per field, typed."""
    default = ctx.default_signature
    fields = _field_types(ctx.type)
    if fields is None or ARG_STAR not in default.arg_kinds:
        return default
    star = default.arg_kinds.index(ARG_STAR)
    return default.copy_modified(
        arg_types=[default.arg_types[star], *fields.values()],
        arg_kinds=[ARG_STAR, *(ARG_NAMED_OPT for _ in fields)],
        arg_names=[default.arg_names[star], *fields],
    )


def _get_type(ctx: MethodContext) -> Type:
    """``record.get("field")``: the field's type; with a default, or the default's. A
    nested key or ``get``'s options (``as_list``...) keep the declared ``Any``."""
    fields = _field_types(ctx.type)
    if fields is None or len(ctx.args) < 3 or ctx.args[2] or len(ctx.args[0]) != 1:
        return ctx.default_return_type
    key = ctx.args[0][0]
    if not isinstance(key, StrExpr) or key.value not in fields:
        return ctx.default_return_type
    field = fields[key.value]
    if not ctx.arg_types[1]:
        return field
    return make_simplified_union([field, ctx.arg_types[1][0]])


def _join_signature(ctx: FunctionSigContext) -> FunctionLike:
    """``torch.stack(records)``: takes the sequence of collections, returns their type."""
    default = ctx.default_signature
    if not ctx.args or not ctx.args[0] or not default.arg_types:
        return default
    given = get_proper_type(ctx.api.get_expression_type(ctx.args[0][0]))
    if isinstance(given, TupleType):
        item = get_proper_type(make_simplified_union(given.items))
    elif isinstance(given, Instance) and given.type.fullname in ("builtins.list", "builtins.tuple"):
        item = get_proper_type(given.args[0])
    else:
        return default
    items = item.items if isinstance(item, UnionType) else [item]
    if not items or not all(_is_collection(part) for part in items):
        return default
    types = [given, *default.arg_types[1:]]
    if "out" in default.arg_names:  # out=: a collection of that type, as the result
        types[default.arg_names.index("out")] = make_simplified_union([item, NoneType()])
    return default.copy_modified(arg_types=types, ret_type=item)


def _is_collection(typ: Type) -> bool:
    typ = get_proper_type(typ)
    if isinstance(typ, TypeVarType):  # def f(records: list[C]) -> C, C bound to a record
        typ = get_proper_type(typ.upper_bound)
    return isinstance(typ, Instance) and any(base.fullname == _COLLECTION for base in typ.type.mro)


def _already_transformed(ctx: ClassDefContext) -> bool:
    del ctx
    return True


def _lookup_base(api: SemanticAnalyzerPluginInterface) -> TypeInfo | None:
    symbol = api.lookup_fully_qualified_or_none(_BASE)
    node = symbol.node if symbol is not None else None
    return node if isinstance(node, TypeInfo) else None


def plugin(version: str) -> type[Plugin]:
    """mypy's entry point."""
    del version  # the hooks used exist in every mypy this package supports (>= 1.8)
    return TclassPlugin
