"""The peer's remaining surface: shape-like methods, entry methods, names, stacking
classmethods. Every method that returns a collection returns the caller's type."""

from __future__ import annotations

from typing import Any

import torch
from records import DStep, Step, dstep, step
from typing_extensions import assert_type

import tclass
from tclass import LazyStackedTensorDict, TensorDict, UnbatchedTensor


def shape_like() -> None:
    s, d = step(), dstep()
    index = torch.zeros(3, dtype=torch.long)
    assert_type(s.gather(0, index), Step)
    assert_type(d.gather(0, index), DStep)
    assert_type(s.masked_select(torch.ones(3, dtype=torch.bool)), Step)
    assert_type(s.roll(1), Step)
    assert_type(d.roll(1, 0), DStep)
    assert_type(s.repeat(2), Step)
    assert_type(s.repeat_interleave(2, 0), Step)
    assert_type(d.movedim(0, 0), DStep)
    assert_type(s.swapaxes(0, 0), Step)
    assert_type(s.swapdims(0, 0), Step)
    assert_type(s.flip(0), Step)
    assert_type(d.narrow(0, 0, 1), DStep)
    assert_type(s.tile((2,)), Step)
    assert_type(s.broadcast_to((2, 3)), Step)
    assert_type(d.atleast_1d(), DStep)
    assert_type(s.expand_as(torch.zeros(2, 3)), Step)
    assert_type(s.flatten(inplace=True), Step)
    assert_type(s.pad([0, 1]), Step)
    assert_type(d.to_lazystack(0), DStep)
    td = TensorDict({}, [2, 2])
    assert_type(td.rot90(), TensorDict)
    assert_type(td.reshape(4, inplace=True), TensorDict)
    assert_type(td.contiguous(canonical=True), TensorDict)


def entries() -> None:
    s, d = step(), dstep()
    assert_type(s.select("obs"), Step)
    assert_type(d.exclude("obs"), DStep)
    assert_type(s.del_("extra"), Step)
    assert_type(d.rename_key_("extra", "obs"), DStep)
    assert_type(s.set_at_("obs", torch.zeros(2), 0), Step)
    assert_type(s.update_({"obs": torch.zeros(3, 2)}), Step)
    assert_type(d.update_at_({"obs": torch.zeros(2)}, 0), DStep)
    assert_type(s.new_zeros(4), Step)
    assert_type(d.new_ones(4), DStep)
    assert_type(s.new_empty(4), Step)
    assert_type(s.new_full((4,), 1.0), Step)
    assert_type(s.empty(), Step)
    assert_type(d.copy(), DStep)
    assert_type(s.filter_non_tensor_data(), Step)
    assert_type(s.auto_batch_size_(), Step)
    assert_type(d.auto_device_(), DStep)
    assert_type(s.split_keys(["obs"]), tuple[Step, ...])
    assert_type(s.bytes(), int)
    assert_type(s.depth, int)
    assert_type(s.sorted_keys, list[str])
    assert_type(s.data_ptr(), TensorDict)
    td = TensorDict()
    assert_type(td.flatten_keys(), TensorDict)
    assert_type(td.unflatten_keys(), TensorDict)
    assert_type(td.filter_empty_(), TensorDict)


def names() -> None:
    s, d = step(), dstep()
    assert_type(s.refine_names("t"), Step)
    assert_type(d.rename("t"), DStep)
    assert_type(s.rename_("t"), Step)
    assert_type(TensorDict({}, [2], names=["t"]).names, list[Any])  # any hashable, as the peer


def stacking() -> None:
    s = step()
    assert_type(type(s).stack([s, s]), Step)
    assert_type(type(s).cat([s, s]), Step)
    assert_type(type(s).lazy_stack([s, s]), Step)
    assert_type(type(s).maybe_dense_stack([s, s]), Step)
    td = TensorDict({}, [2])
    assert_type(TensorDict.stack([td, td]), TensorDict)
    assert_type(TensorDict.from_any({"a": torch.zeros(2)}), TensorDict)
    assert_type(tclass.unpad_sequence(td), LazyStackedTensorDict)
    lazy = LazyStackedTensorDict(td, td)
    assert_type(lazy.flip(0), LazyStackedTensorDict)
    assert_type(UnbatchedTensor(torch.zeros(2)), UnbatchedTensor)
    assert_type(UnbatchedTensor(torch.zeros(2)).batch_size, torch.Size)
    assert_type(tclass.print_directory_tree("/tmp"), str)


def entry_views() -> None:
    td, s = TensorDict(), step()
    assert_type(len(td.items()) + len(s.values()), int)  # views without options
    for key, value in s.items():
        assert_type(key, str)
        assert_type(value, torch.Tensor | tclass.TensorDictBase)
    assert_type(next(td.items(True))[0], str | tuple[str, ...])  # generators with options
    assert_type(next(td.values(leaves_only=True)), torch.Tensor)
    assert_type(next(s.values()), torch.Tensor | tclass.TensorDictBase)  # next() too
    len(td.values(True))  # type: ignore[arg-type]
