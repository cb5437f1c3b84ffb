"""Views of the rows of a ``PersistentTensorDict`` (``tclass/_io/store/_view.py``): what
``ptd[index]`` gives, on each backend whose library is installed (``h5``: h5py,
``zarr``: zarr>=3.1.1). Every write through a view is checked in the file itself,
reopened."""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Annotated, Any

import pytest
import torch

import tclass
from tclass import PersistentTensorDict, Spec, TensorClass, TensorDict
from tclass._io.store._view import PersistentTensorDictView, compose
from tclass.errors import (
    BatchMismatchError,
    BatchSizeError,
    ClosedFileError,
    DimError,
    DimNameError,
    FieldSpecError,
    FilePermissionError,
    InPlaceWriteError,
    KeyNotFoundError,
    LockedError,
    UnsupportedError,
)

LIBRARIES = {"h5": "h5py", "zarr": "zarr"}


def data() -> TensorDict:
    return TensorDict(
        {"r": torch.arange(10), "n": {"x": torch.ones(10, 2)}, "f": torch.zeros(10, 3)}, [10]
    )


@pytest.fixture(params=sorted(LIBRARIES))
def backend(request: pytest.FixtureRequest) -> str:
    pytest.importorskip(LIBRARIES[request.param])
    return str(request.param)


@pytest.fixture
def path(tmp_path: Path, backend: str) -> Path:
    return tmp_path / f"data.{backend}"


@pytest.fixture
def ptd(path: Path, backend: str) -> Iterator[PersistentTensorDict]:
    opened = PersistentTensorDict.from_dict(data(), filename=path, backend=backend)
    yield opened
    opened.close()


def reopened(ptd: PersistentTensorDict, backend: str) -> TensorDict:
    """What the file holds, read back after closing it."""
    ptd.close()
    again = PersistentTensorDict(filename=ptd.filename, backend=backend, batch_size=[10])
    try:
        return again.to_tensordict()
    finally:
        again.close()


# --- reads -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "index",
    [2, -1, slice(2, 4), slice(1, 9, 3), [0, 3], torch.tensor([7, 1, 1]),
     torch.arange(10) % 3 == 0, (slice(None),), ..., None],
    ids=["int", "negative", "slice", "step", "list", "tensor", "mask", "tuple", "ellipsis",
         "none"],
)  # fmt: skip
def test_indexing_gives_a_view_reading_the_rows(ptd: PersistentTensorDict, index: Any) -> None:
    view = ptd[index]
    expected = data()[index]
    assert type(view) is PersistentTensorDictView and view.source is ptd
    assert view.batch_size == expected.batch_size and len(view.keys()) == 3
    assert type(view["n"]) is PersistentTensorDictView and view["n"].batch_size == view.batch_size
    read = view.to_tensordict()
    assert type(read) is TensorDict and type(read["n"]) is TensorDict
    assert (read == expected).all()
    assert torch.equal(view.get(("n", "x")), expected["n", "x"])


@pytest.mark.parametrize(
    ("first", "second"),
    [(slice(2, 8), slice(1, 3)), (slice(2, 8), 1), (slice(1, 9, 2), [3, 0]),
     ([1, 5, 7], slice(1, None)), (torch.arange(10) > 4, 0), (slice(2, 8), torch.tensor([-1])),
     (slice(2, 8), torch.tensor([True, False, True, False, False, True])),
     (3, None), (slice(2, 6), (None, 1))],
)  # fmt: skip
def test_a_view_of_a_view_is_a_view_of_the_file(
    ptd: PersistentTensorDict, backend: str, first: Any, second: Any
) -> None:
    view = ptd[first][second]
    expected = data()[first][second]
    assert type(view) is PersistentTensorDictView and view.source is ptd
    assert (view.to_tensordict() == expected).all()
    view.apply_(lambda t: t * 0 - 1)
    written = data()
    written[torch.arange(10)[first][second].flatten()] = -1  # the rows both indexes select
    assert (reopened(ptd, backend) == written).all()


def test_compose_equals_indexing_twice() -> None:
    positions = torch.arange(60).reshape(6, 10)
    cases = [
        ((slice(1, 5),), (slice(None), 2)),
        (slice(1, 5), (torch.tensor([0, 3]), slice(2, 4))),
        ((slice(None), 3), slice(1, 4)),
        ((1, slice(2, 9)), torch.tensor([0, 6])),
        (torch.tensor([5, 0, 2]), (1, torch.tensor([9, 0]))),
        ((torch.tensor([1, 2]), torch.tensor([3, 4])), 1),
    ]
    for first, second in cases:
        composed = compose(first, second, positions.shape)
        assert torch.equal(positions[composed], positions[first][second]), (first, second)
    assert compose(slice(2, 8), slice(1, 3), torch.Size([10])) == slice(3, 5, 1)
    assert compose(slice(2, 8), -1, torch.Size([10])) == 7


@pytest.mark.parametrize(
    "second", [torch.zeros(0, dtype=torch.bool), torch.zeros(0, dtype=torch.long), slice(1, 3)]
)
def test_a_view_of_no_rows_past_the_end_takes_an_index_of_no_rows(
    ptd: PersistentTensorDict, backend: str, second: Any
) -> None:
    """``ptd[12:-3]`` selects no row (its range runs backwards: ``range(12)[12:-3]`` is
    ``range(10, 7)``); an index of it selects none either, as the peer's (a mask of
    none used to fail inside: "upper bound and lower bound inconsistent")."""
    view = ptd[12:-3]
    assert view.batch_size == (0,)
    rows = view[second]
    assert rows.batch_size == (0,) and rows["f"].shape == (0, 3)
    view[second] = rows.clone().zero_()  # nothing written
    assert (reopened(ptd, backend) == data()).all()


@pytest.mark.parametrize(
    ("first", "second"),
    [(..., None), (None, None), (..., (None, None)), (None, 0), (None, (0, None)),
     (None, []), (None, slice(1, None)), ((None, None), (slice(None), []))],
)  # fmt: skip
def test_views_of_a_file_of_batch_size_empty_keep_their_new_dims(
    tmp_path: Path, backend: str, first: Any, second: Any
) -> None:
    plain = TensorDict({"a": torch.tensor(3.0), "b": torch.arange(2), "e": {}}, [])
    ptd = PersistentTensorDict.from_dict(plain, filename=tmp_path / f"s.{backend}", backend=backend)
    view = ptd[first][second]  # the view composes a 0-dim index: new dims only
    expected = plain[first][second]
    assert type(view) is PersistentTensorDictView and view.batch_size == expected.batch_size
    assert view["e"].batch_size == expected.batch_size
    assert (view.to_tensordict() == expected).all()
    ptd.close()


def _one_row() -> TensorDict:
    return TensorDict(
        {"a": torch.tensor([1.0, 2.0]), "n": {"b": torch.tensor(5)}, "e": {}, "s": "hi"}, []
    )


@pytest.mark.parametrize(
    "steps",
    [(None, [0, 0]), (None, [0, 0, 0]), (None, ([0, 0], ...)), ((None, None), [0, 0]),
     (None, [[0, 0], [0, 0]]), (None, [-1, 0]), (None, (None, [0, 0])),
     (None, [0, 0], slice(1, None)), (None, [0, 0], None), (None, [0, 0], [1, 0]),
     (None, [0, 0], 0), (None, [0, 0], torch.tensor([True, False])),
     (None, [0, 0], (slice(None), None)), (None, [0, 0, 0], [])],
)  # fmt: skip
def test_views_repeating_the_one_row_of_a_file_of_batch_size_empty_read_it(
    tmp_path: Path, backend: str, steps: tuple[Any, ...]
) -> None:
    """Fuzz programs 10,981,072 (index --length 8) and 10,803,114 (index,combine,shape,
    entries --length 6): ``ptd[None][[0, 0]]`` of a file of batch size ``[]`` is a view
    of the file repeating its one row, as the peer's ``_SubTensorDict`` (refused before:
    torch has no one index for it)."""
    plain = _one_row()
    ptd = PersistentTensorDict.from_dict(plain, filename=tmp_path / f"r.{backend}", backend=backend)
    view: Any = ptd
    expected = plain
    for step in steps:
        view, expected = view[step], expected[step]
    assert type(view) is PersistentTensorDictView and view.batch_size == expected.batch_size
    assert view["a"].tolist() == expected["a"].tolist()
    assert type(view["n"]) is PersistentTensorDictView and view["n", "b"].tolist() == (
        expected["n", "b"].tolist()
    )
    assert view["e"].batch_size == expected.batch_size and view["s"] == expected["s"]
    assert (view.to_tensordict() == expected).all()
    assert pickle.loads(pickle.dumps(view))["a"].tolist() == expected["a"].tolist()
    ptd.close()


def test_writes_through_a_view_repeating_the_one_row_write_it_as_torch(
    tmp_path: Path, backend: str
) -> None:
    """A write through ``ptd[None][[0, 0]]`` writes the file's one row as torch writes
    ``t[None][[0, 0]] = v``: the row written last holds (the peer's view fails: "Selection
    can't process None")."""
    ptd = PersistentTensorDict.from_dict(
        _one_row(), filename=tmp_path / f"w.{backend}", backend=backend
    )
    view = ptd[None][[0, 0]]
    rows = torch.tensor([[10.0, 20.0], [30.0, 40.0]])
    a = ptd["a"]
    a[None][[0, 0]] = rows
    view["a"] = rows
    assert ptd["a"].tolist() == a.tolist() == [30.0, 40.0]
    view.zero_()
    assert ptd["a"].tolist() == [0.0, 0.0] and ptd["n", "b"].item() == 0
    view += 1  # the rows read, worked on and written back: the row once
    assert ptd["a"].tolist() == [1.0, 1.0] and ptd["n", "b"].item() == 1
    view[1] = {"a": torch.tensor([7.0, 8.0]), "n": {"b": torch.tensor(9)}, "s": "yo"}
    assert ptd["a"].tolist() == [7.0, 8.0] and ptd["n", "b"].item() == 9 and ptd["s"] == "yo"
    view["n"]["b"] = torch.tensor([11, 12])
    view.fill_("a", 3.0)
    assert ptd["n", "b"].item() == 12 and ptd["a"].tolist() == [3.0, 3.0]
    view["s"] = "breakout"
    view["new"] = torch.ones(2, 3)  # a new key: the file's whole batch size
    assert ptd["s"] == "breakout" and ptd["new"].tolist() == [1.0, 1.0, 1.0]
    ptd.close()


def test_a_record_over_a_file_repeats_its_one_row(tmp_path: Path, backend: str) -> None:
    step = Step(
        reward=torch.tensor(1.0), inner=Inner(x=torch.zeros(3), batch_size=[]), batch_size=[]
    )
    where = tmp_path / f"one.{backend}"
    (step.to_h5 if backend == "h5" else step.to_zarr)(where)
    opened = (Step.from_h5 if backend == "h5" else Step.from_zarr)(where, mode="r+")
    rows = opened[None][[0, 0, 0]]
    assert type(rows) is Step and type(rows.inner) is Inner and rows.batch_size == (3,)
    assert rows.reward.tolist() == [1.0] * 3 and rows.inner.x.shape == (3, 3)
    rows.reward = torch.tensor([5.0, 6.0, 7.0])
    assert opened.reward.item() == 7.0 and rows.env == "pong"
    opened.close()


def test_views_of_a_two_dim_batch_write_their_elements(tmp_path: Path, backend: str) -> None:
    grid = TensorDict(
        {"r": torch.arange(12).reshape(3, 4), "n": {"y": torch.zeros(3, 4, 2)}}, [3, 4]
    )
    ptd = PersistentTensorDict.from_dict(grid, filename=tmp_path / f"g.{backend}", backend=backend)
    ptd[1, 1:3].set_("r", torch.tensor([-1, -2]))
    ptd[:, 0]["n"].fill_("y", 5.0)
    ptd[:, 1:3][2].zero_()
    assert ptd[1:, ::2].batch_size == (2, 2)
    assert ptd["r"].tolist() == [[0, 1, 2, 3], [4, -1, -2, 7], [8, 0, 0, 11]]
    assert ptd["n", "y"][:, 0].eq(5).all() and ptd["n", "y"][:, 1:].eq(0).all()
    ptd.close()


# --- writes reach the file ---------------------------------------------------------------

WRITES: dict[str, Callable[[PersistentTensorDictView], Any]] = {
    "set_": lambda v: v.set_("r", torch.tensor([-1, -2])),
    "setitem": lambda v: v.__setitem__("r", torch.tensor([-1, -2])),
    "set": lambda v: v.set("r", torch.tensor([-1, -2])),
    "set inplace": lambda v: v.set("r", torch.tensor([-1, -2]), inplace=True),
    "update": lambda v: v.update({"r": torch.tensor([-1, -2])}),
    "update inplace": lambda v: v.update({"r": torch.tensor([-1, -2])}, inplace=True),
    "update_": lambda v: v.update_({"r": torch.tensor([-1, -2])}),
    "rows": lambda v: v.__setitem__(slice(None), {"r": torch.tensor([-1, -2])}),
    "row by row": lambda v: [v.__setitem__(i, {"r": torch.tensor(-1 - i)}) for i in range(2)],
    "set_at_": lambda v: [v.set_at_("r", torch.tensor(-1 - i), i) for i in range(2)],
    "fill_": lambda v: (v.fill_("r", -1), v.set_at_("r", -2, 1)),
    "apply_": lambda v: v.apply_(lambda t: -t + 1 if t.dtype == torch.long else t),
    "+=": lambda v: v.__isub__(torch.tensor([3, 5])),
    "mul_": lambda v: v.mul_(0).sub_(torch.tensor([1, 2])),
    "copy_": lambda v: v.copy_(v.to_tensordict().set("r", torch.tensor([-1, -2]))),
    "clamp_": lambda v: (v.clamp_(-2, -2), v.set_at_("r", -1, 0)),
    "masked_fill_": lambda v: (
        v.masked_fill_(torch.tensor([True, True]), -1), v.set_at_("r", -2, 1)
    ),
    "zero_": lambda v: (v.zero_(), v.set_("r", torch.tensor([-1, -2]))),
}  # fmt: skip


@pytest.mark.parametrize("write", sorted(WRITES))
def test_every_in_place_write_reaches_the_rows_of_the_file(
    ptd: PersistentTensorDict, backend: str, write: str
) -> None:
    WRITES[write](ptd[2:4])
    held = reopened(ptd, backend)
    assert held["r"].tolist() == [0, 1, -1, -2, 4, 5, 6, 7, 8, 9]
    others = held.exclude("r")  # written where the write covers them, else untouched
    assert others["n", "x"][[0, 1, 4, 5]].eq(1).all() and others["f"][:2].eq(0).all()


def test_nested_groups_are_views_through_the_same_index(
    ptd: PersistentTensorDict, backend: str
) -> None:
    view = ptd[torch.tensor([1, 8])]
    view["n"]["x"] = torch.full((2, 2), 5.0)
    view["n", "x"] += 1  # read, added in memory, written back
    view.update({"n": {"x": torch.full((2, 2), 7.0)}}, keys_to_update=[("n", "x")])
    view.update({"r": torch.zeros(2), "n": {"x": torch.zeros(2, 2)}}, keys_to_update=["r"])
    view.update({"n": {"x": torch.zeros(2, 2)}}, keys_to_update=[("n", "y")])  # nothing
    view["n"].set_("x", view["n"]["x"] * 2)
    held = reopened(ptd, backend)
    assert held["n", "x"][:, 0].tolist() == [1, 14, 1, 1, 1, 1, 1, 1, 14, 1]
    assert held["r"].tolist() == [0, 0, 2, 3, 4, 5, 6, 7, 0, 9]


def test_in_place_reads_are_copies(ptd: PersistentTensorDict) -> None:
    view = ptd[2:4]
    view["r"].add_(100)  # a copy read from the file, as a PersistentTensorDict's reads
    assert ptd["r"][2:4].tolist() == [2, 3]


def test_a_new_key_is_the_files_whole_batch_zeros_outside_the_rows(
    ptd: PersistentTensorDict, backend: str
) -> None:
    view = ptd[2:4]
    view.set("new", torch.ones(2, 3))
    view["grp"] = {"a": torch.full((2,), 4.0)}
    view.set(("n", "y"), torch.ones(2))
    assert sorted(view.keys()) == ["f", "grp", "n", "new", "r"]
    held = reopened(ptd, backend)
    assert held["new"].shape == (10, 3) and held["new"].sum() == 6 and held["new"][2:4].eq(1).all()
    assert held["grp", "a"].tolist() == [0, 0, 4, 4, 0, 0, 0, 0, 0, 0]
    assert held["n", "y"].tolist() == [0, 0, 1, 1, 0, 0, 0, 0, 0, 0]


def test_deletes_and_renames_act_on_the_files_entry(ptd: PersistentTensorDict) -> None:
    view = ptd[2:4]
    view.rename_key_("f", "g")
    assert torch.equal(view.pop("g"), torch.zeros(2, 3))
    del view["r"]
    assert list(ptd.keys()) == ["n"] and list(view.keys()) == ["n"]


# --- refusals ----------------------------------------------------------------------------


def test_writes_that_do_not_fit_are_refused_before_anything_is_written(
    ptd: PersistentTensorDict,
) -> None:
    view = ptd[2:4]
    with pytest.raises(BatchMismatchError, match="'r'"):
        view.set_("r", torch.zeros(3, dtype=torch.long))
    with pytest.raises(InPlaceWriteError, match=r"'f'.*rows have shape \[2, 3\]"):
        view["f"] = torch.ones(2, 4)
    with pytest.raises(InPlaceWriteError, match="holds a group"):
        view["n"] = torch.zeros(2)
    with pytest.raises(InPlaceWriteError, match="holds an array"):
        view["r"] = {"a": torch.zeros(2)}
    with pytest.raises(KeyNotFoundError, match="missing"):
        view.set_("missing", torch.zeros(2))
    with pytest.raises(InPlaceWriteError, match="Python value 'label'"):
        view.set("label", "pong")
    with pytest.raises(BatchSizeError, match=r"batch size \[\]"):
        view.batch_size = []
    view.batch_size = [2]  # its own: nothing changes
    with pytest.raises(DimError):
        view[0, 0]
    with pytest.raises(IndexError):
        view[5]
    with pytest.raises(UnsupportedError, match="select in place"):
        view.select("r", inplace=True)
    with pytest.raises(UnsupportedError, match="memmap"):
        view.memmap_()
    assert (ptd.to_tensordict() == data()).all()


@pytest.mark.parametrize("method", ["update", "update_", "set_"])
def test_leading_dims_of_size_one_are_dropped_as_the_store_drops_them(
    ptd: PersistentTensorDict, backend: str, method: str
) -> None:
    """A tensor with extra leading dims of size 1 fits the view's rows (h5py's write,
    and torch's ``rows[...] = value``, drop them): the peer's ``view.update({"r": t})``
    of a ``[1]`` tensor into the rows ``[]`` of a row (a fuzzer program); a leading
    dim of another size, or dims of size 1 inside the batch dims, are still refused."""

    def write(view: Any, key: str, value: torch.Tensor) -> None:
        if method == "set_":
            view.set_(key, value)
        else:
            getattr(view, method)({key: value})

    write(ptd[3], "r", torch.tensor([7]))
    write(ptd[3], "f", torch.full((1, 1, 3), 2.0))
    write(ptd[4:5], "f", torch.full((1, 1, 3), 5.0))
    with pytest.raises(BatchMismatchError, match="'f'"):
        write(ptd[4:6], "f", torch.ones(1, 2, 3))
    with pytest.raises(InPlaceWriteError, match="rows have shape"):
        write(ptd[3], "f", torch.ones(2, 1, 3))
    with pytest.raises(InPlaceWriteError, match="rows have shape"):
        write(ptd[4:6], "f", torch.ones(2, 1, 1, 3))
    back = reopened(ptd, backend)
    assert back["r"][3] == 7 and bool((back["f"][3] == 2).all())
    assert bool((back["f"][4] == 5).all()) and bool((back["f"][5:] == 0).all())


@pytest.mark.peer
def test_the_peers_view_drops_leading_dims_of_size_one(tmp_path: Path) -> None:
    peer = pytest.importorskip("tensordict")
    pytest.importorskip("h5py")
    source = peer.TensorDict({"d": torch.zeros((), dtype=torch.long)}, [])
    ptd = peer.PersistentTensorDict.from_dict(source, filename=str(tmp_path / "p.h5"))
    ptd[...].update({"d": torch.tensor([4])})
    assert ptd["d"].shape == () and ptd["d"] == 4
    mine = PersistentTensorDict.from_dict(
        TensorDict({"d": torch.zeros((), dtype=torch.long)}, []), filename=tmp_path / "m.h5"
    )
    mine[...].update({"d": torch.tensor([4])})
    assert mine["d"].shape == () and mine["d"] == 4
    ptd.close()
    mine.close()


def test_a_locked_file_takes_writes_into_existing_rows_only(ptd: PersistentTensorDict) -> None:
    ptd.lock_()
    view = ptd[2:4]
    assert view.is_locked and view["n"].is_locked
    view["r"] = torch.tensor([7, 7])
    with pytest.raises(LockedError, match="'new'"):
        view.set("new", torch.zeros(2))
    with pytest.raises(LockedError):
        del view["r"]
    view.unlock_()  # the file's lock
    assert not ptd.is_locked and ptd["r"][2:4].tolist() == [7, 7]
    with view.lock_():
        assert ptd.is_locked
    assert not ptd.is_locked


def test_a_read_only_file_refuses_writes_through_a_view(
    path: Path, backend: str, ptd: PersistentTensorDict
) -> None:
    ptd.close()
    opened = PersistentTensorDict(filename=path, backend=backend, batch_size=[10])
    view = opened[2:4]
    for write in (lambda: view.zero_(), lambda: view.set_("r", torch.zeros(2))):
        with pytest.raises(FilePermissionError):
            write()
    assert view["r"].tolist() == [2, 3]
    opened.close()


def test_a_closed_file_refuses_reads_and_writes(ptd: PersistentTensorDict) -> None:
    view = ptd[2:4]
    ptd.close()
    assert "closed file" in repr(view)
    for call in (lambda: view["r"], lambda: view.zero_(), lambda: view.to_tensordict()):
        with pytest.raises(ClosedFileError, match="closed"):
            call()


# --- what a view answers -----------------------------------------------------------------


def test_names_device_and_repr_are_the_files_through_the_index(ptd: PersistentTensorDict) -> None:
    ptd.names = ["rows"]
    view = ptd[2:4]
    assert view.names == ["rows"] and view["n"].names == ["rows"] and ptd[1].names == []
    with pytest.raises(DimNameError, match="rename the PersistentTensorDict"):
        view.names = ["other"]
    assert view.device is None and len(view) == 2
    assert repr(view).startswith("PersistentTensorDictView(batch_size=[2]")
    assert "r: i64[]" in repr(view) and "f: f32[3]" in repr(view)


@pytest.mark.parametrize(
    ("first", "second", "names"),
    [
        ([], (None,), [None, "rows"]),
        ([1, 2], (None,), [None, "rows"]),
        ([1, 2], (slice(None), None), ["rows", None]),
        (slice(1, 3), (None, [0, 1]), [None, "rows"]),
    ],
)
def test_a_view_of_a_view_names_its_groups_dims_through_each_index(
    ptd: PersistentTensorDict, first: Any, second: tuple[Any, ...], names: list[Any]
) -> None:
    # Each view's index in turn names the dims, for its groups at every depth too (the
    # composed index of a list and a None alone named none of theirs), as the peer's.
    ptd["m", "k"] = TensorDict({"z": torch.zeros(10)}, [10])
    ptd.names = ["rows"]
    view = ptd[first][second]
    assert view.names == names
    assert view["n"].names == names and view["m"].names == names
    assert view["m", "k"].names == names and view["m"]["k"].names == names


def test_copies_and_results_are_in_memory(ptd: PersistentTensorDict) -> None:
    view = ptd[2:5]
    for result in (
        view.clone(), view.contiguous(), view + 1, view.apply(lambda t: t * 2),
        view.select("r"), view.exclude("r"), *view.unbind(0), *view.split(2), *view.tensor_split(2),
    ):  # fmt: skip
        assert type(result) is TensorDict
    assert type(view.clone(False)) is PersistentTensorDictView
    assert view.to("cpu").device == torch.device("cpu") and view.to("cpu")["r"].tolist() == [
        2,
        3,
        4,
    ]
    assert type(view.to(torch.float64)) is TensorDict
    assert not view.is_contiguous() and not view.is_memmap()


def test_a_view_pickles_and_saves(ptd: PersistentTensorDict, tmp_path: Path) -> None:
    pickled = pickle.dumps(ptd[[1, 4]])
    ptd.close()
    again = pickle.loads(pickled)  # reopens the file
    assert type(again) is PersistentTensorDictView and again["r"].tolist() == [1, 4]
    saved = again.memmap(tmp_path / "rows")
    assert type(saved) is TensorDict and saved.is_memmap() and saved["r"].tolist() == [1, 4]
    again.source.close()


def test_python_values_through_a_view(tmp_path: Path, backend: str) -> None:
    rows = data()
    rows.set_non_tensor("env", "pong")
    ptd = PersistentTensorDict.from_dict(rows, filename=tmp_path / f"v.{backend}", backend=backend)
    view = ptd[2:4]
    assert view["env"] == "pong"
    view[0] = {"env": "breakout", "r": torch.tensor(-5)}
    ptd[5:7] = {"env": "pacman"}
    assert (
        ptd["env"]
        == ["pong", "pong", "breakout", "pong", "pong", "pacman", "pacman"] + ["pong"] * 3
    )
    assert ptd["r"][2] == -5 and ptd[1:3]["env"] == ["pong", "breakout"]
    ptd.close()


# --- records over a file -----------------------------------------------------------------


class Inner(TensorClass):
    x: torch.Tensor


class Step(TensorClass):
    reward: torch.Tensor
    inner: Inner
    env: str = "pong"


def test_indexed_records_over_a_file_write_through(tmp_path: Path, backend: str) -> None:
    inner = Inner(x=torch.zeros(5, 3), batch_size=[5])
    step = Step(reward=torch.arange(5.0), inner=inner, batch_size=[5])
    where = tmp_path / f"s.{backend}"
    (step.to_h5 if backend == "h5" else step.to_zarr)(where)
    opened = (Step.from_h5 if backend == "h5" else Step.from_zarr)(where, mode="r+")
    rows = opened[1:3]
    assert type(rows) is Step and type(rows.inner) is Inner and rows.env == "pong"
    rows.reward = torch.tensor([10.0, 11.0])
    rows.reward += 1
    rows.inner.x = torch.full((2, 3), 5.0)
    rows[1] = Step(reward=torch.tensor(-1.0), inner=Inner(x=torch.ones(3)), batch_size=[])
    rows[torch.tensor([0])].reward = torch.tensor([11.0])  # a record's row of a view
    assert type(rows[torch.tensor([0])]) is Step and rows[[1]].reward.tolist() == [-1.0]
    assert opened.reward.tolist() == [0.0, 11.0, -1.0, 3.0, 4.0]
    assert opened.inner.x[:4, 0].tolist() == [0.0, 5.0, 1.0, 0.0]
    opened[torch.tensor([0, 4])].add_(100)
    opened.mul_(2)  # in-place math on a record over the file reaches it too
    opened[3:].zero_()
    assert opened.reward.tolist() == [200.0, 22.0, -2.0, 0.0, 0.0]
    assert type(opened[1:3].clone()) is Step
    opened.close()


class Bounded(TensorClass):
    p: Annotated[torch.Tensor, Spec("", torch.float32, ge=0, le=1)]
    free: torch.Tensor


@pytest.mark.parametrize("rows", [slice(None), slice(1, 3)])
def test_fill_and_apply_of_records_over_a_file_write_through_and_check_their_fields(
    tmp_path: Path, backend: str, rows: slice
) -> None:
    """``fill_`` and ``apply_`` on a record over a file (or a view of its rows) work on
    the rows in memory, check the bounded fields there, and write back."""
    where = tmp_path / f"b.{backend}"
    record = Bounded(p=torch.full((4,), 0.5), free=torch.zeros(4), batch_size=[4])
    (record.to_h5 if backend == "h5" else record.to_zarr)(where)
    opened = (Bounded.from_h5 if backend == "h5" else Bounded.from_zarr)(where, mode="r+")
    part = opened[rows]
    with pytest.raises(FieldSpecError, match=r"Bounded.fill_\('p', \.\.\.\): .*breaks le=1"):
        part.fill_("p", 2.0)
    with pytest.raises(FieldSpecError, match=r"Bounded.apply_\(\.\.\.\): .*5.5.*breaks le=1"):
        part.apply_(lambda t: t + 5)
    assert opened.p.tolist() == [0.5] * 4 and opened.free.tolist() == [0.0] * 4
    part.fill_("p", 0.25)
    part.apply_(lambda t: t + 0.5)
    written = [0.75] * 4 if rows == slice(None) else [0.5, 0.75, 0.75, 0.5]
    assert opened.p.tolist() == written
    opened.close()
    again = (Bounded.from_h5 if backend == "h5" else Bounded.from_zarr)(where)
    assert again.p.tolist() == written and again.free[1].item() == 0.5
    again.close()


def test_masked_select_of_a_named_view_reads_the_rows_with_an_unnamed_dim(
    ptd: PersistentTensorDict,
) -> None:
    # the view's names are the file's and cannot change: the rows are read, then selected
    ptd.names = ["rows"]
    view = ptd[2:6]
    assert isinstance(view, PersistentTensorDictView) and view.names == ["rows"]
    picked = view.masked_select(torch.tensor([True, False, True, True]))
    assert type(picked) is TensorDict and picked.names == [None]
    assert picked["r"].tolist() == [2, 4, 5] and picked["n", "x"].shape == (3, 2)
    assert ptd.names == ["rows"] and view.names == ["rows"]  # the file keeps its names
    whole = ptd.masked_select(torch.arange(10) % 2 == 0)
    assert type(whole) is TensorDict and whole.names == [None] and whole.batch_size == (5,)
    with pytest.raises(UnsupportedError, match="inplace=False"):
        view.masked_select(torch.ones(4, dtype=torch.bool), inplace=True)


def test_a_view_of_a_view_keeps_the_names_each_index_keeps(ptd: PersistentTensorDict) -> None:
    mask = torch.tensor([True, False, True, True])
    ptd.names = ["rows"]
    view = ptd[2:6][mask]
    assert view.names == ["rows"] and view["r"].tolist() == [2, 4, 5]


def test_a_view_of_a_row_then_a_mask_keeps_the_dims_name(tmp_path: Path, backend: str) -> None:
    plain = TensorDict({"a": torch.arange(16.0).reshape(4, 4)}, [4, 4], names=["i", "j"])
    ptd = PersistentTensorDict.from_dict(plain, filename=tmp_path / f"n.{backend}", backend=backend)
    mask = torch.tensor([True, False, True, True])
    view = ptd[-1][mask]
    assert isinstance(view, PersistentTensorDictView) and view.names == ["j"]
    assert view["a"].tolist() == plain[-1][mask]["a"].tolist()
    assert ptd[3][torch.tensor([0, 2])].names == ["j"]
    assert ptd[1:][-1].names == ["j"] and ptd[None][0, 2:].names == ["i", "j"]
    ptd.names = ["x", "y"]  # the source's rename shows through its views
    assert view.names == ["y"] and view[None].names == [None, "y"]
    again = pickle.loads(pickle.dumps(view))  # the file's names travel with it, as the peer's
    assert again.names == ["y"] and again.source.names == ["x", "y"]
    again.source.close()
    ptd.close()


def test_a_new_batch_size_keeps_the_names_of_the_dims_it_keeps(
    tmp_path: Path, backend: str
) -> None:
    plain = TensorDict({}, [1, 1], names=[None, "j"])
    ptd = PersistentTensorDict.from_dict(plain, filename=tmp_path / f"b.{backend}", backend=backend)
    ptd.batch_size = [3]  # as a TensorDict's: the leading dims' names stay, no more names
    assert ptd.names == [None] and ptd.expand_as(torch.zeros(1, 1, 3)).names == [None] * 3
    ptd.names = ["k"]
    ptd.batch_size = [3, 2]
    assert ptd.names == ["k", None]
    ptd.close()


def test_set_and_update_of_an_existing_entry_check_the_batch_size(
    ptd: PersistentTensorDict,
) -> None:
    # as a TensorDict's set / update: the leading dims are the rows' (set_ broadcasts)
    view = ptd[2:4]
    for write in (
        lambda: view.update({("n", "x"): torch.tensor(1.0)}),  # fewer dims than the batch
        lambda: view.set(("n", "x"), torch.tensor(1.0)),
        lambda: view.__setitem__("r", torch.tensor(1)),
        lambda: view.update({"f": torch.ones(3)}),
    ):
        with pytest.raises(BatchMismatchError, match="does not start with the batch size"):
            write()
    assert (ptd["n", "x"] == 1).all() and (ptd["f"] == 0).all()
    view.update_({("n", "x"): torch.tensor(5.0)})  # in place: broadcast into the rows
    assert ptd["n", "x"][2:4].tolist() == [[5.0, 5.0], [5.0, 5.0]]
    view.update({("n", "x"): torch.full((2, 2), 7.0)})
    assert ptd["n", "x"][2:4].tolist() == [[7.0, 7.0], [7.0, 7.0]]


def test_a_new_entry_through_a_view_of_a_file_without_rows_takes_the_files_batch(
    tmp_path: Path, backend: str
) -> None:
    # left46a (fuzz program 58,004): a file of batch [2, 0] holds no rows, so a new
    # tensor or collection written through a view of it (its own batch size) is stored
    # at the file's batch size; it raised BatchMismatchError against the file's
    ptd = PersistentTensorDict.from_dict(
        TensorDict({}, [2, 0]), filename=tmp_path / f"e.{backend}", backend=backend
    )
    view = ptd[:, None][1:]
    assert view.batch_size == torch.Size([1, 1, 0])
    view.update({("zz", "a"): TensorDict({}, [1, 1, 0])}, inplace=False)
    view.set("t", torch.zeros(1, 1, 0, 3))
    assert ptd["zz"].batch_size == torch.Size([2, 0])
    assert ptd["zz", "a"].batch_size == torch.Size([2, 0])
    assert ptd["t"].shape == torch.Size([2, 0, 3]) and view["t"].shape == (1, 1, 0, 3)
    view.set_non_tensor("v", "a")  # a Python value: the file's own entry, as before
    assert ptd["v"] == "a"
    with pytest.raises(BatchMismatchError, match="does not start with the batch size"):
        view.set("u", torch.zeros(2, 0, 3))  # the view's batch size is checked
    ptd.close()


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ((torch.tensor([2, 0]),), (slice(None), [])),  # fuzz 3,000,502 of index: (2, 2) was [2]
        ((torch.tensor([], dtype=torch.long),), (slice(None), [])),
        ((torch.tensor([2, 0]),), (slice(None), torch.tensor([3, 1]))),
        ((slice(1, 3),), (0, torch.tensor([1, 1]))),
        ((slice(None),), (slice(1, None), torch.tensor([0, 3]))),
    ],
)
def test_rows_then_a_tensor_along_a_later_dim_index_one_after_the_other(
    tmp_path: Path, backend: str, first: tuple[Any, ...], second: tuple[Any, ...]
) -> None:
    # prune18: a view picking rows of dim 0, then indexed with a tensor along a later
    # dim, composed both into one index: the two tensors broadcast together
    # (``file[rows][:, []]`` of batch [3, 4] gave [2] where the peer and torch give [2, 0])
    plain = TensorDict({"d": torch.arange(24).reshape(3, 4, 2)}, [3, 4])
    ptd = PersistentTensorDict.from_dict(plain, filename=tmp_path / f"t.{backend}", backend=backend)
    view = ptd[first][second]
    expected = plain[first][second]
    assert view.batch_size == expected.batch_size
    assert view["d"].tolist() == expected["d"].tolist()
    ptd.close()


def test_a_lazy_stack_of_two_views_of_one_file_changes_its_keys_once(tmp_path: Path) -> None:
    """``stack[[1, 1]][rows]`` holds two views of one file: ``del`` and ``rename_key_``
    change the file once (the second view used to find the key gone: program 1,101,320),
    (``del`` as the peer's, which leaves the other file alone)."""
    files = [
        PersistentTensorDict.from_dict(
            TensorDict(c=torch.ones(4), d=torch.ones(4, 3), batch_size=[4]), tmp_path / f"{i}.h5"
        )
        for i in range(2)
    ]
    x = tclass.lazy_stack(files, 0)[[1, 1]][torch.tensor([1, 0]), -1]
    assert all(type(m) is PersistentTensorDictView for m in x.tensordicts)
    del x["c"]
    assert list(x.keys()) == ["d"]
    assert sorted(files[1].keys()) == ["d"] and sorted(files[0].keys()) == ["c", "d"]
    x.rename_key_("d", "e")
    assert list(x.keys()) == ["e"] and list(files[1].keys()) == ["e"]


@pytest.mark.parametrize("index", [slice(0, None, 1), 0, ...])
def test_a_source_without_entries_is_checked_as_into_a_tensordict(
    path: Path, backend: str, index: Any
) -> None:
    """A collection without entries written at rows of a file or of a view of one writes
    nothing, but its batch size must broadcast to the rows' as a tensor's shape must, as
    into a TensorDict or a lazy stack (the peer's file checks it, its view lets it pass):
    the error says that it is checked all the same (program 354 of ``--families index``)."""
    empty = PersistentTensorDict.from_dict(TensorDict({}, [1]), filename=path, backend=backend)
    try:
        for target in (empty, empty[...]):
            source = TensorDict({}, [1, 0])  # torch refuses a tensor of this shape there
            with pytest.raises(BatchSizeError, match="without entries writes nothing") as caught:
                target[index] = source
            assert isinstance(caught.value, RuntimeError)
            with pytest.raises(RuntimeError):
                torch.zeros(1)[index] = torch.zeros(1, 0)
            target[index] = TensorDict({}, [1])[index]  # one that broadcasts: nothing written
            assert list(empty.keys()) == []
    finally:
        empty.close()


def test_rows_written_drop_the_sources_leading_dims_of_size_one(path: Path, backend: str) -> None:
    """A collection written at rows of a file or of a view loses its leading batch dims
    of size 1 past the rows' dims, as a tensor written by torch (``t[0:1] = v[None]``)
    and as into a TensorDict's rows; ``set_`` (torch's ``copy_``) still refuses them."""
    ptd = PersistentTensorDict.from_dict(
        TensorDict({"a": torch.zeros(2), "n": {"x": torch.zeros(2, 3)}}, [2]),
        filename=path,
        backend=backend,
    )
    try:
        expected = TensorDict({"a": torch.zeros(2), "n": {"x": torch.zeros(2, 3)}}, [2])
        ptd[0:1] = TensorDict({"a": torch.ones(1, 1), "n": {"x": torch.ones(1, 1, 3)}}, [1, 1])
        expected[0:1] = torch.ones(1, 1)
        ptd[1:2][...] = TensorDict({"a": torch.full((1, 1), 2.0)}, [1, 1])
        expected["a"][1:2] = torch.full((1, 1), 2.0)
        ptd[...] = TensorDict({"n": {"x": torch.full((1, 1, 2, 3), 5.0)}}, [1, 1, 2])
        expected["n", "x"][...] = 5.0
        assert (ptd.to_tensordict() == expected).all()
        with pytest.raises(InPlaceWriteError, match="does not broadcast"):
            ptd.set_("a", torch.ones(1, 2))
    finally:
        ptd.close()
