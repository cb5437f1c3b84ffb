"""Rows of a collection as the columns of a table, and batches of those columns back as
records. Pure (numpy and torch); ``_source.py`` and ``_sink.py`` hand the columns to Ray.

**Columns.** One per leaf, named by its key path joined with ``"."`` (``meta.seed`` for
the field ``seed`` of the nested record ``meta``), in the collection's key order:

* a tensor leaf is a ``tensor`` column: row ``i`` holds ``leaf[i]`` (the dims after the
  first batch dim, so a ``[N, 3, 84, 84]`` leaf has rows of shape ``[3, 84, 84]``), as
  a numpy view of the leaf's memory. numpy has no bfloat16 nor float8: those leaves are
  widened to float32 (exactly, in a copy); complex leaves are refused (Arrow has no
  complex numbers).
* a Python value (``NonTensorData``: one value for every row; ``NonTensorStack``: one
  per row) is a ``text`` column when every value is a ``str``, else an ``object``
  column of the values as they are.

**Batches back.** :func:`to_record` takes a batch (a dict of columns, numpy arrays as Ray
hands them, or tensors) and rebuilds the nested tree from the names: a numeric column is
a tensor (numpy's memory, no copy; read-only memory gives ``ReadOnlyTensor`` views), a
column of objects (strings included) Python values (one ``NonTensorData`` when every row
holds the same value, else a ``NonTensorStack``). With a record class, the class's
fields decide instead (a Python-value field takes a numeric column as values), a field
whose spec names one dtype gets its column converted when that dtype holds every value
exactly (bfloat16 from the widened float32), and the record is built by the class's
constructor, which checks its schema: dtypes, shapes, named dims, value constraints,
missing and unknown fields.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from tclass._core._device import DeviceLike, as_device
from tclass._core._readonly import plain, read_only
from tclass._core._records import is_record_class, storage_of
from tclass._core._spec import inexact_value
from tclass._engine._lazy._stack import LazyStackedTensorDict
from tclass._engine._nontensor import NonTensorData
from tclass._engine._nontensor_stack import NonTensorStack
from tclass._engine._td import TensorDict
from tclass._engine._value_positions import same_value
from tclass._engine._walk import NodeVisitor
from tclass._io._annotations import field_classes
from tclass._io._schema import class_schema
from tclass.errors import (
    ArgumentValueError,
    FieldSpecError,
    InvalidKeyError,
    KeyConflictError,
    MetadataError,
    ShapeError,
    SpecProblem,
    UnsupportedError,
)

__all__ = [
    "SEPARATOR",
    "Column",
    "plan_columns",
    "row_columns",
    "select_columns",
    "to_columns",
    "to_record",
]

SEPARATOR = "."
# Dtypes numpy holds as they are; the other real floating dtypes (bfloat16, float8) are
# widened to float32, which holds each of their values exactly.
_NUMPY_DTYPES = frozenset({
    torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
    torch.uint16, torch.uint32, torch.uint64, torch.float16, torch.float32, torch.float64,
})  # fmt: skip


@dataclass(frozen=True)
class Column:
    """One column: its name, the key path of its leaf, its kind (``tensor``, ``text``,
    ``object``), and for a tensor column the leaf's dtype and the shape of one row."""

    name: str
    key: tuple[str, ...]
    kind: str
    dtype: torch.dtype | None = None
    shape: tuple[int, ...] = ()

    def describe(self) -> str:
        if self.kind != "tensor":
            return f"{self.name!r} ({self.kind})"
        return f"{self.name!r} ({str(self.dtype).removeprefix('torch.')} {list(self.shape)})"


# --- planning: the columns of a saved tree ---------------------------------------------


class _Planner(NodeVisitor[None]):
    """The columns of a tree loaded with its records as their fields' TensorDicts."""

    action = "read as Ray Data rows"

    def __init__(self, where: str) -> None:
        self.where = where
        self.columns: list[Column] = []

    def visit_tensordict(self, td: TensorDict, key: tuple[str, ...]) -> None:
        for name, value in td._items():
            if SEPARATOR in name:
                path = SEPARATOR.join((*key, name))
                msg = (
                    f"{self.where}: the key {path!r} holds {SEPARATOR!r}, which tclass.ray "
                    "uses to join nested keys into column names: rename it "
                    "(rename_key_) before reading the folder as a Ray dataset"
                )
                raise InvalidKeyError(msg)
            if isinstance(value, torch.Tensor):
                self.columns.append(_tensor_column((*key, name), value, self.where))
            else:
                self.visit(value, (*key, name))

    def visit_value(self, node: NonTensorData, key: tuple[str, ...]) -> None:
        kind = "text" if isinstance(node.data, str) else "object"
        self.columns.append(Column(SEPARATOR.join(key), key, kind))

    def visit_values(self, node: NonTensorStack, key: tuple[str, ...]) -> None:
        text = len(node.batch_size) == 1 and all(isinstance(v, str) for v in node.tolist())
        self.columns.append(Column(SEPARATOR.join(key), key, "text" if text else "object"))

    def visit_lazy(self, stack: LazyStackedTensorDict, key: tuple[str, ...]) -> None:
        name = SEPARATOR.join(key) or "the folder's root"
        msg = (
            f"{self.where}: {name} is a lazy stack, whose rows are not columns of one "
            "shape: save it stacked densely (torch.stack(...).memmap(...)) to read it as "
            "a Ray dataset"
        )
        raise UnsupportedError(msg)


def _tensor_column(key: tuple[str, ...], leaf: torch.Tensor, where: str) -> Column:
    name = SEPARATOR.join(key)
    if leaf.is_complex():
        msg = (
            f"{where}: {name!r} is a {leaf.dtype} tensor, and Ray Data's Arrow blocks hold "
            "no complex numbers: store it as real and imaginary parts "
            "(torch.view_as_real) to read it as a Ray dataset"
        )
        raise UnsupportedError(msg)
    return Column(name, key, "tensor", leaf.dtype, tuple(leaf.shape[1:]))


def plan_columns(tree: Any, where: str) -> list[Column]:
    """The columns of ``tree`` (a collection with a first batch dim, records loaded as
    their fields' TensorDicts), ``where`` naming it in errors.

    Raises:
        ShapeError: the tree has no batch dim (no rows).
        InvalidKeyError: a key holds the separator ``"."``.
        UnsupportedError: a complex tensor, or a lazy stack.
    """
    if not tree.batch_size:
        msg = (
            f"{where} holds a collection of batch size []: its rows are along the first "
            "batch dim, so it needs one (save it with a batch size, e.g. [1])"
        )
        raise ShapeError(msg)
    planner = _Planner(where)
    planner.visit(tree, ())
    return planner.columns


def select_columns(columns: list[Column], wanted: Sequence[str] | None) -> list[Column]:
    """The columns named in ``wanted`` (a name selects that column, or every column
    below it: ``"meta"`` selects ``meta.seed`` and ``meta.source``), in the folder's
    order; all of them for None.

    Raises:
        ArgumentValueError: a name matches no column (the message lists them).
    """
    if wanted is None:
        return columns
    if isinstance(wanted, str):
        wanted = [wanted]
    chosen: set[str] = set()
    for name in wanted:
        prefix = name + SEPARATOR
        found = {c.name for c in columns if c.name == name or c.name.startswith(prefix)}
        if not found:
            names = ", ".join(c.name for c in columns)
            raise ArgumentValueError(f"no column {name!r}: the folder's columns are {names}")
        chosen |= found
    return [c for c in columns if c.name in chosen]


# --- reading: the rows of one block ------------------------------------------------------


def row_columns(
    tree: Any, columns: Sequence[Column], start: int, stop: int, where: str
) -> dict[str, Any]:
    """Rows ``start:stop`` of ``tree`` as columns: numpy views of the tensor leaves
    (a copy only for widened dtypes), lists of the Python values.

    Raises:
        MetadataError: the tree no longer holds a planned column as it was planned
            (the folder was replaced since): it names the column and both forms.
    """
    out: dict[str, Any] = {}
    for column in columns:
        node = _entry_at(tree, column, where)
        if column.kind == "tensor":
            if not isinstance(node, torch.Tensor) or (
                node.dtype != column.dtype or tuple(node.shape[1:]) != column.shape
            ):
                _changed(column, node, where)
            out[column.name] = _as_numpy(node[start:stop])
        elif isinstance(node, NonTensorData):
            out[column.name] = [node.data] * (stop - start)
        elif isinstance(node, NonTensorStack):
            out[column.name] = node[start:stop].tolist()
        else:
            _changed(column, node, where)
    return out


def _entry_at(tree: Any, column: Column, where: str) -> Any:
    node = tree
    for part in column.key:
        if not isinstance(node, TensorDict) or part not in node._entries():
            _changed(column, None, where)
        node = node._entry(part)
    return node


def _changed(column: Column, node: Any, where: str) -> None:
    if isinstance(node, torch.Tensor):
        now = f"a {str(node.dtype).removeprefix('torch.')} tensor of rows {list(node.shape[1:])}"
    else:
        now = "missing" if node is None else f"a {type(node).__name__}"
    msg = (
        f"{where} changed since the dataset was planned: the column {column.describe()} "
        f"is {now} now (the folder was replaced, not appended to); read it again with "
        "tclass.ray.read_memmap"
    )
    raise MetadataError(msg)


def _as_numpy(tensor: torch.Tensor) -> np.ndarray[Any, Any]:
    """``tensor`` as a numpy array over its memory (widened to float32 when numpy has
    no such dtype: a copy)."""
    tensor = plain(tensor.detach())
    if tensor.dtype not in _NUMPY_DTYPES:
        tensor = tensor.to(torch.float32)
    return tensor.numpy()


def to_columns(record: Any) -> dict[str, Any]:
    """A collection's rows as a batch of columns (numpy arrays for tensors, object arrays
    for Python values): what a ``map_batches`` function returns to Ray Data."""
    where = type(record).__name__
    tree = _fields_tree(record)
    columns = plan_columns(tree, where)
    out = row_columns(tree, columns, 0, tree.batch_size[0], where)
    for column in columns:
        if column.kind != "tensor":
            values = np.empty(len(out[column.name]), dtype=object)
            values[:] = out[column.name]
            out[column.name] = values
    return out


def _fields_tree(node: Any) -> Any:
    """``node`` with each record replaced by its fields' TensorDict, for the planner."""
    node = storage_of(node)
    if isinstance(node, TensorDict):
        entries = {key: _fields_tree(value) for key, value in node._items()}
        return TensorDict._new_unchecked(entries, node.batch_size, node.device)
    return node


# --- batches back as records ------------------------------------------------------------


def to_record(batch: Mapping[str, Any], cls: type | None = None, device: DeviceLike = None) -> Any:
    """The batch ``batch`` (columns by name, numpy arrays or tensors) as a record of
    ``cls`` (a TensorDict without one), of batch size ``[rows]`` (see the module doc).

    Raises:
        ShapeError: the columns disagree on the number of rows.
        KeyConflictError: a column's name is also a prefix of others (``a`` and ``a.b``).
        FieldSpecError: the columns do not fit the class: a missing field, an unknown
            column, a Python value its field's annotation refuses; and the
            constructor's: a dtype, shape, named dim or value constraint.
    """
    rows = _row_count(batch)
    tree = _unflatten(batch)
    target = as_device(device) if device is not None else None
    if cls is None or not is_record_class(cls):
        return _tensordict(tree, rows, target)
    return _record(cls, tree, rows, target)


def _row_count(batch: Mapping[str, Any]) -> int:
    counts = {name: len(column) for name, column in batch.items()}
    if len(set(counts.values())) > 1:
        msg = f"the columns of a batch must hold as many rows each, got {counts}"
        raise ShapeError(msg)
    return next(iter(counts.values()), 0)


def _unflatten(batch: Mapping[str, Any]) -> dict[str, Any]:
    tree: dict[str, Any] = {}
    for name, column in batch.items():
        *parents, leaf = name.split(SEPARATOR)
        node = tree
        for part in parents:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                break
        if not isinstance(node, dict) or leaf in node:
            msg = (
                f"the column {name!r} and another column make {name.split(SEPARATOR)[0]!r} "
                "both a column and a prefix of nested columns: rename one of them"
            )
            raise KeyConflictError(msg)
        node[leaf] = column
    return tree


def _is_values(column: Any) -> bool:
    """Whether a column holds Python values (objects, strings), not numbers (an object
    column whose rows are numeric arrays of one shape is numbers: see ``_numeric_rows``)."""
    if isinstance(column, torch.Tensor):
        return False
    if not isinstance(column, np.ndarray):
        return True
    return column.dtype.kind in "US" or (column.dtype == object and not _numeric_rows(column))


def _numeric_rows(column: np.ndarray[Any, Any]) -> bool:
    """Whether an object column's rows are numeric arrays of one shape and dtype: how
    Ray's numpy batches hold an Arrow list column (``from_items`` of Python lists,
    ``from_pandas`` of list cells), each row an array of its own; nested lists give rows
    that are such columns in turn."""
    if column.dtype != object or column.ndim != 1 or len(column) == 0:
        return False
    first = column[0]
    if not isinstance(first, np.ndarray) or not (
        first.dtype.kind in "biuf" or _numeric_rows(first)
    ):
        return False
    return all(
        isinstance(row, np.ndarray) and row.dtype == first.dtype and row.shape == first.shape
        for row in column
    ) and (first.dtype != object or all(_numeric_rows(row) for row in column))


def _stacked_rows(column: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """The rows of a ``_numeric_rows`` column as one array (a copy)."""
    rows = [_stacked_rows(row) if row.dtype == object else row for row in column]
    return np.stack(rows)


def _tensor(column: Any, name: str, device: torch.device | None) -> torch.Tensor:
    if isinstance(column, torch.Tensor):
        tensor = column
    else:
        array = np.asarray(column)
        if array.dtype == object and _numeric_rows(array):
            array = _stacked_rows(array)
        if array.dtype == object:
            msg = (
                f"the column {name!r} holds Python objects (rows of different shapes?), not "
                "one tensor: tclass.ray rebuilds a tensor from a numeric column of rows of "
                "one shape"
            )
            raise ShapeError(msg)
        with warnings.catch_warnings():  # torch warns that it has no read-only tensors
            warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
            tensor = torch.from_numpy(array)
        if not array.flags.writeable:
            tensor = read_only(tensor)
    return tensor.to(device) if device is not None else tensor


def _values(
    column: Any, rows: int, device: torch.device | None, field: tuple[type, str] | None = None
) -> Any:
    """The Python values of a column: one ``NonTensorData`` when every row holds the
    same, else a ``NonTensorStack``; each checked against the annotation of ``field``
    (a record class and a field's name) as the constructor checks a value."""
    values = column.tolist() if isinstance(column, (np.ndarray, torch.Tensor)) else list(column)
    if field is not None:
        values = _checked_values(*field, values)
    batch = torch.Size([rows])
    if values and all(same_value(value, values[0]) for value in values[1:]):
        return NonTensorData._make(values[0], batch, device)
    return NonTensorStack._make(values, batch, device)


def _checked_values(cls: type, key: str, values: list[Any]) -> list[Any]:
    """``values`` if the field ``key`` of ``cls`` takes each (a list where a tuple is
    annotated becomes that tuple: JSON and Arrow have no tuples).

    Raises:
        FieldSpecError: naming the field, its annotation and the first row refused.
    """
    rule = cls.__tclass_info__.rules.get(key)  # type: ignore[attr-defined]
    if rule is None or rule.check_value is None or rule.any_value:
        return values
    out = []
    for row, value in enumerate(values):
        if (value is None and rule.optional) or rule.check_value(value):
            out.append(value)
        elif type(value) is list and rule.check_value(tuple(value)):
            out.append(tuple(value))
        else:
            shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
            msg = (
                f"{cls.__name__}.{key} is annotated {rule.text}; its row {row} holds "
                f"{type(value).__name__} {shown}"
            )
            raise FieldSpecError(msg, [SpecProblem(key, "annotation", value, rule.text, None, msg)])
    return out


def _tensordict(tree: dict[str, Any], rows: int, device: torch.device | None) -> TensorDict:
    entries: dict[str, Any] = {}
    for key, column in tree.items():
        if isinstance(column, dict):
            entries[key] = _tensordict(column, rows, device)
        elif _is_values(column):
            entries[key] = _values(column, rows, device)
        else:
            entries[key] = _tensor(column, key, device)
    return TensorDict._new_unchecked(entries, torch.Size([rows]), device)


def _record(cls: type, tree: dict[str, Any], rows: int, device: torch.device | None) -> Any:
    """A record of ``cls`` from ``tree``, its columns checked against the fields first.

    Raises:
        FieldSpecError: naming each missing field and each unknown column, nested
            records' included.
    """
    problems = _field_problems(cls, tree, "")
    if problems:
        listed = "; ".join(problem.message for problem in problems)
        msg = (
            f"the columns do not fit {cls.__name__}: {listed}; select or rename the "
            "columns (Dataset.select_columns, rename_columns)"
        )
        raise FieldSpecError(msg, problems)
    return _build(cls, tree, rows, device, "")


def _build(
    cls: type, tree: dict[str, Any], rows: int, device: torch.device | None, prefix: str
) -> Any:
    """A record of ``cls`` from the columns ``tree`` (those under ``prefix``), built by
    ``cls.from_tensordict``, which checks it."""
    fields = {f.name: f for f in class_schema(cls)[0]}
    entries: dict[str, Any] = {}
    for key, column in tree.items():
        field = fields[key]
        if isinstance(column, dict):
            inner = field_classes(cls, key)
            entries[key] = (
                _build(inner[0], column, rows, device, f"{prefix}{key}{SEPARATOR}")
                if len(inner) == 1 else _tensordict(column, rows, device)
            )  # fmt: skip
        elif field.kind == "value" or (field.kind == "any" and _is_values(column)):
            entries[key] = _values(column, rows, device, (cls, key))
        else:
            tensor = _tensor(column, prefix + key, device)
            entries[key] = _fit_dtype(tensor, field.spec.dtypes if field.spec else None)
    td = TensorDict._new_unchecked(entries, torch.Size([rows]), device)
    return cls.from_tensordict(td)  # type: ignore[attr-defined]


def _field_problems(cls: type, tree: Mapping[str, Any], prefix: str) -> list[SpecProblem]:
    """The fields of ``cls`` (and of its nested records) without their column, unless
    optional or defaulted, and the columns (under ``prefix``) that are no field."""
    fields = {f.name: f for f in class_schema(cls)[0]}
    problems = [
        SpecProblem(name, "missing", None, field.annotation, None,
                    f"{cls.__name__}.{name} (annotated {field.annotation}) has no column "
                    f"{prefix + name!r}")
        for name, field in fields.items()
        if name not in tree and not (field.optional or field.default)
    ]  # fmt: skip
    for name, column in tree.items():
        if name not in fields:
            message = f"the column {prefix + name!r} is no field of {cls.__name__}"
            problems.append(SpecProblem(name, "unknown", prefix + name, None, None, message))
            continue
        inner = field_classes(cls, name)
        if isinstance(column, dict) and len(inner) == 1:
            problems += _field_problems(inner[0], column, f"{prefix}{name}{SEPARATOR}")
    return problems


def _fit_dtype(tensor: torch.Tensor, dtypes: frozenset[torch.dtype] | None) -> torch.Tensor:
    """``tensor`` converted to the one dtype its field's spec allows, when that dtype
    holds every value exactly; as it is otherwise (the constructor then says why)."""
    if dtypes is None or tensor.dtype in dtypes or len(dtypes) != 1:
        return tensor
    (dtype,) = dtypes
    if inexact_value(tensor, dtype) is not None:
        return tensor
    return tensor.to(dtype)


def blocks_of(rows: int, rows_per_block: int) -> Iterator[tuple[int, int]]:
    """The row ranges ``[start, stop)`` of ``rows`` rows in blocks of ``rows_per_block``."""
    for start in range(0, rows, rows_per_block):
        yield start, min(start + rows_per_block, rows)
