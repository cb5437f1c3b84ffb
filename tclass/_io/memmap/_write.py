"""Writing a collection to a folder: staged, then swapped into place in one rename.

A save never writes into the folder readers see. It builds the whole new tree in a
sibling staging folder (``.NAME.tclass-staging-XXXX``): leaves that already map the very
file they would be saved to (shared, ``mode="r+"``) are hard-linked (no copy, and their
live mappings stay the folder's files), the others written (in ``num_threads`` threads
when asked), each ``meta.json`` written whole. The staging folder then replaces the old
one with one atomic exchange (``renameat2(RENAME_EXCHANGE)`` where the OS has it) and the
old tree is removed. A writer killed at any moment leaves the old folder complete (or, on
systems without the exchange, briefly no folder: a clear error, never mixed data); a
reader never sees a half-written ``meta.json``: the files are complete in the page cache
before the rename makes them visible, which is all a process crash needs.

Power loss is another matter: by default nothing is fsynced (that would write every byte
to disk before returning, and syncing only the small files would buy no guarantee while
the data files are not). ``durable=True`` fsyncs every written file (data and metadata)
and every folder of the new tree before the swap, and the parent folder after it: once
the save returns, the new tree survives a power cut.

Each writer holds its staging folder locked (``flock``) from before anything is written
in it; a save removes the staging folders nobody holds (writers that were killed). A new
staging folder is locked and then checked to be still in place, so another writer's
cleanup that removed it in the instant between its creation and its lock is noticed,
and the writer starts again with a new folder.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import itertools
import os
import secrets
import shutil
import stat
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NoReturn

import torch

from tclass._core._memmap import MemoryMappedTensor, save_new_file, without_grad
from tclass._io.memmap._format import META, SCHEMA, TEMP_PREFIX
from tclass._io.memmap._plan import Leaf, plan_tree
from tclass._io.memmap._values import PICKLE_FILES
from tclass.errors import FileConflictError, NotAFolderError

__all__ = [
    "StagedTree",
    "final_root",
    "replace_file",
    "save_tree",
    "sync_path",
    "temp_path",
    "write_file",
]

_STAGING = ".tclass-staging-"
_STAGING_TRIES = 100  # new staging folders tried when other writers' cleanups remove them
_FORMAT_FILES = frozenset({META, SCHEMA, "json_types.json", *PICKLE_FILES})


def save_tree(
    node: Any,
    prefix: str | os.PathLike[str] | None,
    *,
    copy_existing: bool = False,
    num_threads: int = 0,
    existsok: bool = True,
    like: bool = False,
    allow_pickle: bool = False,
    link: Callable[[str], Any] | None = None,
    durable: bool = False,
) -> Any:
    """Save ``node`` under ``prefix`` (anonymous shared memory when None) and return a
    copy of it whose leaves are MemoryMappedTensors on the written files (and whose
    TensorDict nodes hold ``link(their folder)``, when given). ``durable``: fsync the
    files and folders too (see the module's docstring)."""
    if prefix is None:
        return _to_shared_memory(node, like)
    root, old_tree = final_root(prefix)
    plan, rebuild = plan_tree(
        node, root, copy_existing=copy_existing, like=like, allow_pickle=allow_pickle, link=link
    )
    if old_tree and not existsok:
        _refuse_existing(root, plan.leaves)
    with StagedTree(root, old_tree, durable) as staging:
        for rel in plan.dirs[1:]:
            os.mkdir(os.path.join(staging, rel))
        written = _write_leaves(plan.leaves, staging, root, num_threads, like)
        for rel, data in plan.files:
            write_file(f"{staging}/{rel}", data)
        if durable:
            _sync_tree(staging, plan.dirs, plan.leaves, plan.files, num_threads)
    return rebuild(written)


class StagedTree:
    """A new staging folder beside ``root``, to fill in a ``with`` block (``as`` gives
    its path); on a clean exit it replaces ``root`` in one swap (and the old tree is
    removed), otherwise it is removed. ``durable``: fsync the parent after the swap (the
    caller syncs the tree). A class, not a generator: a save pays less to enter it."""

    def __init__(self, root: str, old_tree: bool, durable: bool = False) -> None:
        self.root, self.old_tree, self.durable = root, old_tree, durable
        self.parent = os.path.dirname(root)

    def __enter__(self) -> str:
        root, parent = self.root, self.parent
        try:
            before = os.stat(parent)
        except FileNotFoundError:
            os.makedirs(parent, exist_ok=True)  # as the peer does for a new path
            before = os.stat(parent)
        if self.old_tree:
            _check_replaceable(root)
        alone = _CLEAN_PARENTS.get(parent) == _parent_state(before)
        if not alone:  # the parent changed since this process's last save into it
            alone = _remove_dead_staging(root)
            before = os.stat(parent)
        self.before, self.alone = before, alone
        # Locked: later saves see that it is not a dead writer's.
        self.staging, self.lock = _make_staging(root)
        return self.staging

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        try:
            if kind is not None:
                self._discard()
                return
            try:
                _install(self.staging, self.root, self.old_tree)
                if self.durable:
                    sync_path(self.parent)  # the rename itself
            except BaseException:
                self._discard()
                raise
        finally:
            os.close(self.lock)
        _remember_clean(self.parent, self.before, self.alone, self.old_tree)

    def _discard(self) -> None:
        """The staging folder removed (still locked: no cleanup meets it half-removed)."""
        shutil.rmtree(self.staging, ignore_errors=True)
        _CLEAN_PARENTS.pop(self.parent, None)


# A parent folder's state (device, inode, mtime, links) after a save from this process
# into it, recorded when that save could tell that the parent held no staging folder but
# its own (of any save's: live, or dead and of another name, which it does not remove).
# While the parent is in that state, a save into it need not list it (which costs in
# proportion to its entries) to find dead writers' staging folders: a writer that creates
# one changes the parent's mtime and, as it is a folder, its link count; and a writer
# already there when the state was recorded is not possible (its staging folder would
# have been seen, and the state not recorded).
_CLEAN_PARENTS: dict[str, tuple[int, int, int, int]] = {}


def _parent_state(status: os.stat_result) -> tuple[int, int, int, int]:
    return (status.st_dev, status.st_ino, status.st_mtime_ns, status.st_nlink)


def _remember_clean(parent: str, before: os.stat_result, alone: bool, old_tree: bool) -> None:
    """Records the parent's state after a save that found no other staging folder in it,
    when its link count says no folder came or went but what the save itself did (a new
    root adds one; a replaced one none)."""
    _CLEAN_PARENTS.pop(parent, None)
    if not alone or before.st_nlink < 2:  # nlink 1: the file system does not count folders
        return
    try:
        after = os.stat(parent)
    except OSError:
        return
    if after.st_ino == before.st_ino and after.st_nlink == before.st_nlink + (not old_tree):
        if len(_CLEAN_PARENTS) >= _CLEAN_PARENTS_MAX:
            _CLEAN_PARENTS.clear()
        _CLEAN_PARENTS[parent] = _parent_state(after)


_CLEAN_PARENTS_MAX = 4096


def _to_shared_memory(node: Any, like: bool) -> Any:
    """The ``prefix=None`` case: leaves move to anonymous shared memory (those already
    memory-mapped are kept as they are, unless ``like``: new zeros); nothing touches the
    disk."""
    plan, rebuild = plan_tree(
        node, "", copy_existing=True, like=like, allow_pickle=True, anonymous=True
    )
    written: list[torch.Tensor] = []
    for leaf in plan.leaves:
        tensor = leaf.tensor
        if isinstance(tensor, MemoryMappedTensor) and not like:
            written.append(tensor)
        elif like and not leaf.keep:
            written.append(MemoryMappedTensor.empty(tensor.shape, dtype=tensor.dtype))
        else:
            written.append(MemoryMappedTensor.from_tensor(without_grad(tensor)))
    return rebuild(written)


def final_root(prefix: str | os.PathLike[str]) -> tuple[str, bool]:
    """The absolute folder to save into, and whether it exists (one ``lstat``)."""
    root = os.path.abspath(os.fspath(prefix))
    try:
        status = os.lstat(root)
        if stat.S_ISLNK(
            status.st_mode
        ):  # a symlinked prefix is allowed: the swap happens where it points
            root = os.path.realpath(root)
            status = os.stat(root)
    except (FileNotFoundError, NotADirectoryError):
        return root, False
    if not stat.S_ISDIR(status.st_mode):
        msg = f"cannot save into {root!r}: it is a file, not a folder; give a folder path"
        raise NotAFolderError(msg)
    return root, True


def _check_replaceable(root: str) -> None:
    """Refuse to replace a folder that holds anything but a saved tree (user files).
    One walk of the folder (its first step lists ``root`` itself), as one listing."""

    def raise_at_root(error: OSError) -> None:
        if error.filename == root:  # the folder itself unreadable: as os.listdir raises
            raise error

    walk = os.walk(root, onerror=raise_at_root)
    for dirpath, dirnames, filenames in walk:
        if dirpath == root and (dirnames or filenames) and META not in (*dirnames, *filenames):
            for name in (*dirnames, *filenames):
                if os.path.islink(os.path.join(root, name)):
                    _refuse_symlink(root, os.path.join(root, name))
            msg = (
                f"cannot save into {root!r}: the folder is not empty and holds no saved "
                f"tree ({META} is missing). Saving replaces the whole folder; choose an empty "
                "or new folder"
            )
            raise FileConflictError(msg)
        for name in filenames:
            if (
                name not in _FORMAT_FILES
                and not name.endswith(".memmap")
                and not name.startswith(TEMP_PREFIX)
            ):
                path = os.path.join(dirpath, name)
                msg = (
                    f"cannot save into {root!r}: {path!r} is not part of a saved tree, and "
                    "saving replaces the whole folder. Move it out, or choose another folder"
                )
                raise FileConflictError(msg)
        for name in dirnames:
            if os.path.islink(os.path.join(dirpath, name)):
                _refuse_symlink(root, os.path.join(dirpath, name))


def _refuse_symlink(root: str, link: str) -> NoReturn:
    msg = (
        f"cannot save into {root!r}: it holds a symlink, {link!r}, and tclass never writes "
        "a TensorDict through symlinks (the files would land where it points). Remove the "
        "link, or choose another folder"
    )
    raise FileConflictError(msg)


def _refuse_existing(root: str, leaves: Sequence[Leaf]) -> None:
    for leaf in leaves:
        path = os.path.join(root, leaf.path)
        if not leaf.reuse and os.path.exists(path):
            msg = f"{path!r} already exists; pass existsok=True to replace it"
            raise FileConflictError(msg)


def _remove_dead_staging(root: str) -> bool:
    """Remove staging folders that writers killed mid-save left beside ``root``: those
    nobody holds locked (a live writer keeps its own locked until it is done). Returns
    whether the parent holds no staging folder left, of ``root`` or any other folder
    (those are left alone: a save only cleans up after saves of its own folder)."""
    parent, name = os.path.split(root)
    prefix = f".{name}{_STAGING}"
    try:
        entries = os.listdir(parent)
    except OSError:
        return False
    joined = "/" + "/".join(entries)  # searched at C speed ("/" is in no name)
    if _STAGING not in joined:
        return True  # the usual case
    siblings = [entry for entry in entries if entry.startswith(prefix)]
    alone = len(siblings) == joined.count(_STAGING)  # no other folder's staging
    for entry in siblings:
        path = os.path.join(parent, entry)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            alone = False  # a live writer's
            continue
        else:
            shutil.rmtree(path, ignore_errors=True)
        finally:
            os.close(fd)
    return alone


def _make_staging(root: str) -> tuple[str, int]:
    """A new staging folder beside ``root`` and a descriptor holding it locked.

    Another writer's :func:`_remove_dead_staging` may find the folder between its
    ``mkdir`` and our ``flock`` (it is unlocked then) and remove it. So after taking the
    lock (which waits for such a cleanup to finish) we check that the folder is still in
    place; if not, we try again with a new name. Once we hold the lock and the folder is
    in place, no cleanup can remove it.

    Staging names are unique without a system call: a random token per process (drawn
    again in a forked child) and a serial number. A folder a cleanup removed has no
    links left, and one still linked is where it was made: nothing moves a staging
    folder but its own writer's swap (cleanups remove it; no other writer makes its
    name, and where a dead process's folder has it, ``mkdir`` fails and the next name is
    tried). So the ``fstat`` after the lock is the whole check."""
    parent, name = os.path.split(root)
    for _ in range(_STAGING_TRIES):
        staging = f"{parent}/.{name}{_STAGING}{_TOKEN[0]}{next(_SERIALS):x}"
        try:
            os.mkdir(staging)  # a plain mkdir: the folder gets the usual permissions (umask)
        except FileExistsError:  # a dead process's of the same token: the next name
            continue
        try:
            fd = os.open(staging, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            continue  # already removed by another writer's cleanup
        fcntl.flock(fd, fcntl.LOCK_EX)
        if os.fstat(fd).st_nlink > 0:  # still in place (see above)
            return staging, fd
        os.close(fd)
    msg = (
        f"could not create a staging folder beside {root!r}: other writers' cleanups "
        f"removed {_STAGING_TRIES} in a row; is something deleting {parent!r}'s hidden folders?"
    )
    raise FileConflictError(msg)


def _new_token() -> None:
    _TOKEN[0] = secrets.token_hex(4)


_TOKEN = [secrets.token_hex(4)]  # this process's part of every staging name
_SERIALS = itertools.count()  # and each name's own (next() is atomic under the GIL)
os.register_at_fork(after_in_child=_new_token)


def _write_leaves(
    leaves: Sequence[Leaf], staging: str, root: str, num_threads: int, like: bool
) -> list[torch.Tensor]:
    """The leaves written into ``staging``, to be moved to ``root``, in plan order: in
    the calling thread, and in ``workers - 1`` more (see :func:`_workers`), each given
    about as many bytes to copy."""

    def write_all(group: Sequence[int]) -> list[torch.Tensor]:
        return [
            _write_leaf(leaves[i], f"{staging}/{leaves[i].path}", f"{root}/{leaves[i].path}", like)
            for i in group
        ]

    workers = _workers(leaves, num_threads, like)
    if workers <= 1:
        return [
            _write_leaf(leaf, f"{staging}/{leaf.path}", f"{root}/{leaf.path}", like)
            for leaf in leaves
        ]
    groups = _balanced(leaves, workers)
    written: list[torch.Tensor] = [None] * len(leaves)  # type: ignore[list-item]
    with ThreadPoolExecutor(workers - 1, thread_name_prefix="tclass-write") as pool:
        others = [pool.submit(write_all, group) for group in groups[1:]]
        for group, done in zip(groups, [write_all(groups[0]), *(f.result() for f in others)]):
            for i, tensor in zip(group, done):
                written[i] = tensor
    return written


_PARALLEL_BYTES = 32 << 20  # by default, a second thread only when each has this to copy


def _workers(leaves: Sequence[Leaf], num_threads: int, like: bool) -> int:
    """How many threads write the leaves: ``num_threads`` when above 1; by default (0),
    two when torch may use more than one thread and the data gives each at least
    ``_PARALLEL_BYTES`` to copy into the page cache (one thread's copy stops short of
    what the memory moves, as torch's own copies into a mapping, which the peer's save
    makes, use its threads); 1: the calling thread alone."""
    if len(leaves) < 2:
        return 1
    if num_threads > 1:
        return min(num_threads, len(leaves))
    if num_threads == 1 or like or torch.get_num_threads() < 2:
        return 1
    sizes = [_data_bytes(leaf) for leaf in leaves]
    return 2 if sum(sizes) - max(sizes) >= _PARALLEL_BYTES else 1


def _data_bytes(leaf: Leaf) -> int:
    return 0 if leaf.reuse else leaf.tensor.numel() * leaf.tensor.element_size()


def _balanced(leaves: Sequence[Leaf], workers: int) -> list[list[int]]:
    """The leaves' indices in ``workers`` groups of about equal bytes (largest first,
    each to the lightest group), each group in plan order."""
    groups: list[list[int]] = [[] for _ in range(workers)]
    loads = [0] * workers
    for i in sorted(range(len(leaves)), key=lambda i: -_data_bytes(leaves[i])):
        lightest = loads.index(min(loads))
        groups[lightest].append(i)
        loads[lightest] += _data_bytes(leaves[i]) or 1
    return [sorted(group) for group in groups if group] or [[]]


def _write_leaf(leaf: Leaf, path: str, final: str, like: bool) -> torch.Tensor:
    """The leaf written at ``path`` in the staging folder (one open, one ``pwrite``, or
    an ``ftruncate`` for ``like``), mapped; the tensor names its ``final`` path, where
    the staging folder's swap puts the file."""
    tensor = leaf.tensor
    if leaf.reuse:
        assert isinstance(tensor, MemoryMappedTensor) and tensor.filename is not None
        os.link(tensor.filename, path)  # same inode: live mappings stay the folder's file
        return tensor
    if tensor.numel() == 0:  # the format writes no file for an empty leaf
        return MemoryMappedTensor.empty(tensor.shape, dtype=tensor.dtype)
    return save_new_file(tensor, path, final, like and not leaf.keep)


def write_file(path: str, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def temp_path(folder: str, name: str) -> str:
    """A new path beside ``folder/name`` to write before renaming it over that name (its
    ``TEMP_PREFIX`` marks it as no entry of the folder)."""
    return os.path.join(folder, f"{TEMP_PREFIX}{secrets.token_hex(4)}-{name}")


def replace_file(folder: str, name: str, data: bytes) -> None:
    """Puts ``data`` in ``folder/name`` atomically: written beside it, renamed over it
    (the file beside it removed if that fails)."""
    temp = temp_path(folder, name)
    try:
        write_file(temp, data)
        os.replace(temp, os.path.join(folder, name))
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise


def _sync_tree(
    staging: str,
    dirs: Sequence[str],
    leaves: Sequence[Leaf],
    files: Sequence[tuple[str, bytes]],
    num_threads: int,
) -> None:
    """fsync every file of the staged tree (data, linked leaves' dirty pages, meta.json),
    then every folder (their entries)."""
    paths = [f"{staging}/{leaf.path}" for leaf in leaves if leaf.tensor.numel()]
    paths += [os.path.join(staging, rel) for rel, _ in files]
    if num_threads > 1 and len(paths) > 1:
        with ThreadPoolExecutor(min(num_threads, len(paths))) as pool:
            list(pool.map(sync_path, paths))
    else:
        for path in paths:
            sync_path(path)
    for rel in dirs:  # after all their entries exist
        sync_path(os.path.join(staging, rel) if rel else staging)


def sync_path(path: str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _install(staging: str, root: str, old_tree: bool) -> None:
    """Put the staged tree at ``root``; the old tree (if any) is removed afterwards."""
    if not old_tree:
        try:
            os.rename(staging, root)
            return
        except OSError as error:  # another writer created ``root`` since we looked
            if error.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                raise
    if _exchange(staging, root):
        shutil.rmtree(staging, ignore_errors=True)  # now the old tree
    else:
        trash = staging + "-old"
        try:
            os.rename(root, trash)
        except FileNotFoundError:  # another writer is between its two renames
            pass
        os.rename(staging, root)
        shutil.rmtree(trash, ignore_errors=True)


# --- atomic exchange of two folders (Linux renameat2) ------------------------------------

_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


# libc's renameat2 once looked up (a plain dict, as _tensor_write's caches: stubtest reads
# a functools.cache wrapper's signature as (*args, **kwargs))
_FOUND: dict[str, Any] = {}


def _renameat2() -> Any:
    """libc's ``renameat2``, or None; looked up on the first exchange, in the symbols the
    interpreter already has loaded (``CDLL(None)``): ``ctypes.util.find_library`` runs
    ``ldconfig`` in a child process, a fork of the whole interpreter, which at import cost
    every ``import tclass`` about 20 ms of wall-clock time.

    Made lazy once before (sp24b), it made benchmarks/run.py's 'tc nested read' 2x slower
    (reverted in 5409db95): not through the child process but through CPython 3.11's
    type-attribute cache (4,096 slots, slot = type's version tag XOR the name's address
    >> 3). Records define ``__getattr__``, so each attribute read looks up
    ``__getattribute__`` and ``__getattr__`` on the type; two record classes with version
    tags 8 apart share those slots, and each read missed and walked the record's 33-class
    MRO to ``object``. Version tags follow lookup order, so anything run before the first
    reads (this lookup, a wrapper script) moved the collision in or out. Each record class
    now holds both hooks in its own dict (``_builder._attribute_hooks_first``), so a miss
    costs one dict lookup and the order of imports no longer matters."""
    if "renameat2" not in _FOUND:
        _FOUND["renameat2"] = _load_renameat2()
    return _FOUND["renameat2"]


def _load_renameat2() -> Any:
    try:
        function = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return None
    function.argtypes = [
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_int,
        ctypes.c_char_p,
        ctypes.c_uint,
    ]
    function.restype = ctypes.c_int
    return function


def _exchange(a: str, b: str) -> bool:
    """Swap two paths atomically; False where the OS or file system cannot."""
    renameat2 = _renameat2()
    if renameat2 is None:
        return False
    if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):
        return False
    raise OSError(code, os.strerror(code), b)
