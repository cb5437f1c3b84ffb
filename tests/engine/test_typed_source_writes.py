"""In-place methods of a ``TypedTensorDict`` over another kind of collection (a lazy
stack, an HDF5 file): each writes into that collection as the same call on a view over
a TensorDict writes into it. The methods are read from the class (every public name
ending in ``_`` and every ``__i<op>__`` operator): a method added later without a recipe
here fails :func:`test_every_in_place_method_has_a_recipe`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import Tensor

import tclass
from tclass import TensorDict, TypedTensorDict

ROWS = 4


class Row(TypedTensorDict):
    a: Tensor
    n: TensorDict


def _data(kind: str) -> TensorDict:
    """Values in (0, 1) (every unary function is defined there), or integers."""
    if kind == "int":
        a = torch.arange(ROWS * 3).reshape(ROWS, 3)
        c = torch.arange(ROWS * 2).reshape(ROWS, 2) + 5
    else:
        a = torch.linspace(0.1, 0.9, ROWS * 3).reshape(ROWS, 3)
        c = torch.linspace(0.2, 0.7, ROWS * 2).reshape(ROWS, 2)
    return TensorDict(a=a, n=TensorDict(c=c, batch_size=[ROWS]), batch_size=[ROWS])


def _other(kind: str = "float", scale: float = 0.5) -> TensorDict:
    """An operand collection of the same keys (a plain TensorDict)."""
    return _data(kind).apply(lambda t: t * scale if t.is_floating_point() else t + 1)


def _source(where: str, kind: str, tmp_path: Path) -> Any:
    """The collection viewed: a TensorDict (the reference), a lazy stack of rows (each a
    TensorDict holding a nested one), an HDF5 file."""
    dense = _data(kind)
    if where == "tensordict":
        return dense
    if where == "lazy":
        return tclass.lazy_stack([dense[i].clone() for i in range(ROWS)])
    pytest.importorskip("h5py")
    return tclass.PersistentTensorDict.from_dict(dense, filename=tmp_path / f"{kind}.h5")


_Recipe = tuple[str, Callable[[], tuple[Any, ...]]]  # (the data's kind, the arguments)


def _floats(*args: Any) -> _Recipe:
    return "float", lambda: args


_UNARY = (
    "abs acos asin atan ceil cos cosh erf erfc exp expm1 floor frac lgamma log10 log1p log2 "
    "log neg reciprocal round rsqrt sigmoid sign sin sinh sqrt tan tanh trunc zero nan_to_num"
).split()

RECIPES: dict[str, _Recipe] = {
    **{f"{name}_": _floats() for name in _UNARY},
    "add_": _floats(1.5),
    "sub_": _floats(0.25),
    "mul_": _floats(2.0),
    "div_": _floats(4.0),
    "pow_": _floats(2.0),
    "clamp_": _floats(0.3, 0.6),
    "clamp_max_": _floats(0.5),
    "clamp_min_": _floats(0.5),
    "maximum_": ("float", lambda: (_other(scale=1.2),)),
    "minimum_": ("float", lambda: (_other(scale=0.8),)),
    "lerp_": ("float", lambda: (_other(scale=2.0), 0.25)),
    "addcdiv_": ("float", lambda: (_other(), _other(scale=2.0))),
    "addcmul_": ("float", lambda: (_other(), _other(scale=2.0))),
    "masked_fill_": _floats(torch.tensor([True, False, True, False]), 7.0),
    "copy_": ("float", lambda: (_other(scale=3.0),)),
    "copy_at_": ("float", lambda: (_other(scale=3.0)[1:3], slice(1, 3))),
    "fill_": _floats("a", 9.0),
    "set_": _floats(("n", "c"), torch.full((ROWS, 2), 4.0)),
    "set_at_": _floats("a", torch.full((3,), 6.0), 2),
    "update_": (
        "float",
        lambda: ({"a": torch.full((ROWS, 3), 2.0), "n": {"c": torch.ones(ROWS, 2)}},),
    ),
    "update_at_": ("float", lambda: ({"a": torch.full((3,), 5.0), ("n", "c"): torch.ones(2)}, 0)),
    "apply_": _floats(lambda t: t * 10),
    "__iadd__": _floats(1.0),
    "__isub__": _floats(1.0),
    "__imul__": _floats(3.0),
    "__itruediv__": _floats(2.0),
    "__ipow__": _floats(3),
    "__imod__": _floats(0.25),
    "__ifloordiv__": _floats(0.25),
    "__iand__": ("int", lambda: (6,)),
    "__ior__": ("int", lambda: (6,)),
    "__ixor__": ("int", lambda: (6,)),
    "requires_grad_": _floats(),
    "del_": _floats("a"),
    "rename_key_": _floats("a", "z"),
}

# The in-place methods that change the view's own metadata, not its entries' data (the
# same on a view over a TensorDict: the TensorDict keeps its own), or that need what
# this test has no use for; each with why.
NOT_WRITES = {
    "lock_": "the view's lock",
    "unlock_": "the view's lock",
    "rename_": "the view's dim names",
    "auto_batch_size_": "the view's batch size",
    "auto_device_": "the view's device",
    "clear_device_": "the view's device",
    "filter_empty_": "removes empty nested collections (none here)",
    "clear_refs_for_compile_": "changes nothing",
    "detach_": "nothing requires gradients here (requires_grad_ covers the leaves)",
    "share_memory_": "moves storage to shared memory (tested below)",
    "pin_memory_": "needs a CUDA device",
    "memmap_": "writes the collection to disk",
    "memmap_refresh_": "reloads from disk",
    "load_": "loads from disk",
    "load_memmap_": "loads from disk",
    "append_memmap_": "appends to a saved folder",
}


def _in_place_names() -> list[str]:
    """Every public in-place method of TypedTensorDict and every in-place operator."""
    names = []
    for name in dir(Row):
        if name.startswith("__i") and name.endswith("__"):
            if hasattr(Row, f"__{name[3:-2]}__") and name[3:-2] not in ("nit", "ter", "nvert"):
                names.append(name)
        elif name.endswith("_") and not name.startswith("_"):
            names.append(name)
    return sorted(names)


def test_every_in_place_method_has_a_recipe() -> None:
    names = _in_place_names()
    assert set(names) == set(RECIPES) | set(NOT_WRITES)
    assert not set(RECIPES) & set(NOT_WRITES)


def _state(source: Any) -> dict[Any, Any]:
    """What an in-place method may change in the collection: its keys, its tensors'
    values (a dense copy) and whether each requires gradients."""
    dense = source.to_tensordict()
    out: dict[Any, Any] = {}
    for key in sorted(dense.keys(True, True), key=str):
        value = dense.get(key)
        out[key] = (value.detach().clone(), value.requires_grad)
    grads = [leaf.requires_grad for leaf in getattr(source, "_tensor_leaves", list)()]
    out["requires grad"] = all(grads) if any(grads) else False
    return out


def _call(view: Any, name: str, args: tuple[Any, ...]) -> Any:
    return getattr(view, name)(*args)


@pytest.mark.parametrize("where", ["lazy", "h5"])
@pytest.mark.parametrize("name", sorted(RECIPES))
def test_in_place_method_writes_into_the_source(name: str, where: str, tmp_path: Path) -> None:
    kind, make_args = RECIPES[name]
    if where == "h5" and name == "requires_grad_":
        pytest.skip("a file's arrays are read as copies: nothing to require gradients")
    reference = _source("tensordict", kind, tmp_path)
    result = _call(Row.from_tensordict(reference), name, make_args())
    assert isinstance(result, Row)
    source = _source(where, kind, tmp_path)
    view = Row.from_tensordict(source)
    assert _call(view, name, make_args()) is view
    expected, got = _state(reference), _state(source)
    assert got.keys() == expected.keys()
    for key, want in expected.items():
        if key == "requires grad":
            assert got[key] == want, key
        else:
            torch.testing.assert_close(got[key][0], want[0], msg=f"{name} on {where}: {key}")


def test_nested_view_writes_into_the_lazy_stack_members(tmp_path: Path) -> None:
    """The members' own nested TensorDicts are written (the lazy stack's read of a
    nested key is a view of theirs)."""
    stack = _source("lazy", "float", tmp_path)
    members = [member.get("n") for member in stack.tensordicts]
    view = Row.from_tensordict(stack)
    view.mul_(0).add_(1)
    view.set_at_(("n", "c"), torch.full((2,), 3.0), 1)
    view.apply_(lambda t: t * 2)
    expected = [[2.0, 2.0], [6.0, 6.0], [2.0, 2.0], [2.0, 2.0]]
    assert [member.get("c").tolist() for member in members] == expected


def test_share_memory_moves_the_members_tensors(tmp_path: Path) -> None:
    stack = _source("lazy", "float", tmp_path)
    Row.from_tensordict(stack).share_memory_()
    assert all(member.get("a").is_shared() for member in stack.tensordicts)


def test_view_nested_in_a_tensordict_is_written_through(tmp_path: Path) -> None:
    """An in-place method of a TensorDict holding such a view reaches the view's source
    (the walk asks the view for the tensors to write into)."""
    stack = _source("lazy", "float", tmp_path)
    outer = TensorDict(row=Row.from_tensordict(stack), batch_size=[ROWS])
    outer.zero_()
    outer += 2
    outer.apply_(lambda t: t.mul(3))
    assert all(member.get("a").eq(6).all() for member in stack.tensordicts)
    assert all(member.get(("n", "c")).eq(6).all() for member in stack.tensordicts)
