"""The Store protocol (``tclass/_io/store/_protocol.py``) on each backend: what
``PersistentTensorDict`` asks of a store (groups, arrays, row reads and writes, Python
values, metadata, the file's life), answered the same by h5py and zarr.

Each test runs once per backend whose library is installed (``h5``: h5py, ``zarr``:
zarr>=3.1.1) and skips for the others.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import torch

from tclass import NonTensorData, NonTensorStack, TensorDict
from tclass._io.store._h5 import BACKEND as H5
from tclass._io.store._persistent import BACKENDS
from tclass._io.store._protocol import Access, Backend, StoreArray, StoreGroup, Values, is_group
from tclass._io.store._zarr import BACKEND as ZARR
from tclass.errors import (
    FileConflictError,
    FileFormatError,
    MissingFileError,
    NotSerializableError,
    PickleRefusedError,
)

LIBRARIES = {"h5": "h5py", "zarr": "zarr"}


@pytest.fixture(params=sorted(BACKENDS))
def backend(request: pytest.FixtureRequest) -> Backend:
    pytest.importorskip(LIBRARIES[request.param])
    return BACKENDS[request.param]


def target(tmp_path: Path, backend: Backend, stem: str = "store") -> str:
    return str(tmp_path / f"{stem}.{backend.name}")


@pytest.fixture
def root(tmp_path: Path, backend: Backend) -> Iterator[StoreGroup]:
    opened = backend.open(target(tmp_path, backend), "w", Access())
    yield opened
    opened.file.close()


def array(group: StoreGroup, key: str) -> StoreArray:
    node = group[key]
    assert not is_group(node)
    return node


def subgroup(group: StoreGroup, key: str) -> StoreGroup:
    node = group[key]
    assert is_group(node)
    return node


def test_the_backends_are_h5_and_zarr() -> None:
    assert BACKENDS == {"h5": H5, "zarr": ZARR}
    assert {name: b.name for name, b in BACKENDS.items()} == {"h5": "h5", "zarr": "zarr"}


# --- the file ------------------------------------------------------------------------------


def test_open_modes(tmp_path: Path, backend: Backend) -> None:
    path = target(tmp_path, backend)
    with pytest.raises(MissingFileError, match="check the path"):
        backend.open(path, "r", Access())
    with pytest.raises(MissingFileError):
        backend.open(path, "r+", Access())
    made = backend.open(path, "w", Access())
    assert made.file.is_open and not made.file.read_only and made.name == "/"
    assert made.file.backend == backend.name and made.file.filename.endswith(Path(path).name)
    made.create_array("a", np.arange(3.0), {})
    made.file.close()
    assert not made.file.is_open
    made.file.close()  # a second close does nothing
    for mode in ("w-", "x"):
        with pytest.raises(FileConflictError, match="mode='w' to replace it"):
            backend.open(path, mode, Access())
    read = backend.open(path, "r", Access())
    assert read.file.read_only and read.keys() == ["a"]
    read.file.close()
    appended = backend.open(path, "a", Access())
    assert not appended.file.read_only and appended.keys() == ["a"]
    appended.file.close()
    replaced = backend.open(path, "w", Access())
    assert replaced.keys() == []  # "w" truncates
    replaced.file.close()


def test_what_is_not_a_store_is_a_format_error(tmp_path: Path, backend: Backend) -> None:
    junk = tmp_path / f"junk.{backend.name}"
    if backend.name == "zarr":
        junk.mkdir()  # a directory holding no zarr group
        (junk / "notes.txt").write_text("hello")
    else:
        junk.write_bytes(b"not an HDF5 file" * 10)
    with pytest.raises(FileFormatError, match="junk"):
        backend.open(str(junk), "r", Access())


def test_reopen_reaches_a_group(tmp_path: Path, backend: Backend) -> None:
    path = target(tmp_path, backend)
    made = backend.open(path, "w", Access())
    made.create_group("outer").create_group("inner").create_array("x", np.ones(2), {})
    made.file.close()
    inner = backend.reopen(made.file.target, "/outer/inner", "r", Access(allow_pickle=True))
    assert inner.name == "/outer/inner" and inner.keys() == ["x"]
    assert inner.file.access == Access(allow_pickle=True)
    inner.file.close()
    whole = backend.reopen(path, "/", "r", Access())
    assert whole.keys() == ["outer"]
    whole.file.close()


def test_owns_and_wrap_take_only_their_librarys_groups(root: StoreGroup, backend: Backend) -> None:
    native = root.native
    assert backend.owns(native)
    others = [b for b in BACKENDS.values() if b is not backend]
    assert not any(other.owns(native) for other in others)
    wrapped = backend.wrap(native, Access())
    assert wrapped is not None and wrapped.identity == root.identity
    for stranger in ({"a": 1}, np.zeros(2), "path"):
        assert not backend.owns(stranger) and backend.wrap(stranger, Access()) is None


# --- groups ----------------------------------------------------------------------------------


def test_groups_list_sorted_and_nest(root: StoreGroup) -> None:
    for key in ("b", "a", "c"):
        root.create_array(key, np.zeros(1), {})
    nested = root.create_group("n")
    assert is_group(nested) and nested.name == "/n"
    assert root.keys() == ["a", "b", "c", "n"] and "n" in root and "z" not in root
    assert subgroup(root, "n").identity == nested.identity != root.identity
    with pytest.raises(KeyError):
        root["z"]
    assert root.linked("a", "here").name == "/a"


def test_delete_and_move(root: StoreGroup) -> None:
    root.create_array("a", np.arange(4, dtype=np.int32), {})
    inner = root.create_group("g")
    inner.create_array("x", np.ones((2, 2), dtype=np.float32), {})
    inner.create_group("deeper").create_array("y", np.arange(3, dtype=np.int16), {})
    inner.write_meta({"batch_size": [2]})
    root.move("a", "b")
    assert root.keys() == ["b", "g"] and array(root, "b").read().tolist() == [0, 1, 2, 3]
    root.move("g", "h")  # a group moves whole, its metadata too
    moved = subgroup(root, "h")
    assert moved.keys() == ["deeper", "x"] and moved.read_meta() == '{"batch_size": [2]}'
    assert array(subgroup(moved, "deeper"), "y").read().tolist() == [0, 1, 2]
    root.delete("b")
    assert root.keys() == ["h"] and "b" not in root


# --- arrays ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dtype",
    [
        torch.bool, torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
        torch.float16, torch.float32, torch.float64, torch.complex64, torch.complex128,
    ],
)  # fmt: skip
def test_arrays_hold_each_torch_dtype(root: StoreGroup, dtype: torch.dtype) -> None:
    data = (torch.arange(6) % 2).to(dtype).reshape(3, 2)
    made = root.create_array("t", data.numpy(), {})
    assert made.dtype == dtype and made.shape == (3, 2) and array(root, "t").dtype == dtype
    assert torch.equal(torch.from_numpy(made.read()), data)


def test_reads_and_writes_select_rows(root: StoreGroup) -> None:
    data = np.arange(20, dtype=np.int64).reshape(10, 2)
    node = root.create_array("a", data, {})
    assert node.read().tolist() == data.tolist()
    assert node.read(3).tolist() == data[3].tolist()
    assert node.read(slice(1, 9, 3)).tolist() == data[1:9:3].tolist()
    assert node.read(np.array([0, 4, 9])).tolist() == data[[0, 4, 9]].tolist()  # sorted rows
    node.write(slice(2, 4), np.full((2, 2), -1, dtype=np.int64))
    node.write(0, np.array([7, 7], dtype=np.int64))
    node.write(..., node.read() * 10)
    expected = data.copy()
    expected[2:4] = -1
    expected[0] = 7
    assert array(root, "a").read().tolist() == (expected * 10).tolist()
    out = np.empty((10, 2), dtype=np.int64)
    node.read_into(out)
    assert out.tolist() == (expected * 10).tolist()


def test_scalar_and_empty_arrays(root: StoreGroup) -> None:
    scalar = root.create_array("s", np.array(2.5), {})
    assert scalar.shape == () and float(scalar.read()) == 2.5
    scalar.write((), np.array(4.0))
    assert float(array(root, "s").read()) == 4.0
    empty = root.create_array("e", np.zeros((0, 3), dtype=np.float32), {})
    assert empty.shape == (0, 3) and empty.read().shape == (0, 3)


def test_checks_pass_for_what_tclass_writes(root: StoreGroup) -> None:
    node = root.create_array("a", np.zeros((4, 2)), {})
    node.check("here")
    assert node.stack_shape("here") is None


# --- Python values ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "values",
    [
        Values("hello", None, ["hello"]),
        Values(3, None, [3]),
        Values({"a": [1, 2.5, None], "b": "c"}, None, [{"a": [1, 2.5, None], "b": "c"}]),
        Values(["x", "yy", "z"], [3], ["x", "yy", "z"]),
        Values([[1, 2], [3, 4]], [2, 2], [1, 2, 3, 4]),
        Values([{"u": 1}, {"u": [2]}], [2], [{"u": 1}, {"u": [2]}]),
    ],
    ids=["str", "int", "dict", "strs", "ints", "dicts"],
)
def test_values_round_trip(root: StoreGroup, values: Values) -> None:
    root.check_values(values, False, "here")
    root.create_values("v", values, False, "here")
    node = array(root, "v")
    assert node.dtype is None  # not a tensor
    assert node.values("here") == values.value
    assert node.stack_shape("here") == values.shape
    node.check("here")


def test_a_value_json_cannot_hold_is_refused_without_pickle(
    root: StoreGroup, backend: Backend
) -> None:
    values = Values({1, 2}, None, [{1, 2}])
    with pytest.raises(NotSerializableError, match="allow_pickle=True") as refused:
        root.check_values(values, False, "'where'")
    # the way out the message gives is one the format has: an HDF5 file holds no pickles
    # (it advised allow_pickle=True there), a zarr store takes it when it is opened
    message = str(refused.value)
    assert message.startswith("'where': a value of type builtins.set")
    if backend.name == "h5":
        assert "pass allow_pickle=True" not in message
        assert "holds no pickles" in message and "to_zarr(..., allow_pickle=True)" in message
    else:
        assert "open the store with allow_pickle=True" in message


def test_pickles_only_where_the_format_holds_them(
    tmp_path: Path, root: StoreGroup, backend: Backend
) -> None:
    values = Values({1, 2}, None, [{1, 2}])
    if backend.name == "h5":
        with pytest.raises(NotSerializableError, match="holds no pickles"):
            root.check_values(values, True, "'where'")
        return
    root.check_values(values, True, "'where'")
    root.create_values("p", values, True, "'where'")
    root.file.close()
    refusing = backend.open(target(tmp_path, backend), "r", Access())
    with pytest.raises(PickleRefusedError, match="allow_pickle=True"):
        array(refusing, "p").values("'p'")
    refusing.file.close()
    allowing = backend.open(target(tmp_path, backend), "r", Access(allow_pickle=True))
    assert array(allowing, "p").values("'p'") == {1, 2}
    allowing.file.close()


# --- metadata ------------------------------------------------------------------------------


def test_metadata_round_trips(tmp_path: Path, root: StoreGroup, backend: Backend) -> None:
    assert root.read_meta() is None
    root.write_meta({"batch_size": [3, 4], "schema": {"class": "x"}})
    root.file.close()
    again = backend.open(target(tmp_path, backend), "r", Access())
    assert again.read_meta() == '{"batch_size": [3, 4], "schema": {"class": "x"}}'
    again.file.close()


def test_the_backend_modules_are_the_only_importers_of_their_libraries() -> None:
    """No module of tclass but ``_h5.py`` imports h5py (``import``, or the optional
    dependencies' ``need``), and none but ``_zarr.py`` zarr."""
    import tclass

    root = Path(tclass.__file__).parent
    found: dict[str, set[str]] = {"h5py": set(), "zarr": set()}
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "need":
                names = [arg.value for arg in node.args[:1] if isinstance(arg, ast.Constant)]
            for name in names:
                library = str(name).partition(".")[0]
                if library in found:
                    found[library].add(path.relative_to(root).as_posix())
    assert found == {"h5py": {"_io/store/_h5.py"}, "zarr": {"_io/store/_zarr.py"}}


def test_indexing_by_key_gives_python_values_as_values(tmp_path: Path, backend: Backend) -> None:
    """``stored[key]`` of a Python value is the value (one per element: a list), as a
    TensorDict's is; ``get`` gives the node (a PersistentTensorDict over each backend)."""
    source = TensorDict(
        {"a": torch.zeros(4), "d": "top", "meta": {"description": "a dataset"}}, batch_size=[4]
    )
    source["tags"] = ["w", "x", "y", "z"]
    path = tmp_path / f"v.{backend.name}"
    written = getattr(source, f"to_{backend.name}")(path)
    opened = getattr(TensorDict, f"from_{backend.name}")(path)
    for stored in (written, opened):
        assert stored["d"] == "top" and stored["meta", "description"] == "a dataset"
        assert stored["meta"]["description"] == "a dataset"
        assert stored["tags"] == ["w", "x", "y", "z"]
        assert isinstance(stored.get("d"), NonTensorData) and stored.get("d").data == "top"
        assert isinstance(stored["a"], torch.Tensor)
    written.close()
    opened.close()


def test_per_element_values_stay_per_element(tmp_path: Path, backend: Backend) -> None:
    """A stack of Python values is written one value per element, even when they are
    ``==``, as a folder saves it (README "HDF5 files keep their batch size and their
    strings"; the peer's file writers write the stack's ``.data``, so the peer's own
    ``test_h5_nontensor`` / ``test_zarr_nontensor`` read ``expand(10)["c"]`` as one
    value and ``[1, True]`` as ``1`` twice)."""
    source = TensorDict({"c": "a string!", "n": {"e": "x"}}, []).expand(3)
    source["v"] = NonTensorData(1, batch_size=[3])
    source["mixed"] = NonTensorStack(1, True, 1.0)
    path = tmp_path / f"v.{backend.name}"
    written = getattr(source, f"to_{backend.name}")(path)
    written.close()
    opened = getattr(TensorDict, f"from_{backend.name}")(path)
    assert opened["c"] == ["a string!"] * 3 and opened["n", "e"] == ["x"] * 3
    assert opened["v"] == 1 and opened.get("v").batch_size == (3,)  # one value stays one
    assert [(type(v), v) for v in opened["mixed"]] == [(int, 1), (bool, True), (float, 1.0)]
    assert opened[1]["c"] == "a string!" and opened.get("c").batch_size == (3,)
    opened.close()


def test_stacks_of_one_value_stay_per_element(tmp_path: Path, backend: Backend) -> None:
    """A stack whose elements all hold one value (a record's str field after
    ``torch.stack(x.unbind(1), 1)``, ``NonTensorStack("a")``) reads back a stack, over
    the batch size, as a folder loads it in both libraries (programs 15,610,223 L12 and
    15,620,244 L8 of features,index,shape,combine; the peer's store writes ``.data``)."""
    source = TensorDict({"x": torch.zeros(3, 4), "label": ""}, [3, 4])
    source = torch.stack(source.unbind(1), 1)
    source["s"] = NonTensorStack(*(NonTensorStack("a", "a", "a", "a") for _ in range(3)))
    assert isinstance(source.get("label"), NonTensorStack)
    path = target(tmp_path, backend, "one")
    getattr(source, f"to_{backend.name}")(path).close()
    opened = getattr(TensorDict, f"from_{backend.name}")(path)
    loaded = TensorDict.load_memmap(source.memmap(tmp_path / "folder").saved_path)
    for read in (opened.to_tensordict(), loaded):
        for key, value in (("label", ""), ("s", "a")):
            stack = read.get(key)
            assert isinstance(stack, NonTensorStack) and stack.batch_size == (3, 4)
            assert stack.tolist() == [[value] * 4] * 3
    opened.close()


def test_rename_key_takes_nested_keys(tmp_path: Path, backend: Backend) -> None:
    """``rename_key_`` within a group moves the entry, into another group (made on the
    way) writes it there and deletes it, as a TensorDict's does; ``safe`` refuses a key
    already present, and a missing key is a KeyError that changes nothing."""
    source = TensorDict(
        {"a": torch.arange(12.0).reshape(3, 4), "b": {"c": torch.ones(3, 4, 5)}}, [3, 4]
    )
    stored = getattr(source, f"to_{backend.name}")(tmp_path / f"r.{backend.name}")
    stored.rename_key_("a", ("b", "a2"))
    stored.rename_key_(("b", "a2"), ("b", "a3"))  # within one nested group
    stored.rename_key_(("b", "a3"), ("x", "y", "z"))
    stored.rename_key_("b", ("n", "b"))  # a group into a new one
    assert set(stored.keys(True, True)) == {("n", "b", "c"), ("x", "y", "z")}
    assert torch.equal(stored["x", "y", "z"], source["a"])
    assert torch.equal(stored["n", "b", "c"], source["b", "c"])
    with pytest.raises(KeyError, match="already present"):
        stored.rename_key_(("x", "y", "z"), ("n", "b", "c"), safe=True)
    with pytest.raises(KeyError, match="'nope' was not found"):
        stored.rename_key_("nope", ("q", "r"))
    assert "q" not in stored.keys()
    stored.rename_key_(("x", "y", "z"), ("n", "b", "c"))  # replaces it
    assert torch.equal(stored["n", "b", "c"], source["a"])
    stored.close()
    reopened = getattr(TensorDict, f"from_{backend.name}")(tmp_path / f"r.{backend.name}")
    assert torch.equal(reopened["n", "b", "c"], source["a"])
    reopened.close()


def test_auto_batch_size_infers_over_a_saved_batch_size(tmp_path: Path, backend: Backend) -> None:
    """``from_h5`` / ``from_zarr`` open with the saved batch sizes; ``auto_batch_size=True``
    infers each group's from its entries instead (at most ``batch_dims`` dims), as the
    peer's."""
    source = TensorDict({"a": torch.zeros(3, 4), "n": {"b": torch.zeros(3, 4, 5)}}, [3, 4])
    path = tmp_path / f"b.{backend.name}"
    getattr(source, f"to_{backend.name}")(path).close()
    opened = getattr(TensorDict, f"from_{backend.name}")
    for options, top, nested in (
        ({}, [3, 4], [3, 4]),
        ({"auto_batch_size": True}, [3, 4], [3, 4, 5]),
        ({"auto_batch_size": True, "batch_dims": 1}, [3], [3]),
    ):
        stored = opened(path, **options)
        assert stored.batch_size == torch.Size(top), options
        assert stored["n"].batch_size == torch.Size(nested), options
        stored.close()


def test_dim_names_are_recorded_in_the_store(tmp_path: Path, backend: Backend) -> None:
    """The dim names a collection is written with, and names assigned to a store open for
    writing, are in its metadata (the peer's zarr attribute holds them too): opening it
    again gives them, its groups included."""
    source = TensorDict({"a": torch.zeros(3, 4), "n": {"b": torch.zeros(3, 4, 5)}}, [3, 4])
    source.names = ["x", "y"]
    path = tmp_path / f"n.{backend.name}"
    written = getattr(source, f"to_{backend.name}")(path)
    assert written.names == ["x", "y"] and written["n"].names == ["x", "y"]
    written.close()
    opened = getattr(TensorDict, f"from_{backend.name}")
    reopened = opened(path, mode="r+")
    assert reopened.names == ["x", "y"] and reopened["n"].names == ["x", "y"]
    reopened.names = ["u", None]
    reopened.close()
    again = opened(path)
    assert again.names == ["u", None] and again["n"].names == ["u", None]
    again.names = ["w", "z"]  # open for reading: in memory only
    again.close()
    assert opened(path).names == ["u", None]
    inferred = opened(path, auto_batch_size=True, batch_dims=1)  # names of 2 dims: not these
    assert inferred.names == [None]
    inferred.close()
