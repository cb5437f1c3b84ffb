"""Loading damaged, legacy and hostile folders: clear errors in bounded time and memory.

* Legacy folders: data files longer than their dtype and shape need (older writers
  rounded them up to a page) load as a map of the bytes needed, the file untouched; what
  they load still pickles, crosses processes and saves again. ``"device": "None"`` means
  no device; any other device string must parse.
* Hostile small files (``meta.json``, ``other.pickle``, ``json_types.json``,
  ``pickle.pkl``): a directory, a FIFO, a device node, a 16 GiB sparse file or JSON nested
  2,000 deep is a ``TclassError`` naming the file, without blocking or reading it whole.
* Absurd sizes (a NonTensorStack of 2**40 values, an empty leaf of ``[2, 0, 2**63]``, a
  batch size past int64) are refused before anything is allocated.

The cases that would hang or exhaust memory under a broken loader run in a forked child
with a memory cap and an alarm, so a regression fails the test instead of the machine.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import pickle
import resource
import signal
import stat
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import tclass
import tclass._io.memmap._folder as folder_io
import tclass._io.memmap._info as info_io
import tclass._io.memmap._meta_file as meta_file
import tclass._io.memmap._plan as planner
import tclass._io.memmap._values as values_io
from tclass import MemoryMappedTensor, NonTensorData, NonTensorStack, TensorDict
from tclass.__main__ import main
from tclass.errors import (
    MetadataError,
    NotAFileError,
    NotSerializableError,
    TclassError,
    UnsupportedError,
)

GIB16 = 16 << 30
PAGE = 4096


# --- helpers -----------------------------------------------------------------------------


def _snapshot(root: Path) -> dict[str, tuple[int, int, int]]:
    """Every path under ``root`` -> (mode, size, mtime in ns), without reading data."""
    state = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames]:
            info = os.lstat(os.path.join(dirpath, name))
            state[os.path.join(dirpath, name)] = (info.st_mode, info.st_size, info.st_mtime_ns)
    return state


@contextmanager
def _unchanged(root: Path) -> Iterator[None]:
    before = _snapshot(root)
    yield
    assert _snapshot(root) == before


def _edit(meta: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    data = json.loads(meta.read_text())
    edit(data)
    meta.write_text(json.dumps(data))


def _saved(tmp_path: Path, name: str = "td") -> Path:
    td = TensorDict(
        {
            "x": torch.arange(6, dtype=torch.int64).reshape(3, 2),
            "nested": {"y": torch.tensor([0.5, 1.5, 2.5])},
            "label": NonTensorData("pong", batch_size=[3]),
        },
        batch_size=[3],
    )
    td.memmap(tmp_path / name)
    return tmp_path / name


def _pad(path: Path, size: int = PAGE, byte: bytes = b"\xab") -> None:
    """Append junk to ``path`` up to ``size`` bytes (a legacy writer's page rounding)."""
    with open(path, "ab") as file:
        file.write(byte * (size - path.stat().st_size))


def _error(path: Path, **kwargs: Any) -> TclassError:
    with _unchanged(path), pytest.raises(TclassError) as info:
        tclass.load_memmap(path, **kwargs)
    return info.value


def _child_load(path: str, kwargs: dict[str, Any], seconds: int, conn: Any) -> None:
    # Cap the address space at what the process maps now plus 1 GiB: reading a 16 GiB
    # file or an endless device fails fast instead of taking the machine's memory.
    with open("/proc/self/status") as status:
        mapped = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize:"))
    resource.setrlimit(resource.RLIMIT_AS, (mapped + (1 << 30), resource.RLIM_INFINITY))
    signal.alarm(seconds)  # a blocked open or read ends the child
    try:
        tclass.load_memmap(path, **kwargs)
        conn.send(("loaded", "", []))
    except BaseException as error:  # report everything, MemoryError included
        conn.send((type(error).__name__, str(error), [cls.__name__ for cls in type(error).__mro__]))


def _load_in_child(path: Path, seconds: int = 20, **kwargs: Any) -> tuple[str, str, list[str]]:
    """(error class name, message, class names of its MRO) of loading ``path`` in a
    forked child with capped memory and time; the test fails if the child hangs."""
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(target=_child_load, args=(str(path), kwargs, seconds, sender))
    start = time.monotonic()
    child.start()
    try:
        assert receiver.poll(seconds + 10), "the load neither returned nor failed: it blocked"
        result: tuple[str, str, list[str]] = receiver.recv()
    finally:
        child.kill()
        child.join(10)
    assert time.monotonic() - start < seconds
    return result


# --- item 5: legacy data files longer than needed ----------------------------------------


@pytest.mark.parametrize("device", [None, "meta"])
def test_longer_data_file_loads_a_prefix(tmp_path: Path, device: str | None) -> None:
    path = _saved(tmp_path)
    _pad(path / "x.memmap")
    _pad(path / "nested" / "y.memmap", 12 + 1)  # one byte too many
    with _unchanged(path):
        td = tclass.load_memmap(path, device=device)
    assert td["x"].shape == torch.Size([3, 2]) and td["nested", "y"].shape == torch.Size([3])
    if device is None:
        assert torch.equal(td["x"], torch.arange(6).reshape(3, 2))
        assert torch.equal(td["nested", "y"], torch.tensor([0.5, 1.5, 2.5]))
        assert isinstance(td.get("x"), MemoryMappedTensor) and td["x"].filename == str(
            path / "x.memmap"
        )
        assert td["x"].untyped_storage().nbytes() == 48  # only the bytes needed are mapped
    assert (path / "x.memmap").stat().st_size == PAGE


def test_shorter_data_file_is_still_an_error(tmp_path: Path) -> None:
    path = _saved(tmp_path)
    _pad(path / "x.memmap")  # longer: fine
    os.truncate(path / "nested" / "y.memmap", 10)
    err = _error(path)
    assert isinstance(err, ValueError)
    assert "y.memmap" in str(err) and "holds 10 bytes" in str(err) and "need 12 bytes" in str(err)


def test_info_agrees_that_a_longer_file_loads(tmp_path: Path) -> None:
    path = _saved(tmp_path)
    _pad(path / "x.memmap")
    assert info_io.describe(path).problems == []
    os.truncate(path / "x.memmap", 40)
    assert [
        problem
        for problem in info_io.describe(path).problems
        if "x.memmap' holds 40 bytes" in problem
    ]


def _child_reads(payload: bytes, conn: Any) -> None:
    try:
        value = pickle.loads(payload)
        conn.send(
            (
                "ok",
                [leaf.tolist() for leaf in value],
                [leaf.untyped_storage().nbytes() for leaf in value],
            )
        )
    except BaseException as error:
        conn.send((type(error).__name__, str(error), []))


def test_longer_file_pickles_as_the_same_prefix(tmp_path: Path) -> None:
    path = _saved(tmp_path)
    _pad(path / "x.memmap")
    x = tclass.load_memmap(path)["x"]
    views = [x, x[1:], x[:, 1], x[::2]]
    payload = pickle.dumps(views)
    assert len(payload) < 2048  # file references, not data
    again = pickle.loads(payload)
    assert [type(v) for v in again] == [MemoryMappedTensor] * 4
    assert [v.tolist() for v in again] == [v.tolist() for v in views]
    context = multiprocessing.get_context("fork")
    receiver, sender = context.Pipe(duplex=False)
    child = context.Process(target=_child_reads, args=(payload, sender))
    with _unchanged(path):
        child.start()
        assert receiver.poll(30)
        kind, values, nbytes = receiver.recv()
        child.join(10)
    assert kind == "ok", values
    assert values == [v.tolist() for v in views] and nbytes == [48] * 4
    x[0, 0] = 41  # the prefix is still the file's bytes: writes reach it
    assert pickle.loads(payload)[0][0, 0] == 41


def test_exact_file_reference_still_refuses_a_longer_file(tmp_path: Path) -> None:
    # Only a reference taken from a prefix map accepts a longer file: one of an exact
    # file whose file later grew is stale.
    path = _saved(tmp_path)
    payload = pickle.dumps(tclass.load_memmap(path)["x"])
    _pad(path / "x.memmap")
    with pytest.raises(TclassError, match="holds 4096 bytes"):
        pickle.loads(payload)


@pytest.mark.parametrize("how", ["memmap_", "memmap", "save"])
def test_resaving_a_longer_file_in_place_writes_it_exact(tmp_path: Path, how: str) -> None:
    path = _saved(tmp_path)
    _pad(path / "x.memmap")
    td = tclass.load_memmap(path)
    old_x = td["x"]
    saved = getattr(td, how)(path)
    assert (path / "x.memmap").stat().st_size == 48
    assert (path / "nested" / "y.memmap").stat().st_size == 12
    target = td if how == "memmap_" else saved
    assert torch.equal(target["x"], torch.arange(6).reshape(3, 2))
    assert torch.equal(old_x, torch.arange(6).reshape(3, 2))  # the old map stays valid
    target["x"][2, 1] = 50
    assert tclass.load_memmap(path)["x"][2, 1] == 50
    pickle.loads(pickle.dumps(target["x"]))  # an exact file reference again


def _set_devices(value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(meta: dict[str, Any]) -> None:
        meta["device"] = value
        for entry in meta.values():
            if isinstance(entry, dict) and "dtype" in entry:
                entry["device"] = value

    return edit


def test_device_none_string_means_no_device(tmp_path: Path) -> None:
    path = _saved(tmp_path)
    for meta in (path / "meta.json", path / "nested" / "meta.json"):
        _edit(meta, _set_devices("None"))
    td = _load_unchanged(path)
    assert td.device is None and td.get("nested").device is None
    assert torch.equal(td["x"], torch.arange(6).reshape(3, 2))
    assert tclass.load_memmap(path, device="cpu").device == torch.device("cpu")


def _load_unchanged(path: Path, **kwargs: Any) -> Any:
    with _unchanged(path):
        return tclass.load_memmap(path, **kwargs)


def _set_node_device(value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda meta: meta.__setitem__("device", value)


def _set_leaf_device(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda meta: meta[key].__setitem__("device", value)


BAD_DEVICES = {
    "node-unknown": ("meta.json", _set_node_device("banana")),
    "node-bad-index": ("meta.json", _set_node_device("cuda:x")),
    "node-number": ("meta.json", _set_node_device(3)),
    "leaf-unknown": ("meta.json", _set_leaf_device("x", "gpu0")),
    "leaf-list": ("meta.json", _set_leaf_device("x", ["cpu"])),
    "nested-leaf": ("nested/meta.json", _set_leaf_device("y", "cpu:cpu")),
    "nested-node": ("nested/meta.json", _set_node_device("")),
}


@pytest.mark.parametrize("meta_name, edit", BAD_DEVICES.values(), ids=list(BAD_DEVICES))
def test_bad_device_is_an_error_naming_the_file(tmp_path: Path, meta_name: str, edit: Any) -> None:
    path = _saved(tmp_path)
    _edit(path / meta_name, edit)
    err = _error(path)
    assert (
        isinstance(err, MetadataError)
        and str(path / meta_name) in str(err)
        and "device" in str(err)
    )


def test_known_devices_load(tmp_path: Path) -> None:
    # A device this machine lacks is still a device: the leaves are mapped on the CPU.
    path = _saved(tmp_path)
    _edit(path / "meta.json", _set_devices("cuda:3"))
    _edit(path / "nested" / "meta.json", _set_devices(None))
    td = _load_unchanged(path)
    assert td.device == torch.device("cpu") and td.get("nested").device is None


# --- item 7: hostile small files ---------------------------------------------------------


@pytest.mark.parametrize("meta_name", ["meta.json", "nested/meta.json", "label/meta.json"])
def test_meta_json_directory(tmp_path: Path, meta_name: str) -> None:
    path = _saved(tmp_path)
    (path / meta_name).unlink()
    (path / meta_name).mkdir()
    err = _error(path)
    assert isinstance(err, NotAFileError) and str(path / meta_name) in str(err)
    assert "directory" in str(err)


def test_meta_json_fifo_does_not_block(tmp_path: Path) -> None:
    path = _saved(tmp_path)
    (path / "nested" / "meta.json").unlink()
    os.mkfifo(path / "nested" / "meta.json")
    # With a writer holding the FIFO open, a read would wait for data forever.
    keep_open = os.open(path / "nested" / "meta.json", os.O_RDWR | os.O_NONBLOCK)
    try:
        name, message, mro = _load_in_child(path)
    finally:
        os.close(keep_open)
    assert (
        "NotAFileError" in mro
        and str(path / "nested" / "meta.json") in message
        and "FIFO" in message
    )


def test_meta_json_device_node(tmp_path: Path) -> None:
    path = _saved(tmp_path)
    meta = path / "meta.json"
    meta.unlink()
    try:
        os.mknod(meta, 0o600 | stat.S_IFCHR, os.makedev(1, 5))  # /dev/zero: endless zeros
    except PermissionError:
        pytest.skip("this process may not create device nodes")
    name, message, mro = _load_in_child(path)
    assert "NotAFileError" in mro and str(meta) in message and "device" in message


def test_huge_sparse_meta_json(tmp_path: Path) -> None:
    path = _saved(tmp_path)
    os.truncate(path / "nested" / "meta.json", GIB16)  # sparse: no disk used
    name, message, mro = _load_in_child(path)
    assert "MetadataError" in mro and str(path / "nested" / "meta.json") in message
    assert str(GIB16) in message and "refused" in message


def test_small_file_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A file of exactly the limit is read (and fails as JSON, not as too big); one byte
    # more is refused. The limit is lowered here to keep the test small.
    monkeypatch.setattr(folder_io, "MAX_FILE_BYTES", 1 << 20)
    path = _saved(tmp_path)
    os.truncate(path / "label" / "meta.json", 1 << 20)
    err = _error(path)
    assert isinstance(err, MetadataError) and "not valid JSON" in str(err)
    os.truncate(path / "label" / "meta.json", (1 << 20) + 1)
    err = _error(path)
    assert isinstance(err, MetadataError) and "1048577 bytes" in str(err) and "refused" in str(err)


def test_saving_a_file_past_the_limit_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # tclass never writes what it would refuse to read.
    monkeypatch.setattr(planner, "MAX_FILE_BYTES", 1 << 10)
    monkeypatch.setattr(values_io, "MAX_FILE_BYTES", 1 << 10)
    names = TensorDict(
        {"s": NonTensorStack.from_list([f"name-{i}" for i in range(200)])}, batch_size=[200]
    )
    with pytest.raises(NotSerializableError, match=r"'s/meta.json'.* refused"):
        names.memmap(tmp_path / "big")
    sets = TensorDict({"s": NonTensorStack.from_list([{i} for i in range(200)])}, batch_size=[200])
    with pytest.raises(NotSerializableError, match="refused"):
        sets.memmap(tmp_path / "big", allow_pickle=True)
    assert not (tmp_path / "big").exists()
    TensorDict({"s": NonTensorStack.from_list(["a", "b"])}, batch_size=[2]).memmap(
        tmp_path / "small"
    )


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("where", ["node", "value", "values", "marker"])
def test_deeply_nested_json(tmp_path: Path, where: str) -> None:
    path = _saved(tmp_path)
    deep = json.loads(_deep(100))  # fine for json itself at 100
    if where == "node":
        target = path / "nested" / "meta.json"
        text = target.read_text()[:-1] + ', "junk": ' + _deep(2000) + "}"
    elif where == "value":
        target = path / "label" / "meta.json"
        text = target.read_text().replace('"pong"', _deep(2000))
    elif where == "values":
        td = TensorDict({"s": NonTensorStack.from_list([deep, "b"])}, batch_size=[2])
        td.memmap(tmp_path / "stack")
        path, target = tmp_path / "stack", tmp_path / "stack" / "s" / "meta.json"
        text = target.read_text().replace(json.dumps(deep, separators=(",", ":")), _deep(2000))
    else:
        target = path / "meta.json"
        text = target.read_text()[:-1] + ', "_tclass": {"x": ' + _deep(2000) + "}}"
    target.write_text(text)
    err = _error(path)
    assert isinstance(err, MetadataError) and str(target) in str(err) and "deep" in str(err)


def test_brackets_inside_strings_do_not_count(tmp_path: Path) -> None:
    values = ["[" * 3000, "{" * 3000 + '"\\', [[["x"]]]]
    td = TensorDict(
        {"s": NonTensorStack.from_list(values), "t": NonTensorData("]" * 5000, batch_size=[3])}, [3]
    )
    td.memmap(tmp_path / "td")
    loaded = _load_unchanged(tmp_path / "td")
    assert loaded.get("s").tolist() == values and loaded.get("t").data == "]" * 5000


def _nesting(raw: str) -> int:
    """The depth of ``raw``'s [ and { outside strings, by a plain scan."""
    depth = deepest = 0
    in_string = escaped = False
    for char in raw:
        if in_string:
            escaped, in_string = (False, True) if escaped else (char == "\\", char != '"')
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


_JSON_TEXT = st.sampled_from(["", "a", "[", "}", '"', "\\", '\\"', "{[]}", "x]["])
_JSON_VALUES = st.recursive(
    st.none() | st.integers() | _JSON_TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_JSON_TEXT, inner, max_size=3),
    max_leaves=60,
)


@settings(max_examples=300, deadline=None)
@given(_JSON_VALUES, st.sampled_from([0, 1, 2, 3, 8, 16, 17, 40]))
def test_the_depth_check_counts_what_nests(value: Any, limit: int) -> None:
    raw = json.dumps(value)
    assert meta_file.json_depth_over(raw.encode(), limit) == (_nesting(raw) > limit)


def test_legitimately_nested_values_load(tmp_path: Path) -> None:
    # About the deepest value tclass writes as JSON (101 levels of lists), in a 3-d stack.
    deep = json.loads(_deep(98))
    td = TensorDict({"s": NonTensorStack(deep, deep)}, batch_size=[2])
    td = tclass.stack([td, td]).unsqueeze(0)
    td.memmap(tmp_path / "td")
    assert _load_unchanged(tmp_path / "td").get("s").tolist() == [[[deep, deep], [deep, deep]]]


def _value_without_data(path: Path) -> Path:
    _edit(path / "label" / "meta.json", lambda meta: meta.pop("data"))
    return path / "label"


def _stack_in_pickle(tmp_path: Path) -> Path:
    td = TensorDict({"s": NonTensorStack.from_list([{1: "a"}, {2: "b"}])}, batch_size=[2])
    td.memmap(tmp_path / "stack", allow_pickle=True)
    return tmp_path / "stack"


def _small_file_case(tmp_path: Path, name: str) -> tuple[Path, Path, dict[str, Any]]:
    """(folder to load, the small file to damage, load kwargs)."""
    if name == "pickle.pkl":
        root = _stack_in_pickle(tmp_path)
        return root, root / "s" / "pickle.pkl", {"allow_pickle": True}
    root = _saved(tmp_path)
    node = _value_without_data(root)
    (node / "other.pickle").write_bytes(pickle.dumps({"data": "pong"}))
    if name == "json_types.json":  # read even without allow_pickle
        (node / "json_types.json").write_text('{"types": {}}')
        return root, node / "json_types.json", {}
    return root, node / "other.pickle", {"allow_pickle": True}


SMALL_FILES = ["other.pickle", "json_types.json", "pickle.pkl"]


@pytest.mark.parametrize("name", SMALL_FILES)
def test_huge_sparse_value_file(tmp_path: Path, name: str) -> None:
    root, target, kwargs = _small_file_case(tmp_path, name)
    os.truncate(target, GIB16)
    kind, message, mro = _load_in_child(root, **kwargs)
    assert "MetadataError" in mro and str(target) in message and str(GIB16) in message


def test_huge_other_pickle_beside_a_sidecar_is_not_read(tmp_path: Path) -> None:
    root, target, _ = _small_file_case(tmp_path, "json_types.json")
    os.truncate(target.parent / "other.pickle", GIB16)  # hashed for the sidecar: read whole
    kind, message, mro = _load_in_child(root)
    assert "MetadataError" in mro and "other.pickle" in message and "refused" in message


@pytest.mark.parametrize("name", SMALL_FILES)
def test_value_file_directory_or_fifo(tmp_path: Path, name: str) -> None:
    root, target, kwargs = _small_file_case(tmp_path, name)
    target.unlink()
    target.mkdir()
    err = _error(root, **kwargs)
    assert isinstance(err, NotAFileError) and str(target) in str(err)
    target.rmdir()
    os.mkfifo(target)
    kind, message, mro = _load_in_child(root, **kwargs)
    assert "NotAFileError" in mro and str(target) in message


def test_deep_json_types_sidecar(tmp_path: Path) -> None:
    root, target, _ = _small_file_case(tmp_path, "json_types.json")
    target.write_text('{"types": ' + _deep(2000) + "}")
    err = _error(root)
    assert isinstance(err, MetadataError) and str(target) in str(err) and "deep" in str(err)


# --- item 8: absurd sizes, refused before any allocation ---------------------------------


def test_non_tensor_stack_batch_larger_than_its_data(tmp_path: Path) -> None:
    td = TensorDict({"s": NonTensorStack.from_list(["a", "b"])}, batch_size=[2])
    td.memmap(tmp_path / "td")
    meta = tmp_path / "td" / "s" / "meta.json"
    _edit(meta, lambda m: m["_tclass"].__setitem__("batch_size", [2**40]))
    err = _error(tmp_path / "td")
    assert isinstance(err, MetadataError) and str(meta) in str(err)
    assert "[1099511627776]" in str(err)
    _edit(meta, lambda m: m["_tclass"].__setitem__("batch_size", [0, 2**70]))
    _edit(meta, lambda m: m.__setitem__("data", []))
    err = _error(tmp_path / "td")
    assert isinstance(err, MetadataError) and str(meta) in str(err)


EMPTY_SHAPES = {
    "dim-2**63": [3, 0, 2**63],
    "dim-2**64": [3, 0, 2**64],
    "product-overflows": [3, 0, 2**62, 4],
    "stride-overflows": [3, 0, 2**63 - 1, 2],
}


@pytest.mark.parametrize("shape", EMPTY_SHAPES.values(), ids=list(EMPTY_SHAPES))
@pytest.mark.parametrize("device", [None, "meta"])
def test_empty_leaf_with_unrepresentable_shape(
    tmp_path: Path, shape: list[int], device: str | None
) -> None:
    td = TensorDict({"e": torch.zeros(3, 0)}, batch_size=[3])
    td.memmap(tmp_path / "td")
    _edit(tmp_path / "td" / "meta.json", lambda m: m["e"].__setitem__("shape", shape))
    err = _error(tmp_path / "td", device=device)
    assert isinstance(err, MetadataError) and str(tmp_path / "td" / "meta.json") in str(err)
    assert "'e'" in str(err) and str(shape) in str(err)


def test_empty_leaf_with_large_representable_shape_loads(tmp_path: Path) -> None:
    td = TensorDict({"e": torch.zeros(3, 0)}, batch_size=[3])
    td.memmap(tmp_path / "td")
    _edit(tmp_path / "td" / "meta.json", lambda m: m["e"].__setitem__("shape", [3, 0, 2**40]))
    assert _load_unchanged(tmp_path / "td")["e"].shape == torch.Size([3, 0, 2**40])


@pytest.mark.parametrize("batch", [[2**63], [2**62, 4], [2**64, 0]])
def test_node_batch_past_int64(tmp_path: Path, batch: list[int]) -> None:
    TensorDict({}, batch_size=[3]).memmap(tmp_path / "td")
    _edit(tmp_path / "td" / "meta.json", lambda m: m.__setitem__("shape", batch))
    err = _error(tmp_path / "td")
    assert isinstance(err, MetadataError) and str(tmp_path / "td" / "meta.json") in str(err)
    assert str(batch) in str(err)


@pytest.mark.parametrize("shape", [[2**61, 2], [2**62, 4], [2**64]])
def test_leaf_bytes_past_the_file(tmp_path: Path, shape: list[int]) -> None:
    # A non-empty leaf is bounded by its file: byte counts past int64 are just too big.
    path = _saved(tmp_path)
    _edit(path / "meta.json", lambda m: m.__setitem__("shape", []))
    _edit(path / "meta.json", lambda m: m["x"].__setitem__("shape", shape))
    _edit(path / "meta.json", lambda m: [m.pop(k) for k in ("nested", "label")])
    err = _error(path)
    assert isinstance(err, ValueError) and "x.memmap" in str(err) and "holds 48 bytes" in str(err)


def test_lazy_stack_dim_out_of_range(tmp_path: Path) -> None:
    stack = tclass.lazy_stack(
        [TensorDict({"a": torch.ones(2)}, [2]), TensorDict({"a": torch.ones(2)}, [2])]
    )
    stack.memmap(tmp_path / "lazy")
    for bad in (2, -4, 2**70):
        _edit(tmp_path / "lazy" / "meta.json", lambda m, bad=bad: m.__setitem__("stack_dim", bad))
        err = _error(tmp_path / "lazy")
        assert isinstance(err, MetadataError) and str(tmp_path / "lazy" / "meta.json") in str(err)
        assert "stack_dim" in str(err)


# --- trees nested too deep -----------------------------------------------------------------


def _chain(root: Path, depth: int) -> None:
    """A TensorDict folder holding one TensorDict ``n`` in another, ``depth`` folders
    below ``root`` (made through descriptors: the path outgrows PATH_MAX)."""
    node = {"_type": "<class 'tensordict._td.TensorDict'>", "_format_version": 1}
    node |= {"_class": "tensordict:TensorDict", "shape": [], "device": None}
    inner = json.dumps({**node, "n": {"type": "<class 'tensordict._td.TensorDict'>"}}).encode()
    root.mkdir()
    fd = os.open(root, os.O_RDONLY)
    try:
        for level in range(depth + 1):
            meta = os.open("meta.json", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
            os.write(meta, inner if level < depth else json.dumps(node).encode())
            os.close(meta)
            if level < depth:
                os.mkdir("n", dir_fd=fd)
                child = os.open("n", os.O_RDONLY, dir_fd=fd)
                os.close(fd)
                fd = child
    finally:
        os.close(fd)


@pytest.mark.parametrize("depth", [101, 400])
def test_folders_nested_too_deep(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], depth: int
) -> None:
    # A crafted chain of folders is refused by its depth, by load_memmap and by info
    # alike, rather than by Python's recursion limit (a RecursionError, no TclassError).
    _chain(tmp_path / "deep", depth)
    err = _error(tmp_path / "deep")
    assert isinstance(err, MetadataError)
    assert f"{str(tmp_path / 'deep')!r} holds folders nested more than 100 levels" in str(err)
    assert len(str(err)) < 300
    assert main(["info", str(tmp_path / "deep")]) == 1
    assert capsys.readouterr().err.startswith(f"error: {err}")


def test_the_deepest_tree_loads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _chain(tmp_path / "deep", 100)
    loaded = tclass.load_memmap(tmp_path / "deep")
    assert ("n",) * 100 in loaded.keys(include_nested=True)
    assert main(["info", str(tmp_path / "deep")]) == 0


@tclass.tensorclass
class Chain:
    x: torch.Tensor
    next: Chain | None = None


def test_saving_a_tree_too_deep_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # What is saved loads: a tree deeper than the reader reads is refused when saved.
    deepest = TensorDict(x=torch.zeros(1), batch_size=[])
    for _ in range(100):
        deepest = TensorDict(n=deepest, batch_size=[])
    deepest.memmap(tmp_path / "deepest")
    assert tclass.load_memmap(tmp_path / "deepest").keys(include_nested=True)
    with pytest.raises(UnsupportedError, match="nested more than 100 folders"):
        TensorDict(n=deepest, batch_size=[]).memmap(tmp_path / "deeper")
    assert not (tmp_path / "deeper").exists()
    # Records take two folders a level (their own and _tensordict/); 50 levels load.
    chain = Chain(x=torch.zeros(1))
    for _ in range(49):
        chain = Chain(x=torch.zeros(1), next=chain)
    chain.memmap(tmp_path / "records")
    assert isinstance(tclass.load_memmap(tmp_path / "records"), Chain)
    assert main(["info", str(tmp_path / "records")]) == 0
    with pytest.raises(UnsupportedError, match="a record takes two"):
        Chain(x=torch.zeros(1), next=chain).memmap(tmp_path / "more")
