"""Model ensembles with ``torch.vmap``: parameters of several identical modules stacked
with ``from_modules`` (or ``torch.stack`` of ``from_module`` results), a functional call
through ``to_module`` under vmap, and per-member results.
"""

import torch
from torch import nn

from compat import lib as tensordict
from compat.lib import TensorDict


def main() -> None:
    torch.manual_seed(0)
    members = [nn.Linear(3, 2) for _ in range(4)]
    params = tensordict.from_modules(*members)
    assert params.batch_size == torch.Size([4])
    assert params["weight"].shape == (4, 2, 3)

    template = nn.Linear(3, 2)
    x = torch.randn(5, 3)

    def call(p: TensorDict, inputs: torch.Tensor) -> torch.Tensor:
        with p.to_module(template):
            return template(inputs)

    out = torch.vmap(call, (0, None))(params, x)
    assert out.shape == (4, 5, 2)
    for i, m in enumerate(members):
        assert torch.allclose(out[i], m(x), atol=1e-6)

    # the same ensemble stacked by hand
    stacked = torch.stack([TensorDict.from_module(m) for m in members]).detach()
    assert stacked.batch_size == torch.Size([4])
    out2 = torch.vmap(call, (0, None))(stacked, x)
    assert torch.allclose(out, out2)

    # vmap over a TensorDict of inputs as well
    inputs = TensorDict({"x": torch.randn(4, 5, 3)}, [4])
    out3 = torch.vmap(lambda p, td: call(p, td["x"]))(stacked, inputs)
    assert out3.shape == (4, 5, 2)
    assert torch.allclose(out3[2], members[2](inputs["x"][2]), atol=1e-6)
