"""Lazy stacks whose members have different key sets (heterogeneous agents), as the
peer's ``lazy_stack``/``maybe_dense_stack`` allow: the common keys are readable, the
exclusive ones are reached through the members.
"""

import torch

from compat import lib as tensordict
from compat.lib import LazyStackedTensorDict, TensorDict


def main() -> None:
    walker = TensorDict({"pos": torch.zeros(2), "legs": torch.ones(4)}, [])
    flyer = TensorDict({"pos": torch.ones(2), "wings": torch.ones(2)}, [])
    agents = LazyStackedTensorDict.lazy_stack([walker, flyer])
    assert agents.batch_size == torch.Size([2])
    assert list(agents.keys()) == ["pos"]
    assert agents["pos"].shape == (2, 2)
    assert "legs" not in agents.keys()
    assert "legs" in agents[0].keys()
    assert agents[1]["wings"].shape == (2,)
    mixed = tensordict.maybe_dense_stack([walker, flyer])
    assert isinstance(mixed, LazyStackedTensorDict)
    moved = agents.apply(lambda x: x + 1)
    assert moved[0]["legs"].tolist() == [2.0] * 4
    assert moved["pos"][1].tolist() == [2.0, 2.0]
