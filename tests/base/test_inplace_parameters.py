"""In-place writes of a result that is the destination's own elements: a module's
parameters walked with ``apply_(lambda p: p.data.mul_(2))`` (the soft-update idiom of RL
target networks). The function has already written; copying its result back into a
parameter that requires grad is what autograd refuses, and it would change nothing, so it
is skipped, as the peer skips it. A result that is another view of the same memory (a
transpose) would be silently lost there in the peer: tclass still refuses it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
from torch import nn

from tclass import TensorDict
from tclass.errors import InPlaceWriteError

WRITES: dict[str, Callable[[Any, Any], Any]] = {
    "apply_": lambda p, q: p.apply_(lambda x: x.data.fill_(1.0)),
    "apply_ with another": lambda p, q: p.apply_(lambda x, y: x.data.lerp_(y.data, 1.0), q),
    "apply(inplace=True)": lambda p, q: p.apply(lambda x: x.data.fill_(1.0), inplace=True),
    "apply(inplace=True, num_threads=0)": lambda p, q: p.apply(
        lambda x: x.data.fill_(1.0), inplace=True, num_threads=0
    ),
    "named_apply(inplace=True)": lambda p, q: p.named_apply(
        lambda key, x: x.data.fill_(1.0), inplace=True
    ),
    "set_": lambda p, q: [p.set_(k, p[k].data.fill_(1.0)) for k in ("weight", "bias")],
}


@pytest.mark.parametrize("write", WRITES.values(), ids=list(WRITES))
def test_a_result_that_is_the_parameter_s_own_data_is_written_once(
    write: Callable[[Any, Any], Any],
) -> None:
    module, other = nn.Linear(2, 3), nn.Linear(2, 3)
    with torch.no_grad():
        other.weight.fill_(1.0)
        other.bias.fill_(1.0)
    weight = module.weight
    write(TensorDict.from_module(module), TensorDict.from_module(other))
    assert module.weight is weight and weight.requires_grad
    assert torch.equal(module.weight.detach(), torch.ones(3, 2))
    assert torch.equal(module.bias.detach(), torch.ones(3))


def test_another_view_of_the_parameter_s_memory_is_refused_not_dropped() -> None:
    module = nn.Linear(2, 2)
    before = module.weight.detach().clone()
    params = TensorDict.from_module(module)
    with pytest.raises(InPlaceWriteError, match="autograd refuses"):
        params.apply_(lambda x: x.data.t() if x.ndim == 2 else x.data)
    with pytest.raises(InPlaceWriteError, match="autograd refuses"):
        params.set_("weight", params["weight"].data.t())
    assert torch.equal(module.weight.detach(), before)


def test_a_new_tensor_into_a_parameter_is_still_refused_while_autograd_records() -> None:
    params = TensorDict.from_module(nn.Linear(2, 2))
    with pytest.raises(InPlaceWriteError, match="autograd refuses"):
        params.apply_(lambda x: x.detach() + 1)
    with torch.no_grad():
        params.apply_(lambda x: x.detach() * 0)
    assert not params["weight"].any()
