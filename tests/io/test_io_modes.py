"""How a load maps the files (``mode=``), loading one nested node (``subpath=``),
durable saves (``durable=True``) and several processes saving into one folder."""

from __future__ import annotations

import inspect
import multiprocessing
import os
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

import tclass
import tclass._io.memmap._write
from tclass import LazyStackedTensorDict, MemoryMappedTensor, TensorDict
from tclass.errors import ClassMismatchError, SubpathError, UnsafePathError


@tclass.tensorclass
class Inner:
    y: torch.Tensor


@tclass.tensorclass
class Outer:
    x: torch.Tensor
    inner: Inner
    tag: str


def _outer() -> Outer:
    inner = Inner(y=torch.arange(4.0) + 10, batch_size=[4])
    return Outer(x=torch.arange(4.0), inner=inner, tag="ckpt", batch_size=[4])


def _nested() -> TensorDict:
    deep = TensorDict({"c": torch.arange(3)}, [3])
    stack = tclass.lazy_stack(
        [TensorDict({"m": torch.full((3,), float(i))}, [3]) for i in range(2)], dim=1
    )
    return TensorDict(
        {"a": {"b": deep, "w": torch.ones(3)}, "s": stack, "top": torch.zeros(3)}, [3]
    )


def _files(folder: Path) -> dict[str, bytes]:
    """Every file below ``folder`` and its bytes."""
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


# --- mode= -----------------------------------------------------------------------------------


def test_mode_r_writes_never_reach_the_files(tmp_path: Path) -> None:
    _outer().memmap(tmp_path / "ckpt")
    before = _files(tmp_path / "ckpt")
    loaded = Outer.load_memmap(tmp_path / "ckpt", mode="r")
    assert isinstance(loaded.x, MemoryMappedTensor) and loaded.x._mode == "r"
    assert loaded._tensordict._saved_at is None  # no write-through link: values stay in memory too
    loaded.x[0] = 100.0
    loaded.inner.y.add_(1)
    loaded.x.copy_(loaded.x * 2)
    assert (
        loaded.x.tolist() == [200.0, 2.0, 4.0, 6.0] and loaded.inner.y[0] == 11
    )  # memory has them
    assert _files(tmp_path / "ckpt") == before  # the disk does not
    again = Outer.load_memmap(tmp_path / "ckpt")
    assert again.x.tolist() == [0.0, 1.0, 2.0, 3.0] and again.inner.y.tolist() == [
        10.0,
        11.0,
        12.0,
        13.0,
    ]
    # The default (the peer's) is write-through where the files are writable.
    again.x[1] = 5.0
    assert Outer.load_memmap(tmp_path / "ckpt").x[1] == 5.0 and _files(tmp_path / "ckpt") != before


def test_mode_r_checkpoint_trained_through_to_module_leaves_the_files(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Linear(4, 1))
    TensorDict.from_module(model).memmap(tmp_path / "ckpt")
    before = _files(tmp_path / "ckpt")
    params = TensorDict.load_memmap(tmp_path / "ckpt", mode="r")
    start = params["0", "weight"].clone()
    with params.to_module(model):  # the model's parameters now use the mapped memory
        optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
        for _ in range(3):
            optimizer.zero_grad()
            model(torch.randn(8, 3)).square().mean().backward()
            optimizer.step()  # in-place updates of the parameters
    assert not torch.equal(params["0", "weight"], start)  # the training reached the loaded leaves
    assert _files(tmp_path / "ckpt") == before  # and never the checkpoint


def test_mode_r_saved_back_writes_the_changed_data(tmp_path: Path) -> None:
    # A copy-on-write leaf is not the file's content: re-saving it in place must write
    # it, not hard-link the unchanged file.
    _outer().memmap(tmp_path / "ckpt")
    loaded = Outer.load_memmap(tmp_path / "ckpt", mode="r")
    loaded.x[0] = -1.0
    loaded.memmap_(tmp_path / "ckpt")
    assert Outer.load_memmap(tmp_path / "ckpt").x.tolist() == [-1.0, 1.0, 2.0, 3.0]


def test_mode_of_load_memmap_and_load_memmap_(tmp_path: Path) -> None:
    _nested().memmap(tmp_path / "td")
    before = _files(tmp_path / "td")
    for load in (
        tclass.load_memmap,
        TensorDict.load_memmap,
        tclass.TensorDictBase.load_memmap,
        TensorDict.load,
    ):
        for mode in ("r", "r+"):
            loaded: Any = load(tmp_path / "td", mode=mode)
            leaves = [
                loaded["top"],
                loaded["a", "w"],
                loaded["a", "b", "c"],
                *(m["m"] for m in loaded["s"].tensordicts),
            ]
            assert [leaf._mode for leaf in leaves] == [mode] * 5
    target = _nested().apply(torch.zeros_like)
    assert target.load_memmap_(tmp_path / "td", mode="r") is target and target[
        "a", "b", "c"
    ].tolist() == [0, 1, 2]
    assert _files(tmp_path / "td") == before
    with pytest.raises(ValueError, match="mode must be None, 'r' or 'r\\+', got 'w'"):
        TensorDict.load_memmap(tmp_path / "td", mode="w")  # type: ignore[arg-type]


# The read-only case runs in a child process: as root, a 0444 file is writable unless the
# process drops CAP_DAC_OVERRIDE, which the child does (it cannot be taken back).
_READ_ONLY_CHILD = r"""
import ctypes, json, os, sys
if os.geteuid() == 0:
    libc = ctypes.CDLL(None, use_errno=True)
    class Header(ctypes.Structure):
        _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]
    class Data(ctypes.Structure):
        _fields_ = [
            ("effective", ctypes.c_uint32),
            ("permitted", ctypes.c_uint32),
            ("inheritable", ctypes.c_uint32),
        ]
    header, data = Header(0x20080522, 0), (Data * 2)()
    assert libc.capget(ctypes.byref(header), data) == 0
    data[0].effective &= ~(1 << 1)  # CAP_DAC_OVERRIDE
    assert libc.capset(ctypes.byref(header), data) == 0, ctypes.get_errno()
import torch
import tclass
from tclass import TensorDict
folder = sys.argv[1]
out = {}
try:
    TensorDict.load_memmap(folder, mode="r+")
    out["r+"] = "loaded"
except Exception as error:
    out["r+"] = [
        type(error).__name__,
        isinstance(error, PermissionError),
        isinstance(error, tclass.TclassError),
        str(error),
    ]
for mode in (None, "r"):
    loaded = TensorDict.load_memmap(folder, mode=mode)
    loaded["a", "w"][0] = 42.0  # a read-only file is mapped copy-on-write
    out[str(mode)] = [loaded["a", "w"]._mode, loaded["a", "w"].tolist()]
print(json.dumps(out))
"""


def test_mode_r_plus_on_a_read_only_file_is_a_clear_error(tmp_path: Path) -> None:
    _nested().memmap(tmp_path / "td")
    leaf = tmp_path / "td" / "a" / "w.memmap"
    os.chmod(leaf, 0o444)
    before = _files(tmp_path / "td")
    env = {**os.environ, "PYTHONPATH": str(Path(tclass.__file__).resolve().parents[1])}
    done = subprocess.run(
        [sys.executable, "-c", _READ_ONLY_CHILD, str(tmp_path / "td")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result = __import__("json").loads(done.stdout)
    name, is_permission, is_tclass, message = result["r+"]
    assert (name, is_permission, is_tclass) == ("FilePermissionError", True, True)
    assert str(leaf) in message and "mode='r'" in message
    assert result["None"] == ["r", [42.0, 1.0, 1.0]] and result["r"] == ["r", [42.0, 1.0, 1.0]]
    assert _files(tmp_path / "td") == before and stat.S_IMODE(leaf.stat().st_mode) == 0o444


# --- subpath= --------------------------------------------------------------------------------


def test_subpath_forms(tmp_path: Path) -> None:
    _nested().memmap(tmp_path / "td")
    for subpath in ("a/b", ("a", "b"), ("a", ("b",)), "a//b/"):
        loaded = tclass.load_memmap(tmp_path / "td", subpath=subpath)
        assert type(loaded) is TensorDict and loaded["c"].tolist() == [0, 1, 2], subpath
    assert set(TensorDict.load_memmap(tmp_path / "td", subpath="a").keys()) == {"b", "w"}
    assert set(tclass.load_memmap(tmp_path / "td", subpath="").keys()) == {
        "a",
        "s",
        "top",
    }  # the whole tree
    member = TensorDict.load_memmap(tmp_path / "td", subpath="s/1")  # a lazy stack's member
    assert member["m"].tolist() == [1.0, 1.0, 1.0]
    assert isinstance(tclass.load_memmap(tmp_path / "td", subpath="s"), LazyStackedTensorDict)
    meta = tclass.load_memmap(tmp_path / "td", device="meta", subpath=("a", "b"))
    assert meta["c"].is_meta and meta["c"].shape == (3,)
    shared = tclass.load_memmap(tmp_path / "td", subpath="a", mode="r")
    assert shared["w"]._mode == "r" and shared["w"].filename == str(
        tmp_path / "td" / "a" / "w.memmap"
    )
    assert shared._saved_at is None


def test_subpath_steps_through_records(tmp_path: Path) -> None:
    _outer().memmap(tmp_path / "rec")
    for subpath in ("inner", ("inner",), "_tensordict/inner"):
        inner = Inner.load_memmap(tmp_path / "rec", subpath=subpath)
        assert type(inner) is Inner and inner.y.tolist() == [10.0, 11.0, 12.0, 13.0]
    fields = TensorDict.load_memmap(
        tmp_path / "rec", subpath="_tensordict"
    )  # the record's own TensorDict
    assert set(fields.keys()) == {"x", "inner", "tag"}
    assert set(TensorDict.load_memmap(tmp_path / "rec", subpath="inner/_tensordict").keys()) == {
        "y"
    }
    with pytest.raises(ClassMismatchError, match="subpath='inner' holds a record of class Inner"):
        Outer.load_memmap(tmp_path / "rec", subpath="inner")


def test_subpath_that_names_no_node(tmp_path: Path) -> None:
    _nested().memmap(tmp_path / "td")
    _outer().memmap(tmp_path / "rec")
    cases: list[tuple[Path, Any, str]] = [
        (tmp_path / "td", "top", "'top' is a tensor, not a nested collection"),
        (tmp_path / "td", "a/w", "'a/w' is a tensor"),
        (tmp_path / "td", "nope", "has no nested collection 'nope' \\(it has: 'a', 's'\\)"),
        (tmp_path / "td", "s/2", "'s/2' is not a member of the lazy stack"),
        (tmp_path / "td", "s/01", "is not a member"),
        (tmp_path / "td", (), "subpath must be a '/'-separated string or a \\(nested\\) tuple"),
        (tmp_path / "td", ("a", 1), "subpath must be"),
        (tmp_path / "rec", "x", "'x' is a tensor"),
        (
            tmp_path / "rec",
            "tag/more",
            "_tensordict/tag' holds a .*NonTensorData, which has no nested collections",
        ),
    ]
    for folder, subpath, message in cases:
        with pytest.raises(SubpathError, match=message) as caught:
            tclass.load_memmap(folder, subpath=subpath)
        assert isinstance(caught.value, ValueError), subpath  # what the peer raises


def test_subpath_never_leaves_the_folder(tmp_path: Path) -> None:
    _nested().memmap(tmp_path / "td")
    TensorDict({"secret": torch.ones(3)}, [3]).memmap(tmp_path / "outside")
    for subpath in (
        "..",
        "../outside",
        "a/../..",
        "./a",
        "a/.",
        "/etc",
        "/a/b",
        "\\a",
        ("..", "outside"),
        ("a", "."),
        "a\x00",
    ):
        with pytest.raises(UnsafePathError):
            tclass.load_memmap(tmp_path / "td", subpath=subpath)
    # A nested folder swapped for a link to elsewhere is refused, not followed.
    os.rename(tmp_path / "td" / "a", tmp_path / "a-moved")
    os.symlink(tmp_path / "outside", tmp_path / "td" / "a")
    with pytest.raises(UnsafePathError, match="symlink"):
        tclass.load_memmap(tmp_path / "td", subpath="a")


# --- durable= --------------------------------------------------------------------------------


def _fsynced_inodes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Records the inode of every descriptor os.fsync is called on."""
    inodes: list[int] = []
    real = os.fsync

    def fsync(fd: int) -> None:
        inodes.append(os.fstat(fd).st_ino)
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return inodes


def test_durable_saves_sync_every_file_and_folder_and_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced = _fsynced_inodes(monkeypatch)
    record = _outer()
    saves: dict[str, Callable[[Path], Any]] = {
        "memmap": lambda p: record.memmap(p, durable=True),
        "save": lambda p: record.save(p, durable=True, num_threads=2),
        "memmap_like": lambda p: record.memmap_like(p, durable=True),
        "module memmap": lambda p: tclass.memmap(record, p, durable=True),
        "module save": lambda p: tclass.save(record, p, durable=True),
        "memmap_": lambda p: _outer().memmap_(p, durable=True),
    }
    for name, save in saves.items():
        folder = tmp_path / name.replace(" ", "-")
        synced.clear()
        save(folder)
        everything = [folder, *folder.rglob("*")]
        # 5 folders (the str field is a node), 5 meta.json, 2 leaves, 2 records' schema.json
        assert len(everything) == 14
        expected = {p.stat().st_ino for p in everything} | {tmp_path.stat().st_ino}
        assert expected <= set(synced), (name, len(expected - set(synced)))
        loaded = Outer.load_memmap(folder)
        zeros = name == "memmap_like"
        assert (
            loaded.x.tolist() == ([0.0] * 4 if zeros else [0.0, 1.0, 2.0, 3.0])
            and loaded.tag == "ckpt"
        ), name
    # Re-saving in place hard-links the mapped files: their pages are synced too.
    loaded = Outer.load_memmap(tmp_path / "memmap")
    loaded.x[0] = 9.0
    synced.clear()
    loaded.memmap_(tmp_path / "memmap", durable=True)
    assert (tmp_path / "memmap" / "_tensordict" / "x.memmap").stat().st_ino in synced


def test_default_save_syncs_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Atomic renames already make a save safe against the writer being killed; syncing
    # meta.json alone (data files unsynced) bought no power-loss guarantee.
    synced = _fsynced_inodes(monkeypatch)
    _outer().memmap(tmp_path / "a")
    _outer().memmap_like(tmp_path / "b")
    _nested().memmap(tmp_path / "a")  # a replacing save
    assert synced == []
    assert Outer.load_memmap(tmp_path / "b").tag == "ckpt" and TensorDict.load_memmap(
        tmp_path / "a"
    )["top"].shape == (3,)


# --- concurrent writers ------------------------------------------------------------------------


def test_a_staging_folder_removed_before_its_lock_is_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What another writer's cleanup does in the instant between a staging folder's mkdir
    # and its flock: it finds it unlocked and removes it. The save must start again.
    real_mkdir, removed = os.mkdir, list[Any]()

    def mkdir_then_cleaned(path: Any, *args: Any, **kwargs: Any) -> None:
        real_mkdir(path, *args, **kwargs)
        if ".tclass-staging-" in os.path.basename(os.fspath(path)) and len(removed) < 3:
            removed.append(path)
            os.rmdir(path)

    monkeypatch.setattr(os, "mkdir", mkdir_then_cleaned)
    _nested().memmap(tmp_path / "td")
    assert len(removed) == 3 and TensorDict.load_memmap(tmp_path / "td")[
        "a", "b", "c"
    ].tolist() == [0, 1, 2]


def test_a_staging_folder_removed_between_its_open_and_its_lock_is_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The cleanup's removal can also fall after the open: the folder open is then gone
    # (no links left), and the save starts again with a new one.
    import fcntl

    real_flock, removed = fcntl.flock, list[str]()

    def cleaned_then_flock(fd: int, operation: int) -> None:
        path = os.readlink(f"/proc/self/fd/{fd}")
        if ".tclass-staging-" in os.path.basename(path) and len(removed) < 2:
            removed.append(path)
            os.rmdir(path)
        real_flock(fd, operation)

    monkeypatch.setattr(fcntl, "flock", cleaned_then_flock)
    _nested().memmap(tmp_path / "td")
    assert len(removed) == 2
    assert TensorDict.load_memmap(tmp_path / "td")["a", "b", "c"].tolist() == [0, 1, 2]
    assert [p.name for p in tmp_path.iterdir()] == ["td"]


def test_a_staging_name_another_process_holds_is_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Staging names are a per-process token and a serial: where a folder of that name
    # exists (a process of the same token, live here: locked), the next name is taken.
    import fcntl
    import itertools

    write = tclass._io.memmap._write
    monkeypatch.setattr(write, "_TOKEN", ["0badc0de"])
    monkeypatch.setattr(write, "_SERIALS", itertools.count())
    taken = tmp_path / ".td.tclass-staging-0badc0de0"
    taken.mkdir()
    fd = os.open(taken, os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        _nested().memmap(tmp_path / "td")
        assert taken.exists()
    finally:
        os.close(fd)
    assert TensorDict.load_memmap(tmp_path / "td")["top"].tolist() == [0.0, 0.0, 0.0]


def test_a_forked_child_draws_its_own_staging_token() -> None:
    import warnings

    read, write = os.pipe()
    with warnings.catch_warnings():  # Python 3.12+ warns of fork() beside threads
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # the child: report its token, and nothing else
        os.write(write, tclass._io.memmap._write._TOKEN[0].encode())
        os._exit(0)
    os.close(write)
    child = os.read(read, 64).decode()
    os.close(read)
    os.waitpid(pid, 0)
    assert len(child) == 8 and child != tclass._io.memmap._write._TOKEN[0]


def test_a_load_inside_a_device_context_maps_the_files_on_the_cpu(tmp_path: Path) -> None:
    """As the peer: a ``torch.device`` context changes where new tensors go, not where a
    file is mapped (the mapping was refused: a meta tensor given a CPU storage)."""
    TensorDict({"a": torch.arange(4.0)}, [4]).memmap(tmp_path / "td")
    with torch.device("meta"):
        loaded = TensorDict.load_memmap(tmp_path / "td")
    assert isinstance(loaded["a"], MemoryMappedTensor) and loaded["a"].device.type == "cpu"
    assert loaded["a"].tolist() == [0.0, 1.0, 2.0, 3.0]


def test_a_forked_child_maps_its_own_descriptors(tmp_path: Path) -> None:
    """A load reopens each leaf through /proc/<pid>/fd: a forked child names its own pid
    there (the parent's descriptor N is another file, or none)."""
    import warnings

    TensorDict({"a": torch.arange(6.0), "b": torch.ones(6, 2)}, [6]).memmap(tmp_path / "td")
    TensorDict.load_memmap(tmp_path / "td")  # the parent has loaded before it forks
    read, write = os.pipe()
    with warnings.catch_warnings():  # Python 3.12+ warns of fork() beside threads
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # the child: load, report what it read, and nothing else
        try:
            loaded = TensorDict.load_memmap(tmp_path / "td")
            loaded["a"][0] = 9.0  # written through to the file
            report = f"{loaded['a'].tolist()} {loaded['b'].sum().item()}"
        except BaseException as error:
            report = repr(error)
        os.write(write, report.encode())
        os._exit(0)
    os.close(write)
    child = os.read(read, 4096).decode()
    os.close(read)
    os.waitpid(pid, 0)
    assert child == "[9.0, 1.0, 2.0, 3.0, 4.0, 5.0] 12.0"
    assert TensorDict.load_memmap(tmp_path / "td")["a"][0].item() == 9.0


def _concurrent_writer(
    prefix: str, writer: int, saves: int, widen: bool, start: Any, results: Any
) -> None:
    """A writer process: ``saves`` saves of its own data into ``prefix``. Self-contained:
    its source runs in the child (see test_io_crash.py)."""
    import os
    import time
    import traceback

    import torch

    import tclass

    if widen:  # a pause between a staging folder's mkdir and the rest of the save
        real_mkdir = os.mkdir

        def slow_mkdir(path, *args, **kwargs):  # type: ignore[no-untyped-def]
            real_mkdir(path, *args, **kwargs)
            if ".tclass-staging-" in os.path.basename(os.fspath(path)):
                time.sleep(0.003)

        os.mkdir = slow_mkdir
    td = tclass.TensorDict(
        {"x": torch.full((64, 8), writer), "n": {"y": torch.full((64,), writer)}}, [64]
    )
    done, errors, crashes = 0, [], []
    start.wait(60)
    for _ in range(saves):
        try:
            td.memmap(prefix)
            done += 1
        except tclass.TclassError as error:  # a clear error is allowed
            errors.append(f"{type(error).__name__}: {error}")
        except BaseException:
            crashes.append(traceback.format_exc())
    results.put((writer, done, errors, crashes))


_WRITER_HEAD = "from __future__ import annotations\nfrom typing import Any\n"


@pytest.mark.parametrize("widen", [False, True], ids=["natural", "widened-window"])
def test_concurrent_writers_into_one_folder(tmp_path: Path, widen: bool) -> None:
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["tclass"])
    prefix, writers, saves = tmp_path / "shared", 6, 15
    start, results = ctx.Event(), ctx.Queue()
    source = (
        _WRITER_HEAD
        + inspect.getsource(_concurrent_writer)
        + "\n_concurrent_writer(PREFIX, WRITER, SAVES, WIDEN, START, RESULTS)\n"
    )
    children = []
    for writer in range(writers):
        scope = {
            "PREFIX": str(prefix),
            "WRITER": writer,
            "SAVES": saves,
            "WIDEN": widen,
            "START": start,
            "RESULTS": results,
        }
        children.append(ctx.Process(target=exec, args=(source, scope), daemon=True))
    for child in children:
        child.start()
    time.sleep(0.5)  # let every child reach the start line
    start.set()
    outcomes = [results.get(timeout=120) for _ in children]
    for child in children:
        child.join(30)
        assert child.exitcode == 0, child.exitcode
    crashes = [crash for _, _, _, crash_list in outcomes for crash in crash_list]
    assert not crashes, crashes[0]
    errors = [error for _, _, error_list, _ in outcomes for error in error_list]
    assert sum(done for _, done, _, _ in outcomes) + len(errors) == writers * saves
    assert sum(done for _, done, _, _ in outcomes) >= writers * saves // 2, errors[:3]
    # The folder holds one writer's data, whole.
    loaded = TensorDict.load_memmap(prefix)
    writer = int(loaded["x"][0, 0])
    assert bool((loaded["x"] == writer).all()) and bool((loaded["n", "y"] == writer).all())
    TensorDict({"x": torch.zeros(1)}, [1]).memmap(prefix)  # removes what killed writers would leave
    assert [p.name for p in tmp_path.iterdir()] == ["shared"]


def test_install_over_a_folder_another_writer_created(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two first saves racing: both saw no folder; the second to rename meets the first's.
    real_install, raced = tclass._io.memmap._write._install, list[str]()

    def install(staging: str, root: str, old_tree: bool) -> None:
        if not raced:  # the other writer installs its tree first
            raced.append(root)
            TensorDict({"other": torch.ones(2)}, [2]).memmap(root)
        real_install(staging, root, old_tree)

    monkeypatch.setattr(tclass._io.memmap._write, "_install", install)
    _nested().memmap(tmp_path / "td")
    assert raced and set(TensorDict.load_memmap(tmp_path / "td").keys()) == {"a", "s", "top"}
    assert [p.name for p in tmp_path.iterdir()] == ["td"]


def _parent_listings(monkeypatch: pytest.MonkeyPatch, parent: Path) -> list[str]:
    """The listings of ``parent`` from now on (by the save's search for dead writers)."""
    listed: list[str] = []
    real_listdir = os.listdir

    def listdir(path: Any = ".") -> list[str]:
        if not isinstance(path, int) and os.fspath(path) == str(parent):
            listed.append(os.fspath(path))
        return real_listdir(path)

    monkeypatch.setattr(os, "listdir", listdir)
    return listed


def test_resaving_lists_the_parent_only_after_it_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for sibling in range(50):  # a parent with many entries: listing it costs
        (tmp_path / f"other{sibling}").mkdir()
    td = _nested()
    td.memmap(tmp_path / "td")  # first save: the parent is listed
    listed = _parent_listings(monkeypatch, tmp_path)
    for _ in range(3):  # nothing else changed beside the folder: no listing
        td.memmap(tmp_path / "td")
    for index in range(3):  # nor for new folders beside it
        td.memmap(tmp_path / f"new{index}")
    assert listed == []
    (tmp_path / "new-sibling").mkdir()  # another program changed the parent
    td.memmap(tmp_path / "td")
    assert len(listed) == 1
    td.memmap(tmp_path / "td")
    assert len(listed) == 1 and set(TensorDict.load_memmap(tmp_path / "td").keys()) == {
        "a",
        "s",
        "top",
    }


@pytest.mark.parametrize("first_save", [True, False], ids=["new-root", "replaced-root"])
def test_a_dead_writers_staging_folder_made_after_a_save_is_removed_by_the_next(
    tmp_path: Path, first_save: bool
) -> None:
    # A writer killed after this process's last save of the folder (its staging folder
    # unlocked, as a killed writer's is): the next save must still find and remove it.
    prefix = tmp_path / "td"
    if not first_save:
        _nested().memmap(prefix)
    _nested().memmap(prefix)
    dead = tmp_path / ".td.tclass-staging-0badc0de"
    dead.mkdir()
    (dead / "meta.json").write_text("{}")
    _nested().memmap(prefix)
    assert [p.name for p in tmp_path.iterdir()] == ["td"]


def test_another_folders_dead_staging_folder_is_left_and_keeps_the_parent_listed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Only a save of "other" removes what a killed save of "other" left (its moved-aside
    # old tree may be the only copy of the data); meanwhile saves beside it list the parent.
    _nested().memmap(tmp_path / "td")
    other = tmp_path / ".other.tclass-staging-0badc0de"
    other.mkdir()
    listed = _parent_listings(monkeypatch, tmp_path)
    _nested().memmap(tmp_path / "td")
    _nested().memmap(tmp_path / "td")
    assert len(listed) == 2 and other.exists()
    _nested().memmap(tmp_path / "other")
    assert not other.exists()
    _nested().memmap(tmp_path / "td")
    assert len(listed) == 3  # the save that removed it listed the parent; none since
    _nested().memmap(tmp_path / "td")
    assert len(listed) == 3


def test_a_live_writers_staging_folder_keeps_the_parent_listed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A save that meets another writer's (locked) staging folder cannot tell whether that
    # writer will finish: the next save lists the parent again, and removes the folder
    # once its writer has died (its lock released).
    import fcntl

    prefix = tmp_path / "td"
    _nested().memmap(prefix)
    live = tmp_path / ".td.tclass-staging-1ive1ive"
    live.mkdir()
    fd = os.open(live, os.O_RDONLY | os.O_DIRECTORY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        listed = _parent_listings(monkeypatch, tmp_path)
        _nested().memmap(prefix)  # the parent changed: listed; the live folder stays
        assert len(listed) == 1 and live.exists()
        _nested().memmap(prefix)  # listed again: a live writer was there
        assert len(listed) == 2 and live.exists()
    finally:
        os.close(fd)  # the writer dies
    _nested().memmap(prefix)
    assert len(listed) == 3 and not live.exists()


# --- the peer's remaining save options --------------------------------------------------


def test_return_early_gives_a_future_of_the_save(tmp_path: Path) -> None:
    td = TensorDict(a=torch.arange(4.0), b=torch.ones(4, 2), batch_size=[4])
    future = td.memmap(tmp_path / "early", num_threads=2, return_early=True)
    assert not isinstance(future, TensorDict)
    saved = future.result()  # type: ignore[attr-defined]
    assert isinstance(saved, TensorDict) and saved.is_locked
    assert saved["a"].tolist() == [0.0, 1.0, 2.0, 3.0]
    assert TensorDict.load_memmap(tmp_path / "early")["b"].sum().item() == 8.0
    in_place = td.clone()
    pending = in_place.memmap_(tmp_path / "inplace", num_threads=2, return_early=True)
    assert pending.result() is in_place  # type: ignore[attr-defined]
    assert isinstance(in_place["a"], MemoryMappedTensor)
    # One thread: nothing to wait for, the collection itself (as the peer).
    assert isinstance(td.memmap(tmp_path / "sync", return_early=True), TensorDict)


def test_return_early_reraises_the_save_error(tmp_path: Path) -> None:
    future = TensorDict(a=torch.ones(2), batch_size=[2]).memmap(
        tmp_path / "bad", num_threads=2, return_early=True, compression="deflate"
    )
    with pytest.raises(ValueError, match="only supported for archives"):
        future.result()  # type: ignore[attr-defined]
    with pytest.raises(NotImplementedError, match="archive"):
        TensorDict(a=torch.ones(2)).memmap(tmp_path / "x.tdz", num_threads=2, return_early=True)


def test_atomic_and_robust_key_are_accepted(tmp_path: Path) -> None:
    td = TensorDict({"a b": torch.ones(2), "c/d": torch.zeros(2)}, batch_size=[2])
    for robust_key in (True, False, None):
        saved = td.memmap(tmp_path / str(robust_key), atomic=True, robust_key=robust_key)
        assert sorted(os.listdir(tmp_path / str(robust_key))) == [
            "a%20b.memmap", "c%2Fd.memmap", "meta.json"
        ]  # fmt: skip
        assert saved["c/d"].tolist() == [0.0, 0.0]


def test_share_non_tensor_is_refused_with_the_reason(tmp_path: Path) -> None:
    td = TensorDict({"s": "x", "a": torch.ones(2)}, batch_size=[2])
    with pytest.raises(NotImplementedError, match="meta.json"):
        td.memmap(tmp_path / "s", share_non_tensor=True)
    assert not (tmp_path / "s").exists()
    td.memmap(tmp_path / "s", share_non_tensor=False)


def _sent_as_plain_view(td: TensorDict) -> None:
    """A plain view of a loaded leaf sent through torch.multiprocessing (the default
    file_descriptor strategy): torch cannot pass a file mapping by descriptor."""
    from multiprocessing.reduction import ForkingPickler

    strategy = torch.multiprocessing.get_sharing_strategy()
    torch.multiprocessing.set_sharing_strategy("file_descriptor")
    try:
        with pytest.raises(OSError):  # as the peer: refused, not copied to shared memory
            ForkingPickler.dumps(td["x"].view(-1))
    finally:
        torch.multiprocessing.set_sharing_strategy(strategy)


@pytest.mark.parametrize(
    "share",
    [
        lambda td: td["x"].share_memory_(),
        lambda td: td.share_memory_(),
        lambda td: td["x"].untyped_storage().share_memory_(),
        _sent_as_plain_view,
    ],
    ids=["leaf.share_memory_", "td.share_memory_", "storage.share_memory_", "plain_view_sent"],
)
def test_loaded_leaves_stay_on_their_files_when_shared(
    tmp_path: Path, share: Callable[[TensorDict], object]
) -> None:
    """A loaded leaf is torch's own file mapping, which counts as shared memory: sharing
    it leaves it in place, and writes still reach the file. (A mapping tclass made
    itself would be copied into shared memory by each of these, silently detaching the
    leaf from its file: why loads map through torch.)"""
    TensorDict({"x": torch.zeros(4)}, [4]).memmap(tmp_path / "td")
    loaded = TensorDict.load_memmap(tmp_path / "td")
    assert loaded["x"].is_shared() and loaded["x"].untyped_storage().is_shared()
    share(loaded)
    loaded["x"][1] = 7.0
    on_disk = torch.from_file(str(tmp_path / "td" / "x.memmap"), size=4, dtype=torch.float32)
    assert on_disk.tolist() == [0.0, 7.0, 0.0, 0.0]


def _open_descriptors() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs Linux's /proc")
@pytest.mark.parametrize("mode", [None, "r", "r+"])
def test_a_load_holds_no_descriptor_open_while_its_leaves_live(
    tmp_path: Path, mode: str | None
) -> None:
    """Each leaf is opened, checked and mapped, and its descriptors closed before the load
    returns: the mappings alone keep the files. (torch's mapping of a descriptor,
    ``UntypedStorage._new_shared_fd_cpu``, and Python's ``mmap.mmap`` before 3.13 each hold
    a duplicate of it as long as the map lives, one per leaf: a folder of more leaves
    than the descriptor limit would not load; why loads map through torch by path.)"""
    leaves = {f"x{i}": torch.full((4,), float(i)) for i in range(40)}
    TensorDict(leaves, [4]).memmap(tmp_path / "td")
    TensorDict.load_memmap(tmp_path / "td")  # a first load: whatever it caches, cached
    before = _open_descriptors()
    loaded = TensorDict.load_memmap(tmp_path / "td", mode=mode)
    view = loaded["x39"][1:]
    assert _open_descriptors() == before
    assert all(loaded[key].storage_offset() == 0 for key in leaves)
    loaded["x1"][0] += 1  # shared or copy-on-write, the map works with its descriptor closed
    assert loaded["x1"].tolist() == [2.0, 1.0, 1.0, 1.0] and view.tolist() == [39.0] * 3
    del loaded
    assert view.sum().item() == 117.0  # a view keeps its mapping after the rest is gone
    assert _open_descriptors() == before


def test_share_memory_of_a_saved_collection_keeps_its_files(tmp_path: Path) -> None:
    """``td.memmap(folder).share_memory_()``: the files are already shared between
    processes, so the collection comes back itself, memory-mapped, writing its files
    (the peer refuses: "memmap and shared memory are mutually exclusive features";
    program 15,824,202 of methods,index,shape,combine L8)."""
    saved = TensorDict({"x": torch.zeros(4)}, [4]).memmap(tmp_path / "td")
    shared = saved.share_memory_()
    assert shared is saved and shared.is_memmap() and shared.is_locked
    assert isinstance(shared["x"], MemoryMappedTensor) and shared["x"].is_shared()
    shared["x"][2] = 5.0
    on_disk = torch.from_file(str(tmp_path / "td" / "x.memmap"), size=4, dtype=torch.float32)
    assert on_disk.tolist() == [0.0, 0.0, 5.0, 0.0]
