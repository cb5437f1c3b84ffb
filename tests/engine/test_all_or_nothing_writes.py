"""In-place writes of several entries are all or nothing (README, "Differences from
tensordict"): a str, a list of the wrong length or a meta tensor at the third key is
refused before the first entry is written (the peer writes the entries before it), for a
TensorDict, a lazy stack and a memory-mapped TensorDict alike."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

import tclass
from tclass import TensorDict
from tclass.errors import EntryTypeError, InPlaceWriteError, MetaTensorError


def _plain(tmp_path: Path) -> Any:
    return TensorDict({k: torch.zeros(3) for k in "abcd"}, [3])


def _lazy(tmp_path: Path) -> Any:
    return tclass.lazy_stack([_plain(tmp_path), _plain(tmp_path)], 1)


def _memmap(tmp_path: Path) -> Any:
    return _plain(tmp_path).memmap_(tmp_path / "saved")


def _rows(td: Any, n: int, bad: Any) -> dict[str, Any]:
    shape = (n, *td.batch_size[1:])
    return {"a": torch.ones(shape), "b": torch.ones(shape), "c": bad(shape)}


def _meta(shape: Any) -> torch.Tensor:
    return torch.ones(shape, device="meta")


WRITES: dict[str, tuple[Callable[[Any], Any], type[Exception]]] = {
    "update_ str": (lambda td: td.update_({**_rows(td, 3, lambda s: "x")}), InPlaceWriteError),
    "update_ list": (lambda td: td.update_({**_rows(td, 3, lambda s: [1, 2])}), RuntimeError),
    "update_ meta": (lambda td: td.update_(_rows(td, 3, _meta)), MetaTensorError),
    "setitem str": (lambda td: td.__setitem__(slice(0, 2), _rows(td, 2, lambda s: "x")), TypeError),
    "setitem meta": (lambda td: td.__setitem__(slice(0, 2), _rows(td, 2, _meta)), MetaTensorError),
    "update_at_ str": (
        lambda td: td.update_at_(_rows(td, 2, lambda s: "x"), slice(0, 2)),
        EntryTypeError,
    ),
    "update_at_ meta": (
        lambda td: td.update_at_(_rows(td, 2, _meta), slice(0, 2)),
        MetaTensorError,
    ),
    "copy_ meta": (
        lambda td: td.copy_(TensorDict(_rows(td, 3, _meta), td.batch_size)),
        MetaTensorError,
    ),
}


@pytest.mark.parametrize("make", [_plain, _lazy, _memmap], ids=["td", "lazy", "memmap"])
@pytest.mark.parametrize("name", list(WRITES))
def test_refused_write_leaves_every_entry(tmp_path: Path, make: Any, name: str) -> None:
    td = make(tmp_path)
    before = {k: td.get(k).clone() for k in "abcd"}
    write, error = WRITES[name]
    with pytest.raises(error, match="'c'|\\[2\\]") as info:
        write(td)
    assert isinstance(info.value, tclass.errors.TclassError)
    if error is not RuntimeError:
        # (a memory-mapped TensorDict reads the dict at its device first: refused there)
        assert "nothing was written" in str(info.value) or "no data" in str(info.value)
    for key, value in before.items():
        assert torch.equal(td.get(key), value), key


def test_meta_is_a_not_implemented_error() -> None:
    td = TensorDict({"a": torch.zeros(3), "c": torch.zeros(3)}, [3])
    with pytest.raises(NotImplementedError):
        td.update_({"a": torch.ones(3), "c": torch.ones(3, device="meta")})
    assert not td["a"].any()


def test_meta_into_meta_entry_still_written() -> None:
    td = TensorDict({"a": torch.zeros(3, device="meta")}, [3])
    td.update_({"a": torch.ones(3, device="meta")})  # no data either side: nothing refused
    td[0:2] = {"a": torch.ones(2, device="meta")}
