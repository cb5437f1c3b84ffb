"""The entry points of the persistent stores, which the base layer's forwarders reach
through ``_provided.IO``: opening an HDF5 file or a zarr store (``tclass.from_h5``,
``tclass.from_zarr``, ``Cls.from_h5``, ``Cls.from_zarr``), writing a collection into a
new one (``collection.to_h5``, ``collection.to_zarr``) and ``from_any``'s reader of open
``h5py`` and ``zarr`` groups."""

from __future__ import annotations

import os
from typing import Any

from typing_extensions import Unpack

from tclass._base._provided import IO
from tclass._base._tensordict_base import TensorDictBase
from tclass._base.declared._persistence import H5Options, ZarrOptions
from tclass._core._records import is_record, is_record_class
from tclass._io.store._persistent import BACKENDS, PersistentTensorDict
from tclass._io.store._records import bind_records
from tclass._io.store._view import PersistentTensorDictView

__all__ = [
    "from_h5",
    "from_zarr",
    "open_as",
    "open_group",
    "open_zarr_as",
    "record_over",
    "to_h5",
    "to_zarr",
]

PathLike = str | os.PathLike[str]


def from_h5(h5_file: PathLike, **options: Unpack[H5Options]) -> TensorDictBase:
    """Open an HDF5 file as a :class:`PersistentTensorDict` (see
    ``PersistentTensorDict.from_h5``)."""
    return PersistentTensorDict.from_h5(h5_file, **options)


def from_zarr(zarr_file: Any, **options: Unpack[ZarrOptions]) -> TensorDictBase:
    """Open a zarr store (a path, a zarr store object or an open ``zarr.Group``) as a
    :class:`PersistentTensorDict` (see ``PersistentTensorDict.from_zarr``)."""
    return PersistentTensorDict.from_zarr(zarr_file, **options)


def open_as(cls: type, filename: PathLike, **options: Unpack[H5Options]) -> Any:
    """``cls.from_h5(filename, ...)``: the file as a PersistentTensorDict, or, for a
    tensorclass, a record of ``cls`` over one, checked against ``cls`` first, whose
    nested records are of their fields' classes (see ``_records``)."""
    return _as_class(cls, PersistentTensorDict.from_h5(filename, **options))


def open_zarr_as(cls: type, store: Any, **options: Unpack[ZarrOptions]) -> Any:
    """``cls.from_zarr(store, ...)``: as :func:`open_as`, over a zarr store."""
    return _as_class(cls, PersistentTensorDict.from_zarr(store, **options))


def _as_class(cls: type, opened: PersistentTensorDict) -> Any:
    if not is_record_class(cls):
        return opened
    try:
        bind_records(opened, cls, check=True)
    except BaseException:
        opened.close()
        raise
    return cls._from_tensordict_unchecked(opened)  # type: ignore[attr-defined]


def record_over(
    cls: type, node: PersistentTensorDict | PersistentTensorDictView, *, share: bool = False
) -> Any:
    """``cls.from_tensordict(ptd)``: a record of ``cls`` over the file (or store) of
    ``node``, its groups under record fields nested records of their fields' classes, as
    ``cls.from_h5`` gives, checked against ``cls`` as that checks a file; writes go to
    the file, as the peer's record over a ``PersistentTensorDict``. The record reads
    through a new collection over the same groups: ``node`` reads them as before. Of a
    view of a file, the record is over those rows of the file (a record at that index).

    ``share``: the record keeps ``node`` itself, as the peer's (``node.lock_()`` locks
    the record), when no group of the file is under a record field (``node`` would read
    it as a record) and ``node`` is not bound to another class; ``node`` then reads the
    record's fields as the record does (a tuple field's JSON list as a tuple).

    Raises:
        SchemaMismatchError: every difference between the file and ``cls``.
    """
    if isinstance(node, PersistentTensorDictView):
        return record_over(cls, node.source)[node.index]
    over = node._over_same_file(node.device)
    bind_records(over, cls, check=True)
    if share and not over._records and node._bound in (None, cls):
        node._bound, over = cls, node  # (checked: the same groups)
    return cls._from_tensordict_unchecked(over)  # type: ignore[attr-defined]


def to_h5(node: Any, filename: PathLike, **kwargs: Any) -> Any:
    """``collection.to_h5(filename, **kwargs)``: written to a new file, returned opened
    for reading and writing (a record of the same class over it, for a record)."""
    return _written(node, PersistentTensorDict.from_dict(node, filename, **kwargs))


def to_zarr(node: Any, store: Any, *, allow_pickle: bool | None = None, **kwargs: Any) -> Any:
    """``collection.to_zarr(store, **kwargs)``: written to a new zarr store (replacing
    what ``store`` holds), returned opened for reading and writing (a record of the same
    class over it, for a record)."""
    written = PersistentTensorDict.from_dict(
        node, store, backend="zarr", allow_pickle=allow_pickle, **kwargs
    )
    return _written(node, written)


def _written(node: Any, written: PersistentTensorDict) -> Any:
    if is_record(node):
        bind_records(written, type(node), check=False)
        return type(node)._from_tensordict_unchecked(written)
    return written


def open_group(obj: Any) -> PersistentTensorDict | None:
    """``from_any``'s reader of an open ``h5py.File`` / ``h5py.Group`` or ``zarr.Group``
    (a PersistentTensorDict over it), None for any other object. Neither library is
    imported here: an object of one exists only once it is loaded."""
    for name, backend in BACKENDS.items():
        if backend.owns(obj):
            return PersistentTensorDict(group=obj, backend=name)
    return None


# --- implementations of the base layer's methods (``_base/_provided.py``) ---------------

IO.open_as = open_as
IO.open_zarr_as = open_zarr_as
IO.to_h5 = to_h5
IO.to_zarr = to_zarr
IO.open_group = open_group
