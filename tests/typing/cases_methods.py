"""The peer's remaining methods (entry edits, autograd, shape, conversions, persistence,
packing): each one that returns a collection returns the caller's type."""

from __future__ import annotations

from typing import Any

import torch
from records import DStep, Step, dstep, step
from typing_extensions import assert_type

from tclass import LazyStackedTensorDict, TensorDict


def entry_edits() -> None:
    s, d = step(), dstep()
    assert_type(s.clear(), Step)
    assert_type(d.replace(obs=torch.zeros(3, 2)), DStep)
    assert_type(s.rename_keys({"obs": "o"}), Step)
    assert_type(s.create_nested("n"), Step)
    assert_type(s.copy_at_(s[0], 1), Step)
    assert_type(s.size(), torch.Size)
    assert_type(s.size(0), int)
    assert_type(s.ndimension(), int)
    assert_type(s.get_item_shape("obs"), torch.Size)
    assert_type(s.param_count(), int)
    assert_type(s.is_non_tensor("name"), bool)
    td = TensorDict({}, [2])
    assert_type(td.separates("a"), TensorDict)
    assert_type(td.cat_tensors("a", "b", out_key="c"), TensorDict)
    assert_type(td.stack_tensors("a", "b", out_key="c"), TensorDict)


def autograd_and_devices() -> None:
    s, d = step(), dstep()
    assert_type(s.requires_grad_(), Step)
    assert_type(d.detach_(), DStep)
    assert_type(s.zero_grad(), Step)
    assert_type(s.grad, Step | None)
    assert_type(s.requires_grad, bool)
    assert_type(s.pin_memory_(), Step)
    assert_type(d.pin_memory(inplace=True), DStep)
    assert_type(s.clear_refs_for_compile_(), Step)
    assert_type(s.is_cpu, bool)


def shapes_and_conversions() -> None:
    s, d = step(), dstep()
    assert_type(s.atleast_2d(), Step)
    assert_type(d.atleast_3d(), DStep)
    assert_type(s.fliplr(), Step)
    assert_type(s.flipud(), Step)
    assert_type(d.moveaxis(0, 0), DStep)
    assert_type(s.tensor_split(2), tuple[Step, ...])
    assert_type(s.as_tensor(), Step)
    assert_type(s.to_padded_tensor(), Step)
    assert_type(s.qint8(), Step)
    assert_type(s.memmap_refresh_(), Step)
    lazy = LazyStackedTensorDict.lazy_stack([TensorDict({}, []), TensorDict({}, [])])
    assert_type(lazy.atleast_2d(), LazyStackedTensorDict)
    assert_type(TensorDict.from_remote_init(0), TensorDict)
    assert_type(Step.from_remote_init(0), Step)


def updates() -> None:
    s, d = step(), dstep()
    assert_type(s.update(obs=torch.zeros(3, 2)), Step)
    assert_type(d.update({"obs": torch.zeros(3, 2)}, non_blocking=True), DStep)
    td = TensorDict({}, [2])
    assert_type(td.update(td, update_batch_size=True, ignore_lock=True), TensorDict)
    assert_type(td.named_apply(lambda key, leaf: leaf, propagate_lock=True), TensorDict)
    assert_type(td.to_dict(tolist_first=True), dict[str, Any])
