"""Tests for tclass._base.implemented._lock_graph: a lock reaches nested collections, and a nested
collection cannot be unlocked on its own while a collection that locked it is alive and
locked (as the peer's "lock graph"); weak references, so nothing is kept alive."""

from __future__ import annotations

import gc
import pickle
import re
import weakref
from pathlib import Path

import pytest
import torch

from tclass import (
    LazyStackedTensorDict,
    NonTensorData,
    PersistentTensorDict,
    TensorClass,
    TensorDict,
    TensorDictParams,
)
from tclass.errors import LockedError, TclassError

_REFUSED = "Cannot unlock"


def _tree() -> TensorDict:
    return TensorDict(a=torch.zeros(2), b=TensorDict(c=TensorDict(d=torch.zeros(2))))


def _refuses_unlock(node: object) -> LockedError:
    with pytest.raises(LockedError, match=_REFUSED) as info:
        node.unlock_()  # type: ignore[attr-defined]
    assert isinstance(info.value, RuntimeError) and isinstance(info.value, TclassError)
    return info.value


class Record(TensorClass):
    x: torch.Tensor
    inner: TensorDict


class Frozen(TensorClass, frozen=True):
    x: torch.Tensor


class TestTensorDict:
    def test_nested_child_refuses_while_the_root_is_locked(self) -> None:
        td = _tree().lock_()
        b, c = td["b"], td["b", "c"]
        assert b.is_locked and c.is_locked
        error = _refuses_unlock(b)
        assert re.match(_REFUSED, str(error))
        assert "TensorDict" in str(error) and "unlock" in str(error)
        _refuses_unlock(c)
        assert td.is_locked and b.is_locked and c.is_locked
        with pytest.raises(LockedError):
            b.is_locked = False

    def test_root_unlock_releases_the_tree(self) -> None:
        td = _tree().lock_()
        b, c = td["b"], td["b", "c"]
        td.unlock_()
        assert not (td.is_locked or b.is_locked or c.is_locked)
        b.lock_()
        b.unlock_()  # no stale link to td remains
        td.lock_()
        td.unlock_()
        c.lock_().unlock_()

    def test_child_unlocks_once_the_root_is_gone(self) -> None:
        td = _tree().lock_()
        b, c = td["b"], td["b", "c"]
        ref = weakref.ref(td)
        del td
        gc.collect()
        assert ref() is None  # the children do not keep their root alive
        assert b.is_locked and c.is_locked
        _refuses_unlock(c)  # b, alive and locked, still holds c
        b.unlock_()
        assert not b.is_locked and not c.is_locked

    def test_root_in_a_reference_cycle_is_collected_before_refusing(self) -> None:
        td = _tree()
        td.set_non_tensor("me", None)
        td.lock_()
        b = td["b"]
        cycle: list[object] = [td]
        cycle.append(cycle)
        del td, cycle
        b.unlock_()  # the unreachable root is collected, then no longer holds b
        assert not b.is_locked

    def test_unlocking_the_root_of_a_nested_lock(self) -> None:
        td = _tree()
        b, c = td["b"], td["b", "c"]
        b.lock_()
        assert not td.is_locked and c.is_locked
        _refuses_unlock(c)
        b.unlock_()
        assert not c.is_locked

    def test_child_shared_by_two_locked_roots(self) -> None:
        shared = TensorDict(x=torch.zeros(()))
        one, two = TensorDict(s=shared).lock_(), TensorDict(s=shared).lock_()
        # as the peer: neither root unlocks (the other holds the child), nor the child
        _refuses_unlock(one)
        _refuses_unlock(two)
        _refuses_unlock(shared)
        assert one.is_locked and two.is_locked and shared.is_locked
        group = TensorDict(one=one, two=two).lock_()
        group.unlock_()
        assert not (one.is_locked or two.is_locked or shared.is_locked)

    def test_failed_unlock_leaves_the_tree_locked(self) -> None:
        other = TensorDict(c=TensorDict(x=torch.zeros(()))).lock_()
        c = other["c"]
        parent = TensorDict(c=c)
        _refuses_unlock(parent)  # c is held by `other`
        # as the peer: the refused unlock_ locks the tree it had unlocked
        assert parent.is_locked and c.is_locked

    def test_locked_child_set_into_an_unlocked_parent(self) -> None:
        child = TensorDict(x=torch.zeros(())).lock_()
        parent = TensorDict(c=child)
        assert parent["c"] is child and child.is_locked and not parent.is_locked
        child.unlock_()  # the parent, unlocked, does not hold it
        child.lock_()
        parent.lock_()
        _refuses_unlock(child)
        parent.unlock_()
        assert not child.is_locked

    def test_replaced_child_is_released(self) -> None:
        td = _tree().lock_()
        old = td["b"]
        td.unlock_()
        td["b"] = TensorDict(z=torch.zeros(()))
        td.lock_()
        assert not old.is_locked
        old.lock_().unlock_()

    def test_lock_of_a_locked_collection_adds_no_link(self) -> None:
        td = _tree()
        b = td["b"].lock_()
        td.lock_()
        _refuses_unlock(b)
        td.unlock_()
        assert not b.is_locked

    def test_unlock_block_restores_the_lock(self) -> None:
        td = _tree().lock_()
        b = td["b"]
        with td.unlock_():
            assert not td.is_locked and not b.is_locked
            td["z"] = torch.zeros(2)
            b["y"] = torch.zeros(())
        assert td.is_locked and b.is_locked
        _refuses_unlock(b)  # relocked through the root: still held
        with pytest.raises(LockedError, match=_REFUSED):
            with b.unlock_():
                pass
        assert b.is_locked

    def test_lock_block_of_the_root(self) -> None:
        td = _tree()
        b = td["b"]
        with td.lock_():
            _refuses_unlock(b)
        assert not td.is_locked and not b.is_locked

    def test_pickle_and_copies_hold_no_links(self) -> None:
        td = _tree().lock_()
        again = pickle.loads(pickle.dumps(td))
        assert again.is_locked and again["b"].is_locked
        _refuses_unlock(again["b"])
        again.unlock_()
        clone = td.clone()
        assert not clone.is_locked
        clone["b"].lock_().unlock_()

    def test_non_tensor_entry(self) -> None:
        td = TensorDict(s=NonTensorData("hi"), n=TensorDict(s=NonTensorData("a")))
        td.lock_()
        s = td.get("s")
        assert s.is_locked
        _refuses_unlock(s)
        td.unlock_()
        assert not s.is_locked


class TestMemmapAndResults:
    def test_memmap_locks_each_level_on_its_own(self, tmp_path: Path) -> None:
        # as the peer: a memory-mapped copy is locked level by level, without links
        for saved in (_tree().memmap(tmp_path / "copy"), _tree().memmap_(tmp_path / "inplace")):
            b = saved["b"]
            assert saved.is_locked and b.is_locked
            saved["b", "c"].unlock_()
            b.unlock_()
            assert saved.is_locked
            saved.unlock_()

    def test_relocked_memmap_links(self, tmp_path: Path) -> None:
        saved = _tree().memmap(tmp_path)
        saved.unlock_()
        saved.lock_()
        _refuses_unlock(saved["b"])

    @pytest.mark.parametrize(
        "make",
        [
            lambda: _tree().share_memory_(),
            lambda: _tree().consolidate(),
            lambda: TensorDict(_tree().to_dict(), lock=True),
            lambda: _tree().lock_().exp(),
        ],
    )
    def test_locked_results_link(self, make: object) -> None:
        out = make()  # type: ignore[operator]
        assert out.is_locked
        _refuses_unlock(out["b"])
        out.unlock_()
        assert not out["b"].is_locked


class TestLazyStack:
    def test_members_refuse_while_the_stack_is_locked(self) -> None:
        one, two = _tree(), _tree()
        stack = LazyStackedTensorDict(one, two).lock_()
        assert one.is_locked and one["b"].is_locked
        _refuses_unlock(one)
        _refuses_unlock(one["b"])
        stack.unlock_()
        assert not one.is_locked and not two["b"].is_locked

    def test_nested_stack_refuses(self) -> None:
        td = TensorDict(s=LazyStackedTensorDict(_tree(), _tree()))
        td.lock_()
        s = td["s"]
        _refuses_unlock(s)
        _refuses_unlock(s.tensordicts[0])
        td.unlock_()
        assert not s.is_locked and not s.tensordicts[0].is_locked

    def test_state_follows_the_members_unless_locked_through_it(self) -> None:
        one, two = _tree(), _tree()
        stack = LazyStackedTensorDict(one, two)
        one.lock_()
        assert not stack.is_locked
        two.lock_()
        assert stack.is_locked  # as the peer: every member is locked
        one.unlock_()  # locked on its own, not through the stack
        assert not stack.is_locked

    def test_stack_of_locked_members(self) -> None:
        one, two = _tree().lock_(), _tree().lock_()
        stack = LazyStackedTensorDict(one, two)
        assert stack.is_locked
        one.unlock_()
        assert not stack.is_locked

    def test_entry_of_a_locked_stack(self) -> None:
        stack = LazyStackedTensorDict(_tree(), _tree()).lock_()
        b = stack["b"]
        assert b.is_locked
        _refuses_unlock(b)
        assert b.is_locked
        del b
        gc.collect()
        stack.unlock_()
        assert not stack.is_locked


class TestRecords:
    def test_record_in_a_locked_collection(self) -> None:
        record = Record(x=torch.zeros(2), inner=TensorDict(y=torch.zeros(2), batch_size=[2]))
        record.batch_size = [2]
        td = TensorDict(r=record, batch_size=[2]).lock_()
        assert td["r"] is record and record.is_locked and record.inner.is_locked
        _refuses_unlock(record)
        _refuses_unlock(record.inner)
        td.unlock_()
        assert not record.is_locked and not record.inner.is_locked

    def test_record_locked_on_its_own(self) -> None:
        record = Record(x=torch.zeros(2), inner=TensorDict(y=torch.zeros(2), batch_size=[2]))
        record.lock_()
        _refuses_unlock(record.inner)
        record.unlock_()
        assert not record.inner.is_locked

    def test_frozen_record_stays_locked(self) -> None:
        frozen = Frozen(x=torch.zeros(2), batch_size=[2])
        td = TensorDict(f=frozen, batch_size=[2]).lock_()
        td.unlock_()
        assert frozen.is_locked and not td.is_locked


class TestParams:
    def test_params_in_a_locked_collection(self) -> None:
        params = TensorDictParams(TensorDict(a=torch.zeros(2), n=TensorDict(b=torch.zeros(2))))
        root = TensorDict(p=params).lock_()
        n = params["n"]
        assert params.is_locked and n.is_locked
        _refuses_unlock(params)
        _refuses_unlock(n)
        root.unlock_()
        assert not params.is_locked and not n.is_locked

    def test_params_locked_content(self) -> None:
        params = TensorDictParams(
            TensorDict(a=torch.zeros(2), n=TensorDict(b=torch.zeros(2))), lock=True
        )
        _refuses_unlock(params["n"])
        params.unlock_()
        assert not params.is_locked and params["n"].is_locked

    def test_pickled_params_of_a_locked_tree(self) -> None:
        params = TensorDictParams(TensorDict(a=torch.zeros(2)))
        TensorDict(p=params).lock_()
        again = pickle.loads(pickle.dumps(params))
        assert isinstance(again, TensorDictParams)


class TestH5:
    def test_groups_refuse_while_the_file_is_locked(self, tmp_path: Path) -> None:
        pytest.importorskip("h5py")
        h5 = PersistentTensorDict.from_dict(_tree(), filename=tmp_path / "f.h5")
        b = h5["b"]
        h5.lock_()
        assert b.is_locked
        _refuses_unlock(b)
        c = b["c"]  # opened after the lock: locked, and held
        assert c.is_locked
        _refuses_unlock(c)
        h5.unlock_()
        assert not b.is_locked and not c.is_locked
        h5.close()
