"""A new user's training step over typed records and TensorDicts: ``requires_grad_()``,
``grad`` after ``backward()``, optimizers over ``values(True, True)`` and over
``TensorDictParams.parameters()``, ``clip_grad_norm_`` over the leaves, the
``zero_grad`` patterns, writes under ``no_grad``/``inference_mode``, EMA updates
(``lerp_``, ``mul_().add_(alpha=)``), gradient accumulation over indexed batches,
``torch.func.grad`` of a record, ``autocast``/``to(dtype)``, and ``state_dict`` round trips.
"""

import torch
from torch import nn

from compat.lib import MetaData, TensorDict, TensorDictParams, tensorclass


@tensorclass
class Inner:
    z: torch.Tensor


@tensorclass
class Batch:
    x: torch.Tensor
    inner: Inner
    tag: str
    meta: MetaData


def _batch() -> Batch:
    return Batch(
        x=torch.linspace(-1, 1, 6).reshape(3, 2),
        inner=Inner(z=torch.linspace(0, 2, 12).reshape(3, 4), batch_size=[3]),
        tag="train",
        meta=MetaData({"epoch": 0}),
        batch_size=[3],
    )


def _loss(b: Batch) -> torch.Tensor:
    return (b.x**2).sum() + b.inner.z.sum()


def records_and_gradients() -> None:
    b = _batch()
    assert not b.requires_grad
    assert b.requires_grad_() is b and b.requires_grad and b.inner.z.requires_grad
    _loss(b).backward()
    assert torch.allclose(b.grad.x, 2 * b.x.detach()) and torch.equal(
        b.grad.inner.z, torch.ones(3, 4)
    )
    (gx,) = torch.autograd.grad((b.x.exp()).sum(), [b.x])
    assert torch.allclose(gx, b.x.detach().exp())
    b.zero_grad(set_to_none=False)
    assert b.x.grad is not None and b.x.grad.abs().sum() == 0
    b.apply(lambda t: t.grad.zero_())
    c = b.clone()
    assert c.requires_grad and c.x.grad_fn is not None and c.tag == "train"
    d = b.detach()
    assert not d.requires_grad and d.x.data_ptr() == b.x.data_ptr() and d.meta == b.meta


def optimizer_over_a_record() -> None:
    b = _batch().requires_grad_()
    opt = torch.optim.SGD(b.values(True, True), lr=0.5)
    before = b.x.detach().clone()
    _loss(b).backward()
    norm = torch.nn.utils.clip_grad_norm_(b.values(True, True), 1.0)
    assert norm > 1.0
    opt.step()
    opt.zero_grad()
    assert b.x.grad is None and not torch.equal(b.x.detach(), before)
    assert b.tag == "train"


def writes_outside_autograd() -> None:
    b = _batch().requires_grad_()
    with torch.no_grad():
        b.mul_(2)
        b[0] = b[1].detach() * 0
    assert b.requires_grad and b.x[0].abs().sum() == 0
    with torch.inference_mode():
        doubled = b * 2
    assert not doubled.requires_grad and doubled.x.is_inference()
    td = TensorDict(x=torch.ones(3, 2), batch_size=[3]).requires_grad_()
    try:
        td.mul_(2)
    except RuntimeError:
        pass
    else:
        raise AssertionError("in-place math into leaves requiring grad must be refused")


def ema_and_accumulation() -> None:
    online = _batch()
    target = online.clone() * 0
    target.lerp_(online, 0.5)
    assert torch.allclose(target.x, online.x * 0.5)
    target.mul_(0.99).add_(online, alpha=0.01)
    assert torch.allclose(target.x, online.x * (0.5 * 0.99 + 0.01))
    b = _batch().requires_grad_()
    for idx in (torch.tensor([0, 1]), torch.tensor([2])):
        _loss(b[idx]).backward()
    assert torch.allclose(b.grad.x, 2 * b.x.detach())
    td = TensorDict(x=torch.ones(4, 2), batch_size=[4]).requires_grad_()
    for chunk in td.split(2):
        chunk.sum(reduce=True).backward()
    assert torch.equal(td.grad["x"], torch.ones(4, 2))


def params_and_modules() -> None:
    module = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    params = TensorDictParams(TensorDict.from_module(module))
    x = torch.linspace(-1, 1, 15).reshape(5, 3)
    opt = torch.optim.SGD(params.parameters(), lr=0.1)
    for i in range(0, 5, 2):
        with params.to_module(module):
            module(x[i : i + 2]).pow(2).sum().backward()
    assert params.grad["0", "weight"].shape == (4, 3)
    opt.step()
    opt.zero_grad()
    target = TensorDictParams(params.data.clone() * 0)
    with torch.no_grad():
        target.lerp_(params, 0.5)
    assert torch.allclose(target["0", "weight"], params["0", "weight"].detach() * 0.5)
    zeros = params.apply(torch.zeros_like)
    assert zeros["2", "bias"].abs().sum() == 0
    state = params.state_dict()
    copy = TensorDictParams(params.data.clone() * 0)
    copy.load_state_dict(state)
    assert torch.equal(copy["0", "bias"], params["0", "bias"])


def functional_and_dtypes() -> None:
    b = _batch()
    g = torch.func.grad(_loss)(b)
    assert type(g) is Batch and torch.allclose(g.x, 2 * b.x) and g.tag == "train"
    half = b.to(torch.bfloat16)
    assert half.x.dtype == torch.bfloat16 and half.tag == "train"
    with torch.autocast("cpu", dtype=torch.bfloat16):
        out = b.x @ b.inner.z[:2, :2]
    assert out.dtype == torch.bfloat16
    w = b.clone().requires_grad_()
    w.to(torch.float64).sum(reduce=True).backward()
    assert w.grad.x.dtype == torch.float32 and torch.equal(w.grad.x, torch.ones(3, 2))


def main() -> None:
    records_and_gradients()
    optimizer_over_a_record()
    writes_outside_autograd()
    ema_and_accumulation()
    params_and_modules()
    functional_and_dtypes()


if __name__ == "__main__":
    main()
