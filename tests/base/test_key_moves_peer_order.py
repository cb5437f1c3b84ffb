"""``rename_keys``, ``stack_tensors`` / ``cat_tensors`` and ``get_item_shape`` as the
peer runs them (fz30g, issue 27): the sources of ``rename_keys`` are removed (and the
nested collections that this empties) before its destinations are checked and written,
without renaming dims; a joined key that is also the output is written last; a key that
runs through a tensor is a ``KeyThroughTensorError`` (the peer's ``ValueError``)."""

from __future__ import annotations

import pytest
import torch

import tclass
from tclass import TensorDict
from tclass.errors import KeyNotFoundError, KeyRenameError, KeyThroughTensorError


@tclass.tensorclass
class _Inner:
    y: torch.Tensor
    z: torch.Tensor | None = None


def _td() -> TensorDict:
    return TensorDict({"a": torch.zeros(4), "c": torch.ones(4)}, batch_size=[4])


def test_rename_onto_a_parent_emptied_by_the_renaming() -> None:
    """``{("zz", "a"): "zz"}`` where ``zz`` holds only an empty collection ``a``: the
    removal of ``a`` empties ``zz``, which goes, so ``zz`` is free (programs 15,982,189
    and 16,012,624 of methods,features,entries,records L8)."""
    td = _td()
    td["zz", "a"] = TensorDict({}, batch_size=[4])
    out = td.rename_keys({("zz", "a"): "zz"})
    assert list(out.keys(True)) == ["a", "c", "zz"]
    assert isinstance(out["zz"], TensorDict) and out["zz"].is_empty()
    assert list(td.keys(True)) == ["a", "c", ("zz", "a"), "zz"]  # not changed
    # a lazy stack's members alike (15,983,217 L12)
    stacked = tclass.lazy_stack([td, td.clone()], 0)
    assert list(stacked.rename_keys({("zz", "a"): "zz"}).keys(True)) == ["a", "c", "zz"]


def test_rename_onto_a_parent_that_keeps_an_entry_is_refused() -> None:
    td = _td()
    td["zz", "a"] = TensorDict({}, batch_size=[4])
    td["zz", "b"] = torch.ones(4)
    with pytest.raises(KeyRenameError, match="already an entry") as info:
        td.rename_keys({("zz", "a"): "zz"})
    assert isinstance(info.value, ValueError)


def test_rename_into_an_emptied_parent_makes_it_again_last() -> None:
    """``{("n", "a"): ("n", "w")}`` of an ``n`` holding only ``a``: ``n`` is emptied and
    removed, then made again at the end of the keys (program 15,953,636 L12 of
    methods,index,shape,combine)."""
    td = TensorDict({"n": {"a": torch.zeros(2)}, "d": torch.ones(2)}, batch_size=[2])
    out = td.rename_keys({("n", "a"): ("n", "w")})
    assert list(out.keys(True)) == ["d", ("n", "w"), "n"]
    assert torch.equal(out["n", "w"], torch.zeros(2))


def test_rename_keeps_a_record_the_renaming_empties() -> None:
    """A nested record is never removed (its ``None`` fields are values in the peer)."""
    td = TensorDict({"a": torch.zeros(3), "r": _Inner(y=torch.ones(3), batch_size=[3])}, [3])
    with pytest.raises(KeyRenameError):
        td.rename_keys({("r", "y"): "r"})
    out = td.rename_keys({("r", "y"): ("r", "z")})
    assert isinstance(out["r"], _Inner) and out["r"].y is None
    assert torch.equal(out["r"].z, torch.ones(3))


def test_rename_keeps_the_dim_names() -> None:
    """A named nested collection moved under an unnamed root leaves the root's names
    as they are (program 16,002,220 L8 of methods,index,shape,combine)."""
    td = TensorDict({"a": torch.zeros(1)}, batch_size=[1])
    td.set("m", TensorDict({"b": torch.zeros(1)}, batch_size=[1]))
    td.get("m").names = ["i"]
    assert td.names == [None]
    out = td.rename_keys({"m": "renamed"})
    assert out.names == [None]
    assert out["renamed"].names == ["i"]


def test_rename_destination_through_a_leaf() -> None:
    td = TensorDict({"a": torch.zeros(3), "n": {"a": torch.zeros(3)}}, batch_size=[3])
    with pytest.raises(KeyThroughTensorError) as info:
        td.rename_keys({"a": ("n", "a", "q")})
    assert isinstance(info.value, ValueError)
    td.set_non_tensor(("v",), "text")
    with pytest.raises(KeyRenameError, match="a Python value"):
        td.rename_keys({"a": ("v", "q")})


@pytest.mark.parametrize("join", ["stack_tensors", "cat_tensors"])
def test_joined_output_among_the_keys_comes_last(join: str) -> None:
    """``stack_tensors("a", "d", out_key="a")``: ``a`` is removed with ``d`` and written
    again, last (programs 15,951,489 L12 and 16,003,243 L12 of methods,index,shape,combine;
    nested: 16,020,247 L8 and 15,950,971 L8)."""
    td = TensorDict(
        {"a": torch.zeros(2, 3), "d": torch.ones(2, 3), "b": torch.ones(2), "n": {}},
        batch_size=[2],
    )
    td["n", "x"] = torch.ones(2, 3)
    td["n", "y"] = torch.ones(2, 3)
    out = getattr(td, join)("a", "d", out_key="a", dim=-1)
    assert out is td
    assert list(td.keys()) == ["b", "n", "a"]
    td["n", "z"] = torch.ones(2)
    getattr(td, join)(("n", "x"), ("n", "y"), out_key=("n", "x"), dim=-1)
    assert list(td["n"].keys()) == ["z", "x"]
    kept = TensorDict({"a": torch.zeros(2, 1), "d": torch.ones(2, 1)}, batch_size=[2])
    getattr(kept, join)("a", "d", out_key="a", dim=-1, keep_entries=True)
    assert list(kept.keys()) == ["a", "d"]  # in place: not moved


def test_joined_output_failing_changes_nothing() -> None:
    td = TensorDict({"a": torch.zeros(2, 3), "d": torch.ones(2, 3)}, batch_size=[2])
    with pytest.raises(ValueError):
        td.cat_tensors("a", "d", out_key="a", dim=0)  # [4, 3] does not fit the batch
    assert list(td.keys()) == ["a", "d"]


def test_keys_through_a_tensor() -> None:
    """``get_item_shape`` / ``stack_tensors`` / ``cat_tensors`` of ``("zz", "a")`` where
    ``zz`` is a tensor: a ``KeyThroughTensorError``, a ``ValueError`` as the peer's
    (programs 15,952,683 and 15,950,689 of methods,features,entries,records L8); a key
    missing under a collection or a Python value stays a ``KeyNotFoundError``."""
    td = TensorDict({"zz": torch.zeros(2, 3), "n": {"a": torch.zeros(2)}}, batch_size=[2])
    td.set_non_tensor("s", "text")
    with pytest.raises(KeyThroughTensorError, match=r"\('zz',\) is a tensor") as info:
        td.get_item_shape(("zz", "a"))
    assert isinstance(info.value, ValueError) and isinstance(info.value, KeyError)
    for join in ("stack_tensors", "cat_tensors"):
        with pytest.raises(KeyThroughTensorError):
            getattr(td, join)(("n", "a"), ("zz", "a"), out_key="out")
        assert list(td.keys(True)) == ["zz", ("n", "a"), "n", "s"]
    for key in (("n", "b"), ("s", "a"), "q"):
        with pytest.raises(KeyNotFoundError):
            td.get_item_shape(key)
