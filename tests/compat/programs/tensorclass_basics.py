"""A tensorclass as users first write one: fields with defaults, positional and keyword
construction, attribute access and assignment, indexing, stacking, shape ops, equality,
conversion to and from TensorDicts and dicts, and iteration over rows.
"""

from typing import Optional

import torch

from compat.lib import TensorDict, is_tensorclass, tensorclass


@tensorclass
class Info:
    score: torch.Tensor
    level: torch.Tensor


@tensorclass
class Sample:
    image: torch.Tensor
    label: torch.Tensor
    info: Optional[Info] = None
    weight: Optional[torch.Tensor] = None


def main() -> None:
    s = Sample(
        image=torch.zeros(4, 3, 2, 2),
        label=torch.arange(4),
        info=Info(score=torch.rand(4), level=torch.ones(4, dtype=torch.long), batch_size=[4]),
        batch_size=[4],
    )
    assert is_tensorclass(s) and is_tensorclass(Sample)
    assert s.batch_size == torch.Size([4]) and s.shape == torch.Size([4])
    assert s.batch_dims == 1 and s.ndim == 1
    assert len(s) == 4
    assert s.weight is None
    assert s.info.level.dtype == torch.long

    positional = Sample(torch.zeros(2, 3, 2, 2), torch.zeros(2), batch_size=[2])
    assert positional.info is None and positional.label.shape == (2,)

    # attribute assignment, checked against the batch size
    s.weight = torch.ones(4)
    assert s.weight.sum().item() == 4.0
    try:
        s.weight = torch.ones(5)
    except (RuntimeError, ValueError):
        pass
    else:
        raise AssertionError("a leaf with the wrong batch size must be refused")

    # indexing keeps the class, nested classes included
    row = s[1]
    assert isinstance(row, Sample) and isinstance(row.info, Info)
    assert row.batch_size == torch.Size([]) and row.label.item() == 1
    assert s[1:3].batch_size == torch.Size([2])
    assert s[torch.tensor([3, 0])].label.tolist() == [3, 0]
    assert s[s.label > 1].label.tolist() == [2, 3]
    s[0] = s[3]
    assert s.label[0].item() == 3

    # stack / cat / split
    st = torch.stack([s, s], dim=0)
    assert isinstance(st, Sample) and st.batch_size == torch.Size([2, 4])
    assert st.info.score.shape == (2, 4)
    ct = torch.cat([s, s])
    assert ct.batch_size == torch.Size([8])
    parts = ct.split(4)
    assert all(isinstance(p, Sample) for p in parts)
    assert [r.label.item() for r in s.unbind(0)] == s.label.tolist()

    # shape ops
    r = st.reshape(-1)
    assert isinstance(r, Sample) and r.batch_size == torch.Size([8])
    assert st.view(8).image.shape == (8, 3, 2, 2)
    assert st.permute(1, 0).batch_size == torch.Size([4, 2])
    assert s.unsqueeze(0).batch_size == torch.Size([1, 4])
    assert s.unsqueeze(0).squeeze(0).batch_size == torch.Size([4])
    assert s[0].expand(3).batch_size == torch.Size([3])

    # equality gives a same-shaped result that reduces with all()
    assert (s == s.clone()).all()
    other = s.clone()
    other.label[0] = -1
    assert not (s == other).all()

    # conversions
    td = s.to_tensordict()
    assert isinstance(td, TensorDict)
    assert td["info", "score"].shape == (4,)
    back = Sample.from_tensordict(td)
    assert isinstance(back, Sample) and isinstance(back.info, Info)
    d = s.to_dict()
    assert set(d) >= {"image", "label", "info"}
    assert isinstance(d["info"], dict) and torch.equal(d["info"]["score"], s.info.score)
    rebuilt = Sample.from_dict(d, batch_size=[4])
    assert isinstance(rebuilt, Sample)
    assert torch.equal(rebuilt.info.level, s.info.level)

    # items/keys over fields
    assert set(s.keys()) >= {"image", "label", "info"}
    assert ("info", "score") in s.keys(include_nested=True, leaves_only=True)
    assert s.get(("info", "level")) is s.info.level
    assert s.get("label") is s.label

    # rows
    labels = [row.label.item() for row in s]
    assert labels == s.label.tolist()

    # repr mentions the class and fields
    text = repr(s)
    assert "Sample" in text and "image" in text and "batch_size" in text

    # set on a tensorclass (by key, nested keys too)
    s.set("label", torch.zeros(4, dtype=torch.long))
    assert (s.label == 0).all()
    s.set(("info", "score"), torch.ones(4))
    assert (s.info.score == 1).all()
    s.update({"label": torch.ones(4, dtype=torch.long)})
    assert (s.label == 1).all()
