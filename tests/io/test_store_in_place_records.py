"""In-place writes over a whole HDF5 file whose groups hold records are all or nothing.

``ptd.apply_(fn)``, in-place math (``ptd.mul_(2)``, ``ptd += 1``), ``zero_`` and
``fill_`` on a ``PersistentTensorDict`` whose nested groups are records of a class with
value constraints check every result against the class before any array is written: a
refused write leaves the file as it was (the entries before the record included), as
``update_`` and ``set_`` on a file do. Writes that the classes take give the peer's
values.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

import tclass
from tclass import errors

from schema_records import Scored, scored  # noqa: E402

pytest.importorskip("h5py")
tensordict = pytest.importorskip("tensordict")


@tclass.tensorclass
class Outer:
    a: torch.Tensor
    rec: Scored
    z: torch.Tensor


def _write(path: Path) -> None:
    Outer(a=torch.zeros(4), rec=scored(), z=torch.zeros(4), batch_size=[4]).to_h5(path).close()


def _snapshot(ptd: Any) -> dict[str, list[Any]]:
    return {
        "/".join(key): ptd.get(key).tolist()
        for key in ptd.keys(include_nested=True, leaves_only=True)
        if isinstance(ptd.get(key), torch.Tensor)
    }


REFUSED: list[Any] = [
    pytest.param(lambda p: p.apply_(lambda t: t + 5), r"Part\.level.* 6 ", id="apply_"),
    pytest.param(lambda p: p.mul_(5), r"Part\.level.* 5 ", id="mul_"),
    pytest.param(lambda p: p.__iadd__(5), r"Part\.level.* 6 ", id="iadd"),
    pytest.param(lambda p: p.zero_(), r"Part\.level holds 0", id="zero_"),
    pytest.param(lambda p: p.fill_("rec", 7.0), r"Scored\.prob holds 7\.0", id="fill_"),
]


@pytest.mark.parametrize(("write", "match"), REFUSED)
def test_a_refused_write_leaves_the_whole_file_as_it_was(
    write: Callable[[Any], Any], match: str, tmp_path: Path
) -> None:
    path = tmp_path / "f.h5"
    _write(path)
    record = Outer.from_h5(path, mode="r+")
    ptd = record._tensordict  # the file, its groups bound to their records' classes
    assert isinstance(ptd, tclass.PersistentTensorDict)
    before = _snapshot(ptd)
    with pytest.raises(errors.FieldSpecError, match=match):
        write(ptd)
    assert _snapshot(ptd) == before  # "a" (written first before) is unchanged too
    ptd.close()
    Outer.from_h5(path).close()  # the file still loads as its class


def _peer_file(path: Path) -> Any:
    td = tensordict.TensorDict(
        a=torch.zeros(4),
        rec=tensordict.TensorDict(prob=torch.full((4, 3), 0.5), free=torch.ones(4)),
        batch_size=[4],
    )
    return tensordict.PersistentTensorDict.from_dict(td, path)


ACCEPTED: list[Any] = [
    pytest.param(lambda p: p.apply_(lambda t: t * 0.5), id="apply_"),
    pytest.param(lambda p: p.apply_(lambda t, o: t + o, p.to_tensordict()), id="apply_-other"),
    pytest.param(lambda p: p.mul_(0.5), id="mul_"),
    pytest.param(lambda p: p.zero_(), id="zero_"),
    pytest.param(lambda p: p.fill_("rec", 0.25), id="fill_"),
]


@pytest.mark.parametrize("write", ACCEPTED)
def test_writes_the_records_take_give_the_peers_values(
    write: Callable[[Any], Any], tmp_path: Path
) -> None:
    peer = _peer_file(tmp_path / "peer.h5")
    write(peer)
    expected = {"/".join(k): v.tolist() for k, v in peer.items(True, True)}
    peer.close()
    peer = _peer_file(tmp_path / "again.h5")  # the same start, written by the peer
    peer.close()
    mine = tclass.PersistentTensorDict.from_h5(tmp_path / "again.h5", mode="r+")
    write(mine)
    assert _snapshot(mine) == expected
    mine.close()


def test_a_write_the_record_takes_is_written_everywhere(tmp_path: Path) -> None:
    path = tmp_path / "f.h5"
    _write(path)
    ptd = Outer.from_h5(path, mode="r+")._tensordict
    ptd.apply_(lambda t: t if t.dtype == torch.int64 else t * 0.5)
    assert ptd["a"].tolist() == [0.0] * 4
    assert ptd["rec", "prob"].tolist() == [[0.25] * 3] * 4
    assert ptd["rec", "free"].tolist() == [-4.5] * 4
    ptd.close()
