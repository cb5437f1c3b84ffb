"""What each field annotation accepts, and how a given value is stored.

The rules (DESIGN.md, "Casting follows the annotation"), decided once per field when the
class is built:

=========================  ==================================================================
annotation                 accepted values, and what is stored
=========================  ==================================================================
``Tensor`` (or subclass)   tensors; array-likes (lists, numbers, numpy) via ``torch.as_tensor``
a tensorclass ``C``        ``C`` instances; a dict (``C.from_dict``) or a TensorDict
                           (``C.from_tensordict``) becomes a ``C``
``TensorDict``             TensorDicts; a dict becomes a TensorDict
``str``, ``int``, ...      values of that type (``float`` takes ints, ``int`` takes bools, as
                           type checkers do), kept as Python values (``NonTensorData``)
``list[X]``, ``dict``...   values whose type is the generic's origin (items are not checked)
``Literal[...]``           one of the listed values
``Any``, ``object``        anything: tensors and collections as entries, the rest as values
``X | None``               ``None`` too (stored as nothing; reads ``None``)
``X | Y``                  what ``X`` or ``Y`` accepts
any other class            its instances, kept as Python values
=========================  ==================================================================

A value that fits no rule raises ``FieldTypeError`` naming the class, the field and the
annotation. Every stored tensor and collection must start with the batch size.
"""

from __future__ import annotations

import numbers
import sys
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Union

import numpy as np
import torch

from tclass._base._collection import TensorCollection
from tclass._base._tensordict_base import TensorDictBase, Value
from tclass._core._batch import format_shape
from tclass._core._spec import Spec, TensorSpec, is_jaxtyping, spec_of
from tclass._engine._nontensor import NonTensorData, _NonTensorNode
from tclass._engine._td import TensorDict
from tclass.errors import BatchMismatchError, ClassDefinitionError, FieldTypeError

__all__ = ["FieldRule", "annotation_text", "resolve_annotations", "rule_for"]

_Tensor = torch.Tensor
_V = typing.TypeVar("_V")
_UNION_TYPES: tuple[Any, ...] = (Union, types.UnionType)


@dataclass(frozen=True)
class FieldRule:
    """What one field accepts (see the module table)."""

    name: str
    owner: str  # the class name, for messages
    text: str  # the annotation as written, for messages
    optional: bool = False
    any_value: bool = False
    tensor: bool = False  # accepts tensors
    cast_arrays: bool = False  # array-likes become tensors (a pure Tensor annotation)
    collections: tuple[type, ...] = ()  # accepted collection classes
    convert_to: type | None = None  # the collection class a dict / TensorDict becomes
    check_value: Callable[[object], bool] | None = None  # accepted Python values
    spec: TensorSpec | None = None  # the shape and dtype its tensors must have

    @property
    def value_field(self) -> bool:
        """Whether the field may hold a Python value (read back through ``.data``)."""
        return self.any_value or self.check_value is not None

    def store(self, value: Any, batch: torch.Size, device: torch.device | None) -> Value | None:
        """``value`` as the record keeps it (``None``: nothing stored), checked."""
        if isinstance(value, _Tensor):
            if not (self.tensor or self.any_value):
                self._refuse(value)
            tensor: torch.Tensor = value
            if device is not None and tensor.device != device:
                tensor = tensor.to(device)
            return self._check_batch(tensor, batch)
        if isinstance(value, TensorCollection):
            return self._store_collection(value, batch, device)
        if value is None:
            if self.optional:
                return None
            msg = (
                f"{self.owner}.{self.name} is annotated {self.text}, which does not allow None; "
                f"annotate it `{self.text} | None` to make it optional"
            )
            raise FieldTypeError(msg)
        if self.any_value or (self.check_value is not None and self.check_value(value)):
            return NonTensorData._make(value, batch, device)
        if self.convert_to is not None and isinstance(value, Mapping):
            return self._convert(value, batch, device)
        if self.cast_arrays and not isinstance(value, (str, bytes, Mapping)):
            dtypes = self.spec.dtypes if self.spec is not None else None
            dtype = next(iter(dtypes)) if dtypes is not None and len(dtypes) == 1 else None
            try:
                tensor = torch.as_tensor(value, dtype=dtype, device=device)
            except (TypeError, ValueError, RuntimeError):
                self._refuse(value)
            return self._check_batch(tensor, batch)
        self._refuse(value)

    def _store_collection(
        self, value: TensorCollection, batch: torch.Size, device: torch.device | None
    ) -> Value:
        if isinstance(value, _NonTensorNode):
            if not self.value_field:
                self._refuse(value)
        elif not (self.any_value or isinstance(value, self.collections)):
            if self.convert_to is None or not isinstance(value, TensorDict):
                self._refuse(value)
            return self._convert(value, batch, device)
        stored: Any = value
        if device is not None and stored.device != device:
            stored = stored.to(device)
        return self._check_batch(stored, batch)  # type: ignore[no-any-return]

    def _convert(self, value: Any, batch: torch.Size, device: torch.device | None) -> Value:
        target: Any = self.convert_to
        try:
            if isinstance(value, TensorDictBase):
                converted = target.from_tensordict(value) if target is not TensorDict else value
            elif target is TensorDict:
                converted = TensorDict(value, batch, device)
            else:
                converted = target.from_dict(value, batch_size=batch, device=device)
        except BatchMismatchError as error:
            raise error.under(self.name) from None
        if device is not None and converted.device != device:
            converted = converted.to(device)
        return self._check_batch(converted, batch)

    def _check_batch(self, value: _V, batch: torch.Size) -> _V:
        n = len(batch)
        shape = typing.cast(Any, value).shape
        if n and shape[:n] != batch:
            raise BatchMismatchError(self.name, shape, batch)
        return value

    def _refuse(self, value: object) -> typing.NoReturn:
        shown = _describe(value)
        msg = f"{self.owner}.{self.name} is annotated {self.text}; got {shown}"
        if self.convert_to is TensorDict and isinstance(value, TensorDictBase):
            msg += " (convert a record with .to_tensordict())"
        raise FieldTypeError(msg)


def _describe(value: object) -> str:
    if isinstance(value, (_Tensor, TensorCollection)):
        return f"a {type(value).__name__} of shape {format_shape(value.shape)}"
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{type(value).__name__} {text}"


def annotation_text(annotation: object, specs: bool = False) -> str:
    """The annotation as a user wrote it: ``Tensor``, ``str | None``, ``list[int]``;
    with ``specs``, an ``Annotated`` keeps its ``Spec``."""
    if isinstance(annotation, str):
        return annotation
    if annotation is None or annotation is type(None):
        return "None"
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin in _UNION_TYPES:
        return " | ".join(annotation_text(arg, specs) for arg in args)
    if origin is Literal:
        return f"Literal[{', '.join(repr(arg) for arg in args)}]"
    if origin is typing.Annotated:
        shown = [repr(item) for item in args[1:] if specs and isinstance(item, Spec)]
        inner = annotation_text(args[0], specs)
        return f"Annotated[{', '.join([inner, *shown])}]" if shown else inner
    if origin is not None and args:
        name = getattr(origin, "__name__", None) or annotation_text(origin)
        return f"{name}[{', '.join(annotation_text(arg, specs) for arg in args)}]"
    name = getattr(annotation, "__name__", None)
    return name if isinstance(name, str) else repr(annotation).replace("typing.", "")


def rule_for(name: str, owner: str, annotation: object) -> FieldRule:
    """The rule for a field ``name`` of class ``owner`` annotated ``annotation`` (resolved)."""
    text = annotation_text(annotation)
    members = _flatten_union(annotation, ())
    optional = any(option in (type(None), None, Any, object) for option, _ in members)
    members = [(option, meta) for option, meta in members if option is not type(None)]
    parts = [
        _member(option, meta, name, owner, text) for option, meta in members if option is not None
    ]
    any_value = any(part.get("any_value", False) for part in parts)
    tensor = any(part.get("tensor", False) for part in parts)
    collections = tuple(c for part in parts for c in part.get("collections", ()))
    checks = [part["check"] for part in parts if "check" in part]
    # Array-likes become tensors only when nothing else could claim them.
    cast_arrays = tensor and not checks and not collections and not any_value
    convert_to = collections[0] if len(collections) == 1 and not any_value else None
    return FieldRule(
        name=name,
        owner=owner,
        text=text,
        optional=optional,
        any_value=any_value,
        tensor=tensor,
        cast_arrays=cast_arrays,
        collections=collections,
        convert_to=convert_to,
        check_value=_any_of(checks) if checks else None,
        spec=_one_spec(parts),
    )


def _flatten_union(
    annotation: object, metadata: tuple[object, ...]
) -> list[tuple[object, tuple[object, ...]]]:
    """The members of a union, each with the ``Annotated`` metadata around it."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        inner, *extra = typing.get_args(annotation)
        return _flatten_union(inner, (*metadata, *extra))
    if origin in _UNION_TYPES:
        return [
            item for arg in typing.get_args(annotation) for item in _flatten_union(arg, metadata)
        ]
    return [(annotation, metadata)]


def _member(
    option: object, metadata: tuple[object, ...], name: str, owner: str, text: str
) -> dict[str, Any]:
    """What one member of the annotation's union contributes, its spec included."""
    spec = spec_of(option, metadata, f"{owner}.{name}: ")
    if is_jaxtyping(option):
        array_type: Any = getattr(option, "array_type", None)
        if issubclass(array_type, _Tensor):
            return {"tensor": True, "spec": spec}
    part = _part(option, name, owner, text)
    if spec is not None and part.get("tensor"):
        part["spec"] = spec
    return part


def _one_spec(parts: list[dict[str, Any]]) -> TensorSpec | None:
    """The spec of a field's tensors: the one every tensor member of its union declares
    (members that disagree, or one without a spec, leave the tensors unchecked)."""
    specs = [part.get("spec") for part in parts if part.get("tensor")]
    if not specs or specs[0] is None or any(spec != specs[0] for spec in specs):
        return None
    return specs[0]  # type: ignore[no-any-return]


def _part(option: object, name: str, owner: str, text: str) -> dict[str, Any]:
    """What one member of the annotation's union contributes."""
    if option is Any or option is object or isinstance(option, typing.TypeVar):
        return {"any_value": True}
    origin = typing.get_origin(option)
    if origin is Literal:
        allowed = typing.get_args(option)
        return {"check": lambda v: any(type(v) is type(a) and v == a for a in allowed)}
    if origin is not None:  # list[int], dict[str, Any], type[X], Callable[...]
        return _part(origin, name, owner, text)
    if isinstance(option, type):
        if issubclass(option, _Tensor):
            return {"tensor": True}
        if issubclass(option, _NonTensorNode):
            return {"any_value": True}
        if issubclass(option, TensorCollection):
            return {"collections": (option,)}
        return {"check": _type_check(option)}
    if option is typing.Callable:
        return {"check": callable}
    supertype = getattr(option, "__supertype__", None)  # typing.NewType
    if supertype is not None:
        return _part(supertype, name, owner, text)
    msg = (
        f"{owner}.{name}: cannot use the annotation {text} as a field type; annotate it with "
        "a class (Tensor, a tensorclass, str, int, ...), a union of classes, or Any"
    )
    raise ClassDefinitionError(msg)


def _type_check(kind: type) -> Callable[[object], bool]:
    if kind is float:
        return lambda v: isinstance(v, numbers.Real) and not isinstance(v, _Tensor)
    if kind is int:
        return lambda v: isinstance(v, numbers.Integral) and not isinstance(v, _Tensor)
    if kind is complex:
        return lambda v: isinstance(v, numbers.Complex) and not isinstance(v, _Tensor)
    if kind is bool:
        return lambda v: isinstance(v, (bool, np.bool_))
    try:
        isinstance(None, kind)
    except TypeError:  # a Protocol that is not runtime-checkable, and the like
        return lambda v: True
    return lambda v: isinstance(v, kind)


def _any_of(checks: list[Callable[[object], bool]]) -> Callable[[object], bool]:
    if len(checks) == 1:
        return checks[0]
    return lambda v: any(check(v) for check in checks)


def resolve_annotations(
    cls: type, names: Sequence[str], registry: Mapping[str, type]
) -> dict[str, object]:
    """The annotations of the fields ``names``, strings evaluated.

    Each annotation is taken from the most derived class declaring it and evaluated in
    that class's module, where two names are added: the tensorclasses defined so far in
    the module of ``cls`` (the latest of each name, standing in for the local scope a
    class defined inside a function would see) and ``cls`` itself.

    Raises:
        NameError: if a name cannot be found yet (the caller retries later).
    """
    local = {**registry, cls.__name__: cls}
    hints: dict[str, object] = {}
    for name in names:
        for klass in cls.__mro__:
            own = vars(klass).get("__annotations__", {})
            if name not in own:
                continue
            annotation = own[name]
            if isinstance(annotation, str):
                module = sys.modules.get(klass.__module__)
                namespace = {**(vars(module) if module is not None else {}), **local}
                annotation = eval(annotation, namespace)  # noqa: S307
            hints[name] = annotation
            break
    return hints
