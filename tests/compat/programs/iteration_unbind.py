"""Iterating over collections as sequences: ``for row in td``, ``len``, ``unbind`` along
each dim, ``enumerate``/``zip`` over rows, ``list(td)``, and the mapping protocol
(``keys``, ``values``, ``items``, ``in``, iteration over keys of the views).
"""

import torch

from compat.lib import TensorDict, tensorclass


@tensorclass
class Step:
    obs: torch.Tensor
    reward: torch.Tensor


def main() -> None:
    td = TensorDict({"a": torch.arange(6).reshape(3, 2), "b": {"c": torch.arange(3)}}, [3])
    rows = list(td)
    assert len(rows) == 3 and len(td) == 3
    assert rows[1]["b", "c"].item() == 1
    assert rows[2].batch_size == torch.Size([])
    for i, row in enumerate(td):
        assert row["a"].tolist() == [2 * i, 2 * i + 1]
    for row, other in zip(td, td.clone()):
        assert (row == other).all()

    two_d = TensorDict({"x": torch.arange(6).reshape(2, 3)}, [2, 3])
    cols = two_d.unbind(1)
    assert [c["x"].tolist() for c in cols] == [[0, 3], [1, 4], [2, 5]]
    assert len(list(two_d)) == 2
    assert list(two_d)[1]["x"].tolist() == [3, 4, 5]

    assert [k for k in td.keys()] == ["a", "b"]  # noqa: C416 - iterating the view
    assert sorted(td.keys()) == ["a", "b"]
    assert "a" in td.keys() and "z" not in td.keys()
    assert len(td.keys()) == 2
    for key, value in td.items():
        assert value is td.get(key)
    assert len(list(td.values())) == 2
    assert list(td.keys(True, True)) == ["a", ("b", "c")]
    assert set(td.keys(include_nested=True)) == {"a", "b", ("b", "c")}

    steps = Step(obs=torch.zeros(4, 2), reward=torch.arange(4.0), batch_size=[4])
    total = 0.0
    for s in steps:
        assert isinstance(s, Step)
        total += s.reward.item()
    assert total == 6.0
    assert [s.reward.item() for s in steps.unbind(0)] == [0.0, 1.0, 2.0, 3.0]
