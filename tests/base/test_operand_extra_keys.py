"""A collection operand holding more keys than the collection: the in-place operations,
``lerp``, ``addcmul``, ``addcdiv`` and ``clamp`` of two bounds read the collection's own
keys from it and leave the others unread, as the peer's (``_leaf_walk.Gather.extra``); a
key the operand lacks is an error naming it. The other binary operations (``add``,
``where``, ``clamp`` of one bound...) still
want the same keys on both sides, as the peer's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

import tclass
from tclass import errors

tensordict = pytest.importorskip("tensordict")


def _pair(lib: Any, *, nested_extra: bool = False) -> tuple[Any, Any]:
    td = lib.TensorDict(
        a=torch.zeros(3) + 2, b=torch.ones(3), n=lib.TensorDict(x=torch.ones(3), batch_size=[3])
    )
    td.batch_size = [3]
    nested = {"x": torch.ones(3) * 3, **({"y": torch.ones(3)} if nested_extra else {})}
    other = lib.TensorDict(
        a=torch.ones(3), b=torch.ones(3) * 4, c=torch.ones(3), n=lib.TensorDict(nested, [3])
    )
    other.batch_size = [3]
    return td, other


CALLS: list[Any] = [
    pytest.param(lambda td, o: td.lerp(o, 0.5), id="lerp"),
    pytest.param(lambda td, o: td.lerp_(o, 0.5), id="lerp_"),
    pytest.param(lambda td, o: td.add_(o), id="add_"),
    pytest.param(lambda td, o: td.mul_(o), id="mul_"),
    pytest.param(lambda td, o: td.maximum_(o), id="maximum_"),
    pytest.param(lambda td, o: td.clamp_max_(o), id="clamp_max_"),
    pytest.param(lambda td, o: td.addcmul(o, o), id="addcmul"),
    pytest.param(lambda td, o: td.addcdiv_(o, o), id="addcdiv_"),
    pytest.param(lambda td, o: td.clamp(o, o), id="clamp"),
    pytest.param(lambda td, o: td.copy_(o), id="copy_"),
    pytest.param(lambda td, o: td.__iadd__(o), id="+="),
]


def _read(result: Any) -> dict[str, list[float]]:
    return {str(k): result.get(k).tolist() for k in result.keys(True, True)}


@pytest.mark.parametrize("nested_extra", [False, True])
@pytest.mark.parametrize("call", CALLS)
def test_extra_keys_of_the_operand_are_not_read(
    call: Callable[[Any, Any], Any], nested_extra: bool
) -> None:
    td, other = _pair(tclass, nested_extra=nested_extra)
    result = call(td, other)
    assert sorted(_read(result)) == ["('n', 'x')", "a", "b"]
    peer_td, peer_other = _pair(tensordict, nested_extra=nested_extra)
    assert _read(result) == _read(call(peer_td, peer_other))


def test_lerp_reads_its_keys_from_the_operand() -> None:
    td, other = _pair(tclass)
    result = td.lerp(other, 0.5)
    assert result["a"].tolist() == [1.5] * 3 and result["n", "x"].tolist() == [2.0] * 3


def test_a_key_the_operand_lacks_is_named() -> None:
    td, other = _pair(tclass)
    with pytest.raises(errors.KeyNotFoundError, match=r"the operand lacks the keys \['b'\]"):
        td.lerp_(other.exclude("b"), 0.5)
    assert td["a"].tolist() == [2.0] * 3  # nothing written


def test_binary_arithmetic_still_wants_the_same_keys() -> None:
    td, other = _pair(tclass)
    with pytest.raises(KeyError, match="only in the right one: \\['c'\\]"):
        td.add(other)
    peer_td, peer_other = _pair(tensordict)
    with pytest.raises(KeyError):
        peer_td.add(peer_other)


@pytest.mark.parametrize("bound", ["min", "max"])
def test_clamp_of_one_bound_wants_the_same_keys(bound: str) -> None:
    """``clamp(min=o)`` / ``clamp(max=o)`` are ``clamp_min`` / ``clamp_max``, whose
    operand's keys must match, as the peer's (only two bounds read the collection's own
    keys from them)."""
    td, other = _pair(tclass)
    with pytest.raises(KeyError, match="only in the right one: \\['c'\\]"):
        td.clamp(**{bound: other})
    peer_td, peer_other = _pair(tensordict)
    with pytest.raises(KeyError):
        peer_td.clamp(**{bound: peer_other})
