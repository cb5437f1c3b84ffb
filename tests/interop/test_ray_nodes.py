"""Records between two Ray nodes on this machine (``ray.cluster_utils.Cluster``: a head
node and a second raylet, each with its own object store). In memory, a record put on one
node is transferred to the other's store as its one buffer and read there without a
further copy; memory-mapped records on a folder both nodes see travel as file references
and are written in place. One cluster for the whole module; skipped without Ray."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from tclass import TensorDict

from ray_records import MIB, Transition, transition, where, worker_pythonpath

ray = pytest.importorskip("ray", reason="Ray is not installed: pip install 'tclass[ray]'")
cluster_utils = pytest.importorskip("ray.cluster_utils")

SECOND = {"second_node": 1}  # a custom resource only the second node has


@pytest.fixture(scope="module", autouse=True)
def cluster() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTHONPATH", worker_pythonpath(__file__))
        nodes = cluster_utils.Cluster(
            initialize_head=True,
            head_node_args={
                "num_cpus": 1, "object_store_memory": 256 * MIB, "include_dashboard": False
            },
        )  # fmt: skip
        nodes.add_node(num_cpus=1, object_store_memory=256 * MIB, resources=SECOND)
        ray.init(address=nodes.address, log_to_driver=False)
        nodes.wait_for_nodes()
    try:
        yield
    finally:
        ray.shutdown()
        nodes.shutdown()


@ray.remote(resources=SECOND)
def on_second_node(record: Any) -> tuple[str, dict[str, Any], Any]:
    """Where the argument lives on the second node, and a record made there."""
    made = TensorDict({"made": record.obs * 2}, record.batch_size)
    return ray.get_runtime_context().get_node_id(), where(record), made


@ray.remote(resources=SECOND)
def write_rows(record: Transition) -> None:
    record.obs[2:4] = -1.0  # a memory-mapped record: written into its files


def test_a_record_crosses_to_another_node_in_memory() -> None:
    record = transition(32, leaf_bytes=4 * MIB)
    here = ray.get_runtime_context().get_node_id()
    node, seen, made = ray.get(on_second_node.remote(ray.put(record)))
    assert node != here
    assert seen["types"] == {"ReadOnlyTensor"} and seen["shared"]  # the second node's store
    assert torch.equal(made["made"], record.obs * 2)  # and back, from the second node's store
    assert where(made)["shared"] and type(made["made"]).__name__ == "ReadOnlyTensor"
    mine = ray.get(ray.put(record))
    assert where(mine)["paths"].isdisjoint(seen["paths"])  # each node maps its own store


def test_a_memory_mapped_record_crosses_by_file_reference(tmp_path: Path) -> None:
    saved = transition(8, leaf_bytes=MIB).memmap(tmp_path / "rec")
    node, seen, made = ray.get(on_second_node.remote(saved))
    assert node != ray.get_runtime_context().get_node_id()
    assert seen["types"] == {"MemoryMappedTensor"}
    assert seen["paths"] == {str(p) for p in (tmp_path / "rec").rglob("*.memmap")}
    ray.get(write_rows.remote(saved))
    assert bool((saved.obs[2:4] == -1).all()) and bool((saved.obs[4:] >= 0).all())
