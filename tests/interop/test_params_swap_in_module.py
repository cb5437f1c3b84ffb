"""``to_module`` into a module that holds a ``TensorDictParams``: a tensor that is no
parameter (one requiring grad, or vmap's batched one) takes a parameter's place inside
the ``with`` block, and the parameter is given back on exit. Giving it back looked for
the name among the parameters only, where the tensor it replaced now read as a buffer:
a ``KeyError`` on exit, the module left holding the swapped tensor."""

from __future__ import annotations

import torch
from torch import nn

from tclass import TensorDict, TensorDictParams


class _Scaled(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(3, 2)
        self.extra = TensorDictParams(TensorDict(scale=torch.ones(2)))
        with torch.no_grad():
            self.lin.weight.fill_(1.0)
            self.lin.bias.zero_()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x) * self.extra["scale"]


def test_tensors_requiring_grad_go_in_and_the_parameters_come_back() -> None:
    net = _Scaled()
    before = net.extra["scale"]
    params = TensorDict.from_module(net).data.clone().requires_grad_()
    with params.to_module(net):
        assert net.extra["scale"] is params["extra", "scale"]
        net(torch.ones(1, 3)).sum().backward()
    assert net.extra["scale"] is before and isinstance(before, nn.Parameter)
    assert sorted(n for n, _ in net.named_parameters()) == ["extra.scale", "lin.bias", "lin.weight"]
    assert torch.equal(params["extra", "scale"].grad, torch.full((2,), 3.0))
    assert torch.equal(params["lin", "weight"].grad, torch.ones(2, 3))


def test_vmap_over_an_ensemble_of_modules_holding_params() -> None:
    net = _Scaled()
    stacked = TensorDict.from_modules(_Scaled(), _Scaled()).data.clone()
    stacked["extra", "scale"][1] = 2.0

    def call(params: TensorDict) -> torch.Tensor:
        with params.to_module(net):
            return net(torch.ones(1, 3))

    out = torch.vmap(call)(stacked)
    assert torch.equal(out, torch.tensor([[[3.0, 3.0]], [[6.0, 6.0]]]))
    assert isinstance(net.extra["scale"], nn.Parameter)
    assert torch.equal(net.extra["scale"].detach(), torch.ones(2))


def test_functional_call_swaps_the_params_entries() -> None:
    # the peer's functional_call leaves the TensorDictParams' own entries in place
    net = _Scaled()
    params = TensorDict.from_module(net).data.clone() * 2
    flat = dict(params.flatten_keys(".").items())
    out = torch.func.functional_call(net, flat, (torch.ones(1, 3),))
    assert torch.equal(out, torch.full((1, 2), 12.0))
    assert torch.equal(net.extra["scale"].detach(), torch.ones(2))


def test_register_parameter_and_buffer_of_a_new_name() -> None:
    """``nn.Module.register_parameter`` / ``register_buffer`` on a TensorDictParams add an
    entry, as the peer's (they raised a ``KeyError`` from its parameter table)."""
    params = TensorDictParams(TensorDict(w=torch.ones(2)))
    new = nn.Parameter(torch.zeros(3))
    params.register_parameter("p", new)
    params.register_buffer("b", torch.arange(2))
    assert params["p"] is new
    assert sorted(n for n, _ in params.named_parameters()) == ["p", "w"]
    assert sorted(n for n, _ in params.named_buffers()) == ["b"]
    assert torch.equal(params["b"], torch.arange(2))
    assert sorted(params.state_dict().keys()) == ["b", "p", "w"]
