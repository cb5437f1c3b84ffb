"""Errors that code written for the peer catches with ``pytest.raises(..., match=...)`` or
by parsing the message: tclass's messages stay its own (what is wrong, where, how to fix
it) and carry the peer's phrase, under a type that is also the peer's builtin. Each test
also checks the behaviour around the error (nothing written, the valid call works).

Alongside: the lazy-stack behaviours the same peer tests found (``update`` merging nested
mappings, ``set_at_`` of a numpy array, ``lazy_stack(out=)`` checking the batch size).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch import nn

import tclass
from tclass import LazyStackedTensorDict, TensorDict
from tclass.errors import (
    BatchSizeError,
    KeyConflictError,
    KeyNotFoundError,
    LockedError,
    StackError,
    TclassError,
    UnsupportedError,
)


def _stack(n: int = 2) -> LazyStackedTensorDict:
    return tclass.lazy_stack([TensorDict(a=torch.zeros(3), batch_size=[3]) for _ in range(n)])


# --- messages ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "entries",
    [
        {"a.b": torch.zeros(3), "a": {"b": torch.ones(3)}},  # two entries, one key
        {"a.b.c": torch.zeros(3), "a": {"b": torch.ones(3)}},  # under a value
    ],
)
def test_unflatten_collision_names_the_key_with_the_peers_words(entries: dict) -> None:
    td = TensorDict(entries, [])
    with pytest.raises(KeyConflictError) as caught:
        td.unflatten_keys(".")
    message = str(caught.value)
    assert "Unflattening key(s) in tensordict will override an existing for unflattened" in message
    assert "('a', 'b')" in message and "rename_key_" in message
    assert isinstance(caught.value, KeyError)


def test_locked_set_of_a_new_key_says_to_write_in_place() -> None:
    td = TensorDict(a=torch.zeros(3), batch_size=[3]).lock_()
    with pytest.raises(LockedError, match="Cannot modify locked TensorDict. For in-place") as e:
        td.set("z", torch.ones(3))
    assert "'z'" in str(e.value) and "unlock_()" in str(e.value)
    assert isinstance(e.value, RuntimeError)
    assert "z" not in td.keys()
    td.set_("a", torch.ones(3))  # what the message suggests
    assert (td["a"] == 1).all()


def test_locked_set_into_a_saved_folder_names_the_folder(tmp_path) -> None:
    td = TensorDict(a=torch.zeros(3), batch_size=[3]).memmap_(tmp_path)
    with pytest.raises(LockedError, match="Cannot modify locked TensorDict. For in-place") as e:
        td.set("z", torch.ones(3))
    assert str(tmp_path) in str(e.value) and "written into the folder" in str(e.value)


def test_strict_shape_refusal_carries_both_of_the_peers_phrases() -> None:
    members = [TensorDict(batch_size=[3, 4]), TensorDict(batch_size=[3, 5])]
    for build in (
        lambda: tclass.lazy_stack(members, strict_shape=True),
        lambda: LazyStackedTensorDict(*members, strict_shape=True),
    ):
        with pytest.raises(StackError) as caught:
            build()
        message = str(caught.value)
        assert "stacking tensordicts requires" in message
        assert "batch sizes in tensordicts differs" in message
        assert "[3, 5]" in message and "[3, 4]" in message
    assert LazyStackedTensorDict(*members, stack_dim=1).shape == torch.Size([3, 2, -1])


def test_cat_of_lazy_stacks_with_other_member_counts_says_why() -> None:
    lazy = LazyStackedTensorDict(*[TensorDict(a=torch.zeros(2), batch_size=[2])] * 2)
    dense = TensorDict(a=torch.zeros(3, 2), batch_size=[3, 2])
    with pytest.raises(StackError, match="same number of stacked tensordicts") as caught:
        torch.cat([lazy, dense], dim=1)
    assert "[3, 2]" in str(caught.value) and isinstance(caught.value, RuntimeError)
    other = TensorDict(a=torch.ones(2, 2), batch_size=[2, 2])
    assert torch.cat([lazy, other], dim=1).batch_size == torch.Size([2, 4])


@pytest.mark.parametrize("lazy", [True, False])
def test_stack_out_of_another_batch_size_is_refused_before_writing(lazy: bool) -> None:
    member = TensorDict(a=torch.zeros(4, 3), batch_size=[4, 3])
    out = TensorDict(a=torch.full((4, 2, 3), 5.0), batch_size=[4, 2, 3])
    stack = LazyStackedTensorDict.lazy_stack if lazy else torch.stack
    with pytest.raises(StackError, match="out.batch_size and stacked batch size must match"):
        stack([member, member], 0, out=out)
    assert (out["a"] == 5).all()  # nothing was written
    assert stack([member, member], 1, out=out) is out
    assert (out["a"] == 0).all()


def test_set_in_place_of_a_missing_key_on_a_lazy_stack() -> None:
    stack = _stack()
    with pytest.raises(KeyNotFoundError) as caught:
        stack.set_("missing", torch.zeros(2, 3))
    message = str(caught.value)
    assert "setting a value in-place on a stack of TensorDict" in message
    assert "'missing'" in message and "set()" in message
    assert "missing" not in stack.keys()


def test_from_modules_of_lazy_modules_as_a_lazy_stack() -> None:
    modules = [nn.LazyLinear(4) for _ in range(2)]
    for as_module in (False, True):  # the lazy modules are named first, as the peer
        with pytest.raises(UnsupportedError, match="lasy_stack=True is not compatible") as e:
            TensorDict.from_modules(*modules, as_module=as_module, lazy_stack=True)
        assert "LazyLinear" in str(e.value) and isinstance(e.value, RuntimeError)
    ready = [nn.Linear(3, 4) for _ in range(2)]
    with pytest.raises(UnsupportedError, match="within a TensorDictParams"):
        TensorDict.from_modules(*ready, as_module=True, lazy_stack=True)
    assert TensorDict.from_modules(*ready, lazy_stack=True).batch_size == torch.Size([2])


# --- lazy stacks ------------------------------------------------------------------------


def test_update_of_a_lazy_stack_merges_a_nested_mapping() -> None:
    stack = _stack()
    stack["nested"] = {"z": torch.zeros(2, 3)}
    stack.update({"nested": {"y": torch.ones(2, 3)}})
    assert set(stack.keys(True, True)) == {"a", ("nested", "z"), ("nested", "y")}
    assert (stack["nested", "y"] == 1).all()
    assert all(set(m["nested"].keys()) == {"z", "y"} for m in stack.tensordicts)
    stack.update({"nested": TensorDict(x=torch.ones(2, 3), batch_size=[2, 3])})
    assert set(stack["nested"].keys()) == {"z", "y", "x"}
    stack.update({"nested": torch.ones(2, 3)})  # a tensor replaces it, as a TensorDict's
    assert isinstance(stack["nested"], torch.Tensor)


@pytest.mark.peer
def test_update_of_a_lazy_stack_has_the_peers_keys() -> None:
    peer = pytest.importorskip("tensordict")
    results = []
    for lib in (tclass, peer):
        stack = lib.lazy_stack([lib.TensorDict(a=torch.zeros(3), batch_size=[3])] * 2)
        stack["nested"] = {"z": torch.zeros(2, 3)}
        stack.update({"nested": {"y": torch.ones(2, 3)}, ("nested", "w"): torch.ones(2, 3)})
        results.append(set(stack.keys(True, True)))
    assert results[0] == results[1]


def test_set_at_of_a_numpy_array_is_split_across_members() -> None:
    stack = tclass.lazy_stack(
        [
            TensorDict(k=torch.zeros(4, 2, 5, dtype=torch.float64), batch_size=[4, 2])
            for _ in range(3)
        ],
        1,
    )
    stack.set_at_("k", np.full((2, 5), 42.0), (2, 2))
    assert (stack["k"][2, 2] == 42).all()
    assert stack["k"].sum() == 42 * 10


def test_lazy_stack_errors_are_tclass_errors() -> None:
    with pytest.raises(TclassError):
        _stack().set_("missing", torch.zeros(2, 3))
    with pytest.raises(BatchSizeError):
        TensorDict(a=torch.zeros(3), batch_size=[3])[torch.tensor([0, 1])] = TensorDict(
            a=torch.zeros(3), batch_size=[3]
        )


def test_a_collection_without_batch_dims_takes_the_lazy_stacks_batch() -> None:
    stack = _stack()
    inner = TensorDict({"x": torch.ones(2, 3, 1)}, [])
    stack["inner"] = inner
    assert stack["inner"].batch_size == torch.Size([2, 3])
    assert inner.batch_size == torch.Size([])  # the given one is left as it is
    assert (stack["inner", "x"] == 1).all()
    with pytest.raises(BatchSizeError, match="other"):
        stack["other"] = TensorDict({"x": torch.ones(5)}, [])


def test_set_at_of_a_dtype_torch_cannot_index_put_is_torchs_not_implemented_error() -> None:
    # torch's NotImplementedError (the peer's too), not a shape error: the shapes fit
    td = TensorDict(a=torch.zeros(4, 1, dtype=torch.uint16), batch_size=[4])
    empty = torch.tensor([], dtype=torch.long)
    with pytest.raises(NotImplementedError, match="index_put") as caught:
        td.set_at_("a", torch.zeros(0, dtype=torch.uint16), (empty, 0))
    assert not isinstance(caught.value, TclassError)
    td.set_at_("a", torch.ones(1, dtype=torch.uint16), 2)  # a write torch takes
    assert td["a"][:, 0].tolist() == [0, 0, 1, 0]


@pytest.mark.parametrize("source", [[torch.zeros(3)], torch.zeros(3), "obs"])
def test_a_source_that_is_no_mapping_is_a_value_error_as_the_peers(source: object) -> None:
    # was an EntryTypeError, a TypeError only: `except ValueError` written for the peer missed it
    with pytest.raises(ValueError, match="expects a mapping") as raised:
        TensorDict(source, batch_size=[3])  # type: ignore[arg-type]
    assert isinstance(raised.value, (TypeError, TclassError))
    assert "pass a dict" in str(raised.value)
    assert TensorDict({"obs": torch.zeros(3)}, batch_size=[3])["obs"].shape == (3,)
