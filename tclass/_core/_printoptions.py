"""What the repr of a collection shows: the peer's ``set_printoptions`` /
``get_printoptions``, with its option names and defaults.

``PRINT_OPTIONS`` is the mapping in force; the engine's repr reads it on every call.
``set_printoptions(...)`` applies options for a ``with`` block, for every call of a
function it decorates, or, with ``.set()``, for the rest of the program.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from tclass.errors import ArgumentError

__all__ = ["PRINT_OPTIONS", "get_printoptions", "in_print_order", "set_printoptions"]

_F = TypeVar("_F", bound=Callable[..., Any])
_T = TypeVar("_T")

PRINT_OPTIONS: dict[str, Any] = {
    "show_batch_size": True,
    "show_device": True,
    "show_is_shared": True,
    "show_shape": True,
    "show_field_device": True,
    "show_dtype": True,
    "show_field_is_shared": True,
    "show_grad": False,
    "show_is_contiguous": False,
    "show_is_view": False,
    "show_storage_size": False,
    "plain": False,
    "sort_keys": "alphabetical",
    "compact": True,
    "html": True,
}

# The option names, fixed: PRINT_OPTIONS always holds every one (it is only ever updated,
# so a repr or a set_printoptions in another thread never sees it part-way restored).
_NAMES = frozenset(PRINT_OPTIONS)

# Options only the detailed form shows: passing one without ``compact`` turns it off.
_DETAILED_ONLY = frozenset(
    {
        "show_is_shared",
        "show_shape",
        "show_field_device",
        "show_field_is_shared",
        "show_grad",
        "show_is_contiguous",
        "show_is_view",
        "show_storage_size",
        "plain",
    }
)
# What ``verbose=False`` hides unless an option says otherwise.
_QUIET = {
    "show_device": False,
    "show_is_shared": False,
    "show_field_device": False,
    "show_dtype": False,
    "show_field_is_shared": False,
}
# ``sort_keys``: "alphabetical" sorts each entry's text; a callable is a sort key of that
# text (the peer's); the others keep the order of insertion (the peer's for any value but
# "alphabetical" and a callable: ``False`` too). ``True`` or another string is a typo there.
_SORTS = ("alphabetical", "insertion", None)


class set_printoptions:  # noqa: N801  (the peer's name)
    """Options of the repr of every collection, for a ``with`` block, a decorated
    function, or (``.set()``) the rest of the program; options not passed keep their
    value. See :data:`PRINT_OPTIONS` for the names; ``compact=False`` gives the detailed
    multi-line form, ``verbose=False`` hides devices, dtypes and sharing unless an option
    shows them.

    Raises:
        ArgumentError: (a ``TypeError``) for an unknown option or a bad ``sort_keys``.
    """

    def __init__(self, *, verbose: bool = True, **options: Any) -> None:
        unknown = set(options) - _NAMES
        if unknown:
            msg = f"Unknown printoptions: {unknown}. Valid options: {sorted(_NAMES)}"
            raise ArgumentError(msg)
        order = options.get("sort_keys", "alphabetical")
        if not (order is None or order is False or callable(order) or order in _SORTS[:2]):
            msg = (
                f"sort_keys must be one of {_SORTS}, False or a callable (a sort key of each "
                f"entry's text, 'key: ...'), got {order!r}"
            )
            raise ArgumentError(msg)
        if "compact" not in options and not _DETAILED_ONLY.isdisjoint(options):
            options["compact"] = False
        if not verbose:
            options = {**_QUIET, **options}
        self._options = options
        self._previous: list[dict[str, Any]] = []

    def __enter__(self) -> None:
        self._previous.append(dict(PRINT_OPTIONS))
        PRINT_OPTIONS.update(self._options)

    def __exit__(self, *exc_info: object) -> None:
        PRINT_OPTIONS.update(self._previous.pop())  # every key: one atomic update

    def set(self) -> None:
        """Applies the options for the rest of the program (or until ``__exit__``, which
        restores the options in force before, as the peer's)."""
        self.__enter__()

    def clone(self) -> set_printoptions:
        """The same options, as a new object (for nesting one object in itself)."""
        new = type(self).__new__(type(self))
        new._options = dict(self._options)
        new._previous = []
        return new

    def __call__(self, func: _F) -> _F:
        """Applies the options during every call of ``func`` (a decorator)."""

        @functools.wraps(func)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            with self.clone():
                return func(*args, **kwargs)

        return wrapped  # type: ignore[return-value]

    def __repr__(self) -> str:
        inner = ", ".join(f"{key}={value!r}" for key, value in self._options.items())
        return f"set_printoptions({inner})"


def in_print_order(entries: list[_T], text: Callable[[_T], str]) -> list[_T]:
    """``entries`` in the order ``sort_keys`` asks for, ``text`` giving each entry's text
    (``'key: f32[3]'``): sorted by it, by a callable of it, or as they are."""
    order = PRINT_OPTIONS["sort_keys"]
    if order == "alphabetical":
        return sorted(entries, key=text)
    if callable(order):
        return sorted(entries, key=lambda entry: order(text(entry)))
    return entries


def get_printoptions() -> dict[str, Any]:
    """A copy of the print options in force (see :class:`set_printoptions`)."""
    return dict(PRINT_OPTIONS)
