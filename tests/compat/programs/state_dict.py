"""``state_dict``/``load_state_dict`` on TensorDicts and tensorclasses, as checkpointing
code and torchsnapshot use them: flat keys, ``keep_vars``, loading into preallocated and
memory-mapped destinations, and into a module.
"""

import torch
from torch import nn

from compat.lib import TensorDict, tensorclass


@tensorclass
class Agent:
    policy: TensorDict
    step: torch.Tensor


def main() -> None:
    td = TensorDict({"a": torch.randn(3), "b": TensorDict({"c": torch.randn(3, 1)}, [3, 1])}, [3])
    sd = td.state_dict()
    assert "a" in sd
    assert any(k.endswith("c") for k in sd)

    dest = TensorDict({"a": torch.zeros(3), "b": TensorDict({"c": torch.zeros(3, 1)}, [3, 1])}, [3])
    dest.load_state_dict(sd)
    assert (dest == td).all()
    assert dest["b"].batch_size == td["b"].batch_size

    # keep_vars keeps the tensors themselves: loading writes into the destination's memory
    mm = TensorDict({"a": torch.zeros(3), "b": TensorDict({"c": torch.zeros(3, 1)}, [3, 1])}, [3])
    mm.memmap_()
    target_sd = mm.state_dict(keep_vars=True)
    for key, value in td.state_dict().items():
        if isinstance(value, torch.Tensor) and key in target_sd:
            target_sd[key].copy_(value)
    assert (mm == td).all()
    assert mm.is_memmap()

    # a module's state dict as a TensorDict and back
    net = nn.Linear(4, 2)
    params = TensorDict(net.state_dict(), [])
    params["weight"].zero_()
    net.load_state_dict(params.to_dict())
    assert (net.weight == 0).all()

    # tensorclass state dicts
    agent = Agent(
        policy=TensorDict({"w": torch.randn(2, 4)}, [2]), step=torch.tensor([1, 2]), batch_size=[2]
    )
    asd = agent.state_dict()
    other = Agent(
        policy=TensorDict({"w": torch.zeros(2, 4)}, [2]),
        step=torch.zeros(2, dtype=torch.long),
        batch_size=[2],
    )
    other.load_state_dict(asd)
    assert torch.equal(other.policy["w"], agent.policy["w"])
    assert other.step.tolist() == [1, 2]

    # a state dict survives torch.save/torch.load with weights_only=True
    import io

    buffer = io.BytesIO()
    torch.save(td.state_dict(), buffer)
    buffer.seek(0)
    restored = torch.load(buffer, weights_only=True)
    fresh = TensorDict(
        {"a": torch.zeros(3), "b": TensorDict({"c": torch.zeros(3, 1)}, [3, 1])}, [3]
    )
    fresh.load_state_dict(restored)
    assert (fresh == td).all()
