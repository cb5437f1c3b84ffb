"""Loading as a new user gets it wrong (nu24d): errors naming what was given and what
is expected, also the builtin the peer raises."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import tclass
from tclass import TensorDict
from tclass.errors import ArgumentError


@pytest.mark.parametrize("prefix", [3, None, b"/tmp/x"])
def test_load_memmap_of_no_path_says_what_it_takes(prefix: object) -> None:
    with pytest.raises(
        ArgumentError, match="load_memmap expects the path of a saved folder"
    ) as info:
        TensorDict.load_memmap(prefix)  # type: ignore[arg-type]
    assert isinstance(info.value, TypeError)  # the peer's (os.fspath's)
    with pytest.raises(ArgumentError, match="got int 3"):
        tclass.load_memmap(3)  # type: ignore[arg-type]


def test_load_memmap_of_a_path_still_loads(tmp_path: Path) -> None:
    TensorDict({"a": torch.arange(3)}, [3]).memmap(tmp_path / "m")
    assert TensorDict.load_memmap(tmp_path / "m")["a"].tolist() == [0, 1, 2]
    assert TensorDict.load_memmap(str(tmp_path / "m"))["a"].tolist() == [0, 1, 2]
