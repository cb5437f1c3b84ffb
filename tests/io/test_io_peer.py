"""Cross-library persistence: what the peer (``tensordict`` 0.15.3) writes, tclass loads,
and what tclass writes, the peer loads.

Every check compares a plain-Python picture of both collections (``_summary``): class
name, batch size, keys, and per tensor its dtype, shape and raw bytes, per non-tensor its
Python value. The module skips without the peer.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
import torch

import tclass
from tclass.errors import PickleRefusedError

tensordict = pytest.importorskip("tensordict")

pytestmark = [
    pytest.mark.peer,
    # torch warns on every complex32 tensor it creates (the dtype tests make some).
    pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental:UserWarning"),
]

LIBS = {"tclass": tclass, "peer": tensordict}
BOTH_WAYS = [("peer", "tclass"), ("tclass", "peer")]
FLOAT8 = [
    getattr(torch, name)
    for name in (
        "float8_e4m3fn",
        "float8_e5m2",
        "float8_e4m3fnuz",
        "float8_e5m2fnuz",
        "float8_e8m0fnu",
    )
    if hasattr(torch, name)
]
DTYPES = [
    torch.bool, torch.uint8, torch.uint16, torch.uint32, torch.uint64, torch.int8, torch.int16,
    torch.int32, torch.int64, torch.float16, torch.bfloat16, torch.float32, torch.float64,
    torch.complex32, torch.complex64, torch.complex128, *FLOAT8,
]  # fmt: skip


# --- the classes: one per library, saved under the same "<class 'module.QualName'>" ------


@tclass.tensorclass
class Inner:
    z: torch.Tensor


@tclass.tensorclass
class Step:
    obs: torch.Tensor
    name: str
    inner: Inner


# The peer's twins take the tclass classes' qualname (set in the class body, before the
# peer registers them), so both libraries write and resolve the same _type string.
@tensordict.tensorclass
class PeerInner:
    __qualname__ = "Inner"
    z: torch.Tensor


@tensordict.tensorclass
class PeerStep:
    __qualname__ = "Step"
    obs: torch.Tensor
    name: str
    inner: PeerInner


STEP_CLASSES: dict[str, tuple[Any, Any]] = {"tclass": (Step, Inner), "peer": (PeerStep, PeerInner)}


# --- helpers -----------------------------------------------------------------------------


def _summary(node: Any) -> Any:
    """A plain-Python picture of a collection of either library, equal across libraries
    exactly when the data is."""
    kind = type(node).__qualname__
    if isinstance(node, torch.Tensor):
        return (
            str(node.dtype),
            list(node.shape),
            node.detach().contiguous().reshape(-1).view(torch.uint8).tolist(),
        )
    if kind == "NonTensorData":
        return ("value", list(node.batch_size), node.data)
    if kind == "NonTensorStack":
        return ("values", list(node.batch_size), node.tolist())
    if kind == "LazyStackedTensorDict":
        members = [_summary(member) for member in node.tensordicts]
        return ("lazy", node.stack_dim, list(node.batch_size), members)
    if kind != "TensorDict":  # a tensorclass: its fields live in _tensordict
        return (kind, _summary(node._tensordict))
    return ("td", list(node.batch_size), {key: _summary(node.get(key)) for key in node.keys()})


def _load(reader: str, path: Path, cls: Any = None) -> Any:
    """Load with ``reader``'s generic loader (class taken from the folder), or ``cls``'s."""
    if reader == "tclass":
        return (cls or tclass).load_memmap(path)
    # allow_pickle=False: the peer's default (None) warns, and nothing here is pickled.
    return (cls or tensordict.TensorDict).load_memmap(path, allow_pickle=False)


def _round_trip(source: Any, reader: str, path: Path) -> Any:
    source.memmap(path)
    loaded = _load(reader, path)
    assert _summary(loaded) == _summary(source)
    return loaded


def _metas(root: Path) -> list[Path]:
    return sorted(root.rglob("meta.json"))


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text())


# --- builders: the same collection in either library -------------------------------------


def _nested(lib: Any) -> Any:
    inner = {"b": torch.arange(6.0).reshape(3, 2), "s": lib.NonTensorData("hello", batch_size=[3])}
    return lib.TensorDict({"a": torch.tensor([1, 2, 3]), "n": inner}, batch_size=[3])


def _step(lib: str) -> Any:
    step_cls, inner_cls = STEP_CLASSES[lib]
    inner = inner_cls(z=torch.tensor([7, 8]), batch_size=[2])
    return step_cls(obs=torch.arange(6.0).reshape(2, 3), name="walker", inner=inner, batch_size=[2])


def _lazy(lib: Any, dim: int) -> Any:
    # Members share the batch size [2] but differ in leaf shapes and in keys.
    first = lib.TensorDict({"a": torch.ones(2, 3), "x": torch.tensor([4, 5])}, batch_size=[2])
    second = lib.TensorDict(
        {"a": torch.zeros(2, 5), "b": {"c": torch.tensor([True, False])}}, batch_size=[2]
    )
    return lib.lazy_stack([first, second], dim=dim)


def _sample(dtype: torch.dtype) -> torch.Tensor:
    if dtype.is_complex:
        return torch.tensor([0.5 + 1j, -2 - 0.25j, 3.25, 100j]).to(dtype)
    if dtype.is_floating_point:
        return torch.tensor([0.5, -2.0, 3.25, 448.0]).to(dtype)
    if dtype == torch.bool:
        return torch.tensor([True, False, False, True])
    big = 127 if dtype.itemsize == 1 else 30000  # multi-byte values catch byte-order slips
    return torch.tensor([0, 1, 100, big]).to(dtype)


# --- 1. nested TensorDict with a string --------------------------------------------------


@pytest.mark.parametrize("method", ["memmap", "memmap_", "save"])
@pytest.mark.parametrize(("writer", "reader"), BOTH_WAYS)
def test_nested_tensordict_with_string(
    tmp_path: Path, writer: str, reader: str, method: str
) -> None:
    source = _nested(LIBS[writer])
    getattr(source, method)(tmp_path / "td")
    loaded = _load(reader, tmp_path / "td")
    assert _summary(loaded) == _summary(_nested(LIBS[writer]))
    assert type(loaded) is LIBS[reader].TensorDict
    assert loaded.get(("n", "s")).data == "hello"


@pytest.mark.parametrize(("writer", "reader"), BOTH_WAYS)
def test_keys_that_need_encoding(tmp_path: Path, writer: str, reader: str) -> None:
    keys = ["a/b", "sp ace", "x:y", "q*?", "back\\slash", "tab\tkey", "%pct", "é", ".", "..dir"]
    entries = {key: torch.tensor([i]) for i, key in enumerate(keys)}
    _round_trip(LIBS[writer].TensorDict(entries, [1]), reader, tmp_path / "td")
    # Both libraries name the files alike.
    LIBS[reader].TensorDict(entries, [1]).memmap(tmp_path / "again")
    assert sorted(os.listdir(tmp_path / "td")) == sorted(os.listdir(tmp_path / "again"))


# --- 2. tensorclass with a str field and a nested tensorclass ----------------------------


def test_both_libraries_write_the_same_type_strings(tmp_path: Path) -> None:
    for lib in STEP_CLASSES:
        _step(lib).memmap(tmp_path / lib)
        assert _read_json(tmp_path / lib / "meta.json")["_type"] == f"<class '{__name__}.Step'>"
        inner_meta = _read_json(tmp_path / lib / "_tensordict" / "inner" / "meta.json")
        assert inner_meta["_type"] == f"<class '{__name__}.Inner'>"


@pytest.mark.parametrize("by_class", [True, False], ids=["Cls.load_memmap", "generic"])
@pytest.mark.parametrize(("writer", "reader"), BOTH_WAYS)
def test_tensorclass_with_nested_tensorclass(
    tmp_path: Path, writer: str, reader: str, by_class: bool
) -> None:
    step_cls, inner_cls = STEP_CLASSES[reader]
    _step(writer).memmap(tmp_path / "step")
    loaded = _load(reader, tmp_path / "step", step_cls if by_class else None)
    # Both the root and the nested field resolve to the reader's own classes.
    assert type(loaded) is step_cls and type(loaded.inner) is inner_cls
    assert loaded.name == "walker" and loaded.batch_size == torch.Size([2])
    assert _summary(loaded) == _summary(_step(writer))
    if reader == "tclass":
        assert type(tclass.load_memmap(tmp_path / "step", cls=Step).inner) is Inner


@pytest.mark.parametrize(("writer", "reader"), BOTH_WAYS)
def test_dense_stack_of_tensorclasses_with_different_strings(
    tmp_path: Path, writer: str, reader: str
) -> None:
    step_cls, inner_cls = STEP_CLASSES[writer]
    steps = [
        step_cls(obs=torch.ones(3), name=n, inner=inner_cls(z=torch.tensor(i)))
        for i, n in enumerate("ab")
    ]
    loaded = _round_trip(torch.stack(steps), reader, tmp_path / "st")
    assert type(loaded) is STEP_CLASSES[reader][0] and list(loaded.name) == ["a", "b"]


# --- 3. lazy stack with different shapes and key sets ------------------------------------


@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize(("writer", "reader"), BOTH_WAYS)
def test_lazy_stack_of_different_members(
    tmp_path: Path, writer: str, reader: str, dim: int
) -> None:
    loaded = _round_trip(_lazy(LIBS[writer], dim), reader, tmp_path / "lz")
    assert len(loaded.tensordicts) == 2 and loaded.stack_dim == dim
    assert set(loaded.tensordicts[1].keys()) == {"a", "b"}


def test_lazy_stack_inside_a_tensordict(tmp_path: Path) -> None:
    for writer, reader in BOTH_WAYS:
        lib = LIBS[writer]
        source = lib.TensorDict({"agents": _lazy(lib, 0), "t": torch.arange(2)}, batch_size=[2])
        _round_trip(source, reader, tmp_path / writer)


# --- 4. every dtype ----------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_dtype_written_by_peer(tmp_path: Path, dtype: torch.dtype) -> None:
    # The peer writes float8 too (it only fails to read it back): tclass reads all.
    _round_trip(
        tensordict.TensorDict({"x": _sample(dtype)}, batch_size=[4]), "tclass", tmp_path / "d"
    )


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_dtype_written_by_tclass(tmp_path: Path, dtype: torch.dtype) -> None:
    source = tclass.TensorDict({"x": _sample(dtype)}, batch_size=[4])
    _round_trip(source, "tclass", tmp_path / "d")
    if dtype in FLOAT8:
        pytest.skip("the peer writes float8 but cannot read it (W7)")
    assert _summary(_load("peer", tmp_path / "d")) == _summary(source)


# --- 5. NonTensorStack -------------------------------------------------------------------


@pytest.mark.parametrize(("writer", "reader"), BOTH_WAYS)
def test_standalone_non_tensor_stack(tmp_path: Path, writer: str, reader: str) -> None:
    source = LIBS[writer].NonTensorStack.from_list(["x", "y", "z"])
    loaded = _round_trip(source, reader, tmp_path / "s")
    assert type(loaded) is LIBS[reader].NonTensorStack and loaded.tolist() == ["x", "y", "z"]


@pytest.mark.parametrize(("writer", "reader"), BOTH_WAYS)
def test_standalone_non_tensor_data(tmp_path: Path, writer: str, reader: str) -> None:
    value = {"k": [1, 2.5, None, "é"], "t": True}
    loaded = _round_trip(LIBS[writer].NonTensorData(value), reader, tmp_path / "v")
    assert type(loaded) is LIBS[reader].NonTensorData and loaded.data == value


@pytest.mark.parametrize(("writer", "reader"), BOTH_WAYS)
def test_two_dim_non_tensor_stack_in_a_tensordict(tmp_path: Path, writer: str, reader: str) -> None:
    lib = LIBS[writer]
    values = [["a", "b"], ["c", "d"]]
    names = lib.NonTensorStack.from_list(values)
    loaded = _round_trip(
        lib.TensorDict({"names": names}, batch_size=[2, 2]), reader, tmp_path / "td"
    )
    assert loaded.get("names").tolist() == [["a", "b"], ["c", "d"]]


# --- 6. tclass's markers are ignored by the peer -----------------------------------------


def test_peer_reads_escaped_keys_under_their_stored_names(tmp_path: Path) -> None:
    source = tclass.TensorDict(
        {"shape": torch.arange(3), "device": {"y": torch.ones(3)}, "x": torch.zeros(3)}, [3]
    )
    source.memmap(tmp_path / "td")
    assert _read_json(tmp_path / "td" / "meta.json")["_tclass"] == {"escaped_keys": True}
    loaded = _load("peer", tmp_path / "td")
    # The peer knows no escaping: it sees the stored names, and no marker key.
    assert set(loaded.keys()) == {"%shape", "%device", "x"} and loaded.batch_size == torch.Size([3])
    assert torch.equal(loaded["%shape"], torch.arange(3)) and torch.equal(
        loaded["%device", "y"], torch.ones(3)
    )


def test_peer_reads_lazy_stack_with_member_count(tmp_path: Path) -> None:
    members = [tclass.TensorDict({"a": torch.full((i + 1,), float(i))}) for i in range(3)]
    source = tclass.lazy_stack(members)
    loaded = _round_trip(source, "peer", tmp_path / "lz")
    assert _read_json(tmp_path / "lz" / "meta.json")["_tclass"] == {"members": 3}
    assert len(loaded.tensordicts) == 3


# --- 7. version-0 folders ----------------------------------------------------------------


def _strip_to_version_0(root: Path) -> None:
    """Make a peer 0.15.3 folder look like one from 0.14 (no _format_version / _class)."""
    for path in _metas(root):
        meta = _read_json(path)
        meta.pop("_format_version", None)
        meta.pop("_class", None)
        path.write_text(json.dumps(meta))


def test_version_0_folder_loads(tmp_path: Path) -> None:
    source = _nested(tensordict)
    source["step"] = _step("peer")[0].expand(3)  # a tensorclass under batch [3]
    source["agents"] = tensordict.lazy_stack(
        [tensordict.TensorDict(a=torch.ones(k)) for k in (1, 2, 3)]
    )
    source["names"] = tensordict.NonTensorStack.from_list(["p", "q", "r"])
    source.memmap(tmp_path / "v0")
    _strip_to_version_0(tmp_path / "v0")
    assert not any("_class" in _read_json(path) for path in _metas(tmp_path / "v0"))
    loaded = tclass.load_memmap(tmp_path / "v0")
    assert type(loaded.get("step")) is Step and type(loaded["step"].inner) is Inner
    assert _summary(loaded) == _summary(source)


def test_legacy_padded_folder_loads_alike(tmp_path: Path) -> None:
    # The hand-written golden folder of the peer's legacy format (padded files, "device":
    # "None"): both libraries read the same values, no device, and leave the files alone.
    golden = Path(__file__).resolve().parents[1] / "data" / "golden" / "v0_legacy_padded"
    path = Path(shutil.copytree(golden, tmp_path / "legacy"))
    sizes = {file: file.stat().st_size for file in path.rglob("*.memmap")}
    ours, theirs = tclass.load_memmap(path), _load("peer", path)
    assert _summary(ours) == _summary(theirs)
    assert ours.device is None and theirs.device is None
    assert {file: file.stat().st_size for file in path.rglob("*.memmap")} == sizes
    # Saved again by tclass, the files are exact and the peer reads them the same.
    ours.memmap_(path)
    assert all(file.stat().st_size < 4096 for file in path.rglob("*.memmap"))
    assert _summary(_load("peer", path)) == _summary(theirs)


# --- 8. memmap_like ----------------------------------------------------------------------


def test_memmap_like_folder_loads_in_peer_as_zeros(tmp_path: Path) -> None:
    source = _nested(tclass)
    source.memmap_like(tmp_path / "like")
    loaded = _load("peer", tmp_path / "like")
    # Same keys, shapes and dtypes, zero-filled; the string is written as it is.
    assert _summary(loaded) == _summary(source.apply(torch.zeros_like))
    assert loaded["n", "s"] == "hello"


# --- 9. pickled values -------------------------------------------------------------------


def _set_value(lib: Any) -> Any:
    return lib.TensorDict(
        {"tags": lib.NonTensorData({1, 2}, batch_size=[2]), "x": torch.ones(2)}, batch_size=[2]
    )


def _set_values(lib: Any) -> Any:
    return lib.TensorDict({"tags": lib.NonTensorStack.from_list([{1}, {2, 3}])}, batch_size=[2])


@pytest.mark.parametrize(
    ("build", "pickle_file"), [(_set_value, "other.pickle"), (_set_values, "pickle.pkl")]
)
def test_peer_pickle_needs_allow_pickle(tmp_path: Path, build: Any, pickle_file: str) -> None:
    source = build(tensordict)
    source.memmap(tmp_path / "p")
    assert (tmp_path / "p" / "tags" / pickle_file).is_file()
    with pytest.raises(PickleRefusedError):
        tclass.load_memmap(tmp_path / "p")
    assert _summary(tclass.load_memmap(tmp_path / "p", allow_pickle=True)) == _summary(source)


@pytest.mark.parametrize("build", [_set_value, _set_values])
def test_tclass_pickle_loads_in_peer(tmp_path: Path, build: Any) -> None:
    source = build(tclass)
    source.memmap(tmp_path / "p", allow_pickle=True)
    loaded = tensordict.TensorDict.load_memmap(tmp_path / "p", allow_pickle=True)
    assert _summary(loaded) == _summary(source)
    with pytest.raises(RuntimeError, match="Refusing"):  # the peer's own gate agrees
        tensordict.TensorDict.load_memmap(tmp_path / "p", allow_pickle=False)


# --- 10. autocast records with Python-valued fields ----------------------------------------


@tclass.tensorclass(autocast=True)
class CastInner:
    s: str
    i: int


@tclass.tensorclass(autocast=True)
class CastRec:
    t: torch.Tensor
    name: str
    count: int
    rate: float
    done: bool
    tags: list
    info: dict
    inner: CastInner | None = None
    label: str | None = None
    maybe: int | None = None


@tensordict.tensorclass(autocast=True)
class PeerCastInner:
    __qualname__ = "CastInner"
    s: str
    i: int


@tensordict.tensorclass(autocast=True)
class PeerCastRec:
    __qualname__ = "CastRec"
    t: torch.Tensor
    name: str
    count: int
    rate: float
    done: bool
    tags: list
    info: dict
    inner: PeerCastInner | None = None
    label: str | None = None
    maybe: int | None = None


CAST_CLASSES: dict[str, tuple[Any, Any]] = {
    "tclass": (CastRec, CastInner),
    "peer": (PeerCastRec, PeerCastInner),
}


def _cast_rec(lib: str, shift: int = 0) -> Any:
    rec_cls, inner_cls = CAST_CLASSES[lib]
    inner = inner_cls(s="in", i=7 + shift, batch_size=[2])
    return rec_cls(
        t=torch.zeros(2), name=f"s{shift}", count=3 + shift, rate=1.5, done=bool(shift),
        tags=[1, "x"], info={"k": [1.0]}, inner=inner, label="x", batch_size=[2],
    )  # fmt: skip


def _typed(value: Any) -> Any:
    """``value`` with the type of every part spelled out; the peer's LinkedList (a field
    of stacked records) reads as the list it is."""
    if isinstance(value, (list, tuple)):
        return list if isinstance(value, list) else type(value), [_typed(v) for v in value]
    if isinstance(value, dict):
        return dict, {key: _typed(item) for key, item in value.items()}
    return type(value), value


def _cast_picture(rec: Any) -> dict[str, Any]:
    fields = ["name", "count", "rate", "done", "tags", "info", "label", "maybe"]
    picture = {field: _typed(getattr(rec, field)) for field in fields}
    picture["inner"] = _typed([rec.inner.s, rec.inner.i])
    return picture


def _entry_types(folder: Path) -> dict[str, Any]:
    """What a record's ``_tensordict/meta.json`` says of each entry (tclass's marker left out)."""
    meta = _read_json(folder / "_tensordict" / "meta.json")
    # "inner" names the nested class by its __name__, which the twins do not share.
    return {key: value for key, value in meta.items() if key not in ("_tclass", "inner")}


@pytest.mark.parametrize("layout", ["one", "dense", "lazy"])
@pytest.mark.parametrize(("writer", "reader"), BOTH_WAYS)
def test_autocast_record_values(tmp_path: Path, writer: str, reader: str, layout: str) -> None:
    # Each Python value reads back with its type (a str not as a node's repr, a dict not
    # as {}, an int / float / bool without an error), in either library.
    if layout == "one":
        source = _cast_rec(writer)
    else:
        stack = torch.stack if layout == "dense" else LIBS[writer].lazy_stack
        source = stack([_cast_rec(writer), _cast_rec(writer, shift=1)])
    source.memmap(tmp_path / "r")
    reader_cls = CAST_CLASSES[reader][0]
    loaded = reader_cls.load_memmap(tmp_path / "r")
    assert type(loaded) is reader_cls and type(loaded.inner) is CAST_CLASSES[reader][1]
    assert _cast_picture(loaded) == _cast_picture(source)
    assert loaded.maybe is None and loaded.batch_size == source.batch_size


def test_autocast_records_are_written_alike(tmp_path: Path) -> None:
    for lib in CAST_CLASSES:
        _cast_rec(lib).memmap(tmp_path / lib)
    assert _entry_types(tmp_path / "tclass") == _entry_types(tmp_path / "peer")
    inner = Path("_tensordict", "inner", "_tensordict", "i", "meta.json")
    assert _read_json(tmp_path / "tclass" / inner) == _read_json(tmp_path / "peer" / inner)


def test_a_saved_value_node_says_it_is_memory_mapped_as_the_peer(tmp_path: Path) -> None:
    """A Python-value node saved in a folder (on its own, ``memmap_like``, in a saved or
    loaded collection) and its rows answer ``is_memmap()`` true, as the peer's (its test
    ``test_memmap_stack_updates``); a copy answers false."""
    node = tclass.NonTensorData(3, batch_size=[2])
    assert not node.is_memmap()
    node.memmap_(tmp_path / "own")
    assert node.is_memmap() and node[0].is_memmap() and node[:1].is_memmap()
    assert not node.clone().is_memmap()
    assert tclass.NonTensorData(3).memmap_like(tmp_path / "like").is_memmap()
    stack = tclass.NonTensorStack(tclass.NonTensorData(1), tclass.NonTensorData(2))
    stack.memmap_(tmp_path / "stack")
    assert stack.is_memmap() and stack[0].is_memmap()
    td = tclass.TensorDict(a=torch.zeros(2), v="hello", batch_size=[2])
    td.memmap_(tmp_path / "td")
    assert td.get("v").is_memmap() and td[0].get("v").is_memmap() and td["v"] == "hello"
    loaded = tclass.TensorDict.load_memmap(tmp_path / "td")
    assert loaded.get("v").is_memmap() and loaded.get("v").data == "hello"
    assert not tclass.TensorDict(v="x", batch_size=[]).get("v").is_memmap()
    peer = pytest.importorskip("tensordict")
    theirs = peer.NonTensorData(3, batch_size=[2])
    theirs.memmap_(tmp_path / "peer")
    assert theirs.is_memmap() and theirs[0].is_memmap()
