"""Records whose fields hide members (``shadow=True``): the record's own methods that
used the hidden member still work, as the peer's (which works on the record's
TensorDict): ``cpu()`` with a field ``to``, ``copy.copy`` with a field ``clone``."""

from __future__ import annotations

import copy

import torch

from tclass import tensorclass


@tensorclass(shadow=True)
class Moved:
    x: torch.Tensor
    to: torch.Tensor


@tensorclass(shadow=True)
class Cloned:
    x: torch.Tensor
    clone: torch.Tensor


def test_cpu_of_a_record_with_a_field_named_to() -> None:
    rec = Moved(x=torch.ones(2), to=torch.zeros(2), batch_size=[2])
    moved = rec.cpu()
    assert type(moved) is Moved and moved.device == torch.device("cpu")
    assert moved.x.tolist() == [1.0, 1.0] and moved.to.tolist() == [0.0, 0.0]


def test_copy_of_a_record_with_a_field_named_clone() -> None:
    rec = Cloned(x=torch.ones(2), clone=torch.zeros(2), batch_size=[2])
    copied = copy.copy(rec)
    assert type(copied) is Cloned and copied is not rec
    assert copied.x is rec.x and copied.clone is rec.clone  # shallow: the same tensors
