"""Pickling a consolidated collection (``pickle``, ``torch.save``) gives back its Python
values as they were and writes a file ``torch.load`` reads.

The buffer of a consolidated collection pickles alone when its JSON trailer says every
Python value exactly. A tuple (a list through JSON), a dict with other keys than strings
(string keys through JSON) or an ``OrderedDict`` (a dict) came back changed, where the
peer's pickle keeps them; and a value JSON cannot hold at all (a set) made the pickle
write the leaves as views of the one buffer at several dtypes, which ``torch.save``
refused (or, with one dtype, wrote as a file ``torch.load`` could not read).
"""

from __future__ import annotations

import collections
import io
import pickle
from typing import Any

import pytest
import torch

import tclass
from tclass import NonTensorData, TensorDict

VALUES = [
    (1, 2),
    [1, (2, 3)],
    {1: "a"},
    {"k": (1,)},
    collections.OrderedDict(a=1),
    {1, 2},
]


@tclass.tensorclass
class Held:
    x: torch.Tensor
    n: torch.Tensor
    value: Any


def _torch_save(obj: Any) -> Any:
    buffer = io.BytesIO()
    torch.save(obj, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=False)


def _pickle(obj: Any) -> Any:
    return pickle.loads(pickle.dumps(obj))


def _same(got: Any, value: Any) -> bool:
    if type(got) is not type(value):
        return False
    if isinstance(value, (list, tuple)):
        return len(got) == len(value) and all(map(_same, got, value))
    if isinstance(value, dict):
        return list(got) == list(value) and all(_same(got[k], value[k]) for k in value)
    return bool(got == value)


@pytest.mark.parametrize("move", [_pickle, _torch_save], ids=["pickle", "torch.save"])
@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_a_consolidated_record_keeps_its_python_values(value: Any, move: Any) -> None:
    record = Held(x=torch.arange(3.0), n=torch.arange(3), value=value, batch_size=[3])
    back = move(record.consolidate())
    assert type(back) is Held and _same(back.value, value)
    assert torch.equal(back.x, record.x) and torch.equal(back.n, record.n)


@pytest.mark.parametrize("move", [_pickle, _torch_save], ids=["pickle", "torch.save"])
@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_a_consolidated_tensordict_and_lazy_stack_keep_theirs(value: Any, move: Any) -> None:
    td = TensorDict(a=torch.zeros(3), b={"c": torch.arange(3)}, batch_size=[3], names=["t"])
    td["v"] = NonTensorData(value)
    back = move(td.consolidate())
    assert _same(back["v"], value) and back.names == ["t"]
    assert torch.equal(back["b", "c"], torch.arange(3)) and back["a"].dtype == torch.float32
    stacked = move(tclass.lazy_stack([td, td.clone()]).consolidate())
    assert type(stacked) is tclass.LazyStackedTensorDict
    assert _same(stacked[1]["v"], value) and torch.equal(stacked[1]["b", "c"], torch.arange(3))


def test_json_values_still_travel_as_the_one_buffer() -> None:
    """Values JSON gives back as they are pickle with the buffer, which rebuilds the rest."""
    td = TensorDict(a=torch.zeros(3), batch_size=[3])
    td["v"] = NonTensorData({"k": [1, 2.5, "s", None]})
    packed = td.consolidate()
    back = _pickle(packed)
    assert back["v"] == {"k": [1, 2.5, "s", None]} and back.is_consolidated()


def test_a_value_holding_itself_pickles_whole() -> None:
    # JSON cannot hold it (the exactness check ended only at a container met twice)
    loop: list[Any] = [1]
    loop.append(loop)
    shared = [2]
    td = TensorDict({"x": torch.arange(3.0)}, [3])
    td["loop"] = NonTensorData(loop)
    td["pair"] = NonTensorData([shared, shared])
    back = pickle.loads(pickle.dumps(td.consolidate()))
    value = back["loop"]
    assert value[0] == 1 and value[1] is value
    pair = back["pair"]
    assert pair == [[2], [2]] and pair[0] is pair[1]
    assert back["x"].tolist() == [0.0, 1.0, 2.0]


def _consolidated_with_a_value() -> tuple[TensorDict, dict[str, Any]]:
    td = TensorDict({"m": {"d": torch.ones(1)}, "a": torch.ones(1)}, batch_size=[1])
    td.set_non_tensor(("m", "s"), "old")
    source = td.clone()
    source.set_non_tensor(("m", "s"), "new")
    return td.consolidate(metadata=True), source.state_dict()


def test_a_python_value_a_state_dict_rewrites_ends_the_consolidation() -> None:
    td, state = _consolidated_with_a_value()
    out = td.load_state_dict(state)
    assert out.get_non_tensor(("m", "s")) == "new" and not out.is_consolidated()
    # its pickle and its move hold the new value, not the one the buffer describes
    assert pickle.loads(pickle.dumps(out)).get_non_tensor(("m", "s")) == "new"
    assert out.to("cpu", non_blocking=True).get_non_tensor(("m", "s")) == "new"


def test_a_state_dict_of_equal_python_values_keeps_the_consolidation() -> None:
    td, _ = _consolidated_with_a_value()
    out = td.load_state_dict(td.clone().apply(torch.zeros_like).state_dict())
    assert out.is_consolidated() and out.get_non_tensor(("m", "s")) == "old"
    assert torch.equal(pickle.loads(pickle.dumps(out))["a"], torch.zeros(1))
