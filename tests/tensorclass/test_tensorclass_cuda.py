"""Records on a CUDA device where features meet: nested records with Python values, lazy
stacks, indexing with device tensors, saving from and loading onto the device, HDF5, the
parameter set of a module and value constraints. Each case computes the same thing on the
CPU and compares. Marked ``cuda``; skipped without a GPU."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import pytest
import torch
from torch import nn

import tclass
from tclass import Spec, TensorDict, TensorDictParams

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]
CUDA = torch.device("cuda", 0)


@tclass.tensorclass
class Obs:
    pixels: torch.Tensor
    camera: str


@tclass.tensorclass
class Step:
    obs: Obs
    reward: torch.Tensor
    done: torch.Tensor


@tclass.tensorclass
class Bounded:
    prob: Annotated[torch.Tensor, Spec("", torch.float32, ge=0, le=1)]


def _step(rows: int = 6, device: torch.device | str = "cpu") -> Step:
    generator = torch.Generator().manual_seed(rows)
    pixels = torch.randint(0, 255, (rows, 2, 3), dtype=torch.uint8, generator=generator)
    obs = Obs(pixels, "front", batch_size=[rows])
    reward = torch.rand(rows, generator=generator)
    return Step(obs, reward, reward > 0.5, batch_size=[rows], device=device)


def _assert_same(got: Any, expected: Any) -> None:
    """Same class, batch size, Python values and leaves (compared on the CPU)."""
    assert type(got) is type(expected) and got.batch_size == expected.batch_size
    got_cpu, expected_cpu = got.cpu(), expected.cpu()
    assert got_cpu.obs.camera == expected_cpu.obs.camera
    for name in ("reward", "done"):
        assert torch.equal(getattr(got_cpu, name), getattr(expected_cpu, name)), name
    assert torch.equal(got_cpu.obs.pixels, expected_cpu.obs.pixels)


def test_a_record_built_on_the_device_holds_every_tensor_there() -> None:
    step = _step(device="cuda")
    assert step.device == CUDA and step.obs.device == CUDA
    assert step.reward.is_cuda and step.obs.pixels.is_cuda and step.obs.camera == "front"
    _assert_same(step, _step())


@pytest.mark.parametrize(
    "operation",
    [
        pytest.param(lambda s, d: s[torch.tensor([4, 0, 0, 2], device=d)], id="long-index"),
        pytest.param(lambda s, d: s[s.done], id="bool-mask"),
        pytest.param(lambda s, d: s[1:5:2], id="slice"),
        pytest.param(lambda s, d: torch.stack([s, s], 1), id="stack"),
        pytest.param(lambda s, d: torch.cat([s, s[:2]], 0), id="cat"),
        pytest.param(lambda s, d: s.reshape(2, 3), id="reshape"),
        pytest.param(lambda s, d: s.unsqueeze(0).expand(2, 6), id="expand"),
        pytest.param(lambda s, d: s.split([2, 4])[1], id="split"),
        pytest.param(lambda s, d: s.clone(), id="clone"),
        pytest.param(lambda s, d: s.apply(lambda t: t.flip(0)), id="apply"),
        pytest.param(lambda s, d: torch.where(s.done, s, s.flip(0)), id="where"),
        pytest.param(lambda s, d: s.masked_fill(s.done, 0), id="masked-fill"),
        pytest.param(lambda s, d: s.gather(0, torch.tensor([5, 1], device=d)), id="gather"),
    ],
)
def test_operations_on_the_device_match_the_cpu(operation: Any) -> None:
    cpu, gpu = _step(), _step().to("cuda")
    got = operation(gpu, CUDA)
    assert got.reward.is_cuda and got.obs.pixels.is_cuda
    _assert_same(got, operation(cpu, torch.device("cpu")))


def test_a_lazy_stack_of_uneven_records_moves_and_comes_back() -> None:
    members = [_step(rows) for rows in (2, 3)]
    parts = [TensorDict({"x": torch.randn(rows, 4)}, [rows]) for rows in (2, 3)]
    stacked = tclass.lazy_stack(parts, 0)
    gpu = stacked.to("cuda")
    assert gpu.device == CUDA and gpu[1]["x"].is_cuda
    back = gpu.cpu()
    for index, part in enumerate(parts):
        assert torch.equal(back[index]["x"], part["x"])
    records = tclass.lazy_stack([m.unsqueeze(0)[:, :2] for m in members], 0)
    _assert_same(records.to("cuda")[1], records[1])


@pytest.mark.parametrize("pinned", [False, True], ids=["pageable", "pinned"])
def test_a_blocking_move_has_read_its_source_when_it_returns(pinned: bool) -> None:
    """``to("cuda")`` queues its copies without waiting for each: the source can still be
    overwritten at once without the device copy seeing it."""
    source = TensorDict({f"k{i}": torch.full((1 << 16,), float(i)) for i in range(64)}, [])
    if pinned:
        source = source.pin_memory()
    gpu = source.to("cuda")
    source.zero_()
    for i in range(64):
        assert bool((gpu[f"k{i}"] == i).all()), f"k{i}"
    packed = TensorDict({"a": torch.ones(1 << 20)}, []).consolidate(pin_memory=pinned)
    moved = packed.to("cuda")
    packed.unlock_()["a"].zero_()
    assert bool((moved["a"] == 1).all())


def test_non_blocking_copy_back_is_complete_once_read() -> None:
    gpu = _step(4096).to("cuda")
    back = gpu.to("cpu", non_blocking=True)
    _assert_same(back, _step(4096))


def test_saved_from_the_device_loads_anywhere(tmp_path: Path) -> None:
    gpu = _step().to("cuda")
    gpu.memmap(tmp_path / "s")
    on_cpu = Step.load_memmap(tmp_path / "s")
    assert on_cpu.device is None or on_cpu.device.type == "cpu"
    _assert_same(on_cpu, gpu)
    for non_blocking in (False, True):
        loaded = Step.load_memmap(tmp_path / "s", device="cuda", non_blocking=non_blocking)
        torch.cuda.synchronize()
        assert loaded.device == CUDA and loaded.obs.pixels.is_cuda
        _assert_same(loaded, gpu)


def test_memmap_like_and_append_of_a_device_record(tmp_path: Path) -> None:
    gpu = _step().to("cuda")
    buffer = gpu.memmap_like(tmp_path / "buf")
    buffer.update_(gpu.cpu())
    _assert_same(Step.load_memmap(tmp_path / "buf"), gpu)
    saved = _step().memmap(tmp_path / "grow")
    tclass.append_memmap(tmp_path / "grow", gpu[:2])
    grown = Step.load_memmap(tmp_path / "grow")
    assert grown.batch_size == torch.Size([8])
    _assert_same(grown[6:], gpu[:2])
    _assert_same(grown[:6], saved)


def test_hdf5_to_the_device(tmp_path: Path) -> None:
    pytest.importorskip("h5py")
    td = TensorDict({"a": torch.randn(5, 3), "n": {"b": torch.arange(5)}}, [5])
    h5 = tclass.persistent.PersistentTensorDict.from_dict(td, filename=tmp_path / "f.h5")
    gpu = h5.to("cuda")
    assert gpu["a"].is_cuda and gpu["n", "b"].is_cuda
    assert torch.equal(gpu["a"].cpu(), td["a"]) and torch.equal(gpu["n", "b"].cpu(), td["n", "b"])
    h5.close()


def test_module_parameters_on_the_device() -> None:
    torch.manual_seed(0)
    module = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)).cuda()
    params = TensorDictParams(tclass.from_module(module))
    assert all(p.is_cuda for p in params.values(True, True))
    doubled = params.data * 2
    x = torch.randn(5, 3, device="cuda")
    with doubled.to_module(module):
        out = module(x)
    expected = nn.functional.linear(
        torch.relu(nn.functional.linear(x, module[0].weight * 2, module[0].bias * 2)),
        module[2].weight * 2,
        module[2].bias * 2,
    )
    torch.testing.assert_close(out, expected)


def test_constraints_are_checked_on_the_device() -> None:
    ok = Bounded(torch.rand(4, device="cuda"), batch_size=[4])
    assert ok.prob.is_cuda
    with pytest.raises(tclass.errors.TclassError, match="prob"):
        Bounded(torch.full((4,), 2.0, device="cuda"), batch_size=[4])
    with pytest.raises(tclass.errors.TclassError, match="prob"):
        ok.mul_(5)
    assert (ok.prob <= 1).all()  # nothing written on a violation


def test_consolidated_record_to_the_device_and_back() -> None:
    step = _step()
    packed = step.consolidate()
    gpu = packed.to("cuda")
    assert gpu.reward.is_cuda and gpu.obs.camera == "front"
    _assert_same(gpu.to("cpu"), step)
