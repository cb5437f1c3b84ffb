"""A record class as a JSON Schema document (draft 2020-12): ``Cls.json_schema()``.

The document describes a record in its JSON form (``record.to_dict(convert_tensors=True)``:
an object of its fields, tensors as nested lists, nested records as objects, ``None``
for a field not set), so that any JSON Schema validator checks it, and it carries
what JSON cannot say in ``x-tclass-*`` keywords, for readers of saved folders:

* a tensor field: nested arrays, one level per dim (a fixed size as ``minItems`` /
  ``maxItems``), wrapped in any number of levels for the batch dims (or, for a
  jaxtyping annotation that describes the whole tensor, its own leading dims); the
  items are ``integer`` (with the dtype's range), ``number`` or ``boolean``, with the
  field's constraints (``minimum``, ``exclusiveMinimum``, ``maximum``,
  ``exclusiveMaximum``, ``enum`` for ``isin``, ``multipleOf``). ``x-tclass-dtype``
  lists the dtypes allowed (null: any), ``x-tclass-dims`` the dims as the annotation
  writes them, ``x-tclass-batch-dims`` where the batch dims are (``leading``: before
  the dims; ``included``: among them, jaxtyping's spelling), ``x-tclass-constraints``
  the constraints as tclass states them;
* a Python-value field: the JSON type of its annotation (``int``: ``integer``,
  ``list[str]``: an array of strings, ``dict[str, float]``, ``Literal``, unions);
* a nested record: a ``$ref`` into ``$defs`` (``"#"`` for the class itself);
* an optional field (``| None``, or with a default) is not ``required``; ``| None``
  adds ``null`` to its types.

``x-tclass-class`` names the class (``module:QualName``) and ``x-tclass-named-dims``
lists, for each named dim, the fields that name it (they must agree on its size: a
cross-field rule JSON Schema cannot state). Saving a record writes this document into
its folder (``_io/_schema.py``).
"""

from __future__ import annotations

import copy
import dataclasses
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import torch

from tclass._base.implemented._collection import TensorCollection
from tclass._core._constraints import ValueConstraints
from tclass._core._records import is_record_class
from tclass._core._spec import FIXED, NAMED, SYMBOLIC, VARIADIC, Dim, TensorSpec, array_type_of
from tclass._tensorclass._hints import annotated_members, annotation_text

__all__ = ["DIALECT", "class_document", "is_tensor_annotation", "json_schema"]

DIALECT = "https://json-schema.org/draft/2020-12/schema"
_NONE: dict[str, Any] = {"type": "null"}


def json_schema(cls: type) -> dict[str, Any]:
    """``cls.json_schema()``: a copy of the class's document (see the module docstring)."""
    return copy.deepcopy(class_document(cls))


def class_document(cls: type) -> dict[str, Any]:
    """The class's document, built once and kept (not to be changed by the caller)."""
    info: Any = getattr(cls, "__tclass_info__")  # noqa: B009 (a record class's)
    document: dict[str, Any] | None = info._json_schema
    if document is None:
        builder = _Builder(cls)
        document = {"$schema": DIALECT, **builder.record(cls)}
        if builder.defs:
            document["$defs"] = builder.defs
        info._json_schema = document
    return document


def _def_name(cls: type) -> str:
    """The key of a record class in ``$defs`` (a JSON pointer token: no ``/`` nor ``~``)."""
    return f"{cls.__module__}.{cls.__qualname__}".replace("~", "-").replace("/", "-")


class _Builder:
    """One document: its ``$defs`` as they are reached."""

    def __init__(self, root: type) -> None:
        self.root = root
        self.defs: dict[str, Any] = {}

    # --- records -------------------------------------------------------------------------

    def ref(self, cls: type) -> dict[str, Any]:
        if cls is self.root:
            return {"$ref": "#"}
        key = _def_name(cls)
        if key not in self.defs:
            self.defs[key] = {}  # reserved first: a class that names itself (a tree)
            self.defs[key] = self.record(cls)
        return {"$ref": f"#/$defs/{key}"}

    def record(self, cls: type) -> dict[str, Any]:
        info: Any = getattr(cls, "__tclass_info__")  # noqa: B009
        rules, hints = info.rules, info.hints
        defaults = {
            f.name
            for f in dataclasses.fields(cls)
            if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        }
        properties: dict[str, Any] = {}
        required: list[str] = []
        named: dict[str, list[str]] = {}
        for name in info.field_names:
            rule = rules[name]
            properties[name] = self.field(cls, name, hints.get(name, Any), rule.spec)
            if not (rule.optional or name in defaults):
                required.append(name)
            for dim in _named_dims(rule.spec):
                named.setdefault(dim, []).append(name)
        out: dict[str, Any] = {
            "title": cls.__qualname__,
            "type": "object",
            "x-tclass-class": f"{cls.__module__}:{cls.__qualname__}",
            "properties": properties,
            "required": required,
            "additionalProperties": False,
        }
        if named:
            out["x-tclass-named-dims"] = named
        return out

    def field(self, cls: type, name: str, hint: object, spec: TensorSpec | None) -> dict[str, Any]:
        """A field's schema: its annotation's members, each as JSON reads it."""
        options: list[dict[str, Any]] = []
        for member, metadata in annotated_members(hint):
            if member is None or member is type(None):
                schema = _NONE
            elif is_tensor_annotation(member):
                schema = self.tensor(f"{_def_name(cls)}.{name}", spec)
            else:  # with its constraints (Annotated[int, Ge(0)]: "minimum": 0)
                schema = self.value(member)
                found = ValueConstraints.build(metadata, None, f"{_def_name(cls)}.{name}: ")
                if found is not None and schema:
                    schema = {**schema, **found.to_json()}
            if schema not in options:
                options.append(schema)
        out = options[0] if len(options) == 1 else {"anyOf": options}
        if {} in options:
            out = {}  # one member takes anything: so does the field
        return {**out, "x-tclass-annotation": annotation_text(hint, specs=True)}

    # --- Python values -------------------------------------------------------------------

    def value(self, annotation: object) -> dict[str, Any]:
        """The JSON schema of a Python value annotated ``annotation`` ({} when JSON
        cannot say more: ``Any``, a class of the program's own)."""
        if annotation is None or annotation is type(None):
            return _NONE
        simple = _SIMPLE.get(annotation)
        if simple is not None:
            return dict(simple)
        origin, args = typing.get_origin(annotation), typing.get_args(annotation)
        if origin is Literal:
            return {"enum": list(args)}
        if origin is typing.Annotated or origin in (typing.Union, types.UnionType):
            options = [self.value(member) for member, _ in annotated_members(annotation)]
            return {} if {} in options else {"anyOf": options}
        if isinstance(annotation, type) and is_record_class(annotation):
            return self.ref(annotation)
        if isinstance(annotation, type) and issubclass(annotation, TensorCollection):
            return {"type": "object", "x-tclass-kind": "collection"}
        if origin is not None:
            return self.generic(origin, args)
        if isinstance(annotation, type) and annotation in (list, tuple, set, frozenset):
            return {"type": "array"}
        if isinstance(annotation, type) and annotation is dict:
            return {"type": "object"}
        supertype = getattr(annotation, "__supertype__", None)  # typing.NewType
        return self.value(supertype) if supertype is not None else {}

    def generic(self, origin: Any, args: tuple[Any, ...]) -> dict[str, Any]:
        if origin is tuple and args and args[-1] is not Ellipsis:
            if args == ((),):
                return {"type": "array", "maxItems": 0}
            items = [self.value(arg) for arg in args]
            n = len(items)
            return {"type": "array", "prefixItems": items, "minItems": n, "maxItems": n}
        if isinstance(origin, type) and issubclass(origin, Mapping):
            out: dict[str, Any] = {"type": "object"}
            if len(args) == 2 and args[0] is str:
                out["additionalProperties"] = self.value(args[1])
            return out
        if isinstance(origin, type) and issubclass(origin, (Sequence, set, frozenset)):
            out = {"type": "array"}
            if args and args[0] is not Ellipsis:
                out["items"] = self.value(args[0])
            return out
        return {}

    # --- tensors -------------------------------------------------------------------------

    def tensor(self, key: str, spec: TensorSpec | None) -> dict[str, Any]:
        leaf = _leaf(spec)
        out: dict[str, Any] = {"x-tclass-kind": "tensor"}
        dtypes = None if spec is None or spec.dtypes is None else spec.dtypes
        out["x-tclass-dtype"] = None if dtypes is None else sorted(_short(d) for d in dtypes)
        if spec is None or spec.any_shape:
            out.update(self.any_depth(leaf, f"{key}.values"))
            return out
        out["x-tclass-dims"] = spec.dims_text.split()
        out["x-tclass-batch-dims"] = "included" if spec.whole else "leading"
        if spec.constraints is not None:
            out["x-tclass-constraints"] = spec.constraints.to_json()
        dims = spec.dims
        if spec.whole and spec.variadic == 0:
            dims = dims[1:]  # the leading variadic stands for the batch dims
        inner = leaf
        for position in range(len(dims) - 1, -1, -1):
            inner = self.level(dims[position], inner, f"{key}.{position}")
        out.update(self.any_depth(inner, f"{key}.rows"))  # the batch dims, any number
        return out

    def level(self, dim: Dim, inner: dict[str, Any], key: str) -> dict[str, Any]:
        """One dim around ``inner``: an array (of a fixed size), or any number of them."""
        if dim.kind == VARIADIC:
            return self.any_depth(inner, key)
        out: dict[str, Any] = {"type": "array", "items": inner}
        if dim.kind == FIXED and not dim.broadcast:
            out["minItems"] = out["maxItems"] = dim.size
        elif dim.kind == FIXED:  # "#3": 3, or 1 (broadcast)
            out["anyOf"] = [{"maxItems": 1}, {"minItems": dim.size, "maxItems": dim.size}]
        return out

    def any_depth(self, inner: dict[str, Any], key: str) -> dict[str, Any]:
        """``inner`` inside any number of arrays (zero included), as a ``$defs`` entry
        that refers to itself."""
        ref = f"#/$defs/{key}"
        self.defs[key] = {"anyOf": [inner, {"type": "array", "items": {"$ref": ref}}]}
        return {"$ref": ref}


_SIMPLE: dict[object, dict[str, Any]] = {
    Any: {},
    object: {},
    bool: {"type": "boolean"},
    int: {"type": "integer"},
    float: {"type": "number"},
    complex: {},
    str: {"type": "string"},
    bytes: {},
}


def is_tensor_annotation(member: object) -> bool:
    """Whether an annotation (a union's member) is a tensor class or a jaxtyping tensor."""
    array_type = array_type_of(member)
    target = array_type if array_type is not None else member
    return isinstance(target, type) and issubclass(target, torch.Tensor)


def _short(dtype: torch.dtype) -> str:
    return str(dtype).replace("torch.", "")


def _leaf(spec: TensorSpec | None) -> dict[str, Any]:
    """The schema of one element: its JSON type from the dtypes, with the constraints."""
    dtypes = None if spec is None else spec.dtypes
    kinds: list[dict[str, Any]] = []
    if dtypes is None:
        kinds = [{"type": ["number", "boolean"]}]
    else:
        integers = [
            d for d in dtypes if not (d.is_floating_point or d.is_complex or d == torch.bool)
        ]
        if any(d.is_floating_point for d in dtypes):
            kinds.append({"type": "number"})
        elif integers:
            low = min(torch.iinfo(d).min for d in integers)
            high = max(torch.iinfo(d).max for d in integers)
            kinds.append({"type": "integer", "minimum": low, "maximum": high})
        if torch.bool in dtypes:
            kinds.append({"type": "boolean"})
        if any(d.is_complex for d in dtypes):
            kinds.append({})  # a complex number has no JSON form
    out: dict[str, Any] = kinds[0] if len(kinds) == 1 else {"anyOf": kinds}
    constraints = None if spec is None else spec.constraints
    if constraints is None or {} in kinds:
        return out
    out = dict(out)
    bounds = {"ge": "minimum", "gt": "exclusiveMinimum", "le": "maximum", "lt": "exclusiveMaximum"}
    for key, keyword in bounds.items():
        value = getattr(constraints, key)
        if value is None:
            continue
        if keyword in out:  # the dtype's range and the bound: the tighter
            tighter = max if keyword == "minimum" else min
            out[keyword] = tighter(out[keyword], value)
        else:
            out[keyword] = value
    if constraints.isin is not None:
        only_bool = dtypes is not None and dtypes == {torch.bool}
        out["enum"] = [bool(v) if only_bool else v for v in constraints.isin]
    if constraints.multiple_of is not None:
        out["multipleOf"] = constraints.multiple_of
    return out


def _named_dims(spec: TensorSpec | None) -> list[str]:
    """The names of the dims of ``spec`` that bind across fields (and those its
    expressions read)."""
    if spec is None:
        return []
    names: list[str] = []
    for dim in spec.dims:
        if dim.kind in (NAMED, VARIADIC) and dim.name:
            found = [dim.name]
        elif dim.kind == SYMBOLIC:
            found = list(dim.names)
        else:
            found = []
        names += [name for name in found if name not in names]
    if spec.whole and spec.variadic == 0 and spec.dims[0].name in names:
        names.remove(str(spec.dims[0].name))  # jaxtyping's "*batch": the batch dims
    return names
