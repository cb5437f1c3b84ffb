"""Filling and ``*_like`` constructors: ``zero_``, ``fill_`` on one key, ``torch.zeros_like``
and friends on TensorDicts and tensorclasses, ``empty`` structure copies.
"""

import torch

from compat.lib import TensorDict, tensorclass


@tensorclass
class Data:
    x: torch.Tensor
    y: torch.Tensor


def main() -> None:
    td = TensorDict({"a": torch.rand(3), "b": {"c": torch.rand(3, 2)}}, [3])
    z = torch.zeros_like(td)
    assert isinstance(z, TensorDict) and z.batch_size == td.batch_size
    assert (z["b", "c"] == 0).all() and z["b", "c"].shape == (3, 2)
    assert (torch.ones_like(td)["a"] == 1).all()
    assert (torch.full_like(td, 3.0)["b", "c"] == 3).all()
    assert torch.empty_like(td)["b", "c"].shape == (3, 2)
    r = torch.rand_like(td)
    assert ((r["a"] >= 0) & (r["a"] < 1)).all()
    assert torch.randn_like(td)["a"].shape == (3,)

    td.fill_("a", 2.0)
    assert td["a"].tolist() == [2.0, 2.0, 2.0]
    td.fill_(("b", "c"), -1)
    assert (td["b", "c"] == -1).all()
    assert td.zero_() is td
    assert (td["a"] == 0).all() and (td["b", "c"] == 0).all()

    e = td.empty()
    assert e.batch_size == td.batch_size and len(list(e.keys())) == 0
    er = td.empty(recurse=True)
    assert list(er.keys()) == ["b"] and er["b"].batch_size == torch.Size([3])
    assert len(list(er.keys(True, True))) == 0

    d = Data(x=torch.rand(2, 3), y=torch.arange(2), batch_size=[2])
    dz = torch.zeros_like(d)
    assert isinstance(dz, Data) and (dz.x == 0).all() and dz.y.dtype == torch.long
    d.zero_()
    assert (d.x == 0).all()
    ones = torch.ones_like(d)
    assert (ones.y == 1).all()
    assert isinstance(torch.full_like(d, 4), Data)

    # new_zeros / new_ones build a fresh TensorDict of a given batch shape
    nz = td.new_zeros(5)
    assert nz.batch_size == torch.Size([5]) and (nz["a"] == 0).all()
    assert td.new_ones((2, 2))["b", "c"].shape == (2, 2, 2)
