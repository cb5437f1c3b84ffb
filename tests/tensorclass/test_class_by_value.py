"""A record class sent by value (cloudpickle's, as Ray sends a class declared inside a
function to its workers) keeps its qualified name in the process that rebuilds it:
cloudpickle rebuilds a class from its bare name and its ``__dict__``, and the metaclass
gives it back the name kept there. Records are saved, named in pickles and checked
against their class under that name, so a folder a worker writes loads with the
driver's class."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

import tclass
from tclass import TensorClass, tensorclass

cloudpickle = pytest.importorskip("cloudpickle", reason="cloudpickle is not installed")

CHILD = """
import pickle, sys
import tclass
cls, record = pickle.loads(sys.stdin.buffer.read())
print(cls.__qualname__, type(record.inner).__qualname__)
record.memmap(sys.argv[1])
"""


def declare() -> tuple[type, type]:
    class Inner(TensorClass):
        a: torch.Tensor

    @tensorclass(autocast=True)
    class Outer:
        inner: Inner
        n: int = 0

    return Inner, Outer


def test_a_class_declared_in_a_function_keeps_its_name_in_another_process(
    tmp_path: Path,
) -> None:
    inner, outer = declare()
    record: Any = outer(inner=inner(a=torch.arange(3), batch_size=[3]), n=2, batch_size=[3])
    payload = cloudpickle.dumps((outer, record))
    result = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path / "rec")],
        input=payload,
        capture_output=True,
        check=True,
        cwd=Path(tclass.__file__).parents[1],
        env={**os.environ, "OMP_NUM_THREADS": "1"},
    )
    names = result.stdout.decode().split()
    assert names == ["declare.<locals>.Outer", "declare.<locals>.Inner"]
    back = outer.load_memmap(tmp_path / "rec")  # saved under the driver's class's name
    assert type(back) is outer and type(back.inner) is inner
    assert back.inner.a.tolist() == [0, 1, 2] and back.n == 2


def test_renaming_a_class_renames_the_copy_it_keeps() -> None:
    inner, _ = declare()
    inner.__qualname__ = "Renamed"
    assert inner.__dict__["__tclass_qualname__"] == "Renamed"
    inner.__tclass_qualname__ = "Again"  # as cloudpickle restores the dict's items
    assert inner.__qualname__ == "Again"
