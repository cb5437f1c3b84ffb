"""``from_consolidated(file)`` (tclass/_engine/_consolidate.py): the kind of collection a
class reads from a file ``consolidate(filename=...)`` wrote, its locks and its values."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import pytest
import torch

from tclass import (
    LazyStackedTensorDict,
    MetaData,
    TensorClass,
    TensorDict,
    TensorDictParams,
    lazy_stack,
)


class _Row(TensorClass):
    x: torch.Tensor
    label: str


def test_a_records_file_read_by_tensordict_is_a_tensordict(tmp_path: Path) -> None:
    # The peer's TensorDict.from_consolidated gives a TensorDict of a record's file, the
    # record's class a record (program 15,620,352 of features,index,shape,combine L8)
    rec = _Row(x=torch.arange(3.0), label="a", batch_size=[3])
    path = str(tmp_path / "rec.mmap")
    rec.consolidate(filename=path)
    td = TensorDict.from_consolidated(path)
    assert type(td) is TensorDict and td.batch_size == torch.Size([3])
    assert torch.equal(td["x"], torch.arange(3.0)) and td.get("label").data == "a"
    again = _Row.from_consolidated(path)
    assert type(again) is _Row and again.label == "a"


def _td() -> TensorDict:
    return TensorDict({"d": torch.zeros(4), "m": {"a": torch.ones(4, 2)}}, [4])


@pytest.mark.parametrize(
    "made",
    [
        lambda tmp: _td(),
        lambda tmp: _td().lock_(),
        lambda tmp: _td().memmap(tmp / "saved"),
        lambda tmp: lazy_stack([_td(), _td()], 1),
        lambda tmp: lazy_stack([_td(), _td()], 1).lock_(),
        lambda tmp: lazy_stack([_td()], 1).memmap(tmp / "saved").squeeze(1),
    ],
    ids=["td", "td-locked", "td-memmap", "lazy", "lazy-locked", "lazy-memmap-squeezed"],
)
def test_a_file_reads_back_locked_where_its_source_was(made: Any, tmp_path: Path) -> None:
    """As the peer's metadata keeps each node's lock (programs 15,600,353 / 15,610,134
    of features,index,shape,combine): a locked (or memory-mapped) collection reads
    back locked at every level, an unlocked one unlocked, though ``consolidate``
    locks what it returns in both cases."""
    source = made(tmp_path)
    path = tmp_path / "c.mmap"
    assert source.consolidate(filename=path).is_locked
    back = TensorDict.from_consolidated(path)
    assert type(back) is type(source) and back.is_locked == source.is_locked
    assert back["m"].is_locked == source.is_locked
    assert back.is_consolidated() and torch.equal(back["m", "a"], source["m", "a"])
    if not back.is_locked:
        back["new"] = torch.ones(back.batch_size)  # an unlocked one takes new entries


def test_a_record_reads_back_locked_where_it_was(tmp_path: Path) -> None:
    rec = _Row(x=torch.arange(3.0), label="a", batch_size=[3]).lock_()
    rec.consolidate(filename=tmp_path / "rec.mmap")
    again = _Row.from_consolidated(tmp_path / "rec.mmap")
    assert again.is_locked and again.label == "a"
    with pytest.raises(RuntimeError, match="locked"):
        again.x = torch.zeros(3)


@pytest.mark.parametrize("protocol", [4, 5])
def test_a_consolidated_pickle_keeps_the_users_lock_only(protocol: int) -> None:
    """A pickle of a consolidated collection is unlocked when the lock is consolidate()'s
    and locked when the user had locked its source, as the peer's."""
    for source in (_td(), _td().lock_(), lazy_stack([_td(), _td()]).lock_()):
        packed = source.consolidate()
        assert packed.is_locked
        back = pickle.loads(pickle.dumps(packed, protocol=protocol))
        assert back.is_locked == source.is_locked == back["m"].is_locked
        again = pickle.loads(pickle.dumps(back, protocol=protocol))
        assert again.is_locked == source.is_locked


def test_metadata_reads_back_as_metadata(tmp_path: Path) -> None:
    """A ``MetaData`` stays one (program 15,600,562 of features,index,shape,combine): it
    then stacks into one value, as before the save (the peer reads it back as a
    ``NonTensorData``, which stacks into a value per element)."""
    td = TensorDict({"b": torch.zeros(2, 1)}, [2, 1])
    td.set("v", MetaData(3, batch_size=[2, 1]))
    td.consolidate(filename=tmp_path / "c.mmap")
    back = TensorDict.from_consolidated(tmp_path / "c.mmap")
    assert type(back.get("v")) is MetaData and back.get("v").data == 3
    stacked = lazy_stack([back, back.clone()])
    assert type(stacked.get("v")) is MetaData and stacked.get("v").data == 3
    assert type(pickle.loads(pickle.dumps(td.consolidate())).get("v")) is MetaData


def test_a_lazy_stack_of_params_is_written_and_read_back(tmp_path: Path) -> None:
    """``consolidate(filename=...)`` of a lazy stack holding a TensorDictParams writes its
    file, as ``consolidate()`` gives TensorDicts (the peer fails writing the parameters'
    metadata as JSON: program 15,600,181 of features,index,shape,combine)."""
    td = TensorDict({"d": torch.arange(8, dtype=torch.uint8).reshape(2, 4, 1)}, [2, 4])
    params = TensorDictParams(td, no_convert=True)
    stack = lazy_stack([params, params.clone().apply(torch.ones_like)], 1)
    stack.consolidate(filename=tmp_path / "c.mmap")
    back = TensorDict.from_consolidated(tmp_path / "c.mmap")
    assert type(back) is LazyStackedTensorDict and back.batch_size == torch.Size([2, 2, 4])
    assert all(type(member) is TensorDict for member in back.tensordicts)
    assert torch.equal(back["d"], stack["d"].detach())


def test_metadata_of_a_lazy_stack_reads_back_as_metadata(tmp_path: Path) -> None:
    """Members holding one ``MetaData``: the stack read back holds it, as before the
    save (program 15,822,046 of features,index,shape,combine L12; the peer's members
    read back ``NonTensorData``, which stack into a value per element)."""
    stack = lazy_stack([_td(), _td().apply(torch.ones_like)])
    stack.set("s", MetaData(3, batch_size=[2, 4]))
    stack.consolidate(filename=tmp_path / "c.mmap")
    back = TensorDict.from_consolidated(tmp_path / "c.mmap")
    assert type(back.get("s")) is MetaData and back.get("s").data == 3
    assert all(type(member.get("s")) is MetaData for member in back.tensordicts)


def test_a_read_back_file_consolidated_again_is_written(tmp_path: Path) -> None:
    """``consolidate(filename=...)`` of a collection consolidated before writes the new
    file (the peer writes nothing and returns the source, so its ``from_consolidated``
    of that file raises ``FileNotFoundError``: program 15,820,047 L8)."""
    _td().consolidate(filename=tmp_path / "a.mmap")
    first = TensorDict.from_consolidated(tmp_path / "a.mmap")
    second = first.consolidate(filename=tmp_path / "b.mmap")
    assert second is not first and (tmp_path / "b.mmap").is_file()
    again = TensorDict.from_consolidated(tmp_path / "b.mmap")
    assert torch.equal(again["m", "a"], first["m", "a"])
