"""Tests for tclass._core._memmap.MemoryMappedTensor (the storage layer)."""

from __future__ import annotations

import copy
import errno
import io
import math
import os
import pathlib
import pickle
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tclass import errors as _errors
from tclass._core import _memmap, _memmap_new
from tclass._core._memmap import MemoryMappedTensor

DTYPES = [
    torch.float32, torch.float64, torch.int64, torch.uint8,
    torch.bool, torch.bfloat16, torch.complex64,
]  # fmt: skip
SHAPES = [(), (3,), (2, 3)]
MB = 2**20


def _sample(dtype: torch.dtype, shape: tuple[int, ...]) -> torch.Tensor:
    """Distinct, exactly representable values of that dtype and shape."""
    base = torch.arange(1, math.prod(shape) + 1).reshape(shape)
    if dtype is torch.bool:
        return base % 2 == 0
    if dtype.is_complex:
        return torch.complex(base.float(), -base.float()).to(dtype)
    return base.to(dtype)


def _file_state(path: pathlib.Path) -> tuple[bytes, int, int]:
    st_ = path.stat()
    return path.read_bytes(), st_.st_size, st_.st_mtime_ns


def _read_back(path: pathlib.Path, dtype: torch.dtype, shape: tuple[int, ...]) -> torch.Tensor:
    """Decode a raw file independently of the code under test."""
    data = bytearray(path.read_bytes())
    if not data:
        return torch.empty(shape, dtype=dtype)
    return torch.frombuffer(data, dtype=dtype).reshape(shape)


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.fixture(params=["anonymous", "file"])
def filename(request: pytest.FixtureRequest, tmp_path: pathlib.Path) -> str | None:
    return None if request.param == "anonymous" else str(tmp_path / "t.memmap")


# --- constructors ------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_size_constructors(dtype: torch.dtype, shape: tuple[int, ...], tmp_path: Any) -> None:
    fill = True if dtype is torch.bool else 3
    for backed in (False, True):

        def name(kind: str, backed: bool = backed) -> str | None:
            return str(tmp_path / f"{kind}.memmap") if backed else None

        made = {
            "empty": MemoryMappedTensor.empty(shape, dtype=dtype, filename=name("empty")),
            "zeros": MemoryMappedTensor.zeros(shape, dtype=dtype, filename=name("zeros")),
            "ones": MemoryMappedTensor.ones(shape, dtype=dtype, filename=name("ones")),
            "full": MemoryMappedTensor.full(
                shape, fill_value=fill, dtype=dtype, filename=name("full")
            ),
        }
        expected = {
            "empty": torch.zeros(shape, dtype=dtype),  # fresh memory reads as zeros
            "zeros": torch.zeros(shape, dtype=dtype),
            "ones": torch.ones(shape, dtype=dtype),
            "full": torch.full(shape, fill, dtype=dtype),
        }
        for kind, m in made.items():
            assert type(m) is MemoryMappedTensor
            assert (m.shape, m.dtype, m.device) == (torch.Size(shape), dtype, torch.device("cpu"))
            assert torch.equal(m, expected[kind])
            assert m.filename == name(kind)
            if backed:
                path = tmp_path / f"{kind}.memmap"
                assert path.stat().st_size == m.numel() * dtype.itemsize
                assert torch.equal(_read_back(path, dtype, shape), expected[kind])
            else:
                assert m.is_shared()


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_like_constructors(dtype: torch.dtype, shape: tuple[int, ...], filename: Any) -> None:
    ref = _sample(dtype, shape)
    fill = False if dtype is torch.bool else 7
    cases: list[tuple[Callable[..., MemoryMappedTensor], tuple[Any, ...], torch.Tensor]] = [
        (MemoryMappedTensor.empty_like, (), torch.zeros_like(ref)),
        (MemoryMappedTensor.zeros_like, (), torch.zeros_like(ref)),
        (MemoryMappedTensor.ones_like, (), torch.ones_like(ref)),
        (MemoryMappedTensor.full_like, (fill,), torch.full_like(ref, fill)),
    ]
    for i, (make, args, expected) in enumerate(cases):
        m = make(ref, *args, filename=None if filename is None else f"{filename}.{i}")
        assert type(m) is MemoryMappedTensor and m.dtype == dtype
        assert torch.equal(m, expected)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_from_tensor_round_trip(dtype: torch.dtype, shape: tuple[int, ...], filename: Any) -> None:
    ref = _sample(dtype, shape)
    m = MemoryMappedTensor.from_tensor(ref, filename=filename)
    assert type(m) is MemoryMappedTensor and m.dtype == dtype and m.shape == ref.shape
    assert torch.equal(m, ref)
    assert m.untyped_storage().data_ptr() != ref.untyped_storage().data_ptr()
    if filename is not None:
        assert torch.equal(_read_back(pathlib.Path(filename), dtype, shape), ref)
        back = MemoryMappedTensor.from_filename(filename, dtype, shape)
        assert torch.equal(back, ref)


def test_from_tensor_without_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without memfd (or with the file_system strategy), _new_shared is used."""
    ref = torch.arange(5.0)
    monkeypatch.setattr(_memmap_new, "_memfd_create", None)
    assert torch.equal(MemoryMappedTensor.from_tensor(ref), ref)
    monkeypatch.undo()
    monkeypatch.setattr(_memmap_new, "_sharing_strategy", lambda: "file_system")
    m = MemoryMappedTensor.from_tensor(ref)
    assert torch.equal(m, ref) and m.is_shared()
    assert torch.equal(MemoryMappedTensor.zeros(3), torch.zeros(3))


@pytest.mark.parametrize(
    "source",
    [
        torch.arange(6).reshape(2, 3).t(),  # transposed
        torch.arange(3).expand(3, 3),  # stride 0
        torch.arange(10.0)[2:8:2],  # offset and step
        torch.tensor([1 + 2j, 3 - 4j]).conj(),  # lazy conjugate bit
        torch.tensor([1 + 2j, 3 - 4j]).conj().imag,  # lazy negative bit
        torch.zeros(2, 3, 4, 5).to(memory_format=torch.channels_last),
    ],
    ids=["transposed", "expanded", "strided", "conj", "neg", "channels_last"],
)
def test_from_tensor_writes_logical_c_order(source: torch.Tensor, tmp_path: Any) -> None:
    path = tmp_path / "x.memmap"
    m = MemoryMappedTensor.from_tensor(source, filename=path)
    assert torch.equal(m, source) and m.is_contiguous()
    assert path.stat().st_size == source.numel() * source.element_size()
    values = source.resolve_conj().resolve_neg()
    assert torch.equal(_read_back(path, source.dtype, tuple(source.shape)), values)
    assert torch.equal(MemoryMappedTensor.from_tensor(source), source)


def test_from_tensor_refuses_a_tensor_that_requires_grad(filename: Any) -> None:
    param = torch.nn.Parameter(torch.ones(3))
    for source in (param, param * 2):  # as the peer: a RuntimeError, naming the way out
        with pytest.raises(_errors.GradError, match=r"requires grad.*t\.detach\(\)") as caught:
            MemoryMappedTensor.from_tensor(source, filename=filename)
        assert isinstance(caught.value, RuntimeError)
        assert isinstance(caught.value, _errors.TclassError)
    with torch.no_grad(), pytest.raises(_errors.GradError):
        MemoryMappedTensor.from_tensor(param)
    m = MemoryMappedTensor.from_tensor((param * 2).detach(), filename=filename, existsok=True)
    assert not m.requires_grad and torch.equal(m, torch.full((3,), 2.0))
    assert type(MemoryMappedTensor.from_tensor(param.detach())) is MemoryMappedTensor


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_from_tensor_copies_cuda_to_cpu() -> None:
    m = MemoryMappedTensor.from_tensor(torch.arange(4, device="cuda"))
    assert m.device.type == "cpu" and torch.equal(m, torch.arange(4))


@pytest.mark.parametrize(
    ("value", "match"),
    [
        (np.arange(3), "numpy.ndarray.*torch.as_tensor"),
        ([1, 2], "builtins.list.*torch.as_tensor"),
        (torch.eye(2).to_sparse(), "to_dense"),
    ],
    ids=["numpy", "list", "sparse"],
)
def test_from_tensor_rejects_non_dense(value: Any, match: str) -> None:
    with pytest.raises(TypeError, match=match):
        MemoryMappedTensor.from_tensor(value)
    if not isinstance(value, torch.Tensor):
        with pytest.raises(TypeError, match="torch.as_tensor"):
            MemoryMappedTensor.zeros_like(value)


def test_from_tensor_rejects_meta() -> None:
    with pytest.raises(_errors.DeviceError, match="meta"):
        MemoryMappedTensor.from_tensor(torch.empty(3, device="meta"))
    assert MemoryMappedTensor.empty_like(torch.empty(3, device="meta")).shape == (3,)


def test_from_tensor_identity_and_copy_existing(
    tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    anon = MemoryMappedTensor.from_tensor(torch.arange(3))
    assert MemoryMappedTensor.from_tensor(anon) is anon
    backed = MemoryMappedTensor.from_tensor(anon, filename=tmp_path / "a.memmap")
    assert backed is not anon and backed.filename == str(tmp_path / "a.memmap")
    monkeypatch.chdir(tmp_path)  # a relative path to the same file is the same file
    assert MemoryMappedTensor.from_tensor(backed, filename="a.memmap") is backed
    assert MemoryMappedTensor.from_tensor(backed, filename=tmp_path / "a.memmap") is backed
    view = backed[1:]
    assert MemoryMappedTensor.from_tensor(view, filename=backed.filename) is view

    with pytest.raises(_errors.FileConflictError, match="copy_existing=True") as info:
        MemoryMappedTensor.from_tensor(backed, filename=tmp_path / "b.memmap")
    assert isinstance(info.value, FileExistsError) and isinstance(info.value, RuntimeError)
    assert not (tmp_path / "b.memmap").exists()

    other = MemoryMappedTensor.from_tensor(
        backed, filename=tmp_path / "b.memmap", copy_existing=True
    )
    other[0] = 100
    assert other.filename == str(tmp_path / "b.memmap") and backed[0] == 0
    anon_copy = MemoryMappedTensor.from_tensor(backed)  # file-backed -> anonymous copy
    assert anon_copy is not backed and anon_copy.filename is None
    assert torch.equal(anon_copy, backed)


# --- size, dtype and device arguments ----------------------------------------------------


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        ((2, 3), {}),
        (((2, 3),), {}),
        (([2, 3],), {}),
        ((torch.Size([2, 3]),), {}),
        ((), {"shape": (2, 3)}),
        ((), {"shape": torch.Size([2, 3])}),
        ((np.int64(2), torch.tensor(3)), {}),
    ],
    ids=["varargs", "tuple", "list", "torch.Size", "shape=", "shape=Size", "index-like"],
)
@pytest.mark.parametrize("make", ["empty", "zeros", "ones", "full"])
def test_size_forms(args: tuple[Any, ...], kwargs: dict[str, Any], make: str) -> None:
    extra = {"fill_value": 1.5} if make == "full" else {}
    m = getattr(MemoryMappedTensor, make)(*args, **kwargs, **extra)
    assert m.shape == (2, 3) and m.dtype == torch.get_default_dtype()


def test_scalar_and_1d_sizes() -> None:
    assert MemoryMappedTensor.zeros(()).shape == ()
    assert MemoryMappedTensor.zeros(5).shape == (5,)
    assert MemoryMappedTensor.zeros(shape=5).shape == (5,)
    assert MemoryMappedTensor.full((), fill_value=2.0).item() == 2.0


@pytest.mark.parametrize(
    "args", [(-1,), ((2, -1),), (2.5,), ("3",), ((2, 3), 4), ([[2]],), (True,), (None,)]
)
def test_bad_sizes(args: tuple[Any, ...]) -> None:
    with pytest.raises(_errors.ShapeError, match="non-negative ints") as info:
        MemoryMappedTensor.empty(*args)
    assert isinstance(info.value, ValueError)


def test_size_argument_errors() -> None:
    with pytest.raises(TypeError, match="missing size"):
        MemoryMappedTensor.zeros()
    with pytest.raises(TypeError, match="not both"):
        MemoryMappedTensor.zeros(2, shape=(2,))
    with pytest.raises(TypeError, match="fill_value"):
        MemoryMappedTensor.full((2,), 7)  # type: ignore[call-arg]


def test_dtype_defaults_and_errors() -> None:
    assert MemoryMappedTensor.full(2, fill_value=7).dtype == torch.float32
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        assert MemoryMappedTensor.empty(2).dtype == torch.float64
    finally:
        torch.set_default_dtype(previous)
    with pytest.raises(TypeError, match="torch.dtype"):
        MemoryMappedTensor.zeros(2, dtype="float32")  # type: ignore[arg-type]


@pytest.mark.parametrize("device", ["cpu", torch.device("cpu"), "cpu:0"])
def test_cpu_devices_accepted(device: Any) -> None:
    assert MemoryMappedTensor.ones(2, device=device).device.type == "cpu"


@pytest.mark.parametrize("device", ["cuda", "meta", torch.device("meta"), "nonsense"])
def test_other_devices_refused(device: Any, tmp_path: pathlib.Path) -> None:
    with pytest.raises(_errors.DeviceError) as info:
        MemoryMappedTensor.zeros(2, device=device, filename=tmp_path / "x")
    assert isinstance(info.value, ValueError) and isinstance(info.value, RuntimeError)
    assert not (tmp_path / "x").exists()


def test_constructor_views_a_tensor_as_the_peer() -> None:
    source = torch.arange(6.0).reshape(2, 3)
    view = MemoryMappedTensor(source)
    assert type(view) is MemoryMappedTensor and view.data_ptr() == source.data_ptr()
    view[0, 0] = 42.0  # no copy: the tensor's own memory
    assert source[0, 0].item() == 42.0 and view.filename is None
    assert MemoryMappedTensor(source, index=1).tolist() == [3.0, 4.0, 5.0]
    assert MemoryMappedTensor(source, dtype=torch.float32, shape=(2, 3), device="cpu").shape == (
        2,
        3,
    )
    assert MemoryMappedTensor([1, 2]).tolist() == [1.0, 2.0]  # the default dtype, as the peer
    mapped = MemoryMappedTensor.from_tensor(source)
    assert MemoryMappedTensor(mapped).is_shared()
    grad = torch.ones(2, requires_grad=True)
    assert not MemoryMappedTensor(grad).requires_grad


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"dtype": torch.int64}, TypeError, "convert or reshape"),
        ({"shape": (6,)}, TypeError, "convert or reshape"),
        ({"device": "meta"}, _errors.DeviceError, "CPU"),
    ],
)
def test_constructor_refuses_what_it_cannot_view(
    kwargs: dict[str, Any], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        MemoryMappedTensor(torch.zeros(2, 3), **kwargs)
    with pytest.raises(TypeError, match=r"empty\(n\)"):
        MemoryMappedTensor(3)
    with pytest.raises(ValueError):  # the peer's error for a device that is not the CPU
        MemoryMappedTensor(torch.zeros(2), device="meta")
    with pytest.raises(_errors.DeviceError, match="from_tensor"):
        MemoryMappedTensor(torch.zeros(2, device="meta"))


def test_constructor_dispatches_to_the_class_methods(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "x.memmap"
    written = MemoryMappedTensor(torch.arange(3.0), filename=path, shape=(2, 3))
    assert written.filename == str(path) and written.shape == (2, 3)
    assert MemoryMappedTensor([1, 2], filename=tmp_path / "y", index=1).item() == 2
    mapped = MemoryMappedTensor(str(path), dtype=torch.float32, shape=(2, 3), index=0)
    assert mapped.filename == str(path) and mapped.tolist() == [0.0, 1.0, 2.0]
    storage = torch.arange(4.0).untyped_storage()
    assert MemoryMappedTensor(storage, dtype=torch.float32, shape=(2, 2)).sum().item() == 6.0
    with pytest.raises(TypeError, match="dtype= and shape="):
        MemoryMappedTensor(str(path))
    with pytest.raises(TypeError, match="once"):
        MemoryMappedTensor(str(path), dtype=torch.float32, shape=(6,), filename=path)
    with pytest.raises(TypeError, match="convert the data first"):
        MemoryMappedTensor(torch.zeros(2), filename=tmp_path / "z", dtype=torch.int64)
    with pytest.raises(TypeError, match="nested shapes"):
        MemoryMappedTensor(torch.zeros(2), filename=tmp_path / "z", shape=torch.tensor([[2]]))


@pytest.mark.peer
def test_constructor_signature_is_the_peers() -> None:
    peer = pytest.importorskip("tensordict")
    import inspect

    def names(cls: type) -> list[tuple[str, Any]]:
        return [(p.name, p.kind) for p in inspect.signature(cls.__new__).parameters.values()]

    assert sorted(names(MemoryMappedTensor)) == sorted(names(peer.MemoryMappedTensor))


def test_deprecated_index_and_parent_shape(filename: Any) -> None:
    tensor = MemoryMappedTensor.from_tensor(torch.arange(6.0).reshape(2, 3), filename=filename)
    with pytest.warns(DeprecationWarning, match="parent_shape is deprecated"):
        assert tensor.parent_shape == (2, 3)
    with pytest.warns(DeprecationWarning, match="index is deprecated"):
        assert tensor.index is None
    row = tensor[1]
    with pytest.warns(DeprecationWarning):
        assert row.index == 1 and row.parent_shape == (2, 3) and row[0].parent_shape == (2, 3)
    with pytest.warns(DeprecationWarning):
        assert tensor.unbind(1)[2].index == (slice(None), 2)
        assert tensor.split(1, 1)[1].index == (slice(None), slice(1, 2))
        assert tensor.chunk(2)[1].index == (slice(1, 2),)


# --- creating files ----------------------------------------------------------------------


def test_existing_file_needs_existsok(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "x.memmap"
    path.write_bytes(b"old data that is longer than needed")
    before = _file_state(path)
    for make in (
        lambda: MemoryMappedTensor.zeros(2, filename=path),
        lambda: MemoryMappedTensor.from_tensor(torch.ones(2), filename=path),
    ):
        with pytest.raises(_errors.FileConflictError, match="existsok=True") as info:
            make()
        assert isinstance(info.value, FileExistsError)
        assert _file_state(path) == before

    m = MemoryMappedTensor.from_tensor(torch.arange(3), filename=path, existsok=True)
    assert path.read_bytes() == torch.arange(3).numpy().tobytes()  # no stale bytes
    assert torch.equal(m, torch.arange(3))
    z = MemoryMappedTensor.zeros(5, dtype=torch.int64, filename=path, existsok=True)
    assert path.read_bytes() == bytes(40) and torch.equal(z, torch.zeros(5, dtype=torch.int64))
    e = MemoryMappedTensor.empty(1, dtype=torch.uint8, filename=path, existsok=True)
    assert path.read_bytes() == b"\x00" and e.item() == 0
    f = MemoryMappedTensor.full(2, fill_value=9, dtype=torch.uint8, filename=path, existsok=True)
    assert path.read_bytes() == b"\x09\x09" and f.filename == str(path)


@pytest.mark.parametrize("existsok", [False, True])
def test_symlinks_and_directories_refused(tmp_path: pathlib.Path, existsok: bool) -> None:
    target = tmp_path / "target"
    target.write_bytes(b"keep")
    link, dangling = tmp_path / "link", tmp_path / "dangling"
    link.symlink_to(target)
    dangling.symlink_to(tmp_path / "nowhere")
    for path in (link, dangling):
        with pytest.raises(_errors.FileConflictError, match="symlink"):
            MemoryMappedTensor.zeros(2, filename=path, existsok=existsok)
    assert target.read_bytes() == b"keep" and not (tmp_path / "nowhere").exists()

    with pytest.raises(_errors.NotAFileError, match="directory") as info:
        MemoryMappedTensor.from_tensor(torch.ones(2), filename=tmp_path, existsok=existsok)
    assert isinstance(info.value, OSError) and not isinstance(info.value, IsADirectoryError)


def test_existsok_of_a_missing_folder_or_a_file_as_folder_is_a_missing_folder(
    tmp_path: pathlib.Path,
) -> None:
    # existsok opens an existing file first: where there is none, the create tells why
    (tmp_path / "file").write_bytes(b"x")
    for path in (tmp_path / "none" / "x.memmap", tmp_path / "file" / "x.memmap"):
        with pytest.raises(_errors.MissingFolderError, match="directory does not exist"):
            MemoryMappedTensor.from_tensor(torch.ones(2), filename=path, existsok=True)
    made = MemoryMappedTensor.from_tensor(torch.ones(2), filename=tmp_path / "new", existsok=True)
    assert (tmp_path / "new").read_bytes() == torch.ones(2).numpy().tobytes() and made[1] == 1


def test_existsok_rewrites_a_file_of_the_same_size_in_place(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "x.memmap"
    first = MemoryMappedTensor.from_tensor(torch.arange(4.0), filename=path)
    inode = path.stat().st_ino
    again = MemoryMappedTensor.from_tensor(torch.ones(4), filename=path, existsok=True)
    assert path.stat().st_ino == inode and path.read_bytes() == torch.ones(4).numpy().tobytes()
    assert torch.equal(first, torch.ones(4)) and torch.equal(again, torch.ones(4))  # one file


def test_non_regular_file_refused(tmp_path: pathlib.Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(_errors.NotAFileError, match="not a regular file"):
        MemoryMappedTensor.zeros(2, filename=fifo, existsok=True)
    with pytest.raises(_errors.NotAFileError, match="not a regular file"):
        MemoryMappedTensor.from_filename(fifo, torch.float32, (2,))


@pytest.mark.parametrize("make", ["zeros", "empty", "from_tensor"])
def test_missing_directory(tmp_path: pathlib.Path, make: str) -> None:
    """A new file in a directory that does not exist: a FileNotFoundError, and a
    RuntimeError as the peer raises there (code that catches it keeps working)."""
    path = tmp_path / "no" / "such" / "x.memmap"
    with pytest.raises(_errors.MissingFolderError, match="directory does not exist") as info:
        if make == "from_tensor":
            MemoryMappedTensor.from_tensor(torch.ones(2), filename=path)
        else:
            getattr(MemoryMappedTensor, make)(2, filename=path)
    assert isinstance(info.value, FileNotFoundError) and isinstance(info.value, RuntimeError)
    assert isinstance(info.value, _errors.MissingFileError)
    assert not (tmp_path / "no").exists()


def test_filename_forms(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    m = MemoryMappedTensor.zeros(2, filename="rel.memmap")
    assert m.filename == str(tmp_path / "rel.memmap") and os.path.isabs(m.filename)
    assert MemoryMappedTensor.zeros(2, filename=pathlib.Path("p.memmap")).filename == str(
        tmp_path / "p.memmap"
    )
    assert MemoryMappedTensor.zeros(2).filename is None
    with pytest.raises(TypeError, match="os.PathLike"):
        MemoryMappedTensor.zeros(2, filename=b"bytes.memmap")  # type: ignore[arg-type]


def test_huge_files_are_sparse(tmp_path: pathlib.Path) -> None:
    before = _rss()
    for make in (MemoryMappedTensor.empty, MemoryMappedTensor.zeros):
        path = tmp_path / f"{make.__name__}.memmap"
        m = make(3 * 2**30, dtype=torch.float32, filename=path)  # 12 GiB
        assert path.stat().st_size == 12 * 2**30
        assert path.stat().st_blocks * 512 < MB
        assert m[-1].item() == 0
        del m
    assert _rss() - before < 8 * MB


def test_slicing_reads_only_what_it_touches(tmp_path: pathlib.Path) -> None:
    m = MemoryMappedTensor.empty(128 * MB, dtype=torch.float32, filename=tmp_path / "big")
    before = _rss()
    head = m[:10].clone()
    rows = m.view(-1, 1024)[1000:1010].clone()
    assert head.sum() == 0 and rows.shape == (10, 1024)
    assert _rss() - before < 4 * MB
    assert (tmp_path / "big").stat().st_blocks * 512 < MB


# --- opening files -----------------------------------------------------------------------


def test_from_filename_modes(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "x.memmap"
    MemoryMappedTensor.from_tensor(torch.arange(4, dtype=torch.int32), filename=path)
    before = _file_state(path)

    default = MemoryMappedTensor.from_filename(path, torch.int32, [4])
    assert default.filename == str(path) and torch.equal(
        default, torch.arange(4, dtype=torch.int32)
    )
    del default
    assert _file_state(path) == before  # opening (and closing) changes nothing

    private = MemoryMappedTensor.from_filename(str(path), torch.int32, (4,), mode="r")
    private[0] = 42
    assert private[0] == 42 and _file_state(path) == before
    os.chmod(path, 0o444)
    assert MemoryMappedTensor.from_filename(path, torch.int32, 4, mode="r")[3] == 3

    shared = MemoryMappedTensor.from_filename(path, torch.int32, (2, 2), mode="r+")
    shared[1, 1] = 7  # root ignores the 0444 bits
    assert path.read_bytes()[12:] == (7).to_bytes(4, "little")


def test_from_filename_mode_errors(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "x.memmap"
    MemoryMappedTensor.zeros(2, filename=path)
    with pytest.raises(ValueError, match="mode must be"):
        MemoryMappedTensor.from_filename(path, torch.float32, (2,), mode="w+")  # type: ignore[arg-type]

    real_open = os.open

    def deny_writes(p: Any, flags: int, *args: Any) -> int:
        if flags & os.O_RDWR:
            raise PermissionError(errno.EACCES, "Permission denied", p)
        return real_open(p, flags, *args)

    monkeypatch.setattr(os, "open", deny_writes)  # what a non-root user would see
    with pytest.raises(PermissionError, match="mode='r'"):
        MemoryMappedTensor.from_filename(path, torch.float32, (2,), mode="r+")
    monkeypatch.setattr(os, "access", lambda p, m: False)
    ro = MemoryMappedTensor.from_filename(path, torch.float32, (2,))  # default picks "r"
    ro[0] = 1.0
    assert path.read_bytes() == bytes(8)


def test_from_filename_missing_or_directory(tmp_path: pathlib.Path) -> None:
    missing = tmp_path / "missing.memmap"
    for mode in (None, "r", "r+"):
        with pytest.raises(_errors.MissingFileError, match="missing.memmap") as info:
            MemoryMappedTensor.from_filename(missing, torch.float32, (2,), mode=mode)
        assert isinstance(info.value, FileNotFoundError)
    assert not missing.exists()
    with pytest.raises(_errors.NotAFileError):
        MemoryMappedTensor.from_filename(tmp_path, torch.float32, (2,))


@pytest.mark.parametrize(
    ("content", "dtype", "shape", "expect"),
    [
        (bytes(12), torch.int64, (4,), "holds 12 bytes.*need 32 bytes"),  # short (W1)
        (bytes(40), torch.int64, (4,), "holds 40 bytes.*need 32 bytes"),  # long
        (b"", torch.int64, (4,), "holds 0 bytes"),
        (bytes(32), torch.int64, (4, 1000), "need 32000 bytes"),  # W2: no growth
        (bytes(32), torch.float32, (4,), "float32.*need 16 bytes"),  # wrong dtype
        (bytes(32), torch.uint8, (), "need 1 bytes"),
    ],
)
@pytest.mark.parametrize("mode", [None, "r", "r+"])
def test_from_filename_size_mismatch_changes_nothing(
    tmp_path: pathlib.Path, content: bytes, dtype: torch.dtype, shape: Any, expect: str, mode: Any
) -> None:
    path = tmp_path / "x.memmap"
    path.write_bytes(content)
    before = _file_state(path)
    with pytest.raises(_errors.FileFormatError, match=expect) as info:
        MemoryMappedTensor.from_filename(path, dtype, shape, mode=mode)
    message = str(info.value)
    assert str(path) in message and "left unchanged" in message and "existsok=True" in message
    assert isinstance(info.value, ValueError) and isinstance(info.value, RuntimeError)
    assert _file_state(path) == before


def test_from_filename_index_and_symlink(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "x.memmap"
    MemoryMappedTensor.from_tensor(torch.arange(6).reshape(2, 3), filename=path)
    row = MemoryMappedTensor.from_filename(path, torch.int64, (2, 3), index=1)
    assert type(row) is MemoryMappedTensor and row.tolist() == [3, 4, 5]
    col = MemoryMappedTensor.from_filename(path, torch.int64, (2, 3), index=(slice(None), 2))
    assert col.tolist() == [2, 5] and col.filename == str(path)
    with pytest.raises(TypeError, match="basic index"):
        MemoryMappedTensor.from_filename(path, torch.int64, (2, 3), index=[0, 1])
    (tmp_path / "link").symlink_to(path)  # reading follows a symlink; writing refuses it
    assert MemoryMappedTensor.from_filename(tmp_path / "link", torch.int64, (6,))[5] == 5


# --- indexing and ops --------------------------------------------------------------------


BASIC = [0, -1, slice(1, None), (Ellipsis, 0), None, (slice(None), None, 1), slice(None, None, 2),
         (0, 1), torch.tensor(1), np.int64(1)]  # fmt: skip
ADVANCED = [[0, 1], torch.tensor([0]), (0, [1, 2]), torch.tensor([True, False]), True]


@pytest.mark.parametrize("index", BASIC, ids=repr)
def test_basic_index_is_a_view(filename: Any, index: Any) -> None:
    m = MemoryMappedTensor.from_tensor(torch.arange(6.0).reshape(2, 3), filename=filename)
    plain = torch.arange(6.0).reshape(2, 3)
    view = m[index]
    assert type(view) is MemoryMappedTensor and view.filename == m.filename
    assert torch.equal(view, plain[index])
    view.fill_(-1)  # writes through to the parent storage
    plain[index] = -1
    assert torch.equal(m, plain)


@pytest.mark.parametrize("index", ADVANCED, ids=repr)
def test_advanced_index_is_a_plain_copy(filename: Any, index: Any) -> None:
    m = MemoryMappedTensor.from_tensor(torch.arange(6.0).reshape(2, 3), filename=filename)
    out = m[index]
    assert type(out) is torch.Tensor
    assert torch.equal(out, torch.arange(6.0).reshape(2, 3)[index])


def test_unbind_split_chunk_iter(filename: Any) -> None:
    m = MemoryMappedTensor.from_tensor(torch.arange(12).reshape(3, 4), filename=filename)
    groups = {
        "unbind": m.unbind(1),
        "iter": tuple(m),
        "split": m.split(2),
        "split_sizes": m.split([1, 3], dim=1),
        "chunk": m.chunk(2, dim=1),
    }
    for parts in groups.values():
        assert all(type(p) is MemoryMappedTensor and p.filename == m.filename for p in parts)
    groups["unbind"][0].fill_(-1)
    groups["iter"][2][3] = -2
    assert m[:, 0].tolist() == [-1, -1, -1] and m[2, 3] == -2
    assert torch.equal(torch.cat(groups["split"]), m)


def test_ops_return_plain_tensors_and_in_place_ops_write(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "x.memmap"
    m = MemoryMappedTensor.zeros(2, 3, filename=path)
    for out in (m + 1, m.sum(), m.view(-1), m.reshape(3, 2), m.clone(), m.t(), torch.stack([m, m]),
                m == 0, m.float().abs()):  # fmt: skip
        assert type(out) is torch.Tensor
    assert m.contiguous() is m and m.to("cpu") is m and m.cpu() is m
    assert m.add_(1) is m and m.fill_(2) is m and m.copy_(torch.ones(2, 3)) is m
    m[0] = 5
    m[1, 2] = torch.tensor(7.0)
    assert _read_back(path, torch.float32, (2, 3)).tolist() == [[5, 5, 5], [1, 1, 7]]
    assert type(torch.Tensor.__getitem__(m, 0)) is torch.Tensor  # no hidden wrapping


@st.composite
def _basic_indices(draw: st.DrawFn, shape: tuple[int, ...]) -> Any:
    """ints, positive-step slices and None per dim; an Ellipsis may replace a run."""
    items: list[Any] = []
    for size in shape:
        if draw(st.booleans()):
            items.append(draw(st.integers(-size, size - 1)))
        else:
            bound = st.none() | st.integers(-size - 2, size + 2)
            items.append(slice(draw(bound), draw(bound), draw(st.none() | st.integers(1, 3))))
        if draw(st.integers(0, 4)) == 0:
            items.append(None)
    if draw(st.booleans()):
        start = draw(st.integers(0, len(items)))
        stop = draw(st.integers(start, len(items)))
        items[start:stop] = [Ellipsis]
    if len(items) == 1 and draw(st.booleans()):
        return items[0]
    return tuple(items)


@pytest.fixture(scope="module")
def cube(tmp_path_factory: pytest.TempPathFactory) -> MemoryMappedTensor:
    path = tmp_path_factory.mktemp("cube") / "cube.memmap"
    return MemoryMappedTensor.from_tensor(torch.arange(120.0).reshape(4, 5, 6), filename=path)


@settings(max_examples=150, deadline=None)
@given(index=_basic_indices((4, 5, 6)))
def test_random_basic_indices(cube: MemoryMappedTensor, index: Any) -> None:
    expected = torch.arange(120.0).reshape(4, 5, 6)[index]
    view = cube[index]
    assert type(view) is MemoryMappedTensor and view.filename == cube.filename
    assert torch.equal(view, expected)
    back = pickle.loads(pickle.dumps(view))
    assert type(back) is MemoryMappedTensor and torch.equal(back, expected)
    assert (back.stride(), back.storage_offset()) == (view.stride(), view.storage_offset())


# --- pickling ----------------------------------------------------------------------------


def _views(m: MemoryMappedTensor) -> dict[str, torch.Tensor]:
    return {
        "whole": m,
        "row": m[1],
        "slice": m[1:, ::2],
        "column": m[:, 2],
        "unbind": m.unbind(1)[3],
        # No public op yields a transposed MemoryMappedTensor (torch ops return plain
        # tensors), so wrap one the way indexing does.
        "transposed": m._wrap(m.t()),
        "scalar": m[2, 3],
    }


def test_pickle_views_round_trip(tmp_path: pathlib.Path) -> None:
    m = MemoryMappedTensor.from_tensor(torch.arange(20.0).reshape(4, 5), filename=tmp_path / "x")
    for name, view in _views(m).items():
        back = pickle.loads(pickle.dumps(view))
        assert type(back) is MemoryMappedTensor, name
        assert back.filename == m.filename, name
        assert (back.shape, back.stride(), back.storage_offset()) == (
            view.shape, view.stride(), view.storage_offset()
        ), name  # fmt: skip
        assert torch.equal(back, view), name
        back.fill_(-float(len(name)))  # the rebuilt view writes to the same file
        assert torch.equal(view, back), name


def test_pickle_payload_is_a_reference(tmp_path: pathlib.Path) -> None:
    small = MemoryMappedTensor.zeros(10, filename=tmp_path / "aaaa.memmap")
    big = MemoryMappedTensor.empty(25_000_000, filename=tmp_path / "bbbb.memmap")  # 100 MB
    sizes = [len(pickle.dumps(t)) for t in (small, big, big[5:])]
    # Only the encoding of the numbers (10 vs 25_000_000) differs, not the data.
    assert max(sizes) < 1024 and max(sizes) - min(sizes) <= 16
    saved = []
    for t in (small, big):
        buffer = io.BytesIO()
        torch.save(t, buffer)
        saved.append(buffer.getvalue())
        loaded = torch.load(io.BytesIO(buffer.getvalue()), weights_only=False)
        assert type(loaded) is MemoryMappedTensor and loaded.filename == t.filename
        assert loaded.shape == t.shape
    assert abs(len(saved[0]) - len(saved[1])) <= 16 and len(saved[1]) < 4096
    with pytest.raises(pickle.UnpicklingError):
        torch.load(io.BytesIO(saved[0]), weights_only=True)


def test_unpickle_checks_the_file(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "x.memmap"
    payload = pickle.dumps(MemoryMappedTensor.from_tensor(torch.arange(4), filename=path))
    for size in (16, 40):  # shorter, longer
        os.truncate(path, size)
        before = _file_state(path)
        with pytest.raises(_errors.FileFormatError, match=f"holds {size} bytes.*need 32"):
            pickle.loads(payload)
        assert _file_state(path) == before
    path.unlink()
    with pytest.raises(_errors.MissingFileError, match="x.memmap") as missing:
        pickle.loads(payload)
    # a RuntimeError too, as the peer's (torch's "unable to open file"), saying why
    assert isinstance(missing.value, RuntimeError)
    assert isinstance(missing.value, _errors.PickledFileMissingError)
    assert "holds references to its files" in str(missing.value)
    assert not path.exists()
    path.write_bytes(bytes(16))
    with pytest.raises(_errors.FileFormatError, match="does not fit"):  # a forged view
        _memmap._rebuild_from_file(
            MemoryMappedTensor, str(path), torch.int64, 2, 1, (2,), (1,), "r"
        )


def test_pickle_keeps_mode(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "x.memmap"
    MemoryMappedTensor.zeros(3, filename=path)
    private = MemoryMappedTensor.from_filename(path, torch.float32, (3,), mode="r")
    back = pickle.loads(pickle.dumps(private[1:]))
    back.fill_(5)
    assert path.read_bytes() == bytes(12) and back.tolist() == [5, 5]


def test_anonymous_refuses_pickle() -> None:
    m = MemoryMappedTensor.zeros(3)
    with pytest.raises(_errors.UnpicklableError, match="filename=.*torch.multiprocessing") as info:
        pickle.dumps(m[1:])
    assert isinstance(info.value, TypeError)
    with pytest.raises(_errors.UnpicklableError):
        torch.save(m, io.BytesIO())


def test_copy_and_deepcopy(filename: Any) -> None:
    m = MemoryMappedTensor.from_tensor(torch.arange(3), filename=filename)
    deep = copy.deepcopy(m)
    assert type(deep) is torch.Tensor and torch.equal(deep, m)
    deep[0] = 9
    assert m[0] == 0
    shallow = copy.copy(m)
    assert type(shallow) is MemoryMappedTensor and shallow.filename == m.filename
    shallow[0] = 9
    assert m[0] == 9
    pair = copy.deepcopy([m, m])
    assert pair[0] is pair[1]


# --- multiprocessing ---------------------------------------------------------------------


def _child(tensors: dict[str, MemoryMappedTensor], queue: Any, done: Any) -> None:
    report = {name: (type(t).__name__, t.filename) for name, t in tensors.items()}
    for value, t in enumerate(tensors.values(), start=1):
        t.fill_(value)
    queue.put(report)
    queue.put(MemoryMappedTensor.full(2, fill_value=3))  # anonymous, back to the parent
    done.wait(30)  # keep the shared memory's sender alive until the parent has it


def test_child_process_writes_are_visible(tmp_path: pathlib.Path) -> None:
    ctx = torch.multiprocessing.get_context("spawn")
    backed = MemoryMappedTensor.zeros(4, filename=tmp_path / "x.memmap")
    anon = MemoryMappedTensor.zeros(4)
    anon2d = MemoryMappedTensor.zeros(2, 3)
    tensors: dict[str, Any] = {
        "file": backed[:2],
        "anon": anon,
        "anon_col": anon2d[:, 1],
        "file_tail": backed[2:],
    }
    queue, done = ctx.Queue(), ctx.Event()
    child = ctx.Process(target=_child, args=(tensors, queue, done))
    child.start()
    try:
        report = queue.get(timeout=60)
        returned = queue.get(timeout=60)
    finally:
        done.set()
        child.join(60)
    assert child.exitcode == 0
    assert report == {name: ("MemoryMappedTensor", t.filename) for name, t in tensors.items()}
    assert backed.tolist() == [1, 1, 4, 4]
    assert (tmp_path / "x.memmap").read_bytes() == torch.tensor([1.0, 1, 4, 4]).numpy().tobytes()
    assert anon.tolist() == [2, 2, 2, 2]
    assert anon2d.tolist() == [[0, 3, 0], [0, 3, 0]]
    assert type(returned) is MemoryMappedTensor and returned.tolist() == [3, 3]


# --- zero elements and repr --------------------------------------------------------------


@pytest.mark.parametrize("shape", [(0,), (2, 0)])
def test_zero_element_tensors(tmp_path: pathlib.Path, shape: tuple[int, ...]) -> None:
    path = tmp_path / "empty.memmap"
    m = MemoryMappedTensor.zeros(shape, filename=path)
    assert m.shape == shape and m.filename == str(path) and path.stat().st_size == 0
    back = pickle.loads(pickle.dumps(m))
    assert type(back) is MemoryMappedTensor and back.shape == shape and back.filename == str(path)
    assert MemoryMappedTensor.from_filename(path, torch.float32, shape).shape == shape
    with pytest.raises(_errors.FileFormatError):
        MemoryMappedTensor.from_filename(path, torch.float32, (1,))
    t = MemoryMappedTensor.from_tensor(torch.empty(shape), filename=tmp_path / "e2")
    assert t.shape == shape and (tmp_path / "e2").stat().st_size == 0
    assert MemoryMappedTensor.from_tensor(torch.empty(shape)).shape == shape
    assert repr(MemoryMappedTensor.empty(0)) == "MemoryMappedTensor([])"


def test_repr(filename: Any) -> None:
    one = MemoryMappedTensor.zeros(3, filename=filename)
    assert repr(one) == "MemoryMappedTensor([0., 0., 0.])"
    two = MemoryMappedTensor.zeros(2, 3, filename=None if filename is None else filename + "2")
    assert repr(two) == "MemoryMappedTensor([[0., 0., 0.],\n                    [0., 0., 0.]])"
    assert repr(MemoryMappedTensor.ones(2, dtype=torch.int32)) == (
        "MemoryMappedTensor([1, 1], dtype=torch.int32)"
    )


def test_format_spec_works_on_scalars_like_plain_tensors() -> None:
    m = MemoryMappedTensor.full((2,), fill_value=1.25)
    assert f"{m[0]:.1f}" == "1.2"
    assert f"{m}" == str(m)


class TestRowGather:
    """A 1-d integer index gathers whole rows (index_select): same values as torch."""

    @pytest.mark.parametrize("dtype", [torch.int64, torch.int32])
    def test_matches_torch(self, tmp_path: Any, dtype: torch.dtype) -> None:
        source = torch.arange(60, dtype=torch.float32).reshape(10, 3, 2)
        mapped = MemoryMappedTensor.from_tensor(source, filename=tmp_path / "rows")
        for index in ([3, 0, 9, 3], [-1, -10, 4], [], [[1, 2], [3, 4]]):
            position = torch.tensor(index, dtype=dtype)
            assert torch.equal(mapped[position], source[position])
        assert type(mapped[torch.tensor([1])]) is torch.Tensor  # a copy, not a file view

    @pytest.mark.parametrize("dtype", [torch.uint16, torch.uint32, torch.uint64])
    def test_a_dtype_index_select_lacks_is_gathered_by_torch(
        self, tmp_path: Any, dtype: torch.dtype
    ) -> None:
        """torch has no ``index_select`` for these (but indexes them by rows): the rows
        are torch's, as the peer's (``NotImplementedError`` before)."""
        source = torch.arange(12).reshape(6, 2).to(dtype)
        mapped = MemoryMappedTensor.from_tensor(source, filename=tmp_path / "rows")
        rows = mapped[torch.tensor([4, 0, -1])]
        assert rows.dtype == dtype and rows.tolist() == [[8, 9], [0, 1], [10, 11]]

    def test_out_of_range_is_an_index_error(self, tmp_path: Any) -> None:
        mapped = MemoryMappedTensor.from_tensor(torch.zeros(4, 2), filename=tmp_path / "rows")
        for bad in (4, -5):
            with pytest.raises(IndexError, match=f"index {bad} is out of bounds"):
                mapped[torch.tensor([0, bad])]


# --- nested tensors (strided layout): one buffer, the peer's element-shape tensor ---------

_ELEMENTS = torch.tensor([[2, 3], [2, 4], [3, 2]])


@pytest.mark.parametrize("in_file", [False, True], ids=["shared memory", "file"])
@pytest.mark.parametrize("make", ["empty", "zeros", "ones", "full"])
def test_nested_constructors_map_one_buffer(
    tmp_path: pathlib.Path, make: str, in_file: bool
) -> None:
    filename = tmp_path / f"{make}.memmap" if in_file else None
    extra = {"fill_value": 5} if make == "full" else {}
    tensor = getattr(MemoryMappedTensor, make)(
        _ELEMENTS, dtype=torch.int32, filename=filename, **extra
    )
    assert type(tensor) is MemoryMappedTensor and tensor.is_nested
    assert tensor.dtype == torch.int32 and tensor.filename == (str(filename) if in_file else None)
    assert torch.equal(tensor._nested_tensor_size(), _ELEMENTS)
    expected = {"empty": 0, "zeros": 0, "ones": 1, "full": 5}[make]
    assert all((element == expected).all() for element in tensor)
    tensor.fill_(2)
    assert [type(e) for e in tensor] == [MemoryMappedTensor] * 3 and (tensor[1] == 2).all()
    if in_file:  # the writes are in the file, elements one after another
        assert os.path.getsize(filename) == 4 * int(_ELEMENTS.prod(-1).sum())
        again = MemoryMappedTensor.from_filename(filename, dtype=torch.int32, shape=_ELEMENTS)
        assert again.is_nested and all((element == 2).all() for element in again)


@pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors:UserWarning")
@pytest.mark.parametrize("in_file", [False, True], ids=["shared memory", "file"])
def test_nested_from_tensor_copies_the_elements(tmp_path: pathlib.Path, in_file: bool) -> None:
    source = torch.nested.nested_tensor(
        [torch.full(shape.tolist(), float(i)) for i, shape in enumerate(_ELEMENTS)]
    )
    filename = tmp_path / "n.memmap" if in_file else None
    copy = MemoryMappedTensor.from_tensor(source, filename=filename)
    assert type(copy) is MemoryMappedTensor and copy.is_nested
    for mine, theirs in zip(copy, source):
        assert mine.dtype == theirs.dtype and torch.equal(mine, theirs)
    blank = MemoryMappedTensor.from_tensor(source, copy_data=False)
    assert torch.equal(blank._nested_tensor_size(), _ELEMENTS) and not blank[2].any()
    with pytest.raises(_errors.ShapeError, match="element shapes of the nested input"):
        MemoryMappedTensor.from_tensor(source, shape=torch.tensor([[1, 1]]))


def test_nested_shapes_are_checked() -> None:
    with pytest.raises(_errors.ShapeError, match="integers"):
        MemoryMappedTensor.empty(torch.tensor([[2.0, 3.0]]))
    with pytest.raises(_errors.ShapeError, match="non-negative"):
        MemoryMappedTensor.zeros(torch.tensor([[2, -3]]))


def test_nested_copies_and_pickles(tmp_path: pathlib.Path) -> None:
    tensor = MemoryMappedTensor.full(_ELEMENTS, fill_value=3.0, filename=tmp_path / "n")
    alias = copy.copy(tensor)
    assert type(alias) is MemoryMappedTensor and alias.filename == tensor.filename
    alias.fill_(4.0)  # the same memory
    assert all((element == 4).all() for element in tensor)
    deep = copy.deepcopy(tensor)
    assert type(deep) is torch.Tensor and deep.is_nested
    back = pickle.loads(pickle.dumps(tensor))  # a reference to the file
    assert type(back) is MemoryMappedTensor and torch.equal(back._nested_tensor_size(), _ELEMENTS)
    back.fill_(5.0)
    assert all((element == 5).all() for element in tensor)
    with pytest.raises(_errors.UnpicklableError, match="anonymous"):
        pickle.dumps(MemoryMappedTensor.zeros(_ELEMENTS))
