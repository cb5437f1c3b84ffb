"""Sharded datasets (``shard_writer``, ``open_sharded``): one dataset as a folder of
shards, each grown by one writer, read as one collection in a fixed order. The crash and
concurrency cases are in test_sharded_crash.py."""

from __future__ import annotations

import json
import os
import pickle
from pathlib import Path
from typing import Any

import pytest
import torch

import tclass
from tclass import ShardedDataset, TensorDict, lazy_stack, tensorclass
from tclass.__main__ import main
from tclass.errors import (
    AppendError,
    ArgumentError,
    ArgumentValueError,
    ClassMismatchError,
    ClosedFileError,
    DimError,
    EntryTypeError,
    FieldSpecError,
    FileBusyError,
    FileConflictError,
    MetadataError,
    MissingFileError,
    NotAFileError,
    ReadOnlyError,
    ShardSchemaError,
    UnpicklableError,
    UnsupportedError,
)

from shard_records import Row, check_rows, rows


@tensorclass
class Other:
    uid: torch.Tensor


def dataset_of(tmp_path: Path, sizes: dict[str, list[int]]) -> tuple[Path, list[int]]:
    """A dataset whose shard ``id`` got appends of ``sizes[id]`` rows (uids 1000 * k + i
    for the k-th shard named), and its uids in the dataset's order."""
    path = tmp_path / "data"
    expected: dict[str, list[int]] = {}
    for k, (shard_id, appends) in enumerate(sizes.items()):
        with tclass.shard_writer(path, Row, shard_id) as writer:
            start = 1000 * k
            for count in appends:
                writer.append(rows(start, count))
                start += count
            expected[shard_id] = list(range(1000 * k, start))
    return path, [uid for shard_id in sorted(expected) for uid in expected[shard_id]]


# --- round trip and order --------------------------------------------------------------


def test_rows_of_all_shards_in_shard_id_then_commit_order(tmp_path: Path) -> None:
    path, uids = dataset_of(tmp_path, {"b": [3, 2], "a": [4], "c": [1, 1, 1]})
    data = tclass.open_sharded(path, Row)
    assert len(data) == 12 and uids == [1000, 1001, 1002, 1003, 0, 1, 2, 3, 4, 2000, 2001, 2002]
    assert check_rows(data[:]) == uids
    assert isinstance(data[:], Row) and data[:].source == "sim"
    assert [(s.shard_id, s.rows, s.start) for s in data.shards] == [
        ("a", 4, 0), ("b", 5, 4), ("c", 3, 9),
    ]  # fmt: skip
    assert data.class_name == "shard_records:Row"
    shard = data.shards[1]
    assert check_rows(Row.load_memmap(shard.path)) == uids[4:9]  # each shard: a saved folder
    assert [int(row.uid) for row in data] == uids
    assert check_rows(tclass.open_sharded(path)[:]) == uids  # the class the manifest names


def test_tensordict_rows_with_nested_nodes_values_and_more_batch_dims(tmp_path: Path) -> None:
    def batch(start: int, count: int, label: str) -> TensorDict:
        index = torch.arange(start, start + count)
        return TensorDict(
            {
                "x": index.view(-1, 1).expand(count, 2).clone(),
                "nested": {"y": index.view(-1, 1, 1).expand(count, 2, 4).float()},
                "label": label,
            },
            batch_size=[count, 2],
        )

    path = tmp_path / "td"
    with tclass.shard_writer(path, batch(0, 1, "a"), "one") as first:
        assert len(first) == 0  # the example is not written
        first.append(batch(0, 3, "a"))
    with tclass.shard_writer(path, batch(0, 1, "a"), "two") as second:
        second.append(batch(3, 2, "b"))  # another value: one per row
    data = tclass.open_sharded(path)
    everything = data[:]
    assert type(everything) is TensorDict and everything.batch_size == (5, 2)
    assert everything["x"][:, 0].tolist() == [0, 1, 2, 3, 4]
    assert everything["nested", "y"].shape == (5, 2, 4)
    assert data[0][1]["label"] == "a" and data[4][1]["label"] == "b"
    with pytest.raises(ShardSchemaError, match=r"'nested.y' is tensor float32 \[2, 5\] here"):
        with tclass.shard_writer(path, batch(0, 1, "a")) as third:
            wrong = batch(0, 1, "a")
            wrong["nested", "y"] = torch.zeros(1, 2, 5)
            third.append(wrong)


def test_a_class_only_writer_creates_its_shard_at_the_first_append(tmp_path: Path) -> None:
    path = tmp_path / "data"
    writer = tclass.shard_writer(path, Row, "s")
    assert not (path / "manifest.json").exists()  # no layout known yet
    empty = tclass.open_sharded(path, Row)
    assert len(empty) == 0 and empty.shards == () and list(empty.iter_batches(4)) == []
    with pytest.raises(DimError, match="no shards yet"):
        empty[0:0]
    assert writer.append(rows(0, 3)) == 3 and len(writer) == 3
    manifest = json.loads((path / "manifest.json").read_text())
    assert manifest["format"] == "tclass.sharded" and manifest["version"] == 1
    assert manifest["class"] == "shard_records:Row"
    assert [["obs"], "tensor float32 [3]"] in manifest["layout"]
    assert manifest["schema"]["fields"]["obs"]["spec"]["dims"] == "3"
    assert len(empty.refresh()) == 3 and check_rows(empty[:]) == [0, 1, 2]
    writer.close()


def test_refresh_sees_new_rows_and_shards_and_a_pickle_keeps_its_snapshot(tmp_path: Path) -> None:
    path = tmp_path / "data"
    writer = tclass.shard_writer(path, Row, "m")
    writer.append(rows(0, 2))
    data = tclass.open_sharded(path, Row)
    sent = pickle.dumps(data)
    writer.append(rows(2, 3))
    with tclass.shard_writer(path, Row, "a") as early:  # sorts first
        early.append(rows(100, 1))
    assert len(data) == 2  # a snapshot
    assert data.refresh() is data and check_rows(data[:]) == [100, 0, 1, 2, 3, 4]
    received = pickle.loads(sent)
    assert isinstance(received, ShardedDataset) and check_rows(received[:]) == [0, 1]
    assert check_rows(pickle.loads(pickle.dumps(data))[:]) == [100, 0, 1, 2, 3, 4]
    writer.close()


# --- reading ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def three_shards(tmp_path_factory: pytest.TempPathFactory) -> tuple[ShardedDataset[Row], list[int]]:
    path, uids = dataset_of(tmp_path_factory.mktemp("shards"), {"a": [4, 3], "b": [5], "c": [6]})
    return tclass.open_sharded(path, Row), uids


INDICES: list[Any] = [
    0, 6, 7, -1, -18, slice(None), slice(2, 9), slice(5, 6), slice(9, 3), slice(1, None, 3),
    slice(None, None, -2), [17, 0, 8, 8, 3], [], torch.tensor([12, 1, 7, 16]),
    torch.tensor([[3, 15], [0, 9]]), torch.tensor(11), range(4, 14, 2),
]  # fmt: skip


@pytest.mark.parametrize("index", INDICES, ids=repr)
def test_indexing_gathers_across_shards_as_one_collection_would(
    three_shards: tuple[ShardedDataset[Row], list[int]], index: Any
) -> None:
    data, uids = three_shards
    reference = torch.tensor(uids)
    selected = data[index]
    assert isinstance(selected, Row)
    if isinstance(index, slice):  # torch slices take no negative step
        index = list(range(len(uids)))[index]
    positions = (
        torch.tensor(index, dtype=torch.int64) if isinstance(index, (list, range)) else index
    )
    expected = reference[positions]
    assert torch.equal(selected.uid, expected)
    assert selected.batch_size == expected.shape
    check_rows(selected.reshape(-1))


def test_a_boolean_mask_selects_rows(three_shards: tuple[ShardedDataset[Row], list[int]]) -> None:
    data, uids = three_shards
    mask = torch.tensor(uids) % 3 == 0
    assert check_rows(data[mask]) == [uid for uid in uids if uid % 3 == 0]
    with pytest.raises(DimError, match=r"one value per row \(18\), got shape \[4\]"):
        data[torch.ones(4, dtype=torch.bool)]


@pytest.mark.parametrize(
    ("index", "message"),
    [
        (18, "index 18 is out of range for a dataset of 18 rows"),
        (-19, "index -19 is out of range"),
        ([0, 18], "index 18 is out of range"),
        (torch.tensor([-40]), "index -40 is out of range"),
        (torch.tensor([0.5]), "indices must be integers, got torch.float32"),
        ("uid", "indexed by rows, got 'uid'"),
        (None, "indexed by rows"),
    ],
    ids=repr,
)
def test_bad_indices_are_refused(
    three_shards: tuple[ShardedDataset[Row], list[int]], index: Any, message: str
) -> None:
    with pytest.raises(DimError, match=message) as raised:
        three_shards[0][index]
    assert isinstance(raised.value, IndexError)


def test_views_refuse_writes_and_copies_are_the_callers(
    three_shards: tuple[ShardedDataset[Row], list[int]],
) -> None:
    data, uids = three_shards
    view = data[2:4]  # a view of one shard's file
    with pytest.raises(ReadOnlyError, match=r"rows read from a sharded dataset.*\.clone\(\)"):
        view.uid.add_(1000)
    with pytest.raises(ReadOnlyError):
        data[3].obs[0] = 7.0
    mine = view.clone()
    mine.uid.add_(1000)
    gathered = data[[8, 2]]  # a copy
    gathered.uid.add_(1000)
    assert check_rows(data[:]) == uids


def test_iter_batches_in_order_and_seeded(
    three_shards: tuple[ShardedDataset[Row], list[int]],
) -> None:
    data, uids = three_shards
    batches = [check_rows(batch) for batch in data.iter_batches(5)]
    assert batches == [uids[0:5], uids[5:10], uids[10:15], uids[15:18]]
    assert [len(b) for b in data.iter_batches(5, drop_last=True)] == [5, 5, 5]
    seeded = [check_rows(batch) for batch in data.iter_batches(5, seed=3)]
    order = [uids[i] for i in data.indices(3).tolist()]
    assert sum(seeded, []) == order and sorted(order) == sorted(uids)
    assert sum((check_rows(b) for b in data.iter_batches(5, seed=3)), []) == order  # repeatable
    assert data.indices(4).tolist() != data.indices(3).tolist()
    assert data.indices().tolist() == list(range(18))


@pytest.mark.parametrize("workers", [2, 4, 8])
def test_seeded_order_is_the_same_for_any_number_of_workers(
    three_shards: tuple[ShardedDataset[Row], list[int]], workers: int
) -> None:
    data, _ = three_shards
    one = data.indices(11).tolist()
    shares = [data.indices(11, num_workers=workers, worker_id=w).tolist() for w in range(workers)]
    interleaved = [shares[i % workers][i // workers] for i in range(len(one))]
    assert interleaved == one
    single = [check_rows(batch) for batch in data.iter_batches(3, seed=11)]
    per_worker = [
        [
            check_rows(batch)
            for batch in data.iter_batches(3, seed=11, num_workers=workers, worker_id=w)
        ]
        for w in range(workers)
    ]
    assert [per_worker[b % workers][b // workers] for b in range(len(single))] == single
    assert sum(len(batches) for batches in per_worker) == len(single)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"num_workers": 0}, "num_workers must be a positive int, got 0"),
        ({"num_workers": 2, "worker_id": 2}, r"worker_id must be an int in \[0, 2\), got 2"),
        ({"seed": 1.5}, "seed must be an int or None, got 1.5"),
    ],
)
def test_bad_sampling_arguments_are_refused(
    three_shards: tuple[ShardedDataset[Row], list[int]], kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(ArgumentValueError, match=message):
        three_shards[0].indices(**kwargs)
    with pytest.raises(ArgumentValueError, match="batch_size must be a positive int, got 0"):
        next(three_shards[0].iter_batches(0))


def test_a_dataloader_fetches_batches_with_one_call(
    three_shards: tuple[ShardedDataset[Row], list[int]],
) -> None:
    data, uids = three_shards
    loader = torch.utils.data.DataLoader(  # type: ignore[var-annotated]
        data,  # type: ignore[arg-type]
        batch_size=8,
        collate_fn=lambda batch: batch,
    )
    batches = list(loader)
    assert all(isinstance(batch, Row) for batch in batches)
    assert sum((check_rows(batch) for batch in batches), []) == uids


# --- writers ---------------------------------------------------------------------------


def test_two_writers_never_share_a_shard(tmp_path: Path) -> None:
    path = tmp_path / "data"
    writer = tclass.shard_writer(path, rows(0, 1), "s")
    with pytest.raises(FileConflictError, match="shard 's' of .* exists: pass mode='a'"):
        tclass.shard_writer(path, Row, "s")
    with pytest.raises(
        FileBusyError, match=rf"being written by another writer \(pid {os.getpid()}"
    ):
        tclass.shard_writer(path, Row, "s", mode="a")
    writer.append(rows(0, 2))
    writer.close()
    assert writer.closed and "closed" in repr(writer)
    with pytest.raises(ClosedFileError, match="the writer of shard 's' is closed"):
        writer.append(rows(2, 1))
    with tclass.shard_writer(path, Row, "s", mode="a") as resumed:  # released: resumable
        assert len(resumed) == 2 and resumed.append(rows(2, 1)) == 3
    fresh = tclass.shard_writer(path, Row)
    assert fresh.shard_id != "s" and fresh.shard_id.split("-")[-2] == str(os.getpid())
    assert fresh.path == str(path / "shards" / fresh.shard_id / "rows")
    assert fresh.dataset_path == str(path)
    fresh.close()
    assert check_rows(tclass.open_sharded(path, Row)[:]) == [0, 1, 2]


def test_a_writer_belongs_to_its_process(tmp_path: Path) -> None:
    writer = tclass.shard_writer(tmp_path / "data", Row, "s")
    with pytest.raises(UnpicklableError, match="holds its shard's lock in this process"):
        pickle.dumps(writer)
    writer._pid = -1  # as a forked child sees it
    with pytest.raises(ClosedFileError, match="belongs to process -1"):
        writer.append(rows(0, 1))
    writer.close()


def test_rows_of_another_schema_are_refused_naming_the_shard(tmp_path: Path) -> None:
    path = tmp_path / "data"
    with tclass.shard_writer(path, Row, "first") as writer:
        writer.append(rows(0, 2))
        with pytest.raises(AppendError, match="holds Row records .* got a Other"):
            writer.append(Other(uid=torch.arange(2), batch_size=[2]))  # type: ignore[arg-type]
        with pytest.raises(FieldSpecError, match="Row.obs has shape"):  # the class's specs
            writer.append(Row(uid=torch.arange(2), obs=torch.zeros(2, 4), batch_size=[2]))
        assert len(writer) == 2
    with pytest.raises(ShardSchemaError, match="holds records of class test_sharded:Other, but"):
        tclass.shard_writer(path, Other, "second")
    assert not (path / "shards" / "second").exists()  # refused before claiming
    td = TensorDict({"uid": torch.arange(2), "obs": torch.zeros(2, 3)}, batch_size=[2])
    with pytest.raises(ShardSchemaError, match="holds TensorDict rows") as raised:
        tclass.shard_writer(path, td, "third")
    assert raised.value.shard == "third" and isinstance(raised.value, AppendError)


@pytest.mark.parametrize(
    ("given", "error", "message"),
    [
        (TensorDict, EntryTypeError, "give an example TensorDict"),
        (3, EntryTypeError, "needs a tensorclass or example rows .* got a int"),
        (
            TensorDict(a=torch.zeros(3)),
            AppendError,
            r"need a first batch dim .* batch size \[\]",
        ),
        (
            lazy_stack([TensorDict(a=torch.zeros(2)), TensorDict(a=torch.zeros(3))]),
            AppendError,
            "is a lazy stack, which cannot grow",
        ),
    ],
    ids=["TensorDict class", "int", "no batch dim", "lazy stack"],
)
def test_what_cannot_be_a_shards_rows(
    tmp_path: Path, given: Any, error: type, message: str
) -> None:
    with pytest.raises(error, match=message):
        tclass.shard_writer(tmp_path / "data", given)


def test_bad_writer_arguments(tmp_path: Path) -> None:
    for bad in ("", ".hidden", "a/b", "x" * 201, 7):
        with pytest.raises(ArgumentValueError, match="shard_id must be a name"):
            tclass.shard_writer(tmp_path / "data", Row, bad)  # type: ignore[arg-type]
    with pytest.raises(ArgumentValueError, match="mode must be 'x' .* or 'a'"):
        tclass.shard_writer(tmp_path / "data", Row, mode="w")  # type: ignore[call-overload]


# --- folders that are not (valid) sharded datasets ---------------------------------------


def test_open_refuses_what_is_no_sharded_dataset(tmp_path: Path) -> None:
    with pytest.raises(MissingFileError, match="the folder does not exist"):
        tclass.open_sharded(tmp_path / "nothing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(MissingFileError, match="neither manifest.json nor shards/"):
        tclass.open_sharded(tmp_path / "empty")
    rows(0, 2).memmap(tmp_path / "saved")
    with pytest.raises(NotAFileError, match="is a saved folder .* load_memmap"):
        tclass.open_sharded(tmp_path / "saved")
    with pytest.raises(NotAFileError, match="is a saved folder"):
        tclass.shard_writer(tmp_path / "saved", Row)
    (tmp_path / "file").write_text("x")
    with pytest.raises(NotAFileError, match="is a file"):
        tclass.shard_writer(tmp_path / "file", Row)


def test_open_checks_the_class(tmp_path: Path) -> None:
    path, _ = dataset_of(tmp_path, {"a": [2]})
    with pytest.raises(ClassMismatchError, match="holds shard_records:Row, not Other records"):
        tclass.open_sharded(path, Other)
    with pytest.raises(ClassMismatchError, match="holds shard_records:Row, not TensorDict rows"):
        tclass.open_sharded(path, TensorDict)
    with pytest.raises(ArgumentError, match="cls must be a record class, TensorDict or None"):
        tclass.open_sharded(path, "Row")  # type: ignore[call-overload]


def test_a_shard_of_another_schema_is_named_on_open_and_by_info(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "data"
    for shard_id in ("a", "c"):
        with tclass.shard_writer(path, TensorDict(x=torch.zeros(1, 3), batch_size=[1]), shard_id):
            pass
    odd = TensorDict(x=torch.zeros(2, 4), batch_size=[2])  # written by hand
    odd.memmap(path / "shards" / "b" / "rows")
    with pytest.raises(ShardSchemaError, match=r"shard 'b' .* 'x' is tensor float32 \[4\] here"):
        tclass.open_sharded(path)
    assert main(["info", str(path)]) == 1
    out, err = capsys.readouterr()
    assert "b  2 rows" in out and "!! shard 'b' does not fit" in out
    assert err.startswith("error: shard 'b': shard 'b' does not fit") and err.count("\n") == 1


def test_a_malformed_or_newer_manifest_is_refused(tmp_path: Path) -> None:
    path, _ = dataset_of(tmp_path, {"a": [2]})
    manifest = path / "manifest.json"
    good = json.loads(manifest.read_text())
    cases: list[tuple[object, type[Exception], str]] = [
        ("{", MetadataError, "is not valid JSON"),
        ({**good, "format": "other"}, MetadataError, "not the manifest of a sharded dataset"),
        ({**good, "version": 2}, UnsupportedError, "newer tclass .* version 2"),
        ({**good, "version": "1"}, MetadataError, "'version' must be a positive int"),
        ({**good, "class": 3}, MetadataError, "'class' must be 'module:QualName' or null"),
        ({**good, "layout": [["obs", 1]]}, MetadataError, r"each entry of 'layout' must be"),
        ({**good, "layout": []}, MetadataError, r"no entry for the rows themselves"),
    ]
    for content, error, message in cases:
        manifest.write_text(content if isinstance(content, str) else json.dumps(content))
        with pytest.raises(error, match=message):
            tclass.open_sharded(path, Row)


# --- python -m tclass info ----------------------------------------------------------------


def test_info_shows_the_schema_and_the_shards(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, _ = dataset_of(tmp_path, {"b": [3, 2], "a": [4]})
    (path / "shards" / "c").mkdir()  # claimed, nothing committed
    assert main(["info", str(path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"{path}  sharded dataset (tclass.sharded v1)  shard_records:Row"
    assert "  obs     tensor float32 [3]  : Annotated[Tensor, Spec('3', torch.float32)]" in lines
    assert "  source  value  : str" in lines and "  (rows)  record shard_records.Row []" in lines
    shard_lines = lines[lines.index("shards (in the dataset's order):") + 1 : -1]
    assert [line.split()[:3] for line in shard_lines] == [
        ["a", "4", "rows"], ["b", "5", "rows"], ["c", "0", "rows"],
    ]  # fmt: skip
    assert f"writer pid {os.getpid()}" in shard_lines[0]
    assert lines[-1].startswith("total: 3 shards, 9 rows, ")
    assert main(["info", "--json", str(path)]) == 0
    described = json.loads(capsys.readouterr().out)
    assert described["class"] == "shard_records:Row" and described["problems"] == []
    assert [(s["id"], s["rows"], s["start"]) for s in described["shards"]] == [
        ("a", 4, 0), ("b", 5, 4), ("c", 0, 9),
    ]  # fmt: skip
    assert described["totals"]["rows"] == 9 and described["totals"]["disk_bytes"] > 0


def test_info_of_a_dataset_without_rows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    writer = tclass.shard_writer(tmp_path / "data", Row, "s")
    assert main(["info", str(tmp_path / "data")]) == 0
    out = capsys.readouterr().out
    assert "sharded dataset (tclass.sharded v1)  no rows yet" in out
    assert "total: 1 shard, 0 rows" in out
    writer.close()
