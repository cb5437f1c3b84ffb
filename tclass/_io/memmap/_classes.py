"""The class a saved node's ``meta.json`` names (the registry that resolves it lives in
``tclass._core._registry``)."""

from __future__ import annotations

import re
from typing import Any

__all__ = ["saved_class_name"]

_TYPE_STRING = re.compile(r"<class '([^']+)'>\Z")
# "<class 'module.Name'>" -> "module.Name", for the _type strings met (a bounded cache)
_TYPE_NAMES: dict[str, str] = {}
_KNOWN_TYPES = 256


def saved_class_name(meta: dict[str, Any]) -> str | None:
    """``module.QualName`` of the class a node's meta.json names, or None if it names none."""
    saved_id = meta.get("_class")
    if isinstance(saved_id, str) and ":" in saved_id:
        module, _, qualname = saved_id.partition(":")
        return f"{module}.{qualname}"
    saved_type = meta.get("_type")
    if isinstance(saved_type, str):
        name = _TYPE_NAMES.get(saved_type)  # the few a process meets, matched once each
        if name is not None:
            return name
        match = _TYPE_STRING.match(saved_type)
        if match:
            if len(_TYPE_NAMES) < _KNOWN_TYPES:
                _TYPE_NAMES[saved_type] = match.group(1)
            return match.group(1)
    return None
