"""``record[idx] = dict`` and ``td[idx] = {"record": dict}``: a ``None`` given for a
field the record holds nothing for (``z=None``) leaves it absent, as the peer reads the
dict as a record of the class, whose ``None`` fields hold nothing (``td[i] =
td[i].to_dict()`` gives back ``'z': None``; fz23d, program 12,520,408 of
index,shape,combine --length 12: a stack of such a write then listed ``None`` per
element where the peer's field is ``None``)."""

from __future__ import annotations

from typing import Optional

import torch

import tclass
from tclass import TensorDict


@tclass.tensorclass
class Inner:
    y: torch.Tensor
    z: Optional[torch.Tensor] = None  # noqa: UP045 (the peer's spelling)


def _holder() -> TensorDict:
    inner = Inner(y=torch.zeros(2, dtype=torch.int64), batch_size=[2])
    return TensorDict(a=torch.zeros(2), inner=inner, batch_size=[2])


def test_a_rows_to_dict_written_back_leaves_an_absent_field_absent() -> None:
    td = _holder()
    td[-1] = td[-1].to_dict()  # {'a': ..., 'inner': {'y': ..., 'z': None}}
    assert list(td.keys(True)) == ["a", ("inner", "y"), "inner"]
    assert td["inner"].z is None
    stacked = torch.stack([td, td.clone()], 0)
    assert stacked["inner"].z is None and ("inner", "z") not in stacked.keys(True)


def test_a_none_for_an_absent_field_with_other_values_writes_those() -> None:
    td = _holder()
    td[0] = {"a": 1.0, "inner": {"y": torch.tensor(3), "z": None}}
    assert td["inner"].y.tolist() == [3, 0] and td["a"].tolist() == [1.0, 0.0]
    assert list(td["inner"]._tensordict.keys()) == ["y"]
    record = Inner(y=torch.zeros(2, dtype=torch.int64), batch_size=[2])
    record[1] = {"y": torch.tensor(5), "z": None}  # on the record itself
    assert record.y.tolist() == [0, 5] and record.z is None
    assert list(record._tensordict.keys()) == ["y"]


def test_a_tensor_for_an_absent_field_is_still_written() -> None:
    td = _holder()
    td[0] = {"inner": {"y": torch.tensor(3), "z": torch.tensor(2.0)}}
    assert td["inner"].z.tolist() == [2.0, 0.0]
