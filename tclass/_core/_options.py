"""Process-wide switches of the peer, with the peer's names: ``set_list_to_stack``,
``set_capture_non_tensor_stack``, ``set_lazy_legacy`` and ``set_get_defaults_to_none``.

Each ``set_*`` object applies its mode for a ``with`` block, for every call of a function
it decorates, or, with ``.set()``, for the rest of the program; the matching reader
(``list_to_stack()``...) says what is in force. The engine reads :data:`OPTIONS` directly.

The peer deprecates the non-default modes (and the two ``get_defaults_to_none``
functions) with a ``DeprecationWarning``; tclass supports every mode, and warns at the
same places so that code written against the peer sees the warnings it expects. The
peer's environment variables (``LIST_TO_STACK``, ``CAPTURE_NONTENSOR_STACK``,
``LAZY_LEGACY_OP``, ``TD_GET_DEFAULTS_TO_NONE``) set the initial modes.
"""

from __future__ import annotations

import functools
import os
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = [
    "OPTIONS",
    "capture_non_tensor_stack",
    "get_defaults_to_none",
    "lazy_legacy",
    "list_to_stack",
    "set_capture_non_tensor_stack",
    "set_get_defaults_to_none",
    "set_lazy_legacy",
    "set_list_to_stack",
]

_F = TypeVar("_F", bound=Callable[..., Any])


def _from_env(name: str) -> bool | None:
    text = os.environ.get(name)
    if text is None or text.lower() == "none":
        return None
    return text.lower() in ("y", "yes", "t", "true", "on", "1")


class _Options:
    """The modes in force; ``None`` means never set (the default applies)."""

    __slots__ = ("capture_non_tensor_stack", "get_defaults_to_none", "lazy_legacy", "list_to_stack")

    def __init__(self) -> None:
        self.list_to_stack: bool | None = _from_env("LIST_TO_STACK")
        # Whether stacking equal Python values keeps one value (default: no, as the peer).
        self.capture_non_tensor_stack: bool | None = _from_env("CAPTURE_NONTENSOR_STACK")
        self.lazy_legacy: bool | None = _from_env("LAZY_LEGACY_OP")
        self.get_defaults_to_none: bool = _from_env("TD_GET_DEFAULTS_TO_NONE") is not False


OPTIONS = _Options()
_DEFAULTS = {"list_to_stack": True, "capture_non_tensor_stack": False, "lazy_legacy": False}


def _deprecated(what: str, instead: str) -> None:
    warnings.warn(
        f"{what} is deprecated in tensordict (to be removed in its 0.17); tclass supports it "
        f"for code written for tensordict. {instead}",
        DeprecationWarning,
        stacklevel=3,
    )


class _Switch:
    """A mode for a block, a decorated function, or the rest of the program."""

    _name: str

    def __init__(self, mode: bool) -> None:
        self.mode = bool(mode)
        self._previous: list[bool | None] = []

    def __enter__(self) -> None:
        self._previous.append(getattr(OPTIONS, self._name))
        setattr(OPTIONS, self._name, self.mode)

    def __exit__(self, *exc_info: object) -> None:
        setattr(OPTIONS, self._name, self._previous.pop())

    def set(self) -> None:
        """Applies the mode for the rest of the program."""
        setattr(OPTIONS, self._name, self.mode)

    def __call__(self, func: _F) -> _F:
        """Applies the mode during every call of ``func`` (a decorator)."""

        @functools.wraps(func)
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            with self:
                return func(*args, **kwargs)

        return wrapped  # type: ignore[return-value]

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.mode})"


def _read(name: str, allow_none: bool) -> bool | None:
    value: bool | None = getattr(OPTIONS, name)
    if value is None and not allow_none:
        return _DEFAULTS[name]
    return value


class set_list_to_stack(_Switch):  # noqa: N801  (the peer's name)
    """Whether a list stored in a collection becomes a ``NonTensorStack`` (one value per
    element, the default) or one ``NonTensorData`` holding the list (``False``, which the
    peer deprecates: it warns). Lists of numbers become tensors either way."""

    _name = "list_to_stack"

    def __init__(self, mode: bool) -> None:
        super().__init__(mode)
        if not mode:
            _deprecated(
                "set_list_to_stack(False)",
                "Use td.set_non_tensor(key, value) to store a list as one value.",
            )


def list_to_stack(allow_none: bool = False) -> bool | None:
    """Whether lists become ``NonTensorStack`` values (see :class:`set_list_to_stack`);
    ``None`` with ``allow_none`` if the mode was never set."""
    return _read("list_to_stack", allow_none)


class set_capture_non_tensor_stack(_Switch):  # noqa: N801
    """Whether stacking equal Python values gives one ``NonTensorData`` (``True``) or a
    ``NonTensorStack`` holding the value once per element (``False``, the default, as the
    peer's). The peer deprecates ``True`` and warns; tclass warns as it does."""

    _name = "capture_non_tensor_stack"

    def __init__(self, mode: bool) -> None:
        super().__init__(mode)
        if mode:
            _deprecated(
                "set_capture_non_tensor_stack(True)",
                "Read NonTensorStack.data for the one value of a stack of equal values.",
            )


def capture_non_tensor_stack(allow_none: bool = False) -> bool | None:
    """Whether stacking equal Python values keeps one value (default ``False``, as the peer);
    ``None`` with ``allow_none`` if the mode was never set."""
    return _read("capture_non_tensor_stack", allow_none)


class set_lazy_legacy(_Switch):  # noqa: N801
    """The peer's legacy lazy mode: with ``True`` (deprecated by the peer, which warns),
    ``torch.stack`` and ``tclass.stack`` return a lazy stack, and ``unsqueeze``,
    ``squeeze``, ``permute``, ``transpose`` and ``view`` (methods and torch functions)
    return views that write through to their source (``LegacyLazyView``: see
    ``tclass._engine._lazy._legacy``); the inverse operation gives the source back."""

    _name = "lazy_legacy"

    def __init__(self, mode: bool) -> None:
        super().__init__(mode)
        if mode:
            _deprecated("set_lazy_legacy(True)", "Use lazy_stack() to build a lazy stack.")


def lazy_legacy(allow_none: bool = False) -> bool | None:
    """Whether the legacy lazy mode is on (``False`` by default); ``None`` with
    ``allow_none`` if the mode was never set."""
    return _read("lazy_legacy", allow_none)


def set_get_defaults_to_none(set_to_none: bool = True) -> None:
    """Whether ``get(key)`` without a default returns ``None`` for a missing key (the
    default) or raises ``KeyNotFoundError`` (a ``KeyError``). Deprecated by the peer."""
    _deprecated("set_get_defaults_to_none()", "Use td[key] to raise for a missing key.")
    OPTIONS.get_defaults_to_none = bool(set_to_none)


def get_defaults_to_none(set_to_none: bool = True) -> bool:
    """Whether ``get(key)`` returns ``None`` for a missing key (``set_to_none`` is ignored,
    as in the peer). Deprecated by the peer."""
    del set_to_none
    _deprecated("get_defaults_to_none()", "Use td[key] to raise for a missing key.")
    return OPTIONS.get_defaults_to_none
