"""Tensorclass records converted and carried (``test_tensorclass_ops.py`` has the ops):
TensorDict conversions, state dicts, consolidation, copies and pickling, DataLoader,
pytree and compile. The classes are module-level (so that they pickle); ``Rec`` and
``Inner`` are ``helpers/ops_records.py``'s."""

from __future__ import annotations

import copy
import dataclasses
import io
import pickle
from typing import Annotated, Any

import pytest
import torch
import torch.utils._pytree as pytree
from ops_records import Deco, Inner, Rec, assert_same_rec, make  # noqa: E402
from torch.utils.data import DataLoader, Dataset

import tclass
from tclass import NonTensorData, TensorClass, TensorDict, errors

from strategies import same_storage  # noqa: E402

FieldTypeError = errors.FieldTypeError
UnknownFieldError = errors.UnknownFieldError


class WithDefaults(TensorClass):
    obs: torch.Tensor
    env: str = "default"
    count: int = 3
    tags: list = dataclasses.field(default_factory=lambda: ["t"])
    label: torch.Tensor | None = None


PAIR_HOOKS: list[torch.Size] = []


class TensorPair(TensorClass):
    x: torch.Tensor
    y: torch.Tensor
    z: torch.Tensor | None = None

    def __post_init__(self) -> None:
        PAIR_HOOKS.append(self.batch_size)


class SpecTensorPair(TensorClass):
    x: Annotated[torch.Tensor, tclass.Spec("2")]
    y: torch.Tensor


class Frozen(TensorClass, frozen=True):
    x: torch.Tensor
    env: str


class Pair(TensorClass):
    a: torch.Tensor
    b: torch.Tensor | None = None


class Outer(TensorClass):
    pair: Pair
    td: TensorDict


# --- conversions ---------------------------------------------------------------------------


class TestTensorDictConversion:
    def test_to_tensordict_is_a_copy(self) -> None:
        rec = make()
        td = rec.to_tensordict()
        assert type(td) is TensorDict and type(td.get("inner")) is TensorDict
        assert td.batch_size == rec.batch_size
        assert torch.equal(td["obs"], rec.obs) and torch.equal(td["inner", "x"], rec.inner.x)
        assert not same_storage(td["obs"], rec.obs) and not same_storage(
            td["inner", "x"], rec.inner.x
        )
        assert type(td.get("env")) is NonTensorData and td.get("env").data == "pong"
        assert "meta" not in td.keys()

    def test_from_tensordict_shares(self) -> None:
        td = TensorDict({"obs": torch.zeros(4, 2), "inner": {"x": torch.arange(4)},
                         "env": NonTensorData("e", [4])}, [4])  # fmt: skip
        rec = Rec.from_tensordict(td)
        assert type(rec) is Rec and type(rec.inner) is Inner
        assert rec.obs is td["obs"] and rec.inner.x is td["inner", "x"]
        assert rec.env == "e" and rec.meta is None and rec.batch_size == torch.Size([4])

    def test_from_tensordict_keeps_the_key_order(self) -> None:
        # As the peer (a record read back from a folder lists its keys as read, and
        # from_tensordict(rec.to_tensordict()) keeps them so); tclass sorted them by field.
        td = TensorDict({"env": NonTensorData("e", [4]), "obs": torch.zeros(4, 2)}, [4])
        rec = Rec.from_tensordict(td)
        assert list(rec.keys()) == ["env", "obs"]
        assert list(rec.to_dict()) == ["env", "obs", "inner", "meta"]
        assert list(Rec.from_tensordict(rec.to_tensordict()).keys()) == ["env", "obs"]

    def test_from_tensordict_of_tensors_only(self) -> None:
        # A record of tensors from a TensorDict holding its fields: over that TensorDict
        # itself (as the peer's), with its batch, device and dim names, the hook run; a
        # spec'd class still goes field by field (its checks), the key order is td's.
        td = TensorDict({"x": torch.zeros(4, 2), "y": torch.ones(4)}, [4], names=["n"])
        PAIR_HOOKS.clear()
        rec = TensorPair.from_tensordict(td)
        assert rec.x is td["x"] and rec.y is td["y"] and rec._tensordict is td
        assert rec.names == ["n"] and rec.batch_size == torch.Size([4]) and rec.device is None
        assert PAIR_HOOKS == [torch.Size([4])]  # __post_init__, once
        rec.z = torch.ones(4)
        assert "z" in td.keys()  # shared, as the peer's
        assert list(
            TensorPair.from_tensordict(TensorDict({"y": td["y"], "x": td["x"]}, [4])).keys()
        ) == [
            "y",
            "x",
        ]
        on_meta = TensorDict({"x": torch.zeros(4, 2), "y": torch.ones(4)}, [4], device="meta")
        assert TensorPair.from_tensordict(on_meta).x.device == torch.device("meta")
        with pytest.raises(errors.FieldSpecError):
            SpecTensorPair.from_tensordict(TensorDict({"x": torch.zeros(4, 3), "y": td["y"]}, [4]))

    def test_from_tensordict_leaves_missing_required_fields_unset(self) -> None:
        rec = Rec.from_tensordict(TensorDict({"obs": torch.zeros(4, 2)}, [4]))
        assert rec.inner is None and rec.env is None and rec.meta is None  # as the peer
        assert list(rec.keys()) == ["obs"] and rec[1].env is None

    def test_from_tensordict_takes_non_tensordict_values(self) -> None:
        td = TensorDict({"obs": torch.zeros(4, 2)}, [4])
        rec = Rec.from_tensordict(td, non_tensordict={"env": "e", "meta": {"k": 1}})
        assert rec.env == "e" and rec[3].env == "e" and rec.meta == {"k": 1}
        assert rec.obs is td["obs"]
        with pytest.raises(errors.UnknownFieldError, match="'envv' is not a field of Rec"):
            Rec.from_tensordict(td, non_tensordict={"envv": "e"})

    def test_round_trip(self) -> None:
        rec = make()
        rec.meta = {"a": 1}
        back = Rec.from_tensordict(rec.to_tensordict())
        assert_same_rec(back, rec.obs, rec.inner.x)
        assert back.meta == {"a": 1}

    def test_from_tensordict_unknown_key(self) -> None:
        td = TensorDict({"obs": torch.zeros(4), "bogus": torch.zeros(4)}, [4])
        with pytest.raises(UnknownFieldError, match="bogus"):
            WithDefaults.from_tensordict(td)

    def test_from_tensordict_defaults(self) -> None:
        rec = WithDefaults.from_tensordict(TensorDict({"obs": torch.zeros(4)}, [4]))
        assert rec.env == "default" and rec.count == 3 and rec.tags == ["t"] and rec.label is None

    def test_from_tensordict_missing_required_is_not_set_yet(self) -> None:
        rec = WithDefaults.from_tensordict(TensorDict({"env": NonTensorData("x", [4])}, [4]))
        assert rec.obs is None and rec.env == "x"

    def test_to_dict(self) -> None:
        rec = make((2,))
        out = rec.to_dict()
        assert set(out) == {"obs", "inner", "env", "meta"}
        assert out["obs"] is rec.obs and out["inner"] == {"x": rec.inner.x}
        assert out["env"] == "pong" and out["meta"] is None
        assert "meta" not in rec.to_dict(retain_none=False)

    def test_to_dict_retain_none_reaches_nested_records(self) -> None:
        # As the peer: retain_none=False leaves out the absent fields at every level,
        # those of a record nested in a record or in a TensorDict too.
        class Holder(TensorClass):
            t: WithDefaults

        rec = Holder(t=WithDefaults(obs=torch.zeros(2), batch_size=[2]), batch_size=[2])
        assert rec.to_dict()["t"]["label"] is None
        assert "label" not in rec.to_dict(retain_none=False)["t"]
        holder = TensorDict(r=rec.t, batch_size=[2])
        assert holder.to_dict()["r"]["label"] is None
        assert set(holder.to_dict(retain_none=False)["r"]) == {"obs", "env", "count", "tags"}

    def test_to_dict_convert_tensors(self) -> None:
        out = make((2,)).to_dict(convert_tensors=True)
        assert out["obs"] == [[0.0, 1.0], [2.0, 3.0]] and out["inner"] == {"x": [0, 1]}

    def test_from_dict(self) -> None:
        rec = Rec.from_dict({"obs": torch.zeros(4, 2), "inner": {"x": torch.arange(4)}, "env": "e"},
                            batch_size=[4])  # fmt: skip
        assert type(rec.inner) is Inner and rec.inner.batch_size == torch.Size([4])
        assert rec.env == "e" and rec.meta is None

    def test_from_dict_round_trip(self) -> None:
        rec = make()
        back = Rec.from_dict(rec.to_dict(), batch_size=rec.batch_size)
        assert_same_rec(back, rec.obs, rec.inner.x)

    def test_equal_to_its_dict_with_a_field_left_none(self) -> None:
        """``meta`` is ``None``: ``to_dict`` lists it as ``None``, and so does a
        TensorDict built from that dict; both compare equal, as in the peer."""
        rec = make((2,))
        for other in (rec.to_dict(), TensorDict(rec.to_dict(), batch_size=[2])):
            same = rec == other
            assert type(same) is Rec and same.meta is None and bool(same.all())
            assert same.obs.shape == (2, 2) and same.obs.dtype is torch.bool
        zeroed = rec.to_dict() | {"obs": torch.zeros(2, 2)}
        assert (rec != zeroed).obs.tolist() == [[False, True], [True, True]]
        nested = TensorDict(rec=rec, batch_size=[2])
        assert bool((nested == nested.to_dict()).all())

    def test_equal_to_a_dict_still_needs_its_other_keys(self) -> None:
        rec = make((2,))
        with pytest.raises(errors.KeyNotFoundError, match=r"only in the left one: \['env'\]"):
            _ = rec == {key: v for key, v in rec.to_dict().items() if key != "env"}
        with pytest.raises(errors.KeyNotFoundError, match=r"only in the right one: \['extra'\]"):
            _ = rec == rec.to_dict() | {"extra": None}

    @pytest.mark.peer
    def test_equal_to_its_dict_as_the_peer(self) -> None:
        tensordict = pytest.importorskip("tensordict")
        for lib in (tclass, tensordict):

            class Node(lib.TensorClass):  # type: ignore[name-defined,misc]
                x: torch.Tensor
                child: Node | None = None
                tag: str | None = None

            rec = Node(torch.ones(3), Node(torch.zeros(3), batch_size=[3]), "t", batch_size=[3])
            holder = lib.TensorDict(rec=rec, batch_size=[3])
            assert bool((holder == holder.to_dict()).all()), lib
            assert bool((holder == lib.TensorDict(holder.to_dict(), batch_size=[3])).all()), lib
            assert (rec == rec.to_dict()).child.tag is None, lib

    def test_from_dict_defaults(self) -> None:
        rec = WithDefaults.from_dict({"obs": torch.zeros(2)}, batch_size=[2])
        assert rec.env == "default" and rec.count == 3 and rec.tags == ["t"]
        other = WithDefaults.from_dict({"obs": torch.zeros(2)}, batch_size=[2])
        assert other.tags is not rec.tags

    def test_from_dict_leaves_a_missing_required_field_unset(self) -> None:
        # As the peer's from_dict: None (not set yet), also for a nested dict.
        rec = Rec.from_dict({"obs": torch.zeros(4, 2), "inner": {}}, batch_size=[4])
        assert rec.env is None and rec.meta is None and "env" not in rec.keys()
        assert type(rec.inner) is Inner and rec.inner.x is None
        with pytest.raises(
            errors.ArgumentError,
            match="missing 1 required positional argument \\(the field 'env'\\)",
        ):
            Rec(obs=torch.zeros(4, 2), inner=None, batch_size=[4])  # the constructor: as before

    def test_from_dict_unknown_key(self) -> None:
        with pytest.raises(UnknownFieldError, match="nope"):
            WithDefaults.from_dict({"obs": torch.zeros(2), "nope": 1})

    @pytest.mark.parametrize("batch_dims, expected", [(0, []), (1, [4]), (2, [4, 3]), (3, [4, 3])])
    def test_from_dict_batch_dims(self, batch_dims: int, expected: list[int]) -> None:
        data = {"obs": torch.zeros(4, 3, 2), "inner": {"x": torch.zeros(4, 3)}, "env": "e"}
        rec = Rec.from_dict(data, batch_dims=batch_dims)
        assert rec.batch_size == torch.Size(expected)

    def test_replace(self) -> None:
        rec = make()
        got = rec.replace(env="new", obs=torch.ones(4, 3, 2))
        assert got.env == "new" and (got.obs == 1).all() and got.inner.x is rec.inner.x
        assert rec.env == "pong" and not (rec.obs == 1).all()
        # the nested record is a new one over the same tensors, as the peer's (fz41b):
        # setting its field leaves the source's as it was; writing into a tensor is seen
        assert got.inner is not rec.inner and not got.inner.is_locked
        before = rec.inner.x
        got.inner.x = torch.full((4, 3), 100)
        assert rec.inner.x is before and not (rec.inner.x == 100).any()
        got = rec.replace(env="other")
        got.inner.x += 5
        assert torch.equal(rec.inner.x, got.inner.x)
        locked = make().lock_()
        assert not locked.replace(env="x").inner.is_locked and locked.inner.is_locked
        with pytest.raises(UnknownFieldError):
            rec.replace(bogus=1)
        with pytest.raises(FieldTypeError):
            rec.replace(env=torch.zeros(4))

    def test_replace_merges_into_nested(self) -> None:
        # a mapping or collection given for a nested record or TensorDict field is merged
        # into a copy of it, as the peer's replace (a copy, then update): the keys it
        # lacks keep their values (fz44: all six families, --length 6)
        a, b = torch.zeros(3, 2), torch.ones(3)
        rec = Outer(Pair(a, batch_size=[3]), TensorDict({"u": a}, [3]), batch_size=[3])
        got = rec.replace({"pair": TensorDict({}, [3]), "td": {"v": b}})
        assert got.pair.a is a and got.pair.b is None
        assert got.td["u"] is a and got.td["v"] is b
        got = rec.replace(pair={"b": b}, td=TensorDict({"u": b}, [3]))
        assert type(got.pair) is Pair and got.pair.a is a and got.pair.b is b
        assert got.td["u"] is b
        got = rec.replace(pair=Pair(b, b=None, batch_size=[3]))  # a record merges too
        assert got.pair.a is b and got.pair.b is None
        # the source is left as it was, its nested record and TensorDict included
        assert rec.pair.b is None and rec.td["u"] is a and "v" not in rec.td.keys()
        with pytest.raises(UnknownFieldError, match="Pair has no field 'q'"):
            rec.replace(pair={"q": b})
        with pytest.raises(errors.BatchMismatchError):
            rec.replace(pair={"b": torch.ones(4)})
        assert rec.pair.b is None


class TestStateDict:
    def test_keys_and_detached(self) -> None:
        rec = make()
        rec.obs.requires_grad_(True)
        rec.meta = {"k": 1}
        sd = rec.state_dict()
        assert list(sd) == ["obs", "inner.x"] or set(sd) == {"obs", "inner.x"}
        assert not sd["obs"].requires_grad and same_storage(sd["obs"], rec.obs)
        assert sd._metadata[""]["_non_tensor"] == {"env": "pong", "meta": {"k": 1}}
        assert sd._metadata[""]["batch_size"] == (4, 3)

    def test_keep_vars(self) -> None:
        rec = make()
        sd = rec.state_dict(keep_vars=True)
        assert sd["obs"] is rec.obs and sd["inner.x"] is rec.inner.x

    def test_load_in_place(self) -> None:
        src, dst = make(env="src", offset=100), make(env="dst")
        src.meta = {"m": 2}
        ptrs = (dst.obs.data_ptr(), dst.inner.x.data_ptr())
        assert dst.load_state_dict(src.state_dict()) is dst
        assert (dst.obs.data_ptr(), dst.inner.x.data_ptr()) == ptrs
        assert_same_rec(dst, src.obs, src.inner.x, env="src")
        assert dst.meta == {"m": 2}

    def test_load_strict(self) -> None:
        dst = make()
        sd = make().state_dict()
        sd["bogus"] = torch.zeros(1)
        with pytest.raises(KeyError, match="bogus"):
            dst.load_state_dict(sd)
        missing = make().state_dict()
        del missing["inner.x"]
        with pytest.raises(KeyError, match="inner.x"):
            dst.load_state_dict(missing)

    def test_load_not_strict(self) -> None:
        dst = make()
        sd = make(offset=100).state_dict()
        del sd["inner.x"]
        sd["bogus"] = torch.zeros(1)
        dst.load_state_dict(sd, strict=False)
        assert torch.equal(dst.obs, make(offset=100).obs)
        assert torch.equal(dst.inner.x, make().inner.x)

    def test_torch_save_round_trip(self, tmp_path: Any) -> None:
        src = make(env="saved", offset=5)
        path = tmp_path / "sd.pt"
        torch.save(src.state_dict(), path)
        dst = make()
        dst.load_state_dict(torch.load(path))
        assert_same_rec(dst, src.obs, src.inner.x, env="saved")

    def test_load_per_element_values(self) -> None:
        src = torch.stack([make((), env="a"), make((), env="b")])
        dst = torch.stack([make(()), make(())])
        dst.load_state_dict(src.state_dict())
        assert dst.env == ["a", "b"]


class _Reduced:
    """Pickles as ``fn(*args)``: what a crafted file holds."""

    def __init__(self, fn: Any, *args: Any) -> None:
        self.fn, self.args = fn, args

    def __reduce__(self) -> tuple[Any, ...]:
        return (self.fn, self.args)


class TestConsolidated:
    def test_the_buffer_attribute_exists_once_consolidated(self) -> None:
        rec = make()
        assert not hasattr(rec, "_consolidated")  # as the peer's record
        with pytest.raises(errors.NotConsolidatedError, match="Rec is not consolidated"):
            rec._consolidated  # noqa: B018
        packed = rec.consolidate()
        assert hasattr(packed, "_consolidated") and packed.is_consolidated()
        assert packed.env == "pong" and torch.equal(packed.obs, rec.obs)
        assert not hasattr(packed.clone(), "_consolidated")  # a copy has its own tensors


class TestCopyPickle:
    def _rich(self) -> Rec:
        s = torch.stack([make((3,), env="a"), make((3,), env="b", offset=100)])
        s.meta = {"k": [1, 2]}
        return s

    def test_pickle_round_trip(self) -> None:
        rec = self._rich()
        back = pickle.loads(pickle.dumps(rec))
        assert_same_rec(back, rec.obs, rec.inner.x, env=rec.env)
        assert back.meta == {"k": [1, 2]} and back[1, 0].env == "b"

    def test_pickle_locked_and_decorated(self) -> None:
        d = Deco(torch.zeros(2), "e", batch_size=[2]).lock_()
        back = pickle.loads(pickle.dumps(d))
        assert type(back) is Deco and back.env == "e" and back.is_locked

    def test_frozen(self) -> None:
        f = Frozen(torch.arange(3), "e", batch_size=[3])
        back = pickle.loads(pickle.dumps(f))
        assert type(back) is Frozen and back.env == "e" and torch.equal(back.x, f.x)
        with pytest.raises(errors.FrozenInstanceError):
            back.env = "z"
        changed = f.replace(env="z")
        assert changed.env == "z" and f.env == "e" and changed.x is f.x
        assert type(f[1:]) is Frozen and f[1:].is_locked

    def test_torch_load_weights_only_once_the_classes_are_allowed(self) -> None:
        rec = self._rich()
        buffer = io.BytesIO()
        torch.save([rec, Deco(torch.zeros(2), "e", batch_size=[2]).lock_()], buffer)
        buffer.seek(0)
        with pytest.raises(pickle.UnpicklingError, match="Rec"):  # not allowed yet
            torch.load(buffer, weights_only=True)
        buffer.seek(0)
        with torch.serialization.safe_globals([Rec, Inner, Deco]):
            back, deco = torch.load(buffer, weights_only=True)
        assert type(back) is Rec and type(back.inner) is Inner
        assert_same_rec(back, rec.obs, rec.inner.x, env=rec.env)
        assert back.meta == {"k": [1, 2]} and type(deco) is Deco and deco.is_locked
        lazy = tclass.lazy_stack([make((2,)), make((3,), env="b")])
        buffer = io.BytesIO()
        torch.save(lazy, buffer)
        buffer.seek(0)
        with torch.serialization.safe_globals([Rec, Inner]):
            back_lazy = torch.load(buffer, weights_only=True)
        assert type(back_lazy) is Rec and back_lazy[1].env == "b"

    def test_a_pickle_naming_another_class_is_refused(self) -> None:
        rebuild, (_, fields) = make().__reduce__()
        crafted = pickle.dumps(_Reduced(rebuild, torch.Size, fields))
        with pytest.raises(errors.PickleRefusedError, match="not a TensorClass"):
            pickle.loads(crafted)

    def test_copy_shares_tensors(self) -> None:
        rec = make()
        got = copy.copy(rec)
        # as the peer's (``clone(recurse=False)``): the leaves shared, the structure new
        assert got is not rec and got.obs is rec.obs and got.inner.x is rec.inner.x
        assert got.inner is not rec.inner
        got.obs = torch.zeros(4, 3, 2)
        got.env = "other"
        got.inner.x = torch.zeros_like(rec.inner.x)
        assert rec.env == "pong" and not (rec.obs == 0).all()
        assert got.inner.x is not rec.inner.x  # setting the copy's nested field left the source's

    def test_deepcopy(self) -> None:
        rec = self._rich()
        got = copy.deepcopy(rec)
        assert_same_rec(got, rec.obs, rec.inner.x, env=rec.env)
        assert not same_storage(got.obs, rec.obs) and not same_storage(got.inner.x, rec.inner.x)
        assert got.meta is not rec.meta and got.meta == rec.meta


# --- DataLoader ----------------------------------------------------------------------------


class _Items(Dataset):
    def __init__(self, rec: Rec) -> None:
        self.rec = rec

    def __len__(self) -> int:
        return len(self.rec)

    def __getitem__(self, i: int) -> Rec:
        return self.rec[i]


class TestDataLoader:
    def test_record_as_dataset(self) -> None:
        rec = make((10, 3))
        batches = list(DataLoader(rec, batch_size=4))
        assert [b.batch_size for b in batches] == [torch.Size([4, 3])] * 2 + [torch.Size([2, 3])]
        assert all(type(b) is Rec and b.env == "pong" for b in batches)
        assert torch.equal(torch.cat([b.obs for b in batches]), rec.obs)

    def test_getitems(self) -> None:
        rec = make((6,))
        got = rec.__getitems__([5, 0, 2])
        assert_same_rec(got, rec.obs[[5, 0, 2]], rec.inner.x[[5, 0, 2]])

    def test_shuffle(self) -> None:
        rec = make((8,))
        batches = list(DataLoader(rec, batch_size=4, shuffle=True))
        assert all(type(b) is Rec and b.batch_size == torch.Size([4]) for b in batches)
        seen = torch.cat([b.inner.x for b in batches])
        assert sorted(seen.tolist()) == list(range(8))
        for b in batches:
            assert torch.equal(b.obs, rec.obs[b.inner.x])

    def test_map_style_default_collate(self) -> None:
        rec = make((8,))
        rec[3] = make((), env="odd")
        batches = list(DataLoader(_Items(rec), batch_size=4))
        assert all(type(b) is Rec and b.batch_size == torch.Size([4]) for b in batches)
        assert torch.equal(batches[1].obs, rec.obs[4:])
        assert batches[0].env == ["pong", "pong", "pong", "odd"] and batches[1].env == ["pong"] * 4

    def test_default_collate_of_different_batch_dims_is_a_type_error(self) -> None:
        # nu25a: a StackError (ValueError, RuntimeError) where the peer's collate raises
        # TypeError, which code falling back on it catches
        from torch.utils.data import default_collate

        rows = [
            TensorPair(x=torch.ones(2), y=torch.ones(()), batch_size=[]),
            TensorPair(x=torch.ones(1, 2), y=torch.ones(1), batch_size=[1]),
        ]
        with pytest.raises(TypeError, match="different numbers of batch dims") as info:
            default_collate(rows)
        assert isinstance(info.value, errors.StackError)

    def test_default_collate_of_a_record_and_a_tensordict_is_a_type_error(self) -> None:
        # nu25a: a record and a TensorDict of the same keys in one batch; the peer's
        # collate raises TypeError ("mixes tensorclass instances with tensordicts")
        from torch.utils.data import default_collate

        pair = TensorPair(x=torch.ones(2), y=torch.ones(()), batch_size=[])
        td = TensorDict(x=torch.zeros(2), y=torch.zeros(()), batch_size=[])
        for rows in ([pair, td], [td, pair], [pair, pair, td]):
            with pytest.raises(TypeError, match="TensorDict") as info:
                default_collate(rows)
            assert isinstance(info.value, errors.StackTypeError)
            assert "TensorPair" in str(info.value)
        batch = next(iter(DataLoader([td, td.clone()], batch_size=2)))  # one kind: stacked
        assert type(batch) is TensorDict and batch.batch_size == torch.Size([2])

    def test_default_collate_of_episodes_of_different_lengths(self, tmp_path: Any) -> None:
        # nu25a: the default collate stacked with torch.stack and refused records of
        # different lengths (StackError); the peer's collate gives a lazy stack of them
        eps = tclass.lazy_stack(
            [
                TensorPair(x=torch.full((n, 2), float(n)), y=torch.arange(n), batch_size=[n])
                for n in (2, 3, 4, 5)
            ]
        )
        saved = eps.memmap(tmp_path / "eps")
        batches = list(DataLoader(_Items(saved), batch_size=2))  # type: ignore[arg-type]
        assert [type(b) for b in batches] == [TensorPair, TensorPair]
        assert [b.batch_size for b in batches] == [torch.Size([2, -1])] * 2
        assert [[b[i].x.shape[0] for i in range(2)] for b in batches] == [[2, 3], [4, 5]]
        assert torch.equal(batches[1][0].y, torch.arange(4))
        assert torch.equal(batches[1][1].x, torch.full((5, 2), 5.0))
        tds = [TensorDict(x=torch.ones(n)) for n in (2, 3)]
        got = DataLoader(tds, batch_size=2).__iter__().__next__()  # type: ignore[arg-type]
        assert type(got) is tclass.LazyStackedTensorDict and got.batch_size == torch.Size([2])
        assert [t.tolist() for t in got.unbind(0) for t in [t["x"]]] == [
            [1.0, 1.0],
            [1.0, 1.0, 1.0],
        ]


# --- pytree and compile --------------------------------------------------------------------


class TestPytree:
    def test_flatten_gives_tensor_leaves(self) -> None:
        rec = make()
        rec.meta = {"k": 1}
        leaves, spec = pytree.tree_flatten(rec)
        assert len(leaves) == 2
        assert any(leaf is rec.obs for leaf in leaves) and any(
            leaf is rec.inner.x for leaf in leaves
        )
        back = pytree.tree_unflatten(leaves, spec)
        assert_same_rec(back, rec.obs, rec.inner.x)
        assert back.meta == {"k": 1}

    def test_tree_map(self) -> None:
        rec = torch.stack([make((3,), env="a"), make((3,), env="b")])
        got = pytree.tree_map(lambda t: t + 1, rec)
        assert_same_rec(got, rec.obs + 1, rec.inner.x + 1, env=rec.env)

    def test_in_containers(self) -> None:
        rec = make()
        leaves, _ = pytree.tree_flatten({"a": [rec, torch.zeros(1)]})
        assert len(leaves) == 3

    def test_specs_equal_for_equal_values(self) -> None:
        _, spec_a = pytree.tree_flatten(make(env="a"))
        _, spec_b = pytree.tree_flatten(make(env="a", offset=3))
        _, spec_c = pytree.tree_flatten(make(env="c"))
        assert spec_a == spec_b and spec_a != spec_c


def _compile_body(rec: Rec) -> Rec:
    out = rec.clone()
    out.obs = out.obs * 2
    part = out[1:]
    stacked = torch.stack([part, part]).reshape(-1, 3)
    fresh = Rec(stacked.obs + 1, stacked.inner, stacked.env, batch_size=stacked.batch_size)
    return fresh


class TestCompile:
    def test_eager_backend(self) -> None:
        torch._dynamo.reset()
        rec = make()
        expected = _compile_body(rec)
        got = torch.compile(_compile_body, fullgraph=True, backend="eager")(rec)
        assert_same_rec(got, expected.obs, expected.inner.x)

    def test_eager_backend_index_write(self) -> None:
        def fn(rec: Rec) -> Rec:
            rec = rec.clone()
            rec[0] = rec[1]
            return rec.unsqueeze(0)[:, 1:]

        torch._dynamo.reset()
        rec = make()
        expected = fn(rec)
        got = torch.compile(fn, fullgraph=True, backend="eager")(rec)
        assert_same_rec(got, expected.obs, expected.inner.x)

    def test_a_value_per_element(self) -> None:
        """Views of per-element Python values stay in the graph (fullgraph); an index by
        a tensor picks the values outside the trace (a graph break)."""

        def views(rec: Rec) -> Rec:
            return rec[1:].reshape(-1)[::2].unsqueeze(0)[..., None, 1:].expand(3, 1, 1)

        def by_tensor(rec: Rec) -> Rec:
            return rec[torch.tensor([1, 0])].reshape(-1)

        rec = torch.stack([make((3,), env="a"), make((3,), env="b")])
        assert rec.env == [["a"] * 3, ["b"] * 3]
        for fn, fullgraph in ((views, True), (by_tensor, False), (by_tensor, False)):
            torch._dynamo.reset()
            expected = fn(rec)
            got = torch.compile(fn, fullgraph=fullgraph, backend="eager")(rec)
            assert got.env == expected.env and got.batch_size == expected.batch_size
            assert torch.equal(got.obs, expected.obs) and torch.equal(got.inner.x, expected.inner.x)

    @pytest.mark.filterwarnings("ignore:`torch.jit.script_method` is deprecated:DeprecationWarning")
    def test_inductor_backend(self) -> None:
        def fn(rec: Rec) -> Rec:
            return rec.apply(lambda t: t * 3 + 1).reshape(-1)

        torch._dynamo.reset()
        rec = make()
        expected = fn(rec)
        got = torch.compile(fn, fullgraph=True, backend="inductor")(rec)
        assert_same_rec(got, expected.obs, expected.inner.x)


@tclass.tensorclass
class _WithOptional:
    x: torch.Tensor
    opt: torch.Tensor | None = None
    label: str | None = None


def test_from_tensordict_reads_a_kept_none_as_unset() -> None:
    """``to_tensordict(retain_none=True)`` keeps an unset field as a ``None`` value;
    ``from_tensordict`` of it gives the field unset again, a tensor field too (it refused
    the value node: fz28f, program 15,890,402), as the peer's."""
    rec = _WithOptional(x=torch.zeros(2, 1), batch_size=[2])
    td = rec.to_tensordict(retain_none=True)
    assert type(td.get("opt")) is NonTensorData and td.get("opt").data is None
    back = _WithOptional.from_tensordict(td)
    assert back.opt is None and back.label is None and torch.equal(back.x, rec.x)
    with pytest.raises(errors.FieldTypeError, match=r"opt is annotated"):
        _WithOptional.from_tensordict(TensorDict(x=torch.zeros(2), opt="no", batch_size=[2]))
