"""A load never changes files, even when the class's ``__post_init__`` (which runs on a
loaded record, as on all data that comes in, as the peer's) assigns a field: what it sets
stays in memory. Before, the assignment reached the folder the record was loaded from
(a loaded record's assignments are written through), so every load of a record whose
hook derives ``n = n + 1`` grew the saved ``n``. Assignments after the load still reach
the folder."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tclass import lazy_stack, load_memmap, tensorclass


@tensorclass
class Inner:
    z: torch.Tensor
    label: str

    def __post_init__(self) -> None:
        self.label = self.label + "!"


@tensorclass
class Counted:
    x: torch.Tensor
    n: int
    inner: Inner

    def __post_init__(self) -> None:
        self.n = self.n + 1


def _files(folder: Path) -> list[tuple[str, bytes]]:
    return sorted((str(p.relative_to(folder)), p.read_bytes()) for p in folder.rglob("*.json"))


def _record() -> Counted:
    inner = Inner(z=torch.zeros(2), label="a", batch_size=[2])  # label "a!"
    return Counted(x=torch.zeros(2), n=1, inner=inner, batch_size=[2])  # n 2


@pytest.mark.parametrize("lazy", [False, True], ids=["record", "lazy_stack"])
def test_each_load_reads_what_was_saved(tmp_path: Path, lazy: bool) -> None:
    saved = lazy_stack([_record(), _record()]) if lazy else _record()
    saved.memmap(tmp_path / "r")
    before = _files(tmp_path / "r")
    for _ in range(3):
        for loaded in (Counted.load_memmap(tmp_path / "r"), load_memmap(tmp_path / "r")):
            row = loaded[0] if lazy else loaded
            assert (row.n, row.inner.label) == (3, "a!!")  # the hooks ran once, in memory
    assert _files(tmp_path / "r") == before


def test_an_assignment_after_the_load_is_written(tmp_path: Path) -> None:
    _record().memmap(tmp_path / "r")
    loaded = Counted.load_memmap(tmp_path / "r")
    loaded.n = 10
    assert Counted.load_memmap(tmp_path / "r").n == 11  # 10 saved; the hook adds 1
