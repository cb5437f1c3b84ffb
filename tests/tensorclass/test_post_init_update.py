"""``__post_init__`` on what ``update`` writes (session 23, lo23a), as tensordict 0.15.3
with ``skip_post_init_on_rebuild`` or not: a dict given to ``update`` / ``update_`` (or
keyword arguments) is data coming in: the peer writes ``Cls.from_dict(dict)``, so the
hook runs once on a record of the dict's fields (the others ``None``; nested records'
hooks first) before anything is written; what it sets is written too, what it raises
propagates with the record left as it was. A TensorDict or a record given, ``set``, an
attribute, a row write and ``update_at_`` at rows run nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

import tclass
from tclass import TensorDict

SEEN: list[tuple[str, Any, Any]] = []


def _listed(value: Any) -> Any:
    return None if value is None else value.tolist()


@tclass.tensorclass
class Derived:
    x: torch.Tensor
    y: torch.Tensor

    def __post_init__(self) -> None:
        SEEN.append(("Derived", _listed(self.x), _listed(self.y)))
        self.y = self.x * 2  # derived from x


@tclass.tensorclass(skip_post_init_on_rebuild=True)
class NonNegative:
    x: torch.Tensor
    y: torch.Tensor

    def __post_init__(self) -> None:
        SEEN.append(("NonNegative", _listed(self.x), _listed(self.y)))
        if (self.x < 0).any():
            raise ValueError("x must be >= 0")


@tclass.tensorclass
class Inner:
    a: torch.Tensor
    d: torch.Tensor | None = None

    def __post_init__(self) -> None:
        SEEN.append(("Inner", _listed(self.a), None))
        self.d = self.a + 100


@tclass.tensorclass
class Holder:
    x: torch.Tensor
    inner: Inner


def _derived() -> Any:
    record = Derived(x=torch.zeros(2), y=torch.ones(2), batch_size=[2])
    SEEN.clear()
    return record


def _full(value: float) -> torch.Tensor:
    return torch.full((2,), value)


RUNS: dict[str, Callable[[Any], Any]] = {
    "update(dict)": lambda r: r.update({"x": _full(5.0)}),
    "update(x=)": lambda r: r.update(x=_full(5.0)),
    "update(dict, inplace=True)": lambda r: r.update({"x": _full(5.0)}, inplace=True),
    "update_(dict)": lambda r: r.update_({"x": _full(5.0)}),
    "update_(x=)": lambda r: r.update_(x=_full(5.0)),
}


@pytest.mark.parametrize("write", list(RUNS))
def test_a_dict_written_runs_the_hook_once_on_its_fields(write: str) -> None:
    record = _derived()
    RUNS[write](record)
    assert SEEN == [("Derived", [5.0, 5.0], None)]  # once, the field it lacks None
    assert record.x.tolist() == [5.0, 5.0] and record.y.tolist() == [10.0, 10.0]  # derived


def test_the_hook_has_the_last_word_on_what_it_sets() -> None:
    record = _derived()
    record.update({"x": _full(5.0), "y": _full(6.0)})  # y derived over the one given
    assert SEEN == [("Derived", [5.0, 5.0], [6.0, 6.0])]
    assert record.y.tolist() == [10.0, 10.0]


NOT_RUN: dict[str, Callable[[Any], Any]] = {
    "update(TensorDict)": lambda r: r.update(TensorDict(x=_full(5.0), batch_size=[2])),
    "update_(TensorDict)": lambda r: r.update_(TensorDict(x=_full(5.0), batch_size=[2])),
    "set": lambda r: r.set("x", _full(5.0)),
    "attribute": lambda r: setattr(r, "x", _full(5.0)),
    "update_at_(dict)": lambda r: r.update_at_({"x": torch.tensor(5.0)}, 0),
    "row write": lambda r: r.__setitem__(0, {"x": torch.tensor(5.0)}),
}


@pytest.mark.parametrize("write", list(NOT_RUN))
def test_other_writes_run_nothing(write: str) -> None:
    record = _derived()
    NOT_RUN[write](record)
    assert SEEN == [] and record.x[0] == 5.0 and record.y.tolist() == [0.0, 0.0]


def test_a_record_given_ran_its_hook_when_it_was_built() -> None:
    record, given = _derived(), Derived(x=_full(5.0), y=_full(1.0), batch_size=[2])
    SEEN.clear()
    record.update(given)
    assert SEEN == [] and record.y.tolist() == [10.0, 10.0]


@pytest.mark.parametrize(
    "write",
    [
        lambda r: r.update({"x": _full(-1.0)}),
        lambda r: r.update({"x": _full(-1.0), "y": _full(3.0)}),
        lambda r: r.update_({"x": _full(-1.0)}),
        lambda r: r.update(x=_full(-1.0), y=_full(3.0), inplace=True),
    ],
)
def test_a_hook_that_raises_propagates_and_nothing_is_written(write: Any) -> None:
    record = NonNegative(x=torch.zeros(2), y=torch.ones(2), batch_size=[2])
    x, y = record.x, record.y
    with pytest.raises(ValueError, match=r"^x must be >= 0$") as caught:
        write(record)
    assert type(caught.value) is ValueError  # unchanged, not wrapped
    assert record.x is x and record.y is y
    assert record.x.tolist() == [0.0, 0.0] and record.y.tolist() == [1.0, 1.0]


def test_nested_records_hooks_run_on_a_dict_not_on_a_record_given() -> None:
    record = Holder(x=torch.zeros(2), inner=Inner(a=torch.ones(2), batch_size=[2]), batch_size=[2])
    SEEN.clear()
    record.update({"x": _full(3.0), "inner": {"a": _full(7.0)}})
    assert SEEN == [("Inner", [7.0, 7.0], None)]
    assert record.x.tolist() == [3.0, 3.0] and record.inner.d.tolist() == [107.0, 107.0]
    given = Inner(a=_full(8.0), batch_size=[2])
    SEEN.clear()
    record.update({"inner": given})  # its hook ran when it was built: not again
    assert SEEN == [] and record.inner.d.tolist() == [108.0, 108.0]
    record.update({"inner": TensorDict(a=_full(9.0), batch_size=[2])})  # cast: data in
    assert SEEN == [("Inner", [9.0, 9.0], None)] and record.inner.d.tolist() == [109.0] * 2


def test_a_record_over_a_lazy_stack_runs_it_once() -> None:
    stack = tclass.lazy_stack([_derived(), _derived()])
    SEEN.clear()
    stack.update({"x": torch.full((2, 2), 4.0)})
    assert SEEN == [("Derived", [[4.0, 4.0], [4.0, 4.0]], None)]
    assert stack.y.tolist() == [[8.0, 8.0], [8.0, 8.0]]
