"""Collections whose leaves are jagged nested tensors (``densify(layout=torch.jagged)``,
a ``DataLoader`` over one): ``torch.cat`` along the batch dim gives the rows of every
member one after the other, as the peer concatenates them (torch itself refuses ``cat``
of nested tensors on dim 0), and rows picked by any index keep ``-1`` for the ragged dim
in the batch size, as the peer's."""

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


@pytest.mark.parametrize(
    "index",
    [[0, 3], torch.tensor([0, 3]), torch.tensor([True, False, False, True]), slice(0, 4, 3)],
    ids=["list", "tensor", "mask", "slice"],
)
def test_rows_of_a_densified_stack_keep_the_ragged_dim_as_minus_one(index: object) -> None:
    stack = tclass.lazy_stack(
        [TensorDict(tok=torch.arange(n), batch_size=[n]) for n in (1, 2, 3, 4)]
    )
    dense = stack.densify(layout=torch.jagged)
    assert dense.batch_size == torch.Size([4, -1])
    rows = dense[index]
    assert rows.batch_size == torch.Size([2, -1])  # not the ragged dim's symbol, j3
    assert _rows(rows["tok"]) == [[0], [0, 1, 2, 3]]
    assert dense.__getitems__([0, 3]).batch_size == torch.Size([2, -1])  # a DataLoader's read
