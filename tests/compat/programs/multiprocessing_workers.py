"""Worker processes writing into a shared collection, the replay-buffer collector
pattern: a TensorDict in shared memory (``share_memory_``) and a memory-mapped one, passed
to ``torch.multiprocessing`` workers that fill their own rows.
"""

import tempfile

import torch
import torch.multiprocessing as mp

from compat.lib import TensorDict


def fill(storage: TensorDict, worker: int, rows: int) -> None:
    sl = slice(worker * rows, (worker + 1) * rows)
    storage[sl] = TensorDict(
        {"obs": torch.full((rows, 3), float(worker)), "worker": torch.full((rows,), worker)},
        [rows],
    )


def run_workers(storage: TensorDict, n_workers: int, rows: int) -> None:
    """One forked worker per slice of rows; each must exit cleanly."""
    ctx = mp.get_context("fork")
    procs = [ctx.Process(target=fill, args=(storage, w, rows)) for w in range(n_workers)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
        assert p.exitcode == 0


def main() -> None:
    n_workers, rows = 3, 4
    shared = TensorDict(
        {"obs": torch.zeros(n_workers * rows, 3), "worker": torch.full((n_workers * rows,), -1)},
        [n_workers * rows],
    ).share_memory_()
    run_workers(shared, n_workers, rows)
    assert shared["worker"].tolist() == [w for w in range(n_workers) for _ in range(rows)]
    assert shared["obs"][5].tolist() == [1.0, 1.0, 1.0]

    with tempfile.TemporaryDirectory() as path:
        mm = TensorDict(
            {
                "obs": torch.zeros(n_workers * rows, 3),
                "worker": torch.full((n_workers * rows,), -1),
            },
            [n_workers * rows],
        ).memmap_(path)
        run_workers(mm, n_workers, rows)
        assert mm["worker"].tolist() == [w for w in range(n_workers) for _ in range(rows)]
        assert TensorDict.load_memmap(path)["obs"][11].tolist() == [2.0, 2.0, 2.0]
