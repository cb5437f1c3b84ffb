"""``UnbatchedTensor``: a tensor entry that belongs to the whole batch.

It may have any shape; the collection's shape operations (indexing, reshape, stacking,
padding...) leave it as it is, while tensor operations (arithmetic, ``clone``, ``to``,
``apply``) act on it and keep it unbatched. Reading it gives an ``UnbatchedTensor``
whose ``batch_size`` is the collection's. Saving it to a folder is refused, as in the
peer (whose format has no place for it).
"""

from __future__ import annotations

import math
import pickle
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

import tclass
from tclass import LazyStackedTensorDict, TensorClass, TensorDict, UnbatchedTensor, errors


def _table() -> UnbatchedTensor:
    return UnbatchedTensor(torch.arange(12.0).reshape(3, 4))


def _td() -> TensorDict:
    return TensorDict({"table": _table(), "x": torch.zeros(2, 3)}, [2, 3])


def test_it_is_a_tensor_that_keeps_its_class() -> None:
    table = _table()
    assert isinstance(table, torch.Tensor)
    assert table.shape == torch.Size([3, 4]) and table.batch_size == torch.Size([])
    assert type(table + 1) is UnbatchedTensor
    assert type(table[0]) is UnbatchedTensor and table[0].shape == torch.Size([4])
    assert (table + 1)[0, 0].item() == 1.0
    assert UnbatchedTensor([1, 2]).dtype == torch.int64
    assert UnbatchedTensor(table) is table
    assert repr(UnbatchedTensor(torch.zeros(2))).startswith("UnbatchedTensor(")


def test_its_shape_need_not_start_with_the_batch_size() -> None:
    td = _td()
    assert type(td["table"]) is UnbatchedTensor
    assert td["table"].shape == torch.Size([3, 4])
    assert td["table"].batch_size == torch.Size([2, 3])
    td.set("other", UnbatchedTensor(torch.zeros(5)))
    assert td["other"].shape == torch.Size([5])
    assert torch.equal(td["table"], _table())


SHAPE_OPS: list[tuple[str, Callable[[Any], Any]]] = [
    ("int", lambda t: t[0]),
    ("slice", lambda t: t[:1]),
    ("mask", lambda t: t[torch.tensor([True, False])]),
    ("tensor", lambda t: t[torch.tensor([0, 0, 1])]),
    ("reshape", lambda t: t.reshape(6)),
    ("view", lambda t: t.view(3, 2)),
    ("flatten", lambda t: t.flatten()),
    ("unsqueeze", lambda t: t.unsqueeze(0)),
    ("squeeze", lambda t: t.unsqueeze(0).squeeze(0)),
    ("permute", lambda t: t.permute(1, 0)),
    ("transpose", lambda t: t.transpose(0, 1)),
    ("expand", lambda t: t.expand(4, 2, 3)),
    ("split", lambda t: t.split(1)[0]),
    ("unbind", lambda t: t.unbind(1)[0]),
    ("chunk", lambda t: t.chunk(2, 1)[0]),
    ("flip", lambda t: t.flip(0)),
    ("repeat", lambda t: t.repeat(2, 1)),
    ("stack", lambda t: torch.stack([t, t])),
    ("cat", lambda t: torch.cat([t, t])),
    ("pad", lambda t: tclass.pad(t, [0, 1])),
    ("masked_select", lambda t: t.masked_select(torch.ones(2, 3, dtype=torch.bool))),
    ("gather", lambda t: t.gather(1, torch.zeros(2, 1, dtype=torch.long))),
]


@pytest.mark.parametrize(("name", "op"), SHAPE_OPS, ids=[name for name, _ in SHAPE_OPS])
def test_shape_operations_leave_it_unchanged(name: str, op: Callable[[Any], Any]) -> None:
    td = _td()
    out = op(td)
    table = out["table"]
    assert type(table) is UnbatchedTensor, name
    assert table.shape == torch.Size([3, 4]), name
    assert table.batch_size == out.batch_size, name
    assert table.data_ptr() == td["table"].data_ptr(), name  # the same data, not a copy


def test_tensor_operations_apply_to_it() -> None:
    td = _td()
    plus = td.apply(lambda v: v + 1)
    assert type(plus["table"]) is UnbatchedTensor and plus["table"][0, 0].item() == 1.0
    copy = td.clone()
    assert type(copy["table"]) is UnbatchedTensor
    assert copy["table"].data_ptr() != td["table"].data_ptr()
    assert type(td.to(torch.float64)["table"]) is UnbatchedTensor
    assert td.to(torch.float64)["table"].dtype == torch.float64
    assert bool((td == td.clone()).all())


def test_stacking_different_tables_keeps_the_first_and_warns() -> None:
    a, b = _td(), _td()
    b.set("table", UnbatchedTensor(torch.ones(3, 4)))
    with pytest.warns(UserWarning, match="UnbatchedTensors with different data storage"):
        stacked = torch.stack([a, b])
    assert torch.equal(stacked["table"], a["table"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        torch.stack([a, a])  # the same table: nothing to warn about
        # a copy of the same values neither (nothing is dropped): stack and cat
        assert torch.equal(torch.stack([a, a.clone()])["table"], a["table"])
        assert torch.equal(torch.cat([a, a.clone()])["table"], a["table"])
    with pytest.warns(UserWarning, match="UnbatchedTensors with different data storage"):
        joined = torch.cat([a, b])  # the peer's cat drops b's silently
    assert torch.equal(joined["table"], a["table"])
    c = _td()
    c.set("table", UnbatchedTensor(torch.arange(12.0).reshape(4, 3)))  # same values, other shape
    with pytest.warns(UserWarning, match="different data storage"):
        torch.stack([a, c])


def test_indexed_writes() -> None:
    td = _td()
    other = TensorDict({"x": torch.ones(3)}, [3])
    td[0] = other  # no "table" in the value: the table is kept
    assert torch.equal(td["table"], _table())
    replacement = TensorDict({"x": torch.ones(3), "table": UnbatchedTensor(torch.ones(3, 4))}, [3])
    td[1] = replacement  # same shape: written whole, whatever the index
    assert bool((td["table"] == 1).all())


def test_auto_batch_size_ignores_it() -> None:
    td = TensorDict({"table": UnbatchedTensor(torch.zeros(7)), "x": torch.zeros(2, 3)}, [])
    assert td.auto_batch_size_().batch_size == torch.Size([2, 3])


def test_keys_lists_it_as_a_leaf() -> None:
    assert list(_td().keys(True, True)) == ["table", "x"]


def test_lazy_stacks_and_records() -> None:
    lazy = LazyStackedTensorDict(_td(), _td())
    assert type(lazy["table"]) is UnbatchedTensor and lazy["table"].shape == torch.Size([3, 4])

    class Model(TensorClass):
        weights: torch.Tensor
        x: torch.Tensor

    record = Model(weights=UnbatchedTensor(torch.zeros(5, 5)), x=torch.zeros(4), batch_size=[4])
    assert record.weights.shape == torch.Size([5, 5])
    assert record[1:3].weights.shape == torch.Size([5, 5])
    assert type(record[0].weights) is UnbatchedTensor


def test_pickling_keeps_it_unbatched() -> None:
    td = pickle.loads(pickle.dumps(_td()))
    assert type(td["table"]) is UnbatchedTensor and td["table"].shape == torch.Size([3, 4])
    table = pickle.loads(pickle.dumps(_table()))
    assert type(table) is UnbatchedTensor


def test_saving_and_consolidating_are_refused(tmp_path: Path) -> None:
    td = _td()
    with pytest.raises(errors.UnsupportedError, match="table"):
        td.memmap(tmp_path / "td")
    assert not (tmp_path / "td").exists()
    with pytest.raises(NotImplementedError, match="exclude"):
        td.consolidate()
    td.exclude("table").memmap(tmp_path / "ok")


@pytest.mark.peer
def test_same_behaviour_as_the_peer() -> None:
    peer = pytest.importorskip("tensordict")
    theirs = peer.TensorDict(
        {"table": peer.UnbatchedTensor(torch.arange(12.0).reshape(3, 4)), "x": torch.zeros(2, 3)},
        [2, 3],
    )
    ours = _td()
    for name, op in SHAPE_OPS:
        if name == "pad":
            continue
        got, want = op(ours), op(theirs)
        assert got["table"].shape == want["table"].shape, name
        assert got.batch_size == want.batch_size, name
        assert got["table"].batch_size == want["table"].batch_size, name


def _outcome(fun: Callable[[Any], Any], value: Any) -> Any:
    try:
        return fun(value)
    except (TypeError, ValueError, RuntimeError) as exc:
        return (type(exc), str(exc))


@pytest.mark.parametrize("data", [torch.tensor(3), torch.tensor(1.25), torch.tensor([1, 2])])
@pytest.mark.parametrize(
    "fun", [round, lambda x: round(x, 1), math.trunc, math.floor, math.ceil, int, float]
)
def test_python_number_protocols_answer_as_a_plain_tensor(
    data: torch.Tensor, fun: Callable[[Any], Any]
) -> None:
    # round() and math.trunc() of a Tensor are TypeErrors naming Tensor's type; an
    # UnbatchedTensor gives the same answer, not one naming its own class.
    got = _outcome(fun, UnbatchedTensor(data))
    assert got == _outcome(fun, data)
    assert not isinstance(got, UnbatchedTensor)


@pytest.mark.parametrize(
    "reduce",
    [
        lambda td: td.sum(dim=1), lambda td: td.mean(), lambda td: td.nansum(dim=(0, 1)),
        lambda td: td.nanmean(dim=1, keepdim=True), lambda td: td.prod(dim=0),
        lambda td: td.std(dim=1), lambda td: td.var(), lambda td: td.amax(dim=1),
        lambda td: td.amin(), lambda td: td.logsumexp(dim=1), lambda td: td.norm(),
        lambda td: td.quantile(0.5, dim=1), lambda td: td.max(), lambda td: td.sum(dim="feature"),
    ],
)  # fmt: skip
def test_reductions_over_batch_dims_leave_it_as_it_is(
    reduce: Callable[[TensorDict], TensorDict],
) -> None:
    """As the peer's: it has no batch dim to reduce; ``all``/``any`` along a dim and
    ``reduce=True`` (one tensor of everything) do read it."""
    td = TensorDict(x=torch.ones(2, 3), batch_size=[2, 3])
    td["u"] = _table()
    out = reduce(td)
    assert type(out["u"]) is UnbatchedTensor and torch.equal(
        out["u"].as_tensor(), _table().as_tensor()
    )
    assert td.all(dim=1)["u"].shape == (3,) and td.sum(reduce=True).item() == 6 + 66


@pytest.mark.parametrize(
    "scan",
    [
        lambda td: td.cumsum(dim=1), lambda td: td.cumprod(dim=0), lambda td: td.softmax(-1),
        lambda td: td.cummin(dim=-1).values, lambda td: td.cummax(dim=0).values,
    ],
)  # fmt: skip
def test_scans_along_a_batch_dim_leave_it_as_it_is(
    scan: Callable[[TensorDict], TensorDict],
) -> None:
    """It has no batch dim to scan (its own dims may be fewer than the batch dims)."""
    td = TensorDict(x=torch.ones(2, 3, 4, 1), batch_size=[2, 3, 4])
    td["u"] = _table()
    out = scan(td)
    assert out.batch_size == td.batch_size and out["x"].shape == (2, 3, 4, 1)
    assert type(out["u"]) is UnbatchedTensor and torch.equal(
        out["u"].as_tensor(), _table().as_tensor()
    )


@pytest.mark.parametrize("name", ["max", "min", "cummax", "cummin"])
@pytest.mark.parametrize("dim", [0, -1])
def test_extremes_along_a_batch_dim_with_indices_leave_it_as_it_is(name: str, dim: int) -> None:
    """Its last dim may be fewer than the batch dims: the values and the indices keep it
    whole, as without indices (the peer drops it from both, README)."""
    td = TensorDict(x=torch.arange(24.0).view(2, 3, 4), batch_size=[2, 3, 4])
    td["u"] = _table()
    values, indices = getattr(td, name)(dim=dim)
    expected = getattr(torch, name)(td["x"], dim=dim)
    assert torch.equal(values["x"], expected.values) and torch.equal(indices["x"], expected.indices)
    for out in (values, indices):
        assert out.batch_size == expected.values.shape
        assert type(out["u"]) is UnbatchedTensor and torch.equal(
            out["u"].as_tensor(), _table().as_tensor()
        )


def test_conversions_and_indexed_updates_leave_it_as_it_is() -> None:
    """As the peer's: ``new_tensor`` and ``as_tensor`` keep it; ``update_at_`` writes it
    whole, as ``td[index] = rows`` does."""
    td = TensorDict(x=torch.ones(2, 3), batch_size=[2, 3])
    td["u"] = _table()
    made = td.new_tensor([1, 2])
    assert made.batch_size == (2,) and made["u"].shape == (3, 4) and made["x"].tolist() == [1, 2]
    assert made.device == torch.device("cpu")
    assert type(td.as_tensor()["u"]) is UnbatchedTensor
    rows = TensorDict(x=torch.zeros(3), u=UnbatchedTensor(torch.ones(3, 4)), batch_size=[3])
    assert td.update_at_(rows, 1) is td
    assert td["x"].tolist() == [[1.0] * 3, [0.0] * 3] and bool((td["u"] == 1).all())


@pytest.mark.parametrize(
    "op",
    [
        lambda td: td + 1,
        lambda td: 2 * td,
        lambda td: td * td,
        lambda td: -td,
        lambda td: td.pow(2),
        lambda td: td.clamp(0, 1),
        lambda td: td.lerp(td, 0.5),
        lambda td: td.add_(1),
    ],
)
def test_math_beside_it_keeps_the_batched_leaves_plain_tensors(op: Callable[..., Any]) -> None:
    """One fused ``torch._foreach_*`` kernel runs over all leaves: only the unbatched
    one comes back unbatched, as the peer's (the batched ``x`` was made unbatched too)."""
    td = TensorDict(x=torch.arange(3.0), u=UnbatchedTensor(torch.arange(4.0)), batch_size=[3])
    out = op(td)
    assert type(out["x"]) is torch.Tensor and out["x"].shape == (3,)
    assert type(out.get("u")) is UnbatchedTensor and out.get("u").batch_size == (3,)
    assert type(torch._foreach_add([torch.ones(2), _table()], 1)[0]) is torch.Tensor
    assert out[1:].batch_size == (2,) and out[1:]["x"].shape == (2,)
