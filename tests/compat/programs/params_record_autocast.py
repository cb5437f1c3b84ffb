"""Parameters kept as a typed record (an ``autocast`` tensorclass) wrapped in
``TensorDictParams``: its tensors are written in place by a soft update, and its Python
fields, set through the params, are cast by their annotations as the record casts them.
"""

import torch

from compat.lib import TensorDictParams, tensorclass


@tensorclass(autocast=True)
class Policy:
    weight: torch.Tensor
    bias: torch.Tensor
    epoch: int
    tag: str = "run"
    tau: float = 0.0


def main() -> None:
    torch.manual_seed(0)
    policy = Policy(weight=torch.randn(4, 3), bias=torch.zeros(4), epoch=0, batch_size=[4])
    start = policy.weight.clone()
    params = TensorDictParams(policy)  # shares the record's tensors
    target = TensorDictParams(policy.clone())
    assert params.get("epoch") == 0

    params.set("epoch", "3")  # a value read from a text config
    assert params.get("epoch") == 3 and isinstance(params.get("epoch"), int)
    params.set("tau", 1)
    assert params.get("tau") == 1.0 and isinstance(params.get("tau"), float)
    params.set("tag", 7)
    assert params.get("tag") == "7"

    with torch.no_grad():
        params.get("weight").mul_(2.0)
        target.get("weight").lerp_(params.get("weight"), 0.5)
    assert torch.allclose(target.get("weight"), start * 1.5)
    assert params.get("epoch") == 3


if __name__ == "__main__":
    main()
