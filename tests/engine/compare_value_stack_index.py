"""Random comparison with the peer of stacks of Python values under indices (a tool, not
a test): lazy stacks of lazy stacks (1-3 levels, stack dims 0/1, ragged or not) of
TensorDicts holding a ``str`` or a ``NonTensorStack``, indexed by random indices (ints,
slices, lists, masks, 1-d/2-d/0-d long tensors, ``None``, ``...``). For each it compares
the nesting of ``get("s")`` (``("stack", dim, shape, members)`` / ``("value", shape,
data)``), ``tolist()``, batch size, ``squeeze()`` and ``unbind(0)``; where the peer
raises, only that tclass raises too (a builtin the peer's error derives from).

    PYTHONPATH=$PWD python -m tests.engine.compare_value_stack_index SEED N [SHOW]

``EMPTY=1``/``0`` keeps the selections of no element / of some; ``RAGGED=1``/``0`` the
ragged stacks / the others. Prints ``differ D of T`` and the keys that differ."""

from __future__ import annotations

import os
import random
import sys
import warnings
from types import ModuleType
from typing import Any

import torch

import tclass

Spec = tuple[int, list[int], list[int], list[int], bool, bool]


def tree(node: Any) -> Any:
    name = type(node).__name__
    if name == "NonTensorStack":
        return ("stack", node.stack_dim, list(node.batch_size), [tree(m) for m in node.tensordicts])
    if name == "NonTensorData":
        return ("value", list(node.batch_size), node.data)
    return (name,)


def plain(value: Any) -> Any:
    return [plain(item) for item in value] if isinstance(value, list) else value


def spec(rng: random.Random) -> Spec:
    levels = rng.randint(1, 3)
    base = [rng.randint(1, 3) for _ in range(rng.randint(1, 2))]
    dims = [rng.randint(0, 1) for _ in range(levels)]
    sizes = [rng.randint(1, 3) for _ in range(levels)]
    return levels, base, dims, sizes, rng.random() < 0.25, rng.random() < 0.3


def build(lib: ModuleType, sp: Spec) -> Any:
    """``sp``: levels, the leaves' batch size, the stack dim and size of each level,
    ragged (the leaves' last dim grows member by member), held (each leaf holds a
    ``NonTensorStack`` along its dim 0, else a ``str``)."""
    levels, base, dims, sizes, ragged, held = sp
    counter = [0]

    def leaf(j: int) -> Any:
        shape = list(base)
        if ragged:
            shape[-1] = base[-1] + j
        n = counter[0]
        counter[0] += 1
        value: Any = f"v{n}"
        if held:
            value = lib.NonTensorStack(
                *[lib.NonTensorData(f"v{n}.{k}", batch_size=shape[1:]) for k in range(shape[0])]
            )
        return lib.TensorDict({"s": value, "a": torch.zeros(shape)}, shape)

    def node(level: int, j: int) -> Any:
        if level == levels:
            return leaf(j)
        return lib.lazy_stack([node(level + 1, k) for k in range(sizes[level])], dims[level])

    return node(0, 0)


def rand_item(rng: random.Random, size: int) -> Any:
    r = rng.random()
    if r < 0.18:
        return rng.randrange(-size, size)
    if r < 0.33:
        start, stop = rng.choice([None, 0, 1, size]), rng.choice([None, -1, size, 1])
        return slice(start, stop, rng.choice([None, None, 2]))
    if r < 0.45:
        return [rng.randrange(size) for _ in range(rng.randint(0, 3))]
    if r < 0.6:
        return torch.tensor([rng.random() < 0.5 for _ in range(size)])
    if r < 0.72:
        picked = [rng.randrange(size) for _ in range(rng.randint(0, 3))]
        return torch.tensor(picked, dtype=torch.long)
    if r < 0.8:
        n = rng.randint(1, 2)
        rows = [[rng.randrange(size) for _ in range(n)] for _ in range(rng.randint(1, 2))]
        return torch.tensor(rows)
    if r < 0.86:
        return torch.tensor(rng.randrange(size))
    return slice(None)


def rand_index(rng: random.Random, shape: list[int]) -> Any:
    items: list[Any] = []
    d, ellipsis = 0, False
    while d < len(shape):
        r = rng.random()
        if r < 0.12:
            items.append(None)
            continue
        if r < 0.2 and not ellipsis:
            ellipsis = True
            items.append(Ellipsis)
            d = max(d, len(shape) - rng.randint(0, 2))
            continue
        if r < 0.25 and d + 1 < len(shape):
            rows = [[rng.random() < 0.6 for _ in range(shape[d + 1])] for _ in range(shape[d])]
            items.append(torch.tensor(rows))
            d += 2
            continue
        if r < 0.3 and items:
            break
        items.append(rand_item(rng, shape[d]))
        d += 1
    if not items:
        items = [rand_item(rng, shape[0])]
    return items[0] if len(items) == 1 and rng.random() < 0.3 else tuple(items)


def _builtins(error: Exception) -> list[str]:
    return [c.__name__ for c in type(error).__mro__ if c.__module__ == "builtins"]


def run(lib: ModuleType, sp: Spec, index: Any) -> dict[str, Any]:
    try:
        out = build(lib, sp)[index]
    except Exception as error:  # noqa: BLE001 (compared, not hidden)
        return {"index": ("err", _builtins(error))}
    found: dict[str, Any] = {"bs": list(out.batch_size)}
    node = out.get("s")
    found["kind"], found["tree"] = type(node).__name__, tree(node)
    for key, read in (
        ("list", lambda: plain(node.tolist()) if hasattr(node, "tolist") else node.data),
        ("sq", lambda: tree(out.squeeze().get("s"))),
        ("unb", lambda: [tree(u.get("s")) for u in out.unbind(0)] if out.batch_dims else None),
    ):
        try:
            found[key] = read()
        except Exception as error:  # noqa: BLE001
            found[key] = ("err", _builtins(error)[0])
    return found


def compare(sp: Spec, index: Any, peer: ModuleType) -> tuple[dict[str, Any], dict[str, Any]]:
    ours, theirs = run(tclass, sp, index), run(peer, sp, index)
    if "index" in theirs:  # the peer refuses: tclass should refuse with that builtin too
        kind = theirs["index"][1][0]
        raised = ours.get("index", ("ran", []))[1]
        theirs = {"index": kind}
        ours = {"index": kind if kind in raised else ("ran" if not raised else raised[0])}
    if theirs.get("sq") == ("err", "TypeError"):  # the peer's squeeze fails inside
        ours.pop("sq", None)
        theirs.pop("sq", None)
    return ours, theirs


def main(seed: int, count: int, show: int) -> None:
    warnings.filterwarnings("ignore")
    import tensordict as peer

    rng = random.Random(seed)
    empty_only, ragged_only = os.environ.get("EMPTY"), os.environ.get("RAGGED")
    differ = total = 0
    keys: dict[str, int] = {}
    for number in range(count):
        sp = spec(rng)
        shape = [max(size, 1) for size in build(tclass, sp).batch_size]
        index = rand_index(rng, shape)
        if ragged_only is not None and sp[4] != (ragged_only == "1"):
            continue
        ours, theirs = compare(sp, index, peer)
        empty = 0 in theirs.get("bs", [1])
        if empty_only is not None and empty != (empty_only == "1"):
            continue
        total += 1
        if ours == theirs:
            continue
        differ += 1
        changed = sorted(k for k in set(ours) | set(theirs) if ours.get(k) != theirs.get(k))
        for key in changed:
            keys[key] = keys.get(key, 0) + 1
        if differ <= show:
            print(f"#{number} spec {sp} index {index}")
            for key in changed:
                print(f"   {key}\n     tclass: {ours.get(key)}\n     peer:   {theirs.get(key)}")
    print("differ", differ, "of", total, keys)


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]) if len(sys.argv) > 3 else 5)
