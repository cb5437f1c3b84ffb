"""The peer's module-level surface: ``tclass.utils``, ``tclass.functional`` and the helpers
at the top level (keys, dtype predicates, ``assert_close``, ``collate``, ``group_by``,
print options), with the peer's results and errors."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from collections import namedtuple
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader, Subset

import tclass
from tclass import TensorDict
from tclass._io.memmap import _write
from tclass.errors import ArgumentValueError, TclassError

# --- the modules ---------------------------------------------------------------------

# What `import tclass` must leave unimported: torch's compiler front end (over a second;
# imported by the first torch.compile) and every optional extra (imported by first use).
NOT_IMPORTED = [
    "torch._dynamo", "torch._inductor", "h5py", "pandas", "pyarrow", "safetensors",
    "jaxtyping", "zarr", "ray", "hypothesis", "streaming", "tqdm", "annotated_types",
]  # fmt: skip


def test_version_is_pyprojects() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    assert tclass.__version__ == tomllib.loads(pyproject.read_text())["project"]["version"]


def test_import_tclass_imports_neither_dynamo_nor_the_optional_extras() -> None:
    """Nor does ``import tclass.ray``: its functions import Ray when called."""
    script = (
        "import json, sys; import tclass, tclass.ray; "
        f"print(json.dumps([m for m in {NOT_IMPORTED!r} if m in sys.modules]))"
    )
    root = Path(tclass.__file__).parents[1]  # the tclass under test, first on sys.path
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=root
    )
    assert json.loads(result.stdout) == []


def test_import_tclass_starts_no_child_process() -> None:
    """``ctypes.util.find_library`` at import ran ``ldconfig`` in a forked interpreter
    (about 20 ms of every ``import tclass``); libc's ``renameat2`` is looked up on first use."""
    script = (
        "import subprocess, torch; started = []; "
        "subprocess.Popen.__init__ = lambda self, *a, **k: started.append(a); "
        "import tclass; print(len(started))"
    )
    root = Path(tclass.__file__).parents[1]
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=root
    )
    assert result.stdout.split() == ["0"]


def test_renameat2_found_on_first_use() -> None:
    assert _write._renameat2() is _write._renameat2()  # looked up once
    assert _write._renameat2() is not None  # glibc's, in the loaded symbols


UTILS = [
    "KEY_SEPARATOR", "DeviceType", "IndexType", "NestedKey", "TensorDictFuture",
    "assert_allclose_td", "assert_close", "capture_non_tensor_stack", "default_is_leaf",
    "expand_as_right", "expand_right", "get_printoptions", "is_bool", "is_floating",
    "is_inexact", "is_integer", "is_leaf_nontensor", "is_non_tensor", "is_tensorclass", "isin",
    "lazy_legacy", "list_to_stack", "logger", "parse_tensor_dict_string", "print_directory_tree",
    "remove_duplicates", "set_capture_non_tensor_stack", "set_lazy_legacy",
    "set_list_to_stack", "set_printoptions", "unravel_key", "unravel_key_list",
    "unravel_key_to_tuple",
]  # fmt: skip
FUNCTIONAL = [
    "collate", "default_collate", "dense_stack_tds", "group_by", "make_tensordict",
    "merge_tensordicts", "pad", "pad_sequence", "unpad_sequence",
]  # fmt: skip


@pytest.mark.parametrize("name", UTILS)
def test_utils_has_the_peers_helpers(name: str) -> None:
    from tclass import utils

    assert getattr(utils, name) is not None
    assert name in utils.__all__


def test_utils_logger_is_tclass_logger_and_logs() -> None:
    import logging

    from tclass import utils

    assert utils.logger is logging.getLogger("tclass")
    seen: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: seen.append(record.getMessage())  # type: ignore[method-assign]
    utils.logger.addHandler(handler)
    try:
        utils.logger.warning("first call to vmap")
    finally:
        utils.logger.removeHandler(handler)
    assert seen == ["first call to vmap"]


def test_utils_deprecated_helper_warns_on_lookup() -> None:
    """As the peer's: the deprecated helper warns when looked up, is left out of
    ``__all__`` (a star import stays quiet), and an unknown name is an AttributeError."""
    from tclass import utils

    with pytest.warns(DeprecationWarning, match="convert_ellipsis_to_idx"):
        assert callable(utils.convert_ellipsis_to_idx)
    assert "convert_ellipsis_to_idx" not in utils.__all__
    with pytest.raises(AttributeError, match="no_such_helper"):
        _ = utils.no_such_helper


def test_utils_deprecated_dtype_tables_map_numpy_and_torch_dtypes() -> None:
    from tclass import utils

    with pytest.warns(DeprecationWarning, match="NUMPY_TO_TORCH_DTYPE_DICT"):
        to_torch = utils.NUMPY_TO_TORCH_DTYPE_DICT
    with pytest.warns(DeprecationWarning, match="TORCH_TO_NUMPY_DTYPE_DICT"):
        to_numpy = utils.TORCH_TO_NUMPY_DTYPE_DICT
    assert to_torch[np.dtype("float32")] is torch.float32 and len(to_torch) == 14
    assert to_numpy == {dtype: np_dtype for np_dtype, dtype in to_torch.items()}
    for np_dtype, dtype in to_torch.items():  # each pair is what the libraries convert to
        assert torch.from_numpy(np.zeros(2, dtype=np_dtype)).dtype is dtype
    assert "NUMPY_TO_TORCH_DTYPE_DICT" not in utils.__all__


def test_utils_json_backend_switch_is_the_peers_deprecated_helper() -> None:
    from tclass import utils

    with pytest.warns(DeprecationWarning, match="set_json_backend"):
        set_json_backend = utils.set_json_backend
    with pytest.warns(DeprecationWarning, match="get_json_backend"):
        get_json_backend = utils.get_json_backend
    with pytest.warns(DeprecationWarning, match="json_dumps"):
        json_dumps = utils.json_dumps
    set_json_backend("json")
    assert get_json_backend() is json
    assert json_dumps({"a": [1, 2]}, separators=(",", ":")) == '{"a":[1,2]}'
    with pytest.raises(ArgumentValueError, match="'json' or 'orjson', got 'yaml'"):
        set_json_backend("yaml")
    assert isinstance(ArgumentValueError("x"), ValueError)  # the peer's ValueError
    assert get_json_backend() is json  # a refused backend leaves the one set
    assert "set_json_backend" not in utils.__all__


def test_utils_implement_for_keeps_the_definition_whose_version_range_fits() -> None:
    """The peer's deprecated version switch: each definition of a name gives a version
    range of a module; the name is bound to the one that fits what is installed, whatever
    the order, and to an error when none fits or the module is missing."""
    from tclass import utils

    with pytest.warns(DeprecationWarning, match="implement_for"):
        implement_for = utils.implement_for
    assert "implement_for" not in utils.__all__

    class Versions:
        @implement_for("torch", "2.3")
        def which(self) -> str:
            return "2.3 and later"

        @implement_for("torch", None, "2.3")  # defined after, does not fit: the first stays
        def which(self) -> str:  # noqa: F811
            return "before 2.3"

        @implement_for(lambda: torch, "1.0", class_method=True)
        def of(cls) -> type:
            return cls

    assert Versions().which() == "2.3 and later" and Versions.of() is Versions

    @implement_for("torch", None, "1.0")
    def old() -> None: ...

    @implement_for("no_such_module_anywhere", "1.0")
    def missing() -> None: ...

    for fn in (old, missing):
        with pytest.raises(ModuleNotFoundError, match="no implementation of .* fits"):
            fn()


@pytest.mark.parametrize("name", FUNCTIONAL)
def test_functional_has_the_peers_functions(name: str) -> None:
    from tclass import functional

    assert callable(getattr(functional, name))


def test_top_level_and_module_names_are_the_same_objects() -> None:
    from tclass import functional, utils

    assert tclass.utils is utils and tclass.functional is functional
    assert utils.assert_close is tclass.assert_close is tclass.assert_allclose_td
    assert functional.pad_sequence is tclass.pad_sequence
    assert utils.unravel_key is tclass.unravel_key


@pytest.mark.peer
def test_no_public_helper_of_the_peers_modules_is_missing() -> None:
    """Every function or class the peer defines in ``tensordict.utils`` and
    ``tensordict.functional`` exists under the same name, save the ones the README lists
    as left out."""
    pytest.importorskip("tensordict")
    import tensordict.functional as peer_functional
    import tensordict.utils as peer_utils

    left_out = {"deprecated_attributes", "deprecation_message"}
    left_out |= {"warn_deprecated", "T"}
    for peer, mine in ((peer_utils, tclass.utils), (peer_functional, tclass.functional)):
        theirs = {
            name
            for name in dir(peer)
            if not name.startswith("_")
            and str(getattr(getattr(peer, name), "__module__", "")).startswith("tensordict")
            and not isinstance(getattr(peer, name), type(peer))
        }
        assert sorted(theirs - set(dir(mine)) - left_out) == []


def test_timeit_accumulates_per_name(caplog: pytest.LogCaptureFixture) -> None:
    from tclass.utils import timeit

    timeit.erase()

    @timeit("step")
    def step(x: int) -> int:
        return x + 1

    assert step(1) == 2 and step.__name__ == "step"
    with timeit("block"):
        step(2)
    mean, total, count = timeit._REG["step"]
    assert count == 2 and total >= mean > 0
    assert timeit._REG["block"][2] == 1
    with caplog.at_level("INFO", logger="tclass"):
        timeit.print(prefix="train")
    assert "train -- block took" in caplog.text and "step took" in caplog.text
    timeit.erase()
    assert timeit._REG["step"] == [0.0, 0.0, 0]


# --- keys ----------------------------------------------------------------------------


def test_nested_key_isinstance() -> None:
    from tclass import NestedKey

    assert isinstance("a", NestedKey) and isinstance(("a", ("b",)), NestedKey)
    assert not isinstance(("a", 1), NestedKey) and not isinstance((), NestedKey)
    assert not isinstance(1, NestedKey)
    with pytest.raises(TypeError):
        NestedKey()


def test_unravel_key_follows_the_peer() -> None:
    assert tclass.unravel_key("a") == "a"
    assert tclass.unravel_key(("a",)) == "a"
    assert tclass.unravel_key(("a", ("b", ("c",)))) == ("a", "b", "c")
    assert tclass.unravel_key(("a", 1)) == ()
    with pytest.raises(RuntimeError, match="Sequence<NestedKey>") as info:
        tclass.unravel_key(1)
    assert isinstance(info.value, TclassError)
    assert tclass.unravel_key_to_tuple("a") == ("a",)
    assert tclass.unravel_key_to_tuple(("a", ("b",))) == ("a", "b")
    assert tclass.unravel_key_to_tuple(("a", 1)) == () == tclass.unravel_key_to_tuple(1)
    assert tclass.unravel_key_list(["a", ("b",), ("c", ("d",))]) == ["a", "b", ("c", "d")]
    with pytest.raises(TypeError, match="list or a tuple"):
        tclass.unravel_key_list("a")
    with pytest.raises(RuntimeError):
        tclass.unravel_key_list(["a", ("b", 2)])
    assert tclass.KEY_SEPARATOR == "."


# --- predicates ----------------------------------------------------------------------


def test_dtype_predicates_take_the_last_argument() -> None:
    floats, ints = torch.zeros(2), torch.zeros(2, dtype=torch.uint8)
    bools, complexes = torch.zeros(2, dtype=torch.bool), torch.zeros(2, dtype=torch.complex64)
    assert tclass.is_floating(floats) and not tclass.is_floating("k", complexes)
    assert tclass.is_integer(ints) and not tclass.is_integer(bools)
    assert not tclass.is_integer("k", floats)
    assert tclass.is_bool("mask", bools) and not tclass.is_bool(floats)
    assert tclass.is_inexact(complexes) and not tclass.is_inexact(ints)
    td = TensorDict(x=torch.zeros(3), i=torch.zeros(3, dtype=torch.long), batch_size=[3])
    half = td.half(cast_filter=tclass.is_floating)
    assert half["x"].dtype == torch.float16 and half["i"].dtype == torch.int64


def test_leaf_predicates() -> None:
    td = TensorDict(a={}, b="a string!", c=torch.zeros(()))
    assert list(td.keys(leaves_only=True, is_leaf=tclass.default_is_leaf)) == ["c"]
    assert sorted(td.keys(leaves_only=True, is_leaf=tclass.is_leaf_nontensor)) == ["b", "c"]
    assert tclass.is_leaf_nontensor(tclass.NonTensorStack)
    assert not tclass.is_leaf_nontensor(TensorDict) and not tclass.is_leaf_nontensor(int)
    assert tclass.default_is_leaf(torch.Tensor) and not tclass.default_is_leaf(TensorDict)


def test_tensor_collection_is_the_base_of_every_collection() -> None:
    @tclass.tensorclass
    class Row:
        x: torch.Tensor

    assert isinstance(TensorDict(), tclass.TensorCollection)
    assert isinstance(Row(x=torch.zeros(2), batch_size=[2]), tclass.TensorCollection)
    assert isinstance(tclass.lazy_stack([TensorDict()]), tclass.TensorCollection)
    assert not isinstance(torch.zeros(2), tclass.TensorCollection)


# --- assert_close --------------------------------------------------------------------


def test_assert_close_passes_and_fails_as_the_peer() -> None:
    a = TensorDict(x=torch.zeros(3), y=torch.ones(3), s="text")
    assert tclass.assert_close(a, a.clone()) is True
    b = TensorDict(x=torch.full((3,), 0.01), y=torch.ones(3), s="other")
    assert tclass.assert_close(a, b, atol=0.1, rtol=0) is True
    with pytest.raises(AssertionError, match=r"key \('x',\) does not match, got mse = 0.0100"):
        tclass.assert_close(a, b)
    with pytest.raises(AssertionError, match="extra words"):
        tclass.assert_close(a, b, msg="extra words")
    with pytest.raises(KeyError, match="The first TD has keys {'y'}"):
        tclass.assert_close(a, TensorDict(x=torch.zeros(3), s="a"))
    assert tclass.assert_close(a, TensorDict(x=torch.zeros(3)), intersection=True)
    with pytest.raises(TypeError, match="must be of TensorDict type"):
        tclass.assert_close(a, torch.zeros(3))


def test_assert_close_nested_records_and_lazy_stacks() -> None:
    @tclass.tensorclass
    class Row:
        x: torch.Tensor

    nested = TensorDict(n=TensorDict(v=torch.ones(2)))
    other = TensorDict(n=TensorDict(v=torch.tensor([1.0, 2.0])))
    with pytest.raises(AssertionError, match=r"key \('n', 'v'\) does not match"):
        tclass.assert_close(nested, other)
    row = Row(x=torch.zeros(2), batch_size=[2])
    assert tclass.assert_close(row, row.clone())
    lazy = tclass.lazy_stack([TensorDict(x=torch.zeros(2)), TensorDict(x=torch.zeros(3))])
    assert tclass.assert_close(lazy, lazy.clone())
    changed = tclass.lazy_stack([TensorDict(x=torch.zeros(2)), TensorDict(x=torch.ones(3))])
    with pytest.raises(AssertionError):
        tclass.assert_close(lazy, changed)
    with pytest.raises(AssertionError):  # dtypes are compared too, as torch does
        tclass.assert_close(TensorDict(x=torch.zeros(2)), TensorDict(x=torch.zeros(2).double()))


# --- collate and group_by ------------------------------------------------------------


def test_collate_in_a_data_loader() -> None:
    samples = [(TensorDict(x=torch.full((3,), float(i))), i) for i in range(10)]
    td, label = next(iter(DataLoader(samples, batch_size=4, collate_fn=tclass.collate)))
    assert td.batch_size == torch.Size([4]) and label.tolist() == [0, 1, 2, 3]
    assert td["x"][:, 0].tolist() == [0.0, 1.0, 2.0, 3.0]
    clouds = [TensorDict(points=torch.randn(n, 3)) for n in (5, 2, 7, 3)]
    batch = next(iter(DataLoader(clouds, batch_size=4, collate_fn=tclass.collate)))
    assert isinstance(batch, tclass.LazyStackedTensorDict) and batch.batch_size == (4,)
    assert tclass.collate(TensorDict(a=torch.zeros(2), batch_size=[2])).batch_size == (2,)
    assert tclass.collate([]) == []


def _rows(batches: list[Any]) -> list[list[int]]:
    return [batch["a"].tolist() for batch in batches]


def test_a_data_loader_fetches_each_batch_as_one_collection(tmp_path: Path) -> None:
    # as the peer: __getitems__ gives the rows at once, so even collate_fn=lambda x: x
    # yields one collection of the dataset's kind per batch (the last one partial)
    td = TensorDict({"a": torch.arange(10), "b": {"c": torch.ones(10, 2)}, "s": "x"}, [10])
    lazy = tclass.lazy_stack(
        [TensorDict(a=torch.tensor(i), v=torch.zeros(i % 3)) for i in range(10)]
    )
    saved = td.memmap(tmp_path / "td")
    for data, kind in ((td, TensorDict), (lazy, tclass.LazyStackedTensorDict), (saved, TensorDict)):
        for collate_fn in (lambda x: x, None):  # None: torch's default collate
            batches = list(DataLoader(data, batch_size=4, collate_fn=collate_fn))
            assert all(type(batch) is kind for batch in batches)
            assert _rows(batches) == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
        sampled = list(
            DataLoader(data, batch_size=4, sampler=[9, 1, 3, 2, 0], collate_fn=lambda x: x)
        )
        assert _rows(sampled) == [[9, 1, 3, 2], [0]] and type(sampled[1]) is kind
        shuffled = list(DataLoader(data, batch_size=4, shuffle=True, collate_fn=lambda x: x))
        assert sorted(sum(_rows(shuffled), [])) == list(range(10))
    batch = saved.__getitems__([7, 2])
    assert not batch.is_memmap() and not batch.is_locked and batch["s"] == "x"  # rows read out
    assert lazy.__getitems__(torch.tensor([5]))[0]["v"].shape == (2,)
    subset = next(iter(DataLoader(Subset(td, [5, 6, 7]), batch_size=2, collate_fn=lambda x: x)))
    assert type(subset) is TensorDict and subset["a"].tolist() == [5, 6]


def test_collate_mappings_namedtuples_records() -> None:
    @tclass.tensorclass
    class Row:
        x: torch.Tensor

    pair = namedtuple("pair", "row label")
    batch = tclass.collate([pair(Row(x=torch.zeros(2)), 1), pair(Row(x=torch.ones(2)), 2)])
    assert type(batch) is pair and isinstance(batch.row, Row)
    assert batch.row.batch_size == (2,) and batch.label.tolist() == [1, 2]
    mapping = tclass.collate([{"a": torch.zeros(1)}, {"a": torch.ones(1)}])
    assert mapping["a"].shape == (2, 1)


def test_collate_pads_and_nests_named_keys() -> None:
    samples = [
        TensorDict(
            ids=torch.ones(n, dtype=torch.long),
            labels=torch.ones(n, dtype=torch.long),
            points=torch.randn(n + 1, 3),
            score=torch.tensor(float(n)),
        )
        for n in (2, 3)
    ]
    collate_fn = functools.partial(
        tclass.collate, pad_keys={"ids": 7, "labels": -100}, nested_keys=["points"],
        mask_key="mask",
    )  # fmt: skip
    batch = collate_fn(samples)
    assert batch["ids"].tolist() == [[1, 1, 7], [1, 1, 1]]
    assert batch["labels"].tolist() == [[1, 1, -100], [1, 1, 1]]
    assert batch["mask", "ids"].tolist() == [[True, True, False], [True, True, True]]
    assert batch["points"].is_nested and batch["score"].tolist() == [2.0, 3.0]


def test_collate_errors() -> None:
    samples = [TensorDict(a=torch.zeros(2)), TensorDict(a=torch.zeros(3))]
    with pytest.raises(ValueError, match="no pad_keys"):
        tclass.collate(samples, mask_key="m")
    with pytest.raises(ValueError, match="both pad_keys and nested_keys"):
        tclass.collate(samples, pad_keys={"a": 0}, nested_keys=["a"])
    with pytest.raises(KeyError, match="a sample lacks"):
        tclass.collate(samples, pad_keys={"b": 0})
    with pytest.raises(ValueError, match="entry of a sample"):
        tclass.collate(samples, pad_keys={"a": 0}, mask_key="a")
    batched = [TensorDict(a=torch.zeros(2, 2), batch_size=[2])] * 2
    with pytest.raises(ValueError, match="batch dim"):
        tclass.collate(batched, pad_keys={"a": 0})


def test_group_by_tensor_and_python_values() -> None:
    td = TensorDict(uid=torch.tensor([2, 0, 2, 1, 0]), reward=torch.arange(5.0), batch_size=[5])
    values, groups = tclass.group_by(td, "uid")
    assert values.tolist() == [0, 1, 2]
    assert [group["reward"].tolist() for group in groups] == [[1.0, 4.0], [3.0], [0.0, 2.0]]
    named = TensorDict(s=["b", "a", "b"], r=torch.arange(3.0), batch_size=[3])
    values, groups = tclass.group_by(named, "s")
    assert values == ["a", "b"] and [g["r"].tolist() for g in groups] == [[1.0], [0.0, 2.0]]
    rows = TensorDict(v=torch.tensor([[1, 2], [0, 0], [1, 2]]), batch_size=[3])
    values, groups = tclass.group_by(rows, "v")
    assert values.tolist() == [[0, 0], [1, 2]] and [len(g) for g in groups] == [1, 2]
    with pytest.raises(ValueError, match="has none"):
        tclass.group_by(TensorDict(a=torch.zeros(())), "a")
    with pytest.raises(KeyError):
        tclass.group_by(td, "missing")
    with pytest.raises(TypeError, match="tensor or Python-value entry"):
        tclass.group_by(TensorDict(n=TensorDict(batch_size=[2]), batch_size=[2]), "n")


@pytest.mark.peer
def test_group_by_and_collate_agree_with_the_peer() -> None:
    tensordict = pytest.importorskip("tensordict")
    data = {"uid": torch.tensor([3, 1, 3, 2]), "r": torch.arange(4.0)}
    mine = tclass.group_by(TensorDict(data, batch_size=[4]), "uid")
    theirs = tensordict.group_by(tensordict.TensorDict(data, batch_size=[4]), "uid")
    assert mine[0].tolist() == theirs[0].tolist()
    assert [g["r"].tolist() for g in mine[1]] == [g["r"].tolist() for g in theirs[1]]


# --- the peer's submodule paths ------------------------------------------------------


def test_submodule_imports_of_the_peer() -> None:
    from tclass.base import TensorDictBase, from_dict, is_tensor_collection
    from tclass.memmap import MemoryMappedTensor
    from tclass.persistent import PersistentTensorDict
    from tclass.tensorclass import NonTensorData, NonTensorStack, TensorClass
    from tclass.tensordict import LazyStackedTensorDict
    from tclass.tensordict import TensorDict as CompatTensorDict

    assert TensorDictBase is tclass.TensorDictBase and from_dict is tclass.from_dict
    assert is_tensor_collection is tclass.is_tensor_collection
    assert MemoryMappedTensor is tclass.MemoryMappedTensor
    assert PersistentTensorDict is tclass.PersistentTensorDict
    assert NonTensorData is tclass.NonTensorData and NonTensorStack is tclass.NonTensorStack
    assert TensorClass is tclass.TensorClass and CompatTensorDict is TensorDict
    assert LazyStackedTensorDict is tclass.LazyStackedTensorDict
    from tclass.tensorclass import NonTensorDataBase
    from tclass.typedtensordict import TypedTensorDict

    assert TypedTensorDict is tclass.TypedTensorDict
    assert isinstance(tclass.MetaData("m"), NonTensorDataBase)
    assert isinstance(tclass.NonTensorData("d"), tclass.NonTensorDataBase)
    assert not isinstance(tclass.NonTensorStack("a", "b"), NonTensorDataBase)


def test_function_attributes_survive_their_modules() -> None:
    """``tclass.tensorclass`` and ``tclass.memmap`` stay the functions, as in the peer,
    after their modules of the same name are imported."""
    import importlib

    importlib.import_module("tclass.tensorclass")
    importlib.import_module("tclass.memmap")

    @tclass.tensorclass
    class Row:
        x: torch.Tensor

    assert Row(x=torch.zeros(2), batch_size=[2]).batch_size == (2,)
    assert callable(tclass.memmap) and not isinstance(tclass.memmap, type(tclass))
