"""Preallocating a record from its schema alone (issue 21, item 2).

``Cls.allocate(batch_size, dims={...}, prefix=...)`` builds a zero-filled record of the
declared dtypes and shapes, nested records included, with no example datum: in memory,
or (with ``prefix``) in sparse memory-mapped files that take no disk space until
written.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import pytest
import torch

import tclass
from tclass import MemoryMappedTensor, Spec, TensorClass, errors

try:
    import jaxtyping as jt
except ImportError:  # an optional extra: its tests skip
    jt = None

Tensor = torch.Tensor
FieldSpecError = errors.FieldSpecError


class Info(TensorClass):
    td_error: Annotated[Tensor, Spec("", torch.float32)]
    step: Annotated[Tensor, Spec("", torch.int64)]


class Transition(TensorClass):
    obs: Annotated[Tensor, Spec("3 h w", torch.uint8)]
    action: Annotated[Tensor, Spec("", torch.int64)]
    reward: Annotated[Tensor, Spec("", torch.float32)]
    mask: Annotated[Tensor, Spec("h w", torch.bool)]
    info: Info
    env: str = "pong"
    extra: Annotated[Tensor, Spec("k")] | None = None


DIMS = {"h": 8, "w": 6}


def test_in_memory_allocation_has_the_declared_dtypes_and_shapes() -> None:
    buffer = Transition.allocate([10], dims=DIMS)
    assert isinstance(buffer, Transition) and buffer.batch_size == (10,)
    assert buffer.obs.shape == (10, 3, 8, 6) and buffer.obs.dtype == torch.uint8
    assert buffer.action.shape == (10,) and buffer.action.dtype == torch.int64
    assert buffer.mask.dtype == torch.bool and buffer.mask.shape == (10, 8, 6)
    assert isinstance(buffer.info, Info) and buffer.info.step.shape == (10,)
    assert buffer.env == "pong"  # a value field takes its default
    assert buffer.extra is None  # an optional field stays unset
    assert all(not leaf.any() for leaf in buffer.values(True, True))
    assert not buffer.is_locked
    buffer[:2] = Transition.allocate([2], dims=DIMS)  # the buffer takes rows of the schema


def test_batch_size_may_be_a_keyword_and_have_several_dims() -> None:
    grid = Transition.allocate(batch_size=[2, 3], dims=DIMS)
    assert grid.batch_size == (2, 3) and grid.obs.shape == (2, 3, 3, 8, 6)
    assert Transition.allocate(4, dims=DIMS).batch_size == (4,)


def test_memory_mapped_allocation_is_sparse_and_reloads(tmp_path: Path) -> None:
    rows = 1_000_000
    buffer = Transition.allocate([rows], dims={"h": 84, "w": 84}, prefix=tmp_path / "buf")
    assert isinstance(buffer.obs, MemoryMappedTensor)
    assert isinstance(buffer.info.step, MemoryMappedTensor)
    assert buffer.is_locked  # as memmap_like leaves it
    path = tmp_path / "buf" / "_tensordict" / "obs.memmap"
    status = os.stat(path)
    assert status.st_size == rows * 3 * 84 * 84  # 21 GB of zeros...
    assert status.st_blocks * 512 < 1 << 20  # ...taking no disk space
    buffer.obs[5] = 7
    buffer.reward[5] = 1.5
    loaded = Transition.load_memmap(tmp_path / "buf")
    assert loaded.obs[5].float().mean() == 7 and loaded.reward[5] == 1.5
    assert loaded.obs[6].sum() == 0 and loaded.env == "pong"


def test_every_missing_or_unknown_dim_is_reported_at_once() -> None:
    with pytest.raises(FieldSpecError) as caught:
        Transition.allocate([4])
    message = str(caught.value)
    assert "'h'" in message and "'w'" in message and "obs" in message
    with pytest.raises(FieldSpecError, match="'hh'"):
        Transition.allocate([4], dims={**DIMS, "hh": 3})  # a typo is not silently ignored
    assert isinstance(caught.value, ValueError)


def test_a_field_without_a_shape_cannot_be_allocated() -> None:
    class Loose(TensorClass):
        fine: Annotated[Tensor, Spec("2")]
        free: Tensor
        also_free: Tensor

    with pytest.raises(FieldSpecError) as caught:
        Loose.allocate([3])
    assert "free" in str(caught.value) and "also_free" in str(caught.value)
    assert "Spec" in str(caught.value)  # says how to fix it

    class Optional_(TensorClass):
        fine: Annotated[Tensor, Spec("2")]
        free: Tensor | None = None

    assert Optional_.allocate([3]).free is None


def test_a_spec_without_a_dtype_allocates_the_default_float() -> None:
    class Plain(TensorClass):
        x: Annotated[Tensor, Spec("2")]
        y: Annotated[Tensor, Spec("n", (torch.int32, torch.int64))]

    plain = Plain.allocate([3], dims={"n": 4})
    assert plain.x.dtype == torch.get_default_dtype()
    assert plain.y.dtype == torch.int64 and plain.y.shape == (3, 4)


def test_variadic_and_expression_dims() -> None:
    class Var(TensorClass):
        a: Annotated[Tensor, Spec("*rest", torch.float32)]
        b: Annotated[Tensor, Spec("n+1 2*n", torch.float32)]

    var = Var.allocate([2], dims={"rest": (3, 4), "n": 2})
    assert var.a.shape == (2, 3, 4) and var.b.shape == (2, 3, 4)
    with pytest.raises(FieldSpecError, match=r"\.\.\."):

        class Anonymous(TensorClass):
            a: Annotated[Tensor, Spec("...", torch.float32)]

        Anonymous.allocate([2])


def test_the_allocated_record_satisfies_its_own_checks(tmp_path: Path) -> None:
    buffer = Transition.allocate([3], dims=DIMS)
    with pytest.raises(FieldSpecError):
        buffer.mask = torch.zeros(3, 8, 7, dtype=torch.bool)  # w is 6 in obs
    Transition.allocate([3], dims=DIMS, prefix=tmp_path / "t")
    assert tclass.load_memmap(tmp_path / "t").obs.shape == (3, 3, 8, 6)
    schema = json.loads((tmp_path / "t" / "_tensordict" / "meta.json").read_text())
    assert schema["_tclass"]["schema"]["dims"] == DIMS


def test_frozen_classes_allocate() -> None:
    class Frozen(TensorClass, frozen=True):
        x: Annotated[Tensor, Spec("2", torch.float64)]

    frozen = Frozen.allocate([2])
    assert frozen.x.dtype == torch.float64 and frozen.is_locked


@pytest.mark.skipif(jt is None, reason="jaxtyping is not installed")
def test_jaxtyping_fields_allocate() -> None:
    class Cam(TensorClass):
        pixels: jt.UInt8[Tensor, "*batch 3 h w"]  # noqa: F722
        distance: jt.Float[Tensor, "*batch h w"]  # noqa: F722
        hits: jt.Int[Tensor, "*batch"]  # noqa: F722, F821

    cam = Cam.allocate([5, 2], dims={"h": 4, "w": 3})
    assert cam.pixels.shape == (5, 2, 3, 4, 3) and cam.pixels.dtype == torch.uint8
    assert cam.distance.dtype == torch.get_default_dtype() and cam.distance.shape == (5, 2, 4, 3)
    assert cam.hits.dtype == torch.int64 and cam.hits.shape == (5, 2)


def test_allocate_on_a_device() -> None:
    meta = Transition.allocate([1_000_000_000], dims=DIMS, device="meta")
    assert meta.obs.device.type == "meta" and meta.obs.shape[0] == 1_000_000_000


# --- row writes into memory-mapped buffers (issue 26, item 2) -----------------------------


def _files(folder: Path) -> dict[Path, bytes]:
    return {path: path.read_bytes() for path in sorted(folder.rglob("*.memmap"))}


def _rows(count: int, **changes: object) -> dict[str, object]:
    entries: dict[str, object] = {
        "obs": torch.full((count, 3, 8, 6), 7, dtype=torch.uint8),
        "action": torch.ones(count, dtype=torch.int64),
        "reward": torch.full((count,), 0.5),
        "mask": torch.ones(count, 8, 6, dtype=torch.bool),
        "info": {"td_error": torch.ones(count), "step": torch.ones(count, dtype=torch.int64)},
    }
    entries.update(changes)
    return entries


def _bad_writes(buffer: Transition) -> list[Callable[[], object]]:
    """Writes that do not fit the schema, each through another path."""
    obs = torch.full((2, 3, 8, 6), 300.7)  # float32: it would land as 44, in the file too
    info = {"td_error": torch.ones(2, dtype=torch.float64), "step": torch.ones(2).long()}
    return [
        lambda: buffer.__setitem__(slice(0, 2), tclass.TensorDict(_rows(2, obs=obs), [2])),
        lambda: buffer.__setitem__(torch.tensor([1, 5]), _rows(2, mask=torch.ones(2, 8, 1) > 0)),
        lambda: buffer.__setitem__(torch.arange(8) < 2, _rows(2, info=info)),
        lambda: buffer.__setitem__(slice(0, 2), 300.7),
        lambda: buffer.set_at_("obs", obs, slice(0, 2)),
        lambda: buffer.update_at_(_rows(2, reward=torch.ones(2, dtype=torch.float64)), [3, 4]),
        lambda: buffer.update_({"action": torch.ones(8, dtype=torch.int32)}),
        lambda: buffer.set_("obs", torch.ones(8, 3, 8, 7, dtype=torch.uint8)),
    ]


def test_row_writes_into_a_memory_mapped_buffer_are_checked(tmp_path: Path) -> None:
    folder = tmp_path / "rb"
    allocated = Transition.allocate([8], dims=DIMS, prefix=folder)
    loaded = Transition.load_memmap(folder)
    before = _files(folder)
    for buffer in (allocated, loaded):
        for write in _bad_writes(buffer):
            with pytest.raises(FieldSpecError):
                write()
            assert _files(folder) == before  # nothing reached the files
        assert not buffer.obs.any()
    loaded[torch.tensor([1, 6])] = _rows(2)
    allocated.update_at_(_rows(1), [2])
    reread = Transition.load_memmap(folder)
    assert reread.obs[[1, 2, 6]].float().mean() == 7 and reread.info.td_error[6] == 1
    assert reread.obs[0].sum() == 0
