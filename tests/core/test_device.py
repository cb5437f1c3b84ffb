"""Tests for tclass._core._device (device parsing, to() arguments) and TensorDict's device
methods."""

from __future__ import annotations

from typing import Any

import pytest
import torch

import tclass
from tclass import TensorDict, errors
from tclass._core._device import as_device, parse_to_args

CPU = torch.device("cpu")
META = torch.device("meta")


class _Rec(tclass.TensorClass):
    a: torch.Tensor


has_cuda = torch.cuda.is_available()
cuda = pytest.mark.cuda
needs_cuda = pytest.mark.skipif(not has_cuda, reason="needs a CUDA device")


def _td(device: Any = None) -> TensorDict:
    return TensorDict(
        {
            "a": torch.arange(8.0).reshape(4, 2),
            "i": torch.arange(4),
            "b": {"c": torch.ones(4, 3, dtype=torch.float16)},
            "n": TensorDict({"z": torch.zeros(4, 2, dtype=torch.int32)}, [4, 2]),
        },
        batch_size=[4],
        device=device,
    )


def _leaves(td: TensorDict) -> dict[Any, torch.Tensor]:
    return dict(td.items(include_nested=True, leaves_only=True))


def _collections(td: TensorDict) -> list[TensorDict]:
    return [td] + [v for v in td.values(include_nested=True) if isinstance(v, TensorDict)]


# --- as_device ----------------------------------------------------------------------------


class TestAsDevice:
    @pytest.mark.parametrize(
        "value, expected",
        [("cpu", CPU), (CPU, CPU), ("meta", META), (META, META), (None, None)],
    )
    def test_valid(self, value: Any, expected: Any) -> None:
        out = as_device(value)
        assert out == expected
        assert out is None or type(out) is torch.device
        assert as_device(value) == expected  # the cached path answers the same

    @pytest.mark.parametrize("value", ["foo", "cpux", "cuda:x", "", "cpu:-3"])
    def test_bad_strings(self, value: str) -> None:
        with pytest.raises(errors.DeviceError, match="invalid device") as info:
            as_device(value)
        assert isinstance(info.value, ValueError) and isinstance(info.value, RuntimeError)
        assert repr(value) in str(info.value)

    @pytest.mark.parametrize(
        "value", [True, False, 1.5, object(), [0], ("cpu",), b"cpu", torch.float32]
    )
    def test_bad_types(self, value: Any) -> None:
        with pytest.raises(errors.DeviceError, match="invalid device"):
            as_device(value)

    def test_bool_is_not_an_ordinal_even_after_caching(self) -> None:
        if has_cuda:
            as_device(1 if torch.cuda.device_count() > 1 else 0)
        for flag in (True, False):
            with pytest.raises(errors.DeviceError):
                as_device(flag)

    def test_error_is_tclass_error(self) -> None:
        with pytest.raises(errors.TclassError):
            as_device("foo")


# --- parse_to_args ------------------------------------------------------------------------


class TestParseToArgs:
    def test_forms(self) -> None:
        r = parse_to_args(("cpu",), {})
        assert (r.device, r.dtype, r.non_blocking) == (CPU, None, False)
        r = parse_to_args((torch.float64,), {})
        assert (r.device, r.dtype) == (None, torch.float64)
        r = parse_to_args(("meta", torch.int8), {"non_blocking": True})
        assert (r.device, r.dtype, r.non_blocking) == (META, torch.int8, True)
        r = parse_to_args((torch.zeros(1, dtype=torch.float16),), {})
        assert (r.device, r.dtype) == (CPU, torch.float16)
        r = parse_to_args((), {"device": "meta", "dtype": torch.bool})
        assert (r.device, r.dtype) == (META, torch.bool)
        r = parse_to_args((_td("meta"),), {})
        assert (r.device, r.dtype) == (META, None)

    @pytest.mark.parametrize(
        "args, kwargs, match",
        [((1.5,), {}, "expected a device"), ((True,), {}, "expected a device"),
         ((object(),), {}, "expected a device"), (("cpu", torch.float32, "x"), {}, "at most 2"),
         ((), {"foo": 1}, "unexpected keyword"), ((), {"dtype": "float32"}, "dtype must be")],
    )  # fmt: skip
    def test_type_errors(self, args: tuple[Any, ...], kwargs: dict[str, Any], match: str) -> None:
        with pytest.raises(TypeError, match=match):
            parse_to_args(args, dict(kwargs))

    def test_copy_is_refused_with_the_peers_runtime_error(self) -> None:
        # torch's copy= keyword: the peer raises a RuntimeError (".to() does not accept
        # copy argument"), which code written for it catches; tclass raised a TypeError.
        with pytest.raises(RuntimeError, match="does not accept copy=.*clone"):
            _td("cpu").to(torch.float64, copy=True)

    @pytest.mark.parametrize(
        ("dtype", "match"),
        [
            ("float32", r"'float32' names a dtype: give it as torch\.float32 \(to\(device, torch"),
            ("xyz", "give a torch.dtype such as torch.float32"),
        ],
    )
    def test_a_string_dtype_is_a_type_error(self, dtype: str, match: str) -> None:
        # the peer's td.to("cpu", "float32"): torch's TypeError (tclass's DeviceError only)
        td = TensorDict(a=torch.zeros(3), batch_size=[3])
        with pytest.raises(errors.DtypeArgumentError, match=f"got the string '{dtype}'; {match}"):
            td.to("cpu", dtype)
        with pytest.raises(TypeError):
            td.to("cpu", dtype)
        assert td["a"].dtype is torch.float32


# --- TensorDict.to ------------------------------------------------------------------------


class TestTo:
    def test_same_device_returns_self(self) -> None:
        td = _td("cpu")
        assert td.to("cpu") is td
        assert td.to(CPU) is td
        assert td.to(device="cpu") is td
        assert td.cpu() is td
        assert td.to(torch.zeros(1, dtype=torch.float32).device) is td
        assert td.to(non_blocking=True) is td
        assert td.to() is td

    def test_device_none_sets_device(self) -> None:
        td = _td()
        out = td.to("cpu")
        assert out is not td and td.device is None
        assert all(c.device == CPU for c in _collections(out))
        for key, leaf in _leaves(out).items():
            assert leaf is td[key]  # already on cpu: nothing copied
        assert out.batch_size == td.batch_size and out["n"].batch_size == torch.Size([4, 2])
        assert _td().cpu().device == CPU

    def test_dtype_casts_every_leaf(self) -> None:
        td = _td()
        out = td.to(torch.float64)
        assert out is not td and out.device is None
        for key, leaf in _leaves(out).items():
            assert leaf.dtype is torch.float64
            assert torch.equal(leaf, td[key].double())
        assert td["i"].dtype is torch.int64 and td["b", "c"].dtype is torch.float16
        assert out["n"].batch_size == torch.Size([4, 2])
        assert _leaves(td.to(dtype=torch.int8))[("b", "c")].dtype is torch.int8

    def test_device_and_dtype(self) -> None:
        out = _td().to("cpu", torch.float16)
        assert out.device == CPU and out["n"].device == CPU
        assert all(leaf.dtype is torch.float16 for leaf in _leaves(out).values())
        out = _td("cpu").to(device="meta", dtype=torch.float64)
        assert out.device == META and all(
            leaf.is_meta and leaf.dtype is torch.float64 for leaf in _leaves(out).values()
        )

    def test_dtype_keeps_device(self) -> None:
        out = _td("cpu").to(torch.float64)
        assert out.device == CPU and out["b"].device == CPU

    def test_to_tensor(self) -> None:
        out = _td().to(torch.zeros(1, dtype=torch.float64))
        assert out.device == CPU
        assert all(leaf.dtype is torch.float64 for leaf in _leaves(out).values())
        out = _td().to(torch.zeros(1, dtype=torch.int32, device="meta"))
        assert out.device == META and all(
            leaf.is_meta and leaf.dtype is torch.int32 for leaf in _leaves(out).values()
        )

    def test_to_other_collection(self) -> None:
        td = _td()
        out = td.to(other=TensorDict({}, [], device="meta"))
        assert out.device == META and all(leaf.is_meta for leaf in _leaves(out).values())
        assert td.to(other=TensorDict({}, [])) is td  # no device: nothing to do

    @pytest.mark.parametrize("device", [None, "cpu"])
    @pytest.mark.parametrize("kind", ["td", "record", "lazy", "consolidated"])
    def test_a_positional_collection_is_read_as_attrs(self, device: str | None, kind: str) -> None:
        # As the peer's: td.to(collection) is td.to(collection.attrs()) of another: a
        # collection of plain tensors holds no TensorAttrs, so every leaf stays where it
        # is, with its dtype, and the result records no device (the attrs may send each
        # leaf elsewhere), a new collection, locked as its source; its device and dtype
        # are read with other= (above). It used to take the collection's device.
        source = TensorDict(
            a=torch.zeros(3, dtype=torch.float64), n={"b": torch.ones(3, 2)}, batch_size=[3]
        )
        data = {"td": source, "record": _Rec(a=source["a"], batch_size=[3])}
        data["lazy"] = tclass.lazy_stack([source, source.clone()])
        data["consolidated"] = data["lazy"].consolidate()  # was moved to the given device
        x = data[kind].to(device).lock_() if device else data[kind].lock_()
        for target in (
            TensorDict({}, [], device="meta"),
            TensorDict(z=torch.zeros(1, dtype=torch.int8)),
        ):
            out = x.to(target)
            assert type(out) is type(x) and out is not x and out.device is None
            assert out.is_locked
            for key, leaf in x.items(True, True):
                assert out.get(key).dtype == leaf.dtype and out.get(key).device == leaf.device
        assert x.to(other=TensorDict({}, [], device="cpu")).device == CPU

    def test_a_value_node_takes_a_positional_collection_as_attrs_too(self) -> None:
        for node in (
            tclass.NonTensorData("x", batch_size=[3], device="cpu"),
            tclass.NonTensorStack("a", "b"),
        ):
            node.lock_()
            out = node.to(TensorDict({}, [], device="meta"))  # was: device meta
            assert out is not node and out.device is None and out.is_locked
            assert out.tolist() == node.tolist()

    def test_non_blocking(self) -> None:
        out = _td().to("cpu", non_blocking=True)
        assert out.device == CPU
        out = _td().to(torch.float64, non_blocking=True)
        assert out["a"].dtype is torch.float64

    @pytest.mark.parametrize(
        "args, kwargs",
        [((1.5,), {}), ((True,), {}), ((object(),), {}), (("cpu", torch.float32, "x"), {}),
         ((), {"foo": 1}), ((), {"dtype": "float32"}), (([0],), {})],
    )  # fmt: skip
    def test_bad_arguments(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        with pytest.raises(TypeError):
            _td().to(*args, **kwargs)

    def test_bad_device_string(self) -> None:
        with pytest.raises(errors.DeviceError, match="'foo'"):
            _td().to("foo")
        with pytest.raises(errors.DeviceError):
            _td().to(device="foo")

    def test_meta(self) -> None:
        td = _td()
        out = td.to("meta")
        assert out.device == META and out["n"].device == META and out["b"].device == META
        for key, leaf in _leaves(out).items():
            assert leaf.is_meta and leaf.shape == td[key].shape and leaf.dtype == td[key].dtype
        assert out.to("meta") is out
        assert not any(leaf.is_meta for leaf in _leaves(td).values())

    def test_result_is_a_new_tensordict(self) -> None:
        td = _td()
        out = td.to("meta")
        out["x"] = torch.zeros(4)
        assert "x" not in td.keys()


# --- device on construction and set -------------------------------------------------------


class TestDeviceOnSet:
    def test_construction(self) -> None:
        td = _td("meta")
        assert all(c.device == META for c in _collections(td))
        assert all(leaf.is_meta for leaf in _leaves(td).values())

    def test_set_moves_values(self) -> None:
        td = TensorDict({}, [4], device="meta")
        td["x"] = torch.zeros(4, 2)
        td.set(("p", "q"), torch.ones(4))
        td["d"] = {"e": torch.ones(4)}
        td["t"] = TensorDict({"u": torch.ones(4)}, [4])
        td["l"] = [1, 2, 3, 4]
        assert td["x"].is_meta and td["p", "q"].is_meta and td["d", "e"].is_meta
        assert td["t", "u"].is_meta and td["l"].is_meta
        assert td["p"].device == META and td["d"].device == META and td["t"].device == META

    def test_set_keeps_values_when_device_none(self) -> None:
        td = TensorDict({"m": torch.zeros(2, device="meta"), "c": torch.zeros(2)}, [2])
        assert td.device is None and td["m"].is_meta and not td["c"].is_meta

    def test_preallocation_uses_device(self) -> None:
        td = TensorDict({"x": torch.zeros(4, device="meta")}, [4], device="meta")
        td[0] = {"y": torch.ones(())}
        assert td["y"].is_meta and td["y"].shape == (4,)

    def test_indexing_keeps_device(self) -> None:
        td = _td("meta")
        assert td[1:].device == META and td[0].device == META and td[[0, 1]].device == META


class TestMetaIntoADevice:
    """A meta tensor holds no data: copying it onto a real device is a MetaTensorError
    (a NotImplementedError, as torch's), naming the entry, on every path."""

    def _check(self, call: Any, key: str) -> None:
        with pytest.raises(errors.MetaTensorError, match=f"meta tensor '{key}' of shape") as info:
            call()
        assert isinstance(info.value, NotImplementedError)

    def test_set(self) -> None:
        td = _td("cpu")
        self._check(lambda: td.set("m", torch.zeros(4, device="meta")), "m")
        self._check(lambda: td.__setitem__("m", torch.zeros(4, device="meta")), "m")
        assert "m" not in td.keys()

    def test_construction(self) -> None:
        meta = {"a": torch.zeros(4), "m": torch.zeros(4, device="meta")}
        self._check(lambda: TensorDict(meta, [4], device="cpu"), "m")
        self._check(lambda: TensorDict({"n": meta}, [4], device=CPU), "m")

    def test_to_from_meta_names_a_leaf(self) -> None:
        td = _td("meta")
        self._check(lambda: td.to("cpu"), "a")
        self._check(lambda: td.to("cpu", torch.float64), "a")


class TestUnavailableDevice:
    """A move onto a device this machine does not have is a DeviceUnavailableError: an
    AssertionError as torch raises without CUDA, and a RuntimeError as it raises for a
    missing GPU."""

    MISSING = "cuda:97"

    @pytest.mark.parametrize(
        "call",
        [
            lambda td, d: td.to(d),
            lambda td, d: td.to(torch.device(d)),
            lambda td, d: td.to(d, torch.float64),
            lambda td, d: td.to(device=d, non_blocking=True),
            lambda td, d: tclass.lazy_stack([td, td]).to(d),
            lambda td, d: TensorDict({"x": torch.zeros(4)}, [4], device=d),
        ],
        ids=["to", "to_device", "to_dtype", "to_keyword", "lazy_stack", "construction"],
    )
    def test_refused_naming_the_device(self, call: Any) -> None:
        td = _td()
        with pytest.raises(errors.DeviceUnavailableError, match=self.MISSING) as info:
            call(td, self.MISSING)
        assert isinstance(info.value, AssertionError) and isinstance(info.value, RuntimeError)
        assert td.device is None and not td["a"].is_cuda  # the source is left as it was

    def test_an_empty_collection_takes_it_as_the_peer(self) -> None:
        assert TensorDict({}, [4], device=self.MISSING).device == torch.device(self.MISSING)
        assert TensorDict({}, [4]).to(self.MISSING).device == torch.device(self.MISSING)


class TestClearDevice:
    def test_clear_device(self) -> None:
        td = _td("meta")
        assert td.clear_device_() is td
        assert all(c.device is None for c in _collections(td))
        assert all(leaf.is_meta for leaf in _leaves(td).values())  # nothing moved
        td["x"] = torch.zeros(4)
        assert not td["x"].is_meta


# --- CUDA ---------------------------------------------------------------------------------


@cuda
@needs_cuda
class TestCuda:
    def test_cuda_without_index_is_current_device(self) -> None:
        current = torch.device("cuda", torch.cuda.current_device())
        assert (
            as_device("cuda") == current == as_device("cuda:0" if current.index == 0 else current)
        )
        assert TensorDict({}, [], device="cuda").device == TensorDict({}, [], device=current).device
        assert as_device(current.index) == current

    def test_to_cuda_and_back(self) -> None:
        td = _td()
        gpu = td.to("cuda")
        assert gpu.device.type == "cuda" and gpu["n"].device.type == "cuda"
        assert all(leaf.is_cuda for leaf in _leaves(gpu).values())
        assert gpu.to("cuda") is gpu and gpu.to("cuda:0").device == gpu.device
        back = gpu.cpu()
        assert back.device == CPU
        for key, leaf in _leaves(back).items():
            assert torch.equal(leaf, td[key])

    def test_cuda_method(self) -> None:
        td = _td()
        assert td.cuda().device == torch.device("cuda", 0)
        assert td.cuda(0).device == torch.device("cuda", 0)
        assert td.cuda("cuda:0").device == torch.device("cuda", 0)

    def test_non_blocking(self) -> None:
        td = _td()
        gpu = td.to("cuda", non_blocking=True)
        back = gpu.to("cpu", non_blocking=True)
        torch.cuda.synchronize()
        for key, leaf in _leaves(back).items():
            assert torch.equal(leaf, td[key])

    def test_set_moves_to_cuda(self) -> None:
        td = TensorDict({}, [2], device="cuda")
        td["x"] = torch.ones(2)
        td["y"] = {"z": torch.ones(2)}
        assert td["x"].is_cuda and td["y", "z"].is_cuda


def _to_kinds() -> list[Any]:
    td = TensorDict({"a": torch.zeros(3, 4), "n": {"c": torch.zeros(3, 4, 2)}}, [3, 4])

    @tclass.tensorclass
    class Pair:
        a: torch.Tensor
        name: str

    return [
        td,
        td[0:2],
        tclass.lazy_stack(list(td.unbind(1)), 1),
        Pair(a=torch.zeros(3, 4), name="x", batch_size=[3, 4]),
        tclass.TensorDictParams(td.clone()),
    ]


def test_to_other_takes_the_device_and_the_shared_dtype() -> None:
    td = TensorDict({"a": torch.zeros(2), "b": torch.zeros(2, dtype=torch.long)}, [2])
    half = TensorDict({"a": torch.zeros(3, dtype=torch.half)}, [])
    mixed = TensorDict(
        {"a": torch.zeros(3, dtype=torch.half), "b": torch.zeros(1, dtype=torch.long)}, []
    )
    assert {t.dtype for t in td.to(other=half).values()} == {torch.half}  # as the peer
    assert td.to(other=mixed)["a"].dtype is torch.float32  # several dtypes: none taken
    assert td.to(other=half.to("cpu")).device == torch.device("cpu")


@pytest.mark.parametrize("index", range(5), ids=["td", "view", "lazy", "record", "params"])
def test_to_takes_the_peers_keywords(index: int) -> None:
    collection = _to_kinds()[index]
    assert collection.to(None) is collection  # no device asked for: nothing changes
    assert collection.to(None, torch.float64).get("a").dtype is torch.float64
    assert collection.to("cpu", num_threads=2).device == CPU
    nested = collection.get("n", None)
    out = collection.to(torch.float64, inplace=True)
    assert out is collection and collection.get("a").dtype is torch.float64
    if nested is not None and not isinstance(collection, tclass.LazyStackedTensorDict):
        assert collection.get("n") is nested and nested["c"].dtype is torch.float64
    assert collection.to("cpu", inplace=True) is collection and collection.device == CPU


def test_to_with_a_batch_size_and_pinning() -> None:
    td = _td()
    same = td.to(batch_size=[4])  # nothing moves: the batch size is set here, as the peer
    assert same is td
    moved = td.to(torch.float64, batch_size=[4])
    assert moved is not td and moved.batch_size == (4,) and moved["a"].dtype is torch.float64
    on_cpu = _td("cpu")
    assert on_cpu.to("cpu", non_blocking_pin=True) is on_cpu  # nothing moves: nothing pinned
    if not has_cuda:
        with pytest.raises(RuntimeError, match="accelerator"):
            td.to("cpu", non_blocking_pin=True)  # pinned first, as the peer
    locked = _td().lock_()
    with pytest.raises(errors.LockedError):
        locked.to(torch.float64, inplace=True)


@pytest.mark.parametrize("index", [0, 3], ids=["td", "record"])
def test_assigning_device_is_refused_as_the_peer(index: int) -> None:
    collection = _to_kinds()[index]
    for device in ("cpu", None):
        with pytest.raises(RuntimeError, match=r"\.to\(") as info:  # the peer: RuntimeError
            collection.device = device
        assert isinstance(info.value, errors.TclassError)
        # the peer's words, which code written for it matches
        assert "cannot be set using tensorclass.device = device" in str(info.value)
    assert collection.device is None
