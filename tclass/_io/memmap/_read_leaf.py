"""Reading one leaf of a saved folder (see ``_read``): its ``meta.json`` entry checked,
its file opened relative to the folder without following a link, its size checked, and
mapped (or only checked: ``validate_folder``, a load to ``meta``, under a fake mode);
and the options and observer every reader of a folder passes down."""

from __future__ import annotations

import difflib
import functools
from dataclasses import dataclass
from typing import Any, NoReturn, Protocol

import torch

from tclass._core._dtypes import DTYPES
from tclass._core._memmap_args import Mode
from tclass._io._schema import SavedSchema, SchemaCheck
from tclass._io.memmap._folder import ArchiveFolder, FileFacts, Folder
from tclass._io.memmap._format import META, file_name
from tclass._io.memmap._meta_file import (
    KNOWN_DEVICES,
    checked_sizes,
    fits_int64,
    is_sizes,
    names_device,
    raise_too_large,
)
from tclass._io.memmap._nested_leaf import SIZES_SUFFIX, entry_dtype, load_nested
from tclass.errors import (
    MetadataError,
    MissingFileError,
    TclassError,
    UnsafePathError,
    UnsupportedError,
)

__all__ = [
    "Observer",
    "ReadOptions",
    "dir_name",
    "faking",
    "load_leaf",
    "maps_directly",
    "open_child",
]


class Observer(Protocol):
    """What ``validate_folder`` reports, in walk order. ``entry`` announces each key of a
    node and each member of a lazy stack; what follows is that entry: ``leaf`` (then
    ``leaf_file`` once its file is open) for a tensor, or ``node`` ... ``leave`` around a
    sub-folder's node (nodes nest). A record is one node: its fields' entries follow it
    (``stack`` when they are a lazy stack, ``value`` for those kept in its own
    meta.json, then ``schema`` when its folder records one). ``problem`` reports why the
    entry last announced does not load, and the
    walk goes on with the next one: the first problem is what ``load_memmap`` raises."""

    def entry(self, folder: Folder, key: str | None, index: int | None) -> None: ...
    def node(self, folder: Folder, kind: str, name: str, meta: dict[str, Any]) -> None: ...
    def leave(self, loaded: Any) -> None: ...  # None: the node did not load
    def leaf(self, folder: Folder, stored: str, entry: dict[str, Any]) -> None: ...
    def leaf_file(self, folder: Folder, name: str, facts: FileFacts) -> None: ...
    def stack(self, stack_dim: int, members: int) -> None: ...
    def value(self, key: str, value: Any) -> None: ...
    # A record's saved schema (``folder``: its _tensordict/), before its fields' entries.
    def schema(self, folder: Folder, schema: SavedSchema) -> None: ...
    def problem(self, error: TclassError) -> None: ...


@dataclass
class ReadOptions:
    """How one load (or ``validate_folder``) reads the tree, passed to every node."""

    device: torch.device | None
    allow_pickle: bool
    mode: Mode | None
    shapes_only: bool = False  # device="meta": no file is mapped
    fake: bool = False  # under FakeTensorMode: leaves are fake tensors
    root: str = ""  # the folder being loaded, for messages
    classless: bool = False  # validate_folder: no class resolved, no pickle read
    fields_only: bool = False  # records as their fields' TensorDicts (load_tree's option)
    observer: Observer | None = None
    reported: int = 0  # problems reported to the observer so far
    schema: SchemaCheck | None = None  # records checked against their classes (not info)


def load_leaf(
    folder: Folder,
    stored: str,
    key: str,
    entry: dict[str, Any],
    prefix: list[int],
    options: ReadOptions,
    direct: bool = False,
) -> torch.Tensor:
    """The leaf ``key``, of a node of batch size ``prefix`` (``direct``: see
    :func:`maps_directly`)."""
    # The checks are inline and their messages built only on failure: this runs per leaf.
    dtype_text = entry.get("dtype")
    dtype = DTYPES.get(dtype_text) if dtype_text.__class__ is str else None
    shape = entry.get("shape")
    if (
        dtype is None
        or not is_sizes(shape)
        or shape[: len(prefix)] != prefix
        or entry.get("is_nested", False)
    ):
        if entry.get("is_nested", False) is True:
            return _load_nested(folder, stored, key, entry, prefix, options)
        _raise_bad_leaf(folder, key, entry, prefix)
    device = entry.get("device")  # recorded, not used; it must still be a device
    if device.__class__ is not str or device not in KNOWN_DEVICES:
        names_device(device, folder.child_path(META), f"the device of {key!r}")
    if 0 in shape:  # an empty leaf has no file; its size must still fit int64
        if not fits_int64(shape):
            raise_too_large(folder.child_path(META), f"entry {key!r} has shape {shape}, which")
        return _empty(shape, dtype, options)
    if direct:
        try:  # the usual file name; any failure goes the long way, for its fallbacks
            name = stored if stored.isidentifier() else file_name(stored)  # file_name's first case
            return folder.map_leaf(name + ".memmap", "", dtype, shape, options.mode)
        except TclassError:
            pass
    return _map_leaf(folder, stored, key, dtype, shape, options)


def _load_nested(
    folder: Folder,
    stored: str,
    key: str,
    entry: dict[str, Any],
    batch: list[int],
    options: ReadOptions,
) -> torch.Tensor:
    """The nested leaf ``key`` (see ``_nested_leaf.load_nested``): its size table read
    (mapped read-only, copied), its elements mapped as a dense leaf's are."""
    table_options = ReadOptions(None, options.allow_pickle, "r", root=options.root)
    return load_nested(
        entry,
        key,
        batch,
        folder.child_path(META),
        lambda shape: _map_leaf(
            folder, stored, key, torch.int64, shape, table_options, SIZES_SUFFIX
        ),
        lambda total: (
            _map_leaf(folder, stored, key, entry_dtype(entry), [total], options)
            if total
            else _empty([0], entry_dtype(entry), options)
        ),
        options.root if options.mode == "r+" and isinstance(folder, ArchiveFolder) else None,
        options.shapes_only or options.fake,
    )


def _raise_bad_leaf(folder: Folder, key: str, entry: dict[str, Any], batch: list[int]) -> NoReturn:
    where = folder.child_path(META)
    dtype_text = entry.get("dtype")
    if not isinstance(dtype_text, str) or dtype_text not in DTYPES:
        close = (
            difflib.get_close_matches(dtype_text, DTYPES, 1) if isinstance(dtype_text, str) else []
        )
        hint = (
            f"did you mean {close[0]!r}?" if close else "such as 'torch.float32' or 'torch.int64'"
        )
        msg = (
            f"{where!r}: entry {key!r} has dtype {dtype_text!r:.80}, which is not one tclass "
            f"reads ({hint})"
        )
        raise MetadataError(msg)
    shape = checked_sizes(entry.get("shape"), where, f"the shape of {key!r}")
    if entry.get("is_nested", False) is not False:
        raise UnsupportedError(
            f"{where!r}: entry {key!r} is a nested tensor, which tclass does not read"
        )
    msg = (
        f"{where!r}: entry {key!r} has shape {shape}, which does not start with the "
        f"node's batch size {batch}"
    )
    raise MetadataError(msg)


def dir_name(folder: Folder, stored: str, key: str) -> str:
    name = file_name(stored)
    if not folder.exists(name) and _plain_name(stored) and stored and folder.exists(stored):
        return stored  # legacy raw name
    if not folder.exists(name) and _path_like(key):
        _raise_path_key(folder, name, key)
    return name


def open_child(folder: Folder, stored: str, key: str, what: str) -> Folder:
    """The sub-folder of the entry ``key`` (saved as ``stored``), opened: as
    ``folder.folder(dir_name(...))``, without looking for the folder first (the usual
    case: one open, no ``stat``); only when it is missing are the legacy raw name and a
    path-like key considered, with :func:`dir_name`'s outcomes."""
    name = file_name(stored)
    try:
        return folder.folder(name, what)
    except MissingFileError:
        if name != stored and _plain_name(stored) and stored and folder.exists(stored):
            return folder.folder(stored, what)  # legacy raw name
        if _path_like(key):
            _raise_path_key(folder, name, key)
        raise


def _raise_path_key(folder: Folder, name: str, key: str) -> NoReturn:
    msg = (
        f"{folder.child_path(name)!r} is missing, and the key {key!r} is a path; "
        "the folder is damaged or crafted"
    )
    raise UnsafePathError(msg)


def _path_like(key: str) -> bool:
    """A key that reads as a path leaving its folder (``..``, absolute): what a crafted
    meta.json would hold. (Keys with ``/`` inside are fine: ``a/b`` is ``a%2Fb``.)"""
    parts = key.replace("\\", "/").split("/")
    return key.startswith(("/", "\\")) or ".." in parts or "\x00" in key or key in ("", ".")


def _plain_name(key: str) -> bool:
    return key not in ("", ".", "..") and "/" not in key and "\\" not in key and "\x00" not in key


def _map_leaf(
    folder: Folder,
    stored: str,
    key: str,
    dtype: torch.dtype,
    shape: list[int],
    options: ReadOptions,
    suffix: str = ".memmap",
) -> torch.Tensor:
    name, what = file_name(stored) + suffix, f"the entry {key!r}"
    try:
        return _leaf_file(folder, name, what, dtype, shape, options)
    except MissingFileError:
        # Folders the peer wrote with robust_key=False hold the raw key as the file name.
        legacy = stored + suffix
        if legacy != name and _plain_name(stored) and folder.exists(legacy):
            return _leaf_file(folder, legacy, what, dtype, shape, options)
        if _path_like(key):
            msg = (
                f"{folder.child_path(name)!r} is missing, and the key {key!r} is a "
                "path; the folder is damaged or crafted"
            )
            raise UnsafePathError(msg) from None
        raise


def _leaf_file(
    folder: Folder, name: str, what: str, dtype: torch.dtype, shape: list[int], options: ReadOptions
) -> torch.Tensor:
    if options.shapes_only or options.fake:  # check the file, read none of it
        observer = options.observer
        seen = None if observer is None else functools.partial(observer.leaf_file, folder, name)
        folder.check_leaf(name, what, dtype, shape, seen)
        return torch.empty(shape, dtype=dtype, device="meta" if options.shapes_only else None)
    tensor = folder.map_leaf(name, what, dtype, shape, options.mode)
    if options.device is not None and options.device.type != "cpu":
        tensor = tensor.to(options.device, non_blocking=True)
    return tensor


def maps_directly(folder: Folder, options: ReadOptions) -> bool:
    """Whether the leaves of ``folder`` are mapped as they are, for the caller, with
    nothing reported (what most loads do): then ``load_leaf`` asks the folder for the
    mapping itself, without the steps of :func:`_map_leaf` and :func:`_leaf_file`."""
    device = options.device
    return (
        options.observer is None
        and not (options.shapes_only or options.fake)
        and (device is None or device.type == "cpu")
    )


def faking() -> bool:
    """Whether a FakeTensorMode is active (tracing): leaves are then fake, not mapped."""
    if not torch._C._len_torch_dispatch_stack():  # no mode at all: the usual case, cheaply
        return False
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.utils._python_dispatch import _get_current_dispatch_mode_stack

    return any(isinstance(mode, FakeTensorMode) for mode in _get_current_dispatch_mode_stack())


def _empty(shape: list[int], dtype: torch.dtype, options: ReadOptions) -> torch.Tensor:
    device = options.device
    # As the peer: an empty leaf has no file, and loads as a plain tensor.
    return torch.empty(shape, dtype=dtype, device=device)
