"""Tensorclasses with Python-valued fields (``str``, ``Optional[dict]``): values kept
through indexing, cloning, device moves and ``apply``; stacks of records with different
values read back per element; assignment; conversion to dicts and TensorDicts.
"""

from typing import Optional

import torch

from compat.lib import TensorDict, tensorclass


@tensorclass
class Frame:
    pixels: torch.Tensor
    camera: str
    meta: Optional[dict] = None


def main() -> None:
    a = Frame(pixels=torch.zeros(2, 4), camera="left", batch_size=[2])
    b = Frame(pixels=torch.ones(2, 4), camera="right", batch_size=[2])
    assert a.camera == "left" and a.meta is None
    assert a[0].camera == "left"
    assert a.clone().camera == "left"
    assert a.to("cpu").camera == "left"
    assert a.apply(lambda x: x + 1).camera == "left"
    assert a.detach().camera == "left"

    st = torch.stack([a, b])
    assert st.batch_size == torch.Size([2, 2])
    assert st[0].camera == "left" and st[1].camera == "right"
    assert st[1, 0].camera == "right"
    assert torch.equal(st.pixels[1], b.pixels)

    rows = [Frame(pixels=torch.zeros(4), camera=f"cam{i}", batch_size=[]) for i in range(3)]
    batch = torch.stack(rows)
    assert batch.camera == ["cam0", "cam1", "cam2"]
    assert batch[2].camera == "cam2"
    assert batch[1:].camera == ["cam1", "cam2"]
    assert batch[torch.tensor([2, 0])].camera == ["cam2", "cam0"]

    # a batch whose rows happen to share a value still reads one value per row, so code
    # iterating over it sees rows, not characters
    same_rows = torch.stack(
        [Frame(pixels=torch.zeros(4), camera="left", batch_size=[]) for _ in range(3)]
    )
    assert same_rows.camera == ["left", "left", "left"]
    assert [cam.upper() for cam in same_rows.camera] == ["LEFT"] * 3

    a.camera = "top"
    assert a.camera == "top"
    a.meta = {"exposure": 0.5}
    assert a.meta == {"exposure": 0.5}
    assert a[1].meta == {"exposure": 0.5}

    d = a.to_dict()
    assert d["camera"] == "top" and d["meta"] == {"exposure": 0.5}
    assert torch.equal(d["pixels"], a.pixels)
    back = Frame.from_dict({"pixels": torch.zeros(3, 4), "camera": "side"}, batch_size=[3])
    assert back.camera == "side" and back.batch_size == torch.Size([3])

    td = a.to_tensordict()
    assert isinstance(td, TensorDict)
    assert td["camera"] == "top"
    assert td["pixels"].shape == (2, 4)

    # equality between records with the same values
    same = Frame(pixels=torch.zeros(2, 4), camera="top", meta={"exposure": 0.5}, batch_size=[2])
    assert (a == same).all()
