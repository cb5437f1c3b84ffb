"""Python (non-tensor) values on disk: JSON when possible, pickle only when allowed.

A value is stored as JSON when it is built from ``str``, ``int``, ``float``, ``bool``,
``None``, lists, tuples (read back as lists) and dicts with string keys: the peer's rule,
so either library reads the other's values. Anything else needs ``allow_pickle=True`` on
save, and again on load, because unpickling can run code.
"""

from __future__ import annotations

import collections
import hashlib
import json
import pickle
from typing import Any

from tclass._io.memmap._format import MAX_FILE_BYTES
from tclass.errors import ArgumentError, NotSerializableError, PickleRefusedError

__all__ = [
    "PICKLE_FILES",
    "check_pickle_allowed",
    "dumps_pickle",
    "is_json_value",
    "json_types_value",
    "pickle_policy",
    "require_json",
]

# The only pickle files the format knows: a NonTensorData's / tensorclass's other fields,
# a NonTensorStack's list, and the sidecar naming builtin types in other.pickle.
PICKLE_FILES = ("other.pickle", "pickle.pkl")
_PICKLE_PROTOCOL = 4  # what the peer writes under Python 3.11
_JSON_TYPES = {"dict": dict, "OrderedDict": collections.OrderedDict, "list": list, "tuple": tuple}


def is_json_value(value: object, depth: int = 0) -> bool:
    """Whether ``value`` survives a JSON round trip (tuples come back as lists)."""
    kind = type(value)
    if kind is str or kind is bool or kind is int or value is None:
        return True
    if kind is float:
        return True  # NaN and infinities are written as the json module writes them
    if depth > 100:
        return False
    if kind is list or kind is tuple:
        return all(is_json_value(item, depth + 1) for item in value)  # type: ignore[attr-defined]
    if kind is dict:
        return all(
            type(key) is str and is_json_value(item, depth + 1)
            for key, item in value.items()  # type: ignore[attr-defined]
        )
    return False


PICKLE_FIX = (
    "Convert it, store it as a tensor, or pass allow_pickle=True to save it with pickle "
    "(loading it will need allow_pickle=True too)"
)


def require_json(value: object, where: str, allow_pickle: bool, fix: str = PICKLE_FIX) -> bool:
    """True if ``value`` goes to JSON, False if to pickle (allowed); else raise.

    Raises:
        NotSerializableError: naming ``where``, the part of the value JSON cannot hold
            (an item of a list or dict, by its index or key) and its type, and ``fix``:
            how to save it (where ``allow_pickle`` is given, for a store).
    """
    if is_json_value(value):
        return True
    if allow_pickle:
        return False
    msg = (
        f"{where}: {_not_json(value)}, which cannot be saved as JSON (JSON holds str, int, "
        f"float, bool, None, lists and dicts with str keys). {fix}"
    )
    raise NotSerializableError(msg)


def _not_json(value: object) -> str:
    """The first part of ``value`` that JSON cannot hold, described: ``its item
    ['info'][2] is of type mymodule.Obj``, ``a value of type set``, ``its item [0] has the
    key 3, of type int``."""
    path = ""
    for _ in range(101):
        exact = type(value) in (list, tuple, dict)  # as is_json_value: no subclasses
        if exact and isinstance(value, (list, tuple)):
            index = next(i for i, item in enumerate(value) if not is_json_value(item))
            path, value = f"{path}[{index}]", value[index]
        elif exact and isinstance(value, dict):
            key, item = next(
                (key, item)
                for key, item in value.items()
                if type(key) is not str or not is_json_value(item)
            )
            if type(key) is not str:
                where = f"its item {path}" if path else "it"
                key_type = _type_name(key)
                return f"{where} has the key {key!r:.40}, of type {key_type} (JSON keys are str)"
            path, value = f"{path}[{key!r:.40}]", item
        else:
            what = f"of type {_type_name(value)}"
            return f"its item {path} is {what}" if path else f"a value {what}"
    return f"its item {path[:80]}... nests more than 100 lists or dicts deep"


def _type_name(value: object) -> str:
    return f"{type(value).__module__}.{type(value).__qualname__}"


def dumps_pickle(value: object, where: str) -> bytes:
    try:
        data = pickle.dumps(value, protocol=_PICKLE_PROTOCOL)
    except Exception as error:
        msg = f"{where}: the value cannot be pickled ({error})"
        raise NotSerializableError(msg) from error
    if len(data) > MAX_FILE_BYTES:
        msg = (
            f"{where}: the pickled value takes {len(data)} bytes, and files of the format larger "
            f"than {MAX_FILE_BYTES >> 20} MiB are refused (loading reads them whole); "
            "store it as a tensor"
        )
        raise NotSerializableError(msg)
    return data


def pickle_policy(allow_pickle: object, call: str) -> bool:
    """``allow_pickle`` as given to ``call``: True, False or None (False). Anything else
    (``1``, ``np.True_``, ``"yes"``) is refused, as the peer's loads refuse it, rather
    than read as truthy: pickle runs code, so only ``True`` allows it.

    Raises:
        ArgumentError: for a value that is not a bool or None.
    """
    if allow_pickle is None or allow_pickle is False:
        return False
    if allow_pickle is True:
        return True
    msg = (
        f"{call}: allow_pickle must be a bool or None (True, False or None), got "
        f"{allow_pickle!r} (of type {_type_name(allow_pickle)}); pass allow_pickle=True to "
        "allow pickle"
    )
    raise ArgumentError(msg)


def check_pickle_allowed(path: str, allow_pickle: bool) -> None:
    if not allow_pickle:
        msg = (
            f"{path!r} holds a pickled value, and unpickling can run arbitrary code; pass "
            "allow_pickle=True to load it if you trust where the folder comes from"
        )
        raise PickleRefusedError(msg)


def json_types_value(sidecar: bytes, pickled: bytes, path: str) -> dict[str, Any] | None:
    """The fields of ``other.pickle`` from its ``json_types.json`` sidecar, without
    unpickling, when the sidecar matches the file and names only builtin types."""
    try:
        record = json.loads(sidecar)
    except ValueError:
        return None
    if (
        not isinstance(record, dict)
        or record.get("pickle_sha256") != hashlib.sha256(pickled).hexdigest()
    ):
        return None
    types = record.get("types")
    if not isinstance(types, dict) or not all(name in _JSON_TYPES for name in types.values()):
        return None
    return {field: _JSON_TYPES[name] for field, name in types.items()}
