"""Records as users move them through Ray tasks and actors: a collection holding
``MetaData`` (zero copy, the value's class kept), a received record shared with worker
processes (``share_memory_``), and collector tasks writing rows into an actor's
memory-mapped replay buffer, whose state (memory-mapped storage, plain priorities) comes
back with the plain tensors in the object store. One local cluster (2 CPUs) for the
module; skipped when Ray is not installed (the test extra installs it)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

import tclass
from tclass import TensorDict
from tclass.errors import ReadOnlyError

from ray_records import MIB, Transition, local_cluster, transition, where

ray = pytest.importorskip("ray", reason="Ray is not installed: pip install 'tclass[ray]'")


@pytest.fixture(scope="module", autouse=True)
def cluster() -> Iterator[None]:
    with local_cluster(__file__):
        yield


@ray.remote
def inspect(node: Any) -> tuple[dict[str, Any], str, Any]:
    return where(node), type(node.get("run")).__name__, node["run"]


@ray.remote
def share(record: Transition) -> tuple[bool, bool, float]:
    """What a task does before handing a received record to its own worker processes."""
    record.share_memory_()
    return record.obs.is_shared(), record.is_locked, float(record.obs.sum())


@ray.remote
def save(record: Transition, path: str) -> None:
    """A task checkpointing the batch it received (float, int64 leaves: one buffer)."""
    torch.save(record, path)


def made(field: str) -> Any:
    """A record class from a factory: each class it makes has the same qualified name
    (``made.<locals>.Made``), and reaches a worker by value."""
    namespace = {"__annotations__": {field: torch.Tensor}, "__qualname__": "made.<locals>.Made"}
    return tclass.tensorclass(type("Made", (), namespace))


@ray.remote
def fields_of(node: TensorDict) -> dict[str, list[str]]:
    return {key: list(node[key].to_dict()) for key in ("a", "b")}


@ray.remote
class Replay:
    """A replay buffer: rows of a memory-mapped record, filled by collector tasks."""

    def __init__(self, path: str, capacity: int) -> None:
        self.storage = transition(capacity, leaf_bytes=16 * capacity).memmap_like(path)
        self.priority = torch.arange(capacity * 4096.0).reshape(capacity, 4096)

    def state(self) -> TensorDict:
        # the storage travels as its files' paths, the priorities (128 KiB: over Ray's
        # inline limit) in the store's memory
        return TensorDict(
            {"storage": self.storage, "priority": self.priority}, [len(self.priority)]
        )

    def sample(self, rows: list[int]) -> Transition:
        return self.storage[torch.tensor(rows)]


@ray.remote
def collect(storage: Transition, start: int, rows: int, offset: float) -> int:
    storage[start : start + rows] = transition(rows, leaf_bytes=16 * rows, offset=offset)
    return rows


@ray.remote
class Holder:
    """An actor that keeps the record it was constructed with and writes into it."""

    def __init__(self, record: TensorDict, copy: bool) -> None:
        self.record = record.clone() if copy else record

    def write(self) -> str:
        try:
            self.record["a"][0] = 7.0
        except ReadOnlyError as error:
            return str(error)
        return str(self.record["a"][:2].tolist())


def test_an_actor_keeps_its_constructor_record_read_only_and_writes_a_clone() -> None:
    # the README's Ray section: constructor and method arguments are store views too
    record = TensorDict(a=torch.zeros(MIB // 4), batch_size=[MIB // 4])
    refused = ray.get(Holder.remote(record, False).write.remote())
    assert "an actor's argument" in refused and ".clone() of the collection" in refused
    assert ray.get(Holder.remote(record, True).write.remote()) == "[7.0, 0.0]"


def test_a_collection_holding_metadata_travels_without_a_copy() -> None:
    node = TensorDict({"obs": torch.ones(4, MIB // 16)}, [4])
    node["run"] = tclass.MetaData(("run", 7))  # a tuple: pickled beside the header
    seen, kind, value = ray.get(inspect.remote(node))
    assert seen["types"] == {"ReadOnlyTensor"} and seen["shared"]  # the store's memory
    assert kind == "MetaData" and value == ("run", 7)
    back = ray.get(ray.put(node))
    assert type(back.get("run")) is tclass.MetaData and torch.equal(back["obs"], node["obs"])


def test_a_received_record_can_be_shared_with_worker_processes() -> None:
    record = transition(4, leaf_bytes=4096, offset=1.0)
    shared, locked, total = ray.get(share.remote(record))
    assert shared and locked and total == float(record.obs.sum())


def test_collector_tasks_write_rows_into_an_actors_memory_mapped_buffer(tmp_path: Path) -> None:
    replay = Replay.remote(str(tmp_path / "buffer"), 8)  # type: ignore[attr-defined]
    state = ray.get(replay.state.remote())
    storage = state["storage"]
    assert isinstance(storage.obs, tclass.MemoryMappedTensor) and storage.is_memmap()
    seen = where(state.exclude("storage"))
    assert seen["types"] == {"ReadOnlyTensor"} and seen["shared"]  # not pickled in band
    assert torch.equal(state["priority"], torch.arange(8 * 4096.0).reshape(8, 4096))
    ray.get([collect.remote(storage, 4 * i, 4, offset=100.0 * (i + 1)) for i in range(2)])
    sample = ray.get(replay.sample.remote([1, 6]))
    expected = torch.cat([transition(4, 64, offset=100.0), transition(4, 64, offset=200.0)])
    assert type(sample) is Transition and sample.batch_size == torch.Size([2])
    assert torch.equal(sample.obs, expected.obs[[1, 6]])
    assert torch.equal(storage.reward, expected.reward)  # the driver's mapping sees them
    assert sample.meta.source == "sim" and sample.env == "pong"


def test_a_task_saves_the_record_it_received_with_torch(tmp_path: Path) -> None:
    record = transition(4, leaf_bytes=4096, offset=3.0)
    ray.get(save.remote(record, str(tmp_path / "batch.pt")))
    loaded = torch.load(tmp_path / "batch.pt", weights_only=False)
    assert type(loaded) is Transition and loaded.meta.source == "sim"
    assert torch.equal(loaded.obs, record.obs) and torch.equal(loaded.meta.seed, record.meta.seed)


def test_records_of_two_classes_of_one_name_keep_their_own_classes() -> None:
    # the header named both classes by their one qualified name: "a" came back a "y" record
    first, second = made("x"), made("y")
    node = TensorDict(
        a=first(x=torch.ones(2), batch_size=[2]),
        b=second(y=torch.arange(2), batch_size=[2]),
        batch_size=[2],
    )
    assert ray.get(fields_of.remote(node)) == {"a": ["x"], "b": ["y"]}
    back = ray.get(ray.put(node))
    assert back["a"].to_dict().keys() == {"x"} and back["a"].x.tolist() == [1.0, 1.0]
    assert back["b"].to_dict().keys() == {"y"} and back["b"].y.tolist() == [0, 1]
