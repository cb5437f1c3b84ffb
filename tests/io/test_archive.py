"""Single-file archives (``.tdz``): the peer's 0.15 archive format, a zip file holding the
saved folder's files, tensor payloads stored uncompressed at 64-byte boundaries so that
loading maps the archive once and every leaf is a view into it.

``save(path.tdz)`` / ``save(path, archive=True)`` write one; ``load_memmap`` reads it (a
copy-on-write mapping unless ``mode="r+"``); ``pack_memmap`` / ``unpack_memmap`` convert
between a folder and an archive; ``is_memmap_archive`` tells them apart. Loading an
archive is as strict as loading a folder: nothing is unpickled unasked, entries that
would leave the archive or disagree with their ``meta.json`` are refused, and the file is
never changed by a load.
"""

from __future__ import annotations

import errno
import os
import random
import re
import shutil
import struct
import sys
import warnings
import zipfile
from pathlib import Path
from typing import Any

import pytest
import torch

import tclass
from tclass import NonTensorData, TensorClass, TensorDict, tensorclass
from tclass.__main__ import main
from tclass.errors import TclassError

from strategies import python_value  # noqa: E402

_LOCAL_HEADER = struct.Struct("<4s5H3I2H")


def sample() -> TensorDict:
    return TensorDict(
        {
            "obs": torch.arange(4 * 3 * 5, dtype=torch.uint8).view(4, 3, 5),
            "reward": torch.arange(4, dtype=torch.float64),
            "nested": {
                "done": torch.tensor([True, False, True, False]),
                "i": torch.arange(8).view(4, 2),
            },
            "label": NonTensorData("pong", batch_size=[4]),
        },
        batch_size=[4],
    )


class Inner(TensorClass):
    z: torch.Tensor


@tensorclass
class Record:
    x: torch.Tensor
    inner: Inner
    name: str = "r"


def record() -> Record:
    return Record(
        x=torch.rand(3, 2), inner=Inner(z=torch.arange(3), batch_size=[3]), batch_size=[3]
    )


def same(a: Any, b: Any) -> bool:
    return bool((a == b).all())


def payload_offsets(path: Path) -> dict[str, int]:
    """Where each entry's data starts, from its local header."""
    offsets = {}
    with zipfile.ZipFile(path) as archive, open(path, "rb") as raw:
        for info in archive.infolist():
            raw.seek(info.header_offset)
            fields = _LOCAL_HEADER.unpack(raw.read(_LOCAL_HEADER.size))
            name_len, extra_len = fields[-2], fields[-1]
            offsets[info.filename] = info.header_offset + _LOCAL_HEADER.size + name_len + extra_len
    return offsets


# --- writing ------------------------------------------------------------------------------


def test_a_tdz_suffix_writes_one_archive_file(tmp_path: Path) -> None:
    saved = sample().save(tmp_path / "data.tdz")
    path = tmp_path / "data.tdz"
    assert path.is_file() and tclass.is_memmap_archive(path)
    assert same(saved, sample())
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
        assert archive.testzip() is None  # checksums valid
    assert names[0] == "meta.json"  # metadata ahead of the payload, at every level
    assert {
        "obs.memmap",
        "reward.memmap",
        "nested/meta.json",
        "nested/done.memmap",
        "label/meta.json",
    } <= set(names)
    assert names.index("nested/meta.json") < names.index("nested/done.memmap")
    assert [p.name for p in tmp_path.iterdir()] == ["data.tdz"]  # no staging left


def test_tensor_payloads_are_stored_at_64_byte_boundaries(tmp_path: Path) -> None:
    sample().save(tmp_path / "data.tdz")
    with zipfile.ZipFile(tmp_path / "data.tdz") as archive:
        stored = {i.filename: i.compress_type for i in archive.infolist()}
    for name, offset in payload_offsets(tmp_path / "data.tdz").items():
        if name.endswith(".memmap"):
            assert offset % 64 == 0, name
            assert stored[name] == zipfile.ZIP_STORED


def test_archive_true_and_false_override_the_suffix(tmp_path: Path) -> None:
    sample().save(tmp_path / "plain", archive=True)
    assert tclass.is_memmap_archive(tmp_path / "plain")
    sample().save(tmp_path / "folder.tdz", archive=False)
    assert (tmp_path / "folder.tdz").is_dir()
    assert same(TensorDict.load_memmap(tmp_path / "plain"), sample())
    assert same(TensorDict.load_memmap(tmp_path / "folder.tdz"), sample())


def test_module_functions_and_memmap_write_archives_too(tmp_path: Path) -> None:
    tclass.save(sample(), tmp_path / "a.tdz")
    sample().memmap(tmp_path / "b.tdz")
    tclass.memmap(sample(), tmp_path / "c", archive=True)
    for name in ("a.tdz", "b.tdz", "c"):
        assert tclass.is_memmap_archive(tmp_path / name)
        assert same(tclass.load(tmp_path / name), sample())


def test_memmap__makes_the_leaves_views_of_the_archive(tmp_path: Path) -> None:
    td = sample()
    assert td.memmap_(tmp_path / "d.tdz") is td
    assert tclass.is_memmap_archive(tmp_path / "d.tdz")
    td["reward"][1] = 42.0  # the archive's mapping is shared: the write reaches the file
    assert TensorDict.load_memmap(tmp_path / "d.tdz")["reward"][1] == 42.0


def test_memmap_like_preallocates_a_writable_archive(tmp_path: Path) -> None:
    like = sample().memmap_like(tmp_path / "buf.tdz")
    assert like["obs"].sum() == 0 and python_value(like["label"]) == "pong"
    like["obs"][2] = 7
    reloaded = TensorDict.load_memmap(tmp_path / "buf.tdz")
    assert reloaded["obs"][2].unique().tolist() == [7] and reloaded["obs"][1].sum() == 0


def test_records_and_nested_records_round_trip(tmp_path: Path) -> None:
    rec = record()
    rec.save(tmp_path / "r.tdz")
    loaded = Record.load_memmap(tmp_path / "r.tdz")
    assert isinstance(loaded, Record) and isinstance(loaded.inner, Inner)
    assert torch.equal(loaded.x, rec.x) and torch.equal(loaded.inner.z, rec.inner.z)
    assert loaded.name == "r"


def test_lazy_stacks_round_trip(tmp_path: Path) -> None:
    stack = tclass.lazy_stack(
        [TensorDict({"x": torch.zeros(2, 3)}, [2]), TensorDict({"x": torch.ones(2, 5)}, [2])]
    )
    stack.save(tmp_path / "s.tdz")
    loaded = tclass.load_memmap(tmp_path / "s.tdz")
    assert isinstance(loaded, tclass.LazyStackedTensorDict)
    assert loaded[1]["x"].shape == (2, 5) and loaded[1]["x"].sum() == 10


def test_compressed_archives_are_smaller_and_load_into_memory(tmp_path: Path) -> None:
    td = TensorDict({"zeros": torch.zeros(100_000)}, [100_000])
    td.save(tmp_path / "z.tdz", compression="deflate")
    assert os.path.getsize(tmp_path / "z.tdz") < 10_000
    with zipfile.ZipFile(tmp_path / "z.tdz") as archive:
        assert archive.getinfo("zeros.memmap").compress_type == zipfile.ZIP_DEFLATED
        assert archive.getinfo("meta.json").compress_type == zipfile.ZIP_STORED
    assert TensorDict.load_memmap(tmp_path / "z.tdz")["zeros"].abs().sum() == 0
    with pytest.raises(TclassError, match="compress"):
        TensorDict.load_memmap(tmp_path / "z.tdz", mode="r+")
    with pytest.raises(ValueError, match="compression"):
        td.save(tmp_path / "bad.tdz", compression="snappy")


def test_existsok_false_refuses_to_replace_an_archive(tmp_path: Path) -> None:
    sample().save(tmp_path / "d.tdz")
    before = (tmp_path / "d.tdz").read_bytes()
    with pytest.raises(FileExistsError):
        sample().memmap(tmp_path / "d.tdz", existsok=False)
    assert (tmp_path / "d.tdz").read_bytes() == before
    (tmp_path / "dir.tdz").mkdir()
    with pytest.raises(TclassError, match="dir.tdz"):
        sample().save(tmp_path / "dir.tdz", archive=True)


def test_replacing_an_archive_keeps_its_earlier_loads_readable(tmp_path: Path) -> None:
    sample().save(tmp_path / "d.tdz")
    first = TensorDict.load_memmap(tmp_path / "d.tdz")
    other = sample().apply(lambda t: t * 0 if t.is_floating_point() else t)
    other.save(tmp_path / "d.tdz")  # written beside, then renamed over the old file
    assert same(first, sample())
    assert TensorDict.load_memmap(tmp_path / "d.tdz")["reward"].sum() == 0


# --- reading ------------------------------------------------------------------------------


def test_a_default_load_is_copy_on_write(tmp_path: Path) -> None:
    sample().save(tmp_path / "d.tdz")
    before = (tmp_path / "d.tdz").read_bytes()
    loaded = TensorDict.load_memmap(tmp_path / "d.tdz")
    loaded["reward"][0] = -1.0
    assert loaded["reward"][0] == -1.0
    assert (tmp_path / "d.tdz").read_bytes() == before  # a load never changes the file
    assert TensorDict.load_memmap(tmp_path / "d.tdz", mode="r")["reward"][0] == 0.0


@pytest.mark.parametrize(("name", "mode"), [("d.tdz", None), ("d.tdz", "r"), ("d", "r")])
def test_copy_on_write_leaves_are_memory_mapped_not_shared(
    tmp_path: Path, name: str, mode: Any
) -> None:
    """An archive's leaves (and a folder's loaded with mode='r') map the file
    copy-on-write: is_memmap() is true and is_shared() false (the peer's answer), for the
    collection and for plain views of it alike; a compressed archive is read into memory."""
    data = TensorDict({"a": torch.ones(3, 4), "n": {"b": torch.zeros(3, 4)}}, batch_size=[3, 4])
    data.save(tmp_path / name)
    loaded = TensorDict.load_memmap(tmp_path / name, mode=mode)
    for view in (loaded, loaded.detach(), loaded[1:], loaded.view(-1)):
        assert view.is_memmap() and not view.is_shared()
    data.save(tmp_path / "c.tdz", compression="deflate")
    inflated = TensorDict.load_memmap(tmp_path / "c.tdz")
    assert not inflated.is_memmap() and not inflated.is_shared()


def test_mode_r_plus_writes_reach_the_archive(tmp_path: Path) -> None:
    sample().save(tmp_path / "d.tdz")
    loaded = TensorDict.load_memmap(tmp_path / "d.tdz", mode="r+")
    loaded["nested", "i"][3] = 99
    assert TensorDict.load_memmap(tmp_path / "d.tdz")["nested", "i"][3].tolist() == [99, 99]


def test_subpath_and_meta_device_work_on_archives(tmp_path: Path) -> None:
    sample().save(tmp_path / "d.tdz")
    nested = TensorDict.load_memmap(tmp_path / "d.tdz", subpath="nested")
    assert nested.batch_size == torch.Size([4]) and nested["i"].sum() == 28
    shapes = TensorDict.load_memmap(tmp_path / "d.tdz", device="meta")
    assert shapes["obs"].device.type == "meta" and shapes["obs"].shape == (4, 3, 5)


def test_an_archive_written_by_another_zip_tool_loads(tmp_path: Path) -> None:
    sample().memmap(tmp_path / "folder")
    with zipfile.ZipFile(tmp_path / "plain.tdz", "w") as archive:  # no alignment at all
        for path in sorted((tmp_path / "folder").rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(tmp_path / "folder").as_posix())
    assert tclass.is_memmap_archive(tmp_path / "plain.tdz")
    assert same(TensorDict.load_memmap(tmp_path / "plain.tdz"), sample())


def test_is_memmap_archive(tmp_path: Path) -> None:
    sample().save(tmp_path / "d.tdz")
    sample().save(tmp_path / "folder")
    (tmp_path / "text.tdz").write_text("not a zip")
    with zipfile.ZipFile(tmp_path / "other.zip", "w") as archive:
        archive.writestr("readme.txt", "no meta.json at the top")
    assert tclass.is_memmap_archive(tmp_path / "d.tdz")
    assert tclass.is_memmap_archive(str(tmp_path / "d.tdz"))
    for name in ("folder", "text.tdz", "other.zip", "missing.tdz"):
        assert not tclass.is_memmap_archive(tmp_path / name), name


# --- pack / unpack ------------------------------------------------------------------------


def test_pack_and_unpack_convert_between_folder_and_archive(tmp_path: Path) -> None:
    sample().memmap(tmp_path / "folder")
    out = tclass.pack_memmap(tmp_path / "folder", tmp_path / "packed.tdz")
    assert out == tmp_path / "packed.tdz" and isinstance(out, Path)
    assert same(TensorDict.load_memmap(tmp_path / "packed.tdz"), sample())
    assert all(
        offset % 64 == 0
        for name, offset in payload_offsets(tmp_path / "packed.tdz").items()
        if name.endswith(".memmap")
    )
    back = tclass.unpack_memmap(tmp_path / "packed.tdz", tmp_path / "unpacked")
    assert back == tmp_path / "unpacked"
    assert same(TensorDict.load_memmap(back), sample())
    assert sorted(p.name for p in back.iterdir()) == sorted(
        p.name for p in (tmp_path / "folder").iterdir()
    )


def test_pack_refuses_what_is_not_a_saved_folder_or_lies_inside_it(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="meta.json"):
        tclass.pack_memmap(tmp_path / "empty", tmp_path / "x.tdz")
    sample().memmap(tmp_path / "folder")
    with pytest.raises(ValueError, match="outside"):
        tclass.pack_memmap(tmp_path / "folder", tmp_path / "folder" / "x.tdz")
    assert not (tmp_path / "x.tdz").exists() and not (tmp_path / "folder" / "x.tdz").exists()


def test_unpack_refuses_what_is_not_an_archive(tmp_path: Path) -> None:
    (tmp_path / "text.tdz").write_text("not a zip")
    with pytest.raises(ValueError, match="archive"):
        tclass.unpack_memmap(tmp_path / "text.tdz", tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_compressed_pack(tmp_path: Path) -> None:
    TensorDict({"z": torch.zeros(50_000)}, [50_000]).memmap(tmp_path / "folder")
    tclass.pack_memmap(
        tmp_path / "folder", tmp_path / "z.tdz", compression="deflate", compresslevel=9
    )
    assert os.path.getsize(tmp_path / "z.tdz") < 5_000
    assert TensorDict.load_memmap(tmp_path / "z.tdz")["z"].shape == (50_000,)


# --- hostile archives: refused, never followed, never unpickled unasked -------------------


def craft(path: Path, entries: dict[str, bytes], compress: dict[str, int] | None = None) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns on duplicate names
        with zipfile.ZipFile(path, "w") as archive:
            for name, data in entries.items():
                archive.writestr(
                    name.lstrip("#"), data, (compress or {}).get(name, zipfile.ZIP_STORED)
                )


def meta(entries: dict[str, Any], shape: list[int]) -> bytes:
    import json

    node = {
        **entries,
        "shape": shape,
        "device": "cpu",
        "_type": "<class 'tensordict._td.TensorDict'>",
    }
    return json.dumps(node).encode()


LEAF = {"device": "cpu", "shape": [4], "dtype": "torch.int64", "is_nested": False}


def test_entry_names_that_leave_the_archive_are_refused(tmp_path: Path) -> None:
    for bad in ("../x.memmap", "/x.memmap", "a\\..\\..\\x.memmap"):
        path = tmp_path / "evil.tdz"
        craft(path, {"meta.json": meta({"x": LEAF}, [4]), bad: bytes(32)})
        with pytest.raises(tclass.errors.UnsafePathError):
            TensorDict.load_memmap(path)
        with pytest.raises(tclass.errors.UnsafePathError):
            tclass.unpack_memmap(path, tmp_path / "out")
        assert not (tmp_path / "x.memmap").exists() and not (tmp_path / "out").exists()


def test_an_entry_shorter_than_its_meta_is_refused(tmp_path: Path) -> None:
    craft(tmp_path / "d.tdz", {"meta.json": meta({"x": LEAF}, [4]), "x.memmap": bytes(12)})
    with pytest.raises(tclass.errors.FileFormatError, match="x.memmap"):
        TensorDict.load_memmap(tmp_path / "d.tdz")


def test_a_missing_entry_is_refused(tmp_path: Path) -> None:
    craft(tmp_path / "d.tdz", {"meta.json": meta({"x": LEAF}, [4])})
    with pytest.raises(tclass.errors.MissingFileError, match="x.memmap"):
        TensorDict.load_memmap(tmp_path / "d.tdz")


def declare_size(path: Path, name: str, size: int) -> None:
    """Make the archive's headers lie about an entry's inflated size."""
    with zipfile.ZipFile(path) as archive:
        info, start = archive.getinfo(name), archive.start_dir
    with open(path, "r+b") as raw:
        raw.seek(info.header_offset + 22)  # the local header's uncompressed size
        raw.write(struct.pack("<I", size))
        position = start
        while True:  # the central directory records
            raw.seek(position)
            record = raw.read(46)
            name_len, extra_len, comment_len = struct.unpack("<3H", record[28:34])
            if raw.read(name_len).decode() == name:
                raw.seek(position + 24)
                raw.write(struct.pack("<I", size))
                return
            position += 46 + name_len + extra_len + comment_len


def test_a_compressed_entry_that_inflates_past_its_size_is_refused(tmp_path: Path) -> None:
    craft(
        tmp_path / "bomb.tdz",
        {"meta.json": meta({"x": LEAF}, [4]), "x.memmap": bytes(64 << 20)},
        {"x.memmap": zipfile.ZIP_DEFLATED},
    )
    declare_size(tmp_path / "bomb.tdz", "x.memmap", 32)  # 64 MiB inside, "32 B" outside
    with pytest.raises(tclass.errors.FileFormatError, match="x.memmap"):
        TensorDict.load_memmap(tmp_path / "bomb.tdz")
    with pytest.raises(tclass.errors.FileFormatError, match="x.memmap"):
        tclass.unpack_memmap(tmp_path / "bomb.tdz", tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_compressed_entry_padded_up_to_a_page_loads_its_start(tmp_path: Path) -> None:
    # Older writers padded a leaf's file up to a page: packed with compression, it
    # loads (the bytes its leaf needs) and unpacks whole.
    data = bytes(range(32)) + b"\xab" * (4096 - 32)
    craft(
        tmp_path / "long.tdz",
        {"meta.json": meta({"x": LEAF}, [4]), "x.memmap": data},
        {"x.memmap": zipfile.ZIP_DEFLATED},
    )
    loaded = TensorDict.load_memmap(tmp_path / "long.tdz")
    assert loaded["x"].view(torch.uint8).tolist() == list(range(32))
    tclass.unpack_memmap(tmp_path / "long.tdz", tmp_path / "out")
    assert (tmp_path / "out" / "x.memmap").read_bytes() == data


class Inflations:
    """Records the entries zipfile is asked to inflate."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.names: list[str] = []
        original = zipfile.ZipFile.open

        def spy(archive: zipfile.ZipFile, name: Any, *args: Any, **kwargs: Any) -> Any:
            self.names.append(name if isinstance(name, str) else name.filename)
            return original(archive, name, *args, **kwargs)

        monkeypatch.setattr(zipfile.ZipFile, "open", spy)

    def leaves(self) -> list[str]:
        return [name for name in self.names if name.endswith(".memmap")]


def bomb(path: Path, inflated: int, shape: list[int], first: bytes = b"") -> None:
    """A deflated leaf of ``inflated`` zero bytes (its header honest about it), after a
    fine compressed leaf ``a`` when ``first`` is given, under a meta.json giving ``x``
    the int64 ``shape``."""
    leaves = {"x": {**LEAF, "shape": shape}}
    entries = {"x.memmap": bytes(inflated)}
    if first:
        leaves = {"a": {**LEAF, "shape": [len(first) // 8]}, **leaves}
        entries = {"a.memmap": first, **entries}
    craft(
        path,
        {"meta.json": meta(leaves, []), **entries},
        dict.fromkeys(entries, zipfile.ZIP_DEFLATED),
    )


def test_a_compressed_entry_larger_than_its_leaf_is_refused_before_inflating(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A zip bomb: 64 MiB of zeros (64 KiB in the file), the header honest about it, for a
    # leaf of 32 bytes. Nothing is inflated, neither by load_memmap nor by unpack_memmap
    # (which inflated and wrote it all, then left the folder to the loader).
    bomb(tmp_path / "bomb.tdz", 64 << 20, [4], first=bytes(range(64)))
    inflations = Inflations(monkeypatch)
    for action in (
        lambda: TensorDict.load_memmap(tmp_path / "bomb.tdz"),
        lambda: tclass.unpack_memmap(tmp_path / "bomb.tdz", tmp_path / "out"),
        lambda: tclass.load(tmp_path / "bomb.tdz"),
    ):
        with pytest.raises(tclass.errors.FileFormatError) as refused:
            action()
        assert f"{tmp_path / 'bomb.tdz'}::x.memmap" in str(refused.value)
        assert "records 67108864 bytes once inflated" in str(refused.value)
        assert "shape [4] need 32" in str(refused.value)
    assert inflations.leaves() == [] and not (tmp_path / "out").exists()


def test_an_archive_is_checked_whole_before_a_leaf_is_inflated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # x is fine but takes more memory than the machine has (here: a machine of 1 KiB);
    # a, before it, is not inflated either.
    bomb(tmp_path / "big.tdz", 8 << 10, [1 << 10], first=bytes(range(64)))
    inflations = Inflations(monkeypatch)
    monkeypatch.setattr(tclass._io.memmap._zip, "_physical_memory", lambda: 1 << 10)
    with pytest.raises(tclass.errors.FileFormatError, match="more than this machine's memory"):
        TensorDict.load_memmap(tmp_path / "big.tdz")
    assert inflations.leaves() == []
    monkeypatch.setattr(tclass._io.memmap._zip, "_physical_memory", lambda: 1 << 20)
    loaded = TensorDict.load_memmap(tmp_path / "big.tdz")
    assert loaded["a"].view(torch.uint8).tolist() == list(range(64))
    assert not loaded["x"].any() and loaded["x"].shape == (1 << 10,)


def test_unpack_refuses_what_does_not_fit_the_destination(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bomb(tmp_path / "big.tdz", 8 << 10, [1 << 10])
    inflations = Inflations(monkeypatch)
    usage = shutil.disk_usage(tmp_path)._replace(free=4096)
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage)
    with pytest.raises(tclass.errors.FolderWriteError) as refused:
        tclass.unpack_memmap(tmp_path / "big.tdz", tmp_path / "out")
    assert refused.value.errno == errno.ENOSPC and isinstance(refused.value, OSError)
    assert f"writes {8 << 10 | len(meta({'x': {**LEAF, 'shape': [1 << 10]}}, []))} bytes" in str(
        refused.value
    )
    assert "has 4096 bytes free" in str(refused.value)
    assert inflations.leaves() == [] and not (tmp_path / "out").exists()


def test_unpack_refuses_a_large_entry_no_meta_json_describes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Loading never reads an entry that is no leaf; unpacking would write it: inflated, it
    # is held to the small-file limit (256 MiB; 1 KiB here).
    monkeypatch.setattr(tclass._io.memmap._archive, "MAX_FILE_BYTES", 1 << 10)
    craft(
        tmp_path / "extra.tdz",
        {"meta.json": meta({"x": LEAF}, [4]), "x.memmap": bytes(32), "junk": bytes(2 << 10)},
        {"junk": zipfile.ZIP_DEFLATED},
    )
    inflations = Inflations(monkeypatch)
    with pytest.raises(tclass.errors.FileFormatError, match="extra.tdz::junk' records 2048"):
        tclass.unpack_memmap(tmp_path / "extra.tdz", tmp_path / "out")
    assert "junk" not in inflations.names and not (tmp_path / "out").exists()
    assert TensorDict.load_memmap(tmp_path / "extra.tdz")["x"].tolist() == [0] * 4
    craft(  # stored, its bytes are in the archive: it unpacks
        tmp_path / "stored.tdz",
        {"meta.json": meta({"x": LEAF}, [4]), "x.memmap": bytes(32), "junk": bytes(2 << 10)},
    )
    tclass.unpack_memmap(tmp_path / "stored.tdz", tmp_path / "out")
    assert (tmp_path / "out" / "junk").read_bytes() == bytes(2 << 10)


def test_a_stored_entry_recording_another_size_than_it_holds_is_refused(tmp_path: Path) -> None:
    craft(tmp_path / "d.tdz", {"meta.json": meta({"x": LEAF}, [4]), "x.memmap": bytes(32)})
    declare_size(tmp_path / "d.tdz", "x.memmap", (4 << 30) - 1)  # stored: 32 bytes, "4 GiB"
    for action in (
        lambda: TensorDict.load_memmap(tmp_path / "d.tdz"),
        lambda: tclass.unpack_memmap(tmp_path / "d.tdz", tmp_path / "out"),
    ):
        with pytest.raises(
            tclass.errors.FileFormatError, match="records 4294967295 bytes held in 32"
        ):
            action()
    assert not (tmp_path / "out").exists()


def test_duplicate_entries_are_refused(tmp_path: Path) -> None:
    craft(
        tmp_path / "dup.tdz",
        {"meta.json": meta({"x": LEAF}, [4]), "x.memmap": bytes(32), "#x.memmap": b"\x01" * 32},
    )
    with pytest.raises(tclass.errors.MetadataError, match="x.memmap"):
        TensorDict.load_memmap(tmp_path / "dup.tdz")


def test_pickles_in_an_archive_need_allow_pickle(tmp_path: Path) -> None:
    td = TensorDict({"v": NonTensorData({1, 2})}, [])
    td.save(tmp_path / "p.tdz", allow_pickle=True)
    with pytest.raises(tclass.errors.PickleRefusedError):
        TensorDict.load_memmap(tmp_path / "p.tdz")
    assert python_value(TensorDict.load_memmap(tmp_path / "p.tdz", allow_pickle=True)["v"]) == {
        1,
        2,
    }


def test_a_file_that_is_not_a_zip_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "x.tdz").write_bytes(b"PK\x03\x04 truncated")
    with pytest.raises(TclassError, match="x.tdz"):
        TensorDict.load_memmap(tmp_path / "x.tdz")


def test_python_m_tclass_info_reads_archives(tmp_path: Path) -> None:
    import subprocess

    sample().save(tmp_path / "d.tdz")
    result = subprocess.run(
        [sys.executable, "-m", "tclass", "info", str(tmp_path / "d.tdz")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "obs" in result.stdout and "uint8" in result.stdout


# --- the peer's archives ------------------------------------------------------------------


@pytest.mark.peer
@pytest.mark.parametrize("compression", [None, "deflate"])
def test_archives_the_peer_writes_load(tmp_path: Path, compression: str | None) -> None:
    tensordict = pytest.importorskip("tensordict")
    theirs = tensordict.TensorDict(
        {"x": torch.arange(6).view(3, 2), "n": {"y": torch.rand(3)}, "s": "hi"}, batch_size=[3]
    )
    theirs.save(tmp_path / "p.tdz", compression=compression)
    loaded = TensorDict.load_memmap(tmp_path / "p.tdz")
    assert torch.equal(loaded["x"], theirs["x"]) and torch.equal(loaded["n", "y"], theirs["n", "y"])
    assert python_value(loaded["s"]) == "hi" and loaded.batch_size == torch.Size([3])


@pytest.mark.peer
def test_the_peer_loads_archives_tclass_writes(tmp_path: Path) -> None:
    tensordict = pytest.importorskip("tensordict")
    sample().save(tmp_path / "t.tdz")
    theirs = tensordict.TensorDict.load_memmap(tmp_path / "t.tdz")
    mine = sample()
    assert torch.equal(theirs["obs"], mine["obs"]) and torch.equal(
        theirs["nested", "i"], mine["nested", "i"]
    )
    assert theirs["label"] == "pong"
    assert tensordict.is_memmap_archive(tmp_path / "t.tdz")
    tensordict.unpack_memmap(tmp_path / "t.tdz", tmp_path / "their_unpack")
    assert same(TensorDict.load_memmap(tmp_path / "their_unpack"), mine)


# --- damaged archives: truncated, bytes flipped ---------------------------------------------

# Raw file bytes in a message: runs of \xNN escapes, or a bytes repr.
RAW_BYTES = re.compile(r"(\\x[0-9a-f]{2}){4,}|(?<!\w)b['\"]")


def damaged_tree() -> TensorDict:
    stack = tclass.lazy_stack([TensorDict(a=torch.ones(2), batch_size=[2]) for _ in range(3)])
    return TensorDict(
        {"rec": record(), "lazy": stack, "label": NonTensorData("pong", batch_size=[3])},
        batch_size=[3],
    )


def refusal(action: Any) -> str | None:
    """The message of the TclassError ``action`` raises (None if it succeeds); any other
    exception fails the test."""
    try:
        action()
    except TclassError as error:
        return str(error)
    return None


@pytest.mark.parametrize("compression", [None, "deflate"])
def test_damaged_archives_give_short_clear_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], compression: str | None
) -> None:
    # Cut short anywhere, or one bit flipped anywhere: loading, unpacking and info either
    # work or raise a TclassError of a few lines that shows no raw bytes of the file (one
    # message used to quote 14,176 characters of it).
    damaged_tree().save(tmp_path / "good.tdz", compression=compression)
    good = (tmp_path / "good.tdz").read_bytes()
    rng = random.Random(0)
    cuts = sorted({rng.randrange(4, len(good)) for _ in range(40)})
    cases = [(f"cut at {size}", good[:size]) for size in cuts]
    for _ in range(120):
        flipped, at = bytearray(good), rng.randrange(len(good))
        flipped[at] ^= 1 << rng.randrange(8)
        cases.append((f"bit flipped at {at}", bytes(flipped)))
    path, out = tmp_path / "bad.tdz", tmp_path / "out"
    for case, data in cases:
        path.write_bytes(data)
        messages = [
            refusal(lambda: tclass.load_memmap(path)),
            refusal(lambda: tclass.unpack_memmap(path, out)),
        ]
        assert tclass.is_memmap_archive(path) in (True, False)
        if main(["info", str(path)]) != 0:
            messages.append(capsys.readouterr().err.removeprefix("error: "))
        capsys.readouterr()
        shutil.rmtree(out, ignore_errors=True)
        for message in filter(None, messages):
            # The archive's path (pytest's, long) may be named twice: it is not counted.
            short = message.replace(str(path), "<path>")
            assert len(short) < 500 and not RAW_BYTES.search(message), (case, message)
            if case.startswith("cut"):
                assert f"{str(path)!r} is truncated" in message, (case, message)
                assert f"but the file holds {len(data)} bytes (expected at least" in message
                assert "copy the archive again, or re-save it" in message


def test_a_truncated_archive_names_the_sizes(tmp_path: Path) -> None:
    sample().save(tmp_path / "d.tdz")
    good = (tmp_path / "d.tdz").read_bytes()
    offsets = payload_offsets(tmp_path / "d.tdz")
    cut = offsets["obs.memmap"] + 10  # inside obs's 60 bytes
    (tmp_path / "cut.tdz").write_bytes(good[:cut])
    expected = (
        f"{str(tmp_path / 'cut.tdz')!r} is truncated: the data of 'obs.memmap' ends at byte "
        f"{offsets['obs.memmap'] + 60}, but the file holds {cut} bytes (expected at least "
        f"{offsets['obs.memmap'] + 60}). A copy or download was cut short, or a save was "
        "interrupted: copy the archive again, or re-save it (save(..., '.tdz') or pack_memmap)"
    )
    for action in (
        lambda: TensorDict.load_memmap(tmp_path / "cut.tdz"),
        lambda: tclass.load(tmp_path / "cut.tdz"),
        lambda: tclass.unpack_memmap(tmp_path / "cut.tdz", tmp_path / "out"),
        lambda: tclass.refresh_archive_checksums(tmp_path / "cut.tdz"),
    ):
        with pytest.raises(tclass.errors.FileFormatError) as refused:
            action()
        assert str(refused.value) == expected
    (tmp_path / "cut.tdz").write_bytes(good[:-10])  # inside the end record
    with pytest.raises(tclass.errors.FileFormatError, match="its central directory .* is cut"):
        TensorDict.load_memmap(tmp_path / "cut.tdz")
