"""A seeded fuzzer: random chains of batch operations (indexing, reshape, permute,
unsqueeze/squeeze, expand, flatten, stack, cat, split, clone, masked and indexed writes)
applied to a nested TensorDict and, by hand, to its leaves; every step must agree.
"""

import random

import torch

from compat.lib import TensorDict

FEATURES = {"a": (2,), ("n", "b"): (), ("n", "m", "c"): (3, 1)}


def make(batch: tuple[int, ...], gen: torch.Generator) -> tuple[TensorDict, dict]:
    leaves = {k: torch.randn(*batch, *f, generator=gen) for k, f in FEATURES.items()}
    td = TensorDict({}, batch_size=batch)
    for key, value in leaves.items():
        td.set(key, value.clone())
    return td, leaves


def check(td: TensorDict, leaves: dict, what: str) -> None:
    for key, value in leaves.items():
        got = td.get(key)
        assert got.shape == value.shape, (what, key, got.shape, value.shape)
        assert torch.equal(got, value), (what, key)
    some = next(iter(leaves.values()))
    assert td.batch_size == some.shape[: td.batch_dims], what


def random_index(rng: random.Random, batch: torch.Size, gen: torch.Generator):
    dim0 = batch[0]
    kind = rng.choice(["int", "slice", "tensor", "mask", "tuple", "ellipsis"])
    if kind == "int":
        return rng.randrange(-dim0, dim0)
    if kind == "slice":
        start = rng.randrange(0, dim0)
        return slice(start, rng.randrange(start, dim0 + 1), rng.choice([1, 2]))
    if kind == "tensor":
        return torch.randint(0, dim0, (rng.randrange(1, 4),), generator=gen)
    if kind == "mask":
        return torch.rand(batch[:1], generator=gen) > 0.5
    if kind == "tuple" and len(batch) > 1:
        return (slice(None), rng.randrange(0, batch[1]))
    return (Ellipsis, rng.randrange(0, batch[-1])) if len(batch) > 1 else slice(None)


def leaf_index(index, batch_dims: int, feature_dims: int):
    """The same index on a leaf: an ellipsis only spans the batch dims."""
    if isinstance(index, tuple) and index and index[0] is Ellipsis:
        return (slice(None),) * (batch_dims - len(index) + 1) + index[1:]
    return index


def step(rng: random.Random, gen: torch.Generator, td: TensorDict, leaves: dict):
    batch = td.batch_size
    nd = len(batch)
    op = rng.choice(
        [
            "index",
            "reshape",
            "permute",
            "unsqueeze",
            "squeeze",
            "expand",
            "flatten",
            "stack",
            "cat",
            "split",
            "clone",
            "setitem",
            "unbind",
        ]
    )
    feats = {k: len(f) for k, f in FEATURES.items()}
    if op == "index" and nd and batch[0] > 0:
        idx = random_index(rng, batch, gen)
        out = td[idx]
        return op, out, {k: v[leaf_index(idx, nd, feats[k])] for k, v in leaves.items()}
    if op == "reshape" and nd:
        new = (-1,) if rng.random() < 0.5 else (batch.numel(),)
        return op, td.reshape(*new), {k: v.reshape(*new, *FEATURES[k]) for k, v in leaves.items()}
    if op == "permute" and nd > 1:
        perm = list(range(nd))
        rng.shuffle(perm)
        return (
            op,
            td.permute(*perm),
            {k: v.permute(*perm, *range(nd, nd + feats[k])) for k, v in leaves.items()},
        )
    if op == "unsqueeze" and nd < 4:
        d = rng.randrange(-nd - 1, nd + 1)
        pos = d if d >= 0 else nd + 1 + d
        return op, td.unsqueeze(d), {k: v.unsqueeze(pos) for k, v in leaves.items()}
    if op == "squeeze" and 1 in batch:
        d = list(batch).index(1)
        return op, td.squeeze(d), {k: v.squeeze(d) for k, v in leaves.items()}
    if op == "expand" and nd < 4 and batch.numel() < 50:
        n = rng.randrange(1, 4)
        return op, td.expand(n, *batch), {k: v.expand(n, *v.shape) for k, v in leaves.items()}
    if op == "flatten" and nd > 1:
        return op, td.flatten(0, 1), {k: v.flatten(0, 1) for k, v in leaves.items()}
    if op == "stack" and nd < 4:
        d = rng.randrange(0, nd + 1)
        return (
            op,
            torch.stack([td, td.clone()], d),
            {k: torch.stack([v, v], d) for k, v in leaves.items()},
        )
    if op == "cat" and nd:
        d = rng.randrange(0, nd)
        return op, torch.cat([td, td], d), {k: torch.cat([v, v], d) for k, v in leaves.items()}
    if op == "split" and nd and batch[0] > 1:
        parts = td.split(1, 0)
        i = rng.randrange(len(parts))
        return op, parts[i], {k: v.split(1, 0)[i] for k, v in leaves.items()}
    if op == "unbind" and nd and batch[0] > 0:
        i = rng.randrange(batch[0])
        return op, td.unbind(0)[i], {k: v.unbind(0)[i] for k, v in leaves.items()}
    if op == "setitem" and nd and batch[0] > 0:
        td = td.clone()
        leaves = {k: v.clone() for k, v in leaves.items()}
        idx = rng.randrange(batch[0])
        td[idx] = td[idx].apply(lambda x: x * 0 + 7)
        for v in leaves.values():
            v[idx] = 7
        return op, td, leaves
    return "clone", td.clone(), {k: v.clone() for k, v in leaves.items()}


def main() -> None:
    rng = random.Random(1234)
    gen = torch.Generator().manual_seed(1234)
    for trial in range(60):
        batch = tuple(rng.randrange(1, 4) for _ in range(rng.randrange(1, 3)))
        td, leaves = make(batch, gen)
        history = [f"batch {batch}"]
        for _ in range(6):
            op, td, leaves = step(rng, gen, td, leaves)
            history.append(op)
            check(td, leaves, f"trial {trial}: {' -> '.join(history)}")
            if td.batch_size.numel() > 200 or td.batch_dims == 0:
                break
