"""The spellings of a tensorclass declaration, for tests parametrized over them.

Each form turns a plain *template* class (annotations, defaults, methods that do not use
``super()``) into a tensorclass with the given options:

* ``decorated``: ``@tensorclass`` (bare) or ``@tensorclass(**options)``;
* ``subclassed``: ``class X(TensorClass, **options)``;
* ``bracketed``: ``class X(TensorClass["flag", ...], **other_options)``, the boolean flags
  in brackets and the rest (``cast_filter``, ``kw_only``, false flags) as class keywords.
"""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import Any

import pytest

from tclass import TensorClass, tensorclass

__all__ = [
    "FLAGS",
    "FORMS",
    "FORMS_AND_BRACKETS",
    "Declare",
    "bracketed",
    "decorated",
    "subclassed",
]

Declare = Callable[..., Any]
# The options that TensorClass[...] takes as strings.
FLAGS = ("autocast", "nocast", "frozen", "tensor_only", "shadow", "skip_post_init_on_rebuild")


def _body(template: type) -> dict[str, Any]:
    return {k: v for k, v in vars(template).items() if k not in ("__dict__", "__weakref__")}


def decorated(template: type, **options: Any) -> Any:
    """``@tensorclass`` or ``@tensorclass(**options)`` applied to ``template``."""
    return tensorclass(**options)(template) if options else tensorclass(template)


def subclassed(template: type, **options: Any) -> Any:
    """``class <name>(TensorClass, **options)`` with the template's body."""
    body = _body(template)
    return types.new_class(template.__name__, (TensorClass,), options, lambda ns: ns.update(body))


def bracketed(template: type, **options: Any) -> Any:
    """``class <name>(TensorClass["flag", ...], **rest)`` with the template's body."""
    flags = tuple(name for name in FLAGS if options.get(name) is True)
    rest = {k: v for k, v in options.items() if k not in flags}
    base: Any = TensorClass[flags] if flags else TensorClass  # type: ignore[misc]
    body = _body(template)
    return types.new_class(template.__name__, (base,), rest, lambda ns: ns.update(body))


FORMS = [pytest.param(decorated, id="decorator"), pytest.param(subclassed, id="base-class")]
FORMS_AND_BRACKETS = [*FORMS, pytest.param(bracketed, id="brackets")]
