"""A load keeps what it learned from a ``meta.json``'s bytes (``_read_cache``): the next
load of the same bytes skips decoding and checking them, never the files. Each check a
load makes of a leaf's file holds after a cached load as before it, with the same error;
a class, option or byte that differs is compared again; what the caller gets is never
shared between loads; errors are not kept; the cache is bounded."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

import tclass
import tclass._io.memmap._read as read_io
import tclass._io.memmap._read_cache as cache
from tclass import MemoryMappedTensor, TensorDict
from tclass.errors import (
    FileFormatError,
    MetadataError,
    MissingFileError,
    NotAFileError,
    SchemaMismatchError,
    TclassError,
    UnsafePathError,
)


@tclass.tensorclass
class Pair:
    a: torch.Tensor
    b: torch.Tensor


@pytest.fixture(autouse=True)
def _fresh_cache() -> Iterator[None]:
    cache.clear()
    yield
    cache.clear()


def _pair(path: Path) -> Path:
    Pair(a=torch.arange(6.0).reshape(3, 2), b=torch.arange(3), batch_size=[3]).memmap(path)
    return path


def _raw(path: Path) -> bytes:
    return (path / "meta.json").read_bytes()


def _no_checked_way(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any) -> Any:
        raise AssertionError("the checked way ran: the kept plan was not used")

    monkeypatch.setattr(read_io, "_checked_td", refuse)


def test_second_load_takes_the_kept_plan_and_loads_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _pair(tmp_path / "p")
    first = Pair.load_memmap(path)
    assert cache.cached_header(_raw(path / "_tensordict")) is not None
    assert cache.cached_header(_raw(path)) is not None  # a record with no value fields
    _no_checked_way(monkeypatch)
    second = Pair.load_memmap(path)
    assert (first == second).all()
    for key in ("a", "b"):
        leaf = second._tensordict[key]
        assert isinstance(leaf, MemoryMappedTensor)
        assert leaf.filename == str(path / "_tensordict" / f"{key}.memmap")
        assert leaf is not first._tensordict[key]
    second.a[0, 0] = 42.0  # written through to the file, as without the cache
    assert Pair.load_memmap(path).a[0, 0] == 42.0


def test_a_first_load_checks_the_bytes_once_and_maps_as_a_kept_plan(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The first load of a node of plain leaves plans it from its bytes (each entry's
    # checks and the comparison with the class, once) and maps that plan: no checked way.
    path = _pair(tmp_path / "p")
    td_path = tmp_path / "t"
    TensorDict({"x y": torch.ones(2, 3), "z": torch.zeros(2)}, batch_size=[2]).memmap(td_path)
    _no_checked_way(monkeypatch)
    first = Pair.load_memmap(path)
    assert first.a.tolist() == [[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]] and first.b.tolist() == [
        0,
        1,
        2,
    ]
    assert isinstance(first._tensordict["a"], MemoryMappedTensor)
    header = cache.cached_header(_raw(path / "_tensordict"))
    assert header is not None
    plans = cache.node_plans(header[0])
    assert plans is not None and [type(plan) for plan in plans.values()] == [cache.NodePlan]
    loaded = TensorDict.load_memmap(td_path)
    assert list(loaded.keys()) == ["x y", "z"] and loaded["x y"].shape == (2, 3)


def test_a_first_load_of_a_node_that_needs_more_takes_the_checked_way(tmp_path: Path) -> None:
    # An empty leaf or a nested node is not a plain leaf: the node is loaded the checked
    # way, and so are its next loads (None kept for it).
    path = tmp_path / "t"
    TensorDict(
        {"e": torch.ones(2, 0), "n": TensorDict({"x": torch.ones(2)}, [2])}, batch_size=[2]
    ).memmap(path)
    for _ in range(2):
        loaded = TensorDict.load_memmap(path)
        assert loaded["e"].shape == (2, 0) and loaded["n", "x"].tolist() == [1.0, 1.0]
    header = cache.cached_header(_raw(path))
    plans = cache.node_plans(header[0]) if header is not None else None
    assert plans is not None and list(plans.values()) == [None]


def test_a_td_with_names_and_a_key_needing_escape(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    td = TensorDict({"x y": torch.ones(2, 3), "z": torch.zeros(2)}, batch_size=[2], names=["n"])
    td.memmap(tmp_path / "t")
    first = TensorDict.load_memmap(tmp_path / "t")
    _no_checked_way(monkeypatch)
    second = TensorDict.load_memmap(tmp_path / "t")
    assert second.names == first.names == ["n"]
    assert list(second.keys()) == ["x y", "z"] and (second == td).all()


def _short(leaf: Path, tmp_path: Path) -> None:
    os.truncate(leaf, 4)


def _link_out(leaf: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.memmap"
    outside.write_bytes(leaf.read_bytes())
    leaf.unlink()
    leaf.symlink_to(outside)


def _gone(leaf: Path, tmp_path: Path) -> None:
    leaf.unlink()


def _fifo(leaf: Path, tmp_path: Path) -> None:
    leaf.unlink()
    os.mkfifo(leaf)


def _folder(leaf: Path, tmp_path: Path) -> None:
    leaf.unlink()
    leaf.mkdir()


def _load_error(path: Path) -> TclassError:
    def stuck(*args: Any) -> None:
        raise AssertionError("the load blocked")

    old = signal.signal(signal.SIGALRM, stuck)
    signal.alarm(10)
    try:
        Pair.load_memmap(path)
    except TclassError as error:
        return error
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    raise AssertionError("the damaged folder loaded")


@pytest.mark.parametrize(
    ("damage", "kind"),
    [
        (_short, FileFormatError),
        (_link_out, UnsafePathError),
        (_gone, MissingFileError),
        (_fifo, NotAFileError),
        (_folder, NotAFileError),
    ],
)
def test_each_file_check_holds_after_a_cached_load(
    tmp_path: Path, damage: Callable[[Path, Path], None], kind: type[TclassError]
) -> None:
    path = _pair(tmp_path / "p")
    Pair.load_memmap(path)
    damage(path / "_tensordict" / "b.memmap", tmp_path)
    cached = _load_error(path)
    assert cache.cached_header(_raw(path / "_tensordict")) is not None  # the plan was there
    cache.clear()
    fresh = _load_error(path)
    assert isinstance(cached, kind)
    assert type(cached) is type(fresh) and str(cached) == str(fresh)


def test_options_are_compared_again(tmp_path: Path) -> None:
    path = _pair(tmp_path / "p")
    Pair.load_memmap(path)
    content = path / "_tensordict"
    meta = json.loads(_raw(content))
    meta["c"] = meta["b"]  # a field Pair does not declare
    (content / "meta.json").write_text(json.dumps(meta))
    (content / "c.memmap").write_bytes((content / "b.memmap").read_bytes())
    for _ in range(2):
        with pytest.raises(SchemaMismatchError, match="Pair.c is in the folder"):
            Pair.load_memmap(path)  # strict: c is extra
        loose = Pair.load_memmap(path, strict=False)  # c left out, each time
        assert set(loose._tensordict.keys()) == {"a", "b"}
    loaded = TensorDict.load_memmap(content)  # the same bytes, as a plain TensorDict
    assert set(loaded.keys()) == {"a", "b", "c"}


def test_changed_bytes_are_read_again(tmp_path: Path) -> None:
    path = tmp_path / "t"
    TensorDict({"x": torch.ones(2)}, batch_size=[2]).memmap(path)
    loaded = TensorDict.load_memmap(path)
    loaded["y"] = torch.zeros(2)  # written through: the folder's meta.json changes
    again = TensorDict.load_memmap(path)
    assert set(again.keys()) == {"x", "y"}
    meta = json.loads(_raw(path))
    meta["x"]["dtype"] = "torch.float64"  # 16 bytes needed, 8 there
    (path / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(FileFormatError, match="x.memmap"):
        TensorDict.load_memmap(path)


def test_a_failed_check_is_not_kept(tmp_path: Path) -> None:
    path = tmp_path / "t"
    TensorDict({"x": torch.ones(2)}, batch_size=[2]).memmap(path)
    meta = json.loads(_raw(path))
    meta["x"]["dtype"] = "torch.float33"
    (path / "meta.json").write_text(json.dumps(meta))
    for _ in range(2):
        with pytest.raises(MetadataError, match="float33"):
            TensorDict.load_memmap(path)
    header = cache.cached_header(_raw(path))  # decoded: the header itself is fine
    assert header is not None and cache.node_plans(header[0]) == {}  # no plan kept


def test_value_fields_of_a_record_are_not_shared(tmp_path: Path) -> None:
    @tclass.tensorclass
    class Tagged:
        a: torch.Tensor
        tags: list[str]

    path = tmp_path / "r"
    Tagged(a=torch.ones(2), tags=["x"], batch_size=[2]).memmap(path)
    root = json.loads(_raw(path))
    root["tags"] = ["x"]  # where an older writer kept a value field
    (path / "meta.json").write_text(json.dumps(root))
    (path / "_tensordict" / "tags").rename(tmp_path / "moved")
    meta = json.loads(_raw(path / "_tensordict"))
    del meta["tags"]
    (path / "_tensordict" / "meta.json").write_text(json.dumps(meta))
    first = Tagged.load_memmap(path)
    assert cache.cached_header(_raw(path)) is None  # its values reach the record
    first.tags.append("y")
    assert Tagged.load_memmap(path).tags == ["x"]


def test_the_cache_is_bounded(tmp_path: Path) -> None:
    for i in range(80):
        path = tmp_path / f"t{i}"
        TensorDict({f"k{i}": torch.ones(1)}, batch_size=[1]).memmap(path)
        TensorDict.load_memmap(path)
    kept = [i for i in range(80) if cache.cached_header(_raw(tmp_path / f"t{i}")) is not None]
    assert 0 < len(kept) <= 64 and kept[-1] == 79


def test_the_mode_applies_to_a_cached_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _pair(tmp_path / "p")
    Pair.load_memmap(path)
    _no_checked_way(monkeypatch)
    private = Pair.load_memmap(path, mode="r")
    private.a[0, 0] = 7.0  # copy-on-write: the file keeps its value
    shared = Pair.load_memmap(path, mode="r+")
    assert private.a[0, 0] == 7.0 and shared.a[0, 0] == 0.0
    shared.b[1] = 9
    assert Pair.load_memmap(path).b[1] == 9


def test_members_of_a_lazy_stack_share_one_plan(tmp_path: Path) -> None:
    members = [
        Pair(a=torch.full((2,), float(i)), b=torch.arange(1), batch_size=[]) for i in range(3)
    ]
    records = tclass.lazy_stack(members)
    records.memmap(tmp_path / "s")
    for _ in range(2):
        back = tclass.load_memmap(tmp_path / "s")
        assert [float(m.a[0]) for m in back.unbind(0)] == [0.0, 1.0, 2.0]


def test_a_report_or_meta_load_keeps_no_plan(tmp_path: Path) -> None:
    path = _pair(tmp_path / "p")
    shapes = Pair.load_memmap(path, device="meta")
    assert shapes.a.device.type == "meta"
    header = cache.cached_header(_raw(path / "_tensordict"))
    assert header is not None and cache.node_plans(header[0]) == {}
    os.truncate(path / "_tensordict" / "a.memmap", 4)
    with pytest.raises(FileFormatError, match="a.memmap"):
        Pair.load_memmap(path, device="meta")  # the sizes are still checked


def _outcome(path: Path) -> object:
    cache.clear()
    try:
        loaded = TensorDict.load_memmap(path)
    except TclassError as error:
        return (type(error), str(error))
    return {key: (value.dtype, tuple(value.shape)) for key, value in loaded.items()}


@pytest.mark.parametrize(
    "edit",
    [
        lambda meta: meta.update(zz=3),  # an unexpected entry after the leaves
        lambda meta: meta.update({"zz": 3, "w": {"bad": 1}}),
        lambda meta: meta["x"].update(shape=[2, -1]),
        lambda meta: meta["x"].update(shape=[2, True]),
        lambda meta: meta["x"].update(shape=[2, 0]),
        lambda meta: meta["x"].update(shape=[2, 4.0]),  # equal to 4, not an int
        lambda meta: meta.update(x={**meta["x"], "dtype": 3}, zz=3),  # a bad leaf, then more
        lambda meta: meta["x"].update(dtype="torch.float99"),
        lambda meta: meta["x"].update(type="TensorDict"),  # a sub-folder that is not there
        lambda meta: meta["x"].update(shape=[3, 4]),  # not under the batch size
        lambda meta: meta["x"].update(shape="2"),
        lambda meta: meta["x"].update(device=["cpu"]),
        lambda meta: meta["x"].update(is_nested=None),
        lambda meta: meta.update(_tclass=[1]),
        lambda meta: meta.update(_tclass={"escaped_keys": True}),
        lambda meta: None,  # as saved
    ],
)
def test_a_first_load_has_the_checked_way_verdict(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, edit: Callable[[dict[str, Any]], None]
) -> None:
    # The first load walks a node's entries once, planning and checking them together;
    # whatever it meets, the result (or error) is the checked way's.
    path = tmp_path / "t"
    TensorDict({"x": torch.ones(2, 4), "shape": torch.zeros(2)}, batch_size=[2]).memmap(path)
    meta = json.loads(_raw(path))
    edit(meta)
    (path / "meta.json").write_text(json.dumps(meta))
    planned = _outcome(path)
    monkeypatch.setattr(read_io, "_first_plan", lambda *args: None)
    assert planned == _outcome(path)
