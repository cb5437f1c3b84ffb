"""Every write into an HDF5 file opened read-only is a ``ReadOnlyFileError`` that nothing
wrote, and is also the builtin the peer's h5py raises for that write (``KeyError`` to
replace or remove an entry, ``ValueError`` for a new one, ``OSError`` in place, and its
``RuntimeError`` where it checks the lock or the shape first), so code written against
the peer catches it."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

import tclass
from tclass.errors import ReadOnlyFileError, TclassError

h5py = pytest.importorskip("h5py")

WRITES: dict[str, Callable[[Any], Any]] = {
    "update": lambda x: x.update({"a": torch.ones(2)}),
    "update_new": lambda x: x.update({"z": torch.ones(2)}),
    "set": lambda x: x.set("a", torch.ones(2)),
    "set_new": lambda x: x.set("z", torch.ones(2)),
    "set_nested": lambda x: x.set(("n", "b"), torch.zeros(2)),
    "set_": lambda x: x.set_("a", torch.ones(2)),
    "setitem": lambda x: x.__setitem__("a", torch.ones(2)),
    "delitem": lambda x: x.__delitem__("a"),
    "del_": lambda x: x.del_("a"),
    "pop": lambda x: x.pop("a"),
    "rename_key_": lambda x: x.rename_key_("a", "q"),
    "apply_": lambda x: x.apply_(lambda t: t + 1),
    "zero_": lambda x: x.zero_(),
    "fill_": lambda x: x.fill_("a", 2),
    "set_at_": lambda x: x.set_at_("a", 5.0, 0),
    "view_setitem": lambda x: x[0:1].__setitem__("a", torch.ones(1)),
    # the peer checks the lock or the shape first: a RuntimeError
    "locked_set_new": lambda x: x.lock_().__setitem__("z", torch.ones(2)),
    "locked_delitem": lambda x: x.lock_().__delitem__("a"),
    "setitem_wrong_shape": lambda x: x.__setitem__("a", torch.ones(7)),
}


@pytest.fixture
def path(tmp_path: Path) -> Path:
    source = tclass.TensorDict(
        a=torch.zeros(2), n=tclass.TensorDict(b=torch.ones(2), batch_size=[2]), batch_size=[2]
    )
    tclass.PersistentTensorDict.from_dict(source, filename=tmp_path / "f.h5").close()
    return tmp_path / "f.h5"


def _peer_error(path: Path, write: Callable[[Any], Any]) -> type[BaseException]:
    peer = pytest.importorskip("tensordict")
    ptd = peer.PersistentTensorDict.from_h5(str(path), mode="r")
    try:
        with warnings.catch_warnings():  # (the peer's warning of a replaced entry)
            warnings.simplefilter("ignore")
            write(ptd)
    except Exception as error:  # noqa: BLE001  (h5py's, whatever it is)
        return type(error)
    finally:
        ptd.close()
    pytest.fail("the peer wrote into a file opened read-only")


@pytest.mark.parametrize("name", list(WRITES))
def test_a_read_only_write_is_the_peers_builtin_and_writes_nothing(path: Path, name: str) -> None:
    ptd = tclass.PersistentTensorDict.from_h5(path, mode="r")
    with pytest.raises(ReadOnlyFileError, match="mode='r'") as info:
        WRITES[name](ptd)
    assert isinstance(info.value, TclassError)
    ptd.close()
    with h5py.File(path, "r") as f:  # nothing written
        assert sorted(f.keys()) == ["a", "n"] and f["a"][()].tolist() == [0.0, 0.0]
    builtin = _peer_error(path, WRITES[name])
    assert isinstance(info.value, builtin), (name, builtin)


def test_catching_the_peers_key_error_catches_it(path: Path) -> None:
    ptd = tclass.PersistentTensorDict.from_h5(path, mode="r")
    try:
        ptd.del_("a")
    except KeyError as error:  # as code written for the peer does
        assert "mode='r+'" in str(error) and not str(error).startswith('"')
    finally:
        ptd.close()
