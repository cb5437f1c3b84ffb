"""The one walker of a collection's tree: a visitor that dispatches on the kind of node.

Saving (``_io/memmap/_plan.py``), loading into an existing tree (``_io/_api.py``),
consolidation (``_consolidate.py``) and the wire layout (``distributed/_wire.py``) each
subclass :class:`NodeVisitor` and write one method per kind of node, recursing with
:meth:`NodeVisitor.visit`. The kinds are the record (a tensorclass instance, told apart
by :func:`tclass._core._records.is_record`), the lazy stack, the single Python value
(``NonTensorData``), the per-element Python values (``NonTensorStack``) and the
TensorDict (a legacy lazy view is walked as the plain collection it reads as); anything
else goes to :meth:`NodeVisitor.visit_other`, which refuses it.
"""

from __future__ import annotations

from typing import Any, Generic, TypeVar

from tclass._core._records import is_record
from tclass._engine._lazy._legacy import LegacyLazyView
from tclass._engine._lazy._stack import LazyStackedTensorDict
from tclass._engine._nontensor import NonTensorData
from tclass._engine._nontensor_stack import NonTensorStack
from tclass._engine._td import TensorDict
from tclass._engine._typed import TypedTensorDict
from tclass.errors import UnsupportedError

__all__ = ["NodeVisitor"]

R = TypeVar("R")


class NodeVisitor(Generic[R]):
    """Calls ``visit_<kind>(node, *args)`` for the kind of ``node``; subclasses define
    the kinds they meet and recurse into children with :meth:`visit`.

    A record is visited through its storage unless :meth:`visit_record` is overridden.
    """

    action = "walk"  # what the visitor does, for the refusal of an unknown node

    def visit(self, node: Any, *args: Any) -> R:
        if is_record(node):
            return self.visit_record(node, *args)
        if type(node) is TensorDict or isinstance(node, TypedTensorDict):
            return self.visit_tensordict(node, *args)  # another subclass: visit_other
        if isinstance(node, LazyStackedTensorDict):
            return self.visit_lazy(node, *args)
        if isinstance(node, NonTensorData):
            return self.visit_value(node, *args)
        if isinstance(node, NonTensorStack):
            return self.visit_values(node, *args)
        if isinstance(node, LegacyLazyView):
            return self.visit(node._plain(), *args)  # its entries as a plain collection
        return self.visit_other(node, *args)

    def visit_record(self, record: Any, *args: Any) -> R:
        """A tensorclass instance; by default, its storage (a TensorDict or lazy stack)."""
        return self.visit(record._tensordict, *args)

    def visit_tensordict(self, td: TensorDict, *args: Any) -> R:
        return self.visit_other(td, *args)

    def visit_lazy(self, stack: LazyStackedTensorDict, *args: Any) -> R:
        return self.visit_other(stack, *args)

    def visit_value(self, node: NonTensorData, *args: Any) -> R:
        return self.visit_other(node, *args)

    def visit_values(self, node: NonTensorStack, *args: Any) -> R:
        return self.visit_other(node, *args)

    def visit_other(self, node: Any, *args: Any) -> R:
        """A node this visitor does not handle: an UnsupportedError naming its type."""
        raise UnsupportedError(f"cannot {self.action} a {type(node).__name__}")
