# pyright: strict, reportUnnecessaryTypeIgnoreComment=true
"""Checked by pyright in strict mode (``make typecheck``), never run.

Lazy stacks know their members' type: ``lazy_stack`` of TensorDicts, parameters, files
or lazy stacks along dim 0 is a ``LazyStackedTensorDict`` of them (``tensordicts`` a list
of them, ``stack[i]`` one of them), as at runtime; along another dim ``stack[i]`` indexes
each member, so its members are typed ``TensorDictBase``. Records give a record,
``NonTensorData`` a ``NonTensorStack``. A stack of a member type is a stack of any of its
base types (a function taking ``LazyStackedTensorDict`` takes them all). mypy checks the
same in tests/typing/cases_lazy_members.py."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from typing_extensions import assert_type

from tclass import (
    LazyStackedTensorDict,
    NonTensorData,
    NonTensorStack,
    PersistentTensorDict,
    TensorClass,
    TensorDict,
    TensorDictBase,
    TensorDictParams,
    lazy_stack,
)


class Step(TensorClass):
    obs: torch.Tensor


def step() -> Step:
    return Step(obs=torch.zeros(3, 2), batch_size=[3])


def flat() -> TensorDict:
    return TensorDict(a=torch.zeros(3), batch_size=[3])


def takes_any_stack(stack: LazyStackedTensorDict) -> int:
    return len(stack.tensordicts)


def stack_of_parameters() -> None:
    params = TensorDictParams(TensorDict.from_module(nn.Linear(2, 2)))
    ls = lazy_stack([params, params])
    assert_type(ls, LazyStackedTensorDict[TensorDictParams])
    assert_type(ls[0], TensorDictParams)
    assert_type(ls[-1], TensorDictParams)
    assert_type(ls.tensordicts, list[TensorDictParams])
    assert_type(list(ls.tensordicts[0].parameters()), list[nn.Parameter])
    assert_type(ls[0:1], LazyStackedTensorDict[TensorDictParams])
    assert_type(ls.clone(), LazyStackedTensorDict[TensorDictParams])
    assert_type(takes_any_stack(ls), int)
    wrong: TensorDict = ls[0]  # pyright: ignore[reportAssignmentType]
    del wrong


def stack_of_tensordicts() -> None:
    td = flat()
    ls = lazy_stack([td, td])
    assert_type(ls, LazyStackedTensorDict[TensorDict])
    assert_type(ls[1], TensorDict)
    assert_type(ls.tensordicts, list[TensorDict])
    assert_type(ls["a"], Any)
    assert_type(ls.unsqueeze(-1), LazyStackedTensorDict[TensorDict])
    for member in ls.tensordicts:
        assert_type(member.batch_size, torch.Size)
    assert_type(lazy_stack([td, td], 0), LazyStackedTensorDict[TensorDict])
    typed: LazyStackedTensorDict[TensorDictBase] = ls  # covariant: a stack of base types
    assert_type(takes_any_stack(typed), int)


def members_are_not_narrowed(stack: LazyStackedTensorDict[TensorDictBase]) -> None:
    narrowed: LazyStackedTensorDict[TensorDict] = stack  # pyright: ignore[reportAssignmentType]
    del narrowed


def along_another_dim() -> None:
    td = flat()
    ls = lazy_stack([td, td], 1)
    assert_type(ls, LazyStackedTensorDict[TensorDictBase])
    assert_type(ls[0], TensorDictBase)  # each member's row 0: a lazy stack
    assert_type(ls.tensordicts, list[TensorDictBase])
    assert_type(lazy_stack([td, td], dim=-1), LazyStackedTensorDict)


def stacks_of_stacks_files_and_values(ptd: PersistentTensorDict) -> None:
    inner = lazy_stack([flat(), flat()])
    outer = lazy_stack([inner, inner])
    assert_type(outer, LazyStackedTensorDict[LazyStackedTensorDict[TensorDict]])
    assert_type(outer[0][1], TensorDict)
    assert_type(outer.tensordicts[0].tensordicts, list[TensorDict])
    assert_type(lazy_stack([ptd, ptd])[0], PersistentTensorDict)
    value = NonTensorData("x", batch_size=[3])
    assert_type(lazy_stack([value, value]), NonTensorStack[Any])
    built = LazyStackedTensorDict(flat(), flat())  # the constructor: members unknown
    assert_type(built[0], TensorDictBase)


def records_stay_records() -> None:
    s = step()
    assert_type(lazy_stack([s, s]), Step)
    assert_type(lazy_stack([s, s], 1), Step)
    assert_type(lazy_stack([s, s])[0], Step)
