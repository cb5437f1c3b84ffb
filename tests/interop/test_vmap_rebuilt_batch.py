"""The batch size of collections rebuilt under ``torch.vmap``: a collection without
batched entries that vmap gives back gains the mapped dim (at ``out_dims``), and a node
another transform rebuilds under vmap (``jacrev``'s Jacobians) keeps its own batch size,
as the peer's."""

from __future__ import annotations

import pytest
import torch

from tclass import NonTensorData, TensorDict, tensorclass
from tclass.errors import DimError


@tensorclass
class _Pair:
    x: torch.Tensor
    y: torch.Tensor


def _td() -> TensorDict:
    return TensorDict(a=torch.randn(4, 3), b=torch.arange(4.0), batch_size=[4])


def test_an_empty_collection_returned_gains_the_mapped_dim() -> None:
    out = torch.vmap(lambda t: t.empty())(_td())
    assert type(out) is TensorDict and out.batch_size == (4,) and not list(out.keys())
    made = torch.vmap(lambda t: TensorDict(batch_size=[2]))(_td())
    assert made.batch_size == (4, 2)


def test_out_dims_places_it_and_nested_vmaps_add_both() -> None:
    made = torch.vmap(lambda t: TensorDict(batch_size=[2]), out_dims=1)(_td())
    assert made.batch_size == (2, 4)
    last = torch.vmap(lambda t: TensorDict(batch_size=[2]), out_dims=-1)(_td())
    assert last.batch_size == (2, 4)
    td = TensorDict(a=torch.randn(4, 5, 3), batch_size=[4, 5])
    nested = torch.vmap(torch.vmap(lambda t: t.empty()))(td)
    assert nested.batch_size == (4, 5)


def test_out_dims_per_output_place_each_empty_collections_mapped_dim() -> None:
    # Each collection gets its entry of a tuple/list/dict out_dims, as the peer's (the
    # mapped dim went at 0 whatever the entry said); nested empty ones get their parent's.
    x = torch.zeros(2, 5)
    made, t = torch.vmap(lambda t: (TensorDict(batch_size=[3]), t), in_dims=1, out_dims=(1, 0))(x)
    assert made.batch_size == (3, 5) and t.shape == (5, 2)
    t, made = torch.vmap(lambda t: (t, TensorDict(batch_size=[3])), in_dims=1, out_dims=(1, 0))(x)
    assert made.batch_size == (5, 3) and t.shape == (2, 5)
    pair = torch.vmap(
        lambda t: [TensorDict(batch_size=[3]), TensorDict(batch_size=[3])],
        in_dims=1,
        out_dims=[1, 0],
    )(x)
    assert [tuple(td.batch_size) for td in pair] == [(3, 5), (5, 3)]
    named = torch.vmap(
        lambda t: {"a": TensorDict(batch_size=[3]), "b": t}, in_dims=1, out_dims={"b": 0, "a": 1}
    )(x)
    assert named["a"].batch_size == (3, 5)
    outer = TensorDict({"n": TensorDict(batch_size=[3])}, batch_size=[3])
    nested, _ = torch.vmap(lambda t: (outer.clone(), t), in_dims=1, out_dims=(1, 0))(x)
    assert nested.batch_size == (3, 5) and nested["n"].batch_size == (3, 5)
    record, _ = torch.vmap(
        lambda t: (_Pair(None, None, batch_size=[3]), t), in_dims=1, out_dims=(1, 0)
    )(x)
    assert type(record) is _Pair and record.batch_size == (3, 5)


def test_an_empty_record_returned_gains_the_mapped_dim() -> None:
    pair = _Pair(x=torch.randn(4, 3), y=torch.arange(4.0), batch_size=[4])
    out = torch.vmap(lambda t: t.empty())(pair)
    assert type(out) is _Pair and out.batch_size == (4,)


def test_jacrev_under_vmap_keeps_the_jacobians_batch_size() -> None:
    params = TensorDict(w=torch.randn(3, 2), b=torch.randn(2))
    x = torch.randn(5, 3)

    def out(p: TensorDict, row: torch.Tensor) -> torch.Tensor:
        return row @ p["w"] + p["b"]

    jac = torch.vmap(torch.func.jacrev(out), in_dims=(None, 0))(params, x)
    assert type(jac) is TensorDict and jac.batch_size == (5,)
    assert jac["w"].shape == (5, 2, 3, 2) and jac["b"].shape == (5, 2, 2)
    assert torch.equal(jac["b"], torch.eye(2).expand(5, 2, 2))
    for i in range(5):  # d out_j / d w_kl = x_k [j == l]
        expected = torch.einsum("k,jl->jkl", x[i], torch.eye(2))
        torch.testing.assert_close(jac["w"][i], expected)


# torch's jacfwd scripts a helper with torch.jit.script, which warns in torch >= 2.10
@pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")
def test_jacfwd_under_vmap_too() -> None:
    params = TensorDict(w=torch.randn(3, 2))
    x = torch.randn(5, 3)
    jac = torch.vmap(torch.func.jacfwd(lambda p, r: r @ p["w"]), in_dims=(None, 0))(params, x)
    assert jac.batch_size == (5,) and jac["w"].shape == (5, 2, 3, 2)


def test_an_empty_nested_collection_loses_the_mapped_dim_inside() -> None:
    td = TensorDict(x=torch.randn(4, 3), e=TensorDict(batch_size=[4]), batch_size=[4])
    seen: list[tuple[int, ...]] = []

    def fill(t: TensorDict) -> TensorDict:
        seen.append(tuple(t["e"].batch_size))
        t = t.clone()
        t["e", "z"] = t["x"] * 2
        return t

    out = torch.vmap(fill)(td)
    assert seen == [()]
    assert out["e"].batch_size == (4,)
    torch.testing.assert_close(out["e", "z"], td["x"] * 2)


def test_deeper_empty_ones_and_another_mapped_dim() -> None:
    inner = TensorDict(d=TensorDict(batch_size=[4, 5, 2]), batch_size=[4, 5])
    td = TensorDict(x=torch.randn(4, 5), e=inner, batch_size=[4, 5])
    seen: list[tuple[tuple[int, ...], tuple[int, ...]]] = []

    def look(t: TensorDict) -> torch.Tensor:
        seen.append((tuple(t["e"].batch_size), tuple(t["e", "d"].batch_size)))
        return t["x"]

    torch.vmap(look, in_dims=1)(td)
    assert seen == [((4,), (4, 2))]


def test_empty_nested_ones_with_python_values_or_locked() -> None:
    inner = TensorDict(s="hi", n=TensorDict(batch_size=[4]), batch_size=[4])
    td = TensorDict(x=torch.randn(4, 3), e=inner, batch_size=[4]).lock_()
    seen: list[tuple[tuple[int, ...], str]] = []

    def look(t: TensorDict) -> TensorDict:
        seen.append((tuple(t["e", "n"].batch_size), t["e", "s"]))
        return t

    out = torch.vmap(look)(td)
    assert seen == [((), "hi")]
    assert out.is_locked and out["e"].batch_size == (4,) and out["e", "s"] == "hi"


def test_out_dims_past_the_batch_dims_is_refused() -> None:
    td = TensorDict(a=torch.randn(4, 5, 3), batch_size=[4, 5])
    with pytest.raises(DimError, match=r"out_dims=-1 puts the mapped dim at dim 2.*\[5\]"):
        torch.vmap(lambda t: t * 1, out_dims=-1)(td)  # would give batch [5, 3]
    out = torch.vmap(lambda t: t * 1, out_dims=1)(td)
    assert out.batch_size == (5, 4)
    torch.testing.assert_close(out["a"], td["a"].transpose(0, 1))
    bare = TensorDict(a=torch.randn(4, 5), batch_size=[4, 5])
    last = torch.vmap(lambda t: t * 1, out_dims=-1)(bare)  # dim 1: a batch dim of every entry
    assert last.batch_size == (5, 4)
    torch.testing.assert_close(last["a"], bare["a"].T)


def test_in_dims_past_the_batch_dims_maps_that_dim_of_every_tensor() -> None:
    nested = TensorDict(c=torch.ones(4, 5, 3), batch_size=[4, 5])
    td = TensorDict(a=torch.arange(20.0).view(4, 5), n=nested, batch_size=[4])
    seen: list[tuple[tuple[int, ...], tuple[int, ...]]] = []

    def look(t: TensorDict) -> TensorDict:
        seen.append((tuple(t.batch_size), tuple(t["n"].batch_size)))
        return t

    out = torch.vmap(look, in_dims=1)(td)  # as the peer: the batch size stays inside
    assert seen == [((4,), (4,))]
    assert out.batch_size == (5, 4) and out["n"].batch_size == (5, 4)
    assert torch.equal(out["a"], td["a"].T)
    sums = torch.vmap(lambda t: t["a"].sum(), in_dims=1)(td)
    assert torch.equal(sums, td["a"].sum(0))
    with pytest.raises(DimError, match="non-negative"):  # the peer maps batch dim 0 there
        torch.vmap(lambda t: t["a"].sum(), in_dims=-1)(
            TensorDict(a=torch.randn(4, 5), batch_size=[4])
        )


def test_a_nested_collection_of_python_values_loses_the_mapped_dim_inside() -> None:
    # A nested collection holding only Python values (and an empty one below it) had no
    # tensor for vmap to map: it takes the mapped dim off, values included (was a batch
    # dimension mismatch on the way in), and gets it back on the way out.
    td = TensorDict(
        a=torch.randn(4, 3),
        data={"s": NonTensorData("x"), "deep": {"t": NonTensorData("y"), "e": {}}},
        batch_size=[4, 3],
    )
    seen: list[tuple[int, ...]] = []

    def body(t: TensorDict) -> TensorDict:
        for key in ("data", ("data", "s"), ("data", "deep"), ("data", "deep", "e")):
            seen.append(tuple(t.get(key).batch_size))
        assert t["data", "s"] == "x" and t["data", "deep", "t"] == "y"
        return t

    out = torch.vmap(body)(td)
    assert seen == [(3,)] * 4
    assert out.get(("data", "s")).batch_size == (4, 3) and out["data", "deep", "t"] == "y"
    assert td.get(("data", "s")).batch_size == (4, 3)  # the input's node is left as it was
    seen.clear()
    assert torch.vmap(body, (1,))(td).batch_size == (3, 4)
    assert seen == [(4,)] * 4
