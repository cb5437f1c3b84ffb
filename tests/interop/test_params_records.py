"""``TensorDictParams`` of a record: what its operations give, checked against the peer.

The peer's ``TensorDictParams(Rec(...))`` holds the record, so most of its results are
``Rec`` instances; tclass's gave plain TensorDicts (issue 27: ``params.sum(dim=0).a``
raised ``AttributeError``). Each op below runs on both libraries and must give the same
kind of result (the record class, a TensorDict, or a TensorDictParams whose own results
are records), the same keys, batch size and values. tclass makes the record's float
fields parameters (the peer registers none: README's "TensorDictParams registers what it
holds"), which the tests past the comparison check.
"""

from __future__ import annotations

import copy
import pickle
import warnings
from collections.abc import Callable
from typing import Any

import pytest
import torch
from torch import nn

import tclass
from tclass import TensorDict, TensorDictParams

peer = pytest.importorskip("tensordict")


def _classes(lib: Any) -> tuple[type, type]:
    @lib.tensorclass
    class Rec:
        a: torch.Tensor
        b: torch.Tensor

    return Rec, lib.TensorDictParams


def _params(lib: Any) -> tuple[Any, type]:
    rec_cls, params_cls = _classes(lib)
    rec = rec_cls(a=torch.arange(4.0), b=torch.ones(4, dtype=torch.long), batch_size=[4])
    return params_cls(rec), rec_cls


MASK = torch.tensor([True, False, True, False])
OPS: dict[str, Callable[[Any], Any]] = {
    "sum(dim=0)": lambda p: p.sum(dim=0),
    "sum()": lambda p: p.sum(),
    "select": lambda p: p.select("a"),
    "exclude": lambda p: p.exclude("b"),
    "clamp": lambda p: p.clamp(0, 1),
    "apply": lambda p: p.apply(lambda t: t * 2),
    "named_apply": lambda p: p.named_apply(lambda key, t: t * 2),
    "unbind": lambda p: p.unbind(0),
    "clone": lambda p: p.clone(),
    "clone(False)": lambda p: p.clone(False),
    "copy": lambda p: p.copy(),
    "copy.copy": copy.copy,
    "deepcopy": copy.deepcopy,
    "to(cpu)": lambda p: p.to("cpu"),
    "to(float64)": lambda p: p.to(torch.float64),
    "[:2]": lambda p: p[:2],
    "[0]": lambda p: p[0],
    "[...]": lambda p: p[...],
    "[mask]": lambda p: p[MASK],
    "+ 1": lambda p: p + 1,
    "* 2": lambda p: p * 2,
    "neg": lambda p: -p,
    "== 0": lambda p: p == 0,
    "abs": lambda p: p.abs(),
    "detach": lambda p: p.detach(),
    "data": lambda p: p.data,
    "to_tensordict": lambda p: p.to_tensordict(),
    "reshape": lambda p: p.reshape(2, 2),
    "unsqueeze": lambda p: p.unsqueeze(0),
    "split": lambda p: p.split(2),
    "chunk": lambda p: p.chunk(2),
    "gather": lambda p: p.gather(0, torch.tensor([0, 1])),
    "float": lambda p: p.float(),
    "empty": lambda p: p.empty(),
    "zeros_like": torch.zeros_like,
    "where": lambda p: p.where(MASK, 0),
    "expand": lambda p: p.expand(2, 4),
    "contiguous": lambda p: p.contiguous(),
    "torch.stack": lambda p: torch.stack([p, p]),
    "torch.cat": lambda p: torch.cat([p, p]),
}


def _kind(result: Any, rec_cls: type, params_cls: type) -> Any:
    """The kind of ``result`` by library-neutral names (a TensorDictParams: with the kind
    of its own ``sum``), with its keys, batch size and values."""
    if isinstance(result, tuple):
        return tuple(_kind(part, rec_cls, params_cls) for part in result)
    if isinstance(result, params_cls):
        with torch.no_grad():
            return ("TensorDictParams", _kind(result.sum(dim=0), rec_cls, params_cls))
    name = "record" if isinstance(result, rec_cls) else type(result).__name__
    values = {key: result.get(key).detach().tolist() for key in sorted(result.keys())}
    return name, list(result.batch_size), values


@pytest.mark.parametrize("op", list(OPS))
def test_results_are_of_the_peers_kind(op: str) -> None:
    ours, ours_cls = _params(tclass)
    theirs, their_cls = _params(peer)
    with warnings.catch_warnings():  # the peer's "fallback ... for tensorclass" warnings
        warnings.simplefilter("ignore")
        expected = _kind(OPS[op](theirs), their_cls, peer.TensorDictParams)
    assert _kind(OPS[op](ours), ours_cls, TensorDictParams) == expected


def test_a_result_reads_fields_as_attributes_and_keeps_the_graph() -> None:
    params, rec_cls = _params(tclass)
    total = params.sum(dim=0)  # the repro: was a TensorDict, `.a` raised
    assert type(total) is rec_cls and total.a.item() == 6.0 and total.a.requires_grad
    (params * 2).a.sum().backward()  # the parameters get their gradients through records
    assert (params.get("a").grad == 2).all()
    detached = params.detach()
    assert type(detached) is rec_cls and not detached.a.requires_grad


def test_index_all_is_a_record_over_the_same_parameters() -> None:
    params, rec_cls = _params(tclass)
    whole = params[...]
    assert type(whole) is rec_cls and whole.a is params.get("a")
    assert isinstance(params.get("a"), nn.Parameter)
    plain = TensorDictParams(TensorDict(a=torch.zeros(2), batch_size=[2]))
    assert plain[...] is plain  # of a TensorDict: itself, as before


def test_copies_keep_the_record_class_and_new_parameters() -> None:
    params, rec_cls = _params(tclass)
    for copied in (params.clone(), params.to(torch.float64), copy.deepcopy(params)):
        assert type(copied) is TensorDictParams and type(copied[0]) is rec_cls
        assert [name for name, _ in copied.named_parameters()] == ["a"]
    rewrapped = TensorDictParams(params)
    assert type(rewrapped.sum()) is rec_cls


class Pair(tclass.TensorClass):
    a: torch.Tensor
    b: torch.Tensor


def test_a_pickled_one_keeps_the_record_class() -> None:
    params = TensorDictParams(Pair(a=torch.arange(3.0), b=torch.zeros(3), batch_size=[3]))
    restored = pickle.loads(pickle.dumps(params))
    assert type(restored.unbind(0)[1]) is Pair and restored[1].a.item() == 1.0
    assert [name for name, _ in restored.named_parameters()] == ["a", "b"]


def test_repr_names_the_record_class_as_the_peers() -> None:
    ours, _ = _params(tclass)
    theirs, _ = _params(peer)
    assert repr(ours).startswith("TensorDictParams(params=Rec(")
    assert repr(theirs).startswith("TensorDictParams(params=Rec(")


def test_a_nested_tensordict_attribute_is_a_params_of_tensordicts() -> None:
    rec_cls, _ = _classes(tclass)
    inner = TensorDict(w=torch.ones(2, 3), batch_size=[2])
    params = TensorDictParams(rec_cls(a=inner, b=torch.zeros(2), batch_size=[2]))
    nested = params.a
    assert type(nested) is TensorDictParams and type(nested.sum(dim=0)) is TensorDict
    assert type(params.sum(dim=0)) is rec_cls


def test_setting_a_key_that_is_not_a_field_is_refused_as_the_peers() -> None:
    ours, _ = _params(tclass)
    theirs, _ = _params(peer)
    with pytest.raises(AttributeError, match="'c'"):
        theirs.set("c", torch.zeros(4))
    with pytest.raises(tclass.errors.UnknownFieldError, match="'c' is not a field of Rec"):
        ours.set("c", torch.zeros(4))
    with pytest.raises(AttributeError, match="'c' is not a field of Rec"):
        ours["c"] = torch.zeros(4)  # (the peer's refuses any string index: a ValueError)
    assert sorted(ours.keys()) == ["a", "b"]
    ours.set("a", torch.ones(4))  # a field: set, and made a parameter
    assert isinstance(ours.get("a"), nn.Parameter) and ours.sum(dim=0).a.item() == 4.0


def test_python_value_and_unset_fields_read_as_the_peers() -> None:
    """``params.label`` of a record's Python-value field is its value, an unset field
    ``None``, and ``get`` gives the value (not its node), as the peer's; tensor fields
    stay the parameters, an undeclared name an ``AttributeError``."""
    results = []
    for lib in (tclass, peer):

        @lib.tensorclass
        class Labeled:
            w: torch.Tensor
            bias: torch.Tensor | None = None
            n: int = 3
            label: str = "lbl"

        params = lib.TensorDictParams(Labeled(w=torch.ones(3, 2), batch_size=[3]))
        results.append((params.label, params.n, params.bias, params.get("n"), params.get("label")))
        with pytest.raises(AttributeError):
            params.nope  # noqa: B018
        if lib is tclass:
            assert isinstance(params.w, nn.Parameter) and params.get("w") is params.w
    assert results[0] == results[1] == ("lbl", 3, None, 3, "lbl")


def test_a_locked_tree_is_wrapped_and_keeps_its_lock_as_the_peers() -> None:
    # tclass raised LockedError unlocking the nested TensorDict of a locked root (the
    # peer converts the leaves and leaves the tree locked, its TensorDictParams unlocked)
    for lib in (tclass, peer):
        td = lib.TensorDict(
            a=torch.zeros(3), n=lib.TensorDict(b=torch.zeros(3), batch_size=[3]), batch_size=[3]
        ).lock_()
        params = lib.TensorDictParams(td)
        assert sorted(name for name, _ in params.named_parameters()) == ["a", "n.b"]
        assert td.is_locked and td["n"].is_locked and not params.is_locked
        assert isinstance(td["n", "b"], nn.Parameter)


def test_a_frozen_record_with_a_nested_record_becomes_parameters() -> None:
    @tclass.tensorclass
    class Info:
        err: torch.Tensor

    @tclass.tensorclass(frozen=True)
    class Frozen:
        obs: torch.Tensor
        info: Info

    record = Frozen(
        obs=torch.zeros(3), info=Info(err=torch.ones(3), batch_size=[3]), batch_size=[3]
    )
    params = TensorDictParams(record)
    assert sorted(name for name, _ in params.named_parameters()) == ["info.err", "obs"]
    assert record.is_locked and record.info.is_locked
    assert isinstance(record.info.err, nn.Parameter) and torch.equal(record.info.err, torch.ones(3))
