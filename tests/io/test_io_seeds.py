"""The saving examples of the seeds (02: saving TensorDict and tensorclass objects, 05:
load_memmap), run as written except for names tclass spells differently (noted)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
import torch
from torch._subclasses import FakeTensorMode

import tclass
from tclass import MemoryMappedTensor, TensorDict, load_memmap, tensorclass
from tclass._base._tensordict_base import TensorDictBase
from tclass.errors import FileConflictError, MissingFileError


@tensorclass
class MyClass:
    data: torch.Tensor
    metadata: str


def test_seed02_directory_mimics_the_keys(tmp_path: Path) -> None:
    td = TensorDict({"a": torch.rand(10), "b": {"c": torch.rand(10)}}, [10])
    td.memmap_(prefix=tmp_path / "tensordict")
    tree = sorted(p.relative_to(tmp_path).as_posix() for p in (tmp_path / "tensordict").rglob("*"))
    assert tree == [
        "tensordict/a.memmap",
        "tensordict/b",
        "tensordict/b/c.memmap",
        "tensordict/b/meta.json",
        "tensordict/meta.json",
    ]


def test_seed02_nested_types_rebuild() -> None:
    td_list = [TensorDict({"item": i}, batch_size=[]) for i in range(4)]
    tc = MyClass(torch.randn(3), metadata="some text", batch_size=[])
    data = TensorDict({"td_list": torch.stack(td_list), "tensorclass": tc}, [])
    with tempfile.TemporaryDirectory() as tempdir:
        data.memmap_(tempdir)
        loaded_data = TensorDictBase.load_memmap(tempdir)
        assert (loaded_data == data).all()
        assert (
            type(loaded_data["tensorclass"]) is MyClass
            and loaded_data["tensorclass"].metadata == "some text"
        )
        assert (Path(tempdir) / "tensorclass" / "_tensordict" / "data.memmap").is_file()


def test_seed02_memmap_twice_without_prefix() -> None:
    td = TensorDict({"a": 1}, [])
    td0 = td.memmap()
    td1 = td0.memmap()
    assert td0["a"] is td1["a"]


def test_seed02_existing_memory_maps() -> None:
    td = TensorDict({"a": 1}, [])
    with tempfile.TemporaryDirectory() as tmpdir_0:
        td0 = td.memmap(tmpdir_0)
        td0 = td.memmap(tmpdir_0)  # works, results are just overwritten
        with tempfile.TemporaryDirectory() as tmpdir_1:
            # The seed passes without copy_existing here; it states the rule just above:
            # a different prefix raises unless copy_existing=True.
            with pytest.raises(FileConflictError):
                td0.memmap(tmpdir_1)
            td1 = td0.memmap(tmpdir_1, copy_existing=True)
            td_load = TensorDict.load_memmap(tmpdir_1)  # works!
            assert (td_load == td).all() and (td1 == td).all()
        with tempfile.TemporaryDirectory() as tmpdir_1:
            with pytest.raises(MissingFileError):
                TensorDict.load_memmap(tmpdir_1)  # breaks!


def test_seed02_preallocated_dataset(tmp_path: Path) -> None:
    def make_datum() -> TensorDict:
        return TensorDict({"image": torch.randint(255, (3, 64, 64)), "label": 0}, batch_size=[])

    dataset_size = 1_000_000
    datum = make_datum()
    data = datum.expand(dataset_size)
    data_disk = data.memmap_like(tmp_path / "data")
    del data
    assert isinstance(data_disk["image"], MemoryMappedTensor) and data_disk["image"].shape == (
        dataset_size,
        3,
        64,
        64,
    )
    assert (tmp_path / "data" / "image.memmap").stat().st_blocks * 512 < 1 << 20  # sparse


def test_seed05_load_and_nested_load(tmp_path: Path) -> None:
    # The seed builds td with TensorDict.fromkeys (issue 9); the same structure by hand:
    td = TensorDict({"a": 0, "b": 0, "c": 0, "nested": {"e": 0}}, [])
    td.memmap(tmp_path / "saved_td")
    td_load = TensorDict.load_memmap(tmp_path / "saved_td")
    assert (td == td_load).all()
    nested = TensorDict.load_memmap(tmp_path / "saved_td" / "nested")
    assert nested["e"] == 0


def test_seed05_meta_and_fake_loading() -> None:
    td = TensorDict({"a": torch.zeros(()), "b": {"c": torch.zeros(())}})
    with tempfile.TemporaryDirectory() as path:
        td.save(path)
        td_load = load_memmap(path, device="meta")
        assert td_load.device == torch.device("meta") and td_load["b", "c"].is_meta
        with FakeTensorMode():
            td_fake = load_memmap(path)
            assert type(td_fake["a"]).__name__ == "FakeTensor" and td_fake["b", "c"].shape == ()


def test_module_function_matches_methods(tmp_path: Path) -> None:
    tc = MyClass(torch.arange(3.0), "m", batch_size=[3])
    tclass.save(tc, tmp_path / "m")
    assert tclass.load(tmp_path / "m").metadata == "m"
    assert type(tclass.load_memmap(tmp_path / "m", cls=MyClass)) is MyClass
