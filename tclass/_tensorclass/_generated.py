"""The constructor of a tensorclass: generated from source once per class, or the user's.

The generated ``__init__`` takes the fields (by position or keyword, keyword-only ones
after ``*``) and the keyword-only ``batch_size``, ``device`` and ``names``, and calls one
function that checks and stores them. Wrong arguments are tclass errors: its real
parameters give every field a sentinel default and collect extra positional and keyword
arguments, and the first line of its body turns any of those into an ``ArgumentError``
(``UnknownArgumentError`` for a keyword that is no field), naming the class and the
argument. ``inspect.signature`` still shows the field signature (``__signature__``).

A class that defines its own ``__init__`` keeps it: the instance gets empty storage first
(so ``self.x = v`` works), and ``super().__init__(...)`` reaches the generated one through
``TensorClass.__init__``. A subclass without one inherits it, as in plain Python.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import inspect
import linecache
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import torch

from tclass._engine._td import TensorDict
from tclass._tensorclass._hints import Unresolved, resolve_annotations
from tclass.errors import (
    ArgumentError,
    ClassDefinitionError,
    DuplicateArgumentError,
    UnknownArgumentError,
)

if TYPE_CHECKING:
    from tclass._tensorclass._builder import ClassInfo

__all__ = ["generated_init", "is_generated", "user_init"]

_CONSTRUCTOR_KEYWORDS = ("batch_size", "device", "names")


class _Sentinel(enum.Enum):
    """Default values of the generated parameters (enum members: ``torch.compile``
    traces a call that leaves them as defaults)."""

    FACTORY = "<factory>"  # what inspect.signature shows, as for dataclasses
    MISSING = "<missing>"

    def __repr__(self) -> str:
        return str(self.value)


_FACTORY = _Sentinel.FACTORY
_MISSING = _Sentinel.MISSING


def is_generated(function: object) -> bool:
    """Whether ``function`` is an ``__init__`` this module made (generated or wrapped)."""
    return hasattr(function, "__tclass_generated__")


def generated_init(
    cls: type, info: ClassInfo, own: set[str], store: Callable[..., None]
) -> Callable[..., None]:
    """``__init__(self, <fields>, *, batch_size=None, device=None, names=None,
    lock=False)``, which calls ``store(self, info, values, batch_size, device, names)``;
    fields in ``own`` (declared by ``cls`` itself) are keyword-only under the ``kw_only``
    option."""
    namespace: dict[str, Any] = {
        "__tclass_init__": store,
        "__tclass_info__": info,
        "__tclass_factory__": _FACTORY,
        "__tclass_missing__": _MISSING,
        "__tclass_bad_call__": _bad_call,
        "__tclass_duplicate__": _duplicate,
    }
    params, kw_params, shown, shown_kw, body, required, initvars = _parameters(
        cls, info, own, namespace
    )
    keywords = [k for k in _CONSTRUCTOR_KEYWORDS if k not in info.field_names]
    kw_params += [f"{k}=None" for k in keywords]
    shown_kw += [f"{k}=None" for k in keywords]
    # ``lock=True`` locks the new record once built, as the peer's constructor (which
    # leaves it out of the signature, as here); a field named ``lock`` takes the name.
    lock = "lock" not in info.field_names
    kw_params += ["lock=False"] if lock else []
    lines, positional = _binding_lines(params, required, len(params))
    kw_params = [*positional, *kw_params]
    args = ["__tclass_self__", "*__tclass_args__", *kw_params, "**__tclass_unknown__"]
    values = "".join(f"{name}, " for name in info.field_names)
    given = [k if k in keywords else "None" for k in _CONSTRUCTOR_KEYWORDS]
    lines += body
    lines.append(
        f"    __tclass_init__(__tclass_self__, __tclass_info__, ({values}), {', '.join(given)})"
    )
    if hasattr(cls, "__post_init__"):
        lines.append(f"    __tclass_self__.__post_init__({', '.join(initvars)})")
        if info.options["frozen"]:  # locked once __post_init__ has set what it sets
            lines.append("    __tclass_self__._tensordict.lock_()")
    if lock:
        lines += ["    if lock:", "        __tclass_self__.lock_()"]
    source = f"def __init__({', '.join(args)}):\n" + "\n".join(lines) + "\n"
    own_name = "self" if "self" not in info.field_names else "__tclass_self__"  # as shown
    shown_args = [own_name, *shown, *(["*"] if shown_kw else []), *shown_kw]
    source += f"def __tclass_signature__({', '.join(shown_args)}):\n    pass\n"
    filename = f"<tclass generated __init__ {cls.__module__}.{cls.__qualname__}>"
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    init: Callable[..., None] = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    _annotate(init, inspect.signature(namespace["__tclass_signature__"]), cls, info)
    init.__tclass_generated__ = True  # type: ignore[attr-defined]  # rebuilds may replace it
    return init


def _binding_lines(
    params: list[str], required: list[str], count: int
) -> tuple[list[str], list[str]]:
    """The generated lines that bind the positional arguments and check the call, and
    the parameters of the fields those arguments may fill. Those fields are keyword
    parameters that default to "missing", so that a field given both ways is told apart
    (a DuplicateArgumentError). Every field by position and none by keyword (the usual
    call) is bound by one unpacking, which leaves no positional field missing; otherwise
    the positional values are bound one by one, then defaults fill in (inline code: no
    sentinel leaves the function, which ``torch.compile`` traces)."""
    names = [param.split("=")[0] for param in params]
    given_required = ", ".join(f"{name!r}: {name}" for name in required)
    bad_call = (
        f"__tclass_bad_call__(__tclass_info__, {count}, (), __tclass_unknown__, "
        f"{{{given_required}}})"
    )

    def check(fields: list[str], indent: str) -> list[str]:  # unknown keywords, missing fields
        tests = ["__tclass_unknown__", *(f"{name} is __tclass_missing__" for name in fields)]
        return [f"{indent}if {' or '.join(tests)}:", f"{indent}    {bad_call}"]

    lines: list[str] = []
    pad = "    "
    if names:
        unset = " and ".join(f"{name} is __tclass_missing__" for name in names)
        keyword_only = [name for name in required if name not in names]
        lines += [
            f"    if __tclass_args__ and len(__tclass_args__) == {count} and {unset}:",
            f"        {', '.join(names)}, = __tclass_args__  # every field by position",
            *check(keyword_only, "        "),
            "    else:",
        ]
        pad = "        "
    lines += [
        f"{pad}if __tclass_args__:",
        f"{pad}    if len(__tclass_args__) > {count}:",
        f"{pad}        __tclass_bad_call__(__tclass_info__, {count}, "
        f"__tclass_args__[{count}:], {{}}, {{}})",
    ]
    for index, name in enumerate(names):
        lines += [
            f"{pad}    if len(__tclass_args__) > {index}:",
            f"{pad}        if {name} is not __tclass_missing__:",
            f"{pad}            __tclass_duplicate__(__tclass_info__, {name!r})",
            f"{pad}        {name} = __tclass_args__[{index}]",
        ]
    for param in params:
        name, _, default = param.partition("=")
        if default != "__tclass_missing__":
            lines += [f"{pad}if {name} is __tclass_missing__:", f"{pad}    {name} = {default}"]
    lines += check(required, pad)
    return lines, [f"{name}=__tclass_missing__" for name in names]


def _annotate(
    init: Callable[..., None], signature: inspect.Signature, cls: type, info: ClassInfo
) -> None:
    """Gives ``init`` the fields' annotations, as the peer's dataclass ``__init__`` has them
    (``inspect.signature``, ``typing.get_type_hints``): resolved where they can be now
    (forward references too), as written otherwise. Nothing is cached for the rules."""
    hints = resolve_annotations(cls, info.init_names, {})
    shown = {
        name: hint.text if isinstance(hint, Unresolved) else hint for name, hint in hints.items()
    }
    parameters = [
        parameter.replace(annotation=shown[parameter.name])
        if parameter.name in shown
        else parameter
        for parameter in signature.parameters.values()
    ]
    init.__annotations__ = {
        **{p.name: p.annotation for p in parameters if p.name in shown}, "return": None
    }  # fmt: skip
    init.__signature__ = signature.replace(parameters=parameters, return_annotation=None)  # type: ignore[attr-defined]


def _parameters(
    cls: type, info: ClassInfo, own: set[str], namespace: dict[str, Any]
) -> tuple[list[str], list[str], list[str], list[str], list[str], list[str], list[str]]:
    """The generated init's parameters and those it shows, its default-factory lines,
    its required fields and its InitVars."""
    params: list[str] = []
    kw_params: list[str] = []
    shown: list[str] = []
    shown_kw: list[str] = []
    body: list[str] = []
    required: list[str] = []
    initvars: list[str] = []
    for field in cls.__dataclass_fields__.values():  # type: ignore[attr-defined]
        name = field.name
        if field._field_type is dataclasses._FIELD_CLASSVAR:  # type: ignore[attr-defined]
            continue  # a class attribute, not a constructor argument
        if field._field_type is dataclasses._FIELD_INITVAR:  # type: ignore[attr-defined]
            initvars.append(name)
        default = ""
        if field.default is not dataclasses.MISSING:
            namespace[f"__tclass_dflt_{name}__"] = field.default
            default = f"=__tclass_dflt_{name}__"
        elif field.default_factory is not dataclasses.MISSING:
            namespace[f"__tclass_factory_{name}__"] = field.default_factory
            default = "=__tclass_factory__"
            call = f"__tclass_factory_{name}__()"
            body.append(
                f"    if {name} is __tclass_factory__:\n        {name} = {call}"
                if field.init
                else f"    {name} = {call}"
            )
        if not field.init:
            if field.default is not dataclasses.MISSING:
                body.append(f"    {name} = __tclass_dflt_{name}__")
            continue
        if not default:
            required.append(name)
        real = f"{name}{default or '=__tclass_missing__'}"
        if field.kw_only is True or (info.options["kw_only"] and name in own):
            kw_params.append(real)
            shown_kw.append(f"{name}{default}")
            continue
        if not default and shown and "=" in shown[-1]:
            previous = shown[-1].split("=")[0]
            msg = (
                f"{cls.__name__}: the field {name!r} has no default but follows {previous!r}, "
                "which has one; give it a default, or make it keyword-only "
                f"(class {cls.__name__}(..., kw_only=True), or dataclasses.field(kw_only=True))"
            )
            raise ClassDefinitionError(msg)
        params.append(real)
        shown.append(f"{name}{default}")
    return params, kw_params, shown, shown_kw, body, required, initvars


def _duplicate(info: ClassInfo, name: str) -> None:
    msg = (
        f"{info.cls.__name__}() got multiple values for argument {name!r} (the field {name!r} "
        "given by position and by keyword); pass it once"
    )
    raise DuplicateArgumentError(msg)


def _bad_call(
    info: ClassInfo,
    positional: int,
    extra: tuple[Any, ...],
    unknown: dict[str, Any],
    required: dict[str, Any],
) -> None:
    name = info.cls.__name__
    if unknown:
        keyword = next(iter(unknown))
        fields = ", ".join(info.init_names) or "none"
        msg = (
            f"{name}() got an unexpected keyword argument {keyword!r}: {name} has no such field "
            f"(fields: {fields}; and batch_size, device, names, lock)"
        )
        raise UnknownArgumentError(msg)
    if extra:
        # Counted as Python counts them, self included (the peer's dataclass message).
        given = ", ".join(info.init_names[:positional])
        plural = "s" if positional else ""
        takes = (
            f"self, then the fields {given}, in order; ClassVar attributes are no fields"
            if given
            else f"self only: {name}'s fields are keyword-only"
        )
        msg = (
            f"{name}.__init__() takes {positional + 1} positional argument{plural} but "
            f"{positional + 1 + len(extra)} were given ({takes}); pass the "
            f"{'others' if given else 'fields'} by keyword"
        )
        raise ArgumentError(msg)
    missing = [field for field, value in required.items() if value is _MISSING]
    plural = "s" if len(missing) > 1 else ""
    msg = (
        f"{name}() missing {len(missing)} required positional argument{plural} (the "
        f"field{plural} {', '.join(map(repr, missing))}); pass None to leave a field unset"
    )
    raise ArgumentError(msg)


_T = TypeVar("_T")


def generated_build(cls: type[_T], *args: Any, **kwargs: Any) -> _T:
    """An instance of ``cls`` built by its generated ``__init__`` (and so its
    ``__post_init__``), past the class's own ``__init__`` if it defines one: for the
    constructors whose arguments are the fields (``from_dict``, ``from_dataclass``)."""
    record = cls.__new__(cls)
    cls.__tclass_info__.generated_init(record, *args, **kwargs)  # type: ignore[attr-defined]
    return record


def user_init(init: Callable[..., None]) -> Callable[..., None]:
    """A class's own ``__init__``, run on an instance given empty storage first."""

    @functools.wraps(init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:  # noqa: N807
        try:
            self._tensordict  # noqa: B018  (set when an outer __init__ already ran)
        except AttributeError:
            empty = TensorDict._new_unchecked({}, torch.Size([]), None)
            object.__setattr__(self, "_tensordict", empty)  # past a __setattr__ of the class
        init(self, *args, **kwargs)

    __init__.__tclass_generated__ = True  # type: ignore[attr-defined]
    __init__.__tclass_user_init__ = init  # type: ignore[attr-defined]
    return __init__
