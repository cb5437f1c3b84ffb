"""A file ``consolidate(filename=...)`` writes is the peer's (tclass/_engine/_consolidate.py,
_consolidate_peer.py): it ends with the peer's description, which the peer's
``from_consolidated`` reads, and keeps tclass's own before it; tclass reads the peer's
files from the peer's description (records through its class registry).

The cross-library tests compare, for each kind of collection, what the reading library
gives of the other library's file with what it gives of its own file."""

from __future__ import annotations

import functools
import json
import pickle
import warnings
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch

import tclass
from tclass import MetaData, NonTensorData, NonTensorStack, TensorClass, TensorDict
from tclass.errors import ConsolidatedFileError, MetadataError, TclassError


class _Inner(TensorClass):
    x: torch.Tensor
    label: Any = None


class _Outer(TensorClass):
    inner: Any
    y: torch.Tensor
    z: Any = None


@functools.cache
def _peer_classes() -> tuple[type, type]:
    """The peer's records of the same module and names as tclass's (defined once: the
    peer finds a file's class by its name among those defined)."""
    peer = pytest.importorskip("tensordict")

    @peer.tensorclass
    class _PInner:
        x: torch.Tensor
        label: Any = None

    @peer.tensorclass
    class _POuter:
        inner: Any
        y: torch.Tensor
        z: Any = None

    for cls, name in ((_PInner, "_Inner"), (_POuter, "_Outer")):
        cls.__qualname__ = cls.__name__ = name
    return _PInner, _POuter


def _lazy(lib: ModuleType, dim: int) -> Any:
    batch = [2] if dim else []
    members = [
        lib.TensorDict(a=torch.zeros(2), batch_size=batch),
        lib.TensorDict(a=torch.ones(2), b=torch.ones(2, 1), batch_size=batch),
    ]
    return lib.LazyStackedTensorDict(*members, stack_dim=dim)


def _cases(lib: ModuleType, inner: type, outer: type) -> dict[str, Callable[[], Any]]:
    """Equal collections of one library (``lib``), by kind."""

    def values() -> Any:
        td = lib.TensorDict(a=torch.arange(3.0), batch_size=[3])
        td["s"] = lib.NonTensorData("hello", batch_size=[3])
        td["n"] = lib.NonTensorData(5, batch_size=[3])
        td["none"] = lib.NonTensorData(None, batch_size=[3])
        td["lst"] = lib.NonTensorData([1, [2, "x"]], batch_size=[3])
        td["m"] = lib.MetaData({"k": 1}, batch_size=[3])
        td["st"] = lib.NonTensorStack("a", "b", "c")
        return td

    def stack_2d() -> Any:
        td = lib.TensorDict(batch_size=[2, 2])
        rows = [lib.NonTensorStack("a", "b"), lib.NonTensorStack("c", "d")]
        td["s"] = lib.NonTensorStack(*rows, stack_dim=1)
        return td

    def empty_stack() -> Any:
        td = lib.TensorDict(a=torch.zeros(0, 2), batch_size=[0])
        td["s"] = lib.NonTensorStack(batch_size=[0])
        return td

    def record() -> Any:
        made = inner(x=torch.arange(6.0).view(2, 3), label="lbl", batch_size=[2])
        return outer(inner=made, y=torch.ones(2), batch_size=[2])

    def jagged() -> Any:
        parts = [torch.arange(2.0), torch.arange(3.0), torch.arange(1.0)]
        nt = torch.nested.nested_tensor(parts, layout=torch.jagged)
        return lib.TensorDict(nt=nt, a=torch.zeros(3), batch_size=[3])

    return {
        "flat": lambda: lib.TensorDict(
            a=torch.zeros(2, 3),
            b=torch.arange(2),
            c=torch.tensor([True, False]),
            d=torch.ones(2, dtype=torch.complex128),
            batch_size=[2],
        ),
        "nested": lambda: lib.TensorDict(
            a=torch.zeros(2), b={"c": torch.ones(2, 2, dtype=torch.int16), "d": {}}, batch_size=[2]
        ),
        "values": values,
        "batch-names-device": lambda: lib.TensorDict(
            a=torch.zeros(2, 3), b={"c": torch.ones(2, 3, 1)}, batch_size=[2, 3], device="cpu"
        ).refine_names("t", None),
        "locked": lambda: lib.TensorDict(
            a=torch.zeros(2), b={"c": torch.ones(2)}, batch_size=[2]
        ).lock_(),
        "empty": lambda: lib.TensorDict(),
        "empty-stack": empty_stack,
        "stack-2d": stack_2d,
        "lazy": lambda: _lazy(lib, 0),
        "lazy-nested": lambda: lib.TensorDict(l=_lazy(lib, 1), batch_size=[2, 2]),
        "record": record,
        "record-in-td": lambda: lib.TensorDict(r=record(), batch_size=[2]),
        "jagged": jagged,
    }


_KINDS = list(_cases(tclass, _Inner, _Outer))
_COLLECTIONS = {
    "TensorDict",
    "LazyStackedTensorDict",
    "NonTensorData",
    "MetaData",
    "NonTensorStack",
}


def _summary(x: Any) -> Any:
    """What is compared across the libraries: kinds, batch sizes, names, locks, values."""
    if isinstance(x, torch.Tensor):
        if x.is_nested:
            return ("nested", [part.tolist() for part in x.unbind()])
        return ("tensor", str(x.dtype), list(x.shape), x.tolist())
    kind = type(x).__name__
    if kind in ("NonTensorData", "MetaData"):
        return ("value", x.data, list(x.batch_size))
    if kind == "NonTensorStack":
        return ("values", x.tolist(), list(x.batch_size))
    if kind == "LazyStackedTensorDict":
        members = [_summary(member) for member in x.tensordicts]
        return ("lazy", x.stack_dim, list(x.batch_size), x.is_locked, members)
    if kind not in _COLLECTIONS:  # a record: its class name and its content
        return ("record", kind, _summary(x._tensordict))
    names = x.names if any(name is not None for name in x.names) else None
    entries = [(key, _summary(value)) for key, value in x.items()]
    return ("td", list(x.batch_size), names, str(x.device), x.is_locked, entries)


def _read(lib: ModuleType, kind: str, path: str, like: Any) -> Any:
    """``from_consolidated`` of ``path`` by ``lib``, with the class a user would call it on."""
    cls = {"record": type(like), "lazy": lib.LazyStackedTensorDict}.get(kind, lib.TensorDict)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return cls.from_consolidated(path)


@pytest.fixture
def peer() -> ModuleType:
    module = pytest.importorskip("tensordict")
    _peer_classes()
    return module


@pytest.mark.parametrize("kind", _KINDS)
def test_the_peer_reads_a_tclass_file_as_its_own(
    kind: str, peer: ModuleType, tmp_path: Path
) -> None:
    theirs = _cases(peer, *_peer_classes())[kind]()
    ours = _cases(tclass, _Inner, _Outer)[kind]()
    their_path, our_path = str(tmp_path / "peer.bin"), str(tmp_path / "tclass.bin")
    theirs.consolidate(filename=their_path)
    ours.consolidate(filename=our_path)
    expected = _summary(_read(peer, kind, their_path, theirs))
    assert _summary(_read(peer, kind, our_path, theirs)) == expected


@pytest.mark.parametrize("kind", _KINDS)
def test_tclass_reads_a_peer_file_as_the_peer_does(
    kind: str, peer: ModuleType, tmp_path: Path
) -> None:
    theirs = _cases(peer, *_peer_classes())[kind]()
    ours = _cases(tclass, _Inner, _Outer)[kind]()
    path = str(tmp_path / "peer.bin")
    theirs.consolidate(filename=path)
    read = _read(tclass, kind, path, ours)
    assert _summary(read) == _summary(_read(peer, kind, path, theirs))
    assert read.is_consolidated()  # its leaves are views of the file's mapping


@pytest.mark.parametrize("kind", _KINDS)
def test_tclass_reads_its_own_file_whole(kind: str, tmp_path: Path) -> None:
    # tclass's part of the file keeps what the peer's description has no room for
    source = _cases(tclass, _Inner, _Outer)[kind]()
    path = str(tmp_path / "tclass.bin")
    source.consolidate(filename=path)
    read = _read(tclass, kind, path, source)
    assert _summary(read) == _summary(source)


def _descriptions(path: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """tclass's part and the peer's description of a file tclass wrote."""
    raw = Path(path).read_bytes()
    length = int.from_bytes(raw[-8:], "little")
    peer = json.loads(raw[-8 - length : -8])
    own_start = raw.index(b'{"tree": ')
    own = json.loads(raw[own_start : len(raw) - 8 - length])
    return own, peer


def test_the_file_ends_with_the_peers_description(tmp_path: Path) -> None:
    td = TensorDict(a=torch.zeros(2), b={"c": torch.ones(2)}, batch_size=[2])
    td["m"] = MetaData("meta", batch_size=[2])
    path = str(tmp_path / "f.bin")
    td.consolidate(filename=path)
    own, peer = _descriptions(path)
    assert peer["cls"] == "TensorDict" and set(peer["leaves"]) == {"a"}
    assert peer["non_tensors"] == {"m": ["meta", [2], None]}
    assert peer["cls_metadata"] == {
        "device": None,
        "names": [None],
        "batch_size": [2],
        "is_locked": False,
    }
    assert peer["b"]["leaves"]["c"][:2] == ["torch.float32", [2]]
    assert own["tree"]["entries"]["m"]["meta"] is True
    assert type(TensorDict.from_consolidated(path).get("m")) is MetaData  # tclass's part


def test_a_peer_description_alone_is_read(tmp_path: Path) -> None:
    """A file with the peer's description only (as the peer writes): MetaData comes
    back as a NonTensorData, a stack of values along dim 0, keys as the peer orders them."""
    td = TensorDict(a=torch.arange(2.0), batch_size=[2])
    td["m"] = MetaData("meta", batch_size=[2])
    td["s"] = NonTensorStack("x", "y")
    path = tmp_path / "f.bin"
    td.consolidate(filename=str(path))
    raw = path.read_bytes()
    length = int.from_bytes(raw[-8:], "little")
    peer = raw[-8 - length : -8]
    own_start = raw.index(b'{"tree": ')
    path.write_bytes(raw[:own_start] + peer + raw[-8:])  # tclass's part left out
    read = TensorDict.from_consolidated(str(path))
    assert list(read.keys()) == ["m", "a", "s"]
    assert type(read.get("m")) is NonTensorData and read.get("m").data == "meta"
    assert read.get("s").tolist() == ["x", "y"] and read["a"].tolist() == [0.0, 1.0]


def _peer_file(path: Path, description: dict[str, Any], data: bytes = b"") -> str:
    encoded = json.dumps(description).encode()
    path.write_bytes(data + encoded + len(encoded).to_bytes(8, "little"))
    return str(path)


def _node(**fields: Any) -> dict[str, Any]:
    node: dict[str, Any] = {"cls": "TensorDict", "non_tensors": {}, "leaves": {}}
    node["cls_metadata"] = {"device": None, "names": [], "batch_size": [], "is_locked": False}
    node.update(fields)
    return node


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"leaves": {"a": ["torch.float32", [4], 0, 8, 0]}}, "places 16 bytes"),
        ({"leaves": {"a": ["torch.float32", [2], 8, 64, 0]}}, "places 8 bytes at 8..64"),
        ({"leaves": {"a": ["torch.float64", [1], 4, 12, 0]}}, "unaligned"),
        ({"leaves": {"a": ["torch.float99", [1], 0, 8, 0]}}, "unknown dtype"),
        ({"leaves": {"a": ["torch.float32", [-1], 0, 8, 0]}}, "not a list of sizes"),
        ({"leaves": {"<NJT_OFFSETS>a": ["torch.int64", [1], 0, 8, 0, 1]}}, "before its values"),
        ({"cls": "<module os>"}, "names the class"),
        ({"non_tensors": {"s": ["x"]}}, "not a value's"),
        ({"sub": {"cls": "LazyStackedTensorDict"}}, "lacks non_tensors"),
    ],
)
def test_a_damaged_peer_description_is_refused(
    fields: dict[str, Any], says: str, tmp_path: Path
) -> None:
    path = _peer_file(tmp_path / "f.bin", _node(**fields), bytes(32))
    with pytest.raises(MetadataError, match=says):
        TensorDict.from_consolidated(path)


def test_a_peer_record_is_found_in_the_registry_only(tmp_path: Path) -> None:
    """A record of the peer's file by its class name, among the classes defined here;
    an unknown one is an error (nothing is imported)."""
    known = _node(r=_node(cls=f"<class '{__name__}._Inner'>"))
    known["r"]["leaves"] = {"x": ["torch.float32", [], 0, 16, 12]}
    read = TensorDict.from_consolidated(_peer_file(tmp_path / "a.bin", known, bytes(16)))
    assert type(read["r"]) is _Inner and read["r"].label is None
    unknown = _node(r=_node(cls="<class 'no_such_module.Rec'>"))
    with pytest.raises(TclassError, match="no_such_module"):
        TensorDict.from_consolidated(_peer_file(tmp_path / "b.bin", unknown))


def test_a_value_that_is_not_json_is_refused_before_writing(tmp_path: Path) -> None:
    # the peer raises a RuntimeError (program 15,812,557 (L12) of features,index,shape,combine)
    td = TensorDict(s=NonTensorData({1, 2}))
    path = tmp_path / "f.bin"
    with pytest.raises(ConsolidatedFileError, match="not JSON") as caught:
        td.consolidate(filename=str(path))
    assert isinstance(caught.value, RuntimeError) and not path.exists()
    assert td.consolidate().get("s").data == {1, 2}  # in memory it consolidates


@pytest.mark.parametrize("key", ["cls", "leaves", "non_tensors", "cls_metadata", "size"])
def test_a_sub_collection_under_a_key_of_the_description_is_refused(
    key: str, tmp_path: Path
) -> None:
    # the peer writes such a file and cannot read it back (or drops the entry)
    td = TensorDict({key: {"a": torch.zeros(1)}, "b": torch.zeros(1)})
    with pytest.raises(ConsolidatedFileError, match=repr(key)):
        td.consolidate(filename=str(tmp_path / "f.bin"))
    leaf = TensorDict({key: torch.zeros(1)})  # a leaf of that name is fine
    leaf.consolidate(filename=str(tmp_path / "g.bin"))
    assert TensorDict.from_consolidated(str(tmp_path / "g.bin"))[key].tolist() == [0.0]


def test_a_files_collection_pickles_and_its_buffer_rebuilds_it(tmp_path: Path) -> None:
    """The buffer of a file (the peer's description last) rebuilds the collection, as an
    in-memory buffer (tclass's description only) does; the peer reads no buffer."""
    td = TensorDict(a=torch.arange(3.0), b={"s": "x"}, batch_size=[3])
    td["m"] = MetaData(1, batch_size=[3])
    on_file = td.consolidate(filename=str(tmp_path / "f.bin"))
    in_memory = td.consolidate()
    for consolidated in (on_file, in_memory):
        for again in (
            pickle.loads(pickle.dumps(consolidated)),
            tclass.from_consolidated(consolidated._consolidated["storage"]),
        ):
            assert _summary(again.clear_device_()) == _summary(td)
            assert type(again.get("m")) is MetaData


def test_consolidate_keeps_each_nodes_device(tmp_path: Path) -> None:
    """Decided (program 15,912,879 L12 of methods,features,entries,records): in memory,
    each nested collection keeps its device, as ``clone()`` does; the peer's gives every
    node the root's device (its clone and the pickle of its result keep each node's)."""
    inner = _Inner(x=torch.zeros(2), batch_size=[2], device="cpu")
    td = TensorDict(
        r=inner, n=TensorDict(a=torch.zeros(2), batch_size=[2], device="cpu"), batch_size=[2]
    )
    consolidated = td.consolidate()
    assert td.device is None and consolidated.device is None
    assert consolidated["r"].device == consolidated["n"].device == torch.device("cpu")
    on_file = td.consolidate(filename=str(tmp_path / "f.bin"))  # a file's: all on cpu
    assert on_file.device == on_file["n"].device == torch.device("cpu")
