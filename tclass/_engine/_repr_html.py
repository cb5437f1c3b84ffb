"""The display of notebooks (``_repr_html_``), in the peer's form: the entries of the
compact repr in nested ``<details>`` blocks, with inherited colors so that it reads in
light and dark themes, at most 200 entries. ``set_printoptions(html=False)`` turns it off
(the notebook then shows the text repr); with ``compact=False``, and for the classes that
keep their own repr (``TensorDictParams``, Python values), it is the text repr in a
``<pre>`` block.
"""

from __future__ import annotations

import html
from typing import Any

from tclass._base._provided import ENGINE
from tclass._base.implemented._collection import TensorCollection
from tclass._core._printoptions import PRINT_OPTIONS
from tclass._core._records import storage_of
from tclass._engine._repr import COMPACT_REPRS, Field, entry_tree, header

__all__ = ["html_repr"]

_MAX_ENTRIES = 200
_LIST = "list-style:none;margin:0;padding-left:1.5em"
_DIM = "opacity:0.7"


def html_repr(collection: TensorCollection) -> str | None:
    """The notebook display of ``collection``; None when the print options turn it off."""
    if not PRINT_OPTIONS["html"]:
        return None
    if PRINT_OPTIONS["compact"] and type(collection).__repr__ in COMPACT_REPRS:
        try:
            return _details(collection)
        except Exception:  # the display never fails: the text repr instead
            pass
    return f"<pre>{html.escape(repr(collection))}</pre>"


def _details(collection: TensorCollection) -> str:
    parts = header(collection)
    names = _names(collection) if PRINT_OPTIONS["show_batch_size"] else None
    if names is not None and any(name is not None for name in names):
        at = 1 if parts and parts[0].startswith("batch_size=") else 0
        parts.insert(at, f"names=[{','.join(map(str, names))}]")
    fields, exclusive = entry_tree(collection)
    budget = [_MAX_ENTRIES]
    out = (
        '<div style="font-family:monospace;line-height:1.4">'
        f"<details open><summary><b>{html.escape(type(collection).__name__)}</b> "
        f'<span style="{_DIM}">{html.escape(", ".join(parts))}</span>'
        f"</summary>{_entries(fields, budget)}"
    )
    if exclusive:
        out += (
            '<details open style="padding-left:1.5em"><summary>'
            f'<i style="{_DIM}">exclusive_fields</i></summary>'
            f"{_entries(exclusive, budget)}</details>"
        )
    return out + "</details></div>"


def _names(collection: TensorCollection) -> list[Any] | None:
    names = storage_of(collection).names
    return None if names is None else list(names)


def _entries(fields: list[Field], budget: list[int]) -> str:
    items = []
    for position, field in enumerate(fields):
        if budget[0] <= 0:
            items.append(f"<li>... and {len(fields) - position} more</li>")
            break
        budget[0] -= 1
        shown = html.escape(field.key)
        if field.nested is None:
            items.append(
                f'<li>{shown}: <span style="{_DIM}">{html.escape(field.shown)}</span></li>'
            )
            continue
        label = html.escape(f"{field.prefix} " if field.prefix else "")
        label += f"{len(field.nested)} {'entry' if len(field.nested) == 1 else 'entries'}"
        items.append(
            f'<li><details open><summary>{shown}: <span style="{_DIM}">{label}'
            f"</span></summary>{_entries(field.nested, budget)}</details></li>"
        )
    return f'<ul style="{_LIST}">' + "".join(items) + "</ul>"


ENGINE.html_repr = html_repr
