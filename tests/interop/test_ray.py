"""Records on Ray: ``ray.put``/``ray.get``, task arguments and results, actor calls. Ray
pickles them with protocol 5, so each travels as one buffer into the object store and is
read back without a copy (tclass/_engine/_pickle5.py): the reader's tensors are read-only
views of the store's shared memory. One local cluster (2 CPUs) for the whole module;
skipped when Ray is not installed (the test extra installs it)."""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

import tclass
from tclass import LazyStackedTensorDict, TensorClass, TensorDict, lazy_stack
from tclass._core._readonly import ReadOnlyTensor
from tclass.errors import FieldSpecError, ReadOnlyError

from ray_records import (
    MIB,
    Meta,
    Step,
    Transition,
    local_cluster,
    private_rss,
    step,
    transition,
    where,
)

ray = pytest.importorskip("ray", reason="Ray is not installed: pip install 'tclass[ray]'")


@pytest.fixture(scope="module", autouse=True)
def cluster() -> Iterator[None]:
    with local_cluster(__file__):
        yield


def wide(leaves: int, leaf_bytes: int) -> TensorDict:
    """A TensorDict of ``leaves`` float32 leaves of ``leaf_bytes`` each, distinct values."""
    n = leaf_bytes // 4
    return TensorDict(
        {f"k{i:03d}": torch.arange(n, dtype=torch.float32) + i for i in range(leaves)}
    )


@ray.remote
def inspect_and_double(record: Transition) -> tuple[dict[str, Any], Transition]:
    """A task: where its argument lives, and a new record as its result."""
    doubled = record.clone()
    doubled.obs.mul_(2)
    return where(record), doubled


@ray.remote
def write_in_place(record: Transition) -> None:
    record.obs.add_(1)


@ray.remote
def write_action(record: Step, action: int) -> str:
    """A task writing a row of its (copied) argument: the class's checks hold there."""
    record = record.clone()
    try:
        record[0] = {"action": torch.tensor(action)}
    except FieldSpecError as error:
        return f"refused: {error}"
    return f"wrote {int(record.action[0])}"


@ray.remote
def describe_local(record: Any) -> tuple[str, str, list[int]]:
    return type(record).__name__, type(record.inner).__name__, record.inner.a.tolist()


def local_record() -> Any:
    """A record of classes declared inside a function: Ray's cloudpickle sends them by
    value, and a worker rebuilds them under their bare names (``In``, not
    ``local_record.<locals>.In``)."""

    class In(TensorClass):
        a: torch.Tensor

    class Out(TensorClass):
        inner: In
        tag: str = "t"

    return Out(inner=In(a=torch.arange(3), batch_size=[3]), batch_size=[3])


@ray.remote
class Buffer:
    """An actor holding the records it is given, as a replay buffer would."""

    def __init__(self) -> None:
        self.records: list[Any] = []

    def add(self, record: Any) -> dict[str, Any]:
        self.records.append(record)
        return where(record)

    def sample(self, index: int) -> Any:
        return self.records[index][1:3]

    def total(self) -> float:
        return float(sum(r.obs.sum() for r in self.records))


# --- put / get -----------------------------------------------------------------------------


def test_get_shares_the_object_store_memory_without_a_copy() -> None:
    node = wide(64, MIB)  # 64 MiB
    expected = {key: float(value.sum()) for key, value in node.items()}
    ref = ray.put(node)
    del node
    before = private_rss()
    back = ray.get(ref)
    grown = private_rss() - before
    seen = where(back)
    assert seen["types"] == {"ReadOnlyTensor"} and seen["shared"]
    assert {key: float(value.sum()) for key, value in back.items()} == expected  # reads it all
    assert private_rss() - before < 16 * MIB, (grown, private_rss() - before)
    again = ray.get(ref)  # a second reader maps the same memory
    assert again["k000"].data_ptr() == back["k000"].data_ptr()


def test_records_lazy_stacks_and_values_round_trip() -> None:
    record = transition(8)
    back = ray.get(ray.put(record))
    assert type(back) is Transition and type(back.meta) is Meta
    assert back.env == "pong" and back.meta.source == "sim"
    assert torch.equal(back.obs, record.obs) and torch.equal(back.meta.seed, record.meta.seed)
    stack = lazy_stack([transition(2, offset=1.0), transition(2, offset=2.0)])
    back_stack = ray.get(ray.put(stack))
    assert type(back_stack) is Transition
    assert type(back_stack._tensordict) is LazyStackedTensorDict
    assert torch.equal(back_stack.obs, stack.obs)
    named = TensorDict({"a": torch.ones(2, 3)}, [2, 3], names=["env", "t"]).lock_()
    back_named = ray.get(ray.put(named))
    assert back_named.names == ["env", "t"] and back_named.is_locked


def test_a_shared_record_refuses_writes() -> None:
    back = ray.get(ray.put(transition(4)))
    assert type(back.obs) is ReadOnlyTensor
    with pytest.raises(ReadOnlyError, match=r"\.clone\(\)"):
        back.obs.add_(1)
    with pytest.raises(ReadOnlyError):
        back[0] = transition(4, offset=9.0)[0]  # (a row of the same width)
    copy = back.clone()
    copy.obs.add_(1)
    assert torch.equal(copy.obs, transition(4).obs + 1)
    assert torch.equal(ray.get(ray.put(back)).obs, transition(4).obs)


# --- tasks and actors --------------------------------------------------------------------


def test_task_arguments_and_results_travel_through_the_store() -> None:
    record = transition(16, leaf_bytes=MIB)
    seen, doubled = ray.get(inspect_and_double.remote(record))
    assert seen["types"] == {"ReadOnlyTensor"} and seen["shared"]
    assert any("plasma" in path or path.startswith("/dev/shm") for path in seen["paths"])
    assert type(doubled) is Transition and torch.equal(doubled.obs, record.obs * 2)
    assert type(doubled.obs) is ReadOnlyTensor  # the result lives in the store too
    with pytest.raises(ReadOnlyError, match="read-only"):  # the task's error, re-raised
        ray.get(write_in_place.remote(record))


def test_an_actor_keeps_and_serves_records() -> None:
    buffer = Buffer.remote()  # type: ignore[attr-defined]
    records = [transition(4, leaf_bytes=MIB, offset=float(i)) for i in range(3)]
    for record in records:
        seen = ray.get(buffer.add.remote(record))
        assert seen["types"] == {"ReadOnlyTensor"} and seen["shared"]
    # Ray passes a small argument inside the call itself (not through the store): still
    # one buffer, read-only, in the actor's own memory.
    seen = ray.get(buffer.add.remote(transition(2, offset=3.0)))
    assert seen["types"] == {"ReadOnlyTensor"} and not seen["shared"]
    sample = ray.get(buffer.sample.remote(2))
    assert type(sample) is Transition and torch.equal(sample.obs, records[2].obs[1:3])
    expected = sum(float(r.obs.sum()) for r in [*records, transition(2, offset=3.0)])
    assert ray.get(buffer.total.remote()) == pytest.approx(expected)


def test_a_memory_mapped_record_travels_as_file_references(tmp_path: Path) -> None:
    saved = transition(8, leaf_bytes=MIB).memmap(tmp_path / "rec")
    assert len(pickle.dumps(saved, protocol=5)) < 8192  # references, not data
    seen, doubled = ray.get(inspect_and_double.remote(saved))
    assert seen["types"] == {"MemoryMappedTensor"}
    assert seen["paths"] == {str(p) for p in (tmp_path / "rec").rglob("*.memmap")}
    assert torch.equal(doubled.obs, saved.obs * 2)
    assert tclass.is_tensorclass(doubled)


def test_a_record_with_a_schema_travels_as_it_is_and_is_checked_where_written(
    tmp_path: Path,
) -> None:
    record = step(4)
    back = ray.get(ray.put(record))
    assert type(back) is Step and back.weight.dtype == torch.bfloat16
    assert torch.equal(back.action, record.action) and back.tag == record.tag
    assert ray.get(write_action.remote(record, 5)) == "wrote 5"
    refused = ray.get(write_action.remote(record, 6))
    assert refused.startswith("refused: Step[0] = ...: Step.action: the value written holds 6")
    assert "lt=6" in refused
    # a record derived without the checks (math out of place) travels as it is (README:
    # records in transit are not read again), and saving it is refused there as here
    derived = ray.get(ray.put(record + 10))
    assert type(derived) is Step and derived.action.tolist() == [10, 11, 12, 13]
    with pytest.raises(FieldSpecError, match="Step.action"):
        derived.memmap(tmp_path / "derived")
    assert not (tmp_path / "derived").exists()


@pytest.mark.parametrize("consolidated", [False, True])
def test_records_of_classes_declared_in_a_function_reach_a_worker(consolidated: bool) -> None:
    # the nested class travels beside the header, which names it as the sender's tree
    # does; the worker's copy of it has another qualified name (a ClassResolutionError
    # before: "a class not defined in this process")
    record = local_record()
    if consolidated:
        record = record.consolidate()
    assert ray.get(describe_local.remote(record)) == ("Out", "In", [0, 1, 2])
    back = ray.get(describe_local.remote(TensorDict({"rec": record}, [3])["rec"]))
    assert back == ("Out", "In", [0, 1, 2])
