"""The state dict's format is the peer's (tensordict 0.15.3): each library loads the
other's, strict, with ``torch.load(weights_only=True)`` (lo26d); and tclass still loads
the state dicts its earlier versions wrote (Python values in their node's ``_non_tensor``
entry, a nested state dict's metadata all at its root)."""

from __future__ import annotations

import io
from collections import OrderedDict
from typing import Any

import pytest
import torch

import tclass
from tclass import NonTensorStack, TensorClass, TensorDict

peer = pytest.importorskip("tensordict")


class Rec(TensorClass):
    x: torch.Tensor
    name: str
    opt: Any = None


@peer.tensorclass
class PeerRec:
    x: torch.Tensor
    name: str
    opt: Any = None


def _build(lib: Any, offset: float, values: tuple[str, int, int]) -> Any:
    td = lib.TensorDict(
        a=torch.arange(3.0) + offset,
        n=lib.TensorDict(b=torch.ones(3, 2) + offset, batch_size=[3, 2]),
        batch_size=[3],
    )
    td.set_non_tensor("s", values[0])
    td["n"].set_non_tensor("t", values[1])
    td["m"] = lib.MetaData({"k": values[2]})
    return td


def _saved(sd: Any) -> Any:
    buffer = io.BytesIO()
    torch.save(sd, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=True)


def _metadata(sd: Any) -> Any:
    """Every ``_metadata`` of a (nested) state dict, by the path of its dict."""
    out = {(): dict(sd._metadata)}
    for key, value in sd.items():
        if isinstance(value, dict):
            out.update({(key, *path): meta for path, meta in _metadata(value).items()})
    return out


@pytest.mark.parametrize("flatten", [True, False])
@pytest.mark.parametrize("prefix", ["", "p."])
def test_a_tensordict_writes_the_peers_state_dict(flatten: bool, prefix: str) -> None:
    ours = _build(tclass, 0.0, ("hi", 5, 1)).state_dict(prefix=prefix, flatten=flatten)
    theirs = _build(peer, 0.0, ("hi", 5, 1)).state_dict(prefix=prefix, flatten=flatten)
    assert list(ours) == list(theirs)
    assert _metadata(ours) == _metadata(theirs)
    if flatten:
        assert list(ours._metadata) == list(theirs._metadata)  # depth first, in key order


def test_a_record_writes_the_peers_state_dict() -> None:
    ours = TensorDict(r=Rec(x=torch.zeros(3), name="a", batch_size=[3]), batch_size=[3])
    theirs = peer.TensorDict(r=PeerRec(x=torch.zeros(3), name="a", batch_size=[3]), batch_size=[3])
    sd, their_sd = ours.state_dict(), theirs.state_dict()
    assert their_sd._metadata["r"].pop("_type") == "PeerRec"  # the class's __qualname__
    their_sd._metadata["r"]["_type"] = "Rec"
    assert _metadata(sd) == _metadata(their_sd)
    assert sd._metadata["r"] == {
        "batch_size": torch.Size([3]),
        "device": None,
        "_type": "Rec",
        "_non_tensor": {"name": "a", "opt": None},  # a field not set: None, as the peer's
    }


def test_a_lazy_stack_writes_the_peers_state_dict() -> None:
    ours = tclass.lazy_stack([TensorDict(a=torch.zeros(2)), TensorDict(a=torch.ones(2))])
    theirs = peer.lazy_stack([peer.TensorDict(a=torch.zeros(2)), peer.TensorDict(a=torch.ones(2))])
    assert _metadata(ours.state_dict()) == _metadata(theirs.state_dict())  # no _type


@pytest.mark.parametrize("flatten", [True, False])
@pytest.mark.parametrize("direction", ["tclass>peer", "peer>tclass"])
def test_each_library_loads_the_others_strict(flatten: bool, direction: str) -> None:
    source, dest = (tclass, peer) if direction == "tclass>peer" else (peer, tclass)
    sd = _saved(_build(source, 1.0, ("hello", 7, 2)).state_dict(flatten=flatten))
    into = _build(dest, 0.0, ("bye", 0, 0))
    into.load_state_dict(sd)  # strict: the Python values are no missing keys
    assert into["a"].tolist() == [1.0, 2.0, 3.0] and (into["n", "b"] == 2).all()
    assert into.get_non_tensor("s") == "hello" and into["n"].get_non_tensor("t") == 7
    assert into.get_non_tensor("m") == {"k": 2} and type(into.get("m")).__name__ == "MetaData"


@pytest.mark.parametrize("direction", ["tclass>peer", "peer>tclass"])
def test_records_load_across_strict(direction: str) -> None:
    (source, cls), (dest, dest_cls) = (
        ((tclass, Rec), (peer, PeerRec))
        if direction == "tclass>peer"
        else ((peer, PeerRec), (tclass, Rec))
    )
    sd = _saved(cls(x=torch.ones(3), name="a", batch_size=[3]).state_dict())
    into = dest_cls(x=torch.zeros(3), name="b", opt="set", batch_size=[3])
    into.load_state_dict(sd)
    assert into.x.tolist() == [1.0, 1.0, 1.0] and into.name == "a" and into.opt is None


def test_values_per_element_the_peer_keeps_its_own() -> None:
    # README: the peer's state dict holds a stack's node without its values (it keeps
    # the destination's own); tclass's holds them under _non_tensor, which the peer
    # skips, and loads them back
    td = TensorDict(a=torch.zeros(3), batch_size=[3])
    td["v"] = NonTensorStack("p", "q", "r")
    sd = _saved(td.state_dict())
    assert sd._metadata["v"] == {
        "batch_size": torch.Size([3]),
        "device": None,
        "_non_tensor": {tclass._interop._state_dict.PER_ELEMENT: ["p", "q", "r"]},
    }
    theirs = peer.TensorDict(a=torch.ones(3), batch_size=[3])
    theirs["v"] = peer.NonTensorStack("x", "y", "z")
    theirs.load_state_dict(sd)
    assert theirs["v"] == ["x", "y", "z"] and theirs["a"].tolist() == [0.0, 0.0, 0.0]
    ours = TensorDict(a=torch.ones(3), batch_size=[3])
    ours["v"] = NonTensorStack("x", "y", "z")
    ours.load_state_dict(sd)
    assert ours["v"] == ["p", "q", "r"]
    ours.load_state_dict(_saved(theirs.state_dict()))  # the peer's: no values, ours kept
    assert ours["v"] == ["p", "q", "r"]


def test_the_older_tclass_format_still_loads() -> None:
    """A state dict as tclass wrote it before lo26d: a TensorDict's Python values (and a
    stack of them per element, with its own dims) in its node's ``_non_tensor`` entry,
    records' ``_type`` as "module:qualname"; nested, every node's metadata at the root."""
    flat: OrderedDict[str, Any] = OrderedDict(
        [("a", torch.tensor([1.0, 2.0])), ("n.b", torch.tensor([3.0, 4.0]))]
    )
    flat._metadata = OrderedDict(  # type: ignore[attr-defined]
        [
            (
                "",
                {
                    "batch_size": torch.Size([2]),
                    "device": None,
                    "_non_tensor": {"s": "old", "v": {"_tclass_per_element": ["p", "q"]}},
                },
            ),
            ("n", {"batch_size": torch.Size([2]), "device": None, "_non_tensor": {"t": 3}}),
        ]
    )
    nested: OrderedDict[str, Any] = OrderedDict(
        [("a", torch.tensor([1.0, 2.0])), ("n", OrderedDict(b=torch.tensor([3.0, 4.0])))]
    )
    nested._metadata = flat._metadata  # type: ignore[attr-defined]
    for old in (flat, nested):
        dest = TensorDict(a=torch.zeros(2), n=TensorDict(b=torch.zeros(2)), batch_size=[])
        dest.load_state_dict(_saved(old))
        assert dest.batch_size == (2,) and dest["n"].batch_size == (2,)
        assert dest["a"].tolist() == [1.0, 2.0] and dest["n", "b"].tolist() == [3.0, 4.0]
        assert dest["s"] == "old" and dest["n", "t"] == 3 and dest["v"] == ["p", "q"]
    record: OrderedDict[str, Any] = OrderedDict(x=torch.ones(3))
    record._metadata = OrderedDict(  # type: ignore[attr-defined]
        [
            (
                "",
                {
                    "batch_size": torch.Size([3]),
                    "device": None,
                    "_non_tensor": {"name": "old"},
                    "_type": "tests.interop.test_state_dict_format:Rec",
                },
            )
        ]
    )
    rec = Rec(x=torch.zeros(3), name="new", batch_size=[3])
    rec.load_state_dict(_saved(record))
    assert rec.name == "old" and rec.x.tolist() == [1.0, 1.0, 1.0]


def test_a_locked_nested_record_with_an_unset_field_takes_the_state_dict() -> None:
    """The state dict writes a record's unset field as ``None`` (the peer's format); loading
    it into a memmapped (locked) record whose field is unset too writes nothing there,
    where it once refused the lock (the self-referential ``Optional`` field example)."""
    src = _Linked(x=torch.randn(3), y=_Linked(x=torch.randn(3), batch_size=[]), batch_size=[])
    dest = _Linked(x=torch.zeros(3), y=_Linked(x=torch.zeros(3), batch_size=[]), batch_size=[])
    src.memmap_()
    dest.memmap_()
    assert dest.is_locked and dest.y.y is None
    dest.load_state_dict(src.state_dict(keep_vars=True))
    assert torch.equal(dest.x, src.x) and torch.equal(dest.y.x, src.y.x)
    assert dest.y.y is None and dest.is_locked


@tclass.tensorclass
class _Linked:
    x: torch.Tensor
    y: _Linked | None = None


@pytest.mark.parametrize("nested", [False, True])
def test_record_values_per_element_the_peer_keeps_its_own(nested: bool) -> None:
    # a record field holding a value per element goes beside _non_tensor (the peer set
    # _non_tensor's {"_tclass_per_element": [...]} as the field's one value, a dict): the
    # peer keeps its own field, as for a TensorDict's stack node; tclass loads them back
    record = Rec(x=torch.ones(2), name=NonTensorStack("p", "q"), batch_size=[2])
    source = TensorDict(r=record, batch_size=[2]) if nested else record
    sd = _saved(source.state_dict())
    entry = sd._metadata["r" if nested else ""]
    assert entry["_non_tensor"] == {"opt": None}
    assert entry["_tclass_per_element"] == {"name": {"_tclass_per_element": ["p", "q"]}}
    theirs: Any = PeerRec(x=torch.zeros(2), name="mine", batch_size=[2])
    ours: Any = Rec(x=torch.zeros(2), name="mine", batch_size=[2])
    if nested:
        theirs = peer.TensorDict(r=theirs, batch_size=[2])
        ours = TensorDict(r=ours, batch_size=[2])
    theirs.load_state_dict(sd)
    ours.load_state_dict(sd)
    theirs, ours = (theirs["r"], ours["r"]) if nested else (theirs, ours)
    assert theirs.name == "mine" and theirs.x.tolist() == [1.0, 1.0]
    assert ours.name == ["p", "q"] and ours.x.tolist() == [1.0, 1.0]
    assert ours[1].name == "q"
