"""The peer's remaining batch-shape methods, on TensorDicts, lazy stacks and records.

``gather``, ``masked_select``, ``roll``, ``repeat``, ``repeat_interleave``, ``movedim``,
``swapaxes``/``swapdims``, ``flip``, ``rot90``, ``narrow``, ``tile``, ``broadcast_to``,
``atleast_1d``, ``expand_as``, and the ``inplace=`` / default-argument spellings of the
existing ones. Each property test builds a TensorDict with random batch and feature
dims (and a nested TensorDict with extra batch dims), applies the method, and checks
every leaf against the same torch op applied to the leaf over its batch dims; lazy
stacks are checked against their dense stack, records keep their class and Python
values, and the peer (``tensordict``) gives the same leaves when it is installed.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import tclass
from tclass import LazyStackedTensorDict, TensorClass, TensorDict, errors

from collection_kinds import COMPARED, assert_as_the_peer  # noqa: E402
from strategies import (  # noqa: E402
    SETTINGS,
    assert_leafwise,
    dims,
    leaf_items,
    make_values,
    same_storage,
    tensordicts,
)


class Frame(TensorClass):
    obs: torch.Tensor
    reward: torch.Tensor
    env: str = "pong"


def _td() -> TensorDict:
    """batch [2, 3]: a leaf with a feature dim, one without, a nested TD with an extra dim."""
    return TensorDict(
        {
            "a": make_values([2, 3, 4]),
            "b": make_values([2, 3], torch.int64),
            "n": TensorDict({"c": make_values([2, 3, 5])}, [2, 3, 5]),
        },
        [2, 3],
    )


def _frame() -> Frame:
    return Frame(obs=make_values([2, 3, 4]), reward=make_values([2, 3]), batch_size=[2, 3])


def _lazy(stack_dim: int = 0) -> LazyStackedTensorDict:
    """A lazy stack of batch [2, 3] along ``stack_dim`` (members of batch [3] or [2]) with
    equal shapes, so the dense stack exists."""
    count, inner = (2, 3) if stack_dim == 0 else (3, 2)
    members = [
        TensorDict({"a": make_values([inner, 2]), "n": {"c": make_values([inner])}}, [inner])
        for _ in range(count)
    ]
    return tclass.lazy_stack(members, stack_dim)


def _ragged() -> LazyStackedTensorDict:
    """Two members of batch [3] whose 'a' has 1 and 2 features: no dense stack."""
    return tclass.lazy_stack([TensorDict({"a": make_values([3, i + 1])}, [3]) for i in range(2)], 0)


def _norm(dim: int, ndim: int) -> int:
    return dim % ndim if ndim else dim


# --- property tests against torch on the leaves -----------------------------------------


@SETTINGS
@given(data=st.data(), td=tensordicts(min_dims=1))
def test_flip_is_torch_flip_on_every_leaf(data: st.DataObject, td: TensorDict) -> None:
    nb = td.batch_dims
    picked = data.draw(st.lists(dims(nb), min_size=1, max_size=nb, unique_by=lambda d: d % nb))
    flat = [d % nb for d in picked]
    arg: Any = picked[0] if len(picked) == 1 and data.draw(st.booleans()) else tuple(picked)
    assert_leafwise(td.flip(arg), td, lambda x: x.flip(flat), td.batch_size)


@SETTINGS
@given(data=st.data(), td=tensordicts(min_dims=1))
def test_roll_is_torch_roll_over_batch_dims(data: st.DataObject, td: TensorDict) -> None:
    nb = td.batch_dims
    if data.draw(st.booleans()):
        dim = data.draw(dims(nb))
        shift = data.draw(st.integers(-5, 5))
        expected = td.roll(shift, dim)
        assert_leafwise(expected, td, lambda x: x.roll(shift, dim % nb), td.batch_size)
    else:  # no dims: the batch is rolled as if flattened, as torch rolls a flattened tensor
        shift = data.draw(st.integers(-5, 5))

        def by_hand(x: torch.Tensor) -> torch.Tensor:
            flat = x.reshape((-1, *x.shape[nb:]))
            return flat.roll(shift, 0).reshape(x.shape)

        assert_leafwise(td.roll(shift), td, by_hand, td.batch_size)


@SETTINGS
@given(data=st.data(), td=tensordicts(min_dims=1))
def test_roll_with_several_dims(data: st.DataObject, td: TensorDict) -> None:
    nb = td.batch_dims
    picked = data.draw(st.lists(dims(nb), min_size=1, max_size=3))
    shifts = tuple(data.draw(st.integers(-4, 4)) for _ in picked)
    flat = tuple(d % nb for d in picked)
    out = td.roll(shifts, tuple(picked))
    assert_leafwise(out, td, lambda x: x.roll(shifts, flat), td.batch_size)


@SETTINGS
@given(data=st.data(), td=tensordicts(max_dims=2))
def test_repeat_is_torch_repeat_on_batch_dims(data: st.DataObject, td: TensorDict) -> None:
    nb = td.batch_dims
    reps = tuple(data.draw(st.integers(0, 3)) for _ in range(nb))
    form = data.draw(st.sampled_from(["ints", "tuple", "size"]))
    args: tuple[Any, ...] = (
        reps if form == "ints" else (tuple(reps),) if form == "tuple" else (torch.Size(reps),)
    )
    out = td.repeat(*args)
    new = torch.Size(s * r for s, r in zip(td.batch_size, reps))

    def by_hand(x: torch.Tensor) -> torch.Tensor:
        full = (*reps, *[1] * (x.ndim - nb))
        return x.repeat(*full) if full else x.clone()  # a 0-d leaf of a 0-d batch: a copy

    assert_leafwise(out, td, by_hand, new)


@SETTINGS
@given(data=st.data(), td=tensordicts(min_dims=1, max_dims=2))
def test_repeat_interleave_along_a_batch_dim(data: st.DataObject, td: TensorDict) -> None:
    nb = td.batch_dims
    dim = data.draw(dims(nb))
    size = td.batch_size[dim]
    if data.draw(st.booleans()) or size == 0:
        repeats: Any = data.draw(st.integers(0, 3))
    else:
        repeats = torch.tensor(data.draw(st.lists(st.integers(0, 3), min_size=size, max_size=size)))
    out = td.repeat_interleave(repeats, dim)
    expected = torch.empty(td.batch_size).repeat_interleave(repeats, dim % nb).shape
    assert_leafwise(out, td, lambda x: x.repeat_interleave(repeats, dim % nb), expected)


@pytest.mark.parametrize("dim", [0, -1])
def test_repeat_interleave_of_a_0d_batch_along_dim_0_adds_the_dim(dim: int) -> None:
    # As torch for a 0-d tensor (and the peer): dim 0 / -1 of no batch dims is one new dim.
    td = TensorDict({"a": torch.arange(3.0), "n": {"b": torch.tensor(7)}}, [])
    out = td.repeat_interleave(2, dim)
    assert out.batch_size == torch.Size([2])
    assert torch.equal(out["a"], torch.arange(3.0).expand(2, 3))
    assert torch.equal(out["n", "b"], torch.tensor([7, 7]))
    assert td.repeat_interleave(torch.tensor([3]), dim=dim).batch_size == torch.Size([3])
    td.repeat_interleave(2, dim, inplace=True)
    assert td.batch_size == torch.Size([2])
    assert td["a"].shape == torch.Size([2, 3])
    with pytest.raises(errors.DimError, match="dim 1 is out of range"):
        TensorDict({"a": torch.tensor(1.0)}, []).repeat_interleave(2, 1)


@SETTINGS
@given(td=tensordicts(max_dims=3), repeats=st.integers(0, 3))
def test_repeat_interleave_without_dim_flattens_the_batch(td: TensorDict, repeats: int) -> None:
    nb = td.batch_dims
    out = td.repeat_interleave(repeats)
    assert out.batch_dims == 1
    for path, leaf in leaf_items(td):
        flat = leaf.reshape((-1, *leaf.shape[nb:])) if nb else leaf.unsqueeze(0)
        assert torch.equal(out.get(path), flat.repeat_interleave(repeats, 0)), path


@SETTINGS
@given(data=st.data(), td=tensordicts(min_dims=1))
def test_movedim_is_torch_movedim_on_batch_dims(data: st.DataObject, td: TensorDict) -> None:
    nb = td.batch_dims
    count = data.draw(st.integers(1, nb))
    source = data.draw(
        st.lists(dims(nb), min_size=count, max_size=count, unique_by=lambda d: d % nb)
    )
    dest = data.draw(st.lists(dims(nb), min_size=count, max_size=count, unique_by=lambda d: d % nb))
    src_n, dst_n = tuple(d % nb for d in source), tuple(d % nb for d in dest)
    args: tuple[Any, Any] = (
        (source[0], dest[0])
        if count == 1 and data.draw(st.booleans())
        else (tuple(source), tuple(dest))
    )
    expected = torch.empty(td.batch_size).movedim(src_n, dst_n).shape
    assert_leafwise(td.movedim(*args), td, lambda x: x.movedim(src_n, dst_n), expected, view=True)


@SETTINGS
@given(data=st.data(), td=tensordicts(min_dims=1))
def test_swapaxes_and_swapdims_are_transpose(data: st.DataObject, td: TensorDict) -> None:
    nb = td.batch_dims
    a, b = data.draw(dims(nb)), data.draw(dims(nb))
    expected = torch.empty(td.batch_size).swapaxes(a, b).shape
    by_hand: Callable[[torch.Tensor], torch.Tensor] = lambda x: x.swapaxes(a % nb, b % nb)  # noqa: E731
    assert_leafwise(td.swapaxes(a, b), td, by_hand, expected, view=True)
    assert_leafwise(td.swapdims(a, b), td, by_hand, expected, view=True)


@SETTINGS
@given(data=st.data(), td=tensordicts(min_dims=2, max_dims=3))
def test_rot90_is_torch_rot90_on_batch_dims(data: st.DataObject, td: TensorDict) -> None:
    nb = td.batch_dims
    k = data.draw(st.integers(-5, 5))
    pair = data.draw(st.lists(dims(nb), min_size=2, max_size=2, unique_by=lambda d: d % nb))
    flat = (pair[0] % nb, pair[1] % nb)
    expected = torch.empty(td.batch_size).rot90(k, flat).shape
    assert_leafwise(td.rot90(k, tuple(pair)), td, lambda x: x.rot90(k, flat), expected)


@SETTINGS
@given(data=st.data(), td=tensordicts(min_dims=1))
def test_narrow_is_a_view_of_a_batch_dim(data: st.DataObject, td: TensorDict) -> None:
    nb = td.batch_dims
    dim = data.draw(dims(nb))
    size = td.batch_size[dim]
    start = data.draw(st.integers(0, size))
    length = data.draw(st.integers(0, size - start))
    out = td.narrow(dim, start, length)
    expected = torch.empty(td.batch_size).narrow(dim, start, length).shape
    assert_leafwise(out, td, lambda x: x.narrow(dim % nb, start, length), expected, view=True)


@SETTINGS
@given(data=st.data(), td=tensordicts(max_dims=2))
def test_tile_is_torch_tile_on_the_batch(data: st.DataObject, td: TensorDict) -> None:
    nb = td.batch_dims
    reps = tuple(data.draw(st.lists(st.integers(0, 3), min_size=1, max_size=nb + 1)))
    expected = torch.empty(td.batch_size).tile(reps).shape
    full = (1,) * (nb - len(reps)) + reps

    def by_hand(x: torch.Tensor) -> torch.Tensor:
        lifted = x.reshape((1,) * (len(full) - nb) + x.shape)
        return lifted.repeat(*full, *[1] * (x.ndim - nb))

    assert_leafwise(td.tile(reps), td, by_hand, expected)


def test_tile_takes_one_int_as_torch_tile() -> None:
    td = TensorDict({"a": torch.arange(6.0).view(3, 2)}, [3])
    assert torch.equal(td.tile(2)["a"], td["a"].tile((2, 1)))
    stack = tclass.lazy_stack([td, td.clone()], 1)
    assert stack.tile(2).batch_size == torch.Size([3, 4])


@SETTINGS
@given(data=st.data(), td=tensordicts(max_dims=2, min_side=1))
def test_broadcast_to_and_expand_as_are_expand(data: st.DataObject, td: TensorDict) -> None:
    nb = td.batch_dims
    lead = tuple(data.draw(st.lists(st.integers(1, 3), max_size=2)))
    target = lead + tuple(
        data.draw(st.sampled_from([s, 3])) if s == 1 else s for s in td.batch_size
    )

    def by_hand(x: torch.Tensor) -> torch.Tensor:
        return x.expand(target + x.shape[nb:])

    assert_leafwise(td.broadcast_to(target), td, by_hand, target, view=True)
    assert_leafwise(td.expand_as(torch.zeros(target)), td, by_hand, target, view=True)
    # A collection: each tensor expanded as the other's tensor of its key (the peer's).
    # As the peer's apply with a batch size: the nested collections take ``target`` too.
    out = td.expand_as(td.expand(target).clone())
    assert out.batch_size == torch.Size(target)
    for key, value in td.items(include_nested=True):
        if isinstance(value, torch.Tensor):
            assert torch.equal(out[key], by_hand(value))
        else:
            assert out[key].batch_size == torch.Size(target)
    if list(td.keys()):
        with pytest.raises(KeyError):
            td.expand_as(TensorDict({}, target))


@SETTINGS
@given(td=tensordicts(max_dims=2))
def test_atleast_1d(td: TensorDict) -> None:
    if td.batch_dims:
        out = td.atleast_1d()
        assert_leafwise(out, td, lambda x: x, td.batch_size, view=True)
    else:
        assert_leafwise(td.atleast_1d(), td, lambda x: x.unsqueeze(0), [1], view=True)


@SETTINGS
@given(data=st.data(), td=tensordicts(min_dims=1, max_dims=2, min_side=1))
def test_gather_is_torch_gather_over_batch_dims(data: st.DataObject, td: TensorDict) -> None:
    nb = td.batch_dims
    dim = data.draw(dims(nb))
    d = dim % nb
    shape = [
        data.draw(st.integers(0, 4)) if i == d else data.draw(st.integers(1, s))
        for i, s in enumerate(td.batch_size)
    ]
    index = torch.randint(0, td.batch_size[d], shape)

    def by_hand(x: torch.Tensor) -> torch.Tensor:
        full = index.reshape(index.shape + (1,) * (x.ndim - nb)).expand(*index.shape, *x.shape[nb:])
        return torch.gather(x, d, full)

    assert_leafwise(td.gather(dim, index), td, by_hand, index.shape)


@SETTINGS
@given(data=st.data(), td=tensordicts(min_dims=1, max_dims=3))
def test_masked_select_gathers_the_selected_elements(data: st.DataObject, td: TensorDict) -> None:
    nb = td.batch_dims
    mask = torch.tensor(
        data.draw(
            st.lists(st.booleans(), min_size=td.batch_size.numel(), max_size=td.batch_size.numel())
        ),
        dtype=torch.bool,
    ).reshape(td.batch_size)
    out = td.masked_select(mask)
    count = int(mask.sum())
    assert out.batch_size == torch.Size([count])
    for path, leaf in leaf_items(td):
        assert torch.equal(out.get(path), leaf[mask]), path
    assert out.batch_dims == 1 and td.batch_dims == nb


# --- examples: semantics, errors and the peer's spellings -------------------------------


def test_flip_roll_narrow_keep_nested_extra_dims() -> None:
    td = _td()
    assert td.flip(1)["n"].batch_size == torch.Size([2, 3, 5])
    assert torch.equal(td.flip(1)["n", "c"], td["n", "c"].flip(1))
    assert torch.equal(td.roll(1, -1)["a"], td["a"].roll(1, 1))
    assert torch.equal(td.narrow(-1, 1, 2)["n", "c"], td["n", "c"][:, 1:3])


def test_dims_past_the_batch_dims_are_refused() -> None:
    td = _td()
    with pytest.raises(IndexError):
        td.flip(2)
    with pytest.raises(IndexError):
        td.narrow(2, 0, 1)
    with pytest.raises(IndexError):
        td.movedim(0, 2)
    with pytest.raises(IndexError):
        td.swapaxes(0, 5)
    with pytest.raises(IndexError):
        td.roll(1, 3)
    with pytest.raises(errors.TclassError):
        td.rot90(1, (0, 0))
    with pytest.raises(ValueError):
        td.repeat(2)  # one repeat per batch dim, as the peer requires


def test_gather_checks_the_index() -> None:
    td = _td()
    with pytest.raises(errors.TclassError):
        td.gather(0, torch.zeros(2, dtype=torch.long))  # 1 dim for a 2-dim batch
    with pytest.raises(errors.TclassError):
        td.gather(0, torch.zeros(2, 3))  # not an integer index
    index = torch.zeros(td.batch_size, dtype=torch.long)
    with pytest.raises(errors.ArgumentValueError, match="out= and inplace=True"):
        td.gather(0, index, out=td.clone(), inplace=True)  # a ValueError, as the peer
    # an index larger than the batch outside its dim: torch's error, with or without
    # tensors (the peer's collection without entries takes the index's shape)
    wide = torch.zeros(1, 3, dtype=torch.long)
    for source in (TensorDict({}, [2, 1]), TensorDict({"a": torch.zeros(2, 1)}, [2, 1])):
        with pytest.raises(errors.ShapeError, match=r"\[1, 3\] is larger than the batch size"):
            source.gather(0, wide)
    assert TensorDict({}, [2, 1]).gather(0, torch.ones(3, 1, dtype=torch.long)).shape == (3, 1)


class _Gathered(TensorClass):
    x: torch.Tensor
    z: str
    y: _Gathered | None = None


@pytest.mark.parametrize("through_torch", [False, True])
def test_gather_into_out_replaces_python_values(through_torch: bool) -> None:
    # out= takes the gathered values, nested records' Python values included (the peer).
    inner = _Gathered(torch.randn(3, 4, 5), "bar", batch_size=[3, 4, 5])
    rec = _Gathered(torch.randn(3, 4), "foo", inner, batch_size=[3, 4])
    index = torch.arange(3).expand(3, 3)
    want = rec.gather(-1, index)
    out = _Gathered(torch.zeros(3, 3), "", _Gathered(torch.zeros(3, 3, 5), ""), batch_size=[3, 3])
    if through_torch:
        got = torch.gather(rec, -1, index, out=out)  # type: ignore[call-overload]
    else:
        got = rec.gather(-1, index, out=out)
    assert got is out
    assert torch.equal(out.x, want.x) and torch.equal(out.y.x, want.y.x)  # type: ignore[union-attr]
    assert (out.z, out.y.z) == ("foo", "bar")  # type: ignore[union-attr]


def test_masked_select_needs_a_batch_shaped_mask() -> None:
    with pytest.raises(errors.TclassError):
        _td().masked_select(torch.ones(3, dtype=torch.bool))


def test_masked_select_gives_an_unnamed_dim() -> None:
    # As the peer (and torch.masked_select): the selected elements lie in one new dim.
    td = TensorDict({"a": torch.arange(4.0)}, [4], names=["i"])
    out = td.masked_select(torch.tensor([True, False, True, True]))
    assert out.names == [None] and torch.equal(out["a"], torch.tensor([0.0, 2.0, 3.0]))
    assert td.names == ["i"]
    grid = TensorDict({"a": torch.zeros(2, 3)}, [2, 3], names=["i", "j"])
    assert grid.masked_select(torch.ones(2, 3, dtype=torch.bool)).names == [None]


def test_repeat_takes_a_tensor_of_repeats() -> None:
    td = _td()
    assert td.repeat(torch.tensor([2, 1])).batch_size == torch.Size([4, 3])
    assert td.repeat([1, 2]).batch_size == torch.Size([2, 6])


def test_flatten_defaults_and_none_dims() -> None:
    td = _td()
    assert td.flatten().batch_size == torch.Size([6])
    assert td.flatten(None, None).batch_size == torch.Size([6])
    assert td.flatten(1, None).batch_size == torch.Size([2, 3])
    assert td.flatten(None, 0).batch_size == torch.Size([2, 3])
    assert td.flatten()["n"].batch_size == torch.Size([6, 5])


# --- inplace= on shape ops --------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "size"),
    [
        (lambda t: t.flatten(inplace=True), [6]),
        (lambda t: t.flatten(0, 1, inplace=True), [6]),
        (lambda t: t.unflatten(1, (3, 1), inplace=True), [2, 3, 1]),
        (lambda t: t.reshape(3, 2, inplace=True), [3, 2]),
        (lambda t: t.reshape((6,), inplace=True), [6]),
        (lambda t: t.contiguous(inplace=True), [2, 3]),
        (lambda t: t.repeat(2, 1, inplace=True), [4, 3]),
        (lambda t: t.repeat_interleave(2, 1, inplace=True), [2, 6]),
        (lambda t: t.pad([1, 0], inplace=True), [3, 3]),
        (lambda t: t.gather(1, torch.zeros(2, 2, dtype=torch.long), inplace=True), [2, 2]),
        (lambda t: t.masked_select(torch.ones(2, 3, dtype=torch.bool), inplace=True), [6]),
        (lambda t: t.roll(1, 0, inplace=True), [2, 3]),
    ],
)
def test_inplace_keeps_the_object_and_changes_its_entries(
    call: Callable[[TensorDict], TensorDict], size: list[int]
) -> None:
    td = _td()
    nested = td["n"]
    out = call(td)
    assert out is td
    assert td.batch_size == torch.Size(size)
    assert td["n"].batch_size[: len(size)] == torch.Size(size)
    assert td["n"] is nested  # nested TensorDicts keep their identity too
    for _, leaf in leaf_items(td):
        assert leaf.shape[: len(size)] == torch.Size(size)


def test_inplace_results_equal_the_out_of_place_ones() -> None:
    for call in (
        lambda t, **kw: t.reshape(3, 2, **kw),
        lambda t, **kw: t.flatten(**kw),
        lambda t, **kw: t.repeat(1, 2, **kw),
        lambda t, **kw: t.roll(1, 1, **kw),
        lambda t, **kw: t.pad([0, 1, 1, 0], **kw),
    ):
        td = _td()
        expected = call(td.clone())
        call(td, inplace=True)
        assert (td == expected).all()


def test_inplace_on_a_locked_tensordict_is_refused() -> None:
    td = _td().lock_()
    with pytest.raises(errors.LockedError):
        td.reshape(6, inplace=True)
    assert td.batch_size == torch.Size([2, 3])


def test_contiguous_canonical_and_inplace() -> None:
    td = _td()
    t = td.transpose(0, 1)
    assert not t["a"].is_contiguous()
    out = t.contiguous(canonical=True)
    assert out["a"].is_contiguous() and type(out) is TensorDict
    same = t.contiguous(inplace=True)
    assert same is t and t["a"].is_contiguous()
    assert torch.equal(t["a"], td["a"].transpose(0, 1))


def test_lazy_contiguous_canonical_and_inplace() -> None:
    lazy = _lazy()
    dense = lazy.contiguous(canonical=True)
    assert type(dense) is TensorDict and torch.equal(dense["a"], lazy["a"])
    with pytest.raises(errors.TclassError):
        lazy.contiguous(inplace=True)  # a lazy stack cannot become dense in place


# --- lazy stacks -----------------------------------------------------------------------


LAZY_OPS: list[tuple[str, Callable[[Any], Any]]] = [
    ("flip0", lambda t: t.flip(0)),
    ("flip1", lambda t: t.flip(1)),
    ("roll0", lambda t: t.roll(1, 0)),
    ("roll1", lambda t: t.roll(-1, 1)),
    ("roll", lambda t: t.roll(2)),
    ("narrow0", lambda t: t.narrow(0, 1, 1)),
    ("narrow1", lambda t: t.narrow(1, 1, 2)),
    ("repeat", lambda t: t.repeat(2, 1)),
    ("repeat1", lambda t: t.repeat(1, 2)),
    ("rep_int0", lambda t: t.repeat_interleave(2, 0)),
    ("rep_int1", lambda t: t.repeat_interleave(torch.tensor([1, 0, 2]), 1)),
    ("rep_int", lambda t: t.repeat_interleave(2)),
    ("movedim", lambda t: t.movedim(0, 1)),
    ("swapaxes", lambda t: t.swapaxes(0, 1)),
    ("swapdims", lambda t: t.swapdims(1, 0)),
    ("rot90", lambda t: t.rot90()),
    ("tile", lambda t: t.tile((2, 1))),
    ("broadcast_to", lambda t: t.broadcast_to((4, 2, 3))),
    ("expand_as", lambda t: t.expand_as(torch.zeros(4, 2, 3))),
    ("atleast_1d", lambda t: t.atleast_1d()),
    ("gather", lambda t: t.gather(1, torch.tensor([[0, 0], [2, 1]]))),
    ("masked_select", lambda t: t.masked_select(torch.tensor([[1, 0, 1], [0, 1, 1]]).bool())),
]


@pytest.mark.parametrize("stack_dim", [0, 1])
@pytest.mark.parametrize(("name", "op"), LAZY_OPS, ids=[name for name, _ in LAZY_OPS])
def test_lazy_stack_ops_equal_the_dense_ones(
    name: str, op: Callable[[Any], Any], stack_dim: int
) -> None:
    lazy = _lazy(stack_dim)
    dense = lazy.contiguous()
    got, want = op(lazy), op(dense)
    assert got.batch_size == want.batch_size, name
    assert got.device == want.device
    for key in ("a", ("n", "c")):
        assert torch.equal(got.get(key), want.get(key)), (name, key)


@pytest.mark.parametrize(
    "op",
    [
        lambda t: t.flip(0),
        lambda t: t.flip(1),
        lambda t: t.narrow(1, 0, 2),
        lambda t: t.roll(1, 0),
        lambda t: t.roll(1, 1),
        lambda t: t.repeat(2, 1),
        lambda t: t.repeat_interleave(2, 1),
        lambda t: t.movedim(0, 1),
        lambda t: t.atleast_1d(),
        lambda t: t.expand_as(torch.zeros(2, 2, 3)),
    ],
)
def test_lazy_stack_ops_that_keep_members_apart_work_on_ragged_stacks(
    op: Callable[[Any], Any],
) -> None:
    ragged = _ragged()
    out = op(ragged)
    assert isinstance(out, LazyStackedTensorDict)
    widths = {member["a"].shape[-1] for member in out.tensordicts}
    assert widths <= {1, 2}
    expected = op(TensorDict({}, ragged.batch_size)).batch_size
    assert out.batch_size == expected


def test_lazy_flip_along_the_stack_dim_reverses_the_members() -> None:
    lazy = _ragged()
    out = lazy.flip(0)
    assert out.tensordicts[0] is lazy.tensordicts[1]
    assert out.tensordicts[1] is lazy.tensordicts[0]


# --- records -----------------------------------------------------------------------------


RECORD_OPS: list[tuple[str, Callable[[Any], Any]]] = [
    ("flip", lambda t: t.flip(1)),
    ("roll", lambda t: t.roll(1, 0)),
    ("narrow", lambda t: t.narrow(1, 0, 2)),
    ("repeat", lambda t: t.repeat(2, 1)),
    ("rep_int", lambda t: t.repeat_interleave(2, 1)),
    ("movedim", lambda t: t.movedim(0, 1)),
    ("swapaxes", lambda t: t.swapaxes(0, 1)),
    ("swapdims", lambda t: t.swapdims(0, 1)),
    ("rot90", lambda t: t.rot90()),
    ("tile", lambda t: t.tile((2, 1))),
    ("broadcast_to", lambda t: t.broadcast_to((4, 2, 3))),
    ("expand_as", lambda t: t.expand_as(torch.zeros(4, 2, 3))),
    ("atleast_1d", lambda t: t.atleast_1d()),
    ("gather", lambda t: t.gather(1, torch.tensor([[0, 0], [2, 1]]))),
    ("masked_select", lambda t: t.masked_select(torch.ones(2, 3, dtype=torch.bool))),
]


@pytest.mark.parametrize(("name", "op"), RECORD_OPS, ids=[name for name, _ in RECORD_OPS])
def test_records_keep_their_class_and_python_values(name: str, op: Callable[[Any], Any]) -> None:
    frame = _frame().replace(env="breakout")
    out = op(frame)
    assert type(out) is Frame, name
    if name == "expand_as":  # new leading dims stack the value, as the peer's expand
        assert out.env == [[["breakout"] * 3] * 2] * 4
    else:  # broadcast_to keeps one value, as the peer's
        assert out.env == "breakout"
    want = op(frame.to_tensordict().exclude("env"))
    assert out.batch_size == want.batch_size
    assert torch.equal(out.obs, want["obs"]) and torch.equal(out.reward, want["reward"])


def test_record_methods_return_self_typed_results_of_views() -> None:
    frame = _frame()
    assert same_storage(frame.movedim(0, 1).obs, frame.obs)
    assert same_storage(frame.narrow(1, 0, 1).obs, frame.obs)
    assert same_storage(frame.broadcast_to((2, 2, 3)).obs, frame.obs)


# --- against the peer ------------------------------------------------------------------


def _to_peer(td: Any, peer: Any) -> Any:
    """The same TensorDict built with the peer, nested batch sizes included."""
    entries = {
        key: _to_peer(value, peer) if isinstance(value, TensorDict) else value.clone()
        for key, value in td.items()
    }
    return peer.TensorDict(entries, batch_size=td.batch_size)


PEER_OPS: list[tuple[str, Callable[[Any], Any]]] = [
    ("flip", lambda t: t.flip((0, 1))),
    ("roll", lambda t: t.roll((1, -2), (0, 1))),
    ("roll_flat", lambda t: t.roll(4)),
    ("narrow", lambda t: t.narrow(1, 1, 2)),
    ("repeat", lambda t: t.repeat(2, 3)),
    ("rep_int", lambda t: t.repeat_interleave(torch.tensor([2, 0, 1]), 1)),
    ("rep_int_flat", lambda t: t.repeat_interleave(2)),
    ("movedim", lambda t: t.movedim((0, 1), (1, 0))),
    ("swapaxes", lambda t: t.swapaxes(-1, 0)),
    ("rot90", lambda t: t.rot90(3, (1, 0))),
    ("tile", lambda t: t.tile((2, 1, 2))),
    ("broadcast_to", lambda t: t.broadcast_to((3, 2, 3))),
    ("atleast_1d", lambda t: t.atleast_1d()),
    ("gather", lambda t: t.gather(0, torch.tensor([[1, 0, 1]]))),
    ("masked_select", lambda t: t.masked_select(torch.tensor([[1, 0, 1], [1, 1, 0]]).bool())),
    ("flatten_keys", lambda t: t.flatten_keys()),
    ("flatten_keys_sep", lambda t: t.flatten_keys("/")),
]


@pytest.mark.peer
@pytest.mark.parametrize(("name", "op"), PEER_OPS, ids=[name for name, _ in PEER_OPS])
def test_same_leaves_as_the_peer(name: str, op: Callable[[Any], Any]) -> None:
    peer = pytest.importorskip("tensordict")
    td = _td()
    ours, theirs = op(td), op(_to_peer(td, peer))
    assert ours.batch_size == theirs.batch_size, name
    assert list(ours.keys(True, True)) == list(theirs.keys(True, True)), name
    for key in theirs.keys(True, True):
        assert torch.equal(ours.get(key), theirs.get(key)), (name, key)


# --- torch's shape functions are the methods ----------------------------------------------


def test_torch_shape_functions_keep_names_and_laziness() -> None:
    named = _td().refine_names("u", "v")
    assert torch.flip(named, [1]).names == ["u", "v"]
    assert torch.rot90(named).names == ["v", "u"]
    assert torch.narrow(named, 1, 1, 2).names == ["u", "v"]
    assert torch.gather(named, 1, torch.tensor([[0, 2], [1, 1]])).names == ["u", "v"]
    ragged = _ragged()  # no dense stack: the members move, as the methods move them
    for moved in (torch.flip(ragged, [0]), torch.roll(ragged, 1, 0), torch.narrow(ragged, 1, 0, 2)):
        assert isinstance(moved, LazyStackedTensorDict)


# --- on every kind of collection, as the peer ---------------------------------------------

_ON_EVERY_KIND: dict[str, Callable[[Any], Any]] = {
    "reshape_flat": lambda c: c.reshape(-1),
    "reshape_same": lambda c: c.reshape(*c.batch_size),
    "reshape_same_size": lambda c: c.reshape(c.batch_size),
    "split_int": lambda c: c.split(1, 0),
    "split_sizes": lambda c: c.split([1, 1], 0),
    "split_dim1": lambda c: c.split(2, 1),
    "split_last_dim": lambda c: c.split([2, 1], -1) if c.batch_size[-1] == 3 else c.split(1, -1),
    "view_flat": lambda c: c.view(-1),
    "view_same": lambda c: c.view(*c.batch_size),
    "view_same_size": lambda c: c.view(c.batch_size),
    "contiguous": lambda c: c.contiguous(),
    "squeeze": lambda c: c.squeeze(),
    "permute_identity": lambda c: c.permute(*range(c.batch_dims)),
    "expand_same": lambda c: c.expand(c.batch_size),
    "chunk": lambda c: c.chunk(2, 0),
    "unbind": lambda c: c.unbind(0),
    "tensor_split": lambda c: c.tensor_split(2, 0),
    "tensor_split_indices": lambda c: c.tensor_split([1], 1),
    "densify": lambda c: c.densify(),
    "to_lazystack": lambda c: c.to_lazystack(0),
    "refine_unnamed": lambda c: c.refine_names(..., None),
}


@pytest.mark.peer
@pytest.mark.parametrize("kind", COMPARED)
@pytest.mark.parametrize("method", sorted(_ON_EVERY_KIND))
def test_shape_methods_on_every_kind_as_the_peer(kind: str, method: str, tmp_path: Path) -> None:
    """Values, keys, batch size, names, lock, type, and whether the input itself comes
    back (``reshape``/``view`` to the same size, ``contiguous`` of a contiguous
    collection, ``densify`` without lazy stacks, ``to_lazystack`` of that lazy stack)."""
    assert_as_the_peer(kind, tmp_path, _ON_EVERY_KIND[method])


def test_methods_that_change_nothing_return_the_input() -> None:
    td = _td()
    assert td.densify() is td and _frame().densify() is not None
    lazy = _lazy(1)
    assert lazy.to_lazystack(1) is lazy and lazy.to_lazystack(0) is not lazy
    holder = TensorDict({"s": _lazy()}, [2, 3])
    dense = holder.densify()  # a nested lazy stack: a new collection, the stack densified
    assert dense is not holder and type(dense["s"]) is TensorDict


def test_tensor_split_pieces_are_locked_like_split_pieces() -> None:
    locked = _td().lock_()
    assert all(piece.is_locked for piece in locked.tensor_split(2, 0))
    assert all(piece.is_locked for piece in locked.tensor_split([1], 1))
    assert not any(piece.is_locked for piece in _td().tensor_split(2, 0))


def test_numel_is_at_least_one_as_the_peer() -> None:
    """The peer's ``numel()`` is the product of the batch size but at least 1 (its
    documented rule: ``[]`` and ``[0]`` give 1)."""
    assert TensorDict({}, [2, 3]).numel() == 6
    assert TensorDict({}, []).numel() == 1
    assert TensorDict({"a": torch.zeros(0, 1)}, [0, 1]).numel() == 1
    ragged = tclass.lazy_stack([TensorDict({"a": torch.zeros(2)}, [2]), TensorDict({}, [3])])
    assert ragged.batch_size == (2, -1) and ragged.numel() == 5
    assert tclass.lazy_stack([TensorDict({}, [0])]).numel() == 1


def test_split_of_a_dim_of_size_0_into_no_pieces() -> None:
    """Found by the differential fuzzer: ``split([])`` along a dim of size 0 gives no
    pieces, as torch and the peer, for TensorDicts, records and lazy stacks alike."""
    empty = TensorDict({"a": torch.zeros(0, 2), "n": {"b": torch.zeros(0)}}, [0])
    assert empty.split([]) == () and empty.split([], dim=-1) == ()
    stacked = tclass.lazy_stack([TensorDict({}, [0]), TensorDict({}, [0])], 1)
    assert stacked.split([], dim=0) == ()
    with pytest.raises(errors.ShapeError, match="Insufficient number of elements"):
        stacked.split([], dim=1)


def test_flatten_of_one_dim_gives_new_nested_nodes() -> None:
    """Found by the differential fuzzer, as the peer: ``flatten`` that merges nothing
    (``flatten(0, 0)``, one batch dim) returns new nested collections holding the same
    leaves, so a key popped or a name set on the result leaves the source as it was."""
    td = TensorDict({"m": {"d": torch.ones(3, 1), "v": "x"}, "a": torch.ones(3)}, [3])
    for out in (td.flatten(0, 0), torch.flatten(td), td.flatten()):
        assert out is not td and out["m"] is not td["m"] and out["a"] is td["a"]
        out.pop(("m", "v"))
        out.names = ["k"]
        assert list(td["m"].keys()) == ["d", "v"] and td["m"].names == [None]


def test_flatten_without_batch_dims_adds_one_as_unsqueeze() -> None:
    """Found by the differential fuzzer, as the peer: ``flatten()`` of a collection with
    no batch dims gives batch size ``[1]``, its Python values per element (as
    ``unsqueeze(0)`` gives them)."""
    td = TensorDict({"a": torch.ones(2), "s": "x", "n": {"c": torch.ones(3)}}, [])
    for out in (td.flatten(), td.flatten(0), td.flatten(-1)):
        assert out.batch_size == (1,) and out["a"].shape == (1, 2)
        assert type(out.get("s")) is tclass.NonTensorStack and out["s"] == ["x"]
        assert out["n"].batch_size == (1,)
    assert td.clone().flatten(inplace=True).batch_size == (1,)


def test_squeeze_keeps_the_names_of_the_dims_a_nested_node_keeps() -> None:
    td = TensorDict(
        {"a": torch.zeros(1, 4), "n": TensorDict(c=torch.zeros(1, 4, 1, 3), batch_size=[1, 4, 1])},
        batch_size=[1, 4],
        names=["i", "j"],
    )
    out = td.squeeze()
    assert out.names == ["j"] and out["n"].names == ["j", None]
    assert out["n"].batch_size == torch.Size([4, 1])
