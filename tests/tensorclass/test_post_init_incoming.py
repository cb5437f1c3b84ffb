"""``__post_init__`` on data that comes in from outside: ``from_tensordict``, the other
constructors (``fromkeys``, ``from_any``, ``from_dataclass``...), a load or a file run it
once, as the peer's (with ``skip_post_init_on_rebuild`` or not); the results of
operations (index, joins, pad, casts...) do not (see test_tensorclass_declaration.py's
``test_not_run_by_operations``)."""

import dataclasses
import os
from collections import namedtuple
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

import tclass
from tclass import TensorDict

CALLS: list[str] = []


@tclass.tensorclass
class Inner:
    y: torch.Tensor

    def __post_init__(self) -> None:
        CALLS.append("Inner")


@tclass.tensorclass
class Counted:
    x: torch.Tensor

    def __post_init__(self) -> None:
        CALLS.append("Counted")


@tclass.tensorclass
class Outer:
    inner: Inner

    def __post_init__(self) -> None:
        CALLS.append("Outer")


@dataclasses.dataclass
class Plain:
    x: torch.Tensor


def _saved(tmp_path: Path) -> str:
    Counted(x=torch.ones(2), batch_size=[2]).memmap(tmp_path / "saved")
    return os.fspath(tmp_path / "saved")


def _h5(tmp_path: Path) -> str:
    pytest.importorskip("h5py")
    path = os.fspath(tmp_path / "f.h5")
    TensorDict(x=torch.ones(2), batch_size=[2]).to_h5(path)
    return path


def _none(tmp_path: Path) -> None:
    return None


def _loaded_into(path: str) -> Any:
    out = Counted(x=torch.zeros(2), batch_size=[2])
    CALLS.clear()  # the record filled in place came in once already
    return out.load_memmap_(path)


ONES = TensorDict(x=torch.ones(2), batch_size=[2])
# what the data comes in through: (the setup, what the setup's result is given to)
INCOMING: dict[str, tuple[Callable[[Path], Any], Callable[[Any], Any]]] = {
    "from_tensordict": (_none, lambda _: Counted.from_tensordict(ONES)),
    "from_dict": (_none, lambda _: Counted.from_dict({"x": torch.ones(2)}, batch_size=[2])),
    "fromkeys": (_none, lambda _: Counted.fromkeys(["x"], torch.ones(()))),
    "from_any": (_none, lambda _: Counted.from_any({"x": torch.ones(2)})),
    "from_namedtuple": (
        _none,
        lambda _: Counted.from_namedtuple(namedtuple("N", "x")(torch.ones(2))),
    ),
    "from_dataclass": (
        _none,
        lambda _: Counted.from_dataclass(Plain(torch.ones(2)), batch_size=[2]),
    ),
    "load_memmap": (_saved, Counted.load_memmap),
    "load": (_saved, Counted.load),
    "tclass.load_memmap": (_saved, tclass.load_memmap),
    "TensorDict.load_memmap": (_saved, TensorDict.load_memmap),
    "load_memmap_": (_saved, _loaded_into),
    "from_h5": (_h5, Counted.from_h5),
}


@pytest.mark.parametrize("setup, incoming", INCOMING.values(), ids=INCOMING.keys())
def test_runs_once_on_incoming_data(
    setup: Callable[[Path], Any], incoming: Callable[[Any], Any], tmp_path: Path
) -> None:
    given = setup(tmp_path)
    CALLS.clear()
    record = incoming(given)
    assert isinstance(record, Counted)
    assert CALLS == ["Counted"]
    assert bool((record.x == 1).all())
    record.close()


def test_nested_records_run_first() -> None:
    """The nested records' hooks run before their parent's, as the peer's."""
    CALLS.clear()
    Outer.from_tensordict(
        TensorDict(inner=TensorDict(y=torch.ones(2), batch_size=[2]), batch_size=[2])
    )
    assert CALLS == ["Inner", "Outer"]


def test_lazy_stack_runs_once_per_member() -> None:
    CALLS.clear()
    stacked = tclass.LazyStackedTensorDict(ONES, ONES.clone(), stack_dim=0)
    record = Counted.from_tensordict(stacked)
    assert CALLS == ["Counted", "Counted"]
    assert record.batch_size == torch.Size([2, 2])


def test_field_cast_does_not_run() -> None:
    """A TensorDict assigned to a record field becomes the field's class: a cast, not
    data that comes in (the peer does not run the hook either)."""
    record = Outer(inner=Inner(y=torch.ones(2), batch_size=[2]), batch_size=[2])
    CALLS.clear()
    record.inner = TensorDict(y=torch.zeros(2), batch_size=[2])  # type: ignore[assignment]
    assert isinstance(record.inner, Inner)
    assert CALLS == []


def test_hook_derives_and_validates() -> None:
    @tclass.tensorclass
    class Ragged:
        offsets: torch.Tensor
        total: torch.Tensor | None = None

        def __post_init__(self) -> None:
            if int(self.offsets[-1]) < 0:
                raise ValueError("the last offset must be >= 0")
            self.total = self.offsets * 2

    record = Ragged.from_tensordict(TensorDict(offsets=torch.tensor([0, 2, 3]), batch_size=[3]))
    assert torch.equal(record.total, torch.tensor([0, 4, 6]))
    with pytest.raises(ValueError, match="the last offset must be >= 0") as raised:
        Ragged.from_tensordict(TensorDict(offsets=torch.tensor([0, -1]), batch_size=[2]))
    assert type(raised.value) is ValueError  # the user's error, unchanged
    assert torch.equal(record[1:].total, torch.tensor([4, 6]))  # not run again by an index


def test_frozen_hook_sets_derived_field_and_stays_locked() -> None:
    @tclass.tensorclass(frozen=True)
    class Doubled:
        x: torch.Tensor
        twice: torch.Tensor | None = None

        def __post_init__(self) -> None:
            object.__setattr__(self, "twice", self.x * 2)

    record = Doubled.from_tensordict(TensorDict(x=torch.ones(2), batch_size=[2]))
    assert torch.equal(record.twice, torch.full((2,), 2.0))
    assert record.is_locked


def test_initvars_take_their_defaults() -> None:
    seen: list[float] = []

    @tclass.tensorclass
    class Scaled:
        x: torch.Tensor
        scale: dataclasses.InitVar[float] = 3.0

        def __post_init__(self, scale: float) -> None:
            seen.append(scale)

    Scaled.from_tensordict(TensorDict(x=torch.ones(2), batch_size=[2]))
    assert seen == [3.0]


def test_loaded_lazy_stack_runs_once_per_member(tmp_path: Path) -> None:
    """A ragged stack (no dense field) comes back from a folder member by member."""
    parts = [Counted(x=torch.ones(n), batch_size=[n]) for n in (2, 3)]
    tclass.lazy_stack(parts).memmap(tmp_path / "ragged")
    CALLS.clear()
    back = Counted.load_memmap(tmp_path / "ragged")
    assert CALLS == ["Counted", "Counted"]
    assert back[1].x.shape == (3,)
