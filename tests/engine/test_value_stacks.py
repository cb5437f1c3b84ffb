"""Stacks of Python values, as the peer builds them: stacking records or TensorDicts that
hold a Python value gives a ``NonTensorStack`` with one value per member, equal values
included (``set_capture_non_tensor_stack(True)`` keeps one value); reads, indexing, shape
ops, conversions and saved folders of such stacks. The ``peer`` tests run each scenario
with tclass and tensordict and compare.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch

import tclass
from tclass import NonTensorData, NonTensorStack, TensorClass, TensorDict, errors

from peer_scenarios import Scenario, scenario_tests  # noqa: E402


class Frame(TensorClass):
    pixels: torch.Tensor
    camera: str


def _frames(lib: ModuleType, cameras: list[str], batch: int = 0) -> list[Any]:
    """Records of a class defined on ``lib`` (tclass or the peer), one per camera."""

    @lib.tensorclass
    class Shot:
        pixels: torch.Tensor
        camera: str

    shape = [batch] if batch else []
    return [Shot(pixels=torch.zeros(*shape, 2), camera=c, batch_size=shape) for c in cameras]


def _plain(value: Any) -> Any:
    """Nested lists (the peer's are ``LinkedList``) as plain lists."""
    return [_plain(item) for item in value] if isinstance(value, list) else value


# --- scenarios run with both libraries ----------------------------------------------------


def _records(lib: ModuleType) -> Any:
    s = torch.stack(_frames(lib, ["left"] * 3))
    return (
        _plain(s.camera), s[0].camera, _plain(s[1:].camera), _plain(s[[2, 0]].camera),
        _plain(s[torch.tensor([True, False, True])].camera),
        [r.camera for r in s.unbind(0)], type(s._tensordict.get("camera")).__name__,
    )  # fmt: skip


def _tensordicts(lib: ModuleType) -> Any:
    td = lib.TensorDict(a=torch.zeros(()), camera="left")
    s = torch.stack([td] * 3)
    node = s.get("camera")
    return (
        _plain(s["camera"]), type(node).__name__, node.tolist(), node.data,
        tuple(node.batch_size), s[1]["camera"], type(s[1].get("camera")).__name__,
        _plain(s.get_non_tensor("camera")), _plain(s.to_dict()["camera"]),
        [row["camera"] for row in s.tolist()], _plain(s.clone()["camera"]),
    )  # fmt: skip


def _shapes(lib: ModuleType) -> Any:
    td = lib.TensorDict(a=torch.zeros(2), camera="left", batch_size=[2])
    s = torch.stack([td] * 3, 1)  # batch [2, 3]
    return (
        _plain(s["camera"]), _plain(s.permute(1, 0)["camera"]), _plain(s.reshape(6)["camera"]),
        _plain(s.reshape(3, 2)["camera"]), _plain(torch.cat([s, s])["camera"]),
        _plain(s[:, 0]["camera"]), s[0, 0]["camera"], _plain(s.unsqueeze(0)["camera"]),
        _plain(s.expand(4, 2, 3)[3]["camera"]), _plain(s.flatten(0, 1)["camera"]),
    )  # fmt: skip


def _writes(lib: ModuleType) -> Any:
    s = torch.stack([lib.TensorDict(a=torch.zeros(()), camera="left") for _ in range(3)])
    s[1] = lib.TensorDict(a=torch.ones(()), camera="mid")
    written = _plain(s["camera"])
    s["camera"] = "right"
    return written, s["camera"], type(s.get("camera")).__name__


def _capture(lib: ModuleType) -> Any:
    td = lib.TensorDict(a=torch.zeros(()), camera="left")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        switch = lib.set_capture_non_tensor_stack(True)
    with switch:
        captured = torch.stack([td] * 2)
        records = torch.stack(_frames(lib, ["l", "l"]))
        return (
            captured["camera"], type(captured.get("camera")).__name__, records.camera,
            lib.capture_non_tensor_stack(),
        )  # fmt: skip


def _joins(lib: ModuleType) -> Any:
    a = lib.NonTensorData("a", batch_size=[2])
    return (
        type(torch.stack([a, a.clone()])).__name__, type(lib.stack([a, a.clone()])).__name__,
        type(torch.cat([a, a.clone()])).__name__, torch.cat([a, a.clone()]).data,
        type(torch.stack([lib.MetaData("m"), lib.MetaData("m")])).__name__,
        lib.capture_non_tensor_stack(),
    )  # fmt: skip


def _from_lists(lib: ModuleType) -> Any:
    (shot,) = _frames(lib, ["x"], batch=3)
    record = type(shot)(pixels=torch.zeros(3), camera=["a", "b", "c"], batch_size=[3])
    back = type(shot).from_dict(torch.stack(_frames(lib, ["l"] * 3)).to_dict(), batch_size=[3])
    return _plain(record.camera), record[1].camera, _plain(back.camera)


def _pad_sequence(lib: ModuleType) -> Any:
    members = [lib.TensorDict(x=torch.zeros(n), s="hi", batch_size=[n]) for n in (1, 3)]
    out = lib.pad_sequence(members)
    return _plain(out["s"]), type(out.get("s")).__name__


def _kinds(node: Any) -> Any:
    """A value node's structure: a stack's batch size and stack dim, with its first
    member's, down to a one value's batch size."""
    if type(node).__name__ == "NonTensorStack":
        return (tuple(node.batch_size), node.stack_dim, _kinds(node.tensordicts[0]))
    return tuple(node.batch_size)


def _masks(lib: ModuleType) -> Any:
    # a mask over a stack dim gives one stack dim, whose members keep their one value at
    # the rest of the mask (fuzzer program 9,293,954 of index,shape: x[mask, ::3][1]["s"]
    # is the one value "", not [""])
    td = lib.TensorDict(a=torch.zeros(3, 2), s="", batch_size=[3, 2])
    row = torch.tensor([[True, False, True]])
    ones = torch.ones(3, 2, dtype=torch.bool)
    picked = [
        td.unsqueeze(0)[row], td.unsqueeze(0)[row, ::3], td.unsqueeze(1)[row.T],
        td.unsqueeze(1)[:, ones[:1]], td.unsqueeze(0).unsqueeze(0)[ones[:1, :1]],
        td.unsqueeze(2)[ones], td.unsqueeze(0)[row, [0, 1]],
    ]  # fmt: skip
    return (
        [(_kinds(p.get("s")), _plain(p["s"])) for p in picked],
        td.unsqueeze(0)[row, ::3][1]["s"],
    )


SCENARIOS: dict[str, Scenario] = {
    "records": _records, "tensordicts": _tensordicts, "shapes": _shapes, "writes": _writes,
    "capture": _capture, "joins": _joins, "from_lists": _from_lists,
    "pad_sequence": _pad_sequence, "masks": _masks,
}  # fmt: skip


test_scenario_on_tclass, test_same_as_the_peer = scenario_tests(SCENARIOS)


# --- tclass's own behaviour ---------------------------------------------------------------


def test_stacked_records_read_one_value_per_member() -> None:
    s = torch.stack([Frame(pixels=torch.zeros(2), camera="left", batch_size=[])] * 3)
    assert s.camera == ["left", "left", "left"]
    assert [camera.upper() for camera in s.camera] == ["LEFT"] * 3
    node = s._tensordict.get("camera")
    assert type(node) is NonTensorStack and node.data == "left" and node.stack_dim == 0
    assert s[2].camera == "left" and type(s[2]._tensordict.get("camera")) is NonTensorData


def test_capture_keeps_one_value_and_restores_the_default() -> None:
    with pytest.warns(DeprecationWarning, match="set_capture_non_tensor_stack"):
        switch = tclass.set_capture_non_tensor_stack(True)
    with switch:
        s = torch.stack([Frame(pixels=torch.zeros(2), camera="left", batch_size=[])] * 3)
        assert s.camera == "left" and type(s._tensordict.get("camera")) is NonTensorData
    assert tclass.capture_non_tensor_stack() is False
    assert torch.stack([NonTensorData("x"), NonTensorData("x")]).tolist() == ["x", "x"]


def test_expand_and_unsqueeze_give_one_value_per_element() -> None:
    # As the peer: a per-element stack of the one value; broadcast_to keeps one value.
    td = TensorDict(a=torch.zeros(()), camera="left")
    assert td.expand(3)["camera"] == ["left"] * 3
    assert type(td.expand(3).get("camera")) is NonTensorStack
    assert td.unsqueeze(0)["camera"] == ["left"]
    assert td.broadcast_to((3,))["camera"] == "left"
    stacked = torch.stack([td] * 2)
    assert stacked.unsqueeze(0)["camera"] == [["left", "left"]]  # a stack stays per element


def test_a_stack_over_no_elements_holds_no_value() -> None:
    # One value per element: none over an empty batch (its elements and reads are empty
    # lists); its data is the value its members hold, as the peer's (tensordict 0.15.3:
    # "pong" for each of these).
    for td in (TensorDict(s="pong", batch_size=[0]), TensorDict(s="pong", batch_size=[3])[:0]):
        for grown in (td.unsqueeze(0), td.unsqueeze(1), td.expand(2, 0)):
            stack = grown.get("s")
            assert type(stack) is NonTensorStack and 0 in stack.batch_size
            assert stack.tolist() == grown["s"] and stack.data == "pong"
            assert stack.clone().data == "pong" and stack.flatten().tolist() == []
    assert TensorDict(s="pong", batch_size=[0]).unsqueeze(0).get("s").tolist() == [[]]


@pytest.mark.parametrize(
    "op",
    [
        lambda td: td.gather(1, torch.zeros(2, 0, dtype=torch.long)),
        lambda td: td.flip([0]),
        lambda td: td.roll(1, 0),
        lambda td: td.tile([2, 1]),
        lambda td: td.narrow(0, 0, 1),
    ],
)
def test_values_over_no_elements_read_as_lists_shaped_like_the_batch(op: Any) -> None:
    # As a tensor's tolist() (the peer's stack of no members lists as []).
    td = TensorDict(s="pong", batch_size=[2])
    stacked = torch.stack([td, td.clone()], 1)[:, :0]  # stacked along its empty dim
    out = op(stacked)
    expected = torch.empty(out.batch_size).tolist()
    assert out.get("s").tolist() == out["s"] == expected and expected[0] == []


def test_values_over_no_elements_permute_unsqueeze_and_pad() -> None:
    # Where the peer fails inside ("items cannot be empty", "cannot be empty").
    td = TensorDict(s="pong", a=torch.zeros(0, 3), batch_size=[0, 3])
    stacked = torch.stack([td, td.clone()], 1)
    assert stacked.permute(2, 1, 0)["s"] == torch.empty(3, 2, 0).tolist()
    assert stacked.unsqueeze(0)["s"] == [[]]
    padded = tclass.pad(stacked, [1, 0])
    assert padded.batch_size == torch.Size([1, 2, 3]) and padded["s"] == [[[None] * 3] * 2]
    lazy = tclass.lazy_stack([TensorDict(a=torch.zeros(2), batch_size=[2])] * 3, 1)
    none = lazy.repeat_interleave(0, dim=1)
    assert none.batch_size == torch.Size([2, 0]) and list(none.keys()) == ["a"]
    assert lazy[:, :0].expand(2, 2, 0).batch_size == torch.Size([2, 2, 0])


@pytest.mark.parametrize(
    "op",
    [
        lambda td: td.type(torch.uint8),
        lambda td: td.to(torch.float64),
        lambda td: td.apply(torch.ones_like),
        lambda td: td.chunk(4, 0)[-1],
        lambda td: torch.cat(td.split(1, 0), 0),
        lambda td: td.repeat_interleave(0, dim=-1),
        lambda td: tclass.lazy_stack([td, td.apply(torch.zeros_like)], -1),
    ],
)
def test_values_over_no_elements_keep_the_batch_size(op: Any) -> None:
    # As a tensor with no elements is kept (the peer rebuilds the stack from its members,
    # which it has none of: a node of batch [0], an empty lazy stack, or no entry).
    td = TensorDict(v="pong", a=torch.zeros(3), batch_size=[3])
    empty = torch.stack([td, td.clone()], 0).narrow(0, 2, 0)  # [0, 3], a stack of none
    out = op(empty)
    stack = out.get("v")
    assert type(stack) is NonTensorStack and stack.batch_size == out.batch_size
    assert out["v"] == torch.empty(out.batch_size).tolist() == out["a"].tolist()


def test_squeeze_takes_every_dim_of_size_one_off_a_value_stack() -> None:
    # As off a tensor (the peer's squeeze() takes one: its node keeps [2, 1]).
    td = TensorDict(a=torch.zeros(2, 1), s="", batch_size=[2, 1]).unsqueeze(0)
    assert type(td.get("s")) is NonTensorStack and td.get("s").batch_size == (1, 2, 1)
    out = td.squeeze()
    assert out.batch_size == out["a"].shape == out.get("s").batch_size == (2,)
    assert out["s"] == ""


def test_unbind_along_a_dim_of_size_one_next_to_the_stack_dim() -> None:
    # [1, 1] stacked along dim 0: unbind(0) gives the member, unbind(1) a stack of it.
    grown = TensorDict(s="pong", batch_size=[1]).unsqueeze(0)
    assert type(grown.unbind(0)[0].get("s")) is NonTensorData and grown.unbind(0)[0]["s"] == "pong"
    assert type(grown.unbind(1)[0].get("s")) is NonTensorStack and grown.unbind(1)[0]["s"] == [
        "pong"
    ]


def test_cat_along_another_dim_keeps_one_value_per_member() -> None:
    # Member with member, as the peer: unbind along the stack dim gives one value back.
    td = TensorDict(s="pong", a=torch.zeros(4), batch_size=[4])
    stacked = torch.stack([td, td.clone(), td.clone()], 1)
    joined = torch.cat([stacked, stacked[:2]], 0)
    assert joined["s"] == [["pong"] * 3] * 6
    for row in joined.unbind(1):
        assert type(row.get("s")) is NonTensorData and row["s"] == "pong"
    other = torch.stack([td, td.clone(), TensorDict(s="x", a=torch.zeros(4), batch_size=[4])], 1)
    mixed = torch.cat([stacked, other], 0).unbind(1)  # members that differ: values per element
    assert mixed[2]["s"] == ["pong"] * 4 + ["x"] * 4
    assert type(mixed[2].get("s")) is NonTensorStack


def test_cat_of_a_stack_of_stacks_along_another_dim_keeps_one_value_per_member() -> None:
    # An expanded value is a stack of stacks (dims 0 and 1); the peer cats member with
    # member down to its values, which give one value (program 14,110,125 of
    # index,shape,combine --length 12, fz25b).
    td = TensorDict(s="x y", batch_size=[3]).expand(2, 1, 3)
    joined = torch.cat([td, td.clone()], 2)
    assert joined.batch_size == torch.Size([2, 1, 6]) and joined["s"] == [[["x y"] * 6]] * 2
    row = joined[1, 0]
    assert type(row.get("s")) is NonTensorData and row["s"] == "x y"
    assert row.get("s").batch_size == torch.Size([6])
    assert joined.view(2, 6)[0]["s"] == "x y"
    # members that differ between the parts: values per element
    other = TensorDict(s="z", batch_size=[3]).expand(2, 1, 3)
    mixed = torch.cat([td, other], 2)[1, 0]
    assert type(mixed.get("s")) is NonTensorStack and mixed["s"] == ["x y"] * 3 + ["z"] * 3


def test_values_of_any_json_kind_stack_per_member() -> None:
    values: list[Any] = [None, 3, [1, "a"], {"k": [1, 2]}, "s"]
    for value in values:
        td = TensorDict(a=torch.zeros(()), v=NonTensorData(value))
        s = torch.stack([td, td.clone()])
        assert type(s.get("v")) is NonTensorStack and s.get("v").tolist() == [value, value]
        assert s[1]["v"] == value


def test_writing_values_of_the_wrong_batch_size_is_an_error() -> None:
    s = torch.stack([TensorDict(a=torch.zeros(2), v="x", batch_size=[2]) for _ in range(3)])
    with pytest.raises(errors.StackError, match=r"batch size \[4\] into the elements \[2\]"):
        s.set_at_("v", NonTensorStack(*"abcd"), 0)
    assert s["v"] == [["x", "x"]] * 3  # unchanged
    s.set_at_("v", NonTensorStack(*"abc"), (slice(None), 0))
    assert s["v"] == [["a", "x"], ["b", "x"], ["c", "x"]]
    with pytest.raises(errors.StackError, match=r"batch size \[2, -1\] into the elements \[2\]"):
        s.set_at_("v", NonTensorStack(NonTensorData("a", [2]), NonTensorData("b", [3])), 0)


def test_apply_keeps_how_the_members_were_stacked() -> None:
    """``apply`` leaves a stack of Python values as it is, its stack dims too: a row
    within one member reads the member's one value, as before (not a list per row)."""
    td = TensorDict(a=torch.zeros(1, 2), v="x", batch_size=[1, 2])
    s = torch.stack([td, td.clone()])  # batch [2, 1, 2], one value per member
    for result in (s, s.apply(torch.zeros_like), s.clone().apply(torch.ones_like)):
        assert result[0, 0]["v"] == "x" and result[1, [0]]["v"] == "x"
        assert result[0]["v"] == "x" and result["v"] == [[["x", "x"]], [["x", "x"]]]
    rows = Frame(pixels=torch.zeros(2, 3), camera="l", batch_size=[2])
    frames = torch.stack([rows, rows.clone()]).apply(torch.zeros_like)
    assert frames[1, [1, 0]].camera == "l" and frames.camera == [["l", "l"], ["l", "l"]]


# --- saved folders ------------------------------------------------------------------------


def test_save_load_round_trip(tmp_path: Path) -> None:
    s = torch.stack([Frame(pixels=torch.zeros(2), camera="left", batch_size=[])] * 3)
    s.memmap(tmp_path / "frames")
    back = Frame.load_memmap(tmp_path / "frames")
    assert back.camera == ["left"] * 3 and type(back._tensordict.get("camera")) is NonTensorStack
    grid = torch.stack([TensorDict(a=torch.zeros(2), v="x", batch_size=[2])] * 3, 1)
    grid[1, 2] = TensorDict(a=torch.ones(()), v="y")
    grid.memmap(tmp_path / "grid")
    loaded = TensorDict.load_memmap(tmp_path / "grid")
    assert loaded["v"] == [["x", "x", "x"], ["x", "x", "y"]]
    assert loaded.get("v").batch_size == torch.Size([2, 3])


@pytest.mark.peer
def test_the_peer_reads_what_tclass_writes_and_back(tmp_path: Path) -> None:
    peer = pytest.importorskip("tensordict")
    s = torch.stack([TensorDict(a=torch.zeros(2), v="x", batch_size=[2])] * 3, 1)
    s.memmap(tmp_path / "ours")
    theirs = peer.TensorDict.load_memmap(tmp_path / "ours")
    assert _plain(theirs["v"]) == s["v"] and type(theirs.get("v")).__name__ == "NonTensorStack"
    written = torch.stack([peer.TensorDict(a=torch.zeros(2), v="x", batch_size=[2])] * 3, 1)
    written.memmap(tmp_path / "peer")
    ours = TensorDict.load_memmap(tmp_path / "peer")
    assert ours["v"] == _plain(written["v"]) and ours.get("v").batch_size == (2, 3)


def test_writing_the_values_a_stack_holds_keeps_its_members() -> None:
    # as the peer's: a row written with the value it holds changes nothing (the member
    # stays one value, read back as it), a new value makes the row one value per element
    # (fuzzer program 8,701,617: a record's label after unsqueeze and x[0] = x[0].clone())
    td = TensorDict({"v": NonTensorData("", batch_size=[1]), "a": torch.zeros(1)}, [1])
    td = td.unsqueeze(-2)
    td[0] = TensorDict({"v": NonTensorData("", batch_size=[1]), "a": torch.ones(1)}, [1])
    member = td.get("v").tensordicts[0]
    assert type(member) is NonTensorData and td[-1]["v"] == "" and td["a"].sum() == 1
    td[0] = TensorDict({"v": NonTensorData("q", batch_size=[1]), "a": torch.ones(1)}, [1])
    assert type(td.get("v").tensordicts[0]) is NonTensorStack and td[-1]["v"] == ["q"]


@pytest.mark.parametrize("index", [(0, None), (0, None, ...), (None, ..., 0), (-2, None, None)])
def test_ints_at_every_dim_of_a_mixed_stack_give_one_value(index: tuple[Any, ...]) -> None:
    # a stack whose elements a gather mixed (no known stack dims) indexed by an int at
    # every dim, plus None: the peer's member of that element, one NonTensorData over the
    # new dims (fuzzer program 12,610,455: x[0, None, ...] of a record after a pad)
    td = TensorDict({"v": NonTensorStack("a", "b"), "a": torch.arange(2)}, [2])
    mixed = td.gather(0, torch.tensor([1, 0]))
    picked = mixed[index].get("v")
    assert type(picked) is NonTensorData and picked.data == "b"
    assert picked.batch_size == torch.Size([1] * index.count(None))
    rows = mixed[0:1, None].get("v")  # a slice keeps the dim: one value per element
    assert type(rows) is NonTensorStack and rows.tolist() == [["b"]]
