"""Torch's own functions called on collections the way new users call them on tensors
(``torch.stack``, ``torch.where(mask, td, 0)``, ``torch.sum(td, dim=0)``, ``F.softmax(td, 1)``,
``torch.save``/``torch.load``, ``torch.manual_seed`` + ``rand_like``...), on TensorDicts
(flat, nested, named, holding a Python value), records (with a ``str`` field, nested), lazy
stacks (dim 0 and 1, ragged, of records), memory-mapped and HDF5 collections.

Each program runs on tclass and on the peer (the same code, the library swapped) and the
results are compared: values, kind, batch size, names, lock, and the builtin of an error.
Where the peer refuses and tclass answers, the pair is listed in ``PEER_REFUSES`` with the
README passage that says so.
"""

from __future__ import annotations

import random
import warnings
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch
import torch.nn.functional as F

import tclass

MASK = torch.tensor([[True, False, True], [False, False, True]])
IDX = torch.tensor([[0, 0], [1, 2]])


def _a(*shape: int, off: float = 0.0) -> torch.Tensor:
    n = torch.Size(shape).numel()
    return (torch.arange(n, dtype=torch.float32).reshape(shape) + off) / n - 0.4


class R(tclass.TensorClass):
    a: torch.Tensor
    b: torch.Tensor


class RP(tclass.TensorClass):
    a: torch.Tensor
    label: str


class RN(tclass.TensorClass):
    a: torch.Tensor
    inner: R


_RECORDS: dict[str, dict[str, type]] = {"tclass": {"R": R, "RP": RP, "RN": RN}}


def _records(lib: ModuleType) -> dict[str, type]:
    """The record classes, declared again with the peer's ``TensorClass``."""
    if lib.__name__ not in _RECORDS:
        base = lib.TensorClass
        peer_r = type("R", (base,), {"__annotations__": {"a": torch.Tensor, "b": torch.Tensor}})
        peer_rp = type("RP", (base,), {"__annotations__": {"a": torch.Tensor, "label": str}})
        peer_rn = type("RN", (base,), {"__annotations__": {"a": torch.Tensor, "inner": peer_r}})
        _RECORDS[lib.__name__] = {"R": peer_r, "RP": peer_rp, "RN": peer_rn}
    return _RECORDS[lib.__name__]


def make(lib: ModuleType, kind: str, off: float, tmp: Path) -> Any:
    TD, rec = lib.TensorDict, _records(lib)
    if kind == "td":
        return TD(a=_a(2, 3, 4, off=off), b=_a(2, 3, off=off), batch_size=[2, 3])
    if kind == "nested":
        inner = TD(c=_a(2, 3, off=off + 1), batch_size=[2, 3])
        return TD(a=_a(2, 3, 4, off=off), n=inner, batch_size=[2, 3])
    if kind == "named":
        return TD(a=_a(2, 3, 4, off=off), batch_size=[2, 3], names=["x", "y"])
    if kind == "pyval":
        td = TD(a=_a(2, 3, 4, off=off), batch_size=[2, 3])
        td["s"] = "hello"
        return td
    if kind == "record":
        return rec["R"](a=_a(2, 3, 4, off=off), b=_a(2, 3, off=off), batch_size=[2, 3])
    if kind == "record_py":
        return rec["RP"](a=_a(2, 3, 4, off=off), label="lbl", batch_size=[2, 3])
    if kind == "record_nested":
        inner = rec["R"](a=_a(2, 3, 1, off=off + 2), b=_a(2, 3, off=off), batch_size=[2, 3])
        return rec["RN"](a=_a(2, 3, 4, off=off), inner=inner, batch_size=[2, 3])
    if kind in ("lazy0", "lazy_record"):
        x = make(lib, "td" if kind == "lazy0" else "record", off, tmp)
        return lib.lazy_stack([x[0], x[1]], 0)
    if kind == "lazy1":
        td = make(lib, "td", off, tmp)
        return lib.lazy_stack([td[:, 0], td[:, 1], td[:, 2]], 1)
    if kind == "memmap":
        make(lib, "nested", off, tmp).memmap(tmp / f"mm{off}")
        return TD.load_memmap(tmp / f"mm{off}")
    if kind == "h5":
        source = make(lib, "nested", off, tmp)
        return lib.PersistentTensorDict.from_dict(source, filename=str(tmp / f"f{off}.h5"))
    raise ValueError(kind)


def _save_load(x: Any, tmp: Path) -> Any:
    torch.save(x, tmp / "t.pt")
    return torch.load(tmp / "t.pt", weights_only=False)


def _no_grad_write(x: Any, y: Any) -> Any:
    with torch.no_grad():
        x["a"] = x["a"] * 2
    return x


def _inference(x: Any, y: Any) -> Any:
    with torch.inference_mode():
        return torch.exp(x)


def _seeded(x: Any, y: Any) -> Any:
    torch.manual_seed(3)
    first = torch.rand_like(x)
    torch.manual_seed(3)
    return (first == torch.rand_like(x)).all(), first


def _assert_close(x: Any, y: Any) -> str:
    torch.testing.assert_close(x, x + 1e-3, atol=1e-2, rtol=0)
    torch.testing.assert_close(x, y)
    return "close"


Run = Callable[[Any, Any], Any]
CALLS: dict[str, Run] = {
    "stack": lambda x, y: torch.stack([x, y], 1),
    "cat": lambda x, y: torch.cat([x, y], dim=1),
    "unbind": lambda x, y: torch.unbind(x, 1),
    "split": lambda x, y: torch.split(x, [1, 2], dim=1),
    "chunk": lambda x, y: torch.chunk(x, 2, 1),
    "tensor_split": lambda x, y: torch.tensor_split(x, 2, 1),
    "squeeze": lambda x, y: torch.squeeze(torch.unsqueeze(x, 0), 0),
    "permute": lambda x, y: torch.permute(x, (1, 0)),
    "reshape": lambda x, y: torch.reshape(x, (3, 2)),
    "flatten": lambda x, y: torch.flatten(x, 0, 1),
    "gather": lambda x, y: torch.gather(x, 1, IDX),
    "where": lambda x, y: torch.where(MASK, x, 0.0),
    "where_first": lambda x, y: torch.where(MASK, -1.0, x),
    "where_xy": lambda x, y: torch.where(MASK, x, y),
    "full_like": lambda x, y: torch.full_like(x, 7, dtype=torch.int64),
    "zeros_like": lambda x, y: torch.zeros_like(x, dtype=torch.float64),
    "ones_like": torch.ones_like,
    "clone": lambda x, y: torch.clone(x),
    "allclose": lambda x, y: (torch.allclose(x, x.clone()), torch.allclose(x, y)),
    "isclose": lambda x, y: torch.isclose(x, x + 1e-3, atol=1e-2),
    "assert_close": lambda x, y: _assert_close(x, y),
    "equal": lambda x, y: (torch.equal(x, x.clone()), torch.equal(x, y)),
    "sum": lambda x, y: torch.sum(x, dim=0),
    "mean": lambda x, y: torch.mean(x, dim=1, keepdim=True),
    "std": lambda x, y: torch.std(x, dim=1, correction=0),
    "var": lambda x, y: torch.var(x, dim=0),
    "exp": lambda x, y: torch.exp(x),
    "sigmoid": lambda x, y: torch.sigmoid(x),
    "clamp": lambda x, y: torch.clamp(x, min=0.0),
    "add": lambda x, y: torch.add(x, 1, alpha=2),
    "sub": lambda x, y: torch.sub(x, y, alpha=0.5),
    "lerp": lambda x, y: torch.lerp(x, y, 0.25),
    "maximum": lambda x, y: torch.maximum(x, y),
    "numel": lambda x, y: torch.numel(x),
    "relu": lambda x, y: F.relu(x),
    "softmax": lambda x, y: F.softmax(x, dim=0),
    "pad": lambda x, y: F.pad(x, [0, 1], value=9.0),
    "dropout_eval": lambda x, y: F.dropout(x, 0.5, training=False),
    "pad_sequence": lambda x, y: torch.nn.utils.rnn.pad_sequence(
        [x[0], x[1][:2]], batch_first=True, padding_value=-1.0
    ),
    "no_grad_write": _no_grad_write,
    "inference": _inference,
    "seeded": _seeded,
    "locked_stack": lambda x, y: torch.stack([x.lock_(), y.lock_()], 0),
}
KINDS = ["td", "nested", "named", "pyval", "record", "record_py", "record_nested", "lazy0"]
KINDS += ["lazy1", "lazy_record", "memmap", "h5"]

# The peer refuses these and tclass answers, as the README says (its section "Differences
# from tensordict"): torch functions the peer dispatches to nothing for records ("Multiple
# dispatch failed": "Where the peer fails inside, tclass answers"); shape operations of a
# file read its rows into memory ("HDF5": the peer's "Cannot call `unsqueeze`").
PEER_REFUSES = {
    *((call, kind) for call in ("sum", "mean", "std", "var", "maximum") for kind in
      ("record", "record_py", "record_nested", "lazy_record")),
    ("squeeze", "h5"),
}  # fmt: skip

_PAIRS = [(call, kind) for call in CALLS for kind in KINDS]
# a fixed sample of the pairs; all of them with TCLASS_MATRIX=full
SAMPLED = sorted(random.Random(23).sample(_PAIRS, 160))


def _builtins(error: BaseException) -> list[str]:
    return [c.__name__ for c in type(error).__mro__ if c.__module__ == "builtins"]


def summary(lib: ModuleType, x: Any) -> Any:
    """What a result is, to compare across the two libraries."""
    if isinstance(x, (list, tuple)):
        return [type(x).__name__, [summary(lib, item) for item in x]]
    if isinstance(x, torch.Tensor):
        return (
            str(x.dtype),
            tuple(x.shape),
            x.detach().double().flatten().round(decimals=4).tolist(),
        )
    if isinstance(x, (lib.NonTensorData, lib.NonTensorStack)):
        return ("value", x.tolist())
    if not lib.is_tensor_collection(x):
        return x
    kind = type(x).__name__ if lib.is_tensorclass(x) else type(x).__name__.replace("Persistent", "")
    leaves = {
        str(key): summary(lib, value)
        for key, value in x.items(include_nested=True, leaves_only=True)
    }
    return (kind, tuple(x.batch_size), list(x.names), x.is_locked, dict(sorted(leaves.items())))


def run(lib: ModuleType, call: str, kind: str, tmp: Path) -> Any:
    tmp.mkdir(parents=True, exist_ok=True)
    x, y = make(lib, kind, 0.0, tmp), make(lib, kind, 1.0, tmp)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the peer's deprecations, its clone of a file
            return summary(lib, CALLS[call](x, y))
    except Exception as error:  # noqa: BLE001 - the builtin of the error is compared
        return ("error", _builtins(error))


@pytest.mark.parametrize(("call", "kind"), SAMPLED)
def test_torch_function_on_a_kind_as_the_peer(call: str, kind: str, tmp_path: Path) -> None:
    peer = pytest.importorskip("tensordict")
    if (call, kind) == ("clone", "h5"):
        pytest.skip("the README: clone() of a file reads it into memory (the peer copies it)")
    ours = run(tclass, call, kind, tmp_path / "tclass")
    theirs = run(peer, call, kind, tmp_path / "peer")
    if (call, kind) in PEER_REFUSES:
        assert theirs[0] == "error" and ours[0] != "error", (ours, theirs)
    elif theirs[0] == "error":
        assert ours[0] == "error" and theirs[1][0] in ours[1], (ours, theirs)
    else:
        assert ours == theirs


def test_save_and_load_of_every_kind_keeps_it(tmp_path: Path) -> None:
    for kind in KINDS:
        if kind == "h5":
            continue
        x = make(tclass, kind, 0.0, tmp_path)
        assert summary(tclass, _save_load(x, tmp_path)) == summary(tclass, x), kind


@pytest.mark.parametrize("dim", [0, 1])
def test_torch_tensor_split_of_a_lazy_stack_gives_lazy_stacks(dim: int, tmp_path: Path) -> None:
    # was: TensorDict pieces (torch.tensor_split stacked each entry), where the peer and
    # the method `stack.tensor_split` keep the members apart as split and chunk do
    td = make(tclass, "named", 0.0, tmp_path)
    stack = tclass.lazy_stack([td[:, 0], td[:, 1], td[:, 2]], 1)
    pieces = torch.tensor_split(stack, 2, dim)
    assert [type(p) for p in pieces] == [tclass.LazyStackedTensorDict] * 2
    sizes = [(1, 3), (1, 3)] if dim == 0 else [(2, 2), (2, 1)]
    assert [tuple(p.batch_size) for p in pieces] == sizes
    assert [p.names for p in pieces] == [["x", None]] * 2
    whole = torch.cat([p.to_tensordict() for p in pieces], dim)
    assert torch.equal(whole["a"], td["a"])


def test_what_the_peer_refuses_and_the_readme_lets_tclass_answer(tmp_path: Path) -> None:
    # the README ("tclass also answers what the peer refuses"): torch's argument order and
    # torch's default dim, where the peer's refuse
    td = make(tclass, "named", 0.0, tmp_path)
    assert torch.equal(torch.mul(2, td)["a"], 2 * td["a"])
    rows = torch.unbind(td)
    assert len(rows) == 2 and rows[1].names == ["y"] and torch.equal(rows[1]["a"], td["a"][1])


@pytest.mark.parametrize("function", ["stack", "cat", "where"])
def test_out_record_is_returned_itself(function: str, tmp_path: Path) -> None:
    # the README: as torch returns `out` (the peer returns a new record over its storage)
    x, y = make(tclass, "record", 0.0, tmp_path), make(tclass, "record", 1.0, tmp_path)
    calls: dict[str, Callable[[Any], Any]] = {
        "stack": lambda out: torch.stack([x, y], 0, out=out),
        "cat": lambda out: torch.cat([x, y], 0, out=out),
        "where": lambda out: torch.where(MASK, x, y, out=out),
    }
    expected = calls[function](None)
    out = expected.clone().zero_()
    assert calls[function](out) is out
    assert torch.equal(out.a, expected.a) and torch.equal(out.b, expected.b)


def test_a_loss_reduced_over_different_python_values_names_the_entry() -> None:
    # the README: a reduction that would merge different values is a ReductionError (the
    # peer's loss drops the entry); reduction="none" keeps each member's value
    rows = []
    for value in ("one", "two"):
        row = tclass.TensorDict(a=torch.ones(3), batch_size=[3])
        row["s"] = value
        rows.append(row)
    stack = tclass.lazy_stack(rows)
    with pytest.raises(tclass.errors.ReductionError, match="'s'"):
        F.mse_loss(stack, stack * 2)
    each = F.l1_loss(stack, stack * 2, reduction="none")
    assert each["s"] == [["one"] * 3, ["two"] * 3]
    assert torch.equal(each["a"], torch.ones(2, 3))
