"""Copies what a collection class inherits from tclass's method groups into the class.

A collection joins some twenty method groups (``TensorDictBase``'s mixins), so most of its
methods are found far down its MRO: ``_is_leaf_node`` is the 27th class of
``TensorDict``'s. Run eagerly, that costs nothing (CPython caches attribute lookups per
type), but ``torch.compile`` guards every class attribute a trace reads on its absence
from each class before the one defining it, and checks those guards at every call of the
compiled code: 85 guards for a compiled ``td.mean(0)``, 3 us a call, a third of its guard
time. With the inherited attributes in the class itself, a lookup stops at the first
class and guards nothing more (``tests/compile`` and ``benchmarks/compile_bench.py``).

Done once, by the module that defines the class, after the class is built; attributes
the class defines itself are kept, and the rest are the ones Python's lookup finds, so
instances behave exactly as before. Special names are copied only when they are methods
(``__getitem__``, ``__torch_function__``, the operators), and never the hooks of class
creation and construction; nothing is copied from outside tclass (``object``,
``Generic``, ``nn.Module``). A method group patched after the class is built no longer
reaches it: patch the collection class itself.
"""

from __future__ import annotations

import types

__all__ = ["inline_inherited"]

# Special methods that belong to one class: how it is built, subclassed or constructed.
_PER_CLASS = frozenset(
    {"__new__", "__init__", "__init_subclass__", "__class_getitem__", "__subclasshook__"}
)


def inline_inherited(cls: type) -> None:
    """Copies into ``cls`` every attribute it inherits from tclass's classes (see the
    module docstring), as the MRO resolves it."""
    seen = set(vars(cls))
    for base in cls.__mro__[1:]:
        if not base.__module__.startswith("tclass."):
            seen.update(vars(base))  # what the MRO finds here shadows the classes after
            continue
        for name, value in vars(base).items():
            if name in seen:
                continue
            seen.add(name)
            if _copied(name, value):
                type.__setattr__(cls, name, value)


def _copied(name: str, value: object) -> bool:
    if not (name.startswith("__") and name.endswith("__")):
        return True
    if name in _PER_CLASS:
        return False
    if isinstance(value, (classmethod, staticmethod)):
        value = value.__func__
    return isinstance(value, types.FunctionType)
