"""``@tclass.checked``: a function's annotations as a contract over its whole call.

The named dims of the annotated arguments and return value bind across the call, as
jaxtyping's ``jaxtyped`` binds the dims of tensors, but over records too::

    @tclass.checked
    def step(frame: Frame, action: Float[Tensor, "b a"]) -> Frame: ...

A record argument names the dims of its class's specs (``Spec("h w")``, ``"*batch h
w"``), and, with a ``Spec`` in its annotation, its batch dims
(``Annotated[Frame, Spec("b")]``); a tensor argument names the dims of its own spec
(jaxtyping's, or ``Annotated[Tensor, Spec("b d")]``: its whole shape), whose dtype,
rank, fixed dims and value constraints are checked too. A record is not validated
again (every write into it is checked): only the dims it shares with other arguments
are read. A mismatch raises ``FieldSpecError`` naming the argument (or the return
value), the field, the dim and both sizes; a value of a type the annotation does not
name raises ``FieldTypeError``. What the checks are lives in ``_core._contracts``; here,
reading the annotations and generating a wrapper with the function's own signature (no
``*args, **kwargs`` to bind at each call).

Not read: ``*args`` and ``**kwargs`` parameters, and containers (``tuple[Frame,
...]``, ``list[Frame]``) -- their values pass unchecked.
"""

from __future__ import annotations

import functools
import inspect
import linecache
import sys
import types
from collections.abc import Callable, Mapping
from typing import Any, ParamSpec, TypeVar

import torch

from tclass._core._contracts import (
    _ON,
    ENABLED_AT_IMPORT,
    Access,
    Contract,
    Param,
    RecordKind,
    TensorKind,
)
from tclass._core._records import is_record_class
from tclass._core._spec import Spec, TensorSpec, array_type_of, spec_of
from tclass._engine._record_fields import batch_size_of_record, dense_entries, record_parts
from tclass._tensorclass._hints import annotated_members, function_hints
from tclass.errors import ArgumentError, SpecSyntaxError

__all__ = ["checked"]

P = ParamSpec("P")
R = TypeVar("R")

_ACCESS = Access(dense_entries, record_parts, batch_size_of_record)
_PREFIX = "__tclass_"


def checked(fn: Callable[P, R]) -> Callable[P, R]:
    """Checks every call of ``fn`` against its annotations: the named dims of its
    record and tensor arguments and of its return value take one size across the call
    (see the module docstring). The wrapper has ``fn``'s signature; with the checks off
    (``tclass.set_checks(False)``) it reads one flag and calls ``fn``, and with
    ``TCLASS_CHECKS=0`` in the environment when tclass is imported, ``fn`` itself is
    returned. Annotations naming classes defined later are read at the first call.
    Put it under ``@staticmethod`` / ``@classmethod``.

    Raises:
        SpecSyntaxError: (when the annotations are read) a ``Spec`` that cannot be
            read, or one on a record annotation with a dtype or constraints.
        FieldSpecError: (at a call) dims that do not agree, a tensor that does not fit
            its spec.
        FieldTypeError: (at a call) a value of a type its annotation does not name.
    """
    if not ENABLED_AT_IMPORT:
        return fn
    wrapped: Callable[P, R] = _checked(fn, sys._getframe(1))
    return wrapped


def _checked(fn: Any, caller: types.FrameType) -> Any:
    """``checked(fn)``, ``caller`` the frame that decorated it (its local variables may
    name the classes of the annotations)."""
    if isinstance(fn, (staticmethod, classmethod)):
        return type(fn)(_checked(fn.__func__, caller))
    signature = inspect.signature(fn)
    for name in signature.parameters:
        if name.startswith(_PREFIX):
            msg = f"checked: {fn.__qualname__} has a parameter {name!r}; rename it"
            raise ArgumentError(msg)
    scope = _Scope(caller)
    try:
        contract: Contract | None = _contract(fn, signature, scope)
    except NameError:  # a class defined later: read at the first call
        contract = None
    if contract is not None and not contract.params and contract.result is None:
        return fn  # nothing to check
    return _wrapper(fn, signature, contract, scope)


class _Scope:
    """The local variables of the function that decorated a checked function, until its
    annotations are read (the frame is let go then)."""

    __slots__ = ("frame",)

    def __init__(self, frame: types.FrameType | None) -> None:
        self.frame = frame

    def __call__(self) -> Mapping[str, Any]:
        return {} if self.frame is None else self.frame.f_locals


def _contract(fn: Callable[..., Any], signature: inspect.Signature, scope: _Scope) -> Contract:
    hints = function_hints(fn, scope)
    scope.frame = None
    params = []
    for name, parameter in signature.parameters.items():
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            continue
        param = _param(name, hints.get(name), fn.__qualname__)
        if param is not None:
            params.append(param)
    result = _param(None, hints.get("return"), fn.__qualname__)
    return Contract(fn.__qualname__, params, result, _ACCESS)


def _param(name: str | None, annotation: object, owner: str) -> Param | None:
    """The site of one parameter (the return value: ``name`` None), or None when its
    annotation names nothing to check."""
    if annotation is None:
        return None
    where = f"{owner}: {'the return value' if name is None else f'argument {name!r}'}: "
    kinds: list[RecordKind | TensorKind] = []
    optional = open_ = False
    for member, metadata in annotated_members(annotation):
        if member is type(None) or member is None:
            optional = True
        elif isinstance(member, type) and is_record_class(member):
            kinds.append(_record_kind(member, metadata, where))
        else:
            spec = spec_of(member, metadata, where) if _tensor_like(member) else None
            if spec is None:
                open_ = True  # a plain Tensor, or another type: passes unchecked
            else:
                kinds.append(TensorKind(spec))
    if not kinds:
        return None
    return Param(name, tuple(kinds), optional, open_)


def _tensor_like(member: object) -> bool:
    if member is torch.Tensor or (isinstance(member, type) and issubclass(member, torch.Tensor)):
        return True
    return array_type_of(member) is not None


def _record_kind(cls: type, metadata: tuple[object, ...], where: str) -> RecordKind:
    specs = cls.__tclass_info__.specs  # type: ignore[attr-defined]
    fields: tuple[tuple[str, TensorSpec, bool], ...] = ()
    if specs is not None:
        fields = tuple((n, s, n in specs.tensors_only) for n, s in specs.specs.items())
    batch = None
    for item in metadata:
        if not isinstance(item, Spec):
            continue
        if item.dtypes is not None or item.constraints is not None:
            msg = (
                f"{where}{item!r} on a record ({cls.__name__}) names its batch dims: give "
                "dims only (dtypes and constraints belong to the fields' specs)"
            )
            raise SpecSyntaxError(msg)
        batch = spec_of(torch.Tensor, (item,), where)
    return RecordKind(cls, fields, batch)


# --- the wrapper, with the function's signature ------------------------------------------


def _wrapper(
    fn: Callable[P, R], signature: inspect.Signature, contract: Contract | None, scope: _Scope
) -> Callable[P, R]:
    """A function with ``fn``'s signature that checks the arguments, calls ``fn`` and
    checks its result (``contract`` None: worked out at the first call, which then
    gives the wrapper the code of a wrapper with the contract)."""
    declared, passed, defaults = _signature_source(signature)
    namespace: dict[str, Any] = {f"{_PREFIX}fn": fn, f"{_PREFIX}on": _ON, **defaults}
    is_async = inspect.iscoroutinefunction(fn)

    def generate(contract: Contract | None) -> Callable[..., Any]:
        source = _source(declared, passed, is_async, contract)
        filename = f"<tclass checked {fn.__qualname__}>"
        exec(compile(source, filename, "exec"), namespace)  # noqa: S102
        linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
        made: Callable[..., Any] = namespace.pop("wrapper")
        return made

    def resolve() -> None:
        found = _contract(fn, signature, scope)
        namespace[f"{_PREFIX}args"] = found.check_args
        namespace[f"{_PREFIX}ret"] = found.check_result
        wrapper.__code__ = generate(found).__code__

    if contract is not None:
        namespace[f"{_PREFIX}args"] = contract.check_args
        namespace[f"{_PREFIX}ret"] = contract.check_result
    namespace[f"{_PREFIX}resolve"] = resolve
    wrapper = generate(contract)
    namespace[f"{_PREFIX}self"] = wrapper
    return functools.update_wrapper(wrapper, fn)


def _source(declared: str, passed: str, is_async: bool, contract: Contract | None) -> str:
    """The wrapper's source: with ``contract``, its checks around the call; without,
    the first call's (work the contract out, then call the wrapper again)."""
    wait = "await " if is_async else ""
    head = f"{'async ' if is_async else ''}def wrapper({declared}):"
    call = f"{wait}{_PREFIX}fn({passed})"
    if contract is None:
        lines = [f"    {_PREFIX}resolve()", f"    return {wait}{_PREFIX}self({passed})"]
        return "\n".join([head, *lines]) + "\n"
    if not contract.params and contract.result is None:
        return f"{head}\n    return {call}\n"
    values = ", ".join(param.name for param in contract.params if param.name is not None)
    lines = [
        f"    if not {_PREFIX}on[0]:",
        f"        return {call}",
        f"    {_PREFIX}b = {_PREFIX}args({values})",
    ]
    if contract.result is None:
        lines.append(f"    return {call}")
    else:
        tupled = f"({values},)" if values else "()"
        lines += [
            f"    {_PREFIX}r = {call}",
            f"    {_PREFIX}ret({_PREFIX}r, {_PREFIX}b, {tupled})",
            f"    return {_PREFIX}r",
        ]
    return "\n".join([head, *lines]) + "\n"


def _signature_source(signature: inspect.Signature) -> tuple[str, str, dict[str, Any]]:
    """The parameter list of ``signature`` as source (defaults named in the namespace),
    the arguments passing each parameter on, and the defaults."""
    declared: list[str] = []
    passed: list[str] = []
    defaults: dict[str, Any] = {}
    star = False
    for index, (name, parameter) in enumerate(signature.parameters.items()):
        kind = parameter.kind
        if kind == parameter.KEYWORD_ONLY and not star:
            declared.append("*")
            star = True
        text = name
        if parameter.default is not parameter.empty:
            defaults[f"{_PREFIX}d{index}"] = parameter.default
            text = f"{name}={_PREFIX}d{index}"
        if kind == parameter.VAR_POSITIONAL:
            text, star = f"*{name}", True
            passed.append(text)
        elif kind == parameter.VAR_KEYWORD:
            text = f"**{name}"
            passed.append(text)
        elif kind == parameter.KEYWORD_ONLY:
            passed.append(f"{name}={name}")
        else:
            passed.append(name)
        declared.append(text)
        following = list(signature.parameters.values())[index + 1 : index + 2]
        if kind == parameter.POSITIONAL_ONLY and (
            not following or following[0].kind != parameter.POSITIONAL_ONLY
        ):
            declared.append("/")
    return ", ".join(declared), ", ".join(passed), defaults
