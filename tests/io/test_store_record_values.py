"""A record read from an HDF5 or zarr file gets the Python values of its fields back as
a loaded folder gives them: a ``tuple`` field, which the file keeps as a JSON list, reads
as a tuple (README, "Nothing is silently lost"), on every way the record is reached."""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any

import pytest
import torch

from tclass import tensorclass

LIBRARIES = {"h5": "h5py", "zarr": "zarr"}


@tensorclass
class Point:
    x: torch.Tensor
    t: tuple
    words: list


@tensorclass
class Holder:
    point: Point
    u: tuple


@pytest.fixture(params=sorted(LIBRARIES))
def backend(request: pytest.FixtureRequest) -> str:
    pytest.importorskip(LIBRARIES[request.param])
    return str(request.param)


def _saved(tmp_path: Path, backend: str) -> Any:
    point = Point(x=torch.ones(2), t=(1, 2), words=["a"], batch_size=[2])
    holder = Holder(point=point, u=(3,), batch_size=[2])
    path = tmp_path / f"h.{backend}"
    getattr(holder, f"to_{backend}")(path)
    return getattr(Holder, f"from_{backend}")(path)


def test_a_tuple_field_read_from_a_file_is_a_tuple(tmp_path: Path, backend: str) -> None:
    loaded = _saved(tmp_path, backend)
    assert loaded.u == (3,) and type(loaded.u) is tuple
    assert loaded.point.t == (1, 2) and type(loaded.point.t) is tuple
    assert loaded.point.words == ["a"] and type(loaded.point.words) is list  # a list field


def test_a_tuple_field_stays_a_tuple_through_rows_copies_and_pickling(
    tmp_path: Path, backend: str
) -> None:
    loaded = _saved(tmp_path, backend)
    reached = {
        "row": loaded[0].point.t,
        "rows": loaded[1:].point.t,
        "clone": loaded.clone().point.t,
        "to": loaded.to("cpu").point.t,
        "pickled": pickle.loads(pickle.dumps(loaded)).point.t,
        "pickled u": pickle.loads(pickle.dumps(loaded)).u,
    }
    assert {key: (type(v), v) for key, v in reached.items()} == {
        "row": (tuple, (1, 2)),
        "rows": (tuple, (1, 2)),
        "clone": (tuple, (1, 2)),
        "to": (tuple, (1, 2)),
        "pickled": (tuple, (1, 2)),
        "pickled u": (tuple, (3,)),
    }
