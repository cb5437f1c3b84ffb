"""Stacks of ``MetaData`` copies (equal values, different objects, which stack to one
value per member as the peer's do): what gives one member back, or elements of one
member, gives a ``MetaData``, as the peer's stack, which holds the members themselves;
values of several members stay a stack of ``MetaData`` members. The ``peer`` tests run
each scenario with tclass and tensordict and compare.
"""

from __future__ import annotations

import pickle
from types import ModuleType
from typing import Any

import pytest
import torch

import tclass
from tclass import MetaData, NonTensorData, NonTensorStack, TensorDict

from peer_scenarios import Scenario, node_kind, scenario_tests  # noqa: E402


def _copies(lib: ModuleType) -> Any:
    a = lib.MetaData([1, 2], batch_size=[3])
    s = torch.stack([a, a.clone()])  # batch [2, 3], stacked along 0
    picked = [
        s, s[0], s[1:], s[:, 0], s[[0, 1]], s[[0, 0]], s[0, 0], s[None, 1], s.narrow(0, 1, 1),
        s.unbind(0)[1], s.unbind(1)[0], s.unsqueeze(0)[0], s.unsqueeze(0)[0, 0],
        s[:1].squeeze(0), s.clone()[0], torch.stack([s, s])[0, 0], torch.cat([s, s])[2],
        s.flip(0)[0], s.permute(1, 0)[:, 0], s.expand(2, 2, 3)[0, 0], s.view(-1),
        pickle.loads(pickle.dumps(s))[0],
    ]  # fmt: skip
    parts = [*s.split(1, 0), *s.tensor_split(2, 0), *s.tensor_split([1], 1)]
    return [node_kind(node) for node in picked], [node_kind(part) for part in parts]


def _in_collections(lib: ModuleType) -> Any:
    td = lib.TensorDict(a=torch.zeros(3), m=lib.MetaData({"k": 1}, batch_size=[3]), batch_size=[3])
    stacked = torch.stack([td, td.clone()])
    lazy = lib.lazy_stack([td, td.clone()])
    # fuzzer program 15,630,323 (features,index,shape,combine --length 12): over no elements
    empty = td[:0].set(("n", "md"), lib.MetaData([1, 2], batch_size=[0]))
    indexed = torch.stack([empty, empty.clone()], 1)[..., torch.zeros(0, dtype=torch.bool), 1]
    return (
        node_kind(stacked.get("m")),
        node_kind(stacked[0].get("m")),
        node_kind(stacked[:, 1].get("m")),
        [node_kind(part.get("m")) for part in stacked.split(1, 0)], node_kind(lazy[1].get("m")),
        [node_kind(part.get("m")) for part in stacked.tensor_split(2, 0)],
        [node_kind(part.get("m")) for part in torch.tensor_split(stacked, [1], 0)],
        [node_kind(part.get("m")) for part in stacked.tensor_split([1, 0], 0)],
        node_kind(lazy.get("m")[0]), node_kind(stacked.consolidate().get("m")[1]),
        node_kind(indexed.get(("n", "md"))), indexed.get(("n", "md")).data,
    )  # fmt: skip


def _over_no_elements(lib: ModuleType) -> Any:
    e = torch.stack([lib.MetaData([1], batch_size=[0]), lib.MetaData([1], batch_size=[0])])
    return node_kind(e), node_kind(e[1]), node_kind(e[1:]), node_kind(e[:, :]), e[1:].data


def _lazy_mask(lib: ModuleType) -> Any:
    # fuzzer program 15,801,184 (--length 12): a mask over a lazy stack shares the values
    # (as an index of a TensorDict does), so a MetaData of one object stays one value
    value, meta = [1, 2], [3]
    a = lib.TensorDict(
        a=torch.zeros(4),
        v=lib.NonTensorData(value, batch_size=[4]),
        m=lib.MetaData(meta, batch_size=[4]),
        batch_size=[4],
    )
    x = lib.lazy_stack([a, a.apply(torch.ones_like)])
    mask = torch.tensor([[True, False, True, False], [True, True, False, False]])
    y = x[mask]
    return (
        node_kind(y.get("m")), y.get("m").data is meta,
        [item is value for item in y.get("v").tolist()],
    )  # fmt: skip


def _masked_fill_copies(lib: ModuleType) -> Any:
    # fuzzer program 15,822,920 (--length 12): masked_fill is a clone filled in place, so
    # its Python values are copies, as clone's; a MetaData that a lazy stack's members
    # share (one object, one value) becomes one copy per member, a stack of them
    value, meta = [1, 2], {"k": 1}
    a = lib.TensorDict(
        a=torch.zeros(2),
        v=lib.NonTensorData(value, batch_size=[2]),
        m=lib.MetaData(meta, batch_size=[2]),
        batch_size=[2],
    )
    x = lib.lazy_stack([a[0], a[1], a[1]], 0)
    mask = torch.tensor([True, False, True])
    filled, dense = x.masked_fill(mask, 1), a.masked_fill(mask[:2], 1)
    return (
        node_kind(x.get("m")), node_kind(filled.get("m")), node_kind(x.clone().get("m")),
        filled.get("m").tolist(), dense["v"] is value, dense.get("m").data is meta,
        dense["v"] == value, dense.get("m").data == meta,
    )  # fmt: skip


SCENARIOS: dict[str, Scenario] = {
    "copies": _copies, "in_collections": _in_collections, "over_no_elements": _over_no_elements,
    "lazy_mask": _lazy_mask, "masked_fill_copies": _masked_fill_copies,
}  # fmt: skip


test_scenario_on_tclass, test_same_as_the_peer = scenario_tests(SCENARIOS)


# --- tclass alone -------------------------------------------------------------------------


def test_a_stack_of_copies_indexes_back_to_metadata() -> None:
    a = MetaData({"lr": 0.1}, batch_size=[3])
    s = torch.stack([a, a.clone()])
    assert type(s) is NonTensorStack
    assert type(s[0]) is MetaData and s[0].batch_size == torch.Size([3])
    assert type(s[1:]) is MetaData and s[1:].batch_size == torch.Size([1, 3])
    assert type(s[:, 0]) is NonTensorStack  # one element of each member: two objects
    assert [type(m) for m in s.tensordicts] == [MetaData, MetaData]
    assert [type(p) for p in s.split(1, 0)] == [NonTensorStack, NonTensorStack]
    # tensor_split's pieces that tile the dim are split's: stacks of one member
    assert [type(p) for p in s.tensor_split(2, 0)] == [NonTensorStack, NonTensorStack]
    assert [type(p) for p in torch.tensor_split(s, [1], 0)] == [NonTensorStack] * 2
    # a stack of NonTensorData keeps giving NonTensorData
    b = NonTensorData({"lr": 0.1}, batch_size=[3])
    assert type(torch.stack([b, b.clone()])[0]) is NonTensorData


def test_metadata_members_survive_pickle_and_consolidate() -> None:
    td = TensorDict(m=MetaData([1], batch_size=[2]), batch_size=[2])
    s = torch.stack([td, td.clone()])
    assert type(pickle.loads(pickle.dumps(s.get("m")))[1]) is MetaData
    assert type(s.consolidate().get("m")[1]) is MetaData


def test_clone_copies_a_metadata_value_with_a_device_too() -> None:
    # (the peer's clone() of a collection with a device shares its Python values)
    td = TensorDict(a=torch.zeros(2), m=MetaData({"k": 1}, batch_size=[2]), device="cpu")
    clone = td.clone()
    assert clone["m"] == td["m"] and clone["m"] is not td["m"]
    assert type(tclass.lazy_stack([td, clone]).get("m")) is NonTensorStack
    assert type(tclass.lazy_stack([td, td]).get("m")) is MetaData


@pytest.mark.parametrize("batch", [[0, 4], [0, 1, 3], [3, 0, 1]])
def test_stacks_from_a_value_over_no_elements_keep_the_batch_size(batch: list[int]) -> None:
    node = NonTensorData("x", batch_size=batch)
    for stack in (NonTensorStack.from_nontensordata(node), node.maybe_to_stack()):
        assert type(stack) is NonTensorStack and stack.batch_size == torch.Size(batch)
