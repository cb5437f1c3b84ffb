"""Out-of-place math on a flat node (``tclass/_base/implemented/_leaf_walk.py``): a
TensorDict or a record over one holding only tensors and Python values, with no operand,
a number, or another such node with the same keys over the same batch size (or none),
skips the walk and builds its result directly. It must give what the walk gives, and
hand everything else (nested entries, tensor subclasses, lazy stacks, broadcast batch
sizes, missing keys) to the walk, which raises what is wrong.

Each case is run twice, the second time with the flat form turned off, and the two
results compared: class, keys, batch size, names, device, lock, Python values, tensors.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

import tclass
from tclass import TensorClass, TensorDict, errors

from strategies import assert_same_tree  # noqa: E402


class _Step(TensorClass):
    obs: torch.Tensor
    reward: torch.Tensor
    env: str
    flag: torch.Tensor | None = None


class _Other(TensorClass):
    """Another class holding ``_Step``'s fields."""

    obs: torch.Tensor
    reward: torch.Tensor
    env: str
    flag: torch.Tensor | None = None


class _Outer(TensorClass):
    obs: torch.Tensor
    inner: _Step


def _outer(seed: int) -> _Outer:
    return _Outer(obs=torch.full((2,), float(seed)), inner=_step([2], seed), batch_size=[2])


def _other(rec: _Step) -> _Other:
    return _Other(**rec.to_dict(), batch_size=rec.batch_size)


def _params(rec: _Step) -> tclass.TensorDictParams:
    return tclass.TensorDictParams(rec.to_tensordict())


def _stacked(first: _Step, second: _Step) -> _Step:
    """A record over a lazy stack of the rows ``first[0]`` and ``second[1]``."""
    members = [first[0]._tensordict, second[1]._tensordict]
    return _Step._from_tensordict_unchecked(tclass.lazy_stack(members))


_TWO = torch.full((2,), 2.0)
BatchSizeError = errors.BatchSizeError
# The collection classes (each holds copies of its inherited methods: see _base/_inline.py)
_CLASSES = (TensorDict, TensorClass)


def _step(batch: list[int], seed: int = 0, **fields: Any) -> _Step:
    g = torch.Generator().manual_seed(seed)
    values = {"obs": torch.randn(*batch, 3, generator=g), "reward": torch.rand(*batch, generator=g)}
    values.update(fields)
    return _Step(**values, env="pong", batch_size=batch)


def _walked(monkeypatch: pytest.MonkeyPatch, call: Callable[[], Any]) -> Any:
    """``call()`` with the flat form turned off: what the walk gives."""
    with monkeypatch.context() as patch:
        for cls in _CLASSES:
            patch.setattr(cls, "_flat_pointwise", lambda *args: None)
        return call()


def _assert_alike(mine: Any, walked: Any) -> None:
    assert_same_tree(mine, walked)
    assert mine.to_dict(retain_none=True).keys() == walked.to_dict(retain_none=True).keys()
    for key in mine.keys():
        if not isinstance(mine.get(key), (torch.Tensor, tclass.TensorDictBase)):
            assert mine.get(key) == walked.get(key), key


def _flat_td(batch: list[int] | None = None, **entries: Any) -> TensorDict:
    """A TensorDict of batch ``batch`` ([3]) holding ``a`` and ``b`` (or ``entries``)."""
    batch = [3] if batch is None else batch
    entries = entries or {"a": torch.ones(*batch), "b": torch.arange(batch[0]).expand(*batch)}
    return TensorDict(entries, batch_size=batch)


CALLS: list[tuple[str, Callable[[], Any]]] = [
    ("record - record mean", lambda: (lambda r: (r - r.mean(0)) / r.std(0))(_step([4]))),
    ("record * record", lambda: _step([4]) * _step([4], 1)),
    ("record + int", lambda: _step([4]) + 2),
    ("float * record", lambda: 0.5 * _step([4])),
    ("record ** bool", lambda: _step([4]) ** True),
    ("record - numpy scalar", lambda: _step([4]) - np.float32(1.5)),
    ("exp(record)", lambda: torch.exp(_step([4]))),
    ("record.double()", lambda: _step([4]).double()),
    ("record with a None field", lambda: _step([4]) * 3),
    ("record with a set field", lambda: _step([2], flag=torch.ones(2)) * _step([2], flag=_TWO)),
    ("locked record", lambda: _step([4]).lock_() + 1),
    ("frozen-like: locked operand", lambda: _step([4]) + _step([4], 2).lock_()),
    ("locked record - record", lambda: _step([4]).lock_() - _step([4], 1)),
    ("locked record * batch tensor (unlocked)", lambda: _step([4]).lock_() * torch.arange(4.0)),
    ("locked td + 0-d tensor", lambda: _flat_td().lock_() + torch.tensor(2.0)),
    ("record - broadcast record", lambda: _step([2, 3]) - _step([3], 1)),
    ("record - record of more dims", lambda: _step([3], 1) - _step([2, 3])),
    ("record - record of batch [1]", lambda: _step([4]) - _step([1], 1)),
    ("record * tensor", lambda: _step([4]) * torch.arange(4.0)),
    ("rsub", lambda: 1 - _step([4])),
    ("record - its TensorDict", lambda: (lambda r: r - r.to_tensordict())(_step([4]))),
    ("record - TensorDict of batch []", lambda: _step([4]) - _step([4], 1)._tensordict[0]),
    ("td - record", lambda: _step([4])._tensordict - _step([4], 1)),
    ("record - record of another class", lambda: _step([4]) - _other(_step([4], 1))),
    ("record - record with a nested record", lambda: _outer(0) - _outer(1)),
    ("record - TensorDictParams", lambda: _step([4]) * _params(_step([4], 1))),
    ("record - record over a lazy stack", lambda: _step([2]) - _stacked(_step([2], 1), _step([2]))),
    ("td + 1, str value", lambda: TensorDict(a=torch.ones(3), s="x", batch_size=[3]) + 1),
    ("td * td", lambda: _flat_td() * _flat_td()),
    ("named td", lambda: TensorDict(a=torch.ones(3, 2), batch_size=[3], names=["t"]) / 2),
    ("td with a parameter", lambda: _flat_td(p=torch.nn.Parameter(torch.ones(3))) * 2),
    ("nested td", lambda: TensorDict(a=torch.ones(2), n={"b": torch.ones(2)}, batch_size=[2]) + 1),
    (
        "record over a lazy stack",
        lambda: _Step._from_tensordict_unchecked(
            tclass.lazy_stack([_step([2])._tensordict, _step([2], 1)._tensordict])
        ) * 2,
    ),
]  # fmt: skip


@pytest.mark.parametrize("call", [c for _, c in CALLS], ids=[n for n, _ in CALLS])
def test_the_flat_form_gives_what_the_walk_gives(
    call: Callable[[], Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    _assert_alike(call(), _walked(monkeypatch, call))


def test_results_hold_torch_results_and_new_python_value_nodes() -> None:
    rec = _step([4])
    mean, std = rec.mean(0), rec.std(0)
    out = (rec - mean) / std
    assert type(out) is _Step and out.env == "pong" and out.flag is None
    assert torch.allclose(out.obs, (rec.obs - rec.obs.mean(0)) / rec.obs.std(0))
    assert torch.allclose(out.reward, (rec.reward - rec.reward.mean(0)) / rec.reward.std(0))
    rec.env = "breakout"
    assert out.env == "pong"


@pytest.mark.parametrize("grad_first", [True, False])
def test_only_the_results_of_leaves_that_need_grad_need_it(
    grad_first: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As torch's per-tensor operation: one fused kernel marks every output once one input
    needs grad; the flat form keeps the mark on that leaf's result alone, as the walk."""

    def call() -> TensorDict:
        grad, plain = torch.ones(3, requires_grad=True), torch.arange(3.0)
        first, second = (grad, plain) if grad_first else (plain, grad)
        return _flat_td(a=first, b=second) * _flat_td(a=torch.ones(3), b=torch.ones(3))

    mine, walked = call(), _walked(monkeypatch, call)
    assert [mine[k].requires_grad for k in "ab"] == [grad_first, not grad_first]
    assert [walked[k].requires_grad for k in "ab"] == [grad_first, not grad_first]


class _Meta:
    """A Python value of no known kind."""


def test_python_value_nodes_are_new_nodes_sharing_the_value() -> None:
    """As the walk rebuilds them: locking the result locks its nodes, not the source's."""
    meta = _Meta()
    td = TensorDict(a=torch.ones(3), meta=meta, batch_size=[3])
    out = td + 1
    assert out.get("meta") is not td.get("meta") and out["meta"] is meta
    out.lock_()
    assert out.get("meta").is_locked and not td.get("meta").is_locked


def test_a_flat_record_is_not_walked(monkeypatch: pytest.MonkeyPatch) -> None:
    """The point of the flat form: no gather, no rebuilt tree."""
    rec = _step([4])
    mean = rec.mean(0)

    def refuse(*args: Any) -> Any:
        raise AssertionError("walked")

    for cls in _CLASSES:
        monkeypatch.setattr(cls, "_collect", refuse)
        monkeypatch.setattr(cls, "_rebuilt", refuse)
    out = rec - mean
    assert torch.equal(out.obs, rec.obs - mean.obs)


@pytest.mark.parametrize(
    ("make_other", "error", "match"),
    [
        (lambda r: r.exclude("reward"), errors.KeyNotFoundError, "reward"),
        (lambda r: r.set("extra", torch.ones(4)), errors.KeyNotFoundError, "extra"),
        (lambda r: r.set("reward", _flat_td([4])), errors.KeyNotFoundError, "reward"),
        (lambda r: r.set("obs", torch.ones(4, 5)), RuntimeError, "size"),
        (lambda r: _flat_td(obs=torch.ones(3, 3), reward=torch.ones(3)), BatchSizeError, r"\[3\]"),
    ],
    ids=["a key missing", "a key more", "a collection for a tensor", "shapes", "batch sizes"],
)  # fmt: skip
def test_operands_the_walk_refuses_are_still_refused(
    make_other: Callable[[Any], Any], error: type[Exception], match: str
) -> None:
    td = TensorDict(obs=torch.ones(4, 3), reward=torch.ones(4), env="pong", batch_size=[4])
    with pytest.raises(error, match=match):
        operator.add(td, make_other(td.clone()))


def test_an_operand_value_facing_a_tensor_is_named() -> None:
    td = TensorDict(obs=torch.ones(4, 3), reward=torch.ones(4), batch_size=[4])
    other = TensorDict(obs=torch.ones(4, 3), reward="text", batch_size=[4])
    with pytest.raises(errors.KeyNotFoundError, match="'reward' is a tensor"):
        td - other


@pytest.mark.parametrize(
    ("make_other", "error", "match"),
    [
        (lambda r: r.to_tensordict().exclude("reward"), errors.KeyNotFoundError, "reward"),
        (lambda r: r.to_tensordict().set("extra", torch.ones(4)), errors.KeyNotFoundError, "extra"),
        (lambda r: r.to_tensordict().set("obs", torch.ones(4, 5)), RuntimeError, "size"),
        (lambda r: _step([3]), BatchSizeError, r"\[3\]"),
    ],
    ids=["a key missing", "a key more", "shapes", "batch sizes"],
)  # fmt: skip
def test_a_record_refuses_what_the_walk_refuses(
    make_other: Callable[[Any], Any], error: type[Exception], match: str
) -> None:
    """A record's own flat form hands these operands to the walk, which raises."""
    rec = _step([4])
    with pytest.raises(error, match=match):
        rec - make_other(rec)
