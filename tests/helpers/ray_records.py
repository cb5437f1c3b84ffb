"""Records, probes and the local cluster shared by the Ray tests (tests/interop/test_ray*.py,
tests/ray/) and imported by their Ray workers: where a collection's tensors live in the
process that reads them."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import pytest
import torch

import tclass
from tclass import Spec, TensorClass, tensorclass

MIB = 1 << 20


@tensorclass
class Meta:
    seed: torch.Tensor
    source: str


class Transition(TensorClass):
    obs: torch.Tensor
    reward: torch.Tensor
    meta: Meta
    env: str = "pong"


class Step(TensorClass):
    """A record with a schema: shapes, dtypes (one bfloat16) and value constraints."""

    obs: Annotated[torch.Tensor, Spec("4", torch.float32)]
    action: Annotated[torch.Tensor, Spec("", torch.int64, ge=0, lt=6)]
    weight: Annotated[torch.Tensor, Spec("", torch.bfloat16)]
    meta: Meta
    tag: str = "x"


def step(rows: int, offset: int = 0) -> Step:
    """A Step of ``rows`` rows; row ``i`` has ``obs`` ``offset + i`` and a per-row tag."""
    index = torch.arange(offset, offset + rows)
    return Step(
        obs=index[:, None].float().expand(rows, 4).clone(),
        action=index % 6,
        weight=(index.float() / 4).to(torch.bfloat16),
        meta=Meta(seed=index, source="sim", batch_size=[rows]),
        tag=tclass.NonTensorStack.from_list([f"t{i}" for i in index.tolist()]),
        batch_size=[rows],
    )


def transition(rows: int, leaf_bytes: int = 4096, offset: float = 0.0) -> Transition:
    """A record of ``rows`` rows whose ``obs`` takes about ``leaf_bytes``."""
    width = leaf_bytes // 4 // rows or 1
    obs = torch.arange(rows * width, dtype=torch.float32).reshape(rows, width) + offset
    meta = Meta(seed=torch.arange(rows), source="sim", batch_size=[rows])
    return Transition(obs=obs, reward=torch.ones(rows) * offset, meta=meta, batch_size=[rows])


def mapping_of(address: int) -> tuple[str, str]:
    """The permissions and path of the mapping of this process that holds ``address``."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split()
            low, high = (int(part, 16) for part in fields[0].split("-"))
            if low <= address < high:
                return fields[1], fields[5] if len(fields) > 5 else ""
    raise AssertionError(f"no mapping holds {address:#x}")


def private_rss() -> int:
    """This process's resident private memory (anonymous pages), in bytes."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no RssAnon in /proc/self/status")


def where(node: Any) -> dict[str, Any]:
    """Where the tensors of ``node`` live, as this process sees them: their classes,
    whether every one lies in a shared mapping, and the mapped files."""
    leaves = [t for t in node.values(True, True) if isinstance(t, torch.Tensor)]
    mappings = {mapping_of(t.data_ptr()) for t in leaves if t.numel()}
    return {
        "types": {type(t).__name__ for t in leaves},
        "shared": all(perms.endswith("s") for perms, _ in mappings),
        "paths": {path for _, path in mappings},
        "pid": os.getpid(),
    }


def worker_pythonpath(test_file: str) -> str:
    """PYTHONPATH for Ray's workers: the test's folder (its remote functions), these
    helpers, and the tclass under test (they inherit the environment of the processes
    ray.init starts)."""
    paths = [Path(test_file).parent, Path(__file__).parent, Path(tclass.__file__).parents[1]]
    return os.pathsep.join([*map(str, paths), os.environ.get("PYTHONPATH", "")])


@contextmanager
def local_cluster(test_file: str) -> Iterator[None]:
    """A local Ray cluster of its own (2 CPUs, 512 MiB object store) for one test module,
    whose workers import the module's remote functions and these helpers; shut down on
    exit. Call it only where Ray is installed (the tests ``importorskip`` it first)."""
    import ray  # not at the top: tests without Ray import these records too

    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTHONPATH", worker_pythonpath(test_file))
        ray.init(
            address="local",  # a cluster of its own, never one another process started
            num_cpus=2,
            include_dashboard=False,
            object_store_memory=512 * MIB,
            log_to_driver=False,
        )
    try:
        yield
    finally:
        ray.shutdown()
