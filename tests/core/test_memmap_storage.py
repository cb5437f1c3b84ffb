"""``MemoryMappedTensor.from_storage``: a MemoryMappedTensor over an existing storage.

No data is copied. A storage mapped from a file (``UntypedStorage.from_file``,
``torch.from_file``) gives a file-backed tensor that pickles as a file reference; any
other storage gives an anonymous one. The peer's deprecated ``from_handler`` (a tensor over
a handler's buffer) is accepted with a ``DeprecationWarning``.
"""

from __future__ import annotations

import pickle
import warnings
from pathlib import Path

import pytest
import torch

from tclass import MemoryMappedTensor, errors


def _file(tmp_path: Path) -> str:
    path = str(tmp_path / "x.memmap")
    MemoryMappedTensor.from_tensor(torch.arange(6.0), filename=path)
    return path


def test_a_file_storage_gives_a_file_backed_tensor(tmp_path: Path) -> None:
    path = _file(tmp_path)
    storage = torch.UntypedStorage.from_file(path, shared=True, nbytes=24)
    tensor = MemoryMappedTensor.from_storage(storage, dtype=torch.float32, shape=(2, 3))
    assert type(tensor) is MemoryMappedTensor
    assert tensor.filename == path
    assert tensor.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    tensor[0, 0] = 42.0
    assert MemoryMappedTensor.from_filename(path, torch.float32, (6,))[0].item() == 42.0
    again = pickle.loads(pickle.dumps(tensor))
    assert again.filename == path and again[0, 0].item() == 42.0


def test_no_copy_is_made() -> None:
    storage = torch.UntypedStorage(16)
    tensor = MemoryMappedTensor.from_storage(storage, dtype=torch.float32)
    assert tensor.data_ptr() == storage.data_ptr()
    assert tensor.shape == torch.Size([4]) and tensor.filename is None
    tensor.fill_(1.0)
    assert torch.frombuffer(bytearray(bytes(storage)), dtype=torch.float32).tolist() == [1.0] * 4


def test_dtypes_shapes_and_index() -> None:
    assert MemoryMappedTensor.from_storage(torch.UntypedStorage(16)).dtype == torch.int64
    typed = torch.arange(4.0).untyped_storage()
    assert MemoryMappedTensor.from_storage(typed, dtype=torch.float32).tolist() == [
        0.0,
        1.0,
        2.0,
        3.0,
    ]
    with warnings.catch_warnings():  # torch deprecates typed storages; they still work
        warnings.simplefilter("ignore", UserWarning)
        legacy = torch.arange(4.0, dtype=torch.float64).storage()
        assert MemoryMappedTensor.from_storage(legacy).dtype == torch.float64
    rows = MemoryMappedTensor.from_storage(
        torch.arange(6.0).untyped_storage(), dtype=torch.float32, shape=(2, 3), index=1
    )
    assert rows.tolist() == [3.0, 4.0, 5.0] and type(rows) is MemoryMappedTensor
    with pytest.raises(errors.ShapeError):
        MemoryMappedTensor.from_storage(torch.UntypedStorage(24), dtype=torch.float32, shape=(7,))


def test_a_filename_that_contradicts_the_storage_is_refused(tmp_path: Path) -> None:
    path = _file(tmp_path)
    storage = torch.UntypedStorage.from_file(path, shared=True, nbytes=24)
    with pytest.raises(RuntimeError):
        MemoryMappedTensor.from_storage(storage, dtype=torch.float32, filename=tmp_path / "other")
    same = MemoryMappedTensor.from_storage(storage, dtype=torch.float32, filename=path)
    assert same.filename == path


def test_only_cpu_storages() -> None:
    with pytest.raises(errors.DeviceError):
        MemoryMappedTensor.from_storage(torch.UntypedStorage(8), device="meta")
    assert MemoryMappedTensor.from_storage(torch.UntypedStorage(8), device="cpu").numel() == 1


def test_anonymous_results_refuse_pickle() -> None:
    tensor = MemoryMappedTensor.from_storage(torch.UntypedStorage(8), dtype=torch.float32)
    with pytest.raises(TypeError):
        pickle.dumps(tensor)


@pytest.mark.peer
def test_same_views_as_the_peer(tmp_path: Path) -> None:
    peer = pytest.importorskip("tensordict")
    path = _file(tmp_path)
    storage = torch.UntypedStorage.from_file(path, shared=True, nbytes=24)
    ours = MemoryMappedTensor.from_storage(storage, dtype=torch.float32, shape=(3, 2), index=2)
    theirs = peer.MemoryMappedTensor.from_storage(
        storage, dtype=torch.float32, shape=(3, 2), index=2
    )
    assert torch.equal(torch.as_tensor(ours), torch.as_tensor(theirs))
    assert ours.filename == theirs.filename


def test_from_handler_is_deprecated_and_views_the_buffer() -> None:
    class Handler:
        def __init__(self, size: int) -> None:
            self.buffer = bytearray(size)

    handler = Handler(24)
    with pytest.warns(DeprecationWarning, match="from_handler"):
        tensor = MemoryMappedTensor.from_handler(handler, torch.float32, (2, 3), 1)
    assert type(tensor) is MemoryMappedTensor and tensor.shape == (3,)
    tensor.fill_(2.0)  # a view of the handler's memory
    assert torch.frombuffer(handler.buffer, dtype=torch.float32).tolist() == [0.0] * 3 + [2.0] * 3
    with pytest.warns(DeprecationWarning), pytest.raises(errors.ShapeError, match="48 bytes"):
        MemoryMappedTensor.from_handler(handler, torch.float64, (2, 3))
    with pytest.warns(DeprecationWarning), pytest.raises(TypeError, match="buffer"):
        MemoryMappedTensor.from_handler(object(), torch.float32, (1,))
    built = MemoryMappedTensor(None, handler=handler, dtype=torch.float32, shape=(6,))
    assert built[5].item() == 2.0


@pytest.mark.peer
def test_from_handler_reads_the_peers_handler() -> None:
    peer = pytest.importorskip("tensordict")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        handler = peer.MemoryMappedTensor.from_tensor(torch.arange(6.0))._handler
        tensor = MemoryMappedTensor.from_handler(handler, torch.float32, [2, 3])
    assert tensor.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]


def test_the_storage_of_a_saved_tensor_names_its_file(tmp_path: Path) -> None:
    # tclass maps files through /proc/<pid>/fd/N, the name torch records on the storage;
    # that descriptor is closed by now: the result names (and pickles) the file itself.
    path = str(tmp_path / "x.memmap")
    saved = MemoryMappedTensor.from_tensor(torch.arange(6.0), filename=path)
    storage = saved.untyped_storage()
    again = MemoryMappedTensor.from_storage(storage, dtype=torch.float32, shape=(2, 3))
    assert again.filename == path
    same = MemoryMappedTensor.from_storage(storage, dtype=torch.float32, filename=path)
    assert same.filename == path
    with pytest.raises(errors.FileConflictError, match="x.memmap"):
        MemoryMappedTensor.from_storage(storage, dtype=torch.float32, filename=tmp_path / "y")
    with open(tmp_path / "other", "wb") as other:  # may take the descriptor's old number
        other.write(b"\0" * 24)
        copy = pickle.loads(pickle.dumps(again))
    assert copy.filename == path and copy.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]


def test_the_storage_of_a_deleted_file_names_none(tmp_path: Path) -> None:
    path = tmp_path / "x.memmap"
    saved = MemoryMappedTensor.from_tensor(torch.arange(6.0), filename=path)
    path.unlink()
    anonymous = MemoryMappedTensor.from_storage(saved.untyped_storage(), dtype=torch.float32)
    assert anonymous.filename is None and anonymous.tolist() == list(map(float, range(6)))


def test_a_nested_shape_gives_a_nested_tensor(tmp_path: Path) -> None:
    path = _file(tmp_path)
    storage = torch.UntypedStorage.from_file(path, shared=True, nbytes=24)
    sizes = torch.tensor([[1, 2], [2, 2]])
    nested = MemoryMappedTensor.from_storage(storage, dtype=torch.float32, shape=sizes)
    assert type(nested) is MemoryMappedTensor and nested.is_nested
    assert nested.filename == path
    assert nested[0].tolist() == [[0.0, 1.0]] and nested[1].tolist() == [[2.0, 3.0], [4.0, 5.0]]
    nested[1].fill_(7.0)  # a view: the file changes
    assert MemoryMappedTensor.from_filename(path, torch.float32, (6,)).tolist()[2:] == [7.0] * 4
    row = MemoryMappedTensor.from_storage(storage, dtype=torch.float32, shape=sizes, index=0)
    assert row.tolist() == [[0.0, 1.0]]
    first = MemoryMappedTensor.from_storage(storage, dtype=torch.float32, shape=sizes[:1])
    assert first[0].tolist() == [[0.0, 1.0]]  # the storage's first elements, as the peer
    with pytest.raises(errors.ShapeError, match="hold 8 elements but the storage holds 6"):
        MemoryMappedTensor.from_storage(
            storage, dtype=torch.float32, shape=torch.tensor([[1, 2], [2, 3]])
        )


@pytest.mark.peer
def test_nested_views_as_the_peer() -> None:
    peer = pytest.importorskip("tensordict")
    storage = torch.arange(10.0).untyped_storage()
    sizes = torch.tensor([[2, 2], [2, 3]])
    ours = MemoryMappedTensor.from_storage(storage, dtype=torch.float32, shape=sizes)
    theirs = peer.MemoryMappedTensor.from_storage(storage, dtype=torch.float32, shape=sizes)
    for mine, peers in zip(ours.unbind(0), theirs.unbind(0), strict=True):
        assert torch.equal(torch.as_tensor(mine), torch.as_tensor(peers))
