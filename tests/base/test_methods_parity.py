"""Methods the differential fuzzer's ``methods`` family drove apart from the peer (fz27b):
``rename_()`` of no batch dims, ``rename_keys`` of a key to itself, math with
``default=`` on lazy stacks, pairing past a nested collection holding nothing, and
``masked_select``'s new dim in nested collections."""

from __future__ import annotations

import pytest
import torch

import tclass
from tclass import LazyStackedTensorDict, TensorDict


def test_rename_in_place_without_names_and_without_batch_dims_is_a_no_op() -> None:
    """As the peer: no dim to name, so ``rename_()`` returns the collection unchanged
    (program 15,020,103 of methods,index,shape,combine); ``rename()`` still raises."""
    td = TensorDict({"c": torch.ones(2)}, [])
    assert td.rename_() is td and td.names == []
    assert tclass.lazy_stack([td], 0)[-1].rename_().names == []


def test_rename_keys_to_itself_keeps_the_key_order() -> None:
    """``{k: k}`` moves nothing, as the peer's (program 15,030,098): the key stays where
    it was, also beside a real renaming."""
    td = TensorDict({"n": {"b": torch.ones(2)}, "c": torch.zeros(2), "b": torch.ones(2)}, [2])
    assert list(td.rename_keys({"c": "c"}, strict=False).keys()) == ["n", "c", "b"]
    out = td.rename_keys({"c": "c", ("n", "b"): ("n", "b")})
    assert list(out.keys(True)) == [("n", "b"), "n", "c", "b"]
    assert list(td.rename_keys({"c": "c", "b": "q"}).keys()) == ["n", "c", "q"]


@pytest.mark.parametrize("lib", ["tclass", "tensordict"])
def test_rename_keys_onto_a_nested_collection_emptied_by_it(lib: str) -> None:
    """A destination that is a nested collection whose every leaf (a Python value too)
    is renamed away is written over, as the peer's (program 15,910,451 of
    methods,features,entries,records L12, fz29g); one that keeps a leaf is refused."""
    module = tclass if lib == "tclass" else pytest.importorskip("tensordict")
    td = module.TensorDict({"c": torch.ones(1), "zz": {"y": {"a": torch.full((1,), 5.0)}}}, [1])
    out = td.rename_keys({("zz", "y", "a"): "zz"})
    assert list(out.keys(True)) == ["c", "zz"] and out["zz"].tolist() == [5.0]
    assert list(td.rename_keys({("zz", "y", "a"): ("zz", "y")}).keys(True, True)) == [
        "c",
        ("zz", "y"),
    ]
    td.set(("zz", "y", "s"), "text")
    with pytest.raises(ValueError, match="not renamed away"):
        td.rename_keys({("zz", "y", "a"): "zz"})
    both = td.rename_keys({("zz", "y", "a"): "zz", ("zz", "y", "s"): "s"})
    assert list(both.keys()) == ["c", "zz", "s"] and both["s"] == "text"
    valued = module.TensorDict({"c": torch.ones(1)}, [1])
    valued.set(("zz", "a"), "")
    assert list(valued.rename_keys({("zz", "a"): "zz"}).keys()) == ["c", "zz"]
    with pytest.raises(ValueError, match="not renamed away"):
        valued.rename_keys({"c": "zz"})


@pytest.mark.parametrize("lib", ["tclass", "tensordict"])
def test_rename_keys_onto_a_nested_record_with_a_none_field(lib: str) -> None:
    """A nested record whose field is ``None`` is not emptied by renaming its other
    fields away: the peer's record holds the ``None``, and refuses the destination
    (program 15,950,972 of methods,features,entries,records L8); one whose every field
    is set and renamed away is a collection emptied by it, as a TensorDict's."""
    module = tclass if lib == "tclass" else pytest.importorskip("tensordict")

    @module.tensorclass  # type: ignore[misc]
    class Inner:
        y: torch.Tensor
        z: torch.Tensor | None = None

    @module.tensorclass  # type: ignore[misc]
    class Outer:
        x: torch.Tensor
        inner: Inner

    rec = Outer(x=torch.ones(1), inner=Inner(y=torch.ones(1), batch_size=[1]), batch_size=[1])
    with pytest.raises(ValueError, match="not renamed away"):
        rec.rename_keys({("inner", "y"): "inner"}, strict=False)
    with pytest.raises(ValueError, match="not renamed away"):
        rec.to_tensordict().set(("inner", "s"), torch.ones(1)).rename_keys(
            {("inner", "y"): "inner"}
        )


def _lazy() -> LazyStackedTensorDict:
    a = TensorDict({"a": torch.tensor([2.0]), "b": torch.tensor([[1.0, 2.0]])}, [])
    b = TensorDict({"a": torch.tensor([3.0]), "b": torch.tensor([[3.0, 4.0]])}, [])
    return tclass.lazy_stack([a, b], 0)


def test_math_with_default_keeps_a_lazy_stack_lazy() -> None:
    """``pow(other, default=...)`` (and the other binary ops) of a lazy stack pairs the
    members with ``other``'s parts: a lazy stack, as the peer's (program 15,000,255)."""
    x = _lazy()
    out = x.pow(x.clone(), default=1)
    assert isinstance(out, LazyStackedTensorDict) and out.stack_dim == 0
    assert out["a"].tolist() == [[4.0], [27.0]]
    assert out["b"].tolist() == [[[1.0, 4.0]], [[27.0, 256.0]]]
    added = x.add(x.clone().set("c", torch.ones(2)), default=1)
    assert isinstance(added, LazyStackedTensorDict)
    assert added["c"].tolist() == [2.0, 2.0] and added["a"].tolist() == [[4.0], [6.0]]
    # members with different keys: each member completed on its own, none dropped
    ragged = tclass.lazy_stack([x[0], x[1].exclude("a")], 0)
    out = ragged.pow(ragged.clone(), default=2)
    assert isinstance(out, LazyStackedTensorDict)
    assert out.tensordicts[0]["a"].tolist() == [4.0]
    assert "a" not in out.tensordicts[1].keys()
    assert out.tensordicts[1]["b"].tolist() == [[27.0, 256.0]]


def test_a_nested_collection_holding_nothing_does_not_count_in_the_keys() -> None:
    """As the peer's math pairs the leaves: ``lerp`` by a weight whose arithmetic dropped
    the empty nested collection answers (program 15,030,545), keeping ``x``'s."""
    x = TensorDict({"n": TensorDict({}, []), "d": torch.ones(())}, [])
    weight = x.apply(torch.ones_like) * 0.5
    assert list(weight.keys()) == ["d"]
    out = x.lerp(x.apply(torch.zeros_like), weight)
    assert list(out.keys()) == ["n", "d"] and out["d"].item() == 0.5
    assert (x + x.exclude("n"))["d"].item() == 2.0
    assert (x.exclude("n") + x)["d"].item() == 2.0


def test_masked_select_unnames_the_new_dim_in_nested_collections() -> None:
    """The one new dim is unnamed, in the nested collections too (their first dim is
    that dim), ``inplace=True`` too (program 15,000,278); their own dims keep theirs."""
    mask = torch.tensor([True, False, True, True])
    for inplace in (False, True):
        td = TensorDict(
            {
                "b": torch.ones(4, 2),
                "m": TensorDict({"a": torch.ones(4, 2)}, [4, 2], names=["i", "j"]),
            },
            [4],
            names=["i"],
        )
        out = td.masked_select(mask, inplace=inplace)
        assert out.batch_size == torch.Size([3])
        assert out.names == [None] and out["m"].names == [None, "j"]


def test_math_with_default_keeps_the_lock() -> None:
    """``default=`` computes on key-aligned copies; the result is locked when the
    collection is, as without ``default`` and as the peer's (a shared record, a locked
    TensorDict, a locked lazy stack: program 15,826,339 of methods,index,shape,combine
    L12), and unlocked when it is not."""

    @tclass.tensorclass
    class _Pair:
        a: torch.Tensor
        inner: TensorDict

    pair = _Pair(a=torch.ones(3), inner=TensorDict(b=torch.ones(3), batch_size=[3]), batch_size=[3])
    shared = pair.share_memory_()
    td = TensorDict({"a": torch.ones(3), "n": {"b": torch.ones(3)}}, [3])
    other = TensorDict({"a": torch.ones(3), "c": torch.ones(3)}, [3])
    for locked, operand in ((shared, shared.clone()), (td.clone().lock_(), other)):
        for default in (1, "intersection"):
            assert locked.pow(operand, default=default).is_locked
    assert shared.pow(shared.clone()).is_locked  # as without default
    lazy = _lazy().lock_()
    assert lazy.add(lazy.clone(), default=1).is_locked
    assert not td.add(other, default=0).is_locked and "c" in td.add(other, default=0).keys()
