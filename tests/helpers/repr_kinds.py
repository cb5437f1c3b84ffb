"""Every kind of collection a user holds, built by either library (``lib``: tclass or the
peer), for the repr tests (tests/engine/test_repr_kinds*.py): flat, nested, empty, named,
locked, meta, Python values, MetaData, NonTensorData/Stack, UnbatchedTensor, views,
consolidated, memory-mapped, HDF5, params, typed, lazy stacks (dim 0 and 1, nested,
ragged), records (each option, None and Optional fields, Python values, stacked, indexed).
What they print holds no path and no address.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import torch

Builder = Callable[[ModuleType, Path], Any]


def _t() -> torch.Tensor:
    return torch.arange(12.0).reshape(3, 4)


def _nested(lib: ModuleType) -> Any:
    inner = lib.TensorDict(f=torch.ones(3, 2, dtype=torch.bool), batch_size=[3, 2])
    middle = lib.TensorDict(c=torch.zeros(3, 2, 5), e=inner, batch_size=[3, 2])
    return lib.TensorDict(a=_t(), n=middle, batch_size=[3])


def _record(lib: ModuleType, **fields: Any) -> type:
    """A ``@tensorclass`` record class named R with ``fields`` (name -> annotation), options
    from ``fields.pop('options')``."""
    options = fields.pop("options", {})
    defaults = fields.pop("defaults", {})
    namespace: dict[str, Any] = {"__annotations__": fields, **defaults}
    cls = type("R", (), namespace)
    return lib.tensorclass(**options)(cls) if options else lib.tensorclass(cls)


def _inner_record(lib: ModuleType) -> Any:
    inner = lib.tensorclass(type("In", (), {"__annotations__": {"c": torch.Tensor}}))
    outer = _record(lib, x=torch.Tensor, inner=inner)
    return outer(
        x=torch.zeros(3, 4), inner=inner(c=torch.zeros(3, 2, 5), batch_size=[3, 2]), batch_size=[3]
    )


def _stacked(lib: ModuleType, cls: type) -> Any:
    return torch.stack([cls(x=torch.zeros(3), s=s, batch_size=[3]) for s in "ab"])


def _lazy_records(lib: ModuleType, cls: type) -> Any:
    return lib.lazy_stack([cls(x=torch.zeros(n), batch_size=[]) for n in (2, 4)])


def _shared_unbatched(lib: ModuleType, shared: Any) -> Any:
    """A lazy stack whose members share one UnbatchedTensor (the peer warns otherwise)."""
    members = [lib.TensorDict(a=torch.zeros(2), u=shared, batch_size=[2]) for _ in range(2)]
    return lib.lazy_stack(members)


KINDS: dict[str, Builder] = {
    "td_flat": lambda lib, p: lib.TensorDict(
        a=_t(), b=torch.ones(3, dtype=torch.long), batch_size=[3]
    ),
    "td_nested": lambda lib, p: _nested(lib),
    "td_empty": lambda lib, p: lib.TensorDict(),
    "td_empty_batch": lambda lib, p: lib.TensorDict(batch_size=[4, 2]),
    "td_empty_nested": lambda lib, p: lib.TensorDict(x=lib.TensorDict()),
    "td_batch_dims": lambda lib, p: lib.TensorDict(
        a=torch.zeros(2, 3, 4, 5), b=torch.zeros(2, 3, 4, dtype=torch.float64), batch_size=[2, 3, 4]
    ),
    "td_names": lambda lib, p: lib.TensorDict(
        a=torch.zeros(2, 3, 4), batch_size=[2, 3], names=["t", "env"]
    ),
    "td_locked": lambda lib, p: lib.TensorDict(
        a=_t(), n=lib.TensorDict(c=torch.ones(3)), batch_size=[3]
    ).lock_(),
    "td_meta": lambda lib, p: lib.TensorDict(
        a=torch.zeros(3, 4), n=lib.TensorDict(c=torch.zeros(3)), batch_size=[3], device="meta"
    ),
    "td_meta_leaves": lambda lib, p: lib.TensorDict(
        a=torch.empty(3, 4, device="meta"), b=torch.zeros(3), batch_size=[3]
    ),
    "td_cpu": lambda lib, p: lib.TensorDict(
        a=_t(), n=lib.TensorDict(c=torch.ones(3)), batch_size=[3], device="cpu"
    ),
    "td_values": lambda lib, p: lib.TensorDict(
        a=torch.zeros(3), s="hello", i=4, f=1.5, l=[1, 2, 3], o=None
    ),
    "td_values_batch": lambda lib, p: lib.TensorDict(
        a=torch.zeros(3), s="hello", o=None, l=["a", "b", "c"], batch_size=[3]
    ),
    "td_metadata": lambda lib, p: lib.TensorDict(
        a=torch.zeros(3), m=lib.MetaData("info"), batch_size=[3]
    ),
    "td_nontensor": lambda lib, p: lib.TensorDict(
        a=torch.zeros(3), m=lib.NonTensorData("x", batch_size=[3]), batch_size=[3]
    ),
    "td_nontensor_stack": lambda lib, p: lib.TensorDict(
        a=torch.zeros(3), m=lib.NonTensorStack("x", "y", "z"), batch_size=[3]
    ),
    "td_unbatched": lambda lib, p: lib.TensorDict(
        a=torch.zeros(3), u=lib.UnbatchedTensor(torch.ones(7, 2)), batch_size=[3]
    ),
    "td_dtypes": lambda lib, p: lib.TensorDict(
        {
            f"k{i}": torch.zeros(2, dtype=d)
            for i, d in enumerate(
                [
                    torch.float16,
                    torch.bfloat16,
                    torch.complex64,
                    torch.uint8,
                    torch.int8,
                    torch.int16,
                    torch.int32,
                    torch.float64,
                    torch.bool,
                    torch.float8_e4m3fn,
                    torch.uint16,
                ]
            )
        },
        batch_size=[2],
    ),
    "td_wide": lambda lib, p: lib.TensorDict(
        {f"key_number_{i}": torch.zeros(5, i + 1) for i in range(8)}, batch_size=[5]
    ),
    "td_wide_nested": lambda lib, p: lib.TensorDict(
        outer=lib.TensorDict(
            {f"inner_key_{i}": torch.zeros(5, i) for i in range(6)}, batch_size=[5]
        ),
        z=torch.zeros(5),
        batch_size=[5],
    ),
    "td_big_batch": lambda lib, p: lib.TensorDict(
        a=torch.zeros(100000, 3), b=torch.zeros(100000, dtype=torch.int32), batch_size=[100000]
    ),
    "td_many_keys": lambda lib, p: lib.TensorDict(
        {f"k{i:03d}": torch.zeros(2) for i in range(30)}, batch_size=[2]
    ),
    "td_grad": lambda lib, p: lib.TensorDict(a=torch.zeros(3, requires_grad=True), batch_size=[3]),
    "td_shared": lambda lib, p: lib.TensorDict(a=torch.zeros(3), batch_size=[3]).share_memory_(),
    "td_index": lambda lib, p: lib.TensorDict(
        a=_t(), n=lib.TensorDict(c=torch.ones(3, 2)), batch_size=[3]
    )[0],
    "td_index_slice": lambda lib, p: lib.TensorDict(a=torch.zeros(3, 4, 5), batch_size=[3, 4])[
        :, 1:3
    ],
    "td_permuted": lambda lib, p: lib.TensorDict(a=torch.zeros(3, 4, 5), batch_size=[3, 4]).permute(
        1, 0
    ),
    "td_unsqueezed": lambda lib, p: lib.TensorDict(a=torch.zeros(3, 4), batch_size=[3]).unsqueeze(
        0
    ),
    "td_consolidated": lambda lib, p: lib.TensorDict(
        a=_t(), s="v", n=lib.TensorDict(c=torch.ones(3, dtype=torch.long)), batch_size=[3]
    ).consolidate(),
    "td_memmap": lambda lib, p: lib.TensorDict(
        a=_t(), n=lib.TensorDict(c=torch.ones(3, dtype=torch.long)), batch_size=[3]
    ).memmap(p / "m"),
    "td_from_module": lambda lib, p: lib.TensorDict.from_module(
        torch.nn.Sequential(torch.nn.Linear(2, 3), torch.nn.ReLU(), torch.nn.Linear(3, 1))
    ),
    "h5": lambda lib, p: lib.PersistentTensorDict.from_dict(
        lib.TensorDict(a=_t(), n=lib.TensorDict(c=torch.ones(3, dtype=torch.long)), batch_size=[3]),
        filename=p / "f.h5",
    ),
    "params": lambda lib, p: lib.TensorDictParams(
        lib.TensorDict(a=_t(), n=lib.TensorDict(c=torch.ones(3)), batch_size=[3])
    ),
    "typed": lambda lib, p: type(
        "S", (lib.TypedTensorDict,), {"__annotations__": {"eta": torch.Tensor, "X": torch.Tensor}}
    )(eta=torch.zeros(5, 3), X=torch.zeros(5, 4), batch_size=[5]),
    "lazy_dim0": lambda lib, p: lib.lazy_stack(
        [lib.TensorDict(a=torch.zeros(3), b=lib.TensorDict(c=torch.ones(3, 2))) for _ in range(2)]
    ),
    "lazy_dim1": lambda lib, p: lib.lazy_stack(
        [lib.TensorDict(a=torch.zeros(3, 4), batch_size=[3]) for _ in range(2)], dim=1
    ),
    "lazy_ragged": lambda lib, p: lib.lazy_stack(
        [
            lib.TensorDict(a=torch.zeros(3), n=lib.TensorDict(c=torch.zeros(i + 1, 2)))
            for i in range(2)
        ]
    ),
    "lazy_ragged_batch": lambda lib, p: lib.lazy_stack(
        [lib.TensorDict(a=torch.zeros(i + 2, 3), batch_size=[i + 2]) for i in range(3)]
    ),
    "lazy_nested": lambda lib, p: lib.lazy_stack(
        [lib.lazy_stack([lib.TensorDict(a=torch.zeros(2)) for _ in range(3)]) for _ in range(2)]
    ),
    "lazy_exclusive": lambda lib, p: lib.lazy_stack(
        [
            lib.TensorDict(a=torch.zeros(3), b=torch.zeros(1)),
            lib.TensorDict(a=torch.zeros(3), c=torch.zeros(2, dtype=torch.long)),
        ]
    ),
    "lazy_dtypes_promoted": lambda lib, p: lib.lazy_stack(
        [lib.TensorDict(a=torch.zeros(3, dtype=torch.long)), lib.TensorDict(a=torch.zeros(3))]
    ),
    "lazy_ranks_differ": lambda lib, p: lib.lazy_stack(
        [
            lib.TensorDict(a=torch.zeros(3, dtype=torch.int32)),
            lib.TensorDict(a=torch.zeros(3, 2, dtype=torch.bool)),
        ]
    ),
    "lazy_ranks_differ_dim1": lambda lib, p: lib.lazy_stack(
        [
            lib.TensorDict(a=torch.zeros(2, 3), batch_size=[2]),
            lib.TensorDict(a=torch.zeros(2), batch_size=[2]),
        ],
        dim=1,
    ),
    "lazy_values": lambda lib, p: lib.lazy_stack(
        [lib.TensorDict(a=torch.zeros(3), s="x"), lib.TensorDict(a=torch.zeros(3), s="y")]
    ),
    "lazy_index": lambda lib, p: lib.lazy_stack(
        [lib.TensorDict(a=torch.zeros(3, 4), batch_size=[3]) for _ in range(2)]
    )[:, 1],
    "lazy_devices": lambda lib, p: lib.lazy_stack(
        [lib.TensorDict(a=torch.zeros(2)), lib.TensorDict(a=torch.zeros(2, device="meta"))]
    ),
    "lazy_meta": lambda lib, p: lib.lazy_stack(
        [lib.TensorDict(a=torch.zeros(2, device="meta")) for _ in range(2)]
    ),
    "lazy_unbatched": lambda lib, p: _shared_unbatched(lib, lib.UnbatchedTensor(torch.ones(4))),
    "h5_values": lambda lib, p: lib.PersistentTensorDict.from_dict(
        lib.TensorDict(
            a=torch.zeros(2),
            s="x",
            t=lib.NonTensorStack("p", "q"),
            n=lib.TensorDict(u="in", batch_size=[2]),
            batch_size=[2],
        ),
        filename=p / "v.h5",
    ),
    "record_shadow_batch_size_device": lambda lib, p: _record(
        lib, x=torch.Tensor, batch_size=torch.Tensor, device=str, options={"shadow": True}
    )(x=torch.zeros(2), batch_size=torch.tensor(5), device="gpu0"),
    "nontensor": lambda lib, p: lib.NonTensorData("hello", batch_size=[3]),
    "nontensor_stack": lambda lib, p: lib.NonTensorStack("a", "b", "c"),
    "nontensor_stack_nested": lambda lib, p: lib.NonTensorStack(
        lib.NonTensorStack("a", "b"), lib.NonTensorStack("c", "d")
    ),
    "metadata": lambda lib, p: lib.MetaData({"k": 1}),
    "record": lambda lib, p: _record(lib, x=torch.Tensor, y=torch.Tensor)(
        x=torch.zeros(3, 4), y=torch.ones(3, dtype=torch.long), batch_size=[3]
    ),
    "record_class": lambda lib, p: type(
        "R", (lib.TensorClass,), {"__annotations__": {"x": torch.Tensor}}
    )(x=torch.zeros(3, 4), batch_size=[3]),
    "record_nested": lambda lib, p: _inner_record(lib),
    "record_values": lambda lib, p: _record(lib, x=torch.Tensor, s=str, i=int)(
        x=torch.zeros(3), s="abc", i=7, batch_size=[3]
    ),
    "record_none": lambda lib, p: _record(
        lib, x=torch.Tensor, y=torch.Tensor, defaults={"y": None}
    )(x=torch.zeros(3), batch_size=[3]),
    "record_optional": lambda lib, p: _record(
        lib, x=torch.Tensor, y=torch.Tensor | None, s=str | None, defaults={"y": None, "s": None}
    )(x=torch.zeros(3), batch_size=[3]),
    "record_autocast": lambda lib, p: _record(
        lib, x=torch.Tensor, i=int, options={"autocast": True}
    )(x=torch.zeros(3), i=2, batch_size=[3]),
    "record_nocast": lambda lib, p: _record(lib, x=torch.Tensor, i=int, options={"nocast": True})(
        x=torch.zeros(3), i=2, batch_size=[3]
    ),
    "record_tensor_only": lambda lib, p: _record(
        lib, x=torch.Tensor, y=torch.Tensor, options={"tensor_only": True}
    )(x=torch.zeros(3), y=torch.zeros(3, 2), batch_size=[3]),
    "record_frozen": lambda lib, p: _record(lib, x=torch.Tensor, options={"frozen": True})(
        x=torch.zeros(3), batch_size=[3]
    ),
    "record_shadow": lambda lib, p: _record(
        lib, x=torch.Tensor, names=str, options={"shadow": True}
    )(x=torch.zeros(3), names="n", batch_size=[3]),
    "record_device": lambda lib, p: _record(lib, x=torch.Tensor)(
        x=torch.zeros(3), batch_size=[3], device="cpu"
    ),
    "record_metadata": lambda lib, p: _record(lib, x=torch.Tensor, m=Any)(
        x=torch.zeros(3), m=lib.MetaData("w"), batch_size=[3]
    ),
    "record_unbatched": lambda lib, p: _record(lib, x=torch.Tensor, u=torch.Tensor)(
        x=torch.zeros(3), u=lib.UnbatchedTensor(torch.ones(5)), batch_size=[3]
    ),
    "record_repr_false": lambda lib, p: _record(
        lib,
        x=torch.Tensor,
        y=torch.Tensor,
        defaults={"y": dataclasses.field(default=None, repr=False)},
    )(x=torch.zeros(3), y=torch.zeros(3), batch_size=[3]),
    "record_stacked": lambda lib, p: _stacked(lib, _record(lib, x=torch.Tensor, s=str)),
    "record_lazy_ragged": lambda lib, p: _lazy_records(lib, _record(lib, x=torch.Tensor)),
    "record_index": lambda lib, p: _record(lib, x=torch.Tensor, s=str)(
        x=torch.zeros(3, 2), s="q", batch_size=[3]
    )[1],
    "record_consolidated": lambda lib, p: _record(lib, x=torch.Tensor, s=str)(
        x=torch.zeros(3, 2), s="q", batch_size=[3]
    ).consolidate(),
    "record_in_td": lambda lib, p: lib.TensorDict(
        r=_record(lib, x=torch.Tensor)(x=torch.zeros(3, 2), batch_size=[3]),
        a=torch.zeros(3),
        batch_size=[3],
    ),
}


# kind.view -> why the peer prints something else there (README "Printed text")
NOT_THE_PEERS: dict[str, str] = {
    "h5_values.detailed": "the peer reads an HDF5 string as bytes (b'x'), with a FutureWarning",
    "lazy_devices.detailed": "the peer raises: it stacks the members' tensors on cpu and meta",
}

VIEWS: dict[str, dict[str, Any]] = {
    "compact": {},
    "detailed": {"compact": False},
    "quiet": {"verbose": False},
}


def printed(lib: ModuleType, case: str, tmp_path: Path) -> str:
    """The repr of ``case`` (``kind.view``) built by ``lib``; str and f-strings give the same."""
    kind, view = case.split(".")
    torch.manual_seed(0)
    value = KINDS[kind](lib, tmp_path)
    with lib.set_printoptions(**VIEWS[view]):
        text = repr(value)
        assert str(value) == text and f"{value}" == text
    return text
