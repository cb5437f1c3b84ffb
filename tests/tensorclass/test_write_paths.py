"""Every write path x every class option, against the peer: where features meet.

One record class per option (none, ``autocast``, ``nocast``, ``tensor_only``,
``frozen``), declared the same way in tclass and in the peer, a tensor field ``x`` and a
field ``n`` (``int``, a tensor under ``tensor_only``). Each path of ``PATHS`` writes one
value of ``VALUES`` into one field: the constructor, ``from_dict``, ``from_tensordict``,
attribute assignment, ``set``, ``update``, ``set_``, ``update_``, ``set_at_``,
``update_at_``, rows (``rec[0] = row``, ``rec[0] = dict``), a view's attribute
(``rec[1:].n =``), ``apply_``, in-place math, ``torch.stack`` and ``lazy_stack`` then a
member's or the stack's write, rows of a ``memmap_like`` buffer, a folder loaded with
``load_memmap`` (then ``set_``), an HDF5 file (``from_h5``), ``TensorDictParams`` and
``load_state_dict``. For each cell:

* where the peer runs the write, tclass runs it too, unless the refusal is one the README
  lists (``DOCUMENTED``), each a ``TclassError`` that says what is wrong;
* a refused write leaves the record as it was (all or nothing);
* what is stored survives a folder, a ``.tdz`` archive and an HDF5 file unchanged
  (``autocast`` gives the same values in memory and after loading);
* a Python value written into rows stays a Python value of the field's type.

The value constraints and specs (``Spec``, annotated-types, jaxtyping) on these paths are
swept in ``test_schema_write_paths.py``; here, where they meet the options.
"""

from __future__ import annotations

import importlib.util
import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import pytest
import torch
from annotated_types import Ge, Le

import tclass
from tclass import Spec, TensorClass, errors

HAS_PEER = importlib.util.find_spec("tensordict") is not None
OPTIONS = ("plain", "autocast", "nocast", "tensor_only", "frozen")


def declare(lib: Any, option: str) -> type:
    """The record class of ``option`` in the library ``lib`` (tclass or the peer)."""
    keywords = {} if option == "plain" else {option: True}
    if option == "tensor_only":

        @lib.tensorclass(**keywords)
        class Only:
            x: torch.Tensor
            n: torch.Tensor = None  # type: ignore[assignment]

        return Only  # type: ignore[no-any-return]

    @lib.tensorclass(**keywords)
    class Rec:
        x: torch.Tensor
        n: int = 0

    return Rec  # type: ignore[no-any-return]


CLASSES: dict[tuple[str, str], type] = {}


def record_class(lib: Any, option: str) -> Any:
    key = (lib.__name__, option)
    if key not in CLASSES:
        CLASSES[key] = declare(lib, option)
    return CLASSES[key]


def base(cls: Any, option: str) -> Any:
    n: Any = torch.zeros(3) if option == "tensor_only" else 1
    return cls(x=torch.zeros(3), n=n, batch_size=[3])


def row(cls: Any, option: str, field: str, value: Any) -> Any:
    values: dict[str, Any] = {"x": torch.tensor(7.0), "n": 5}
    if option == "tensor_only":
        values["n"] = torch.tensor(5.0)
    values[field] = value
    return cls(**values, batch_size=[])


def normal(value: Any) -> tuple[Any, ...]:
    """A field's value as compared: kind, dtype, shape and contents."""
    if value is None:
        return ("unset",)
    if isinstance(value, torch.Tensor):
        return ("tensor", value.dtype, tuple(value.shape), value.tolist())
    if isinstance(value, np.ndarray):
        return ("ndarray", str(value.dtype), value.shape, value.tolist())
    if isinstance(value, np.generic):  # the peer's HDF5 files give numpy scalars back
        return normal(value.item())
    if isinstance(value, bytes):
        return normal(value.decode())
    if isinstance(value, (str, int, float, bool)):
        return (type(value).__name__, value)
    return ("values", [normal(v) for v in value.tolist()])  # one value per element


def seen(record: Any) -> tuple[tuple[Any, ...], ...]:
    return tuple(normal(getattr(record, field)) for field in ("x", "n"))


Write = Callable[[Any, Any, str, str, Any, Path], Any]


def _assigned(record: Any, field: str, value: Any) -> Any:
    setattr(record, field, value)
    return record


def _row_written(record: Any, index: Any, value: Any) -> Any:
    record[index] = value
    return record


def _saved(lib: Any, cls: Any, option: str, field: str, value: Any, tmp: Path) -> Any:
    base(cls, option).set(field, value).memmap(tmp / "saved")
    return cls.load_memmap(tmp / "saved")


def _h5(lib: Any, cls: Any, option: str, field: str, value: Any, tmp: Path) -> Any:
    base(cls, option).set(field, value).to_h5(str(tmp / "r.h5"))
    return cls.from_h5(str(tmp / "r.h5"))


def _params(lib: Any, cls: Any, option: str, field: str, value: Any, tmp: Path) -> Any:
    record = base(cls, option)
    lib.TensorDictParams(record).set_(field, value)
    return record


def _lazy(lib: Any, cls: Any, option: str) -> Any:
    return lib.lazy_stack([base(cls, option), base(cls, option)])


# Each writes ``value`` into ``field`` and returns the record to look at; a path that
# writes into an existing record takes it from ``base`` (``WRITES_INTO`` below).
PATHS: dict[str, Write] = {
    "constructor": lambda lib, c, o, f, v, t: c(**{"x": torch.zeros(3), f: v}, batch_size=[3]),
    "from_dict": lambda lib, c, o, f, v, t: c.from_dict(
        {"x": torch.zeros(3), f: v}, batch_size=[3]
    ),
    "from_tensordict": lambda lib, c, o, f, v, t: (
        c.from_tensordict(lib.TensorDict({"x": torch.zeros(3), f: v}, [3]))
        if isinstance(v, torch.Tensor)
        else c.from_tensordict(lib.TensorDict({"x": torch.zeros(3)}, [3]), non_tensordict={f: v})
    ),
    "rec.f =": lambda lib, c, o, f, v, t: _assigned(base(c, o), f, v),
    "set": lambda lib, c, o, f, v, t: base(c, o).set(f, v),
    "update": lambda lib, c, o, f, v, t: base(c, o).update({f: v}),
    "set_": lambda lib, c, o, f, v, t: base(c, o).set_(f, v),
    "update_": lambda lib, c, o, f, v, t: base(c, o).update_({f: v}),
    "set_at_": lambda lib, c, o, f, v, t: base(c, o).set_at_(f, v, 0),
    "update_at_": lambda lib, c, o, f, v, t: base(c, o).update_at_({f: v}, 0),
    "rec[0] = row": lambda lib, c, o, f, v, t: _row_written(base(c, o), 0, row(c, o, f, v)),
    "rec[0] = TensorDict": lambda lib, c, o, f, v, t: _row_written(
        base(c, o), 0, lib.TensorDict({f: v}, [])
    ),
    "rec[1:].f =": lambda lib, c, o, f, v, t: _assigned(base(c, o)[1:], f, v),
    "apply_": lambda lib, c, o, f, v, t: base(c, o).apply_(lambda x: x + v),
    "add_": lambda lib, c, o, f, v, t: base(c, o).add_(v),
    "stack, member.f =": lambda lib, c, o, f, v, t: _assigned(
        torch.stack([base(c, o), base(c, o)])[0], f, v
    ),
    "stack.set_": lambda lib, c, o, f, v, t: torch.stack([base(c, o), base(c, o)]).set_(f, v)[1],
    "lazy_stack.f =": lambda lib, c, o, f, v, t: _assigned(_lazy(lib, c, o), f, v)[1],
    "lazy_stack, member.f =": lambda lib, c, o, f, v, t: _assigned(_lazy(lib, c, o)[0], f, v),
    "memmap_like rows": lambda lib, c, o, f, v, t: _row_written(
        base(c, o).memmap_like(t / "like"), 0, row(c, o, f, v)
    ),
    "load_memmap": _saved,
    "load_memmap, set_": lambda lib, c, o, f, v, t: (
        base(c, o).memmap(t / "f"),
        c.load_memmap(t / "f").set_(f, v),
    )[1],
    "from_h5": _h5,
    "TensorDictParams.set_": _params,
    "load_state_dict": lambda lib, c, o, f, v, t: base(c, o).load_state_dict(
        {**base(c, o).state_dict(), f: v}
    ),
}
ROW_PATHS = ("set_at_", "update_at_", "rec[0] = row", "rec[0] = TensorDict", "memmap_like rows")
STACK_PATHS = ("stack.set_", "lazy_stack.f =")

VALUES: dict[str, dict[str, Callable[[], Any]]] = {
    "x": {
        "float64": lambda: torch.ones(3, dtype=torch.float64),
        "int64": lambda: torch.ones(3, dtype=torch.int64),
        "list": lambda: [1, 2, 3],
        "numpy": lambda: np.ones(3),
        "2": lambda: 2,
    },
    "n": {
        "2.7": lambda: 2.7,
        "'3'": lambda: "3",
        "tensor(2)": lambda: torch.tensor(2),
        "tensor[3]": lambda: torch.full((3,), 3),
        "np.int64(4)": lambda: np.int64(4),
        "numpy[3]": lambda: np.full(3, 1.5),
    },
}


def given(path: str, field: str, key: str) -> Any:
    """The value of ``VALUES`` as the path writes it: one element's for rows, both
    members' for a stack's own write."""
    value = VALUES[field][key]()
    one_dim = isinstance(value, (torch.Tensor, np.ndarray)) and value.ndim == 1
    if path in ROW_PATHS and (one_dim or isinstance(value, list)):
        return value[0]
    if path in STACK_PATHS and isinstance(value, torch.Tensor) and value.ndim == 1:
        return torch.stack([value, value])
    return value


def outcome(lib: Any, option: str, path: str, field: str, key: str, tmp: Path) -> Any:
    tmp.mkdir(parents=True, exist_ok=True)
    try:
        cls = record_class(lib, option)
        return PATHS[path](lib, cls, option, field, given(path, field, key), tmp)
    except Exception as error:  # noqa: BLE001  (the outcome compared)
        return error


# Refusals of writes the peer runs, each a deliberate difference the README lists.
DOCUMENTED: list[tuple[str, Callable[[str, str, str, str, BaseException], bool]]] = [
    (  # DESIGN 5: a Tensor field takes tensors and array-likes, never a str
        "a str in a Tensor field",
        lambda o, p, f, k, e: o == "tensor_only" and k == "'3'",
    ),
    (  # DESIGN 5: a number or numpy scalar in a Tensor field is a tensor, of the batch's
        # shape (the peer keeps it as a Python value there)
        "a number in a Tensor field",
        lambda o, p, f, k, e: (
            isinstance(e, errors.BatchSizeError)
            and (f == "x" or o == "tensor_only")
            and k in ("2", "2.7", "np.int64(4)")
        ),
    ),
    (  # DESIGN 1: no pickle; a value JSON cannot hold is refused when saved
        "a value JSON cannot hold",
        lambda o, p, f, k, e: (
            isinstance(e, errors.NotSerializableError)
            and p in ("load_memmap", "from_h5", "load_memmap, set_")
        ),
    ),
    (  # README (Python values): autocast holds on every path, from_dict, from_tensordict
        # and update too, where the peer stores the value as it is
        "autocast of a value the annotation cannot take",
        lambda o, p, f, k, e: o == "autocast" and isinstance(e, errors.CastError),
    ),
]


def documented(option: str, path: str, field: str, key: str, error: BaseException) -> str:
    for reason, applies in DOCUMENTED:
        if applies(option, path, field, key, error):
            return reason
    return ""


@pytest.mark.skipif(not HAS_PEER, reason="compares with the peer: pip install tensordict")
@pytest.mark.parametrize("option", OPTIONS)
@pytest.mark.parametrize("path", list(PATHS))
def test_what_the_peer_writes_tclass_writes(option: str, path: str, tmp_path: Path) -> None:
    import tensordict

    refused = []
    for field, key in ((f, k) for f in ("x", "n") for k in VALUES[f]):
        where = tmp_path / field / key
        peer = outcome(tensordict, option, path, field, key, where / "peer")
        ours = outcome(tclass, option, path, field, key, where / "tclass")
        if isinstance(ours, BaseException):  # a clear error, or the function's own (apply_)
            clear = isinstance(ours, errors.TclassError) or type(ours) is type(peer)
            assert clear, (field, key, repr(ours))
            if not isinstance(peer, BaseException) and not documented(
                option, path, field, key, ours
            ):
                refused.append((field, key, repr(ours)))
    assert not refused, refused


Into = Callable[[Any, str, str, Any], object]

# The in-memory paths, into one record; where a path writes several fields, a valid
# ``x`` first, so that a refused ``n`` shows whether ``x`` was written.
INTO: dict[str, Into] = {
    "rec.f =": lambda r, o, f, v: setattr(r, f, v),
    "set": lambda r, o, f, v: r.set(f, v),
    "update": lambda r, o, f, v: r.update({"x": torch.ones(3), f: v}),
    "set_": lambda r, o, f, v: r.set_(f, v),
    "update_": lambda r, o, f, v: r.update_({"x": torch.ones(3), f: v}),
    "set_at_": lambda r, o, f, v: r.set_at_(f, v, 0),
    "update_at_": lambda r, o, f, v: r.update_at_({"x": torch.tensor(1.0), f: v}, 0),
    "rec[0] = dict": lambda r, o, f, v: r.__setitem__(0, {"x": torch.tensor(1.0), f: v}),
    "rec[1:].f =": lambda r, o, f, v: setattr(r[1:], f, v),
    "add_": lambda r, o, f, v: r.add_(v),
    "lazy_stack.f =": lambda r, o, f, v: setattr(tclass.lazy_stack([r, base(type(r), o)]), f, v),
    "load_state_dict": lambda r, o, f, v: r.load_state_dict(
        {"x": torch.ones(3), **({"n": torch.zeros(3)} if o == "tensor_only" else {}), f: v}
    ),
}
ELEMENT_PATHS = ("set_at_", "update_at_", "rec[0] = dict")


@pytest.mark.parametrize("path", list(INTO))
def test_a_refused_write_leaves_the_record_as_it_was(path: str) -> None:
    refusals = 0
    for option, field in itertools.product(OPTIONS, ("x", "n")):
        cls = record_class(tclass, option)
        before = seen(base(cls, option))
        for key in VALUES[field]:
            record = base(cls, option)
            value = given("set_at_" if path in ELEMENT_PATHS else path, field, key)
            try:
                INTO[path](record, option, field, value)
            except errors.TclassError:
                refusals += 1
                assert seen(record) == before, (option, field, key)
    assert refusals, "no value of VALUES is refused on this path: the test checks nothing"


def _reloaded(record: Any, how: str, tmp: Path) -> Any:
    cls = type(record)
    tmp.mkdir(parents=True, exist_ok=True)
    if record.is_memmap():  # a buffer or a loaded folder: saved elsewhere from memory
        record = record.clone()
    if how == "folder":
        record.memmap(tmp / "folder")
        return cls.load_memmap(tmp / "folder")
    if how == "archive":
        record.save(tmp / "r.tdz")
        return cls.load(tmp / "r.tdz")
    record.to_h5(str(tmp / "r.h5"))
    return cls.from_h5(str(tmp / "r.h5"))


@pytest.mark.parametrize("option", OPTIONS)
@pytest.mark.parametrize("path", [p for p in PATHS if p != "TensorDictParams.set_"])
def test_what_is_stored_is_what_loads_back(option: str, path: str, tmp_path: Path) -> None:
    checked = 0
    for field, key in ((f, k) for f in ("x", "n") for k in VALUES[f]):
        written = outcome(tclass, option, path, field, key, tmp_path / field / key)
        if isinstance(written, BaseException):
            continue
        for how in ("folder", "archive", "h5"):
            try:
                back = _reloaded(written, how, tmp_path / field / key / how)
            except errors.NotSerializableError:  # DESIGN 1: no pickle, said at save
                continue
            assert seen(back) == seen(written), (field, key, how)
            checked += 1
    if not checked:  # (frozen: every replacing write is refused)
        pytest.skip(f"every value of VALUES is refused on {path!r} under {option}")


def test_autocast_holds_on_every_path_that_writes_a_python_value(tmp_path: Path) -> None:
    # The value in memory is the annotation's type on every path, as after loading.
    cls = record_class(tclass, "autocast")
    paths = [
        p
        for p in PATHS
        # (math writes tensors; a state dict's Python values are in its _metadata;
        # TensorDictParams writes the TensorDict it holds, as the README says)
        if p not in ("apply_", "add_", "load_state_dict", "TensorDictParams.set_")
    ]
    for path, key in itertools.product(paths, ("2.7", "'3'", "tensor(2)")):
        if path == "from_tensordict" and key == "tensor(2)":
            continue  # a TensorDict's entries span its batch: no 0-dim tensor there
        written = outcome(tclass, "autocast", path, "n", key, tmp_path / path / key)
        assert not isinstance(written, BaseException), (path, key, written)
        expected = int(float(VALUES["n"][key]()))
        values = written.n.tolist() if hasattr(written.n, "tolist") else [written.n]
        assert type(values[0]) is int and values[0] == expected, (path, key, written.n)
    assert cls.from_dict({"x": torch.zeros(3), "n": 2.7}, batch_size=[3]).n == 2


# --- Python values written into rows ---------------------------------------------------


class Rows(TensorClass):
    x: torch.Tensor
    n: int = 0
    tags: list[str] | None = None


def rows() -> Rows:
    return Rows(x=torch.zeros(3), n=1, batch_size=[3])


ROW_WRITES: dict[str, Callable[[Rows], object]] = {
    "rec[0] = dict": lambda r: r.__setitem__(0, {"n": 2}),
    "rec[0:2] = dict of a list": lambda r: r.__setitem__(slice(0, 2), {"n": [2, 3]}),
    "set_at_": lambda r: r.set_at_("n", 2, 0),
    "set_at_ a list": lambda r: r.set_at_("n", [2, 3], slice(0, 2)),
    "update_at_": lambda r: r.update_at_({"n": [2, 3]}, slice(0, 2)),
    "td[0:2] = nested dict": lambda r: tclass.TensorDict({"r": r}, [3]).__setitem__(
        slice(0, 2), {"r": {"n": [2, 3]}}
    ),
    "td.update_at_ nested": lambda r: tclass.TensorDict({"r": r}, [3]).update_at_(
        {"r": {"n": [2, 3]}}, slice(0, 2)
    ),
}


@pytest.mark.parametrize("path", list(ROW_WRITES))
def test_python_values_written_into_rows_stay_python_values(path: str, tmp_path: Path) -> None:
    # A number for an ``int`` field is that number (not a 0-dim tensor), a list one value
    # per row (not the whole list in each): as assignment and the constructor store them.
    record = rows()
    ROW_WRITES[path](record)
    expected = [2, 1, 1] if "[0]" in path or path == "set_at_" else [2, 3, 1]
    assert record.n.tolist() == expected and all(type(v) is int for v in record.n.tolist())
    record.memmap(tmp_path)
    assert Rows.load_memmap(tmp_path).n.tolist() == expected


def test_a_list_for_a_list_field_is_one_value_in_each_row() -> None:
    record = rows()
    record.tags = ["t", "u"]  # one value over the batch
    record[0:2] = {"tags": ["a", "b"]}
    assert record.tags.tolist() == [["a", "b"], ["a", "b"], ["t", "u"]]


def test_autocast_converts_values_written_into_rows() -> None:
    cls = record_class(tclass, "autocast")
    record = base(cls, "autocast")
    record.set_at_("n", 2.7, 0)
    record[1] = {"n": "3"}
    record.update_at_({"n": 4.2}, 2)
    assert record.n.tolist() == [2, 3, 4]
    stacked = torch.stack([base(cls, "autocast"), base(cls, "autocast")])
    stacked.set_("n", 5.5)
    lazy = tclass.lazy_stack([base(cls, "autocast"), base(cls, "autocast")])
    lazy.set_("n", 6.5)
    # a stack of per-element values takes the value in each element (the peer's in-place
    # write of a str there), as the lazy stack's members do
    assert stacked.n.tolist() == [[5] * 3, [5] * 3] and lazy.n.tolist() == [[6] * 3, [6] * 3]


def test_a_python_number_of_a_nocast_row_fills_the_tensor() -> None:
    # nocast keeps the 2 of a one-element record as a Python value; written into rows,
    # it fills the tensor field as ``rec[0] = {"x": 2}`` does (the peer raises an
    # AttributeError there).
    cls = record_class(tclass, "nocast")
    record = base(cls, "nocast")
    record[0] = cls(x=2, n=5, batch_size=[])
    assert record.x.tolist() == [2, 0, 0] and record.n.tolist() == [5, 1, 1]
    with pytest.raises(errors.EntryTypeError, match="'x'"):
        record[1] = cls(x="text", n=5, batch_size=[])
    assert record.x.tolist() == [2, 0, 0]


def test_update_in_place_refuses_a_tensor_for_a_python_value_before_writing() -> None:
    record = base(record_class(tclass, "plain"), "plain")
    with pytest.raises(errors.InPlaceWriteError, match="'n' holds a Python value"):
        record.update_({"x": torch.ones(3), "n": torch.tensor(2)})
    assert (record.x == 0).all() and record.n == 1
    record.update_({"x": torch.ones(3), "n": torch.tensor(2)}, keys_to_update=["x"])
    assert (record.x == 1).all() and record.n == 1


# --- options meeting specs and constraints -----------------------------------------------


class NoCastSpec(TensorClass["nocast"]):
    q: Annotated[torch.Tensor, Spec("", torch.float32, ge=0, le=1)]
    u: Annotated[torch.Tensor, Ge(0), Le(9)]
    free: torch.Tensor | None = None  # no spec: nocast keeps an array as given


def nocast_spec() -> NoCastSpec:
    return NoCastSpec(q=torch.full((3,), 0.5), u=torch.zeros(3), batch_size=[3])


NOCAST_WRITES: dict[str, Callable[[NoCastSpec], object]] = {
    "constructor": lambda r: NoCastSpec(q=np.full(3, 2.0), u=torch.zeros(3), batch_size=[3]),
    "from_dict": lambda r: NoCastSpec.from_dict(
        {"q": np.full(3, 2.0), "u": np.zeros(3)}, batch_size=[3]
    ),
    "rec.f =": lambda r: setattr(r, "q", np.full(3, 2.0)),
    "set": lambda r: r.set("q", np.full(3, 2.0)),
    "update": lambda r: r.update({"u": np.ones(3), "q": np.full(3, 2.0)}),
    "set_": lambda r: r.set_("q", np.full(3, 2.0)),
    "rec[0] = dict": lambda r: r.__setitem__(0, {"q": np.array(2.0)}),
    "a number": lambda r: NoCastSpec(q=2.0, u=torch.tensor(0.0), batch_size=[]),
    "annotated-types bound": lambda r: setattr(r, "u", np.full(3, 10.0)),
}


@pytest.mark.parametrize("path", list(NOCAST_WRITES))
def test_nocast_keeps_the_specs_of_a_field_on_every_path(path: str) -> None:
    # nocast keeps arrays as given in fields without a spec; a spec'd field holds tensors
    # that meet it, on the paths that replace it as on those that write in place.
    record = nocast_spec()
    with pytest.raises(errors.FieldSpecError, match=r"NoCastSpec\.[qu]\b.*(le=1|le=9)"):
        NOCAST_WRITES[path](record)
    assert type(record.q) is torch.Tensor and (record.q == 0.5).all() and (record.u == 0).all()


def test_nocast_converts_arrays_a_spec_takes_and_keeps_the_rest() -> None:
    record = NoCastSpec(q=np.full(3, 0.25), u=[1, 2, 3], free=np.ones(3), batch_size=[3])
    assert record.q.dtype == torch.float32 and record.q.tolist() == [0.25] * 3
    assert type(record.u) is torch.Tensor and record.u.tolist() == [1, 2, 3]
    assert type(record.free) is np.ndarray  # no spec: as given, as the peer keeps it


# --- load_state_dict: array-likes as the peer takes them ----------------------------------


@pytest.mark.parametrize("option", OPTIONS)
def test_load_state_dict_takes_array_likes_as_the_peer(option: str) -> None:
    cls = record_class(tclass, option)
    record = base(cls, option)
    state = {"x": [1, 2, 3], **({"n": np.full(3, 4.0)} if option == "tensor_only" else {})}
    record.load_state_dict(state)
    assert record.x.dtype == torch.float32 and record.x.tolist() == [1.0, 2.0, 3.0]
    if option == "tensor_only":
        assert record.n.tolist() == [4.0] * 3
    with pytest.raises(errors.EntryTypeError, match="holds a str under 'x'"):
        record.load_state_dict({**state, "x": "text"})
    assert record.x.tolist() == [1.0, 2.0, 3.0]


def test_set_in_place_keeps_a_python_value_a_python_value() -> None:
    # A numpy array copied in place into a Python value was stored as a tensor (the
    # entry's kind changed: through TensorDictParams, an autocast record then failed to
    # load back); refused, as the peer refuses it, and nothing is written.
    td = tclass.TensorDict({"x": torch.zeros(3)}, [3])
    td.set_non_tensor("n", 1)
    with pytest.raises(errors.InPlaceWriteError, match="'n' holds a Python value"):
        td.set_("n", np.full(3, 1.5))
    assert td.get("n").data == 1
    record = base(record_class(tclass, "autocast"), "autocast")
    with pytest.raises(errors.InPlaceWriteError, match="ndarray"):
        tclass.TensorDictParams(record).set_("n", np.full(3, 1.5))
    assert record.n == 1
    nocast = base(record_class(tclass, "nocast"), "nocast")
    nocast.set_("n", np.full(3, 1.5))  # through the record: nocast keeps the array
    assert type(nocast.n) is np.ndarray
