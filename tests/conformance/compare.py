"""Outcomes of a recipe in library-neutral form, and their differences.

A snapshot is made of tuples, lists, Python scalars and cloned tensors, taken right after
the call. A collection's snapshot holds its class name, batch size, names, device, lock
state and entries (a Python value as the value itself: a record's ``label`` field and a
TensorDict's ``NonTensorData`` entry compare equal); a lazy stack's entry that cannot be
read whole (a ragged leaf) is the builtin family of the error reading it raises.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import torch

Snap = Any
VALUES = ("NonTensorData", "MetaData", "NonTensorStack")


@dataclass
class Outcome:
    value: Any = None
    error: BaseException | None = None
    snap: Snap = None


def run(call: Callable[[], Any]) -> Outcome:
    """``call()``'s result (snapshot taken at once) or the error it raised."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            value = call()
        except Exception as error:
            return Outcome(error=error)
        return Outcome(value, snap=snapshot(value))


def family(error: BaseException) -> str:
    """The first builtin class of ``error``'s MRO."""
    return next(c.__name__ for c in type(error).__mro__ if c.__module__ == "builtins")


def _builtins(error: BaseException) -> set[str]:
    return {c.__name__ for c in type(error).__mro__ if c.__module__ == "builtins"}


def _guard(read: Callable[[], Any]) -> Snap:
    try:
        return read()
    except Exception as error:
        return ("error", family(error), tuple(sorted(_builtins(error))))


def _names(value: Any) -> Snap:
    """The dim names; ``("absent",)`` where the class has none (the ``names`` pair of the
    matrix checks that attribute itself)."""
    try:
        return tuple(value.names)
    except AttributeError:
        return ("absent",)
    except Exception as error:
        return ("error", family(error), tuple(sorted(_builtins(error))))


def is_collection(value: Any) -> bool:
    return not isinstance(value, torch.Tensor) and hasattr(value, "batch_size")


# The same kind of collection under each library's class name: a view of rows of a file.
ALIASES = {"_SubTensorDict": "PersistentTensorDictView"}


def _collection(value: Any, depth: int) -> Snap:
    kind = ALIASES.get(type(value).__name__, type(value).__name__)
    if kind in VALUES:
        read = value.tolist if kind == "NonTensorStack" else lambda: value.data
        return _guard(lambda: snapshot(read(), depth + 1))
    keys = _guard(lambda: list(value.keys()))
    if isinstance(keys, tuple):  # keys() raised
        return keys
    entries = {str(k): _guard(lambda k=k: snapshot(value.get(k), depth + 1)) for k in keys}
    return (
        "collection",
        kind,
        tuple(value.batch_size),
        _names(value),
        _guard(lambda: str(value.device)),
        _guard(lambda: bool(value.is_locked)),
        entries,
    )


def snapshot(value: Any, depth: int = 0) -> Snap:
    """``value`` in library-neutral form (see the module docstring)."""
    if depth > 8:
        return ("deep",)
    if isinstance(value, torch.Tensor):
        values = value.detach().clone().as_subclass(torch.Tensor)
        return ("tensor", str(value.dtype), tuple(value.shape), values)
    if is_collection(value):
        return _collection(value, depth)
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
        return ("py", value)
    if isinstance(value, torch.Size):
        return ("seq", [("py", size) for size in value])
    if isinstance(value, (torch.dtype, torch.device, type)):
        return ("py", getattr(value, "__name__", str(value)))
    if isinstance(value, Mapping):
        return ("dict", {str(k): snapshot(v, depth + 1) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return ("seq", [snapshot(v, depth + 1) for v in value])
    if isinstance(value, Iterable) and not isinstance(value, type):
        return ("seq", [snapshot(v, depth + 1) for v in value])
    return ("other", type(value).__name__)


# --- differences -------------------------------------------------------------------


def _close(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.is_floating_point() or a.is_complex():
        tol = 1e-2 if a.dtype in (torch.float16, torch.bfloat16) else 1e-5
        return torch.allclose(a, b, rtol=tol, atol=tol, equal_nan=True)
    return torch.equal(a, b)


def differences(
    want: Snap, got: Snap, classes: bool, path: str = "result", ignore: frozenset[str] = frozenset()
) -> Iterator[str]:
    """Each way ``got`` differs from ``want`` (``classes``: compare collections' classes;
    ``ignore``: collection attributes left out, as ``is_locked``)."""
    if type(want) is not type(got) or (isinstance(want, tuple) and want[:1] != got[:1]):
        yield f"{path}: want {_short(want)}, got {_short(got)}"
        return
    if isinstance(want, dict):
        yield from _entries(want, got, classes, path, ignore)
        return
    if isinstance(want, list):
        yield from _items(want, got, classes, path, ignore)
        return
    if not isinstance(want, tuple):
        if not _same_scalar(want, got):
            yield f"{path}: want {want!r}, got {got!r}"
        return
    tag = want[0]
    if tag == "error":  # want's family must be one of got's builtin classes
        if want[1] not in got[2]:
            yield f"{path}: error: want {want[1]}, got {got[2]}"
        return
    if tag == "tensor":
        if want[1:3] != got[1:3]:
            yield f"{path}: want {_short(want)}, got {_short(got)}"
        elif not _close(want[3], got[3]):
            yield f"{path}: values differ"
        return
    if tag == "collection":
        labels = ("class", "batch_size", "names", "device", "is_locked")
        for label, a, b in zip(labels, want[1:6], got[1:6]):
            absent = ("absent",) in (a, b)
            if a != b and not absent and (classes or label != "class") and label not in ignore:
                yield f"{path}.{label}: want {a!r}, got {b!r}"
        yield from _entries(want[6], got[6], classes, path, ignore)
        return
    if len(want) != len(got):
        yield f"{path}: want {_short(want)}, got {_short(got)}"
        return
    for a, b in zip(want[1:], got[1:]):
        yield from differences(a, b, classes, path, ignore)


def _items(
    want: list[Any], got: list[Any], classes: bool, path: str, ignore: frozenset[str]
) -> Iterator[str]:
    if len(want) != len(got):
        yield f"{path}: length: want {len(want)}, got {len(got)}"
        return
    for index, (a, b) in enumerate(zip(want, got)):
        yield from differences(a, b, classes, f"{path}[{index}]", ignore)


def _entries(
    want: dict[str, Any], got: dict[str, Any], classes: bool, path: str, ignore: frozenset[str]
) -> Iterator[str]:
    if sorted(want) != sorted(got):
        yield f"{path}: keys: want {sorted(want)}, got {sorted(got)}"
        return
    for key in sorted(want):
        yield from differences(want[key], got[key], classes, f"{path}[{key!r}]", ignore)


def _same_scalar(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-6)
    return bool(a == b) if type(a) is type(b) else False


def _short(snap: Snap) -> str:
    if isinstance(snap, tuple) and snap[:1] == ("tensor",):
        return f"tensor {snap[1]} {list(snap[2])}"
    if isinstance(snap, tuple) and snap[:1] == ("collection",):
        return f"{snap[1]}{list(snap[2])}"
    text = repr(snap)
    return text if len(text) < 80 else text[:77] + "..."


def error_differences(want: BaseException, got: BaseException) -> Iterator[str]:
    """The builtin family of ``want`` must be one of ``got``'s builtin classes."""
    if family(want) not in _builtins(got):
        yield f"error: want {family(want)}, got {type(got).__name__}: {got}"
