"""Tensorclasses with behaviour: methods, properties, classmethod constructors,
``__post_init__`` normalisation, and methods that return new instances; all preserved by
indexing, stacking and cloning.
"""

import torch

from compat.lib import tensorclass


@tensorclass
class Boxes:
    xyxy: torch.Tensor
    score: torch.Tensor

    def __post_init__(self):
        if self.score.dtype != torch.float32:
            self.score = self.score.float()

    @classmethod
    def from_xywh(cls, xywh: torch.Tensor, score: torch.Tensor) -> "Boxes":
        xy, wh = xywh[..., :2], xywh[..., 2:]
        return cls(xyxy=torch.cat([xy, xy + wh], -1), score=score, batch_size=xywh.shape[:-1])

    @property
    def area(self) -> torch.Tensor:
        wh = (self.xyxy[..., 2:] - self.xyxy[..., :2]).clamp(min=0)
        return wh[..., 0] * wh[..., 1]

    def scale(self, factor: float) -> "Boxes":
        return self.replace(xyxy=self.xyxy * factor)

    def top(self, k: int) -> "Boxes":
        idx = self.score.argsort(descending=True)[:k]
        return self[idx]

    def __len__(self) -> int:
        return self.batch_size[0] if self.batch_dims else 0


def main() -> None:
    boxes = Boxes.from_xywh(
        torch.tensor([[0.0, 0.0, 2.0, 2.0], [1.0, 1.0, 1.0, 3.0], [0.0, 0.0, 4.0, 1.0]]),
        torch.tensor([1, 3, 2]),
    )
    assert boxes.score.dtype == torch.float32  # __post_init__ ran
    assert boxes.area.tolist() == [4.0, 3.0, 4.0]
    assert boxes.scale(2.0).area.tolist() == [16.0, 12.0, 16.0]
    best = boxes.top(2)
    assert isinstance(best, Boxes)
    assert best.score.tolist() == [3.0, 2.0]
    assert best.area.tolist() == [3.0, 4.0]
    assert len(boxes) == 3

    # the class's methods work on results of library operations
    assert boxes[1:].area.tolist() == [3.0, 4.0]
    both = torch.stack([boxes, boxes])
    assert both.area.shape == (2, 3)
    assert boxes.clone().top(1).score.item() == 3.0
    assert torch.cat([boxes, boxes]).top(2).score.tolist() == [3.0, 3.0]

    # isinstance checks after transformations
    assert isinstance(boxes.to("cpu"), Boxes)
    assert isinstance(boxes.apply(lambda t: t * 1), Boxes)
    assert isinstance(boxes.detach(), Boxes)
