"""A record class's schema in its saved folder, and the folder checked against a class.

**Written.** Saving a record writes its class's schema into the ``_tclass`` marker of the
record's ``_tensordict/meta.json`` (a dict with neither ``type`` nor ``dtype``, which the
peer skips; the record's own ``meta.json`` cannot hold it: the peer passes every key
there to the class)::

    "_tclass": {"schema": {
        "class": "app.data:Transition",
        "fields": {
            "obs": {"kind": "tensor", "annotation": "Tensor",
                    "spec": {"dims": "3 h w", "whole": false, "dtypes": ["torch.uint8"]}},
            "info": {"kind": "record", "annotation": "Info | None", "class": "app.data:Info",
                     "optional": true, "default": true},
            "env": {"kind": "value", "annotation": "str", "default": true}},
        "dims": {"h": 84, "w": 84}}}

``kind`` is ``tensor``, ``record`` (a tensorclass), ``collection`` (a TensorDict),
``value`` (a Python value) or ``any``; ``spec`` is present for spec'd fields; ``dims``
holds the named dims the saved tensors bind.

**Read.** Loading a record with its class compares the folder (the keys, dtypes and
shapes of ``_tensordict/meta.json``) with the class, and the saved schema says which
fields the saving class had. The evolution rules:

* a field of the class the folder lacks loads as its default, or ``None`` when it is
  optional, or when the saved schema lists it (it was ``None`` when saved), or when the
  folder has no schema (written by the peer or an older tclass, which store ``None`` by
  leaving the field out); otherwise it is a difference that ``strict=False`` accepts
  (the field loads as ``None``);
* a field in the folder the class lacks is a difference that ``strict=False`` accepts
  (it is not loaded);
* a dtype the field's spec does not allow is a difference, accepted by ``widen=True``
  when the saved dtype converts to an allowed one without loss (the field is read into
  memory, converted); a shape its spec does not allow, or a kind of value the field does
  not take, is a difference no option accepts.

Records are duck-typed (``__tclass_info__``): the facade sits above this layer.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import torch

from tclass._core._record_spec import Observed, RecordSpecs
from tclass._core._spec import TensorSpec
from tclass._io._format import DTYPES
from tclass.errors import MetadataError, SchemaDifference, SchemaMismatchError

__all__ = [
    "FieldSchema",
    "LoadPlan",
    "SavedSchema",
    "class_schema",
    "compare",
    "mismatch_error",
    "read_schema",
    "schema_json",
    "widened",
]

KINDS = ("tensor", "record", "collection", "value", "any")


@dataclass(frozen=True)
class FieldSchema:
    """What a class declares of one field (built by the facade from its annotation)."""

    name: str
    kind: str  # one of KINDS
    annotation: str  # as written, for messages
    spec: TensorSpec | None = None
    record: str | None = None  # "module:QualName" of a record field's class
    optional: bool = False  # None is allowed
    default: bool = False  # a default or default_factory
    accepts: frozenset[str] = frozenset()  # entry kinds: "tensor", "value", "collection"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "annotation": self.annotation}
        if self.spec is not None:
            out["spec"] = self.spec.to_json()
        if self.record is not None:
            out["class"] = self.record
        if self.optional:
            out["optional"] = True
        if self.default:
            out["default"] = True
        return out


@dataclass(frozen=True)
class SavedSchema:
    """The schema a folder records (what the saving class declared)."""

    class_id: str
    fields: dict[str, dict[str, Any]]
    dims: dict[str, Any]


def class_schema(cls: type) -> tuple[tuple[FieldSchema, ...], RecordSpecs | None]:
    """The field schemas and the specs of a record class."""
    info: Any = cls.__tclass_info__
    return info.schema, info.specs


def schema_json(cls: type, bound: Mapping[str, Any]) -> dict[str, Any]:
    """The ``schema`` entry of the marker of a record of ``cls`` whose tensors bind the
    named dims ``bound``."""
    fields, _ = class_schema(cls)
    out: dict[str, Any] = {
        "class": f"{cls.__module__}:{cls.__qualname__}",
        "fields": {f.name: f.to_json() for f in fields},
    }
    if bound:
        out["dims"] = {name: list(v) if isinstance(v, tuple) else v for name, v in bound.items()}
    return out


def read_schema(marker: Mapping[str, Any], where: str) -> SavedSchema | None:
    """The schema in a node's marker, if any.

    Raises:
        MetadataError: if it is there but malformed.
    """
    raw = marker.get("schema")
    if raw is None:
        return None
    fields = raw.get("fields") if isinstance(raw, dict) else None
    class_id = raw.get("class") if isinstance(raw, dict) else None
    dims = raw.get("dims", {}) if isinstance(raw, dict) else None
    if (
        not isinstance(fields, dict)
        or not all(isinstance(v, dict) for v in fields.values())
        or not isinstance(class_id, str)
        or not isinstance(dims, dict)
    ):
        msg = (
            f"{where!r}: the schema in its _tclass entry is malformed (want an object with "
            f"'class', 'fields' and optional 'dims'); the folder is damaged"
        )
        raise MetadataError(msg)
    return SavedSchema(class_id, fields, dims)


# --- comparing a folder with a class -----------------------------------------------------


@dataclass
class LoadPlan:
    """What loading a record's folder with its class does about their differences."""

    differences: list[SchemaDifference] = field(default_factory=list)
    drop: set[str] = field(default_factory=set)  # extra fields not loaded (strict=False)
    widen: dict[str, torch.dtype] = field(default_factory=dict)  # converted (widen=True)


def compare(
    cls: type,
    entries: Mapping[str, Mapping[str, Any]],
    values: set[str],
    saved: SavedSchema | None,
    batch_ndim: int,
    path: str,
    *,
    strict: bool,
    widen: bool,
) -> LoadPlan:
    """Compares a record's folder with ``cls``: ``entries`` are the key entries of its
    ``_tensordict/meta.json`` (a leaf's ``dtype`` and ``shape``, a node's ``type``),
    ``values`` the Python values kept elsewhere (older writers), ``saved`` its schema."""
    fields, specs = class_schema(cls)
    declared = {f.name: f for f in fields}
    plan = LoadPlan()
    owner = cls.__name__

    def differ(
        name: str, kind: str, got: object, want: object, option: str | None, why: str
    ) -> None:
        fix = f" (load with {option} to accept it)" if option else ""
        message = f"{owner}.{name}: {why}{fix}"
        plan.differences.append(SchemaDifference(path, name, kind, got, want, option, message))

    for name in entries.keys() | values:
        if name not in declared:
            if strict:
                differ(name, "extra", _entry_kind(entries.get(name)), None, "strict=False",
                       "the folder holds a field the class does not declare")  # fmt: skip
            plan.drop.add(name)
    for f in fields:
        if f.name in entries or f.name in values:
            continue
        was_field = saved is None or f.name in saved.fields
        if f.default or f.optional or was_field:
            continue
        if strict:
            differ(f.name, "missing", None, f.annotation, "strict=False",
                   f"the class declares it ({f.annotation}) without a default, and the folder "
                   f"(saved from {saved.class_id if saved else 'another class'}) does not have "
                   "it; give it a default or make it optional (`| None`)")  # fmt: skip
    observed: dict[str, Observed] = {}
    for name, entry in entries.items():
        f = declared.get(name)
        if f is None:
            continue
        kind = _entry_kind(entry)
        if f.accepts and kind not in f.accepts:
            why = f"the folder holds a {kind} where the class declares {f.annotation}"
            differ(name, "kind", kind, f.annotation, None, why)
            continue
        if kind != "tensor" or f.spec is None:
            continue
        dtype = DTYPES.get(str(entry.get("dtype")))
        observed[name] = (None, list(entry.get("shape", ())))
        if dtype is None or f.spec.dtypes is None or dtype in f.spec.dtypes:
            continue
        target = widened(dtype, f.spec.dtypes)
        if target is not None and widen:
            plan.widen[name] = target
            continue
        shown = sorted(str(d).replace("torch.", "") for d in f.spec.dtypes)
        why = f"saved as {str(dtype).replace('torch.', '')}, declared {f.spec.text}"
        if target is None:
            why += " (not a lossless widening: convert the data, or change the annotation)"
        differ(name, "dtype", str(dtype).replace("torch.", ""), " or ".join(shown),
               "widen=True" if target is not None else None, why)  # fmt: skip
    if specs is not None:
        for problem in specs.problems(observed, batch_ndim):
            why = problem.message.removeprefix(f"{owner}.{problem.field} ")
            differ(problem.field, "shape", problem.got, problem.expected, None, why)
    return plan


def _entry_kind(entry: Mapping[str, Any] | None) -> str:
    if entry is None:
        return "value"
    kind = entry.get("type")
    if kind is None:
        return "tensor"
    return "value" if kind in ("NonTensorData", "NonTensorStack") else "collection"


def mismatch_error(root: str, differences: list[SchemaDifference]) -> SchemaMismatchError:
    """The error listing every difference found while loading ``root``."""
    lines = [f"  {d.path + ': ' if d.path else ''}{d.message}" for d in differences]
    options = sorted({d.option for d in differences if d.option is not None})
    summary = (
        f"{root!r} does not match the class loading it ({len(differences)} "
        f"difference{'s' if len(differences) != 1 else ''}):\n" + "\n".join(lines)
    )
    if options and all(d.option is not None for d in differences):
        summary += f"\nload_memmap(..., {', '.join(options)}) accepts all of them"
    return SchemaMismatchError(summary, differences)


# --- lossless dtype conversions ----------------------------------------------------------

# (kind, digits): kind "b" bool, "u" unsigned, "i" signed, "f" float, "c" complex; digits:
# value bits for integers, significand bits for floats (complex: per component), and the
# exponent bits of floats, which must not shrink either.
_DIGITS: dict[torch.dtype, tuple[str, int, int]] = {
    torch.bool: ("b", 1, 0),
    torch.uint8: ("u", 8, 0), torch.uint16: ("u", 16, 0), torch.uint32: ("u", 32, 0),
    torch.uint64: ("u", 64, 0),
    torch.int8: ("i", 7, 0), torch.int16: ("i", 15, 0), torch.int32: ("i", 31, 0),
    torch.int64: ("i", 63, 0),
    torch.float16: ("f", 11, 5), torch.bfloat16: ("f", 8, 8), torch.float32: ("f", 24, 8),
    torch.float64: ("f", 53, 11),
    torch.complex32: ("c", 11, 5), torch.complex64: ("c", 24, 8), torch.complex128: ("c", 53, 11),
}  # fmt: skip


def _widens(src: torch.dtype, dst: torch.dtype) -> bool:
    """Whether every value of ``src`` is exactly a value of ``dst`` (and they differ)."""
    if src == dst or src not in _DIGITS or dst not in _DIGITS:
        return False
    (sk, sd, se), (dk, dd, de) = _DIGITS[src], _DIGITS[dst]
    if sk == "b":
        return True
    if sk in "ui":
        if dk in "ui":
            return dd >= sd and (dk == "i" or sk == "u")
        return dd >= sd  # an integer fits a float's significand
    if sk == "f":
        return dk in "fc" and dd >= sd and de >= se
    return dk == "c" and dd >= sd and de >= se


def widened(src: torch.dtype, allowed: frozenset[torch.dtype]) -> torch.dtype | None:
    """The allowed dtype ``src`` converts to without loss (the smallest; floats before
    complex), or None."""
    candidates = [dtype for dtype in allowed if _widens(src, dtype)]
    if not candidates:
        return None
    return min(candidates, key=lambda d: (_DIGITS[d][0] == "c", d.itemsize, str(d)))
