"""Tests for tclass._engine._ops: stack and cat, and every torch function in the dispatch table."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import tclass
from tclass import TensorDict, errors

from strategies import (  # noqa: E402
    SETTINGS,
    assert_leafwise,
    dims,
    leaf_items,
    make_values,
    nested_items,
    same_storage,
    tensordicts,
)

StackError, DimError = errors.StackError, errors.DimError

STACKS = [tclass.stack, torch.stack]
CATS = [tclass.cat, torch.cat, torch.concat, torch.concatenate]


def _td(batch: list[int] | None = None, *, device: Any = None) -> TensorDict:
    """batch [2, 3] by default: a feature leaf, an int leaf, a nested TD with an extra dim."""
    b = [2, 3] if batch is None else batch
    return TensorDict(
        {
            "a": make_values([*b, 4]),
            "b": make_values(b, torch.int64),
            "n": TensorDict({"c": make_values([*b, 5, 2])}, [*b, 5]),
        },
        b,
        device=device,
    )


def _shift(tensor: torch.Tensor, amount: int) -> torch.Tensor:
    if tensor.dtype is torch.bool:
        return tensor ^ bool(amount % 2)
    return tensor + amount


def _members(td: TensorDict, count: int) -> list[TensorDict]:
    return [td.apply(lambda t, i=i: _shift(t, i)) for i in range(count)]


def _assert_joined(result: Any, members: list[TensorDict], join: Any, batch: torch.Size) -> None:
    """``result`` holds ``join([leaf of each member])`` for every leaf."""
    first = members[0]
    assert type(result) is type(first)
    assert result.batch_size == batch
    assert set(result.keys(include_nested=True)) == set(first.keys(include_nested=True))
    nb = first.batch_dims
    for path, sub in nested_items(first):
        assert result.get(path).batch_size == batch + sub.batch_size[nb:], path
    for path, _ in leaf_items(first):
        expected = join([m.get(path) for m in members])
        got = result.get(path)
        assert got.shape == expected.shape, path
        assert got.dtype == expected.dtype, path
        assert torch.equal(got, expected), path


# --- stack ----------------------------------------------------------------------------


@SETTINGS
@given(st.data())
def test_stack_property(data: st.DataObject) -> None:
    td = data.draw(tensordicts())
    members = _members(td, data.draw(st.integers(1, 3)))
    dim = data.draw(dims(td.batch_dims, inclusive=True))
    pos = dim % (td.batch_dims + 1)
    batch = torch.stack([torch.empty(td.batch_size)] * len(members), dim).shape
    for stack in STACKS:
        result = stack(members, dim)
        _assert_joined(result, members, lambda parts: torch.stack(parts, pos), batch)


@SETTINGS
@given(st.data())
def test_stack_out_property(data: st.DataObject) -> None:
    td = data.draw(tensordicts())
    members = _members(td, 2)
    dim = data.draw(dims(td.batch_dims, inclusive=True))
    stack = data.draw(st.sampled_from(STACKS))
    out = torch.zeros_like(tclass.stack(members, dim))
    ptrs = {path: leaf.data_ptr() for path, leaf in leaf_items(out)}
    result = stack(members, dim, out=out)
    assert result is out
    pos = dim % (td.batch_dims + 1)
    _assert_joined(out, members, lambda parts: torch.stack(parts, pos), out.batch_size)
    for path, leaf in leaf_items(out):
        assert leaf.data_ptr() == ptrs[path]


def test_stack_examples() -> None:
    a, b = _td(), _td()
    out = tclass.stack([a, b], -1)
    assert out.batch_size == torch.Size([2, 3, 2])
    assert out["a"].shape == torch.Size([2, 3, 2, 4])
    assert out["n"].batch_size == torch.Size([2, 3, 2, 5])
    assert torch.equal(out["n", "c"][:, :, 1], b["n", "c"])
    assert not same_storage(out["a"], a["a"])
    assert tclass.stack([a], 0).batch_size == torch.Size([1, 2, 3])
    assert tclass.stack((a, b)).batch_size == torch.Size([2, 2, 3])  # any sequence
    scalar = TensorDict({"x": torch.tensor(1.0)}, [])
    assert tclass.stack([scalar, scalar]).batch_size == torch.Size([2])
    with pytest.raises(DimError, match="stack: dim 4 is out of range for 2 batch dim"):
        tclass.stack([a, b], 4)
    with pytest.raises(DimError, match="stack: dim -4"):
        torch.stack([a, b], -4)


def test_stack_batch_sizes_differ() -> None:
    a, b, c = _td([2, 3]), _td([2, 3]), _td([3, 3])
    for stack in STACKS:
        with pytest.raises(
            StackError, match=r"stack: member 2 has batch size \[3, 3\] but member 0 has \[2, 3\]"
        ) as info:
            stack([a, b, c])
        assert isinstance(info.value, ValueError)
        assert isinstance(info.value, RuntimeError)
        assert "lazy_stack" in str(info.value)


def test_stack_keys_differ() -> None:
    a = _td()
    missing = a.exclude("b")
    with pytest.raises(
        StackError,
        match=r"stack: member 1 has different keys from member 0 \(missing: \['b'\], extra: \[\]\)",
    ) as info:
        tclass.stack([a, missing])
    assert "lazy_stack" in str(info.value)
    extra = a.clone()
    extra["z"] = make_values([2, 3])
    with pytest.raises(StackError, match=r"missing: \[\], extra: \['z'\]"):
        torch.stack([a, extra])
    renamed = a.clone()
    renamed.rename_key_("b", "y")
    with pytest.raises(StackError, match=r"member 1 .*missing: \['b'\], extra: \['y'\]"):
        tclass.stack([a, renamed])
    with pytest.raises(StackError, match=r"missing: \['c'\]"):
        tclass.stack([a, a.exclude(("n", "c"))])


def test_stack_entry_shapes_differ() -> None:
    a = _td()
    b = a.clone()
    b["a"] = make_values([2, 3, 5])
    with pytest.raises(
        StackError,
        match=r"stack: entry 'a' has shape \[2, 3, 5\] in member 1 but \[2, 3, 4\] in member 0",
    ) as info:
        tclass.stack([a, b])
    assert "lazy_stack" in str(info.value)
    c = a.clone()
    c["n"] = TensorDict({"c": make_values([2, 3, 5, 3])}, [2, 3, 5])
    with pytest.raises(
        StackError, match=r"entry \('n', 'c'\) has shape \[2, 3, 5, 3\] in member 1"
    ):
        torch.stack([a, c])
    d = a.clone()
    d["n"] = TensorDict({"c": make_values([2, 3, 4, 2])}, [2, 3, 4])  # nested batch differs
    with pytest.raises(StackError, match=r"\[2, 3, 4\]"):
        tclass.stack([a, d])


def test_stack_entry_kind_differs() -> None:
    a = _td()
    b = a.clone()
    b["n"] = make_values([2, 3, 5, 2])
    with pytest.raises(StackError):
        tclass.stack([a, b])
    with pytest.raises(StackError):
        tclass.stack([b, a])


def test_stack_dtypes_differ_promotes_like_torch() -> None:
    a = TensorDict({"x": torch.ones(2, 3)}, [2])
    b = TensorDict({"x": torch.ones(2, 3, dtype=torch.int64)}, [2])
    out = tclass.stack([a, b])
    expected = torch.stack([a["x"], b["x"]])
    assert out["x"].dtype == expected.dtype == torch.float32
    assert torch.equal(out["x"], expected)
    out = tclass.cat([b, a])
    assert out["x"].dtype == torch.cat([b["x"], a["x"]]).dtype


@pytest.mark.parametrize("join", [tclass.stack, tclass.cat])
def test_empty_and_mixed_members(join: Any) -> None:
    name = join.__name__
    with pytest.raises(StackError, match=f"{name} expects a non-empty sequence of collections"):
        join([])

    class Sub(TensorDict):
        pass

    a = _td()
    sub = Sub(a, a.batch_size)
    with pytest.raises(
        StackError,
        match=f"{name}: member 1 is a Sub but member 0 is a TensorDict; no implementation found "
        "for members of different types",
    ):
        join([a, sub])
    with pytest.raises(
        StackError, match=f"{name}: member 2 is a Tensor but member 0 is a TensorDict"
    ):
        join([a, a, torch.zeros(2, 3)])
    with pytest.raises(StackError, match="member 1 is a TensorDict but member 0 is a Tensor"):
        join([torch.zeros(2, 3), a])
    # Plain tensors go to torch, as the peer's stack and cat send them.
    assert torch.equal(
        join([torch.ones(2), torch.zeros(2)]), getattr(torch, name)([torch.ones(2), torch.zeros(2)])
    )
    assert type(join([sub, sub])) is Sub


def test_a_record_stacked_with_a_tensordict_is_told_how_to_convert() -> None:
    @tclass.tensorclass
    class Exp:
        obs: torch.Tensor

    record, td = Exp(obs=torch.zeros(3, 2), batch_size=[3]), TensorDict(obs=torch.ones(3, 2))
    td.batch_size = [3]
    for members in ([td, record], [record, td]):
        with pytest.raises(errors.StackTypeError, match=r"Exp\.from_tensordict\(td\)"):
            torch.stack(members)
    # cat joins them, into member 0's kind (tests/engine/test_join_mixed_kinds.py)
    assert type(torch.cat([td, record])) is TensorDict
    assert type(torch.cat([record, td])) is Exp
    assert torch.cat([td, record.to_tensordict()]).batch_size == (6,)
    assert type(torch.stack([Exp.from_tensordict(td), record])) is Exp


def test_torch_stack_with_mixed_members() -> None:
    class Sub(TensorDict):
        pass

    a = _td()
    with pytest.raises(StackError, match="member 1 is a Sub"):
        torch.stack([a, Sub(a, a.batch_size)])
    with pytest.raises(StackError, match="member 1 is a Tensor"):
        torch.stack([a, torch.zeros(2, 3)])
    with pytest.raises(StackError, match="member 1 is a Tensor"):
        torch.cat([a, torch.zeros(2, 3)])


@pytest.mark.parametrize("join", [tclass.stack, tclass.cat])
def test_device_kept_only_if_shared(join: Any) -> None:
    cpu = torch.device("cpu")
    assert join([_td(device="cpu"), _td(device="cpu")]).device == cpu
    assert join([_td(device="cpu"), _td()]).device is None
    assert join([_td(), _td(device="cpu")]).device is None
    assert join([_td(), _td()]).device is None
    assert join([_td(device="cpu"), _td(device="cpu")])["n"].device == cpu


def test_stack_out_errors_leave_out_untouched() -> None:
    a, b = _td(), _td()
    wrong = TensorDict(
        {
            "a": torch.zeros(3, 2, 3, 4),
            "b": torch.zeros(3, 2, 3, dtype=torch.int64),
            "n": TensorDict({"c": torch.zeros(3, 2, 3, 5, 2)}, [3, 2, 3, 5]),
        },
        [3, 2, 3],
    )
    with pytest.raises(StackError, match=r"out= has batch size \[3, 2, 3\], expected \[2, 2, 3\]"):
        tclass.stack([a, b], out=wrong)
    assert wrong["a"].shape == torch.Size([3, 2, 3, 4])
    assert not wrong["a"].any()
    missing = torch.zeros_like(tclass.stack([a, b])).exclude("b")
    with pytest.raises(KeyError, match="'b'"):
        tclass.stack([a, b], out=missing)


# --- cat ------------------------------------------------------------------------------


@SETTINGS
@given(st.data())
def test_cat_property(data: st.DataObject) -> None:
    td = data.draw(tensordicts(min_dims=1))
    dim = data.draw(dims(td.batch_dims))
    pos = dim % td.batch_dims
    count = data.draw(st.integers(1, 3))
    members = []
    for i in range(count):  # members differ in size along dim
        size = data.draw(st.integers(0, td.batch_size[pos]))
        members.append(_narrow(td, pos, size).apply(lambda t, i=i: _shift(t, i)))
    batch = torch.cat([torch.empty(m.batch_size) for m in members], dim).shape
    for cat in CATS:
        result = cat(members, dim)
        _assert_joined(result, members, lambda parts: torch.cat(parts, pos), batch)


def _narrow(td: TensorDict, dim: int, size: int) -> TensorDict:
    index = (slice(None),) * dim + (slice(0, size),)
    return td[index]


@SETTINGS
@given(st.data())
def test_cat_out_property(data: st.DataObject) -> None:
    td = data.draw(tensordicts(min_dims=1))
    dim = data.draw(dims(td.batch_dims))
    members = _members(td, 2)
    out = torch.zeros_like(tclass.cat(members, dim))
    ptrs = {path: leaf.data_ptr() for path, leaf in leaf_items(out)}
    assert tclass.cat(members, dim, out=out) is out
    pos = dim % td.batch_dims
    _assert_joined(out, members, lambda parts: torch.cat(parts, pos), out.batch_size)
    assert all(leaf.data_ptr() == ptrs[path] for path, leaf in leaf_items(out))
    assert torch.cat(members, dim, out=out) is out


def test_cat_examples_and_errors() -> None:
    a, b = _td([2, 3]), _td([2, 1])
    out = tclass.cat([a, b], -1)
    assert out.batch_size == torch.Size([2, 4])
    assert out["n"].batch_size == torch.Size([2, 4, 5])
    assert torch.equal(out["a"][:, 3], b["a"][:, 0])
    for cat in CATS:
        with pytest.raises(
            StackError,
            match=r"cat: member 1 has batch size \[2, 1\], incompatible with member 0's "
            r"\[2, 3\] outside dim 0",
        ) as info:
            cat([a, b], 0)
        assert isinstance(info.value, ValueError)
    with pytest.raises(StackError, match=r"member 1 has batch size \[2\]"):
        tclass.cat([a, TensorDict({"a": torch.zeros(2, 4)}, [2])])
    scalar = TensorDict({"x": torch.tensor(1.0)}, [])
    with pytest.raises(
        StackError, match="cat: collections with no batch dims cannot be concatenated; use stack"
    ):
        tclass.cat([scalar, scalar])
    with pytest.raises(DimError, match="cat: dim 2 is out of range for 2 batch dim"):
        tclass.cat([a, a], 2)
    with pytest.raises(StackError, match=r"cat: member 1 has different keys .*missing: \['b'\]"):
        tclass.cat([a, a.exclude("b")])
    c = a.clone()
    c["a"] = make_values([2, 3, 7])
    with pytest.raises(
        StackError,
        match=r"cat: entry 'a' has shape \[2, 3, 7\] in member 1 but \[2, 3, 4\] in member 0",
    ):
        tclass.cat([a, c], 1)


def test_concatenate_takes_axis() -> None:
    a, b = _td([2, 3]), _td([2, 1])
    out = torch.concatenate([a, b], axis=1)  # torch.concatenate(tensors, axis=0, out=None)
    assert out.batch_size == torch.Size([2, 4])
    assert torch.equal(out["a"], torch.concatenate([a["a"], b["a"]], axis=1))


def test_cat_out_with_the_wrong_batch_size_leaves_out_untouched() -> None:
    a = _td()
    wrong = torch.zeros_like(tclass.cat([a, a, a]))
    with pytest.raises(StackError, match=r"out= has batch size \[6, 3\], expected \[4, 3\]"):
        tclass.cat([a, a], out=wrong)
    assert wrong["a"].shape == torch.Size([6, 3, 4])


# --- the other registered torch functions ---------------------------------------------


def test_torch_unbind_split_chunk() -> None:
    td = _td()
    rows = torch.unbind(td, 1)
    assert len(rows) == 3 and all(r.batch_size == torch.Size([2]) for r in rows)
    assert torch.equal(rows[1]["n", "c"], td["n", "c"][:, 1])
    assert [r.batch_size for r in torch.unbind(td)] == [torch.Size([3])] * 2
    assert [r.batch_size for r in torch.unbind(td, dim=-1)] == [torch.Size([2])] * 3
    parts = torch.split(td, 2, 1)
    assert [p.batch_size for p in parts] == [torch.Size([2, 2]), torch.Size([2, 1])]
    assert [p["n"].batch_size for p in parts] == [torch.Size([2, 2, 5]), torch.Size([2, 1, 5])]
    parts = torch.split(td, [1, 2], dim=-1)
    assert [p.batch_size for p in parts] == [torch.Size([2, 1]), torch.Size([2, 2])]
    assert torch.equal(parts[1]["a"], td["a"][:, 1:])
    parts = torch.split(td, 1)
    assert len(parts) == 2
    chunks = torch.chunk(td, 2, 1)
    assert [c.batch_size for c in chunks] == [torch.Size([2, 2]), torch.Size([2, 1])]
    assert torch.chunk(td, 2)[0].batch_size == torch.Size([1, 3])
    assert all(type(x) is TensorDict for x in (*rows, *parts, *chunks))


def test_torch_squeeze_unsqueeze_permute_reshape() -> None:
    td = _td([2, 1])
    assert torch.squeeze(td).batch_size == torch.Size([2])
    assert torch.squeeze(td)["n"].batch_size == torch.Size([2, 5])
    assert torch.squeeze(td, 1)["a"].shape == torch.Size([2, 4])
    assert torch.squeeze(td, dim=0).batch_size == torch.Size([2, 1])
    assert torch.unsqueeze(td, 0).batch_size == torch.Size([1, 2, 1])
    assert torch.unsqueeze(td, dim=-1)["a"].shape == torch.Size([2, 1, 1, 4])
    permuted = torch.permute(td, (1, 0))
    assert permuted.batch_size == torch.Size([1, 2])
    assert permuted["n"].batch_size == torch.Size([1, 2, 5])
    assert torch.equal(permuted["n", "c"], td["n", "c"].transpose(0, 1))
    assert torch.permute(td, dims=[-1, -2]).batch_size == torch.Size([1, 2])
    reshaped = torch.reshape(td, (-1,))
    assert reshaped.batch_size == torch.Size([2])
    assert reshaped["n"].batch_size == torch.Size([2, 5])
    assert torch.reshape(td, shape=[1, 2])["a"].shape == torch.Size([1, 2, 4])


def test_torch_clone() -> None:
    td = _td()
    out = torch.clone(td)
    assert_leafwise(out, td, lambda t: t, td.batch_size, view=False)
    permuted = td.permute(1, 0)
    dense = torch.clone(permuted, memory_format=torch.contiguous_format)
    assert_leafwise(dense, permuted, lambda t: t, permuted.batch_size, view=False)
    assert all(leaf.is_contiguous() for _, leaf in leaf_items(dense))
    kept = torch.clone(permuted, memory_format=torch.preserve_format)
    assert kept["a"].stride() == permuted["a"].stride()
    assert kept["n"].batch_size == torch.Size([3, 2, 5])


@pytest.mark.parametrize(
    ("fn", "value"),
    [(torch.zeros_like, 0), (torch.ones_like, 1), (torch.empty_like, None),
     (lambda x, **kw: torch.full_like(x, 3, **kw), 3)],
)  # fmt: skip
def test_torch_like_functions(fn: Any, value: Any) -> None:
    td = _td(device="cpu")
    out = fn(td)
    assert type(out) is TensorDict
    assert out.device == torch.device("cpu")
    for path, leaf in leaf_items(td):
        got = out.get(path)
        assert got.shape == leaf.shape and got.dtype == leaf.dtype
        assert not same_storage(got, leaf)
        if value is not None:
            assert (got == value).all()
    assert out["n"].batch_size == torch.Size([2, 3, 5])
    doubles = fn(td, dtype=torch.float64)
    assert all(leaf.dtype is torch.float64 for _, leaf in leaf_items(doubles))
    meta = fn(td, device="meta")
    assert meta.device == torch.device("meta")
    assert meta["n"].device == torch.device("meta")
    assert all(leaf.device.type == "meta" for _, leaf in leaf_items(meta))
    assert meta.batch_size == td.batch_size


def test_torch_where() -> None:
    td = _td()
    cond = make_values([2, 3], torch.bool)
    out = torch.where(cond, td, 0)
    assert out.batch_size == td.batch_size
    assert torch.equal(out["a"], torch.where(cond[..., None], td["a"], 0))
    out = torch.where(cond, -1, td)
    assert torch.equal(out["n", "c"], torch.where(cond[..., None, None], -1, td["n", "c"]))
    other = td.apply(lambda t: t + 100)
    out = torch.where(cond, other, td)
    assert torch.equal(out["b"], torch.where(cond, other["b"], td["b"]))


def test_dispatch_table_covers_the_documented_functions() -> None:
    from tclass._core._dispatch import TORCH_FUNCTIONS

    documented = {
        torch.stack, torch.cat, torch.concat, torch.concatenate, torch.unbind, torch.split,
        torch.chunk, torch.squeeze, torch.unsqueeze, torch.permute, torch.reshape, torch.clone,
        torch.zeros_like, torch.ones_like, torch.empty_like, torch.full_like, torch.where,
    }  # fmt: skip
    assert documented <= TORCH_FUNCTIONS.keys()
    assert TORCH_FUNCTIONS[torch.stack] is tclass.stack
    assert TORCH_FUNCTIONS[torch.cat] is tclass.cat


def test_unregistered_torch_functions_raise_type_error() -> None:
    td = _td()
    with pytest.raises(TypeError):
        torch.matmul(td, td)
    with pytest.raises(TypeError):
        torch.cross(td, td)
    with pytest.raises(TypeError):
        torch.allclose(td, td)


# --- against the peer -----------------------------------------------------------------


def _peer_pair(td: TensorDict) -> Any:
    peer = pytest.importorskip("tensordict")

    def convert(x: Any) -> Any:
        if isinstance(x, TensorDict):
            return peer.TensorDict({k: convert(v) for k, v in x.items()}, batch_size=x.batch_size)
        return x.clone()

    return peer, convert(td)


def _assert_same_as_peer(ours: Any, theirs: Any) -> None:
    assert ours.batch_size == theirs.batch_size
    ours_leaves = dict(leaf_items(ours))
    theirs_leaves = {
        (k,) if isinstance(k, str) else tuple(k): v
        for k, v in theirs.items(include_nested=True, leaves_only=True)
    }
    assert ours_leaves.keys() == theirs_leaves.keys()
    for path, leaf in ours_leaves.items():
        assert torch.equal(leaf, theirs_leaves[path]), path
    for path, sub in nested_items(ours):
        assert sub.batch_size == theirs.get(path).batch_size, path


@pytest.mark.peer
@SETTINGS
@given(st.data())
def test_stack_and_cat_match_the_peer(data: st.DataObject) -> None:
    td = data.draw(tensordicts(min_dims=1))
    peer, ptd = _peer_pair(td)
    members = _members(td, 2)
    peer_members = [ptd.apply(lambda t, i=i: _shift(t, i)) for i in range(2)]
    dim = data.draw(dims(td.batch_dims, inclusive=True))
    _assert_same_as_peer(tclass.stack(members, dim), peer.stack(peer_members, dim))
    _assert_same_as_peer(torch.stack(members, dim), torch.stack(peer_members, dim))
    cdim = data.draw(dims(td.batch_dims))
    _assert_same_as_peer(tclass.cat(members, cdim), peer.cat(peer_members, cdim))


@pytest.mark.peer
@SETTINGS
@given(st.data())
def test_shape_ops_match_the_peer(data: st.DataObject) -> None:
    td = data.draw(tensordicts(min_dims=1))
    peer, ptd = _peer_pair(td)
    nb = td.batch_dims
    order = data.draw(st.permutations(range(nb)))
    _assert_same_as_peer(td.permute(*order), ptd.permute(*order))
    _assert_same_as_peer(td.reshape(-1), ptd.reshape(-1))
    target = tuple(reversed(td.batch_size))
    _assert_same_as_peer(td.reshape(target), ptd.reshape(target))
    _assert_same_as_peer(td.unsqueeze(-1), ptd.unsqueeze(-1))
    _assert_same_as_peer(td.transpose(0, -1), ptd.transpose(0, -1))


@pytest.mark.peer
@pytest.mark.parametrize(
    "index",
    [0, -1, slice(1, None), (slice(None), 1), (Ellipsis, 0), (None, 0), torch.tensor([1, 0, 1]),
     torch.tensor([True, False, True]), (0, slice(None, None, 2))],
)  # fmt: skip
def test_indexing_matches_the_peer(index: Any) -> None:
    td = _td([3, 4])
    peer, ptd = _peer_pair(td)
    _assert_same_as_peer(td[index], ptd[index])


@pytest.mark.peer
def test_comparisons_and_where_match_the_peer() -> None:
    td = _td([3, 4])
    peer, ptd = _peer_pair(td)
    cond = make_values([3, 4], torch.bool)
    _assert_same_as_peer(td != 3, ptd != 3)
    other = td.apply(lambda t: t % 3)
    _assert_same_as_peer(td == other, ptd == _peer_pair(other)[1])
    _assert_same_as_peer(td == td["b"], ptd == ptd["b"])  # a tensor over the batch dims
    _assert_same_as_peer(td.where(cond, 0), ptd.where(cond, 0))
    _assert_same_as_peer(td.masked_fill(cond, 1), ptd.masked_fill(cond, 1))
    assert td.all() == ptd.all() and td.any() == ptd.any()
    _assert_same_as_peer(td.any(-1), ptd.any(-1))
