"""Tests for tclass/_parse.py: ``parse_tensor_dict_string`` rebuilds, from tclass's own
repr (and the peer's compact one), a zero-filled TensorDict of the same layout."""

from __future__ import annotations

import re

import pytest
import torch
from hypothesis import given

import tclass
from tclass import NonTensorData, TensorClass, TensorDict, errors, parse_tensor_dict_string

from strategies import SETTINGS, leaf_items, nested_items, tensordicts  # noqa: E402


class Inner(TensorClass):
    x: torch.Tensor


class Rec(TensorClass):
    obs: torch.Tensor
    inner: Inner
    env: str = "pong"
    extra: torch.Tensor | None = None


def _same_layout(parsed: TensorDict, source: TensorDict) -> None:
    assert parsed.batch_size == source.batch_size and parsed.device == source.device
    assert set(parsed.keys(True, True)) == set(source.keys(True, True))
    for path, node in nested_items(source):
        assert parsed.get(path).batch_size == node.batch_size, path
    for path, leaf in leaf_items(source):
        got = parsed.get(path)
        assert got.shape == leaf.shape and got.dtype == leaf.dtype, path
        assert not got.any(), path


class TestParse:
    def test_one_line(self) -> None:
        td = TensorDict({"a": torch.ones(3, 2), "b": {"c": torch.ones(3, dtype=torch.int64)}}, [3])
        parsed = parse_tensor_dict_string(repr(td))
        _same_layout(parsed, td)
        assert repr(parsed) == repr(td)

    def test_many_lines_every_dtype_code(self) -> None:
        dtypes = [
            torch.float16,
            torch.bfloat16,
            torch.float64,
            torch.complex64,
            torch.bool,
            torch.uint8,
            torch.int8,
            torch.int32,
            torch.uint16,
            torch.float8_e5m2,
            torch.float8_e4m3fn,
        ]
        td = TensorDict(
            {f"k{i}": torch.zeros(2, i, dtype=dtype) for i, dtype in enumerate(dtypes)}, [2]
        )
        assert "\n" in repr(td)
        _same_layout(parse_tensor_dict_string(repr(td)), td)

    def test_nested_extra_batch_dims_and_device(self) -> None:
        td = TensorDict(
            {"n": TensorDict({"m": TensorDict({"x": torch.zeros(2, 3, 4, 5)}, [2, 3, 4])}, [2, 3])},
            [2],
            device="cpu",
        )
        parsed = parse_tensor_dict_string(repr(td))
        _same_layout(parsed, td)
        assert parsed["n", "m"].device == torch.device("cpu")

    def test_leaf_device(self) -> None:
        td = TensorDict({"a": torch.zeros(3), "m": torch.zeros(3, 2, device="meta")}, [3])
        assert "@meta" in repr(td)
        parsed = parse_tensor_dict_string(repr(td))
        assert parsed.get("m").device.type == "meta" and parsed.get("a").device.type == "cpu"

    def test_python_values_get_empty_values(self) -> None:
        td = TensorDict(
            {
                "s": NonTensorData("x", [2]),
                "n": NonTensorData(3, [2]),
                "d": NonTensorData({"k": 1}, [2]),
            },
            [2],
        )
        parsed = parse_tensor_dict_string(repr(td))
        assert (
            parsed.get("s").data == "" and parsed.get("n").data == 0 and parsed.get("d").data == {}
        )
        assert parsed.get("s").batch_size == torch.Size([2])

    def test_tensorclass_repr(self) -> None:
        rec = Rec(torch.zeros(3, 2), Inner(torch.zeros(3, 4), batch_size=[3, 4]), batch_size=[3])
        parsed = parse_tensor_dict_string(repr(rec))
        assert type(parsed) is TensorDict and type(parsed.get("inner")) is TensorDict
        assert parsed.get("inner").batch_size == torch.Size([3, 4]) and parsed["obs"].shape == (
            3,
            2,
        )
        assert "extra" not in parsed.keys() and parsed.get("env").data == ""

    def test_lazy_stack_repr(self) -> None:
        stack = tclass.lazy_stack(
            [TensorDict({"a": torch.zeros(2, 5)}, [2]), TensorDict({"a": torch.ones(2, 5)}, [2])]
        )
        parsed = parse_tensor_dict_string(repr(stack))
        assert type(parsed) is TensorDict and parsed.batch_size == torch.Size([2, 2])
        assert parsed["a"].shape == (2, 2, 5)

    @pytest.mark.parametrize("key", ["weird key: {x}, y", "a, b", "k: v", "x}"])
    def test_keys_with_separators(self, key: str) -> None:
        td = TensorDict({key: torch.zeros(1, 2), "z": torch.zeros(1)}, [1])
        parsed = parse_tensor_dict_string(repr(td))
        assert set(parsed.keys()) == {key, "z"} and parsed[key].shape == (1, 2)

    def test_empty(self) -> None:
        parsed = parse_tensor_dict_string(repr(TensorDict({"e": {}}, [4])))
        assert parsed.batch_size == torch.Size([4]) and parsed.get("e").batch_size == torch.Size(
            [4]
        )

    def test_the_peer_repr(self) -> None:
        peer = pytest.importorskip("tensordict")
        theirs = peer.TensorDict(
            {"a": torch.zeros(3, 2), "b": {"c": torch.zeros(3, 4, dtype=torch.int8)}},
            [3],
            device="cpu",
        )
        parsed = parse_tensor_dict_string(repr(theirs))
        assert parsed.device == torch.device("cpu") and parsed["b", "c"].dtype == torch.int8

    def test_the_peer_parses_ours(self) -> None:
        peer = pytest.importorskip("tensordict")
        td = TensorDict(
            {"a": torch.zeros(3, 2), "b": TensorDict({"c": torch.zeros(3, 4)}, [3, 4])}, [3]
        )
        theirs = peer.parse_tensor_dict_string(repr(td))
        assert (
            theirs.batch_size == td.batch_size
            and theirs.get("b").batch_size == td.get("b").batch_size
        )


class TestVerboseRepr:
    """The repr printed with ``set_printoptions(compact=False)`` (the peer's older
    default, still in its docs and in logs) parses too."""

    TENSOR = "Tensor(shape=torch.Size({}), device=cpu, dtype=torch.{}, is_shared=False)"
    TEXT = f"""TensorDict(
    fields={{
        image: {TENSOR.format([32, 3, 64, 64], "float32")},
        label: {TENSOR.format([32], "int64")},
        next: TensorDict(
            fields={{
                done: {TENSOR.format([32, 1], "bool")}}},
            batch_size=torch.Size([32]),
            device=None,
            is_shared=False)}},
    batch_size=torch.Size([32]),
    device=cpu,
    is_shared=False)"""

    def test_written_by_hand(self) -> None:
        td = parse_tensor_dict_string(self.TEXT)
        assert td.batch_size == torch.Size([32]) and td.device == torch.device("cpu")
        assert td["image"].shape == (32, 3, 64, 64) and td["label"].dtype == torch.int64
        assert td["next", "done"].dtype == torch.bool and td.get("next").batch_size == (32,)
        assert td["image"].abs().sum() == 0

    @given(td=tensordicts())
    @SETTINGS
    def test_same_layout_as_printed(self, td: TensorDict) -> None:
        td = td.exclude(*[key for key, value in td.items(True) if tclass.is_non_tensor(value)])
        with tclass.set_printoptions(compact=False):
            text = repr(td)
        _same_layout(parse_tensor_dict_string(text), td)

    def test_tensorclass_lazy_stack_and_empty(self) -> None:
        rec = Rec(
            obs=torch.zeros(2, 3), inner=Inner(x=torch.ones(2), batch_size=[2]), batch_size=[2]
        ).exclude("env")
        stack = tclass.lazy_stack([TensorDict(a=torch.zeros(3, 1), batch_size=[3])] * 2)
        with tclass.set_printoptions(compact=False):
            texts = [repr(rec), repr(stack), repr(TensorDict())]
        parsed = [parse_tensor_dict_string(text) for text in texts]
        assert parsed[0]["obs"].shape == (2, 3) and parsed[0]["inner", "x"].shape == (2,)
        assert parsed[1].batch_size == (2, 3) and parsed[1]["a"].shape == (2, 3, 1)
        assert parsed[2].batch_size == () and not parsed[2].keys()

    def test_what_it_cannot_rebuild(self) -> None:
        with tclass.set_printoptions(compact=False):
            values = repr(TensorDict(s="x"))
            exclusive = repr(
                tclass.lazy_stack([TensorDict(a=torch.zeros(1)), TensorDict(b=torch.zeros(1))])
            )
        with pytest.raises(errors.ReprParseError, match="'s'.*Python values") as info:
            parse_tensor_dict_string(values)
        assert isinstance(info.value, ValueError)
        with pytest.raises(errors.ReprParseError, match="exclusive_fields"):
            parse_tensor_dict_string(exclusive)

    def test_the_peer_verbose_repr(self) -> None:
        peer = pytest.importorskip("tensordict")
        theirs = peer.TensorDict({"a": torch.zeros(3, 2), "b": {"c": torch.zeros(3)}}, [3])
        with peer.set_printoptions(compact=False):
            text = repr(theirs)
        parsed = parse_tensor_dict_string(text)
        assert parsed["a"].shape == (3, 2) and parsed.get("b").batch_size == (3,)


@SETTINGS
@given(td=tensordicts())
def test_parse_gives_the_same_layout(td: TensorDict) -> None:
    _same_layout(parse_tensor_dict_string(repr(td)), td)


class TestErrors:
    @pytest.mark.parametrize(
        "text, words",
        [
            ("hello", "expected a repr"),
            ("TensorDict(batch_size=[3], fields={a: f32[]", "',' or '}' after a field"),
            ("TensorDict(batch_size=[3], fields={a: f32[]}) extra", "the end of the repr"),
            ("TensorDict(batch_size=[3], fields={a f32[]})", "'key: value'"),
            ("TensorDict(batch_size=[3], fields={a: zz9[2]})", "unknown dtype code 'zz9'"),
            ("TensorDict(batch_size=[3], fields={a: MyObject})", "not a builtin type"),
            (
                "TensorDict(batch_size=[3], fields={a: NonTensorStack})",
                "one Python value per element",
            ),
            (
                "LazyStackedTensorDict(batch_size=[2,2], stack_dim=0, fields={a: f32[-1]})",
                "shapes differ",
            ),
            (
                "LazyStackedTensorDict(batch_size=[2,2], stack_dim=0, fields={a: ?[?]})",
                "dtypes differ",
            ),
            ("TensorDict(batch_size=[3], device=nowhere, fields={})", "unknown device"),
        ],
    )
    def test_clear_errors(self, text: str, words: str) -> None:
        with pytest.raises(errors.ReprParseError, match=re.escape(words)) as info:
            parse_tensor_dict_string(text)
        assert isinstance(info.value, ValueError)  # what the peer raises
