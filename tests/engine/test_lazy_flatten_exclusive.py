"""``flatten_keys`` / ``unflatten_keys`` of a lazy stack whose members hold different keys
(lo27b, README "Lazy stacks"): each member is flattened / unflattened as it is, Python
values as tensors. The peer refuses it when a tensor key is held by some members only
("cannot complete when there are exclusive keys"), but not when only Python values
differ, where its ``unflatten_keys`` leaves the member holding ``"a.b"`` as it was."""

from __future__ import annotations

import pytest
import torch

from tclass import TensorDict, lazy_stack


@pytest.mark.parametrize("values", [("x", "y"), (0.0, 1.0), ("x", 1.0)])
def test_each_member_is_flattened_and_unflattened_as_it_is(values: tuple[object, object]) -> None:
    def value(v: object) -> object:
        return torch.tensor(v) if isinstance(v, float) else v

    first, second = (value(v) for v in values)
    stack = lazy_stack(
        [TensorDict({"a.b": first, "c": torch.zeros(())}), TensorDict({"a": {"b": second}})]
    )
    flat = stack.flatten_keys(".")
    assert [sorted(m.keys()) for m in flat.tensordicts] == [["a.b", "c"], ["a.b"]]
    nested = stack.unflatten_keys(".")
    assert [sorted(m.keys()) for m in nested.tensordicts] == [["a", "c"], ["a"]]
    for out in (flat, nested):
        got = [m.get(("a.b",) if out is flat else ("a", "b")) for m in out.tensordicts]
        for read, expected in zip(got, (first, second)):
            if isinstance(expected, torch.Tensor):
                assert torch.equal(read, expected)
            else:
                assert read.data == expected if hasattr(read, "data") else read == expected
