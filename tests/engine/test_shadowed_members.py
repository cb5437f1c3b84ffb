"""torch functions and ``consolidate`` on records whose fields hide the members they
read (``shadow=True``): they work on the record's storage, as the peer's do (fields
named ``device``, ``unbind``, ``is_locked``, ``lock_``)."""

from __future__ import annotations

import torch

from tclass import tensorclass


@tensorclass(shadow=True)
class Placed:
    x: torch.Tensor
    device: torch.Tensor


@tensorclass(shadow=True)
class Split:
    x: torch.Tensor
    unbind: torch.Tensor


@tensorclass(shadow=True)
class Locks:
    x: torch.Tensor
    is_locked: torch.Tensor
    lock_: torch.Tensor


def test_stack_and_cat_of_records_with_a_field_named_device() -> None:
    rec = Placed(x=torch.ones(2), device=torch.zeros(2), batch_size=[2])
    stacked, joined = torch.stack([rec, rec]), torch.cat([rec, rec])
    assert type(stacked) is Placed and stacked.batch_size == (2, 2)
    assert type(joined) is Placed and joined.x.tolist() == [1.0] * 4
    assert joined.device.tolist() == [0.0] * 4  # the field


def test_torch_unbind_of_a_record_with_a_field_named_unbind() -> None:
    rec = Split(x=torch.arange(2.0), unbind=torch.zeros(2), batch_size=[2])
    parts = torch.unbind(rec, 0)
    assert [type(p) for p in parts] == [Split, Split]
    assert [p.x.item() for p in parts] == [0.0, 1.0]


def test_zeros_like_and_consolidate_of_a_record_with_lock_fields() -> None:
    rec = Locks(x=torch.ones(2), is_locked=torch.ones(2), lock_=torch.ones(2), batch_size=[2])
    zeros = torch.zeros_like(rec)
    assert type(zeros) is Locks and zeros.x.tolist() == [0.0, 0.0]
    assert not zeros._tensordict.is_locked  # as rec, unlocked
    packed = rec.consolidate()
    assert type(packed) is Locks and packed._tensordict.is_locked  # locked, as the peer's
    assert packed.x.tolist() == [1.0, 1.0]
