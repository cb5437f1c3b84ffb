"""Rows of a collection as named columns and back (``tclass/ray/_columns.py``), without
Ray: ``tclass.ray.to_batch`` and ``tclass.ray.to_record``, what Ray Data's read and write
tasks and ``iter_records`` do to each block and batch."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

import tclass.ray
from tclass import NonTensorData, NonTensorStack, TensorDict
from tclass._core._readonly import ReadOnlyTensor
from tclass.errors import (
    FieldSpecError,
    InvalidKeyError,
    KeyConflictError,
    ShapeError,
    UnsupportedError,
)

from ray_records import Meta, Step, Transition, step, transition


def test_columns_are_the_leaves_named_by_their_key_paths() -> None:
    record = step(5, offset=2)
    batch = tclass.ray.to_batch(record)
    assert list(batch) == ["obs", "action", "weight", "meta.seed", "meta.source", "tag"]
    assert batch["obs"].shape == (5, 4) and batch["obs"].dtype == np.float32
    assert np.shares_memory(batch["obs"], record.obs.numpy())  # a view, not a copy
    assert batch["weight"].dtype == np.float32  # numpy has no bfloat16: widened, exactly
    assert batch["weight"].tolist() == record.weight.float().tolist()
    assert batch["meta.source"].tolist() == ["sim"] * 5  # one value: repeated per row
    assert batch["tag"].tolist() == [f"t{i}" for i in range(2, 7)]
    assert batch["tag"].dtype == object


def test_a_batch_comes_back_as_the_declared_record() -> None:
    record = step(6)
    back = tclass.ray.to_record(tclass.ray.to_batch(record), Step)
    assert type(back) is Step and type(back.meta) is Meta
    assert back.batch_size == torch.Size([6])
    assert back.weight.dtype == torch.bfloat16  # its spec's one dtype holds every value
    assert torch.equal(back.weight, record.weight) and torch.equal(back.obs, record.obs)
    assert back.meta.source == "sim"  # the same value in every row: one value again
    assert back.tag == record.tag and back[3].tag == "t3"  # one per row
    assert isinstance(back._tensordict.get("tag"), NonTensorStack)


def test_without_a_class_numbers_are_tensors_and_objects_values() -> None:
    batch = {
        "x": np.arange(6, dtype=np.int16).reshape(3, 2),
        "nested.y": np.ones(3, dtype=np.float64),
        "nested.name": np.array(["a", "b", "a"], dtype=object),
        "info": np.array([{"k": 1}, {"k": 1}, {"k": 1}], dtype=object),
    }
    td = tclass.ray.to_record(batch)
    assert type(td) is TensorDict and td.batch_size == torch.Size([3])
    assert td["x"].dtype == torch.int16 and td["x"].shape == (3, 2)
    assert td["nested", "name"] == ["a", "b", "a"]
    assert isinstance(td._entry("info"), NonTensorData) and td["info"] == {"k": 1}


def test_read_only_arrays_give_read_only_tensors_over_their_memory() -> None:
    array = np.arange(8, dtype=np.float32).reshape(2, 4)
    array.flags.writeable = False  # as Ray's object store hands them out
    td = tclass.ray.to_record({"x": array})
    assert type(td["x"]) is ReadOnlyTensor and td["x"].data_ptr() == array.ctypes.data
    writable = np.zeros(3)
    assert tclass.ray.to_record({"x": writable})["x"].data_ptr() == writable.ctypes.data


def test_a_class_decides_which_columns_are_values() -> None:
    record = transition(3)
    batch = tclass.ray.to_batch(record)
    batch["env"] = np.array([1, 2, 3])  # a numeric column for a str field: still values
    with pytest.raises(
        FieldSpecError, match=r"Transition\.env is annotated str; its row 0 holds int 1"
    ) as caught:
        tclass.ray.to_record(batch, Transition)  # ...checked against their annotation
    assert caught.value.problems[0][:2] == ("env", "annotation")
    batch["env"] = np.array(["a", "b", "c"], dtype=object)
    assert tclass.ray.to_record(batch, Transition).env == ["a", "b", "c"]


def test_the_class_checks_each_batch() -> None:
    batch = tclass.ray.to_batch(step(4))
    bad = dict(batch, action=np.array([0, 1, 9, 2]))
    with pytest.raises(FieldSpecError, match=r"Step\.action holds 9") as caught:
        tclass.ray.to_record(bad, Step)
    assert caught.value.problems[0].field == "action"
    wide = dict(batch, obs=np.ones((4, 5), dtype=np.float32))
    with pytest.raises(FieldSpecError, match=r"Step\.obs"):
        tclass.ray.to_record(wide, Step)
    # A column converts to its field's one dtype as an array-like does: when that dtype
    # holds every value (any real number in a floating dtype, rounded; 2.0 in int64).
    whole = tclass.ray.to_record(dict(batch, action=np.array([0.0, 1.0, 2.0, 3.0])), Step)
    assert whole.action.dtype == torch.int64 and whole.action.tolist() == [0, 1, 2, 3]
    with pytest.raises(FieldSpecError, match=r"Step\.action has dtype float64.*wants int64"):
        tclass.ray.to_record(dict(batch, action=np.array([0.0, 1.5, 2.0, 3.0])), Step)
    missing = {k: v for k, v in batch.items() if k not in ("obs", "tag")}  # tag: defaulted
    missing["meta.extra"] = np.zeros(4)
    with pytest.raises(FieldSpecError, match=r"Step\.obs .*no column 'obs'") as caught:
        tclass.ray.to_record(missing, Step)
    found = {(p.field, p.dim) for p in caught.value.problems}
    assert found == {("obs", "missing"), ("extra", "unknown")}
    assert "'meta.extra' is no field of Meta" in str(caught.value)
    assert tclass.ray.to_record({k: v for k, v in batch.items() if k != "tag"}, Step).tag == "x"


def _list_column(rows: list[list[Any]]) -> np.ndarray[Any, Any]:
    """A column as Ray's numpy batches give an Arrow list column (``from_items`` of
    Python lists): an object array, each row an array of its own."""
    column = np.empty(len(rows), dtype=object)
    column[:] = [np.array(row) for row in rows]
    return column


def test_list_columns_of_one_shape_are_tensors() -> None:
    """``ray.data.from_items([{"obs": [0.0, 1.0]}, ...])`` gives an object column of
    arrays: rows of one shape and dtype are stacked into a tensor (they were Python
    values without a class, and refused as rows of different shapes with one)."""
    obs = _list_column([[float(i), 1.0, 2.0, 3.0] for i in range(2)])
    batch = dict(tclass.ray.to_batch(transition(2)), obs=obs)
    record = tclass.ray.to_record(batch, Transition)
    assert record.obs.dtype == torch.float64  # the column's dtype, as for any array
    assert record.obs.tolist() == [[0.0, 1.0, 2.0, 3.0], [1.0, 1.0, 2.0, 3.0]]
    td = tclass.ray.to_record({"x": _list_column([[1, 2], [3, 4], [5, 6]])})
    assert td["x"].dtype == torch.int64 and td["x"].tolist() == [[1, 2], [3, 4], [5, 6]]
    nested = np.empty(2, dtype=object)  # list<list<float>>: rows are list columns too
    nested[:] = [_list_column([[1.0, 2.0], [3.0, 4.0]]), _list_column([[5.0, 6.0], [7.0, 8.0]])]
    assert tclass.ray.to_record({"m": nested})["m"].shape == (2, 2, 2)
    words = np.empty(2, dtype=object)  # rows that are not numbers stay Python values
    words[:] = [np.array(["a", "b"]), np.array(["c", "d"])]
    assert isinstance(tclass.ray.to_record({"w": words})._entry("w"), NonTensorStack)


def test_columns_that_cannot_form_a_record_are_refused() -> None:
    with pytest.raises(ShapeError, match="as many rows"):
        tclass.ray.to_record({"a": np.zeros(3), "b": np.zeros(4)})
    with pytest.raises(KeyConflictError, match="'a'"):
        tclass.ray.to_record({"a": np.zeros(3), "a.b": np.zeros(3)})
    ragged = np.empty(2, dtype=object)
    ragged[:] = [np.zeros(2), np.zeros(3)]
    batch = dict(tclass.ray.to_batch(transition(2)), obs=ragged)
    with pytest.raises(ShapeError, match=r"'obs' holds Python objects"):
        tclass.ray.to_record(batch, Transition)


def test_collections_that_are_not_columns_are_refused() -> None:
    with pytest.raises(InvalidKeyError, match=r"'a\.b'.*rename"):
        tclass.ray.to_batch(TensorDict({"a.b": torch.zeros(2)}, [2]))
    with pytest.raises(UnsupportedError, match="view_as_real"):
        tclass.ray.to_batch(TensorDict({"z": torch.zeros(2, dtype=torch.complex64)}, [2]))
    with pytest.raises(ShapeError, match="batch size"):
        tclass.ray.to_batch(TensorDict({"a": torch.zeros(2)}))
    stack = tclass.lazy_stack(
        [TensorDict({"a": torch.zeros(2)}), TensorDict({"a": torch.zeros(3)})]
    )
    with pytest.raises(UnsupportedError, match="lazy stack"):
        tclass.ray.to_batch(stack)
