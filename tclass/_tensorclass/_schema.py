"""A record class's schema: its fields' specs checked together, and what it declares of
each field (written into saved folders, compared with them when loading).

The specs come from the fields' rules (``_fields.rule_for`` reads them from the
annotations); this module turns them into per-class facts once, when the rules are
resolved (``ClassInfo``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from tclass._core._record_spec import RecordSpecs
from tclass._core._records import is_record_class
from tclass._io._schema import FieldSchema
from tclass._tensorclass._fields import FieldRule
from tclass._tensorclass._hints import annotation_text

__all__ = ["field_schemas", "record_specs"]


def record_specs(owner: str, rules: Mapping[str, FieldRule]) -> RecordSpecs | None:
    """The checker of a class's spec'd fields, or None when no field has a spec."""
    fields = [
        (name, rule.spec, not (rule.value_field or rule.collections))
        for name, rule in rules.items()
        if rule.spec is not None
    ]
    return RecordSpecs(owner, fields) if fields else None


def field_schemas(
    cls: type, rules: Mapping[str, FieldRule], hints: Mapping[str, object]
) -> tuple[FieldSchema, ...]:
    """What the class declares of each field, for saved folders and their checks."""
    defaults = {
        f.name: f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        for f in dataclasses.fields(cls)
    }
    return tuple(
        _field_schema(rule, hints.get(name), defaults.get(name, False))
        for name, rule in rules.items()
    )


def _field_schema(rule: FieldRule, annotation: object, default: bool) -> FieldSchema:
    records = [c for c in rule.collections if is_record_class(c)]
    accepts = set()
    if rule.tensor or rule.any_value or rule.number:
        accepts.add("tensor")
    if rule.value_field:
        accepts.add("value")
    if rule.collections or rule.any_value:
        accepts.add("collection")
    if rule.any_value:
        kind = "any"
    elif rule.tensor and not rule.collections and not rule.value_field:
        kind = "tensor"
    elif len(records) == 1 and not rule.tensor and not rule.value_field:
        kind = "record"
    elif rule.collections and not rule.tensor and not rule.value_field:
        kind = "collection"
    else:
        kind = "value" if rule.value_field and not rule.tensor else "any"
    record = records[0] if kind == "record" else None
    return FieldSchema(
        name=rule.name,
        kind=kind,
        annotation=annotation_text(annotation, specs=True) if annotation else rule.text,
        spec=rule.spec,
        record=None if record is None else f"{record.__module__}:{record.__qualname__}",
        optional=rule.optional,
        default=default,
        accepts=frozenset(accepts),
    )
