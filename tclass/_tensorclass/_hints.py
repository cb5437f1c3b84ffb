"""Reading field annotations: evaluating forward references, and naming annotations.

Annotations are resolved when a class is first used (its first instance), not when it is
defined, so a field may name the class itself, a class defined later in the module, or a
class defined later in the same function. A string (``"Node"``, or every annotation
under ``from __future__ import annotations``) and a forward reference nested in a union
(``Optional["Node"]``) are evaluated as Python scopes them: the class itself, then the
names of the function whose body declares the class (as they were then: a local class
shadows a module-level one of the same name), then the module of the class that declares
the field, with the tensorclasses defined so far in that module; a name still unknown is
looked up in the local variables of the functions that are running (the function that
defines two local classes, or the one creating the first instance).
"""

from __future__ import annotations

import re
import sys
import types
import typing
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Literal, Union

from tclass._core._spec import Spec

__all__ = [
    "Unresolved",
    "annotated_members",
    "annotation_text",
    "enclosing_names",
    "flatten_union",
    "function_hints",
    "resolve_annotations",
]

_UNION_TYPES: tuple[Any, ...] = (Union, types.UnionType)
# How many calling frames a name is looked up in before it is reported missing.
_FRAMES = 64
# A name in an annotation's text (``Inner | None``, ``Optional["Node"]``).
_NAME = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
# Modules whose frames stand between a class statement and the class's building.
_BETWEEN = ("abc", "typing", "typing_extensions", "dataclasses", "functools")


class Unresolved:
    """An annotation naming something that cannot be found (yet): a class defined later,
    or a name imported only under ``TYPE_CHECKING``."""

    def __init__(self, annotation: object, error: NameError) -> None:
        self.text = annotation_text(annotation)
        self.error = error


def resolve_annotations(
    cls: type, names: Sequence[str], registry: Mapping[str, type]
) -> dict[str, object]:
    """The annotations of the fields ``names``, forward references evaluated
    (:class:`Unresolved` for one naming something that cannot be found).

    Each annotation is taken from the most derived class declaring it. A name is looked
    up, in order, as the class itself, in the module of the declaring class, in
    ``registry`` (the tensorclasses of the module, latest of each name), then in the
    local variables of the running functions.
    """
    hints: dict[str, object] = {}
    for name in names:
        for klass in cls.__mro__:
            own = vars(klass).get("__annotations__", {})
            if name in own:
                try:
                    hints[name] = _resolved(own[name], _evaluator(cls, klass, registry))
                except NameError as error:
                    hints[name] = Unresolved(own[name], error)
                break
    return hints


def _evaluator(cls: type, klass: type, registry: Mapping[str, type]) -> Callable[[str], object]:
    module = sys.modules.get(klass.__module__)
    scope = vars(klass).get("__tclass_scope__", {})
    namespace = {
        **registry,
        **(vars(module) if module is not None else {}),
        **scope,
        cls.__name__: cls,
    }
    return lambda text: _evaluate(text, namespace)


def enclosing_names(annotations: Mapping[str, object]) -> dict[str, object]:
    """The names ``annotations`` use, as the function whose body runs the class statement
    holds them now (empty for a class declared at module level): what Python's scoping
    gives those names over the module's. Only the names the annotations use are kept, so
    the class keeps nothing else of the function alive."""
    frame: types.FrameType | None = sys._getframe(1)
    while frame is not None:
        module = frame.f_globals.get("__name__", "")
        if not (module.startswith("tclass.") or module in _BETWEEN):
            break
        frame = frame.f_back
    if frame is None or frame.f_locals is frame.f_globals:
        return {}
    names = {name for value in annotations.values() for name in _NAME.findall(_text(value))}
    scope = frame.f_locals
    return {name: scope[name] for name in names if name in scope}


def _text(annotation: object) -> str:
    if isinstance(annotation, typing.ForwardRef):
        return annotation.__forward_arg__
    return annotation if isinstance(annotation, str) else repr(annotation)


def function_hints(
    fn: Callable[..., Any], scope: Callable[[], Mapping[str, Any]] | None = None
) -> dict[str, object]:
    """The annotations of ``fn``'s parameters and its return value (``"return"``),
    strings and forward references evaluated as a field's are: in ``fn``'s module, then
    in ``scope()`` (the local variables of the function that decorated it), then in the
    local variables of the functions that are running.

    Raises:
        NameError: an annotation naming something that cannot be found (yet).
    """
    namespace = dict(getattr(fn, "__globals__", {}))

    def evaluate(text: str) -> object:
        return _evaluate(text, namespace, dict(scope()) if scope is not None else None)

    annotations = getattr(fn, "__annotations__", None) or {}
    return {name: _resolved(annotation, evaluate) for name, annotation in annotations.items()}


def _evaluate(
    text: str, namespace: dict[str, Any], scope: Mapping[str, Any] | None = None
) -> object:
    """``text`` evaluated in ``namespace`` (and ``scope``, the names of an enclosing
    function), else in the local variables of each running function, innermost first.

    Raises:
        NameError: a name none of these holds.
    """
    try:
        return eval(text, namespace, scope)  # noqa: S307
    except NameError:
        for frame_locals in _running_locals():
            try:
                return eval(text, {**frame_locals, **namespace})  # noqa: S307
            except NameError:
                continue
        raise


def _running_locals() -> Iterator[dict[str, Any]]:
    frame: types.FrameType | None = sys._getframe(1)
    for _ in range(_FRAMES):
        frame = frame.f_back if frame is not None else None
        if frame is None:
            return
        if frame.f_code.co_filename != __file__:
            yield frame.f_locals


def _resolved(annotation: object, evaluate: Callable[[str], object]) -> object:
    """``annotation`` with strings and forward references evaluated, at the top and
    inside unions and ``Annotated`` (the parts of an annotation a field rule reads)."""
    if isinstance(annotation, str):
        return _resolved(evaluate(annotation), evaluate)
    if isinstance(annotation, typing.ForwardRef):
        return _resolved(evaluate(annotation.__forward_arg__), evaluate)
    origin = typing.get_origin(annotation)
    if origin in _UNION_TYPES:
        return Union[tuple(_resolved(arg, evaluate) for arg in typing.get_args(annotation))]  # noqa: UP007
    if origin is typing.Annotated:
        base, *metadata = typing.get_args(annotation)
        params = (_resolved(base, evaluate), *metadata)
        return typing.Annotated[params]
    return annotation


def flatten_union(annotation: object) -> list[object]:
    """The members of a union (``Annotated`` removed), or ``[annotation]``."""
    return [member for member, _ in annotated_members(annotation)]


def annotated_members(
    annotation: object, metadata: tuple[object, ...] = ()
) -> list[tuple[object, tuple[object, ...]]]:
    """The members of a union (or ``[annotation]``), each with the ``Annotated``
    metadata around it (a ``Spec`` there gives the member's tensors their shape)."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        inner, *extra = typing.get_args(annotation)
        return annotated_members(inner, (*metadata, *extra))
    if origin in _UNION_TYPES:
        args = typing.get_args(annotation)
        return [item for arg in args for item in annotated_members(arg, metadata)]
    return [(annotation, metadata)]


def annotation_text(annotation: object, specs: bool = False) -> str:
    """The annotation as a user wrote it: ``Tensor``, ``str | None``, ``list[int]``;
    with ``specs``, an ``Annotated`` keeps its ``Spec`` (what a saved schema shows)."""
    if isinstance(annotation, str):
        return annotation
    if isinstance(annotation, typing.ForwardRef):
        return annotation.__forward_arg__
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
