"""Tensorclass fields annotated with jaxtyping (``Float[Tensor, "*batch 3"]``,
``UInt8[Tensor, "*batch h w"]``), as users combine the two: construction, indexing,
stacking and saving work as with plain ``torch.Tensor`` fields. Skipped without jaxtyping.
"""

import tempfile

import torch
from torch import Tensor

from compat.lib import require, tensorclass

jaxtyping = require("jaxtyping")
Float, Int64, UInt8 = jaxtyping.Float, jaxtyping.Int64, jaxtyping.UInt8


@tensorclass
class Camera:
    image: UInt8[Tensor, "*batch h w"]  # noqa: F722 - jaxtyping dims
    pose: Float[Tensor, "*batch 3"]  # noqa: F722
    frame: Int64[Tensor, "*batch"]  # noqa: F722


def main() -> None:
    cams = Camera(
        image=torch.zeros(4, 8, 8, dtype=torch.uint8),
        pose=torch.randn(4, 3),
        frame=torch.arange(4),
        batch_size=[4],
    )
    assert cams[1:].pose.shape == (3, 3)
    assert torch.stack([cams, cams]).image.shape == (2, 4, 8, 8)
    assert cams[torch.tensor([3, 0])].frame.tolist() == [3, 0]
    single = cams[0]
    assert single.pose.shape == (3,) and single.frame.item() == 0
    with tempfile.TemporaryDirectory() as path:
        cams.memmap(path)
        back = Camera.load_memmap(path)
        assert torch.equal(back.pose, cams.pose)
