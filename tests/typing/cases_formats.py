"""The table readers are class methods returning the caller's type; the module
functions return TensorDicts; the module helpers keep their types."""

from __future__ import annotations

from typing import Any

import torch
from records import DStep, Step
from typing_extensions import assert_type

import tclass
from tclass import NestedKey, TensorDict


def readers(frame: Any) -> None:
    assert_type(Step.from_pandas(frame), Step)
    assert_type(DStep.from_csv("t.csv", separator="."), DStep)
    assert_type(TensorDict.from_parquet("t.parquet", columns=["a"]), TensorDict)
    assert_type(TensorDict.from_json("t.json", lines=True), TensorDict)
    assert_type(tclass.from_pandas(frame, dtype=None), TensorDict)
    assert_type(tclass.from_arrow(frame), TensorDict)
    Step.from_pandas(frame, separator=1)  # type: ignore[arg-type]


def helpers(key: NestedKey) -> None:
    assert_type(tclass.unravel_key_to_tuple(key), tuple[str, ...])
    assert_type(tclass.assert_close(TensorDict(), TensorDict()), bool)
    good: NestedKey = ("a", ("b", "c"))
    bad: NestedKey = ("a", 1)  # type: ignore[assignment]
    del good, bad


class Typed(tclass.TypedTensorDict):
    eta: torch.Tensor


def typed() -> None:
    state = Typed(eta=torch.zeros(3), batch_size=[3])
    assert_type(state.eta, torch.Tensor)
    assert_type(state.clone(), Typed)
    assert_type(state.to_tensordict(), TensorDict)
    state.eta = 1  # type: ignore[assignment]
