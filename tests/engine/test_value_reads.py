"""Reads of Python values as the peer reads them: ``get_non_tensor`` of a ``None`` value
over a batch lists it per element (the peer reads a value whose data is ``None`` as a
stack), of one without batch dims gives ``None``."""

from __future__ import annotations

import tclass
from tclass import TensorDict
from tclass.utils import LinkedList


def test_get_non_tensor_of_none_over_a_batch_lists_it_per_element() -> None:
    td = TensorDict({"v": None, "n": {"w": None}, "s": "x"}, batch_size=[2, 1])
    got = td.get_non_tensor(("v",), None)
    assert isinstance(got, LinkedList) and got == [[None], [None]]
    assert td.get_non_tensor(("n", "w")) == [[None], [None]] and td[0].get_non_tensor("v") == [None]
    assert td.get_non_tensor("s") == "x"  # any other value: the value itself
    assert td.get("v").data is None and td["v"] is None  # get / [] unchanged
    assert TensorDict({"v": None}, []).get_non_tensor("v") is None
    stack = tclass.lazy_stack([td, td])
    assert stack.get_non_tensor("v") == [[[None], [None]], [[None], [None]]]
