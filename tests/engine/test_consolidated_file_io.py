"""How ``consolidate(filename=...)`` writes its file and ``from_consolidated`` reads it
(tclass/_engine/_consolidate.py; ``rewrite_file``, ``tensor_bytes`` and ``open_mapped``
in tclass/_core/_memmap.py, ``write_pieces`` in tclass/_core/_memmap_files.py): the
leaves go into the file with ``pwritev`` from their own memory, or from a contiguous CPU
copy where that memory is not their values; the trailer is read with ``pread``."""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any

import pytest
import torch

from tclass import NonTensorData, TensorDict
from tclass._core import _memmap_files
from tclass._core._memmap import tensor_bytes
from tclass._core._readonly import read_only
from tclass.errors import ConsolidatedFileError, MetadataError, MissingFileError, TclassError


def _awkward() -> dict[str, torch.Tensor]:
    """Leaves whose memory is not their values in C order, beside plain ones."""
    base = torch.arange(12.0).reshape(3, 4)
    complex_leaf = torch.arange(3.0).to(torch.complex64) * (1 + 2j)
    return {
        "plain": base.clone(),
        "transposed": base.t()[:3],  # not contiguous
        "expanded": torch.arange(3.0).unsqueeze(1).expand(3, 4),  # stride 0
        "grad": torch.ones(3, 2, requires_grad=True),  # numpy() refuses it
        "conj": complex_leaf.conj(),  # a lazy conjugation
        "neg": torch._neg_view(torch.arange(3.0)),  # a lazy negation
        "bf16": torch.arange(3, dtype=torch.bfloat16),  # no numpy dtype
        "bool": torch.tensor([True, False, True]),
        "odd": torch.arange(3, dtype=torch.uint8),  # 3 bytes: padded to 16
        "empty": torch.empty(3, 0),
        "scalar_row": torch.arange(3, dtype=torch.int64),
        # one element, a stride of 3 (contiguous for torch), with and without grad
        "odd_stride": torch.arange(6.0).reshape(2, 3).t()[-1, :1],
        "odd_stride_grad": torch.arange(6.0).reshape(2, 3).t()[-1, :1].detach().requires_grad_(),
        "read_only": read_only(base.clone()),  # numpy() gives a read-only array
        "read_only_t": read_only(base.clone()).t()[:3],
    }


def _collection() -> TensorDict:
    return TensorDict({**_awkward(), "nested": {"x": torch.arange(6.0).reshape(3, 2)}}, [])


def _expected() -> dict[str, torch.Tensor]:
    leaves = {k: v.detach().resolve_conj().resolve_neg().clone() for k, v in _awkward().items()}
    leaves["nested"] = torch.arange(6.0).reshape(3, 2)
    return leaves


def _check(read: Any) -> None:
    for key, value in _expected().items():
        got = read["nested", "x"] if key == "nested" else read[key]
        assert got.dtype == value.dtype and torch.equal(got, value), key


def test_every_kind_of_leaf_is_written_by_its_values(tmp_path: Path) -> None:
    path = str(tmp_path / "c.bin")
    source = _collection()
    result = source.consolidate(filename=path)
    _check(result)
    _check(TensorDict.from_consolidated(path))
    _check(source)  # the source is left as it was
    assert not result["grad"].requires_grad  # detached, as the in-memory consolidation


def test_the_file_holds_the_bytes_of_the_in_memory_buffer(tmp_path: Path) -> None:
    # The leaves and their zero padding as consolidate() lays them out in memory
    path = tmp_path / "c.bin"
    source = _collection()
    source.consolidate(filename=str(path))
    buffer = source.consolidate()._consolidated["storage"]
    own = bytes(buffer.numpy())
    end = own.index(b'{"tree"')  # where the leaves end (the trailers differ: the peer's)
    assert path.read_bytes()[:end] == own[:end]


def test_the_peer_reads_every_kind_of_leaf(tmp_path: Path) -> None:
    peer = pytest.importorskip("tensordict")
    path = str(tmp_path / "c.bin")
    _collection().consolidate(filename=path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        read = peer.TensorDict.from_consolidated(path)
    _check(read)


def test_writes_into_the_result_reach_the_file(tmp_path: Path) -> None:
    path = str(tmp_path / "c.bin")
    result = _collection().consolidate(filename=path)
    result["plain"].add_(100)
    assert torch.equal(TensorDict.from_consolidated(path)["plain"], _expected()["plain"] + 100)


def test_more_leaves_than_one_pwritev_takes(tmp_path: Path) -> None:
    # 1,100 leaves of 4 bytes, each padded: over 2,048 pieces, written piece by piece
    leaves = {f"k{i}": torch.full((1,), float(i)) for i in range(1100)}
    path = str(tmp_path / "c.bin")
    TensorDict(leaves, []).consolidate(filename=path)
    read = TensorDict.from_consolidated(path)
    assert all(read[f"k{i}"].item() == float(i) for i in range(1100))


def test_a_short_write_is_finished(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # pwritev may write less than asked (over ~2 GiB): the rest is written after it
    def short(fd: int, pieces: Any, offset: int) -> int:
        return os.pwrite(fd, bytes(pieces[0])[:5], offset)  # 5 bytes of the first piece

    monkeypatch.setattr(_memmap_files.os, "pwritev", short)
    path, fresh = tmp_path / "c.bin", tmp_path / "fresh.bin"
    _collection().consolidate(filename=str(path))
    monkeypatch.undo()
    _collection().consolidate(filename=str(fresh))
    assert path.read_bytes() == fresh.read_bytes()
    _check(TensorDict.from_consolidated(str(path)))


def test_a_failed_staged_move_leaves_no_staging_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(tmp_path / "c.bin")
    _collection().consolidate(filename=path)
    loaded = TensorDict.from_consolidated(path)  # its leaves map the file: staged

    def refuse(source: str, target: str) -> None:
        raise PermissionError(13, "refused", target)

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(PermissionError):
        loaded.consolidate(filename=path)
    monkeypatch.undo()
    assert sorted(os.listdir(tmp_path)) == ["c.bin"]
    _check(TensorDict.from_consolidated(path))


def test_tensor_bytes_is_the_memory_of_a_plain_leaf_and_a_copy_otherwise() -> None:
    plain = torch.arange(6.0)
    assert tensor_bytes(plain).ctypes.data == plain.data_ptr()  # no copy
    for leaf in _awkward().values():
        data = bytes(tensor_bytes(leaf))
        values = leaf.detach().resolve_conj().resolve_neg()
        if values.dtype == torch.bfloat16:  # (numpy has no bfloat16: its bits as int16)
            values = values.view(torch.int16)
        assert data == values.numpy().tobytes(), leaf  # (numpy's bytes: C order)


def test_a_long_trailer_is_read_past_the_first_read(tmp_path: Path) -> None:
    # a description longer than the 16 KiB read first from the file's end
    leaves = {f"a_rather_long_key_name_{i:05d}": torch.full((1,), float(i)) for i in range(800)}
    path = str(tmp_path / "c.bin")
    TensorDict(leaves, []).consolidate(filename=path)
    assert os.path.getsize(path) - 800 * 16 > 32 << 10
    read = TensorDict.from_consolidated(path)
    assert list(read.keys()) == list(leaves) and read["a_rather_long_key_name_00799"].item() == 799


def test_a_value_holding_itself_is_not_written(tmp_path: Path) -> None:
    # not JSON: refused before the file is touched, as any value that is not JSON
    loop: list[Any] = [1]
    loop.append(loop)
    source = TensorDict({"x": torch.zeros(2)}, [])
    source["v"] = NonTensorData(loop)
    assert source.consolidate().is_consolidated()  # in memory: kept beside the buffer
    with pytest.raises(ConsolidatedFileError, match="not JSON"):
        source.consolidate(filename=str(tmp_path / "c.bin"))
    assert not os.listdir(tmp_path)


def test_no_regular_file_is_a_missing_file(tmp_path: Path) -> None:
    for path in (tmp_path / "none.bin", tmp_path, tmp_path / "none" / "deeper.bin"):
        with pytest.raises(MissingFileError, match="no file") as caught:
            TensorDict.from_consolidated(str(path))
        assert isinstance(caught.value, FileNotFoundError) and isinstance(caught.value, TclassError)


@pytest.mark.parametrize(
    ("content", "match"),
    [
        (b"", "too short"),
        (b"1234567", "too short"),
        ((1000).to_bytes(8, "little"), "out of range"),
        (b"{not json" + (9).to_bytes(8, "little"), "not valid JSON"),
        (b"[1, 2]" + (6).to_bytes(8, "little"), "does not describe"),
    ],
)
def test_a_file_that_is_not_consolidated_is_refused(
    tmp_path: Path, content: bytes, match: str
) -> None:
    path = tmp_path / "c.bin"
    path.write_bytes(content)
    with pytest.raises(MetadataError, match=match):
        TensorDict.from_consolidated(str(path))
