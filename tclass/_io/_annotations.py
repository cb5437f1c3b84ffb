"""What a record class's field annotations say about the folder it is loaded from.

The reader has no other source for two facts: which class a nested record node is (a
node saved from ``__main__`` names a class no import defines, but the field holding it
is annotated with the caller's class), and which Python values a field may hold (a
crafted or foreign folder can put anything in a ``meta.json``). Records are duck-typed
here (``__tclass_info__``): the facade sits above this layer.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from tclass._core._records import is_record_class
from tclass._engine._lazy._stack import LazyStackedTensorDict
from tclass._engine._nontensor import NonTensorData
from tclass._engine._nontensor_stack import NonTensorStack
from tclass._engine._td import TensorDict
from tclass._io.memmap._format import file_name
from tclass.errors import MetadataError

__all__ = ["check_value", "check_values", "field_classes", "missing_fields", "tensorclasses"]


def tensorclasses(*classes: type | None) -> tuple[type, ...]:
    """The tensorclasses among ``classes``."""
    return tuple(cls for cls in classes if cls is not None and is_record_class(cls))


def field_classes(record_cls: type, key: str) -> tuple[type, ...]:
    """The tensorclasses the field ``key`` of ``record_cls`` accepts (none when it is
    not a field, or is annotated ``Any``, ``TensorDict``, ``Tensor``...)."""
    rule = record_cls.__tclass_info__.rules.get(key)  # type: ignore[attr-defined]
    return tensorclasses(*rule.collections) if rule is not None else ()


def is_field(record_cls: type, name: str) -> bool:
    """Whether ``record_cls`` declares the field ``name``."""
    return name in record_cls.__tclass_info__.field_names  # type: ignore[attr-defined]


def missing_fields(record_cls: type, present: set[str]) -> list[str]:
    """The fields of ``record_cls`` that are not in ``present``."""
    names: tuple[str, ...] = record_cls.__tclass_info__.field_names  # type: ignore[attr-defined]
    return [name for name in names if name not in present]


def check_values(record_cls: type, content: TensorDict | LazyStackedTensorDict, where: str) -> None:
    """Check each Python value of a record's loaded fields against its annotation, as the
    constructor checks the values it is given; a list where the annotation takes a tuple
    becomes that tuple (JSON, which stored it, has no tuple).

    Raises:
        MetadataError: naming the entry's folder and the field.
    """
    rules = record_cls.__tclass_info__.rules  # type: ignore[attr-defined]
    members = content.tensordicts if isinstance(content, LazyStackedTensorDict) else [content]
    for member in members:
        if not isinstance(member, TensorDict):
            continue  # a record member: checked when it was built
        for key, node in member._items():
            rule = rules.get(key)
            if rule is None or rule.check_value is None or rule.any_value:
                continue  # a tensor or collection field: the record's constructor checks it
            if isinstance(node, (NonTensorData, NonTensorStack)):
                path = f"{where}/{file_name(key)}"
                fitted = node._with_each_value(
                    partial(_fit, rule=rule, cls=record_cls, key=key, where=path)
                )
                if fitted is not node:
                    member._put(key, fitted)


def check_value(record_cls: type, key: str, value: object, where: str) -> object:
    """One Python value of the field ``key`` checked against its annotation as
    :func:`check_values` checks it (a list where a tuple is annotated: that tuple), for
    a value read from ``where``, an HDF5 file.

    Raises:
        MetadataError: naming ``where`` and the field.
    """
    rule = record_cls.__tclass_info__.rules.get(key)  # type: ignore[attr-defined]
    if rule is None or rule.check_value is None or rule.any_value:
        return value
    return _fit(value, rule=rule, cls=record_cls, key=key, where=where, place="the file")


def _fit(
    value: object, *, rule: Any, cls: type, key: str, where: str, place: str = "the folder"
) -> object:
    if (value is None and rule.optional) or rule.check_value(value):
        return value
    if type(value) is list and rule.check_value(tuple(value)):
        return tuple(value)
    shown = repr(value)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    msg = (
        f"{where!r} holds {type(value).__name__} {shown}, but {cls.__name__}.{key} is "
        f"annotated {rule.text}; {place} was saved from another class or changed after saving"
    )
    raise MetadataError(msg)
