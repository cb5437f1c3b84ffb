"""A nested key that is missing (nu26c): the error names the whole key and the nested
collection where it stops, with that collection's keys, whichever method reads it (it
used to list the keys of the top level or of the nested one without saying which)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

import tclass
from tclass import TensorDict
from tclass.errors import KeyNotFoundError


def _td() -> TensorDict:
    inner = TensorDict({"c": torch.ones(4, 2), "m": {"d": torch.ones(4)}}, [4])
    return TensorDict({"a": torch.zeros(4, 3), "n": inner}, [4])


@tclass.tensorclass
class _In:
    y: torch.Tensor


@tclass.tensorclass
class _Out:
    x: torch.Tensor
    inner: _In


READS: dict[str, Callable[[Any, tuple[str, ...]], object]] = {
    "getitem": lambda c, k: c[k],
    "pop": lambda c, k: c.pop(k),
    "select": lambda c, k: c.select(k),
    "del_": lambda c, k: c.del_(k),
    "rename_key_": lambda c, k: c.rename_key_(k, "w"),
}


@pytest.mark.parametrize("read", READS.values(), ids=list(READS))
@pytest.mark.parametrize(
    ("key", "where"),
    [
        (
            ("n", "nope"),
            "in TensorDict with keys ['c', 'm'] (the TensorDict under 'n', which has no 'nope')",
        ),
        (
            ("n", "m", "zz"),
            "in TensorDict with keys ['d'] (the TensorDict under ('n', 'm'), which has no 'zz')",
        ),
        (
            ("n", "zz", "q"),
            "in TensorDict with keys ['c', 'm'] (the TensorDict under 'n', which has no 'zz')",
        ),
    ],
)
def test_a_missing_nested_key_names_the_key_and_where_it_stops(
    read: Callable[[Any, tuple[str, ...]], object], key: tuple[str, ...], where: str
) -> None:
    td = _td()
    with pytest.raises(KeyNotFoundError) as info:
        read(td, key)
    assert isinstance(info.value, KeyError)  # the peer's KeyError
    assert f"{key!r}" in str(info.value) and where in str(info.value)
    assert set(td.keys(True, True)) == {"a", ("n", "c"), ("n", "m", "d")}  # nothing removed


def test_a_missing_first_part_lists_the_top_level_keys() -> None:
    with pytest.raises(KeyNotFoundError, match=r"\('nope', 'c'\) was not found in TensorDict "):
        _td()["nope", "c"]


def test_a_lazy_stack_and_a_record_name_the_nested_collection() -> None:
    stack = tclass.lazy_stack([_td(), _td()])
    with pytest.raises(
        KeyNotFoundError, match=r"\(the LazyStackedTensorDict under 'n', which has no 'nope'\)"
    ):
        stack["n", "nope"]
    record = _Out(x=torch.zeros(3), inner=_In(y=torch.ones(3), batch_size=[3]), batch_size=[3])
    with pytest.raises(
        KeyNotFoundError,
        match=r"_In with keys \['y'\] \(the _In under 'inner', which has no 'zz'\)",
    ):
        record.select(("inner", "zz"))
    assert record.get(("inner", "zz")) is None  # get of a record: None, as the peer's
