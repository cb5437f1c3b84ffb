"""A write of several entries into the rows of a ``PersistentTensorDict`` (``ptd[idx] =
{...}``, a collection, ``set_at_`` of a group, the rows of a view) is all or nothing, on
each backend: every entry is checked against its array's shape and dtype (the store's
metadata, no data read) before the first is written, so that an entry refused (a shape
that does not broadcast, a number the dtype cannot hold, a string, a collection where
the file holds an array, a nested entry) leaves the whole file as it was, where the
peer's file writes the entries before it (README: indexed writes are all or nothing).
Every check reads the file back."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from tclass import PersistentTensorDict, TensorDict, tensorclass
from tclass.errors import InPlaceWriteError, MetaTensorError, StoreShapeError, TclassError

LIBRARIES = {"h5": "h5py", "zarr": "zarr"}


@pytest.fixture(params=sorted(LIBRARIES))
def backend(request: pytest.FixtureRequest) -> str:
    pytest.importorskip(LIBRARIES[request.param])
    return str(request.param)


def data() -> TensorDict:
    return TensorDict(
        {
            "a": torch.zeros(4, 3),
            "b": torch.zeros(4, 2, dtype=torch.int64),
            "c": torch.zeros(4, dtype=torch.int8),
            "n": {"x": torch.zeros(4), "y": torch.zeros(4, 2)},
            "s": "text",
        },
        [4],
    )


@pytest.fixture
def ptd(tmp_path: Path, backend: str) -> Iterator[PersistentTensorDict]:
    written = PersistentTensorDict.from_dict(data(), tmp_path / f"f.{backend}", backend=backend)
    yield written
    written.close()


def _unchanged(ptd: PersistentTensorDict) -> None:
    expected = data()
    for key in ("a", "b", "c", ("n", "x"), ("n", "y")):
        assert torch.equal(ptd.get(key), expected.get(key)), key
    assert ptd["s"] == "text"


_ROWS = {
    "int": (1, ()),
    "slice": (slice(0, 2), (2,)),
    "tensor": (torch.tensor([0, 2]), (2,)),
    "list": ([0, 2], (2,)),
    "mask": (torch.tensor([True, False, True, False]), (2,)),
}


def _bad_parts(rows: tuple[int, ...]) -> dict[str, tuple[Any, str]]:
    """A value refused by the last entry written (the first ones fit), and the words
    of the error."""
    a = torch.ones(*rows, 3)
    return {
        "shape": ({"a": a, "b": torch.ones(*rows, 5, dtype=torch.int64)}, "does not broadcast"),
        "nested shape": ({"a": a, "n": {"x": torch.ones(rows), "y": torch.ones(5)}}, "/n/y"),
        "number": ({"a": a, "b": torch.ones(*rows, 2), "c": 300}, "int8"),
        "huge number": ({"a": a, "b": 1e30}, "int64"),
        "string": ({"a": a, "b": "hello"}, "torch cannot make one"),
        "collection": ({"a": a, "b": TensorDict({"q": torch.ones(2)}, [])}, "TensorDict"),
        "as a collection": (
            TensorDict({"a": a, "b": torch.ones(*rows, 5, dtype=torch.int64)}, rows),
            "does not broadcast",
        ),
    }


@pytest.mark.parametrize(
    ("rows", "bad"),
    [(rows, "shape") for rows in sorted(_ROWS)]
    + [
        ("int", "nested shape"),
        ("mask", "nested shape"),
        ("slice", "number"),
        ("list", "huge number"),
        ("int", "string"),
        ("tensor", "collection"),
    ],
)
def test_rows_of_a_dict_an_entry_refuses_write_nothing(
    ptd: PersistentTensorDict, rows: str, bad: str
) -> None:
    index, shape = _ROWS[rows]
    value, words = _bad_parts(shape)[bad]
    with pytest.raises(InPlaceWriteError, match=words) as info:
        ptd[index] = value
    assert isinstance(info.value, RuntimeError) and isinstance(info.value, TclassError)
    assert "nothing was written" in str(info.value)
    if bad == "shape":  # also the peer's file's builtin (h5py's "Can't broadcast")
        assert isinstance(info.value, StoreShapeError) and isinstance(info.value, TypeError)
    _unchanged(ptd)


@pytest.mark.parametrize("rows", ["int", "mask"])
def test_rows_of_a_collection_an_entry_refuses_write_nothing(
    ptd: PersistentTensorDict, rows: str
) -> None:
    index, shape = _ROWS[rows]
    value, words = _bad_parts(shape)["as a collection"]
    with pytest.raises(InPlaceWriteError, match=words):
        ptd[index] = value
    _unchanged(ptd)


def test_the_rows_of_a_view_and_set_at_of_a_group_write_nothing_when_refused(
    ptd: PersistentTensorDict,
) -> None:
    with pytest.raises(InPlaceWriteError, match="does not broadcast"):
        ptd[1:3][0] = {"a": torch.ones(3), "b": torch.ones(5)}
    with pytest.raises(InPlaceWriteError, match="/n/y"):
        ptd.set_at_("n", {"x": torch.ones(()), "y": torch.ones(5)}, 1)
    with pytest.raises(InPlaceWriteError, match="does not broadcast"):
        ptd[1:3][0] = TensorDict({"n": {"x": torch.ones(()), "y": torch.ones(3)}}, [])
    _unchanged(ptd)


def test_a_python_value_refused_in_its_rows_writes_nothing(ptd: PersistentTensorDict) -> None:
    # the values' rows are worked out (and checked) in memory before any array is written
    with pytest.raises(TclassError):
        ptd[1] = {"a": torch.ones(3), "s": object()}
    _unchanged(ptd)


def test_rows_that_fit_are_all_written(ptd: PersistentTensorDict) -> None:
    ptd[torch.tensor([3, 1])] = {
        "a": torch.ones(2, 3),
        "b": 7,
        "c": torch.tensor(-5, dtype=torch.int8),
        "n": {"x": 2.0, "y": torch.ones(1, 2, 2)},  # (a leading dim of size 1, as torch)
        "s": "word",
    }
    assert ptd["a"][:, 0].tolist() == [0.0, 1.0, 0.0, 1.0]
    assert ptd["b"][:, 1].tolist() == [0, 7, 0, 7]
    assert ptd["c"].tolist() == [0, -5, 0, -5]
    assert ptd["n", "x"].tolist() == [0.0, 2.0, 0.0, 2.0]
    assert ptd["n", "y"].sum().item() == 4.0
    assert ptd[1]["s"] == "word" and ptd[0]["s"] == "text"
    ptd[0] = {"b": torch.ones(2, dtype=torch.bfloat16), "c": 1.5}  # converted, as torch
    assert ptd["b"][0].tolist() == [1, 1] and ptd["c"][0].item() == 1


def test_a_record_written_at_rows_is_checked_whole(tmp_path: Path, backend: str) -> None:
    @tensorclass
    class Row:
        a: torch.Tensor
        b: torch.Tensor

    ptd = PersistentTensorDict.from_dict(data(), tmp_path / f"r.{backend}", backend=backend)
    try:
        row = Row(a=torch.ones(3), b=torch.ones(5, dtype=torch.int64), batch_size=[])
        with pytest.raises(InPlaceWriteError, match="does not broadcast"):
            ptd[2] = row
        _unchanged(ptd)
    finally:
        ptd.close()


def test_update_at_checks_every_entry_first(ptd: PersistentTensorDict) -> None:
    with pytest.raises(InPlaceWriteError, match="does not broadcast"):
        ptd.update_at_({"a": torch.ones(3), "b": torch.ones(5)}, 1)
    with pytest.raises(InPlaceWriteError, match="int8"):
        ptd.update_at_({"a": torch.ones(2, 3), ("n", "x"): torch.ones(2), "c": 300}, slice(0, 2))
    with pytest.raises(KeyError, match="zz"):  # a missing key, after one that fits
        ptd.update_at_({"a": torch.ones(3), "zz": torch.ones(2)}, 1)
    _unchanged(ptd)
    ptd.update_at_({"a": torch.ones(3), ("n", "y"): torch.full((2,), 2.0)}, 3)
    assert ptd["a"][3].tolist() == [1.0] * 3 and ptd["n", "y"][3].tolist() == [2.0, 2.0]


def test_update_in_place_checks_every_entry_first_as_the_peer(ptd: PersistentTensorDict) -> None:
    # the peer's file refuses before writing any entry (a RuntimeError); tclass wrote "a"
    with pytest.raises(InPlaceWriteError, match="does not broadcast") as info:
        ptd.update_({"a": torch.ones(4, 3), "b": torch.ones(5)})
    assert isinstance(info.value, RuntimeError)
    with pytest.raises(InPlaceWriteError, match="holds a group"):
        ptd.update_({"a": torch.ones(4, 3), "n": torch.ones(4)})
    with pytest.raises(InPlaceWriteError, match="/n/y"):
        ptd.update_({"a": torch.ones(4, 3), "n": {"x": torch.ones(4), "y": torch.ones(3)}})
    _unchanged(ptd)
    ptd.update_({"a": torch.ones(4, 3), "n": {"y": torch.ones(2)}})  # broadcast, as set_
    assert ptd["a"].sum().item() == 12.0 and ptd["n", "y"].sum().item() == 8.0


def test_a_key_the_file_lacks_is_made_as_the_peers_file_makes_it(
    ptd: PersistentTensorDict,
) -> None:
    # the peer's file makes it (zeros outside the rows); tclass dropped it silently
    ptd[1] = {"a": torch.ones(3), "zz": torch.ones(2)}
    ptd[0:2] = {"n": {"w": torch.full((2,), 3.0)}}
    ptd[2:4][0] = {"q": torch.ones(2)}
    assert ptd["zz"].tolist() == [[0.0, 0.0], [1.0, 1.0], [0.0, 0.0], [0.0, 0.0]]
    assert ptd["n", "w"].tolist() == [3.0, 3.0, 0.0, 0.0]
    assert ptd["q"][2].tolist() == [1.0, 1.0] and ptd["a"][1].sum().item() == 3.0


def test_a_key_the_file_lacks_refused_writes_nothing(ptd: PersistentTensorDict) -> None:
    with pytest.raises(TclassError, match="batch"):  # its rows' batch size is [2]
        ptd[0:2] = {"a": torch.ones(2, 3), "zz": torch.ones(3)}
    with pytest.raises(InPlaceWriteError, match="other rows would hold none"):
        ptd[1] = {"a": torch.ones(3), "t": "text"}
    ptd.lock_()
    with pytest.raises(RuntimeError, match="locked"):
        ptd[1] = {"a": torch.ones(3), "zz": torch.ones(2)}
    ptd.unlock_()
    _unchanged(ptd)
    assert sorted(ptd.keys()) == ["a", "b", "c", "n", "s"]


def test_updates_of_a_views_rows_write_nothing_when_refused(ptd: PersistentTensorDict) -> None:
    # a view's update wrote "a" through set before refusing "b" (the peer's view too)
    row = ptd[1]
    with pytest.raises(InPlaceWriteError, match="'b'"):
        row.update({"a": torch.ones(3), "b": torch.ones(5)})
    with pytest.raises(InPlaceWriteError, match="'b'"):
        row.update_({"a": torch.ones(3), "b": torch.ones(5)})
    with pytest.raises(InPlaceWriteError, match="'y'"):
        ptd[0:2].update({"a": torch.ones(2, 3), "n": {"x": torch.ones(2), "y": torch.ones(2, 5)}})
    _unchanged(ptd)
    row.update({"a": torch.ones(3), "n": {"x": torch.tensor(2.0)}})
    assert ptd["a"][1].tolist() == [1.0] * 3 and ptd["n", "x"].tolist() == [0.0, 2.0, 0.0, 0.0]


def test_update_at_with_an_ellipsis_checks_nested_entries_first(ptd: PersistentTensorDict) -> None:
    with pytest.raises(StoreShapeError, match="/n/y"):
        ptd.update_at_({"a": torch.ones(3), ("n", "y"): torch.ones(5)}, (1, ...))
    _unchanged(ptd)
    ptd.update_at_({"a": torch.ones(3), ("n", "y"): torch.ones(2)}, (1, ...))
    assert ptd["a"][1].sum().item() == 3.0 and ptd["n", "y"][1].tolist() == [1.0, 1.0]


def test_a_python_value_written_at_rows_is_checked_with_the_others(
    ptd: PersistentTensorDict,
) -> None:
    with pytest.raises(TclassError, match="/s"):
        ptd.update_at_({"a": torch.ones(3), "s": object()}, 1)
    _unchanged(ptd)
    ptd.update_at_({"a": torch.ones(3), "s": "word"}, 1)
    assert ptd[1]["s"] == "word" and ptd[0]["s"] == "text" and ptd["a"][1].sum().item() == 3.0


def test_update_at_of_a_views_rows_checks_every_entry_first(ptd: PersistentTensorDict) -> None:
    # each set_at_ read the rows, wrote them in memory and back: "a" written, then "b"
    # refused (the peer's view too)
    view = ptd[1:3]
    with pytest.raises(InPlaceWriteError, match="'b'"):
        view.update_at_({"a": torch.ones(3), "b": torch.ones(5)}, 0)
    with pytest.raises(InPlaceWriteError, match="'y'"):
        view.update_at_({"a": torch.ones(3), ("n", "y"): torch.ones(5)}, 1)
    _unchanged(ptd)
    view.update_at_({"a": torch.ones(3), ("n", "x"): torch.tensor(2.0)}, 1)
    assert ptd["a"][:, 0].tolist() == [0.0, 0.0, 1.0, 0.0]
    assert ptd["n", "x"].tolist() == [0.0, 0.0, 2.0, 0.0]


def test_a_refused_view_write_makes_no_group(ptd: PersistentTensorDict) -> None:
    # the check made the missing group "m" (empty) before "b" was refused
    view = ptd[1:3]
    with pytest.raises(InPlaceWriteError, match="'b'"):
        view.update({("m", "x"): torch.ones(2), "b": torch.ones(2, 5)})
    with pytest.raises(TclassError, match="batch"):
        view.set(("m", "k", "x"), torch.ones(5))
    with pytest.raises(KeyError, match="'m'"):
        view.set_(("m", "x"), torch.ones(2))
    with pytest.raises(KeyError, match="'m'"):
        view.fill_(("m", "x"), 1.0)
    _unchanged(ptd)
    assert sorted(ptd.keys()) == ["a", "b", "c", "n", "s"]
    view.update({("m", "k", "x"): torch.ones(2), "a": torch.ones(2, 3)})
    assert ptd["m", "k", "x"].tolist() == [0.0, 1.0, 1.0, 0.0]
    assert ptd["a"].sum().item() == 6.0


def test_update_at_of_a_views_rows_reads_each_entry_once(
    ptd: PersistentTensorDict, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the check read each entry's rows (written in memory, thrown away), then set_at_
    # read them again to write: two reads of every entry; now the write is the check's
    from tclass._io.store._h5 import H5Array
    from tclass._io.store._zarr import ZarrArray

    reads: list[str] = []
    for cls in (H5Array, ZarrArray):
        original = cls.read

        def counted(self: Any, selection: Any = (), _read: Any = original) -> Any:
            reads.append(str(selection))
            return _read(self, selection)

        monkeypatch.setattr(cls, "read", counted)
    view = ptd[1:3]
    view.update_at_({"a": torch.ones(3), ("n", "x"): torch.tensor(2.0)}, 1)
    assert len(reads) == 2, reads
    assert ptd["a"][:, 0].tolist() == [0.0, 0.0, 1.0, 0.0]
    assert ptd["n", "x"].tolist() == [0.0, 0.0, 2.0, 0.0]
    with pytest.raises(KeyError, match="zz"):  # all or nothing still
        view.update_at_({"a": torch.full((3,), 5.0), "zz": torch.ones(2)}, 1)
    assert ptd["a"][:, 0].tolist() == [0.0, 0.0, 1.0, 0.0]
    reads.clear()  # the file's own rows: written by the store, nothing read (the
    ptd.update_at_({"a": torch.ones(3), ("n", "x"): torch.tensor(3.0)}, 0)  # entry's
    assert reads == []  # class was read from a whole array per entry)
    assert ptd["n", "x"].tolist() == [3.0, 0.0, 2.0, 0.0]


@pytest.mark.parametrize(
    ("part", "error"),
    [
        ({"a": torch.ones(4, 3), "b": torch.ones(4, 5, dtype=torch.int64)}, StoreShapeError),
        ({"a": torch.ones(4, 3), "n": {"x": torch.ones(4), "y": torch.ones(5)}}, StoreShapeError),
        ({"a": torch.ones(4, 3), "b": "hello"}, InPlaceWriteError),
        ({"a": torch.ones(4, 3), "n": {"y": torch.ones(4, 2, device="meta")}}, MetaTensorError),
    ],
    ids=["shape", "nested shape", "string", "meta"],
)
def test_an_update_in_place_of_whole_entries_is_all_or_nothing(
    ptd: PersistentTensorDict, part: dict[str, Any], error: type[Exception]
) -> None:
    # update(inplace=True) checks each write into an entry the file holds (as update_),
    # and a meta tensor (no data) is refused before any is written, in place or not
    with pytest.raises(error) as caught:
        ptd.update(part, inplace=True)
    assert isinstance(caught.value, TclassError)
    _unchanged(ptd)
    if error is MetaTensorError:
        with pytest.raises(MetaTensorError):
            ptd.update(part)
        with pytest.raises(MetaTensorError):
            ptd.load_state_dict(TensorDict(part, [4]).state_dict(), strict=False)
        _unchanged(ptd)
    ptd.update({"a": torch.ones(4, 3), "new": torch.ones(4)}, inplace=True)  # a new key: set
    assert torch.equal(ptd["new"], torch.ones(4)) and torch.equal(ptd["a"], torch.ones(4, 3))
