"""Tables: pandas DataFrames, CSV, Parquet and JSON records, with the peer's rules.

Reading gives one entry per column and the batch size ``[num_rows]``: numeric and bool
columns become tensors, a categorical column its codes, a datetime column int64
nanoseconds; other columns (strings, objects) stay Python values, as the reader hands
them: through pandas one value for the whole column (a ``NonTensorData`` holding its
array, as the peer), through pyarrow or the ``json`` module one value per row (a
``NonTensorStack``). ``separator`` splits column names into nested keys. Writing takes
one column per leaf (tensors of one value per row; nested collections need
``separator``). pandas and pyarrow are optional (``pip install 'tclass[formats]'``); JSON
falls back on the ``json`` module. Loading runs no code: no pickle anywhere.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from typing_extensions import Unpack

from tclass._base._provided import IO
from tclass._base.declared._formats import TableOptions
from tclass._core._records import is_record, is_record_class
from tclass._engine._nontensor import NonTensorData
from tclass._engine._nontensor_stack import NonTensorStack
from tclass._engine._td import TensorDict
from tclass._io._optional import need
from tclass.errors import (
    ArgumentError,
    ArgumentValueError,
    FileFormatError,
    KeyConflictError,
    ShapeError,
)

__all__ = [
    "Reader",
    "from_csv",
    "from_json",
    "from_pandas",
    "from_parquet",
    "read_file",
    "to_columns",
    "to_frame",
    "write_table",
]

PathLike = str | os.PathLike[str]
Columns = dict[str, Any]


def _has(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


class Reader:
    """The options every table reader takes (the peer's keyword arguments), and the one
    conversion of columns into a collection of class ``cls``."""

    def __init__(
        self,
        cls: type,
        *,
        auto_batch_size: bool = False,
        batch_dims: int | None = None,
        device: Any = None,
        batch_size: Any = None,
        separator: str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        if auto_batch_size and batch_size is not None:
            msg = (
                "Conflicting batch sizes: batch_size and auto_batch_size cannot be both specified."
            )
            raise ArgumentError(msg)
        self.cls = cls
        self.auto_batch_size = auto_batch_size
        self.batch_dims = batch_dims
        self.device = device
        self.batch_size = batch_size
        self.separator = separator
        self.dtype = dtype

    def build(self, columns: Columns, num_rows: int, op: str) -> Any:
        data: dict[str, Any] = {}
        for name, column in columns.items():
            data[name] = self._column(column)
        if self.separator is not None:
            data = _unflatten(data, self.separator)
        batch = [num_rows] if self.batch_size is None else self.batch_size
        result = TensorDict(data, batch_size=batch, device=self.device)
        if self.auto_batch_size:
            result.auto_batch_size_(batch_dims=self.batch_dims)
        elif self.batch_dims is not None:
            _warn_batch_dims(op, result, self.batch_dims, self.batch_size)
        if is_record_class(self.cls):
            return self.cls.from_tensordict(result)  # type: ignore[attr-defined]
        return result

    def _column(self, column: Any) -> Any:
        if isinstance(column, np.ndarray) and column.dtype.kind in "iufb":
            if self.dtype is not None:
                return torch.as_tensor(column.copy()).to(self.dtype)
            return torch.as_tensor(column.copy())
        if isinstance(column, np.ndarray) and column.dtype.kind == "M":
            return torch.as_tensor(column.astype("datetime64[ns]").astype(np.int64))
        return column

    def from_dataframe(self, frame: Any, op: str = "from_pandas") -> Any:
        return self.build(_frame_columns(frame), len(frame), op)


def _warn_batch_dims(op: str, result: Any, batch_dims: int, batch_size: Any) -> None:
    """The peer's warning: ``batch_dims`` without ``auto_batch_size`` is ignored, which
    its 0.17 changes (``auto_batch_size`` on) where that would change the result."""
    if batch_size is None:
        expected = result.copy().auto_batch_size_(batch_dims=batch_dims)
        if expected.batch_size == result.batch_size:
            return
    warnings.warn(
        f"{op} ignores batch_dims={batch_dims} without auto_batch_size=True (tensordict "
        "0.17 will turn auto_batch_size on when batch_dims is given); pass "
        "auto_batch_size=True for that result now, or drop batch_dims",
        FutureWarning,
        stacklevel=4,
    )


def _unflatten(flat: dict[str, Any], separator: str) -> dict[str, Any]:
    """``{"obs.x": a}`` -> ``{"obs": {"x": a}}``."""
    out: dict[str, Any] = {}
    for name, value in flat.items():
        parts = name.split(separator)
        level = out
        for part in parts[:-1]:
            level = level.setdefault(part, {})
            if not isinstance(level, dict):
                msg = f"column {name!r}: {part!r} is both a column and a prefix of columns"
                raise KeyConflictError(msg)
        if isinstance(level.get(parts[-1]), dict):
            msg = f"column {name!r} is both a column and a prefix of columns"
            raise KeyConflictError(msg)
        level[parts[-1]] = value
    return out


def _frame_columns(frame: Any) -> Columns:
    columns: Columns = {}
    for name in frame.columns:
        series = frame[name]
        if str(series.dtype) == "category":
            columns[str(name)] = series.cat.codes.to_numpy().copy()
        else:
            columns[str(name)] = series.to_numpy()
    return columns


def arrow_columns(table: Any) -> tuple[Columns, int]:
    """A pyarrow table as numpy arrays (numbers, bools, timestamps, fixed-shape tensors
    without nulls) and lists of Python values (every other column)."""
    pa = need("pyarrow", "formats", "reading a table with pyarrow")
    columns: Columns = {}
    for name in table.column_names:
        column = table.column(name)
        kind = column.type
        if pa.types.is_integer(kind) or pa.types.is_floating(kind):
            columns[name] = column.to_numpy()
        elif pa.types.is_boolean(kind) or pa.types.is_timestamp(kind):
            columns[name] = column.to_numpy()
        elif _is_shaped_tensor(pa, column):
            columns[name] = column.combine_chunks().to_numpy_ndarray()
        else:
            columns[name] = column.to_pylist()
    return columns, table.num_rows


def _is_shaped_tensor(pa: Any, column: Any) -> bool:
    kind = column.type
    if getattr(kind, "extension_name", None) != "arrow.fixed_shape_tensor":
        return False
    value = kind.value_type
    numeric = pa.types.is_integer(value) or pa.types.is_floating(value)
    inner_nulls = any(chunk.storage.flatten().null_count for chunk in column.chunks)
    return numeric and column.null_count == 0 and not inner_nulls


# --- reading files -------------------------------------------------------------------

_OPTIONS = ("auto_batch_size", "batch_dims", "device", "batch_size", "separator", "dtype")


def read_file(
    cls: type, kind: str, path: PathLike, options: dict[str, Any], **reader_args: Any
) -> Any:
    """``cls.from_csv/from_parquet/from_json(path, **options)``: the table options of
    ``options`` configure the conversion, the others go to the file reader."""
    mine = {name: options.pop(name) for name in _OPTIONS if name in options}
    reader = Reader(cls, **mine)
    if kind == "csv":
        return read_csv(reader, path, **options)
    if kind == "parquet":
        return read_parquet(reader, path, reader_args.get("columns"), **options)
    return read_json(reader, path, reader_args.get("lines", False), **options)


def from_pandas(dataframe: Any, **options: Unpack[TableOptions]) -> TensorDict:
    """``TensorDict.from_pandas``: a TensorDict with one entry per column."""
    return Reader(TensorDict, **options).from_dataframe(dataframe)  # type: ignore[no-any-return]


def read_frame(obj: Any, options: TableOptions) -> TensorDict | None:
    """``from_any``'s reader of a pandas DataFrame (``from_pandas`` with its options),
    None for any other object (pandas is not imported here: a DataFrame exists only once
    it is loaded)."""
    pandas = sys.modules.get("pandas")
    if pandas is None or not isinstance(obj, pandas.DataFrame):
        return None
    return Reader(TensorDict, **options).from_dataframe(obj)  # type: ignore[no-any-return]


def from_csv(path: PathLike, **options: Any) -> TensorDict:
    """``TensorDict.from_csv``: a TensorDict with one entry per column of a CSV file."""
    return read_file(TensorDict, "csv", path, options)  # type: ignore[no-any-return]


def from_parquet(path: PathLike, *, columns: list[str] | None = None, **options: Any) -> TensorDict:
    """``TensorDict.from_parquet``: a TensorDict with one entry per column of a Parquet
    file (``columns``: only those)."""
    return read_file(TensorDict, "parquet", path, options, columns=columns)  # type: ignore[no-any-return]


def from_json(path: PathLike, *, lines: bool = False, **options: Any) -> TensorDict:
    """``TensorDict.from_json``: a TensorDict with one entry per field of a JSON array of
    records (``lines=True``: JSON Lines)."""
    return read_file(TensorDict, "json", path, options, lines=lines)  # type: ignore[no-any-return]


def read_csv(reader: Reader, path: PathLike, **kwargs: Any) -> Any:
    if _has("pandas"):
        pandas = need("pandas", "formats", "from_csv")
        return reader.from_dataframe(pandas.read_csv(path, **kwargs), "from_csv")
    if _has("pyarrow"):
        csv = need("pyarrow.csv", "formats", "from_csv")
        return reader.build(*arrow_columns(csv.read_csv(os.fspath(path), **kwargs)), "from_csv")
    need("pandas", "formats", "from_csv (with pandas or pyarrow)")


def read_parquet(
    reader: Reader, path: PathLike, columns: list[str] | None = None, **kwargs: Any
) -> Any:
    if _has("pyarrow"):
        parquet = need("pyarrow.parquet", "formats", "from_parquet")
        table = parquet.read_table(os.fspath(path), columns=columns, **kwargs)
        return reader.build(*arrow_columns(table), "from_parquet")
    if _has("pandas"):
        pandas = need("pandas", "formats", "from_parquet")
        frame = pandas.read_parquet(path, columns=columns, **kwargs)
        return reader.build({str(name): frame[name].to_numpy() for name in frame.columns},
                            len(frame), "from_parquet")  # fmt: skip
    need("pyarrow", "formats", "from_parquet (with pyarrow or pandas)")


def read_json(reader: Reader, path: PathLike, lines: bool = False, **kwargs: Any) -> Any:
    if _has("pandas"):
        pandas = need("pandas", "formats", "from_json")
        frame = pandas.read_json(path, lines=lines, **kwargs)
        columns = {str(name): frame[name].to_numpy() for name in frame.columns}
        return reader.build(columns, len(frame), "from_json")
    text = Path(path).read_text()
    if lines:
        records = [json.loads(line) for line in text.splitlines() if line.strip()]
    else:
        records = json.loads(text)
        if not isinstance(records, list):
            msg = (
                f"{os.fspath(path)} holds a JSON object, not an array of records; load "
                "one object with json.load and pass it to from_dict"
            )
            raise FileFormatError(msg)
    return reader.build(_record_columns(records, path), len(records), "from_json")


def _record_columns(records: list[Any], path: PathLike) -> Columns:
    if not all(isinstance(record, dict) for record in records):
        msg = f"{os.fspath(path)}: every record of a JSON table must be an object"
        raise FileFormatError(msg)
    names = dict.fromkeys(name for record in records for name in record)
    columns: Columns = {}
    with_gaps = []
    for name in names:
        values = [record.get(name) for record in records]
        if None in values and all(v is None or isinstance(v, (int, float)) for v in values):
            with_gaps.append(name)
        columns[name] = values
        if all(isinstance(v, (int, float, bool)) for v in values):
            columns[name] = np.array(values)
    if with_gaps:
        warnings.warn(
            f"from_json read the field(s) {', '.join(map(repr, with_gaps))} without pandas: "
            "their missing values are None in a Python-value entry, where pandas gives a "
            "float tensor with NaN (tensordict 0.17 will give NaN too); install pandas to "
            "get that result now",
            FutureWarning,
            stacklevel=4,
        )
    return columns


# --- writing -------------------------------------------------------------------------


def to_columns(collection: Any, separator: str | None, *, broadcast: bool = False) -> Columns:
    """One column (an array or a list, one value per row) per leaf of ``collection``;
    with ``broadcast``, a Python value of a collection without batch dims stays one value
    when a tensor there has a dim (pandas repeats it along the tensor's rows, as the
    peer's frame does)."""
    flat = _flatten(collection, separator) if separator is not None else _top(collection)
    rows = collection.batch_size[0] if collection.batch_dims else 1
    broadcast = (
        broadcast
        and not collection.batch_dims
        and any(isinstance(value, torch.Tensor) and value.ndim for value in flat.values())
    )
    data: Columns = {}
    for name, value in flat.items():
        if isinstance(value, torch.Tensor):
            if value.ndim > 1:
                msg = (
                    f"cannot convert the tensor {name!r} of shape {list(value.shape)} to one "
                    "column: only tensors of one value per row (1-D, the batch size) are"
                )
                raise ShapeError(msg)
            data[name] = value.detach().cpu().numpy()
        elif isinstance(value, (NonTensorData, NonTensorStack)):
            if value.batch_dims:  # one row per element along its first dim (as the peer)
                data[name] = value.tolist()
            else:
                data[name] = value.data if broadcast else [value.data] * rows
        elif is_record(value):  # a column of records, one per row along its first dim
            data[name] = list(value.unbind(0)) if value.batch_dims else [value]
        else:
            data[name] = value
    return data


def _top(collection: Any) -> dict[str, Any]:
    flat = {}
    for key, value in collection.items():
        if _is_table(value) and not is_record(value):
            msg = (
                f"the nested collection at {key!r} needs a separator to become columns: "
                "pass separator='.' (its keys become 'key.subkey')"
            )
            raise ArgumentValueError(msg)
        flat[key] = value
    return flat


def _is_table(value: Any) -> bool:
    """A nested collection that is spread into columns (not a Python value, not a
    record, which stays one column of records without a separator, as in the peer)."""
    return hasattr(value, "batch_size") and not isinstance(
        value, (torch.Tensor, NonTensorData, NonTensorStack)
    )


def _flatten(collection: Any, separator: str) -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in collection.items():
        if not _is_table(value):
            flat[key] = value
            continue
        inner = _flatten(value, separator)
        if is_record(value) and (not inner or any(map(_not_one_column, inner.values()))):
            flat[key] = value  # kept whole, one record per row (the peer's rule)
            continue
        for sub, item in inner.items():
            flat[f"{key}{separator}{sub}"] = item
    return flat


def _not_one_column(value: Any) -> bool:
    return (isinstance(value, torch.Tensor) and value.ndim > 1) or is_record(value)


def write_table(collection: Any, path: PathLike, kind: str, separator: str | None,
                **kwargs: Any) -> None:  # fmt: skip
    """Writes ``collection`` as a ``"csv"``, ``"parquet"`` or ``"json"`` file."""
    if kind == "csv":
        frame = to_frame(collection, separator, "to_csv")
        frame.to_csv(path, index=False, **kwargs)
    elif kind == "parquet":
        _write_parquet(collection, path, separator, **kwargs)
    elif _has("pandas"):
        lines = kwargs.pop("lines", False)
        frame = to_frame(collection, separator, "to_json")
        frame.to_json(path, orient="records", lines=lines, **kwargs)
    else:
        _write_json(collection, path, separator, kwargs.get("lines", False))


def to_frame(collection: Any, separator: str | None, op: str = "to_pandas") -> Any:
    pandas = need("pandas", "formats", op)
    return pandas.DataFrame(to_columns(collection, separator, broadcast=True))


def _write_parquet(collection: Any, path: PathLike, separator: str | None, **kwargs: Any) -> None:
    if _has("pyarrow"):
        pa = need("pyarrow", "formats", "to_parquet")
        parquet = need("pyarrow.parquet", "formats", "to_parquet")
        if _has("pandas"):
            table = pa.Table.from_pandas(to_frame(collection, separator, "to_parquet"))
        else:
            table = pa.table(to_columns(collection, separator))
        parquet.write_table(table, os.fspath(path), **kwargs)
    else:
        to_frame(collection, separator, "to_parquet (with pyarrow or pandas)").to_parquet(
            path, **kwargs
        )


def _write_json(collection: Any, path: PathLike, separator: str | None, lines: bool) -> None:
    columns = to_columns(collection, separator)
    rows = len(collection) if collection.batch_dims else 1
    records = [
        {name: _item(column, row) for name, column in columns.items()} for row in range(rows)
    ]
    if lines:
        text = "\n".join(json.dumps(record, default=str) for record in records)
    else:
        text = json.dumps(records, default=str)
    Path(path).write_text(text)


def _item(column: Iterable[Any], row: int) -> Any:
    value = column[row]  # type: ignore[index]
    return value.item() if isinstance(value, np.generic) else value


# --- implementations of the base layer's methods (``_base/_provided.py``) ---------------

IO.Reader = Reader
IO.read_file = read_file
IO.read_frame = read_frame
IO.to_frame = to_frame
IO.write_table = write_table
