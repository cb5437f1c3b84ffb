"""The per-operation cases of the engine benchmark.

Each case is one statement written three ways: with tclass (``t``), with the peer
library (``p``, ``tensordict``, when installed) and by hand on plain dicts of tensors
(``d``: the baseline a container library should approach). Statements are timed
directly, not through a wrapper function, so a call's cost is not padded by ~50 ns of
lambda overhead on every side. ``run.py`` times them side by side.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

import tclass

BATCH = 100


@dataclass(frozen=True)
class Case:
    name: str
    tclass: str
    peer: str | None
    baseline: str | None
    # Whether the tensor work dominates, so the case is also held to 2x the baseline.
    tensor_bound: bool = False
    # Whether it writes or reads files: each sample then starts with the writeback
    # settled (keyword-only: subclasses add positional fields).
    io: bool = field(default=False, kw_only=True)


def _leaves() -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    return {
        "obs": torch.randn(BATCH, 3, 4, generator=generator),
        "action": torch.randn(BATCH, 2, generator=generator),
        "reward": torch.randn(BATCH, generator=generator),
    }


def _containers(cls: Any, leaves: dict[str, torch.Tensor]) -> dict[str, Any]:
    """The objects one implementation's statements use (``x1``, ``x2``, ``small``, ...)."""
    x1 = cls(dict(leaves), batch_size=[BATCH])
    return {
        "x1": x1,
        "x2": cls({k: v.clone() for k, v in leaves.items()}, batch_size=[BATCH]),
        "small": x1[:10].clone(),
        "many": [x1.clone() for _ in range(100)],
        "on_cpu": cls(dict(leaves), batch_size=[BATCH], device="cpu"),
        # Equal copies that no other case writes into, so that `==` compares equal data.
        "eq1": cls({k: v.clone() for k, v in leaves.items()}, batch_size=[BATCH]),
        "eq2": cls({k: v.clone() for k, v in leaves.items()}, batch_size=[BATCH]),
    }


def _consolidated_files(ns: dict[str, Any], peer: ModuleType | None) -> None:
    """A collection of 20 leaves (and a value) per library, as ``@cons``, and its
    consolidated file ``@file`` (written here: ``from_consolidated`` reads it); the
    baseline's flat leaves ``dcons`` and a file of their bytes ``dfile``."""
    generator = torch.Generator().manual_seed(2)
    leaves = {f"k{i}": torch.randn(BATCH, 4, generator=generator) for i in range(10)}
    nested = {f"n{i}": torch.randn(BATCH, 2, generator=generator) for i in range(10)}
    folder = tempfile.mkdtemp(prefix="tclass-bench-")
    atexit.register(shutil.rmtree, folder, ignore_errors=True)  # removed at exit
    prefix = str(Path(folder) / "cons")
    for name, lib in (("t", tclass), ("p", peer)):
        if lib is not None:
            cons = lib.TensorDict({**leaves, "nested": dict(nested)}, batch_size=[BATCH])
            cons["label"] = lib.NonTensorData("label", batch_size=[BATCH])
            ns[f"{name}cons"], ns[f"{name}file"] = cons, f"{prefix}-{name}.bin"
            cons.consolidate(filename=ns[f"{name}file"])
    ns["dcons"] = [*leaves.values(), *nested.values()]
    ns["dfile"] = f"{prefix}-d.bin"
    flat = torch.cat([v.reshape(-1).view(torch.uint8) for v in ns["dcons"]])
    flat.numpy().tofile(ns["dfile"])
    ns["dsize"], ns["dsizes"] = flat.numel(), [v.numel() * 4 for v in ns["dcons"]]


def namespace(peer: ModuleType | None) -> dict[str, Any]:
    """Globals for every statement: tclass objects as ``t*``, peer ``p*``, dicts ``d*``."""
    leaves = _leaves()
    ns: dict[str, Any] = {"torch": torch, "tclass": tclass, "peer": peer, "BATCH": BATCH}
    ns.update(a=leaves["obs"], b=leaves["action"], c=leaves["reward"])
    ns["mask"] = torch.arange(BATCH) % 3 == 0
    ns["index"] = torch.randint(0, BATCH, (10,), generator=torch.Generator().manual_seed(1))
    ns["x"] = torch.randn(10)
    ns["plus_one"] = lambda v: v + 1
    _consolidated_files(ns, peer)
    for prefix, cls in (("t", tclass.TensorDict), ("p", peer.TensorDict if peer else None)):
        if cls is not None:
            ns.update({prefix + name: obj for name, obj in _containers(cls, leaves).items()})
    d1 = dict(leaves)
    ns.update(
        dx1=d1,
        dx2={k: v.clone() for k, v in leaves.items()},
        dsmall={k: v[:10].clone() for k, v in d1.items()},
        dmany=[{k: v.clone() for k, v in d1.items()} for _ in range(100)],
        deq1={k: v.clone() for k, v in leaves.items()},
        deq2={k: v.clone() for k, v in leaves.items()},
    )
    return ns


def _both(stmt: str) -> tuple[str, str]:
    """The tclass and peer spellings of a statement written with ``X`` for the module."""
    return stmt.replace("X.", "tclass.").replace("@", "t"), stmt.replace("X.", "peer.").replace(
        "@", "p"
    )


def engine_cases() -> list[Case]:
    """Every case of the foundation issue's table, in order."""
    rows: list[tuple[str, str, str, bool]] = [
        (
            "init (3 leaves)",
            "X.TensorDict({'obs': a, 'action': b, 'reward': c}, batch_size=[BATCH])",
            "{'obs': a, 'action': b, 'reward': c}",
            False,
        ),
        ("get", "@x1['obs']", "dx1['obs']", False),
        ("set", "@x1['obs'] = a", "dx1['obs'] = a", False),
        ("td[0]", "@x1[0]", "{k: v[0] for k, v in dx1.items()}", True),
        ("td[:10]", "@x1[:10]", "{k: v[:10] for k, v in dx1.items()}", True),
        ("td[mask]", "@x1[mask]", "{k: v[mask] for k, v in dx1.items()}", True),
        (
            "td[idx] = other",
            "@x1[index] = @small",
            "for k, v in dx1.items(): v[index] = dsmall[k]",
            True,
        ),
        (
            "torch.stack of 100",
            "torch.stack(@many)",
            "{k: torch.stack([d[k] for d in dmany]) for k in dmany[0]}",
            True,
        ),
        (
            "torch.cat of 10",
            "torch.cat(@many[:10])",
            "{k: torch.cat([d[k] for d in dmany[:10]]) for k in dmany[0]}",
            True,
        ),
        (
            'to("cpu") (no-op)',
            "@on_cpu.to('cpu')",
            "{k: v.to('cpu') for k, v in dx1.items()}",
            False,
        ),
        ("clone", "@x1.clone()", "{k: v.clone() for k, v in dx1.items()}", True),
        ("apply(x + 1)", "@x1.apply(plus_one)", "{k: plus_one(v) for k, v in dx1.items()}", True),
        (
            "(a == b).all()",
            "(@eq1 == @eq2).all()",
            "all(bool((deq1[k] == deq2[k]).all()) for k in deq1)",
            True,
        ),
        (
            "MemoryMappedTensor.empty",
            "X.MemoryMappedTensor.empty((10,))",
            "torch.empty((10,)).share_memory_()",
            False,
        ),
        (
            "MemoryMappedTensor.from_tensor",
            "X.MemoryMappedTensor.from_tensor(x)",
            "x.clone().share_memory_()",
            False,
        ),
        (
            "consolidate(filename=) 20 leaves",
            "_ = @cons.consolidate(filename=@file)",
            "_ = torch.cat([v.reshape(-1).view(torch.uint8) for v in dcons]).numpy().tofile(dfile)",
            False,
        ),
        (
            "from_consolidated(file) 20 leaves",
            "_ = X.TensorDict.from_consolidated(@file)",
            "_ = torch.from_file(dfile, size=dsize, dtype=torch.uint8).split(dsizes)",
            False,
        ),
    ]
    cases = []
    for name, stmt, baseline, tensor_bound in rows:
        ours, theirs = _both(stmt)
        cases.append(Case(name, ours, theirs, baseline, tensor_bound, io="consolidate" in name))
    return cases
