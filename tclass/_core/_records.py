"""The one test of whether an object is a record (a tensorclass instance), and the
storage a record keeps its fields in.

Every layer below the facade recognises records through these two functions: the
facade marks each tensorclass with ``__tclass_info__`` (its per-class facts) and keeps
an instance's fields in its ``_tensordict`` (a TensorDict or a lazy stack of them).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from operator import attrgetter
from typing import Any, ClassVar, Protocol

import torch

__all__ = [
    "RecordLike",
    "bounds_values",
    "field_names_of",
    "is_record",
    "is_record_class",
    "storage_of",
    "storages_of",
]

_storage = attrgetter("_tensordict")


class RecordLike(Protocol):
    """What checkers know of a record below the facade (which defines records): its
    class's ``__tclass_info__``, which no other collection has."""

    __tclass_info__: ClassVar[Any]


def is_record_class(cls: type) -> bool:
    """Whether ``cls`` is a tensorclass (either form), not ``TensorClass`` itself."""
    return hasattr(cls, "__tclass_info__")


def is_record(node: object) -> bool:
    """Whether ``node`` is a record: an instance of a tensorclass."""
    return hasattr(type(node), "__tclass_info__")


def storage_of(node: Any) -> Any:
    """The TensorDict (or lazy stack) a record keeps its fields in; ``node`` itself for
    every other collection."""
    return node._tensordict if hasattr(type(node), "__tclass_info__") else node


def field_names_of(node: Any) -> frozenset[str]:
    """The declared fields of a record; empty for every other collection."""
    info = getattr(type(node), "__tclass_info__", None)
    return frozenset() if info is None else frozenset(info.field_names)


def bounds_values(node: Any) -> bool:
    """Whether ``node`` is a record whose class bounds the values of a field
    (``Spec(ge=0)``, ``Ge(0)``, ``Annotated[int, Ge(0)]``, ``Literal[...]``): every
    write into it is checked first."""
    info = getattr(type(node), "__tclass_info__", None)
    return info is not None and bool(info.bounds_values)


def storages_of(records: Sequence[Any]) -> Iterator[Any]:
    """The storages of records of one tensorclass, in a C-level pass (for stacking;
    a Python one under torch.compile, which cannot trace ``operator.attrgetter``)."""
    if torch.compiler.is_compiling():
        return (record._tensordict for record in records)
    return map(_storage, records)
