"""The class options of a tensorclass, as the peer names them: one list,
:class:`ClassOptions`, read by every place that takes them (the ``@tensorclass``
decorator, ``TensorClass.__init_subclass__`` and ``TensorClass[...]``,
``from_dataclass``, ``TypedTensorDict``) and by the class builder, whose
``ClassInfo.options`` holds a class's options, inherited ones included
(``tclass/_tensorclass/_options.py`` works them out).

Adding an option touches two places, both here: its line in :class:`ClassOptions` (its
name, its type, and in :class:`Option` how it is taken: default, inheritance, whether
``TensorClass[...]`` takes it as a flag, what ``TypedTensorDict`` does with it), and its
row in the table below. An option with an effect is then read where it acts, as
``info.options["name"]``; an inert one needs nothing more. A test
(``tests/tensorclass/test_tensorclass_options.py``) checks that every place takes, or refuses, each
option of the list.

============================  =================================================================
option                        effect
============================  =================================================================
``autocast``                  a value set to a field is converted to the annotated type
``nocast``                    numbers and numpy arrays set to a tensor field without a spec
                              stay Python values
``frozen``                    fields cannot be assigned; instances are locked
``tensor_only``               every field is a tensor or a collection (checked at definition);
                              reading a field reads the storage directly
``shadow``                    fields may be named after members (``sum``, ``to``, ...)
``skip_post_init_on_rebuild`` accepted; ``__post_init__`` always runs once per construction
``kw_only``                   the class's own fields are keyword-only in ``__init__``
``cast_filter``               ``fn(key, tensor) -> bool``: the leaves ``to(dtype)`` casts
============================  =================================================================
"""

from __future__ import annotations

import dataclasses
import inspect
import typing
from collections.abc import Callable, Mapping
from typing import Annotated, Any, Literal, TypedDict, TypeVar

import torch

from tclass.errors import ArgumentError

__all__ = [
    "DEFAULTS",
    "FLAGS",
    "OPTIONS",
    "CastFilter",
    "ClassOptions",
    "Option",
    "check_option_names",
    "named_options",
    "option_listing",
]

CastFilter = Callable[[tuple[str, ...], torch.Tensor], bool]
_F = TypeVar("_F", bound=Callable[..., Any])


@dataclasses.dataclass(frozen=True)
class Option:
    """How one class option is taken.

    Attributes:
        default: its value when neither the class nor a tensorclass base gives it.
        inherited: a subclass that does not give it takes its base's (else the default).
        flag: ``TensorClass["name"]`` turns it on.
        typed: what ``TypedTensorDict`` does with it: ``"active"`` applies it,
            ``"inert"`` accepts it with a ``DeprecationWarning`` (as the peer), ``None``
            refuses it as an unknown option.
    """

    default: Any = False
    inherited: bool = True
    flag: bool = True
    typed: Literal["active", "inert"] | None = None


class ClassOptions(TypedDict, total=False):
    """The class options, as keywords; ``None`` (or absent) means not given: the base's,
    else the default. A class's resolved options (``ClassInfo.options``) hold every key.
    Declared in the order of the peer's flags."""

    autocast: Annotated[bool | None, Option(typed="inert")]
    nocast: Annotated[bool | None, Option(typed="inert")]
    frozen: Annotated[bool | None, Option(typed="active")]
    tensor_only: Annotated[bool | None, Option(typed="inert")]
    shadow: Annotated[bool | None, Option(typed="active")]
    skip_post_init_on_rebuild: Annotated[bool | None, Option()]
    kw_only: Annotated[bool | None, Option(inherited=False, flag=False)]
    cast_filter: Annotated[CastFilter | None, Option(default=None, flag=False)]


_HINTS: dict[str, Any] = typing.get_type_hints(ClassOptions, include_extras=True)

# How each option is taken, by name, in the order declared.
OPTIONS: Mapping[str, Option] = {name: hint.__metadata__[0] for name, hint in _HINTS.items()}
# The options TensorClass[...] takes, in the order of a flagged base's name.
FLAGS: tuple[str, ...] = tuple(name for name, how in OPTIONS.items() if how.flag)
# The options of a class that gives none and has no tensorclass base.
DEFAULTS: ClassOptions = typing.cast(
    ClassOptions, {name: how.default for name, how in OPTIONS.items()}
)
_KEYWORD = inspect.Parameter.KEYWORD_ONLY
_PARAMETERS = tuple(
    inspect.Parameter(
        name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=hint.__origin__
    )
    for name, hint in _HINTS.items()
)


def option_listing() -> str:
    """The option names for a message: the flags first, ``"a, b and c"``."""
    names = [*FLAGS, *(name for name in OPTIONS if name not in FLAGS)]
    return f"{', '.join(names[:-1])} and {names[-1]}"


def check_option_names(given: Mapping[str, object], function: str) -> None:
    """Refuses a keyword of ``given`` that is no class option, as Python refuses an
    unexpected keyword argument of ``function``.

    Raises:
        ArgumentError: (a ``TypeError``) naming the first such keyword.
    """
    for name in given:
        if name not in OPTIONS:
            msg = (
                f"{function}() got an unexpected keyword argument {name!r} (the class options "
                f"are {option_listing()})"
            )
            raise ArgumentError(msg)


def named_options(function: _F) -> _F:
    """``function``, taking ``**options: Unpack[ClassOptions]``, with a signature that
    names each option as a keyword-only parameter (what ``help`` and ``inspect`` show)."""
    signature = inspect.signature(function)
    kept = [p for p in signature.parameters.values() if p.kind is not p.VAR_KEYWORD]
    function.__signature__ = signature.replace(parameters=[*kept, *_PARAMETERS])  # type: ignore[attr-defined]
    return function
