"""Ray Data over saved folders and sharded datasets (``tclass.ray``): a folder read as a
Dataset of row blocks, a Dataset written as a sharded dataset checked against a class,
batches back as records. One local cluster (2 CPUs) for the module, with Ray Data keeping the rows'
order; skipped when Ray is not installed (the test extra installs it)."""

from __future__ import annotations

import os
import shutil
import sys
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import tclass
import tclass.ray
from tclass import TensorDict
from tclass._core._readonly import ReadOnlyTensor
from tclass.errors import (
    ArgumentValueError,
    ClassMismatchError,
    FieldSpecError,
    InvalidKeyError,
    MetadataError,
    MissingDependencyError,
    NotAFileError,
    ShapeError,
    ShardSchemaError,
)

from ray_records import (
    MIB,
    Meta,
    Step,
    Transition,
    local_cluster,
    mapping_of,
    step,
    transition,
    where,
)

ray = pytest.importorskip("ray", reason="Ray is not installed: pip install 'tclass[ray]'")
pytest.importorskip("ray.data", reason="Ray Data is not installed: pip install 'tclass[ray]'")

ALL = 1 << 20  # rows per batch: every row in one batch
COLUMNS = ["obs", "action", "weight", "meta.seed", "meta.source", "tag"]


@pytest.fixture(scope="module", autouse=True)
def cluster() -> Iterator[None]:
    with local_cluster(__file__):
        with warnings.catch_warnings():  # Ray Data's own settings, deprecated by Ray Data
            warnings.simplefilter("ignore", DeprecationWarning)
            context = ray.data.DataContext.get_current()
        context.execution_options.preserve_order = True  # rows in the folders' order
        context.enable_progress_bars = False
        yield


def saved_steps(folder: Path, rows: int, offset: int = 0) -> str:
    step(rows, offset).memmap(folder)
    return str(folder)


def assert_same_steps(got: Step, expected: Step) -> None:
    assert type(got) is Step and type(got.meta) is Meta
    for name in ("obs", "action", "weight"):
        assert getattr(got, name).dtype == getattr(expected, name).dtype, name
        assert torch.equal(getattr(got, name), getattr(expected, name)), name
    assert torch.equal(got.meta.seed, expected.meta.seed)
    assert got.meta.source == expected.meta.source and got.tag == expected.tag


# --- reading -----------------------------------------------------------------------------


def test_a_folder_reads_as_one_block_per_range_of_rows(tmp_path: Path) -> None:
    path = saved_steps(tmp_path / "steps", 10)
    ds = tclass.ray.read_memmap(path, rows_per_block=4)
    assert ds.columns() == COLUMNS and ds.count() == 10
    assert ds.materialize().num_blocks() == 3  # rows 0-3, 4-7, 8-9
    rows = ds.take_all()
    assert [row["meta.seed"] for row in rows] == list(range(10))
    assert rows[3]["obs"].tolist() == [3.0] * 4 and rows[3]["weight"] == 0.75
    assert rows[3]["tag"] == "t3" and rows[3]["meta.source"] == "sim"
    assert ds.schema().types[0].shape == (4,)  # rows of a [10, 4] leaf: a tensor column


def test_read_tasks_give_ray_views_of_the_mapped_files(tmp_path: Path) -> None:
    from tclass.ray import _source  # what each read task runs, here in this process

    path = saved_steps(tmp_path / "steps", 64)
    plan = _source.plan_folder(path, allow_pickle=False)
    (table,) = _source.read_block(plan.path, plan.columns, 16, 32, False)
    obs = table.column("obs").chunk(0).storage.buffers()[-1]  # rows of 4 float32 each
    assert mapping_of(obs.address)[1] == os.path.join(path, "_tensordict", "obs.memmap")
    seed = table.column("meta.seed").chunk(0).buffers()[-1]
    assert mapping_of(seed.address)[1].endswith("meta/_tensordict/seed.memmap")
    # Ray then copies each block once, into its object store (a block of 1 MiB: small
    # ones are kept in the reader's own memory): the batches are views of the store.
    record = transition(64, leaf_bytes=4 * MIB)
    record.memmap(tmp_path / "big")
    ds = tclass.ray.read_memmap(tmp_path / "big", rows_per_block=16)
    batches = list(tclass.ray.iter_records(ds, Transition, batch_size=16))
    assert [len(batch) for batch in batches] == [16] * 4
    seen = where(batches[1])
    assert seen["types"] == {"ReadOnlyTensor"} and seen["shared"]
    assert all("plasma" in path or path.startswith("/dev/shm") for path in seen["paths"])
    assert torch.equal(batches[1].obs, record.obs[16:32]) and batches[1].env == "pong"


def test_batches_come_back_as_records_or_tensordicts(tmp_path: Path) -> None:
    record = transition(6, leaf_bytes=96)
    record.memmap(tmp_path / "rec")
    ds = tclass.ray.read_memmap(tmp_path / "rec", cls=Transition)
    (back,) = tclass.ray.iter_records(ds, Transition, batch_size=ALL, device="cpu")
    assert type(back) is Transition and type(back.meta) is Meta
    assert torch.equal(back.obs, record.obs) and back.env == "pong"
    (td,) = tclass.ray.iter_records(ds, batch_size=ALL)
    assert type(td) is TensorDict and type(td["meta"]) is TensorDict
    assert td["meta", "source"] == "sim" and torch.equal(td["reward"], record.reward)
    with pytest.raises(ClassMismatchError, match="holds a record of class Transition"):
        tclass.ray.read_memmap(tmp_path / "rec", cls=Step)


def test_columns_are_chosen_when_read(tmp_path: Path) -> None:
    path = saved_steps(tmp_path / "steps", 5)
    meta = tclass.ray.read_memmap(path, columns=["meta", "action"])
    assert meta.columns() == ["action", "meta.seed", "meta.source"]
    (td,) = tclass.ray.iter_records(meta, batch_size=ALL)
    assert td["meta", "seed"].tolist() == list(range(5))
    selected = tclass.ray.read_memmap(path).select_columns(["tag"])  # pushed into the read
    assert selected.take_all() == [{"tag": f"t{i}"} for i in range(5)]
    with pytest.raises(ArgumentValueError, match="no column 'nope'.*obs, action"):
        tclass.ray.read_memmap(path, columns=["nope"])


def test_collections_that_are_not_rows_are_refused(tmp_path: Path) -> None:
    TensorDict({"a.b": torch.zeros(3)}, [3]).memmap(tmp_path / "dotted")
    with pytest.raises(InvalidKeyError, match=r"the key 'a\.b'"):
        tclass.ray.read_memmap(tmp_path / "dotted")
    TensorDict({"a": torch.zeros(3)}).memmap(tmp_path / "unbatched")
    with pytest.raises(ShapeError, match="batch size"):
        tclass.ray.read_memmap(tmp_path / "unbatched")
    TensorDict({"a": torch.zeros(3, 2)}, [3]).memmap(tmp_path / "one")
    TensorDict({"a": torch.zeros(3, 2, dtype=torch.int8)}, [3]).memmap(tmp_path / "other")
    with pytest.raises(MetadataError, match=r"does not hold the columns.*'a' \(int8 \[2\]\)"):
        tclass.ray.read_memmap([tmp_path / "one", tmp_path / "other"])


# --- appends ---------------------------------------------------------------------------


def test_a_dataset_reads_the_rows_saved_when_it_was_made(tmp_path: Path) -> None:
    path = saved_steps(tmp_path / "steps", 6)
    before = tclass.ray.read_memmap(path, rows_per_block=2)
    tclass.append_memmap(path, step(4, offset=6))
    assert before.count() == 6
    (rows,) = tclass.ray.iter_records(before, Step, batch_size=ALL)
    assert_same_steps(rows, step(6))
    (rows,) = tclass.ray.iter_records(tclass.ray.read_memmap(path), Step, batch_size=ALL)
    assert_same_steps(rows, step(10))


def test_reads_while_rows_are_appended_see_whole_rows(tmp_path: Path) -> None:
    path = saved_steps(tmp_path / "steps", 8)
    ds = tclass.ray.read_memmap(path, rows_per_block=3)
    done = threading.Event()

    def append() -> None:
        for i in range(20):
            tclass.append_memmap(path, step(2, offset=8 + 2 * i))
        done.set()

    writer = threading.Thread(target=append)
    writer.start()
    try:
        seen = torch.cat([r.meta.seed for r in tclass.ray.iter_records(ds, Step, batch_size=3)])
    finally:
        writer.join()
    assert done.is_set() and seen.tolist() == list(range(8))
    later = tclass.ray.read_memmap(path, rows_per_block=7)
    (everything,) = tclass.ray.iter_records(later, Step, batch_size=ALL)
    assert_same_steps(everything, step(48))


def test_a_folder_replaced_since_is_an_error_in_the_read(tmp_path: Path) -> None:
    path = saved_steps(tmp_path / "steps", 4)
    ds = tclass.ray.read_memmap(path)
    shutil.rmtree(path)
    TensorDict({"obs": torch.zeros(4, 4, dtype=torch.float64)}, [4]).memmap(path)
    with pytest.raises(MetadataError, match=r"changed since.*'obs' \(float32 \[4\]\)"):
        ds.take_all()


# --- sharded datasets ------------------------------------------------------------------


def everything(data: tclass.ShardedDataset[Any]) -> Any:
    return data[torch.arange(len(data))]


def test_folder_to_dataset_to_sharded_dataset(tmp_path: Path) -> None:
    path = saved_steps(tmp_path / "steps", 12)
    ds = tclass.ray.read_memmap(path, rows_per_block=5)
    data = tclass.ray.write_memmap(ds, tmp_path / "out", Step)
    assert type(data) is tclass.ShardedDataset and len(data) == 12
    ids = [shard.shard_id for shard in data.shards]  # one write's: <write>-<task>-<random>
    assert len({i.rsplit("-", 2)[0] for i in ids}) == 1 and ids == sorted(ids)
    assert_same_steps(everything(data), step(12))  # weight: bfloat16 again, from float32
    again = tclass.ray.read_memmap(tmp_path / "out", rows_per_block=100)  # the shards' rows
    assert again.materialize().num_blocks() == len(ids)  # a block never spans two shards
    (rows,) = tclass.ray.iter_records(again, Step, batch_size=ALL)
    assert_same_steps(rows, step(12))
    more = tclass.ray.write_memmap(tclass.ray.read_memmap(saved_steps(tmp_path / "b", 3, 12)),
                                   tmp_path / "out", Step)  # fmt: skip
    assert len(more) == 15 and [s.shard_id for s in more.shards][: len(ids)] == ids
    assert_same_steps(everything(more), step(15))  # the second write's shards sort after


def test_a_dataset_from_elsewhere_is_written_without_a_class(tmp_path: Path) -> None:
    items = [{"x": np.full(3, i, np.float32), "nested.n": i, "name": f"n{i}"} for i in range(7)]
    data = tclass.ray.write_memmap(ray.data.from_items(items), tmp_path / "out")
    loaded = everything(data)
    assert type(loaded) is TensorDict and loaded["x"][:, 0].tolist() == list(range(7))
    assert loaded["nested", "n"].tolist() == list(range(7))
    assert loaded["name"] == [f"n{i}" for i in range(7)]
    steps = tclass.ray.read_memmap(saved_steps(tmp_path / "steps", 2))
    with pytest.raises(ShardSchemaError, match=r"write task \d+, block 0 .*TensorDict rows"):
        tclass.ray.write_memmap(steps, tmp_path / "out", Step)  # rows of another class


def test_a_block_that_breaks_the_schema_is_not_written(tmp_path: Path) -> None:
    batch = tclass.ray.to_batch(step(8))
    batch["action"][5] = 9  # breaks lt=6
    ds = ray.data.from_numpy(np.arange(8)).map_batches(lambda b: batch, batch_size=ALL)
    pattern = r"write_memmap: write task \d+, block \d+ \(its rows \d+-\d+\): Step\.action holds 9"
    with pytest.raises(FieldSpecError, match=pattern) as caught:
        tclass.ray.write_memmap(ds, tmp_path / "bad", Step)
    assert [problem.field for problem in caught.value.problems] == ["action"]
    assert len(tclass.open_sharded(tmp_path / "bad")) == 0  # a failed write keeps no shard
    short = tclass.ray.read_memmap(saved_steps(tmp_path / "steps", 3)).drop_columns(["obs"])
    with pytest.raises(FieldSpecError, match=r"block 0 .*Step\.obs .*has no column 'obs'"):
        tclass.ray.write_memmap(short, tmp_path / "short", Step)
    with pytest.raises(NotAFileError, match="saved folder"):
        tclass.ray.write_memmap(short, tmp_path / "steps", Step)


def test_a_successful_write_removes_what_failed_attempts_committed(tmp_path: Path) -> None:
    from ray.data.datasource import WriteResult

    from tclass.ray._sink import MemmapDatasink, new_write_id

    root = str(tmp_path / "out")
    other = tclass.shard_writer(root, Step, "0-before")  # another write's shard, kept
    other.append(step(2))
    other.close()
    sink = MemmapDatasink(root, Step, new_write_id(), durable=False)
    for attempt in ("a", "b"):  # the same task twice: Ray ran it again after a failure
        with tclass.shard_writer(root, Step, f"{sink.write_id}-00000-{attempt}") as writer:
            writer.append(step(3, offset=2))
    sink.on_write_complete(WriteResult(3, 0, [f"{sink.write_id}-00000-b"]))
    data = tclass.open_sharded(root, Step)
    assert [s.shard_id for s in data.shards] == ["0-before", f"{sink.write_id}-00000-b"]
    assert_same_steps(everything(data), step(5))


def test_a_sharded_dataset_reads_the_rows_committed_when_it_was_made(tmp_path: Path) -> None:
    root = tmp_path / "run"
    with tclass.shard_writer(root, Step, "a") as a, tclass.shard_writer(root, Step, "b") as b:
        a.append(step(4))
        b.append(step(3, offset=4))
        ds = tclass.ray.read_memmap(root, rows_per_block=2)
        a.append(step(2, offset=7))  # committed after the dataset was made
    assert ds.count() == 7
    (rows,) = tclass.ray.iter_records(ds, Step, batch_size=ALL)
    assert rows.meta.seed.tolist() == [0, 1, 2, 3, 4, 5, 6]
    later = tclass.ray.read_memmap(root, cls=Step)  # checked with the class, once
    assert later.count() == 9
    with pytest.raises(ClassMismatchError, match="holds ray_records.Step"):
        tclass.ray.read_memmap(root, cls=Transition)


# --- without Ray -------------------------------------------------------------------------


def test_without_ray_each_call_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = saved_steps(tmp_path / "steps", 3)
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` fails, as uninstalled
    monkeypatch.setitem(sys.modules, "ray.data", None)
    extra = r"pip install 'tclass\[ray\]'"
    with pytest.raises(MissingDependencyError, match=rf"read_memmap needs ray.*{extra}"):
        tclass.ray.read_memmap(path)
    with pytest.raises(MissingDependencyError, match=rf"write_memmap needs ray.*{extra}"):
        tclass.ray.write_memmap(object(), tmp_path / "out")  # type: ignore[arg-type]
    with pytest.raises(ModuleNotFoundError, match=rf"iter_records needs ray.*{extra}"):
        tclass.ray.iter_records(object())
    record = tclass.ray.to_record(tclass.ray.to_batch(step(3)), Step)  # no Ray needed
    assert_same_steps(record, step(3))
    assert type(record.obs) is not ReadOnlyTensor
