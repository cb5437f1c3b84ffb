"""How a tensorclass gets its class options (the list, with what each does, is
:class:`~tclass._core._class_options.ClassOptions`).

Options come from the decorator (``@tensorclass(autocast=True)``), from class keywords
(``class X(TensorClass, autocast=True)``) or from brackets (``TensorClass["autocast"]``, a
base class carrying the flags); all three end in :func:`class_options`. A subclass
inherits its base's options and may add or turn off any of them, except that ``frozen``
must stay what the base has (as for dataclasses) and ``kw_only`` applies to the fields of
the class that sets it (also as for dataclasses). ``autocast``, ``nocast`` and
``tensor_only`` are exclusive.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tclass._core._class_options import DEFAULTS, FLAGS, OPTIONS, ClassOptions
from tclass.errors import ClassDefinitionError

__all__ = ["FLAGS", "UNSET", "ClassOptions", "class_options", "flags_from_item"]


class _Unset:
    """An argument not given (``None`` is a value for ``cast_filter``)."""

    def __repr__(self) -> str:
        return "<unset>"


UNSET: Any = _Unset()


def class_options(
    name: str, parent: ClassOptions | None, given: Mapping[str, Any], parent_name: str = ""
) -> ClassOptions:
    """The options of the class ``name``: ``given`` (absent, ``None`` or ``UNSET`` where
    not given) over those of its tensorclass base ``parent`` (named ``parent_name``).

    Raises:
        ClassDefinitionError: for exclusive options, a frozen option that differs from
            the base's, or a ``cast_filter`` that is not callable.
    """
    base: Mapping[str, Any] = parent or DEFAULTS
    values: dict[str, Any] = {}
    for option, how in OPTIONS.items():
        value = given.get(option)
        if value is None or value is UNSET:  # the base's, or (kw_only) the default
            values[option] = base[option] if how.inherited else how.default
        else:
            values[option] = bool(value) if isinstance(how.default, bool) else value
    options: ClassOptions = values  # type: ignore[assignment]
    if parent is not None and options["frozen"] != parent["frozen"]:
        kind = "frozen" if parent["frozen"] else "non-frozen"
        msg = (
            f"{name} (frozen={options['frozen']}) cannot derive from the {kind} tensorclass "
            f"{parent_name}: a subclass must keep its base's frozen option"
        )
        raise ClassDefinitionError(msg)
    _check_exclusive(name, options)
    cast_filter: object = options["cast_filter"]
    if cast_filter is not None and not hasattr(cast_filter, "__call__"):  # noqa: B004
        msg = (
            f"{name}: cast_filter must be a function fn(key, tensor) -> bool or None, got "
            f"{type(cast_filter).__name__}"
        )
        raise ClassDefinitionError(msg)
    return options


def _check_exclusive(name: str, options: ClassOptions) -> None:
    chosen = [flag for flag in ("tensor_only", "autocast", "nocast") if options.get(flag)]
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
