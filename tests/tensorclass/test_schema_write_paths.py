"""Every write path against every rule of a record class: where features meet.

A value constraint (``Spec(le=1)``), a dtype/shape spec, ``frozen``, a field's type:
each must hold on every path that writes into a record, all or nothing (a refused
write leaves every field as it was), with a ``FieldSpecError`` (a TclassError and a
``ValueError``) naming the class, the field and the bound. Paths covered: the
constructor, ``from_dict``, ``from_tensordict``, attribute assignment, ``rec[idx] =``
(int, slice, mask, tensor index, Ellipsis), ``rec[idx].field =``, ``set``, ``set_``,
``set_at_``, ``update``, ``update_``, ``update_at_``, ``fill_``, ``copy_``, ``apply_``,
in-place math, ``masked_fill_``, ``where``/``stack``/``cat`` with ``out=``,
``load_state_dict``, ``append_memmap_``, lazy stacks, a TensorDict holding the record
(nested keys, views, ``update``/``update_``), ``unbind``, records over HDF5 files and
memory-mapped folders, clones and pickles. Not checkable (README, Schemas): writes into
a field's tensor itself (``rec.p[idx] = v``, ``rec.p.add_(1)``), which are plain
tensors, and ``TensorDictParams``, whose parameters are the record's tensors.
"""

from __future__ import annotations

import multiprocessing
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import pytest
import torch

import tclass
from tclass import Spec, TensorClass, TensorDict, errors

Tensor = torch.Tensor
FieldSpecError = errors.FieldSpecError


class Bounded(TensorClass):
    a: Annotated[Tensor, Spec("", torch.float32)]
    p: Annotated[Tensor, Spec("k", torch.float32, ge=0, le=1)]
    note: str = "n"


def rec(n: int = 4) -> Bounded:
    return Bounded(a=torch.zeros(n), p=torch.full((n, 3), 0.5), batch_size=[n])


def bad_p(n: int = 4) -> Tensor:
    return torch.full((n, 3), 2.0)


def forced(n: int = 4) -> Bounded:
    """A record holding values its class refuses (built past the checks, as data a
    check would refuse arrives from outside), its ``a`` a valid change."""
    record = Bounded(a=torch.ones(n), p=torch.full((n, 3), 0.5), batch_size=[n])
    record._tensordict._tensors["p"] = bad_p(n)
    return record


def _lazy_set(r: Bounded) -> None:
    tclass.lazy_stack([r[0], r[1]]).set_("p", bad_p(2))


def _lazy_row(r: Bounded) -> None:
    tclass.lazy_stack([r[0], r[1]])[0] = forced(1)[0]


def _lazy_attr(r: Bounded) -> None:
    tclass.lazy_stack([r[0], r[1]]).p = bad_p(2)


def _held(r: Bounded) -> TensorDict:
    return TensorDict({"rec": r, "x": torch.zeros(4)}, [4])


def _state_dict(r: Bounded) -> None:
    state = r.state_dict()
    state["a"], state["p"] = torch.ones(4), bad_p()
    r.load_state_dict(state)


# Each writes p = 2.0 (and, where it writes several fields, a valid ``a`` first).
WRITES: dict[str, Callable[[Bounded], object]] = {
    "constructor": lambda r: Bounded(a=torch.ones(4), p=bad_p(), batch_size=[4]),
    "from_dict": lambda r: Bounded.from_dict({"a": torch.ones(4), "p": bad_p()}, batch_size=[4]),
    "from_tensordict": lambda r: Bounded.from_tensordict(
        TensorDict({"a": torch.ones(4), "p": bad_p()}, [4])
    ),
    "attribute": lambda r: setattr(r, "p", bad_p()),
    "rec[int] =": lambda r: r.__setitem__(1, forced()[1]),
    "rec[slice] =": lambda r: r.__setitem__(slice(0, 2), forced(2)),
    "rec[mask] =": lambda r: r.__setitem__(torch.tensor([True, False, True, False]), forced(2)),
    "rec[tensor] =": lambda r: r.__setitem__(torch.tensor([3, 0]), forced(2)),
    "rec[...] =": lambda r: r.__setitem__(..., forced()),
    "rec[dict] =": lambda r: r.__setitem__(slice(0, 2), {"a": torch.ones(2), "p": bad_p(2)}),
    "rec[int].p =": lambda r: setattr(r[1], "p", torch.full((3,), 2.0)),
    "rec[slice].p =": lambda r: setattr(r[1:3], "p", bad_p(2)),
    "set": lambda r: r.set("p", bad_p()),
    "set inplace": lambda r: r.set("p", bad_p(), inplace=True),
    "set_": lambda r: r.set_("p", bad_p()),
    "set_at_": lambda r: r.set_at_("p", torch.full((3,), 2.0), 0),
    "update": lambda r: r.update({"a": torch.ones(4), "p": bad_p()}),
    "update TensorDict": lambda r: r.update(TensorDict({"a": torch.ones(4), "p": bad_p()}, [4])),
    "update kwargs": lambda r: r.update(a=torch.ones(4), p=bad_p()),
    "update inplace": lambda r: r.update({"a": torch.ones(4), "p": bad_p()}, inplace=True),
    "update_": lambda r: r.update_({"a": torch.ones(4), "p": bad_p()}),
    "update_at_": lambda r: r.update_at_({"a": torch.ones(2), "p": bad_p(2)}, slice(0, 2)),
    "fill_": lambda r: r.fill_("p", 2.0),
    "copy_": lambda r: r.copy_(forced()),
    "apply_": lambda r: r.apply_(lambda x: x * 4),
    "add_": lambda r: r.add_(2),
    "+=": lambda r: r.__iadd__(2),
    "clamp_": lambda r: r.clamp_(min=2),
    "masked_fill_": lambda r: r.masked_fill_(torch.ones(4, dtype=torch.bool), 2),
    "view add_": lambda r: r[2:].add_(1),
    "where out=": lambda r: torch.where(torch.ones(4, dtype=torch.bool), forced(), rec(), out=r),
    "stack out=": lambda r: torch.stack(list(forced().unbind(0)), 0, out=r),
    "cat out=": lambda r: torch.cat([forced(2), rec(2)], 0, out=r),
    "load_state_dict": _state_dict,
    "lazy stack set_": _lazy_set,
    "lazy stack row": _lazy_row,
    "lazy stack attribute": _lazy_attr,
    "td.set nested": lambda r: _held(r).set(("rec", "p"), bad_p()),
    "td.set_ nested": lambda r: _held(r).set_(("rec", "p"), bad_p()),
    "td[nested] =": lambda r: _held(r).__setitem__(("rec", "p"), bad_p()),
    "td.update nested": lambda r: _held(r).update({"rec": {"a": torch.ones(4), "p": bad_p()}}),
    "td.update_ nested": lambda r: _held(r).update_(
        {"x": torch.ones(4), "rec": {"a": torch.ones(4), "p": bad_p()}}
    ),
    "td.update_ tuple keys": lambda r: _held(r).update_(
        {("rec", "a"): torch.ones(4), ("rec", "p"): bad_p()}
    ),
    "td.update_at_ nested": lambda r: _held(r).update_at_(
        {"rec": {"a": torch.ones(2), "p": bad_p(2)}}, slice(0, 2)
    ),
    "td[idx] =": lambda r: _held(r).__setitem__(
        slice(1, 3), TensorDict({"rec": forced(2), "x": torch.ones(2)}, [2])
    ),
    "td view set_": lambda r: _held(r)[1:3].set_(("rec", "p"), bad_p(2)),
    "td.copy_": lambda r: _held(r).copy_(TensorDict({"rec": forced(), "x": torch.ones(4)}, [4])),
    "td.add_": lambda r: _held(r).add_(2),
    "td.apply_": lambda r: _held(r).apply_(lambda x: x + 2),
    "td.fill_ nested": lambda r: _held(r).fill_(("rec", "p"), 3.0),
    "td.masked_fill_": lambda r: _held(r).masked_fill_(torch.ones(4, dtype=torch.bool), 3.0),
    "unbind then attribute": lambda r: setattr(r.unbind(0)[0], "p", torch.full((3,), 2.0)),
    "unbind then set_": lambda r: r.unbind(0)[0].set_("p", torch.full((3,), 2.0)),
}


@pytest.mark.parametrize("path", list(WRITES))
def test_a_bound_holds_on_every_write_path_and_nothing_is_written(path: str) -> None:
    record = rec()
    before = record.clone()
    with pytest.raises(FieldSpecError) as caught:
        WRITES[path](record)
    error = caught.value
    assert isinstance(error, errors.TclassError) and isinstance(error, ValueError)
    assert "Bounded.p" in str(error) and "le=1" in str(error), str(error)
    assert (record == before).all(), path  # all or nothing: ``a`` kept too


# The same paths given values that fit: the checks refuse nothing valid.
FITS: dict[str, Callable[[Bounded], object]] = {
    "update": lambda r: r.update({"a": torch.ones(4), "p": torch.full((4, 3), 0.25)}),
    "update_": lambda r: r.update_({"a": torch.ones(4), "p": torch.full((4, 3), 0.25)}),
    "td.update nested": lambda r: _held(r).update({"rec": {"p": torch.full((4, 3), 0.25)}}),
    "td.update_ nested": lambda r: _held(r).update_({"rec": {"p": torch.full((4, 3), 0.25)}}),
    "td.update_at_ nested": lambda r: _held(r).update_at_(
        {"rec": {"p": torch.full((4, 3), 0.25)}}, ...
    ),
    "load_state_dict": lambda r: r.load_state_dict({"a": torch.ones(4), "p": r.p / 2}),
}


@pytest.mark.parametrize("path", list(FITS))
def test_values_that_fit_are_written_into_the_record(path: str) -> None:
    record = rec()
    FITS[path](record)
    assert (record.p == 0.25).all() and isinstance(record, Bounded)


def test_a_tensordict_update_merges_into_the_record_it_holds() -> None:
    # As the peer: the record stays (its class, other fields and checks), not replaced
    # by a TensorDict of the mapping's keys.
    record = rec()
    held = _held(record)
    held.update({"rec": {"p": torch.full((4, 3), 0.25)}})
    assert held.get("rec") is record and record.a.shape == (4,) and (record.p == 0.25).all()
    held.update({"rec": TensorDict({"a": torch.ones(4)}, [4])})
    assert held.get("rec") is record and (record.a == 1).all()


def test_update_of_fields_sharing_a_dim_may_change_its_size_together() -> None:
    class Pair(TensorClass):
        x: Annotated[Tensor, Spec("h", torch.float32)]
        y: Annotated[Tensor, Spec("h", torch.float32)]

    pair = Pair(x=torch.zeros(2, 3), y=torch.zeros(2, 3), batch_size=[2])
    pair.update({"x": torch.zeros(2, 5), "y": torch.zeros(2, 5)})
    assert pair.x.shape == pair.y.shape == (2, 5)
    with pytest.raises(FieldSpecError, match="dim 'h'"):
        pair.update({"x": torch.ones(2, 4), "y": torch.ones(2, 6)})
    assert pair.x.shape == (2, 5) and (pair.x == 0).all()


def test_update_names_a_field_the_class_lacks_before_writing() -> None:
    record = rec()
    with pytest.raises(errors.UnknownFieldError, match="Bounded has no field 'q'"):
        record.update({"a": torch.ones(4), "q": torch.ones(4)})
    assert (record.a == 0).all()


def test_a_wrong_type_in_update_leaves_the_record_as_it_was() -> None:
    record = rec()
    with pytest.raises(errors.FieldTypeError, match="Bounded.note is annotated str"):
        record.update({"a": torch.ones(4), "note": torch.ones(4)})
    assert (record.a == 0).all() and record.note == "n"


def test_a_dtype_spec_holds_on_the_paths_that_replace_a_field() -> None:
    record = rec()
    for write in (
        lambda: setattr(record, "a", torch.zeros(4, dtype=torch.float64)),
        lambda: record.update({"p": torch.full((4, 3), 0.25), "a": torch.zeros(4).long()}),
        lambda: _held(record).update({"rec": {"a": torch.zeros(4).long()}}),
        lambda: record.__setitem__(0, {"a": torch.tensor(1.0, dtype=torch.float64)}),
    ):
        with pytest.raises(FieldSpecError, match="Bounded.a"):
            write()
    assert record.a.dtype == torch.float32 and (record.p == 0.5).all()


def test_load_state_dict_checks_every_shape_before_copying() -> None:
    record = rec()
    with pytest.raises(errors.BatchSizeError, match="'p' has shape"):
        record.load_state_dict({"a": torch.ones(4), "p": torch.ones(4, 2)})
    assert (record.a == 0).all()


def test_appended_rows_meet_the_class_and_the_folder_is_kept(tmp_path: Path) -> None:
    saved = rec().memmap(tmp_path)
    with pytest.raises(FieldSpecError, match=r"Bounded.p holds 2.0 .* le=1"):
        saved.append_memmap_(forced(2))
    with pytest.raises(FieldSpecError, match="le=1"):
        tclass.append_memmap(tmp_path, forced(2))
    assert Bounded.load_memmap(tmp_path).batch_size == (4,)  # still loads, unchanged
    saved.append_memmap_(rec(2))
    assert Bounded.load_memmap(tmp_path).batch_size == (6,)


def test_records_over_folders_and_files_check_their_writes(tmp_path: Path) -> None:
    saved = rec().memmap(tmp_path / "folder")
    loaded = Bounded.load_memmap(tmp_path / "folder")
    rec().to_h5(str(tmp_path / "r.h5"))
    h5 = Bounded.from_h5(str(tmp_path / "r.h5"))
    for record in (saved, loaded, h5, rec().memmap_(tmp_path / "in_place")):
        for write in (WRITES["set_"], WRITES["rec[int] ="], WRITES["add_"]):
            with pytest.raises(FieldSpecError, match="le=1"):
                write(record)
        assert (record.p == 0.5).all()
    assert (Bounded.load_memmap(tmp_path / "folder").p == 0.5).all()
    rec().to_h5(str(tmp_path / "w.h5"))
    writable = Bounded.from_h5(str(tmp_path / "w.h5"), mode="r+")
    with pytest.raises(FieldSpecError, match="le=1"):
        WRITES["update"](writable)  # ``a`` first, then a ``p`` refused: nothing written
    assert (writable.a == 0).all() and (writable.p == 0.5).all()
    writable.update({"a": torch.ones(4), "p": torch.full((4, 3), 0.25)})
    assert (writable.p == 0.25).all() and (writable.a == 1).all()


def test_a_folder_a_tensordict_wrote_is_checked_when_read_as_the_class(tmp_path: Path) -> None:
    # Loading with the class refuses a folder of another class; the TensorDict it holds
    # becomes a record through from_tensordict, which checks it.
    TensorDict({"a": torch.zeros(4), "p": bad_p()}, [4]).memmap(tmp_path)
    with pytest.raises(errors.ClassMismatchError, match="not of class Bounded"):
        Bounded.load_memmap(tmp_path)
    with pytest.raises(FieldSpecError, match="le=1"):
        Bounded.from_tensordict(TensorDict.load_memmap(tmp_path))


COPIES: dict[str, Callable[[Bounded], Bounded]] = {
    "clone": lambda r: r.clone(),
    "index": lambda r: r[1:],
    "pickle": lambda r: pickle.loads(pickle.dumps(r)),
    "to(float64) and back": lambda r: r.to(torch.float64).to(torch.float32),
    "stack": lambda r: torch.stack([r, r]),
    "unbind": lambda r: r.unbind(0)[0],
}


@pytest.mark.parametrize("how", list(COPIES))
def test_copies_keep_the_checks(how: str) -> None:
    copy = COPIES[how](rec())
    with pytest.raises(FieldSpecError, match="le=1"):
        copy.add_(2)
    with pytest.raises(FieldSpecError, match="le=1"):
        copy.p = torch.full_like(copy.p, 2.0)


def _first(batch: list[Bounded]) -> Bounded:
    return batch[0]


@pytest.mark.skipif(
    "fork" not in multiprocessing.get_all_start_methods(), reason="needs fork workers"
)
def test_a_record_from_a_dataloader_worker_keeps_its_checks() -> None:
    data = [rec(2), rec(2)]
    loader = torch.utils.data.DataLoader(
        data, batch_size=1, num_workers=1, collate_fn=_first, multiprocessing_context="fork"
    )
    received = next(iter(loader))
    assert type(received) is Bounded and (received.p == 0.5).all()
    with pytest.raises(FieldSpecError, match="le=1"):
        received.add_(2)


def test_tensors_of_the_fields_and_tensordictparams_are_not_checked() -> None:
    # What the README says cannot be checked: nothing passes through the record.
    record = rec()
    record.p[0] = 2.0
    params = tclass.TensorDictParams(rec(), no_convert=True)
    params.set_("p", bad_p())
    assert record.p[0, 0] == 2 and params["p"][0, 0] == 2
    with pytest.raises(FieldSpecError, match="le=1"):
        Bounded.from_tensordict(record.to_tensordict())  # the check the README points to


def test_set_of_a_field_through_tensordictparams_is_checked() -> None:
    # set goes through the record (as the peer's params of a record sets through it):
    # cast and checked, as the record's own set
    params = tclass.TensorDictParams(rec())
    with pytest.raises(FieldSpecError, match="le=1"):
        params.set("p", bad_p())
    assert (params["p"] == 0.5).all()
    params.set("p", torch.full((4, 3), 0.25))
    assert isinstance(params["p"], torch.nn.Parameter) and (params["p"] == 0.25).all()


# --- frozen -----------------------------------------------------------------------------


class Frozen(TensorClass, frozen=True):
    x: torch.Tensor
    s: str = "a"


def frozen() -> Frozen:
    return Frozen(x=torch.zeros(3), batch_size=[3])


REPLACING: dict[str, Callable[[Frozen], object]] = {
    "attribute": lambda f: setattr(f, "x", torch.ones(3)),
    "set": lambda f: f.set("x", torch.ones(3)),
    "update": lambda f: f.update({"x": torch.ones(3)}),
    "python value": lambda f: setattr(f, "s", "b"),
    "td.set nested": lambda f: TensorDict({"r": f}, [3]).set(("r", "x"), torch.ones(3)),
    "td.update nested": lambda f: TensorDict({"r": f}, [3]).update({"r": {"x": torch.ones(3)}}),
}


@pytest.mark.parametrize("path", list(REPLACING))
def test_frozen_refuses_every_replacing_write(path: str) -> None:
    record = frozen()
    with pytest.raises(errors.FrozenInstanceError, match="Frozen is frozen"):
        REPLACING[path](record)
    assert (record.x == 0).all() and record.s == "a"


@pytest.mark.parametrize("how", [*COPIES, "memmap reload"])
def test_frozen_is_kept_by_copies(how: str, tmp_path: Path) -> None:
    if how == "memmap reload":
        frozen().memmap(tmp_path)
        copy: Any = Frozen.load_memmap(tmp_path)
    else:
        copy = COPIES[how](frozen())  # type: ignore[arg-type]
    with pytest.raises(errors.FrozenInstanceError):
        copy.x = torch.ones_like(copy.x)


def test_frozen_allows_in_place_writes() -> None:
    record = frozen()
    record.set_("x", torch.ones(3))
    record[0] = Frozen(x=torch.full((), 2.0), batch_size=[])
    record.add_(1)
    assert record.x.tolist() == [3, 2, 2]


def test_frozen_holds_through_a_lazy_stack_of_records() -> None:
    stacked = tclass.lazy_stack([frozen(), frozen()])
    with pytest.raises(errors.FrozenInstanceError, match="Frozen is frozen"):
        stacked.x = torch.ones(2, 3)
    assert (stacked.x == 0).all()


# --- field types, class options -----------------------------------------------------------


class Typed(TensorClass):
    x: torch.Tensor
    s: str = "a"
    y: torch.Tensor | None = None


def typed() -> Typed:
    return Typed(x=torch.zeros(3), batch_size=[3])


MISTYPED: dict[str, Callable[[Typed], object]] = {
    "attribute": lambda r: setattr(r, "s", torch.ones(3)),
    "set": lambda r: r.set("s", torch.ones(3)),
    "update": lambda r: r.update({"x": torch.ones(3), "s": torch.ones(3)}),
    "td.set nested": lambda r: TensorDict({"r": r}, [3]).set(("r", "s"), torch.ones(3)),
    "td.update nested": lambda r: TensorDict({"r": r}, [3]).update(
        {"r": {"x": torch.ones(3), "s": torch.ones(3)}}
    ),
    "rec[int] = tensor into str": lambda r: r.__setitem__(0, {"s": torch.ones(())}),
    "rec[slice] = str into tensor": lambda r: r.__setitem__(slice(0, 2), {"x": "text"}),
    "rec[int] = str into unset tensor": lambda r: r.__setitem__(0, {"y": "text"}),
    "rec[mask] = TensorDict": lambda r: r.__setitem__(
        torch.tensor([True, False, True]), TensorDict({"s": torch.ones(2)}, [2])
    ),
    "set_at_ tensor into str": lambda r: r.set_at_("s", torch.ones(()), 0),
    "set_at_ str into tensor": lambda r: r.set_at_("x", "text", 0),
    "update_at_": lambda r: r.update_at_({"x": torch.ones(2), "s": torch.ones(2)}, slice(0, 2)),
    "td.update_at_ nested": lambda r: TensorDict({"r": r}, [3]).update_at_(
        {"r": {"s": torch.ones(())}}, 0
    ),
    "lazy stack attribute": lambda r: setattr(tclass.lazy_stack([r[0], r[1]]), "s", torch.ones(2)),
    "from_tensordict": lambda r: Typed.from_tensordict(
        TensorDict({"x": torch.zeros(3), "s": torch.ones(3)}, [3])
    ),
}


@pytest.mark.parametrize("path", list(MISTYPED))
def test_a_field_type_holds_on_every_write_path(path: str) -> None:
    record = typed()
    with pytest.raises(errors.FieldTypeError, match=r"Typed\.[sxy] is annotated") as caught:
        MISTYPED[path](record)
    assert isinstance(caught.value, TypeError)
    assert (record.x == 0).all() and record.s == "a" and record.y is None


def test_in_place_copies_keep_each_field_kind() -> None:
    record = typed()
    with pytest.raises(errors.InPlaceWriteError, match="'s' holds a Python value"):
        record.set_("s", torch.ones(3))
    for write in (
        lambda: record.update_({"x": torch.ones(3), "s": torch.ones(3)}),
        lambda: record.update_({"x": "text"}),
        lambda: TensorDict({"r": record}, [3]).update_(
            {"r": {"x": torch.ones(3), "s": torch.ones(3)}}
        ),
    ):
        with pytest.raises(errors.FieldTypeError, match=r"Typed\.[sx] is annotated"):
            write()
    assert (record.x == 0).all() and record.s == "a"


def test_python_values_and_numbers_are_still_written_into_rows() -> None:
    record = typed()
    record[0] = {"s": "b", "x": 1.0}
    record[1:] = 2
    assert record.s == ["b", "a", "a"] and record.x.tolist() == [1, 2, 2]


class AutoCast(TensorClass["autocast"]):
    x: torch.Tensor
    n: int = 0


class NoCast(TensorClass["nocast"]):
    x: torch.Tensor
    n: int = 0


@pytest.mark.parametrize("Cast", [AutoCast, NoCast])
def test_autocast_and_nocast_hold_on_every_path(Cast: Any, tmp_path: Path) -> None:
    def made() -> Any:
        return Cast(x=torch.zeros(3), n=1, batch_size=[3])

    paths: list[Callable[[], Any]] = [
        lambda: made().set("n", 2),
        lambda: made().update({"n": 2}),
        lambda: TensorDict({"r": made()}, [3]).update({"r": {"n": 2}})["r"],
        lambda: Cast.from_dict({"x": torch.zeros(3), "n": 2}, batch_size=[3]),
        lambda: pickle.loads(pickle.dumps(made().replace(n=2))),
        lambda: made().replace(n=2).clone(),
        lambda: (made().replace(n=2).memmap(tmp_path), Cast.load_memmap(tmp_path))[1],
    ]
    for path in paths:
        record = path()
        assert type(record) is Cast and record.n == 2 and type(record.n) is int
    cast_record = made().to(torch.float64)
    assert cast_record.x.dtype == torch.float64 and type(cast_record.n) is int
    if Cast is AutoCast:  # a tensor converted to the annotation
        given = made().set("n", torch.tensor(3))
        assert type(given.n) is int and given.n == 3
    else:  # kept as given
        given = made().set("n", torch.full((3,), 3))
        assert isinstance(given.n, Tensor) and given.n.tolist() == [3, 3, 3]


def test_tensor_only_and_optional_fields_hold_on_every_path() -> None:
    class Only(TensorClass["tensor_only"]):
        x: torch.Tensor
        y: torch.Tensor | None = None

    record = Only(x=torch.zeros(3), batch_size=[3])
    for write in (
        lambda: setattr(record, "y", "text"),
        lambda: record.update({"x": torch.ones(3), "y": "text"}),
        lambda: TensorDict({"r": record}, [3]).set(("r", "y"), "text"),
        lambda: record.__setitem__(0, {"y": "text"}),
    ):
        with pytest.raises(errors.FieldTypeError, match=r"Only\.y is annotated"):
            write()
    assert record.y is None and (record.x == 0).all()
    record[0] = {"y": torch.ones(())}  # an unset optional field: the first write allocates it
    assert record.y.tolist() == [1, 0, 0]
    record.update({"y": None})
    assert record.y is None


class _Leaf(TensorClass):
    z: Annotated[Tensor, Spec("", torch.float32, ge=0)]


class _Inner(TensorClass):
    q: Annotated[Tensor, Spec("", torch.float32, ge=0)]
    leaf: _Leaf | None = None


class _Outer(TensorClass):
    x: Tensor
    inner: _Inner | None = None


# Writes below a record field that holds None: the write makes the field's collection
# (as the peer), so its values are checked against the field's class as assignment
# (``outer.inner = {"q": -1}``) checks them.
UNSET: dict[str, Callable[[_Outer], object]] = {
    "rec[int] = dict": lambda o: o.__setitem__(0, {"inner": {"q": torch.tensor(-1.0)}}),
    "rec[:] = TensorDict": lambda o: o.__setitem__(
        slice(None), TensorDict({"inner": {"q": -torch.ones(3)}}, [3])
    ),
    "rec[int] = deeper": lambda o: o.__setitem__(
        0, {"inner": {"q": torch.tensor(1.0), "leaf": {"z": torch.tensor(-1.0)}}}
    ),
    "set nested": lambda o: o.set(("inner", "q"), -torch.ones(3)),
    "set deeper": lambda o: o.set(("inner", "leaf", "z"), -torch.ones(3)),
    "set_ nested": lambda o: o.set_(("inner", "q"), -torch.ones(3)),
    "update tuple key": lambda o: o.update({("inner", "q"): -torch.ones(3)}),
    "update_ tuple key": lambda o: o.update_({("inner", "q"): -torch.ones(3)}),
    "held in a TensorDict, row": lambda o: TensorDict({"o": o}, [3]).__setitem__(
        0, {"o": {"inner": {"q": torch.tensor(-1.0)}}}
    ),
    "held in a TensorDict, set": lambda o: TensorDict({"o": o}, [3]).set(
        ("o", "inner", "q"), -torch.ones(3)
    ),
    "held in a TensorDict, set_": lambda o: TensorDict({"o": o}, [3]).set_(
        ("o", "inner", "q"), -torch.ones(3)
    ),
    "lazy stack set nested": lambda o: tclass.lazy_stack([o[0], o[1]]).set(
        ("inner", "q"), -torch.ones(2)
    ),
    "lazy stack row": lambda o: tclass.lazy_stack([o[0], o[1]]).__setitem__(
        0, {"inner": {"q": torch.tensor(-1.0)}}
    ),
}


@pytest.mark.parametrize("path", list(UNSET))
def test_a_write_making_an_unset_nested_record_checks_its_class(path: str) -> None:
    outer = _Outer(x=torch.ones(3), batch_size=[3])
    with pytest.raises(FieldSpecError) as caught:
        UNSET[path](outer)
    assert "breaks ge=0" in str(caught.value) and "Nothing was written" in str(caught.value)
    assert "into its field 'inner'" in str(caught.value), str(caught.value)
    assert outer.inner is None and (outer.x == 1).all()


def test_values_that_fit_make_the_unset_nested_collection_as_the_peer() -> None:
    outer = _Outer(x=torch.ones(3), batch_size=[3])
    outer[0] = {"inner": {"q": torch.tensor(2.0)}}
    assert outer.inner is not None and outer.inner.get("q").tolist() == [2.0, 0.0, 0.0]
    outer = _Outer(x=torch.ones(3), batch_size=[3])
    outer.set(("inner", "q"), torch.full((3,), 0.5))
    assert outer.inner is not None and outer.inner.get("q").tolist() == [0.5] * 3


class _Made(TensorClass):
    q: Annotated[Tensor, Spec("2", torch.float32, ge=1)]


class _Holder(TensorClass):
    x: Tensor
    made: _Made | None = None


@pytest.mark.parametrize(
    ("write", "message"),
    [
        (
            lambda h: h.__setitem__(..., {"made": {"q": torch.ones(3, 2, dtype=torch.int64)}}),
            "wants float32",
        ),
        (lambda h: h.set(("made", "q"), torch.ones(3, 5)), "fixes it to 2"),
        # the rows not written are zeros, which ge=1 refuses
        (lambda h: h.__setitem__(0, {"made": {"q": torch.ones(2)}}), "holds 0.0 at index (1, 0)"),
    ],
)
def test_the_record_a_write_makes_under_an_unset_field_is_checked_whole(
    write: Callable[[_Holder], object], message: str
) -> None:
    holder = _Holder(x=torch.ones(3), batch_size=[3])
    with pytest.raises(FieldSpecError, match="the _Made it makes there") as caught:
        write(holder)
    assert message in str(caught.value) and holder.made is None
    holder.set(("made", "q"), torch.full((3, 2), 2.0))  # what fits is made, as the peer
    assert holder.made is not None and (holder.made.get("q") == 2).all()
