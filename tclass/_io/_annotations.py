"""What a record class's field annotations say about the folder it is loaded from.

The reader has no other source for two facts: which class a nested record node is (a
node saved from ``__main__`` names a class no import defines, but the field holding it
is annotated with the caller's class), and which Python type a field's value had
before JSON stored it (a tuple). Records are duck-typed
here (``__tclass_info__``): the facade sits above this layer.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Container
from functools import partial
from typing import Any

from tclass._core._records import is_record_class
from tclass._engine._lazy._stack import LazyStackedTensorDict
from tclass._engine._nontensor import NonTensorData
from tclass._engine._nontensor_stack import NonTensorStack
from tclass._engine._td import TensorDict
from tclass.errors import TclassError

__all__ = [
    "field_classes",
    "fit_value",
    "fit_values",
    "is_field",
    "missing_fields",
    "tensorclasses",
    "value_casts",
]


def tensorclasses(*classes: type | None) -> tuple[type, ...]:
    """The tensorclasses among ``classes``."""
    out = []
    for cls in classes:  # a loop: cheaper than a generator, once per load and per record
        if cls is not None and is_record_class(cls):
            out.append(cls)
    return tuple(out)


def field_classes(record_cls: type, key: str) -> tuple[type, ...]:
    """The tensorclasses the field ``key`` of ``record_cls`` accepts (none when it is
    not a field, or is annotated ``Any``, ``TensorDict``, ``Tensor``...)."""
    rule = record_cls.__tclass_info__.rules.get(key)  # type: ignore[attr-defined]
    return tensorclasses(*rule.collections) if rule is not None else ()


def is_field(record_cls: type, name: str) -> bool:
    """Whether ``record_cls`` declares the field ``name``."""
    return name in record_cls.__tclass_info__.field_names  # type: ignore[attr-defined]


def missing_fields(
    record_cls: type, content: TensorDict | LazyStackedTensorDict, values: Container[str]
) -> list[str]:
    """The fields of ``record_cls`` that are neither keys of ``content`` nor ``values``."""
    names: tuple[str, ...] = record_cls.__tclass_info__.field_names  # type: ignore[attr-defined]
    # A TensorDict's own entries answer ``in`` without listing its keys.
    keys = content._entries() if isinstance(content, TensorDict) else set(content.keys())
    return [name for name in names if name not in keys and name not in values]


def fit_values(record_cls: type, content: TensorDict | LazyStackedTensorDict) -> None:
    """Give the Python values of a record's loaded fields the type their annotation names
    where JSON, which stored them, lost it: a list where the annotation takes a tuple
    becomes that tuple. Other values are kept as they are, as the constructor keeps a
    Python value of a type its annotation does not name (DESIGN.md 5)."""
    rules = record_cls.__tclass_info__.rules  # type: ignore[attr-defined]
    fitted = _fitted_fields(record_cls, rules)
    if not fitted:
        return  # no field of a Python value a JSON type may have changed
    members = content.tensordicts if isinstance(content, LazyStackedTensorDict) else [content]
    for member in members:
        if not isinstance(member, TensorDict):
            continue  # a record member: fitted when it was built
        entries = member._entries()
        for key, rule in fitted:
            node = entries.get(key)
            if isinstance(node, (NonTensorData, NonTensorStack)):
                changed = node._with_each_value(partial(_fit, check=rule.check_value))
                if changed is not node:
                    member._put(key, changed)


def fit_value(record_cls: type, key: str, value: Any) -> Any:
    """``value``, the Python-value node of the field ``key`` read from a store (an HDF5
    or zarr file, which keeps it as JSON), as ``fit_values`` fits a loaded folder's: a
    list where the annotation takes a tuple becomes that tuple."""
    if not isinstance(value, (NonTensorData, NonTensorStack)):
        return value
    rules = record_cls.__tclass_info__.rules  # type: ignore[attr-defined]
    for name, rule in _fitted_fields(record_cls, rules):
        if name == key:
            return value._with_each_value(partial(_fit, check=rule.check_value))
    return value


def value_casts(
    record_cls: type, content: TensorDict | LazyStackedTensorDict
) -> dict[str, tuple[Any, Any, bool]]:
    """The fields of a loaded record whose class converts their Python values
    (``autocast``) into something else than the saved values (another type or value:
    ``1.5`` saved from a ``float`` field, the field annotated ``int`` since: ``1``), each
    with a (saved value, converted value, equal) triple: the first value the conversion
    changes, ``1.5``, else the first it makes another type of an equal value (``3`` into
    ``3.0``: equal). A load reports them rather than let the record's build change what
    was saved; a value the conversion refuses is left to the build, which names it."""
    rules = record_cls.__tclass_info__.rules  # type: ignore[attr-defined]
    cached = _CASTS.get(record_cls)
    if cached is None or cached[0] is not rules:
        cached = _CASTS[record_cls] = (rules, any(r.cast is not None for r in rules.values()))
    if not cached[1]:
        return {}  # no field converts (the usual class)
    found: dict[str, tuple[Any, Any, bool]] = {}
    members = content.tensordicts if isinstance(content, LazyStackedTensorDict) else [content]
    for member in members:
        if not isinstance(member, TensorDict):
            continue  # a record member: built (and so checked) already
        for key, node in member._entries().items():
            rule = rules.get(key)
            if rule is None or rule.cast is None or (key in found and not found[key][2]):
                continue
            if not isinstance(node, (NonTensorData, NonTensorStack)):
                continue
            try:
                if rule._cast(node, member.batch_size) is node:
                    continue  # kept as it is (the common case: the class saved it)
            except TclassError:
                continue
            changes: list[tuple[Any, Any, bool]] = []
            node._with_each_value(partial(_changed, cast=rule.cast, changes=changes))
            if changes and (key not in found or not changes[-1][2]):
                found[key] = changes[-1]
    return found


# Per record class, whether a field converts its values (autocast); with its rules.
_CASTS: weakref.WeakKeyDictionary[type, tuple[dict[str, Any], bool]] = weakref.WeakKeyDictionary()


def _changed(value: Any, cast: Callable[[Any], Any], changes: list[tuple[Any, Any, bool]]) -> Any:
    """Adds ``(value, cast(value), equal)`` to ``changes`` where the cast makes ``value``
    another type or value (the first, then the first not equal); ``value`` unchanged."""
    if changes and not changes[-1][2]:
        return value  # a changed value found: enough
    try:
        new = cast(value)
    except (TypeError, ValueError, RuntimeError):
        return value
    if type(new) is not type(value) or not _equal(new, value):
        equal = _equal(new, value)
        if not changes or not equal:
            changes.append((value, new, equal))
    return value


def _equal(new: Any, old: Any) -> bool:
    """Whether a converted Python value equals the saved one (``3.0`` and ``3``)."""
    try:
        return bool(new == old)
    except (RuntimeError, TypeError, ValueError):  # values holding tensors or arrays
        return False


# Per record class, its fields of a Python value whose annotation checks it, with their
# rules (what fit_values converts); with the rules they were read from.
_FITTED: weakref.WeakKeyDictionary[type, tuple[dict[str, Any], tuple[tuple[str, Any], ...]]]
_FITTED = weakref.WeakKeyDictionary()


def _fitted_fields(record_cls: type, rules: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    cached = _FITTED.get(record_cls)
    if cached is None or cached[0] is not rules:
        fitted = tuple(
            (key, rule)
            for key, rule in rules.items()
            if rule.check_value is not None and not rule.any_value  # not a tensor or collection
        )
        cached = _FITTED[record_cls] = (rules, fitted)
    return cached[1]


def _fit(value: object, *, check: Callable[[object], bool]) -> object:
    if type(value) is list and not check(value) and check(tuple(value)):
        return tuple(value)
    return value
