"""``set_`` of a dict into a nested collection: the dict's shapes are checked against the
collection's batch size before its keys are looked up, as the peer makes it a TensorDict
of that batch size first (a ``BatchMismatchError``, a ``RuntimeError``, where a key is
also missing); a dict that fits, with a missing key, is the ``KeyError``."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest
import torch

import tclass
from tclass import errors


def _td(lib: ModuleType) -> Any:
    inner = lib.TensorDict({"m": {"a": torch.zeros(4, 3)}}, batch_size=[4, 3])
    return lib.TensorDict({"m": inner}, batch_size=[4])


@pytest.mark.parametrize(
    ("value", "raised", "peer_raised"),
    [
        ({"q": torch.zeros(4)}, errors.BatchMismatchError, RuntimeError),  # both wrong
        ({"a": torch.zeros(4)}, errors.BatchMismatchError, RuntimeError),  # its shape
        ({"q": torch.zeros(4, 3)}, errors.KeyNotFoundError, KeyError),  # its key
        ({"n": {"q": torch.zeros(4)}}, errors.BatchMismatchError, RuntimeError),  # nested
    ],
)
def test_shapes_are_checked_before_keys(value: Any, raised: type, peer_raised: type) -> None:
    td = _td(tclass)
    with pytest.raises(raised) as caught:
        td.set_(("m", "m"), value)
    assert isinstance(caught.value, peer_raised)
    assert torch.equal(td["m", "m", "a"], torch.zeros(4, 3))  # nothing written
    peer = pytest.importorskip("tensordict")
    with pytest.raises(peer_raised):
        _td(peer).set_(("m", "m"), value)


def test_a_dict_that_fits_is_written() -> None:
    td = _td(tclass)
    td.set_(("m", "m"), {"a": torch.ones(4, 3)})
    assert torch.equal(td["m", "m", "a"], torch.ones(4, 3))


@pytest.mark.parametrize(
    ("value", "raised", "peer_raised"),
    [
        ({"q": torch.zeros(2, 1)}, errors.KeyNotFoundError, KeyError),  # fits the holder
        ({"q": torch.zeros(3)}, errors.BatchMismatchError, RuntimeError),  # fits neither
        ({"d": torch.zeros(2, 1, 3)}, errors.BatchSizeError, RuntimeError),  # the copy
    ],
)
def test_shapes_are_checked_against_the_holders_batch(
    value: Any, raised: type, peer_raised: type
) -> None:
    # the peer makes the dict a TensorDict of the batch size of the collection holding
    # the node ([2, 1]), not of the node's own ([2, 1, 1]): a dict of shapes [2, 1] and
    # a missing key is its KeyError (program 10,540,988 of ``--families entries``, fz20a)
    def make(lib: ModuleType) -> Any:
        inner = lib.TensorDict({"d": torch.ones(2, 1, 1, 3)}, batch_size=[2, 1, 1])
        return lib.TensorDict({"m": inner}, batch_size=[2, 1])

    td = make(tclass)
    with pytest.raises(raised) as caught:
        td.set_("m", value)
    assert isinstance(caught.value, peer_raised)
    assert torch.equal(td["m", "d"], torch.ones(2, 1, 1, 3))  # nothing written
    peer = pytest.importorskip("tensordict")
    with pytest.raises(peer_raised):
        make(peer).set_("m", value)


@pytest.mark.parametrize("method", ["set", "set_"])
def test_a_nested_key_below_a_record_s_unset_field_is_made_as_the_peer(method: str) -> None:
    # The record reads its unset field as None: a TensorDict holding it wrote nothing
    # ("the entry ('r', 'inner') is a tensor"); the peer makes the level.
    peer = pytest.importorskip("tensordict")
    made = []
    for lib in (tclass, peer):

        class Inner(lib.TensorClass):  # type: ignore[name-defined,misc]
            q: torch.Tensor

        class Outer(lib.TensorClass):  # type: ignore[name-defined,misc]
            x: torch.Tensor
            inner: Inner | None = None

        outer = Outer(x=torch.ones(3), batch_size=[3])
        getattr(lib.TensorDict({"r": outer}, [3]), method)(("r", "inner", "q"), torch.arange(3.0))
        made.append((type(outer.inner).__name__, outer.inner.get("q").tolist()))
    assert made[0] == made[1] == ("TensorDict", [0.0, 1.0, 2.0])
