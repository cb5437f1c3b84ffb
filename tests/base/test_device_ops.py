"""Memory placement: consolidation, pinned and shared memory, the meta device, staged
loading onto a device. CPU and meta everywhere; the CUDA cases are marked and skip
without a GPU."""

from __future__ import annotations

import pickle
import warnings
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.multiprocessing as mp

import tclass
from tclass import NonTensorData, NonTensorStack, TensorDict
from tclass._io.memmap._staging import stage_copy
from tclass.errors import DeviceError, MetadataError, NotSerializableError
from tclass.utils import TensorDictFuture

has_cuda = torch.cuda.is_available()
needs_cuda = [pytest.mark.cuda, pytest.mark.skipif(not has_cuda, reason="needs a CUDA device")]
META = torch.device("meta")


@tclass.tensorclass
class Obs:
    pixels: torch.Tensor
    camera: str


@tclass.tensorclass
class Sample:
    obs: Obs
    reward: torch.Tensor
    tags: Any = None


def _td() -> TensorDict:
    return TensorDict(
        {
            "a": torch.arange(8.0).reshape(4, 2),
            "i": torch.arange(4, dtype=torch.int16),
            "flag": torch.tensor([True, False, True, True]),
            "b": {
                "c": torch.ones(4, 3, dtype=torch.float16),
                "d": torch.zeros(4, dtype=torch.complex64),
            },
            "label": NonTensorData("pong", batch_size=[4]),
            "names": NonTensorStack.from_list(["w", "x", "y", "z"]),
        },
        batch_size=[4],
    )


def _sample() -> Sample:
    obs = Obs(torch.randint(0, 255, (3, 2, 2), dtype=torch.uint8), "front", batch_size=[3])
    return Sample(obs, torch.rand(3), tags={"run": 1}, batch_size=[3])


def _leaves(node: Any) -> list[torch.Tensor]:
    return list(node.values(include_nested=True, leaves_only=True))


def _same(a: Any, b: Any) -> bool:
    return all(
        x.dtype == y.dtype and torch.equal(x.cpu(), y.cpu()) for x, y in zip(_leaves(a), _leaves(b))
    )


# --- consolidate -------------------------------------------------------------------------


def test_consolidate_puts_every_leaf_in_one_buffer() -> None:
    td = _td()
    packed = td.consolidate()
    assert packed.is_consolidated() and not td.is_consolidated()
    assert (packed == td).all() and packed.get("names").tolist() == ["w", "x", "y", "z"]
    pointers = {leaf.untyped_storage().data_ptr() for leaf in _leaves(packed)}
    assert len(pointers) == 1
    for leaf in _leaves(packed):  # every view is aligned for its dtype
        assert leaf.data_ptr() % 16 == 0


def test_consolidated_buffer_is_deterministic_and_named_storage() -> None:
    # leaves of odd sizes leave padding between them: it is zeros, not leftovers
    td = TensorDict({f"k{i}": torch.full((i % 5 + 1,), i, dtype=torch.uint8) for i in range(20)})
    first, second = td.consolidate(), td.consolidate(num_threads=2)
    storage = first._consolidated["storage"]  # the peer's name for the buffer
    assert torch.equal(storage, second._consolidated["storage"])
    storage.zero_()
    assert (first["k3"] == 0).all()
    with pytest.raises(KeyError, match="storage"):
        first._consolidated["metadata"]


def test_consolidating_a_consolidated_collection_returns_it(tmp_path: Path) -> None:
    """As the peer: nothing to copy, the collection itself (writes into one are writes
    into the other); a file, or shared memory its buffer is not in, makes a new buffer
    (fz40c: program 4,801,557 of ``--families records``)."""
    for packed in (_td().consolidate(), tclass.lazy_stack([_td(), _td()]).consolidate()):
        assert packed.consolidate() is packed and packed.consolidate(device="cpu") is packed
        assert packed.consolidate(metadata=True, num_threads=2) is packed
        again = packed.consolidate(filename=tmp_path / f"{type(packed).__name__}.mmap")
        assert again is not packed and again.is_consolidated()
        shared = packed.consolidate(share_memory=True)
        assert shared is not packed and shared.consolidate(share_memory=True) is shared
    record = Obs(pixels=torch.zeros(2, 3), camera="c", batch_size=[2]).consolidate()
    assert record.consolidate() is record
    changed = _td().consolidate()
    changed.unlock_()["new"] = torch.ones(changed.batch_size)  # no longer consolidated
    assert changed.consolidate() is not changed and changed.consolidate().is_consolidated()


def test_a_consolidated_lazy_stack_keeps_the_name_of_its_stack_dim(tmp_path: Path) -> None:
    """As the peer's (fz40c: program 5,100,451 of ``--families entries,records``)."""
    lazy = tclass.lazy_stack([_td()[0], _td()[1]], 0).rename("i")
    for packed in (lazy.consolidate(), lazy.consolidate(filename=tmp_path / "c.mmap")):
        assert packed.names == ["i"] and packed.is_consolidated()
        assert tclass.from_consolidated(packed._consolidated["storage"]).names == ["i"]
    assert lazy.rename(None).consolidate().names == [None]


def test_unlocking_ends_the_consolidation() -> None:
    packed = _td().consolidate()
    with packed.unlock_():  # as the peer: unlocked, it is no longer consolidated
        assert not packed.is_consolidated()
        packed["new"] = torch.ones(packed.batch_size)
    assert packed.is_locked and not packed.is_consolidated()
    lazy = tclass.lazy_stack([_td(), _td()]).consolidate()
    assert lazy.is_consolidated() and not lazy.unlock_().is_consolidated()


def test_a_moved_consolidated_collection_stays_locked() -> None:
    # As the peer: cpu() / to(device) of a consolidated collection is consolidated and
    # locked as its source (unlocked, it would no longer be consolidated).
    for packed in (_td().consolidate(), tclass.lazy_stack([_td(), _td()]).consolidate()):
        for moved in (packed.cpu(), packed.to("meta"), packed.to(device="cpu")):
            assert moved.is_consolidated() and moved.is_locked, type(packed).__name__


def test_consolidate_return_early_gives_a_future_with_threads() -> None:
    td = _td()
    future = td.consolidate(num_threads=2, return_early=True)
    assert isinstance(future, TensorDictFuture) and future.done()
    assert future.result().is_consolidated() and (future.result() == td).all()
    assert td.consolidate(return_early=True).is_consolidated()  # no threads: the result
    for option in ("non_blocking", "use_buffer"):
        with pytest.raises(NotImplementedError, match=option):
            td.consolidate(num_threads=2, return_early=True, **{option: True})


def test_consolidated_record_keeps_its_class() -> None:
    sample = _sample()
    packed = sample.consolidate()
    assert type(packed) is Sample and type(packed.obs) is Obs and packed.is_consolidated()
    assert packed.obs.camera == "front" and packed.tags == {"run": 1} and _same(packed, sample)


def test_consolidated_lazy_stack() -> None:
    lazy = tclass.lazy_stack(
        [TensorDict(a=torch.ones(2)), TensorDict(a=torch.zeros(3), b=torch.tensor(9))]
    )
    packed = lazy.consolidate()
    assert packed.is_consolidated() and packed[1]["b"] == 9 and packed[0]["a"].shape == (2,)
    moved = packed.to(META)
    assert moved.is_consolidated() and moved.device == META and moved[1]["a"].is_meta


def test_consolidate_into_a_file_puts_every_node_on_cpu(tmp_path: Path) -> None:
    td = TensorDict({"a": torch.zeros(2), "b": {"c": torch.ones(2)}, "d": "s"}, batch_size=[2])
    packed = td.consolidate(filename=tmp_path / "td.mmap")  # the buffer is a CPU file
    assert packed.device == torch.device("cpu") and packed["b"].device == torch.device("cpu")
    assert td.consolidate().device is None  # in memory: the devices are kept, as the peer
    lazy = tclass.lazy_stack([TensorDict(a=torch.zeros(2)), TensorDict(a=torch.zeros(3))])
    packed_lazy = lazy.consolidate(filename=tmp_path / "lazy.mmap")
    assert packed_lazy.device == torch.device("cpu") and packed_lazy[1].device.type == "cpu"
    # consolidated before (in memory), then into a file: written there, every member on
    # cpu (the peer writes nothing and keeps the devices, None: README "is_memmap()")
    again = lazy.consolidate().consolidate(filename=tmp_path / "again.mmap")
    assert again.device == torch.device("cpu")
    assert all(member.device == torch.device("cpu") for member in again.tensordicts)
    reread = tclass.LazyStackedTensorDict.from_consolidated(tmp_path / "again.mmap")
    assert [m["a"].shape for m in reread.tensordicts] == [torch.Size([2]), torch.Size([3])]
    assert TensorDict.from_consolidated(tmp_path / "td.mmap").device is None  # as the peer


def test_in_place_writes_keep_it_replacing_a_leaf_ends_it() -> None:
    packed = _td().consolidate()
    packed["a"][0, 0] = 42.0
    assert packed.is_consolidated() and packed.is_locked  # locked, as in the peer
    packed.unlock_()["a"] = torch.zeros(4, 2)
    assert not packed.is_consolidated()
    assert packed.to(META)["a"].is_meta  # moved leaf by leaf instead


def test_to_moves_the_buffer_once_and_rebuilds_views() -> None:
    packed = _td().consolidate()
    moved = packed.to(META)
    assert moved.is_consolidated() and moved.device == META and moved.get("b").device == META
    assert moved["b", "c"].dtype == torch.float16 and moved["b", "c"].shape == (4, 3)
    assert packed.to("cpu") is not packed  # a device is now recorded: a real move
    cast = TensorDict(a=torch.ones(2), batch_size=[2]).consolidate().to(torch.float64)
    assert cast["a"].dtype == torch.float64 and not cast.is_consolidated()  # a cast is per leaf


def test_consolidate_onto_meta() -> None:
    packed = _td().consolidate(device="meta")
    assert packed.is_consolidated() and packed["a"].is_meta


def test_from_consolidated_rebuilds_from_the_buffer_alone() -> None:
    sample = _sample()
    buffer = sample.consolidate()._tensordict._consolidated.buffer
    rebuilt = tclass.from_consolidated(buffer)
    assert type(rebuilt) is Sample and rebuilt.obs.camera == "front" and _same(rebuilt, sample)
    assert rebuilt.reward.untyped_storage().data_ptr() == buffer.untyped_storage().data_ptr()


def test_from_consolidated_refuses_other_tensors() -> None:
    with pytest.raises(MetadataError):
        tclass.from_consolidated(torch.zeros(4, dtype=torch.float32))
    with pytest.raises(MetadataError):
        tclass.from_consolidated(torch.zeros(64, dtype=torch.uint8))


@pytest.mark.parametrize("source", ["td", "float", "int"])
def test_from_consolidated_of_no_buffer_is_a_type_error(source: str) -> None:
    """The peer raises a TypeError for a collection or a float tensor passed as the buffer
    (a user who passes the consolidated TensorDict itself): tclass's error is one too,
    and says what it got."""
    value: Any = {
        "td": TensorDict({"a": torch.arange(3.0)}, [3]).consolidate(),
        "float": torch.zeros(4),
        "int": 5,
    }[source]
    with pytest.raises(TypeError, match="1-d uint8 buffer") as info:
        TensorDict.from_consolidated(value)
    assert isinstance(info.value, MetadataError)  # as before: not a consolidated buffer
    assert ("TensorDict" if source == "td" else "float32" if source == "float" else "int") in str(
        info.value
    )


def test_pickle_sends_the_buffer() -> None:
    td = _td()
    packed = td.consolidate()
    copy = pickle.loads(pickle.dumps(packed))
    assert copy.is_consolidated() and (copy == td).all()
    sample = pickle.loads(pickle.dumps(_sample().consolidate()))
    assert type(sample) is Sample and sample.obs.camera == "front"


def test_non_json_values_still_move_but_not_from_the_buffer() -> None:
    td = TensorDict(a=torch.ones(2), o=NonTensorData({1, 2}, batch_size=[2]), batch_size=[2])
    packed = td.consolidate()
    assert packed.to(META).get("o").data == {1, 2}
    assert pickle.loads(pickle.dumps(packed))["o"] == {1, 2}  # pickled leaf by leaf
    with pytest.raises(NotSerializableError):
        tclass.from_consolidated(packed._consolidated.buffer)


def test_consolidate_refuses_leaves_on_several_devices() -> None:
    td = TensorDict(a=torch.ones(2), b=torch.ones(2, device="meta"), batch_size=[2])
    with pytest.raises(tclass.errors.UnsupportedError, match="several devices"):
        td.consolidate()
    assert td.consolidate(device="meta").is_consolidated()


# --- pinned and shared memory --------------------------------------------------------------


@pytest.mark.skipif(has_cuda, reason="checks the error raised without CUDA")
def test_pin_memory_without_cuda_says_why() -> None:
    with pytest.raises(DeviceError, match="pinned memory needs"):
        _td().pin_memory()
    with pytest.raises(DeviceError):
        _td().consolidate(pin_memory=True)


def test_share_memory_in_place() -> None:
    td = _td()
    assert not td.is_shared()
    assert td.share_memory_() is td and td.is_shared() and td.is_locked
    assert all(leaf.is_shared() for leaf in _leaves(td))


def test_share_memory_of_a_collection_without_tensors_is_shared_as_in_the_peer() -> None:
    # Nothing to move: the collection (and its nested ones, and its locked views) is
    # shared from then on, as the peer's flag says; its rows are locked, as a shared
    # collection's.
    td = TensorDict({"s": "x", "n": {}}, [3])
    assert not td.is_shared()
    assert td.share_memory_() is td and td.is_shared() and td.is_locked
    assert td["n"].is_shared() and not td.is_memmap()
    for view in (td[0], td.unsqueeze(0), td.unsqueeze(0)[0], td.unbind(0)[1]):
        assert view.is_shared() and view.is_locked
    assert not td.clone().is_shared() and not TensorDict({}, [3]).is_shared()
    empty = TensorDict({}, [3]).share_memory_()
    assert empty.is_shared() and empty[0].is_locked
    with empty.unlock_():
        empty["a"] = torch.zeros(3)  # a tensor tells again: this one is not shared
        assert not empty.is_shared()


def test_views_of_an_anonymous_memory_map_stay_memory_mapped() -> None:
    # memmap_() without a folder maps anonymous memory: a view of the same data
    # (detach, an index, view) answers is_shared() and is_memmap() as the collection.
    td = TensorDict({"a": torch.arange(4.0), "n": {"b": torch.zeros(4, 2)}}, [4]).memmap_()
    assert td.is_memmap() and not td.is_shared()
    for view in (td.detach(), td[1:], td.view(2, 2), td.unsqueeze(0)):
        assert view.is_memmap() and not view.is_shared()
    assert type(td.detach()["a"]) is torch.Tensor  # a plain tensor over the same map
    td.detach()["a"][0] = 5.0
    assert td["a"][0].item() == 5.0
    # Shared memory made by share_memory_() is shared, not memory-mapped, as before.
    shared = TensorDict({"a": torch.arange(4.0)}, [4]).share_memory_()
    assert shared.detach().is_shared() and not shared.detach().is_memmap()


def _child_writes(td: TensorDict) -> None:
    td["a"].fill_(7.0)


def test_shared_writes_are_seen_across_processes() -> None:
    td = TensorDict(a=torch.zeros(3), batch_size=[3]).share_memory_()
    process = mp.get_context("spawn").Process(target=_child_writes, args=(td,))
    process.start()
    process.join(60)
    assert process.exitcode == 0 and td["a"].eq(7.0).all()


def test_consolidated_shared_buffer() -> None:
    packed = _td().consolidate(share_memory=True)
    assert packed.is_shared() and packed._consolidated.buffer.is_shared()


# --- the meta device -----------------------------------------------------------------------


def test_meta_everywhere(tmp_path: Path) -> None:
    built = TensorDict(a=torch.ones(2), batch_size=[2], device="meta")
    assert built["a"].is_meta and built.device == META
    moved = _sample().to("meta")
    assert moved.device == META and moved.obs.pixels.is_meta and moved.obs.camera == "front"
    _sample().memmap(tmp_path / "s")
    loaded = Sample.load_memmap(tmp_path / "s", device="meta")
    assert loaded.device == META and loaded.reward.is_meta


# --- staged copies -------------------------------------------------------------------------


@pytest.mark.parametrize("chunk", [7, 64, 1 << 20])
def test_staged_copy_chunks_every_byte(chunk: int) -> None:
    sources = [
        torch.arange(1000, dtype=torch.float32),
        torch.tensor([True, False, True]),
        torch.randn(3, 5, dtype=torch.float64).t(),  # not contiguous
        torch.empty(0, 4),
        torch.randint(0, 255, (33,), dtype=torch.uint8),
    ]
    copies = stage_copy(sources, torch.device("cpu"), chunk_bytes=chunk)
    for source, copy in zip(sources, copies):
        assert (
            copy.dtype == source.dtype and copy.shape == source.shape and torch.equal(copy, source)
        )


# --- nested tensors ----------------------------------------------------------------------


def _jagged() -> TensorDict:
    """Batch [3]: jagged nested tensors with a feature dim, transposed (ragged dim 2),
    with holes (offsets and lengths) and of integers, beside a dense leaf."""
    rows = [torch.arange(6.0).reshape(3, 2), torch.arange(10.0).reshape(5, 2), torch.ones(1, 2)]
    nt = torch.nested.nested_tensor(rows, layout=torch.jagged)
    starts, lengths = torch.tensor([0, 1, 0]), torch.tensor([2, 3, 1])
    holes = torch.nested.narrow(
        torch.arange(12.0).reshape(3, 4), 1, starts, lengths, layout=torch.jagged
    )
    ids = torch.nested.nested_tensor([torch.arange(n) for n in (2, 3, 1)], layout=torch.jagged)
    return TensorDict(
        {"nt": nt, "t": nt.transpose(1, 2), "n": {"holes": holes, "ids": ids}, "x": torch.ones(3)},
        [3],
    )


def _same_jagged(a: Any, b: Any) -> None:
    """Same keys, dtypes, layouts, ragged dims and values (element by element)."""
    pairs = list(zip(a.items(True, True), b.items(True, True), strict=True))
    for (key, x), (other, y) in pairs:
        assert key == other and x.dtype == y.dtype and x.is_nested == y.is_nested, key
        if x.is_nested:
            assert x.layout is y.layout is torch.jagged and x._ragged_idx == y._ragged_idx, key
            assert all(map(torch.equal, x.cpu().unbind(), y.cpu().unbind())), key
        else:
            assert torch.equal(x.cpu(), y.cpu()), key


def test_consolidate_keeps_jagged_nested_tensors(tmp_path: Path) -> None:
    td = _jagged()
    packed = td.consolidate()
    assert packed.is_consolidated()
    _same_jagged(packed, td)
    buffer = packed._consolidated.buffer
    for key in ("nt", "t", ("n", "holes"), ("n", "ids")):  # views of the one buffer
        parts = [packed[key].values(), packed[key].offsets()]
        assert all(p.untyped_storage().data_ptr() == buffer.data_ptr() for p in parts), key
    assert packed["n", "holes"].lengths() is not None  # the holes are kept
    # Tensors that shared offsets share them again: one ragged size, so they combine.
    assert packed["nt"].offsets() is packed["t"].offsets()
    twice = packed["nt"] + packed["t"].transpose(1, 2)
    assert torch.equal(twice.values(), td["nt"].values() * 2)
    moved = packed.to(META)  # one copy of the buffer
    assert moved.is_consolidated() and moved["t"].layout is torch.jagged and moved["t"].is_meta
    _same_jagged(pickle.loads(pickle.dumps(packed)), td)  # pickled as the buffer
    rebuilt = tclass.from_consolidated(buffer)  # the peer 0.15 fails here (TypeError)
    _same_jagged(rebuilt, td)
    assert rebuilt["nt"].offsets() is rebuilt["t"].offsets()
    assert rebuilt.is_consolidated() and rebuilt.to(META).is_consolidated()
    td.consolidate(filename=tmp_path / "packed")
    _same_jagged(TensorDict.from_consolidated(tmp_path / "packed"), td)
    lazy = tclass.lazy_stack([td, _jagged()]).consolidate()
    assert lazy.is_consolidated()
    _same_jagged(lazy[1], td)
    packed["nt"].values().mul_(2)  # an in-place write keeps the consolidation
    assert packed.is_consolidated() and packed.to(META).is_consolidated()


def test_consolidate_refuses_the_strided_nested_layout() -> None:
    with warnings.catch_warnings():  # torch warns once per process: the layout's stage
        warnings.simplefilter("ignore", UserWarning)
        strided = torch.nested.nested_tensor([torch.ones(2), torch.ones(3)])
    td = TensorDict({"x": torch.ones(()), "s": strided}, [])
    with pytest.raises(tclass.errors.UnsupportedError, match="'s' is a nested tensor of layout"):
        td.consolidate()
    with pytest.raises(NotImplementedError):  # as the peer raises
        td.consolidate()


# --- CUDA ----------------------------------------------------------------------------------


@pytest.mark.cuda
@pytest.mark.skipif(not has_cuda, reason="needs a CUDA device")
class TestCuda:
    def test_consolidated_round_trip(self) -> None:
        td = _td()
        gpu = td.consolidate().to("cuda")
        assert gpu.is_consolidated() and gpu.device.type == "cuda" and gpu["b", "c"].is_cuda
        back = gpu.to("cpu", non_blocking=True)  # waits before returning
        assert _same(back, td) and back.is_consolidated()

    def test_pin_memory(self) -> None:
        pinned = _td().pin_memory(num_threads=2)
        assert all(leaf.is_pinned() for leaf in _leaves(pinned))
        packed = _td().consolidate(pin_memory=True)
        assert packed._consolidated.buffer.is_pinned()
        assert packed.pin_memory()._consolidated.buffer.is_pinned()

    def test_non_blocking_round_trip(self) -> None:
        sample = _sample().pin_memory()
        gpu = sample.to("cuda", non_blocking=True)
        back = gpu.to("cpu", non_blocking=True)
        assert _same(back, sample)

    def test_load_memmap_onto_cuda(self, tmp_path: Path) -> None:
        sample = _sample()
        sample.memmap(tmp_path / "s")
        for non_blocking in (False, True):
            loaded = Sample.load_memmap(tmp_path / "s", device="cuda", non_blocking=non_blocking)
            torch.cuda.synchronize()
            assert loaded.device.type == "cuda" and loaded.obs.pixels.is_cuda
            assert _same(loaded, sample) and loaded.obs.camera == "front"

    def test_staged_copy_many_chunks(self) -> None:
        sources = [torch.randn(1000, 33), torch.arange(10**5, dtype=torch.int64)]
        copies = stage_copy(sources, torch.device("cuda"), chunk_bytes=4096)
        assert all(torch.equal(s, c.cpu()) for s, c in zip(sources, copies))


def test_a_memory_mapped_collection_is_not_in_shared_memory(tmp_path: Path) -> None:
    """As the peer: ``is_shared()`` is about shared memory; a memory-mapped file is
    ``is_memmap()``, and so are its views, copies being neither."""
    saved = TensorDict({"a": torch.ones(2, 3)}, [2]).memmap(tmp_path / "m")
    assert saved.is_memmap() and not saved.is_shared()
    assert not saved[0].is_shared() and not saved.clone().is_shared()
    shared = TensorDict({"a": torch.ones(2, 3)}, [2]).share_memory_()
    assert shared.is_shared() and not shared.is_memmap()
    assert shared[0].is_locked and saved[0].is_locked  # locked slices, as the peer's
    # Without a folder (an anonymous map) or without elements (no file): memory-mapped.
    for mapped in (
        TensorDict({"a": torch.ones(2, 3)}, [2]).memmap_(),
        TensorDict({"a": torch.ones(0, 3)}, [0]).memmap(tmp_path / "empty"),
    ):
        assert mapped.is_memmap() and not mapped.is_shared()
