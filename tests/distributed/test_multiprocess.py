"""Records across processes: pickled file references, shared memory through queues,
DataLoader workers, concurrent writers, and RPC by reference. Every test starts real
processes (spawn: nothing is inherited, so records must travel the way they would
between unrelated processes)."""

from __future__ import annotations

import os
import pickle
import socket
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.distributed.rpc as rpc
import torch.multiprocessing as mp
from torch.utils.data import DataLoader

import tclass
from tclass import MemoryMappedTensor, TensorClass, TensorDict
from tclass.errors import FileFormatError, MissingFileError

SPAWN = mp.get_context("spawn")
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
GIB = 1 << 30


class Frame(TensorClass):
    pixels: torch.Tensor
    label: torch.Tensor
    source: str = "camera"


def _huge(folder: Path) -> Frame:
    """A 1 GiB memory-mapped record: one row expanded, then sparse files."""
    row = Frame(
        torch.zeros(1, 1024, 1024, dtype=torch.uint8),
        torch.zeros(1, dtype=torch.int64),
        batch_size=[1],
    )
    return row.expand(1024).memmap_like(folder / "huge")


# --- pickling references -------------------------------------------------------------------


def test_pickling_a_gigabyte_record_sends_only_references(tmp_path: Path) -> None:
    record = _huge(tmp_path)
    assert record.pixels.numel() == GIB and record.is_memmap()
    plain = TensorDict(pixels=record.pixels, label=record.label, batch_size=[1024])
    for obj in (record, plain, record[10:20], record.pixels):
        payload = pickle.dumps(obj)
        assert len(payload) < 4096, len(payload)
    back = pickle.loads(pickle.dumps(record))
    assert (
        type(back) is Frame
        and back.pixels.filename == record.pixels.filename
        and back.source == "camera"
    )
    assert (
        os.stat(record.pixels.filename).st_blocks * 512 < 1 << 20
    )  # still sparse: nothing was written


def _write_rows(payload: bytes, report: Any) -> None:
    record = pickle.loads(payload)
    record.pixels[3] = 7
    record[1000:1002] = Frame(
        torch.full((2, 1024, 1024), 9, dtype=torch.uint8), torch.tensor([5, 6]), batch_size=[2]
    )
    report.put((type(record).__name__, record.pixels.filename, record.label.filename))


def test_unpickled_in_another_process_it_maps_the_same_files(tmp_path: Path) -> None:
    record = _huge(tmp_path)
    report = SPAWN.SimpleQueue()
    child = SPAWN.Process(target=_write_rows, args=(pickle.dumps(record), report))
    child.start()
    child.join(60)
    assert child.exitcode == 0
    assert report.get() == ("Frame", record.pixels.filename, record.label.filename)
    assert bool(record.pixels[3].eq(7).all()) and bool(record.pixels[1000:1002].eq(9).all())
    assert record.label[1000:1002].tolist() == [5, 6] and int(record.pixels[4].sum()) == 0


def test_a_reference_to_a_missing_or_resized_file_fails_clearly(tmp_path: Path) -> None:
    record = TensorDict({"x": torch.arange(10.0), "y": torch.zeros(10, 4)}, [10]).memmap(
        tmp_path / "r"
    )
    payload = pickle.dumps(record)
    y_file = Path(record["y"].filename)
    y_file.write_bytes(b"\0" * 8)  # resized under the record
    with pytest.raises(FileFormatError, match=str(y_file)):
        pickle.loads(payload)
    assert y_file.stat().st_size == 8  # not grown back
    x_file = Path(record["x"].filename)
    x_file.unlink()
    with pytest.raises(MissingFileError, match=str(x_file)):
        pickle.loads(payload)
    assert not x_file.exists()  # not created


# --- shared memory through queues ------------------------------------------------------------


def _fill_from_queue(inbox: Any, done: Any) -> None:
    td, frame = inbox.get(), inbox.get()
    shared = td.is_shared() and frame.is_shared()
    td["a"].fill_(3)
    td["nested", "b"][1] = 4
    frame.pixels.add_(1)
    frame.label[:] = torch.arange(4)
    done.put(shared)


def test_shared_records_cross_queues_and_writes_come_back() -> None:
    td = TensorDict(
        {"a": torch.zeros(4), "nested": {"b": torch.zeros(4, 2, dtype=torch.int32)}}, [4]
    ).share_memory_()
    frame = Frame(
        torch.zeros(4, 8, 8, dtype=torch.uint8), torch.zeros(4, dtype=torch.int64), batch_size=[4]
    )
    frame.share_memory_()
    inbox, done = SPAWN.Queue(), SPAWN.SimpleQueue()
    child = SPAWN.Process(target=_fill_from_queue, args=(inbox, done))
    child.start()
    inbox.put(td)
    inbox.put(frame)
    assert done.get() is True
    child.join(60)
    assert child.exitcode == 0
    assert td["a"].tolist() == [3.0] * 4 and td["nested", "b"][1].tolist() == [4, 4]
    assert bool(frame.pixels.eq(1).all()) and frame.label.tolist() == [0, 1, 2, 3]


# --- DataLoader workers ------------------------------------------------------------------------


def test_dataloader_workers_return_records_of_the_class(tmp_path: Path) -> None:
    rows = 64
    dataset = Frame(
        torch.arange(rows, dtype=torch.uint8)[:, None, None].expand(rows, 4, 4).clone(),
        torch.arange(rows),
        source="disk",
        batch_size=[rows],
    ).memmap(tmp_path / "dataset")
    loader = DataLoader(
        dataset,
        batch_size=8,
        num_workers=2,
        multiprocessing_context=SPAWN,
        shuffle=True,
        generator=torch.Generator().manual_seed(0),
    )
    seen = []
    for batch in loader:
        assert (
            type(batch) is Frame and batch.batch_size == torch.Size([8]) and batch.source == "disk"
        )
        assert not batch.is_memmap()  # rows were read into fresh memory and shared back
        assert torch.equal(batch.pixels[:, 0, 0].long(), batch.label)
        seen += batch.label.tolist()
    assert sorted(seen) == list(range(rows)) and seen != list(range(rows))


# --- concurrent writers ----------------------------------------------------------------------


def _write_every_other_row(record: TensorDict, start: int, go: Any) -> None:
    go.wait(30)
    x = record["x"]
    for row in range(start, x.shape[0], 2):  # neighbours share pages with the other writer
        x[row] = row + 1
        record["y"][row] = -row


def test_two_processes_write_disjoint_rows_at_once(tmp_path: Path) -> None:
    rows = 4096
    record = TensorDict(
        {"x": torch.zeros(1, 300), "y": torch.zeros(1, dtype=torch.int64)}, [1]
    ).expand(rows)
    record = record.memmap_like(tmp_path / "shared")
    go = SPAWN.Event()
    writers = [
        SPAWN.Process(target=_write_every_other_row, args=(record, start, go)) for start in (0, 1)
    ]
    for writer in writers:
        writer.start()
    go.set()
    for writer in writers:
        writer.join(60)
        assert writer.exitcode == 0
    expected = torch.arange(1, rows + 1, dtype=torch.float32)
    back = TensorDict.load_memmap(tmp_path / "shared")
    for source in (record, back):
        assert torch.equal(source["x"], expected[:, None].expand(rows, 300))
        assert torch.equal(source["y"], -torch.arange(rows))


# --- RPC by reference --------------------------------------------------------------------------


def fill_ones(record: Frame, rows: list[int]) -> Frame:
    """Runs on worker 1."""
    record[rows] = Frame(
        torch.ones(len(rows), *record.pixels.shape[1:], dtype=torch.uint8),
        torch.ones(len(rows), dtype=torch.int64),
        source="worker1",
        batch_size=[len(rows)],
    )
    return record


def _rpc_worker(rank: int, port: int, folder: str, report: Any) -> None:
    options = rpc.TensorPipeRpcBackendOptions(init_method=f"tcp://127.0.0.1:{port}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # a deprecation notice from inside torch
        rpc.init_rpc(f"worker{rank}", rank=rank, world_size=2, rpc_backend_options=options)
    if rank == 0:
        rows = 40
        blank = Frame(
            torch.zeros(1, 64, 64, 3, dtype=torch.uint8),
            torch.zeros(1, dtype=torch.int64),
            batch_size=[1],
        )
        record = blank.expand(rows).memmap_like(os.path.join(folder, "images"))
        index = [4, 5, 6, 7, rows - 2]
        out = rpc.rpc_sync("worker1", fill_ones, args=(record, index))
        others = [row for row in range(rows) if row not in index]
        report.put(
            [
                type(out).__name__,
                out.pixels.filename == record.pixels.filename,
                bool(record.pixels[index].eq(1).all()),
                int(record.pixels[others].sum()),
                record.label.tolist().count(1),
            ]
        )
    rpc.shutdown()


def test_rpc_passes_a_memory_mapped_record_by_reference(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    report = SPAWN.SimpleQueue()
    workers = [
        SPAWN.Process(target=_rpc_worker, args=(rank, port, str(tmp_path), report))
        for rank in (0, 1)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(90)
        assert worker.exitcode == 0
    assert report.get() == ["Frame", True, True, 0, 5]


def test_the_rpc_example_runs_small() -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-W",
            "error",
            str(EXAMPLES / "distributed_rpc.py"),
            "--rows",
            "12",
            "--side",
            "32",
            "--calls",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "worker 1 filled rows [4, 5, 6, 7, 10]; worker 0 sees the ones" in result.stdout
    assert "round trips (ms): " in result.stdout


def test_memory_mapped_tensors_share_files_not_bytes(tmp_path: Path) -> None:
    """What the references are made of: a view keeps its file, offset and strides."""
    tensor = MemoryMappedTensor.zeros(8, 4, filename=tmp_path / "t.memmap")
    view = tensor[2:6, 1]
    back = pickle.loads(pickle.dumps(view))
    back.fill_(5)
    assert tensor[2:6, 1].tolist() == [5.0] * 4 and tensor.sum() == 20
    assert tclass.TensorDict(v=view, batch_size=[4]).is_memmap()


_MAIN_SCRIPT = """
import torch
import torch.multiprocessing as mp
from tclass import TensorClass, lazy_stack


class Ep(TensorClass):
    r: torch.Tensor
    tag: str = "x"


def producer(queue, done):
    queue.put(Ep(r=torch.arange(3.0), tag="sent", batch_size=[3]).consolidate())
    queue.put(lazy_stack([Ep(r=torch.ones(n), batch_size=[n]) for n in (1, 2)]))
    done.wait(60)


if __name__ == "__main__":
    ctx = mp.get_context("spawn")
    queue, done = ctx.Queue(), ctx.Event()
    worker = ctx.Process(target=producer, args=(queue, done))
    worker.start()
    got, stack = queue.get(timeout=60), queue.get(timeout=60)
    done.set()
    worker.join(60)
    print(type(got).__name__, got.tag, got.r.tolist(), type(stack[1]).__name__, stack.batch_size)
"""


def test_a_record_of_the_main_scripts_class_comes_back_from_a_spawned_worker(
    tmp_path: Path,
) -> None:
    """The worker runs the script as ``__mp_main__``, so what it sends names
    ``__mp_main__.Ep``; multiprocessing makes that module the parent's ``__main__``, and
    the class is found there, as pickle finds it (it was a ClassResolutionError)."""
    script = tmp_path / "main_script.py"
    script.write_text(_MAIN_SCRIPT)
    env = {**os.environ, "PYTHONPATH": str(Path(tclass.__file__).resolve().parents[1])}
    result = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=180, env=env
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [
        "Ep",
        "sent",
        "[0.0,",
        "1.0,",
        "2.0]",
        "Ep",
        "torch.Size([2,",
        "-1])",
    ]
