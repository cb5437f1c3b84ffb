"""``apply(fn)`` where ``fn`` returns a Python value (session 24, nu24g): the lean path
(one collection, no option) read ``result.shape`` and failed with a bare
``AttributeError: 'int' object has no attribute 'shape'``; the peer stores the value as
``set`` would (a string as a value over the batch, a list as a tensor, a number as a 0-d
tensor, which a batch size must then allow)."""

from __future__ import annotations

import pytest
import torch

from tclass import NonTensorData, TensorDict, errors


def _td() -> TensorDict:
    return TensorDict(x=torch.ones(2, 3), batch_size=[2])


def test_string_result_is_a_value_over_the_batch() -> None:
    out = _td().apply(lambda v: "hi")
    value = out.get("x")
    assert isinstance(value, NonTensorData)
    assert value.data == "hi" and value.batch_size == torch.Size([2])


def test_list_result_is_a_tensor() -> None:
    out = _td().apply(lambda v: [1, 2])
    assert torch.equal(out["x"], torch.tensor([1, 2]))


def test_number_result_needs_an_empty_batch_size() -> None:
    out = _td().apply(lambda v: 3, batch_size=[])
    assert torch.equal(out["x"], torch.tensor(3))
    with pytest.raises(errors.BatchMismatchError, match="'x'") as info:
        _td().apply(lambda v: 3)
    assert isinstance(info.value, RuntimeError)


def test_nested_python_results() -> None:
    td = TensorDict(n=TensorDict(c=torch.zeros(2), batch_size=[2]), batch_size=[2])
    out = td.apply(lambda v: [5.0, 6.0])
    assert torch.equal(out["n", "c"], torch.tensor([5.0, 6.0]))


def test_in_place_python_result_is_checked_as_set_checks_it() -> None:
    # before: apply_(lambda v: 3) filled the batched entry (the peer refuses the 0-d value)
    # and 'v' or a list failed inside torch with a bare TypeError from copy_
    for result in (3, "v", [1.0, 2.0, 3.0]):
        td = TensorDict(a=torch.arange(6.0).reshape(2, 3), batch_size=[2])
        with pytest.raises(errors.InPlaceWriteError, match="'a'") as info:
            td.apply_(lambda v, r=result: r)
        assert isinstance(info.value, ValueError) and isinstance(info.value, RuntimeError)
        assert torch.equal(td["a"], torch.arange(6.0).reshape(2, 3))


def test_in_place_python_result_written_where_the_batch_allows() -> None:
    td = TensorDict(a=torch.arange(3.0))
    td.apply_(lambda v: 3)
    assert torch.equal(td["a"], torch.full((3,), 3.0))
    td.apply_(lambda v: [1.0, 2.0, 3.0])
    assert torch.equal(td["a"], torch.tensor([1.0, 2.0, 3.0]))
