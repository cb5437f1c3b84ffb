"""Reductions over the batch dims of collections, with the peer's ``dim`` / ``keepdim`` /
``reduce=`` semantics: ``sum``, ``mean``, ``nansum``, ``nanmean``, ``prod``, ``std``,
``var``, ``amax``, ``amin``, ``max``, ``min``, ``logsumexp``, ``norm``, ``quantile``,
``all``, ``any`` and the scans ``cumsum``, ``cumprod``, ``cummax``, ``cummin``.

- ``dim`` left out: every leaf is reduced whole (``logsumexp``: over the batch dims);
- ``dim`` an int or a tuple of ints: those batch dims (negative ones count from the last
  batch dim), in every leaf and nested collection;
- ``dim="feature"``: each leaf's dims after its collection's batch dims;
- ``reduce=True``: one tensor for the whole collection, as if its leaves were one.

Each is compared leaf by leaf with torch on TensorDicts (nested ones with extra batch
dims), lazy stacks, tensorclasses in both forms, and with the peer where installed.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import tclass
from tclass import (
    LazyStackedTensorDict,
    NonTensorData,
    TensorDict,
    errors,
)

from algebra_records import IDS, RECORDS, Rec, record  # noqa: E402
from strategies import (  # noqa: E402
    SETTINGS,
    bad_dims,
    equal,
    leaf_items,
    make_values,
    nested_items,
    tensordicts,
)

DimError = errors.DimError
# Reductions that take dim=, keepdim= and reduce= (max/min give values and indices).
REDUCTIONS = ["sum", "mean", "nansum", "nanmean", "prod", "std", "var", "amax", "amin"]
# torch reductions that do not take a tuple of dims: reduced one dim at a time by hand.
ONE_DIM_AT_A_TIME = {"prod"}


def _reduce_leaf(
    name: str, leaf: torch.Tensor, dims: tuple[int, ...] | None, keepdim: bool, **kw: Any
) -> torch.Tensor:
    """torch's reduction ``name`` of ``leaf`` over ``dims`` (all of them when None)."""
    fn = getattr(torch, name)
    if dims is None:
        if not keepdim:
            return fn(leaf, **kw)  # type: ignore[no-any-return]
        dims = tuple(range(leaf.ndim))
    if not dims:  # no dim to reduce: reduce over a new size-1 dim, as the peer does
        return fn(leaf.unsqueeze(-1), -1, **kw)  # type: ignore[no-any-return]
    if name in ONE_DIM_AT_A_TIME:
        for dim in sorted(dims, reverse=True):
            leaf = fn(leaf, dim, keepdim=keepdim, **kw)
        return leaf
    return fn(leaf, dims, keepdim=keepdim, **kw)  # type: ignore[no-any-return]


def _outcome(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    try:
        return fn(*args, **kwargs)
    except Exception as error:  # torch's error (or warning, raised as an error here)
        return type(error)


def _reduced_batch(batch: torch.Size, dims: tuple[int, ...] | None, keepdim: bool) -> torch.Size:
    if dims is None:
        return torch.Size([1] * len(batch) if keepdim else [])
    if keepdim:
        return torch.Size(1 if i in dims else s for i, s in enumerate(batch))
    return torch.Size(s for i, s in enumerate(batch) if i not in dims)


def _check_reduction(
    td: TensorDict, name: str, dim: Any, keepdim: bool, run: Callable[[], Any]
) -> None:
    nb = td.batch_dims
    if dim is None:
        dims = None
    elif isinstance(dim, int):
        dims = (dim % nb,)
    else:
        dims = tuple(sorted({d % nb for d in dim}))
    expected = {}
    for path, leaf in leaf_items(td):
        expected[path] = _outcome(_reduce_leaf, name, leaf, dims, keepdim)
    failures = tuple(value for value in expected.values() if isinstance(value, type))
    if failures:
        with pytest.raises(failures):
            run()
        return
    out = run()
    assert type(out) is TensorDict
    assert out.batch_size == _reduced_batch(td.batch_size, dims, keepdim)
    for path, sub in nested_items(td):
        if dims is None:  # whole leaves: nested collections lose their extra dims too
            want = _reduced_batch(sub.batch_size, None, keepdim)
        else:
            want = out.batch_size + sub.batch_size[nb:]
        assert out.get(path).batch_size == want, path
    for path, value in expected.items():
        assert equal(out.get(path), value), (name, dim, keepdim, path)


@pytest.mark.parametrize("name", REDUCTIONS)
@SETTINGS
@given(td=tensordicts(min_dims=1), keepdim=st.booleans())
def test_whole_leaf_reduction_property(name: str, td: TensorDict, keepdim: bool) -> None:
    if keepdim:
        _check_reduction(td, name, None, True, lambda: getattr(td, name)(keepdim=True))
    else:
        _check_reduction(td, name, None, False, lambda: getattr(td, name)())


@pytest.mark.parametrize("name", REDUCTIONS)
@SETTINGS
@given(data=st.data(), keepdim=st.booleans())
def test_batch_dim_reduction_property(name: str, data: st.DataObject, keepdim: bool) -> None:
    td = data.draw(tensordicts(min_dims=1))
    nb = td.batch_dims
    dim = data.draw(
        st.one_of(
            st.integers(-nb, nb - 1),
            st.lists(
                st.integers(-nb, nb - 1), min_size=1, max_size=nb, unique_by=lambda d: d % nb
            ).map(tuple),
        )
    )
    _check_reduction(td, name, dim, keepdim, lambda: getattr(td, name)(dim, keepdim=keepdim))
    _check_reduction(td, name, dim, keepdim, lambda: getattr(td, name)(dim=dim, keepdim=keepdim))


@pytest.mark.parametrize("name", REDUCTIONS)
@SETTINGS
@given(td=tensordicts(min_dims=1))
def test_feature_dim_reduction_property(name: str, td: TensorDict) -> None:
    expected = {}
    for path, leaf in leaf_items(td):
        parent = td.get(path[:-1]) if len(path) > 1 else td
        dims = tuple(range(parent.batch_dims, leaf.ndim))
        expected[path] = _outcome(_reduce_leaf, name, leaf, dims, False)
    failures = tuple(value for value in expected.values() if isinstance(value, type))
    if failures:
        with pytest.raises(failures):
            getattr(td, name)(dim="feature")
        return
    out = getattr(td, name)(dim="feature")
    assert out.batch_size == td.batch_size
    for path, sub in nested_items(td):
        assert out.get(path).batch_size == sub.batch_size
    for path, value in expected.items():
        assert equal(out.get(path), value), path
    with pytest.raises(TypeError, match="keepdim"):
        getattr(td, name)(dim="feature", keepdim=True)


@pytest.mark.parametrize("name", REDUCTIONS)
@SETTINGS
@given(td=tensordicts(min_dims=1, nested=False))
def test_reduce_true_reduces_the_leaves_together(name: str, td: TensorDict) -> None:
    leaves = [leaf for _, leaf in leaf_items(td)]
    batch = td.batch_size
    flat = _outcome(torch.cat, [leaf.reshape(-1) for leaf in leaves])
    expected = flat if isinstance(flat, type) else _outcome(getattr(torch, name), flat)
    if isinstance(expected, type):
        with pytest.raises(expected):
            getattr(td, name)(reduce=True)
    else:
        got = getattr(td, name)(reduce=True)
        assert isinstance(got, torch.Tensor) and got.shape == ()
        assert torch.allclose(got.double(), expected.double(), equal_nan=True)
    # Along a batch dim, as the peer: the leaves joined along it and reduced along it; they
    # must agree in shape beside it (as in torch.cat, a 1-d tensor of no elements joins any).
    joined = _outcome(torch.cat, leaves, 0)
    if isinstance(joined, type):
        with pytest.raises(errors.ReductionError, match="joins the tensors along dim 0"):
            getattr(td, name)(0, reduce=True)
        return
    expected = _outcome(_reduce_leaf, name, joined, (0,), False)
    if isinstance(expected, type):
        return
    got = getattr(td, name)(0, reduce=True)
    assert got.shape == expected.shape and got.shape[: len(batch) - 1] == batch[1:]
    assert torch.allclose(got.double(), expected.double(), equal_nan=True)


_PAIRS: dict[Any, type] = {}


def _pair_class(lib: Any) -> Any:
    """A record class ``Pair(a: Tensor, n: TensorDict, name: str)`` of ``lib``."""
    if lib not in _PAIRS:

        class Pair:
            a: torch.Tensor
            n: Any
            name: str

        _PAIRS[lib] = lib.tensorclass(Pair)
    return _PAIRS[lib]


def _feature_leaves(lib: Any) -> Any:
    g = torch.Generator().manual_seed(3)
    a, c = torch.rand(3, 4, 2, generator=g), torch.rand(3, 4, 2, generator=g)
    return lib.TensorDict({"a": a, "n": lib.TensorDict({"c": c}, [3, 4])}, [3, 4])


REDUCE_TOGETHER: list[tuple[str, dict[str, Any]]] = [
    (name, kw)
    for name in [*REDUCTIONS, "max", "min"]
    for kw in (
        {"dim": 0},
        {"dim": 1},
        {"dim": 1, "keepdim": True},
        {"dim": (0, 1)},
        {"dim": "feature"},
        {"dim": ()},
        {},
    )  # fmt: skip
    if not (name in ("prod", "max", "min") and kw.get("dim") == (0, 1))
    and not (name in ("max", "min") and kw.get("dim") == ())  # the peer raises (IndexError)
] + [(name, {"dim": d}) for name in ("cummax", "cummin") for d in (0, 1)]


@pytest.mark.peer
@pytest.mark.parametrize(("name", "kw"), REDUCE_TOGETHER, ids=str)
@pytest.mark.parametrize("kind", ["td", "lazy", "record"])
def test_reduce_true_with_dims_as_the_peer(name: str, kw: dict[str, Any], kind: str) -> None:
    peer = _peer()

    def build(lib: Any) -> Any:
        td = _feature_leaves(lib)
        if kind == "lazy":
            return lib.lazy_stack(list(td.unbind(1)), 1)
        if kind == "record":
            return _pair_class(lib)(a=td["a"], n=td["n"], name="x", batch_size=[3, 4])
        return td

    theirs, mine = build(peer), build(tclass)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = getattr(theirs, name)(reduce=True, **kw)
    got = getattr(mine, name)(reduce=True, **kw)
    if isinstance(expected, tuple):  # max / min / cummax / cummin along a dim
        assert type(got) is type(expected)
        assert equal(got.values, expected.values) and equal(got.indices, expected.indices)
        return
    assert type(got) is torch.Tensor and got.shape == expected.shape
    assert torch.allclose(got, expected)


def test_running_extreme_of_no_elements_takes_the_dims_torch_takes() -> None:
    # torch.cat and torch.cummax take any dim for a 1-d tensor of no elements (the
    # peer answers through them): an empty result, where a dim out of range of tensors
    # with elements, or one torch.cat refuses, stays a DimError
    td = TensorDict({"c": torch.zeros(0), "d": torch.zeros(0), "s": ""}, [0])
    for op in ("cummax", "cummin"):
        found = getattr(td, op)(1, reduce=True)
        assert found.values.shape == (0,) and found.indices.dtype == torch.int64
        assert getattr(td, op)(-3, reduce=True).values.shape == (0,)
    flat = TensorDict({"c": torch.zeros(0, 3)}, [0])
    with pytest.raises(errors.DimError, match="out of range"):
        flat.cummax(5, reduce=True)  # torch.cat refuses dim 5 of 2-d tensors
    with pytest.raises(errors.DimError, match="out of range"):
        TensorDict({"c": torch.zeros(2)}, [2]).cummax(1, reduce=True)
    with pytest.raises(errors.DimError, match="out of range"):
        td.sum(1, reduce=True)  # (torch's sum refuses it too)


def test_reduce_true_with_dims_joins_along_the_dim() -> None:
    td = _feature_leaves(tclass)
    joined = torch.cat([td["a"], td["n", "c"]], 1)
    assert equal(td.sum(1, reduce=True), joined.sum(1))  # feature dims kept, as the peer
    assert td.mean((0, 1), keepdim=True, reduce=True).shape == (1, 1, 2)
    assert torch.allclose(
        td.prod((0, 1), reduce=True), torch.cat([td["a"], td["n", "c"]]).prod(0).prod(0)
    )
    values, indices = td.max(1, reduce=True)
    assert equal(indices, joined.max(1).indices)  # indices into the joined tensors
    assert td.cummax(0, reduce=True).values.shape == (6, 4, 2)
    # a running extreme's dim is a dim of the joined tensors too, beyond the batch dims
    # (it was checked as a batch dim, a DimError where the peer answers)
    along_2 = torch.cat([td["a"], td["n", "c"]], 2)
    assert equal(td.cummin(2, reduce=True).values, along_2.cummin(2).values)
    unbatched = TensorDict({"c": torch.tensor([[3.0, 1.0], [2.0, 4.0]])}, [])
    assert equal(unbatched.cummax(1, reduce=True).values, torch.tensor([[3.0, 3.0], [2.0, 4.0]]))
    with pytest.raises(errors.DimError, match="out of range"):
        unbatched.cummax(2, reduce=True)
    with pytest.warns(FutureWarning, match="from the end of each tensor"):
        last = td.sum(-1, reduce=True)  # the last dim of the tensors (the peer's count)
    assert equal(last, torch.cat([td["a"], td["n", "c"]], -1).sum(-1))
    ragged = TensorDict({"a": torch.rand(3, 4), "b": torch.rand(3, 4, 2)}, [3, 4])
    with pytest.raises(errors.ReductionError, match=r"along dim 0.*\[3, 4\], \[3, 4, 2\]"):
        ragged.sum(0, reduce=True)
    with pytest.raises(errors.DimError):
        ragged.sum(2, reduce=True)
    hollow = TensorDict({"a": torch.rand(0, 3), "b": torch.rand(0, 3, 2)}, [0])
    with pytest.raises(errors.ReductionError, match=r"along dim 0.*\[0, 3\], \[0, 3, 2\]"):
        hollow.std(0, reduce=True)  # as with elements
    assert ragged.sum(dim="feature", reduce=True).shape == (3, 4)


def test_reduce_true_skips_a_legacy_empty_tensor_as_torch_cat() -> None:
    """Found by the differential fuzzer: as torch.cat (and the peer, which joins through
    it), a 1-d tensor of no elements joins tensors of any shape (it holds nothing to
    reduce), where tclass refused the shapes (dim 0) or the dim (dim 1)."""
    td = TensorDict({"c": torch.rand(0), "a": torch.rand(0, 3, 2)}, [0])
    assert equal(td.nansum(0, reduce=True), torch.zeros(3, 2))
    assert td.nansum(1, reduce=True).shape == (0, 2)
    assert td.mean(0, reduce=True).isnan().all() and td.mean(0, reduce=True).shape == (3, 2)
    first = TensorDict({"a": torch.rand(0, 3), "c": torch.rand(0)}, [0])
    assert first.amax(1, reduce=True).shape == (0,)  # whichever comes first
    only = TensorDict({"c": torch.rand(0), "d": torch.rand(0)}, [0])  # all 1-d: joined
    assert equal(only.sum(0, reduce=True), torch.tensor(0.0))
    with pytest.raises(errors.DimError, match="out of range"):
        only.sum(1, reduce=True)
    ragged = TensorDict({"c": torch.rand(0), "a": torch.rand(0, 3), "b": torch.rand(0, 3, 2)}, [0])
    with pytest.raises(errors.ReductionError, match=r"\[0, 3\], \[0, 3, 2\]"):
        ragged.sum(0, reduce=True)  # the others still agree in shape (torch.cat: RuntimeError)
    # the skipped tensor's dtype still takes part in the result's, as in torch.cat (found by
    # hypothesis: an int64 leaf beside an empty float32 one gave "mean(): ... Got: Long")
    mixed = TensorDict({"k0": torch.zeros(0, 1, dtype=torch.long), "k1": torch.zeros(0)}, [0])
    assert mixed.mean(0, reduce=True).dtype == torch.float32
    assert mixed.sum(0, reduce=True).dtype == torch.float32


def test_reduce_true_takes_the_dims_of_the_joined_tensors() -> None:
    """Found by the differential fuzzer: as the peer, with ``reduce=True`` a dim past the
    batch dims is a dim of the joined tensors (the leaves), not an error."""
    td = TensorDict({"d": torch.ones(2, 3), "e": torch.ones(2, 4)}, [2])
    assert equal(td.sum(1, reduce=True), torch.tensor([7.0, 7.0]))
    assert equal(td.max(1, reduce=True).indices, torch.zeros(2, dtype=torch.long))
    one = TensorDict({"d": torch.full((1, 1), 2.0)}, [1])
    with pytest.warns(FutureWarning, match="from the end of each tensor"):
        assert equal(one.nansum(dim=-2, keepdim=True, reduce=True), torch.tensor([[2.0]]))
    assert equal(one.amax(dim=1, reduce=True), torch.tensor([2.0]))
    with pytest.raises(errors.DimError, match=r"dim 5 is out of range for the 2 dim"):
        one.min(dim=5, reduce=True)


@pytest.mark.parametrize("name", ["sum", "nanmean", "std", "var", "quantile"])
def test_reduce_true_along_batch_dims_keeps_the_feature_dims(name: str) -> None:
    g = torch.Generator().manual_seed(3)
    a, c = torch.rand(3, 4, 5, generator=g), torch.rand(3, 4, 5, generator=g)
    td = TensorDict({"a": a, "n": TensorDict({"c": c}, [3, 4, 5])}, [3, 4])
    args = (0.5,) if name == "quantile" else ()
    joined = torch.cat([a, c], 1)
    got = getattr(td, name)(*args, dim=1, reduce=True)
    assert got.shape == (3, 5)
    assert torch.allclose(got, getattr(joined, name)(*args, dim=1))
    assert getattr(td, name)(*args, dim="feature", reduce=True).shape == (3, 4)
    if name != "quantile":  # torch.quantile takes one dim
        assert getattr(td, name)(dim=(0, 1), reduce=True).shape == (5,)
        assert getattr(td, name)(dim=(0, 1), keepdim=True, reduce=True).shape == (1, 1, 5)
    td["b"] = torch.rand(3, 4, 6)
    with pytest.raises(errors.ReductionError, match=r"\[3, 4, 6\]"):
        getattr(td, name)(*args, dim=1, reduce=True)


@pytest.mark.peer
def test_reduce_true_along_a_batch_dim_as_the_peer() -> None:
    peer = _peer()
    a, c = torch.rand(3, 4, 5), torch.rand(3, 4, 5)
    mine = TensorDict({"a": a, "n": TensorDict({"c": c}, [3, 4, 5])}, [3, 4])
    theirs = peer.TensorDict(a=a, n=peer.TensorDict(c=c, batch_size=[3, 4, 5]), batch_size=[3, 4])
    for dim in (0, 1, (0, 1)):
        for name in ("sum", "mean", "std"):
            expected = getattr(theirs, name)(dim=dim, reduce=True)
            assert torch.allclose(getattr(mine, name)(dim=dim, reduce=True), expected)


def test_norm_of_a_locked_collection_is_locked_unless_its_keys_are_renamed() -> None:
    """The peer's norm keeps the lock; its key_transform builds an unlocked copy (fz27d:
    program 15,500,189 of methods,index,shape,combine)."""
    td = TensorDict({"a": torch.ones(2, 3), "n": {"c": torch.ones(2)}}, [2]).lock_()
    assert td.norm().is_locked and td.norm()["n"].is_locked
    renamed = td.norm(key_transform=lambda key: key + "_n")
    assert not renamed.is_locked and not renamed["n_n"].is_locked
    assert equal(renamed["n_n", "c_n"], torch.tensor(2.0).sqrt())


def test_reduction_options() -> None:
    td = TensorDict({"a": torch.rand(2, 3, 4), "n": {"c": torch.rand(2, 3)}}, [2, 3])
    assert td.sum(dtype=torch.float64)["a"].dtype is torch.float64
    assert td.mean(0, dtype=torch.float64)["n", "c"].dtype is torch.float64
    assert equal(td.std(correction=0)["a"], td["a"].std(correction=0))
    assert equal(td.var(1, correction=2)["a"], td["a"].var(1, correction=2))
    renamed = td.sum(key_transform=lambda key: key + "_sum")
    assert set(renamed.keys(include_nested=True, leaves_only=True)) == {"a_sum", ("n_sum", "c_sum")}
    assert equal(td.norm()["a"], torch.linalg.vector_norm(td["a"]))
    assert td.norm(dtype=torch.float64)["n", "c"].dtype is torch.float64
    assert equal(td.logsumexp()["a"], td["a"].logsumexp((0, 1)))  # the batch dims
    assert equal(td.logsumexp(1, keepdim=True)["a"], td["a"].logsumexp(1, keepdim=True))
    # no batch dims: over no dims, each entry as it is in floating point (the logsumexp of
    # one element; torch.logsumexp(t, dim=()) fails, as the peer, which calls it)
    flat = TensorDict({"a": torch.rand(1, 3), "i": torch.tensor([1, 2])}, [])
    assert equal(flat.logsumexp()["a"], flat["a"])
    assert equal(flat.logsumexp()["i"], torch.tensor([1.0, 2.0]))
    q = td.quantile(0.25, dim=0)
    assert equal(q["a"], td["a"].quantile(0.25, dim=0))
    assert equal(td.quantile(0.5)["n", "c"], td["n", "c"].quantile(0.5))
    assert equal(td.nanmean(dim="feature")["a"], td["a"].nanmean(-1))


def test_quantile_of_several_quantiles_puts_them_first() -> None:
    # As torch and the peer: a 1-D q over batch dims adds a first batch dim, one per q.
    td = TensorDict({"a": torch.rand(2, 3, 4), "n": {"c": torch.rand(2, 3)}}, [2, 3])
    q = torch.tensor([0.2, 0.8])
    out = td.quantile(q, 1)
    assert out.batch_size == (2, 2) and equal(out["a"], td["a"].quantile(q, 1))
    kept = td.quantile(q, dim=0, keepdim=True)
    assert kept.batch_size == (2, 1, 3) and equal(kept["n", "c"], td["n", "c"].quantile(q, 0, True))
    assert TensorDict({}, [1]).quantile(q, -1).batch_size == (2,)
    # a Python value shared by every element stays one shared value, as in the peer (the
    # stack of one result per quantile made it a value per element); per-element stay so
    td = TensorDict({"a": torch.rand(4, 1), "n": {"s": None, "c": torch.rand(4, 1)}}, [4, 1])
    td.set_non_tensor("v", "x")
    out = td.quantile(q, dim=1, keepdim=True)
    assert out.batch_size == (2, 4, 1) and out["v"] == "x" and out["n", "s"] is None
    assert out.get_non_tensor("v") == "x" and out["n"].batch_size == (2, 4, 1)
    assert td.quantile(q).batch_size == ()  # over every element: q is a leaf dim, as torch


def test_out_takes_the_result_into_a_collection_with_or_without_its_entries() -> None:
    td = TensorDict({"a": torch.rand(2, 3, 4), "n": {"c": torch.rand(2, 3, 5)}}, [2, 3])
    full = td.logsumexp(1).zero_()
    kept = full["a"]
    assert td.logsumexp(1, out=full) is full and full["a"] is kept  # written into
    assert equal(kept, td["a"].logsumexp(1))
    empty = td.logsumexp(1).empty()  # no entries: they are set, as the peer's out=
    assert td.logsumexp(1, out=empty) is empty
    assert equal(empty["n", "c"], td["n", "c"].logsumexp(1))


def test_max_and_min_give_values_and_indices_along_a_dim() -> None:
    td = TensorDict({"a": torch.rand(2, 3, 4), "n": {"c": torch.rand(2, 3, 5)}}, [2, 3])
    for name in ("max", "min"):
        whole = getattr(td, name)()
        assert type(whole) is TensorDict and equal(whole["a"], getattr(td["a"], name)())
        for dim in (0, 1, -1):
            out = getattr(td, name)(dim)
            values, indices = out
            assert out.values is values and out.indices is indices
            expected = getattr(torch, name)(td["a"], dim % 2)
            assert equal(values["a"], expected.values) and equal(indices["a"], expected.indices)
            assert values.batch_size == indices.batch_size == td.batch_size[1 - dim % 2 :][:1]
            kept = getattr(td, name)(dim=dim, keepdim=True).values
            assert kept["n", "c"].shape == getattr(td["n", "c"], name)(dim % 2, True).values.shape
        only = getattr(td, name)(1, return_indices=False)
        assert type(only) is TensorDict and equal(only["a"], getattr(td["a"], name)(1).values)
        joined = torch.cat([td["a"].flatten(), td["n", "c"].flatten()])
        assert equal(getattr(td, name)(reduce=True), getattr(joined, name)())


@pytest.mark.parametrize("name", ["max", "min", "cummax", "cummin"])
def test_values_and_indices_are_torchs_result_types(name: str) -> None:
    td = TensorDict({"a": torch.rand(2, 3), "n": {"c": torch.rand(2, 3, 4)}}, [2, 3])
    kind = getattr(torch.return_types, name)
    for out in (getattr(td, name)(1), getattr(td, name)(dim=0), getattr(torch, name)(td, 0)):
        assert type(out) is kind and isinstance(out, tuple) and len(out) == 2
        assert out[0] is out.values and out[1] is out.indices
        assert type(out.values) is TensorDict and out.indices["n", "c"].dtype is torch.int64
        values, indices = out
        assert values is out.values
    expected = getattr(td["n", "c"], name)(1)
    assert equal(getattr(td, name)(1).indices["n", "c"], expected.indices)
    pair = _pair_class(tclass)
    record = pair(a=torch.rand(2, 3), n=td["n"], name="x", batch_size=[2, 3])
    out = getattr(record, name)(0)
    assert type(out) is kind and type(out.values) is pair and type(out[1]) is pair
    assert type(getattr(td, name)(0, return_indices=False)) is TensorDict


def test_all_and_any() -> None:
    td = TensorDict({"a": torch.tensor([[1, 0], [1, 1]]), "n": {"b": torch.ones(2, 2)}}, [2])
    assert td.all() is False and td.any() is True
    assert (td >= 0).all() is True and (td < 0).any() is False
    assert TensorDict(batch_size=[2]).all() is True and TensorDict(batch_size=[2]).any() is False
    out = td.all(0)
    assert type(out) is TensorDict and out.batch_size == () and equal(out["a"], td["a"].all(0))
    assert equal(td.any(-1)["n", "b"], td["n", "b"].any(0))
    with pytest.raises(DimError):
        td.all(1)


def test_all_reads_only_the_elements_of_each_bool_leaf() -> None:
    # A bool leaf is read as the bytes of its elements: a false element outside a view
    # (before or after it in the storage) or between the rows of a strided view counts
    # only where the view holds it.
    base = torch.ones(4, 6, dtype=torch.bool)
    base[0, 0] = base[3, 5] = False
    assert TensorDict({"m": base[1:3]}, [2]).all() is True  # storage offset, contiguous
    assert TensorDict({"m": base[:, 1:5]}, [4]).all() is True  # the gaps hold the falses
    assert TensorDict({"m": base[:, :5]}, [4]).all() is False
    assert TensorDict({"m": base[:3].t()}, [6]).all() is False  # transposed: not one block
    last = torch.ones(1000, dtype=torch.bool)
    last[-1] = False
    assert TensorDict({"m": last}, [1000]).all() is False
    assert TensorDict({"m": last[:-1]}, [999]).all() is True
    assert TensorDict({"m": torch.ones(0, 3, dtype=torch.bool)}, [0]).all() is True
    expanded = torch.tensor([True, False]).expand(3, 2)  # zero strides
    assert TensorDict({"m": expanded}, [3]).all() is False
    assert TensorDict({"m": torch.tensor([True]).expand(5)}, [5]).all() is True


@pytest.mark.parametrize("name", ["cumsum", "cumprod"])
def test_cumulative_sums_and_products(name: str) -> None:
    td = TensorDict({"a": torch.rand(2, 3, 4), "n": {"c": torch.rand(2, 3, 5)}}, [2, 3])
    for dim in (0, 1, -1, -2):
        out = getattr(td, name)(dim)
        assert out.batch_size == td.batch_size
        assert equal(out["a"], getattr(td["a"], name)(dim % 2))
        assert equal(out["n", "c"], getattr(td["n", "c"], name)(dim % 2))
    assert getattr(td, name)(0, dtype=torch.float64)["a"].dtype is torch.float64
    with pytest.raises(DimError):
        getattr(td, name)(2)


@pytest.mark.parametrize("name", ["cummax", "cummin"])
def test_cumulative_max_and_min(name: str) -> None:
    td = TensorDict({"a": torch.rand(2, 3, 4)}, [2, 3])
    values, indices = getattr(td, name)(1)
    expected = getattr(td["a"], name)(1)
    assert equal(values["a"], expected.values) and equal(indices["a"], expected.indices)
    assert values.batch_size == td.batch_size
    assert type(getattr(td, name)(0, return_indices=False)) is TensorDict


@pytest.mark.parametrize("name", REDUCTIONS + ["max", "min", "logsumexp", "cumsum", "all"])
def test_bad_dims_are_errors(name: str) -> None:
    td = TensorDict({"a": torch.rand(2, 3, 4)}, [2, 3])
    for dim in (2, -3, (0, 5)):
        if name in ("all", "cumsum") and isinstance(dim, tuple):
            continue
        with pytest.raises(DimError, match=r"\[2, 3\]") as info:
            getattr(td, name)(dim)
        assert isinstance(info.value, IndexError)


@SETTINGS
@given(td=tensordicts(min_dims=1), data=st.data())
def test_bad_dims_property(td: TensorDict, data: st.DataObject) -> None:
    dim = data.draw(bad_dims(td.batch_dims))
    with pytest.raises(DimError):
        td.sum(dim)
    with pytest.raises(DimError):
        td.mean((0, dim))


def test_reductions_of_an_empty_collection() -> None:
    empty = TensorDict(batch_size=[3])
    assert type(empty.sum()) is TensorDict and empty.sum().batch_size == ()
    assert empty.mean(0).batch_size == ()
    with pytest.raises(ValueError, match="no tensor"):
        empty.sum(reduce=True)


# --- Python values ----------------------------------------------------------------------


def test_python_values_survive_reductions() -> None:
    td = TensorDict({"x": torch.rand(4, 2), "env": NonTensorData("pong", batch_size=[4])}, [4])
    for out in (td.sum(), td.mean(0), td.amax(0, keepdim=True), td.std(dim="feature")):
        assert out.get("env").data == "pong"
        assert out.get("env").batch_size == out.batch_size
    p, q = NonTensorData("p"), NonTensorData("q")
    mixed = tclass.stack([TensorDict(x=torch.ones(2), s=p), TensorDict(x=torch.ones(2), s=q)])
    assert mixed.sum(dim="feature").get("s").tolist() == ["p", "q"]
    with pytest.raises(errors.TclassError, match="'s'"):
        mixed.sum(0)
    same = tclass.stack([TensorDict(x=torch.ones(2), s=p), TensorDict(x=torch.ones(2), s=p)])
    assert same.sum(0).get("s").data == "p"


def test_an_empty_batch_of_python_values_reduces_without_merging() -> None:
    # No element holds a value, so none differ (it used to claim they did): all() / any()
    # over an empty batch answer as torch and the peer; the values reduce to none (None),
    # or to an empty stack where the result has no elements either.
    td = TensorDict({"s": ["a", "b", "c"], "x": torch.arange(3)}, [3])[:0]
    assert td.all() is True and td.any() is False
    out = td.all(0)
    assert equal(out["x"], torch.tensor(True)) and out["s"] is None
    assert equal(td.any(-1)["x"], torch.tensor(False)) and td.sum()["s"] is None
    rows = tclass.stack([TensorDict({"s": s, "x": torch.zeros(0)}, [0]) for s in "ab"])
    assert equal(rows.all(1)["x"], torch.ones(2, dtype=torch.bool))
    assert rows.all(1)["s"] is None
    assert rows.any(0).get("s").batch_size == (0,) and rows.any(0)["s"] == []
    assert (td == td.clone()).all() is True and (td != td.clone()).any() is False


# --- records ----------------------------------------------------------------------------


@pytest.mark.parametrize("kinds", RECORDS, ids=IDS)
def test_reductions_on_records(kinds: tuple[type, type]) -> None:
    record_cls, inner_cls = kinds
    r = record(kinds, [4])
    for out in (r.sum(), r.mean(0), r.std(0, keepdim=True), r.norm(), r.logsumexp(), r.amax(0)):
        assert type(out) is record_cls and type(out.inner) is inner_cls
        assert out.env == "pong"
    assert equal(r.mean(0).obs, r.obs.mean(0))
    assert equal(r.sum().inner.x, r.inner.x.sum())
    values, indices = r.max(0)
    assert type(values) is record_cls and equal(indices.obs, r.obs.max(0).indices)
    assert isinstance(r.sum(reduce=True), torch.Tensor)
    assert r.all() is True or r.all() is False
    assert type(r.cumsum(0)) is record_cls
    assert equal(torch.mean(r, 0).obs, r.obs.mean(0))


# --- lazy stacks ------------------------------------------------------------------------


def _heterogeneous() -> LazyStackedTensorDict:
    return tclass.lazy_stack(
        [
            TensorDict({"x": make_values([3, 2]).float(), "y": torch.rand(3)}, [3]),
            TensorDict({"x": make_values([3, 5]).float(), "y": torch.rand(3)}, [3]),
        ],
        1,
    )


def test_lazy_stack_reductions_that_stay_inside_members() -> None:
    lazy = _heterogeneous()  # batch [3, 2], stacked along dim 1
    out = lazy.sum(0)
    assert type(out) is LazyStackedTensorDict and out.batch_size == (2,)
    for got, member in zip(out.tensordicts, lazy.tensordicts):
        assert equal(got["x"], member["x"].sum(0))
    feature = lazy.mean(dim="feature")  # the members' results line up: dense, as the peer
    assert type(feature) is TensorDict and feature.batch_size == lazy.batch_size
    assert equal(feature["x"][:, 1], lazy.tensordicts[1]["x"].mean(-1))
    kept = lazy.amax(0, keepdim=True)
    assert kept.batch_size == (1, 2) and type(kept) is LazyStackedTensorDict
    cumulative = lazy.cumsum(0)
    assert equal(cumulative.tensordicts[0]["x"], lazy.tensordicts[0]["x"].cumsum(0))


@pytest.mark.parametrize("stack_dim", [0, 1])
def test_lazy_stack_reductions_are_dense_and_scans_lazy_as_the_peer(stack_dim: int) -> None:
    td = TensorDict({"x": torch.rand(3, 4), "n": {"y": torch.rand(3, 4, 2)}}, [3, 4])
    lazy = tclass.lazy_stack(list(td.unbind(stack_dim)), stack_dim)
    for dim in (0, 1):
        for out in (lazy.sum(dim), lazy.logsumexp(dim), lazy.amax(dim, keepdim=True),
                    *lazy.max(dim), *lazy.cummin(dim), lazy.mean(dim="feature")):  # fmt: skip
            assert type(out) is TensorDict and type(out["n"]) is TensorDict, dim
        assert equal(lazy.logsumexp(dim)["n", "y"], td["n", "y"].logsumexp(dim))
        for out in (lazy.softmax(dim), lazy.cumsum(dim)):
            assert type(out) is LazyStackedTensorDict and out.stack_dim == stack_dim
            assert type(out["n"]) is LazyStackedTensorDict
        assert torch.allclose(lazy.softmax(dim)["n", "y"], td["n", "y"].softmax(dim))
    ints = tclass.lazy_stack([TensorDict({"i": torch.arange(4)}, [4])] * 3, stack_dim)
    out = ints.softmax(1 - stack_dim, dtype=torch.float64)
    assert type(out) is LazyStackedTensorDict and out["i"].dtype is torch.float64


def test_softmax_along_the_stack_dim_of_members_that_differ_is_refused() -> None:
    """The dense stack a softmax along the stack dim needs does not exist when the
    members' shapes differ: a ``HeterogeneousEntryError`` naming the entry, even where
    the stack dim is past the members' own dims (the peer runs softmax on each member
    along its own dim there: torch's ``IndexError``, dim out of range)."""
    members = [
        TensorDict({"n": {"c": torch.rand(1, 3, 1, k)}, "d": torch.rand(1, 3)}, [1, 3])
        for k in (2, 3)
    ]
    lazy = tclass.lazy_stack(members, 2)[1:].lock_()
    with pytest.raises(errors.HeterogeneousEntryError, match=r"\('n', 'c'\)"):
        lazy.softmax(2, dtype=torch.float64)
    alike = tclass.lazy_stack([members[0], members[0].clone()], 2)
    assert torch.allclose(alike.softmax(2)["d"], torch.full((1, 3, 2), 0.5))


def test_lazy_stack_whole_reductions_combine_the_members() -> None:
    lazy = _heterogeneous()
    members = lazy.tensordicts
    for name in REDUCTIONS + ["norm"]:
        out = getattr(lazy, name)()
        assert type(out) is TensorDict and out.batch_size == (), name
        joined = torch.cat([m["x"].reshape(-1) for m in members])
        assert torch.allclose(
            out["x"], getattr(joined, name)() if name != "norm" else joined.norm()
        )
    total = torch.cat([leaf.reshape(-1) for m in members for _, leaf in leaf_items(m)])
    assert torch.allclose(lazy.sum(reduce=True), total.sum())
    assert lazy.all() is (bool(total.all())) and (lazy > -1).all() is True


def test_lazy_stack_reductions_across_members() -> None:
    lazy = _heterogeneous()
    with pytest.raises(errors.HeterogeneousEntryError, match="'x'"):
        lazy.sum(1)  # member 0's x is [3, 2], member 1's [3, 5]: no element-wise sum
    same = tclass.lazy_stack([TensorDict({"x": torch.rand(3, 2)}, [3]) for _ in range(4)], 0)
    out = same.mean(0)
    assert type(out) is TensorDict
    assert torch.allclose(out["x"], torch.stack([m["x"] for m in same.tensordicts]).mean(0))
    values, indices = same.max(0)
    assert equal(indices["x"], torch.stack([m["x"] for m in same.tensordicts]).max(0).indices)


# --- torch functions and the peer -------------------------------------------------------


def test_torch_reduction_functions() -> None:
    td = TensorDict({"a": torch.rand(2, 3, 4)}, [2, 3])
    cases: list[tuple[Any, Any]] = [
        (torch.sum(td), td["a"].sum()), (torch.sum(td, 0), td["a"].sum(0)),
        (torch.sum(td, dim=1, keepdim=True), td["a"].sum(1, keepdim=True)),
        (torch.mean(td, (0, 1)), td["a"].mean((0, 1))), (torch.std(td, 1), td["a"].std(1)),
        (torch.var(td), td["a"].var()), (torch.prod(td, 0), td["a"].prod(0)),
        (torch.amax(td, 1), td["a"].amax(1)), (torch.amin(td), td["a"].amin()),
        (torch.max(td), td["a"].max()), (torch.max(td, 0).values, td["a"].max(0).values),
        (torch.min(td, 1).indices, td["a"].min(1).indices),
        (torch.nansum(td), td["a"].nansum()), (torch.nanmean(td, 0), td["a"].nanmean(0)),
        (torch.logsumexp(td, 0), td["a"].logsumexp(0)), (torch.cumsum(td, 1), td["a"].cumsum(1)),
        (torch.cumprod(td, 0), td["a"].cumprod(0)), (torch.norm(td), td["a"].norm()),
        (torch.quantile(td, 0.5, 0), td["a"].quantile(0.5, 0)),
    ]  # fmt: skip
    for position, (got, expected) in enumerate(cases):
        assert type(got) is TensorDict, position
        assert torch.allclose(got["a"], expected), position
    assert torch.all(td > 0) is True and torch.any(td > 1) is False


def _peer() -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return pytest.importorskip("tensordict")


PEER_CALLS: list[Callable[[Any], Any]] = [
    lambda x: x.sum(), lambda x: x.sum(0), lambda x: x.sum(dim=(0, 1)),
    lambda x: x.sum(-1, keepdim=True), lambda x: x.sum(dim="feature"), lambda x: x.mean(),
    lambda x: x.mean(1), lambda x: x.nansum(0), lambda x: x.nanmean(), lambda x: x.prod(0),
    lambda x: x.std(), lambda x: x.std(0, correction=0), lambda x: x.var(dim=(0, 1)),
    lambda x: x.amax(1), lambda x: x.amin(), lambda x: x.max(), lambda x: x.max(0).values,
    lambda x: x.min(1).indices, lambda x: x.max(0, return_indices=False), lambda x: x.norm(),
    lambda x: x.logsumexp(), lambda x: x.logsumexp(0), lambda x: x.all(0), lambda x: x.any(1),
    lambda x: x.sum(reduce=True), lambda x: x.mean(reduce=True), lambda x: x.std(reduce=True),
    lambda x: x.quantile(0.3, 0), lambda x: x.cummax(1).values, lambda x: x.cummin(0).indices,
    lambda x: x.sum(dtype=torch.float64), lambda x: x.max(reduce=True),
    lambda x: x.sum(0, reduce=True), lambda x: x.mean(dim="feature", reduce=True),
    lambda x: torch.sum(x, 1), lambda x: torch.mean(x), lambda x: torch.std(x, 0),
    lambda x: torch.var(x, 1, keepdim=True),
]  # fmt: skip


@pytest.mark.peer
@pytest.mark.parametrize("call", PEER_CALLS, ids=range(len(PEER_CALLS)))
def test_same_results_as_the_peer(call: Callable[[Any], Any]) -> None:
    peer = _peer()
    g = torch.Generator().manual_seed(7)
    a, c = torch.rand(2, 3, generator=g), torch.rand(2, 3, generator=g)
    mine = TensorDict({"a": a, "n": {"c": c}}, [2, 3])
    theirs = peer.TensorDict({"a": a.clone()}, batch_size=[2, 3])
    theirs["n"] = peer.TensorDict({"c": c.clone()}, batch_size=[2, 3])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = call(theirs)
    got = call(mine)
    if isinstance(expected, bool):
        assert got is expected
        return
    if isinstance(expected, torch.Tensor):
        assert isinstance(got, torch.Tensor) and torch.allclose(got, expected)
        return
    assert got.batch_size == expected.batch_size
    want = {(k,) if isinstance(k, str) else k: v for k, v in expected.items(True, True)}
    have = dict(leaf_items(got))
    assert have.keys() == want.keys()
    for key, value in want.items():
        assert have[key].dtype == value.dtype and torch.allclose(have[key], value), key


@pytest.mark.peer
def test_the_peer_reductions_and_casts_are_covered() -> None:
    peer = _peer()
    reductions = [n for n in dir(peer._base.reductions._Reductions) if not n.startswith("_")]
    casts = ["float", "double", "half", "bfloat16", "int", "bool", "type", "float16",
             "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "complex64",
             "complex128"]  # fmt: skip
    for name in reductions + casts + ["norm", "softmax"]:
        assert hasattr(peer.TensorDict, name), name
        for cls in (TensorDict, LazyStackedTensorDict, Rec):
            assert callable(getattr(cls, name, None)), (cls, name)
