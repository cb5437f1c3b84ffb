"""The all-or-nothing check of in-place math remembers the metadata it passed
(``tclass/_base/implemented/_inplace.py``): a call on tensors like those of an earlier
call that passed is not read again, and anything that changed since (a dtype, a shape, a
stride, ``requires_grad``, a number's class, even a change made in place) is checked in
full, so that a refused write still leaves every tensor as it was.

Each test runs the operation once where it passes (so that its metadata is remembered),
changes one entry (the last in walk order, so that the others would be written first),
and runs it again.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch.utils._python_dispatch import TorchDispatchMode

import tclass
from tclass import TensorClass, TensorDict, errors
from tclass._base.implemented import _inplace
from tclass._base.implemented._leaf_walk import writing_out_of

from strategies import equal, leaf_items  # noqa: E402


def _tree() -> TensorDict:
    """Nested parameters, the last entry in walk order ``("n", "last")``."""
    return TensorDict(
        {"a": torch.ones(3, 4), "n": {"x": torch.ones(3, 2), "last": torch.ones(3, 5)}}, [3]
    )


def _snapshot(collection: Any) -> list[torch.Tensor]:
    if isinstance(collection, tclass.LazyStackedTensorDict):
        return [leaf.clone() for m in collection.tensordicts for _, leaf in leaf_items(m)]
    return [leaf.clone() for _, leaf in leaf_items(collection)]


def _refused_unchanged(call: Callable[[], Any], collection: Any, match: str) -> None:
    before = _snapshot(collection)
    with pytest.raises(errors.InPlaceWriteError, match=match):
        call()
    assert all(map(equal, _snapshot(collection), before))


def test_torch_guard_is_used_here() -> None:
    """On this torch the guard behaves as the check needs (else every call is read in
    full: correct, but the speed the algebra benchmark counts on is lost)."""
    assert _inplace._check_guards() is True


def test_the_kernels_alone_would_leave_a_collection_half_written() -> None:
    """Why the check exists: torch's fused kernel on CPU checks shapes and dtypes tensor
    by tensor as it writes (it checks autograd's leaves before writing any)."""
    leaves = [torch.zeros(3), torch.zeros(2)]
    with pytest.raises(RuntimeError):
        torch._foreach_add_(leaves, [torch.ones(3), torch.ones(3)])
    assert torch.equal(leaves[0], torch.ones(3))  # the first was written
    leaves = [torch.zeros(3), torch.zeros(3, dtype=torch.int64)]
    with pytest.raises(RuntimeError):
        torch._foreach_add_(leaves, [torch.ones(3), torch.ones(3)], alpha=0.5)
    assert torch.equal(leaves[0], torch.full((3,), 0.5))


def test_a_dtype_changed_after_a_passing_call_is_refused() -> None:
    td, other = _tree(), _tree()
    assert td.add_(other, alpha=0.5) is td  # remembered
    td["n", "last"] = torch.ones(3, 5, dtype=torch.int64)
    _refused_unchanged(lambda: td.add_(other, alpha=0.5), td, r"\('n', 'last'\)")
    td["n", "last"] = torch.ones(3, 5)
    other["n", "last"] = torch.ones(3, 5, dtype=torch.complex64)  # the operand's dtype
    _refused_unchanged(lambda: td.add_(other, alpha=0.5), td, r"\('n', 'last'\)")


@pytest.mark.parametrize(
    "change",
    [
        lambda t: t.resize_(3, 2),  # in place: the same tensor object
        lambda t: t.unsqueeze_(-1),
        lambda t: t.set_(torch.ones(3, 1, 2)),
    ],
    ids=["resize_", "unsqueeze_", "set_"],
)
def test_a_shape_changed_in_place_after_a_passing_call_is_refused(
    change: Callable[[torch.Tensor], Any],
) -> None:
    """The operand's entry changes shape in place (the collection holds the same tensor
    object, whose metadata the guard reads again)."""
    td, other = _tree(), _tree()
    assert td.mul_(other) is td
    change(other["n", "last"])
    _refused_unchanged(lambda: td.mul_(other), td, r"\('n', 'last'\) of shape")


def test_a_written_tensor_reshaped_in_place_is_refused_against_a_collection() -> None:
    td, other = _tree(), _tree()
    td.sub_(other)
    td["n", "last"].resize_(3, 6)  # [3, 5] of the operand no longer fits
    _refused_unchanged(lambda: td.sub_(other), td, r"\('n', 'last'\) of shape \[3, 5\]")


def test_number_operands_read_each_dtype_every_time() -> None:
    """With no collection operand nothing is remembered (each tensor's dtype is read,
    no shape): a shape changed decides nothing, a dtype changed is refused."""
    td = _tree()
    td.mul_(2.0)
    td["n", "last"].resize_(3, 7)
    td["a"] = torch.ones(3, 4, dtype=torch.float64)  # a dtype that changed: checked again
    assert td.mul_(2.0) is td and torch.equal(td["n", "x"], torch.full((3, 2), 4.0))
    assert td["n", "last"].shape == (3, 7) and torch.equal(
        td["a"], torch.full((3, 4), 2.0, dtype=torch.float64)
    )
    td["n", "last"] = torch.ones(3, 5, dtype=torch.bool)
    _refused_unchanged(lambda: td.mul_(2.0), td, r"\('n', 'last'\)")


def test_strides_that_differ_still_pass_and_compute_the_same() -> None:
    td, other = _tree(), _tree()
    td.add_(other)
    other["n", "last"] = torch.full((5, 3), 2.0).t()  # same shape, other strides
    td.add_(other)
    assert torch.equal(td["n", "last"], torch.full((3, 5), 4.0))
    assert torch.equal(td["a"], torch.full((3, 4), 3.0))


def test_requires_grad_set_after_a_passing_call_is_refused() -> None:
    td, other = _tree(), _tree()
    td.add_(other)
    td["n", "last"].requires_grad_()
    _refused_unchanged(lambda: td.add_(other), td, r"leaf tensor that requires grad")
    with torch.no_grad():  # where autograd does not record, it is written
        assert td.add_(other) is td
    assert torch.equal(td["a"], torch.full((3, 4), 3.0))


def test_a_leaf_requiring_grad_is_refused_after_a_non_leaf_passed() -> None:
    """Being a leaf is no metadata the guard reads: with tensors requiring grad, nothing
    is remembered, and each call is checked in full."""
    weight = torch.ones(3, 5, requires_grad=True)
    td, other = _tree(), _tree()
    td["n", "last"] = weight * 1  # requires grad, not a leaf: autograd takes in-place math
    assert td.add_(other) is td
    td["n", "last"] = weight  # the same metadata, a leaf
    _refused_unchanged(lambda: td.add_(other), td, r"\('n', 'last'\).*requires grad")


def test_a_number_of_another_class_is_checked_again() -> None:
    """A clamp bound that float16 holds passes; one it does not is refused, though the
    tensors are the same (the numbers' classes are part of what is remembered)."""
    td = TensorDict({"a": torch.ones(3), "h": torch.ones(3, dtype=torch.float16)}, [3])
    low = td.clone()  # a collection bound: the call is remembered with the number's class
    assert td.clamp_(low, 1e3) is td
    _refused_unchanged(lambda: td.clamp_(low, 1e5), td, r"'h'")
    brain = TensorDict({"a": torch.ones(3), "b": torch.ones(3, dtype=torch.bfloat16)}, [3])
    low = brain.clone()
    assert brain.clamp_(low, 3e38) is brain  # bfloat16 holds up to 3.39e38
    _refused_unchanged(lambda: brain.clamp_(low, 3.4e38), brain, r"'b'")


def test_a_float_key_kept_from_an_earlier_call_is_the_one_worked_out_afresh() -> None:
    """The key of each float met is kept: the same value (and -0.0 beside 0.0) gives the
    key worked out afresh, and a value seen under one dtype is still refused under one
    that cannot hold it."""
    _inplace._check_guards()
    for value in (1e3, 1e5, -2.5, 0.0, -0.0, 3.4e38, 1e-50):
        _inplace._FLOAT_KEYS.pop(value, None)
        fresh = _inplace._plain_key(value)
        assert _inplace._plain_key(value) == fresh
        limits = [abs(value) <= m for m in _inplace._FLOAT_LIMITS]
        assert fresh == (float, (value > 0) - (value < 0), *limits)
    assert _inplace._plain_key(-0.0) == _inplace._plain_key(0.0)
    wide = TensorDict({"a": torch.ones(3)}, [3])
    assert wide.clamp_(wide.clone(), 1e5) is wide  # 1e5's key kept, float32 holds it
    td = TensorDict({"a": torch.ones(3), "h": torch.ones(3, dtype=torch.float16)}, [3])
    _refused_unchanged(lambda: td.clamp_(td.clone(), 1e5), td, r"'h'")


def test_an_entry_that_is_no_longer_a_plain_tensor_is_checked_again() -> None:
    td, other = _tree(), _tree()
    td.add_(other)
    td["n", "last"] = torch.nn.Parameter(torch.ones(3, 5))  # a subclass, requiring grad
    _refused_unchanged(lambda: td.add_(other), td, r"requires grad")


def test_a_lazy_stack_member_changed_after_a_passing_call_is_refused() -> None:
    members = [TensorDict({"a": torch.ones(4, i + 1), "b": torch.ones(4)}, [4]) for i in range(3)]
    lazy = tclass.lazy_stack(members)
    other = tclass.lazy_stack([member.clone() for member in members])
    assert operator.iadd(lazy, other) is lazy
    members[2]["b"] = torch.ones(4, dtype=torch.bool)
    _refused_unchanged(lambda: operator.iadd(lazy, other), lazy, r"'b'")


class _Pair(TensorClass):
    obs: torch.Tensor
    flag: torch.Tensor | None = None
    env: str = "pong"


def test_a_record_with_a_field_left_none_then_set() -> None:
    """A record's tensors as they stand: a field set later is checked with the rest."""
    rec = _Pair(obs=torch.ones(3, 2), batch_size=[3])
    other = _Pair(obs=torch.full((3, 2), 2.0), batch_size=[3])
    assert rec.mul_(other) is rec and rec.flag is None and rec.env == "pong"
    rec.flag = torch.ones(3, dtype=torch.int64)
    other.flag = torch.full((3,), 2.5)  # int64 * float: not in place
    _refused_unchanged(lambda: rec.mul_(other), rec, r"'flag'")
    assert torch.equal(rec.obs, torch.full((3, 2), 2.0))


def test_without_the_guard_every_call_is_checked_in_full(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Where torch has no such guard, the same refusals, nothing remembered."""
    monkeypatch.setattr(_inplace, "_GUARDS_WORK", False)
    monkeypatch.setattr(_inplace, "_PASSED", {})
    td, other = _tree(), _tree()
    assert td.add_(other) is td
    td["n", "last"] = torch.ones(3, 5, dtype=torch.bool)
    _refused_unchanged(lambda: td.add_(other), td, r"\('n', 'last'\)")
    assert _inplace._PASSED == {}


class _Passing(TorchDispatchMode):
    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        return func(*args, **(kwargs or {}))


def test_under_a_dispatch_mode_nothing_is_remembered(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_inplace, "_PASSED", {})
    td = TensorDict({"a": torch.ones(3), "b": torch.ones(3, dtype=torch.float64)}, [3])
    with _Passing():
        td.mul_(td.clone())
    assert _inplace._PASSED == {}
    assert torch.equal(td["b"], torch.ones(3, dtype=torch.float64))
    td.mul_(td.clone())  # outside the mode: remembered
    assert len(_inplace._PASSED) == 1


# --- a 0-d tensor operand into 0-d tensors (program 9,676 of math) ----------------------


@pytest.mark.parametrize(("op", "expected"), [("minimum_", 8), ("maximum_", 255), ("add_", 7)])
def test_a_0d_operand_reads_as_the_tensors_dtype_in_a_0d_tensor_as_in_others(
    op: str, expected: int
) -> None:
    # the peer's values: -1 read as a uint8 (255) by every tensor, 0-d or not (torch alone
    # would let the 0-d operand decide the dtype against a 0-d tensor: minimum -1 -> 255;
    # the clamps follow torch: see test_a_0d_bound_clamps_a_0d_tensor_as_torch)
    td = TensorDict(
        {"a": torch.tensor(8, dtype=torch.uint8), "b": torch.tensor([8], dtype=torch.uint8)}, []
    )
    assert getattr(td, op)(torch.tensor(-1)) is td
    assert td["a"].dtype == td["b"].dtype == torch.uint8
    assert td["a"].item() == td["b"].item() == expected


def test_a_0d_operand_of_a_higher_kind_still_decides_the_dtype() -> None:
    td = TensorDict({"a": torch.tensor(8, dtype=torch.int32), "f": torch.tensor(2.0)}, [])
    with pytest.raises(errors.InPlaceWriteError):  # float into int32: torch refuses both
        td.minimum_(torch.tensor(2.5))
    assert td["a"].item() == 8 and td["f"].item() == 2.0  # nothing written
    td.exclude("a").minimum_(torch.tensor(1.5, dtype=torch.float64))
    assert td["f"].item() == 1.5 and td["f"].dtype == torch.float32


@pytest.mark.parametrize(
    ("op", "bounds", "expected"),
    [
        ("clamp_min_", (300,), 44),
        ("clamp_", (300, 400), 44),
        ("clamp_", (300,), 44),
        ("maximum_", (300,), 44),
        ("clamp_max_", (-300,), 5),
        ("clamp_", (None, -300), 5),
        ("minimum_", (-300,), 5),
    ],
)
def test_a_bound_the_dtype_cannot_hold_a_0d_tensor_wraps_a_number_raises(
    op: str, bounds: tuple[int | None, ...], expected: int
) -> None:
    """As torch writes ``t.clamp_min_(torch.tensor(300))`` into a uint8 tensor with dims
    (300 read as a uint8: 44), into 0-d and other tensors alike; the number ``300`` is
    torch's overflow error (an ``InPlaceWriteError``, a ``RuntimeError``), nothing
    written. The peer reads a 0-d tensor bound as the number and raises for both."""
    td = TensorDict(
        {
            "a": torch.tensor(5, dtype=torch.uint8),
            "b": torch.tensor([5], dtype=torch.uint8),
            "f": torch.tensor([5.0]),
        },
        [],
    )
    reference = torch.tensor([5], dtype=torch.uint8)
    as_tensors = [None if b is None else torch.tensor(b) for b in bounds]
    if op in ("maximum_", "minimum_"):
        reference.copy_(getattr(torch, op[:-1])(reference, as_tensors[0]))
    else:
        getattr(reference, op)(*as_tensors)
    assert reference.item() == expected  # torch's own value
    with pytest.raises(errors.InPlaceWriteError, match="overflow") as info:
        getattr(td, op)(*bounds)
    assert isinstance(info.value, RuntimeError)
    assert td["a"].item() == td["b"].item() == 5 and td["f"].item() == 5.0  # nothing written
    zero_d = getattr(torch.tensor(5, dtype=torch.uint8), op[:-1])(*as_tensors)
    assert getattr(td, op)(*as_tensors) is td
    assert td["b"].item() == expected
    # a 0-d tensor: torch's 0-d promotion for the clamps (clamp_max_(-300): 212, as
    # t.clamp_max_(torch.tensor(-300)) gives), the others read it as with dims (the peer's)
    assert td["a"].item() == (zero_d.to(torch.uint8).item() if "clamp" in op else expected)
    assert td["f"].item() == float(bounds[0] if bounds[0] is not None else bounds[1])


def test_pow_of_an_int_entry_by_minus_one_as_torch() -> None:
    """torch refuses the number ``-1`` as an integer tensor's exponent ("Integers to
    negative integer powers are not allowed"), not the 0-d tensor ``torch.tensor(-1)``
    (``2 ** -1`` is ``0``, 0-d tensors and others alike): tclass does the same, the
    number refused with nothing written; the peer raises for both, after writing the
    entries before the integer one."""
    td = TensorDict(
        {"a": torch.tensor([2.0, 4.0]), "b": torch.tensor([2, 3]), "z": torch.tensor(2)}, []
    )
    with pytest.raises(errors.InPlaceWriteError, match="negative integer powers") as info:
        td.pow_(-1)
    assert isinstance(info.value, RuntimeError)
    assert td["a"].tolist() == [2.0, 4.0] and td["b"].tolist() == [2, 3] and td["z"].item() == 2
    expected = {k: v.clone().pow_(torch.tensor(-1)).tolist() for k, v in td.items()}
    assert td.pow_(torch.tensor(-1)) is td
    assert {k: v.tolist() for k, v in td.items()} == expected
    assert expected == {"a": [0.5, 0.25], "b": [0, 0], "z": 0}


# --- clamps with a 0-d tensor bound of another dtype, as torch (inv21e) -----------------

_CLAMPS = ("clamp_min_", "clamp_max_", "clamp_", "clamp_max", "clamp_min", "clamp")
_DTYPES = (torch.uint8, torch.int8, torch.int32, torch.int64, torch.float16, torch.float32)


def _torch_clamp(t: torch.Tensor, op: str, bound: torch.Tensor) -> Any:
    """torch's own answer for one tensor: the result, or the error class it raises."""
    args = (None, bound) if op == "clamp" else (bound,)  # clamp: max=, the others min=
    try:
        return getattr(t.clone(), op)(*args)
    except RuntimeError:
        return RuntimeError


def test_a_0d_bound_clamps_a_0d_tensor_as_torch() -> None:
    """``td.clamp_max_(torch.tensor(-300))`` of a 0-d uint8 ``5``: torch's ``212`` (the
    0-d bound decides the dtype against a 0-d tensor: ``min(5, -300)`` written back as a
    uint8), was ``5`` (the bound read as a uint8 first, as a tensor with dims reads it);
    the one with dims keeps ``5``, as torch's."""
    td = TensorDict(
        {"a": torch.tensor(5, dtype=torch.uint8), "b": torch.tensor([5], dtype=torch.uint8)}, []
    )
    assert td.clamp_max_(torch.tensor(-300)) is td
    assert td["a"].item() == 212 and td["b"].item() == 5
    td = TensorDict({"a": torch.tensor(5, dtype=torch.uint8)}, [])
    assert td.clamp_min_(torch.tensor(-300))["a"].item() == 5  # torch's; was 212
    assert td.clamp_(torch.tensor(-300))["a"].item() == 5
    assert td.clamp_(None, torch.tensor(-300))["a"].item() == 212
    out = td.clone()
    assert torch.clamp(td, max=torch.tensor(-300), out=out) is out
    assert out["a"].item() == 212 and out["a"].dtype == torch.uint8


def test_a_0d_bound_of_a_lazy_stack_reads_as_its_dense_tensor() -> None:
    """A lazy stack's member 0-d tensors are rows of a tensor with dims: the bound reads
    as torch reads it against the dense stack (a uint8: ``-300`` as ``212``)."""
    member = TensorDict({"a": torch.tensor(5, dtype=torch.uint8)}, [])
    stack = tclass.lazy_stack([member.clone(), member.clone()])
    dense = torch.full([2], 5, dtype=torch.uint8).clamp_max_(torch.tensor(-300))
    assert stack.clamp_max_(torch.tensor(-300))["a"].tolist() == dense.tolist() == [5, 5]


@settings(max_examples=120, deadline=None)
@given(
    op=st.sampled_from(_CLAMPS),
    dtypes=st.lists(st.sampled_from(_DTYPES), min_size=1, max_size=3),
    dims=st.lists(st.booleans(), min_size=3, max_size=3),
    bound_dtype=st.sampled_from((*_DTYPES, torch.bool, torch.float64)),
    value=st.sampled_from((-300, -1, 0, 3, 7, 300, 2.5, -1.5, 1e6)),
)
def test_clamps_with_a_0d_bound_agree_with_torch_leaf_by_leaf(
    op: str, dtypes: list[torch.dtype], dims: list[bool], bound_dtype: torch.dtype, value: float
) -> None:
    """Each clamp (in place or not) of a collection with a 0-d tensor bound gives each
    tensor what torch gives it alone; where torch refuses one in place, the collection
    raises a ``RuntimeError`` with nothing written."""
    bound = torch.tensor(value).to(bound_dtype)
    leaves = {
        f"k{i}": torch.full([2] if with_dims else [], 5, dtype=dtype)
        for i, (dtype, with_dims) in enumerate(zip(dtypes, dims))
    }
    td = TensorDict({k: v.clone() for k, v in leaves.items()}, [])
    expected = {k: _torch_clamp(v, op, bound) for k, v in leaves.items()}
    call = (lambda: td.clamp(None, bound)) if op == "clamp" else (lambda: getattr(td, op)(bound))
    if op.endswith("_") and RuntimeError in expected.values():
        with pytest.raises(RuntimeError):
            call()
        assert all(equal(td[k], v) for k, v in leaves.items())  # nothing written
        return
    result = call()
    for key, want in expected.items():
        if want is RuntimeError:  # (out of place: torch refuses this tensor too)
            return
        got = result[key]
        assert got.dtype == want.dtype, key
        assert torch.equal(got, want), (key, got, want)


def test_refusal_messages_name_the_operation_as_called() -> None:
    """The in-place check names the operation only once it refuses (speed22: the name is
    no longer built on every call): a batch size the operands would grow, a dtype torch
    refuses, and a write made for another operation's ``out=``, each still named as the
    caller spelled it, with nothing written."""
    td = TensorDict({"a": torch.ones(3), "b": torch.zeros(3, dtype=torch.bool)}, [3])
    floats = TensorDict({"a": torch.ones(3)}, [3])
    with pytest.raises(errors.InPlaceWriteError, match=r"^lerp_: the operands broadcast the "):
        floats.lerp_(torch.ones(2, 3), 0.5)
    with pytest.raises(
        errors.InPlaceWriteError, match=r"^\+=: torch cannot write into the entry 'b' \(torch.bool"
    ):
        td += 1.5
    with (
        writing_out_of("where"),
        pytest.raises(
            errors.InPlaceWriteError, match=r"^where\(\.\.\., out=\.\.\.\): torch cannot write"
        ),
    ):
        td.add_(0.5)
    assert torch.equal(td["a"], torch.ones(3)) and not td["b"].any()
    assert torch.equal(floats["a"], torch.ones(3))


def test_numbers_alone_a_pass_remembered_per_kind_of_tensor_and_number() -> None:
    """With numbers alone, a pass is remembered for the tensors' kinds (class, dtype,
    ``requires_grad``) and the numbers' classes: a number of another class, or a tensor
    of another kind, is checked again."""
    td = TensorDict({"a": torch.ones(3), "n": {"i": torch.ones(3, dtype=torch.int64)}}, [3])
    assert td.mul_(2) is td and td.mul_(2) is td  # remembered, then passed again
    _refused_unchanged(lambda: td.mul_(2.0), td, r"\('n', 'i'\)")  # a float into int64
    td["n", "i"] = torch.ones(3, dtype=torch.bool)
    _refused_unchanged(lambda: td.mul_(2), td, r"\('n', 'i'\)")
    assert torch.equal(td["a"], torch.full((3,), 4.0))


def test_numbers_alone_a_leaf_requiring_grad_after_a_non_leaf_passed() -> None:
    """Tensors requiring grad while autograd records: nothing is remembered (being a
    leaf is read from each tensor), so a leaf of the same kind is refused."""
    weight = torch.ones(3, 5, requires_grad=True)
    td = _tree()
    td["n", "last"] = weight * 1
    assert td.mul_(2.0) is td and td.mul_(2.0) is td
    td["n", "last"] = weight
    _refused_unchanged(lambda: td.mul_(2.0), td, r"\('n', 'last'\).*requires grad")


@pytest.mark.parametrize(
    "operand",
    [
        lambda: TensorDict(
            {"a": torch.ones(1, 4), "n": {"x": torch.ones(1, 2), "last": torch.ones(1, 5)}}, [1]
        ),  # noqa: E501
        lambda: tclass.LazyStackedTensorDict.maybe_dense_stack(
            [_tree()[0], _tree()[1], _tree()[2]]
        ),  # noqa: E501
        lambda: torch.ones(3),
    ],
    ids=["broadcast", "lazy-stack", "tensor"],
)
def test_a_tree_with_an_operand_its_walk_leaves_to_the_general_path(
    operand: Callable[[], Any],
) -> None:
    """The tree's own path takes numbers and a tree of its class over its batch size;
    other operands go the general way, with the same results as leaf by leaf."""
    td, other = _tree(), operand()
    expected = [leaf.lerp(piece, 0.25) for leaf, piece in zip(_snapshot(td), _pieces(td, other))]
    assert td.lerp_(other, 0.25) is td
    assert all(map(equal, _snapshot(td), expected))


def _pieces(td: TensorDict, other: Any) -> list[torch.Tensor]:
    if isinstance(other, torch.Tensor):
        return [other.reshape(3, *[1] * (leaf.dim() - 1)) for _, leaf in leaf_items(td)]
    dense = other.to_tensordict() if hasattr(other, "to_tensordict") else other
    return [dense.get(key).expand_as(leaf) for key, leaf in leaf_items(td)]
