"""Write paths that skipped a value constraint or left a partial write (nu24f, session
24): a Python value written as a node (``set_``, ``copy_``, ``out=``) or under a
one-item key path (``update_({("count",): -1})``), the Python values of a nested
``copy_`` checked after its tensors were written, a ``set_at_`` index reaching a
spec'd field's feature dims refused as a row write, and ``record.p += x``, which
torch writes into the field's own tensor before the record sees it (the error says
so, instead of implying nothing was written)."""

from __future__ import annotations

from typing import Annotated

import annotated_types as at
import pytest
import torch

from tclass import NonTensorData, TensorClass, TensorDict, errors

FieldSpecError = errors.FieldSpecError
Tensor = torch.Tensor


class Job(TensorClass):
    x: Tensor
    count: Annotated[int, at.Ge(0)] = 0


class Holder(TensorClass):
    y: Tensor
    job: Job


class Probs(TensorClass):
    p: Annotated[Tensor, at.Ge(0), at.Le(1)]
    x: Tensor


class Tags(TensorClass):
    x: Tensor
    tags: Annotated[list[str], at.MaxLen(2)]


def job(count: int = 1) -> Job:
    return Job(x=torch.zeros(4), count=count, batch_size=[4])


def rows(count: int, n: int = 4) -> TensorDict:
    return TensorDict({"x": torch.ones(n), "count": NonTensorData(count, batch_size=[n])}, [n])


def probs() -> Probs:
    return Probs(p=torch.full((4, 3), 0.5), x=torch.zeros(4), batch_size=[4])


WRITES = {
    "update_ one-item key": lambda r, c: r.update_({("count",): c}),
    "update_at_ one-item key": lambda r, c: r.update_at_({("count",): c}, 1),
    "set_ node": lambda r, c: r.set_("count", NonTensorData(c, batch_size=[4])),
    "set_ one-item key node": lambda r, c: r.set_(("count",), NonTensorData(c, batch_size=[4])),
    "copy_": lambda r, c: r.copy_(rows(c)),
    "where out=": lambda r, c: torch.where(
        torch.ones(4, dtype=torch.bool), rows(c), r.clone(), out=r
    ),
    "stack out=": lambda r, c: torch.stack(list(rows(c).unbind(0)), 0, out=r),
    "cat out=": lambda r, c: torch.cat([rows(c, 2), rows(c, 2)], 0, out=r),
}


@pytest.mark.parametrize("path", list(WRITES))
def test_a_python_value_constraint_holds_on_every_path(path: str) -> None:
    record = job()
    with pytest.raises(FieldSpecError, match=r"Job\.count is given int -1.*breaks ge=0"):
        WRITES[path](record, -1)
    assert record.count == 1 and (record.x == 0).all()
    WRITES[path](record, 3)  # a value that meets it is written, as the peer writes it
    written = record.count
    assert (written if isinstance(written, int) else set(written)) in (3, {3}, {1, 3})


def test_a_nested_copy_checks_python_values_before_the_tensors() -> None:
    record = Holder(y=torch.zeros(4), job=job(), batch_size=[4])
    source = TensorDict({"y": torch.ones(4), "job": rows(-1)}, [4])
    for write in (
        lambda: record.copy_(source),
        lambda: TensorDict({"h": record}, [4]).copy_(TensorDict({"h": source}, [4])),
    ):
        with pytest.raises(FieldSpecError, match=r"Job\.count is given int -1"):
            write()
        assert (record.y == 0).all() and (record.job.x == 0).all() and record.job.count == 1
    record.copy_(TensorDict({"y": torch.ones(4), "job": rows(2)}, [4]))
    assert (record.y == 1).all() and (record.job.x == 1).all() and record.job.count == 2


def test_set_at_an_index_into_the_feature_dims_is_written_and_checked() -> None:
    record = probs()
    record.set_at_("p", torch.full((4,), 0.25), (slice(None), 0))  # p[:, 0], as the peer
    assert record.p[:, 0].tolist() == [0.25] * 4 and (record.p[:, 1:] == 0.5).all()
    mask = torch.zeros(4, 3, dtype=torch.bool)
    mask[1, 2] = True
    record.set_at_("p", torch.tensor(0.75), mask)
    assert record.p[1].tolist() == [0.25, 0.5, 0.75]
    with pytest.raises(FieldSpecError, match=r"Probs\.p: the value written holds 2\.0.*le=1"):
        record.set_at_("p", torch.full((4,), 2.0), (slice(None), 1))
    assert (record.p[:, 1] == 0.5).all()


def test_an_augmented_assignment_says_the_tensor_was_already_changed() -> None:
    record = probs()
    with pytest.raises(FieldSpecError, match=r"changed in place before it was assigned back"):
        record.p += 1  # torch adds into record.p's tensor first: nothing can undo it
    assert (record.p == 1.5).all()  # what the message says
    record = probs()
    with pytest.raises(FieldSpecError, match=r"Probs\.p holds 1\.5") as info:
        record.p = record.p + 1  # a new tensor: checked before it is stored
    assert "changed in place" not in str(info.value) and (record.p == 0.5).all()
    with pytest.raises(FieldSpecError, match="Nothing was written"):
        record.add_(1)
    assert (record.p == 0.5).all()


def test_an_augmented_assignment_of_a_list_says_it_was_already_changed() -> None:
    record = Tags(x=torch.zeros(2), tags=["a"], batch_size=[2])
    with pytest.raises(FieldSpecError, match=r"changed in place before it was assigned back") as e:
        record.tags += ["b", "c"]
    assert "Nothing was written" not in str(e.value) and record.tags == ["a", "b", "c"]
    record = Tags(x=torch.zeros(2), tags=["a"], batch_size=[2])
    with pytest.raises(FieldSpecError, match="Nothing was written"):
        record.tags = record.tags + ["b", "c"]
    assert record.tags == ["a"]


class Outer(TensorClass):
    y: Annotated[Tensor, at.Ge(0), at.Le(1)]
    inner: Probs


def test_update_in_place_checks_python_values_and_nested_records_first() -> None:
    record = job()
    with pytest.raises(FieldSpecError, match=r"Job\.count is given int -1"):
        record.update(rows(-1), inplace=True)  # it wrote x, then refused count
    assert (record.x == 0).all() and record.count == 1
    with pytest.raises(FieldSpecError, match=r"Job\.count is given int -1"):
        TensorDict({"job": record}, [4]).update(
            {"job": {"x": torch.ones(4), "count": -1}}, inplace=True
        )
    assert (record.x == 0).all() and record.count == 1
    outer = Outer(y=torch.full((4,), 0.5), inner=probs(), batch_size=[4])
    bad = {"y": torch.full((4,), 0.25), "inner": {"x": torch.ones(4), "p": torch.full((4, 3), 2.0)}}
    with pytest.raises(FieldSpecError, match=r"Probs\.p.*2\.0.*le=1"):
        outer.update(bad, inplace=True)  # it wrote y, then refused inner.p
    assert (outer.y == 0.5).all() and (outer.inner.x == 0).all() and (outer.inner.p == 0.5).all()
    record.update(rows(2), inplace=True)
    bad["inner"]["p"] = torch.full((4, 3), 0.75)
    outer.update(bad, inplace=True)
    assert record.count == 2 and (record.x == 1).all()
    assert (outer.y == 0.25).all() and (outer.inner.p == 0.75).all() and (outer.inner.x == 1).all()
