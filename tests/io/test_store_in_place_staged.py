"""``apply_`` and in-place math on a ``PersistentTensorDict`` (and on a view of its rows)
work an array at a time (``tclass/_io/store/_staged.py``): each result is computed and
checked, then staged in memory or, past a budget, in a scratch folder beside the file;
nothing is written until every result is staged. So the memory they need is about the
largest array's, not the file's, and a function that raises or a value a record refuses
after some arrays were worked on leaves the file's bytes as they were. The tests force
the scratch folder by setting the budget to nothing, and check the values against the
peer's where it runs the same program.
"""

from __future__ import annotations

import hashlib
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

import tclass
from tclass import PersistentTensorDict, TensorDict, errors
from tclass._io.store import _staged

from schema_records import Scored, scored  # noqa: E402

pytest.importorskip("h5py")
LIBRARIES = {"h5": "h5py", "zarr": "zarr"}


@pytest.fixture(params=[0, _staged._BUDGET], ids=["spilled", "in-memory"])
def budget(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr(_staged, "_BUDGET", request.param)
    return int(request.param)


@pytest.fixture(params=sorted(LIBRARIES))
def backend(request: pytest.FixtureRequest) -> str:
    pytest.importorskip(LIBRARIES[request.param])
    return str(request.param)


def data() -> TensorDict:
    return TensorDict(
        a=torch.arange(12.0).reshape(4, 3),
        i=torch.arange(4),
        n=TensorDict(b=torch.ones(4, 2, 5), c=torch.arange(8.0).reshape(4, 2), batch_size=[4, 2]),
        batch_size=[4],
    )


def _values(ptd: Any) -> dict[str, list[Any]]:
    return {"/".join(k): v.tolist() for k, v in ptd.items(True, True)}


def _open(tmp_path: Path, backend: str) -> PersistentTensorDict:
    path = tmp_path / f"f.{backend}"
    return PersistentTensorDict.from_dict(data(), path, backend=backend)


def _scratch_left(tmp_path: Path) -> list[Path]:
    return list(tmp_path.glob(".tclass-staged-*"))


WORK: list[Any] = [
    pytest.param(lambda p: p.apply_(lambda t: t * 2), id="apply_"),
    pytest.param(lambda p: p.apply_(lambda t: t.add_(1)), id="apply_-in-fn"),
    pytest.param(lambda p: p.apply_(lambda t, o: t + o, p), id="apply_-itself"),
    pytest.param(lambda p: p.apply_(lambda t: t.sum(-1, keepdim=True)), id="apply_-broadcast"),
    pytest.param(lambda p: p.mul_(3), id="mul_"),
    pytest.param(lambda p: p.__iadd__(p.to_tensordict()), id="iadd-collection"),
    pytest.param(lambda p: p.clamp_(min=2, max=5), id="clamp_"),
    pytest.param(lambda p: p[1:3].apply_(lambda t: t - 7), id="view-apply_"),
    pytest.param(lambda p: p[::3].mul_(-1), id="view-mul_"),
]


@pytest.mark.parametrize("work", WORK)
def test_results_are_the_in_memory_ones(
    work: Callable[[Any], Any], budget: int, backend: str, tmp_path: Path
) -> None:
    expected = data()
    work(expected)  # the same program on a TensorDict in memory
    ptd = _open(tmp_path, backend)
    assert work(ptd) is not None
    assert _values(ptd) == _values(expected)
    assert ptd["i"].dtype == torch.int64  # results cast to the arrays' dtypes
    assert not _scratch_left(tmp_path)
    ptd.close()


def test_the_peers_file_gets_the_peers_values(budget: int, tmp_path: Path) -> None:
    tensordict = pytest.importorskip("tensordict")
    start = tensordict.TensorDict(data().to_dict(), batch_size=[4])
    peer = tensordict.PersistentTensorDict.from_dict(start, tmp_path / "peer.h5")
    peer.apply_(lambda t: t * 2 + 1)
    peer.mul_(2)
    expected = _values(peer)
    peer.close()
    tensordict.PersistentTensorDict.from_dict(start, tmp_path / "f.h5").close()
    mine = PersistentTensorDict.from_h5(tmp_path / "f.h5", mode="r+")
    assert mine.apply_(lambda t: t * 2 + 1) is mine  # returns the file, as the peer's
    mine.mul_(2)
    assert _values(mine) == expected
    mine.close()


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _raise_at_third(fn: Callable[[torch.Tensor], torch.Tensor]) -> Callable[..., Any]:
    seen: list[int] = []

    def third(t: torch.Tensor) -> torch.Tensor:
        seen.append(1)
        if len(seen) == 3:
            raise ValueError("the third array")
        return fn(t)

    return third


FAILING: list[Any] = [
    pytest.param(lambda p: p.apply_(_raise_at_third(lambda t: t + 1)), ValueError, id="raises"),
    pytest.param(lambda p: p.mul_(0.5), errors.InPlaceWriteError, id="int-result"),
    pytest.param(lambda p: p[:2].apply_(_raise_at_third(torch.neg)), ValueError, id="view"),
]


@pytest.mark.parametrize(("work", "error"), FAILING)
def test_a_failure_after_some_arrays_leaves_the_files_bytes(
    work: Callable[[Any], Any], error: type[Exception], budget: int, tmp_path: Path
) -> None:
    ptd = PersistentTensorDict.from_dict(
        TensorDict(a=torch.ones(4), b=torch.ones(4), n={"c": torch.ones(4), "i": torch.arange(4)}),
        tmp_path / "f.h5",
    )
    ptd.close()
    before = _digest(tmp_path / "f.h5")
    ptd = PersistentTensorDict.from_h5(tmp_path / "f.h5", mode="r+")
    with pytest.raises(error):
        work(ptd)
    ptd.close()
    assert _digest(tmp_path / "f.h5") == before
    assert not _scratch_left(tmp_path)


@tclass.tensorclass
class Outer:
    a: torch.Tensor
    rec: Scored
    z: torch.Tensor


def test_a_record_refusing_a_staged_result_leaves_the_files_bytes(
    budget: int, tmp_path: Path
) -> None:
    path = tmp_path / "f.h5"
    Outer(a=torch.zeros(4), rec=scored(), z=torch.zeros(4), batch_size=[4]).to_h5(path).close()
    before = _digest(path)
    record = Outer.from_h5(path, mode="r+")
    ptd = record._tensordict
    with pytest.raises(errors.FieldSpecError, match=r"Part\.level.* 6 .*Nothing was written"):
        ptd.apply_(lambda t: t + 5)  # "a" and rec/free come first, and are fine
    with pytest.raises(errors.FieldSpecError, match=r"Scored\.prob"):
        ptd[1:].mul_(3)
    ptd.close()
    assert _digest(path) == before
    assert not _scratch_left(tmp_path)


def test_memory_is_bounded_by_the_largest_array_not_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Eight arrays of 2 MB: the arrays read (numpy's, which tracemalloc counts) are
    let go once staged, so the peak stays well under the file's 16 MB."""
    monkeypatch.setattr(_staged, "_BUDGET", 1 << 20)
    leaves = {f"x{i}": torch.rand(1024, 512) for i in range(8)}
    ptd = PersistentTensorDict.from_dict(TensorDict(leaves, [1024]), tmp_path / "big.h5")
    for work in (lambda p: p.apply_(lambda t: t * 2), lambda p: p.mul_(2)):
        tracemalloc.start()
        work(ptd)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        assert peak < 8 << 20, f"peak {peak / 2**20:.1f} MB for a 16 MB file"
    assert torch.equal(ptd["x3"], leaves["x3"] * 4)
    ptd.close()


def test_in_place_math_with_other_keys_reads_the_rows_whole(tmp_path: Path) -> None:
    """An operand collection with fewer keys is the whole collection's business (its
    error names the key), as before."""
    ptd = _open(tmp_path, "h5")
    with pytest.raises(KeyError):
        ptd.add_(TensorDict(a=torch.ones(4, 3), batch_size=[4]))
    assert _values(ptd) == _values(data())
    ptd.close()


def _never_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the whole file was read into memory")

    monkeypatch.setattr(PersistentTensorDict, "to_tensordict", refused)


def test_a_record_over_a_file_works_an_array_at_a_time_checked_against_its_class(
    budget: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.h5"
    scored().to_h5(path).close()
    before = _digest(path)
    record = Scored.from_h5(path, mode="r+")
    _never_whole(monkeypatch)
    with pytest.raises(
        errors.FieldSpecError, match=r"Part\.level holds 4 .*; .*Scored\.prob holds 2\.0"
    ):
        record.mul_(4)  # both refusals named, the nested record's and the record's own
    with pytest.raises(errors.FieldSpecError, match=r"Scored\.prob holds 1\.5"):
        record[1:].apply_(lambda t: t * 3 if t.is_floating_point() else t)
    record.close()
    assert _digest(path) == before
    record = Scored.from_h5(path, mode="r+")
    record.apply_(lambda t: t * 0.5 if t.is_floating_point() else t + 1)
    record[:2].apply_(lambda t: t * 2 if t.is_floating_point() else t - 1)
    assert record.prob[:, 0].tolist() == [0.5, 0.5, 0.25, 0.25]
    assert record.part.level.tolist() == [1, 1, 2, 2]
    assert record.free.tolist() == [-9.0, -9.0, -4.5, -4.5]
    assert record.tag == "a" and record.labels == ["x", "y"]  # Python values untouched
    record.close()
    assert not _scratch_left(tmp_path)


def test_a_file_is_never_read_whole_for_apply_or_math(
    budget: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ptd = _open(tmp_path, "h5")
    _never_whole(monkeypatch)
    ptd.apply_(lambda t: t + 1)
    ptd.mul_(2)
    ptd[1:].apply_(lambda t, o: t - o, ptd[1:])  # operands read an array at a time too
    assert ptd["a"][0].tolist() == [2.0, 4.0, 6.0] and ptd["a"][1:].eq(0).all()
    ptd.close()
