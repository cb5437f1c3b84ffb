"""Results in library-neutral form (snapshots), and the differences between two of them.

A snapshot is taken right after a step, before the next one can change the result in
place. It is made only of tuples, lists, Python scalars and cloned tensors:

- a tensor: ``("tensor", class name, dtype, shape, values)``;
- a collection: ``("collection", kind, batch size, names, device, locked, entries,
  extra)`` where ``kind`` is the class name (``Rec`` / ``Inner`` for either library's
  record classes, ``PersistentTensorDictView`` for the rows of a file, the peer's
  ``_SubTensorDict``), ``entries`` are ``(key, snapshot)`` in the collection's key order (a
  record's fields in declaration order) and ``extra`` the lazy stack's dim and members;
- a Python value inside a collection: ``("nontensor", snapshot of the node, snapshot of
  the value read by ``td[key]``)``, the node being ``("value", data, batch size)`` or
  ``("values", list, batch size)``;
- an error raised while reading: ``("error", builtin family)``;
- Python scalars ``("py", type, value)``, sequences ``("seq", type, items)``, dicts
  ``("dict", items)``, sizes, dtypes and devices as strings.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import torch

RECORD_FIELDS = {
    "Rec": ("x", "label", "inner", "opt"),
    "Inner": ("y", "z"),
    "Auto": ("x", "n", "s", "lst", "opt"),
    "NoCast": ("x", "n", "v"),
    "TOnly": ("x", "y"),
    "Frozen": ("x", "s", "n"),
}
RECORD_KINDS = {name: name for name in RECORD_FIELDS} | {
    f"Peer{name}": name for name in RECORD_FIELDS
}
# The rows of an HDF5 file (``ptd[idx]``) are a view of it in both libraries, by another name.
FILE_VIEWS = {"_SubTensorDict": "PersistentTensorDictView"}
VIEW_TYPES = ("KeysView", "ValuesView", "ItemsView", "_StringKeys", "_LazyStackedKeys")
Snap = Any


def builtin_family(error: BaseException) -> type[BaseException]:
    """The first builtin class in ``error``'s MRO (``KeyError`` for a tclass ``KeyError``
    subclass, ``RuntimeError`` for torch's ``_LinAlgError``...)."""
    for cls in type(error).__mro__:
        if cls.__module__ == "builtins":
            return cls
    return Exception


def builtins_of(error: BaseException) -> tuple[str, ...]:
    return tuple(c.__name__ for c in type(error).__mro__ if c.__module__ == "builtins")


def _guard(read: Any) -> Snap:
    try:
        return read()
    except Exception as error:  # a read that raises is part of the result
        return ("error", builtin_family(error).__name__, builtins_of(error))


def _kind(value: Any) -> str:
    name = type(value).__name__
    if name.startswith("Peer") and name.endswith("_tc"):  # from_dataclass(as_tensorclass=True)
        name = name.removeprefix("Peer")  # of a record: a class named after the record's
    return RECORD_KINDS.get(name, FILE_VIEWS.get(name, name))


def flat_values(value: Any) -> list[Any]:
    """The elements of a nested list, flat (anything else: itself, alone)."""
    if isinstance(value, list):
        return [item for part in value for item in flat_values(part)]
    return [value]


# a key step of a detail line's head: ``['a']`` (repr of a string key)
_KEY_STEP = re.compile(r"\['([^']*)'\]")


def key_path(line: str) -> tuple[str, ...]:
    """The key path of a detail line: the keys of the ``['a']`` steps of its head (the text
    before its first ``": "``), in order, other steps (``[0]``, ``.<members>``) left out:
    ``result['n'].<members>[0][1]['a']: ...`` gives ``('n', 'a')``. A head alone (a regex
    group of one) reads the same."""
    return tuple(_KEY_STEP.findall(line.split(": ")[0]))


def entry_at(top: Any, path: Iterable[str]) -> Any:
    """The entry of ``top`` at ``path``, key by key; None past a missing key or a step
    that is no collection (no ``get``)."""
    node = top
    for key in path:
        node = node.get(key, None) if hasattr(node, "get") else None
    return node


def list_dims(value: Any) -> list[int]:
    """The dims of a nested list: the length of each level, outermost first (read down
    the first items; none for anything but a list with items)."""
    dims: list[int] = []
    while isinstance(value, list) and value:
        dims.append(len(value))
        value = value[0]
    return dims


def read_both(path: str, peer: Any, mine: Any) -> tuple[Any, Any] | None:
    """The entries at the keys ``['a']['b']...`` of ``path`` (a finding line's head) in
    the peer's and tclass's results of a step, in that order; None where either lacks it."""
    key = key_path(path)
    try:
        return peer.value.get(key), mine.value.get(key)
    except (KeyError, AttributeError):
        return None


def is_collection(value: Any) -> bool:
    return not isinstance(value, torch.Tensor) and hasattr(value, "batch_size")


# The classes of Python values: a node's names are not compared (fz27e: a ``MetaData``,
# which the peer's set names as its parent, compares as a ``NonTensorData`` does).
VALUE_KINDS = ("NonTensorData", "NonTensorStack", "MetaData")


def _nontensor(node: Any) -> Snap:
    kind = _kind(node)
    size = list(node.batch_size)
    if kind == "NonTensorStack":
        return ("values", _guard(lambda: snapshot(node.tolist())), size)
    label = "meta" if kind == "MetaData" else "value"
    return (label, _guard(lambda: snapshot(node.data)), size)


def _collection(value: Any, depth: int) -> Snap:
    kind = _kind(value)
    if kind in VALUE_KINDS:
        return _nontensor(value)
    entries: list[tuple[Any, Snap]] = []
    extra: Snap = None
    if kind in RECORD_FIELDS:
        for name in RECORD_FIELDS[kind]:
            entries.append((name, _guard(lambda n=name: snapshot(getattr(value, n), depth + 1))))
    else:
        keys = list(value.keys())
        for key in keys:
            entries.append((key, _guard(lambda k=key: _child(value, k, depth))))
        if kind == "LazyStackedTensorDict":
            members = [snapshot(member, depth + 1) for member in value.tensordicts]
            extra = (value.stack_dim, members)
    return (
        "collection",
        kind,
        tuple(value.batch_size),
        _guard(lambda: list(value.names)),
        _guard(lambda: str(value.device)),
        _guard(lambda: bool(value.is_locked)),
        entries,
        extra,
    )


def _child(parent: Any, key: str, depth: int) -> Snap:
    child = parent.get(key)
    if _kind(child) in VALUE_KINDS:
        return ("nontensor", _nontensor(child), _guard(lambda: snapshot(parent[key], depth + 1)))
    return snapshot(child, depth + 1)


def snapshot(value: Any, depth: int = 0) -> Snap:
    """``value`` in library-neutral form (see the module docstring)."""
    if depth > 12:
        return ("deep",)
    if isinstance(value, torch.Tensor) and value.is_nested:
        return _nested(value)
    if isinstance(value, torch.Tensor):
        return ("tensor", type(value).__name__, str(value.dtype), tuple(value.shape), _copy(value))
    if is_collection(value):
        return _collection(value, depth)
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
        return ("py", type(value).__name__, value)
    if isinstance(value, torch.Size):
        return ("size", list(value))
    if isinstance(value, (torch.dtype, torch.device)):
        return ("py", type(value).__name__, str(value))
    if isinstance(value, Mapping):
        return ("dict", [(k, snapshot(v, depth + 1)) for k, v in value.items()])
    if isinstance(value, (list, tuple)):
        return ("seq", _seq_type(value), [snapshot(v, depth + 1) for v in value])
    if isinstance(value, (Iterator, Iterable)) and not isinstance(value, type):
        return ("seq", "iter", [snapshot(v, depth + 1) for v in value])
    return ("other", type(value).__name__)


def _nested(value: torch.Tensor) -> Snap:
    """A nested (jagged) tensor: its ragged dims as ``"j"`` (torch names them by a
    counter of the process, ``j1`` in one library and ``j2`` in the other), its parts'
    shapes after them and their values joined (17,146,056 L10 of extra,shape, fz34b)."""
    try:
        parts = [part.detach().clone().as_subclass(torch.Tensor) for part in value.unbind()]
    except Exception:  # one that cannot be taken apart is compared as it is
        return ("tensor", type(value).__name__, str(value.dtype), tuple(value.shape), value)
    shape = tuple(size if type(size) is int else "j" for size in value.shape)
    shape += tuple(tuple(part.shape) for part in parts)
    joined = torch.cat([part.flatten() for part in parts]) if parts else torch.zeros(0)
    return ("tensor", type(value).__name__, str(value.dtype), shape, joined)


def _seq_type(value: Any) -> str:
    if isinstance(value, list):
        return "list"  # the peer's LinkedList included
    if hasattr(value, "_fields"):
        return "namedtuple" + str(tuple(value._fields))
    return "tuple"


def _copy(tensor: torch.Tensor) -> torch.Tensor:
    try:
        return tensor.detach().clone().as_subclass(torch.Tensor)
    except Exception:  # a tensor that cannot be copied is compared as it is
        return tensor


# --- differences -------------------------------------------------------------------


def _close(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    if a.is_floating_point() or a.is_complex():
        tol = 1e-2 if a.dtype in (torch.float16, torch.bfloat16) else 1e-5
        return torch.allclose(a, b, rtol=tol, atol=tol, equal_nan=True)
    return torch.equal(a, b)


def differences(peer: Snap, mine: Snap, path: str = "") -> Iterator[str]:
    """Each way ``mine`` differs from ``peer``, as ``path: what``."""
    where = path or "result"
    if type(peer) is not type(mine) or (isinstance(peer, tuple) and peer[:1] != mine[:1]):
        yield f"{where}: peer {_short(peer)}, tclass {_short(mine)}"
        return
    if not isinstance(peer, tuple):
        if isinstance(peer, list):
            yield from _lists(peer, mine, where)
        elif not _same_scalar(peer, mine):
            yield f"{where}: peer {peer!r}, tclass {mine!r}"
        return
    tag = peer[0]
    if tag == "error":  # the peer's builtin family must be one of tclass's error's bases
        if peer[1] not in mine[2]:
            yield f"{where}: error: peer {peer[1]}, tclass {mine[2]}"
        return
    if tag == "tensor":
        if peer[1:4] != mine[1:4]:
            yield f"{where}: peer {_short(peer)}, tclass {_short(mine)}"
        elif not _close(peer[4], mine[4]):
            yield f"{where}: values differ: peer {_values(peer[4])}, tclass {_values(mine[4])}"
        return
    if tag == "collection":
        labels = ("kind", "batch_size", "names", "device", "is_locked")
        for label, a, b in zip(labels, peer[1:6], mine[1:6]):
            if _is_error(a) and _is_error(b):
                yield from differences(a, b, f"{where}.{label}")  # by builtin family
            elif a != b:
                yield f"{where}.{label}: peer {a!r}, tclass {b!r}"
        yield from _entries(peer[6], mine[6], where)
        yield from differences(peer[7], mine[7], f"{where}.<members>")
        return
    if tag == "dict":
        yield from _entries(peer[1], mine[1], where)
        return
    if len(peer) != len(mine):
        yield f"{where}: peer {_short(peer)}, tclass {_short(mine)}"
        return
    for index, (a, b) in enumerate(zip(peer[1:], mine[1:])):
        yield from differences(a, b, where if tag in ("py", "nontensor") else f"{where}[{index}]")


def _is_error(snap: Snap) -> bool:
    return isinstance(snap, tuple) and snap[:1] == ("error",)


def _entries(peer: list[Any], mine: list[Any], where: str) -> Iterator[str]:
    peer_keys, my_keys = [k for k, _ in peer], [k for k, _ in mine]
    if peer_keys != my_keys:
        if sorted(map(str, peer_keys)) == sorted(map(str, my_keys)):
            yield f"{where}: key order: peer {peer_keys}, tclass {my_keys}"
        else:
            yield f"{where}: keys: peer {peer_keys}, tclass {my_keys}"
            return
    mine_by_key = dict(mine)
    for key, value in peer:
        yield from differences(value, mine_by_key[key], f"{where}[{key!r}]")


def _lists(peer: list[Any], mine: list[Any], where: str) -> Iterator[str]:
    if len(peer) != len(mine):
        yield f"{where}: length: peer {len(peer)}, tclass {len(mine)}"
        return
    for index, (a, b) in enumerate(zip(peer, mine)):
        yield from differences(a, b, f"{where}[{index}]")


def _same_scalar(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-6)
    return bool(a == b) and type(a) is type(b)


def _values(tensor: torch.Tensor) -> str:
    text = str(tensor.tolist()) if tensor.numel() <= 12 else f"<{tensor.numel()} values>"
    return text


def _short(snap: Snap) -> str:
    if not isinstance(snap, tuple) or not snap:
        return repr(snap)[:120]
    tag = snap[0]
    if tag == "tensor":
        return f"{snap[1]}[{snap[2]}, shape {list(snap[3])}]"
    if tag == "collection":
        return f"{snap[1]}(batch_size={list(snap[2])}, keys={[k for k, _ in snap[6]]})"
    if tag in ("py", "error", "size", "other"):
        return f"{tag} {snap[1:]!r}"[:120]
    if tag == "seq":
        return f"{snap[1]} of {len(snap[2])}"
    return f"{tag} {str(snap[1:])[:100]}"
