"""A lazy stack of tensorclass records is a record (``tests/engine/test_lazy.py`` has
the lazy stack itself): fields read and written through the members, the class kept by
operations, dense forms, pickling and repr."""

from __future__ import annotations

import pickle

import pytest
import torch
from lazy_records import Agent, Inner  # noqa: E402

import tclass
from tclass import (
    LazyStackedTensorDict,
    TensorClass,
    TensorDict,
    errors,
)

from strategies import make_values  # noqa: E402

StackError = errors.StackError
HeterogeneousEntryError = errors.HeterogeneousEntryError


class Robot(TensorClass):
    obs: torch.Tensor


def _agent(name: str, features: int = 3) -> Agent:
    return Agent(
        obs=make_values([4, features]),
        reward=make_values([4]),
        name=name,
        inner=Inner(x=make_values([4, 2]), batch_size=[4]),
        batch_size=[4],
    )


# --- records over a lazy stack ---------------------------------------------------------------


def test_lazy_stack_of_records_is_a_record() -> None:
    ra, rb = _agent("a"), _agent("b")
    x = tclass.lazy_stack([ra, rb])
    assert type(x) is Agent and type(x._tensordict) is LazyStackedTensorDict
    assert x.batch_size == torch.Size([2, 4])
    assert x._tensordict.tensordicts[0] is ra._tensordict
    assert torch.equal(x.obs, torch.stack([ra.obs, rb.obs]))
    assert torch.equal(x.reward, torch.stack([ra.reward, rb.reward]))
    assert x.extra is None


def test_record_element_shares_member_data() -> None:
    ra, rb = _agent("a"), _agent("b")
    x = tclass.lazy_stack([ra, rb])
    first = x[0]
    assert type(first) is Agent and first._tensordict is ra._tensordict
    assert first.obs.data_ptr() == ra.obs.data_ptr()
    assert x[1].name == "b"


@pytest.mark.parametrize("d", [0, 1])
def test_record_field_assignment_reaches_members(d: int) -> None:
    ra, rb = _agent("a"), _agent("b")
    x = tclass.lazy_stack([ra, rb], d)
    x.reward = torch.zeros(x.batch_size)
    assert not ra.reward.any() and not rb.reward.any()
    x.inner = Inner(x=torch.full((*x.batch_size, 2), 3.0), batch_size=x.batch_size)
    assert (rb.inner.x == 3).all() and type(rb.inner) is Inner
    x.extra = torch.ones(x.batch_size)
    assert torch.equal(ra.extra, torch.ones(4))
    x.name = "z"
    assert ra.name == "z" and x._tensordict.get("name").data == "z"
    assert x.name == ([["z"] * 4] * 2 if d == 0 else [["z"] * 2] * 4)  # as the peer


def test_record_python_values() -> None:
    same = tclass.lazy_stack([_agent("a"), _agent("a")])
    assert same.name == [["a"] * 4, ["a"] * 4] and same[1].name == "a"  # as the peer
    different = tclass.lazy_stack([_agent("a"), _agent("b")])
    assert different.name == [["a"] * 4, ["b"] * 4]
    assert tclass.lazy_stack([_agent("a"), _agent("b")], 1).name == [["a", "b"]] * 4


def test_record_nested_field_reads_as_nested_class() -> None:
    ra, rb = _agent("a"), _agent("b")
    x = tclass.lazy_stack([ra, rb])
    inner = x.inner
    assert type(inner) is Inner and type(inner._tensordict) is LazyStackedTensorDict
    assert torch.equal(inner.x, torch.stack([ra.inner.x, rb.inner.x]))


def test_record_ragged_field_raises() -> None:
    x = tclass.lazy_stack([_agent("a", 3), _agent("b", 5)])
    with pytest.raises(HeterogeneousEntryError, match="entry 'obs' has shape"):
        _ = x.obs
    assert torch.equal(x.reward, torch.stack([x[0].reward, x[1].reward]))


def test_record_operations_keep_the_class() -> None:
    ra, rb = _agent("a"), _agent("b")
    x = tclass.lazy_stack([ra, rb])
    results = [
        x.clone(),
        x.apply(lambda v: v * 2),
        x == x.clone(),
        x.to(torch.float64),
        x.to("cpu"),
        x[torch.tensor([1, 0])],
        x[:, torch.tensor([0, 2])],
        x[:, 1:],
        x.detach(),
    ]
    for result in results:
        assert type(result) is Agent and type(result._tensordict) is LazyStackedTensorDict
    assert (x == x.clone()).all()
    assert torch.equal(x.apply(lambda v: v * 2).obs, x.obs * 2)
    assert x.to(torch.float64).obs.dtype == torch.float64
    assert x[torch.tensor([1, 0])].name == [["b"] * 4, ["a"] * 4]
    for piece in [*x.unbind(0), *x.unbind(1), *x]:
        assert type(piece) is Agent
    assert x.unbind(0)[1]._tensordict is rb._tensordict
    clone = x.clone()
    clone.obs = torch.zeros(2, 4, 3)
    assert ra.obs.any()


def test_record_contiguous_and_to_tensordict() -> None:
    ra, rb = _agent("a"), _agent("b")
    x = tclass.lazy_stack([ra, rb], 1)
    dense = x.contiguous()
    assert type(dense) is Agent and type(dense._tensordict) is TensorDict
    assert type(dense.inner) is Inner
    assert torch.equal(dense.obs, torch.stack([ra.obs, rb.obs], 1))
    assert dense.name == [["a", "b"]] * 4
    td = x.to_tensordict()
    assert type(td) is TensorDict and type(td.get("inner")) is TensorDict
    assert torch.equal(td["inner", "x"], torch.stack([ra.inner.x, rb.inner.x], 1))
    assert td.get("name").tolist() == [["a", "b"]] * 4
    assert type(tclass.dense_stack_tds(x)) is Agent


def test_record_mixing_classes_keeps_each_members_kind() -> None:
    """Records of two classes, or a record and a TensorDict, stack into a plain lazy
    stack whose members keep their kinds, as the peer's (test_lazy_mixed_kinds.py has
    the rest); records of one class still give a record."""
    robot = Robot(obs=torch.zeros(4), batch_size=[4])
    mixed = tclass.lazy_stack([_agent("a"), robot])
    assert type(mixed) is LazyStackedTensorDict
    assert [type(m) for m in mixed.tensordicts] == [Agent, Robot]
    td = TensorDict(obs=torch.zeros(4), batch_size=[4])
    assert [type(m) for m in tclass.lazy_stack([_agent("a"), td]).tensordicts] == [
        Agent,
        TensorDict,
    ]
    assert type(tclass.lazy_stack([_agent("a"), _agent("b")])) is Agent


def test_record_maybe_dense_stack() -> None:
    dense = tclass.maybe_dense_stack([_agent("a"), _agent("b")])
    assert type(dense) is Agent and type(dense._tensordict) is TensorDict
    lazy = tclass.maybe_dense_stack([_agent("a", 3), _agent("b", 5)])
    assert type(lazy) is Agent and type(lazy._tensordict) is LazyStackedTensorDict


def test_record_from_tensordict_stays_lazy() -> None:
    ra, rb = _agent("a"), _agent("b")
    storage = tclass.lazy_stack([ra._tensordict, rb._tensordict])
    x = Agent.from_tensordict(storage)
    assert type(x) is Agent and type(x._tensordict) is LazyStackedTensorDict
    assert type(x.inner) is Inner
    assert torch.equal(x.obs, torch.stack([ra.obs, rb.obs]))
    assert x.name == [["a"] * 4, ["b"] * 4]


def test_record_setitem_reaches_members() -> None:
    ra, rb = _agent("a"), _agent("b")
    x = tclass.lazy_stack([ra, rb])
    x[:, 1] = _agent("a")[0].apply(torch.zeros_like)
    assert not ra.obs[1].any() and not rb.obs[1].any()
    x[torch.tensor([False, True])] = 0
    assert not rb.reward.any() and ra.reward.any()


def test_record_setitem_mapping() -> None:
    ra, rb = _agent("a"), _agent("b")
    x = tclass.lazy_stack([ra, rb])
    x[:, 2] = {"reward": torch.tensor([5.0, 6.0])}
    assert ra.reward[2] == 5 and rb.reward[2] == 6


def test_record_pickle_and_repr() -> None:
    x = tclass.lazy_stack([_agent("a", 3), _agent("b", 5)])
    back = pickle.loads(pickle.dumps(x))
    assert type(back) is Agent and type(back._tensordict) is LazyStackedTensorDict
    assert torch.equal(back.reward, x.reward)
    text = repr(x)
    # the peer's: a record's header is its batch size (no stack_dim), a Python value
    # shows the type of member 0's
    assert text.startswith("Agent(batch_size=[2,4], fields={") and "obs: f32[-1]" in text
    assert "stack_dim" not in text
    assert "name: str" in text and "stack_dim=0" in repr(x._tensordict)


@pytest.mark.parametrize("named", [False, True])
def test_apply_with_batch_size_keeps_the_nested_record_classes(named: bool) -> None:
    # as the peer's: apply(fn, batch_size=...) works on the dense stack, a TensorDict
    # whose nested records keep their classes (to_tensordict() made them TensorDicts)
    lazy = LazyStackedTensorDict(_agent("a"), _agent("b"), stack_dim=0)
    if named:
        out = lazy.named_apply(lambda key, v: v * 2, batch_size=[2, 4])
    else:
        out = lazy.apply(lambda v: v * 2, batch_size=[2, 4])
    assert type(out) is TensorDict and out.batch_size == torch.Size([2, 4])
    assert type(out["inner"]) is Inner
    assert torch.equal(out["inner"].x, torch.stack([m.inner.x for m in lazy.tensordicts]) * 2)
    assert torch.equal(out["obs"], torch.stack([m.obs for m in lazy.tensordicts]) * 2)
    # a stack of TensorDicts holding records keeps them too
    plain = tclass.lazy_stack([TensorDict({"r": _agent("c")}, [4]) for _ in range(2)])
    assert type(plain.apply(torch.clone, batch_size=[2, 4])["r", "inner"]) is Inner


@pytest.mark.parametrize("stack_dim", [0, 1])
def test_constructor_stack_of_records_indexes_to_records(stack_dim: int) -> None:
    # As the peer: LazyStackedTensorDict(rec, rec2) stays a plain lazy stack, but indexing
    # it (or unbinding a dim that is not the stack dim) re-stacks the members' pieces into
    # a record of their class, whose fields read as attributes.
    first = Robot(obs=torch.zeros(3, 2), batch_size=[3])
    second = Robot(obs=torch.ones(3, 2), batch_size=[3])
    stacked = LazyStackedTensorDict(first, second, stack_dim=stack_dim)
    assert type(stacked) is LazyStackedTensorDict
    row = stacked[0]
    assert isinstance(row, Robot)
    expected = torch.stack([first.obs[0], second.obs[0]]) if stack_dim == 1 else first.obs
    assert torch.equal(row.obs, expected)
    assert isinstance(stacked[:, 0], Robot) and isinstance(stacked[0:2], Robot)
    assert all(isinstance(piece, Robot) for d in (0, 1) for piece in stacked.unbind(d))
    other = 1 - stack_dim
    stacked.unbind(other)[1].set_("obs", torch.full((2, 2), 7.0))  # reaches the members
    assert (first.obs[1] == 7).all() and (second.obs[1] == 7).all()
    plain = LazyStackedTensorDict(TensorDict(a=torch.zeros(3), batch_size=[3]), stack_dim=1)
    assert type(plain[0]) is LazyStackedTensorDict  # TensorDict members: a lazy stack


def test_is_contiguous_of_a_record_is_its_storage_s() -> None:
    # as the peer: a record over a lazy stack is not contiguous (its members are apart),
    # one over a TensorDict is when its tensors are
    stacked = tclass.lazy_stack([_agent("a"), _agent("a")], 0)
    assert isinstance(stacked._tensordict, LazyStackedTensorDict)
    assert not stacked.is_contiguous()
    assert type(stacked.contiguous()._tensordict) is TensorDict
    assert _agent("a").is_contiguous() and not _agent("a").expand(2, 4).is_contiguous()


@pytest.mark.parametrize("rows", [0, 2])
def test_stack_of_lazy_stacks_of_records_is_a_record_over_a_stack(rows: int) -> None:
    # Stacked member by member, as the peer's (its result: a plain LazyStackedTensorDict
    # of the records, where a lazy stack of records of one class is a record over it).
    rec = Agent(
        obs=torch.arange(float(rows * 3)).reshape(rows, 3),
        reward=torch.zeros(rows),
        name="a",
        inner=Inner(x=torch.zeros(rows, 1), batch_size=[rows]),
        batch_size=[rows],
    )
    lazy = LazyStackedTensorDict(rec, rec.apply(torch.zeros_like), stack_dim=1)
    out = torch.stack([lazy, lazy.apply(torch.ones_like)], 0)
    assert type(out) is Agent and out.batch_size == torch.Size([2, rows, 2])
    assert isinstance(out._tensordict, LazyStackedTensorDict)
    assert torch.equal(out.obs[0], lazy.get("obs"))
    assert torch.equal(out.obs[1], torch.ones(rows, 2, 3))
    assert type(out.inner) is Inner and out.extra is None
