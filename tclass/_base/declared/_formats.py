"""The table formats every collection reads and writes with the peer's names and
arguments: pandas (``from_pandas``/``to_pandas``), CSV, Parquet and JSON records.

A mixin of ``TensorDictBase``; each method is a one-line forwarder to
``tclass._io.export._tabular`` (read from ``_provided.IO``), where the conversions live (next to
the other file formats).
The readers are class methods: on ``TensorDict`` and ``TensorDictBase`` they give a
``TensorDict``, on a tensorclass a record of that class.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, TypedDict, Union

from typing_extensions import Self, Unpack

from tclass._base._provided import IO

if TYPE_CHECKING:
    import torch

    from tclass._core._device import DeviceLike

__all__ = ["FormatOps", "TableOptions"]

PathLike = Union[str, "os.PathLike[str]"]


class TableOptions(TypedDict, total=False):
    """The keyword-only options of every table reader (``from_pandas``, ``from_csv``,
    ``from_parquet``, ``from_json``), as the peer's.

    ``auto_batch_size``: the batch size becomes the largest leading shape the entries
    share (not with ``batch_size``). ``batch_dims``: with ``auto_batch_size``, at most
    that many dims (ignored otherwise, with the peer's ``FutureWarning`` where it would
    matter). ``device``: move the entries there. ``batch_size``: default ``[num_rows]``.
    ``separator``: split column names on it into nested keys (``"obs.x"`` is
    ``("obs", "x")``). ``dtype``: cast numeric and bool columns to it."""

    auto_batch_size: bool
    batch_dims: int | None
    device: DeviceLike
    batch_size: Any
    separator: str | None
    dtype: torch.dtype | None


class FormatOps:
    """Reading and writing tables (pandas, CSV, Parquet, JSON records)."""

    __slots__ = ()

    @classmethod
    def from_pandas(cls, dataframe: Any, **options: Unpack[TableOptions]) -> Self:
        """A collection with one entry per column of ``dataframe`` (batch size
        ``[num_rows]``): numeric and bool columns as tensors, a categorical one as its
        codes, a datetime one as int64 nanoseconds, any other column as one Python value
        holding the whole column (set ``td[key] = list(column)`` for one value per row).
        Options: see :class:`TableOptions`."""
        return IO.Reader(cls, **options).from_dataframe(dataframe)  # type: ignore[no-any-return]

    def to_pandas(self, *, separator: str | None = None) -> Any:
        """A pandas DataFrame with one column per leaf (tensors of one value per row;
        Python values as columns of values). Needs pandas.

        Raises:
            ArgumentValueError: (a ``ValueError``) a nested collection and no ``separator``
                (``separator="."`` names its columns ``"key.subkey"``).
            ShapeError: (a ``ValueError``) a tensor has more than one value per row.
        """
        return IO.to_frame(self, separator)

    @classmethod
    def from_csv(cls, path: PathLike, **options: Any) -> Self:
        """Reads a CSV file (with pandas, else pyarrow), columns converted as
        :meth:`from_pandas` does. ``options``: those of :class:`TableOptions`; the others
        go to ``pandas.read_csv`` (or ``pyarrow.csv.read_csv``)."""
        return IO.read_file(cls, "csv", path, options)  # type: ignore[no-any-return]

    def to_csv(self, path: PathLike, *, separator: str | None = None, **kwargs: Any) -> None:
        """Writes a CSV file of the columns :meth:`to_pandas` gives, without the index;
        ``kwargs`` go to ``DataFrame.to_csv``. Needs pandas."""
        return IO.write_table(self, path, "csv", separator, **kwargs)

    @classmethod
    def from_parquet(
        cls, path: PathLike, *, columns: list[str] | None = None, **options: Any
    ) -> Self:
        """Reads a Parquet file (with pyarrow, else pandas); ``columns``: only those.
        Through pyarrow a string column has one value per row (a ``NonTensorStack``).
        ``options``: those of :class:`TableOptions`; the others go to the reader."""
        return IO.read_file(cls, "parquet", path, options, columns=columns)  # type: ignore[no-any-return]

    def to_parquet(self, path: PathLike, *, separator: str | None = None, **kwargs: Any) -> None:
        """Writes a Parquet file of the columns :meth:`to_pandas` gives (with pyarrow,
        else pandas); ``kwargs`` go to the writer."""
        return IO.write_table(self, path, "parquet", separator, **kwargs)

    @classmethod
    def from_json(cls, path: PathLike, *, lines: bool = False, **options: Any) -> Self:
        """Reads a JSON array of records (``lines=True``: one record per line) with
        pandas, else the ``json`` module (then a string field has one value per record).
        ``options``: those of :class:`TableOptions`; the others go to
        ``pandas.read_json``."""
        return IO.read_file(cls, "json", path, options, lines=lines)  # type: ignore[no-any-return]

    def to_mds(
        self,
        *,
        columns: dict[str, str] | None = None,
        out: str | tuple[str, str] | None = None,
        keep_local: bool = False,
        compression: str | None = None,
        hashes: list[str] | None = None,
        size_limit: int | str | None = 1 << 26,
        writer: Any = None,
        finish_writer: bool | None = None,
        **kwargs: Any,
    ) -> None:
        """Writes a MosaicML Streaming (MDS) dataset: one sample per element along the
        first batch dim (without batch dims: one sample), tensors as NumPy arrays (0-d ones
        as numbers). Needs ``pip install 'tclass[mds]'`` unless ``writer`` is given.

        Args:
            columns: the MDS encoding of each column (default: inferred from the first
                sample).
            out: a local folder, a remote, or ``(local, remote)``.
            keep_local, compression, hashes, size_limit, kwargs: ``MDSWriter``'s.
            writer: an ``MDSWriter`` to write through instead of a new one.
            finish_writer: whether to finish ``writer`` after writing (default: the
                peer's: finished, with a ``FutureWarning``, after a collection with batch
                dims; left open after one without). A writer made here is finished.

        Raises:
            ArgumentValueError: (a ``ValueError``) the collection is empty, neither
                ``out`` nor ``writer`` is given, or an entry has no MDS encoding.
        """
        return IO.to_mds(
            self, columns=columns, out=out, keep_local=keep_local, compression=compression,
            hashes=hashes, size_limit=size_limit, writer=writer, finish_writer=finish_writer,
            **kwargs,
        )  # fmt: skip

    def to_json(
        self, path: PathLike, *, separator: str | None = None, lines: bool = False, **kwargs: Any
    ) -> None:
        """Writes a JSON array of records, one per row (``lines=True``: JSON Lines), with
        pandas (``kwargs`` go to ``DataFrame.to_json``), else the ``json`` module."""
        return IO.write_table(self, path, "json", separator, lines=lines, **kwargs)
