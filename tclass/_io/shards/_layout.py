"""The layout of a shard's rows: what every shard of a sharded dataset shares, so that
its rows can be gathered into one collection.

A layout maps each node of the tree (a key path; ``()`` for the root) to a short text:
``record module.QualName [..]`` or ``TensorDict [..]`` for a collection (its batch dims
after the first), ``tensor float32 [3, 84]`` for a tensor (its dims after the first) and
``value`` for a Python value (one for every row, or one per row: appends turn one into
the other). It is read from a collection (the rows a writer appends), or from a saved
folder's description (``python -m tclass info``, which imports no class), and the two
agree for the same rows. The manifest of a dataset records the layout of its first
shard; every shard is checked against it.
"""

from __future__ import annotations

from typing import Any

import torch

from tclass._engine._lazy._stack import LazyStackedTensorDict
from tclass._engine._nontensor import NonTensorData
from tclass._engine._nontensor_stack import NonTensorStack
from tclass._engine._td import TensorDict
from tclass._engine._walk import NodeVisitor
from tclass._io.memmap._info import Node
from tclass.errors import AppendError, MetadataError

__all__ = [
    "Layout",
    "difference",
    "layout_from_json",
    "layout_json",
    "layout_of",
    "layout_of_info",
    "saved_class",
]

Layout = dict[tuple[str, ...], str]


def layout_of(rows: Any) -> Layout:
    """The layout of the collection ``rows`` (a record or a TensorDict with batch dims).

    Raises:
        AppendError: ``rows`` has no batch dim, or holds a lazy stack (which cannot grow).
    """
    if not rows.batch_size:
        msg = (
            f"the rows of a shard need a first batch dim to grow along; this "
            f"{type(rows).__name__} has batch size []: give it one (rows.unsqueeze(0))"
        )
        raise AppendError(msg)
    walker = _Walker()
    walker.visit(rows, ())
    return walker.entries


def layout_of_info(root: Node) -> Layout:
    """The layout of a saved folder, from its description (``describe``)."""
    entries: Layout = {}
    _walk_info(root, (), entries)
    return entries


def _walk_info(node: Node, where: tuple[str, ...], entries: Layout) -> None:
    trailing = (node.batch_size or [0])[1:]
    if node.kind == "tensor":
        entries[where] = f"tensor {node.dtype} {(node.shape or [0])[1:]}"
    elif node.kind in ("value", "values"):
        entries[where] = "value"
    elif node.kind == "unset":
        return  # a field that was None when saved: a collection holds no entry for it
    elif node.kind in ("tensorclass", "tensordict"):
        head = f"record {node.class_name}" if node.kind == "tensorclass" else "TensorDict"
        entries[where] = f"{head} {trailing}"
        for child in node.children:
            _walk_info(child, (*where, child.key or ""), entries)
    else:  # a lazy stack, a damaged node: no shard holds one
        entries[where] = node.kind


def saved_class(root: Node, expected: str | None) -> str | None:
    """The record class of a described folder, ``module:QualName`` (None: TensorDict
    rows); ``expected`` (the dataset's) when the folder names it without the colon (an
    older writer's, which saved no schema)."""
    if root.kind != "tensorclass":
        return None
    saved = (root.schema or {}).get("class")
    if isinstance(saved, str):
        return saved
    name = root.class_name or ""
    if expected is not None and expected.replace(":", ".") == name:
        return expected
    module, _, qualname = name.rpartition(".")
    return f"{module}:{qualname}"


class _Walker(NodeVisitor[None]):
    action = "append to a shard"

    def __init__(self) -> None:
        self.entries: Layout = {}

    def visit_record(self, record: Any, where: tuple[str, ...]) -> None:
        cls = type(record)
        trailing = list(record.batch_size[1:])
        self.entries[where] = f"record {cls.__module__}.{cls.__qualname__} {trailing}"
        self._fields(record._tensordict, where)

    def visit_tensordict(self, td: TensorDict, where: tuple[str, ...]) -> None:
        self.entries[where] = f"TensorDict {list(td.batch_size[1:])}"
        self._fields(td, where)

    def visit_lazy(self, stack: LazyStackedTensorDict, where: tuple[str, ...]) -> None:
        name = ".".join(where) or "the rows"
        msg = (
            f"{name} is a lazy stack, which cannot grow along its first dim: stack the "
            "members densely (torch.stack, or .contiguous()) before appending them to a shard"
        )
        raise AppendError(msg)

    def _fields(self, storage: Any, where: tuple[str, ...]) -> None:
        if not isinstance(storage, TensorDict):
            self.visit(storage, where)  # a lazy stack of the record's fields: refused
            return
        for key, value in storage._items():
            here = (*where, key)
            if isinstance(value, torch.Tensor):
                dtype = str(value.dtype).removeprefix("torch.")
                self.entries[here] = f"tensor {dtype} {list(value.shape[1:])}"
            elif isinstance(value, (NonTensorData, NonTensorStack)):
                self.entries[here] = "value"
            else:
                self.visit(value, here)


def layout_json(layout: Layout) -> list[list[Any]]:
    """The layout as JSON: ``[[key, ...], text]`` pairs, sorted by key."""
    return [[list(key), text] for key, text in sorted(layout.items())]


def layout_from_json(raw: object, where: str) -> Layout:
    """The layout a manifest records.

    Raises:
        MetadataError: ``raw`` is not a list of ``[[key, ...], text]`` pairs.
    """
    if not isinstance(raw, list):
        raise MetadataError(f"{where!r}: 'layout' must be a list, got {type(raw).__name__}")
    layout: Layout = {}
    for item in raw:
        if not (
            isinstance(item, list)
            and len(item) == 2
            and isinstance(item[0], list)
            and all(isinstance(key, str) for key in item[0])
            and isinstance(item[1], str)
        ):
            msg = f"{where!r}: each entry of 'layout' must be [[key, ...], text], got {item!r}"
            raise MetadataError(msg)
        layout[tuple(item[0])] = item[1]
    if () not in layout:
        raise MetadataError(f"{where!r}: 'layout' has no entry for the rows themselves ([])")
    return layout


def difference(expected: Layout, got: Layout) -> str | None:
    """The first way ``got`` differs from ``expected``, in words; None if they agree."""
    for key in sorted(expected.keys() | got.keys()):
        mine, theirs = got.get(key), expected.get(key)
        if mine != theirs:
            name = f"the entry {'.'.join(key)!r}" if key else "the rows"
            return f"{name} is {mine or 'absent'} here but {theirs or 'absent'} in the dataset"
    return None
