"""Every kind of collection, built the same way with a library module (``tclass`` or the
peer's ``tensordict``), and a summary of what a method gives on it that compares equal
across the two libraries.

A kind is a function of the library module and a scratch folder returning a collection of
batch size ``[2, 3]`` (``[2, 3, 1]`` for ``unsqueezed``): TensorDicts (flat, nested, with
a Python value, named), an indexed view, permuted / unsqueezed / squeezed results, lazy
stacks (along dim 0 and 1, nested, of lazy stacks, ragged), records (with a Python field
and a nested record, and without), a locked memory-mapped TensorDict, a
PersistentTensorDict and TensorDictParams. :func:`outcome` runs a method on a fresh
collection of a kind and summarizes the result (type, batch size, names, lock, device,
every entry's type, shape, dtype and values), whether it is the input itself, and the
input afterwards (for methods that write through).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch

import tclass

Kind = Callable[[ModuleType, Path], Any]
_CLASSES: dict[str, tuple[Any, Any, Any]] = {}


def record_classes(lib: ModuleType) -> tuple[Any, Any, Any]:
    """``Inner`` (one tensor), ``Rec`` (tensors, a str and an ``Inner``) and ``Plain``
    (two tensors), as ``lib``'s records; made once per library."""
    if lib.__name__ in _CLASSES:
        return _CLASSES[lib.__name__]

    @lib.tensorclass
    class Inner:
        c: torch.Tensor

    @lib.tensorclass
    class Rec:
        a: torch.Tensor
        b: torch.Tensor
        s: str
        inner: Inner

    @lib.tensorclass
    class Plain:
        a: torch.Tensor
        b: torch.Tensor

    _CLASSES[lib.__name__] = (Inner, Rec, Plain)
    return _CLASSES[lib.__name__]


def arange(*shape: int, offset: float = 0.0) -> torch.Tensor:
    return torch.arange(float(torch.Size(shape).numel())).view(*shape) + offset


def _base(lib: ModuleType, batch: tuple[int, ...] = (2, 3)) -> Any:
    return lib.TensorDict({"a": arange(*batch, 4), "b": arange(*batch).long()}, list(batch))


def _member(lib: ModuleType, n: int, offset: float, features: int = 4) -> Any:
    return lib.TensorDict(
        {"a": arange(n, features, offset=offset), "b": arange(n, offset=offset).long()}, [n]
    )


def _nested(lib: ModuleType, tmp: Path) -> Any:
    td = _base(lib)
    td["n"] = lib.TensorDict({"c": arange(2, 3, 5)}, [2, 3, 5])
    return td


def _python_value(lib: ModuleType, tmp: Path) -> Any:
    td = _base(lib)
    td["s"] = "hi"
    return td


def _named(lib: ModuleType, tmp: Path) -> Any:
    td = _base(lib)
    td.names = ["x", "y"]
    return td


def _lazy_nested(lib: ModuleType, tmp: Path) -> Any:
    members = []
    for i in range(2):
        member = _member(lib, 3, 100.0 * i)
        member["n"] = lib.TensorDict({"c": arange(3, 5, offset=i)}, [3])
        members.append(member)
    return lib.lazy_stack(members, 0)


def _lazy_of_lazy(lib: ModuleType, tmp: Path) -> Any:
    inner = [lib.lazy_stack([_member(lib, 1, j)[0] for _ in range(3)], 0) for j in range(2)]
    return lib.lazy_stack(inner, 0)


def _record(lib: ModuleType, tmp: Path) -> Any:
    inner_cls, rec_cls, _ = record_classes(lib)
    inner = inner_cls(c=arange(2, 3, 5), batch_size=[2, 3])
    return rec_cls(a=arange(2, 3, 4), b=arange(2, 3).long(), s="hi", inner=inner, batch_size=[2, 3])


def _plain_record(lib: ModuleType, tmp: Path) -> Any:
    return record_classes(lib)[2](a=arange(2, 3, 4), b=arange(2, 3).long(), batch_size=[2, 3])


def _h5(lib: ModuleType, tmp: Path) -> Any:
    return lib.PersistentTensorDict.from_dict(_base(lib), filename=str(tmp / f"{lib.__name__}.h5"))


KINDS: dict[str, Kind] = {
    "flat": lambda lib, tmp: _base(lib),
    "nested": _nested,
    "python_value": _python_value,
    "named": _named,
    "indexed_view": lambda lib, tmp: _base(lib, (4, 3))[1:3],
    "permuted": lambda lib, tmp: _base(lib, (3, 2)).permute(1, 0),
    "unsqueezed": lambda lib, tmp: _base(lib).unsqueeze(-1),
    "squeezed": lambda lib, tmp: _base(lib, (2, 1, 3)).squeeze(1),
    "lazy_dim0": lambda lib, tmp: lib.lazy_stack([_member(lib, 3, 100.0 * i) for i in range(2)]),
    "lazy_dim1": lambda lib, tmp: lib.lazy_stack([_member(lib, 2, 100.0 * i) for i in range(3)], 1),
    "lazy_nested": _lazy_nested,
    "lazy_of_lazy": _lazy_of_lazy,
    "ragged": lambda lib, tmp: lib.lazy_stack(
        [_member(lib, 3, 100.0 * i, i + 2) for i in range(2)]
    ),
    "record": _record,
    "plain_record": _plain_record,
    "memmap": lambda lib, tmp: _base(lib).memmap_(),
    "h5": _h5,
    "params": lambda lib, tmp: lib.TensorDictParams(_base(lib)),
}

COMPARED = sorted(set(KINDS) - {"h5"})
"""The kinds compared with the peer here: a PersistentTensorDict has no ``names`` yet
(``summary`` reads them), its comparisons live in test_h5.py."""


def _leaf(value: Any) -> Any:
    if isinstance(value, torch.Tensor) and value.is_nested:
        return ("nested", value.layout, value.dtype, [t.tolist() for t in value.unbind()])
    if isinstance(value, torch.Tensor):
        return (type(value).__name__, tuple(value.shape), value.dtype, value.detach().tolist())
    if isinstance(value, list):  # nested lists of Python values (the peer's are LinkedLists)
        return [_leaf(item) for item in value]
    return ("python", type(value).__name__, str(value))


def _attribute(collection: Any, name: str) -> Any:
    try:
        value = getattr(collection, name)
    except Exception as error:  # noqa: BLE001 - what a kind lacks is part of the summary
        return _error(error)
    return tuple(value) if name == "batch_size" else value


def _error(error: BaseException) -> tuple[str, tuple[str, ...]]:
    """An error as the builtin exception classes it derives from."""
    return ("error", tuple(c.__name__ for c in type(error).__mro__ if c.__module__ == "builtins"))


def summary(value: Any, lib: ModuleType) -> Any:
    """What compares equal between the two libraries (tuples and lists element-wise)."""
    if isinstance(value, (tuple, list)):
        return [summary(item, lib) for item in value]
    if not lib.is_tensor_collection(value):
        return _leaf(value)
    out: dict[str, Any] = {"type": type(value).__name__}
    for name in ("batch_size", "names", "is_locked", "device"):
        out[name] = _attribute(value, name)
    entries: dict[str, Any] = {}
    for key in sorted(value.keys(True, False), key=str):
        try:
            entry = value.get(key)
        except Exception:  # noqa: BLE001 - a ragged entry has no dense value in either library
            entries[str(key)] = "no dense value"
            continue
        if isinstance(entry, lib.NonTensorData):
            entries[str(key)] = ("NonTensorData", entry.data)
        elif lib.is_tensor_collection(entry):
            entries[str(key)] = (type(entry).__name__, tuple(entry.batch_size))
        else:
            entries[str(key)] = _leaf(entry)
    out["entries"] = entries
    return out


def outcome(lib: ModuleType, kind: str, tmp: Path, method: Callable[[Any], Any]) -> Any:
    """``method`` on a new collection of ``kind``: the summary of the result, whether it
    is the input itself, and the input afterwards; or the error, as a builtin class."""
    collection = KINDS[kind](lib, tmp)
    try:
        with warnings.catch_warnings():  # the peer's warnings are not the outcome
            warnings.simplefilter("ignore")
            result = method(collection)
    except Exception as error:  # noqa: BLE001 - the error is the outcome
        return _error(error)
    return summary(result, lib), result is collection, summary(collection, lib)


def assert_same(ours: Any, theirs: Any) -> None:
    """tclass's outcome is the peer's; an error of tclass derives from the builtin class
    the peer raises (it derives from ``TclassError`` too)."""
    if ours[0] == theirs[0] == "error":
        assert theirs[1][0] in ours[1], (ours, theirs)
        return
    assert ours == theirs


def assert_as_the_peer(kind: str, tmp: Path, method: Callable[[Any], Any]) -> None:
    """``method`` on ``kind`` gives the same outcome in tclass and in the peer."""
    peer = pytest.importorskip("tensordict")
    assert_same(outcome(tclass, kind, tmp, method), outcome(peer, kind, tmp, method))
