"""Where lazy stacks, records and Python values meet: a collector's episodes of different
lengths as a lazy stack of tensorclass steps (one ``env`` string per step), read, padded,
saved in place and reloaded both as the class and as a TensorDict; a record holding a lazy
stack, stacked and saved; records selected by a mask, edited, and written back.
"""

import tempfile

import torch

from compat import lib as tensordict
from compat.lib import TensorDict, tensorclass


@tensorclass
class Step:
    obs: torch.Tensor
    reward: torch.Tensor
    env: str = "pong"


@tensorclass
class Episode:
    steps: TensorDict
    name: str


def _episode(length: int, base: int) -> Step:
    return torch.stack(
        [
            Step(
                obs=torch.full((3,), float(base + t)),
                reward=torch.tensor(float(t)),
                env=f"e{base}",
                batch_size=[],
            )
            for t in range(length)
        ]
    )


def _collector() -> None:
    rollout = tensordict.lazy_stack([_episode(2, 0), _episode(4, 10)])
    assert isinstance(rollout, Step)
    assert rollout.batch_size == torch.Size([2, -1])
    assert rollout.env == [["e0", "e0"], ["e10"] * 4]
    assert rollout[1].env == ["e10"] * 4 and rollout[1, 2].env == "e10"
    assert rollout[:, 0].env == ["e0", "e10"]
    assert rollout[torch.tensor([False, True])].env == [["e10"] * 4]
    padded = tensordict.pad_sequence(list(rollout.unbind(0)))
    assert padded.batch_size == torch.Size([2, 4])
    assert padded.obs[..., 0].tolist() == [[0.0, 1.0, 0.0, 0.0], [10.0, 11.0, 12.0, 13.0]]
    assert padded.env == [["e0", "e0", None, None], ["e10"] * 4]
    doubled = rollout.apply(lambda t: t * 2)
    assert doubled[1].reward.tolist() == [0.0, 2.0, 4.0, 6.0] and doubled.env == rollout.env
    with tempfile.TemporaryDirectory() as folder:
        rollout.memmap_(folder)
        assert rollout.is_memmap()
        rollout[0] = _episode(2, 90)
        back = Step.load_memmap(folder)
        assert isinstance(back, Step) and back.batch_size == torch.Size([2, -1])
        assert back.env == [["e90", "e90"], ["e10"] * 4]
        assert back[0].obs[:, 0].tolist() == [90.0, 91.0]
        as_td = TensorDict.load_memmap(folder)
        assert isinstance(as_td, Step) and as_td[1].reward.tolist() == [0.0, 1.0, 2.0, 3.0]


def _record_holding_lazy() -> None:
    steps = tensordict.lazy_stack([TensorDict({"o": torch.ones(i + 1) * i}, []) for i in range(3)])
    episode = Episode(steps=steps, name="ep", batch_size=[3])
    assert episode[2].steps["o"].tolist() == [2.0, 2.0, 2.0]
    assert episode[1:].steps.batch_size == torch.Size([2])
    both = torch.stack([episode, episode.clone()])
    assert both.batch_size == torch.Size([2, 3]) and both.name == [["ep"] * 3] * 2
    assert both[1, 2].steps["o"].tolist() == [2.0, 2.0, 2.0]
    with tempfile.TemporaryDirectory() as folder:
        both.memmap(folder)
        back = Episode.load_memmap(folder)
        assert back.batch_size == torch.Size([2, 3])
        assert back[1, 1].steps["o"].tolist() == [1.0, 1.0] and back.name[0] == ["ep"] * 3
    edited = episode.clone()
    edited[1] = Episode(steps=TensorDict({"o": torch.full((2,), 9.0)}, []), name="x", batch_size=[])
    assert edited.steps[1]["o"].tolist() == [9.0, 9.0] and edited.name == ["ep", "x", "ep"]
    assert episode.steps[1]["o"].tolist() == [1.0, 1.0]


def _mask_write_back() -> None:
    buffer = _episode(5, 0)
    mask = buffer.reward > 1
    chosen = buffer[mask]
    assert chosen.env == ["e0"] * 3
    chosen.reward = chosen.reward * 10
    chosen.env = "changed"
    buffer[mask] = chosen
    assert buffer.reward.tolist() == [0.0, 1.0, 20.0, 30.0, 40.0]
    assert buffer.env == ["e0", "e0", "changed", "changed", "changed"]
    lazy = tensordict.lazy_stack([_episode(1, k)[0] for k in range(4)])
    picked = torch.tensor([True, False, True, True])
    lazy[picked] = lazy[picked].apply(lambda t: t + 100)
    assert lazy.reward.tolist() == [100.0, 0.0, 100.0, 100.0]
    assert lazy.env == ["e0", "e1", "e2", "e3"]


def main() -> None:
    _collector()
    _record_holding_lazy()
    _mask_write_back()


if __name__ == "__main__":
    main()
