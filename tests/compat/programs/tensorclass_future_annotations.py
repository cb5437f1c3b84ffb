"""The seed's own example: a self-referential ``Optional[MyClass]`` field under
``from __future__ import annotations``, with ``memmap_``, ``state_dict`` and equality.
"""

from __future__ import annotations

from typing import Optional

import torch

from compat.lib import MemoryMappedTensor, tensorclass


@tensorclass
class MyClass:
    x: torch.Tensor
    y: Optional[MyClass] = None


def main() -> None:
    tc = MyClass(x=torch.randn(3), y=MyClass(x=torch.randn(3), batch_size=[]), batch_size=[])
    tc.memmap_()
    assert isinstance(tc.y.x, MemoryMappedTensor)

    state = tc.state_dict(keep_vars=True)
    tc_dest = MyClass(x=torch.randn(3), y=MyClass(x=torch.randn(3), batch_size=[]), batch_size=[])
    tc_dest.memmap_()
    tc_dest.load_state_dict(state)
    assert (tc_dest == tc).all()
    assert tc_dest.y.batch_size == tc.y.batch_size
    assert isinstance(tc_dest.y.x, MemoryMappedTensor)
