"""Constrained records on the write paths that reached them another way: ``copy_at_``
(each entry was written before the next was checked), a TensorDict holding an HDF5
file or a lazy stack that holds a record (``td[i] = number`` wrote the TensorDict's own
entries before the record below refused it), ``multiple_of`` meeting an infinity (a bare
``ValueError`` from ``math.fmod``), writes under ``torch.vmap`` (the check read a
batched tensor's values, which vmap refuses, so every write failed, valid ones too), and
bounded fields sharing memory with each other or another entry (each result computed
from the memory as it was before any write, where the peer's walk reads the earlier
writes)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import annotated_types as at
import pytest
import torch

import tclass
from tclass import PersistentTensorDict, Spec, TensorClass, TensorDict, errors

FieldSpecError = errors.FieldSpecError
Tensor = torch.Tensor


class Bounded(TensorClass):
    a: Annotated[Tensor, Spec("", torch.float32)]
    p: Annotated[Tensor, Spec("k", torch.float32, ge=0, le=1)]


class Unit(TensorClass):
    p: Annotated[Tensor, Spec("", torch.float32, ge=0, le=1)]


def rec(n: int = 4) -> Bounded:
    return Bounded(a=torch.zeros(n), p=torch.full((n, 3), 0.5), batch_size=[n])


def forced(n: int = 4) -> Bounded:
    """A record holding values its class refuses (built past the checks), ``a`` valid."""
    record = Bounded(a=torch.ones(n), p=torch.full((n, 3), 0.5), batch_size=[n])
    record._tensordict._tensors["p"] = torch.full((n, 3), 2.0)
    return record


# --- copy_at_ -------------------------------------------------------------------------


@pytest.mark.parametrize("index", [slice(0, 2), 0, torch.tensor([3, 1])])
def test_copy_at_checks_every_entry_before_writing(index: Any) -> None:
    record = rec()
    source = forced(4)[index]
    with pytest.raises(FieldSpecError, match=r"Bounded.copy_at_\(.*Bounded.p.*le=1"):
        record.copy_at_(source, index)
    assert (record.a == 0).all() and (record.p == 0.5).all()  # ``a`` not written either
    held = TensorDict({"rec": record, "x": torch.zeros(4)}, [4])
    with pytest.raises(FieldSpecError, match="le=1"):
        held.copy_at_(TensorDict({"x": torch.ones(4), "rec": forced()}, [4])[index], index)
    assert (held["x"] == 0).all() and (record.a == 0).all() and (record.p == 0.5).all()


@pytest.mark.parametrize("kind", ["lazy stack", "HDF5 file", "folder"])
def test_copy_at_into_a_record_over_storage_checks_first(kind: str, tmp_path: Path) -> None:
    if kind == "lazy stack":
        record = tclass.lazy_stack([rec(2), rec(2)])
    elif kind == "HDF5 file":
        pytest.importorskip("h5py")
        rec().to_h5(str(tmp_path / "r.h5"))
        record = Bounded.from_h5(str(tmp_path / "r.h5"), mode="r+")
    else:
        record = rec().memmap(tmp_path / "m")
    with pytest.raises(FieldSpecError, match="Bounded.p.*le=1"):
        record.copy_at_(forced(2), slice(0, 2))
    assert (record.a == 0).all() and (record.p == 0.5).all()


def test_copy_at_writes_values_that_fit() -> None:
    record = rec()
    fits = Bounded(a=torch.ones(2), p=torch.full((2, 3), 0.25), batch_size=[2])
    record.copy_at_(fits, slice(1, 3))
    assert record.a.tolist() == [0, 1, 1, 0] and (record.p[1:3] == 0.25).all()


# --- multiple_of and infinities ---------------------------------------------------------


class Stepped(TensorClass):
    m: Annotated[Tensor, Spec("", torch.float32, multiple_of=0.5)]
    step: Annotated[float, at.MultipleOf(0.25)] = 0.0


def test_an_infinity_breaks_multiple_of_as_a_field_spec_error() -> None:
    record = Stepped(m=torch.zeros(3), batch_size=[3])
    with pytest.raises(FieldSpecError, match=r"would hold inf .* multiple_of=0.5"):
        record.pow_(-1)  # 0 ** -1: the element-wise pass names the value (was fmod's error)
    assert (record.m == 0).all()
    with pytest.raises(FieldSpecError, match="multiple_of=0.25"):
        Stepped(m=torch.zeros(3), step=float("inf"), batch_size=[3])
    with pytest.raises(FieldSpecError, match="multiple_of=0.25"):
        record.step = float("-inf")
    assert record.step == 0.0


# --- a TensorDict holding a file or a lazy stack that holds a record --------------------


def _file_held(tmp_path: Path) -> tuple[TensorDict, PersistentTensorDict]:
    inner = TensorDict({"rec": Unit(p=torch.full((4,), 0.5), batch_size=[4]), "y": torch.zeros(4)})
    inner.batch_size = torch.Size([4])
    ptd = PersistentTensorDict.from_dict(inner, filename=str(tmp_path / "f.h5"))
    return TensorDict({"a": torch.zeros(4), "ptd": ptd, "z": torch.zeros(4)}, [4]), ptd


ROWS: dict[str, Any] = {
    "td[0] = number": (0, 7),
    "td[:2] = number": (slice(0, 2), 7),
    "td[0] = TensorDict": (0, TensorDict({"a": 1.0, "ptd": {"rec": {"p": 3.0}}, "z": 1.0})),
    "td[0] = dict": (0, {"a": 1.0, "ptd": {"rec": {"p": 3.0}, "y": 1.0}, "z": 1.0}),
}


@pytest.mark.parametrize("write", list(ROWS))
def test_rows_into_a_tensordict_holding_a_file_are_checked_first(
    write: str, tmp_path: Path
) -> None:
    td, ptd = _file_held(tmp_path)
    index, value = ROWS[write]
    with pytest.raises(FieldSpecError, match=r"Unit.p holds .*le=1"):
        td[index] = value
    assert (td["a"] == 0).all() and (td["z"] == 0).all()  # before the file: not written
    assert (ptd["y"] == 0).all() and (ptd["rec"].p == 0.5).all()
    td[0] = 0.25  # values that fit: every entry written, the file's too
    td[1:3] = TensorDict({"a": 1.0, "ptd": {"rec": {"p": 0.75}, "y": 2.0}, "z": 1.0})
    assert td["a"].tolist() == [0.25, 1, 1, 0] and ptd["y"].tolist() == [0.25, 2, 2, 0]
    assert ptd["rec"].p.tolist() == [0.25, 0.75, 0.75, 0.5]


@pytest.mark.parametrize("write", list(ROWS))
def test_rows_into_a_tensordict_holding_a_lazy_stack_are_checked_first(write: str) -> None:
    members = [
        TensorDict({"rec": Unit(p=torch.full((4,), 0.5), batch_size=[4]), "y": torch.zeros(4)})
        for _ in range(2)
    ]
    for member in members:
        member.batch_size = torch.Size([4])
    lazy = tclass.lazy_stack(members, 1)  # [4, 2]: rows 0 and 1 reach both members
    td = TensorDict({"a": torch.zeros(4, 2), "ptd": lazy, "z": torch.zeros(4, 2)}, [4, 2])
    index, value = ROWS[write]
    with pytest.raises(FieldSpecError, match=r"Unit.p: the value written holds .*le=1"):
        td[index] = value
    assert (td["a"] == 0).all() and (td["z"] == 0).all()
    assert (lazy.get("y") == 0).all() and (lazy.get("rec").p == 0.5).all()
    td[0] = 0.25
    td[:, 1] = {"a": 1.0, "ptd": {"rec": {"p": 1.0}}}
    assert td["a"][:2].tolist() == [[0.25, 1], [0, 1]]
    assert lazy.get("rec").p[:2].tolist() == [[0.25, 1], [0.5, 1]]


# --- torch.vmap -------------------------------------------------------------------------


def test_writes_under_vmap_are_checked_on_every_batch_element() -> None:
    def fresh() -> Unit:
        return Unit(p=torch.full((4,), 0.25), batch_size=[4])

    record = fresh()
    torch.vmap(lambda r: r.add_(0.25))(record)  # as the peer: written through
    assert (record.p == 0.5).all()
    record = fresh()
    torch.vmap(lambda r: r.set_("p", r.p * 2))(record)
    assert (record.p == 0.5).all()
    record = fresh()
    with pytest.raises(FieldSpecError, match=r"Unit.mul_\(.*would hold 2.0.*le=1"):
        torch.vmap(lambda r: r.mul_(8))(record)
    assert (record.p == 0.25).all()
    built = torch.vmap(lambda t: Unit(p=t * 2, batch_size=[]).p)(torch.full((4,), 0.25))
    assert (built == 0.5).all()
    values = torch.tensor([0.5, 0.5, 3.0])  # one batch element breaks the bound
    with pytest.raises(FieldSpecError, match=r"Unit.p holds 3.0 at index \(2,\)"):
        torch.vmap(lambda t: Unit(p=t, batch_size=[]).p)(values)


# --- apply_ over memory a bounded field shares ------------------------------------------


class Wide(TensorClass):
    p: Annotated[Tensor, Spec("", torch.float32, ge=0, le=100)]


@pytest.mark.parametrize("first", ["entry", "record"])
def test_apply_reads_a_shared_bounded_field_after_the_earlier_write(first: str) -> None:
    # As the peer's one-at-a-time walk (and an unbounded field here): the entry met
    # second reads what the first wrote (1 + 1 + 1), where the bounded field's staged
    # result was computed from the memory as it was before (2).
    base = torch.ones(4)
    record = Wide(p=base, batch_size=[4])
    entries = {"a": base[:], "rec": record} if first == "entry" else {"rec": record, "a": base[:]}
    TensorDict(entries, [4]).apply_(lambda x: x + 1)
    assert base.tolist() == [3, 3, 3, 3]
    base = torch.full((4,), 0.25)
    held = TensorDict({"a": base[:], "rec": Unit(p=base, batch_size=[4])}, [4])
    with pytest.raises(FieldSpecError, match="le=1.*the results before it .* were"):
        held.apply_(lambda x: x * 3)  # 0.75, then 2.25 read from it: refused
    assert base.tolist() == [0.75] * 4  # (the entry before it was written, as it was read)


class Shifted(TensorClass):
    obs: Annotated[Tensor, Spec("", torch.float32, ge=0, le=1000)]
    nxt: Annotated[Tensor, Spec("", torch.float32, ge=0, le=1000)]


def _shifted() -> tuple[Shifted, Tensor]:
    buffer = torch.arange(6.0)  # obs and next obs: two views of one buffer
    return Shifted(obs=buffer[:-1], nxt=buffer[1:], batch_size=[5]), buffer


@pytest.mark.parametrize(
    ("op", "expected"),
    [
        (lambda s: s.mul_(2), [0, 4, 8, 12, 16, 10]),  # (the peer's values)
        (lambda s: s.apply_(lambda x: x * 2 + 1), [1, 7, 11, 15, 19, 11]),
    ],
)
def test_bounded_fields_over_one_buffer_are_written_in_turn(op: Any, expected: list[int]) -> None:
    # Each field's result computed from the buffer as the field before it left it, as
    # the peer's one-at-a-time writes (and unbounded fields): was each from a copy
    # taken before either was written ([0, 2, 4, 6, 8, 10] for mul_).
    record, buffer = _shifted()
    op(record)
    assert buffer.tolist() == expected
    record, buffer = _shifted()
    with pytest.raises(FieldSpecError, match=r"Shifted.nxt: the result would hold 1993.0"):
        record.add_(996)  # 1 + 996 is fine for obs; nxt then reads 997: refused
    assert buffer.tolist() == [0, 1, 2, 3, 4, 5]


def test_two_bounded_fields_under_vmap_are_written() -> None:
    # (their memory cannot be compared under vmap: each computed from its own copy)
    record = Shifted(obs=torch.ones(5), nxt=torch.ones(5), batch_size=[5])
    torch.vmap(lambda r: r.add_(1))(record)
    torch.vmap(lambda r: r.apply_(lambda x: x + 1))(record)
    assert record.obs.tolist() == record.nxt.tolist() == [3.0] * 5
