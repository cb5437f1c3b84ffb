"""``torch.cat`` of collections whose leaves are jagged nested tensors, along the batch
dim: the rows of every member one after the other, as the peer concatenates them (torch
itself refuses ``cat`` of nested tensors on dim 0)."""

from __future__ import annotations

import pytest
import torch

import tclass
from tclass import TensorDict, errors


def _jagged(*lengths: int, start: float = 0.0) -> torch.Tensor:
    parts = [torch.arange(n, dtype=torch.float32) + start + i for i, n in enumerate(lengths)]
    return torch.nested.nested_tensor(parts, layout=torch.jagged)


def _rows(value: torch.Tensor) -> list[list[float]]:
    return [part.tolist() for part in value.unbind(0)]


def test_cat_of_jagged_leaves_joins_their_rows() -> None:
    a = TensorDict(x=_jagged(1, 2), y=torch.arange(2), batch_size=[2])
    b = TensorDict(x=_jagged(3, start=10.0), y=torch.arange(1) + 5, batch_size=[1])
    out = torch.cat([a, b])
    assert out.batch_size == torch.Size([3])
    assert out["x"].layout is torch.jagged
    assert _rows(out["x"]) == [[0.0], [1.0, 2.0], [10.0, 11.0, 12.0]]
    assert out["y"].tolist() == [0, 1, 5]
    assert [row["x"].tolist() for row in out.unbind(0)] == _rows(out["x"])
    assert _rows(tclass.cat([a, b])["x"]) == _rows(out["x"])


def test_cat_of_jagged_leaves_under_a_nested_node_and_a_record() -> None:
    class Ep(tclass.TensorClass):
        tok: torch.Tensor

    a = Ep(tok=_jagged(2, 1), batch_size=[2])
    b = Ep(tok=_jagged(1), batch_size=[1])
    out = torch.cat([a, b])
    assert type(out) is Ep
    assert _rows(out.tok) == [[0.0, 1.0], [1.0], [0.0]]
    nested = torch.cat([TensorDict(n={"x": _jagged(1)}, batch_size=[1])] * 2)
    assert _rows(nested["n", "x"]) == [[0.0], [0.0]]


def test_cat_of_jagged_leaves_keeps_the_error_where_it_cannot_join() -> None:
    a = TensorDict(x=_jagged(1, 2), batch_size=[2])
    dense = TensorDict(x=torch.ones(2, 2), batch_size=[2])
    with pytest.raises(errors.StackError, match="'x'"):
        torch.cat([a, dense])
    with pytest.raises(errors.StackError, match="'x'"):
        torch.stack([a, TensorDict(x=_jagged(2, 2), batch_size=[2])])
