"""Methods named after the public class a user calls them on.

A collection class is assembled from mixins (``ApplyOps``, ``RecordStorageOps``, ...),
and Python names a function by where it was defined: a misspelt keyword
(``td.clone(recurse=True, foo=1)``) said ``ApplyOps.clone() got an unexpected keyword
argument 'foo'``, naming a class the user never saw. :func:`name_methods_after` renames
(``__qualname__``, and ``__module__`` so that the name still finds the function: a
pickled ``TensorDict.clone`` loads back) the functions a public class inherits from its
private mixins after that class: ``TensorDictBase.clone()``, as the peer's messages name
its own classes. A mixin shared by two public classes that are not one another's base
(``LockBlocks``: params and HDF5) keeps its own name rather than take one of theirs.
"""

from __future__ import annotations

import types
import weakref
from collections.abc import Mapping
from typing import Any, TypeVar

from tclass.errors import ArgumentError

__all__ = ["check_keywords", "name_methods_after"]

_O = TypeVar("_O", bound=Mapping[str, Any])
_C = TypeVar("_C", bound=type)

_PUBLIC: weakref.WeakSet[type] = weakref.WeakSet()
_ORIGINAL: dict[int, tuple[str, str]] = {}  # id(function) -> its own (qualname, module)
_OWNER: dict[int, type] = {}  # id(function) -> the public class it was named after


def _function(value: Any) -> Any:
    """The plain function behind a class attribute (a method, static or class method),
    or None for anything else (properties, slots, nested classes)."""
    if isinstance(value, (staticmethod, classmethod)):
        value = value.__func__
    return value if isinstance(value, types.FunctionType) else None


def name_methods_after(cls: _C) -> _C:
    """Name the functions ``cls`` inherits from its private mixins (the classes of its
    MRO before the next public class) ``cls.<name>``; mark ``cls`` public. Returns ``cls``."""
    _PUBLIC.add(cls)
    for mixin in cls.__mro__[1:]:
        if mixin in _PUBLIC or not mixin.__module__.startswith("tclass."):
            break  # a public class (named already) or one not of tclass (torch's)
        for name, value in vars(mixin).items():
            function = _function(value)
            if function is None or _function(_lookup(cls, name)) is not function:
                continue  # not a function, or one shadowed in ``cls``
            _rename(function, cls, name)
    return cls


def _lookup(cls: type, name: str) -> Any:
    for klass in cls.__mro__:
        if name in vars(klass):
            return vars(klass)[name]
    return None


def _rename(function: Any, cls: type, name: str) -> None:
    key = id(function)
    owner = _OWNER.get(key)
    if owner is not None and not issubclass(cls, owner):
        qualname, module = _ORIGINAL[key]  # shared by unrelated public classes
        function.__qualname__, function.__module__ = qualname, module
        del _OWNER[key]
        return
    if owner is None:
        if key in _ORIGINAL:  # restored after a clash: stays so
            return
        _ORIGINAL[key] = (function.__qualname__, function.__module__)
        _OWNER[key] = cls
    function.__qualname__ = f"{cls.__qualname__}.{name}"
    function.__module__ = cls.__module__


def check_keywords(given: _O, accepted: type, owner: object, method: str) -> _O:
    """``given``, the ``**options`` a method forwards (typed by the TypedDict
    ``accepted``), once every keyword is one it takes: another is refused in Python's
    words for ``owner``'s method (``MyRecord.memmap_``: the caller's class, ``owner`` an
    instance or a class), before the forwarded call would name an internal function
    (``saved_copy() got an unexpected keyword argument``).

    Raises:
        ArgumentError: (a ``TypeError``) naming the first such keyword and those taken.
    """
    taken = accepted.__annotations__
    for name in given:
        if name not in taken:
            cls = owner if isinstance(owner, type) else type(owner)
            names = list(taken)
            msg = (
                f"{cls.__name__}.{method}() got an unexpected keyword argument {name!r} (it "
                f"takes {', '.join(names[:-1])} and {names[-1]})"
            )
            raise ArgumentError(msg)
    return given
