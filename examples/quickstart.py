"""tclass in one screen: a batch of transitions, a disk-backed buffer, and a reference.

Run it with ``make demo`` (or ``python examples/quickstart.py [--capacity N]``). It

1. builds a batch of RL transitions as a TensorDict (nested ``next`` entries included)
   and shows indexing, reshaping and stacking over the batch dims;
2. preallocates a replay buffer on disk with MemoryMappedTensor (sparse files: no RAM
   and almost no disk blocks until rows are written), fills it batch by batch and
   samples rows back;
3. pickles the buffer, which sends file references rather than the data.
"""

from __future__ import annotations

import argparse
import os
import pickle
import tempfile
import time
from pathlib import Path

import torch

import tclass
from tclass import MemoryMappedTensor, TensorDict

OBS_SHAPE = (3, 84, 84)


def make_batch(size: int, step: int) -> TensorDict:
    """A batch of transitions as an environment loop would produce them."""
    generator = torch.Generator().manual_seed(step)
    obs = torch.randint(0, 256, (size, *OBS_SHAPE), dtype=torch.uint8, generator=generator)
    return TensorDict(
        {
            "obs": obs,
            "action": torch.randint(0, 6, (size,), generator=generator),
            "reward": torch.rand(size, generator=generator),
            "next": {"obs": obs.roll(1, dims=0), "done": torch.zeros(size, dtype=torch.bool)},
        },
        batch_size=[size],
    )


def show_batch_ops() -> None:
    batch = make_batch(8, step=0)
    print("1. a batch of 8 transitions:")
    print(batch)
    print("   batch[:2]         ->", batch[:2].batch_size, "(every entry sliced, no copy)")
    print("   batch['next','obs'] ->", tuple(batch["next", "obs"].shape))
    print("   reshape(2, 4)     ->", batch.reshape(2, 4).batch_size)
    trajectory = tclass.stack([make_batch(8, step) for step in range(5)], dim=1)
    print("   stack of 5 steps  ->", trajectory.batch_size, "(torch.stack works too)")


def preallocate(folder: Path, capacity: int) -> TensorDict:
    """One sparse file per entry, shaped for ``capacity`` rows."""
    template = make_batch(1, step=0)
    leaves = {}
    for key, value in template.items(include_nested=True, leaves_only=True):
        name = "-".join(key) if isinstance(key, tuple) else key
        leaves[key] = MemoryMappedTensor.empty(
            (capacity, *value.shape[1:]), dtype=value.dtype, filename=folder / f"{name}.memmap"
        )
    return TensorDict(leaves, batch_size=[capacity])


def disk_usage(folder: Path) -> tuple[int, int]:
    """(apparent bytes, bytes actually allocated on disk) of the files in ``folder``."""
    stats = [os.stat(path) for path in folder.iterdir()]
    return sum(s.st_size for s in stats), sum(s.st_blocks * 512 for s in stats)


def fill_and_sample(buffer: TensorDict, folder: Path, batch_size: int, batches: int) -> None:
    apparent, allocated = disk_usage(folder)
    print(f"\n2. replay buffer of {len(buffer):,} rows preallocated in {folder.name}/:")
    print(f"   files total {apparent / 2**30:.2f} GiB, of which {allocated / 2**20:.1f} MiB on disk")
    start = time.perf_counter()
    for step in range(batches):
        rows = torch.arange(step * batch_size, (step + 1) * batch_size)
        buffer[rows] = make_batch(batch_size, step)  # written straight into the files
        if batches >= 10 and (step + 1) % (batches // 5) == 0:
            print(f"   ... {step + 1}/{batches} batches written")
    elapsed = time.perf_counter() - start
    written = batches * batch_size
    _, allocated = disk_usage(folder)
    print(f"   wrote {written:,} rows in {elapsed:.2f}s; {allocated / 2**20:.1f} MiB now on disk")
    sample = buffer[torch.randint(0, written, (32,))]
    print(f"   sampled 32 rows -> {sample.batch_size}, mean reward {sample['reward'].mean():.3f}")
    assert torch.equal(buffer[:batch_size]["obs"], make_batch(batch_size, 0)["obs"])


def show_reference(buffer: TensorDict) -> None:
    payload = pickle.dumps(buffer)
    data = sum(v.numel() * v.element_size() for v in buffer.values(True, leaves_only=True))
    print(f"\n3. pickling the buffer sends file references: {len(payload):,} bytes for "
          f"{data / 2**30:.2f} GiB of data")
    clone = pickle.loads(payload)
    clone["reward"][0] = 42.0  # the unpickled copy maps the same files
    print(f"   a write through the unpickled copy is seen here: reward[0] = {buffer['reward'][0]:.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--capacity", type=int, default=100_000)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--batches", type=int, default=20)
    args = parser.parse_args()
    print(f"tclass {tclass.__version__}, torch {torch.__version__}\n")
    show_batch_ops()
    with tempfile.TemporaryDirectory(prefix="tclass-demo-") as tmp:
        folder = Path(tmp) / "buffer"
        folder.mkdir()
        buffer = preallocate(folder, args.capacity)
        fill_and_sample(buffer, folder, args.batch_size, min(args.batches, args.capacity // args.batch_size))
        show_reference(buffer)


if __name__ == "__main__":
    main()
