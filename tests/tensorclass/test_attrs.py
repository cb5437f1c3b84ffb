"""``attrs()`` (tclass/_tensorclass/_attrs.py): the layout of its result."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import torch

from tclass import MetaData, NonTensorData, NonTensorStack, TensorAttrs, TensorDict, lazy_stack

from peer_scenarios import Scenario, scenario_tests  # noqa: E402


def test_attrs_keeps_key_order_and_empty_nested_collections() -> None:
    # The peer's attrs is an apply over the tree: Python values stay where they were and
    # nested collections without tensors are kept (programs 15,630,402 and 15,610,171 of
    # features,index,shape,combine L12)
    td = TensorDict(
        {
            "v": "a",
            "n": TensorDict({"e": TensorDict()}, []),
            "b": torch.zeros(1, 3),
            "a": torch.ones(1),
        },
        batch_size=[1],
    )
    attrs = td.attrs()
    assert list(attrs.keys()) == ["v", "n", "b", "a"]
    assert list(attrs["n"].keys()) == ["e"] and list(attrs["n", "e"].keys()) == []
    assert isinstance(attrs.get("v"), NonTensorData) and attrs.get("v").data == "a"
    assert isinstance(attrs["b"], TensorAttrs) and attrs["b"].tgt_shape == torch.Size([1, 3])
    assert attrs["a"].tgt_dtype == torch.float32


def _kind(node: Any) -> Any:
    return type(node).__name__, tuple(node.batch_size)


def _attrs(lib: ModuleType) -> Any:
    # fuzzer programs 15,610,516 / 15,620,210: a value node of the result has no batch dims
    td = lib.TensorDict(
        d=torch.zeros(0, 2), v="", s=lib.NonTensorData(9, batch_size=[0, 2]), batch_size=[0, 2]
    )
    members = [lib.TensorDict(b=torch.zeros(2)), lib.TensorDict(b=torch.ones(2))]
    lazy = lib.lazy_stack(members).set(("n", "md"), lib.MetaData(None, batch_size=[2]))
    got, meta = td.attrs(), lazy.attrs()
    return (
        _kind(got.get("v")), got["v"], _kind(got.get("s")), got["s"],
        _kind(meta.get(("n", "md"))), meta["n", "md"],
    )  # fmt: skip


SCENARIOS: dict[str, Scenario] = {"values": _attrs}

test_scenario_on_tclass, test_same_as_the_peer = scenario_tests(SCENARIOS)


def test_attrs_keeps_a_stack_of_values() -> None:
    td = TensorDict(s=NonTensorStack("a", "b"), x=torch.zeros(2), batch_size=[2])
    got = td.attrs()
    assert got.batch_size == torch.Size([]) and got.get("s").tolist() == ["a", "b"]
    # (the peer's attrs() puts an empty TensorDict there, losing the values: program
    # 15,801,170 of features,index,shape,combine L12)


def test_attrs_values_have_no_batch_dims() -> None:
    td = TensorDict(d=torch.zeros(0, 2), s=NonTensorData(9, batch_size=[0, 2]), batch_size=[0, 2])
    got = td.attrs().get("s")
    assert type(got) is NonTensorData and got.batch_size == torch.Size([]) and got.data == 9
    lazy = lazy_stack([TensorDict(b=torch.zeros(2)), TensorDict(b=torch.ones(2))])
    lazy.set(("n", "md"), MetaData("run", batch_size=[2]))
    meta = lazy.attrs().get(("n", "md"))
    assert type(meta) is MetaData and meta.batch_size == torch.Size([]) and meta.data == "run"
