"""File formats besides the memory-mapped folders: safetensors (both ways with the peer),
Arrow tables, and the tables of pandas, CSV, Parquet and JSON records, with the peer's
conversions. Each optional dependency skips its tests cleanly when missing."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

import tclass
from tclass import TensorDict
from tclass.errors import MissingDependencyError, TclassError


@tclass.tensorclass
class Sample:
    x: torch.Tensor
    label: str


def _table() -> TensorDict:
    return TensorDict(
        a=torch.arange(3),
        b=TensorDict(c=torch.tensor([0.5, 1.5, 2.5]), batch_size=[3]),
        s=["p", "q", "r"],
        batch_size=[3],
    )


# --- safetensors ---------------------------------------------------------------------


def test_safetensors_round_trip(tmp_path: Path) -> None:
    pytest.importorskip("safetensors")
    td = TensorDict(
        w=torch.ones(2, 3), sub={"b": torch.zeros(2)}, s="hello",
        u=tclass.UnbatchedTensor(torch.arange(5.0)), batch_size=[2],
    )  # fmt: skip
    td.set_non_tensor("n", {"k": [1, 2]})
    td.names = ["rows"]
    path = tmp_path / "td.safetensors"
    tclass.to_safetensors(td, path)
    back = tclass.from_safetensors(path)
    assert back.batch_size == (2,) and back.names == ["rows"]
    assert torch.equal(back["w"], td["w"]) and torch.equal(back["sub", "b"], td["sub", "b"])
    assert back["s"] == "hello" and back["n"] == {"k": [1, 2]}
    assert type(back.get("u")) is tclass.UnbatchedTensor
    assert torch.equal(back.get("u").as_tensor(), torch.arange(5.0))


def test_safetensors_records_and_lazy_stacks(tmp_path: Path) -> None:
    pytest.importorskip("safetensors")
    record = Sample(x=torch.randn(2, 3), label="cat", batch_size=[2])
    tclass.to_safetensors(record, tmp_path / "r.safetensors")
    back = tclass.from_safetensors(tmp_path / "r.safetensors")
    assert type(back) is Sample and back.label == "cat" and torch.equal(back.x, record.x)
    lazy = tclass.lazy_stack([TensorDict(a=torch.zeros(3)), TensorDict(a=torch.ones(3))], 0)
    tclass.to_safetensors(lazy, tmp_path / "l.safetensors")
    loaded = tclass.from_safetensors(tmp_path / "l.safetensors", device="cpu")
    assert isinstance(loaded, tclass.LazyStackedTensorDict) and loaded.stack_dim == 0
    assert loaded["a"].tolist() == [[0.0] * 3, [1.0] * 3] and loaded.device == torch.device("cpu")


def test_safetensors_checkpoints_load_as_module_parameters(tmp_path: Path) -> None:
    safetensors_torch = pytest.importorskip("safetensors.torch")
    path = tmp_path / "model.safetensors"
    safetensors_torch.save_file({"0.weight": torch.ones(4, 3), "0.bias": torch.zeros(4)}, path)
    params = tclass.from_safetensors(path)
    assert params["0", "weight"].shape == (4, 3) and params.batch_size == ()
    model = torch.nn.Sequential(torch.nn.Linear(3, 4))
    params.to_module(model)
    assert torch.equal(model[0].weight, torch.ones(4, 3))


def test_safetensors_refusals(tmp_path: Path) -> None:
    pytest.importorskip("safetensors")
    path = tmp_path / "x.safetensors"
    with pytest.raises(TypeError, match="NonTensorStack"):
        tclass.to_safetensors(TensorDict(s=["a", "b"], batch_size=[2]), path)
    with pytest.raises(TypeError, match="not a JSON value"):
        tclass.to_safetensors(TensorDict(s=object()), path)
    with pytest.raises(KeyError, match="'a.b'"):
        tclass.to_safetensors(TensorDict({"a.b": torch.zeros(1), "a": {"b": torch.ones(1)}}), path)
    with pytest.raises(TypeError, match="alone"):
        tclass.to_safetensors(tclass.NonTensorData("x"), path)
    shared = torch.arange(6.0)
    tclass.to_safetensors(TensorDict(a=shared[:4], b=shared[2:]), path)  # overlap: copied
    assert tclass.from_safetensors(path)["b"].tolist() == [2.0, 3.0, 4.0, 5.0]


def test_safetensors_unknown_version_and_stray_tensors(tmp_path: Path) -> None:
    safetensors_torch = pytest.importorskip("safetensors.torch")
    path = tmp_path / "v.safetensors"
    meta = json.dumps({"version": 7, "root": {}})
    safetensors_torch.save_file({"a": torch.zeros(1)}, path, metadata={"tensordict": meta})
    with pytest.raises(ValueError, match="version 7"):
        tclass.from_safetensors(path)
    root = {"batch_size": [], "names": None, "keys": {}}
    meta = json.dumps({"version": 1, "root": root})
    safetensors_torch.save_file({"a": torch.zeros(1)}, path, metadata={"tensordict": meta})
    with pytest.raises(ValueError, match="not in its tensordict metadata"):
        tclass.from_safetensors(path)


@pytest.mark.peer
def test_safetensors_interop_with_the_peer(tmp_path: Path) -> None:
    pytest.importorskip("safetensors")
    tensordict = pytest.importorskip("tensordict")
    mine = TensorDict(w=torch.ones(2, 3), sub={"b": torch.zeros(2)}, s="hi", batch_size=[2])
    tclass.to_safetensors(mine, tmp_path / "mine.safetensors")
    theirs = tensordict.from_safetensors(tmp_path / "mine.safetensors")
    assert theirs["s"] == "hi" and torch.equal(theirs["sub", "b"], torch.zeros(2))
    peer_td = tensordict.TensorDict(w=torch.ones(2, 3), batch_size=[2])
    tensordict.to_safetensors(tensordict.lazy_stack([peer_td, peer_td]), tmp_path / "p.st")
    back = tclass.from_safetensors(tmp_path / "p.st")
    assert isinstance(back, tclass.LazyStackedTensorDict) and back.batch_size == (2, 2)
    assert torch.equal(back["w"], torch.ones(2, 2, 3))
    tensordict.to_safetensors(tensordict.TensorDict(s="there"), tmp_path / "s.st")
    assert tclass.from_safetensors(tmp_path / "s.st")["s"] == "there"


# --- pandas and the table files -----------------------------------------------------


def test_from_pandas_columns() -> None:
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(
        {
            "a": [1, 2, 3], "b": [4.0, 5.0, 6.0], "s": ["x", "y", "z"],
            "c": pd.Categorical(["u", "v", "u"]), "t": pd.to_datetime(["2020-01-01"] * 3),
            "o.x": [1.0, 2.0, 3.0],
        }
    )  # fmt: skip
    td = TensorDict.from_pandas(frame, separator=".")
    assert td.batch_size == (3,) and td["a"].dtype == torch.int64
    assert td["c"].tolist() == [0, 1, 0] and td["t"][0].item() == 1577836800000000000
    assert td["o", "x"].tolist() == [1.0, 2.0, 3.0]
    assert list(td["s"]) == ["x", "y", "z"]  # one value holding the column, as the peer
    cast = tclass.from_pandas(frame, dtype=torch.float32)
    assert cast["a"].dtype == torch.float32 and "o.x" in cast.keys()
    record = Sample.from_pandas(pd.DataFrame({"x": [1.0, 2.0], "label": ["a", "b"]}))
    assert type(record) is Sample and record.batch_size == (2,)
    with pytest.raises(TypeError, match="Conflicting batch sizes"):
        TensorDict.from_pandas(frame, auto_batch_size=True, batch_size=[3])
    with pytest.raises(KeyError, match="prefix"):
        TensorDict.from_pandas(pd.DataFrame({"o": [1], "o.x": [2]}), separator=".")


def test_from_any_of_a_dataframe_reads_its_columns() -> None:
    pd = pytest.importorskip("pandas")
    td = TensorDict.from_any(pd.DataFrame({"a": [1, 2, 3], "b.c": [0.5, 1.5, 2.5]}))
    assert type(td) is TensorDict and td.batch_size == (3,)
    assert torch.equal(td["a"], torch.tensor([1, 2, 3]))
    moved = tclass.from_any(pd.DataFrame({"a": [1.0, 2.0]}), device="cpu")
    assert moved.device == torch.device("cpu") and moved["a"].dtype == torch.float64


def test_to_pandas() -> None:
    pytest.importorskip("pandas")
    frame = _table().to_pandas(separator=".")
    assert list(frame.columns) == ["a", "b.c", "s"]
    assert frame["s"].tolist() == ["p", "q", "r"] and frame["b.c"].tolist() == [0.5, 1.5, 2.5]
    with pytest.raises(ValueError, match="separator"):
        _table().to_pandas()
    with pytest.raises(ValueError, match="one column"):
        TensorDict(m=torch.zeros(3, 2), batch_size=[3]).to_pandas()


@tclass.tensorclass
class _Point:
    x: torch.Tensor
    y: torch.Tensor


@tclass.tensorclass
class _Image:
    im: torch.Tensor


def test_to_pandas_records_are_one_column_of_records() -> None:
    pytest.importorskip("pandas")
    point = _Point(x=torch.zeros(3), y=torch.arange(3.0), batch_size=[3])
    frame = TensorDict(p=point, batch_size=[3]).to_pandas()  # no separator needed
    assert frame["p"].dtype == object and type(frame["p"][2]) is _Point
    assert frame["p"][2].y.item() == 2.0
    assert list(TensorDict(p=point, batch_size=[3]).to_pandas(separator=".").columns) == [
        "p.x",
        "p.y",
    ]
    images = _Image(im=torch.zeros(3, 2), batch_size=[3])  # 2-D: kept whole even with "."
    frame = TensorDict(p=images, a=torch.zeros(3), batch_size=[3]).to_pandas(separator=".")
    assert list(frame.columns) == ["p", "a"] and frame["p"][1].im.shape == (2,)


@pytest.mark.parametrize("kind", ["csv", "parquet", "json"])
def test_table_files_round_trip(tmp_path: Path, kind: str) -> None:
    pytest.importorskip("pandas")
    if kind == "parquet":
        pytest.importorskip("pyarrow")
    path = tmp_path / f"t.{kind}"
    getattr(_table(), f"to_{kind}")(path, separator=".")
    back = getattr(TensorDict, f"from_{kind}")(path, separator=".")
    assert back.batch_size == (3,) and back["a"].tolist() == [0, 1, 2]
    assert back["b", "c"].tolist() == [0.5, 1.5, 2.5]
    module_level = getattr(tclass, f"from_{kind}")(path, separator=".", batch_size=[3])
    assert torch.equal(module_level["a"], back["a"])


def test_parquet_reads_columns_and_rows_of_strings(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    pytest.importorskip("pandas")
    path = tmp_path / "t.parquet"
    _table().to_parquet(path, separator=".")
    back = tclass.from_parquet(path, separator=".")
    assert isinstance(back.get("s"), tclass.NonTensorStack) and back[1]["s"] == "q"
    assert list(tclass.from_parquet(path, columns=["a"]).keys()) == ["a"]


def test_json_records_and_lines(tmp_path: Path) -> None:
    pytest.importorskip("pandas")
    path = tmp_path / "t.json"
    _table().to_json(path, separator=".")
    assert json.loads(path.read_text())[0] == {"a": 0, "b.c": 0.5, "s": "p"}
    lines = tmp_path / "t.jsonl"
    _table().to_json(lines, separator=".", lines=True)
    assert len(lines.read_text().splitlines()) == 3
    back = TensorDict.from_json(lines, lines=True, separator=".")
    assert back["b", "c"].tolist() == [0.5, 1.5, 2.5]


def test_json_without_pandas(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without pandas, JSON goes through the json module: one value per record."""
    monkeypatch.setitem(sys.modules, "pandas", None)
    monkeypatch.setattr("tclass._io.export._tabular._has", lambda module: module != "pandas")
    path = tmp_path / "t.json"
    _table().to_json(path, separator=".")
    assert json.loads(path.read_text())[2] == {"a": 2, "b.c": 2.5, "s": "r"}
    back = TensorDict.from_json(path, separator=".")
    assert back["a"].tolist() == [0, 1, 2] and back[2]["s"] == "r"
    path.write_text('{"a": 1}')
    with pytest.raises(ValueError, match="array of records"):
        TensorDict.from_json(path)
    path.write_text('[{"a": 1}, {"a": null}]')
    with pytest.warns(FutureWarning, match="'a'"):
        TensorDict.from_json(path)
    with pytest.raises(MissingDependencyError, match=r"tclass\[formats\]") as info:
        _table().to_pandas(separator=".")
    assert isinstance(info.value, ImportError) and isinstance(info.value, TclassError)


# --- Arrow ---------------------------------------------------------------------------


def test_from_arrow_conversions() -> None:
    pa = pytest.importorskip("pyarrow")
    table = pa.table(
        {
            "x": pa.array([1.0, 2.0, 3.0]),
            "ids": pa.array([[1, 2], [3], []]),
            "text": pa.array(["a", "b", "c"]),
            "st": pa.array([{"y": 1}, {"y": 2}, {"y": 3}]),
            "fs": pa.array([[1, 2], [3, 4], [5, 6]], type=pa.list_(pa.int32(), 2)),
            "flag": pa.array([True, False, True]),
        }
    )
    td = tclass.from_arrow(table)
    assert td.batch_size == (3,) and td["x"].dtype == torch.float64
    assert [row.tolist() for row in td["ids"].unbind(0)] == [[1, 2], [3], []]
    assert td.get("text").tolist() == ["a", "b", "c"] and td["st", "y"].tolist() == [1, 2, 3]
    assert td["fs"].shape == (3, 2) and td["flag"].dtype == torch.bool
    assert tclass.from_arrow(table, copy=True)["x"].data_ptr() != td["x"].data_ptr()


def test_from_arrow_nulls() -> None:
    pa = pytest.importorskip("pyarrow")
    table = pa.table({"y": pa.array([1.0, None]), "i": pa.array([1, None])})
    with pytest.raises(ValueError, match="null value"):
        tclass.from_arrow(table)
    filled = tclass.from_arrow(table, nulls="fill")
    assert filled["y"][1].isnan() and filled["i"].tolist() == [1, 0]
    masked = tclass.from_arrow(table, nulls="mask", mask_key="valid")
    assert masked["valid", "y"].tolist() == [True, False]
    with pytest.raises(ValueError, match="mask_key"):
        tclass.from_arrow(table, mask_key="m")
    with pytest.raises(ValueError, match="nulls must be"):
        tclass.from_arrow(table, nulls="drop")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="column of the table"):
        tclass.from_arrow(pa.table({"_mask": [1.0, None]}), nulls="mask")


def test_to_arrow_and_back() -> None:
    pytest.importorskip("pyarrow")
    td = TensorDict(
        x=torch.tensor([1.0, 2.0]), image=torch.zeros(2, 3, 4),
        obs=TensorDict(y=torch.tensor([3, 4]), batch_size=[2]), s=["a", "b"], batch_size=[2],
    )  # fmt: skip
    table = tclass.to_arrow(td)
    assert table.num_rows == 2 and str(table.schema.field("obs").type) == "struct<y: int64>"
    back = tclass.from_arrow(table)
    assert back["image"].shape == (2, 3, 4) and back["obs", "y"].tolist() == [3, 4]
    assert back.get("s").tolist() == ["a", "b"]
    jagged = torch.nested.nested_tensor([torch.ones(2), torch.ones(3)], layout=torch.jagged)
    rows = tclass.from_arrow(tclass.to_arrow(TensorDict(j=jagged, batch_size=[2])))
    assert [row.tolist() for row in rows["j"].unbind(0)] == [[1.0, 1.0], [1.0, 1.0, 1.0]]
    with pytest.raises(ValueError, match="one batch dim"):
        tclass.to_arrow(TensorDict(a=torch.zeros(2, 2), batch_size=[2, 2]))


@pytest.mark.peer
def test_arrow_and_tables_agree_with_the_peer(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    tensordict = pytest.importorskip("tensordict")
    table = pa.table({"x": pa.array([1.0, None]), "t": pa.array(["a", None])})
    mine, theirs = (
        tclass.from_arrow(table, nulls="mask"),
        tensordict.from_arrow(table, nulls="mask"),
    )
    assert sorted(map(str, mine.keys(True, True))) == sorted(map(str, theirs.keys(True, True)))
    assert mine["_mask", "x"].tolist() == theirs["_mask", "x"].tolist()
    path = tmp_path / "peer.parquet"
    tensordict.TensorDict(a=torch.arange(3), s=["x", "y", "z"], batch_size=[3]).to_parquet(path)
    back: Any = TensorDict.from_parquet(path)
    assert back["a"].tolist() == [0, 1, 2] and back.get("s").tolist() == ["x", "y", "z"]
    assert np.array_equal(
        tclass.to_arrow(back).column("a").to_numpy(), tensordict.to_arrow(
            tensordict.TensorDict(a=torch.arange(3), batch_size=[3])).column("a").to_numpy()
    )  # fmt: skip


@pytest.mark.parametrize(
    ("module", "call"),
    [
        ("pyarrow", lambda: tclass.to_arrow(_table())),
        ("safetensors", lambda: tclass.from_safetensors("missing.safetensors")),
    ],
)
def test_missing_dependency_names_the_extra(
    monkeypatch: pytest.MonkeyPatch, module: str, call: Any
) -> None:
    monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(MissingDependencyError, match=rf"tclass\[formats\].*pip install {module}"):
        call()


# --- MosaicML Streaming (to_mds) -----------------------------------------------------


class FakeWriter:
    """What to_mds uses of streaming's MDSWriter: write(), column names and encodings,
    and the context manager that finishes it."""

    def __init__(self, columns: dict[str, str]) -> None:
        self.column_names = list(columns)
        self.column_encodings = list(columns.values())
        self.samples: list[Any] = []
        self.finished = 0

    def write(self, sample: Any) -> None:
        self.samples.append(sample)

    def __enter__(self) -> FakeWriter:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.finished += 1


def test_to_mds_rows_through_a_writer() -> None:
    td = TensorDict(a=torch.arange(2), c=torch.zeros(2, 3), d=["x", "y"], batch_size=[2])
    writer = FakeWriter({"a": "int", "c": "ndarray", "d": "str"})
    td.to_mds(writer=writer, finish_writer=False)
    assert writer.finished == 0 and [s["a"] for s in writer.samples] == [0, 1]
    assert type(writer.samples[0]["a"]) is int and writer.samples[1]["d"] == "y"
    assert writer.samples[0]["c"].shape == (3,)
    with pytest.warns(FutureWarning, match="finished the writer"):
        td.to_mds(writer=writer)
    assert writer.finished == 1 and len(writer.samples) == 4


def test_to_mds_one_sample_and_pickled_columns() -> None:
    sample = TensorDict(a=torch.tensor(3), c=torch.ones(2), s="text")
    writer = FakeWriter({"a": "int", "c": "ndarray", "s": "pkl"})
    sample.to_mds(writer=writer)
    assert writer.finished == 0  # left open: more samples may follow
    (written,) = writer.samples
    assert written["a"] == 3 and written["c"].tolist() == [1.0, 1.0]
    assert written["s"] == "text"
    with pytest.raises(ValueError, match="empty"):
        TensorDict(a=torch.zeros(0), batch_size=[0]).to_mds(writer=writer)


def test_to_mds_encodings_and_missing_streaming(monkeypatch: pytest.MonkeyPatch) -> None:
    from tclass._io.export._mds import _columns

    td = TensorDict(i=torch.tensor(1), f=torch.tensor(1.0), v=torch.zeros(3), s="a", b=b"x")
    td.set_non_tensor("n", [1, 2])
    assert _columns(td) == {
        "i": "int", "f": "float32", "v": "ndarray", "s": "str", "b": "bytes", "n": "json",
    }  # fmt: skip
    monkeypatch.setitem(sys.modules, "streaming", None)
    with pytest.raises(MissingDependencyError, match=r"tclass\[mds\]"):
        td.to_mds(out="somewhere")


# --- archive checksums ---------------------------------------------------------------


def test_refresh_archive_checksums(tmp_path: Path) -> None:
    import zipfile

    archive = tmp_path / "td.tdz"
    TensorDict(a=torch.zeros(3), b={"c": torch.ones(2)}).save(archive)
    tclass.TensorDict.load_memmap(archive, mode="r+")["a"].add_(1)
    assert zipfile.ZipFile(archive).testzip() == "a.memmap"  # stale after the write
    assert tclass.refresh_archive_checksums(archive) == archive
    assert zipfile.ZipFile(archive).testzip() is None
    assert tclass.TensorDict.load_memmap(archive)["a"].tolist() == [1.0, 1.0, 1.0]
    unpacked = tclass.unpack_memmap(archive, tmp_path / "folder")
    assert tclass.load_memmap(unpacked)["b", "c"].tolist() == [1.0, 1.0]
    with pytest.raises(ValueError, match="not a memory-mapped archive"):
        tclass.refresh_archive_checksums(tmp_path / "folder")


def test_to_pandas_without_batch_dims_repeats_python_values_along_a_tensor() -> None:
    # The peer's frame takes the value itself, which pandas repeats along the rows of the
    # 1-d tensor (program 15,600,014 of features,index,shape,combine L8); without such a
    # tensor the frame has one row
    pytest.importorskip("pandas")
    td = TensorDict({"d": torch.tensor([3, 4]), "s": "q", "e": torch.tensor(5)}, batch_size=[])
    frame = td.to_pandas(separator=".")
    assert list(frame.columns) == ["d", "s", "e"]
    assert frame["d"].tolist() == [3, 4] and frame["s"].tolist() == ["q", "q"]
    assert frame["e"].tolist() == [5, 5]
    one = TensorDict({"s": "q", "e": torch.tensor(5)}, batch_size=[]).to_pandas()
    assert one["s"].tolist() == ["q"] and one["e"].tolist() == [5]


def test_to_pandas_without_batch_dims_gives_a_record_one_row_per_element() -> None:
    # A record column holds the record's elements along its first dim, whatever the
    # collection's batch (program 16,020,972 of features,index,shape,combine L8): a
    # batchless collection holding a record of batch [2] has its rows, not the record whole
    pytest.importorskip("pandas")
    images = _Image(im=torch.arange(6.0).reshape(2, 3), batch_size=[2])
    frame = TensorDict(p=images, a=torch.zeros(2), batch_size=[]).to_pandas(separator=".")
    assert list(frame.columns) == ["p", "a"] and len(frame) == 2
    assert frame["p"][1].batch_size == () and frame["p"][1].im.tolist() == [3.0, 4.0, 5.0]
    back = TensorDict.from_pandas(frame)
    assert back.batch_size == (2,) and back["p"].tolist()[0].batch_size == ()
    with pytest.raises(ValueError, match="same length"):  # 1 row of records, 2 of `a`
        TensorDict(p=images[:1], a=torch.zeros(2), batch_size=[]).to_pandas(separator=".")


def test_to_pandas_without_batch_dims_gives_a_value_stack_one_row_per_element() -> None:
    # A NonTensorStack (or NonTensorData) with dims of its own in a batchless collection
    # gives its rows along its first dim, as the peer's frame does, not its one value
    # (program 16,026,929 of methods,features,entries,records L8: a 2x2 stack of "x y")
    pytest.importorskip("pandas")
    inner = tclass.NonTensorStack("x y", "x y")
    stack = tclass.NonTensorStack(inner, inner.clone())
    frame = TensorDict({"md": stack}, batch_size=[]).to_pandas()
    assert frame["md"].tolist() == [["x y", "x y"], ["x y", "x y"]]
    back = TensorDict.from_pandas(frame, auto_batch_size=True)
    assert back.batch_size == (2,)
    data = tclass.NonTensorData("a", batch_size=[3])
    frame = TensorDict({"md": data, "x": torch.zeros(3)}, batch_size=[]).to_pandas()
    assert frame["md"].tolist() == ["a", "a", "a"] and len(frame) == 3
    with pytest.raises(ValueError, match="same length"):
        TensorDict({"md": stack, "x": torch.zeros(3)}, batch_size=[]).to_pandas()
