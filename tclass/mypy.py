"""A mypy plugin that types ``@tensorclass``-decorated classes like ``TensorClass``
subclasses: every method, property and constructor keyword (``batch_size``, ``device``,
``names``) of a tensorclass.

Enable it in the project's mypy configuration::

    [tool.mypy]
    plugins = ["tclass.mypy"]

(or ``plugins = tclass.mypy`` in ``mypy.ini``). Without it, mypy still types the fields
of a decorated class and its field-wise constructor (``dataclass_transform``), but not
what the class gains from ``TensorClass``; the base-class form ``class X(TensorClass)``
needs no plugin.

How: the decorator rebuilds the class with ``TensorClass`` as a base at runtime; the
plugin makes the same change to mypy's view of the class, before mypy synthesises its
``__init__``, so the two forms type-check the same.
"""

from __future__ import annotations

from collections.abc import Callable

from mypy.mro import calculate_mro
from mypy.nodes import CallExpr, TypeInfo
from mypy.plugin import ClassDefContext, Plugin, SemanticAnalyzerPluginInterface
from mypy.types import Instance

__all__ = ["TclassPlugin", "plugin"]

_DECORATOR = "tclass._tensorclass._decorator.tensorclass"
_BASE = "tclass._tensorclass._record.TensorClass"


class TclassPlugin(Plugin):
    """Gives ``@tensorclass`` classes the ``TensorClass`` base, as the runtime does."""

    def get_class_decorator_hook(self, fullname: str) -> Callable[[ClassDefContext], None] | None:
        return _add_tensorclass_base if fullname == _DECORATOR else None

    def get_class_decorator_hook_2(self, fullname: str) -> Callable[[ClassDefContext], bool] | None:
        # The class is now a TensorClass subclass, which TensorClass's metaclass transforms
        # (with the options moved to class keywords); the decorator's own transform, for
        # users without this plugin, must not run a second time.
        return _already_transformed if fullname == _DECORATOR else None


def _add_tensorclass_base(ctx: ClassDefContext) -> None:
    """``@tensorclass(frozen=True) class X`` becomes ``class X(TensorClass, frozen=True)``."""
    info = ctx.cls.info
    base = _lookup_base(ctx.api)
    if base is None or any(ancestor.fullname == _BASE for ancestor in info.mro):
        return
    if isinstance(ctx.reason, CallExpr):
        for name, value in zip(ctx.reason.arg_names, ctx.reason.args):
            if name is not None:
                ctx.cls.keywords[name] = value
    info.bases = [b for b in info.bases if b.type.fullname != "builtins.object"] + [
        Instance(base, [])
    ]
    info.mro = []
    calculate_mro(info)
    info.metaclass_type = info.calculate_metaclass_type()


def _already_transformed(ctx: ClassDefContext) -> bool:
    del ctx
    return True


def _lookup_base(api: SemanticAnalyzerPluginInterface) -> TypeInfo | None:
    symbol = api.lookup_fully_qualified_or_none(_BASE)
    node = symbol.node if symbol is not None else None
    return node if isinstance(node, TypeInfo) else None


def plugin(version: str) -> type[Plugin]:
    """mypy's entry point."""
    del version  # the hooks used exist in every mypy this package supports (>= 1.8)
    return TclassPlugin
