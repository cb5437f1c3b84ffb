"""A record's ``from_dict`` with an inferred batch size gives each nested mapping its own
inferred batch size, as ``TensorDict.from_dict`` (and the peer's record ``from_dict``) do."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch

from tclass import TensorDict, tensorclass
from tclass.errors import BatchMismatchError


@tensorclass
class Inner:
    v: torch.Tensor


@tensorclass
class Mid:
    inner: Inner
    m: torch.Tensor


@tensorclass
class Outer:
    inner: Inner
    w: torch.Tensor
    meta: dict[str, Any] | None = None
    td: TensorDict | None = None


def test_auto_batch_size_infers_each_nested_record() -> None:
    rec = Outer.from_dict(
        {"inner": {"v": torch.zeros(3, 2)}, "w": torch.ones(3)}, auto_batch_size=True
    )
    assert rec.batch_size == torch.Size([3])
    assert type(rec.inner) is Inner
    assert rec.inner.batch_size == torch.Size([3, 2])
    # the same as TensorDict.from_dict gives that node
    plain = TensorDict.from_dict(
        {"inner": {"v": torch.zeros(3, 2)}, "w": torch.ones(3)}, auto_batch_size=True
    )
    assert plain["inner"].batch_size == rec.inner.batch_size


def test_nested_records_two_levels_and_tensordict_field() -> None:
    @tensorclass
    class Top:
        mid: Mid
        td: TensorDict

    data = {
        "mid": {"inner": {"v": torch.zeros(4, 2, 5)}, "m": torch.zeros(4, 2)},
        "td": {"a": torch.zeros(4, 3)},
    }
    rec = Top.from_dict(data, auto_batch_size=True)
    assert rec.batch_size == torch.Size([4])
    assert rec.mid.batch_size == torch.Size([4, 2])
    assert rec.mid.inner.batch_size == torch.Size([4, 2, 5])
    assert type(rec.td) is TensorDict and rec.td.batch_size == torch.Size([4, 3])


def test_batch_dims_caps_the_nested_records_too() -> None:
    rec = Outer.from_dict({"inner": {"v": torch.zeros(3, 2)}, "w": torch.ones(3, 2)}, batch_dims=1)
    assert rec.batch_size == torch.Size([3])
    assert rec.inner.batch_size == torch.Size([3])


def test_given_batch_size_and_python_dict_fields_are_unchanged() -> None:
    rec = Outer.from_dict({"inner": {"v": torch.zeros(3, 2)}, "w": torch.ones(3)}, batch_size=[3])
    assert rec.inner.batch_size == torch.Size([3])
    rec = Outer.from_dict(
        {"inner": {"v": torch.zeros(3, 2)}, "w": torch.ones(3), "meta": {"a": torch.zeros(3, 2)}},
        auto_batch_size=True,
    )
    assert type(rec.meta) is dict  # a dict field keeps its dict (README, Differences 5)


def test_nested_mapping_without_tensors_takes_the_record_batch() -> None:
    @tensorclass
    class Tagged:
        tag: str

    @tensorclass
    class Holder:
        t: Tagged
        x: torch.Tensor

    rec = Holder.from_dict({"t": {"tag": "a"}, "x": torch.zeros(2, 3)}, auto_batch_size=True)
    assert rec.batch_size == torch.Size([2, 3])
    assert rec.t.batch_size == torch.Size([2, 3]) and rec.t.tag == "a"


def test_nested_mismatch_still_raises() -> None:
    with pytest.raises(ValueError, match="inner"):
        Outer.from_dict({"inner": {"v": torch.zeros(2)}, "w": torch.ones(3)}, batch_size=[3])


@tensorclass
class Pair:
    y: torch.Tensor
    z: torch.Tensor | None = None


@tensorclass
class Keyed:
    x: torch.Tensor
    label: str
    pair: Pair
    opt: torch.Tensor | None = None


@pytest.mark.parametrize("batch", [{"batch_size": [2]}, {"auto_batch_size": True}])
def test_from_dict_keeps_the_mapping_key_order(batch: dict[str, Any]) -> None:
    # as the peer's from_dict: the entries in the mapping's order, nested records' too,
    # so Rec.from_dict(loaded.to_dict()) keeps a loaded record's order
    data = {
        "opt": torch.ones(2),
        "pair": {"z": torch.zeros(2), "y": torch.ones(2)},
        "label": "a",
        "x": torch.arange(2),
    }
    rec = Keyed.from_dict(data, **batch)
    assert list(rec.to_dict()) == ["opt", "pair", "label", "x"]
    assert list(rec.pair.to_dict()) == ["z", "y"]
    assert list(rec.to_tensordict().keys()) == ["opt", "pair", "label", "x"]
    assert torch.equal(rec.x, torch.arange(2)) and rec.label == "a"
    # fields the mapping leaves out come after the given ones
    short = Keyed.from_dict({"label": "b", "x": torch.zeros(2)}, batch_size=[2])
    assert list(short.to_dict()) == ["label", "x", "pair", "opt"]
    assert list(short.to_tensordict().keys()) == ["label", "x"]


@tensorclass
class _Holder:
    w: torch.Tensor
    inner: Inner | None = None


@pytest.mark.parametrize("cls", [Outer, _Holder])
def test_a_tensordict_given_for_a_record_field_becomes_the_record(cls: type) -> None:
    # from_dict ordered the keys with iter(data) on every mapping it was given: a
    # TensorDict there iterates its rows ("unhashable type: 'TensorDict'"); the peer
    # builds the record, as the constructor, set() and update() do.
    given = TensorDict(v=torch.arange(6.0).reshape(3, 2), batch_size=[3])
    rec = cls.from_dict({"w": torch.zeros(3), "inner": given}, batch_size=[3])
    assert type(rec.inner) is Inner and rec.inner.batch_size == (3,)
    assert rec.inner.v.tolist() == given["v"].tolist()


@tensorclass
class ListPair:
    a: torch.Tensor
    b: torch.Tensor
    tags: list[str] | None = None


@pytest.mark.parametrize(
    "data",
    [
        {"a": [[1, 2]], "b": [1]},  # lists, as to_dict(convert_tensors=True) gives them
        {"a": torch.tensor([[1, 2]]), "b": [1]},
        {"a": ((1, 2),), "b": np.array([1])},
        {"a": [torch.tensor([1, 2])], "b": torch.tensor([1])},  # a list of tensors: their stack
    ],
)
def test_auto_batch_size_reads_the_tensors_array_likes_become(data: dict[str, Any]) -> None:
    # as the peer's from_dict, which makes tensors of the lists before it infers the size
    rec = ListPair.from_dict(data, auto_batch_size=True)
    assert rec.batch_size == torch.Size([1])
    assert rec.a.tolist() == [[1, 2]] and rec.b.tolist() == [1]
    assert ListPair.from_dict(data, batch_dims=2).batch_size == torch.Size([1])


def test_auto_batch_size_leaves_python_values_out_of_the_inference() -> None:
    rec = ListPair.from_dict({"a": [[1, 2]], "b": [[3, 4]], "tags": ["x"]}, auto_batch_size=True)
    assert rec.batch_size == torch.Size([1, 2])  # the list in a list[str] field is a value
    assert rec.tags == ["x"]


@tensorclass
class Labelled:
    x: torch.Tensor
    label: str


@pytest.mark.parametrize(
    ("label", "batch"),
    [(["a"], [1]), ([["a", "b"]], [1, 2]), ([[]], [1]), ([], [])],
)
def test_auto_batch_size_reads_a_per_element_list_of_values(label: Any, batch: list[int]) -> None:
    # a list a str field keeps one value per element counts as that stack, as the peer's
    # from_dict counts the stack (or tensor) it makes of it: no BatchMismatchError (rg28b)
    rec = Labelled.from_dict({"x": torch.zeros(1, 2, 3), "label": label}, auto_batch_size=True)
    assert rec.batch_size == torch.Size(batch) and rec.label == label
    assert rec.x.shape == (1, 2, 3)


def test_from_dict_instance_of_values_over_no_elements() -> None:
    # to_dict() of a record unsqueezed over a zero-size dim gives its label as []: read
    # back over [0], the size the peer infers too (program 15,830,615 of
    # features,index,shape,combine, L8: tclass raised BatchMismatchError for 'label')
    rec = Labelled(x=torch.zeros(0, 2, 3, 1), label="pong", batch_size=[0, 2, 3]).unsqueeze(2)
    back = rec.from_dict_instance(rec.to_dict(), auto_batch_size=True)
    assert type(back) is Labelled and back.batch_size == torch.Size([0])
    assert back.label == [] and back.x.shape == (0, 2, 1, 3, 1)
    with pytest.raises(BatchMismatchError, match="'label'"):  # the list's [0] is its shape
        Labelled.from_dict(rec.to_dict(), batch_size=[0, 2])


@tensorclass
class ListPairHolder:
    pair: ListPair
    n: torch.Tensor


def test_auto_batch_size_reads_the_lists_of_nested_records_too() -> None:
    # the peer: [1] (the lists of the nested mapping limit the outer batch size too)
    data = {"pair": {"a": [[1, 2]], "b": [1]}, "n": [[0, 0]]}
    rec = ListPairHolder.from_dict(data, auto_batch_size=True)
    assert rec.batch_size == torch.Size([1]) and rec.pair.batch_size == torch.Size([1])
    assert rec.n.tolist() == [[0, 0]] and rec.pair.a.tolist() == [[1, 2]]
