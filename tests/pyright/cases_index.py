# pyright: strict, reportUnnecessaryTypeIgnoreComment=true
"""Checked by pyright in strict mode (``make typecheck``), never run: a record takes every
batch index the runtime takes (numpy integers and arrays, masks, lists, ``...``) and
refuses a field name (the runtime raises FieldIndexError: read a field as an attribute);
``Cls.load`` is the class's; dim names are any hashables. Each ``pyright: ignore`` must
match an error (an unneeded one is reported). mypy checks the same in
tests/typing/cases_typed_users.py."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from typing_extensions import assert_type

from tclass import TensorClass, TensorDict


class Step(TensorClass):
    obs: torch.Tensor


def cases(folder: str) -> None:
    rec = Step(obs=torch.zeros(3, 2), batch_size=[3])
    td = TensorDict(a=torch.zeros(3), batch_size=[3])
    assert_type(rec[np.int64(1)], Step)
    assert_type(rec[np.array([0, 2])], Step)
    assert_type(td[np.array([0, 2])], TensorDict)
    assert_type(td[np.int64(0)], TensorDict)
    assert_type(rec[[True, False, True]], Step)
    assert_type(rec[..., None, 0:2], Step)
    assert_type(rec[rec.obs[:, 0] > 0], Step)
    rec[0] = rec[1]
    assert_type(Step.load(folder), Step)
    named = Step(obs=torch.zeros(3, 2), batch_size=[3], names=[0])  # any hashable name
    assert_type(named.names, list[Any])
    rec["obs"]  # pyright: ignore[reportArgumentType]
    rec["obs"] = torch.zeros(3, 2)  # pyright: ignore[reportArgumentType]
