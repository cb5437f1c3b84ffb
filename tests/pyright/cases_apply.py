# pyright: strict
"""Checked by pyright in strict mode (``make typecheck``), never run: the function given
to ``apply``, ``named_apply`` and ``apply_`` gets typed parameters (tensors; a ``str``
key, or ``str`` and tuples with ``nested_keys=True``), so a lambda's parameters are not
Unknown. mypy checks the same methods' results in tests/typing/."""

from __future__ import annotations

import torch
from typing_extensions import assert_type

from tclass import LazyStackedTensorDict, TensorClass, TensorDict


class Step(TensorClass):
    obs: torch.Tensor


def cases() -> None:
    rec = Step(obs=torch.zeros(3), batch_size=[3])
    td = TensorDict(a=torch.zeros(3), batch_size=[3])
    lazy = LazyStackedTensorDict(td, td, stack_dim=0)
    assert_type(rec.apply(lambda t: assert_type(t, torch.Tensor)), Step)
    assert_type(td.apply(lambda t: t.float(), batch_size=[3], propagate_lock=True), TensorDict)
    assert_type(td.apply(lambda t, o: t + assert_type(o, torch.Tensor), td), TensorDict)
    assert_type(lazy.apply(lambda t: t * 2), LazyStackedTensorDict)
    assert_type(td.named_apply(lambda k, t: t if assert_type(k, str) else None), TensorDict)
    nested = rec.named_apply(
        lambda k, t: t if assert_type(k, str | tuple[str, ...]) else None, nested_keys=True
    )
    assert_type(nested, Step)
    assert_type(td.named_apply(lambda k, t, o: t + o, td), TensorDict)
    assert_type(td.apply_(lambda t: assert_type(t, torch.Tensor).zero_()), TensorDict)
    assert_type(rec.apply_(lambda t, o: t.copy_(o), rec), Step)
