"""What users paste from print(x): the compact repr (and verbose=False) of every kind of
collection, exactly as the peer prints it (the kinds: tests/helpers/repr_kinds.py).
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import tclass

from repr_kinds import KINDS, NOT_THE_PEERS, VIEWS, printed

# kind.view -> the text the peer prints (tensordict 0.15.3, torch 2.13), except NOT_THE_PEERS
EXPECTED: dict[str, str] = {
    "h5.compact": (
        "PersistentTensorDict(batch_size=[3], fields={\n"
        "    a: f32[4],\n"
        "    n: PersistentTensorDict{c: i64[]}})"
    ),
    "h5.quiet": (
        "PersistentTensorDict(batch_size=[3], fields={\n"
        "    a: [4],\n"
        "    n: PersistentTensorDict{c: []}})"
    ),
    "h5_values.compact": (
        "PersistentTensorDict(batch_size=[2], fields={\n"
        "    a: f32[],\n"
        "    n: PersistentTensorDict{u: NonTensorData},\n"
        "    s: NonTensorData,\n"
        "    t: NonTensorStack})"
    ),
    "h5_values.quiet": (
        "PersistentTensorDict(batch_size=[2], fields={\n"
        "    a: [],\n"
        "    n: PersistentTensorDict{u: NonTensorData},\n"
        "    s: NonTensorData,\n"
        "    t: NonTensorStack})"
    ),
    "lazy_devices.compact": (
        "LazyStackedTensorDict(batch_size=[2], stack_dim=0, fields={a: f32[2]@cpu,meta})"
    ),
    "lazy_devices.quiet": (
        "LazyStackedTensorDict(batch_size=[2], stack_dim=0, fields={a: [2]@cpu,meta})"
    ),
    "lazy_dim0.compact": (
        "LazyStackedTensorDict(batch_size=[2], stack_dim=0, fields={\n"
        "    a: f32[3],\n"
        "    b: {c: f32[3,2]}})"
    ),
    "lazy_dim0.quiet": (
        "LazyStackedTensorDict(batch_size=[2], stack_dim=0, fields={\n"
        "    a: [3],\n"
        "    b: {c: [3,2]}})"
    ),
    "lazy_dim1.compact": "LazyStackedTensorDict(batch_size=[3,2], stack_dim=1, fields={a: f32[4]})",
    "lazy_dim1.quiet": "LazyStackedTensorDict(batch_size=[3,2], stack_dim=1, fields={a: [4]})",
    "lazy_dtypes_promoted.compact": (
        "LazyStackedTensorDict(batch_size=[2], stack_dim=0, fields={a: f32[3]})"
    ),
    "lazy_dtypes_promoted.quiet": (
        "LazyStackedTensorDict(batch_size=[2], stack_dim=0, fields={a: [3]})"
    ),
    "lazy_exclusive.compact": (
        "LazyStackedTensorDict(batch_size=[2], stack_dim=0, fields={\n"
        "    a: f32[3]}, exclusive_fields={0: {b: f32[1]}, 1: {c: i64[2]}})"
    ),
    "lazy_exclusive.quiet": (
        "LazyStackedTensorDict(batch_size=[2], stack_dim=0, fields={\n"
        "    a: [3]}, exclusive_fields={0: {b: [1]}, 1: {c: [2]}})"
    ),
    "lazy_index.compact": "LazyStackedTensorDict(batch_size=[2], stack_dim=0, fields={a: f32[4]})",
    "lazy_index.quiet": "LazyStackedTensorDict(batch_size=[2], stack_dim=0, fields={a: [4]})",
    "lazy_meta.compact": (
        "LazyStackedTensorDict(batch_size=[2], stack_dim=0, fields={a: f32[2]@meta})"
    ),
    "lazy_meta.quiet": "LazyStackedTensorDict(batch_size=[2], stack_dim=0, fields={a: [2]@meta})",
    "lazy_nested.compact": (
        "LazyStackedTensorDict(batch_size=[2,3], stack_dim=0, fields={a: f32[2]})"
    ),
    "lazy_nested.quiet": "LazyStackedTensorDict(batch_size=[2,3], stack_dim=0, fields={a: [2]})",
    "lazy_ragged.compact": (
        "LazyStackedTensorDict(batch_size=[2], stack_dim=0, fields={\n"
        "    a: f32[3],\n"
        "    n: {c: f32[-1,2]}})"
    ),
    "lazy_ragged.quiet": (
        "LazyStackedTensorDict(batch_size=[2], stack_dim=0, fields={\n"
        "    a: [3],\n"
        "    n: {c: [-1,2]}})"
    ),
    "lazy_ragged_batch.compact": (
        "LazyStackedTensorDict(batch_size=[3,-1], stack_dim=0, fields={a: f32[3]})"
    ),
    "lazy_ragged_batch.quiet": (
        "LazyStackedTensorDict(batch_size=[3,-1], stack_dim=0, fields={a: [3]})"
    ),
    "lazy_ranks_differ.compact": (
        "LazyStackedTensorDict(batch_size=[2], stack_dim=0, fields={a: i32[-1]})"
    ),
    "lazy_ranks_differ.quiet": (
        "LazyStackedTensorDict(batch_size=[2], stack_dim=0, fields={a: [-1]})"
    ),
    "lazy_ranks_differ_dim1.compact": (
        "LazyStackedTensorDict(batch_size=[2,2], stack_dim=1, fields={a: f32[-1]})"
    ),
    "lazy_ranks_differ_dim1.quiet": (
        "LazyStackedTensorDict(batch_size=[2,2], stack_dim=1, fields={a: [-1]})"
    ),
    "lazy_unbatched.compact": (
        "LazyStackedTensorDict(batch_size=[2,2], stack_dim=0, fields={\n"
        "    a: f32[],\n"
        "    u: f32[4]})"
    ),
    "lazy_unbatched.quiet": (
        "LazyStackedTensorDict(batch_size=[2,2], stack_dim=0, fields={a: [], u: [4]})"
    ),
    "lazy_values.compact": (
        "LazyStackedTensorDict(batch_size=[2], stack_dim=0, fields={a: f32[3], s: str})"
    ),
    "lazy_values.quiet": (
        "LazyStackedTensorDict(batch_size=[2], stack_dim=0, fields={a: [3], s: str})"
    ),
    "metadata.compact": "MetaData(data={'k': 1}, batch_size=torch.Size([]), device=None)",
    "metadata.quiet": "MetaData(data={'k': 1}, batch_size=torch.Size([]), device=None)",
    "nontensor.compact": "NonTensorData(data=hello, batch_size=torch.Size([3]), device=None)",
    "nontensor.quiet": "NonTensorData(data=hello, batch_size=torch.Size([3]), device=None)",
    "nontensor_stack.compact": (
        "NonTensorStack(\n    ['a', 'b', 'c'],\n    batch_size=torch.Size([3]),\n    device=None)"
    ),
    "nontensor_stack.quiet": (
        "NonTensorStack(\n    ['a', 'b', 'c'],\n    batch_size=torch.Size([3]),\n    device=None)"
    ),
    "nontensor_stack_nested.compact": (
        "NonTensorStack(\n"
        "    [['a', 'b'], ['c', 'd']],\n"
        "    batch_size=torch.Size([2, 2]),\n"
        "    device=None)"
    ),
    "nontensor_stack_nested.quiet": (
        "NonTensorStack(\n"
        "    [['a', 'b'], ['c', 'd']],\n"
        "    batch_size=torch.Size([2, 2]),\n"
        "    device=None)"
    ),
    "params.compact": (
        "TensorDictParams(params=TensorDict(batch_size=[3], fields={a: f32[4], n: {c: f32[]}}))"
    ),
    "params.quiet": (
        "TensorDictParams(params=TensorDict(batch_size=[3], fields={a: [4], n: {c: []}}))"
    ),
    "record.compact": "R(batch_size=[3], fields={x: f32[4], y: i64[]})",
    "record.quiet": "R(batch_size=[3], fields={x: [4], y: []})",
    "record_autocast.compact": "R(batch_size=[3], fields={i: int, x: f32[]})",
    "record_autocast.quiet": "R(batch_size=[3], fields={i: int, x: []})",
    "record_class.compact": "R(batch_size=[3], fields={x: f32[4]})",
    "record_class.quiet": "R(batch_size=[3], fields={x: [4]})",
    "record_consolidated.compact": "R(batch_size=[3], fields={s: str, x: f32[2]})",
    "record_consolidated.quiet": "R(batch_size=[3], fields={s: str, x: [2]})",
    "record_device.compact": "R(batch_size=[3], device=cpu, fields={x: f32[]})",
    "record_device.quiet": "R(batch_size=[3], fields={x: []})",
    "record_frozen.compact": "R(batch_size=[3], fields={x: f32[]})",
    "record_frozen.quiet": "R(batch_size=[3], fields={x: []})",
    "record_in_td.compact": "TensorDict(batch_size=[3], fields={a: f32[], r: R{x: f32[2]}})",
    "record_in_td.quiet": "TensorDict(batch_size=[3], fields={a: [], r: R{x: [2]}})",
    "record_index.compact": "R(batch_size=[], fields={s: str, x: f32[2]})",
    "record_index.quiet": "R(batch_size=[], fields={s: str, x: [2]})",
    "record_lazy_ragged.compact": "R(batch_size=[2], fields={x: f32[-1]})",
    "record_lazy_ragged.quiet": "R(batch_size=[2], fields={x: [-1]})",
    "record_metadata.compact": "R(batch_size=[3], fields={m: MetaData, x: f32[]})",
    "record_metadata.quiet": "R(batch_size=[3], fields={m: MetaData, x: []})",
    "record_nested.compact": "R(batch_size=[3], fields={inner: In[2]{c: f32[5]}, x: f32[4]})",
    "record_nested.quiet": "R(batch_size=[3], fields={inner: In[2]{c: [5]}, x: [4]})",
    "record_nocast.compact": "R(batch_size=[3], fields={i: int, x: f32[]})",
    "record_nocast.quiet": "R(batch_size=[3], fields={i: int, x: []})",
    "record_none.compact": "R(batch_size=[3], fields={x: f32[], y: None})",
    "record_none.quiet": "R(batch_size=[3], fields={x: [], y: None})",
    "record_optional.compact": "R(batch_size=[3], fields={x: f32[], y: None, s: None})",
    "record_optional.quiet": "R(batch_size=[3], fields={x: [], y: None, s: None})",
    "record_repr_false.compact": "R(batch_size=[3], fields={x: f32[]})",
    "record_repr_false.quiet": "R(batch_size=[3], fields={x: []})",
    "record_shadow.compact": "R(batch_size=[3], fields={names: str, x: f32[]})",
    "record_shadow.quiet": "R(batch_size=[3], fields={names: str, x: []})",
    "record_shadow_batch_size_device.compact": (
        "R(fields={batch_size: i64[], device: str, x: f32[2]})"
    ),
    "record_shadow_batch_size_device.quiet": "R(fields={batch_size: [], device: str, x: [2]})",
    "record_stacked.compact": "R(batch_size=[2,3], fields={s: NonTensorStack, x: f32[]})",
    "record_stacked.quiet": "R(batch_size=[2,3], fields={s: NonTensorStack, x: []})",
    "record_tensor_only.compact": "R(batch_size=[3], fields={x: f32[], y: f32[2]})",
    "record_tensor_only.quiet": "R(batch_size=[3], fields={x: [], y: [2]})",
    "record_unbatched.compact": "R(batch_size=[3], fields={u: f32[5], x: f32[]})",
    "record_unbatched.quiet": "R(batch_size=[3], fields={u: [5], x: []})",
    "record_values.compact": "R(batch_size=[3], fields={i: int, s: str, x: f32[]})",
    "record_values.quiet": "R(batch_size=[3], fields={i: int, s: str, x: []})",
    "td_batch_dims.compact": "TensorDict(batch_size=[2,3,4], fields={a: f32[5], b: f64[]})",
    "td_batch_dims.quiet": "TensorDict(batch_size=[2,3,4], fields={a: [5], b: []})",
    "td_big_batch.compact": "TensorDict(batch_size=[100000], fields={a: f32[3], b: i32[]})",
    "td_big_batch.quiet": "TensorDict(batch_size=[100000], fields={a: [3], b: []})",
    "td_consolidated.compact": (
        "TensorDict(batch_size=[3], fields={a: f32[4], n: {c: i64[]}, s: str})"
    ),
    "td_consolidated.quiet": "TensorDict(batch_size=[3], fields={a: [4], n: {c: []}, s: str})",
    "td_cpu.compact": "TensorDict(batch_size=[3], device=cpu, fields={a: f32[4], n: {c: f32[]}})",
    "td_cpu.quiet": "TensorDict(batch_size=[3], fields={a: [4], n: {c: []}})",
    "td_dtypes.compact": (
        "TensorDict(batch_size=[2], fields={\n"
        "    k0: f16[],\n"
        "    k10: u16[],\n"
        "    k1: bf16[],\n"
        "    k2: c64[],\n"
        "    k3: u8[],\n"
        "    k4: i8[],\n"
        "    k5: i16[],\n"
        "    k6: i32[],\n"
        "    k7: f64[],\n"
        "    k8: bool[],\n"
        "    k9: f8_e4m3fn[]})"
    ),
    "td_dtypes.quiet": (
        "TensorDict(batch_size=[2], fields={\n"
        "    k0: [],\n"
        "    k10: [],\n"
        "    k1: [],\n"
        "    k2: [],\n"
        "    k3: [],\n"
        "    k4: [],\n"
        "    k5: [],\n"
        "    k6: [],\n"
        "    k7: [],\n"
        "    k8: [],\n"
        "    k9: []})"
    ),
    "td_empty.compact": "TensorDict(batch_size=[], fields={})",
    "td_empty.quiet": "TensorDict(batch_size=[], fields={})",
    "td_empty_batch.compact": "TensorDict(batch_size=[4,2], fields={})",
    "td_empty_batch.quiet": "TensorDict(batch_size=[4,2], fields={})",
    "td_empty_nested.compact": "TensorDict(batch_size=[], fields={x: {}})",
    "td_empty_nested.quiet": "TensorDict(batch_size=[], fields={x: {}})",
    "td_flat.compact": "TensorDict(batch_size=[3], fields={a: f32[4], b: i64[]})",
    "td_flat.quiet": "TensorDict(batch_size=[3], fields={a: [4], b: []})",
    "td_from_module.compact": (
        "TensorDict(batch_size=[], fields={\n"
        "    0: {bias: f32[3], weight: f32[3,2]},\n"
        "    2: {bias: f32[1], weight: f32[1,3]}})"
    ),
    "td_from_module.quiet": (
        "TensorDict(batch_size=[], fields={\n"
        "    0: {bias: [3], weight: [3,2]},\n"
        "    2: {bias: [1], weight: [1,3]}})"
    ),
    "td_grad.compact": "TensorDict(batch_size=[3], fields={a: f32[]})",
    "td_grad.quiet": "TensorDict(batch_size=[3], fields={a: []})",
    "td_index.compact": "TensorDict(batch_size=[], fields={a: f32[4], n: {c: f32[2]}})",
    "td_index.quiet": "TensorDict(batch_size=[], fields={a: [4], n: {c: [2]}})",
    "td_index_slice.compact": "TensorDict(batch_size=[3,2], fields={a: f32[5]})",
    "td_index_slice.quiet": "TensorDict(batch_size=[3,2], fields={a: [5]})",
    "td_locked.compact": "TensorDict(batch_size=[3], fields={a: f32[4], n: {c: f32[]}})",
    "td_locked.quiet": "TensorDict(batch_size=[3], fields={a: [4], n: {c: []}})",
    "td_many_keys.compact": (
        "TensorDict(batch_size=[2], fields={\n"
        "    k000: f32[],\n"
        "    k001: f32[],\n"
        "    k002: f32[],\n"
        "    k003: f32[],\n"
        "    k004: f32[],\n"
        "    k005: f32[],\n"
        "    k006: f32[],\n"
        "    k007: f32[],\n"
        "    k008: f32[],\n"
        "    k009: f32[],\n"
        "    k010: f32[],\n"
        "    k011: f32[],\n"
        "    k012: f32[],\n"
        "    k013: f32[],\n"
        "    k014: f32[],\n"
        "    k015: f32[],\n"
        "    k016: f32[],\n"
        "    k017: f32[],\n"
        "    k018: f32[],\n"
        "    k019: f32[],\n"
        "    k020: f32[],\n"
        "    k021: f32[],\n"
        "    k022: f32[],\n"
        "    k023: f32[],\n"
        "    k024: f32[],\n"
        "    k025: f32[],\n"
        "    k026: f32[],\n"
        "    k027: f32[],\n"
        "    k028: f32[],\n"
        "    k029: f32[]})"
    ),
    "td_many_keys.quiet": (
        "TensorDict(batch_size=[2], fields={\n"
        "    k000: [],\n"
        "    k001: [],\n"
        "    k002: [],\n"
        "    k003: [],\n"
        "    k004: [],\n"
        "    k005: [],\n"
        "    k006: [],\n"
        "    k007: [],\n"
        "    k008: [],\n"
        "    k009: [],\n"
        "    k010: [],\n"
        "    k011: [],\n"
        "    k012: [],\n"
        "    k013: [],\n"
        "    k014: [],\n"
        "    k015: [],\n"
        "    k016: [],\n"
        "    k017: [],\n"
        "    k018: [],\n"
        "    k019: [],\n"
        "    k020: [],\n"
        "    k021: [],\n"
        "    k022: [],\n"
        "    k023: [],\n"
        "    k024: [],\n"
        "    k025: [],\n"
        "    k026: [],\n"
        "    k027: [],\n"
        "    k028: [],\n"
        "    k029: []})"
    ),
    "td_memmap.compact": (
        "TensorDict(batch_size=[3], device=cpu, fields={a: f32[4], n: {c: i64[]}})"
    ),
    "td_memmap.quiet": "TensorDict(batch_size=[3], fields={a: [4], n: {c: []}})",
    "td_meta.compact": "TensorDict(batch_size=[3], device=meta, fields={a: f32[4], n: {c: f32[]}})",
    "td_meta.quiet": "TensorDict(batch_size=[3], fields={a: [4], n: {c: []}})",
    "td_meta_leaves.compact": "TensorDict(batch_size=[3], fields={a: f32[4]@meta, b: f32[]})",
    "td_meta_leaves.quiet": "TensorDict(batch_size=[3], fields={a: [4]@meta, b: []})",
    "td_metadata.compact": "TensorDict(batch_size=[3], fields={a: f32[], m: MetaData})",
    "td_metadata.quiet": "TensorDict(batch_size=[3], fields={a: [], m: MetaData})",
    "td_names.compact": "TensorDict(batch_size=[2,3], fields={a: f32[4]})",
    "td_names.quiet": "TensorDict(batch_size=[2,3], fields={a: [4]})",
    "td_nested.compact": (
        "TensorDict(batch_size=[3], fields={\n"
        "    a: f32[4],\n"
        "    n: [2]{c: f32[5], e: {f: bool[]}}})"
    ),
    "td_nested.quiet": "TensorDict(batch_size=[3], fields={a: [4], n: [2]{c: [5], e: {f: []}}})",
    "td_nontensor.compact": "TensorDict(batch_size=[3], fields={a: f32[], m: str})",
    "td_nontensor.quiet": "TensorDict(batch_size=[3], fields={a: [], m: str})",
    "td_nontensor_stack.compact": (
        "TensorDict(batch_size=[3], fields={a: f32[], m: NonTensorStack})"
    ),
    "td_nontensor_stack.quiet": "TensorDict(batch_size=[3], fields={a: [], m: NonTensorStack})",
    "td_permuted.compact": "TensorDict(batch_size=[4,3], fields={a: f32[5]})",
    "td_permuted.quiet": "TensorDict(batch_size=[4,3], fields={a: [5]})",
    "td_shared.compact": "TensorDict(batch_size=[3], fields={a: f32[]})",
    "td_shared.quiet": "TensorDict(batch_size=[3], fields={a: []})",
    "td_unbatched.compact": "TensorDict(batch_size=[3], fields={a: f32[], u: f32[7,2]})",
    "td_unbatched.quiet": "TensorDict(batch_size=[3], fields={a: [], u: [7,2]})",
    "td_unsqueezed.compact": "TensorDict(batch_size=[1,3], fields={a: f32[4]})",
    "td_unsqueezed.quiet": "TensorDict(batch_size=[1,3], fields={a: [4]})",
    "td_values.compact": (
        "TensorDict(batch_size=[], fields={\n"
        "    a: f32[3],\n"
        "    f: f32[],\n"
        "    i: i64[],\n"
        "    l: i64[3],\n"
        "    o: NoneType,\n"
        "    s: str})"
    ),
    "td_values.quiet": (
        "TensorDict(batch_size=[], fields={\n"
        "    a: [3],\n"
        "    f: [],\n"
        "    i: [],\n"
        "    l: [3],\n"
        "    o: NoneType,\n"
        "    s: str})"
    ),
    "td_values_batch.compact": (
        "TensorDict(batch_size=[3], fields={\n"
        "    a: f32[],\n"
        "    l: NonTensorStack,\n"
        "    o: NoneType,\n"
        "    s: str})"
    ),
    "td_values_batch.quiet": (
        "TensorDict(batch_size=[3], fields={\n"
        "    a: [],\n"
        "    l: NonTensorStack,\n"
        "    o: NoneType,\n"
        "    s: str})"
    ),
    "td_wide.compact": (
        "TensorDict(batch_size=[5], fields={\n"
        "    key_number_0: f32[1],\n"
        "    key_number_1: f32[2],\n"
        "    key_number_2: f32[3],\n"
        "    key_number_3: f32[4],\n"
        "    key_number_4: f32[5],\n"
        "    key_number_5: f32[6],\n"
        "    key_number_6: f32[7],\n"
        "    key_number_7: f32[8]})"
    ),
    "td_wide.quiet": (
        "TensorDict(batch_size=[5], fields={\n"
        "    key_number_0: [1],\n"
        "    key_number_1: [2],\n"
        "    key_number_2: [3],\n"
        "    key_number_3: [4],\n"
        "    key_number_4: [5],\n"
        "    key_number_5: [6],\n"
        "    key_number_6: [7],\n"
        "    key_number_7: [8]})"
    ),
    "td_wide_nested.compact": (
        "TensorDict(batch_size=[5], fields={\n"
        "    outer: {\n"
        "        inner_key_0: f32[0],\n"
        "        inner_key_1: f32[1],\n"
        "        inner_key_2: f32[2],\n"
        "        inner_key_3: f32[3],\n"
        "        inner_key_4: f32[4],\n"
        "        inner_key_5: f32[5]},\n"
        "    z: f32[]})"
    ),
    "td_wide_nested.quiet": (
        "TensorDict(batch_size=[5], fields={\n"
        "    outer: {\n"
        "        inner_key_0: [0],\n"
        "        inner_key_1: [1],\n"
        "        inner_key_2: [2],\n"
        "        inner_key_3: [3],\n"
        "        inner_key_4: [4],\n"
        "        inner_key_5: [5]},\n"
        "    z: []})"
    ),
    "typed.compact": "S(batch_size=[5], fields={X: f32[4], eta: f32[3]})",
    "typed.quiet": "S(batch_size=[5], fields={X: [4], eta: [3]})",
}


@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_compact_repr_is_the_peers(case: str, tmp_path: Path) -> None:
    assert printed(tclass, case, tmp_path) == EXPECTED[case]


@pytest.mark.parametrize("case", sorted(EXPECTED))
def test_the_peer_prints_the_same_compact_repr(case: str, tmp_path: Path) -> None:
    peer = pytest.importorskip("tensordict", reason="the peer (tensordict) is not installed")
    if case in NOT_THE_PEERS:
        pytest.skip(NOT_THE_PEERS[case])
    assert printed(peer, case, tmp_path) == EXPECTED[case]


def test_every_kind_has_compact_and_quiet_view() -> None:
    assert set(EXPECTED) == {f"{kind}.{view}" for kind in KINDS for view in ("compact", "quiet")}


def test_containers_print_the_reprs_of_what_they_hold(tmp_path: Path) -> None:
    td = KINDS["td_flat"](tclass, tmp_path)
    record = KINDS["record"](tclass, tmp_path)
    shown = f"{[td, (record,)]} { {'k': td} }"
    assert shown == (
        f"[{EXPECTED['td_flat.compact']}, ({EXPECTED['record.compact']},)] "
        f"{{'k': {EXPECTED['td_flat.compact']}}}"
    )


def test_views_are_the_ones_pinned() -> None:
    assert set(VIEWS) == {"compact", "detailed", "quiet"}


def test_lazy_stack_dtype_and_ranks_as_the_peer() -> None:
    # the dtype the stacked tensor would have; [-1] where the members' dims differ in number
    long, floats = torch.zeros(3, dtype=torch.long), torch.zeros(3)
    members = [tclass.TensorDict(a=long), tclass.TensorDict(a=floats)]
    assert "a: f32[3]" in repr(tclass.lazy_stack(members))
    members[1] = tclass.TensorDict(a=torch.zeros(3, 2, dtype=torch.bool))
    assert "a: i64[-1]" in repr(tclass.lazy_stack(members))
