"""The kinds of collection a user can hold, one builder each.

A kind builds, in a library (tclass or the peer, both exposing the same names), a
collection of batch size [3, 4] (``unsqueezed``: [3, 4, 1]) holding float, int and bool
leaves, and its *dense equivalent*: a plain TensorDict with the same entries, names and
lock state, the oracle a method's result is compared with. ``floats`` builds the same
structure with every leaf a float (for the methods only floating leaves take). Files go
under the given folder (pytest's ``tmp_path``).
"""

from __future__ import annotations

import functools
import importlib.util
import types
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

BATCH = (3, 4)
Builder = Callable[["Lib", Path, bool], Any]


@dataclass(frozen=True)
class Lib:
    """A library (``L``: the module) and the record classes declared in it."""

    L: types.ModuleType
    records: dict[str, type]


@dataclass(frozen=True)
class Built:
    """A kind's collection, its dense equivalent (``None`` where there is none, as for
    ragged lazy stacks) and a check of what the collection shares (a view's parent)."""

    value: Any
    dense: Any
    check: Callable[[], None] | None = None


@dataclass(frozen=True)
class Kind:
    name: str
    build: Callable[[Lib, Path, bool], Built]
    locked_results: bool = False  # its methods' results are locked (a frozen record's)
    needs: str | None = None  # the optional package it is stored with (skipped without)

    def available(self) -> bool:
        return self.needs is None or importlib.util.find_spec(self.needs) is not None


# --- data --------------------------------------------------------------------------


def tensors(floats: bool, batch: tuple[int, ...] = BATCH) -> dict[str, Any]:
    """Fresh leaves, the same on every call: ``a`` float [*, 2], ``b`` int64, ``c`` bool,
    and the nested ``n`` with ``d`` float [*, 5] and ``e`` int32 [*, 1]."""
    g = torch.Generator().manual_seed(0)
    a = torch.randn(*batch, 2, generator=g)
    b = torch.randint(-5, 6, batch, generator=g)
    c = torch.rand(*batch, generator=g) > 0.5
    d = torch.randn(*batch, 5, generator=g)
    e = torch.randint(1, 9, (*batch, 1), generator=g, dtype=torch.int32)
    if floats:
        b, c, e = b.float(), c.float(), e.float()
    return {"a": a, "b": b, "c": c, "n": {"d": d, "e": e}}


def flat(floats: bool, batch: tuple[int, ...] = BATCH) -> dict[str, Any]:
    data = tensors(floats, batch)
    del data["n"]
    return data


def dense(lib: Lib, data: dict[str, Any], *, locked: bool = False, **kwargs: Any) -> Any:
    td = lib.L.TensorDict(data, batch_size=kwargs.pop("batch_size", BATCH), **kwargs)
    return td.lock_() if locked else td


# --- record classes ----------------------------------------------------------------


@functools.cache
def declare(module: types.ModuleType) -> Lib:
    """The record classes of the matrix, declared in ``module`` (tclass or the peer)."""
    L = module
    T = torch.Tensor

    @L.tensorclass
    class Flat:
        a: T
        b: T
        c: T

    class FlatTC(L.TensorClass):
        a: T
        b: T
        c: T

    @L.tensorclass
    class Inner:
        d: T
        e: T

    class Nested(L.TensorClass):
        a: T
        b: T
        c: T
        n: Inner

    @L.tensorclass
    class Valued:
        a: T
        b: T
        c: T
        label: str

    @L.tensorclass(autocast=True)
    class Autocast:
        a: T
        b: T
        c: T

    class Nocast(L.TensorClass["nocast"]):
        a: T
        b: T
        c: T

    @L.tensorclass(tensor_only=True)
    class TensorOnly:
        a: T
        b: T
        c: T

    class Frozen(L.TensorClass["frozen"]):
        a: T
        b: T
        c: T

    class Typed(L.TypedTensorDict):
        a: T
        b: T
        c: T

    classes = (Flat, FlatTC, Inner, Nested, Valued, Autocast, Nocast, TensorOnly, Frozen, Typed)
    for cls in classes:  # picklable: found by name in this module
        cls.__qualname__ = f"{module.__name__}_{cls.__name__}"
        cls.__module__ = __name__
        globals()[cls.__qualname__] = cls
    return Lib(module, {cls.__name__: cls for cls in classes})


# --- builders ----------------------------------------------------------------------


def _td(nested: bool, **extra: Any) -> Callable[[Lib, Path, bool], Built]:
    def build(lib: Lib, tmp: Path, floats: bool) -> Built:
        data = tensors(floats) if nested else flat(floats)
        value = dense(lib, data, **extra)
        return Built(value, dense(lib, tensors(floats) if nested else flat(floats), **extra))

    return build


def _with_value(lib: Lib, tmp: Path, floats: bool) -> Built:
    value, oracle = dense(lib, tensors(floats)), dense(lib, tensors(floats))
    for td in (value, oracle):
        td.set_non_tensor("label", "hello")
        td.set_non_tensor(("n", "tag"), 7)
    return Built(value, oracle)


def _with_metadata(lib: Lib, tmp: Path, floats: bool) -> Built:
    value, oracle = dense(lib, tensors(floats)), dense(lib, tensors(floats))
    for td in (value, oracle):
        td["meta"] = lib.L.MetaData("config", batch_size=BATCH)
    return Built(value, oracle)


def _with_unbatched(lib: Lib, tmp: Path, floats: bool) -> Built:
    value, oracle = dense(lib, tensors(floats)), dense(lib, tensors(floats))
    for td in (value, oracle):
        td["u"] = lib.L.UnbatchedTensor(torch.arange(6.0).reshape(2, 3))
    return Built(value, oracle)


def _view(lib: Lib, tmp: Path, floats: bool) -> Built:
    parent = dense(lib, tensors(floats, (5, 4)), batch_size=(5, 4))
    value = parent[1:4]

    def check() -> None:  # the view writes through to its parent (the keys both hold)
        seen = parent[1:4]
        for key in set(seen.keys(True, True)) & set(value.keys(True, True)):
            torch.testing.assert_close(seen.get(key), value.get(key), equal_nan=True)

    oracle = dense(lib, _map(_sliced(tensors(floats, (5, 4))), torch.clone))
    return Built(value, oracle, check)


def _sliced(data: dict[str, Any]) -> dict[str, Any]:
    return {k: _sliced(v) if isinstance(v, dict) else v[1:4] for k, v in data.items()}


def _permuted(lib: Lib, tmp: Path, floats: bool) -> Built:
    data = _map(tensors(floats), lambda t: t.transpose(0, 1).contiguous())
    value = dense(lib, data, batch_size=(4, 3)).permute(1, 0)
    return Built(value, dense(lib, tensors(floats)))


def _unsqueezed(lib: Lib, tmp: Path, floats: bool) -> Built:
    value = dense(lib, tensors(floats)).unsqueeze(-1)
    data = _map(tensors(floats), lambda t: t.unsqueeze(2))
    return Built(value, dense(lib, data, batch_size=(3, 4, 1)))


def _squeezed(lib: Lib, tmp: Path, floats: bool) -> Built:
    data = _map(tensors(floats), lambda t: t.unsqueeze(1))
    value = dense(lib, data, batch_size=(3, 1, 4)).squeeze(1)
    return Built(value, dense(lib, tensors(floats)))


def _reset_batch(lib: Lib, tmp: Path, floats: bool) -> Built:
    value = dense(lib, tensors(floats), batch_size=(3,))
    value.batch_size = BATCH
    return Built(value, dense(lib, tensors(floats)))


def _map(data: dict[str, Any], fn: Callable[[torch.Tensor], torch.Tensor]) -> dict[str, Any]:
    return {k: _map(v, fn) if isinstance(v, dict) else fn(v) for k, v in data.items()}


def _memmapped(lib: Lib, tmp: Path, floats: bool) -> Built:
    value = dense(lib, tensors(floats)).memmap_(tmp / "memmapped")
    return Built(value, dense(lib, tensors(floats), locked=True, device="cpu"))


def _loaded(lib: Lib, tmp: Path, floats: bool) -> Built:
    dense(lib, tensors(floats)).memmap_(tmp / "saved")
    return Built(lib.L.load_memmap(tmp / "saved"), dense(lib, tensors(floats), device="cpu"))


def _archive(lib: Lib, tmp: Path, floats: bool) -> Built:
    dense(lib, tensors(floats)).save(tmp / "saved.tdz")
    oracle = dense(lib, tensors(floats), device="cpu")
    return Built(lib.L.load_memmap(tmp / "saved.tdz"), oracle)


def _consolidated(lib: Lib, tmp: Path, floats: bool) -> Built:
    value = dense(lib, tensors(floats)).consolidate()
    return Built(value, dense(lib, tensors(floats), locked=True))


def _lazy(dim: int) -> Callable[[Lib, Path, bool], Built]:
    def build(lib: Lib, tmp: Path, floats: bool) -> Built:
        source = dense(lib, tensors(floats))
        value = lib.L.lazy_stack(list(source.unbind(dim)), dim)
        return Built(value, dense(lib, tensors(floats)))

    return build


def _lazy_nested(lib: Lib, tmp: Path, floats: bool) -> Built:
    source = dense(lib, tensors(floats))
    rows = [lib.L.lazy_stack(list(row.unbind(0)), 0) for row in source.unbind(0)]
    return Built(lib.L.lazy_stack(rows, 0), dense(lib, tensors(floats)))


def _lazy_ragged(lib: Lib, tmp: Path, floats: bool) -> Built:
    members = []
    for i, row in enumerate(dense(lib, tensors(floats)).unbind(0)):
        row["r"] = torch.arange(4.0 * (i + 1)).reshape(4, i + 1)
        members.append(row)
    return Built(lib.L.lazy_stack(members, 0), None)


def _record(name: str, fields: str = "flat") -> Callable[[Lib, Path, bool], Built]:
    def build(lib: Lib, tmp: Path, floats: bool) -> Built:
        cls = lib.records[name]
        data: dict[str, Any] = tensors(floats) if fields == "nested" else flat(floats)
        kwargs = dict(data)
        if fields == "nested":
            kwargs["n"] = lib.records["Inner"](**data["n"], batch_size=BATCH)
        if fields == "valued":
            kwargs["label"] = "hello"
        value = cls(**kwargs, batch_size=BATCH)
        fresh = tensors(floats) if fields == "nested" else flat(floats)
        oracle = dense(lib, fresh, locked=name == "Frozen")
        if fields == "valued":
            oracle.set_non_tensor("label", "hello")
        return Built(value, oracle)

    return build


def _h5(lib: Lib, tmp: Path, floats: bool) -> Built:
    filename = tmp / f"data-{lib.L.__name__}-{floats}.h5"
    value = lib.L.PersistentTensorDict.from_dict(dense(lib, tensors(floats)), filename=filename)
    return Built(value, dense(lib, tensors(floats)))


def _zarr(lib: Lib, tmp: Path, floats: bool) -> Built:
    store = tmp / f"data-{lib.L.__name__}-{floats}.zarr"
    value = lib.L.PersistentTensorDict.from_dict(
        dense(lib, tensors(floats)), filename=store, backend="zarr"
    )
    return Built(value, dense(lib, tensors(floats)))


def _store_rows(backend: str) -> Builder:
    """Rows 1:4 of a [5, 4] file: a view that reads and writes them (the comparison
    with the dense rows after each call checks what the file holds)."""

    def build(lib: Lib, tmp: Path, floats: bool) -> Built:
        filename = tmp / f"rows-{lib.L.__name__}-{floats}.{backend}"
        whole = dense(lib, tensors(floats, (5, 4)), batch_size=(5, 4))
        parent = lib.L.PersistentTensorDict.from_dict(whole, filename=filename, backend=backend)
        oracle = dense(lib, _map(_sliced(tensors(floats, (5, 4))), torch.clone))
        return Built(parent[1:4], oracle)

    return build


def _params(lib: Lib, tmp: Path, floats: bool) -> Built:
    value = lib.L.TensorDictParams(dense(lib, tensors(floats)))
    return Built(value, dense(lib, tensors(floats)))


KINDS: list[Kind] = [
    Kind("td_flat", _td(nested=False)),
    Kind("td_nested", _td(nested=True)),
    Kind("td_values", _with_value),
    Kind("td_metadata", _with_metadata),
    Kind("td_unbatched", _with_unbatched),
    Kind("td_names", _td(nested=True, names=["x", "y"])),
    Kind("view", _view),
    Kind("permuted", _permuted),
    Kind("unsqueezed", _unsqueezed),
    Kind("squeezed", _squeezed),
    Kind("batch_reset", _reset_batch),
    Kind("memmapped", _memmapped),
    Kind("memmap_loaded", _loaded),
    Kind("archive_tdz", _archive),
    Kind("consolidated", _consolidated),
    Kind("lazy_dim0", _lazy(0)),
    Kind("lazy_dim1", _lazy(1)),
    Kind("lazy_nested", _lazy_nested),
    Kind("lazy_ragged", _lazy_ragged),
    Kind("rec_flat", _record("Flat")),
    Kind("rec_tc_flat", _record("FlatTC")),
    Kind("rec_nested", _record("Nested", "nested")),
    Kind("rec_values", _record("Valued", "valued")),
    Kind("rec_autocast", _record("Autocast")),
    Kind("rec_nocast", _record("Nocast")),
    Kind("rec_tensor_only", _record("TensorOnly")),
    Kind("rec_frozen", _record("Frozen"), locked_results=True),
    Kind("h5", _h5, needs="h5py"),
    Kind("zarr", _zarr, needs="zarr"),
    Kind("h5_rows", _store_rows("h5"), needs="h5py"),
    Kind("zarr_rows", _store_rows("zarr"), needs="zarr"),
    Kind("params", _params),
    Kind("typed", _record("Typed")),
]
KIND_NAMES = [kind.name for kind in KINDS]
