"""Tests for tclass/_state_dict.py: ``state_dict`` / ``load_state_dict`` on TensorDicts,
tensorclasses and lazy stacks, and seed 02's torchsnapshot scenarios, with the snapshot
library simulated: it writes each tensor of ``state_dict(keep_vars=True)`` on its own
and restores by copying chunks into the destination's own tensors in place."""

from __future__ import annotations

import json
import re
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given

import tclass
from tclass import MemoryMappedTensor, NonTensorData, TensorClass, TensorDict, errors, tensorclass

from strategies import SETTINGS, leaf_items, nested_items, same_storage, tensordicts  # noqa: E402


class Inner(TensorClass):
    x: torch.Tensor
    label: str = "in"


class Rec(TensorClass):
    obs: torch.Tensor
    inner: Inner
    env: str = "pong"


@tensorclass
class MyClass:
    x: torch.Tensor
    y: MyClass | None = None


def _td(offset: float = 0.0) -> TensorDict:
    return TensorDict(
        {
            "a": torch.arange(3.0) + offset,
            "b": TensorDict({"c": torch.ones(3, 2) + offset}, [3, 2]),
            "s": NonTensorData("hello", [3]),
        },
        [3],
    )


def _rec(offset: float = 0.0, env: str = "pong") -> Rec:
    inner = Inner(torch.arange(4.0).reshape(2, 2) + offset, batch_size=[2])
    return Rec(torch.zeros(2, 3) + offset, inner, env=env, batch_size=[2])


# --- taking a state dict ------------------------------------------------------------------


class TestStateDict:
    def test_flat_keys_and_metadata(self) -> None:
        td = _td()
        sd = td.state_dict()
        assert type(sd) is OrderedDict and list(sd) == ["a", "b.c"]
        # a Size, as the peer's; a TensorDict's node holds only its batch size and device
        assert sd._metadata[""] == {"batch_size": torch.Size([3]), "device": None}
        assert type(sd._metadata["b"]["batch_size"]) is torch.Size
        assert sd._metadata["b"] == {"batch_size": (3, 2), "device": None}
        # its Python value is a node of its own, written exactly as the peer writes it
        assert list(sd._metadata) == ["", "b", "s"]
        assert sd._metadata["s"] == {
            "batch_size": torch.Size([3]),
            "device": None,
            "_type": "NonTensorData",
            "_non_tensor": {"data": "hello", "_metadata": None, "_is_non_tensor": True},
        }

    def test_detached_views_unless_keep_vars(self) -> None:
        param = torch.nn.Parameter(torch.zeros(3))
        td = TensorDict({"p": param}, [3])
        sd = td.state_dict()
        assert not sd["p"].requires_grad and same_storage(sd["p"], param) and sd["p"] is not param
        assert td.state_dict(keep_vars=True)["p"] is param

    def test_device_recorded(self) -> None:
        sd = TensorDict({"a": torch.zeros(2)}, [2], device="cpu").state_dict()
        assert sd._metadata[""]["device"] == "cpu"

    def test_prefix_and_destination(self) -> None:
        destination: OrderedDict[str, Any] = OrderedDict(other=torch.zeros(1))
        sd = _td().state_dict(destination, prefix="td.")
        assert sd is destination and list(sd) == ["other", "td.a", "td.b.c"]
        assert set(sd._metadata) == {"td", "td.b", "td.s"}

    def test_into_a_module_state_dict(self) -> None:
        module = torch.nn.Linear(2, 2)
        sd = module.state_dict()
        _td().state_dict(sd, prefix="extra.")
        assert {"weight", "bias", "extra.a", "extra.b.c"} <= set(sd) and "extra" in sd._metadata

    def test_plain_dict_destination(self) -> None:
        # a TypeError, and an AttributeError as the peer's ("no attribute '_metadata'")
        with pytest.raises(errors.StateDictDestinationError, match="OrderedDict") as caught:
            _td().state_dict({})
        assert isinstance(caught.value, (TypeError, AttributeError, errors.EntryTypeError))
        with pytest.raises(AttributeError):
            _td().state_dict({})

    def test_nested(self) -> None:
        sd = _td().state_dict(flatten=False)
        assert (
            list(sd) == ["a", "b", "s"]
            and isinstance(sd.get("b"), OrderedDict)
            and list(sd["b"]) == ["c"]
        )
        # each nested dict carries its own _metadata, a Python value an empty dict's, as the peer's
        assert list(sd._metadata) == [""] and list(sd["b"]._metadata) == [""]
        assert sd["b"]._metadata[""] == {"batch_size": (3, 2), "device": None}
        assert not sd["s"] and sd["s"]._metadata[""]["_non_tensor"]["data"] == "hello"

    def test_dotted_key_collision(self) -> None:
        td = TensorDict({"b.c": torch.zeros(1), "b": {"c": torch.ones(1)}}, [1])
        with pytest.raises(errors.KeyConflictError, match="flatten=False"):
            td.state_dict()
        nested = td.state_dict(flatten=False)
        assert set(nested) == {"b.c", "b"}

    def test_record_metadata(self) -> None:
        sd = _rec().state_dict()
        assert list(sd) == ["obs", "inner.x"]
        # a record's Python values in its node, its fields not set as None; _type its
        # class's __qualname__ (TensorDicts and lazy stacks have none), as the peer's
        assert sd._metadata[""] == {
            "batch_size": torch.Size([2]),
            "device": None,
            "_type": "Rec",
            "_non_tensor": {"env": "pong"},
        }
        assert sd._metadata["inner"]["_non_tensor"] == {"label": "in"}
        assert "_type" not in _td().state_dict()._metadata[""]
        unset = MyClass(x=torch.zeros(2), batch_size=[2]).state_dict()
        assert unset._metadata[""]["_non_tensor"] == {"y": None}
        back = MyClass(x=torch.ones(2), y=MyClass(x=torch.ones(2), batch_size=[2]), batch_size=[2])
        back.load_state_dict(unset, strict=False)
        assert back.y is None and back.x.tolist() == [0.0, 0.0]

    def test_lazy_stack_gives_copies(self) -> None:
        members = [TensorDict({"a": torch.zeros(2)}, [2]), TensorDict({"a": torch.ones(2)}, [2])]
        stack = tclass.lazy_stack(members)
        sd = stack.state_dict(keep_vars=True)
        assert sd.get("a").tolist() == [[0.0, 0.0], [1.0, 1.0]]
        assert sd._metadata[""]["batch_size"] == (2, 2)
        sd["a"].fill_(5.0)  # a stacked copy: the members are unchanged (as in the peer)
        assert members[0].get("a").tolist() == [0.0, 0.0]

    def test_lazy_stack_loads_with_assign(self) -> None:
        members = [TensorDict({"a": torch.zeros(2)}, [2]), TensorDict({"a": torch.ones(2)}, [2])]
        stack = tclass.lazy_stack(members)
        stack.load_state_dict({"a": torch.full((2, 2), 7.0)}, assign=True)
        assert members[1].get("a").tolist() == [7.0, 7.0]

    def test_weights_only_save_round_trip(self, tmp_path: Path) -> None:
        torch.save(_td(5.0).state_dict(), tmp_path / "sd.pt")
        loaded = torch.load(tmp_path / "sd.pt", weights_only=True)
        dest = _td()
        dest.load_state_dict(loaded)
        assert (dest == _td(5.0)).all()


# --- loading one --------------------------------------------------------------------------


class TestLoadStateDict:
    def test_in_place(self) -> None:
        dest = TensorDict({"a": torch.zeros(3), "b": TensorDict({"c": torch.zeros(3, 2)}, [3, 2]),
                           "s": NonTensorData("bye", [3])}, [3])  # fmt: skip
        a, c = dest["a"], dest["b", "c"]
        assert dest.load_state_dict(_td(1.0).state_dict()) is dest
        assert dest["a"] is a and dest["b", "c"] is c
        assert (dest == _td(1.0)).all() and dest.get("s").data == "hello"

    def test_nested_form(self) -> None:
        dest = _td()
        dest.load_state_dict(_td(2.0).state_dict(flatten=False))
        assert (dest == _td(2.0)).all()

    def test_empty_destination_takes_the_structure(self) -> None:
        source = _td(1.0)
        dest = TensorDict()
        dest.load_state_dict(source.state_dict())
        assert dest.batch_size == torch.Size([3]) and dest.get("b").batch_size == torch.Size([3, 2])
        assert (dest == source).all() and dest.get("s").data == "hello"
        assert not same_storage(dest["a"], source["a"])  # copied, not shared

    def test_empty_destination_with_assign_shares(self) -> None:
        source = _td(1.0)
        dest = TensorDict()
        dest.load_state_dict(source.state_dict(), assign=True)
        assert same_storage(dest["a"], source["a"])

    def test_assign_replaces(self) -> None:
        dest = _td()
        sd = _td(3.0).state_dict()
        dest.load_state_dict(sd, assign=True)
        assert dest["a"] is sd["a"] and dest["b", "c"] is sd["b.c"]

    def test_strict_key_errors(self) -> None:
        sd = _td().state_dict()
        sd["zz"] = torch.zeros(3)
        del sd["b.c"]
        with pytest.raises(errors.StateDictKeyError) as info:
            _td().load_state_dict(sd)
        assert "['zz']" in str(info.value) and "['b.c']" in str(info.value)
        assert isinstance(info.value, KeyError) and isinstance(info.value, RuntimeError)

    def test_unexpected_key_in_the_peers_words(self) -> None:
        # The peer's KeyError says "Key 'a' wasn't expected in the state-dict", which its
        # tests (test_tensorclass.py::test_statedict_errors) and its users match.
        sd = _rec().state_dict()
        sd["a"] = None
        with pytest.raises(KeyError, match="Key 'a' wasn't expected in the state-dict"):
            _rec().load_state_dict(sd)
        del sd["a"]
        sd._metadata[""]["_non_tensor"]["a"] = None
        with pytest.raises(KeyError, match="Key 'a' wasn't expected in the state-dict"):
            _rec().load_state_dict(sd)
        sd = _td().state_dict()
        sd["zz"] = torch.zeros(3)
        with pytest.raises(errors.StateDictKeyError, match="Key 'zz' wasn't expected"):
            _td().load_state_dict(sd)

    def test_a_records_missing_tensor_is_refused_unless_not_strict(self) -> None:
        # README: the peer's record keeps the tensor the state dict lacks without a word.
        sd = _rec(1.0).state_dict()
        del sd["obs"]
        with pytest.raises(errors.StateDictKeyError, match=re.escape("missing keys ['obs']")):
            _rec().load_state_dict(sd)
        dest = _rec()
        dest.load_state_dict(sd, strict=False)
        assert torch.equal(dest.obs, torch.zeros(2, 3))
        assert torch.equal(dest.inner.x, torch.arange(4.0).reshape(2, 2) + 1.0)

    def test_not_strict_skips_keys_one_side_has(self) -> None:
        sd = _td(4.0).state_dict()
        sd["zz"] = torch.zeros(3)
        del sd["b.c"]
        dest = _td()
        dest.load_state_dict(sd, strict=False)
        assert "zz" not in dest.keys() and dest.get("a").tolist() == [4.0, 5.0, 6.0]
        assert torch.equal(dest["b", "c"], torch.ones(3, 2))

    def test_shape_mismatch(self) -> None:
        dest = TensorDict({"a": torch.zeros(4), "b": {"c": torch.zeros(4, 2)}}, [4])
        with pytest.raises(errors.BatchSizeError, match=r"'a' has shape \[3\].*\[4\].*assign=True"):
            dest.load_state_dict(_td().state_dict(), strict=False)

    def test_not_a_tensor(self) -> None:
        with pytest.raises(errors.EntryTypeError, match="'a'"):
            _td().load_state_dict({"a": "text", "b.c": torch.zeros(3, 2)})

    def test_array_likes_are_copied_in_as_tensors(self) -> None:
        # As the peer's set(..., inplace=True): a list or numpy array is a tensor.
        dest = _td()
        dest.load_state_dict({"a": [4, 5, 6], "b.c": np.ones((3, 2))})
        assert dest.get("a").tolist() == [4.0, 5.0, 6.0] and dest.get("a").dtype == torch.float32
        assert (dest.get(("b", "c")) == 1).all()

    def test_locked_destination(self) -> None:
        dest = _td().lock_()
        dest.load_state_dict(_td(1.0).state_dict())  # in place, same Python values: allowed
        assert dest.get("a").tolist() == [1.0, 2.0, 3.0]
        changed = _td().state_dict()
        changed._metadata["s"]["_non_tensor"]["data"] = "other"
        dest.load_state_dict(changed)  # a changed Python value in place, as the peer
        assert dest["s"] == "other" and dest.is_locked

    def test_python_value_without_its_node(self) -> None:
        sd = _td().state_dict()
        sd._metadata["gone"] = {"batch_size": [3], "device": None, "_non_tensor": {"v": 1}}
        with pytest.raises(errors.StateDictKeyError, match="gone"):
            _td().load_state_dict(sd)
        _td().load_state_dict(sd, strict=False)

    def test_loads_the_peer_state_dict(self) -> None:
        peer = pytest.importorskip("tensordict")
        theirs = peer.TensorDict(
            {"a": torch.arange(3.0), "b": {"c": torch.ones(3, 2)}, "s": "hello"}, [3]
        )
        dest = TensorDict()
        dest.load_state_dict(theirs.state_dict())
        assert dest.batch_size == torch.Size([3]) and dest.get("s").data == "hello"
        assert torch.equal(dest["b", "c"], torch.ones(3, 2))
        again = TensorDict({"a": torch.zeros(3), "b": {"c": torch.zeros(3, 2)}}, [3])
        again.load_state_dict(theirs.state_dict(flatten=False))
        assert again.get("a").tolist() == [0.0, 1.0, 2.0]


class TestRecords:
    def test_round_trip(self) -> None:
        dest = _rec(env="dst")
        ptr = dest.obs.data_ptr()
        dest.load_state_dict(_rec(7.0, env="src").state_dict())
        assert dest.obs.data_ptr() == ptr and dest.env == "src"
        assert (dest.obs == 7.0).all() and dest.inner.label == "in"

    def test_into_an_empty_tensordict(self) -> None:
        dest = TensorDict()
        dest.load_state_dict(_rec(1.0).state_dict())
        assert type(dest.get("inner")) is TensorDict and dest.get("inner").batch_size == torch.Size(
            [2]
        )
        assert dest.get("env").data == "pong" and dest["inner", "label"] == "in"

    def test_earlier_layout_with_dotted_values(self) -> None:
        """State dicts of earlier tclass versions kept nested records' values in the root
        entry under dotted keys; they still load."""
        sd = _rec().state_dict()
        sd._metadata[""]["_non_tensor"]["inner.label"] = "old"
        del sd._metadata["inner"]
        dest = _rec()
        dest.load_state_dict(sd)
        assert dest.inner.label == "old"

    def test_value_of_an_unknown_field(self) -> None:
        sd = _rec().state_dict()
        sd._metadata[""]["_non_tensor"]["nope"] = 1
        with pytest.raises(errors.StateDictKeyError, match="nope"):  # a KeyError (the peer)
            _rec().load_state_dict(sd)
        dest = _rec()
        dest.load_state_dict(sd, strict=False)
        assert dest.env == "pong"

    @pytest.mark.parametrize("flatten", [True, False])
    def test_an_unexpected_key_is_reported_whatever_it_holds(self, flatten: bool) -> None:
        # As the peer: the unexpected key (a KeyError), not the type of its value.
        sd = _rec().state_dict(flatten=flatten)
        (sd["inner"] if not flatten else sd)["nope"] = None
        with pytest.raises(errors.StateDictKeyError, match="nope"):
            _rec().load_state_dict(sd)
        _rec().load_state_dict(sd, strict=False)  # skipped, as the peer

    def test_absent_optional_value_is_set(self) -> None:
        class WithMeta(TensorClass):
            x: torch.Tensor
            meta: dict | None = None  # type: ignore[type-arg]

        source = WithMeta(torch.ones(2), meta={"k": 1}, batch_size=[2])
        dest = WithMeta(torch.zeros(2), batch_size=[2])
        dest.load_state_dict(source.state_dict())
        assert dest.meta == {"k": 1} and dest.x.tolist() == [1.0, 1.0]

    def test_per_element_values_survive_weights_only(self, tmp_path: Path) -> None:
        source = torch.stack([_rec(env="a")[0], _rec(env="b")[0]])
        torch.save(source.state_dict(), tmp_path / "sd.pt")
        dest = torch.stack([_rec()[0], _rec()[0]])
        dest.load_state_dict(torch.load(tmp_path / "sd.pt", weights_only=True))
        assert dest.env == ["a", "b"]
        fresh = TensorDict()
        fresh.load_state_dict(source.state_dict())
        assert isinstance(fresh.get("env"), tclass.NonTensorStack) and fresh.get(
            "env"
        ).tolist() == [
            "a",
            "b",
        ]

    def test_per_element_values_with_dims_below_their_node(self, tmp_path: Path) -> None:
        # A value stack of batch [2, 1] in a TensorDict of batch []: loaded with its own
        # dims (tclass spread it over the node's, no dims: one value, the nested lists).
        td = TensorDict({"s": [["a"], ["b"]], "x": torch.zeros(2)})
        assert td.get("s").batch_size == (2, 1)
        path = tmp_path / "sd.pt"
        torch.save(td.state_dict(), path)
        for dest in (td, TensorDict({"x": torch.ones(2)}), TensorDict()):
            dest.load_state_dict(torch.load(path, weights_only=True), strict=False)
            assert dest.get("s").batch_size == (2, 1) and dest.get("s").tolist() == [["a"], ["b"]]
            assert dest[()]["s"][1].tolist() == ["b"]

    def test_per_element_values_of_another_batch(self) -> None:
        sd = torch.stack([_rec(env="a")[0], _rec(env="b")[0]]).state_dict()
        del sd["obs"], sd["inner.x"]
        for count in (1, 3):
            dest = torch.stack([_rec()[0]] * count)
            # the recorded batch size is taken first, as the peer: [2] does not fit
            with pytest.raises(errors.BatchSizeError, match=r"batch size \[2\] for the root"):
                dest.load_state_dict(sd, strict=False)
            assert dest.batch_size == (count,) and dest.inner.batch_size == (count,)
        for entry in sd._metadata.values():
            entry.pop("batch_size", None)
        for count in (1, 3):
            dest = torch.stack([_rec()[0]] * count)
            with pytest.raises(errors.BatchSizeError, match="per-element values at 'env'"):
                dest.load_state_dict(sd, strict=False)

    def test_older_tensordict_layout(self) -> None:
        """tensordict's older tensorclasses gave {"_tensordict": ..., "_non_tensordict": ...};
        such state dicts load, as in the peer."""

        class Legacy(TensorClass):
            x: torch.Tensor
            name: str | None = None

        legacy = OrderedDict(
            _tensordict=OrderedDict(
                x=torch.tensor([1.0, 2.0]), __batch_size=torch.Size([2]), __device=None
            ),
            _non_tensordict={"name": "old"},
        )
        dest = Legacy(torch.zeros(2), batch_size=[2])
        ptr = dest.x.data_ptr()
        dest.load_state_dict(legacy)
        assert dest.x.tolist() == [1.0, 2.0] and dest.x.data_ptr() == ptr
        assert dest.name == "old"
        legacy["_non_tensordict"] = {"nope": 1}
        with pytest.raises(errors.StateDictKeyError, match="nope"):
            dest.load_state_dict(legacy)

    def test_frozen_record_loads_in_place(self) -> None:
        class Frozen(TensorClass, frozen=True):
            x: torch.Tensor

        frozen = Frozen(torch.zeros(2), batch_size=[2])
        frozen.load_state_dict(Frozen(torch.ones(2), batch_size=[2]).state_dict())
        assert frozen.x.tolist() == [1.0, 1.0]


@SETTINGS
@given(td=tensordicts())
def test_round_trip_into_empty_and_in_place(td: TensorDict) -> None:
    """Any TensorDict comes back equal (batch sizes of every node included) through an
    empty destination, and through a zeroed copy in place."""
    sd = td.state_dict()
    fresh = TensorDict()
    fresh.load_state_dict(sd)
    assert fresh.batch_size == td.batch_size
    for path, node in nested_items(td):
        assert fresh.get(path).batch_size == node.batch_size, path
    zeroed = td.clone().zero_()
    zeroed.load_state_dict(sd)
    for path, leaf in leaf_items(td):
        assert torch.equal(fresh.get(path), leaf) and torch.equal(zeroed.get(path), leaf), path


# --- seed 02: torchsnapshot -------------------------------------------------------------


CHUNK = 4096  # elements a restore holds in memory at once


def _take_snapshot(state: Mapping[str, torch.Tensor], folder: Path) -> None:
    """What ``Snapshot.take`` does with a ``StateDict``: every tensor written on its own,
    chunk by chunk, plus a manifest of dtypes and shapes."""
    folder.mkdir()
    manifest = {}
    for key, tensor in state.items():
        flat = tensor.detach().reshape(-1)
        with open(folder / f"{key}.bin", "wb") as out:
            for start in range(0, flat.numel(), CHUNK):
                out.write(flat[start : start + CHUNK].numpy().tobytes())
        manifest[key] = {"dtype": str(flat.numpy().dtype), "shape": list(tensor.shape)}
    (folder / "manifest.json").write_text(json.dumps(manifest))


def _restore_snapshot(folder: Path, state: Mapping[str, torch.Tensor]) -> int:
    """What ``Snapshot.restore`` does with a ``StateDict`` of live tensors: no
    ``load_state_dict`` call; each saved tensor is read in chunks from a memory map and
    copied into the destination tensor in place. Returns the largest chunk it held."""
    manifest = json.loads((folder / "manifest.json").read_text())
    largest = 0
    for key, dest in state.items():
        info = manifest[key]
        assert list(dest.shape) == info["shape"], key
        saved = np.memmap(folder / f"{key}.bin", dtype=info["dtype"], mode="r")
        flat = dest.view(-1)
        for start in range(0, flat.numel(), CHUNK):
            chunk = torch.from_numpy(np.array(saved[start : start + CHUNK]))
            largest = max(largest, chunk.numel())
            flat[start : start + CHUNK].copy_(chunk)
    return largest


class TestSnapshotSeed:
    def test_in_memory_restore_into_an_empty_tensordict(self, tmp_path: Path) -> None:
        """The seed's first case: the snapshot restores through ``load_state_dict`` into
        ``TensorDict()``."""
        source = TensorDict({"a": torch.randn(3), "b": {"c": torch.randn(3)}}, [])
        torch.save(source.state_dict(), tmp_path / "snap.pt")
        target = TensorDict()
        target.load_state_dict(torch.load(tmp_path / "snap.pt", weights_only=True))
        assert (source == target).all()

    def test_big_dataset_into_a_memory_mapped_destination(self, tmp_path: Path) -> None:
        """The seed's second case, with a tensor 16 chunks long: the destination is
        preallocated on disk and restored through its own tensors, chunk by chunk."""
        n = 16 * CHUNK
        source = TensorDict(
            {"a": torch.randn(n), "b": TensorDict({"c": torch.randn(n, 1)}, [n, 1])}, [n]
        )
        source.memmap_(tmp_path / "source")
        assert isinstance(source["b", "c"], MemoryMappedTensor)
        _take_snapshot(source.state_dict(keep_vars=True), tmp_path / "snapshot")

        dest = TensorDict(
            {"a": torch.zeros(n), "b": TensorDict({"c": torch.zeros(n, 1)}, [n, 1])}, [n]
        )
        dest.memmap_(tmp_path / "dest")
        leaves = (dest["a"], dest["b", "c"])
        state = dest.state_dict(keep_vars=True)
        assert state["a"] is leaves[0] and state["b.c"] is leaves[1]
        largest = _restore_snapshot(tmp_path / "snapshot", state)

        assert largest <= CHUNK < n  # never the whole tensor in memory at once
        assert (dest == source).all() and dest.get("b").batch_size == source.get("b").batch_size
        assert dest["a"] is leaves[0] and isinstance(dest["b", "c"], MemoryMappedTensor)
        reloaded = TensorDict.load_memmap(tmp_path / "dest")  # the data reached the files
        assert (reloaded == source).all()

    def test_tensorclass(self, tmp_path: Path) -> None:
        """The seed's tensorclass case: a self-referencing optional field."""
        tc = MyClass(x=torch.randn(3), y=MyClass(x=torch.randn(3), batch_size=[]), batch_size=[])
        tc.memmap_(tmp_path / "tc")
        assert isinstance(tc.y.x, MemoryMappedTensor)
        _take_snapshot(tc.state_dict(keep_vars=True), tmp_path / "snapshot")
        tc_dest = MyClass(
            x=torch.randn(3), y=MyClass(x=torch.randn(3), batch_size=[]), batch_size=[]
        )
        tc_dest.memmap_(tmp_path / "dest")
        _restore_snapshot(tmp_path / "snapshot", tc_dest.state_dict(keep_vars=True))
        assert (tc_dest == tc).all() and tc_dest.y.batch_size == tc.y.batch_size
        assert isinstance(tc_dest.y.x, MemoryMappedTensor)
        assert (MyClass.load_memmap(tmp_path / "dest") == tc).all()


def test_node_entries_of_older_tensordict_state_dicts_are_node_facts() -> None:
    flat = OrderedDict(a=torch.tensor(1), __batch_size=torch.Size([]), __device=None)
    td = TensorDict({"a": 0}, [])
    assert td.load_state_dict(flat)["a"] == 1 and list(td.keys()) == ["a"]
    nested = {
        "a": torch.ones(2),
        "s": {"b": torch.ones(2, 3), "__batch_size": torch.Size([2, 3]), "__device": None},
        "__batch_size": torch.Size([2]),
        "__device": None,
    }
    empty = TensorDict().load_state_dict(nested)  # an empty destination takes the facts
    assert empty.batch_size == (2,) and empty["s"].batch_size == (2, 3)
    dotted = {"a": torch.ones(2), "s.b": torch.ones(2, 3), "s.__batch_size": torch.Size([2, 3])}
    into = TensorDict({"a": torch.zeros(2), "s": {"b": torch.zeros(2, 3)}}, [2])
    assert into.load_state_dict(dotted)["s", "b"].sum() == 6


def test_load_state_dict_into_a_locked_record_with_per_element_values(tmp_path: Path) -> None:
    """Found by the differential fuzzer: a locked record whose ``str`` field became one
    value per element (``unsqueeze``) takes a state dict holding those same values back,
    as the peer; other values are written in place, as its tensors are, into each element
    (the peer writes them so too: ``env`` stays a stack, of ``"b"`` now)."""
    rec = Rec(obs=torch.ones(4, 1), inner=Inner(x=torch.ones(4), batch_size=[4]), batch_size=[4])
    saved = rec.memmap(tmp_path / "rec").unsqueeze(1)
    assert saved.is_locked
    state = saved.clone().apply(torch.zeros_like).state_dict()
    assert saved.load_state_dict(state, strict=True) is saved
    assert saved.env == [["pong"]] * 4 and not saved.obs.any()
    other = saved.clone()
    other.env = "b"
    assert saved.load_state_dict(other.state_dict()) is saved
    assert saved.is_locked and saved.env == [["b"]] * 4
    td = TensorDict({"a": torch.zeros(2), "s": "a"}, batch_size=[2]).lock_()
    new = td.clone()
    new["s"] = "b"
    assert td.load_state_dict(new.state_dict())["s"] == "b" and td.is_locked


def test_load_state_dict_writes_leaves_that_require_grad() -> None:
    # decided (README "or any leaf that requires grad"): written outside autograd, as
    # nn.Module.load_state_dict; the peer's update fails on the first one (fz29g,
    # programs 15,910,051 / 15,910,724 of methods,features,entries,records)
    td = TensorDict({"b": torch.ones(2, 1), "n": {"c": torch.ones(2)}}, [2]).requires_grad_()
    zeros = td.detach().apply(torch.zeros_like).state_dict()
    out = td.load_state_dict(zeros)
    assert out is td and td["b"].requires_grad and td["b"].is_leaf
    assert not td["b"].any() and not td["n", "c"].any()
    module = torch.nn.Linear(2, 3)
    swap = TensorDict.from_module(module).apply(torch.zeros_like).to_module(module)
    swap.load_state_dict(swap.clone().apply(torch.ones_like).state_dict())
    assert isinstance(swap["weight"], torch.nn.Parameter) and bool(swap["weight"].eq(1).all())
    peer = pytest.importorskip("tensordict")
    theirs = peer.TensorDict({"b": torch.ones(2, 1)}, [2]).requires_grad_()
    with pytest.raises(ValueError, match="Failed to update 'b'"):
        theirs.load_state_dict(theirs.detach().apply(torch.zeros_like).state_dict())


def test_a_meta_tensor_in_the_state_dict_is_refused_before_anything_is_loaded() -> None:
    td = TensorDict({"a": torch.zeros(3), "n": {"c": torch.zeros(3)}}, batch_size=[3])
    state = {"a": torch.ones(3), "n.c": torch.ones(3, device="meta")}
    with pytest.raises(errors.MetaTensorError, match="'n.c' is a meta tensor") as caught:
        td.load_state_dict(state)
    assert isinstance(caught.value, NotImplementedError)
    assert torch.equal(td["a"], torch.zeros(3))  # nothing loaded (it copied "a" first)
    td.load_state_dict({"a": torch.ones(3), "n.c": torch.ones(3)})
    assert torch.equal(td["n", "c"], torch.ones(3))
