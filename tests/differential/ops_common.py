"""Pieces shared by the op generators: dims, indices, keys, values, and ``step``."""

from __future__ import annotations

from .chooser import Chooser
from .engine import Step
from .info import Info, Key
from .world import tensor_src

BAD = 6  # percent of arguments drawn invalid on purpose (the errors are compared too)


def step(
    src: str,
    op: str,
    family: str,
    mode: str = "let",
    needs: tuple[str, ...] = (),
    tags: tuple[str, ...] = (),
) -> Step:
    return Step(src, op, family, mode, needs, frozenset(tags))


def seed(c: Chooser) -> int:
    return c.integer(0, 999)


def dim(c: Chooser, ndim: int, *, inclusive: bool = False, negative: bool = True) -> int:
    """A dim of a collection of ``ndim`` batch dims (``inclusive``: one more, as for
    ``unsqueeze``); now and then one out of range."""
    top = ndim + (1 if inclusive else 0)
    if top == 0 or c.chance(BAD):
        return c.choice((top, -top - 1, top + 1))
    low = -top if negative else 0
    return c.integer(low, top - 1)


def dims(c: Chooser, ndim: int) -> tuple[int, ...]:
    """Distinct dims (a permutation prefix), for ``sum(dim=(...))`` and friends."""
    if ndim == 0:
        return ()
    order = list(range(ndim))
    chosen = [order.pop(c.integer(0, len(order) - 1)) for _ in range(c.integer(1, ndim))]
    return tuple(d - ndim if c.chance(30) else d for d in chosen)


def _index_item(c: Chooser, batch: tuple[int, ...], at: int) -> tuple[str, int]:
    """One entry of an index at batch dim ``at``, and how many batch dims it consumes."""
    n = batch[at] if at < len(batch) else 1
    pick = c.integer(0, 19)
    if pick < 6:
        if n == 0 or c.chance(BAD):
            return str(c.choice((n, -n - 1))), 1
        return str(c.integer(-n, n - 1)), 1
    if pick < 11:
        start = c.choice((None, c.integer(-n - 1, n + 1)))
        stop = c.choice((None, c.integer(-n - 1, n + 1)))
        stride = c.choice((None, None, 1, 2, 3))
        parts = ["" if start is None else str(start), "" if stop is None else str(stop)]
        return ":".join(parts + ([] if stride is None else [str(stride)])), 1
    if pick < 13:
        return "None", 0
    if pick < 15:
        values = [c.integer(-n, n - 1) if n else 0 for _ in range(c.integer(0, 3))]
        return (f"torch.tensor({values}, dtype=torch.long)" if c.chance(50) else str(values)), 1
    if pick < 18 and at < len(batch):
        span = c.integer(1, len(batch) - at)
        shape = list(batch[at : at + span])
        return tensor_src(tuple(shape), "bool", seed(c)), span
    return "...", -1


def index(c: Chooser, batch: tuple[int, ...]) -> tuple[str, bool]:
    """An index for a collection of batch size ``batch`` (source) and whether it has more
    entries than batch dims (tclass refuses those; the peer indexes the leaves)."""
    count = c.choice((1, 1, 1, 2, 2, 3))
    items: list[str] = []
    at = 0
    ellipsis = False
    for _ in range(count):
        text, used = _index_item(c, batch, at)
        if used == -1:
            if ellipsis:
                continue
            ellipsis = True
            at = max(at, len(batch) - (count - len(items) - 1))
        else:
            at += used
        items.append(text)
    if len(items) == 1 and not c.chance(15):
        src = items[0]
    else:
        src = ", ".join(items) + ("," if len(items) == 1 else "")
    return src, at > len(batch)


def key(c: Chooser, info: Info, *, leaf: bool = False, missing: int = BAD) -> str:
    """Source of an existing key (a string or a nested tuple); sometimes a missing one."""
    pool: list[Key] = [path for path, _, _ in info.leaves]
    if not leaf:
        pool += info.python + info.nodes
    if not pool or c.chance(missing):
        return c.choice(('"zz"', '("n", "zz")', '("zz", "a")'))
    path = c.choice(pool)
    if len(path) == 1 and c.chance(80):
        return repr(path[0])
    return repr(path)


def top_key(c: Chooser, info: Info) -> str:
    if not info.top or c.chance(BAD):
        return '"zz"'
    return repr(c.choice(info.top))


def keys_arg(c: Chooser, info: Info) -> list[str]:
    """A few distinct keys (sources) for select/exclude."""
    chosen: list[str] = []
    for _ in range(c.integer(0, 3)):
        k = key(c, info, missing=10)
        if k not in chosen:
            chosen.append(k)
    return chosen


def leaf_value(c: Chooser, shape: tuple[int, ...], dtype: str = "float32") -> str:
    return tensor_src(shape, dtype, seed(c))


def dtype_name(dtype: object) -> str:
    return str(dtype).removeprefix("torch.")
