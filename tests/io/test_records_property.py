"""Generated records pass validation and round trip bit-identically (issue 31, item 3).

``tclass.testing.records`` draws records of classes that use every part of a schema
(dtypes of every width, named, anonymous, variadic and computed dims, every kind of
constraint, nested records, Python values, optional fields), with special floats where
the constraints allow them (NaN, infinities, ``-0.0``, subnormals, extremes). Each
record passes the class's checks and its JSON Schema, and comes back bit for bit from a
memory-mapped folder, a ``.tdz`` archive, an HDF5 file, and from ``torch.stack`` of its
rows and indexing.

200 records per property by default; ``TCLASS_RECORDS=full`` runs 10,000 (as
``TCLASS_MATRIX=full`` widens the conformance matrix), ``TCLASS_RECORDS=N`` N.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Annotated, Any, Literal

import jsonschema
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tclass
from tclass import Spec, TensorClass
from tclass._core._linked_list import LinkedList
from tclass.testing import records

Tensor = torch.Tensor
_ASKED = os.environ.get("TCLASS_RECORDS", "")
EXAMPLES = 10_000 if _ASKED == "full" else int(_ASKED) if _ASKED.isdigit() else 200
SETTINGS = settings(
    max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=False
)


class Part(TensorClass):
    level: Annotated[Tensor, Spec("", torch.int64, isin=(1, 2, 3))]
    small: Annotated[Tensor, Spec("k", (torch.int8, torch.uint8, torch.int16, torch.int32))]
    wide: Annotated[Tensor, Spec("", (torch.uint16, torch.uint32, torch.uint64), le=2**40)]


class Sample(TensorClass):
    prob: Annotated[Tensor, Spec("3 k", torch.float32, ge=0, le=1)]
    mask: Annotated[Tensor, Spec("k", torch.bool)]
    part: Part
    floats: Annotated[Tensor, Spec("*rest", (torch.float16, torch.float64, torch.complex64))]
    stepped: Annotated[Tensor, Spec("_ k+1", torch.float32, gt=-5, lt=5, multiple_of=0.5)]
    free: Tensor
    tag: str = "a"
    tags: list[str] | None = None
    mode: Literal["a", "b"] = "a"
    count: int = 0
    scale: float = 0.0
    weights: dict[str, float] | None = None
    child: Sample | None = None


def assert_identical(a: Any, b: Any, path: str = "") -> None:
    """``b`` holds what ``a`` holds, bit for bit (tensors: dtype, shape, bytes)."""
    if isinstance(a, torch.Tensor):
        assert isinstance(b, torch.Tensor), path
        assert (a.dtype, a.shape) == (b.dtype, b.shape), path
        if a.numel():
            bits_a = a.detach().reshape(-1).clone().view(torch.uint8)
            bits_b = b.detach().reshape(-1).clone().view(torch.uint8)
            assert torch.equal(bits_a, bits_b), path
        return
    if tclass.is_tensorclass(type(a)):
        assert type(a) is type(b) and a.batch_size == b.batch_size, path
        for name in type(a).__tclass_info__.field_names:
            assert_identical(getattr(a, name), getattr(b, name), f"{path}.{name}")
        return
    assert type(a) is type(b) and a == b, (path, a, b)


def _flat(values: Any) -> list[Any]:
    if isinstance(values, LinkedList):  # a stack's values: one per element
        return [item for value in values for item in _flat(value)]
    return [values]


def assert_stacked_identical(record: Any, stacked: Any, path: str = "") -> None:
    """As :func:`assert_identical`, but a Python value of the stacked record reads as
    one value per element (as the peer's stacks read), each the record's value."""
    assert type(record) is type(stacked) and record.batch_size == stacked.batch_size, path
    for name in type(record).__tclass_info__.field_names:
        mine, theirs = getattr(record, name), getattr(stacked, name)
        if tclass.is_tensorclass(type(mine)):
            assert_stacked_identical(mine, theirs, f"{path}.{name}")
        elif isinstance(mine, torch.Tensor) or mine is None:
            assert_identical(mine, theirs, f"{path}.{name}")
        else:
            assert all(type(v) is type(mine) and v == mine for v in _flat(theirs)), name


def validate(record: Sample) -> None:
    Sample.from_tensordict(record.to_tensordict())  # every spec and constraint, again
    jsonschema.Draft202012Validator(Sample.json_schema()).validate(
        json.loads(json.dumps(record.to_dict(convert_tensors=True), default=_complex))
    )


def _complex(value: object) -> object:
    assert isinstance(value, complex)
    return [value.real, value.imag]  # no JSON form: the document leaves it unchecked


@SETTINGS
@given(records(Sample))
def test_generated_records_validate_and_round_trip_through_every_store(record: Sample) -> None:
    validate(record)
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        record.memmap(root / "m")
        assert_identical(record, Sample.load_memmap(root / "m"))
        tclass.save(record, root / "a.tdz")
        assert_identical(record, tclass.load(root / "a.tdz"))
        record.to_h5(root / "a.h5").close()
        opened = Sample.from_h5(root / "a.h5")
        try:
            assert_identical(record, opened)
        finally:
            opened.close()


@SETTINGS
@given(records(Sample, batch_size=st.lists(st.integers(1, 3), min_size=1, max_size=2)), st.data())
def test_generated_records_survive_stacking_and_indexing(
    record: Sample, data: st.DataObject
) -> None:
    rows = [record[i] for i in range(record.batch_size[0])]
    assert_stacked_identical(record, torch.stack(rows))
    index = data.draw(st.lists(st.integers(0, record.batch_size[0] - 1), max_size=4))
    picked = record[torch.tensor(index, dtype=torch.int64)]
    for position, row in enumerate(index):
        assert_identical(rows[row], picked[position])


@pytest.mark.parametrize("seed", range(5))
def test_rand_records_round_trip_too(seed: int, tmp_path: Path) -> None:
    record = Sample.rand([2, 3], generator=torch.Generator().manual_seed(seed))
    validate(record)
    record.memmap(tmp_path / "m")
    assert_identical(record, Sample.load_memmap(tmp_path / "m"))
