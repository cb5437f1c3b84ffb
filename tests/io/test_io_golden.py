"""Loading folders in the peer's (``tensordict`` 0.15.3) memory-mapped format.

The folders in ``tests/data/golden/`` were written by hand from the format description by
``tests/data/make_golden.py`` (no tclass, no tensordict), so these tests check tclass
against the format, not against its own writer. Every test loads a copy in ``tmp_path``:
a buggy loader that grows or rewrites files must not damage the checked-in data.

Damaged copies must raise a ``tclass.TclassError`` that names the offending file, and
loading (good or damaged) must leave every byte, mtime and file name as it was.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import torch

import tclass

if not hasattr(tclass, "load_memmap"):
    pytest.skip("persistence not built yet", allow_module_level=True)


from golden_classes import Inner, Step  # noqa: E402

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "golden"
LOADERS = {"module": tclass.load_memmap, "TensorDict": tclass.TensorDict.load_memmap}


# --- helpers -----------------------------------------------------------------------------


def _copy(name: str, tmp_path: Path) -> Path:
    return Path(shutil.copytree(GOLDEN / name, tmp_path / name, symlinks=True))


def _snapshot(*roots: Path) -> dict[str, tuple[Any, int]]:
    """Every path under ``roots`` (roots included) -> (content, mtime in ns). Symlinks
    are recorded, not followed: content is the link target, bytes for a file."""
    state: dict[str, tuple[Any, int]] = {}
    for root in roots:
        paths = [str(root)]
        for dirpath, dirnames, filenames in os.walk(root):  # does not enter symlinked dirs
            paths += [os.path.join(dirpath, name) for name in dirnames + filenames]
        for path in paths:
            info = os.lstat(path)
            if stat.S_ISLNK(info.st_mode):
                content: Any = ("link", os.readlink(path))
            elif stat.S_ISREG(info.st_mode):
                content = Path(path).read_bytes()
            else:
                content = "dir"
            state[path] = (content, info.st_mtime_ns)
    return state


@contextmanager
def _unchanged(*roots: Path) -> Iterator[None]:
    """Assert that the body changes no file name, byte or mtime under ``roots``."""
    before = _snapshot(*roots)
    yield
    assert _snapshot(*roots) == before


def _load(path: Path, loader: Callable[..., Any] = tclass.load_memmap, **kwargs: Any) -> Any:
    with _unchanged(path):
        return loader(path, **kwargs)


def _names_one_of(err: Exception, *names: str) -> bool:
    return any(name in str(err) for name in names)


def _load_error(path: Path, *also_unchanged: Path) -> tclass.TclassError:
    """The error loading ``path`` raises; the folder (and ``also_unchanged``) stay as is."""
    with _unchanged(path, *also_unchanged), pytest.raises(tclass.TclassError) as info:
        tclass.load_memmap(path)
    return info.value


def _check_leaf(leaf: Any, file: Path, dtype: torch.dtype, values: Any) -> None:
    """A memory-mapped leaf of ``file`` holding ``values`` (nested lists) as ``dtype``."""
    assert isinstance(leaf, tclass.MemoryMappedTensor)
    assert leaf.filename is not None and Path(leaf.filename).resolve() == file.resolve()
    assert leaf.dtype == dtype and leaf.device == torch.device("cpu")
    assert torch.equal(leaf, torch.tensor(values, dtype=dtype))


def _edit_meta(meta_file: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    meta = json.loads(meta_file.read_text())
    edit(meta)
    meta_file.write_text(json.dumps(meta))


# --- v1_nested_td ------------------------------------------------------------------------


def _check_nested_td(td: Any, path: Path) -> None:
    assert type(td) is tclass.TensorDict and td.batch_size == torch.Size([3])
    assert td.device == torch.device("cpu")  # meta.json says "cpu"
    leaves = {"obs", "done", ("next", "reward"), "a/b", "empty"}
    assert set(td.keys(include_nested=True, leaves_only=True)) == leaves
    _check_leaf(td["obs"], path / "obs.memmap", torch.float32, [[0, 1], [2, 3], [4, 5]])
    _check_leaf(td["done"], path / "done.memmap", torch.bool, [True, False, True])
    _check_leaf(td["a/b"], path / "a%2Fb.memmap", torch.float64, [0.5, 1.5, 2.5])
    assert type(td["next"]) is tclass.TensorDict and td["next"].batch_size == torch.Size([3])
    _check_leaf(td["next", "reward"], path / "next" / "reward.memmap", torch.int64, [1, 2, 3])
    empty = td["empty"]
    assert empty.shape == torch.Size([3, 0]) and empty.dtype == torch.float32
    assert not (path / "empty.memmap").exists()
    label = td.get("label")
    # Batch size and device are not stored for NonTensorData: they come from the parent.
    assert isinstance(label, tclass.NonTensorData) and label.data == "pong"
    assert label.batch_size == torch.Size([3])


@pytest.mark.parametrize("loader", LOADERS.values(), ids=list(LOADERS))
def test_nested_td(tmp_path: Path, loader: Callable[..., Any]) -> None:
    path = _copy("v1_nested_td", tmp_path)
    _check_nested_td(_load(path, loader), path)


def test_nested_sub_folder_alone(tmp_path: Path) -> None:
    path = _copy("v1_nested_td", tmp_path)
    td = _load(path / "next")
    assert type(td) is tclass.TensorDict and td.batch_size == torch.Size([3])
    assert list(td.keys()) == ["reward"]
    _check_leaf(td["reward"], path / "next" / "reward.memmap", torch.int64, [1, 2, 3])


def test_meta_device(tmp_path: Path) -> None:
    path = _copy("v1_nested_td", tmp_path)
    td = _load(path, device="meta")
    assert td.batch_size == torch.Size([3])
    shapes = {"obs": [3, 2], "done": [3], ("next", "reward"): [3], "a/b": [3], "empty": [3, 0]}
    for key, shape in shapes.items():
        assert td[key].device.type == "meta" and td[key].shape == torch.Size(shape)
    assert td["done"].dtype == torch.bool and td["next", "reward"].dtype == torch.int64


# --- v0, tensorclass, lazy stack, non-tensor stack, dtypes --------------------------------


@pytest.mark.parametrize("loader", LOADERS.values(), ids=list(LOADERS))
def test_version_0(tmp_path: Path, loader: Callable[..., Any]) -> None:
    path = _copy("v0_nested_td", tmp_path)
    td = _load(path, loader)
    assert type(td) is tclass.TensorDict and td.batch_size == torch.Size([2])
    assert set(td.keys(include_nested=True, leaves_only=True)) == {"x", ("sub", "y")}
    _check_leaf(td["x"], path / "x.memmap", torch.int32, [[1, 2], [3, 4]])
    assert td["sub"].batch_size == torch.Size([2])
    _check_leaf(td["sub", "y"], path / "sub" / "y.memmap", torch.float16, [1.0, -2.0])


def _check_legacy(td: Any, path: Path) -> None:
    assert type(td) is tclass.TensorDict and td.batch_size == torch.Size([2, 1])
    assert td.device is None and td["nested"].device is None  # "device": "None"
    _check_leaf(td["x"], path / "x.memmap", torch.float32, [[[0, 1, 2]], [[3, 4, 5]]])
    _check_leaf(td["exact"], path / "exact.memmap", torch.uint8, [[7], [8]])
    nested = path / "nested"
    _check_leaf(td["nested", "int64"], nested / "int64.memmap", torch.int64, [[3], [-4]])
    _check_leaf(
        td["nested", "bfloat16"], nested / "bfloat16.memmap", torch.bfloat16, [[1.5], [-2.0]]
    )
    assert td["nested", "empty"].shape == torch.Size([2, 1, 0])
    assert td.get(("nested", "string")).data == "a string!"
    # Only the bytes the leaves need are mapped; the padding stays on disk, untouched.
    assert td["x"].untyped_storage().nbytes() == 24 and (path / "x.memmap").stat().st_size == 4096


@pytest.mark.parametrize("loader", LOADERS.values(), ids=list(LOADERS))
def test_legacy_padded_files(tmp_path: Path, loader: Callable[..., Any]) -> None:
    path = _copy("v0_legacy_padded", tmp_path)
    _check_legacy(_load(path, loader), path)
    meta = _load(path, device="meta")
    assert meta["x"].device.type == "meta" and meta["nested", "int64"].shape == torch.Size([2, 1])


def test_legacy_padded_files_saved_again(tmp_path: Path) -> None:
    path = _copy("v0_legacy_padded", tmp_path)
    td = tclass.load_memmap(path)
    td.memmap_(path)  # in place: the padded files are rewritten exact
    sizes = {
        name: (path / name).stat().st_size
        for name in ("x.memmap", "nested/int64.memmap", "nested/bfloat16.memmap")
    }
    assert sizes == {"x.memmap": 24, "nested/int64.memmap": 16, "nested/bfloat16.memmap": 4}
    again = _load(path)
    assert torch.equal(again["x"], td["x"]) and torch.equal(
        again["nested", "int64"], td["nested", "int64"]
    )


def _check_step(step: Any, path: Path) -> None:
    fields = path / "_tensordict"
    assert type(step) is Step and step.batch_size == torch.Size([2])
    _check_leaf(step.obs, fields / "obs.memmap", torch.float32, [[0, 1, 2], [3, 4, 5]])
    assert step.name == "walker"
    assert type(step.inner) is Inner and step.inner.batch_size == torch.Size([2])
    _check_leaf(step.inner.z, fields / "inner" / "_tensordict" / "z.memmap", torch.int64, [7, 8])


def test_tensorclass(tmp_path: Path) -> None:
    # The saved _type must name the class as this test run imports it.
    assert Step.__module__ == "golden_classes"
    path = _copy("v1_tensorclass", tmp_path)
    _check_step(_load(path, Step.load_memmap), path)


def test_tensorclass_found_by_name(tmp_path: Path) -> None:
    # Step is defined in this process, so the module function finds it from _type.
    path = _copy("v1_tensorclass", tmp_path)
    _check_step(_load(path), path)


def test_nested_tensorclass_alone(tmp_path: Path) -> None:
    path = _copy("v1_tensorclass", tmp_path)
    inner = _load(path / "_tensordict" / "inner", Inner.load_memmap)
    assert type(inner) is Inner and inner.batch_size == torch.Size([2])
    assert inner.z.tolist() == [7, 8]


def test_lazy_stack(tmp_path: Path) -> None:
    path = _copy("v1_lazy_stack", tmp_path)
    stack = _load(path)
    assert isinstance(stack, tclass.LazyStackedTensorDict)
    assert stack.batch_size == torch.Size([2]) and stack.stack_dim == 0
    first, second = stack.tensordicts
    assert first.batch_size == torch.Size([]) and set(first.keys()) == {"a"}
    _check_leaf(first["a"], path / "0" / "a.memmap", torch.float32, [1, 2])
    assert second.batch_size == torch.Size([]) and set(second.keys()) == {"a", "b"}
    _check_leaf(second["a"], path / "1" / "a.memmap", torch.float32, [3, 4, 5])
    _check_leaf(second["b"], path / "1" / "b.memmap", torch.int64, 9)


def test_nontensor_stack(tmp_path: Path) -> None:
    path = _copy("v1_nontensor_stack", tmp_path)
    td = _load(path)
    assert td.batch_size == torch.Size([2])
    names = td.get("names")
    assert isinstance(names, tclass.NonTensorStack) and names.batch_size == torch.Size([2])
    assert names.tolist() == ["x", "y"]


DTYPES = [
    "bool", "uint8", "int8", "int16", "int32", "int64", "uint16", "uint32", "uint64",
    "float16", "bfloat16", "float32", "float64", "complex64", "complex128",
]  # fmt: skip


def test_dtypes(tmp_path: Path) -> None:
    path = _copy("v1_dtypes", tmp_path)
    td = _load(path)
    assert td.batch_size == torch.Size([2]) and set(td.keys()) == set(DTYPES)
    for name in DTYPES:
        dtype = getattr(torch, name)
        values = [1 + 2j, 0] if dtype.is_complex else [1, 0]
        leaf = td[name]
        assert isinstance(leaf, tclass.MemoryMappedTensor) and leaf.dtype == dtype, name
        assert leaf.to(torch.complex128).tolist() == values, name


@pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors is in prototype stage")
def test_nested_tensor(tmp_path: Path) -> None:
    # The peer's nested leaves (strided, no "_tclass" in the entry): format §3.3.
    path = _copy("v1_nested_tensor", tmp_path)
    td = _load(path)
    assert td.batch_size == torch.Size([2]) and td["nt"].is_nested and td["img"].is_nested
    assert td["nt"].layout == torch.strided and td["nt"].dtype == torch.int64
    assert [part.tolist() for part in td["nt"].unbind()] == [[0, 1, 2], [0, 1, 2, 3, 4]]
    img = td["img"].unbind()
    assert [part.shape for part in img] == [(2, 3), (4, 3)]
    assert torch.equal(img[1], torch.arange(12.0).view(4, 3))
    img[1][0, 0] = 99.0  # the default mode maps the file shared: the write reaches it
    assert _load(path)["img"].unbind()[1][0, 0] == 99.0


# --- damaged folders ---------------------------------------------------------------------


def _leaf_entry(meta: dict[str, Any], key: str) -> dict[str, Any]:
    entry = meta[key]
    assert isinstance(entry, dict)
    return entry


def test_truncated_leaf(tmp_path: Path) -> None:
    path = _copy("v1_nested_td", tmp_path)
    os.truncate(path / "obs.memmap", 20)  # 24 bytes expected
    err = _load_error(path)
    assert isinstance(err, ValueError) and "obs.memmap" in str(err)


def test_leaf_one_byte_too_long_loads(tmp_path: Path) -> None:
    # Older writers padded files: the bytes the leaf needs are mapped, the rest left.
    path = _copy("v1_nested_td", tmp_path)
    with open(path / "next" / "reward.memmap", "ab") as file:
        file.write(b"\1")
    _check_nested_td(_load(path), path)


@pytest.mark.parametrize(
    "missing",
    ["done.memmap", "a%2Fb.memmap", "next/reward.memmap", "next", "label", "label/meta.json"],
)
def test_missing_file_or_folder(tmp_path: Path, missing: str) -> None:
    path = _copy("v1_nested_td", tmp_path)
    target = path / missing
    if target.is_dir():
        shutil.rmtree(target)
    else:
        target.unlink()
    err = _load_error(path)
    assert isinstance(err, FileNotFoundError) and target.name in str(err)


def test_missing_tensorclass_fields(tmp_path: Path) -> None:
    path = _copy("v1_tensorclass", tmp_path)
    shutil.rmtree(path / "_tensordict" / "inner" / "_tensordict")
    with _unchanged(path), pytest.raises(tclass.TclassError) as info:
        Step.load_memmap(path)
    assert isinstance(info.value, FileNotFoundError) and "_tensordict" in str(info.value)


def _set_batch(value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda meta: meta.__setitem__("shape", value)


def _set_leaf(key: str, field: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda meta: _leaf_entry(meta, key).__setitem__(field, value)


# (meta.json to edit, relative to the folder; the edit; file names the message may give,
# one of which it must). Leaf shapes keep the numel, so only the metadata is wrong.
BAD_META = {
    "unknown-dtype": ("meta.json", _set_leaf("obs", "dtype", "torch.float99"), ["meta.json"]),
    "dtype-without-prefix": ("meta.json", _set_leaf("obs", "dtype", "float32"), ["meta.json"]),
    "negative-leaf-shape": ("meta.json", _set_leaf("obs", "shape", [-3, -2]), ["meta.json"]),
    "string-leaf-shape": ("meta.json", _set_leaf("obs", "shape", "[3, 2]"), ["meta.json"]),
    "negative-batch": ("meta.json", _set_batch([-3]), ["meta.json"]),
    "string-batch": ("meta.json", _set_batch("3"), ["meta.json"]),
    # The batch size and the leaf disagree: either file may be named.
    "leaf-not-under-batch": (
        "meta.json",
        _set_leaf("obs", "shape", [2, 3]),
        ["meta.json", "obs.memmap"],
    ),
    "nested-unknown-dtype": (
        "next/meta.json",
        _set_leaf("reward", "dtype", "torch.float99"),
        ["meta.json"],
    ),
    "nested-leaf-not-under-batch": (
        "next/meta.json",
        _set_leaf("reward", "shape", [1, 3]),
        ["meta.json", "reward.memmap"],
    ),
}


@pytest.mark.parametrize("meta_name, edit, names", BAD_META.values(), ids=list(BAD_META))
def test_bad_metadata(
    tmp_path: Path, meta_name: str, edit: Callable[[dict[str, Any]], None], names: list[str]
) -> None:
    path = _copy("v1_nested_td", tmp_path)
    _edit_meta(path / meta_name, edit)
    err = _load_error(path)
    assert isinstance(err, ValueError) and _names_one_of(err, *names)
    assert Path(meta_name).parent.name in str(err)  # "next" for the nested node


NOT_AN_OBJECT = {"garbage": "{not json", "list": "[1, 2]", "empty": "", "string": '"TensorDict"'}


@pytest.mark.parametrize("text", NOT_AN_OBJECT.values(), ids=list(NOT_AN_OBJECT))
@pytest.mark.parametrize("meta_name", ["meta.json", "next/meta.json", "label/meta.json"])
def test_meta_not_an_object(tmp_path: Path, text: str, meta_name: str) -> None:
    path = _copy("v1_nested_td", tmp_path)
    (path / meta_name).write_text(text)
    err = _load_error(path)
    assert isinstance(err, ValueError) and "meta.json" in str(err)
    assert Path(meta_name).parent.name in str(err)


def test_leaf_symlink_outside(tmp_path: Path) -> None:
    path = _copy("v1_nested_td", tmp_path)
    outside = tmp_path / "outside.bin"
    outside.write_bytes(b"ABCDEFGH")  # the peer grows such a file and zeroes byte 0 (W3)
    (path / "obs.memmap").unlink()
    (path / "obs.memmap").symlink_to(outside)
    err = _load_error(path, outside)
    assert "obs.memmap" in str(err)


def test_sub_folder_symlink_outside(tmp_path: Path) -> None:
    path = _copy("v1_nested_td", tmp_path)
    outside = Path(shutil.copytree(path / "next", tmp_path / "outside"))
    shutil.rmtree(path / "next")
    (path / "next").symlink_to(outside, target_is_directory=True)
    err = _load_error(path, outside)
    assert "next" in str(err)


def test_key_escaping_the_folder(tmp_path: Path) -> None:
    path = _copy("v1_nested_td", tmp_path)
    outside = tmp_path / "outside.memmap"  # where "../outside" would lead if used as a path
    outside.write_bytes(bytes(12))
    entry = {"device": "cpu", "shape": [3], "dtype": "torch.float32", "is_nested": False}
    _edit_meta(path / "meta.json", lambda meta: meta.__setitem__("../outside", entry))
    err = _load_error(path, outside)
    assert "outside" in str(err)


# The peer records no member count (§3.7): only a gap in 0/, 1/, ... shows that a member
# is missing. A missing last member, or a stale extra one after the last (W6), cannot be
# told from a shorter or longer stack, so those are not tested here.
def _remove_first(path: Path) -> None:
    shutil.rmtree(path / "0")


def _remove_middle(path: Path) -> None:
    shutil.copytree(path / "1", path / "2")  # three members, then 1/ goes
    shutil.rmtree(path / "1")


def _extra_after_gap(path: Path) -> None:
    # 0/, 1/, 3/: whether the gap or the stray 3/ is blamed, it is one or the other.
    shutil.copytree(path / "1", path / "3")


LAZY_DAMAGE = {
    "first-member-removed": _remove_first,
    "middle-member-removed": _remove_middle,
    "extra-member-after-gap": _extra_after_gap,
}


@pytest.mark.parametrize("damage", LAZY_DAMAGE.values(), ids=list(LAZY_DAMAGE))
def test_lazy_stack_gap(tmp_path: Path, damage: Callable[[Path], None]) -> None:
    path = _copy("v1_lazy_stack", tmp_path)
    damage(path)
    err = _load_error(path)
    assert isinstance(err, (FileNotFoundError, ValueError)) and path.name in str(err)


def test_lazy_stack_broken_member(tmp_path: Path) -> None:
    path = _copy("v1_lazy_stack", tmp_path)
    os.truncate(path / "1" / "b.memmap", 4)
    err = _load_error(path)
    assert "b.memmap" in str(err)


def test_nontensor_stack_bad_data(tmp_path: Path) -> None:
    # "pickle.pkl" is the only string the format allows in place of the values.
    path = _copy("v1_nontensor_stack", tmp_path)
    meta_file = path / "names" / "meta.json"
    meta = json.loads(meta_file.read_text())
    meta["data"] = "../x.pkl"
    meta_file.write_text(json.dumps(meta, separators=(",", ":")))
    err = _load_error(path)
    assert isinstance(err, ValueError) and "meta.json" in str(err) and "names" in str(err)
