"""``rename_key_`` and ``del_`` of a lazy stack whose members sit in lazy stacks of their
own, several over one collection (``reshape(-1, 1, 1)`` of a ``repeat_interleave``): each
collection changes once. tclass renamed a repeated member twice, the second time raising
``KeyNotFoundError`` after the first had renamed it (program 16,310,530 (L8) of
methods,features,entries,records)."""

from __future__ import annotations

import pytest
import torch

from tclass import TensorDict, errors, lazy_stack


def _nested() -> object:
    def member() -> TensorDict:
        return TensorDict({"b": torch.zeros(3, 2), "d": torch.zeros(3, dtype=torch.bool)}, [])

    stacked = lazy_stack([member(), member()], 0).repeat_interleave(2, dim=0)
    nested = torch.reshape(stacked, [-1, 1, 1])
    assert nested.batch_size == torch.Size([4, 1, 1])  # type: ignore[attr-defined]
    return nested


def test_rename_key_reaches_each_collection_once() -> None:
    nested = _nested()
    nested.rename_key_("d", "renamed")  # type: ignore[attr-defined]
    assert sorted(nested.keys()) == ["b", "renamed"]  # type: ignore[attr-defined]
    assert nested["renamed"].shape == (4, 1, 1, 3)  # type: ignore[index]


def test_del_reaches_each_collection_once() -> None:
    nested = _nested()
    nested.del_("d")  # type: ignore[attr-defined]
    assert sorted(nested.keys()) == ["b"]  # type: ignore[attr-defined]
    with pytest.raises(errors.KeyNotFoundError):
        nested.del_("d")  # type: ignore[attr-defined]
