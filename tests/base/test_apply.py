"""Tests for tclass._base.implemented._apply: apply and friends, copies, fills, masked and
conditional selection, comparisons and the all/any reductions."""

from __future__ import annotations

import pathlib
from pathlib import Path
from typing import Any

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import tclass
from tclass import MemoryMappedTensor, NonTensorStack, TensorDict, errors, tensorclass

from strategies import (  # noqa: E402
    SETTINGS,
    assert_leafwise,
    bad_dims,
    dims,
    leaf_items,
    make_values,
    nested_items,
    same_storage,
    tensordicts,
)

BatchSizeError, DimError = errors.BatchSizeError, errors.DimError
KeyNotFoundError, LockedError = errors.KeyNotFoundError, errors.LockedError


def _td() -> TensorDict:
    """batch [3, 4]: a float leaf with a feature dim, an int leaf, a nested TD with an
    extra batch dim holding a bool leaf and a second level."""
    return TensorDict(
        {
            "a": make_values([3, 4, 2]),
            "b": make_values([3, 4], torch.int64),
            "n": TensorDict(
                {
                    "c": make_values([3, 4, 5], torch.bool),
                    "m": TensorDict({"d": make_values([3, 4, 5, 2])}, [3, 4, 5]),
                },
                [3, 4, 5],
            ),
        },
        [3, 4],
    )


def _pad(mask: torch.Tensor, leaf: torch.Tensor) -> torch.Tensor:
    """A batch mask/condition with size-1 dims appended to broadcast over ``leaf``."""
    return mask.reshape(mask.shape + (1,) * (leaf.ndim - mask.ndim))


def _shift(tensor: torch.Tensor, amount: int) -> torch.Tensor:
    """Different values of the same dtype."""
    if tensor.dtype is torch.bool:
        return tensor ^ bool(amount % 2)
    return tensor + amount


# --- apply ----------------------------------------------------------------------------


@SETTINGS
@given(tensordicts())
def test_apply_property(td: TensorDict) -> None:
    fn = lambda t: t.to(torch.float64) * 2 + 1  # noqa: E731
    out = td.apply(fn)
    assert_leafwise(out, td, fn, td.batch_size)


@SETTINGS
@given(tensordicts())
def test_apply_with_others_property(td: TensorDict) -> None:
    other = td.apply(lambda t: _shift(t, 3))
    out = td.apply(lambda x, y: x.to(torch.float64) - y.to(torch.float64), other)
    for path, leaf in leaf_items(td):
        expected = leaf.to(torch.float64) - other.get(path).to(torch.float64)
        assert torch.equal(out.get(path), expected)
    for path, sub in nested_items(td):
        assert out.get(path).batch_size == sub.batch_size


def test_apply_returning_none_drops_entries() -> None:
    td = _td()
    out = td.apply(lambda t: None if t.dtype is torch.bool else t)
    assert "c" not in out["n"].keys()
    assert ("n", "m", "d") in out.keys(include_nested=True)
    assert out["a"] is td["a"]
    assert "c" in td["n"].keys()  # the source is unchanged


def test_apply_that_breaks_the_batch_dims_raises() -> None:
    td = _td()
    with pytest.raises(BatchSizeError, match=r"'a'.*\[3, 4\]") as info:
        td.apply(lambda t: t.sum())
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, RuntimeError)
    with pytest.raises(
        BatchSizeError, match=r"batch dimension mismatch for key .*its shape \[4, 2\]"
    ):
        td.apply(lambda t: t[0])
    one = TensorDict({"x": make_values([3, 2])}, [3])
    with pytest.raises(BatchSizeError, match=r"'x'.*\[2\].*\[3\]"):
        one.apply(lambda t: t[0])
    with pytest.raises(BatchSizeError, match=r"'x'"):
        one.apply(lambda t: t.sum())
    # A nested leaf names its full key.
    with pytest.raises(BatchSizeError, match=r"'d'|\('n', 'm', 'd'\)"):
        td.apply(lambda t: t if t.dtype is not torch.float32 or t.ndim < 4 else t[:, :2])


def test_apply_with_others_that_break_the_batch_dims_names_the_nested_key() -> None:
    td = _td()
    with pytest.raises(BatchSizeError, match=r"\('n', 'm', 'd'\)"):
        td.apply(lambda x, y: x if x.ndim < 4 else x[0], td)


def test_apply_with_batch_size() -> None:
    td = _td()
    out = td.apply(lambda t: t[:, :2], batch_size=[3, 2])
    assert out.batch_size == torch.Size([3, 2])
    assert out["a"].shape == torch.Size([3, 2, 2])
    # as the peer: the batch size given is the nested collections' batch size too
    assert out["n"].batch_size == torch.Size([3, 2])
    assert out["n", "m"].batch_size == torch.Size([3, 2])
    assert torch.equal(out["n", "m", "d"], td["n", "m", "d"][:, :2])
    fewer = td.apply(lambda t: t[0], batch_size=[4])
    assert fewer.batch_size == torch.Size([4])
    assert fewer["n"].batch_size == torch.Size([4])
    named = td.named_apply(lambda k, t: t[..., None], batch_size=[])
    assert named["n"].batch_size == named["n", "m"].batch_size == torch.Size([])
    with pytest.raises(BatchSizeError, match=r"\[3, 2\]"):
        td.apply(lambda t: t, batch_size=[3, 2])
    with pytest.raises(BatchSizeError, match="invalid batch_size"):
        td.apply(lambda t: t, batch_size=[-1])
    with pytest.raises(BatchSizeError, match=r"\[3, 2\]"):
        td.apply(lambda x, y: x + y, td, batch_size=[3, 2])


@tensorclass
class _Labelled:
    x: torch.Tensor
    s: str


def test_apply_with_a_new_batch_size_leaves_per_element_values_out() -> None:
    # As the peer: values cannot follow the batch dims fn reshapes (it used to be an
    # internal error); one value spanning the batch takes the new batch size.
    record = _Labelled(x=torch.zeros(3, 4), s="a", batch_size=[3])
    stacked = torch.stack([record, record.clone()])
    out = stacked.apply(lambda x: x[:, 0], batch_size=[2])
    assert out.batch_size == torch.Size([2]) and out.s is None and out.x.shape == (2, 4)
    td = TensorDict(x=torch.zeros(3, 4), s=["a", "b", "c"], one="p", batch_size=[3])
    out = td.apply(lambda x: x[0], batch_size=[4])
    assert set(out.keys()) == {"x", "one"} and out["one"] == "p"
    out = td.named_apply(lambda key, x: x[0], batch_size=[4])
    assert set(out.keys()) == {"x", "one"}
    same = td.apply(lambda x: x + 1, batch_size=[3])  # the batch unchanged: kept
    assert isinstance(same.get("s"), NonTensorStack) and same[2]["s"] == "c"


def test_apply_with_others_missing_a_key() -> None:
    td = _td()
    other = td.exclude(("n", "m", "d"))
    with pytest.raises(KeyNotFoundError, match="'d'") as info:
        td.apply(lambda x, y: x, other)
    assert isinstance(info.value, KeyError)


def test_apply_keeps_class_and_device() -> None:
    class Sub(TensorDict):
        pass

    td = Sub({"a": make_values([3])}, [3], device="cpu")
    out = td.apply(lambda t: t + 1)
    assert type(out) is Sub
    assert out.device == torch.device("cpu")
    meta = td.apply(lambda t: t.to("meta"))
    assert meta.device is None  # moved off the declared device


def test_apply_inplace_writes_into_existing_storage() -> None:
    td = _td()
    before = {path: (leaf.clone(), leaf.data_ptr()) for path, leaf in leaf_items(td)}
    out = td.apply(lambda t: _shift(t, 1), inplace=True)
    assert out is td
    for path, leaf in leaf_items(td):
        old, ptr = before[path]
        assert leaf.data_ptr() == ptr
        assert torch.equal(leaf, _shift(old, 1))


# --- named_apply ----------------------------------------------------------------------


def test_named_apply_local_keys() -> None:
    td = _td()
    seen: list[Any] = []
    out = td.named_apply(lambda key, t: seen.append(key) or t)
    assert seen == ["a", "b", "c", "d"]
    assert out["a"] is td["a"]
    assert out["n", "m"].batch_size == torch.Size([3, 4, 5])


def test_named_apply_nested_keys_match_keys_include_nested() -> None:
    td = _td()
    seen: list[Any] = []
    td.named_apply(lambda key, t: seen.append(key) or t, nested_keys=True)
    # The same spelling keys(include_nested=True) uses: strings at the top level.
    assert seen == list(td.keys(include_nested=True, leaves_only=True))
    assert seen == ["a", "b", ("n", "c"), ("n", "m", "d")]


def test_unknown_keywords_are_ignored_with_a_future_warning() -> None:
    # As the peer 0.15 (its 0.17 raises a TypeError): ignored, but never silently.
    td = _td()
    with pytest.warns(errors.IgnoredKeywordWarning, match=r"apply\(\) ignores .*'foo'"):
        out = td.apply(lambda t: t * 2, foo=1)
    assert_leafwise(out, td, lambda t: t * 2, td.batch_size)
    with pytest.warns(FutureWarning, match=r"named_apply\(\) ignores .*'bar', 'baz'"):
        td.named_apply(lambda key, t: t, bar=1, baz=2)
    record = _Point(x=torch.zeros(2), batch_size=[2])
    with pytest.warns(FutureWarning, match="'foo'"):
        assert torch.equal(record.apply(lambda t: t + 1, foo=1).x, torch.ones(2))


@tensorclass
class _Point:
    x: torch.Tensor


def test_named_apply_prefix_goes_before_nested_keys() -> None:
    td = TensorDict({"a": torch.zeros(2), "n": {"b": torch.zeros(2)}}, [2])
    for source in (td, tclass.lazy_stack([td, td])):
        seen: list[Any] = []
        source.named_apply(
            lambda key, t, seen=seen: seen.append(key), nested_keys=True, prefix=("r",)
        )
        assert set(seen) == {("r", "a"), ("r", "n", "b")}
    seen = []  # without nested_keys the local name, as the peer
    td.named_apply(lambda key, t: seen.append(key), prefix=("r",))
    assert seen == ["a", "b"]


def test_named_apply_with_others_none_and_batch_size() -> None:
    td = _td()
    other = td.apply(lambda t: _shift(t, 2))
    out = td.named_apply(
        lambda key, x, y: (
            None if key == "b" else torch.stack([x, y]).to(torch.float64).mean(0)[:, :1]
        ),
        other,
        batch_size=[3, 1],
    )
    assert "b" not in out.keys()
    assert out.batch_size == torch.Size([3, 1])
    assert out["n"].batch_size == torch.Size([3, 1])  # as the peer
    expected = (td["a"].double() + other["a"].double())[:, :1] / 2
    assert torch.equal(out["a"], expected)
    with pytest.raises(BatchSizeError, match="'a'"):
        td.named_apply(lambda key, t: t[0])


def test_named_apply_that_drops_everything_is_none_as_apply() -> None:
    # README: apply's result is None when fn drops every entry; named_apply too (the
    # peer's default filter_empty), with or without nested keys or a batch size.
    td = _td()
    assert td.apply(lambda t: None) is None
    assert td.named_apply(lambda key, t: None) is None
    assert td.named_apply(lambda key, t: None, nested_keys=True) is None
    assert td.named_apply(lambda key, t: None, batch_size=[3]) is None
    kept = td.named_apply(lambda key, t: None, filter_empty=False)
    assert kept is not None and list(kept.keys(include_nested=True, leaves_only=True)) == []
    empty = TensorDict({}, [3]).named_apply(lambda key, t: None)  # nothing to drop
    assert empty is not None and empty.batch_size == torch.Size([3])


# --- apply_ ---------------------------------------------------------------------------


def test_apply__on_a_locked_td() -> None:
    td = _td().lock_()
    ptr = td["a"].data_ptr()
    old = td["a"].clone()
    assert td.apply_(lambda t: _shift(t, 5)) is td
    assert td.is_locked
    assert td["a"].data_ptr() == ptr
    assert torch.equal(td["a"], old + 5)
    with pytest.raises(LockedError):
        td.set("new", make_values([3, 4]))


def test_apply__with_others() -> None:
    td = _td()
    other = td.apply(lambda t: _shift(t, 7))
    expected = {path: leaf.clone() for path, leaf in leaf_items(other)}
    td.apply_(lambda x, y: y, other)
    for path, leaf in leaf_items(td):
        assert torch.equal(leaf, expected[path])


def test_apply__reaches_memory_mapped_files(tmp_path: pathlib.Path) -> None:
    a_path, c_path = tmp_path / "a", tmp_path / "c"
    a = MemoryMappedTensor.from_tensor(make_values([3, 2]), filename=a_path)
    c = MemoryMappedTensor.from_tensor(make_values([3, 4], torch.int64), filename=c_path)
    expected_a, expected_c = a.clone() * 2, c.clone() * 2
    td = TensorDict({"a": a, "n": TensorDict({"c": c}, [3, 4])}, [3], lock=True)
    td.apply_(lambda t: t * 2)
    assert isinstance(td["a"], MemoryMappedTensor)
    on_disk_a = MemoryMappedTensor.from_filename(a_path, torch.float32, [3, 2])
    on_disk_c = MemoryMappedTensor.from_filename(c_path, torch.int64, [3, 4])
    assert torch.equal(on_disk_a, expected_a)
    assert torch.equal(on_disk_c, expected_c)
    td.fill_("a", 0.5)
    assert torch.equal(
        MemoryMappedTensor.from_filename(a_path, torch.float32, [3, 2]), torch.full((3, 2), 0.5)
    )


def test_apply__takes_applys_options_as_the_peer() -> None:
    # The peer's apply_(fn, *others, **kw) is apply(fn, *others, inplace=True, **kw).
    td = TensorDict({"a": torch.zeros(3), "n": {"b": torch.ones(3)}}, [3])
    other = TensorDict({"a": torch.ones(3)}, [3])  # no ("n", "b"): the default stands in
    assert td.apply_(lambda x, y: x + (0 if y is None else y), other, default=None) is td
    assert td["a"].tolist() == [1.0] * 3 and td["n", "b"].tolist() == [1.0] * 3
    assert td.apply_(lambda x: x + 5, num_threads=2) is td
    assert td["a"].tolist() == [6.0] * 3
    locked = td.clone().lock_()
    assert locked.apply_(lambda x, y: x if y is None else y, other, default=None) is locked
    assert locked["a"].tolist() == [1.0] * 3 and locked["n", "b"].tolist() == [6.0] * 3
    with pytest.raises(KeyNotFoundError):  # without a default, as apply
        td.apply_(lambda x, y: y, other, filter_empty=False)


def test_apply_num_threads_gives_the_same_results_and_errors() -> None:
    td = _td()
    for method, fn in (("apply", lambda t: _shift(t, 1)), ("named_apply", lambda k, t: t)):
        serial = getattr(td, method)(fn)
        assert (getattr(td, method)(fn, num_threads=3) == serial).all()

    def fail(t: torch.Tensor) -> torch.Tensor:
        raise KeyError("from fn")

    with pytest.raises(KeyError, match="from fn"):  # propagated as it is, as the peer
        td.apply(fail, num_threads=2)
    with pytest.raises(KeyError, match="from fn"):
        td.apply_(fail, num_threads=2)


def test_record_apply_out_returns_out() -> None:
    @tensorclass
    class Rec:
        x: torch.Tensor

    rec = Rec(x=torch.zeros(3), batch_size=[3])
    out = rec.clone()
    assert rec.apply(lambda x: x + 1, out=out) is out and out.x.tolist() == [1.0] * 3
    assert rec.named_apply(lambda k, x: x + 2, out=out) is out and out.x.tolist() == [2.0] * 3
    assert rec.apply(lambda x: x + 1, out=out, num_threads=2) is out


def test_apply_out_takes_the_results_as_its_entries(tmp_path: Path) -> None:
    """As the peer's: ``out``'s entries become the results, their dtypes too (a cast
    into the old tensors lost 0.5 here); a locked out (a memory-mapped buffer, which
    the peer refuses) is written into in place."""
    td = TensorDict(a=torch.zeros(2, dtype=torch.long), n={"b": torch.ones(2, dtype=torch.long)})
    td.batch_size = [2]
    nested = td["n"]
    assert td.apply(lambda x: x.float() + 0.5, out=td) is td
    assert td["a"].tolist() == [0.5, 0.5] and td["n", "b"].tolist() == [1.5, 1.5]
    assert td["n"] is nested  # nested collections stay, their entries replaced
    buffer = TensorDict(a=torch.zeros(2), n={"b": torch.zeros(2)}, batch_size=[2]).memmap_(
        tmp_path / "buf"
    )
    kept = buffer["a"]
    td.apply(lambda x: x * 2, out=buffer)
    assert buffer["a"] is kept and TensorDict.load_memmap(tmp_path / "buf")["a"].tolist() == [
        1.0,
        1.0,
    ]


def test_apply_out_on_a_ragged_lazy_stack() -> None:
    from tclass import lazy_stack

    stack = lazy_stack([TensorDict(a=torch.zeros(2)), TensorDict(a=torch.zeros(3))])
    out = stack.clone()
    assert stack.apply(lambda x: x + 1, out=out) is out
    assert [m["a"].tolist() for m in out.tensordicts] == [[1.0] * 2, [1.0] * 3]


# --- copies ---------------------------------------------------------------------------


@SETTINGS
@given(tensordicts())
def test_clone_property(td: TensorDict) -> None:
    assert_leafwise(td.clone(), td, lambda t: t, td.batch_size, view=False)


def test_clone_deep_vs_shallow() -> None:
    td = _td()
    deep = td.clone()
    deep["a"].zero_()
    assert not torch.equal(td["a"], deep["a"])
    deep["n"]["added"] = make_values([3, 4, 5])
    assert "added" not in td["n"].keys()
    shallow = td.clone(False)
    assert shallow is not td
    assert shallow["a"] is td["a"]
    assert shallow["n", "m", "d"] is td["n", "m", "d"]
    shallow["new"] = make_values([3, 4])
    assert "new" not in td.keys()
    # Like the peer: clone(recurse=False) copies the nested containers, not their tensors.
    assert shallow["n"] is not td["n"]
    shallow["n"]["added"] = make_values([3, 4, 5])
    assert "added" not in td["n"].keys()


def test_detach() -> None:
    a = make_values([3, 2]).requires_grad_()
    b = make_values([3, 4, 2]).requires_grad_()
    td = TensorDict({"a": a * 1, "n": TensorDict({"b": b * 1}, [3, 4])}, [3])
    assert td["a"].requires_grad
    out = td.detach()
    assert out.batch_size == td.batch_size
    assert out["n"].batch_size == torch.Size([3, 4])
    for path, leaf in leaf_items(td):
        got = out.get(path)
        assert not got.requires_grad
        assert got.grad_fn is None
        assert same_storage(got, leaf)
        assert torch.equal(got, leaf.detach())
    assert td["a"].requires_grad  # the source keeps its graph


def test_contiguous_of_permuted_views() -> None:
    td = _td()
    permuted = td.permute(1, 0)
    assert not permuted["a"].is_contiguous()
    out = permuted.contiguous()
    assert out.batch_size == torch.Size([4, 3])
    assert out["n"].batch_size == torch.Size([4, 3, 5])
    for path, leaf in leaf_items(permuted):
        got = out.get(path)
        assert got.is_contiguous()
        assert torch.equal(got, leaf)
    already = td.contiguous()
    assert already["a"] is td["a"]


# --- fills ----------------------------------------------------------------------------


def test_zero_() -> None:
    td = _td()
    ptrs = {path: leaf.data_ptr() for path, leaf in leaf_items(td)}
    assert td.lock_().zero_() is td
    for path, leaf in leaf_items(td):
        assert leaf.data_ptr() == ptrs[path]
        assert not leaf.any()


def test_fill_() -> None:
    td = _td()
    assert td.fill_("a", 2.5) is td
    assert torch.equal(td["a"], torch.full((3, 4, 2), 2.5))
    td.fill_(("n", "c"), True)
    assert td["n", "c"].all()
    before_b = td["b"].clone()
    td.fill_("n", 0)  # a nested TD: every tensor under it
    assert not td["n", "c"].any()
    assert not td["n", "m", "d"].any()
    assert torch.equal(td["b"], before_b)
    td.fill_("b", torch.tensor(7))
    assert (td["b"] == 7).all()
    with pytest.raises(KeyNotFoundError, match="'zz'") as info:
        td.fill_("zz", 1)
    assert isinstance(info.value, KeyError)
    with pytest.raises(KeyNotFoundError, match="zz"):
        td.fill_(("n", "zz"), 1)


# --- masked_fill / where --------------------------------------------------------------


@SETTINGS
@given(st.data())
def test_masked_fill_property(data: st.DataObject) -> None:
    td = data.draw(tensordicts(min_dims=1))
    nb = td.batch_dims
    mask_dims = data.draw(st.integers(1, nb))
    mask = make_values(td.batch_size[:mask_dims], torch.bool)
    fn = lambda t: t.masked_fill(_pad(mask, t), 1)  # noqa: E731
    assert_leafwise(td.masked_fill(mask, 1), td, fn, td.batch_size, view=False)
    expected = {path: fn(leaf) for path, leaf in leaf_items(td)}
    ptrs = {path: leaf.data_ptr() for path, leaf in leaf_items(td)}
    assert td.masked_fill_(mask, 1) is td
    for path, leaf in leaf_items(td):
        assert torch.equal(leaf, expected[path])
        assert leaf.data_ptr() == ptrs[path]


def test_masked_fill_examples() -> None:
    td = _td()
    before = td.clone()
    row_mask = torch.tensor([True, False, True])  # over the first batch dim only
    out = td.masked_fill(row_mask, 0)
    assert torch.equal(out["a"][1], td["a"][1])
    assert not out["a"][0].any() and not out["a"][2].any()
    assert not out["n", "m", "d"][2].any()
    assert torch.equal(td["a"], before["a"])  # not in place
    full = torch.zeros(3, 4, dtype=torch.bool)
    full[1, 2] = True
    out = td.masked_fill(full, -1)
    assert (out["a"][1, 2] == -1).all()  # the feature dim is broadcast
    assert (out["n", "m", "d"][1, 2] == -1).all()
    assert (out["a"] == -1).sum() == 2
    with pytest.raises(RuntimeError):
        td.masked_fill(torch.ones(2, dtype=torch.bool), 0)


@SETTINGS
@given(st.data())
def test_where_property(data: st.DataObject) -> None:
    td = data.draw(tensordicts())
    cond = make_values(td.batch_size, torch.bool)
    other = td.apply(lambda t: _shift(t, 1))
    fn = lambda t: torch.where(_pad(cond, t), t, _shift(t, 1))  # noqa: E731
    assert_leafwise(td.where(cond, other), td, fn, td.batch_size)
    assert_leafwise(torch.where(cond, td, other), td, fn, td.batch_size)
    swapped = lambda t: torch.where(_pad(cond, t), _shift(t, 1), t)  # noqa: E731
    assert_leafwise(torch.where(cond, other, td), td, swapped, td.batch_size)


def test_where_with_tensor_and_number() -> None:
    td = _td()
    cond = make_values([3, 4], torch.bool)
    out = td.where(cond, 0)
    assert torch.equal(out["a"], torch.where(_pad(cond, td["a"]), td["a"], 0))
    assert out["n"].batch_size == torch.Size([3, 4, 5])
    assert torch.equal(
        out["n", "m", "d"], torch.where(_pad(cond, td["n", "m", "d"]), td["n", "m", "d"], 0)
    )
    batch_tensor = torch.full((3, 4), -3)  # over the batch dims: broadcast over features
    out = td.where(cond, batch_tensor)
    assert torch.equal(
        out["a"], torch.where(_pad(cond, td["a"]), td["a"], _pad(batch_tensor, td["a"]))
    )
    # a number or a tensor first, the TensorDict second
    flipped = torch.where(cond, 0, td)
    assert torch.equal(flipped["a"], torch.where(_pad(cond, td["a"]), 0, td["a"]))
    assert torch.equal(
        flipped["n", "m", "d"], torch.where(_pad(cond, td["n", "m", "d"]), 0, td["n", "m", "d"])
    )
    flipped = torch.where(cond, batch_tensor, td)
    assert torch.equal(flipped["b"], torch.where(cond, batch_tensor, td["b"]))
    with pytest.raises(KeyNotFoundError, match="'b'"):
        td.where(cond, td.exclude("b"))


# --- comparisons ----------------------------------------------------------------------


@SETTINGS
@given(tensordicts())
def test_eq_ne_property(td: TensorDict) -> None:
    other = td.clone()
    for _, leaf in leaf_items(other):
        if leaf.numel():
            leaf.view(-1)[0] = _shift(leaf.view(-1)[0], 1)
    assert_leafwise(td == other, td, lambda t: t == other.get(_find(td, t)), td.batch_size)
    assert_leafwise(td != other, td, lambda t: t != other.get(_find(td, t)), td.batch_size)
    assert (td == td.clone()).all() is True
    assert (td != td.clone()).any() is False


def _find(td: TensorDict, tensor: torch.Tensor) -> tuple[str, ...]:
    return next(path for path, leaf in leaf_items(td) if leaf is tensor)


def test_eq_with_a_tensor_over_the_batch_dims_and_a_number() -> None:
    td = TensorDict(
        {"a": torch.arange(6).reshape(2, 3), "f": torch.arange(12).reshape(2, 3, 2) // 2,
         "n": TensorDict({"c": torch.arange(24).reshape(2, 3, 4) // 4}, [2, 3, 4])},
        [2, 3],
    )  # fmt: skip
    other = torch.arange(6).reshape(2, 3)
    out = td == other
    assert type(out) is TensorDict
    assert out.batch_size == torch.Size([2, 3])
    assert out["a"].all()
    assert out["f"].shape == torch.Size([2, 3, 2]) and out["f"].all()
    assert out["n"].batch_size == torch.Size([2, 3, 4]) and out["n", "c"].all()
    # Fewer dims: lined up with the last batch dims, as torch broadcasts (and the peer).
    columns = td == torch.tensor([0, 1, 2])
    assert torch.equal(columns["a"], td["a"] == torch.tensor([0, 1, 2]))
    assert columns["n"].batch_size == torch.Size([2, 3, 4])
    with pytest.raises(BatchSizeError, match=r"\[2, 3\].*\[2\]"):
        _ = td == torch.tensor([0, 1])
    number = td != 0
    assert torch.equal(number["a"], td["a"] != 0)
    assert torch.equal(number["n", "c"], td["n", "c"] != 0)
    assert torch.equal((td == 2.0)["f"], td["f"] == 2)
    assert (td == True)["a"].dtype is torch.bool  # noqa: E712


def test_eq_with_a_number_keeps_python_values_as_with_a_tensor() -> None:
    # As the peer: a number is compared with the tensors only, so a zeroed buffer holding
    # a Python value is all zeros (memmap_like's buffers); collections compare values.
    td = TensorDict({"a": torch.zeros(3), "s": "foo", "n": {"t": "bar"}}, [3])
    for other in (0, torch.zeros(())):
        out = td == other
        assert out.all() and out.get_non_tensor("s") == "foo"
        assert out.get_non_tensor(("n", "t")) == "bar"
    assert not (td != 0).all()
    assert (td == td)["s"].all()
    # A Python value facing a tensor (from_dict(to_dict()) makes numbers tensors): kept.
    numbers = TensorDict({"i": tclass.NonTensorData(3, [3]), "a": torch.zeros(3)}, [3])
    back = TensorDict.from_dict(numbers.to_dict(), auto_batch_size=True)
    assert (back == numbers).all() and (numbers == back).get_non_tensor("i") == 3


def test_eq_with_different_keys() -> None:
    td = _td()
    with pytest.raises(
        KeyNotFoundError, match=r"only in the left one: \['b'\], only in the right one: \[\]"
    ) as info:
        _ = td == td.exclude("b")
    assert isinstance(info.value, KeyError)
    extra = td.clone()
    extra["z"] = make_values([3, 4])
    with pytest.raises(KeyNotFoundError, match=r"only in the right one: \['z'\]"):
        _ = td != extra
    with pytest.raises(KeyNotFoundError, match="'d'"):
        _ = td == td.exclude(("n", "m", "d"))
    renamed = td.exclude("b")
    renamed["y"] = td["b"]  # as many keys on both sides, one of them different
    with pytest.raises(
        KeyNotFoundError, match=r"only in the left one: \['b'\], only in the right one: \['y'\]"
    ):
        _ = td == renamed


def test_eq_broadcasts_batch_sizes() -> None:
    a = TensorDict({"x": torch.arange(12).reshape(3, 4), "f": torch.zeros(3, 4, 2)}, [3, 4])
    row = TensorDict({"x": torch.arange(4).reshape(1, 4), "f": torch.zeros(1, 4, 2)}, [1, 4])
    out = a == row
    assert out.batch_size == torch.Size([3, 4])
    assert torch.equal(out["x"], a["x"] == row["x"])
    assert out["f"].shape == torch.Size([3, 4, 2])
    out = row == a
    assert out.batch_size == torch.Size([3, 4])
    bad = TensorDict({"x": torch.zeros(3, 2), "f": torch.zeros(3, 2, 2)}, [3, 2])
    with pytest.raises(
        BatchSizeError, match=r"cannot broadcast batch sizes \[3, 4\] and \[3, 2\]"
    ) as info:
        _ = a == bad
    assert isinstance(info.value, ValueError)
    flat = TensorDict({"x": torch.arange(4), "f": torch.zeros(4, 2)}, [4])
    for out in (a == flat, flat == a):  # fewer batch dims broadcast, as torch's shapes do
        assert out.batch_size == torch.Size([3, 4])
        assert torch.equal(out["x"], a["x"] == flat["x"])


def test_hash_and_bool() -> None:
    td = _td()
    assert TensorDict.__hash__ is None
    with pytest.raises(TypeError, match="unhashable"):
        hash(td)
    with pytest.raises(RuntimeError, match="ambiguous"):
        bool(td == td)


# --- all / any ------------------------------------------------------------------------


def test_all_any_without_dim() -> None:
    td = TensorDict(
        {"a": torch.ones(2, 3), "n": TensorDict({"b": torch.ones(2, 4, dtype=torch.bool)}, [2, 4])},
        [2],
    )
    assert td.all() is True
    assert td.any() is True
    td["n", "b"][1, 3] = False
    assert td.all() is False
    assert td.any() is True
    td.zero_()
    assert td.any() is False
    assert td.all() is False
    empty = TensorDict({}, [3])
    assert empty.all() is True
    assert empty.any() is False


@SETTINGS
@given(st.data())
def test_all_any_dim_property(data: st.DataObject) -> None:
    td = data.draw(tensordicts(min_dims=1)).apply(lambda t: t.to(torch.int64) % 2 == 0)
    nb = td.batch_dims
    dim = data.draw(dims(nb))
    new = torch.empty(td.batch_size).all(dim).shape
    assert_leafwise(td.all(dim), td, lambda t: t.all(dim=dim % nb), new)
    assert_leafwise(td.any(dim=dim), td, lambda t: t.any(dim=dim % nb), new)
    with pytest.raises(DimError, match="out of range") as info:
        td.all(data.draw(bad_dims(nb)))
    assert isinstance(info.value, IndexError)
    with pytest.raises(DimError, match="any: dim"):
        td.any(data.draw(bad_dims(nb)))


def test_all_any_dim_examples() -> None:
    base = _td()
    td = base == base.clone()
    assert td.all(-1).batch_size == torch.Size([3])
    assert td.all(-1)["a"].shape == torch.Size([3, 2])
    assert td.any(0)["n"].batch_size == torch.Size([4, 5])
    assert td.all(1).all() is True
    with pytest.raises(DimError, match=r"all: dim 2 is out of range for 2 batch dim"):
        td.all(2)


class TestApplyOnPythonValues:
    """``is_leaf=is_leaf_nontensor`` and ``call_on_nested`` give ``fn`` the Python-value
    nodes too, as the peer's; by default it sees tensors only."""

    def _td(self) -> TensorDict:
        return TensorDict(
            a=torch.zeros(3), b="text", c={"d": "x", "e": torch.ones(3)}, batch_size=[3]
        )

    def _seen(self, **options: Any) -> list[str]:
        seen: list[str] = []
        self._td().apply(lambda x: seen.append(type(x).__name__) or x, **options)
        return seen

    def test_default_sees_tensors_only(self) -> None:
        assert self._seen() == ["Tensor", "Tensor"]

    def test_is_leaf_nontensor(self) -> None:
        seen = self._seen(is_leaf=tclass.is_leaf_nontensor)
        assert seen == ["Tensor", "NonTensorData", "NonTensorData", "Tensor"]

    def test_call_on_nested(self) -> None:
        assert self._seen(call_on_nested=True) == ["Tensor", "NonTensorData", "TensorDict"]

    def test_a_returned_python_value_is_stored(self) -> None:
        td = self._td()
        out = td.apply(
            lambda x: x + 1 if isinstance(x, torch.Tensor) else "changed",
            is_leaf=tclass.is_leaf_nontensor,
        )
        assert out["b"] == "changed" and out["c", "d"] == "changed"
        assert torch.equal(out["c", "e"], torch.full((3,), 2.0)) and td["b"] == "text"

    def test_none_everywhere_gives_none(self) -> None:
        assert self._td().apply(lambda x: None, is_leaf=tclass.is_leaf_nontensor) is None

    def test_paired_and_named(self) -> None:
        td = self._td()
        pairs: list[tuple[str, str]] = []
        td.apply(
            lambda x, y: pairs.append((type(x).__name__, type(y).__name__)) or x,
            td.clone(),
            is_leaf=tclass.is_leaf_nontensor,
        )
        assert ("NonTensorData", "NonTensorData") in pairs and len(pairs) == 4
        keys: list[Any] = []
        td.named_apply(
            lambda key, x: keys.append(key) or x, nested_keys=True, is_leaf=tclass.is_leaf_nontensor
        )
        assert keys == ["a", "b", ("c", "d"), ("c", "e")]

    def test_a_result_off_the_batch_is_refused(self) -> None:
        with pytest.raises(BatchSizeError, match="'b'"):
            self._td().apply(
                lambda x: x if isinstance(x, torch.Tensor) else torch.zeros(2),
                is_leaf=tclass.is_leaf_nontensor,
            )


def test_an_in_place_apply_that_answers_none_everywhere_returns_none_as_the_peer() -> None:
    """``apply(fn, inplace=True)`` is ``None`` where ``apply(fn)`` is (nothing left), as
    the peer's; ``apply_`` returns the collection; a Python value or a nested collection
    that was empty is left, so the collection is returned."""

    def drop(value: torch.Tensor) -> None:
        return None

    td = TensorDict({"a": torch.zeros(3), "b": {"c": torch.ones(3)}}, [3])
    assert td.apply(drop, inplace=True) is None and td.apply(drop) is None
    assert td.apply(lambda x, y: None, td.clone(), inplace=True) is None
    assert td.apply_(drop) is td and td.apply(drop, inplace=True, filter_empty=False) is td
    assert torch.equal(td["a"], torch.zeros(3))  # nothing written
    lazy = tclass.lazy_stack([td, td.clone()])
    assert lazy.apply(drop, inplace=True) is None and lazy.apply_(drop) is lazy
    kept = TensorDict({"s": "text", "a": torch.zeros(3), "e": TensorDict({}, [3])}, [3])
    assert kept.apply(drop, inplace=True) is kept
    assert TensorDict({"e": TensorDict({}, [3])}, [3]).apply(drop, inplace=True) is not None
    half = TensorDict({"a": torch.zeros(3), "b": torch.ones(3)}, [3])
    assert half.apply(lambda t: None if t.sum() == 0 else t + 1, inplace=True) is half
    assert torch.equal(half["b"], torch.full((3,), 2.0))

    @tensorclass
    class Rec:
        x: torch.Tensor
        y: torch.Tensor | None = None

    rec = Rec(x=torch.zeros(2), batch_size=[2])
    assert rec.apply(drop, inplace=True) is None and rec.apply_(drop) is rec
