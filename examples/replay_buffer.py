"""A replay buffer on disk: typed transitions in a memory-mapped circular buffer.

Run it with ``make demo`` (or ``python examples/replay_buffer.py [--capacity N] ...``). It

1. declares a ``Transition`` tensorclass whose annotations are its schema: each tensor
   field's feature dims and dtype (``Spec``), plus one ``str`` for the whole batch;
2. preallocates a circular buffer of ``--capacity`` rows from the schema alone with
   ``Transition.allocate``: sparse files (no data written, no example row needed);
3. writes whole batches, wrapping around at the end, so the oldest rows are replaced;
4. samples rows uniformly by index (only those rows are read from the files);
5. saves the cursor next to the rows and reloads everything with ``Transition.load_memmap``;
6. grows the reloaded buffer by ``--grow`` rows with ``append_memmap_`` (the saved rows are
   neither read nor rewritten) and keeps writing into the larger ring;
7. describes the saved folder with ``python -m tclass info``.

Pass ``--folder PATH`` to keep the buffer (the default is a temporary folder).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Annotated

import torch

import tclass
from tclass import Spec, TensorDict, tensorclass

FRAMES = {"frames": 4, "h": 84, "w": 84}  # four stacked 84x84 grey frames, as in Atari agents
OBS_SHAPE = tuple(FRAMES.values())


@tensorclass
class Transition:
    """One row of the buffer (the specs are the feature dims, after the batch dims);
    ``step`` is the global write counter, to check wrapping."""

    obs: Annotated[torch.Tensor, Spec("frames h w", torch.uint8)]
    action: Annotated[torch.Tensor, Spec("", torch.int64)]
    reward: Annotated[torch.Tensor, Spec("", torch.float32)]
    done: Annotated[torch.Tensor, Spec("", torch.bool)]
    step: Annotated[torch.Tensor, Spec("", torch.int64)]
    env: str = "pong"


class Progress:
    """Prints ``label done/total`` at most once a second, so only slow steps show it."""

    def __init__(self, label: str, total: int) -> None:
        self.label, self.total = label, total
        self.last = time.perf_counter()

    def update(self, done: int) -> None:
        now = time.perf_counter()
        if now - self.last >= 1.0 and done < self.total:
            print(f"   ... {self.label} {done:,}/{self.total:,}", flush=True)
            self.last = now


class ReplayBuffer:
    """A fixed number of transitions in files; new batches replace the oldest rows."""

    def __init__(self, storage: Transition, cursor: int = 0, size: int = 0) -> None:
        self.storage = storage  # memory-mapped: writes go to the files
        self.cursor = cursor  # where the next row goes
        self.size = size  # how many rows hold data

    @classmethod
    def create(cls, folder: Path, capacity: int) -> ReplayBuffer:
        """Allocates ``folder/rows`` for ``capacity`` rows of the schema (zero-filled,
        sparse: the files take no disk space until written)."""
        folder.mkdir(parents=True, exist_ok=True)
        return cls(Transition.allocate([capacity], dims=FRAMES, prefix=folder / "rows"))

    @property
    def capacity(self) -> int:
        return len(self.storage)

    def extend(self, batch: Transition) -> None:
        """Writes a whole batch at the cursor, wrapping around at the end: one or two
        contiguous slices, each written straight into the files."""
        count, start = len(batch), self.cursor
        if count > self.capacity:
            raise ValueError(f"a batch of {count} rows does not fit a buffer of {self.capacity}")
        head = min(count, self.capacity - start)
        self.storage[start : start + head] = batch[:head]
        if head < count:  # wrap around: the rest replaces the oldest rows
            self.storage[: count - head] = batch[head:]
        self.cursor = (start + count) % self.capacity
        # Filled rows are always [0, size): writes fill empty rows in order.
        self.size = self.capacity if head < count else max(self.size, start + count)

    def grow(self, extra: int) -> None:
        """``extra`` more rows of capacity, appended to the files after the last row (the
        saved rows are neither read nor rewritten). The new rows are empty: the ring
        takes them as its oldest, so the cursor stays where it is and reaches them after
        the rows it replaces first, and the buffer keeps holding the newest writes."""
        empty = self.storage[0].apply(torch.zeros_like).expand(extra)
        self.storage.append_memmap_(empty)

    def sample(self, count: int, generator: torch.Generator) -> Transition:
        """``count`` rows drawn uniformly (with replacement) from the filled ones."""
        index = torch.randint(0, self.size, (count,), generator=generator)
        sample: Transition = self.storage[index]
        return sample

    def save(self, folder: Path) -> None:
        """The rows are already in ``folder/rows``; write the cursor next to them."""
        state = TensorDict({"cursor": torch.tensor(self.cursor), "size": torch.tensor(self.size)})
        state.memmap(folder / "state")

    @classmethod
    def load(cls, folder: Path) -> ReplayBuffer:
        """Maps the rows (reads nothing) and reads the cursor."""
        rows = Transition.load_memmap(folder / "rows")
        state = TensorDict.load_memmap(folder / "state")
        return cls(rows, int(state["cursor"]), int(state["size"]))


def make_batch(size: int, first_step: int) -> Transition:
    """A batch of transitions as an environment loop would produce them."""
    generator = torch.Generator().manual_seed(first_step)
    return Transition(
        obs=torch.randint(0, 256, (size, *OBS_SHAPE), dtype=torch.uint8, generator=generator),
        action=torch.randint(0, 6, (size,), generator=generator),
        reward=torch.rand(size, generator=generator),
        done=torch.rand(size, generator=generator) < 0.01,
        step=torch.arange(first_step, first_step + size),
        batch_size=[size],
    )


def disk_usage(folder: Path) -> tuple[int, int]:
    """(apparent bytes, bytes actually allocated on disk) of the files under ``folder``."""
    stats = [os.stat(Path(root) / name) for root, _, names in os.walk(folder) for name in names]
    return sum(s.st_size for s in stats), sum(s.st_blocks * 512 for s in stats)


def mib(count: int) -> str:
    return f"{count / 2**20:,.1f} MiB"


def fill(buffer: ReplayBuffer, batch_size: int, batches: int) -> int:
    """Writes ``batches`` batches; returns the number of rows written."""
    progress = Progress("batches written", batches)
    start = time.perf_counter()
    for index in range(batches):
        buffer.extend(make_batch(batch_size, index * batch_size))
        progress.update(index + 1)
    written = batch_size * batches
    laps = written / buffer.capacity
    print(
        f"2. wrote {batches} batches of {batch_size} = {written:,} rows in "
        f"{time.perf_counter() - start:.2f}s ({laps:.2f} laps of the buffer)"
    )
    print(f"   cursor at row {buffer.cursor:,}, {buffer.size:,} rows filled")
    return written


def show_sample(buffer: ReplayBuffer, written: int, batch_size: int) -> None:
    sample = buffer.sample(256, torch.Generator().manual_seed(0))
    assert int(sample.step.min()) >= written - buffer.size, "only the newest rows remain"
    step = int(sample.step[0])  # regenerate the batch that row came from and compare
    first = step - step % batch_size
    assert torch.equal(sample.obs[0], make_batch(batch_size, first).obs[step - first])
    print(
        f"3. sampled {len(sample)} rows uniformly by index -> {type(sample).__name__} "
        f"{list(sample.batch_size)}, mean reward {float(sample.reward.mean()):.3f}"
    )
    print(
        f"   their steps span {int(sample.step.min()):,}..{int(sample.step.max()):,}: "
        f"only the newest {buffer.size:,} of {written:,} writes remain"
    )


def reload_and_check(folder: Path, buffer: ReplayBuffer) -> None:
    buffer.save(folder)
    start = time.perf_counter()
    loaded = ReplayBuffer.load(folder)
    elapsed = time.perf_counter() - start
    assert (loaded.cursor, loaded.size) == (buffer.cursor, buffer.size)
    rows = torch.arange(0, loaded.size, max(1, loaded.size // 64))
    assert (loaded.storage[rows] == buffer.storage[rows]).all()
    print(
        f"4. saved the cursor; reloaded with Transition.load_memmap in {elapsed * 1e3:.1f} ms: "
        f"{type(loaded.storage).__name__} {list(loaded.storage.batch_size)}"
    )
    print(
        f"   env {loaded.storage.env!r}, cursor {loaded.cursor:,}, "
        f"{len(rows)} spot-checked rows equal"
    )


def grow_and_fill(folder: Path, extra: int, batch_size: int, written: int) -> None:
    buffer = ReplayBuffer.load(folder)
    before = buffer.capacity
    start = time.perf_counter()
    buffer.grow(extra)
    elapsed = time.perf_counter() - start
    print(
        f"5. grew the buffer from {before:,} to {buffer.capacity:,} rows with append_memmap_ "
        f"in {elapsed * 1e3:.1f} ms (the saved rows untouched)"
    )
    batches = max(1, (extra + before) // batch_size)
    for index in range(batches):
        first = written + index * batch_size
        buffer.extend(make_batch(batch_size, first))
    written += batches * batch_size
    buffer.save(folder)
    sample = buffer.sample(256, torch.Generator().manual_seed(1))
    assert int(sample.step.min()) >= written - buffer.size, "only the newest rows remain"
    assert Transition.load_memmap(folder / "rows").batch_size == (buffer.capacity,)
    print(
        f"   wrote {batches} more batches: {buffer.size:,} rows filled, the newest of "
        f"{written:,} writes; a reload sees {buffer.capacity:,} rows"
    )


def show_info(folder: Path) -> None:
    command = [sys.executable, "-m", "tclass", "info", str(folder / "rows")]
    result = subprocess.run(command, capture_output=True, text=True, check=True)
    print(f"6. python -m tclass info {folder.name}/rows:")
    print("\n".join("   " + line for line in result.stdout.rstrip().splitlines()))


def run(folder: Path, capacity: int, batch_size: int, batches: int, grow: int) -> None:
    print(f"tclass {tclass.__version__}, torch {torch.__version__}")
    buffer = ReplayBuffer.create(folder, capacity)
    apparent, allocated = disk_usage(folder)
    print(f"1. preallocated {capacity:,} transitions with Transition.allocate in {folder}/rows")
    print(
        f"   files total {mib(apparent)}, of which {mib(allocated)} on disk (sparse until written)"
    )
    written = fill(buffer, batch_size, batches)
    print(f"   {mib(disk_usage(folder)[1])} now on disk")
    show_sample(buffer, written, batch_size)
    reload_and_check(folder, buffer)
    grow_and_fill(folder, grow, batch_size, written)
    show_info(folder)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--capacity", type=int, default=10_000, help="rows the buffer holds")
    parser.add_argument("--batch-size", type=int, default=256, help="rows per write")
    parser.add_argument(
        "--batches", type=int, default=50, help="writes (more rows than capacity wrap)"
    )
    parser.add_argument(
        "--grow", type=int, help="rows added to the reloaded buffer (default: half its capacity)"
    )
    parser.add_argument(
        "--folder", type=Path, help="where to keep the buffer (default: a temporary folder)"
    )
    args = parser.parse_args()
    grow = args.capacity // 2 if args.grow is None else args.grow
    if args.folder is not None:
        run(args.folder, args.capacity, args.batch_size, args.batches, grow)
        return
    with tempfile.TemporaryDirectory(prefix="tclass-replay-") as tmp:
        run(Path(tmp) / "buffer", args.capacity, args.batch_size, args.batches, grow)


if __name__ == "__main__":
    main()
