"""Which class rebuilds a saved node: a registry of the classes defined in this process.

Loading never imports a module named in a file. Every tensorclass registers itself when
it is created, under both forms the peer writes (``"module:QualName"`` in ``_class`` and
``"<class 'module.QualName'>"`` in ``_type``). A saved name with no live class, or with
several (a class redefined in a notebook while instances of the old one live on), is an
error that names the class and the module to import, never a guess.
"""

from __future__ import annotations

import re
import weakref
from typing import Any

from tclass._io._format import class_id
from tclass.errors import ClassResolutionError

__all__ = ["register_class", "resolve_class", "saved_class_name"]

# "module.QualName" -> the live classes saved under it (weak: test classes come and go).
_CLASSES: dict[str, list[weakref.ref[type]]] = {}
_TYPE_STRING = re.compile(r"<class '([^']+)'>\Z")


def register_class(cls: type) -> None:
    """Make ``cls`` loadable by its module and qualified name."""
    refs = _CLASSES.setdefault(f"{cls.__module__}.{cls.__qualname__}", [])
    refs[:] = [ref for ref in refs if ref() is not None and ref() is not cls]
    refs.append(weakref.ref(cls))


def saved_class_name(meta: dict[str, Any]) -> str | None:
    """``module.QualName`` of the class a node's meta.json names, or None if it names none."""
    saved_id = meta.get("_class")
    if isinstance(saved_id, str) and ":" in saved_id:
        module, _, qualname = saved_id.partition(":")
        return f"{module}.{qualname}"
    saved_type = meta.get("_type")
    if isinstance(saved_type, str):
        match = _TYPE_STRING.match(saved_type)
        if match:
            return match.group(1)
    return None


def resolve_class(name: str, requested: type | None, expected: type | None, where: str) -> type:
    """The tensorclass to rebuild a node saved as ``name`` (``module.QualName``).

    Args:
        name: the saved name.
        requested: the class ``load_memmap`` was called on, if it is a tensorclass.
        expected: the class the parent's field annotation names, if any.
        where: the folder, for messages.

    Raises:
        ClassResolutionError: no live class has that name, or several have.
    """
    for candidate in (requested, expected):
        if candidate is not None and _full_name(candidate) == name:
            return candidate
    live = [cls for cls in (ref() for ref in _CLASSES.get(name, ())) if cls is not None]
    if len(live) == 1:
        return live[0]
    qualname = name.rpartition(".")[2]
    if not live and requested is not None and requested.__qualname__.rpartition(".")[2] == qualname:
        # Saved from another module (often __main__): the caller named the class to use.
        return requested
    module = name.rpartition(".")[0]
    if live:
        msg = (
            f"{where} holds a {name}, and {len(live)} different classes of that name are "
            f"alive in this process (a class defined again?); call YourClass.load_memmap"
            f"({where!r}) with the one to use"
        )
        raise ClassResolutionError(msg)
    msg = (
        f"{where} holds a {name}, a class not defined in this process; import the module "
        f"that defines it (import {module}) or call {qualname}.load_memmap({where!r}). "
        "tclass never imports a module named in a file. (A record's fields alone load as "
        f"a TensorDict from its _tensordict sub-folder.)"
    )
    raise ClassResolutionError(msg)


def _full_name(cls: type) -> str:
    return class_id(cls).replace(":", ".", 1)
