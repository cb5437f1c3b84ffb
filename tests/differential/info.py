"""What an op generator may know of the current collection, read from the peer's copy
through its public API (both copies are equal up to this step)."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import torch

from .compare import RECORD_KINDS, is_collection

Key = tuple[str, ...]


@dataclass
class Info:
    kind: str  # "td", "lazy", "record", "value", "values" or "other"
    batch: tuple[int, ...] = ()
    leaves: list[tuple[Key, torch.dtype, tuple[int, ...]]] = field(default_factory=list)
    python: list[Key] = field(default_factory=list)  # Python values (NonTensorData...)
    nodes: list[Key] = field(default_factory=list)  # nested collections
    top: list[str] = field(default_factory=list)  # top-level keys, in order
    locked: bool = False
    hetero: bool = False  # a lazy stack whose members' leaves differ in shape
    names: list[str | None] = field(default_factory=list)
    cls: str = ""  # a record's class, as programs name it ("Rec", "Auto"...)
    over_lazy: bool = False  # a record over a lazy stack (``lazy_stack`` of records)

    @property
    def ndim(self) -> int:
        return len(self.batch)

    @property
    def numel(self) -> int:
        n = 1
        for side in self.batch:
            n *= side
        return n

    def dtypes(self) -> set[torch.dtype]:
        return {dtype for _, dtype, _ in self.leaves}


def describe(x: Any) -> Info:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _describe(x)


def _describe(x: Any) -> Info:
    name = type(x).__name__
    if not is_collection(x):
        return Info("other")
    if name in ("NonTensorData", "NonTensorStack"):
        return Info("value" if name == "NonTensorData" else "values", tuple(x.batch_size))
    kind = "record" if name in RECORD_KINDS else "lazy" if name.startswith("LazyStacked") else "td"
    # A ragged lazy stack's batch size has -1 for its ragged dims: drawn as if 1.
    batch = tuple(1 if side < 0 else side for side in x.batch_size)
    info = Info(kind, batch, locked=bool(x.is_locked), cls=RECORD_KINDS.get(name, ""))
    try:
        info.names = list(x.names)
    except Exception:  # lazy stacks of some kinds have no names
        info.names = []
    source = x._tensordict if kind == "record" else x  # a record's storage, either library
    if type(source).__name__.startswith("LazyStacked"):  # (a record over a lazy stack too)
        info.over_lazy = kind == "record"
        _walk_lazy(source, info)
    else:
        _walk(source, (), info)
    info.top = list(source.keys())
    return info


def _walk(td: Any, prefix: tuple[str, ...], info: Info) -> None:
    for key in td.keys():
        path = prefix + (key,)
        try:
            value = td.get(key)
        except Exception:  # an entry of a heterogeneous lazy stack has no dense value
            info.hetero = True
            continue
        kind = type(value).__name__
        if isinstance(value, torch.Tensor):
            info.leaves.append((path, value.dtype, tuple(value.shape)))
        elif kind in ("NonTensorData", "NonTensorStack", "MetaData"):
            info.python.append(path)
        elif is_collection(value):
            info.nodes.append(path)
            _walk(value._tensordict if kind in RECORD_KINDS else value, path, info)


def _walk_lazy(x: Any, info: Info) -> None:
    members = list(x.tensordicts)
    if not members:
        return
    first = Info("td")
    _walk(members[0], (), first)
    for member in members[1:]:
        other = Info("td")
        _walk(member, (), other)
        if [s for _, _, s in other.leaves] != [s for _, _, s in first.leaves]:
            info.hetero = True
    dim = x.stack_dim
    for path, dtype, shape in first.leaves:
        info.leaves.append((path, dtype, shape[:dim] + (len(members),) + shape[dim:]))
    info.python, info.nodes = first.python, first.nodes
