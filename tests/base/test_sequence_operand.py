"""A list or tuple given to the math or an operator (session 23, lo23a): an
``OperandError`` naming the operand and what to write, on every kind of collection, with
nothing changed. The peer hands it to torch's ``_foreach`` kernels, one number per leaf
when it is as long as the leaves (undocumented, and counted per member on its lazy
stacks): README, "A list or tuple is no math operand"."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

import tclass
from tclass import TensorClass, TensorDict, TensorDictParams, errors


class Pair(TensorClass):
    b: torch.Tensor
    a: torch.Tensor


def _tree() -> TensorDict:
    return TensorDict(b=torch.zeros(2), a=torch.zeros(2), n={"c": torch.zeros(2)}, batch_size=[2])


KINDS: dict[str, Callable[[], Any]] = {
    "TensorDict": _tree,
    "record": lambda: Pair(b=torch.zeros(2), a=torch.zeros(2), batch_size=[2]),
    "lazy stack": lambda: tclass.lazy_stack([_tree(), _tree()]),
    "params": lambda: TensorDictParams(_tree(), no_convert=True),
}

WRITES: dict[str, Callable[[Any, Any], Any]] = {
    "add_": lambda x, o: x.add_(o),
    "mul_": lambda x, o: x.mul_(o),
    "sub_": lambda x, o: x.sub_(o),
    "add": lambda x, o: x.add(o),
    "+": lambda x, o: x + o,
    "reflected *": lambda x, o: o * x,
    "reflected +": lambda x, o: o + x,
    "+=": lambda x, o: x.__iadd__(o),
    "/": lambda x, o: x / o,
    "lerp_": lambda x, o: x.lerp_(x.clone(), o),
    "clamp_min_": lambda x, o: x.clamp_min_(o),
    "clamp_": lambda x, o: x.clamp_(min=o),
    "maximum_": lambda x, o: x.maximum_(o),
}


def _values(collection: Any) -> list[list[float]]:
    return [leaf.tolist() for leaf in collection.values(True, True)]


@pytest.mark.parametrize("kind", list(KINDS))
@pytest.mark.parametrize("write", list(WRITES))
@pytest.mark.parametrize("operand", [[1.0, 2.0, 3.0], (1.0, 2.0)])
def test_a_list_or_tuple_operand_is_an_operand_error_naming_it(
    kind: str, write: str, operand: Any
) -> None:
    collection = KINDS[kind]()
    before = _values(collection)
    with pytest.raises(errors.OperandError, match="torch.tensor") as caught:
        WRITES[write](collection, operand)
    assert isinstance(caught.value, TypeError)  # the builtin torch and the peer raise
    message = str(caught.value)
    assert repr(operand) in message and type(operand).__name__ in message
    assert "not taken as one number per leaf" in message
    assert _values(collection) == before  # nothing written


def test_what_the_error_says_to_write_works() -> None:
    td = _tree()
    td.add_(torch.tensor([1.0, 2.0]))  # one value per batch element
    assert _values(td) == [[1.0, 2.0]] * 3
    td.add_(TensorDict(b=1.0, a=2.0, n={"c": 3.0}, batch_size=[]))  # one number per leaf
    assert _values(td) == [[2.0, 3.0], [3.0, 4.0], [4.0, 5.0]]


def test_a_long_operand_is_shown_by_its_length() -> None:
    with pytest.raises(errors.OperandError, match=r"the operand a list of 30 is a list"):
        _tree().mul_([1.0] * 30)
