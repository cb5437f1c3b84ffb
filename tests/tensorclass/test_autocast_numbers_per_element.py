"""Under ``autocast``, a tensor of the record's batch shape given to a number field
(``int``, ``float``, ``bool``) holds one number per element: what a stack of records
holds there, and what a folder written by the peer holds (its records keep numbers as
tensors). Each number is converted exactly (``tolist()``, never through a float), as a
stack of autocast records holds them. tclass raised a ``CastError`` ("only one element
tensors can be converted"), on load too: a folder the peer loads did not load."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import tclass
from tclass import TensorDict
from tclass.errors import CastError

BIG = 2**62 + 1  # not a float64: a cast through float would change it


@tclass.tensorclass(autocast=True)
class Counts:
    x: torch.Tensor
    k: int
    f: float


@tclass.tensorclass(autocast=True)
class Flags:
    x: torch.Tensor
    b: bool


@tclass.tensorclass
class PlainCounts:
    x: torch.Tensor
    k: int
    f: float


def test_constructor_takes_one_number_per_element() -> None:
    rec = Counts(x=torch.zeros(2), k=torch.tensor([BIG, 5]), f=torch.tensor([1, 2]), batch_size=[2])
    assert list(rec.k) == [BIG, 5]
    assert [type(v) for v in rec.k] == [int, int]
    assert list(rec.f) == [1.0, 2.0]
    assert [type(v) for v in rec.f] == [float, float]
    assert rec[0].k == BIG
    assert rec[1].f == 2.0


def test_as_a_stack_of_records_holds_them() -> None:
    rows = [Counts(x=torch.zeros(()), k=BIG + i, f=0.5 * i, batch_size=[]) for i in range(3)]
    stacked = torch.stack(rows)
    rec = Counts(
        x=torch.zeros(3),
        k=torch.tensor([BIG, BIG + 1, BIG + 2]),
        f=torch.tensor([0.0, 0.5, 1.0], dtype=torch.float64),
        batch_size=[3],
    )
    assert list(rec.k) == list(stacked.k)
    assert list(rec.f) == list(stacked.f)


def test_bool_field_and_assignment() -> None:
    rec = Flags(x=torch.zeros(3), b=torch.tensor([1, 0, 2]), batch_size=[3])
    assert list(rec.b) == [True, False, True]
    rec.b = torch.tensor([0, 0, 1])
    assert list(rec.b) == [False, False, True]


def test_from_tensordict_of_a_saved_folder(tmp_path: Path) -> None:
    td = TensorDict(
        x=torch.zeros(2),
        k=torch.tensor([BIG, -3]),
        f=torch.tensor([0.1, 2.0], dtype=torch.float64),
        batch_size=[2],
    )
    td.memmap(tmp_path / "td")
    rec = Counts.from_tensordict(TensorDict.load_memmap(tmp_path / "td"))
    assert list(rec.k) == [BIG, -3]
    assert list(rec.f) == [0.1, 2.0]  # float64 values kept, not rounded through float32


def test_folder_of_plain_records_read_into_the_autocast_class(tmp_path: Path) -> None:
    plain = PlainCounts(
        x=torch.zeros(2), k=torch.tensor([BIG, 7]), f=torch.tensor([1, 2]), batch_size=[2]
    )
    plain.memmap(tmp_path / "rec")
    loaded = Counts.from_tensordict(TensorDict.load_memmap(tmp_path / "rec"))
    assert list(loaded.k) == [BIG, 7]
    assert list(loaded.f) == [1.0, 2.0]


def test_folder_written_by_the_peer(tmp_path: Path) -> None:
    tensordict = pytest.importorskip("tensordict")
    peer_td = tensordict.TensorDict(
        x=torch.zeros(3), k=torch.tensor([BIG, BIG + 1, 0]), f=torch.arange(3), batch_size=[3]
    )
    peer_td.memmap(tmp_path / "peer")
    loaded = Counts.from_tensordict(TensorDict.load_memmap(tmp_path / "peer"))
    assert list(loaded.k) == [BIG, BIG + 1, 0]
    assert list(loaded.f) == [0.0, 1.0, 2.0]


def test_what_is_not_one_number_per_element_is_still_refused() -> None:
    with pytest.raises(CastError, match=r"Counts\.k is annotated int \(autocast\)"):
        Counts(x=torch.zeros(2), k=torch.zeros(2, 3), f=1.0, batch_size=[2])


def test_one_element_and_tensor_fields_as_before() -> None:
    rec = Counts(x=torch.tensor([3, 4]), k=torch.tensor([9]).squeeze(), f=2, batch_size=[2])
    assert rec.k == 9 and type(rec.k) is int  # a 0-d tensor: one number for the record
    assert rec.x.dtype == torch.int64  # a Tensor field keeps its tensor
