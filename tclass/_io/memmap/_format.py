"""The vocabulary of the on-disk format: file names, dtypes, class names, reserved keys.

The format is the peer's (``tensordict``) memory-mapped JSON layout, version 1: one folder
per node holding a ``meta.json``, raw ``<key>.memmap`` leaves, nested collections as
sub-folders. tclass adds, in ways the peer ignores, a ``_tclass`` entry in a node's
``meta.json`` (``TCLASS_FIELD``) and, next to the ``meta.json`` of a record's fields
(``_tensordict/``), the class's JSON Schema document in ``schema.json`` (``SCHEMA``),
which no load reads; and in the entry of a nested-tensor leaf (the peer's two files,
``<key>.memmap`` and ``<key>.shape.memmap``) its layout, versioned:
``"_tclass": {"nested_format": 1, "layout": ...}`` (see ``_nested_leaf``). Everything
here is pure string and table work, shared by the writer, the reader and
``python -m tclass info``.
"""

from __future__ import annotations

__all__ = [
    "CLASS_IDS",
    "FORMAT_VERSION",
    "MAX_FILE_BYTES",
    "MAX_JSON_DEPTH",
    "MAX_TREE_DEPTH",
    "META",
    "NODE_FIELDS",
    "PEER_FIELDS",
    "SCHEMA",
    "TCLASS_FIELD",
    "TEMP_PREFIX",
    "TENSORCLASS_DIR",
    "class_id",
    "escape_key",
    "file_name",
    "is_marker",
    "type_string",
    "unescape_key",
]

# The peer's ``_format_version`` (it refuses folders of a later one). tclass's additions
# (``TCLASS_FIELD``, ``SCHEMA``) are ones the peer ignores and older tclass versions read
# past, so they change no version.
FORMAT_VERSION = 1
META = "meta.json"
# A record's JSON Schema document (``Cls.json_schema()``), in its ``_tensordict/`` folder
# beside the meta.json whose ``_tclass`` schema names it (``"json_schema_file"``): for
# readers without the class (``info``, a validator in another language). Loads never
# read it; it is not in meta.json (where earlier versions put it, as the schema's
# ``"json_schema"``: such folders still load), which every load parses and of which the
# document made most of the bytes. No key's file or folder can take its name: a
# record's fields are identifiers, which have no ".".
SCHEMA = "schema.json"
# The largest meta.json or value file (other.pickle, json_types.json, pickle.pkl) written
# or read: such files are read whole, so a crafted one must not take the machine's
# memory. A NonTensorStack keeps its values inline, and they can be big: the 1.28M file
# paths of ImageNet's training set take 49 MiB. Larger values belong in tensors.
MAX_FILE_BYTES = 256 << 20
# The deepest nesting of [ and { a meta.json may have. tclass writes JSON values up to
# 100 levels deep (deeper ones need pickle), inside a stack's batch dims and the node's
# own object; parsing stays far inside Python's default recursion limit.
MAX_JSON_DEPTH = 256
# The deepest folder a saved tree may have below its root (a record takes two levels: its
# folder and its ``_tensordict/``). The reader walks the tree recursively, a few frames a
# level: deeper trees would exhaust Python's recursion limit, so neither side goes there.
MAX_TREE_DEPTH = 100
TENSORCLASS_DIR = "_tensordict"
# A file being written beside the one it will replace (by rename), in a saved folder.
TEMP_PREFIX = ".tclass-tmp-"
# tclass's own facts about a node (escaped keys, lazy-stack member count). The peer skips
# a dict entry with neither "type" nor "dtype", so it ignores this one. A key may have the
# same name: its entry, like every key entry either library writes, has "type" (a
# sub-folder) or "dtype" and "shape" (a leaf), which the marker never has (``is_marker``).
TCLASS_FIELD = "_tclass"
_KEY_ENTRY_FIELDS = frozenset({"type", "dtype", "shape"})
# The peer's node-level names, which share the JSON object with the keys of a TensorDict
# node. A node holding a key of one of these names has all its keys stored escaped (see
# ``escape_key``), ``_tclass`` included, so that the marker saying so has its name free.
PEER_FIELDS = frozenset({"shape", "device", "_type", "_format_version", "_class", "_names"})
NODE_FIELDS = PEER_FIELDS | {TCLASS_FIELD}

# The built-in node kinds, named as the peer names them so that either library reads the
# other's folders: (the peer's str(type), the peer's class id).
CLASS_IDS: dict[str, tuple[str, str]] = {
    "TensorDict": ("<class 'tensordict._td.TensorDict'>", "tensordict:TensorDict"),
    "LazyStackedTensorDict": (
        "<class 'tensordict._lazy.LazyStackedTensorDict'>",
        "tensordict:LazyStackedTensorDict",
    ),
    "NonTensorData": ("<class 'tensordict.tensorclass.NonTensorData'>", "tensordict:NonTensorData"),
    "MetaData": ("<class 'tensordict.tensorclass.MetaData'>", "tensordict:MetaData"),
    "NonTensorStack": (
        "<class 'tensordict.tensorclass.NonTensorStack'>",
        "tensordict:NonTensorStack",
    ),
}

# Percent-encoded characters of a key's file name, as the peer encodes them: what is
# unsafe in a path on any OS, '%' itself, and control characters.
_ENCODED = frozenset('/<>:"|?*\\ \x00%') | {chr(code) for code in range(1, 32)} | {"\x7f"}


def file_name(key: str) -> str:
    """The file-system name of ``key`` (without ``.memmap``): never a path, never hidden
    behind ``.`` or ``..``."""
    if key.isidentifier():  # letters, digits and "_" only: the usual key, as it is
        return key
    if key == "":
        return "%"
    if key in (".", ".."):
        return "%2E" * len(key)
    if not _ENCODED.intersection(key):
        return key
    return "".join(f"%{ord(char):02X}" if char in _ENCODED else char for char in key)


def escape_key(key: str) -> str:
    """The name under which ``key`` is stored in the meta.json of a node whose keys are
    escaped (one of them is named like a peer node field, see ``PEER_FIELDS``).

    A key named like a node field (``shape``, ``device``, ``_type``, ``_tclass``...) gains
    a leading ``%``, and so does any key that would read back as an escaped one
    (``%shape``), so the mapping is one to one. Other keys are stored as they are.
    """
    if key.lstrip("%") in NODE_FIELDS:
        return "%" + key
    return key


def is_marker(name: str, entry: object) -> bool:
    """Whether the meta.json entry ``name: entry`` is tclass's marker, not a key's entry."""
    return name == TCLASS_FIELD and isinstance(entry, dict) and _KEY_ENTRY_FIELDS.isdisjoint(entry)


def unescape_key(stored: str) -> str:
    """The key stored as ``stored`` by :func:`escape_key`."""
    return stored[1:] if stored.lstrip("%") in NODE_FIELDS and stored.startswith("%") else stored


def type_string(cls: type) -> str:
    """The peer's ``_type`` of a class: ``"<class 'module.QualName'>"``."""
    peer_names = CLASS_IDS.get(_builtin_name(cls))
    if peer_names is not None:
        return peer_names[0]
    return f"<class '{cls.__module__}.{cls.__qualname__}'>"


def class_id(cls: type) -> str:
    """The peer's ``_class`` of a class: ``"module:QualName"``."""
    peer_names = CLASS_IDS.get(_builtin_name(cls))
    if peer_names is not None:
        return peer_names[1]
    return f"{cls.__module__}:{cls.__qualname__}"


def _builtin_name(cls: type) -> str:
    return cls.__name__ if cls.__module__.startswith("tclass.") else ""
