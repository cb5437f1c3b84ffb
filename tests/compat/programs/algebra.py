"""Tensor-like arithmetic on TensorDicts: operators with scalars and with other
TensorDicts, reflected and in-place forms, unary ops, comparisons reduced with
``all``/``any``, and torch functions applied to whole collections.
"""

import torch

from compat.lib import TensorDict


def main() -> None:
    x = torch.tensor([[1.0, -2.0], [3.0, -4.0]])
    y = torch.tensor([0.5, 2.0])
    td = TensorDict({"x": x.clone(), "n": {"y": y.clone()}}, batch_size=[2])
    other = TensorDict({"x": torch.ones(2, 2), "n": {"y": torch.full((2,), 2.0)}}, batch_size=[2])

    s = td + other
    assert isinstance(s, TensorDict) and s.batch_size == td.batch_size
    assert torch.equal(s["x"], x + 1) and torch.equal(s["n", "y"], y + 2)
    assert torch.equal((td - other)["x"], x - 1)
    assert torch.equal((td * other)["n", "y"], y * 2)
    assert torch.equal((td / other)["n", "y"], y / 2)
    assert torch.equal((td * 0.5)["x"], x * 0.5)
    assert torch.equal((0.5 * td)["x"], x * 0.5)
    assert torch.equal((1 - td)["n", "y"], 1 - y)
    assert torch.equal((2 / td)["n", "y"], 2 / y)
    assert torch.equal((td**2)["x"], x**2)
    assert torch.equal((td % 2)["x"], x % 2)
    assert torch.equal((-td)["x"], -x)
    assert torch.equal(abs(td)["x"], x.abs())

    # a tensor operand broadcasts against each leaf
    assert torch.equal((td + torch.tensor(1.0))["x"], x + 1)

    # in place
    acc = td.clone()
    acc += other
    assert torch.equal(acc["x"], x + 1)
    acc *= 2
    assert torch.equal(acc["n", "y"], (y + 2) * 2)
    acc -= 1
    acc /= 2
    assert torch.allclose(acc["x"], ((x + 1) * 2 - 1) / 2)

    # methods, in-place methods, alpha=
    assert torch.equal(td.add(other)["x"], x + 1)
    assert torch.equal(td.add(other, alpha=2)["x"], x + 2)
    assert torch.equal(td.sub(1)["x"], x - 1)
    assert torch.equal(td.mul(other)["x"], x)
    assert torch.equal(td.div(2)["x"], x / 2)
    assert torch.equal(td.pow(2)["n", "y"], y**2)
    z = td.clone()
    z.mul_(0.5).add_(other, alpha=0.5)
    assert torch.allclose(z["x"], x * 0.5 + 0.5)
    z.sub_(other)
    z.div_(2)
    z.pow_(2)
    assert z["x"].shape == (2, 2)
    assert torch.allclose(td.abs()["x"], x.abs())
    assert torch.allclose(td.neg()["x"], -x)
    assert torch.allclose(td.exp()["n", "y"], y.exp())
    assert torch.allclose(td.abs().log()["x"], x.abs().log())
    assert torch.allclose(td.abs().sqrt()["x"], x.abs().sqrt())
    assert torch.allclose(td.sigmoid()["x"], x.sigmoid())
    assert torch.allclose(td.tanh()["x"], x.tanh())
    assert torch.allclose(td.clamp(-1, 1)["x"], x.clamp(-1, 1))
    assert torch.allclose(td.clamp_min(0)["x"], x.clamp_min(0))
    assert torch.allclose(td.clamp_max(0)["x"], x.clamp_max(0))
    assert torch.allclose(td.sign()["x"], x.sign())
    assert torch.equal(td.maximum(other)["x"], torch.maximum(x, torch.ones(2, 2)))
    assert torch.allclose(td.lerp(other, 0.25)["x"], torch.lerp(x, torch.ones(2, 2), 0.25))
    w = td.clone()
    w.exp_()
    w.log_()
    w.clamp_min_(-3).clamp_max_(3)
    w.abs_()
    assert torch.allclose(w["x"], x.clamp(-3, 3).abs())

    # torch functions
    assert torch.allclose(torch.exp(td)["x"], x.exp())
    assert torch.allclose(torch.clamp(td, 0, 1)["x"], x.clamp(0, 1))
    assert torch.allclose(torch.add(td, other)["x"], x + 1)
    assert torch.allclose(torch.mul(td, 2)["n", "y"], y * 2)
    assert torch.allclose(torch.abs(td)["x"], x.abs())
    assert torch.allclose(torch.sqrt(td.abs())["x"], x.abs().sqrt())
    assert torch.allclose(
        torch.lerp(td, other, 0.5)["n", "y"], torch.lerp(y, torch.full((2,), 2.0), 0.5)
    )
    assert torch.allclose(torch.maximum(td, other)["x"], torch.maximum(x, torch.ones(2, 2)))

    # comparisons give boolean TensorDicts
    pos = td > 0
    assert isinstance(pos, TensorDict) and pos["x"].dtype == torch.bool
    assert torch.equal(pos["x"], x > 0)
    assert not pos.all() and pos.any()
    assert (td == td.clone()).all()
    assert not (td != td.clone()).any()
    assert (td >= td).all() and (td <= td).all() and not (td < td).any()
    assert isinstance((td == other).all(), bool)
    eq = td == other
    assert torch.equal(eq["n", "y"], y == 2)
    per_col = eq.all(dim=0)
    assert per_col.batch_size == torch.Size([]) and per_col["x"].shape == (2,)
    assert per_col["n", "y"].shape == ()

    # boolean algebra on masks
    m1 = td > 0
    m2 = td < 2
    both = m1 & m2
    assert torch.equal(both["x"], (x > 0) & (x < 2))
    assert torch.equal((m1 | m2)["x"], (x > 0) | (x < 2))
    assert torch.equal((~m1)["x"], ~(x > 0))
    assert torch.equal((m1 ^ m2)["x"], (x > 0) ^ (x < 2))

    # normalisation as written in preprocessing code
    mean = td.apply(lambda t: t.mean(0), batch_size=[])
    std = td.apply(lambda t: t.std(0), batch_size=[])
    normed = (td - mean.expand(2)) / (std.expand(2) + 1e-6)
    assert torch.allclose(normed["x"].mean(0), torch.zeros(2), atol=1e-5)
