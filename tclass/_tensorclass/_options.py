"""The class options of a tensorclass, as the peer names them, and how a class gets them.

Options come from the decorator (``@tensorclass(autocast=True)``), from class keywords
(``class X(TensorClass, autocast=True)``) or from brackets (``TensorClass["autocast"]``, a
base class carrying the flags); all three end in :func:`class_options`. A subclass
inherits its base's options and may add or turn off any of them, except that ``frozen``
must stay what the base has (as for dataclasses) and ``kw_only`` applies to the fields of
the class that sets it (also as for dataclasses). ``autocast``, ``nocast`` and
``tensor_only`` are exclusive.

============================  =================================================================
option                        effect
============================  =================================================================
``frozen``                    fields cannot be assigned; instances are locked
``kw_only``                   the class's own fields are keyword-only in ``__init__``
``autocast``                  a value set to a field is converted to the annotated type
``nocast``                    numbers and numpy arrays set to a tensor field stay Python values
``tensor_only``               every field is a tensor or a collection (checked at definition);
                              reading a field reads the storage directly
``shadow``                    fields may be named after members (``sum``, ``to``, ...)
``cast_filter``               ``fn(key, tensor) -> bool``: the leaves ``to(dtype)`` casts
``skip_post_init_on_rebuild`` accepted; ``__post_init__`` always runs once per construction
============================  =================================================================
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from tclass.errors import ClassDefinitionError

__all__ = ["FLAGS", "UNSET", "ClassOptions", "class_options", "flags_from_item"]

# The options TensorClass[...] takes, in the order of a flagged base's name.
FLAGS = ("autocast", "nocast", "frozen", "tensor_only", "shadow", "skip_post_init_on_rebuild")


class _Unset:
    """An option not given (``None`` is a value for ``cast_filter``)."""

    def __repr__(self) -> str:
        return "<unset>"


UNSET: Any = _Unset()


@dataclasses.dataclass(frozen=True)
class ClassOptions:
    """The options of one tensorclass, inherited ones included."""

    frozen: bool = False
    kw_only: bool = False
    autocast: bool = False
    nocast: bool = False
    tensor_only: bool = False
    shadow: bool = False
    skip_post_init_on_rebuild: bool = False
    cast_filter: Callable[[tuple[str, ...], Any], bool] | None = None


def class_options(
    name: str, parent: ClassOptions | None, given: dict[str, Any], parent_name: str = ""
) -> ClassOptions:
    """The options of the class ``name``: ``given`` (``UNSET`` or ``None`` where not
    given) over those of its tensorclass base ``parent`` (named ``parent_name``).

    Raises:
        ClassDefinitionError: for exclusive options, a frozen option that differs from
            the base's, or a ``cast_filter`` that is not callable.
    """
    base = parent or ClassOptions()
    values: dict[str, Any] = {}
    for field in dataclasses.fields(ClassOptions):
        value = given.get(field.name, UNSET)
        if field.name == "cast_filter":  # None: the base's (a subclass inherits it)
            values[field.name] = base.cast_filter if value in (UNSET, None) else value
        elif field.name == "kw_only":  # the class's own fields only, as in dataclasses
            values[field.name] = bool(value) if value not in (UNSET, None) else False
        else:
            inherited = getattr(base, field.name)
            values[field.name] = inherited if value in (UNSET, None) else bool(value)
    options = ClassOptions(**values)
    if parent is not None and options.frozen != parent.frozen:
        kind = "frozen" if parent.frozen else "non-frozen"
        msg = (
            f"{name} (frozen={options.frozen}) cannot derive from the {kind} tensorclass "
            f"{parent_name}: a subclass must keep its base's frozen option"
        )
        raise ClassDefinitionError(msg)
    _check_exclusive(name, options)
    cast_filter: object = options.cast_filter
    if cast_filter is not None and not hasattr(cast_filter, "__call__"):  # noqa: B004
        msg = (
            f"{name}: cast_filter must be a function fn(key, tensor) -> bool or None, got "
            f"{type(cast_filter).__name__}"
        )
        raise ClassDefinitionError(msg)
    return options


def _check_exclusive(name: str, options: ClassOptions) -> None:
    chosen = [flag for flag in ("tensor_only", "autocast", "nocast") if getattr(options, flag)]
    if len(chosen) > 1:
        msg = (
            f"{name}: the options {' and '.join(chosen)} are exclusive (autocast converts values "
            "to the annotated type, nocast keeps them as given, tensor_only allows tensors "
            "only); choose one"
        )
        raise ClassDefinitionError(msg)


def flags_from_item(item: object) -> tuple[str, ...]:
    """The flags of ``TensorClass[item]`` (one string or a tuple of them), checked.

    Raises:
        ClassDefinitionError: for anything but known flag names.
    """
    flags = item if isinstance(item, tuple) else (item,)
    for flag in flags:
        if flag not in FLAGS:
            msg = (
                f"TensorClass[{flag!r}]: the flags are {', '.join(map(repr, FLAGS))}; pass "
                "other options as class keywords (class X(TensorClass, cast_filter=...))"
            )
            raise ClassDefinitionError(msg)
    return tuple(sorted({str(flag) for flag in flags}, key=FLAGS.index))
