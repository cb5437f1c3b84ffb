"""``set_at_`` of a lazy stack with an index whose Ellipsis reaches a tensor's feature
dims: written as torch writes the stacked tensor, as a TensorDict's (and the peer's)
(lead35b)."""

from __future__ import annotations

from typing import Any

import pytest
import torch

import tclass
from tclass import TensorDict


def _members() -> list[TensorDict]:
    return [
        TensorDict({"d": (torch.arange(2.0) + 10 * i).reshape(1, 2)}, batch_size=[1])
        for i in range(3)
    ]


def test_an_ellipsis_before_an_index_reaches_the_feature_dims() -> None:
    lazy = tclass.lazy_stack(_members(), 0)
    dense = torch.stack(_members(), 0)
    index = (Ellipsis, torch.tensor([1, 1, -1]))
    value = torch.arange(9.0).reshape(3, 1, 3) + 100
    dense.set_at_("d", value, index)
    members = lazy.tensordicts
    assert lazy.set_at_("d", value, index) is lazy
    assert lazy.tensordicts[0] is members[0]  # written in place, member by member
    assert torch.equal(lazy.get("d"), dense.get("d"))
    expected = torch.stack([m["d"] for m in _members()])
    expected[..., torch.tensor([1, 1, -1])] = value
    assert torch.equal(lazy.get("d"), expected)


def test_an_index_of_batch_dims_only_still_writes_the_elements() -> None:
    lazy = tclass.lazy_stack(_members(), 0)
    lazy.set_at_("d", torch.zeros(1, 2), (1,))
    assert torch.equal(lazy.tensordicts[1]["d"], torch.zeros(1, 2))
    assert torch.equal(lazy.tensordicts[0]["d"], torch.tensor([[0.0, 1.0]]))


def _bool_stack() -> tclass.LazyStackedTensorDict:
    members = [TensorDict({"b": torch.ones(2, 3, dtype=torch.bool)}, batch_size=[2]) for _ in "ab"]
    return tclass.lazy_stack(members, 1)


@pytest.mark.parametrize(
    "index", [(None, 0), (0, None), (None, slice(None), 1), (None, None, 1, 0)]
)
def test_a_basic_index_with_none_casts_the_value_as_torch_and_the_peer(index: Any) -> None:
    """``lazy[None, 0] = {'b': long}`` into a bool entry: a basic index (None adds a unit
    dim), so the value is cast, as torch's and the peer's; before, it was written through
    an advanced index, which refused the dtype (fz42b; the fuzzer's index/set_at_ finding)."""
    lazy = _bool_stack()
    dense = lazy.to_tensordict()
    shape = [*lazy[index].batch_size, 3]
    value = torch.zeros(shape, dtype=torch.long)
    dense[index] = {"b": value}
    lazy[index] = {"b": value}
    assert lazy.get("b").dtype is torch.bool
    assert torch.equal(lazy.get("b"), dense.get("b"))
    expected = torch.ones(2, 2, 3, dtype=torch.bool)
    expected[index] = value.bool()
    assert torch.equal(lazy.get("b"), expected)


def test_set_at_of_a_nested_lazy_stack_with_none_casts() -> None:
    nested = tclass.lazy_stack([_bool_stack()], 1)  # batch [2, 1, 2]
    nested.set_at_("b", torch.zeros(1, 1, 2, 3, dtype=torch.long), (None, 0))
    assert nested.get("b").dtype is torch.bool
    assert not nested.get("b")[0].any() and nested.get("b")[1].all()
    assert nested.tensordicts[0].tensordicts[0].get("b").dtype is torch.bool
    with pytest.raises(RuntimeError, match="dtypes match"):  # advanced: refused, as torch
        nested[torch.tensor([0]), 0] = {"b": torch.zeros(1, 2, 3, dtype=torch.long)}


def test_update_at_rows_with_an_ellipsis_index_nested_by_batch_leaves_by_features() -> None:
    """``lazy.copy_at_(rows, (..., -1), fast=False)`` (update_at_): as the peer writes
    ``nested[idx] = rows[key]``, the ``...`` covers a nested collection's batch dims (its
    last row is written) while it reaches a leaf's feature dims (its last column); a
    lazy stack spelled it for neither and raised on the nested leaf (fz42b)."""
    members = [
        TensorDict(
            {"n": TensorDict({"b": torch.ones(2)}, []), "b": torch.ones(1)},
            batch_size=[],
        )
        for _ in range(3)
    ]
    lazy = tclass.lazy_stack(members, 0)
    rows = lazy[..., -1].clone().zero_()
    assert lazy.copy_at_(rows, (..., -1), fast=False) is lazy
    assert torch.equal(lazy.get(("n", "b")), torch.tensor([[1.0, 1.0], [1.0, 1.0], [0, 0]]))
    assert torch.equal(lazy.get("b"), torch.zeros(3, 1))  # every row's last feature
    assert members[2]["n", "b"].sum() == 0  # written into the members


@pytest.mark.parametrize("kind", ["dense", "lazy", "record"])
def test_a_list_is_written_as_a_tensor_as_the_peers(kind: str) -> None:
    # tclass raised torch's "can't assign a list to a torch.FloatTensor" (dense, record)
    # or a BatchSizeError (lazy); the peer converts the list, as set() does
    @tclass.tensorclass
    class Rec:
        x: torch.Tensor

    rows = [TensorDict({"x": torch.zeros(()), "n": {"y": torch.zeros(2)}}, []) for _ in range(3)]
    target: Any = {
        "dense": torch.stack(rows),
        "lazy": tclass.lazy_stack(rows),
        "record": Rec(x=torch.zeros(3), batch_size=[3]),
    }[kind]
    target.set_at_("x", [5.0, 6.0], slice(0, 2))
    assert torch.equal(target.get("x"), torch.tensor([5.0, 6.0, 0.0]))
    if kind != "record":
        target.set_at_(("n", "y"), (1, 2), 2)
        assert torch.equal(target.get(("n", "y"))[2], torch.tensor([1.0, 2.0]))


_NONE = torch.tensor([], dtype=torch.long)


def _nested_bool_stack(lib: Any, stack_dim: int) -> Any:
    td = lib.TensorDict({"n": {"a": torch.zeros(3, 2, dtype=torch.bool)}}, batch_size=[3])
    return lib.lazy_stack([td, td.clone()], stack_dim)


# (stack dim, index, whether the index reaches the members with a tensor): an empty
# tensor on a member dim still writes every member at a tensor index, one on the stack
# dim picks no member; a slice writes with a basic index (torch casts)
_NO_ELEMENT = [
    (0, (slice(None), _NONE), True),
    (0, (slice(None), torch.zeros(3, dtype=torch.bool)), True),
    (1, (_NONE,), True),
    (0, (_NONE,), False),
    (1, (slice(None), _NONE), False),
    (0, (slice(0, 0),), False),
    # a tensor on the stack dim and one on a member dim are one index: no pair selected,
    # no member written (program 17,206,514 L3 of features,math,index, fz34i)
    (0, (torch.tensor([True, False]), _NONE), False),
    (1, (_NONE, torch.tensor([False, True])), False),
]


@pytest.mark.parametrize(("stack_dim", "index", "refused"), _NO_ELEMENT)
def test_a_write_at_no_element_refuses_another_dtype_as_torch(
    stack_dim: int, index: Any, refused: bool
) -> None:
    # tclass wrote nothing and said nothing; torch's index_put (the peer, a TensorDict)
    # refuses a tensor of another dtype at a tensor index (program 8,301,998, fz18a)
    lazy = _nested_bool_stack(tclass, stack_dim)
    selected = lazy.get(("n", "a"))[index]
    value = selected.long()
    before = lazy.get(("n", "a")).clone()
    if refused:
        with pytest.raises(tclass.errors.InPlaceWriteError, match=r"torch\.bool.*\.to\("):
            lazy.set_at_(("n", "a"), value, index)
        with pytest.raises(RuntimeError, match="index_put requires the same dtype"):
            lazy[index] = {"n": {"a": value}}
    else:
        lazy.set_at_(("n", "a"), value, index)
        lazy[index] = {"n": {"a": value}}
    lazy.set_at_(("n", "a"), selected, index)  # the same dtype: written (nothing)
    assert torch.equal(lazy.get(("n", "a")), before)


@pytest.mark.parametrize(("stack_dim", "index", "refused"), _NO_ELEMENT)
def test_a_write_at_no_element_refuses_as_the_peers(
    stack_dim: int, index: Any, refused: bool
) -> None:
    peer = pytest.importorskip("tensordict")
    lazy = _nested_bool_stack(peer, stack_dim)
    value = lazy.get(("n", "a"))[index].long()
    if refused:
        with pytest.raises(RuntimeError, match="Index put requires the source and destination"):
            lazy.set_at_(("n", "a"), value, index)
    else:
        lazy.set_at_(("n", "a"), value, index)


@pytest.mark.parametrize(
    ("value", "refused"), [(torch.tensor(True), False), (torch.tensor(1), True)]
)
def test_a_0d_value_at_no_element_is_written_as_torch_writes_it(
    value: torch.Tensor, refused: bool
) -> None:
    # torch writes a 0-d value of the leaf's dtype at an empty tensor index and refuses
    # another dtype with a RuntimeError; the peer's lazy stack fails unbinding the 0-d
    # value (an IndexError, "Dimension specified as 0": inv18e)
    members = [tclass.TensorDict(a=torch.zeros(3, 2, dtype=torch.bool), batch_size=[3])] * 2
    lazy = tclass.lazy_stack(members, 0)
    dense = lazy.get("a").clone()
    index = (slice(None), _NONE)
    if refused:
        with pytest.raises(RuntimeError, match="Index put requires the source and destination"):
            dense[index] = value
        with pytest.raises(tclass.errors.InPlaceWriteError, match="index_put") as info:
            lazy[index] = {"a": value}
        assert isinstance(info.value, RuntimeError)
    else:
        dense[index] = value
        lazy[index] = {"a": value}
    assert torch.equal(lazy.get("a"), dense)


@pytest.mark.parametrize("take", [False, True])
def test_copy_at_of_a_ragged_stack_at_a_mask_writes_as_the_peers(take: bool) -> None:
    """``copy_at_`` of a ragged lazy stack's own rows at a mask over its first dim: the
    source (ragged too, no rows where the mask takes none) is written member by member,
    where its dtypes were read through a dense stack it has not (a HeterogeneousEntryError;
    program 10,428 of the five families, inv19c)."""
    tensordict = pytest.importorskip("tensordict")
    sums = []
    for lib in (tclass, tensordict):
        x = lib.lazy_stack(
            [
                lib.TensorDict({"a": torch.ones(1, 1, 2, 3, dtype=torch.bool)}, [1, 1]),
                lib.TensorDict({"a": torch.ones(1, 1, 2, 1, dtype=torch.bool)}, [1, 1]),
            ],
            2,
        )
        mask = torch.tensor([take])
        out = x.copy_at_(x[mask,].clone().zero_(), (mask,), fast=False)
        assert out is x
        sums.append([int(member["a"].sum()) for member in x.tensordicts])
    assert sums[0] == sums[1] == ([0, 0] if take else [6, 2])


def _stack(lib: Any, lengths: tuple[int, ...] = (3, 3), dim: int = 0) -> Any:
    return lib.lazy_stack(
        [lib.TensorDict({"a": torch.zeros(n, 2), "s": "x"}, batch_size=[n]) for n in lengths], dim
    )


_FILLS = [
    (torch.tensor(5.0), 0),
    (torch.tensor(5.0), (..., 0)),
    (torch.tensor([5.0, 6.0]), (slice(None), 1)),  # the feature dims only
    (torch.tensor([[5.0]]), (slice(0, 1),)),  # one element, leading dims of size 1
    (torch.tensor(5.0), (torch.tensor([1, 0]), torch.tensor([2, 0]))),
]


@pytest.mark.parametrize(("value", "index"), _FILLS)
def test_a_value_the_same_for_every_element_fills_the_selection(value: Any, index: Any) -> None:
    # as the peer (and a TensorDict): each member takes it as torch broadcasts it; a dict
    # of the value needed the selection's batch dims (BatchMismatchError, lo23b)
    peer = pytest.importorskip("tensordict")
    expected = _stack(peer)
    expected.set_at_("a", value, index)
    lazy = _stack(tclass)
    assert lazy.set_at_("a", value, index) is lazy
    assert [m["a"].tolist() for m in lazy.tensordicts] == [
        m["a"].tolist() for m in expected.tensordicts
    ]


def test_a_ragged_stack_takes_such_a_value_in_each_member_it_reaches() -> None:
    lazy = _stack(tclass, (2, 3))  # [2, -1]
    lazy.set_at_("a", torch.tensor([7.0, 8.0]), 1)  # the peer: each feature row of member 1
    lazy.set_at_("a", torch.tensor(5.0), (slice(None), 0))  # the peer fails (IndexError -1)
    assert [m["a"].tolist() for m in lazy.tensordicts] == [
        [[5.0, 5.0], [0.0, 0.0]],
        [[5.0, 5.0], [7.0, 8.0], [7.0, 8.0]],
    ]


def test_a_value_no_member_takes_writes_nothing() -> None:
    lazy = _stack(tclass, (2, 3))
    with pytest.raises(RuntimeError, match="shape mismatch"):
        lazy.set_at_("a", torch.ones(3), (slice(None), 0))  # 3 does not fit the feature dim 2
    assert all(not m["a"].any() for m in lazy.tensordicts)


def test_leading_dims_of_size_one_are_ignored_as_torch_ignores_them() -> None:
    lazy = _stack(tclass)
    lazy.set_at_("a", torch.full((1, 1, 1), 4.0), (0, 1))
    assert lazy.tensordicts[0]["a"][1].tolist() == [4.0, 4.0]
    assert lazy.tensordicts[0]["a"].sum() == 8.0 and not lazy.tensordicts[1]["a"].any()


def test_update_at_of_a_dict_broadcasts_as_set_at_and_a_tensordict_do() -> None:
    # the peer's lazy update_at_ lines [5., 6.] up with the 2 selected members instead
    lazy = _stack(tclass)
    dense = TensorDict({"a": torch.zeros(2, 3, 2)}, batch_size=[2, 3])
    for target in (lazy, dense):
        target.update_at_({"a": torch.tensor([5.0, 6.0])}, (slice(None), 0))
        target.update_at_({"a": torch.tensor(1.0)}, (slice(None), 2))
    assert torch.equal(torch.stack([m["a"] for m in lazy.tensordicts]), dense["a"])
    assert dense["a"][:, 0].tolist() == [[5.0, 6.0], [5.0, 6.0]]


def test_an_ellipsis_reaching_the_features_of_a_ragged_stack_says_how_to_write() -> None:
    # the peer fails stacking the entry too ("Failed to stack tensors", a RuntimeError)
    lazy = _stack(tclass, (2, 3))
    with pytest.raises(tclass.errors.HeterogeneousEntryError, match="Write each member") as info:
        lazy.set_at_("a", torch.tensor(5.0), (..., 0))
    assert isinstance(info.value, RuntimeError)
    assert all(not m["a"].any() for m in lazy.tensordicts)
    for member in lazy.tensordicts:  # what the message says works
        member.set_at_("a", torch.tensor(5.0), (..., 0))
    assert [m["a"][:, 0].tolist() for m in lazy.tensordicts] == [[5.0, 5.0], [5.0, 5.0, 5.0]]


@pytest.mark.parametrize("lib_name", ["tclass", "tensordict"])
def test_an_empty_tensor_on_nested_stack_dims_writes_nothing(lib_name: str) -> None:
    # a stack (dim 1) of lazy stacks (dim 0): x[[], 0] picks no member of each nested
    # stack, so nothing is written and a uint32 entry (no index_put kernel) or another
    # dtype is taken, as the peer's nested setitem (program 17,211,348 L6 of
    # methods,index,shape,combine, fz34i); tclass refused with InPlaceKernelError
    lib = pytest.importorskip(lib_name)
    inner = [lib.TensorDict(a=torch.arange(3).to(torch.uint32), batch_size=[3])] * 2
    nested = lib.lazy_stack([lib.lazy_stack([m.clone() for m in inner], 0)] * 2, 1)
    before = nested.get("a").clone()
    nested[[], 0] = nested[[], 0].clone().zero_()
    nested[torch.tensor([], dtype=torch.long), 1, ...] = 0
    assert torch.equal(nested.get("a"), before)
    dense = nested.to_tensordict()
    with pytest.raises(NotImplementedError, match="index_put"):  # a TensorDict: torch's
        dense[torch.tensor([0]), 0] = 0
