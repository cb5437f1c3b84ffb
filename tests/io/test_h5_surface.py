"""What a ``PersistentTensorDict`` does with the methods whose plain-TensorDict form would
rewrite the collection in place or hand back a copy posing as a view: ``view`` and the
in-place key rewrites are refused (as the peer refuses them, with its words), ``clone``
can write a new file, ``update`` merges nested mappings into the file's groups, and
``ptd[index] = collection`` checks the batch sizes before any dataset is written.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

import tclass
from tclass import PersistentTensorDict, TensorDict
from tclass.errors import (
    BatchSizeError,
    EntryReplacedWarning,
    InPlaceKeysError,
    TclassError,
    UnsupportedError,
)

h5py = pytest.importorskip("h5py")


@pytest.fixture
def ptd(tmp_path: Path) -> Iterator[PersistentTensorDict]:
    source = TensorDict(
        {"a": torch.arange(6.0).view(2, 3), "n": {"b": torch.zeros(2, 3, 4)}}, batch_size=[2, 3]
    )
    out = PersistentTensorDict.from_dict(source, filename=tmp_path / "f.h5")
    yield out
    out.close()


def test_view_to_a_new_batch_size_is_refused_as_writes_would_not_reach_the_file(
    ptd: PersistentTensorDict,
) -> None:
    with pytest.raises(UnsupportedError, match="Cannot call `view`") as caught:
        ptd.view(-1)
    assert isinstance(caught.value, RuntimeError)  # what the peer raises
    assert "reshape" in str(caught.value) and "to_tensordict()" in str(caught.value)
    # the copies the message points at work, and the file is unchanged
    assert ptd.reshape(-1).batch_size == torch.Size([6])
    assert ptd.to_tensordict().view(-1)["a"].tolist() == list(range(6))


@pytest.mark.parametrize(
    "args", [((2, 3),), (2, 3), (torch.Size([2, 3]),)], ids=["tuple", "ints", "size"]
)
def test_view_to_its_own_batch_size_is_the_file_itself(
    ptd: PersistentTensorDict, args: tuple[object, ...]
) -> None:
    # as the peer (and torch): no change, no copy; writes through it reach the file
    view = ptd.view(*args)
    assert view is ptd
    view["a"] = torch.ones(2, 3)
    assert (ptd["a"] == 1).all()
    assert ptd.view(size=[2, 3]) is ptd
    with pytest.raises(UnsupportedError, match="Cannot call `view`"):
        ptd.view(-1, 3)  # a -1 is a new shape to resolve, refused as the peer does


def test_view_as_a_dtype_and_the_legacy_write_through_view_still_work(
    ptd: PersistentTensorDict,
) -> None:
    assert ptd.view(torch.int32)["a"].dtype == torch.int32
    with pytest.warns(DeprecationWarning), tclass.set_lazy_legacy(True):
        view = ptd.view(-1)
        with pytest.warns(EntryReplacedWarning, match="Replacing an array"):  # as the peer
            view["a"] = torch.full((6,), 7.0)  # the legacy view sets the file's entry
    assert (ptd["a"] == 7).all()  # written through to the file


@pytest.mark.parametrize("method", ["flatten_keys", "unflatten_keys"])
def test_key_rewrites_in_place_are_refused_and_the_file_keeps_its_groups(
    ptd: PersistentTensorDict, method: str
) -> None:
    with pytest.raises(InPlaceKeysError, match=f"Cannot call {method} in_place") as caught:
        getattr(ptd, method)(inplace=True)
    assert isinstance(caught.value, ValueError)  # the peer's type
    assert isinstance(caught.value, TclassError)
    assert set(ptd.keys(True, True)) == {"a", ("n", "b")}


def test_key_rewrites_out_of_place_read_a_tensordict(ptd: PersistentTensorDict) -> None:
    flat = ptd.flatten_keys()
    assert type(flat) is TensorDict
    assert sorted(flat.keys()) == ["a", "n.b"]
    assert set(flat.unflatten_keys().keys(True, True)) == {"a", ("n", "b")}


@pytest.mark.parametrize("lib_name", ["tclass", "tensordict"])
def test_unflatten_keys_reads_the_groups_it_keeps_whole(lib_name: str, tmp_path: Path) -> None:
    """``ptd.unflatten_keys(".")`` reads every entry, the groups without the separator
    too (as the peer, which unflattens a copy read from the file): writes into the result
    stay in memory, and it outlives the file. tclass kept such a group as the file's
    group, so writing into the result wrote the file and closing the file broke it."""
    lib = pytest.importorskip(lib_name)
    source = lib.TensorDict(
        {"n": {"r": torch.arange(4), "m": {"q": torch.ones(4)}}, "a.b": torch.zeros(4)}, [4]
    )
    ptd = source.to_h5(tmp_path / "f.h5")
    out = ptd.unflatten_keys(".")
    assert type(out) is lib.TensorDict
    assert type(out["n"]) is lib.TensorDict and type(out["n", "m"]) is lib.TensorDict
    out["n", "r"][0] = 100
    out["n"]["r"] = torch.zeros(4, dtype=torch.long)
    out["n", "new"] = torch.zeros(4)
    assert ptd["n", "r"].tolist() == [0, 1, 2, 3]
    assert sorted(ptd["n"].keys()) == ["m", "r"]
    ptd.close()
    assert out["n", "m", "q"].tolist() == [1.0] * 4 and out["a", "b"].tolist() == [0.0] * 4


def test_clone_into_a_new_file_is_a_persistent_copy(
    ptd: PersistentTensorDict, tmp_path: Path
) -> None:
    copy = ptd.clone(newfile=tmp_path / "copy.h5")
    try:
        assert type(copy) is PersistentTensorDict
        assert copy.filename == str(tmp_path / "copy.h5")
        assert copy.batch_size == ptd.batch_size
        assert (copy == ptd).all()
        copy["a"] = torch.zeros(2, 3)  # written into the copy only
        assert ptd["a"].sum() == 15
    finally:
        copy.close()
    assert type(ptd.clone()) is TensorDict  # without newfile: read into memory


@pytest.mark.peer
def test_clone_into_a_new_file_reads_as_the_peer_reads_its_own(
    ptd: PersistentTensorDict, tmp_path: Path
) -> None:
    peer = pytest.importorskip("tensordict")
    ptd.clone(newfile=tmp_path / "copy.h5").close()
    theirs = peer.PersistentTensorDict.from_h5(str(tmp_path / "copy.h5"))
    assert theirs["a"].tolist() == ptd["a"].tolist()
    assert theirs["n", "b"].shape == torch.Size([2, 3, 4])


def test_update_with_a_nested_mapping_merges_into_the_group(ptd: PersistentTensorDict) -> None:
    ptd.update({"n": {"c": torch.ones(2, 3)}})
    assert set(ptd.keys(True, True)) == {"a", ("n", "b"), ("n", "c")}
    ptd.update({"n": torch.ones(2, 3)})  # a tensor replaces the group, as a TensorDict's
    assert isinstance(ptd["n"], torch.Tensor)


def test_a_collection_set_over_a_group_of_more_batch_dims_merges_into_it(
    tmp_path: Path,
) -> None:
    # as the peer's file: ptd[key] = dict (or collection) updates the group whatever the
    # value's batch size, each entry checked against the group's (a TensorDict replaces)
    nested = TensorDict({"d": torch.zeros(1, 2, 1, 2)}, [1, 2, 1])
    source = TensorDict({"a": torch.zeros(1, 2, 3), "n": nested}, [1, 2])
    ptd = PersistentTensorDict.from_dict(source, filename=tmp_path / "m.h5")
    ptd["n"] = {"q": torch.ones(1, 2, 1)}
    assert sorted(ptd["n"].keys()) == ["d", "q"] and ptd["n"].batch_size == (1, 2, 1)
    ptd.set("n", TensorDict({"r": torch.ones(1, 2, 1, 3)}, [1, 2]))
    assert sorted(ptd["n"].keys()) == ["d", "q", "r"]
    with pytest.raises(RuntimeError, match="batch dimension mismatch"):
        ptd["n"] = {"s": torch.ones(1, 2)}  # fits the parent, not the group
    assert "s" not in ptd["n"].keys()
    ptd.close()


def test_update_with_keys_to_update_writes_only_those(ptd: PersistentTensorDict) -> None:
    other = TensorDict(
        {"a": torch.ones(2, 3), "n": {"b": torch.ones(2, 3, 4), "c": torch.ones(2, 3)}},
        batch_size=[2, 3],
    )
    ptd.update(other, keys_to_update=[("n", "c")])
    assert ptd["a"].sum() == 15 and (ptd["n", "b"] == 0).all()
    assert (ptd["n", "c"] == 1).all()
    ptd.update(other, keys_to_update=[("n",)])  # a key above: all of it
    assert (ptd["n", "b"] == 1).all()


def test_rows_of_a_collection_with_another_batch_size_are_refused_before_writing(
    ptd: PersistentTensorDict,
) -> None:
    rows = TensorDict({"a": torch.ones(2, 3), "n": {"b": torch.ones(2, 3, 4)}}, [2, 3])
    with pytest.raises(BatchSizeError, match="batch dimension mismatch") as caught:
        ptd[torch.tensor([0])] = rows
    assert "[1, 3]" in str(caught.value) and "[2, 3]" in str(caught.value)
    assert ptd["a"].sum() == 15  # nothing was written
    ptd[torch.tensor([0])] = rows[:1]
    assert (ptd["a"][0] == 1).all()


def test_a_collection_without_batch_dims_takes_the_files_batch(
    ptd: PersistentTensorDict,
) -> None:
    ptd["inner"] = TensorDict({"x": torch.ones(2, 3, 1)}, [])
    assert ptd["inner"].batch_size == torch.Size([2, 3])
    assert (ptd["inner", "x"] == 1).all()
    with pytest.raises(BatchSizeError, match="other"):
        ptd["other"] = TensorDict({"x": torch.ones(5)}, [])
    assert "other" not in ptd.keys()


def test_share_memory_is_refused_as_in_the_peer(ptd: PersistentTensorDict) -> None:
    # the entries live in the file; sharing fresh reads would read it all for nothing
    with pytest.raises(UnsupportedError, match="share_memory_") as caught:
        ptd.share_memory_()
    assert isinstance(caught.value, NotImplementedError)  # what the peer raises
    assert "to_tensordict()" in str(caught.value)
    assert not ptd.is_locked  # nothing changed
    shared = ptd.to_tensordict().share_memory_()
    assert shared.is_shared() and shared["a"].tolist() == ptd["a"].tolist()


def test_update_in_place_with_an_empty_collection_over_a_dataset_writes_nothing(
    ptd: PersistentTensorDict,
) -> None:
    # as a TensorDict's update_ in both libraries (and the peer's file): nothing to write
    ptd.update_({"a": TensorDict({}, batch_size=[2, 3]), "n": {"b": {}}})
    ptd.update_({"a": {}})
    assert ptd["a"].tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]
    assert torch.equal(ptd["n", "b"], torch.zeros(2, 3, 4))
    with pytest.raises(TclassError, match="'a'"):  # one holding leaves: refused, named
        ptd.update_({"a": {"q": torch.ones(2, 3)}})


def test_rename_key_into_itself_keeps_the_entry_under_the_new_key(
    ptd: PersistentTensorDict,
) -> None:
    # "n" to ("n", "w"), as a TensorDict's (and the peer's file): n holds only w, which
    # holds what n held; a tensor renamed below itself becomes a group over it
    before_b, before_a = ptd["n", "b"].clone(), ptd["a"].clone()
    ptd.rename_key_("n", ("n", "w"))
    ptd.rename_key_("a", ("a", "q", "r"))
    assert sorted(ptd.keys(True, True)) == [("a", "q", "r"), ("n", "w", "b")]
    assert torch.equal(ptd["n", "w", "b"], before_b) and torch.equal(ptd["a", "q", "r"], before_a)
    assert ptd["n", "w"].batch_size == torch.Size([2, 3])


def test_a_new_batch_size_of_fewer_dims_keeps_the_groups_names(tmp_path: Path) -> None:
    # as a TensorDict's: the file's names are those of the dims it keeps, its groups
    # (opened before or after) keep theirs
    source = TensorDict(
        {"m": {"a": torch.zeros(4, 1, 3)}, "k": {"b": torch.zeros(4, 1)}, "c": torch.zeros(4, 1)},
        batch_size=[4, 1],
        names=[None, "j"],
    )
    ptd = PersistentTensorDict.from_dict(source, filename=tmp_path / "n.h5")
    assert ptd["m"].names == [None, "j"]  # opened before
    ptd.batch_size = [4]
    assert ptd.names == [None] and ptd["m"].names == [None, "j"]
    ptd.batch_size = []
    assert ptd.names == [] and ptd["k"].names == [None, "j"] and ptd["m"].names == [None, "j"]
    plain = source.clone()
    plain.batch_size = []
    assert plain["k"].names == ptd["k"].names
    ptd.close()


def test_broadcast_to_and_a_clone_of_a_named_file_are_named_as_a_tensordict(
    tmp_path: Path,
) -> None:
    source = TensorDict(
        {"c": torch.zeros(2, 3), "n": {"b": torch.zeros(2, 3, 4, 5)}}, [2, 3], names=["i", "j"]
    )
    ptd = PersistentTensorDict.from_dict(source, filename=tmp_path / "named.h5")
    # read into memory and broadcast as a TensorDict, which drops the names (in both; the
    # peer's file keeps them for as many dims and fails for more)
    for shape in ([2, 3], [4, 2, 3]):
        out = ptd.broadcast_to(shape)
        assert type(out) is TensorDict and out.batch_size == torch.Size(shape)
        assert out.names == [None] * len(shape) and out["n"].names == [None] * len(shape)
    # clone() reads into memory: a new batch size names every dim of the nested group (the
    # peer's clone, a file, keeps ["i", "j", None] over its new batch size of 4 dims)
    copy = ptd.clone().auto_batch_size_(keep_compliant_size=True)
    assert copy["n"].batch_size == torch.Size([2, 3, 4, 5])
    assert (
        copy["n"].names
        == ["i", "j", None, None]
        == source.clone().auto_batch_size_(keep_compliant_size=True)["n"].names
    )
    ptd.close()


def test_nested_keys_of_a_file_list_each_group_before_its_keys_as_the_peer(
    tmp_path: Path,
) -> None:
    # The peer walks the file's groups as HDF5 visits them: a group comes before the keys
    # below it (a TensorDict lists it after them); its views and records over it too.
    source = TensorDict(
        {"z": torch.zeros(3), "n": {"m": {"d": torch.ones(3)}, "c": torch.ones(3)}}, [3]
    )
    ptd = PersistentTensorDict.from_dict(source, filename=tmp_path / "k.h5")
    expected = ["n", ("n", "c"), ("n", "m"), ("n", "m", "d"), "z"]
    assert list(ptd.keys(True)) == expected
    assert list(ptd[0:2].keys(include_nested=True)) == expected
    assert [key for key, _ in ptd.items(True)] == expected  # as its items, already
    assert list(ptd.keys(True, True)) == [("n", "c"), ("n", "m", "d"), "z"]
    assert list(ptd.get("n").keys(True)) == ["c", "m", ("m", "d")]
    # a TensorDict's order is kept: its own order of entries, a node after its keys
    assert list(source.keys(True)) == ["z", ("n", "m", "d"), ("n", "m"), ("n", "c"), "n"]
    ptd.close()


def test_nested_keys_of_a_record_over_a_file_list_each_group_first(tmp_path: Path) -> None:
    @tclass.tensorclass
    class Inner:
        c: torch.Tensor

    @tclass.tensorclass
    class Outer:
        a: torch.Tensor
        n: Inner

    record = Outer(a=torch.zeros(3), n=Inner(c=torch.ones(3), batch_size=[3]), batch_size=[3])
    record.to_h5(tmp_path / "r.h5")
    loaded = Outer.from_h5(tmp_path / "r.h5")
    assert list(loaded.keys(True)) == ["a", "n", ("n", "c")]
    assert list(record.keys(True)) == ["a", ("n", "c"), "n"]


def test_create_nested_over_a_group_replaces_it_with_an_empty_one(tmp_path: Path) -> None:
    # As a TensorDict's (and the peer's file): the new node is empty, of the file's batch
    # size, where a set would merge into the group (program 15,954,962 of
    # methods,features,entries,records L12)
    nested = TensorDict({"a": torch.ones(3, 1, 4)}, [3, 1, 4])
    source = TensorDict({"m": nested, "c": torch.ones(3, 1)}, [3, 1], names=["i", None])
    ptd = PersistentTensorDict.from_dict(source, filename=tmp_path / "c.h5")
    assert ptd.create_nested("m") is ptd
    assert list(ptd["m"].keys()) == [] and ptd["m"].batch_size == (3, 1)
    assert ptd["m"].names == ["i", None]
    ptd.create_nested(("m", "k"))  # a path through the new group adds below it
    assert list(ptd["m"].keys()) == ["k"]
    ptd.create_nested("c")  # a tensor is replaced too
    assert list(ptd["c"].keys()) == []
    ptd.close()
    back = TensorDict.from_h5(tmp_path / "c.h5")
    assert back["m"].batch_size == (3, 1) and list(back["m"].keys()) == ["k"]
