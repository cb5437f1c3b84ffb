"""Named batch dims: ``names=``, ``names``, ``refine_names``, ``rename``, ``rename_``.

Names follow the peer's rules: they travel with the dims through indexing, permutes,
unsqueeze/squeeze, stacking and the other shape ops; ops that merge or invent dims
(``reshape`` to another shape, ``flatten``, boolean masks over several dims) leave those
dims unnamed; conflicting names are an error. Nested collections share their parent's
names for the parent's dims, and saved folders keep them (``_names`` in ``meta.json``,
read by the peer too).
"""

from __future__ import annotations

import json
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import pytest
import torch

import tclass
from tclass import LazyStackedTensorDict, TensorClass, TensorDict, errors


class Frame(TensorClass):
    obs: torch.Tensor


def _td() -> TensorDict:
    return TensorDict(
        {"a": torch.zeros(2, 3, 4), "b": TensorDict({"c": torch.zeros(2, 3, 5)}, [2, 3, 5])},
        [2, 3],
        names=["x", "y"],
    )


def test_names_are_stored_and_read() -> None:
    td = _td()
    assert td.names == ["x", "y"]
    assert td["b"].names == ["x", "y", None]  # nested: the parent's names, then its own
    assert TensorDict({}, [2, 3]).names == [None, None]
    assert TensorDict({}, [2, 3], names=["x", None]).names == ["x", None]
    assert TensorDict({}, [2, 3], names=[None, None]).names == [None, None]


def test_invalid_names_are_refused() -> None:
    with pytest.raises(ValueError):
        TensorDict({}, [2, 3], names=["x", "x"])
    with pytest.raises(ValueError):
        TensorDict({}, [2, 3], names=["x"])
    with pytest.raises(ValueError):
        TensorDict({}, [], names=["x"])  # no dim to name: nothing is dropped silently
    with pytest.raises(TypeError):
        TensorDict({}, [2], names=[{}])  # not hashable (an int is a name, as in the peer)
    td = _td()
    with pytest.raises(ValueError):
        td.names = ["x"]
    assert td.names == ["x", "y"]


def test_a_string_is_one_name_and_its_count_error_says_so() -> None:
    """nu26c: ``names="time"`` names one dim (the peer takes each letter as a name); for
    more dims, the count error says that a str is one name and to pass a list."""
    assert TensorDict({}, [2], names="time").names == ["time"]
    td = TensorDict({}, [2, 3])
    with pytest.raises(errors.DimNameCountError) as info:
        td.names = "xy"
    assert isinstance(info.value, ValueError)  # the peer's count error is a ValueError
    assert "in a list (names='xy' is one name: a str names one dim)" in str(info.value)
    assert td.names == [None, None]


def test_the_names_setter_reaches_nested_collections() -> None:
    td = _td()
    td.names = ["u", "v"]
    assert td.names == ["u", "v"] and td["b"].names == ["u", "v", None]
    td.names = None
    assert td.names == [None, None] and td["b"].names == [None, None, None]


def _nested_named() -> TensorDict:
    inner = TensorDict({"x": torch.zeros(3, 4)}, [3, 4], names=["c", "d"])
    return TensorDict({"inner": inner}, [3], names=["c"])


@pytest.mark.parametrize(
    "rename",
    [
        lambda td: setattr(td, "names", ["d"]),
        lambda td: td.rename_("d"),
        lambda td: td.rename(c="d"),
        lambda td: setattr(tclass.lazy_stack([td, td], -1), "names", ["c", "d"]),
        lambda td: setattr(tclass.lazy_stack([td, td], 0), "names", ["d", "c"]),
    ],
    ids=["setter", "rename_", "rename", "lazy-new-dim", "lazy-stack-dim"],
)
def test_names_that_repeat_in_a_nested_collection_are_refused(
    rename: Callable[[TensorDict], Any],
) -> None:
    # The nested collection names its own dim "d": naming a shared dim "d" too would
    # repeat it there (the peer: a ValueError, nothing renamed).
    td = _nested_named()
    with pytest.raises(errors.DimNameError, match=r"key \('inner',\).*non-unique") as info:
        rename(td)
    assert isinstance(info.value, ValueError)
    assert td.names == ["c"] and td["inner"].names == ["c", "d"]


def test_a_lazy_stack_takes_names_its_nested_collections_do_not_use() -> None:
    td = _nested_named()
    stack = tclass.lazy_stack([td, td], -1)
    assert stack["inner"].names == ["c", None, "d"]
    stack.names = ["c", "e"]
    assert stack.names == ["c", "e"] and stack["inner"].names == ["c", "e", "d"]
    assert stack[0]["inner"].names == stack["inner"][0].names == ["e", "d"]


def test_naming_a_ragged_lazy_stack_reads_no_dense_tensor() -> None:
    """Found by the differential fuzzer: the check of nested names read every entry of
    the stack, and a ragged one has no dense value (a HeterogeneousEntryError)."""
    inner = TensorDict({"b": torch.zeros(2)}, [])
    members = [TensorDict({"d": torch.zeros(n), "m": inner.clone()}, []) for n in (3, 2)]
    stack = tclass.lazy_stack(members)
    assert stack.refine_names("i") is stack and stack.names == ["i"]
    stack.names = ["j"]
    assert stack["m"].names == ["j"] and stack.rename("k").names == ["k"]


def test_refine_names() -> None:
    assert TensorDict({}, [2, 3, 4]).refine_names("a", None, "c").names == ["a", None, "c"]
    assert TensorDict({}, [2, 3, 4]).refine_names(..., "c").names == [None, None, "c"]
    assert TensorDict({}, [2, 3, 4]).refine_names("a", ..., "c").names == ["a", None, "c"]
    td = TensorDict({"n": TensorDict({}, [2, 3, 4, 5])}, [2, 3, 4])
    assert td.refine_names("a", ...) is td  # in place, as in the peer
    assert td.names == ["a", None, None] and td["n"].names == ["a", None, None, None]
    named = _td()
    assert named.refine_names("x", ...).names == ["x", "y"]
    with pytest.raises(RuntimeError):
        named.refine_names("x", "w")
    # A named dim listed as None is an error, as in torch and the peer (None lifts nothing).
    for requested in [("x", None), (None, None), (..., None)]:
        with pytest.raises(RuntimeError, match="cannot become None"):
            named.refine_names(*requested)
    assert named.names == ["x", "y"]


def test_refine_names_with_more_names_than_dims_is_an_index_error_as_the_peer() -> None:
    # Found by the differential fuzzer: the peer raises IndexError there (ValueError for
    # too few names), and code written for it catches that.
    for batch, requested in [([], ["i"]), ([2], ["a", "b"]), ([2], ["a", ..., "b"])]:
        with pytest.raises(IndexError, match="more") as info:
            TensorDict({}, batch).refine_names(*requested)
        assert isinstance(info.value, errors.DimNameError)
    with pytest.raises(ValueError) as too_few:
        TensorDict({}, [2, 3]).refine_names("a")
    assert not isinstance(too_few.value, IndexError)


def test_rename_and_rename_() -> None:
    td = _td()
    assert td.rename("p", "q").names == ["p", "q"] and td.names == ["x", "y"]
    assert td.rename(x="p").names == ["p", "y"]
    assert td.rename(None).names == [None, None]
    with pytest.raises(ValueError):
        td.rename(z="w")
    assert td.rename_("p", "q") is td
    assert td.names == ["p", "q"] and td["b"].names == ["p", "q", None]
    with pytest.raises(ValueError):
        td.rename_("p", "p")


NAME_RULES: list[tuple[str, Callable[[TensorDict], Any], list[str | None]]] = [
    ("int", lambda t: t[0], ["y"]),
    ("slice", lambda t: t[:, 1:], ["x", "y"]),
    ("none", lambda t: t[None], [None, "x", "y"]),
    ("tensor", lambda t: t[torch.tensor([0, 1])], ["x", "y"]),
    ("list", lambda t: t[[0, 1]], ["x", "y"]),
    ("mask", lambda t: t[torch.tensor([True, False])], ["x", "y"]),
    ("mask2d", lambda t: t[torch.ones(2, 3, dtype=torch.bool)], [None]),
    # An integer index of several dims gives unnamed dims (all of them, as the peer).
    ("tensor2d", lambda t: t[:, torch.tensor([[0, 1], [1, 2]])], ["x", None, None]),
    ("tensor2d_first", lambda t: t[torch.tensor([[0, 1], [1, 0]])], [None, None, "y"]),
    ("array2d", lambda t: t[..., np.array([[0, 1], [1, 2]])], ["x", None, None]),
    ("ellipsis", lambda t: t[..., 0], ["x"]),
    ("reshape", lambda t: t.reshape(6), [None]),
    ("reshape_same", lambda t: t.reshape(2, 3), ["x", "y"]),
    ("view", lambda t: t.view(6), [None]),
    ("flatten", lambda t: t.flatten(), [None]),
    ("unflatten", lambda t: t.unflatten(1, (3, 1)), ["x", None, "y"]),
    ("permute", lambda t: t.permute(1, 0), ["y", "x"]),
    ("transpose", lambda t: t.transpose(1, 0), ["y", "x"]),
    ("unsqueeze", lambda t: t.unsqueeze(0), [None, "x", "y"]),
    ("unsqueeze_last", lambda t: t.unsqueeze(-1), ["x", "y", None]),
    ("squeeze", lambda t: t.unsqueeze(0).squeeze(0), ["x", "y"]),
    ("expand", lambda t: t.expand(5, 2, 3), [None, "x", "y"]),
    ("split", lambda t: t.split(1)[0], ["x", "y"]),
    ("unbind", lambda t: t.unbind(1)[0], ["x"]),
    ("chunk", lambda t: t.chunk(2, 1)[0], ["x", "y"]),
    ("clone", lambda t: t.clone(), ["x", "y"]),
    ("apply", lambda t: t.apply(lambda v: v + 1), ["x", "y"]),
    ("to", lambda t: t.to("cpu"), ["x", "y"]),
    ("contiguous", lambda t: t.contiguous(), ["x", "y"]),
    ("stack", lambda t: torch.stack([t, t]), [None, "x", "y"]),
    ("stack1", lambda t: torch.stack([t, t], 1), ["x", None, "y"]),
    ("cat", lambda t: torch.cat([t, t]), ["x", "y"]),
    ("gather", lambda t: t.gather(1, torch.zeros(2, 2, dtype=torch.long)), ["x", "y"]),
    ("masked_select", lambda t: t.masked_select(torch.ones(2, 3, dtype=torch.bool)), [None]),
    ("flip", lambda t: t.flip(0), ["x", "y"]),
    ("movedim", lambda t: t.movedim(0, 1), ["y", "x"]),
    ("repeat", lambda t: t.repeat(1, 2), ["x", "y"]),
    ("rot90", lambda t: t.rot90(), ["y", "x"]),
    ("narrow", lambda t: t.narrow(0, 0, 1), ["x", "y"]),
    ("pad", lambda t: tclass.pad(t, [0, 1]), ["x", "y"]),
    ("empty", lambda t: t.empty(), ["x", "y"]),
    ("select", lambda t: t.select("a"), ["x", "y"]),
    ("exclude", lambda t: t.exclude("a"), ["x", "y"]),
    ("pickle", lambda t: pickle.loads(pickle.dumps(t)), ["x", "y"]),
    ("to_lazystack", lambda t: t.to_lazystack(0), [None, "y"]),
]


@pytest.mark.parametrize(("name", "op", "expected"), NAME_RULES, ids=[n for n, _, _ in NAME_RULES])
def test_names_through_operations(
    name: str, op: Callable[[TensorDict], Any], expected: list[str | None]
) -> None:
    assert op(_td()).names == expected, name


@pytest.mark.peer
@pytest.mark.parametrize(("name", "op", "expected"), NAME_RULES, ids=[n for n, _, _ in NAME_RULES])
def test_name_rules_are_the_peers(
    name: str, op: Callable[[Any], Any], expected: list[str | None]
) -> None:
    peer = pytest.importorskip("tensordict")
    if name == "pad":
        op = lambda t: peer.pad(t, [0, 1])  # noqa: E731
    theirs = peer.TensorDict(
        {"a": torch.zeros(2, 3, 4), "b": peer.TensorDict({"c": torch.zeros(2, 3, 5)}, [2, 3, 5])},
        [2, 3],
        names=["x", "y"],
    )
    assert op(theirs).names == expected, name


def test_masked_select_leaves_its_new_dim_unnamed_with_python_values_too() -> None:
    # deliberate (README "checked-as-torch"): the peer keeps a one-dim batch's name when
    # a Python value is held, and drops it otherwise; tclass's new dim is always unnamed
    mask = torch.tensor([True, False, True])
    for entries in ({"a": torch.zeros(3)}, {"a": torch.zeros(3), "s": "x"}):
        td = TensorDict(entries, [3], names=["j"])
        picked = td.masked_select(mask)
        assert picked.names == [None] and picked.batch_size == (2,) and td.names == ["j"]
    assert td[mask].names == ["j"]  # indexing with the mask keeps the dim, and its name


def test_stacking_collections_with_different_names_drops_them() -> None:
    td = _td()
    assert torch.stack([td, td.rename("p", "q")]).names == [None, None, None]
    assert torch.cat([td, td.rename("p", "q")]).names == ["x", "y"]


def test_setting_a_nested_collection_checks_its_names() -> None:
    td = _td()
    same = TensorDict({"c": torch.zeros(2, 3)}, [2, 3], names=["x", None])
    td["n"] = same
    assert td["n"].names == ["x", "y"]
    conflicting = TensorDict({"c": torch.zeros(2, 3)}, [2, 3], names=["p", "q"])
    with pytest.raises(RuntimeError):
        td["m"] = conflicting
    assert "m" not in td.keys()
    unnamed_parent = TensorDict({"other": {}}, [2, 3])
    unnamed_parent["n"] = conflicting  # an unnamed collection takes the names, as the peer's
    assert unnamed_parent.names == ["p", "q"] and unnamed_parent["n"].names == ["p", "q"]
    assert unnamed_parent["other"].names == ["p", "q"]  # nested ones share them
    with pytest.raises(errors.DimNameError, match="'m'.*do not fit"):
        unnamed_parent["m"] = TensorDict({}, [2], names=["z"])
    partly = TensorDict({}, [2])
    partly["n"] = TensorDict({}, [2, 3], names=[None, "b"])  # names beyond its dims: not taken
    assert partly.names == [None] and partly["n"].names == [None, "b"]


def test_an_empty_collection_set_under_a_longer_batch_takes_it_then_the_names() -> None:
    # Found by the differential fuzzer: as the peer, TensorDict({}, [2, 3]) set where the
    # batch is [2, 3, 4] grows to it, then takes the names (not refused for its 2 dims).
    td = TensorDict({"n": TensorDict({}, [2, 3, 4])}, [2, 3], names=["x", "y"])
    td.set(("n", "m"), TensorDict({}, [2, 3]))
    assert td["n", "m"].batch_size == (2, 3, 4) and td["n", "m"].names == ["x", "y", None]


def test_changing_the_batch_size_keeps_the_names_of_the_kept_dims() -> None:
    td = TensorDict({"a": torch.zeros(2, 3, 4)}, [2, 3], names=["x", "y"])
    td.batch_size = [2]
    assert td.names == ["x"]
    td.batch_size = [2, 3, 4]
    assert td.names == ["x", None, None]


def test_lazy_stack_names() -> None:
    members = list(_td().unbind(0))
    lazy = LazyStackedTensorDict(*members, stack_dim=0)
    assert lazy.names == [None, "y"]
    named = LazyStackedTensorDict(*members, stack_dim=0, stack_dim_name="s")
    assert named.names == ["s", "y"] and named[0].names == ["y"]
    assert named[:, 0].names == ["s"]
    assert LazyStackedTensorDict.lazy_stack(members, stack_dim_name="s").names == ["s", "y"]
    lazy.names = ["t", "u"]
    assert lazy.names == ["t", "u"] and lazy.tensordicts[0].names == ["u"]
    assert lazy.rename("p", "q").names == ["p", "q"]
    assert lazy.refine_names("t", "u").names == ["t", "u"]
    fresh = LazyStackedTensorDict(*[TensorDict({}, [3]) for _ in range(2)], stack_dim=0)
    assert fresh.refine_names("s", "y") is fresh and fresh.tensordicts[0].names == ["y"]


def test_record_names() -> None:
    frame = Frame(obs=torch.zeros(2, 3), batch_size=[2, 3], names=["x", "y"])
    assert frame.names == ["x", "y"]
    assert frame[0].names == ["y"]
    assert frame.rename("u", "v").names == ["u", "v"] and type(frame.rename("u", "v")) is Frame
    frame.names = ["p", "q"]
    assert frame.names == ["p", "q"]
    unnamed = Frame(obs=torch.zeros(2), batch_size=[2])
    assert unnamed.refine_names("t") is unnamed and unnamed.names == ["t"]
    assert Frame.from_dict({"obs": torch.zeros(2)}, batch_size=[2], names=["t"]).names == ["t"]


def test_names_are_saved_and_loaded(tmp_path: Path) -> None:
    td = _td()
    td.memmap(tmp_path / "td")
    meta = json.loads((tmp_path / "td" / "meta.json").read_text())
    assert meta["_names"] == ["x", "y"]
    nested = json.loads((tmp_path / "td" / "b" / "meta.json").read_text())
    assert nested["_names"] == ["x", "y", None]
    loaded = TensorDict.load_memmap(tmp_path / "td")
    assert loaded.names == ["x", "y"] and loaded["b"].names == ["x", "y", None]
    TensorDict({"a": torch.zeros(2)}, [2]).memmap(tmp_path / "plain")
    plain = json.loads((tmp_path / "plain" / "meta.json").read_text())
    assert "_names" not in plain  # written only when a dim has a name, as the peer
    frame = Frame(obs=torch.zeros(2, 3), batch_size=[2, 3], names=["x", "y"])
    frame.memmap(tmp_path / "frame")
    assert Frame.load_memmap(tmp_path / "frame").names == ["x", "y"]


def test_malformed_saved_names_are_an_error(tmp_path: Path) -> None:
    TensorDict({"a": torch.zeros(2)}, [2]).memmap(tmp_path / "td")
    meta_path = tmp_path / "td" / "meta.json"
    meta = json.loads(meta_path.read_text())
    meta["_names"] = ["x", "y"]  # two names for one dim
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(errors.MetadataError):
        TensorDict.load_memmap(tmp_path / "td")


@pytest.mark.peer
def test_the_peer_reads_our_names_and_we_read_its(tmp_path: Path) -> None:
    peer = pytest.importorskip("tensordict")
    _td().memmap(tmp_path / "ours")
    assert peer.TensorDict.load_memmap(tmp_path / "ours").names == ["x", "y"]
    theirs = peer.TensorDict({"a": torch.zeros(2, 3)}, [2, 3], names=["t", None])
    theirs.memmap(tmp_path / "theirs")
    assert TensorDict.load_memmap(tmp_path / "theirs").names == ["t", None]


def test_names_do_not_change_the_repr() -> None:
    assert repr(_td()) == repr(_td().rename(None))


class Shot(TensorClass):
    """A class with specs: its generated __init__ checks them inline."""

    pixels: Annotated[torch.Tensor, tclass.Spec("3 h w", torch.uint8)]
    extra: torch.Tensor | None = None


def test_records_with_specs_take_names_and_unbatched_tensors() -> None:
    pixels = torch.zeros(2, 3, 4, 4, dtype=torch.uint8)
    shot = Shot(pixels=pixels, batch_size=[2], names=["t"])
    assert shot.names == ["t"] and shot.unsqueeze(0).names == [None, "t"]
    wide = Shot(pixels=pixels, extra=tclass.UnbatchedTensor(torch.ones(5)), batch_size=[2])
    assert wide[0].extra.shape == (5,) and wide.unsqueeze(0).extra.shape == (5,)


def test_nested_dicts_take_the_parents_names() -> None:
    td = TensorDict(
        {"a": torch.ones(2, 3, 4), "n": {"b": torch.ones(2, 3)}}, [2, 3], names=["u", "v"]
    )
    assert td["n"].names == ["u", "v"]
    assert (td + 1)["n"].names == ["u", "v"] and td.exp().names == ["u", "v"]


def test_reductions_keep_the_names_of_the_dims_they_keep() -> None:
    td = TensorDict(
        {"a": torch.ones(2, 3, 4), "n": {"b": torch.ones(2, 3)}}, [2, 3], names=["u", "v"]
    )
    assert td.sum(0).names == ["v"] and td.sum(0)["n"].names == ["v"]
    assert td.mean(1).names == ["u"] and td.std(1).names == ["u"]
    assert td.sum(1, keepdim=True).names == ["u", "v"]
    assert td.max(1).values.names == ["u"]
    assert td.cumsum(1).names == ["u", "v"]


def test_comparisons_drop_the_names_as_the_peer() -> None:
    """Found by the differential fuzzer: comparing with a number or a collection gives a
    result without dim names (nested ones too); comparing with a tensor keeps them."""
    td = TensorDict({"c": torch.zeros(2), "n": {"a": torch.zeros(2)}}, [2], names=["i"])
    for result in (td > 0.5, td == td, td != 0, 0.5 <= td, td < td):
        assert result.names == [None] and result["n"].names == [None]
    for result in (td == torch.zeros(2), torch.zeros(2) < td):
        assert result.names == ["i"] and result["n"].names == ["i"]
    # A 0-d tensor is a number: no names either, as the peer.
    for result in (td != torch.tensor(1.0), torch.tensor(True) <= td, td < torch.tensor(0.0)):
        assert result.names == [None] and result["n"].names == [None]
    assert (td + 1).names == ["i"]


def test_bitwise_or_and_xor_drop_the_names_as_the_peer() -> None:
    """Found by the differential fuzzer: ``|`` and ``^`` give unnamed (and unlocked)
    results unless the operand is a tensor with dims (as comparisons); ``&`` keeps them."""
    td = TensorDict({"c": torch.ones(2, dtype=torch.bool), "n": {"a": torch.ones(2, 3).bool()}})
    td.batch_size = [2]
    td.names = ["i"]
    td.lock_()
    for result in (td | td.clone(), td ^ td, td | True, True ^ td, td | torch.tensor(False)):
        assert result.names == [None] and result["n"].names == [None]
        assert not result.is_locked
        assert result["c"].tolist() in ([True, True], [False, False])
    assert (td & td).names == ["i"]
    assert (td | torch.zeros(2, dtype=torch.bool)).names == ["i"]  # a tensor with dims keeps them
    assert td.names == ["i"] and td["n"].names[0] == "i"  # the input keeps its names


def test_a_new_batch_size_from_apply_or_tile_has_no_names_as_the_peer() -> None:
    """Found by the differential fuzzer."""
    td = TensorDict({"c": torch.zeros(2), "n": {"a": torch.zeros(2)}}, [2], names=["i"])
    for result in (
        td.apply(lambda v: v + 1, batch_size=[2]),
        td.named_apply(lambda k, v: v + 1, batch_size=[2]),
        torch.tile(td, [2]),
    ):
        assert result.names == [None] and result["n"].names == [None]
    assert td.apply(lambda v: v + 1).names == ["i"]
    stacked = tclass.lazy_stack([td, td.clone()]).apply(lambda v: v + 1, batch_size=[2, 2])
    assert stacked.names == [None, "i"]


def test_flatten_of_one_dim_drops_its_name_as_the_peer() -> None:
    """Found by the differential fuzzer."""
    td = TensorDict({"a": torch.zeros(2, 3)}, [2, 3], names=["i", "j"])
    assert td.flatten(1, 1).names == ["i", None] and td.names == ["i", "j"]
    assert torch.flatten(td[0]).names == [None]


def test_flatten_and_unflatten_name_nested_collections_as_the_peer() -> None:
    """Found by the differential fuzzer: nested collections take the result's names."""
    inner = TensorDict(y=torch.zeros(2, 3, 4, 1), batch_size=[2, 3, 4])
    nested = TensorDict(x=torch.zeros(2, 3, 4), m=inner, batch_size=[2, 3, 4])
    td = TensorDict(a=torch.zeros(2, 3, 4), n=nested, batch_size=[2, 3, 4], names=["a", "b", "c"])
    for (start, end), expected in {
        (0, 1): [None, "c"],
        (1, 1): ["a", None, "c"],
        (1, 2): ["a", None],
    }.items():
        out = td.flatten(start, end)
        assert out.names == out["n"].names == out["n", "m"].names == expected
    assert td["n"].names == td["n", "m"].names == ["a", "b", "c"]  # the input keeps its own
    pair = TensorDict(n=TensorDict(b=torch.zeros(1, 1), batch_size=[1, 1]), batch_size=[1, 1])
    pair.names = ["i", "j"]
    grown = pair.unflatten(0, [1, 1, 1, 1])
    assert grown["n"].names == grown.names == [None, None, None, "i", "j"]
    assert pair["n"].names == ["i", "j"]


def test_names_other_than_strings_are_labels_as_in_the_peer() -> None:
    # The peer takes any hashable name (td.names = [0, 1]); dims stay addressed by
    # position, so an int name is never read as a dim.
    td = TensorDict({"a": torch.zeros(2, 3, 4), "n": {"b": torch.zeros(2, 3)}}, [2, 3])
    td.names = [0, 1]
    assert td.names == [0, 1] and td["n"].names == [0, 1]
    assert td.permute(1, 0).names == [1, 0] and td[0].names == [1]
    assert td.unsqueeze(0).names == [None, 0, 1] and td.sum(dim=1).names == [0]
    assert tclass.stack([td, td], 0).names == [None, 0, 1]
    assert td.rename(0, "x").names == [0, "x"] and td.refine_names(0, ...).names == [0, 1]
    assert TensorDict({}, [2, 3], names=[1.5, None]).names == [1.5, None]
    with pytest.raises(errors.DimNameError, match="unique"):
        td.names = [1, True]  # equal names, as the peer's set of names sees them
    with pytest.raises(errors.DimNameTypeError, match="hashable") as caught:
        td.names = [[0], 1]
    assert isinstance(caught.value, TypeError)  # the peer's "unhashable type"


def test_json_scalar_names_are_saved_and_others_refused_before_writing(tmp_path: Path) -> None:
    td = TensorDict({"a": torch.zeros(2, 3), "n": {"b": torch.zeros(2, 3)}}, [2, 3])
    td.names = [0, 1.5]
    td.memmap(tmp_path / "ints")
    assert json.loads((tmp_path / "ints" / "meta.json").read_text())["_names"] == [0, 1.5]
    loaded = TensorDict.load_memmap(tmp_path / "ints")
    assert loaded.names == [0, 1.5] and loaded["n"].names == [0, 1.5]
    # The peer writes a tuple name as a list, then cannot load the folder: refused here,
    # before anything is written.
    for name in (("a",), object()):
        td.names = [name, None]
        with pytest.raises(errors.NotSerializableError, match=r"dim names .* rename") as caught:
            td.memmap(tmp_path / "bad")
        assert isinstance(caught.value, TypeError) and not (tmp_path / "bad").exists()


@pytest.mark.parametrize(
    ("index", "names"),
    [
        # program 11,300,176 of the six families (--length 4): [2] broadcast with [1]
        (([-1, -1], torch.tensor([2])), ["a", "c"]),
        (([0, 0], torch.tensor([2, 1])), [None, "c"]),
        ((slice(None), torch.tensor([[0, 1, 2]])), ["a", None, "b", "c"]),
        ((slice(None), torch.tensor([[0, 1], [1, 2]])), ["a", None, None, "c"]),
        ((torch.tensor([[0], [1]]), torch.tensor([[0, 1, 2]])), ["a", "b", "c"]),
        ((torch.tensor([0]), slice(None), torch.tensor([1, 2])), ["c", "b"]),
        ((torch.tensor([True, False]), torch.tensor([1])), ["a", "c"]),
        ((torch.tensor([1, 0]), 0, torch.tensor([0])), ["a"]),
    ],
)
def test_an_advanced_block_dim_takes_the_name_of_the_one_dim_varying_along_it(
    index: tuple[Any, ...], names: list[str | None]
) -> None:
    """As the peer: a dim of the advanced block is named after the single input dim
    whose index varies along it; dims fed by several input dims stay unnamed."""
    td = TensorDict({"x": torch.zeros(2, 3, 4)}, batch_size=[2, 3, 4], names=["a", "b", "c"])
    assert td[index].names == names
    lazy = LazyStackedTensorDict.lazy_stack([td[:, :, i] for i in range(4)], dim=2)
    lazy.names = ["a", "b", "c"]
    assert lazy[index].names == names
    assert torch.equal(lazy[index]["x"], td["x"][index])
