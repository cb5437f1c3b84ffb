"""Saving to and loading from memory-mapped folders: round trips, the memmap family's
rules (seed 02), loading options (seed 05), class resolution and pickle safety."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
import torch

import tclass
from tclass import (
    LazyStackedTensorDict,
    MemoryMappedTensor,
    NonTensorData,
    NonTensorStack,
    TensorDict,
)
from tclass._base._tensordict_base import TensorDictBase
from tclass.errors import (
    ClassMismatchError,
    ClassResolutionError,
    FileConflictError,
    LockedError,
    MetadataError,
    MissingFileError,
    NotSerializableError,
    PickleRefusedError,
    ShapeError,
    UnsupportedError,
)


@tclass.tensorclass
class Inner:
    z: torch.Tensor


@tclass.tensorclass
class Step:
    obs: torch.Tensor
    name: str
    inner: Inner
    extra: torch.Tensor | None = None


class Frame(tclass.TensorClass, frozen=True):
    pixels: torch.Tensor
    tag: str


def _nested() -> TensorDict:
    return TensorDict(
        {
            "a": torch.arange(6.0).reshape(3, 2),
            "next": {
                "reward": torch.tensor([1, 2, 3]),
                "deeper": {"flag": torch.tensor([True, False, True])},
            },
            "label": NonTensorData("pong", batch_size=[3]),
        },
        batch_size=[3],
    )


def _step() -> Step:
    inner = Inner(torch.tensor([7, 8]), batch_size=[2])
    return Step(torch.arange(6.0).reshape(2, 3), "walker", inner, batch_size=[2])


def _leaves(collection: Any) -> dict[Any, torch.Tensor]:
    return dict(collection.items(include_nested=True, leaves_only=True))


def _assert_same(loaded: Any, original: Any) -> None:
    assert loaded.batch_size == original.batch_size
    mine, theirs = _leaves(loaded), _leaves(original)
    assert mine.keys() == theirs.keys()
    for key, value in theirs.items():
        assert mine[key].dtype == value.dtype and torch.equal(mine[key], value), key


# --- round trips ---------------------------------------------------------------------------


def test_nested_tensordict_round_trip(tmp_path: Path) -> None:
    td = _nested()
    saved = td.memmap(tmp_path / "td")
    loaded = TensorDict.load_memmap(tmp_path / "td")
    for result in (saved, loaded):
        _assert_same(result, td)
        assert result.get("label").data == "pong"
        assert all(isinstance(leaf, MemoryMappedTensor) for leaf in _leaves(result).values())
    assert loaded["a"].filename == str(tmp_path / "td" / "a.memmap")
    assert loaded["next", "deeper", "flag"].filename == str(
        tmp_path / "td" / "next" / "deeper" / "flag.memmap"
    )


def test_layout_is_the_peers(tmp_path: Path) -> None:
    # Seed 02: one .memmap per leaf, one folder (with meta.json) per nested collection.
    td = TensorDict({"a": torch.rand(10), "b": {"c": torch.rand(10)}}, [10])
    td.memmap_(prefix=tmp_path / "tensordict")
    files = sorted(str(p.relative_to(tmp_path)) for p in (tmp_path / "tensordict").rglob("*"))
    assert files == [
        "tensordict/a.memmap",
        "tensordict/b",
        "tensordict/b/c.memmap",
        "tensordict/b/meta.json",
        "tensordict/meta.json",
    ]
    meta = json.loads((tmp_path / "tensordict" / "meta.json").read_text())
    assert meta["a"] == {
        "device": "cpu",
        "shape": [10],
        "dtype": "torch.float32",
        "is_nested": False,
    }
    assert meta["b"] == {"type": "TensorDict"} and meta["shape"] == [10]
    assert meta["_class"] == "tensordict:TensorDict" and meta["_format_version"] == 1


def test_tensorclass_round_trip(tmp_path: Path) -> None:
    step = _step()
    step.memmap(tmp_path / "step")
    loaded = Step.load_memmap(tmp_path / "step")
    assert type(loaded) is Step and type(loaded.inner) is Inner
    assert loaded.name == "walker" and loaded.extra is None
    assert torch.equal(loaded.obs, step.obs) and torch.equal(loaded.inner.z, step.inner.z)
    assert json.loads((tmp_path / "step" / "meta.json").read_text()) == {
        "_type": f"<class '{__name__}.Step'>"
    }
    assert (tmp_path / "step" / "_tensordict" / "obs.memmap").is_file()
    assert type(tclass.load_memmap(tmp_path / "step")) is Step
    assert type(TensorDictBase.load_memmap(tmp_path / "step")) is Step


def test_frozen_tensorclass_round_trip(tmp_path: Path) -> None:
    frame = Frame(torch.ones(2, 4, dtype=torch.uint8), "cam0", batch_size=[2])
    frame.memmap(tmp_path / "f")
    loaded = Frame.load_memmap(tmp_path / "f")
    assert loaded.tag == "cam0" and loaded.is_locked
    with pytest.raises(dataclasses.FrozenInstanceError):
        loaded.tag = "other"


def test_dense_stack_of_records_with_different_strings(tmp_path: Path) -> None:
    steps = [Step(torch.zeros(3), name, Inner(torch.tensor(i))) for i, name in enumerate("ab")]
    stacked = torch.stack(steps)
    stacked.memmap(tmp_path / "s")
    loaded = Step.load_memmap(tmp_path / "s")
    assert loaded.name == ["a", "b"] and loaded[1].name == "b"
    assert torch.equal(loaded.inner.z, torch.tensor([0, 1]))


def test_lazy_stack_round_trip(tmp_path: Path) -> None:
    lazy = tclass.lazy_stack(
        [TensorDict(a=torch.ones(2)), TensorDict(a=torch.ones(3), b=torch.tensor(9))]
    )
    lazy.memmap(tmp_path / "lz")
    loaded = tclass.load_memmap(tmp_path / "lz")
    assert isinstance(loaded, LazyStackedTensorDict) and loaded.batch_size == torch.Size([2])
    assert loaded[1]["b"] == 9 and loaded[0]["a"].shape == (2,)
    meta = json.loads((tmp_path / "lz" / "meta.json").read_text())
    assert meta["_tclass"] == {"members": 2} and meta["stack_dim"] == 0


def test_lazy_stack_of_records_reads_as_the_class(tmp_path: Path) -> None:
    lazy = tclass.lazy_stack([Inner(torch.ones(2)), Inner(torch.ones(3))])
    lazy.memmap(tmp_path / "lz")
    loaded = Inner.load_memmap(tmp_path / "lz")
    assert type(loaded) is Inner and isinstance(loaded._tensordict, LazyStackedTensorDict)
    assert loaded[1].z.shape == (3,)


def test_fewer_members_resaved_over_more(tmp_path: Path) -> None:
    # The peer keeps a stale 2/ and loads 3 members (W6); a save replaces the whole folder.
    tclass.lazy_stack([TensorDict(a=torch.ones(1)) for _ in range(3)]).memmap(tmp_path / "lz")
    tclass.lazy_stack([TensorDict(a=torch.ones(1)) for _ in range(2)]).memmap(tmp_path / "lz")
    assert len(tclass.load_memmap(tmp_path / "lz").tensordicts) == 2
    assert sorted(os.listdir(tmp_path / "lz")) == ["0", "1", "meta.json"]


def test_extra_lazy_member_is_an_error(tmp_path: Path) -> None:
    tclass.lazy_stack([TensorDict(a=torch.ones(1)) for _ in range(2)]).memmap(tmp_path / "lz")
    os.mkdir(tmp_path / "lz" / "2")
    with pytest.raises(MetadataError, match="member folder 2/"):
        tclass.load_memmap(tmp_path / "lz")


def test_non_tensor_stack_round_trip(tmp_path: Path) -> None:
    td = TensorDict(
        {"names": NonTensorStack.from_list([["x", 1], None, {"k": [1.5]}])}, batch_size=[3]
    )
    td.memmap(tmp_path / "n")
    loaded = TensorDict.load_memmap(tmp_path / "n")
    assert loaded.get("names").tolist() == [["x", 1], None, {"k": [1.5]}]
    standalone = NonTensorStack.from_list(["a", "b"])
    standalone.memmap(tmp_path / "s")
    assert tclass.load_memmap(tmp_path / "s").tolist() == ["a", "b"]


@pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental")
@pytest.mark.parametrize("name", sorted(tclass._core._dtypes.DTYPES))
def test_every_dtype_round_trips(tmp_path: Path, name: str) -> None:
    dtype = tclass._core._dtypes.DTYPES[name]
    source = (
        torch.tensor([1, 0, 1], dtype=torch.uint8).to(dtype)
        if dtype.is_floating_point or dtype.is_complex or dtype == torch.bool
        else torch.tensor([1, 0, 3]).to(dtype)
    )
    TensorDict(x=source, batch_size=[3]).memmap(tmp_path / "d")
    loaded = TensorDict.load_memmap(tmp_path / "d")["x"]
    assert loaded.dtype == dtype
    assert torch.equal(loaded.view(torch.uint8), source.view(torch.uint8))


@pytest.mark.filterwarnings("ignore:torch.quantize_per_tensor")
@pytest.mark.parametrize("dtype", [torch.quint8, torch.bits8, torch.uint4])
def test_dtypes_without_a_file_form_are_refused_on_save(tmp_path: Path, dtype: torch.dtype) -> None:
    td = TensorDict(x=torch.empty(2, dtype=torch.uint8), batch_size=[2])
    td._tensors["x"] = (
        torch.empty(2, dtype=dtype)
        if dtype != torch.quint8
        else torch.quantize_per_tensor(torch.ones(2), 1.0, 0, dtype)
    )
    with pytest.raises(UnsupportedError, match="'x'"):
        td.memmap(tmp_path / "d")
    assert not (tmp_path / "d").exists()


def test_empty_leaf_has_no_file(tmp_path: Path) -> None:
    TensorDict(e=torch.zeros(3, 0), batch_size=[3]).memmap(tmp_path / "e")
    assert not (tmp_path / "e" / "e.memmap").exists()
    assert TensorDict.load_memmap(tmp_path / "e")["e"].shape == (3, 0)


@pytest.mark.parametrize(
    "key",
    [
        "shape",
        "device",
        "_type",
        "_class",
        "_format_version",
        "_names",
        "_tclass",
        "%shape",
        "%%device",
        "type",
    ],
)
def test_keys_named_like_node_fields_round_trip(tmp_path: Path, key: str) -> None:
    td = TensorDict(
        {key: torch.arange(3), "other": torch.ones(3), "nested": {key: {key: torch.zeros(3)}}},
        batch_size=[3],
    )
    td.memmap(tmp_path / "k")
    loaded = TensorDict.load_memmap(tmp_path / "k")
    assert set(loaded.keys(include_nested=True, leaves_only=True)) == {
        key,
        "other",
        ("nested", key, key),
    }
    assert torch.equal(loaded[key], torch.arange(3))


def test_keys_that_are_not_file_names(tmp_path: Path) -> None:
    keys = ["a/b", "..", ".", "", "sp ace", "é", "x%2F", "..dir"]
    td = TensorDict({key: torch.full((2,), float(i)) for i, key in enumerate(keys)}, batch_size=[2])
    td.memmap(tmp_path / "k")
    assert all(p.parent == tmp_path / "k" for p in (tmp_path / "k").iterdir())
    loaded = TensorDict.load_memmap(tmp_path / "k")
    for i, key in enumerate(keys):
        assert loaded[key][0] == i


# --- the memmap family ---------------------------------------------------------------------


def test_memmap_leaves_the_source_untouched(tmp_path: Path) -> None:
    td = _nested()
    saved = td.memmap(tmp_path / "td")
    assert saved.is_locked and saved.is_memmap() and not td.is_memmap() and not td.is_locked
    assert not isinstance(td.get("a"), MemoryMappedTensor)


def test_memmap_in_place_swaps_leaves_and_locks(tmp_path: Path) -> None:
    step = _step()
    returned = step.memmap_(tmp_path / "s")
    assert returned is step and step.is_locked and step.device == torch.device("cpu")
    assert isinstance(step.inner.z, MemoryMappedTensor) and step.is_memmap()
    step.obs[0, 0] = 42.0  # writes reach the file
    assert Step.load_memmap(tmp_path / "s").obs[0, 0] == 42.0
    with pytest.raises(LockedError):
        step.obs = torch.zeros(2, 3)


def test_a_saved_lazy_stack_is_memmap_even_ragged(tmp_path: Path) -> None:
    # The members' own leaves are checked (as the peer), not the dense stacks that
    # reading a key builds (a plain tensor, or an error for a ragged entry).
    members = [TensorDict(x=torch.zeros(n)) for n in (2, 3)]
    ragged = tclass.lazy_stack(members)
    assert not ragged.is_memmap()
    assert ragged.clone().memmap_(tmp_path / "r").is_memmap()
    even = tclass.lazy_stack([TensorDict(x=torch.zeros(3), batch_size=[3]) for _ in range(2)])
    saved = even.clone().memmap_(tmp_path / "e")
    assert type(saved) is LazyStackedTensorDict and saved.is_memmap()
    nested = TensorDict(s=ragged.clone(), y=torch.zeros(2), batch_size=[2])
    assert nested.memmap(tmp_path / "n").is_memmap()
    assert not TensorDict(s=ragged.clone(), y=torch.zeros(2), batch_size=[2]).is_memmap()


def test_loaded_leaves_write_through_and_index_rows(tmp_path: Path) -> None:
    TensorDict(x=torch.arange(10.0), batch_size=[10]).memmap(tmp_path / "w")
    loaded = TensorDict.load_memmap(tmp_path / "w")
    loaded["x"][3] = -1.0
    assert TensorDict.load_memmap(tmp_path / "w")["x"][3] == -1.0
    assert loaded["x"][torch.tensor([9, 0, 3])].tolist() == [9.0, 0.0, -1.0]


def test_memmap_like_allocates_without_writing(tmp_path: Path) -> None:
    datum = TensorDict(
        {
            "image": torch.randint(255, (3, 64, 64), dtype=torch.uint8),
            "label": NonTensorData("cat"),
        },
        batch_size=[],
    )
    like = datum.expand(1_000_000).memmap_like(tmp_path / "data")
    assert like.batch_size == torch.Size([1_000_000]) and like.get("label").data == "cat"
    stat = os.stat(tmp_path / "data" / "image.memmap")
    assert stat.st_size == 1_000_000 * 3 * 64 * 64 and stat.st_blocks * 512 < 1 << 20
    assert not like["image"][123].any()
    like["image"][5] = 7
    assert TensorDict.load_memmap(tmp_path / "data")["image"][5].eq(7).all()


@pytest.mark.parametrize("like", [False, True])
def test_a_save_opens_each_new_file_once_and_syncs_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, like: bool
) -> None:
    td = TensorDict({f"k{i}": torch.full((4, 3), float(i)) for i in range(16)}, [4])
    calls: dict[str, list[Any]] = {"open": [], "fsync": [], "rename": [], "replace": []}
    for name, seen in calls.items():
        real = getattr(os, name)

        def call(*args: Any, _real: Any = real, _seen: list[Any] = seen, **kwargs: Any) -> Any:
            _seen.append(args[0])
            return _real(*args, **kwargs)

        monkeypatch.setattr(os, name, call)
    saved = td.memmap_like(tmp_path / "td") if like else td.memmap(tmp_path / "td")
    opened = [os.path.basename(str(path)) for path in calls["open"]]
    # The staging folder (to lock it), each leaf file (created, written or sized, then
    # mapped by torch without another os.open), meta.json; one rename swaps the folder in.
    assert sorted(opened[1:]) == sorted([*(f"k{i}.memmap" for i in range(16)), "meta.json"])
    assert calls["fsync"] == [] and len(calls["rename"]) == 1 and calls["replace"] == []
    assert saved["k3"].filename == str(tmp_path / "td" / "k3.memmap")
    expected = torch.zeros(4, 3) if like else torch.full((4, 3), 3.0)
    assert torch.equal(TensorDict.load_memmap(tmp_path / "td")["k3"], expected)


def test_no_prefix_uses_shared_memory_and_reuses_mapped_leaves() -> None:
    # Seed 02: memmap() twice without a prefix gives the same tensors.
    td = TensorDict({"a": torch.tensor(1)}, [])
    td0 = td.memmap()
    td1 = td0.memmap()
    assert td0["a"] is td1["a"] and td0["a"].filename is None and td0.is_memmap()


def test_memmap_like_without_prefix_gives_new_zeros_for_mapped_leaves(tmp_path: Path) -> None:
    # As the peer: memmap_like() never hands back the mapped leaves (their data).
    for td in (
        TensorDict({"a": torch.ones(3)}, [3]).memmap(),
        TensorDict({"a": torch.ones(3)}, [3]).memmap(tmp_path / "td"),
    ):
        like = td.memmap_like()
        assert like["a"] is not td["a"] and like["a"].filename is None
        assert like.is_memmap() and like["a"].tolist() == [0.0, 0.0, 0.0]
        assert td["a"].tolist() == [1.0, 1.0, 1.0]


def test_memmap_like_into_a_saved_folder_gives_zeros(tmp_path: Path) -> None:
    # README "Writes are crash-safe": a new tree, as into a new folder (the peer maps the
    # old files again and reads the previous data); its Python values are the source's.
    source = TensorDict({"x": torch.zeros(3)}, [3])
    source.set_non_tensor("env", "pong")
    first = source.memmap_like(tmp_path / "buf")
    first["x"][0] = 5.0
    again = source.memmap_like(tmp_path / "buf")
    assert again["x"].tolist() == [0.0, 0.0, 0.0] and again["env"] == "pong"
    assert TensorDict.load_memmap(tmp_path / "buf")["x"].tolist() == [0.0, 0.0, 0.0]


def test_memmap_like_into_the_folder_a_collection_maps_keeps_its_data(tmp_path: Path) -> None:
    # as into any saved folder (not refused: the peer runs it): a new zero-filled tree,
    # while the collection loaded from there keeps its data, to be saved again
    loaded = TensorDict({"b": torch.tensor([3.5])}, [1]).memmap(tmp_path / "o")
    like = loaded.memmap_like(tmp_path / "o", existsok=True)
    assert like["b"].tolist() == [0.0] and loaded["b"].tolist() == [3.5]
    like.copy_(loaded)
    assert TensorDict.load_memmap(tmp_path / "o")["b"].tolist() == [3.5]


def test_saved_path_of_memmapped_collections_in_no_folder(tmp_path: Path) -> None:
    # As the peer: None when memory-mapped in no folder, an error when not memory-mapped.
    assert TensorDict({"a": torch.ones(3)}, [3]).memmap().saved_path is None
    assert Step(obs=torch.ones(2), name="x", inner=Inner(z=torch.ones(2), batch_size=[2]),
                batch_size=[2]).memmap().saved_path is None  # fmt: skip
    members = [TensorDict({"a": torch.ones(2)}, [2]) for _ in range(2)]
    stack = LazyStackedTensorDict.lazy_stack(members).memmap(tmp_path / "stack")
    assert stack.saved_path is None
    assert [m.saved_path for m in stack.tensordicts] == [
        tmp_path / "stack" / "0",
        tmp_path / "stack" / "1",
    ]
    with pytest.raises(AttributeError, match="not saved in a folder"):
        LazyStackedTensorDict.lazy_stack(members).saved_path  # noqa: B018
    with pytest.raises(AttributeError):
        TensorDict({"a": torch.ones(3)}, [3]).saved_path  # noqa: B018


def test_copy_existing_rule_of_seed_02(tmp_path: Path) -> None:
    td = TensorDict({"a": torch.tensor(1)}, [])
    td0 = td.memmap(tmp_path / "zero")
    td0 = td0.memmap(tmp_path / "zero")  # same prefix: reused, just overwritten
    with pytest.raises(FileConflictError, match="copy_existing=True"):
        td0.memmap(tmp_path / "one")
    td0.memmap(tmp_path / "one", copy_existing=True)
    assert (TensorDict.load_memmap(tmp_path / "one") == td).all()
    with pytest.raises(MissingFileError):
        TensorDict.load_memmap(tmp_path / "two")


def test_a_leaf_written_from_a_parameter_saves_anew_without_copy_existing(
    tmp_path: Path,
) -> None:
    # As the peer's (it saves ``value.data`` of a leaf that requires grad): a memory-mapped
    # leaf that a parameter was copied into tracks gradients, and is written as a new tensor.
    params = tclass.TensorDictParams(TensorDict({"a": torch.arange(3.0)}, []))
    saved = params.memmap_like(tmp_path / "like").copy_(params)
    assert saved["a"].requires_grad and saved["a"].filename is not None
    again = saved.dumps(tmp_path / "other")
    assert again["a"].filename == str(tmp_path / "other" / "a.memmap")
    assert not again["a"].requires_grad
    assert TensorDict.load_memmap(tmp_path / "other")["a"].tolist() == [0.0, 1.0, 2.0]
    in_place = saved.memmap_(tmp_path / "like", existsok=True)  # the same files: anew too
    assert not in_place["a"].requires_grad
    assert TensorDict.load_memmap(tmp_path / "like")["a"].tolist() == [0.0, 1.0, 2.0]
    plain = TensorDict({"a": torch.zeros(2)}, []).memmap(tmp_path / "plain")
    with pytest.raises(FileConflictError, match="copy_existing=True"):
        plain.memmap(tmp_path / "elsewhere")  # without gradients: the usual rule


def test_resaving_in_place_keeps_the_mappings(tmp_path: Path) -> None:
    td = TensorDict(x=torch.ones(4), batch_size=[4]).memmap_(tmp_path / "q")
    mapped = td["x"]
    with td.unlock_():
        td["y"] = torch.zeros(4)
    td.memmap_(tmp_path / "q")
    assert td["x"] is mapped  # linked, not copied: writes still reach the folder
    td["x"][0] = 42.0
    assert TensorDict.load_memmap(tmp_path / "q")["x"][0] == 42.0
    assert sorted(os.listdir(tmp_path / "q")) == ["meta.json", "x.memmap", "y.memmap"]


def test_existsok_false_refuses_existing_leaf_files(tmp_path: Path) -> None:
    TensorDict(x=torch.ones(4), batch_size=[4]).memmap(tmp_path / "w")
    with pytest.raises(FileConflictError, match="existsok=True"):
        TensorDict(x=torch.zeros(4), batch_size=[4]).memmap(tmp_path / "w", existsok=False)
    assert TensorDict.load_memmap(tmp_path / "w")["x"].eq(1).all()


def test_a_folder_with_other_files_is_never_replaced(tmp_path: Path) -> None:
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    with pytest.raises(FileConflictError, match="no saved tree"):
        TensorDict(x=torch.ones(1), batch_size=[1]).memmap(tmp_path / "mine")
    TensorDict(x=torch.ones(1), batch_size=[1]).memmap(tmp_path / "saved")
    (tmp_path / "saved" / "notes.txt").write_text("keep me")
    with pytest.raises(FileConflictError, match="notes.txt"):
        TensorDict(x=torch.ones(1), batch_size=[1]).memmap(tmp_path / "saved")
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"


@pytest.mark.parametrize("saved_before", [False, True], ids=["new folder", "saved folder"])
def test_a_folder_holding_a_symlink_is_never_written_through(
    tmp_path: Path, saved_before: bool
) -> None:
    td = TensorDict({"nested": {"x": torch.randn(3)}}, batch_size=[])
    prefix, outside = tmp_path / "saved", tmp_path / "outside"
    outside.mkdir()
    if saved_before:
        td.memmap(prefix)
        shutil.rmtree(prefix / "nested")
    else:
        prefix.mkdir()
    (prefix / "nested").symlink_to(outside, target_is_directory=True)
    with pytest.raises(FileConflictError, match="holds a symlink.*through symlinks") as error:
        td.memmap(prefix)
    assert isinstance(error.value, RuntimeError)  # as the peer's
    assert str(prefix / "nested") in str(error.value)
    assert not list(outside.iterdir()) and (prefix / "nested").is_symlink()


def test_num_threads_writes_the_same_folder(tmp_path: Path) -> None:
    td = TensorDict({f"k{i}": torch.full((5, 3), float(i)) for i in range(12)}, batch_size=[5])
    td.memmap(tmp_path / "threaded", num_threads=4)
    _assert_same(TensorDict.load_memmap(tmp_path / "threaded"), td)
    with pytest.raises(ValueError, match="num_threads"):
        td.memmap(tmp_path / "bad", num_threads=-1)


def _writer_threads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the threads that write each leaf from now on."""
    import threading

    from tclass._io.memmap import _write

    names: list[str] = []
    real = _write._write_leaf

    def write_leaf(*args: Any) -> torch.Tensor:
        names.append(threading.current_thread().name)
        return real(*args)

    monkeypatch.setattr(_write, "_write_leaf", write_leaf)
    monkeypatch.setattr(_write, "_PARALLEL_BYTES", 1024)  # "large": 1 KiB, for the test
    return names


def test_default_save_writes_large_leaves_in_two_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = _writer_threads(monkeypatch)
    big = {f"big{i}": torch.full((64, 8), float(i)) for i in range(3)}  # 2 KiB each
    td = TensorDict({**big, "small": torch.arange(64)}, batch_size=[64])
    monkeypatch.setattr(torch, "get_num_threads", lambda: 2)
    saved = td.memmap(tmp_path / "two")
    _assert_same(saved, td)
    _assert_same(TensorDict.load_memmap(tmp_path / "two"), td)
    assert len(names) == 4 and len(set(names)) == 2 and "MainThread" in names
    for case, threads, torch_threads in (("one", 1, 2), ("torch1", 0, 1)):
        names.clear()
        monkeypatch.setattr(torch, "get_num_threads", lambda n=torch_threads: n)
        td.memmap(tmp_path / case, num_threads=threads)  # one thread asked, or torch has one
        assert names == ["MainThread"] * 4
    names.clear()
    monkeypatch.setattr(torch, "get_num_threads", lambda: 2)
    td.memmap_like(tmp_path / "like")  # nothing copied: one thread
    assert names == ["MainThread"] * 4


def test_a_failed_write_in_the_second_thread_leaves_the_old_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tclass._io.memmap import _write

    td = TensorDict({f"k{i}": torch.full((64, 8), float(i)) for i in range(4)}, batch_size=[64])
    td.memmap(tmp_path / "d")
    names = _writer_threads(monkeypatch)
    monkeypatch.setattr(torch, "get_num_threads", lambda: 2)
    written = _write._write_leaf

    def failing(*args: Any) -> torch.Tensor:
        import threading

        if threading.current_thread().name != "MainThread":
            raise OSError(28, "No space left on device")
        return written(*args)

    monkeypatch.setattr(_write, "_write_leaf", failing)
    with pytest.raises(OSError, match="No space"):
        (td + 1).memmap(tmp_path / "d")
    assert names and os.listdir(tmp_path) == ["d"]
    _assert_same(TensorDict.load_memmap(tmp_path / "d"), td)


def test_save_and_load_aliases(tmp_path: Path) -> None:
    td = _nested()
    tclass.save(td, tmp_path / "a")
    td.save(tmp_path / "b")
    for folder in ("a", "b"):
        _assert_same(tclass.load(tmp_path / folder), td)
        _assert_same(TensorDict.load(tmp_path / folder), td)
    _assert_same(tclass.memmap(td, tmp_path / "c"), td)


def test_failed_save_leaves_no_folder(tmp_path: Path) -> None:
    td = TensorDict(a=torch.ones(2), s=NonTensorData(object(), batch_size=[2]), batch_size=[2])
    with pytest.raises(
        NotSerializableError,
        match="the value at key .s.: a value of type builtins.object, which cannot",
    ):
        td.memmap(tmp_path / "f")
    assert os.listdir(tmp_path) == []


# --- loading options -----------------------------------------------------------------------


def test_nested_sub_folder_loads_on_its_own(tmp_path: Path) -> None:
    _nested().memmap(tmp_path / "td")
    nested = tclass.load_memmap(tmp_path / "td" / "next")
    assert nested.get("reward").tolist() == [1, 2, 3] and nested.batch_size == torch.Size([3])
    _step().memmap(tmp_path / "s")
    assert type(tclass.load_memmap(tmp_path / "s" / "_tensordict" / "inner")) is Inner


def test_meta_device_reads_no_data(tmp_path: Path) -> None:
    _nested().memmap(tmp_path / "td")
    os.chmod(tmp_path / "td" / "a.memmap", 0)  # as root this still opens: the check is below
    meta = tclass.load_memmap(tmp_path / "td", device="meta")
    assert meta.device == torch.device("meta") and meta["a"].is_meta and meta["a"].shape == (3, 2)
    assert meta["next", "deeper", "flag"].dtype == torch.bool
    _step().memmap(tmp_path / "s")
    assert Step.load_memmap(tmp_path / "s", device="meta").obs.is_meta


def test_cpu_device_keeps_mapped_leaves(tmp_path: Path) -> None:
    _nested().memmap(tmp_path / "td")
    loaded = TensorDict.load_memmap(tmp_path / "td", device="cpu")
    assert loaded.device == torch.device("cpu") and isinstance(loaded.get("a"), MemoryMappedTensor)


def test_out_receives_the_data(tmp_path: Path) -> None:
    # As the peer: out's leaves are replaced by the loaded (mapped) ones, whose writes
    # reach the folder; the tensors out held are left as they were.
    _nested().memmap(tmp_path / "td")
    out = _nested().apply(torch.zeros_like)
    target = out["a"]
    assert TensorDict.load_memmap(tmp_path / "td", out=out) is out
    assert isinstance(out["a"], MemoryMappedTensor) and not target.any()
    assert torch.equal(out["a"], torch.arange(6.0).reshape(3, 2))
    out["a"][0] = -1.0
    assert TensorDict.load_memmap(tmp_path / "td")["a"][0].tolist() == [-1.0, -1.0]
    step = _step().apply(torch.zeros_like)
    _step().memmap(tmp_path / "s")
    step.load_memmap_(tmp_path / "s")
    assert step.inner.z.tolist() == [7, 8]


def test_out_ends_up_holding_what_was_saved(tmp_path: Path) -> None:
    # As the peer: keys that were not saved go, saved keys out lacks come, and every
    # leaf is replaced by the loaded one (its storage is not reused).
    TensorDict(x=torch.ones(4), n={"y": torch.ones(4, 2)}, batch_size=[4]).memmap(tmp_path / "w")
    out = TensorDict(z=torch.ones(4), n={"y": torch.zeros(4, 3)}, batch_size=[4])
    inner = out["n"]
    assert TensorDict.load_memmap(tmp_path / "w", out=out) is out
    assert sorted(out.keys(True, True), key=str) == [("n", "y"), "x"]
    assert out["n"] is inner and out["n", "y"].shape == (4, 2)  # nested collections kept
    same = TensorDict(x=torch.zeros(4), n={"y": torch.zeros(4, 2)}, batch_size=[4])
    storage = same["x"]
    same.load_memmap_(tmp_path / "w")
    assert isinstance(same["x"], MemoryMappedTensor) and bool((same["x"] == 1).all())
    assert not storage.any()  # not written into: the peer's "storage is not reused"


def test_out_with_another_batch_size_is_an_error(tmp_path: Path) -> None:
    TensorDict(x=torch.ones(4), batch_size=[4]).memmap(tmp_path / "w")
    with pytest.raises(ShapeError, match=r"batch size \[4\], out= has \[5\]"):
        TensorDict.load_memmap(tmp_path / "w", out=TensorDict(x=torch.ones(5), batch_size=[5]))


def test_loading_as_another_record_class_is_an_error(tmp_path: Path) -> None:
    # A TclassError and a TypeError, naming the class saved, the class asked, the fix.
    _step().memmap(tmp_path / "s")
    expected = (
        f"{str(tmp_path / 's')!r} holds a record of class Step ({__name__}.Step), not of "
        f"class Inner ({__name__}.Inner), which load_memmap was asked for; load it with "
        "Step.load_memmap or tclass.load_memmap, which rebuild the class it was saved from "
        "(or check the path)"
    )
    for load in (
        lambda: tclass.load_memmap(tmp_path / "s", cls=Inner),
        lambda: Inner.load_memmap(tmp_path / "s"),
    ):
        with pytest.raises(ClassMismatchError) as info:
            load()
        assert isinstance(info.value, TypeError) and str(info.value) == expected


def test_collection_classes_load_whatever_the_folder_holds(tmp_path: Path) -> None:
    # As the peer: TensorDict.load_memmap of a record's folder gives the record, of a
    # lazy stack's folder the lazy stack; only a tensorclass checks the class.
    _step().memmap(tmp_path / "s")
    assert type(TensorDict.load_memmap(tmp_path / "s")) is Step
    assert type(LazyStackedTensorDict.load_memmap(tmp_path / "s")) is Step
    assert type(tclass.load_memmap(tmp_path / "s", cls=TensorDict)) is Step
    lazy = tclass.lazy_stack([TensorDict(x=torch.ones(2)), TensorDict(x=torch.ones(3))])
    lazy.memmap(tmp_path / "lazy")
    assert type(TensorDict.load_memmap(tmp_path / "lazy")) is LazyStackedTensorDict
    TensorDict(x=torch.ones(2), batch_size=[2]).memmap(tmp_path / "td")
    assert type(LazyStackedTensorDict.load_memmap(tmp_path / "td")) is TensorDict


def test_peer_load_options_are_accepted(tmp_path: Path) -> None:
    TensorDict({"a b": torch.ones(2)}, batch_size=[2]).memmap(tmp_path / "td")
    for robust_key in (True, False, None):
        loaded = TensorDict.load_memmap(tmp_path / "td", robust_key=robust_key, num_threads=2)
        assert loaded["a b"].tolist() == [1.0, 1.0]
    with pytest.raises(ValueError, match="num_threads"):
        TensorDict.load_memmap(tmp_path / "td", num_threads=-1)


@tclass.tensorclass
class Eight:
    f0: torch.Tensor
    f1: torch.Tensor
    f2: torch.Tensor
    f3: torch.Tensor
    f4: torch.Tensor
    f5: torch.Tensor
    f6: torch.Tensor
    f7: torch.Tensor


def _eight() -> Eight:
    return Eight(**{f"f{i}": torch.full((3, 2), float(i)) for i in range(8)}, batch_size=[3])


def test_a_load_opens_each_file_once_and_looks_up_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _eight().memmap(tmp_path / "r")
    calls: dict[str, int] = {}

    def counting(name: str) -> None:
        real = getattr(os, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            calls[name] = calls.get(name, 0) + 1
            return real(*args, **kwargs)

        monkeypatch.setattr(os, name, call)

    for name in ("open", "fstat", "stat", "lstat", "listdir", "scandir"):
        counting(name)
    loaded = Eight.load_memmap(tmp_path / "r")
    # The root, its meta.json, _tensordict/ and its meta.json, then each leaf once (torch
    # maps the leaf through /proc/self/fd); no schema.json, no stat of a file that may be
    # there, no listing.
    assert calls == {"open": 4 + 8, "fstat": 2 + 8}
    assert all(
        torch.equal(getattr(loaded, f"f{i}"), torch.full((3, 2), float(i))) for i in range(8)
    )


def test_a_loaded_record_of_tensors_is_over_the_loaded_collection(tmp_path: Path) -> None:
    _eight().memmap(tmp_path / "r")
    loaded = Eight.load_memmap(tmp_path / "r")
    assert list(loaded.keys()) == [f"f{i}" for i in range(8)]
    assert all(isinstance(getattr(loaded, f"f{i}"), MemoryMappedTensor) for i in range(8))
    loaded.f3[0] = 9.0  # written through, and the record stays linked to its folder
    assert Eight.load_memmap(tmp_path / "r").f3[0].tolist() == [9.0, 9.0]
    # Fields listed in another order in meta.json: the record lists them in that order,
    # as the peer's loaded records do (each field still holds its own file).
    path = tmp_path / "r" / "_tensordict" / "meta.json"
    meta = json.loads(path.read_text())
    path.write_text(json.dumps({k: meta[k] for k in [*reversed(list(meta)[:8]), *list(meta)[8:]]}))
    again = Eight.load_memmap(tmp_path / "r")
    assert list(again.keys()) == [f"f{i}" for i in reversed(range(8))]
    assert again.f7[0].tolist() == [7.0, 7.0]


# --- classes -------------------------------------------------------------------------------


def _retype(folder: Path, type_string: str) -> None:
    meta = json.loads((folder / "meta.json").read_text())
    meta["_type"] = type_string
    (folder / "meta.json").write_text(json.dumps(meta))


def test_unknown_class_names_the_module_to_import(tmp_path: Path) -> None:
    _step().memmap(tmp_path / "s")
    _retype(tmp_path / "s", "<class 'nowhere.models.Missing'>")
    with pytest.raises(ClassResolutionError, match=r"import nowhere\.models"):
        tclass.load_memmap(tmp_path / "s")
    assert "nowhere" not in __import__("sys").modules


def test_class_saved_from_another_module_loads_when_named(tmp_path: Path) -> None:
    _step().memmap(tmp_path / "s")
    _retype(tmp_path / "s", "<class '__main__.Step'>")
    assert type(Step.load_memmap(tmp_path / "s")) is Step
    with pytest.raises(ClassResolutionError):
        tclass.load_memmap(tmp_path / "s")


def test_two_live_classes_of_one_name_are_ambiguous(tmp_path: Path) -> None:
    def define() -> type:
        @tclass.tensorclass
        class Twin:
            x: torch.Tensor

        return Twin

    first, second = define(), define()
    first(torch.ones(1), batch_size=[1]).memmap(tmp_path / "t")
    with pytest.raises(ClassResolutionError, match="2 different classes"):
        tclass.load_memmap(tmp_path / "t")
    assert type(second.load_memmap(tmp_path / "t")) is second  # the caller decides
    del first, second


def test_nested_record_class_comes_from_the_field(tmp_path: Path) -> None:
    _step().memmap(tmp_path / "s")
    _retype(tmp_path / "s" / "_tensordict" / "inner", "<class 'elsewhere.Inner'>")
    # The registry has no elsewhere.Inner, but Step.inner is annotated with a class of
    # that name: the caller named it, as for the top-level class.
    assert type(Step.load_memmap(tmp_path / "s").inner) is Inner
    _retype(tmp_path / "s" / "_tensordict" / "inner", "<class 'elsewhere.Other'>")
    with pytest.raises(
        ClassResolutionError, match="annotate Step.inner with your class named Other"
    ):
        Step.load_memmap(tmp_path / "s")


# --- pickle --------------------------------------------------------------------------------


class _Opaque:
    pass


@tclass.tensorclass
class _Tagged:
    x: torch.Tensor
    info: dict[str, Any] | None = None


@pytest.mark.parametrize(
    ("build", "named"),
    [
        (  # a record's field: its name, not the _tensordict/ folder holding it
            lambda: _Tagged(x=torch.zeros(2), info={"ok": 1, "obj": _Opaque()}, batch_size=[2]),
            f"at key 'info': its item ['obj'] is of type {__name__}._Opaque",
        ),
        (  # nested keys, and the record inside a TensorDict
            lambda: TensorDict(
                run={"tag": _Tagged(x=torch.zeros(2), info={"a": [1, {2}]}, batch_size=[2])},
                batch_size=[2],
            ),
            "at key ('run', 'tag', 'info'): its item ['a'][1] is of type builtins.set",
        ),
        (
            lambda: TensorDict(a={"obj": NonTensorData(_Opaque())}, batch_size=[]),
            f"at key ('a', 'obj'): a value of type {__name__}._Opaque,",
        ),
        (  # lazy-stack members by their index
            lambda: tclass.lazy_stack(
                [TensorDict(v=NonTensorData(1)), TensorDict(v=NonTensorData({3: "x"}))]
            ),
            "at key (1, 'v'): it has the key 3, of type builtins.int (JSON keys are str)",
        ),
    ],
)
def test_not_serializable_names_the_key_the_user_knows(
    tmp_path: Path, build: Any, named: str
) -> None:
    with pytest.raises(NotSerializableError) as info:
        build().memmap(tmp_path / "p")
    message = str(info.value)
    assert message.startswith("cannot save the value") and named in message, message
    assert "_tensordict" not in message and "allow_pickle=True" in message
    assert not (tmp_path / "p").exists()


def test_non_json_values_need_allow_pickle_both_ways(tmp_path: Path) -> None:
    td = TensorDict(
        o=NonTensorData({1, 2}, batch_size=[2]),
        many=NonTensorStack.from_list([{1}, {2}]),
        batch_size=[2],
    )
    with pytest.raises(NotSerializableError, match="builtins.set"):
        td.memmap(tmp_path / "p")
    td.memmap(tmp_path / "p", allow_pickle=True)
    with pytest.raises(PickleRefusedError, match="other.pickle|pickle.pkl"):
        tclass.load_memmap(tmp_path / "p")
    loaded = tclass.load_memmap(tmp_path / "p", allow_pickle=True)
    assert loaded.get("o").data == {1, 2} and loaded.get("many").tolist() == [{1}, {2}]


@pytest.mark.parametrize("policy", [0, 1, "yes"], ids=["0", "1", "str"])
def test_allow_pickle_must_be_a_bool_or_none(tmp_path: Path, policy: Any) -> None:
    # As the peer's loads (a TypeError): a truthy 1 or "yes" does not allow pickle.
    td = TensorDict(o=NonTensorData({1, 2}, batch_size=[2]), batch_size=[2])
    with pytest.raises(tclass.errors.ArgumentError, match="allow_pickle must be a bool or None"):
        td.memmap(tmp_path / "p", allow_pickle=policy)
    assert not (tmp_path / "p").exists()
    td.memmap(tmp_path / "p", allow_pickle=True)
    for load in (tclass.load_memmap, TensorDict.load_memmap):
        with pytest.raises(
            TypeError, match=r"allow_pickle must be .* got 1 \(of type builtins.int\)"
        ):
            load(tmp_path / "p", allow_pickle=1)
    with pytest.raises(tclass.errors.ArgumentError, match="allow_pickle"):
        tclass.append_memmap(tmp_path / "p", td, allow_pickle=policy)
    with pytest.raises(PickleRefusedError):
        tclass.load_memmap(tmp_path / "p", allow_pickle=None)  # None: no pickle


class _Marker:
    path = ""

    def __reduce__(self) -> tuple[Any, ...]:
        return (open, (self.path, "w"))


def test_planted_pickle_next_to_json_is_never_read(tmp_path: Path) -> None:
    import pickle

    TensorDict(s=NonTensorData("json value"), batch_size=[]).memmap(tmp_path / "d")
    marker = _Marker()
    marker.path = str(tmp_path / "MARKER")
    (tmp_path / "d" / "s" / "other.pickle").write_bytes(pickle.dumps({"data": marker}))
    assert tclass.load_memmap(tmp_path / "d", allow_pickle=True).get("s").data == "json value"
    assert not (tmp_path / "MARKER").exists()
    meta = json.loads((tmp_path / "d" / "s" / "meta.json").read_text())
    del meta["data"]
    (tmp_path / "d" / "s" / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(PickleRefusedError):
        tclass.load_memmap(tmp_path / "d")
    assert not (tmp_path / "MARKER").exists()


def test_missing_parent_folders_are_created(tmp_path: Path) -> None:
    TensorDict(x=torch.ones(2), batch_size=[2]).memmap(tmp_path / "a" / "b" / "c")
    assert TensorDict.load_memmap(tmp_path / "a" / "b" / "c")["x"].eq(1).all()


@pytest.mark.parametrize(
    "view",
    [
        lambda td: td.view(-1),
        lambda td: td.unsqueeze(0),
        lambda td: td.permute(1, 0),
        lambda td: td.narrow(0, 0, 1),
        lambda td: td.reshape(-1),
        lambda td: td.detach(),
    ],
)
def test_views_of_a_saved_collection_are_memory_mapped(tmp_path: Path, view: Any) -> None:
    # A view of a memory-mapped collection writes its files: is_memmap() says so, and
    # rows read from it (at an index that keeps the data pointer) stay locked.
    saved = TensorDict(
        {"a": torch.zeros(2, 3, 4), "n": {"b": torch.ones(2, 3)}}, batch_size=[2, 3]
    ).memmap(tmp_path / "w")
    seen = view(saved)
    assert seen.is_locked and seen.is_memmap()
    assert type(seen["a"]) is torch.Tensor  # torch's view of the file, not a new file
    row = seen[0]
    assert row.is_locked and row["n"].is_locked and row.is_memmap()
    assert all(piece.is_locked for piece in seen.unbind(0))
    assert not seen[1:].is_locked  # a slice from 1 moves the data pointer, as the peer
    row["a"].fill_(7.0)
    reloaded = TensorDict.load_memmap(tmp_path / "w")
    assert (reloaded["a"] == 7.0).sum() == row["a"].numel()


def test_copies_of_a_saved_collection_are_not_memory_mapped(tmp_path: Path) -> None:
    saved = TensorDict({"a": torch.zeros(2, 3)}, batch_size=[2, 3]).memmap(tmp_path / "w")
    for copy in (saved.tile((2, 1)), saved.clone(), saved.to(torch.float64), saved + 1):
        assert not copy.is_memmap()
        if copy.is_locked:
            assert not copy[0].is_locked
    assert not TensorDict({"a": torch.zeros(2)}, batch_size=[2]).view(-1).is_memmap()


def test_empty_tensors_have_no_file_and_save_elsewhere_without_copy(tmp_path: Path) -> None:
    saved = TensorDict({"a": torch.zeros(0, 3), "n": {"b": torch.ones(0)}}, [0]).memmap(
        tmp_path / "one"
    )
    assert sorted(p.name for p in (tmp_path / "one").rglob("*.memmap")) == []
    again = saved.memmap(tmp_path / "two")  # nothing to copy: no copy_existing needed
    loaded = TensorDict.load_memmap(tmp_path / "two")
    assert loaded["a"].shape == (0, 3) and loaded["n", "b"].shape == (0,)
    assert again["a"].dtype == loaded["a"].dtype == torch.float32
    full = TensorDict({"a": torch.zeros(2)}, [2]).memmap(tmp_path / "three")
    with pytest.raises(FileConflictError, match="copy_existing=True"):
        full.memmap(tmp_path / "four")
