"""Value constraints travel with the data and are checked again on load (issue 31,
item 1).

A saved record's schema records its fields' constraints; loading a folder, a ``.tdz``
archive or an HDF5 file with the class reads each constrained file once and refuses
values that break a constraint (a file edited on disk, written by another program):
a ``FieldSpecError`` naming the file, the field, the constraint, the first offending
index and value. Shapes-only loads (``device="meta"``) read nothing.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import tclass
from tclass import errors
from tclass._core._constraints import Constraints

from schema_records import Part, Scored, scored  # noqa: E402

Tensor = torch.Tensor
FieldSpecError = errors.FieldSpecError


def poke(path: Path, dtype: Any, index: int, value: float) -> None:
    """Writes ``value`` at flat ``index`` of a ``.memmap`` file, past tclass."""
    data = np.memmap(path, dtype=dtype, mode="r+")
    data[index] = value
    data.flush()
    del data


def test_the_saved_schema_records_the_constraints(tmp_path: Path) -> None:
    scored().memmap(tmp_path / "s")
    meta = json.loads((tmp_path / "s" / "_tensordict" / "meta.json").read_text())
    spec = meta["_tclass"]["schema"]["fields"]["prob"]["spec"]
    assert spec["constraints"] == {"ge": 0, "le": 1}
    assert Constraints.from_json(spec["constraints"], "") == Constraints(ge=0, le=1)
    loaded = Scored.load_memmap(tmp_path / "s")
    assert (loaded == scored()).all()


def test_a_folder_edited_to_break_a_constraint_is_refused_naming_the_file(
    tmp_path: Path,
) -> None:
    scored().memmap(tmp_path / "s")
    file = tmp_path / "s" / "_tensordict" / "prob.memmap"
    poke(file, np.float32, 7, 1.5)  # row 2, column 1
    with pytest.raises(FieldSpecError) as caught:
        Scored.load_memmap(tmp_path / "s")
    message = str(caught.value)
    assert f"{str(file)!r}: Scored.prob holds 1.5 at index (2, 1), which breaks le=1" in message
    assert "fix the values in the file" in message
    (problem,) = caught.value.problems
    assert (problem.field, problem.element, problem.got) == ("prob", (2, 1), 1.5)
    with pytest.raises(FieldSpecError, match="prob.memmap"):
        tclass.load_memmap(tmp_path / "s")  # the class named in the folder
    # Shapes only: nothing is read, nothing to check.
    assert Scored.load_memmap(tmp_path / "s", device="meta").prob.shape == (4, 3)


def test_a_nested_record_file_is_named(tmp_path: Path) -> None:
    scored().memmap(tmp_path / "s")
    file = tmp_path / "s" / "_tensordict" / "part" / "_tensordict" / "level.memmap"
    poke(file, np.int64, 3, 0)
    with pytest.raises(FieldSpecError, match=r"level.memmap'?: Part.level holds 0 at index \(3,\)"):
        Scored.load_memmap(tmp_path / "s")


def test_a_lazy_stack_of_records_checks_each_member(tmp_path: Path) -> None:
    stacked = tclass.lazy_stack([scored(2), scored(2)])
    stacked.memmap(tmp_path / "s")
    files = sorted((tmp_path / "s").rglob("prob.memmap"))
    assert len(files) == 2
    poke(files[1], np.float32, 0, -1)
    with pytest.raises(FieldSpecError, match=r"Scored.prob holds -1.0 at index \(0, 0\)") as caught:
        Scored.load_memmap(tmp_path / "s")
    assert str(files[1]) in str(caught.value)


def test_each_constrained_file_is_read_once_on_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scored().memmap(tmp_path / "s")
    read: list[tuple[int, ...]] = []
    original = Constraints.first_violation

    def counted(self: Constraints, tensor: Tensor) -> Any:
        read.append(tuple(tensor.shape))
        return original(self, tensor)

    monkeypatch.setattr(Constraints, "first_violation", counted)
    Scored.load_memmap(tmp_path / "s")
    assert sorted(read) == [(4,), (4, 3)]  # prob and part.level, once each


def test_an_archive_edited_to_break_a_constraint_is_refused(tmp_path: Path) -> None:
    archive = tmp_path / "s.tdz"
    tclass.save(scored(), archive)
    assert (tclass.load(archive) == scored()).all()
    opened = Scored.load_memmap(archive, mode="r+")
    opened.prob[1, 2] = -0.25  # the tensor's own write: no record check
    del opened
    tclass.refresh_archive_checksums(archive)
    assert zipfile.ZipFile(archive).testzip() is None
    with pytest.raises(
        FieldSpecError, match=r"prob.memmap.*Scored.prob holds -0.25 at index \(1, 2\)"
    ):
        tclass.load(archive)


def test_an_hdf5_file_edited_to_break_a_constraint_is_refused(tmp_path: Path) -> None:
    h5py = pytest.importorskip("h5py")
    path = tmp_path / "s.h5"
    scored().to_h5(path).close()
    with h5py.File(path, "r+") as file:
        file["part"]["level"][2] = 9
    with pytest.raises(FieldSpecError) as caught:
        Scored.from_h5(path)
    message = str(caught.value)
    assert (
        "'/part/level'" in message
        and "Part.level holds 9 at index (2,), which breaks isin" in message
    )
    with h5py.File(path, "r+") as file:
        file["part"]["level"][2] = 3
    record = Scored.from_h5(path)
    try:
        assert record.part.level.tolist() == [1, 1, 3, 1]
        bad = Part(level=torch.tensor(1), batch_size=[])
        bad._tensordict._tensors["level"] = torch.tensor(4)  # past the checks
        with pytest.raises(FieldSpecError, match="Part.level: the value written holds 4"):
            record.part[0] = bad
        assert record.part.level.tolist() == [1, 1, 3, 1]
    finally:
        record.close()


def test_writes_into_a_record_over_an_hdf5_file_check_the_values(tmp_path: Path) -> None:
    pytest.importorskip("h5py")
    record = scored().to_h5(tmp_path / "s.h5")
    try:
        with pytest.raises(FieldSpecError, match="Scored.prob: the value written holds 2.0"):
            record[0] = {"prob": torch.tensor([0.0, 2.0, 0.0])}
        with pytest.raises(FieldSpecError, match="Scored.prob: the value written holds -1"):
            record.set_at_("prob", -1, 1)
        assert record.prob.max() == 0.5
    finally:
        record.close()


def _plain_folder(path: Path, prob: float, level: int) -> Path:
    """A TensorDict folder (no schema) holding ``scored()``'s entries, edited."""
    td = scored().to_tensordict()
    td["prob"].fill_(prob)
    td["part", "level"].fill_(level)
    return Path(td.memmap(path).saved_path or path)


def test_load_memmap_into_a_record_checks_a_folder_of_another_kind(tmp_path: Path) -> None:
    # record.load_memmap_(p), record.load_(p), load_memmap(p, out=record): a folder a
    # TensorDict wrote is checked as Cls.from_tensordict checks it; the record is
    # left as it was (before: its entries were replaced by the unchecked ones)
    for loads in (
        lambda record, path: record.load_memmap_(path),
        lambda record, path: record.load_(path),
        lambda record, path: tclass.load_memmap(path, out=record),
    ):
        for name, prob, level in (("p", 2.0, 1), ("l", 0.5, 9)):
            path = _plain_folder(tmp_path / f"{name}{id(loads)}", prob, level)
            record = scored()
            with pytest.raises(FieldSpecError, match="prob" if name == "p" else "level"):
                loads(record, path)
            assert (record == scored()).all() and not record.is_memmap()
    good = _plain_folder(tmp_path / "good", 0.25, 3)
    record = scored()
    assert record.load_memmap_(good) is record
    assert record.prob.tolist() == [[0.25] * 3] * 4 and record.part.level.tolist() == [3] * 4


def test_load_memmap_into_a_collection_checks_the_records_it_holds(tmp_path: Path) -> None:
    # a TensorDict holding a record, loaded from a folder holding a TensorDict there:
    # checked before anything changes (the record's class, nested records included)
    bad = tclass.TensorDict(rec=scored().to_tensordict(), x=torch.zeros(4), batch_size=[4])
    bad["rec", "part", "level"].fill_(7)
    bad.memmap(tmp_path / "bad")
    td = tclass.TensorDict(rec=scored(), x=torch.ones(4), batch_size=[4])
    with pytest.raises(FieldSpecError, match="level"):
        td.load_memmap_(tmp_path / "bad")
    assert td["x"].tolist() == [1.0] * 4 and (td["rec"] == scored()).all()
    bad["rec", "part", "level"].fill_(2)
    td.load_memmap_(bad.memmap(tmp_path / "good").saved_path or tmp_path / "good")
    assert isinstance(td["rec"], Scored) and td["rec", "part", "level"].tolist() == [2] * 4
    assert td["x"].tolist() == [0.0] * 4


def test_memmap_refresh_checks_a_file_another_process_replaced(tmp_path: Path) -> None:
    # memmap_refresh_ reloads the record's fields folder (a TensorDict's): a file
    # replaced there (a new inode, not seen through the shared pages) is checked as a
    # load of the record checks it, and the record keeps what it held
    record = scored().memmap(tmp_path / "s")
    path = tmp_path / "s" / "_tensordict" / "prob.memmap"
    data = np.fromfile(path, dtype=np.float32)
    data[4] = 7.0
    path.unlink()
    data.tofile(path)
    with pytest.raises(FieldSpecError, match="prob"):
        record.memmap_refresh_()
    assert record.prob.tolist() == [[0.5] * 3] * 4
    data[4] = 0.75
    path.unlink()
    data.tofile(path)
    assert record.memmap_refresh_() is record and record.prob[1].tolist() == [0.5, 0.75, 0.5]


def test_edited_python_values_are_refused_on_load(tmp_path: Path) -> None:
    """A constrained Python value edited in a saved folder or HDF5 file (``Annotated[int,
    Ge(0)]``) is refused as the constructor refuses it, naming the file; nothing loads."""
    from typing import Annotated

    import annotated_types as at

    from tclass import TensorClass

    class Counted(TensorClass):
        x: torch.Tensor
        count: Annotated[int, at.Ge(0)] = 0

    record = Counted(x=torch.zeros(2), count=1, batch_size=[2])
    record.memmap(tmp_path / "f")
    meta_file = tmp_path / "f" / "_tensordict" / "count" / "meta.json"
    meta = json.loads(meta_file.read_text())
    meta["data"] = -7
    meta_file.write_text(json.dumps(meta))
    want = r"Counted\.count is given int -7, which breaks ge=0.*nothing was loaded"
    with pytest.raises(errors.FieldSpecError, match=want):
        Counted.load_memmap(tmp_path / "f")
    kept = record.clone()
    with pytest.raises(errors.FieldSpecError, match=want):
        kept.load_memmap_(tmp_path / "f")
    assert kept.count == 1
    h5py = pytest.importorskip("h5py")
    record.to_h5(tmp_path / "r.h5")
    with h5py.File(tmp_path / "r.h5", "r+") as f:
        f["count"][()] = -4
    with pytest.raises(errors.FieldSpecError, match=r"r\.h5.*Counted\.count is given int -4"):
        Counted.from_h5(tmp_path / "r.h5")
