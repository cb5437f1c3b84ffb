"""Pickle protocol 5 (tclass/_engine/_pickle5.py): a TensorDict, lazy stack or record
travels as one out-of-band buffer plus a JSON header, and comes back as views of the
buffer it is given; a read-only buffer gives tensors that refuse in-place writes. No Ray
here (tests/interop/test_ray.py): plain ``pickle`` with a ``buffer_callback``, and a
spawned process reading the buffer from a shared file mapping."""

from __future__ import annotations

import copy
import json
import mmap
import pickle
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from multiprocessing.reduction import ForkingPickler
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import torch.multiprocessing as mp

import tclass
from tclass import (
    LazyStackedTensorDict,
    NonTensorData,
    NonTensorStack,
    TensorClass,
    TensorDict,
    TypedTensorDict,
    UnbatchedTensor,
    lazy_stack,
    tensorclass,
)
from tclass._core._readonly import ReadOnlyTensor
from tclass.errors import MetadataError, PickleRefusedError, ReadOnlyError, TclassError

SPAWN = mp.get_context("spawn")


@tensorclass
class Info:
    score: torch.Tensor
    tag: str


class Step(TensorClass):
    obs: torch.Tensor
    action: torch.Tensor
    info: Info
    env: str = "pong"


class State(TypedTensorDict):
    x: torch.Tensor
    y: torch.Tensor


def _step(n: int = 4, offset: float = 0.0) -> Step:
    info = Info(score=torch.arange(n) + int(offset), tag=f"t{offset}", batch_size=[n])
    obs = torch.arange(n * 3, dtype=torch.float32).reshape(n, 3) + offset
    return Step(obs=obs, action=torch.arange(n) % 2 == 0, info=info, batch_size=[n])


def _values() -> TensorDict:
    td = TensorDict({"a": torch.arange(3.0)}, [3])
    td.set_non_tensor("label", "cat")
    td.set_non_tensor("config", {"lr": 0.1, "layers": [64, 64], "name": None})
    td.set_non_tensor("shape", (3, 4))  # a tuple: JSON would make it a list
    td["each"] = NonTensorStack("a", "b", (1, 2))
    return td


def _dtypes() -> TensorDict:
    complex_leaf = torch.complex(torch.arange(4.0), -torch.arange(4.0))
    return TensorDict(
        {
            "bool": torch.tensor([True, False, True, False]),
            "bf16": torch.linspace(-2, 2, 8).reshape(4, 2).bfloat16(),
            "f16": torch.arange(4, dtype=torch.float16),
            "c64": complex_leaf,
            "c128_conj": complex_leaf.to(torch.complex128).conj(),  # a lazy conj bit
            "i8": torch.tensor([-1, 2, -3, 4], dtype=torch.int8),
            "u8": torch.arange(4, dtype=torch.uint8),
            "i64": torch.arange(4) * 1_000_000_000_000,
        },
        [4],
    )


def _noncontiguous() -> TensorDict:
    wide = torch.arange(60.0).reshape(5, 12)
    return TensorDict(
        {"t": wide.t()[:4], "strided": wide[:4, ::3], "expanded": torch.arange(3.0).expand(4, 3)},
        [4],
    )


def _locked_inside() -> TensorDict:
    td = TensorDict({"a": torch.zeros(2), "inner": {"b": torch.ones(2, 2)}}, [2])
    td["inner"].lock_()
    return td


def _jagged() -> TensorDict:
    parts = [torch.arange(3.0), torch.arange(5.0), torch.arange(1.0)]
    jagged = torch.nested.nested_tensor(parts, layout=torch.jagged)
    return TensorDict({"j": jagged, "n": torch.arange(3)}, [3])


CASES: dict[str, Callable[[], Any]] = {
    "flat": lambda: TensorDict({"a": torch.randn(3, 4), "b": torch.arange(3)}, [3]),
    "nested": lambda: TensorDict({"a": torch.zeros(2), "x": {"y": {"z": torch.ones(2, 5)}}}, [2]),
    "dtypes": _dtypes,
    "noncontiguous": _noncontiguous,
    "named": lambda: TensorDict({"a": torch.randn(2, 3, 4)}, [2, 3], names=["env", "time"]),
    "device": lambda: TensorDict({"a": torch.ones(2), "n": {"b": torch.ones(2)}}, [2], "cpu"),
    "locked": lambda: TensorDict({"a": torch.ones(2), "n": {"b": torch.ones(2)}}, [2]).lock_(),
    "locked_inside": _locked_inside,
    "python_values": _values,
    "record": _step,
    "decorated_record": lambda: _step().info,
    "lazy": lambda: lazy_stack(
        [TensorDict({"a": torch.full((3,), float(i))}, [3]) for i in range(4)]
    ),
    "ragged_lazy": lambda: lazy_stack(
        [TensorDict({"a": torch.ones(2, n), "b": torch.zeros(2)}, [2]) for n in (1, 3, 2)], 1
    ),
    "lazy_records": lambda: lazy_stack([_step(2, 0.0), _step(2, 10.0)]),
    "named_locked_lazy": lambda: (
        lazy_stack([TensorDict({"a": torch.ones(3)}, [3], names=["t"]) for _ in range(2)])
        .refine_names("env", "t")
        .lock_()
    ),
    "typed": lambda: State(x=torch.zeros(3), y=torch.ones(3, 2), batch_size=[3]),
    "jagged": _jagged,
    "empty_leaf": lambda: TensorDict({"a": torch.zeros(0, 3), "b": torch.ones(4, 0)[:0]}, [0]),
    "empty": lambda: TensorDict({}, [5]),
    "empty_nested": lambda: TensorDict({"x": {}}, [2], names=["b"]),
    "empty_lazy": lambda: lazy_stack([TensorDict({}, [3]), TensorDict({}, [3])]),
}
EMPTY = {"empty", "empty_nested", "empty_lazy", "empty_leaf"}  # no tensor bytes: no buffer at all


def snapshot(node: Any) -> Any:
    """Everything a round trip must keep: kinds and classes, batch sizes, names, devices,
    locks, keys, dtypes, shapes, values."""
    if isinstance(node, torch.Tensor):
        if node.is_nested:
            return ("jagged", node.dtype, [snapshot(part) for part in node.unbind()])
        return ("tensor", node.dtype, tuple(node.shape), node.resolve_conj().tolist())
    if isinstance(node, NonTensorStack):
        return ("values", tuple(node.batch_size), node.tolist())
    if isinstance(node, NonTensorData):
        return ("value", type(node), tuple(node.batch_size), type(node.data), node.data)
    if tclass.is_tensorclass(node):
        return ("record", type(node), snapshot(node._tensordict))
    common = (type(node), tuple(node.batch_size), node.names, node.device, node.is_locked)
    if isinstance(node, LazyStackedTensorDict):
        return ("lazy", *common, node.stack_dim, [snapshot(m) for m in node.tensordicts])
    return ("td", *common, {key: snapshot(value) for key, value in node.items()})


def dumps(node: Any) -> tuple[bytes, list[pickle.PickleBuffer]]:
    buffers: list[pickle.PickleBuffer] = []
    payload = pickle.dumps(node, protocol=5, buffer_callback=buffers.append)
    return payload, buffers


def address(buffer: Any) -> int:
    return int(np.frombuffer(buffer, dtype=np.uint8).ctypes.data)


def tensors(node: Any) -> list[torch.Tensor]:
    return [leaf for leaf in node.values(True, True) if isinstance(leaf, torch.Tensor)]


# --- round trips -------------------------------------------------------------------------------


@pytest.mark.parametrize("readonly", [False, True], ids=["writable", "readonly"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_round_trip_through_one_out_of_band_buffer(case: str, readonly: bool) -> None:
    node = CASES[case]()
    payload, buffers = dumps(node)
    assert len(buffers) == (0 if case in EMPTY else 1)
    given = [bytes(b.raw()) if readonly else bytearray(b.raw()) for b in buffers]
    back = pickle.loads(payload, buffers=given)
    assert snapshot(back) == snapshot(node)
    assert len(payload) < 4096  # the header; the data is out of band


def test_the_buffer_is_the_consolidated_layout_and_the_header_json() -> None:
    node = _step()
    rebuild, (header, classes, values, buffer) = node._tensordict.__reduce_ex__(5)
    assert isinstance(buffer, pickle.PickleBuffer)
    description = json.loads(header)
    offsets = [offset for _, _, offset in description["leaves"]]
    assert all(offset % 16 == 0 for offset in offsets)
    leaves = {(dtype, tuple(shape)) for dtype, shape, _ in description["leaves"]}
    assert leaves == {("torch.float32", (4, 3)), ("torch.bool", (4,)), ("torch.int64", (4,))}
    assert description["tree"]["entries"]["info"]["record"].endswith("test_pickle5.Info")
    assert description["tree"]["entries"]["env"]["value"] == "pong"
    assert classes == (Info,) and values == ()  # every value is JSON
    assert memoryview(buffer).nbytes == description["size"] >= 4 * 3 * 4 + 4 + 4 * 8


def test_values_json_cannot_hold_travel_pickled_beside_the_header() -> None:
    _, (header, _, values, _) = _values().__reduce_ex__(5)
    assert values == ((3, 4), ["a", "b", (1, 2)])
    assert "pickled_value" in json.dumps(json.loads(header)["tree"]["entries"]["shape"])


def test_a_consolidated_collection_sends_its_own_buffer_without_a_copy() -> None:
    node = TensorDict({"a": torch.arange(6.0), "c": torch.ones(6, 3)}, [6]).consolidate()
    _, buffers = dumps(node)
    storage = node._consolidated["storage"]
    assert address(buffers[0]) == storage.data_ptr()
    assert memoryview(buffers[0]).nbytes == storage.numel()


@pytest.mark.parametrize("kind", ["tensordict", "lazy", "record"])
def test_a_consolidated_collection_comes_back_unlocked_as_with_the_peer(kind: str) -> None:
    made = {
        "tensordict": lambda: TensorDict({"a": torch.ones(2), "n": {"b": torch.ones(2)}}, [2]),
        "lazy": lambda: lazy_stack([TensorDict(a=torch.ones(3)), TensorDict(a=torch.ones(3))]),
        "record": lambda: _step(2),
    }[kind]
    node = made().consolidate()
    assert node.is_locked  # consolidate()'s lock, which no pickle keeps
    payload, buffers = dumps(node)
    for back in (pickle.loads(pickle.dumps(node)), pickle.loads(payload, buffers=buffers)):
        assert not back.is_locked and back.is_consolidated()
    payload, buffers = dumps(made().lock_())  # a lock the user set travels...
    received = pickle.loads(payload, buffers=buffers)
    assert received.is_locked
    payload, buffers = dumps(received)  # ...on and on (a Ray task returning its argument)
    assert pickle.loads(payload, buffers=buffers).is_locked


def test_the_unpickled_tensors_are_views_of_the_given_buffer() -> None:
    node = _step(16)
    payload, buffers = dumps(node)
    given = bytearray(buffers[0].raw())
    back = pickle.loads(payload, buffers=[given])
    start = address(given)
    for leaf in tensors(back):
        assert start <= leaf.data_ptr() < start + len(given)
    back.obs[0, 0] = 100.0  # a writable buffer: writes go to it
    assert pickle.loads(payload, buffers=[given]).obs[0, 0].item() == 100.0
    assert node.obs[0, 0].item() == 0.0


@pytest.mark.parametrize("protocol", [2, 4])
def test_older_protocols_pickle_as_before(protocol: int) -> None:
    node = _step()
    payload = pickle.dumps(node, protocol=protocol)
    assert b"tclass-pickle5" not in payload
    assert snapshot(pickle.loads(payload)) == snapshot(node)


def test_without_a_buffer_callback_the_buffer_is_in_the_stream_and_private() -> None:
    node = _step(64)
    payload = pickle.dumps(node, protocol=5)
    assert len(payload) > node.obs.numel() * 4
    back = pickle.loads(payload)
    assert snapshot(back) == snapshot(node) and type(back.obs) is torch.Tensor
    back.obs.add_(1)  # its own memory
    assert snapshot(pickle.loads(payload)) == snapshot(node)


def test_an_unaligned_buffer_is_copied_into_an_aligned_one() -> None:
    node = TensorDict({"a": torch.arange(5, dtype=torch.float64), "b": torch.ones(5, 2)}, [5])
    payload, buffers = dumps(node)
    shifted = memoryview(b"\0" + bytes(buffers[0].raw()))[1:]  # read-only and misaligned
    back = pickle.loads(payload, buffers=[shifted])
    assert snapshot(back) == snapshot(node)
    assert type(back["a"]) is torch.Tensor  # a private copy: writable
    back["a"].add_(1)


def test_a_damaged_pickle_is_refused_clearly() -> None:
    payload, buffers = dumps(_step())
    raw = bytes(buffers[0].raw())
    with pytest.raises(PickleRefusedError, match=r"expects a buffer of \d+ bytes, got 3"):
        pickle.loads(payload, buffers=[b"abc"])
    rebuild, (header, classes, values, _) = _step()._tensordict.__reduce_ex__(5)
    with pytest.raises(PickleRefusedError, match="no valid header"):
        rebuild("{}", classes, values, raw)
    newer = json.dumps({**json.loads(header), "version": 99})
    with pytest.raises(PickleRefusedError, match="format 99.*the tclass that wrote it"):
        rebuild(newer, classes, values, raw)
    with pytest.raises(PickleRefusedError, match="not a record class"):
        rebuild(header, (dict,), values, raw)
    unknown = header.replace("torch.float32", "torch.float99")
    with pytest.raises(MetadataError, match="a pickled collection names an unknown dtype"):
        rebuild(unknown, classes, values, raw)


# --- read-only buffers ---------------------------------------------------------------------


def _read_only_copy(node: Any) -> tuple[Any, bytes]:
    payload, buffers = dumps(node)
    shared = bytes(buffers[0].raw())
    return pickle.loads(payload, buffers=[shared]), shared


WRITES: dict[str, Callable[[Any], Any]] = {
    "leaf add_": lambda rec: rec.obs.add_(1),
    "leaf setitem": lambda rec: rec.obs.__setitem__(0, 5.0),
    "leaf view": lambda rec: rec.obs[1:].mul_(2),
    "leaf detached": lambda rec: rec.obs.detach().zero_(),
    "out=": lambda rec: torch.add(rec.obs, 1, out=rec.obs),
    "functional inplace": lambda rec: torch.nn.functional.relu(rec.obs, inplace=True),
    "record setitem": lambda rec: rec.__setitem__(0, _step(1, 50.0)[0]),
    "record zero_": lambda rec: rec.zero_(),
    "record iadd": lambda rec: rec.info.__iadd__(1),
    "record masked_fill_": lambda rec: rec.masked_fill_(torch.ones(4, dtype=torch.bool), 0),
    "td setitem": lambda rec: rec._tensordict.__setitem__(slice(0, 2), rec[2:4].clone()),
    "set_": lambda rec: rec.set_("obs", torch.zeros(4, 3)),
    "nested apply_": lambda rec: rec.info.apply_(lambda t: t * 2),
    "copy_": lambda rec: rec.copy_(_step()),
    "update_": lambda rec: rec._tensordict.update_({"obs": torch.ones(4, 3)}),
    "numpy": lambda rec: rec.obs.numpy().__setitem__(0, 7.0),
    "to cpu, then add_": lambda rec: rec.to("cpu").obs.add_(1),  # no copy: still shared
    "cpu(), then setitem": lambda rec: rec.cpu().info.score.__setitem__(0, 9),
}


@pytest.mark.parametrize("write", sorted(WRITES))
def test_a_read_only_buffer_refuses_writes_and_stays_unchanged(write: str) -> None:
    back, shared = _read_only_copy(_step())
    before = snapshot(back)
    error_class = ValueError if write == "numpy" else ReadOnlyError
    with pytest.raises(error_class) as caught:
        WRITES[write](back)
    if error_class is ReadOnlyError:
        assert isinstance(caught.value, TclassError) and isinstance(caught.value, RuntimeError)
        assert "read-only" in str(caught.value) and ".clone()" in str(caught.value)
    assert snapshot(back) == before
    assert bytes(shared) == bytes(dumps(_step())[1][0].raw())


def test_share_memory_of_a_read_only_collection_moves_it_and_writes_nothing() -> None:
    # The peer's received collections are private copies, which share_memory_() puts in
    # torch's shared memory for worker processes; a read-only one gets there the same way
    # (one copy of the buffer), and the memory it leaves is not written.
    back, shared = _read_only_copy(_step())
    before = snapshot(back)
    assert back.share_memory_() is back and back.is_locked  # locked, as the peer's
    assert back.obs.is_shared() and back.info.score.is_shared()
    assert snapshot(back.unlock_()) == before and type(back.obs) is ReadOnlyTensor
    assert bytes(shared) == bytes(dumps(_step())[1][0].raw())


def test_a_read_only_collection_reads_and_gives_writable_copies() -> None:
    back, _ = _read_only_copy(_step())
    assert type(back.obs) is ReadOnlyTensor and type(back.info.score) is ReadOnlyTensor
    assert type(back[1:].obs) is ReadOnlyTensor  # a view of the shared memory
    assert type(back.obs + 1) is torch.Tensor and type(back.obs.sum()) is torch.Tensor
    copy = back.clone()
    assert type(copy.obs) is torch.Tensor
    copy.obs.add_(1)
    assert torch.equal(copy.obs, back.obs + 1)
    back.obs = torch.zeros(4, 3)  # a new tensor replaces the entry: nothing shared is written
    assert type(back.obs) is torch.Tensor
    weights = torch.ones(3, 2, requires_grad=True)
    (back.clone().obs @ weights).sum().backward()
    assert weights.grad is not None
    assert back.info.tag == "t0.0" and back.env == "pong"


def test_a_read_only_collection_saves_and_copies_as_plain_tensors(tmp_path: Path) -> None:
    back, _ = _read_only_copy(TensorDict({"a": torch.arange(6.0), "n": {"b": torch.ones(6)}}, [6]))
    torch.save(back, tmp_path / "td.pt")
    loaded = torch.load(tmp_path / "td.pt", weights_only=True)  # no class of its own
    assert type(loaded["a"]) is torch.Tensor and snapshot(loaded) == snapshot(back)
    deep = copy.deepcopy(back)
    assert type(deep["n", "b"]) is torch.Tensor
    deep["n", "b"].add_(1)
    assert type(back.to(torch.float64)["a"]) is torch.Tensor
    assert type(back.unbind(0)[2]["a"]) is ReadOnlyTensor  # views of the shared memory


@pytest.mark.parametrize("readonly", [False, True], ids=["writable", "readonly"])
def test_a_received_collection_of_several_dtypes_saves_with_torch(
    tmp_path: Path, readonly: bool
) -> None:
    # each leaf lies on a storage of its own, as the peer's: torch.save refuses tensors of
    # different dtypes that view one storage ("view the same data as different types")
    payload, buffers = dumps(_step())
    given = [bytes(b.raw()) if readonly else bytearray(b.raw()) for b in buffers]
    back = pickle.loads(payload, buffers=given)
    torch.save(back, tmp_path / "step.pt")
    torch.save(back.to_dict(), tmp_path / "leaves.pt")
    assert snapshot(torch.load(tmp_path / "step.pt", weights_only=False)) == snapshot(_step())
    leaves = torch.load(tmp_path / "leaves.pt", weights_only=True)
    assert leaves["obs"].tolist() == _step().obs.tolist()
    assert leaves["action"].dtype == torch.bool and leaves["info"]["score"].dtype == torch.int64
    assert leaves["info"]["score"].tolist() == _step().info.score.tolist()


def test_a_read_only_collection_pickles_again_from_the_same_memory() -> None:
    back, shared = _read_only_copy(_step())
    payload, buffers = dumps(back)
    assert address(buffers[0]) == address(shared)  # no copy of the data
    assert buffers[0].raw().readonly
    assert snapshot(pickle.loads(payload, buffers=buffers)) == snapshot(_step())
    old = pickle.loads(pickle.dumps(back, protocol=4))  # leaf by leaf: plain copies
    assert type(old.obs) is torch.Tensor and snapshot(old) == snapshot(_step())


# --- what keeps its own pickling -----------------------------------------------------------


def test_memory_mapped_collections_travel_as_file_references(tmp_path: Path) -> None:
    node = TensorDict({"a": torch.arange(100_000.0), "b": {"c": torch.ones(100_000)}}, [100_000])
    saved = node.memmap(tmp_path / "td")
    payload, buffers = dumps(saved)
    assert not buffers and len(payload) < 4096
    back = pickle.loads(payload)
    assert type(back["a"]) is tclass.MemoryMappedTensor
    assert back["a"].filename == saved["a"].filename
    in_file = node.consolidate(filename=tmp_path / "one.bin")
    payload, buffers = dumps(in_file)
    assert not buffers and len(payload) < 4096  # the consolidation file, by reference


def test_plain_tensors_beside_memory_mapped_ones_still_travel_in_the_buffer(
    tmp_path: Path,
) -> None:
    # A replay buffer's state: its memory-mapped storage and plain priorities. The
    # storage's tensors travel as file references in the stream, the others in the buffer
    # (they went in band, leaf by leaf, when one memory-mapped leaf sent all that way).
    storage = _step(4).memmap(tmp_path / "storage")
    node = TensorDict({"storage": storage, "priority": torch.arange(4.0).expand(4096, 4).T}, [4])
    node["grad"] = torch.ones(4, requires_grad=True)  # pickled in the stream too
    payload, buffers = dumps(node)
    assert len(buffers) == 1 and buffers[0].raw().nbytes == 4 * 4096 * 4
    assert len(payload) < 8192  # the file references, not the tensors
    back = pickle.loads(payload, buffers=[bytes(buffers[0].raw())])
    assert list(back.keys(True, True)) == list(node.keys(True, True))
    assert type(back["priority"]) is ReadOnlyTensor and torch.equal(
        back["priority"], node["priority"]
    )
    assert back["grad"].requires_grad and torch.equal(back["grad"], node["grad"])
    assert type(back["storage"]) is Step and back["storage"].is_memmap()
    assert back["storage"].obs.filename == storage.obs.filename
    back["storage"].obs[0] = 42.0  # reaches the files
    assert tclass.load_memmap(tmp_path / "storage").obs[0].tolist() == [42.0] * 3


@pytest.mark.parametrize(
    "make",
    [
        lambda: TensorDict({"w": torch.zeros(2, requires_grad=True)}, [2]),
        lambda: TensorDict({"u": UnbatchedTensor(torch.zeros(5)), "a": torch.ones(2)}, [2]),
        lambda: TensorDict({"p": torch.nn.Parameter(torch.zeros(2), requires_grad=False)}, [2]),
    ],
    ids=["requires_grad", "unbatched", "parameter"],
)
def test_what_one_buffer_cannot_say_exactly_pickles_as_before(make: Callable[[], Any]) -> None:
    node = make()
    payload, buffers = dumps(node)
    assert not buffers
    back = pickle.loads(payload)
    assert snapshot(back) == snapshot(node)
    for mine, theirs in zip(tensors(back), tensors(node)):
        assert type(mine) is type(theirs) and mine.requires_grad == theirs.requires_grad


def test_metadata_travels_in_the_header_and_stays_metadata() -> None:
    # A MetaData value (one value for the whole batch, kept through stacking) used to
    # send every tensor of its collection in band; it is a value of the header now.
    node = TensorDict({"x": torch.arange(6.0).reshape(3, 2), "sub": {"y": torch.ones(3)}}, [3])
    node["run"] = tclass.MetaData("run-1")
    node["sub", "cfg"] = tclass.MetaData(("lr", 0.1))  # not JSON: pickled in the stream
    payload, buffers = dumps(node)
    assert len(buffers) == 1 and b"tclass-pickle5" in payload
    back = pickle.loads(payload, buffers=[memoryview(bytes(buffers[0].raw()))])
    assert snapshot(back) == snapshot(node)
    assert type(back.get("run")) is tclass.MetaData
    assert type(back.get(("sub", "cfg"))) is tclass.MetaData and back["sub", "cfg"] == ("lr", 0.1)
    assert all(type(leaf) is ReadOnlyTensor for leaf in tensors(back))
    stacked = torch.stack([back, back])
    assert type(stacked.get("run")) is tclass.MetaData and stacked["run"] == "run-1"


def test_consolidate_keeps_metadata() -> None:
    node = TensorDict({"x": torch.zeros(2), "run": tclass.MetaData("run-1")}, [2])
    node["tag"] = "plain"
    packed = node.consolidate()
    assert type(packed.get("run")) is tclass.MetaData and packed["run"] == "run-1"
    assert type(packed.get("tag")) is tclass.NonTensorData


def test_multiprocessing_keeps_sharing_tensors_leaf_by_leaf() -> None:
    # ForkingPickler (queues, pools) pickles with the default protocol, 5 from Python
    # 3.14 on: a collection still travels leaf by leaf there, as torch shares tensors.
    node = TensorDict({"a": torch.zeros(3)}, [3]).share_memory_()
    payload = bytes(ForkingPickler.dumps(node, protocol=5))
    assert b"tclass-pickle5" not in payload


# --- across processes ----------------------------------------------------------------------


def _read_in_child(payload: bytes, path: str, writable: bool) -> dict[str, Any]:
    """In a spawned process: unpickle over a shared mapping of the buffer's file."""
    with open(path, "r+b" if writable else "rb") as file:
        mapping = mmap.mmap(
            file.fileno(), 0, access=mmap.ACCESS_WRITE if writable else mmap.ACCESS_READ
        )
    record = pickle.loads(payload, buffers=[mapping])
    start = address(mapping)
    report = {
        "class": type(record).__name__,
        "snapshot": snapshot(record),
        "in_mapping": all(start <= t.data_ptr() < start + len(mapping) for t in tensors(record)),
    }
    try:
        record.obs.add_(1)
        report["write"] = "written"
    except ReadOnlyError as error:
        report["write"] = type(error).__name__
    if writable:
        mapping.flush()
    return report


def test_spawned_processes_read_the_buffer_where_it_lies(tmp_path: Path) -> None:
    node = _step(8)
    payload, buffers = dumps(node)
    path = tmp_path / "buffer.bin"
    path.write_bytes(buffers[0].raw())
    with ProcessPoolExecutor(1, mp_context=SPAWN) as pool:
        shared = pool.submit(_read_in_child, payload, str(path), True).result(timeout=120)
        private = pool.submit(_read_in_child, payload, str(path), False).result(timeout=120)
    assert shared["class"] == private["class"] == "Step"
    assert shared["snapshot"] == snapshot(node) and shared["in_mapping"]
    assert shared["write"] == "written"  # a writable mapping: the file changed
    assert private["write"] == "ReadOnlyError" and private["in_mapping"]
    moved = pickle.loads(payload, buffers=[path.read_bytes()])
    assert torch.equal(moved.obs, node.obs + 1)
    assert private["snapshot"] == snapshot(moved)
