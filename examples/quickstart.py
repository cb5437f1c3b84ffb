"""tclass in one screen: typed transitions, a disk-backed buffer, and a reference.

Run it with ``python examples/quickstart.py [--capacity N]`` (``make demo`` runs
``replay_buffer.py``). It

1. declares a ``Transition`` tensorclass (tensor fields, a nested ``Step`` record and a
   plain ``str`` field) and shows indexing, reshaping and stacking over the batch dims;
2. preallocates a replay buffer on disk with ``memmap_like`` (sparse files: no RAM and
   almost no disk blocks until rows are written), fills it batch by batch and samples
   rows back;
3. reloads the saved folder with ``Transition.load_memmap`` (maps files, reads nothing);
4. pickles the buffer, which sends file references rather than the data.
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
from tclass import TensorClass

OBS_SHAPE = (3, 84, 84)


class Step(TensorClass):
    """What the environment returned after the action."""

    obs: torch.Tensor
    done: torch.Tensor


class Transition(TensorClass):
    """One row of the replay buffer; ``env`` is one string for the whole batch."""

    obs: torch.Tensor
    action: torch.Tensor
    reward: torch.Tensor
    next: Step
    env: str = "pong"


def make_batch(size: int, step: int) -> Transition:
    """A batch of transitions as an environment loop would produce them."""
    generator = torch.Generator().manual_seed(step)
    obs = torch.randint(0, 256, (size, *OBS_SHAPE), dtype=torch.uint8, generator=generator)
    return Transition(
        obs=obs,
        action=torch.randint(0, 6, (size,), generator=generator),
        reward=torch.rand(size, generator=generator),
        next=Step(obs.roll(1, dims=0), torch.zeros(size, dtype=torch.bool), batch_size=[size]),
        batch_size=[size],
    )


def show_batch_ops() -> None:
    batch = make_batch(8, step=0)
    print("1. a batch of 8 transitions:")
    print(batch)
    print("   batch[:2]         ->", batch[:2].batch_size, "(every field sliced, no copy)")
    print("   batch.next.obs    ->", tuple(batch.next.obs.shape), "(a typed nested Step)")
    print(
        "   reshape(2, 4)     ->",
        batch.reshape(2, 4).batch_size,
        f"env still {batch.reshape(2, 4).env!r}",
    )
    trajectory = tclass.stack([make_batch(8, step) for step in range(5)], dim=1)
    print("   stack of 5 steps  ->", trajectory.batch_size, "(torch.stack works too)")
    mixed = tclass.stack([batch[0], batch[1].replace(env="breakout")])
    print("   different envs    ->", mixed.env, "(one value per element)")
    episodes = [make_batch(length, step) for step, length in enumerate((3, 5, 4))]
    padded, masks = tclass.pad_sequence(episodes, return_mask=True)
    print(
        "   pad_sequence      ->", padded.batch_size, "valid steps", masks["reward"].sum(1).tolist()
    )
    small = batch[:4].replace(obs=torch.zeros(4, 3, 42, 42, dtype=torch.uint8))
    agents = tclass.lazy_stack([batch[:4], small])  # obs shapes differ: kept apart, not copied
    print(
        "   lazy_stack        ->",
        type(agents).__name__,
        agents.batch_size,
        f"agents[1].obs {tuple(agents[1].obs.shape)}, "
        f"rewards stack to {tuple(agents.reward.shape)}",
    )


def preallocate(folder: Path, capacity: int) -> Transition:
    """The buffer's folder: one row expanded to ``capacity`` rows (a view, no memory),
    then ``memmap_like`` allocates the files without writing them (sparse)."""
    rows: Transition = make_batch(1, step=0)[0].expand(capacity)
    return rows.memmap_like(folder)


def disk_usage(folder: Path) -> tuple[int, int]:
    """(apparent bytes, bytes actually allocated on disk) of the files under ``folder``."""
    stats = [os.stat(Path(root) / name) for root, _, names in os.walk(folder) for name in names]
    return sum(s.st_size for s in stats), sum(s.st_blocks * 512 for s in stats)


def fill_and_sample(buffer: Transition, folder: Path, batch_size: int, batches: int) -> None:
    apparent, allocated = disk_usage(folder)
    print(f"\n2. replay buffer of {len(buffer):,} rows preallocated in {folder.name}/:")
    print(
        f"   files total {apparent / 2**30:.2f} GiB, of which {allocated / 2**20:.1f} MiB on disk"
    )
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
    print(
        f"   sampled 32 rows -> {type(sample).__name__} {sample.batch_size}, mean reward "
        f"{sample.reward.mean():.3f}"
    )
    assert torch.equal(buffer[:batch_size].obs, make_batch(batch_size, 0).obs)


def reload(folder: Path, rows: int) -> Transition:
    start = time.perf_counter()
    loaded = Transition.load_memmap(folder)
    elapsed = time.perf_counter() - start
    print(
        f"\n3. Transition.load_memmap({folder.name}/) in {elapsed * 1e3:.1f} ms maps the files, "
        f"reads nothing: {type(loaded).__name__} {loaded.batch_size}, env {loaded.env!r}"
    )
    assert torch.equal(loaded[:rows].reward, make_batch(rows, 0).reward)
    return loaded


def show_reference(buffer: Transition) -> None:
    payload = pickle.dumps(buffer)
    data = sum(v.numel() * v.element_size() for v in buffer.values(True, leaves_only=True))
    print(
        f"\n4. pickling the buffer sends file references: {len(payload):,} bytes for "
        f"{data / 2**30:.2f} GiB of data"
    )
    clone = pickle.loads(payload)
    clone.reward[0] = 42.0  # the unpickled copy maps the same files
    print(f"   a write through the unpickled copy is seen here: reward[0] = {buffer.reward[0]:.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--capacity",
        type=int,
        default=100_000,
        help="rows of the replay buffer preallocated on disk (default 100000: 3.9 GiB of sparse "
        "files)",
    )
    parser.add_argument(
        "--batch-size", type=int, default=256, help="rows per write into the buffer (default 256)"
    )
    parser.add_argument(
        "--batches",
        type=int,
        default=20,
        help="batches to write, at most capacity / batch size (default 20)",
    )
    args = parser.parse_args()
    print(f"tclass {tclass.__version__}, torch {torch.__version__}\n")
    show_batch_ops()
    with tempfile.TemporaryDirectory(prefix="tclass-demo-") as tmp:
        folder = Path(tmp) / "buffer"
        buffer = preallocate(folder, args.capacity)
        fill_and_sample(
            buffer, folder, args.batch_size, min(args.batches, args.capacity // args.batch_size)
        )
        show_reference(reload(folder, args.batch_size))


if __name__ == "__main__":
    main()
