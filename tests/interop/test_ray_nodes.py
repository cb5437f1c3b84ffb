"""Records between two Ray nodes on this machine (``ray.cluster_utils.Cluster``: a head
node and a second raylet, each with its own object store). In memory, a record put on one
node is transferred to the other's store as its one buffer and read there without a
further copy; memory-mapped records on a folder both nodes see travel as file references,
are read there from the files (no copy) and written in place. Ray Data (``tclass.ray``)
reads a folder in tasks of one node and writes it as a sharded dataset from the other.
One cluster for the whole module; skipped without Ray."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

import tclass
import tclass.ray
from tclass import TensorDict

from ray_records import MIB, Transition, private_rss, transition, where, worker_pythonpath

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
    with warnings.catch_warnings():  # Ray Data's own settings, deprecated by Ray Data
        warnings.simplefilter("ignore", DeprecationWarning)
        context = ray.data.DataContext.get_current()
    context.execution_options.preserve_order = True
    context.enable_progress_bars = False
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
def read_all_on_second_node(record: Any) -> tuple[str, dict[str, Any], float, int]:
    """Every value of ``record`` read on the second node: the node, where the tensors
    live, their sum, and how much the task's private memory grew (a copy would)."""
    before = private_rss()
    total = sum(float(leaf.sum(dtype=torch.float64)) for leaf in record.values(True, True))
    grown = private_rss() - before
    return ray.get_runtime_context().get_node_id(), where(record), total, grown


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


def test_a_memory_mapped_record_is_read_there_from_the_files(tmp_path: Path) -> None:
    saved = transition(16, leaf_bytes=64 * MIB).memmap(tmp_path / "rec")
    expected = sum(float(leaf.sum(dtype=torch.float64)) for leaf in saved.values(True, True))
    node, seen, total, grown = ray.get(read_all_on_second_node.remote(saved))
    assert node != ray.get_runtime_context().get_node_id()
    assert seen["types"] == {"MemoryMappedTensor"} and total == expected
    assert grown < 16 * MIB  # 64 MiB read from the page cache, none of it copied


@ray.remote(resources=SECOND)
def rows_on_second_node(data: Any) -> tuple[str, int, list[int], set[str]]:
    """What a sharded dataset's snapshot holds on the second node, and where a slice of
    its rows lives there."""
    rows = data[torch.arange(len(data))]
    first = data[0:2]  # rows of one shard: views of its files
    paths = where(first)["paths"]
    return ray.get_runtime_context().get_node_id(), len(data), rows.meta.seed.tolist(), paths


def test_a_sharded_dataset_crosses_as_its_snapshot(tmp_path: Path) -> None:
    root = tmp_path / "run"
    record = transition(5)
    with tclass.shard_writer(root, Transition, "a") as writer:
        writer.append(record[:3])
        data = tclass.open_sharded(root, Transition)
        writer.append(record[3:])  # committed after the snapshot
    node, count, seeds, paths = ray.get(rows_on_second_node.remote(data))
    assert node != ray.get_runtime_context().get_node_id()
    assert count == 3 and seeds == [0, 1, 2]  # the snapshot's rows, not the new ones
    assert paths and all(path.startswith(str(root)) for path in paths)  # the files


# --- Ray Data across the nodes ----------------------------------------------------------


def test_ray_data_reads_on_one_node_and_writes_from_the_other(tmp_path: Path) -> None:
    record = transition(64, leaf_bytes=4 * MIB)
    record.memmap(tmp_path / "rec")
    ds = tclass.ray.read_memmap(tmp_path / "rec", rows_per_block=16, resources=SECOND).materialize()
    blocks = ds.get_internal_block_refs()
    located = ray.experimental.get_object_locations(blocks)
    second = {node["NodeID"] for node in ray.nodes() if "second_node" in node["Resources"]}
    assert {tuple(where["node_ids"]) for where in located.values()} == {tuple(second)}
    batches = list(tclass.ray.iter_records(ds, Transition, batch_size=16))  # to this node
    assert where(batches[2])["shared"] and torch.equal(batches[2].obs, record.obs[32:48])
    data = tclass.ray.write_memmap(
        ds, tmp_path / "out", Transition, ray_remote_args={"resources": SECOND}
    )
    back = data[torch.arange(len(data))]
    assert torch.equal(back.obs, record.obs) and torch.equal(back.meta.seed, record.meta.seed)
