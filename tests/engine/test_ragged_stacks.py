"""Ragged lazy stacks, as the peer has them: members whose sizes differ along a batch dim
give a lazy stack whose batch size is ``-1`` there. Members, indexing, member-wise ops,
padded / nested / list reads, saved folders; clear errors (a ``HeterogeneousEntryError``:
a ``TclassError``, ``ValueError`` and ``RuntimeError``, as the peer raises) where one size
is needed along the ragged dim. The ``peer`` tests run each scenario with tclass and
tensordict and compare.
"""

from __future__ import annotations

import pickle
import random
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch

import tclass
from tclass import LazyStackedTensorDict, TensorClass, TensorDict, errors

from peer_scenarios import Scenario, scenario_tests  # noqa: E402


def _episode(lib: ModuleType, length: int, offset: float = 0.0) -> Any:
    return lib.TensorDict(
        obs=torch.arange(length * 2.0).reshape(length, 2) + offset,
        reward=torch.arange(float(length)),
        batch_size=[length],
    )


def _ragged(lib: ModuleType, lengths: tuple[int, ...] = (3, 5, 2), dim: int = 0) -> Any:
    episodes = [_episode(lib, n, 10.0 * i) for i, n in enumerate(lengths)]
    return lib.lazy_stack(episodes, dim)


# --- scenarios run with both libraries ----------------------------------------------------


def _sizes(lib: ModuleType) -> Any:
    stack = _ragged(lib)
    built = lib.LazyStackedTensorDict(*stack.tensordicts, stack_dim=1)
    return (
        tuple(stack.batch_size), tuple(built.batch_size), len(stack), stack.batch_dims,
        tuple(_ragged(lib, (3, 3)).batch_size), tuple(_ragged(lib, (2, 4), dim=1).batch_size),
    )  # fmt: skip


def _indexing(lib: ModuleType) -> Any:
    stack = _ragged(lib)
    return (
        tuple(stack[1].batch_size), tuple(stack[1:].batch_size), tuple(stack[:, 0].batch_size),
        stack[:, 0]["reward"].tolist(), stack[:, :2]["reward"].tolist(),
        tuple(stack[[0, 2]].batch_size), tuple(stack[torch.tensor([True, False, True])].shape),
        stack[2]["obs"][:, 0].tolist(), tuple(stack[None].batch_size),
        tuple(stack.permute(1, 0)[0].batch_size), tuple(stack[0, 1:].batch_size),
    )  # fmt: skip


def _reads(lib: ModuleType) -> Any:
    stack = _ragged(lib)
    nested = stack.get("reward", as_nested_tensor=True)
    return (
        stack.get("reward", as_padded_tensor=True).tolist(),
        [t.tolist() for t in stack.get("reward", as_list=True)],
        [t.tolist() for t in nested.unbind()], sorted(stack.keys()),
        [ep["reward"].sum().item() for ep in stack.tensordicts],
    )  # fmt: skip


def _member_ops(lib: ModuleType) -> Any:
    stack = _ragged(lib)
    shapes = [
        stack.clone(), stack.apply(lambda x: x * 2), stack.to("cpu"), stack.unsqueeze(0),
        stack.unsqueeze(-1), stack.permute(1, 0), stack == stack, stack.exclude("obs"),
        torch.cat([stack, stack]), torch.cat([stack, stack], 1), lib.lazy_stack([stack, stack]),
        torch.stack([stack, stack]), stack.expand(2, 3, -1), stack.repeat(2, 1),
        stack.reshape(-1), stack.flatten(), pickle.loads(pickle.dumps(stack)),
    ]  # fmt: skip
    return (
        [tuple(s.batch_size) for s in shapes],
        [tuple(m.batch_size) for m in stack.unbind(0)],
        [tuple(m.batch_size) for m in stack.split(1)],
        stack.apply(lambda x: x * 2)[1]["obs"][-1, 0].item(),
        (stack == stack).all(), stack.reshape(-1)["reward"].tolist(),
    )  # fmt: skip


def _padding(lib: ModuleType) -> Any:
    stack = _ragged(lib)
    dense = lib.pad_sequence(list(stack.unbind(0)), return_mask=True)
    return tuple(dense.batch_size), dense["masks", "reward"].sum().item()


def _errors(lib: ModuleType) -> Any:
    stack = _ragged(lib)
    calls: dict[str, Callable[[], Any]] = {
        "get": lambda: stack["reward"], "contiguous": stack.contiguous,
        "to_tensordict": stack.to_tensordict, "view": lambda: stack.view(-1),
        "unbind": lambda: stack.unbind(1), "split": lambda: stack.split(1, 1),
        "batch_size": lambda: setattr(stack, "batch_size", [3]),
    }  # fmt: skip
    raised = []
    for name, call in calls.items():
        with pytest.raises((RuntimeError, ValueError)):  # the peer's and tclass's
            call()
        raised.append(name)
    return raised


def _inner_stack_dim(lib: ModuleType) -> Any:
    def member(n: int) -> Any:
        return lib.TensorDict(x=torch.arange(2.0 * n).reshape(2, n), batch_size=[2, n])

    stack = lib.lazy_stack([member(3), member(5)], 1)  # batch size [2, 2, -1]
    shapes = [
        stack, stack[1], stack[:, 1], stack.unbind(0)[1], stack.unbind(1)[1],
        stack.permute(2, 0, 1), stack.transpose(0, 1)[1], stack.reshape(-1),
        stack[torch.tensor([True, False])], stack[torch.tensor([1])], stack + stack,
    ]  # fmt: skip
    return (
        [tuple(s.batch_size) for s in shapes],
        stack[1].get("x", as_padded_tensor=True).tolist(), stack[..., 0]["x"].tolist(),
        stack[0, :, 1:3]["x"].tolist(), (stack + stack)[:, 1]["x"].sum().item(),
    )  # fmt: skip


def _writes(lib: ModuleType) -> Any:
    stack = _ragged(lib)
    other = lib.lazy_stack([_episode(lib, n, 100.0) for n in (3, 5, 2)])
    stack.update_(other)
    updated = stack[1]["reward"].tolist()
    stack[0] = _episode(lib, 3, -1.0)
    stack[1:] = lib.lazy_stack([_episode(lib, n, 7.0) for n in (5, 2)])
    stack.apply_(lambda x: x + 1)
    return (
        updated, stack[0]["reward"].tolist(), stack[2]["obs"][:, 0].tolist(),
        stack[1]["reward"].tolist(),
    )  # fmt: skip


def _saved(lib: ModuleType, tmp_path: Path) -> Any:
    stack = _ragged(lib)
    stack.memmap(tmp_path / lib.__name__)
    back = lib.TensorDict.load_memmap(tmp_path / lib.__name__)
    return type(back).__name__, tuple(back.batch_size), back[1]["reward"].tolist()


SCENARIOS: dict[str, Scenario] = {
    "sizes": _sizes, "indexing": _indexing, "reads": _reads, "member_ops": _member_ops,
    "padding": _padding, "errors": _errors, "writes": _writes,
    "inner_stack_dim": _inner_stack_dim,
}  # fmt: skip


test_scenario_on_tclass, test_same_as_the_peer = scenario_tests(SCENARIOS)


@pytest.mark.peer
def test_saved_folders_load_in_both_libraries(tmp_path: Path) -> None:
    peer = pytest.importorskip("tensordict")
    assert _saved(tclass, tmp_path) == _saved(peer, tmp_path)
    for writer, reader in ((tclass, peer), (peer, tclass)):
        folder = tmp_path / f"{writer.__name__}-to-{reader.__name__}"
        _ragged(writer).memmap(folder)
        back = reader.TensorDict.load_memmap(folder)
        assert tuple(back.batch_size) == (3, -1)
        assert back.get("reward", as_padded_tensor=True).tolist() == (
            _ragged(tclass).get("reward", as_padded_tensor=True).tolist()
        )


# --- tclass's own behaviour ---------------------------------------------------------------


def test_the_ragged_dim_is_minus_one_and_the_rest_is_kept() -> None:
    a = TensorDict(x=torch.zeros(2, 3, 4), batch_size=[2, 3])
    b = TensorDict(x=torch.zeros(2, 5, 4), batch_size=[2, 5])
    stack = tclass.lazy_stack([a, b], 1)
    assert stack.batch_size == (2, 2, -1) and stack.numel() == 16
    assert stack[:, 1].batch_size == (2, 5) and stack[:, :, 0].batch_size == (2, 2)
    assert stack[0, 0].batch_size == (3,)
    regular = stack[:, :, :3]  # every member cut to 3: the stack is regular again
    assert regular.batch_size == (2, 2, 3) and regular["x"].shape == (2, 2, 3, 4)


def test_members_of_other_batch_dims_are_refused() -> None:
    a, b = TensorDict(batch_size=[3]), TensorDict(batch_size=[3, 2])
    for build in (lambda: tclass.lazy_stack([a, b]), lambda: LazyStackedTensorDict(a, b)):
        with pytest.raises(errors.StackError, match=r"as many batch dims") as info:
            build()
        assert isinstance(info.value, RuntimeError) and isinstance(info.value, errors.TclassError)


def test_ops_along_the_ragged_dim_say_what_works() -> None:
    stack = _ragged(tclass)
    for call in (
        lambda: stack.unbind(1),
        lambda: stack.split(2, 1),
        lambda: stack.chunk(2, 1),
        lambda: stack.view(-1),
        lambda: stack.reshape(2, 5),
        lambda: stack.unflatten(1, [1, -1]),
        lambda: stack.unflatten(-1, [1, 1]),
    ):
        with pytest.raises(errors.HeterogeneousEntryError, match=r"dim 1 .* is ragged") as info:
            call()
        assert "[3], [5], [2]" in str(info.value) and "as_nested_tensor=True" in str(info.value)
        assert isinstance(info.value, RuntimeError) and isinstance(info.value, ValueError)


def test_expanding_the_ragged_dim_to_a_size_is_refused() -> None:
    # the peer's broadcast_to gives a dense TensorDict whose ragged dim reads 1 (left43)
    stack = _ragged(tclass)  # [3, -1]
    for call in (lambda: stack.expand(2, 3, 1), lambda: stack.broadcast_to([3, 4])):
        with pytest.raises(errors.HeterogeneousEntryError, match=r"dim 1 .* is ragged") as info:
            call()
        assert "keep it with -1" in str(info.value) and isinstance(info.value, RuntimeError)
    assert stack.expand(2, 3, -1).batch_size == torch.Size([2, 3, -1])  # kept with -1


def test_python_values_of_ragged_members_read_as_a_ragged_value_stack() -> None:
    members = [TensorDict(s="x", batch_size=[n]) for n in (3, 5)]
    stack = tclass.lazy_stack(members)
    assert stack["s"] == [["x"] * 3, ["x"] * 5]  # one value per element, as the peer
    values = stack.get("s")
    assert isinstance(values, tclass.NonTensorStack) and values.batch_size == (2, -1)
    assert [node.data for node in stack.get("s", as_list=True)] == ["x", "x"]
    assert stack[1]["s"] == "x" and "s: str" in repr(stack)


def test_tensor_indexing_along_the_stack_dim_picks_members() -> None:
    stack = _ragged(tclass)
    assert [m.batch_size[0] for m in stack[torch.tensor([2, 0])].tensordicts] == [2, 3]
    with pytest.raises(IndexError, match=r"mask of shape \[2\]"):
        stack[torch.tensor([True, False])]
    none = stack[torch.tensor([], dtype=torch.long)]  # shaped by member 0, as the peer
    assert type(none) is TensorDict and none.batch_size == (0, 3)


def test_insert_and_append_keep_the_stack_ragged() -> None:
    stack = LazyStackedTensorDict(_episode(tclass, 3), _episode(tclass, 4))
    assert stack.batch_size == (2, -1)
    stack.append(_episode(tclass, 5))
    stack.insert(0, _episode(tclass, 2))
    assert stack.batch_size == (4, -1) and stack.numel() == 14
    uniform = LazyStackedTensorDict(_episode(tclass, 3), _episode(tclass, 3))
    with pytest.raises(errors.StackError, match="differs"):  # as the peer: lazy_stack instead
        uniform.append(_episode(tclass, 4))
    assert uniform.batch_size == (2, 3)


class Episode(TensorClass):
    obs: torch.Tensor
    reward: torch.Tensor


def test_records_over_a_ragged_stack(tmp_path: Path) -> None:
    parts = [Episode(torch.zeros(n, 2), torch.ones(n), batch_size=[n]) for n in (3, 5)]
    stack = tclass.lazy_stack(parts)
    assert type(stack) is Episode and stack.batch_size == (2, -1) and stack.numel() == 8
    assert (
        stack[1]._tensordict is parts[1]._tensordict
        and stack.get("reward", as_padded_tensor=True).sum() == 8
    )
    with pytest.raises(errors.HeterogeneousEntryError, match="'obs'"):
        _ = stack.obs
    assert stack.reshape(-1).batch_size == (8,) and stack.apply(torch.neg).batch_size == (2, -1)
    stack.memmap(tmp_path / "episodes")
    back = Episode.load_memmap(tmp_path / "episodes")
    assert type(back) is Episode and back.batch_size == (2, -1) and back[1].obs.shape == (5, 2)


def test_records_over_a_ragged_stack_compare_member_by_member() -> None:
    parts = [
        Episode(torch.arange(2.0 * n).reshape(n, 2), torch.ones(n), batch_size=[n]) for n in (3, 1)
    ]
    stack = tclass.lazy_stack(parts)
    for compare in (lambda x: x == 1, lambda x: x > 2):
        out = compare(stack)
        assert type(out) is Episode and out.batch_size == (2, -1)
        for member, part in zip(out.unbind(0), parts):
            assert torch.equal(member.obs, compare(part.obs))
            assert torch.equal(member.reward, compare(part.reward))


def test_stack_and_cat_of_records_over_ragged_stacks_go_member_by_member() -> None:
    parts = [Episode(torch.zeros(n, 2), torch.full((n,), float(n)), batch_size=[n]) for n in (3, 5)]
    stack = tclass.lazy_stack(parts)
    both = tclass.stack([stack, stack.apply(torch.ones_like)], 1)  # as the peer: no dense read
    assert type(both) is Episode and both.batch_size == (2, 2, -1)
    storage = both._tensordict
    assert isinstance(storage, LazyStackedTensorDict) and storage.stack_dim == 0
    assert [m.batch_size for m in storage.tensordicts] == [(2, 3), (2, 5)]
    assert torch.equal(both[1, 0].reward, torch.full((5,), 5.0))
    assert torch.equal(both[1, 1].obs, torch.ones(5, 2))
    joined = torch.cat([stack, stack], 0)
    assert type(joined) is Episode and joined.batch_size == (4, -1)
    assert [m.batch_size[0] for m in joined._tensordict.tensordicts] == [3, 5, 3, 5]


def test_stack_of_ragged_lazy_stacks_that_line_up_goes_member_by_member() -> None:
    stack = _ragged(tclass)
    out = torch.stack([stack, stack.apply(torch.zeros_like)], 0)
    assert out.batch_size == (2, 3, -1) and out.stack_dim == 1
    assert [m.batch_size for m in out.tensordicts] == [(2, 3), (2, 5), (2, 2)]
    assert torch.equal(out[0, 1]["reward"], stack[1]["reward"])
    assert torch.equal(out[1, 2]["obs"], torch.zeros(2, 2))
    other = _ragged(tclass, (5, 3, 2))  # members of other lengths: a lazy stack of the two
    out = torch.stack([stack, other], 0)
    assert out.batch_size == (2, 3, -1) and out.stack_dim == 0
    assert out.tensordicts[1] is other


def test_cat_joins_ragged_and_regular_pieces() -> None:
    stack = _ragged(tclass)
    again = torch.cat([stack[:2], stack[2:]])  # [2, -1] and [1, 2]
    assert again.batch_size == (3, -1) and again[2]["reward"].tolist() == [0.0, 1.0]
    with pytest.raises(errors.StackError, match="incompatible"):
        torch.cat([stack, TensorDict(batch_size=[1, 2, 3])])


def test_strict_shape_refuses_ragged_members() -> None:
    a, b = _episode(tclass, 3), _episode(tclass, 5)
    for build in (
        lambda: tclass.lazy_stack([a, b], strict_shape=True),
        lambda: LazyStackedTensorDict(a, b, strict_shape=True),
    ):
        with pytest.raises(errors.StackError, match=r"strict_shape=True.* \[5\]") as info:
            build()
        assert isinstance(info.value, RuntimeError)  # as the peer raises
    assert tclass.lazy_stack([a, a.clone()], strict_shape=True).batch_size == (2, 3)


def test_records_over_a_ragged_stack_update_in_place() -> None:
    parts = [Episode(torch.zeros(n, 2), torch.zeros(n), batch_size=[n]) for n in (3, 5)]
    stack = tclass.lazy_stack(parts)
    ones = tclass.lazy_stack(
        [Episode(torch.ones(n, 2), torch.ones(n), batch_size=[n]) for n in (3, 5)]
    )
    assert stack.update_(ones) is stack and parts[1].reward.sum() == 5
    stack[1] = Episode(torch.full((5, 2), 2.0), torch.full((5,), 2.0), batch_size=[5])
    assert parts[1].obs.sum() == 20 and parts[0].obs.sum() == 6
    stack[:, 0] = Episode(torch.full((2, 2), 3.0), torch.full((2,), 3.0), batch_size=[2])
    assert parts[0].reward.tolist() == [3.0, 1.0, 1.0] and parts[1].reward[0] == 3
    # a 2-d tensor at the stack dim: member 0 under [1, 1], the value broadcast (the peer)
    stack[torch.tensor([[0]])] = Episode(torch.zeros(3, 2), torch.arange(3.0), batch_size=[3])
    assert parts[0].reward.tolist() == [0.0, 1.0, 2.0] and parts[1].reward[0] == 3


def _elements(stack: Any) -> Any:
    """The leaf values of a result, element by element: nested lists along regular dims,
    the members (with the stack dim) where the first dim is ragged."""
    batch = tuple(stack.batch_size)
    if not batch:
        return stack["x"].tolist()
    if batch[0] != -1:
        return [_elements(stack[i]) for i in range(batch[0])]
    return ("ragged", stack.stack_dim, [_elements(member) for member in stack.tensordicts])


def _indexed(lib: ModuleType, lengths: list[int], dim: int, index: tuple[Any, ...]) -> Any:
    """``lazy[index]`` (its batch size and elements), then ``lazy[index] = -1`` (the
    members after it); an error instead of either."""
    members = [
        lib.TensorDict(x=torch.arange(2.0 * n).reshape(2, n) + 100 * i, batch_size=[2, n])
        for i, n in enumerate(lengths)
    ]
    stack = lib.lazy_stack(members, dim)
    try:
        out = stack[index]
        read = tuple(out.batch_size), _elements(out)
    except (IndexError, RuntimeError, ValueError) as error:
        read = error
    try:
        stack[index] = -1.0
        written = [member["x"].tolist() for member in members]
    except (IndexError, RuntimeError, ValueError) as error:
        written = error
    return read, written


@pytest.mark.peer
def test_indices_read_and_write_the_elements_the_peer_does() -> None:
    peer = pytest.importorskip("tensordict")
    rng = random.Random(0)
    choices: list[Any] = [0, 1, -1, slice(None), slice(0, 1), slice(1, None), slice(None, None, 2)]
    choices += [None, ..., torch.tensor([0]), torch.tensor([1, 0]), torch.tensor([True, False])]
    compared = 0
    for _ in range(150):
        lengths = [rng.choice([2, 3, 4]) for _ in range(rng.choice([2, 3]))]
        lengths[0] = 5  # a ragged dim
        index = tuple(rng.choice(choices) for _ in range(rng.choice([1, 2, 3])))
        if sum(item is ... for item in index) > 1:
            continue
        dim = rng.choice([0, 1, 2])
        both = zip(_indexed(tclass, lengths, dim, index), _indexed(peer, lengths, dim, index))
        for ours, theirs in both:  # the read, then the write
            if isinstance(ours, Exception):
                # refused where the ragged dim has no one size (or out of range, as the peer)
                assert isinstance(ours, errors.HeterogeneousEntryError) or isinstance(
                    theirs, Exception
                ), (lengths, dim, index, ours)
            elif not isinstance(theirs, Exception):
                assert ours == theirs, (lengths, dim, index)
                compared += 1
    assert compared > 100


def test_one_tensor_index_with_ints_and_slices() -> None:
    members = [TensorDict(x=torch.arange(2.0 * n).reshape(2, n), batch_size=[2, n]) for n in (3, 5)]
    stack = tclass.lazy_stack(members, 1)  # [2, 2, -1]
    rows = stack[torch.tensor([1, 0]), 1]  # each member's rows 1, 0 of member 1
    assert rows.batch_size == (2, 5) and rows["x"][0].tolist() == [5.0, 6.0, 7.0, 8.0, 9.0]
    picked = stack[0, torch.tensor([1])]  # row 0 of member 1: a ragged stack of one
    assert picked.batch_size == (1, 5) and picked["x"].tolist() == [[0.0, 1.0, 2.0, 3.0, 4.0]]
    both = stack[torch.tensor([0]), torch.tensor([1])]  # row 0 of member 1, as the peer
    assert both.batch_size == (1, 5) and both["x"].tolist() == [[0.0, 1.0, 2.0, 3.0, 4.0]]


def test_cat_along_the_stack_dim_of_pieces_of_other_sizes_is_ragged() -> None:
    td = TensorDict({"a": torch.arange(3.0)}, [3])
    stack = tclass.lazy_stack(list(td.chunk(2, -1)), -1)  # members [2] and [1]
    assert stack.batch_size == (-1, 2)
    pieces = stack.split(1, -1)
    assert [p.batch_size for p in pieces] == [(2, 1), (1, 1)]
    out = torch.cat(pieces, -1)  # as the peer: the pieces' members, a ragged stack again
    assert out.batch_size == (-1, 2) and out.stack_dim == 1
    assert [m["a"].tolist() for m in out.tensordicts] == [[0.0, 1.0], [2.0]]
    assert torch.cat(pieces, 0)["a"].tolist() == [[0.0], [1.0], [2.0]]
    with pytest.raises(errors.StackError, match="incompatible"):
        torch.cat([pieces[0], stack], 0)  # along another dim the other sizes must agree


def test_cat_of_pieces_whose_members_are_ragged_stacks_joins_them_member_by_member() -> None:
    # A stack along its last dim of ragged stacks: its pieces along dim 0 differ in size at
    # the ragged dim, and piece i of each joins member i (a ragged stack again), as the peer.
    td = TensorDict({"c": torch.arange(6.0).reshape(3, 2)}, [3])
    ragged = tclass.lazy_stack(list(td.chunk(2, 0)), 0)  # members [2] and [1]: [2, -1]
    stack = tclass.lazy_stack([ragged, ragged.apply(torch.zeros_like)], -1)
    pieces = stack.split(1, 0)
    assert [p.batch_size for p in pieces] == [(1, 2, 2), (1, 1, 2)]
    out = torch.cat(pieces, 0)
    assert out.batch_size == (2, -1, 2) and out.stack_dim == 2
    assert out.tensordicts[0].batch_size == (2, -1)
    assert [m["c"].tolist() for m in out.tensordicts[0].tensordicts] == [
        [[0.0, 1.0], [2.0, 3.0]],
        [[4.0, 5.0]],
    ]
    wide, narrow = (
        tclass.lazy_stack([TensorDict(batch_size=[1, n]), TensorDict(batch_size=[1, n])], -1)
        for n in (2, 1)
    )
    with pytest.raises(errors.StackError, match=r"member 1 has batch size \[1, 1, 2\]"):
        torch.cat([wide, narrow], 0)  # members that are not ragged stacks must agree


class Wrapper(TensorClass):
    ep: Episode
    step: torch.Tensor


def test_nested_records_over_a_ragged_stack_list_keys_without_reading_leaves() -> None:
    inner = Episode(torch.zeros(3, 2), torch.ones(3), batch_size=[3])
    record = Wrapper(ep=inner, step=torch.arange(3.0), batch_size=[3])
    stack = tclass.lazy_stack(list(record.chunk(2, 0)), 0)  # members [2] and [1]
    assert type(stack) is Wrapper and stack.batch_size == (2, -1)
    assert set(stack.keys(True, True)) == {("ep", "obs"), ("ep", "reward"), "step"}
    out = torch.stack([stack], -1)  # as the peer: member by member
    assert type(out) is Wrapper and out.batch_size == (2, -1, 1)
    assert [m.batch_size for m in out._tensordict.tensordicts] == [(2, 1), (1, 1)]
    assert torch.equal(out[1, :, 0].step, torch.tensor([2.0]))


def test_update_batch_size_replaces_the_members_and_keeps_the_stack() -> None:
    dest = TensorDict(ragged=_ragged(tclass, (3, 4, 5), dim=-1))
    source = TensorDict(ragged=_ragged(tclass, (3, 4), dim=-1))
    kept = dest["ragged"]
    assert dest.update(source, update_batch_size=True) is dest
    assert dest["ragged"] is kept and kept.batch_size == torch.Size([-1, 2])
    assert kept.tensordicts == source["ragged"].tensordicts  # shared, as set() shares
    direct = _ragged(tclass, (3, 4, 5))
    dense = TensorDict(obs=torch.ones(2, 6, 2), reward=torch.ones(2, 6), batch_size=[2, 6])
    assert direct.update(dense, update_batch_size=True) is direct
    assert direct.batch_size == torch.Size([2, 6]) and len(direct.tensordicts) == 2
    with pytest.raises(errors.BatchSizeError, match="not in the source: \\['reward'\\]"):
        _ragged(tclass).update(dense.exclude("reward"), update_batch_size=True)


def test_update_from_a_ragged_stack_makes_the_node_a_lazy_stack() -> None:
    first = TensorDict({("a", "c"): torch.ones(3, 4), "common": torch.ones(3)}, [3])
    second = TensorDict({("a", "c"): torch.full((3, 5), 2.0), "common": torch.ones(3)}, [3])
    source = TensorDict(parent=tclass.lazy_stack([first, second]), batch_size=[2])
    dest = TensorDict({("parent", "a", "e"): torch.zeros(2, 3, 4)}, [2])
    dest.update(source)  # the members' "c" differ in shape: one node per member now
    parent = dest["parent"]
    assert type(parent) is LazyStackedTensorDict and parent.batch_size == torch.Size([2])
    assert parent[1]["a", "c"].shape == (3, 5) and (parent[0]["a", "c"] == 1).all()
    assert (parent.get(("a", "e")) == 0).all()  # kept


def test_keys_of_ragged_python_values_read_no_value() -> None:
    members = [TensorDict(s="x", r=torch.zeros(n), batch_size=[n]) for n in (3, 5)]
    stack = tclass.lazy_stack(members)
    assert set(stack.keys(True, True)) == {"r"} and set(stack.keys(True)) == {"s", "r"}
    assert set(stack.keys(True, True, is_leaf=tclass.is_leaf_nontensor)) == {"s", "r"}
    out = torch.stack([stack], -1)  # as the peer: member by member, values kept
    assert out.batch_size == (2, -1, 1) and out[1, :, 0]["s"] == "x"
    assert not stack.is_shared() and (stack + 1)[1]["r"].tolist() == [1.0] * 5


def test_share_memory_reaches_the_members_of_a_lazy_stack() -> None:
    stack = tclass.lazy_stack([TensorDict(r=torch.zeros(n), batch_size=[n]) for n in (3, 3, 5)])
    assert not stack.is_shared()
    stack.share_memory_()
    assert stack.is_shared() and all(m["r"].is_shared() for m in stack.tensordicts)


def test_a_lazy_stack_of_ragged_stacks_shows_and_lists_its_keys() -> None:
    """Found by the differential fuzzer: members that are themselves ragged lazy stacks
    (with Python values) are listed and shown without a dense value, and stack as the
    peer's."""
    rec = Episode(obs=torch.zeros(3, 2), reward=torch.ones(3), batch_size=[3])
    members = [TensorDict(s="x", r=torch.zeros(n), batch_size=[n]) for n in (2, 1)]
    ragged = tclass.lazy_stack(members)
    for inner in (tclass.lazy_stack(list(rec.chunk(2)), 0), ragged):
        outer = tclass.lazy_stack([inner], 2)
        assert "obs: f32[2]" in repr(outer) or "r: f32[]" in repr(outer)
        assert set(outer.keys(True)) == set(inner.keys(True))
        assert tclass.stack([outer], -4).batch_size == (1, *outer.batch_size)


def test_member_wise_facts_of_a_ragged_stack_stack_nothing() -> None:
    """As the peer's: ``auto_device_``, ``is_contiguous`` and ``requires_grad_`` answer
    member by member, without the dense value a ragged entry lacks."""
    members = [
        TensorDict(r=torch.zeros(2, n), n={"d": torch.zeros(2)}, batch_size=[2]) for n in (1, 3)
    ]
    stack = tclass.lazy_stack(members)
    assert stack.auto_device_() is stack and stack.device == torch.device("cpu")
    assert stack["n"].device == torch.device("cpu") and stack.is_contiguous() is False
    assert stack.requires_grad_() is stack and all(m["r"].requires_grad for m in members)
    ints = tclass.lazy_stack(
        [TensorDict(i=torch.zeros(2, n, dtype=torch.long), batch_size=[2]) for n in (1, 3)]
    )
    with pytest.raises(errors.GradError, match="'i'"):
        ints.requires_grad_()


def test_a_view_as_its_own_batch_size_is_the_stack() -> None:
    """As the peer's: ``view`` to the batch size a ragged stack has (``-1`` included)
    is the stack itself; any other view still says the dim is ragged."""
    stack = _ragged(tclass, (2, 3)).unsqueeze(0)  # batch size [1, 2, -1]
    assert stack.view(1, 2, -1) is stack and stack.view([1, 2, -1]) is stack
    with pytest.raises(errors.HeterogeneousEntryError, match="is ragged"):
        stack.view(2, -1)


def test_repeat_interleave_zero_times_along_the_stack_dim_of_differing_members() -> None:
    """No member taken from a ragged stack, or from members whose keys differ: what an
    empty slice gives (member 0's keys and shapes), where the dense stack is refused."""
    stack = _ragged(tclass, (2, 3))
    empty = stack.repeat_interleave(0, dim=0)
    assert isinstance(empty, TensorDict) and empty.batch_size == stack[:0].batch_size == (0, 2)
    assert empty["obs"].shape == (0, 2, 2) and set(empty.keys()) == {"obs", "reward"}
    members = [
        TensorDict(a=torch.zeros(2), batch_size=[2]),
        TensorDict(b=torch.zeros(2), batch_size=[2]),
    ]
    mixed = tclass.lazy_stack(members)
    assert mixed.repeat_interleave(torch.tensor([0, 0]), dim=0).batch_size == (0, 2)
    assert list(mixed.repeat_interleave(0, dim=0).keys()) == ["a"]
    regular = tclass.lazy_stack([TensorDict(a=torch.ones(2), batch_size=[2])] * 2)
    assert regular.repeat_interleave(0, dim=0)["a"].shape == (0, 2)
    assert stack.repeat_interleave(2, dim=0).batch_size == (4, -1)  # members shared


def test_shape_ops_of_a_ragged_stack_of_no_entries() -> None:
    """No entry to move across members: ``gather`` gives an empty TensorDict of the index's
    shape, as the peer's; with entries the dense stack is still needed."""
    stack = tclass.lazy_stack(list(TensorDict({}, batch_size=[3]).chunk(2, 0)), 0)
    assert stack.batch_size == (2, -1)
    out = stack.gather(1, torch.zeros(2, 3, dtype=torch.long))
    assert type(out) is TensorDict and out.batch_size == (2, 3) and not list(out.keys())
    with pytest.raises(errors.HeterogeneousEntryError, match="member 1 has batch size"):
        _ragged(tclass, (2, 3)).gather(1, torch.zeros(2, 1, dtype=torch.long))


@pytest.mark.parametrize(
    "make",
    [
        torch.zeros_like,
        torch.ones_like,
        torch.empty_like,
        lambda x: torch.full_like(x, 2),
        lambda x: torch.rand_like(x),
    ],
)
def test_like_functions_keep_each_members_batch_size_and_names(make: Callable[..., Any]) -> None:
    source = TensorDict(c=torch.arange(6.0).reshape(3, 2, 1), batch_size=[3, 2], names=["i", "j"])
    ragged = tclass.lazy_stack(list(source.chunk(2, 0)), 0)  # members [2, 2] and [1, 2]
    out = make(ragged)
    assert isinstance(out, LazyStackedTensorDict)
    assert out.batch_size == torch.Size([2, -1, 2])
    assert out.names == [None, "i", "j"]
    for member, original in zip(out.tensordicts, ragged.tensordicts, strict=True):
        assert member.batch_size == original.batch_size
        assert member.names == ["i", "j"]
        assert member["c"].shape == original["c"].shape
    full = torch.full_like(ragged, 2)
    assert all(bool((m["c"] == 2).all()) for m in full.tensordicts)


def _ragged_without_entries() -> LazyStackedTensorDict:
    """Batch size [2, 1, 2, 2, -1]: lazy stacks of members [1, 2, 2] and [1, 2, 1]."""
    inner = TensorDict({}, batch_size=[1, 2, 3])
    ragged = tclass.lazy_stack(list(inner.chunk(2, 2)), 2)
    return tclass.lazy_stack([ragged, ragged.clone()], 0)


@pytest.mark.parametrize(
    "write",
    [
        lambda x: x.__setitem__(0, x[1].clone()),
        lambda x: x.__setitem__((slice(None), 0), x[:, 0].clone()),
        lambda x: x.__setitem__(torch.tensor([True, False]), x[:1].clone()),
        lambda x: x.__setitem__((0, 0, 0, 0), x[1, 0, 0, 0].clone()),
    ],
    ids=["int", "slice-int", "mask", "to-the-ragged-dim"],
)
def test_writing_a_collection_without_entries_into_a_ragged_stack_checks_the_regular_dims(
    write: Callable[[LazyStackedTensorDict], None],
) -> None:
    # was a raw RuntimeError from torch (a stand-in tensor of a batch size with -1)
    x = _ragged_without_entries()
    write(x)
    assert x.batch_size == torch.Size([2, 1, 2, 2, -1])
    assert [m.batch_size for m in x[0, 0, 0].tensordicts] == [torch.Size([2]), torch.Size([1])]


@pytest.mark.parametrize(
    "index",
    [5, (Ellipsis, 0), (0, 0, 0, 0, 9), (torch.ones(2, 1, 2, dtype=torch.bool), slice(None), 0)],
    ids=["out-of-range", "into-the-ragged-dim", "past-the-ragged-dim", "masks"],
)
def test_an_index_that_does_not_fit_a_ragged_stack_is_a_dim_error(index: Any) -> None:
    x = _ragged_without_entries()
    with pytest.raises(errors.DimError, match=r"batch size \[2, 1, 2, 2, -1\]") as caught:
        x[index] = TensorDict({}, batch_size=[])
    assert isinstance(caught.value, IndexError)  # as the peer raises
    assert "ragged dims (-1) take a slice" in str(caught.value)


def test_apply_and_named_apply_name_the_dims_of_a_ragged_stack() -> None:
    # as the peer's: names set on the restacked stack, each member named without the
    # stack dim (fuzzer program 12,600,259: a BatchMismatchError before)
    td = TensorDict({"c": torch.arange(3.0)}, [3])
    ragged = tclass.lazy_stack(list(td.chunk(2, 0)), 0)
    out = ragged.apply(lambda v: v + 1, names=[None, "j"])
    assert out.batch_size == (2, -1) and out.names == [None, "j"]
    assert [m.names for m in out.tensordicts] == [["j"], ["j"]]
    assert [m["c"].tolist() for m in out.tensordicts] == [[1.0, 2.0], [3.0]]
    named = ragged.named_apply(lambda k, v: v * 2, names=["s", "j"])
    assert named.names == ["s", "j"] and named.tensordicts[1]["c"].tolist() == [4.0]


def test_apply_with_a_batch_size_of_a_ragged_stack_without_entries() -> None:
    # nothing to give fn and no dense form: the new, empty TensorDict, as the peer
    ragged = tclass.lazy_stack([TensorDict({}, [2, 2]), TensorDict({}, [2, 1])], -1)
    out = ragged.apply(lambda v: v[..., None], batch_size=[2], names=["i"])
    assert type(out) is TensorDict and out.batch_size == (2,) and out.names == ["i"]
    assert list(out.keys()) == []
    filled = tclass.lazy_stack([TensorDict(a=torch.zeros(2, 2)), TensorDict(a=torch.zeros(2, 1))])
    with pytest.raises(errors.HeterogeneousEntryError, match="members differ"):
        filled.apply(lambda v: v, batch_size=[])  # its entries have no dense stack


@pytest.mark.parametrize("dims", [(), (0, 2), (-3, -1)])
def test_flatten_of_a_ragged_stack_along_a_later_dim_keeps_row_major_order(
    dims: tuple[int, ...],
) -> None:
    """Found by the differential fuzzer: ``flatten`` / ``reshape(-1)`` of a ragged lazy
    stack whose stack dim is not the first gives the elements in row-major order, as the
    peer (each row of the dims before the stack dim takes the members' elements in turn);
    they came member by member."""
    a = TensorDict(x=torch.tensor([[10, 11], [20, 21], [30, 31]]), batch_size=[3, 2])
    b = TensorDict(x=torch.tensor([[12], [22], [32]]), batch_size=[3, 1])
    stack = tclass.lazy_stack([a, b], 1)  # batch size [3, 2, -1]
    flat = stack.flatten(*dims) if dims else stack.reshape(-1)
    assert flat.batch_size == torch.Size([9])
    assert flat["x"].tolist() == [10, 11, 12, 20, 21, 22, 30, 31, 32]
    deeper = tclass.lazy_stack([a.unsqueeze(0), b.unsqueeze(0)], 2)  # [1, 3, 2, -1]
    assert deeper.reshape(-1)["x"].tolist() == [10, 11, 12, 20, 21, 22, 30, 31, 32]
    first = tclass.lazy_stack([a, a[:, :1]], 0)  # stack dim 0: member after member
    assert first.reshape(-1)["x"].tolist() == [10, 11, 20, 21, 30, 31, 10, 20, 30]


@pytest.mark.parametrize(
    ("index", "size"),
    [
        ((slice(None), torch.tensor([False, False])), [2, 0]),
        ((slice(None, -2), torch.tensor([False, False])), [0, 0]),
        ((slice(0, 1), torch.zeros(0, dtype=torch.long)), [1, 0]),
        ((0, torch.tensor([False, False])), [0]),
    ],
    ids=["all-rows", "no-rows", "empty-long", "int"],
)
def test_an_index_picking_no_member_of_a_ragged_stack_is_shaped_by_member_0(
    index: Any, size: list[int]
) -> None:
    # was a DimError ("no empty form"); the peer shapes it by member 0, as a regular stack
    def build(lib: ModuleType) -> Any:
        members = [
            lib.TensorDict(c=torch.arange(n), a=torch.ones(n, 3), batch_size=[n]) for n in (2, 1)
        ]
        return lib.lazy_stack(members, -1).lock_()  # batch size [-1, 2]

    out = build(tclass)[index]
    assert type(out) is TensorDict and out.batch_size == torch.Size(size)
    assert out["a"].shape == (*size, 3) and not out.is_locked  # shares no element
    tensordict = pytest.importorskip("tensordict")
    theirs = build(tensordict)[index]
    assert theirs.batch_size == out.batch_size and sorted(theirs.keys()) == sorted(out.keys())
    assert theirs.is_locked == out.is_locked


def test_apply_out_of_a_ragged_stack_writes_each_member_of_out() -> None:
    """inv20e (program 10,802,153 of entries,combine --length 6): ``apply(fn, out=...)``
    of a ragged stack writes each member's result into ``out``'s member, as the peer
    (tclass wrote the restacked result into ``out`` whole, which a ragged stack has no
    dense form for, and raised a ``BatchSizeError``)."""
    stack = tclass.lazy_stack(
        [TensorDict({"a": torch.zeros(2)}, [2]), TensorDict({"a": torch.zeros(3)}, [3])]
    )
    out = stack.clone()
    result = stack.apply(lambda v: v + 1, out=out)
    assert result.batch_size == torch.Size([2, -1])
    assert [m["a"].tolist() for m in out.tensordicts] == [[1.0, 1.0], [1.0, 1.0, 1.0]]
    assert [m["a"].tolist() for m in result.tensordicts] == [[1.0, 1.0], [1.0, 1.0, 1.0]]
    assert [m["a"].tolist() for m in stack.tensordicts] == [[0.0, 0.0], [0.0, 0.0, 0.0]]


def test_named_apply_out_of_a_ragged_stack_writes_each_member_of_out() -> None:
    """fz31b (program 16,424,539 L16 of entries,index,combine): ``named_apply(fn,
    out=...)`` of a ragged stack writes each member's result into ``out``'s member, as
    its ``apply`` and the peer's (tclass raised a ``BatchMismatchError`` against the
    ragged batch size)."""
    stack = tclass.lazy_stack(
        [TensorDict({"a": torch.zeros(2)}, [2]), TensorDict({"a": torch.zeros(3)}, [3])]
    )
    out = stack.clone()
    result = stack.named_apply(lambda key, v: v + (key == "a"), out=out)
    assert result.batch_size == torch.Size([2, -1])
    assert [m["a"].tolist() for m in out.tensordicts] == [[1.0, 1.0], [1.0, 1.0, 1.0]]
    assert [m["a"].tolist() for m in result.tensordicts] == [[1.0, 1.0], [1.0, 1.0, 1.0]]
    assert [m["a"].tolist() for m in stack.tensordicts] == [[0.0, 0.0], [0.0, 0.0, 0.0]]


def test_pad_sequence_of_ragged_python_values_stacks_them() -> None:
    """``pad_sequence`` of lazy stacks whose Python values are ragged (a ``-1`` batch
    dim, no array holds them) pads each as ``pad`` does and stacks them, as the peer's
    runs (it raised "negative dimensions are not allowed": 10,903,821 of index,combine
    --length 6)."""
    rows = TensorDict({"s": "x y"}, batch_size=[2, 3])
    ragged = tclass.lazy_stack(list(rows.chunk(2, 1)), 1)
    assert ragged.batch_size == torch.Size([2, 2, -1])
    padded = tclass.pad_sequence([ragged, ragged[:1]], pad_dim=0)
    assert padded.batch_size == torch.Size([2, 2, 2, -1])
    assert padded.get("s").tolist() == [
        [[["x y", "x y"], ["x y"]], [["x y", "x y"], ["x y"]]],
        [[["x y", "x y"], ["x y"]], [[None, None], [None]]],  # the padding, as pad's
    ]
    assert tclass.pad(ragged[:1], [0, 1]).get("s").tolist() == padded.get("s")[1].tolist()
    one = tclass.pad_sequence([ragged], pad_dim=1)
    assert one.batch_size == torch.Size([1, 2, 2, -1])
    assert one.get("s").tolist() == [[[["x y", "x y"], ["x y"]], [["x y", "x y"], ["x y"]]]]


def test_a_value_stack_refuses_a_batch_size_other_than_its_values() -> None:
    """``NonTensorStack(..., batch_size=)`` takes the batch size its values stack to, and
    refuses another (a ``BatchSizeError``, a ``ValueError``) naming both, dense or ragged."""
    assert tclass.NonTensorStack("a", "b", batch_size=[2]).batch_size == torch.Size([2])
    with pytest.raises(errors.BatchSizeError, match=r"batch_size=\[5\] .* batch size \[2\]$"):
        tclass.NonTensorStack("a", "b", batch_size=[5])
    ragged = (tclass.NonTensorStack("a", "b"), tclass.NonTensorStack("c", "d", "e"))
    with pytest.raises(ValueError, match=r"batch_size=\[2, 3\] .* batch size \[2, -1\]$"):
        tclass.NonTensorStack(*ragged, batch_size=[2, 3])
