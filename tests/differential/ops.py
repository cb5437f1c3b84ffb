"""The op families, by name: the generators each family draws its steps from, and the
world a family's programs start from (``world.world`` unless the family has its own)."""

from __future__ import annotations

from .engine import Generator, World
from .ops_entries import ENTRIES, ENTRY_FEATURES, ENTRY_METHODS, INDEX
from .ops_extra import EXTRA
from .ops_math import MATH, MATH_METHODS
from .ops_records import RECORD_FEATURES, RECORDS, records_world
from .ops_shape import COMBINE, SHAPE, SHAPE_FEATURES, SHAPE_METHODS
from .world import world

FAMILIES: dict[str, list[tuple[str, int, Generator]]] = {
    "index": INDEX,
    "entries": ENTRIES,
    "shape": SHAPE,
    "combine": COMBINE,
    "math": MATH,
    "records": RECORDS,
    # Methods the families above never called (fz26d, issue 27), in a family of their own:
    # added to those, they would change the draws of the programs ``DECIDED`` pins.
    "methods": ENTRY_METHODS + MATH_METHODS + SHAPE_METHODS,
    # The rest (fz27e, issue 27): autograd, constructors from other objects, tables, the
    # leaves joined, record habits, value classes, modules; a family of its own again,
    # so that the programs ``methods``' OPEN lines and pins name keep their draws.
    "features": ENTRY_FEATURES + SHAPE_FEATURES + RECORD_FEATURES,
    # Module functions users call beside the methods (fz31b, issue 27): merges, dense
    # stacks, builders, losses, file round trips; opt-in (``OPT_IN``).
    "extra": EXTRA,
}
# Families run only where named: the runner's default ``--families`` and the short pytest
# run leave them out, so that the programs numbered over the default families and the
# run's time stay as they were.
OPT_IN = ("extra",)
DEFAULT_FAMILIES = [name for name in FAMILIES if name not in OPT_IN]
# Families with a world of their own; a run of several families starts from ``world``.
WORLDS: dict[str, World] = {"records": records_world}


def generators(names: list[str]) -> list[tuple[str, int, Generator]]:
    unknown = [name for name in names if name not in FAMILIES]
    if unknown:
        raise ValueError(f"unknown families {unknown}; the families are {sorted(FAMILIES)}")
    return [entry for name in names for entry in FAMILIES[name]]


def world_of(names: list[str]) -> World:
    """The world programs of ``names`` start from: a family's own when it runs alone."""
    return WORLDS.get(names[0], world) if len(names) == 1 else world
