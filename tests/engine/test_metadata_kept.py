"""A ``MetaData`` kept through the ops that make a new node of its value (``new_zeros``
and the other ``new_*``, ``new_tensor``, ``pad``, a lazy stack of chunks of different
sizes), as the peer keeps it: ``pad`` adds ``NonTensorData(None)`` members beside the
``MetaData`` ones, so an index of the kept elements gives a ``MetaData`` back and one
of the new elements a ``NonTensorData``. The ``peer`` tests run each scenario with
tclass and tensordict and compare (fuzzer programs of issue 27, fz29a).
"""

from __future__ import annotations

import pickle
from types import ModuleType
from typing import Any

import torch

import tclass
from tclass import MetaData, NonTensorData, NonTensorStack, TensorDict

from peer_scenarios import Scenario, node_kind, scenario_tests  # noqa: E402


def _collection(lib: ModuleType) -> Any:
    x = lib.TensorDict({"a": torch.zeros(2)}, batch_size=[2])
    return x.set(("n", "md"), lib.MetaData({"k": 1}, batch_size=[2]))


def _new_filled(lib: ModuleType) -> Any:
    # programs 15,900,664 (features,entries,math,records --length 8, new_zeros) and
    # 15,922,190 (features,math,index --length 12, new_tensor)
    x = _collection(lib)
    made = [
        x.new_zeros(3), x.new_ones(3), x.new_empty(3), x.new_full((3,), 1),
        x.new_tensor([0.0, 0.0]), x[:0].new_zeros(3), x.new_zeros([]),
    ]  # fmt: skip
    return [(node_kind(y.get(("n", "md"))), y.get(("n", "md")).data) for y in made]


def _pad(lib: ModuleType) -> Any:
    # programs 15,881,845 (pad over no elements), 15,890,752 (x[:1] after pad, --length 16)
    # and 15,822,827 (x[-4] after pad, --length 12) of features,index,shape,combine
    x = _collection(lib)
    p = lib.pad(x, [2, 0]).get(("n", "md"))
    picked = [p, p[0], p[:2], p[1:3], p[2:], p[-1], p[-4], p[2:].unsqueeze(0)[0, 1], p[:0]]
    picked += [p.flip(0)[0], p.flip(0)[1], torch.cat([p, p])[4], torch.stack([p, p])[0, 2]]
    picked += [p.unsqueeze(1)[0, 0], p.clone()[3], lib.pad(x, [0, -1]).get(("n", "md"))]
    again = lib.pad(lib.pad(x, [0, 1]), [1, 0]).get(("n", "md"))
    stacked = lib.pad(torch.stack([x, x.clone()]), [0, 0, 0, 1]).get(("n", "md"))
    return (
        [node_kind(node) for node in picked], p[-1].data, p[0].data,
        node_kind(lib.pad(x[:0], [0, 0]).get(("n", "md"))),
        node_kind(lib.pad(x[:0], [0, 2]).get(("n", "md"))),
        node_kind(lib.pad(x, [0, 2])[:1].get(("n", "md"))),
        [node_kind(again[i]) for i in range(4)],
        [node_kind(node) for node in (stacked[0], stacked[:, 2], stacked[0, :2])],
    )  # fmt: skip


def _lazy_chunks(lib: ModuleType) -> Any:
    # program 15,890,087 (features,index,shape,combine --length 16): a lazy stack of the
    # chunks of a collection holding a MetaData is ragged; its MetaData stays one value
    x = lib.TensorDict({"b": torch.zeros(1, 2, 3)}, batch_size=[1, 2, 3])
    x = x.set(("n", "md"), lib.MetaData(3, batch_size=[1, 2, 3]))
    y = lib.lazy_stack(list(x.chunk(2, -1)), -1)
    node = y.get(("n", "md"))
    return (
        tuple(y.batch_size), node_kind(node), y["n", "md"], node_kind(node[0]),
        node_kind(y[:, :, 0].get(("n", "md"))), node_kind(node.clone()),
    )  # fmt: skip


SCENARIOS: dict[str, Scenario] = {
    "new_filled": _new_filled, "pad": _pad, "lazy_chunks": _lazy_chunks,
}  # fmt: skip


test_scenario_on_tclass, test_same_as_the_peer = scenario_tests(SCENARIOS)


# --- tclass alone -------------------------------------------------------------------------


def test_pad_keeps_metadata_members_beside_its_new_ones() -> None:
    x = TensorDict(m=MetaData({"k": 1}, batch_size=[2]), batch_size=[2])
    p = tclass.pad(x, [1, 1]).get("m")
    assert type(p) is NonTensorStack and p.tolist() == [None, {"k": 1}, {"k": 1}, None]
    assert [type(m) for m in p.tensordicts] == [NonTensorData, MetaData, MetaData, NonTensorData]
    assert type(p[1:3]) is MetaData and type(p[:1]) is NonTensorStack
    # a pickle and a consolidated copy keep which members are MetaData
    assert type(pickle.loads(pickle.dumps(p))[0]) is NonTensorData
    assert type(pickle.loads(pickle.dumps(p))[1]) is MetaData
    c = tclass.pad(x, [1, 1]).consolidate().get("m")
    assert [type(m) for m in c.tensordicts] == [NonTensorData, MetaData, MetaData, NonTensorData]
    # without pad amounts, or for new_zeros, the MetaData itself
    assert type(tclass.pad(x, [0, 0]).get("m")) is MetaData
    assert type(x.new_zeros(5).get("m")) is MetaData
    # a NonTensorData pads to NonTensorData members only
    y = TensorDict(m=NonTensorData({"k": 1}, batch_size=[2]), batch_size=[2])
    assert type(tclass.pad(y, [1, 1]).get("m")[1]) is NonTensorData


def test_a_lazy_stack_of_chunks_keeps_one_metadata() -> None:
    x = TensorDict(m=MetaData(["run"], batch_size=[3]), batch_size=[3])
    y = tclass.lazy_stack(list(x.unsqueeze(0).chunk(2, 1)), 1)
    node = y.get("m")
    assert type(node) is MetaData and node.batch_size == torch.Size([1, 2, -1])
    assert y["m"] == ["run"]
    # copies (equal values, other objects) stay a stack of members, ragged
    z = tclass.lazy_stack([x[:2], x[2:].clone()])
    assert type(z.get("m")) is not MetaData
