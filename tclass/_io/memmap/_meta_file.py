"""Reading and checking ``meta.json`` files: the JSON (its nesting depth checked first,
without recursion), a node's header (format version, saved class), and the checks of
single fields (sizes, devices, tclass's marker) that every reader of a saved folder uses.

Each check raises a ``MetadataError`` naming the file; nothing here opens a file itself
(the ``Folder`` reads it).
"""

from __future__ import annotations

import json
from typing import Any, NoReturn, TypeGuard

import numpy as np
import torch

from tclass._engine._nontensor import NonTensorData
from tclass._io.memmap._classes import saved_class_name
from tclass._io.memmap._folder import Folder
from tclass._io.memmap._format import FORMAT_VERSION, MAX_JSON_DEPTH, META, TCLASS_FIELD, is_marker
from tclass.errors import MetadataError

__all__ = [
    "KNOWN_DEVICES",
    "check_depth",
    "check_nested_batch",
    "fits_int64",
    "is_sizes",
    "json_depth_over",
    "saved_marker",
    "names_device",
    "parse_json",
    "raise_too_large",
    "read_header",
    "decode_header",
    "read_json_object",
    "read_meta",
    "checked_sizes",
    "checked_stack_dims",
]

_INT64 = 1 << 63  # sizes and element counts must stay below this (torch's int64)
# Device strings of leaves and nodes already parsed (a bounded cache: they are few).
KNOWN_DEVICES = {"cpu", "None", "meta", "cuda", "cuda:0"}


# --- files and folders -------------------------------------------------------------------


def read_meta(folder: Folder) -> dict[str, Any]:
    """The folder's meta.json as a dict, or an error naming the file."""
    return read_json_object(folder, META, "its metadata", "not an object; the folder is damaged")


def read_json_object(folder: Folder, name: str, what: str, not_object: str) -> dict[str, Any]:
    """The JSON object in the small file ``name`` of ``folder`` (``what`` it holds, for
    the errors).

    Raises:
        MetadataError: the file is not JSON, or holds another JSON value (the message
            ends with ``not_object``).
    """
    raw = folder.read_small(name, what)
    return _json_object(raw, folder.child_path(name), not_object)


def _json_object(raw: bytes, path: str, not_object: str) -> dict[str, Any]:
    document = parse_json(raw, path)
    if not isinstance(document, dict):
        msg = f"{path!r} holds a JSON {type(document).__name__}, {not_object}"
        raise MetadataError(msg)
    return document


def read_header(folder: Folder) -> tuple[dict[str, Any], str]:
    """The folder's meta.json and the ``module.QualName`` of the class it saves, after
    checking the format version."""
    return decode_header(folder.read_small(META, "its metadata"), folder)


def decode_header(raw: bytes, folder: Folder) -> tuple[dict[str, Any], str]:
    """:func:`read_header` of the bytes ``raw`` read from ``folder``'s meta.json."""
    # Inline, as this runs once per node of every load: the usual file (a UTF-8 JSON
    # object no deeper than its opening brackets allow, of a known format version) is
    # decoded here; anything else goes through read_meta's checks, for their verdicts.
    meta: Any = None
    if (
        raw[:1] == b"{"
        and raw[1:2] != b"\x00"
        and raw.count(b"[") + raw.count(b"{") <= MAX_JSON_DEPTH
    ):
        try:
            text = raw.decode()
            meta, end = _DECODER.raw_decode(text)
        except (ValueError, RecursionError):
            meta = None
        else:
            if end != len(text) and text[end:].strip(_JSON_SPACE):
                meta = None  # trailing data: parse_json refuses it
    if meta is None:
        meta = _json_object(raw, folder.child_path(META), "not an object; the folder is damaged")
    version = meta.get("_format_version", 0)
    if version.__class__ is not int or not 0 <= version <= FORMAT_VERSION:
        _check_version(folder, version)
    name = saved_class_name(meta)
    if name is None:
        msg = (
            f"{folder.child_path(META)!r} names no class (_type / _class missing or "
            "malformed); the folder is damaged"
        )
        raise MetadataError(msg)
    return meta, name


def _check_version(folder: Folder, version: object) -> None:
    # A dict here is a key named "_format_version" in a version-0 file (the peer's rule).
    if not isinstance(version, dict) and (type(version) is not int or version < 0):
        raise MetadataError(
            f"{folder.child_path(META)!r}: _format_version must be a non-negative int, got "
            f"{version!r:.80}"
        )
    if type(version) is int and version > FORMAT_VERSION:
        msg = (
            f"{folder.child_path(META)!r} was written in format version {version}; this "
            f"tclass reads up to {FORMAT_VERSION}. Upgrade tclass"
        )
        raise MetadataError(msg)


def parse_json(raw: bytes, path: str) -> Any:
    """The JSON in ``raw``, after checking its nesting depth without recursion (the json
    module recurses once per level, and past the recursion limit the C stack is at risk)."""
    check_depth(raw, path)
    try:
        if raw[:1] == b"{" and raw[1:2] != b"\x00":  # UTF-8, as json.loads would detect it
            # The decoder itself: json.loads then JSONDecoder.decode cost 1-2 us a file
            # around it (encoding detection, checks). Trailing data is refused as there.
            text = raw.decode()
            document, end = _DECODER.raw_decode(text)
            if end != len(text) and text[end:].strip(_JSON_SPACE):
                extra = len(text) - len(text[end:].lstrip(_JSON_SPACE))
                raise json.JSONDecodeError("Extra data", text, extra)
            return document
        return json.loads(raw)
    except (ValueError, RecursionError) as error:  # RecursionError: a lowered recursion limit
        msg = f"{path!r} is not valid JSON ({error}); the folder is damaged or not a saved tree"
        raise MetadataError(msg) from None


def check_depth(raw: bytes, path: str) -> None:
    if json_depth_over(raw, MAX_JSON_DEPTH):
        msg = (
            f"{path!r} holds JSON nested more than {MAX_JSON_DEPTH} levels deep; tclass never "
            "writes that (deeper values need pickle): the folder is damaged or crafted"
        )
        raise MetadataError(msg)


_DECODER = json.JSONDecoder()
_JSON_SPACE = " \t\n\r"  # what JSON allows around a value

# Every byte but the ones that shape JSON's nesting: the quote and the brackets.
_NOT_STRUCTURE = bytes(code for code in range(256) if code not in b'"[]{}')
_DEPTH_CHUNK = 1 << 20
_PEEL_ROUNDS = 8  # rounds of json_depth_over's peeling before it counts exactly


def json_depth_over(raw: bytes, limit: int) -> bool:
    """Whether the [ and { of ``raw`` (outside strings) nest deeper than ``limit``.

    Linear: drop escaped backslashes and quotes (outside strings valid JSON has no
    backslash, and the parser stops at the first invalid byte) and keep only quotes and
    brackets. When no string holds a bracket, the strings go and the innermost ``[]``
    and ``{}`` pairs are removed a few rounds (up to two levels each): most files (a
    node's meta.json of many leaves is 3 levels deep) are empty then. Otherwise count,
    per bracket, the quotes before it (odd: in a string), vectorised.
    """
    if raw.count(b"[") + raw.count(b"{") <= limit:
        return False  # the usual case: JSON cannot be deeper than its opening brackets
    if b"\\" in raw:
        raw = raw.replace(b"\\\\", b"").replace(b'\\"', b"")
    structure = raw.translate(None, _NOT_STRUCTURE)
    # Two quotes side by side have no bracket between them, and dropping them leaves each
    # bracket's parity of quotes before it: strings without brackets go.
    peeled = structure.replace(b'""', b"")
    if limit >= 2 * _PEEL_ROUNDS and b'"' not in peeled:
        for _ in range(_PEEL_ROUNDS):
            inner = peeled.replace(b"[]", b"").replace(b"{}", b"")
            if not inner:
                return False  # at most 2 * _PEEL_ROUNDS levels deep
            if len(inner) == len(peeled):
                break  # unbalanced: let the exact count below decide
            peeled = inner
    kept = np.frombuffer(structure, dtype=np.uint8)
    depth = quotes = 0
    for start in range(0, kept.size, _DEPTH_CHUNK):
        chunk = kept[start : start + _DEPTH_CHUNK]
        is_quote = chunk == ord('"')
        quotes_before = np.cumsum(is_quote) - is_quote + quotes
        # "[" and "{" end in 0xB, "]" and "}" in 0xD: +1 and -1; quotes and strings: 0.
        steps = np.where(is_quote | (quotes_before & 1 == 1), 0, 12 - (chunk & 15).astype(np.int64))
        running = np.cumsum(steps) + depth
        if int(running.max()) > limit:
            return True
        depth, quotes = int(running[-1]), int(quotes_before[-1] + is_quote[-1])
    return False


# --- field checks ------------------------------------------------------------------------


def is_sizes(value: object) -> TypeGuard[list[int]]:
    if value.__class__ is not list:
        return False
    for size in value:  # a loop: cheaper than all() with a generator, per leaf
        if size.__class__ is not int or size < 0:
            return False
    return True


def checked_sizes(value: object, where: str, what: str) -> list[int]:
    if not is_sizes(value):
        msg = f"{where!r}: {what} must be a list of non-negative ints, got {value!r:.80}"
        raise MetadataError(msg)
    if not fits_int64(value):
        raise_too_large(where, f"{what} {value}, which")
    return value


def checked_stack_dims(marker: dict[str, Any], dims: int, where: str) -> tuple[int, ...] | None:
    """The stack dims tclass's marker records for a stack of values of ``dims`` batch
    dims (None when it records none).

    Raises:
        MetadataError: they are not distinct batch dims (outermost first).
    """
    value = marker.get("stack_dims")
    if value is None:
        return None
    if (
        type(value) is not list
        or not all(type(d) is int and 0 <= d < dims for d in value)
        or len(set(value)) != len(value)
    ):
        msg = f"{where!r}: stack_dims must be distinct batch dims, got {value!r:.80}"
        raise MetadataError(msg)
    return tuple(value)


def fits_int64(sizes: list[int]) -> bool:
    """Whether torch can represent a tensor of ``sizes``: the product of the sizes (each
    at least 1, as torch computes strides) stays below 2**63."""
    total = 1
    for size in sizes:
        total *= size or 1
    return total < _INT64


def raise_too_large(where: str, subject: str) -> NoReturn:
    msg = (
        f"{where!r}: {subject} is too large for torch (the product of its sizes, a 0 counted as 1, "
        "reaches 2**63); the folder is damaged or crafted"
    )
    raise MetadataError(msg)


def names_device(value: object, where: str, what: str) -> bool:
    """Whether a saved device names one (null and "None", as older writers wrote, do
    not); a value that is no device string is an error."""
    if value is None or value == "None":
        return False
    if isinstance(value, str) and (value in KNOWN_DEVICES or _parses_as_device(value)):
        return True
    msg = (
        f"{where!r}: {what} is {value!r:.80}, which is not a device (such as 'cpu', "
        "'cuda:0' or 'None')"
    )
    raise MetadataError(msg)


def _parses_as_device(text: str) -> bool:
    try:
        torch.device(text)
    except (RuntimeError, ValueError):
        return False
    if len(KNOWN_DEVICES) < 64:
        KNOWN_DEVICES.add(text)
    return True


def saved_marker(meta: dict[str, Any], where: str) -> dict[str, Any]:
    """tclass's marker in a node's meta.json (empty when there is none, or when the entry
    of that name is a key's)."""
    marker = meta.get(TCLASS_FIELD, {})
    if not isinstance(marker, dict):
        raise MetadataError(f"{where!r}: {TCLASS_FIELD} must be an object, got {marker!r:.80}")
    return marker if is_marker(TCLASS_FIELD, marker) else {}


def check_nested_batch(value: Any, batch: torch.Size, path: str) -> None:
    inner = value.batch_size
    if isinstance(value, NonTensorData):
        return
    if tuple(inner[: len(batch)]) != tuple(batch):
        msg = (
            f"{path!r} has batch size {list(inner)}, which does not start with its "
            f"parent's {list(batch)}"
        )
        raise MetadataError(msg)
