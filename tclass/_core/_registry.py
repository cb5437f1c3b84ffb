"""Which class rebuilds a saved or described node: a registry of the classes defined in
this process (used by loading and by consolidated buffers).

Loading never imports a module named in a file. Every tensorclass registers itself when
it is created, under both forms the peer writes (``"module:QualName"`` in ``_class`` and
``"<class 'module.QualName'>"`` in ``_type``). A saved name with no live class, or with
several (a class redefined in a notebook while instances of the old one live on), is an
error that says what works for that node (the module to import, the class to load it
with, the field to annotate), never a guess. The one name-only match: a class the caller
names (the one ``load_memmap`` is called on, or the annotation of the field holding a
nested node) takes a node saved under the same class name from another module, as a
script's ``__main__`` classes are when another program loads their folder.
"""

from __future__ import annotations

import sys
import weakref
from collections.abc import Callable, Sequence

from tclass._core._records import is_record_class
from tclass.errors import ClassResolutionError

__all__ = ["collection_class_defined", "on_collection_class", "register_class", "resolve_class"]

# "module.QualName" -> the live classes saved under it (weak: test classes come and go).
_CLASSES: dict[str, list[weakref.ref[type]]] = {}


# Subclasses of TensorDict defined so far (TypedTensorDict and its subclasses, a user's
# own), and what the layers above do with each (the interop layer registers it with
# pytree): a class defined before a hook is added gets it when it is added.
_COLLECTION_CLASSES: list[weakref.ref[type]] = []
_COLLECTION_HOOKS: list[Callable[[type], None]] = []


def collection_class_defined(cls: type) -> None:
    """Called for each new subclass of TensorDict: runs the hooks on it."""
    _COLLECTION_CLASSES[:] = [ref for ref in _COLLECTION_CLASSES if ref() is not None]
    _COLLECTION_CLASSES.append(weakref.ref(cls))
    for hook in _COLLECTION_HOOKS:
        hook(cls)


def on_collection_class(hook: Callable[[type], None]) -> None:
    """Runs ``hook`` on every subclass of TensorDict, those defined already and those to
    come."""
    _COLLECTION_HOOKS.append(hook)
    for ref in list(_COLLECTION_CLASSES):
        cls = ref()
        if cls is not None:
            hook(cls)


def register_class(cls: type) -> None:
    """Make ``cls`` loadable by its module and qualified name."""
    refs = _CLASSES.setdefault(f"{cls.__module__}.{cls.__qualname__}", [])
    refs[:] = [ref for ref in refs if ref() is not None and ref() is not cls]
    refs.append(weakref.ref(cls))


def resolve_class(
    name: str,
    candidates: Sequence[type],
    where: str,
    *,
    field: str | None = None,
    root: str | None = None,
) -> type:
    """The tensorclass to rebuild a node saved as ``name`` (``module.QualName``).

    In order: a candidate saved under exactly that name; else the one live class of that
    name (among those the candidates accept, when there are candidates); else the one
    candidate, or subclass of one, with the same class name (a class saved from another
    module, often ``__main__``, that the caller named).

    Args:
        name: the saved name.
        candidates: the tensorclasses the caller names for this node: the class
            ``load_memmap`` was called on (at the root), or those the annotation of the
            field holding the node accepts. Other classes in it are ignored.
        where: the folder, for messages.
        field: ``"Owner.field"`` when the node is the value of that record field.
        root: the folder ``load_memmap`` was called on, for messages.

    Raises:
        ClassResolutionError: no class fits, or several do.
    """
    for cls in candidates:  # the usual case: the class named, saved under its own name
        if is_record_class(cls) and _full_name(cls) == name:
            return cls
    named = tuple(cls for cls in candidates if is_record_class(cls))
    live = _live(name)
    usable = [cls for cls in live if not named or issubclass(cls, named)]
    if len(usable) == 1:
        return usable[0]
    same = _same_name(named, name.rpartition(".")[2]) if not usable else []
    if len(same) == 1:
        return same[0]
    if len(live) == 1 and not same:
        return live[0]  # not what the caller accepts: its own check says so, naming both
    hint = _Hint(name, where, field, root)
    if usable or live:
        raise ClassResolutionError(hint.ambiguous(len(usable or live)))
    if same:
        raise ClassResolutionError(hint.ambiguous(len(same), in_annotation=True))
    raise ClassResolutionError(hint.missing())


def _live(name: str) -> list[type]:
    """The live classes saved under ``name``: registered under it, or renamed to it after
    they were created (``cls.__qualname__ = ...``, as class factories do)."""
    names = (name, *_main_alias(name))
    live = [cls for n in names for cls in (ref() for ref in _CLASSES.get(n, ())) if cls is not None]
    if live:
        return live
    renamed = (ref() for refs in list(_CLASSES.values()) for ref in refs)
    return [cls for cls in renamed if cls is not None and _full_name(cls) in names]


def _main_alias(name: str) -> tuple[str, ...]:
    """The other name of a class of the main script: multiprocessing runs it as
    ``__mp_main__`` in the processes it spawns and makes ``__main__`` and ``__mp_main__``
    one module in every process, so pickle finds a class sent from one in the other
    (a record a spawned worker sends names ``__mp_main__.Ep``, the parent's is
    ``__main__.Ep``). Only while they are one module, as pickle sees them."""
    module, _, rest = name.partition(".")
    other = {"__main__": "__mp_main__", "__mp_main__": "__main__"}.get(module)
    if other is None or not rest:
        return ()
    main = sys.modules.get("__main__")
    return (f"{other}.{rest}",) if main is not None and sys.modules.get(other) is main else ()


def _same_name(classes: tuple[type, ...], short: str) -> list[type]:
    """The classes among ``classes`` and their subclasses whose name is ``short``."""
    found: list[type] = []
    pending = list(classes)
    while pending:
        cls = pending.pop()
        if cls.__qualname__.rpartition(".")[2] == short and cls not in found:
            found.append(cls)
        pending.extend(cls.__subclasses__())
    return found


class _Hint:
    """The advice of a resolution error: only what works for this node."""

    def __init__(self, name: str, where: str, field: str | None, root: str | None) -> None:
        self.name, self.where, self.field, self.root = name, where, field, root
        self.module = name.rpartition(".")[0]
        self.short = name.rpartition(".")[2]

    def missing(self) -> str:
        head = f"{self.where} holds a {self.name}, a class not defined in this process"
        if self.module == "__main__" or "<locals>" in self.name:
            origin = (
                "a script (module __main__)" if self.module == "__main__" else "inside a function"
            )
            return (
                f"{head}; it was saved from {origin}, so no import defines it: {self._by_class()}"
            )
        return (
            f"{head}: import {self.module} first (tclass never imports a module named "
            f"in a file), or {self._by_class()}"
        )

    def ambiguous(self, count: int, in_annotation: bool = False) -> str:
        if in_annotation:
            what = (
                f"{count} classes named {self.short} are accepted by {self.field or 'the caller'}"
            )
        else:
            what = (
                f"{count} different classes of that name are alive in this process (a "
                "class defined again?)"
            )
        return f"{self.where} holds a {self.name}, and {what}: {self._by_class(choose=True)}"

    def _by_class(self, choose: bool = False) -> str:
        """How to name the class instead: a name-only match takes the class the caller
        loads with (at the root) or the one the field holding the node is annotated with."""
        which = f"the {self.short} to use" if choose else f"your class named {self.short}"
        if self.root is None or self.where == self.root:
            return f"load it with {which}, {self.short}.load_memmap({self.where!r})"
        alone = f"{self.short}.load_memmap({self.where!r}) loads this part alone"
        if self.field is not None:
            return (
                f"annotate {self.field} with {which} and load the whole folder with "
                f"its class ({alone})"
            )
        if self.module == "__main__" and not choose:
            return f"define {which} in the script (__main__) that loads the folder ({alone})"
        return f"{alone}, with {which}"


def _full_name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"
