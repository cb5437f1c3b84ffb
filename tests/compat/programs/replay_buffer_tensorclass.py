"""A memory-mapped circular replay buffer of tensorclass transitions.

Preallocated from one example transition with ``expand(...).memmap_like(prefix)``, written
batch by batch with wrap-around, sampled with random indices, saved and reloaded from disk.
"""

import tempfile

import torch

from compat.lib import TensorDict, tensorclass


@tensorclass
class Observation:
    pixels: torch.Tensor
    position: torch.Tensor


@tensorclass
class Transition:
    obs: Observation
    action: torch.Tensor
    reward: torch.Tensor
    done: torch.Tensor
    next_obs: Observation


def make_batch(n: int, start: int) -> Transition:
    steps = torch.arange(start, start + n)
    obs = Observation(
        pixels=(steps.view(n, 1, 1, 1) % 255).to(torch.uint8).expand(n, 3, 8, 8).clone(),
        position=steps.float().unsqueeze(-1).expand(n, 2).clone(),
        batch_size=[n],
    )
    return Transition(
        obs=obs,
        action=steps % 4,
        reward=steps.float() * 0.1,
        done=steps % 7 == 0,
        next_obs=obs.clone(),
        batch_size=[n],
    )


class ReplayBuffer:
    def __init__(self, capacity: int, example: Transition, prefix: str) -> None:
        self.storage = example[0].expand(capacity).memmap_like(prefix)
        self.capacity = capacity
        self.cursor = 0
        self.size = 0

    def extend(self, batch: Transition) -> None:
        n = batch.batch_size[0]
        idx = torch.arange(self.cursor, self.cursor + n) % self.capacity
        self.storage[idx] = batch
        self.cursor = (self.cursor + n) % self.capacity
        self.size = min(self.size + n, self.capacity)

    def sample(self, n: int, generator: torch.Generator) -> Transition:
        idx = torch.randint(0, self.size, (n,), generator=generator)
        return self.storage[idx]


def main() -> None:
    with tempfile.TemporaryDirectory() as prefix:
        example = make_batch(1, 0)
        rb = ReplayBuffer(capacity=20, example=example, prefix=prefix)
        assert isinstance(rb.storage, Transition)
        assert rb.storage.batch_size == torch.Size([20])
        assert rb.storage.is_memmap()
        assert rb.storage.obs.pixels.dtype == torch.uint8
        assert (rb.storage.reward == 0).all()

        for start in range(0, 50, 10):
            rb.extend(make_batch(10, start))
        assert rb.size == 20 and rb.cursor == 10
        # slots 0..9 hold steps 40..49, slots 10..19 hold 30..39
        assert rb.storage.action[:10].tolist() == [s % 4 for s in range(40, 50)]
        assert torch.allclose(rb.storage.reward[10:], torch.arange(30, 40).float() * 0.1)
        assert rb.storage.obs.pixels[3, 0, 0, 0].item() == 43

        sample = rb.sample(8, torch.Generator().manual_seed(0))
        assert isinstance(sample, Transition)
        assert isinstance(sample.obs, Observation)
        assert sample.batch_size == torch.Size([8])
        steps = (sample.reward * 10).round().long()
        assert torch.equal(sample.action, steps % 4)
        assert torch.equal(sample.done, steps % 7 == 0)
        assert torch.equal(sample.obs.position[:, 0].long(), steps)

        # the files hold the data: a fresh load sees every write
        loaded = Transition.load_memmap(prefix)
        assert isinstance(loaded, Transition)
        assert torch.equal(loaded.action, rb.storage.action)
        assert torch.equal(loaded.next_obs.pixels, rb.storage.next_obs.pixels)
        assert (loaded == rb.storage).all()

        # a TensorDict view of the same storage
        as_td = loaded.to_tensordict()
        assert isinstance(as_td, TensorDict)
        assert as_td["obs", "position"].shape == (20, 2)
        assert set(as_td.keys(True, True)) >= {
            ("obs", "pixels"),
            "reward",
            ("next_obs", "position"),
        }
