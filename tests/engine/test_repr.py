"""Tests for tclass._engine._repr: the peer's 0.15 compact repr, exactly.

The expected strings were produced by tensordict 0.15.3 on torch 2.13; the last test
rebuilds every structure in both libraries and compares when the peer is installed.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest
import torch

import tclass
from tclass import TensorDict
from tclass._engine._repr import dtype_code


def z(*shape: int, dtype: torch.dtype = torch.float32, device: str = "cpu") -> torch.Tensor:
    return torch.zeros(shape, dtype=dtype, device=device)


class Sub:
    """A nested TensorDict with extra batch dims: ``Sub([2], {...})`` in a case's data."""

    def __init__(self, extra: list[int], data: dict[str, Any]) -> None:
        self.extra, self.data = extra, data


class Meta:
    """A ``MetaData`` node holding ``value`` in a case's data (built by each library)."""

    def __init__(self, value: Any) -> None:
        self.value = value


def build(lib: ModuleType, data: dict[str, Any], batch: list[int], device: Any = None) -> Any:
    def convert(entries: dict[str, Any], size: list[int]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in entries.items():
            if isinstance(value, Sub):
                inner = size + value.extra
                out[key] = lib.TensorDict(convert(value.data, inner), batch_size=inner)
            elif isinstance(value, Meta):
                out[key] = lib.MetaData(value.value)
            elif isinstance(value, dict):
                out[key] = convert(value, size)
            else:
                out[key] = value
        return out

    return lib.TensorDict(convert(data, batch), batch_size=batch, device=device)


# name -> (data, batch size, device, the peer's repr)
CASES: dict[str, tuple[dict[str, Any], list[int], Any, str]] = {
    "basic": (
        {"a": z(4, 3), "b": {"c": z(4, dtype=torch.long)}, "d": z(4, 2, 2, dtype=torch.bool)},
        [4],
        None,
        "TensorDict(batch_size=[4], fields={a: f32[3], b: {c: i64[]}, d: bool[2,2]})",
    ),
    "device_sorted": (
        {"b": z(4, 3), "a": z(4, 3)},
        [4],
        "cpu",
        "TensorDict(batch_size=[4], device=cpu, fields={a: f32[3], b: f32[3]})",
    ),
    "empty": ({}, [], None, "TensorDict(batch_size=[], fields={})"),
    "empty_2d": ({}, [3, 4], None, "TensorDict(batch_size=[3,4], fields={})"),
    "no_batch": (
        {"x": z(3), "y": z()},
        [],
        None,
        "TensorDict(batch_size=[], fields={x: f32[3], y: f32[]})",
    ),
    "zero_size": ({"x": z(0, 3)}, [0], None, "TensorDict(batch_size=[0], fields={x: f32[3]})"),
    "extra_dims": (
        {"b": Sub([2], {"c": z(4, 2, dtype=torch.long)})},
        [4],
        None,
        "TensorDict(batch_size=[4], fields={b: [2]{c: i64[]}})",
    ),
    "extra_dims_empty": (
        {"b": Sub([2, 3], {})},
        [4],
        None,
        "TensorDict(batch_size=[4], fields={b: [2,3]{}})",
    ),
    "metadata": (  # shown by its class, where a NonTensorData shows its value's type
        {"m": Meta({"k": 1}), "x": z(2, 3), "n": {"m": Meta(3)}},
        [2],
        None,
        "TensorDict(batch_size=[2], fields={m: MetaData, n: {m: MetaData}, x: f32[3]})",
    ),
    "nested_empty": ({"b": {}}, [4], None, "TensorDict(batch_size=[4], fields={b: {}})"),
    "deep": (
        {"a": {"b": {"c": {"d": z(1)}}}},
        [1],
        None,
        "TensorDict(batch_size=[1], fields={a: {b: {c: {d: f32[]}}}})",
    ),
    "meta_device": (
        {"a": z(2, device="meta")},
        [2],
        "meta",
        "TensorDict(batch_size=[2], device=meta, fields={a: f32[]})",
    ),
    "exactly_80": (
        {"k" * 35: z(1, 1)},
        [1],
        None,
        "TensorDict(batch_size=[1], fields={kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk: f32[1]})",
    ),
    "wraps_at_81": (
        {"k" * 36: z(1, 1)},
        [1],
        None,
        "TensorDict(batch_size=[1], fields={\n    kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk: f32[1]})",
    ),
    "dtypes": (
        {
            "f16": z(2, dtype=torch.float16),
            "bf": z(2, dtype=torch.bfloat16),
            "f64": z(2, dtype=torch.float64),
            "c64": z(2, dtype=torch.complex64),
            "c128": z(2, dtype=torch.complex128),
            "u8": z(2, dtype=torch.uint8),
            "i8": z(2, dtype=torch.int8),
            "i16": z(2, dtype=torch.int16),
            "i32": z(2, dtype=torch.int32),
        },
        [2],
        None,
        "TensorDict(batch_size=[2], fields={\n    bf: bf16[],\n    c128: c128[],\n    c64: c64[],\n"
        "    f16: f16[],\n    f64: f64[],\n    i16: i16[],\n    i32: i32[],\n    i8: "
        "i8[],\n    u8: u8[]})",
    ),  # fmt: skip
    "long": (
        {f"key_{i}": z(4, i + 1) for i in range(8)},
        [4],
        None,
        "TensorDict(batch_size=[4], fields={\n"
        + "".join(f"    key_{i}: f32[{i + 1}],\n" for i in range(7))
        + "    key_7: f32[8]})",
    ),
    "long_nested": (
        {
            "obs": z(8, 3, 84, 84, dtype=torch.uint8),
            "next": {
                "obs": z(8, 3, 84, 84, dtype=torch.uint8),
                "reward": z(8, 1),
                "done": z(8, 1, dtype=torch.bool),
                "info": {"step": z(8, dtype=torch.long), "episode_return_value": z(8)},
            },
            "action": z(8, dtype=torch.long),
        },
        [8],
        None,
        "TensorDict(batch_size=[8], fields={\n    action: i64[],\n    next: {\n        "
        "done: bool[1],\n"
        "        info: {episode_return_value: f32[], step: i64[]},\n        obs: u8[3,84,84],\n"
        "        reward: f32[1]},\n    obs: u8[3,84,84]})",
    ),  # fmt: skip
    "long_nested_extra_device": (
        {
            "observation_pixels": z(2, 3, 64, 64),
            "n": Sub(
                [5],
                {
                    "a_long_key_name_here": z(2, 5, 7),
                    "another_long_key_name": z(2, 5),
                    "third": z(2, 5, dtype=torch.int16),
                },
            ),
        },
        [2],
        "cpu",
        "TensorDict(batch_size=[2], device=cpu, fields={\n    n: [5]{\n        "
        "a_long_key_name_here: f32[7],\n"
        "        another_long_key_name: f32[],\n        third: i16[]},\n    "
        "observation_pixels: f32[3,64,64]})",
    ),  # fmt: skip
    "nested_line_80_stays": (
        {"n": {"x" * 53: z(1), "y": z(1)}, "z" * 80: z(1)},
        [1],
        None,
        "TensorDict(batch_size=[1], fields={\n    n: {"
        + "x" * 53
        + ": f32[], y: f32[]},\n    "
        + "z" * 80
        + ": f32[]})",
    ),
    "nested_line_81_wraps": (
        {"n": {"x" * 54: z(1), "y": z(1)}, "z" * 80: z(1)},
        [1],
        None,
        "TensorDict(batch_size=[1], fields={\n    n: {\n        "
        + "x" * 54
        + ": f32[],\n        y: f32[]},\n    "
        + "z" * 80
        + ": f32[]})",
    ),
    "last_nested_80_stays": (
        {"a" * 80: z(1), "n": {"x" * 52: z(1), "y": z(1)}},
        [1],
        None,
        "TensorDict(batch_size=[1], fields={\n    "
        + "a" * 80
        + ": f32[],\n    n: {"
        + "x" * 52
        + ": f32[], y: f32[]}})",
    ),
    "last_nested_81_wraps": (
        {"a" * 80: z(1), "n": {"x" * 53: z(1), "y": z(1)}},
        [1],
        None,
        "TensorDict(batch_size=[1], fields={\n    "
        + "a" * 80
        + ": f32[],\n    n: {\n        "
        + "x" * 53
        + ": f32[],\n        y: f32[]}})",
    ),
    # The peer sorts the rendered fields ("key: value"), so "a1: ..." comes before "a: ...".
    "sort_by_field_text": (
        {"b": z(1), "B": z(1), "a": z(1), "_x": z(1), "a1": z(1), "a10": z(1), "a2": z(1)},
        [1],
        None,
        "TensorDict(batch_size=[1], fields={\n    B: f32[],\n    _x: f32[],\n    a10: "
        "f32[],\n    a1: f32[],\n"
        "    a2: f32[],\n    a: f32[],\n    b: f32[]})",
    ),  # fmt: skip
    "sort_prefix_nested": (
        {"x": {"b": z(1)}, "x0": z(1)},
        [1],
        None,
        "TensorDict(batch_size=[1], fields={x0: f32[], x: {b: f32[]}})",
    ),
    # Leaves off the CPU are marked when the container has no device.
    "mixed_devices": (
        {"a": z(2, device="meta"), "b": z(2), "n": {"c": z(2, device="meta")}},
        [2],
        None,
        "TensorDict(batch_size=[2], fields={a: f32[]@meta, b: f32[], n: {c: f32[]@meta}})",
    ),
    "float8": (
        {
            "f": z(2, dtype=torch.float8_e4m3fn),
            "g": z(2, dtype=torch.float8_e5m2),
            "q": z(2, dtype=torch.bits8),
        },
        [2],
        None,
        "TensorDict(batch_size=[2], fields={f: f8_e4m3fn[], g: f8_e5m2[], q: bits8[]})",
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_exact_repr(name: str) -> None:
    data, batch, device, expected = CASES[name]
    assert repr(build(tclass, data, batch, device)) == expected


@pytest.mark.peer
@pytest.mark.parametrize("name", list(CASES))
def test_same_as_peer(name: str) -> None:
    peer = pytest.importorskip("tensordict")
    data, batch, device, expected = CASES[name]
    ours = repr(build(tclass, data, batch, device))
    theirs = repr(build(peer, data, batch, device))
    assert theirs == expected  # the recorded string is still what the peer prints
    assert ours == theirs


@pytest.mark.peer
@pytest.mark.parametrize("width", [20, 30, 35, 36, 40, 50, 60, 70])
def test_wrapping_matches_peer(width: int) -> None:
    peer = pytest.importorskip("tensordict")
    data = {
        "k" * (width // 2): z(3, 2),
        "nest": {"v" * width: z(3), "w": {"deep" * (width // 10 + 1): z(3, 4, dtype=torch.int64)}},
        "ext": Sub([2], {"q" * (width - 10): z(3, 2, 5)}),
    }
    assert repr(build(tclass, data, [3])) == repr(build(peer, data, [3]))


# --- pieces -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dtype, code",
    [
        (torch.float32, "f32"),
        (torch.float64, "f64"),
        (torch.float16, "f16"),
        (torch.bfloat16, "bf16"),
        (torch.int64, "i64"),
        (torch.int32, "i32"),
        (torch.int16, "i16"),
        (torch.int8, "i8"),
        (torch.uint8, "u8"),
        (torch.uint16, "u16"),
        (torch.uint32, "u32"),
        (torch.uint64, "u64"),
        (torch.bool, "bool"),
        (torch.complex64, "c64"),
        (torch.complex128, "c128"),
        (torch.complex32, "c32"),
        (torch.float8_e4m3fn, "f8_e4m3fn"),
        (torch.float8_e5m2, "f8_e5m2"),
        (torch.bits8, "bits8"),
    ],
)
def test_dtype_code(dtype: torch.dtype, code: str) -> None:
    assert dtype_code(dtype) == code


def test_repr_reads_no_data() -> None:
    td = TensorDict(
        {"a": z(2, 3, device="meta"), "n": {"b": z(2, device="meta")}}, [2], device="meta"
    )
    assert repr(td) == "TensorDict(batch_size=[2], device=meta, fields={a: f32[3], n: {b: f32[]}})"


def test_repr_of_indexed_and_changed() -> None:
    td = TensorDict({"a": z(4, 3, 2), "n": {}}, [4, 3])
    assert repr(td[0]) == "TensorDict(batch_size=[3], fields={a: f32[2], n: {}})"
    td.batch_size = [4]
    assert repr(td) == "TensorDict(batch_size=[4], fields={a: f32[3,2], n: [3]{}})"
    assert str(td) == repr(td)


def test_every_wrapped_line_fits_when_it_can() -> None:
    data = {f"field_number_{i}": {f"inner_{j}": z(2, j + 1) for j in range(6)} for i in range(4)}
    text = repr(build(tclass, data, [2]))
    lines = text.splitlines()
    assert lines[0] == "TensorDict(batch_size=[2], fields={" and text.endswith("})")
    assert all(len(line) <= 80 for line in lines)
    assert all(line.startswith("    ") for line in lines[1:])


def _nested_lazy_cases(lib: ModuleType) -> list[Any]:
    """Lazy stacks whose members nest a TensorDict (ragged), and a TensorDict nesting one."""
    inner = lib.lazy_stack([lib.TensorDict({"c": z(k + 1)}, []) for k in range(2)])
    members = [lib.TensorDict({"b": {"c": z(k + 1)}, "a": z()}, []) for k in range(2)]
    return [
        lib.lazy_stack(members),
        lib.lazy_stack([lib.lazy_stack(members), lib.lazy_stack(members)], 1),
        lib.TensorDict({"x": inner}, [2]),
        lib.lazy_stack([lib.TensorDict({"n": inner}, [2])] * 2),
    ]


NESTED_LAZY = [
    # a lazy stack's nested entry is named by member 0's entry: a TensorDict shows `{`
    "LazyStackedTensorDict(batch_size=[2], stack_dim=0, fields={\n"
    "    a: f32[],\n    b: {c: f32[-1]}})",
    "LazyStackedTensorDict(batch_size=[2,2], stack_dim=1, fields={\n"
    "    a: f32[],\n    b: {c: f32[-1]}})",
    # a lazy stack stored in a TensorDict (or in member 0) keeps its class name
    "TensorDict(batch_size=[2], fields={x: LazyStackedTensorDict{c: f32[-1]}})",
    "LazyStackedTensorDict(batch_size=[2,2], stack_dim=0, fields={\n"
    "    n: LazyStackedTensorDict{c: f32[-1]}})",
]


def test_nested_entry_of_lazy_stack_is_named_by_member_0() -> None:
    assert [repr(case) for case in _nested_lazy_cases(tclass)] == NESTED_LAZY
    peer = pytest.importorskip("tensordict")
    assert [repr(case) for case in _nested_lazy_cases(peer)] == NESTED_LAZY


def _detailed(lib: ModuleType, collection: Any) -> str:
    with lib.set_printoptions(compact=False):
        return repr(collection)


def test_detailed_form_names_each_leafs_class() -> None:
    # The detailed form printed every leaf as Tensor(...); the peer prints the leaf's
    # class, as the memory-management page shows: MemoryMappedTensor(...), Parameter(...).
    saved = TensorDict(a=torch.zeros(3), b=TensorDict(c=torch.ones(3, 2), batch_size=[3]))
    text = _detailed(tclass, saved.memmap_())
    assert "a: MemoryMappedTensor(shape=torch.Size([3]), device=cpu" in text
    assert "c: MemoryMappedTensor(shape=torch.Size([3, 2])" in text
    params = _detailed(tclass, TensorDict.from_module(torch.nn.Linear(2, 1)))
    assert "bias: Parameter(shape=torch.Size([1])" in params
    plain = _detailed(tclass, TensorDict(a=torch.zeros(2), batch_size=[2]))
    assert "a: Tensor(shape=torch.Size([2])" in plain


@pytest.mark.peer
def test_detailed_leaf_classes_as_the_peers() -> None:
    tensordict = pytest.importorskip("tensordict")
    module = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.BatchNorm1d(2))
    pairs = [
        (TensorDict.from_module(module), tensordict.TensorDict.from_module(module)),
        (tclass.TensorDictParams(TensorDict(w=torch.ones(2))),
         tensordict.TensorDictParams(tensordict.TensorDict(w=torch.ones(2)))),
    ]  # fmt: skip
    # a lazy stack of members of different sizes shows member 0's class, as the peer's
    linears = [torch.nn.Linear(2, 1), torch.nn.Linear(3, 1)]
    pairs.append((
        tclass.lazy_stack([TensorDict.from_module(m) for m in linears]),
        tensordict.lazy_stack([tensordict.TensorDict.from_module(m) for m in linears]),
    ))  # fmt: skip
    for mine, peer in pairs:
        assert _detailed(tclass, mine) == _detailed(tensordict, peer)
    assert "weight: Parameter(shape=torch.Size([2, 1, -1])" in _detailed(tclass, pairs[-1][0])


def _exclusive_cases(lib: ModuleType) -> list[Any]:
    """Lazy stacks whose members hold keys the others lack: short, wrapped, none shared."""
    a = lib.TensorDict(x=z(2))
    b = lib.TensorDict(x=z(2), y=z(3), n=lib.TensorDict(q=z(1)))
    wide = lib.TensorDict({f"key_{i}": z(2, 3) for i in range(6)}, batch_size=[2])
    wider = wide.clone().update({"nest": lib.TensorDict({f"in_{i}": z(2, 4) for i in range(9)})})
    return [
        lib.lazy_stack([a, a.clone(), b]),
        lib.lazy_stack([wide, wider, wide, wider], dim=1),
        lib.lazy_stack([lib.TensorDict(a=z()), lib.TensorDict(b=z())]),
    ]


_NEST = "\n".join([f"            in_{i}: f32[4]," for i in range(9)])[:-1] + "}},"
EXCLUSIVE = [
    "LazyStackedTensorDict(batch_size=[3], stack_dim=0, fields={\n    x: f32[2]}, "
    "exclusive_fields={2: {n: {q: f32[1]}, y: f32[3]}})",
    "LazyStackedTensorDict(batch_size=[2,4], stack_dim=1, fields={\n"
    + "\n".join(f"    key_{i}: f32[3]," for i in range(6))[:-1]
    + "}, exclusive_fields={\n"
    + f"    1: {{\n        nest: {{\n{_NEST}\n    3: {{\n        nest: {{\n{_NEST[:-1]}}})",
    "LazyStackedTensorDict(batch_size=[2], stack_dim=0, fields={}, exclusive_fields={\n"
    "    0: {a: f32[]},\n    1: {b: f32[]}})",
]


def test_lazy_stack_lists_the_keys_of_some_members_as_the_peer() -> None:
    """The peer's compact repr ends with ``exclusive_fields={i: {...}}`` for the keys that
    only member i holds (wrapped by the same 80-column rule); tclass left them out."""
    got = [repr(case) for case in _exclusive_cases(tclass)]
    assert got == EXCLUSIVE, "\n".join(got)
    peer = pytest.importorskip("tensordict")
    assert [repr(case) for case in _exclusive_cases(peer)] == EXCLUSIVE


def test_a_lazy_stack_prints_its_device_before_its_stack_dim() -> None:
    # as the peer 0.15.3 (nu23d: tclass printed "stack_dim=0, device=cpu"); both parse
    member = TensorDict({"a": torch.zeros(3)}, [3], device="cpu")
    text = repr(tclass.lazy_stack([member, member]))
    assert text == (
        "LazyStackedTensorDict(batch_size=[2,3], device=cpu, stack_dim=0, fields={\n    a: f32[]})"
    )
    old = text.replace("device=cpu, stack_dim=0", "stack_dim=0, device=cpu")
    for printed in (text, old):
        parsed = tclass.parse_tensor_dict_string(printed)
        assert parsed.batch_size == (2, 3) and parsed.device == torch.device("cpu")
