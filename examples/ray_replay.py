"""A replay buffer on disk written by many: Ray collector actors append typed transitions
to a sharded dataset while a learner samples batches from it.

Run it with ``python examples/ray_replay.py`` (needs Ray: ``pip install 'tclass[ray]'``).
It

1. declares a ``Transition`` tensorclass (obs, action, reward, done, and the collector's
   step counter) and starts a local Ray cluster;
2. starts ``--collectors`` actors: each claims its own shard of the buffer folder with
   ``tclass.shard_writer`` and appends ``--chunk`` transitions at a time from a toy
   environment; each append is committed when it returns (a killed collector loses
   nothing it had committed);
3. meanwhile the learner (this process) opens the buffer with ``tclass.open_sharded``,
   ``refresh()``es it to see the newest rows, samples batches uniformly across the shards
   and takes a gradient step on each;
4. prints the throughput: transitions per second written (all collectors) and batches
   per second sampled, then reopens the buffer and checks that every step of every
   collector is there once, in order, and describes it with ``python -m tclass info``.

Pass ``--folder PATH`` to keep the buffer (the default is a temporary folder).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import torch

import tclass
from tclass import ShardedDataset, Spec, tensorclass

OBS_DIM, ACTIONS = 16, 4


@tensorclass
class Transition:
    """One environment step; ``step`` counts the collector's steps (to check the rows)."""

    obs: Annotated[torch.Tensor, Spec("16", torch.float32)]
    action: Annotated[torch.Tensor, Spec("", torch.int64)]
    reward: Annotated[torch.Tensor, Spec("", torch.float32)]
    done: Annotated[torch.Tensor, Spec("", torch.bool)]
    step: Annotated[torch.Tensor, Spec("", torch.int64)]


@dataclass
class Collected:
    """What a collector did: its shard, the transitions it committed and how long it took."""

    shard_id: str
    rows: int
    seconds: float


class Collector:
    """A Ray actor: steps a toy environment and appends its transitions to its own shard."""

    def __init__(self, folder: str, seed: int, chunk: int) -> None:
        self.writer = tclass.shard_writer(folder, Transition)  # claims a new shard
        self.generator = torch.Generator().manual_seed(seed)
        self.weights = torch.randn(OBS_DIM, ACTIONS, generator=self.generator)
        self.chunk = chunk

    def shard_id(self) -> str:
        return self.writer.shard_id

    def collect(self, steps: int) -> Collected:
        start = time.perf_counter()
        for first in range(0, steps, self.chunk):
            self.writer.append(self.transitions(first, min(self.chunk, steps - first)))
        seconds = time.perf_counter() - start
        self.writer.close()
        return Collected(self.writer.shard_id, steps, seconds)

    def transitions(self, first: int, count: int) -> Transition:
        """``count`` steps of a random policy: the reward is a fixed linear function of
        the observation and action (what the learner fits), episodes last 50 steps."""
        obs = torch.randn(count, OBS_DIM, generator=self.generator)
        action = torch.randint(0, ACTIONS, (count,), generator=self.generator)
        reward = (obs @ self.weights).gather(1, action.unsqueeze(1)).squeeze(1)
        step = torch.arange(first, first + count)
        done = step % 50 == 49
        return Transition(
            obs=obs, action=action, reward=reward, done=done, step=step, batch_size=[count]
        )


@dataclass
class Learned:
    batches: int
    seconds: float
    first_loss: float
    last_loss: float
    rows_seen: list[int]


def learn(buffer: ShardedDataset[Transition], running: Any, args: argparse.Namespace) -> Learned:
    """Sample batches from the buffer and fit a linear Q function to the rewards, until
    the collectors are done and ``--min-batches`` batches were sampled."""
    import ray

    model = torch.nn.Linear(OBS_DIM, ACTIONS)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    generator = torch.Generator().manual_seed(0)
    losses: list[float] = []
    rows_seen: list[int] = []
    sampling = 0.0
    while running or len(losses) < args.min_batches:
        if running:
            _, running = ray.wait(running, timeout=0)
        start = time.perf_counter()
        rows = len(buffer.refresh())  # the rows committed until now
        if rows < args.batch_size:
            time.sleep(0.01)
            continue
        batch = buffer[torch.randint(0, rows, (args.batch_size,), generator=generator)]
        q = model(batch.obs).gather(1, batch.action.unsqueeze(1)).squeeze(1)
        loss = torch.nn.functional.mse_loss(q, batch.reward)
        optimizer.zero_grad()
        torch.autograd.backward(loss)
        optimizer.step()
        sampling += time.perf_counter() - start
        losses.append(float(loss.detach()))
        if not rows_seen or rows != rows_seen[-1]:
            rows_seen.append(rows)
    return Learned(len(losses), sampling, losses[0], losses[-1], rows_seen)


def check(folder: Path, collected: list[Collected]) -> ShardedDataset[Transition]:
    """Reopen the buffer: every collector's steps are in its shard, once, in order."""
    buffer = tclass.open_sharded(folder, Transition)
    shards = {shard.shard_id: shard for shard in buffer.shards}
    for done in collected:
        shard = shards[done.shard_id]
        steps = buffer[shard.start : shard.start + shard.rows].step
        assert torch.equal(steps, torch.arange(done.rows)), f"shard {done.shard_id} differs"
    assert len(buffer) == sum(done.rows for done in collected)
    return buffer


def run(folder: Path, args: argparse.Namespace) -> None:
    try:
        import ray
    except ImportError:
        sys.exit("this example needs Ray: pip install 'tclass[ray]'")
    # A new local cluster (address="local"), even where another one runs on this machine.
    ray.init(address="local", num_cpus=args.num_cpus, include_dashboard=False, log_to_driver=False)
    try:
        print(f"1. Ray with {args.num_cpus} CPUs; the buffer: {folder} (one shard per collector)")
        remote = ray.remote(num_cpus=0)(Collector)
        actors: list[Any] = [  # Ray types an actor's methods loosely: Any
            remote.remote(str(folder), seed, args.chunk) for seed in range(args.collectors)
        ]
        shard_ids: list[str] = ray.get([actor.shard_id.remote() for actor in actors])
        print(f"   collectors' shards: {', '.join(shard_ids)}")
        running = [actor.collect.remote(args.steps) for actor in actors]
        buffer = tclass.open_sharded(folder, Transition)
        learned = learn(buffer, list(running), args)
        collected: list[Collected] = ray.get(running)
        wall = max(done.seconds for done in collected)  # the collectors ran side by side
    finally:
        ray.shutdown()
    written = sum(done.rows for done in collected)
    each = sum(done.rows / done.seconds for done in collected) / len(collected)
    print(
        f"2. {args.collectors} collectors wrote {written:,} transitions, {args.chunk} per "
        f"append: {written / wall:,.0f} transitions/s in all ({each:,.0f}/s per collector)"
    )
    sizes = len(learned.rows_seen)
    print(
        f"3. the learner sampled {learned.batches} batches of {args.batch_size} across the "
        f"shards: {learned.batches / learned.seconds:,.0f} batches/s (each: refresh, sample, "
        f"one SGD step); it saw the buffer at {sizes} size{'s' if sizes > 1 else ''}, up to "
        f"{learned.rows_seen[-1]:,} rows; loss {learned.first_loss:.2f} -> "
        f"{learned.last_loss:.2f}"
    )
    buffer = check(folder, collected)
    print(
        f"4. reopened: {len(buffer):,} rows in {len(buffer.shards)} shards, each collector's "
        "steps once and in order"
    )
    info = [sys.executable, "-m", "tclass", "info", str(folder)]
    print(subprocess.run(info, capture_output=True, text=True, check=True).stdout, end="")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--collectors", type=int, default=2, help="collector actors")
    parser.add_argument("--steps", type=int, default=20_000, help="transitions per collector")
    parser.add_argument("--chunk", type=int, default=256, help="transitions per append")
    parser.add_argument("--batch-size", type=int, default=256, help="transitions per batch")
    parser.add_argument(
        "--min-batches", type=int, default=50, help="batches the learner samples at least"
    )
    parser.add_argument("--num-cpus", type=int, default=2, help="CPUs of the Ray cluster")
    parser.add_argument(
        "--folder", type=Path, help="where to keep the buffer (default: a temporary folder)"
    )
    args = parser.parse_args()
    if args.folder is not None:
        run(args.folder, args)
        return
    with tempfile.TemporaryDirectory(prefix="tclass-replay-") as tmp:
        run(Path(tmp) / "buffer", args)


if __name__ == "__main__":
    main()
