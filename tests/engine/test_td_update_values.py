"""``TensorDict.update`` with tensor values, the usual call, which sets each one without
the merge checks a mapping or collection value needs: what it writes, and what it
refuses, through each kind of key and option."""

from __future__ import annotations

import pytest
import torch

from tclass import TensorDict, errors


def _td() -> TensorDict:
    return TensorDict({"a": torch.zeros(2, 3), "n": {"x": torch.zeros(2)}}, [2])


def test_tensors_set_as_given_or_cloned() -> None:
    td, value = _td(), torch.ones(2, 3)
    td.update({"a": value, "b": torch.full((2,), 2.0)})
    assert td["a"] is value and torch.equal(td["b"], torch.full((2,), 2.0))
    td.update({"a": value}, clone=True)
    assert td["a"] is not value and torch.equal(td["a"], value)


def test_nested_keys_and_a_tensor_over_a_collection() -> None:
    td = _td()
    td.update({("n", "x"): torch.ones(2), ("m", "y"): torch.ones(2, 4)})
    assert torch.equal(td["n", "x"], torch.ones(2)) and td["m", "y"].shape == (2, 4)
    td.update({"n": torch.full((2,), 5.0)})  # a tensor replaces the nested collection
    assert torch.equal(td["n"], torch.full((2,), 5.0))


def test_in_place_writes_into_the_tensor_there() -> None:
    td = _td()
    before = td["a"]
    td.update({"a": torch.ones(2, 3)}, inplace=True)
    assert td["a"] is before and torch.equal(before, torch.ones(2, 3))


def test_keys_to_update_pick_the_tensors() -> None:
    td = _td()
    td.update({"a": torch.ones(2, 3), ("n", "x"): torch.ones(2)}, keys_to_update=[("n", "x")])
    assert torch.equal(td["a"], torch.zeros(2, 3)) and torch.equal(td["n", "x"], torch.ones(2))


def test_refusals_name_the_key() -> None:
    td = _td()
    with pytest.raises(errors.BatchSizeError, match="'b'"):
        td.update({"b": torch.ones(3)})
    td.lock_()
    with pytest.raises(errors.LockedError, match="'b'"):
        td.update({"b": torch.ones(2)})
    with pytest.raises(errors.LockedError):
        td.update({"a": torch.ones(2, 3)})
    td.update({"a": torch.ones(2, 3)}, inplace=True)  # in place: the data is written
    assert torch.equal(td["a"], torch.ones(2, 3))
    with pytest.raises(errors.InvalidKeyError):
        _td().update({("n", 1): torch.ones(2)})


def test_in_place_write_of_the_entry_itself_into_a_parameter() -> None:
    # as the peer: set_ of the entry itself (an apply_ or named_apply(inplace=True)
    # returning it), or of its own memory (.data), writes nothing, so autograd does not
    # refuse the write into a parameter; another tensor is still refused, naming the key.
    # update_ copies every value, the entry's own too: refused, as torch and the peer's
    param = torch.nn.Parameter(torch.zeros(3))
    td = TensorDict({"p": param, "i": torch.arange(3)}, [3])
    td.set_("p", param).set_("p", param.data)
    with pytest.raises(errors.InPlaceWriteError, match="'p'.*update_.*requires grad"):
        td.update_({"p": param})
    assert td.update_(td) is td  # the collection itself: nothing to copy, as the peer
    out = td.named_apply(lambda key, value: value.float(), inplace=True)
    assert out is td and td["p"] is param and td["i"].dtype == torch.int64
    assert td["i"].tolist() == [0, 1, 2]
    with pytest.raises(errors.InPlaceWriteError, match="'p'.*requires grad"):
        td.set_("p", torch.ones(3))
    with pytest.raises(errors.InPlaceWriteError):
        td.set_("p", param.data[[2, 1, 0]])  # another tensor (a copy): a real write
