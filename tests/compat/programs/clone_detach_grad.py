"""Gradients through collections: leaves that require grad, ``detach``/``detach_``,
``clone`` (deep and shallow), ``requires_grad_``, ``contiguous`` of expanded views, and a
loss built from TensorDict entries that backpropagates.
"""

import torch

from compat.lib import TensorDict, tensorclass


@tensorclass
class Params:
    w: torch.Tensor
    b: torch.Tensor


def main() -> None:
    w = torch.randn(3, 2, requires_grad=True)
    td = TensorDict({"w": w, "nested": {"b": torch.zeros(3, requires_grad=True)}}, batch_size=[3])
    assert td["w"].requires_grad

    out = td.apply(lambda x: x * 2)
    loss = out["w"].sum() + out["nested", "b"].sum()
    loss.backward()
    assert torch.equal(w.grad, torch.full((3, 2), 2.0))

    det = td.detach()
    assert not det["w"].requires_grad and not det["nested", "b"].requires_grad
    assert det["w"].data_ptr() == w.data_ptr()  # detach shares memory

    c = td.clone()
    assert c["w"].data_ptr() != w.data_ptr()
    assert c["w"].requires_grad  # clone keeps the graph
    shallow = td.clone(recurse=False)
    assert shallow["w"] is w
    shallow["extra"] = torch.zeros(3)
    assert "extra" not in td.keys()

    # copy() is a shallow clone too
    assert td.copy()["w"] is w

    td2 = TensorDict({"a": torch.zeros(3)}, [3])
    td2.requires_grad_()
    assert td2["a"].requires_grad
    td2.detach_()
    assert not td2["a"].requires_grad

    # contiguous materialises expanded leaves
    e = TensorDict({"a": torch.arange(3.0)}, [3]).expand(4, 3)
    assert e["a"].stride()[0] == 0
    cont = e.contiguous()
    assert cont["a"].is_contiguous()
    cont["a"][0, 0] = 10
    assert cont["a"][1, 0].item() == 0
    assert e.is_contiguous() is False
    assert cont.is_contiguous()

    # tensorclass parameters and an SGD step written by hand
    p = Params(
        w=torch.ones(2, requires_grad=True), b=torch.zeros(2, requires_grad=True), batch_size=[2]
    )
    x = torch.tensor([1.0, 2.0])
    loss = ((p.w * x + p.b) ** 2).sum()
    loss.backward()
    with torch.no_grad():
        p.w -= 0.1 * p.w.grad
    assert torch.allclose(p.w, torch.tensor([0.8, 0.2]))
    pd = p.detach()
    assert isinstance(pd, Params) and not pd.w.requires_grad
    pc = p.clone()
    assert isinstance(pc, Params) and pc.w.data_ptr() != p.w.data_ptr()
    assert torch.equal(pc.w, p.w)
