"""The op families, by name: the generators each family draws its steps from."""

from __future__ import annotations

from .engine import Generator
from .ops_entries import ENTRIES, INDEX
from .ops_math import MATH
from .ops_shape import COMBINE, SHAPE

FAMILIES: dict[str, list[tuple[str, int, Generator]]] = {
    "index": INDEX,
    "entries": ENTRIES,
    "shape": SHAPE,
    "combine": COMBINE,
    "math": MATH,
}


def generators(names: list[str]) -> list[tuple[str, int, Generator]]:
    unknown = [name for name in names if name not in FAMILIES]
    if unknown:
        raise ValueError(f"unknown families {unknown}; the families are {sorted(FAMILIES)}")
    return [entry for name in names for entry in FAMILIES[name]]
