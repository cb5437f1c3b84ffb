"""A record over ``TensorDictParams`` (``Rec.from_tensordict(params)``) writes and locks
through ``params``, as the peer's record, which keeps ``params`` as its storage.

Before (lo25c), the record kept the TensorDict ``params`` wraps: a tensor set through the
record was stored as it is (the peer's is an ``nn.Parameter``, registered), its in-place
writes (``set_``, ``update_``, ``zero_``...) hit autograd's leaf check, and
``record.lock_()`` left ``params`` unlocked. Each write path and lock state is checked
below against expected values, and against the peer's where it is installed. One
deliberate difference: a row write (``record[0] = row``) writes the parameters' data
outside autograd, as ``params[0] = row`` does (README); the peer's raises autograd's error.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from typing import Any

import pytest
import torch
from torch import nn

import tclass
from tclass import TensorDict, TensorDictParams

HAS_PEER = importlib.util.find_spec("tensordict") is not None


def _rec_class(lib: Any) -> type:
    @lib.tensorclass
    class Rec:
        a: torch.Tensor
        b: torch.Tensor = None
        i: torch.Tensor = None

    return Rec


def _built(lib: Any, no_convert: bool = False, lock: bool = False) -> tuple[Any, Any]:
    td = lib.TensorDict(
        a=torch.zeros(3), b=torch.zeros(3), i=torch.zeros(3, dtype=torch.long), batch_size=[3]
    )
    params = lib.TensorDictParams(td, no_convert=no_convert, lock=lock)
    return params, _rec_class(lib).from_tensordict(params)


def _row(lib: Any, rows: int) -> Any:
    out = _rec_class(lib)(
        a=torch.ones(rows),
        b=torch.ones(rows),
        i=torch.ones(rows, dtype=torch.long),
        batch_size=[rows],
    )
    return out[0] if rows == 1 else out


ONES = torch.ones(3)
WRITES: dict[str, Callable[[Any, Any], Any]] = {
    "attribute": lambda lib, r: setattr(r, "a", torch.ones(3)),
    "attribute, requires_grad": lambda lib, r: setattr(r, "a", torch.ones(3, requires_grad=True)),
    "attribute, long": lambda lib, r: setattr(r, "i", torch.ones(3, dtype=torch.long)),
    "attribute, float16": lambda lib, r: setattr(r, "a", torch.ones(3, dtype=torch.float16)),
    "attribute, bfloat16": lambda lib, r: setattr(r, "a", torch.ones(3, dtype=torch.bfloat16)),
    "attribute, Parameter": lambda lib, r: setattr(r, "a", nn.Parameter(torch.ones(3))),
    "attribute, Buffer": lambda lib, r: setattr(r, "a", nn.Buffer(torch.ones(3))),
    "set": lambda lib, r: r.set("a", torch.ones(3)),
    "update(dict)": lambda lib, r: r.update({"a": torch.ones(3)}),
    "update(TensorDict)": lambda lib, r: r.update(lib.TensorDict(a=ONES.clone(), batch_size=[3])),
    "set_": lambda lib, r: r.set_("a", torch.ones(3)),
    "update_": lambda lib, r: r.update_({"a": torch.ones(3)}),
    "set_at_": lambda lib, r: r.set_at_("a", torch.ones(1), 0),
    "zero_": lambda lib, r: r.zero_(),
    "copy_": lambda lib, r: r.copy_(_row(lib, 3)),
    "fill_": lambda lib, r: r.fill_("a", 1.0),
    "apply_": lambda lib, r: r.apply_(lambda t: t + 1),
    "update_at_": lambda lib, r: r.update_at_({"a": torch.ones(())}, 0),
    "del": lambda lib, r: delattr(r, "b"),
    "None": lambda lib, r: setattr(r, "b", None),
}
# (parameter names, buffer names, a's value)
EXPECTED: dict[str, tuple[list[str], list[str], list[float]]] = {
    "attribute": (["a", "b"], ["i"], [1.0, 1.0, 1.0]),
    "attribute, requires_grad": (["a", "b"], ["i"], [1.0, 1.0, 1.0]),
    "attribute, long": (["a", "b"], ["i"], [0.0, 0.0, 0.0]),
    "attribute, float16": (["a", "b"], ["i"], [1.0, 1.0, 1.0]),
    "attribute, bfloat16": (["b"], ["a", "i"], [1.0, 1.0, 1.0]),  # (not a float to convert)
    "attribute, Parameter": (["a", "b"], ["i"], [1.0, 1.0, 1.0]),
    "attribute, Buffer": (["b"], ["a", "i"], [1.0, 1.0, 1.0]),
    "set": (["a", "b"], ["i"], [1.0, 1.0, 1.0]),
    "update(dict)": (["a", "b"], ["i"], [1.0, 1.0, 1.0]),
    "update(TensorDict)": (["a", "b"], ["i"], [1.0, 1.0, 1.0]),
    "set_": (["a", "b"], ["i"], [1.0, 1.0, 1.0]),
    "update_": (["a", "b"], ["i"], [1.0, 1.0, 1.0]),
    "set_at_": (["a", "b"], ["i"], [1.0, 0.0, 0.0]),
    "zero_": (["a", "b"], ["i"], [0.0, 0.0, 0.0]),
    "copy_": (["a", "b"], ["i"], [1.0, 1.0, 1.0]),
    "fill_": (["a", "b"], ["i"], [1.0, 1.0, 1.0]),
    "apply_": (["a", "b"], ["i"], [1.0, 1.0, 1.0]),
    "update_at_": (["a", "b"], ["i"], [1.0, 0.0, 0.0]),
    "del": (["a"], ["i"], [0.0, 0.0, 0.0]),
    "None": (["a"], ["i"], [0.0, 0.0, 0.0]),
}


def outcome(lib: Any, write: str, no_convert: bool = False) -> dict[str, Any]:
    """What ``params`` holds after the write through the record: each entry's kind,
    requires_grad, dtype and values, the registered names, and whether the record reads
    the same tensors."""
    params, record = _built(lib, no_convert)
    WRITES[write](lib, record)
    return {
        "entries": {
            key: (isinstance(v, nn.Parameter), v.requires_grad, v.dtype, v.tolist())
            for key, v in params.items()
        },
        "parameters": sorted(name for name, _ in params.named_parameters()),
        "buffers": sorted(name for name, _ in params.named_buffers()),
        "shared": all(getattr(record, key) is params[key] for key in params.keys()),
    }


@pytest.mark.parametrize("write", list(WRITES))
def test_a_write_through_the_record_is_stored_as_params_stores_it(write: str) -> None:
    got = outcome(tclass, write)
    parameters, buffers, a = EXPECTED[write]
    assert (got["parameters"], got["buffers"]) == (parameters, buffers)
    assert got["entries"]["a"][3] == pytest.approx(a)
    assert got["shared"]
    for key, (is_param, requires_grad, _, _) in got["entries"].items():
        assert is_param == (key in parameters) and requires_grad == is_param


@pytest.mark.parametrize("write", ["attribute", "attribute, requires_grad", "set", "update(dict)"])
def test_no_convert_params_keep_buffers_through_the_record(write: str) -> None:
    got = outcome(tclass, write, no_convert=True)
    assert got["parameters"] == []
    requires_grad = write == "attribute, requires_grad"  # kept as it is, as params.set keeps it
    assert got["entries"]["a"][:2] == (False, requires_grad)
    assert got["buffers"] == ["a", "b", "i"]


@pytest.mark.skipif(not HAS_PEER, reason="needs tensordict (the peer) installed")
@pytest.mark.parametrize("no_convert", [False, True])
@pytest.mark.parametrize("write", list(WRITES))
def test_a_write_through_the_record_matches_the_peer(write: str, no_convert: bool) -> None:
    import tensordict

    assert outcome(tclass, write, no_convert) == outcome(tensordict, write, no_convert)


@pytest.mark.parametrize("rows", [1, 2])
def test_a_row_write_through_the_record_writes_the_parameters_data(rows: int) -> None:
    params, record = _built(tclass)
    a = params["a"]
    record[0 if rows == 1 else slice(0, 2)] = _row(tclass, rows)
    assert params["a"] is a and isinstance(a, nn.Parameter) and a.requires_grad
    assert a.tolist() == [1.0] * rows + [0.0] * (3 - rows)
    if HAS_PEER:  # the peer's raises autograd's error (README: a deliberate difference)
        import tensordict

        peer_params, peer_record = _built(tensordict)
        with pytest.raises(RuntimeError, match="leaf Variable"):
            peer_record[0 if rows == 1 else slice(0, 2)] = _row(tensordict, rows)


def _lock_states(lib: Any, lock: bool = False) -> list[tuple[str, bool, bool]]:
    params, record = _built(lib, lock=lock)
    states = [("built", params.is_locked, record.is_locked)]
    record.lock_()
    states.append(("record.lock_()", params.is_locked, record.is_locked))
    record.unlock_()
    states.append(("record.unlock_()", params.is_locked, record.is_locked))
    params.lock_()
    states.append(("params.lock_()", params.is_locked, record.is_locked))
    record.unlock_()  # the record's storage is params: the same lock
    states.append(("record.unlock_() of locked params", params.is_locked, record.is_locked))
    with record.lock_():
        states.append(("with record.lock_()", params.is_locked, record.is_locked))
    states.append(("after the with", params.is_locked, record.is_locked))
    return states


@pytest.mark.parametrize("lock", [False, True])
def test_the_record_and_params_share_one_lock(lock: bool) -> None:
    params, record = _built(tclass, lock=lock)
    assert record._tensordict is params
    expected = [False, True, False, True, False, True, False]
    assert [p for _, p, _ in _lock_states(tclass, lock)] == expected
    assert [r for _, _, r in _lock_states(tclass, lock)] == expected
    if HAS_PEER:
        import tensordict

        assert _lock_states(tclass, lock) == _lock_states(tensordict, lock)


def test_a_locked_record_refuses_a_field_write_and_params_too() -> None:
    params, record = _built(tclass)
    record.lock_()
    with pytest.raises(RuntimeError):
        record.b = None
    with pytest.raises(RuntimeError):
        params["c"] = torch.ones(3)
    record.set_("a", torch.ones(3))  # in place still
    assert params["a"].tolist() == [1.0, 1.0, 1.0] and isinstance(params["a"], nn.Parameter)


def test_lock_true_params_the_record_writes_into_the_wrapped_tensordict() -> None:
    params, record = _built(tclass, lock=True)
    record.a = torch.ones(3)  # as params.set under lock=True: its own lock is not set
    assert isinstance(params["a"], nn.Parameter) and params["a"].tolist() == [1.0, 1.0, 1.0]
    assert params._joined_as().is_locked and record.a is params["a"]


def test_a_frozen_record_of_unlocked_params_is_built_over_their_entries() -> None:
    @tclass.tensorclass(frozen=True)
    class Frozen:
        a: torch.Tensor

    params = TensorDictParams(TensorDict(a=torch.zeros(3), batch_size=[3]))
    record = Frozen.from_tensordict(params)
    assert record.is_locked and not params.is_locked  # locking it leaves params as it was
    assert record.a is params["a"]
