"""Tests for the views of the peer's legacy lazy mode (``set_lazy_legacy(True)``,
``tclass._engine._lazy._legacy``): ``unsqueeze``, ``squeeze``, ``permute``, ``transpose``
and ``view`` return views that read the source reshaped and write through to it, the
inverse operation gives the source back, and outside the mode nothing changes.

Each write is checked against the source itself (what a plain TensorDict of views lost
before), and a ``peer`` test runs the same scenario with tensordict and compares.
"""

from __future__ import annotations

import pickle
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch

import tclass
from tclass import LazyStackedTensorDict, TensorDict, errors
from tclass._core._shape_op import ShapeOp
from tclass._engine._lazy._legacy import LegacyLazyView


@pytest.fixture
def legacy() -> Iterator[None]:
    """The legacy lazy mode for the test (its deprecation warning expected)."""
    with pytest.warns(DeprecationWarning, match="set_lazy_legacy"):
        switch = tclass.set_lazy_legacy(True)
    with switch:
        yield


def _td() -> TensorDict:
    return TensorDict(
        {"a": torch.zeros(3, 4, 2), "n": {"b": torch.zeros(3, 4, 5)}, "s": "text"},
        [3, 4],
        names=["x", "y"],
    )


# (make the view, the view's batch size, the inverse operation)
_OPS: dict[str, tuple[Callable[[Any], Any], list[int], Callable[[Any], Any]]] = {
    "unsqueeze": (lambda t: t.unsqueeze(1), [3, 1, 4], lambda v: v.squeeze(1)),
    "unsqueeze_last": (lambda t: t.unsqueeze(-1), [3, 4, 1], lambda v: v.squeeze(-1)),
    "permute": (lambda t: t.permute(1, 0), [4, 3], lambda v: v.permute(1, 0)),
    "transpose": (lambda t: t.transpose(0, 1), [4, 3], lambda v: v.transpose(1, 0)),
    "view": (lambda t: t.view(-1), [12], lambda v: v.view(3, 4)),
    "torch.unsqueeze": (lambda t: torch.unsqueeze(t, 0), [1, 3, 4], lambda v: v.squeeze(0)),
    "torch.permute": (lambda t: torch.permute(t, (1, 0)), [4, 3], lambda v: v.permute(1, 0)),
}


@pytest.mark.usefixtures("legacy")
class TestWritesThrough:
    @pytest.mark.parametrize("name", list(_OPS))
    def test_set_replaces_the_source_entry(self, name: str) -> None:
        make, size, inverse = _OPS[name]
        td = _td()
        v = make(td)
        assert isinstance(v, LegacyLazyView) and list(v.batch_size) == size
        values = torch.arange(24.0).reshape(size + [2])
        v.set("a", values)
        assert torch.equal(v["a"], values)
        with tclass.set_lazy_legacy(False):
            expected = inverse(TensorDict({"a": values}, size))["a"]
        assert torch.equal(td["a"], expected)  # the source holds it, reshaped back

    @pytest.mark.parametrize("name", list(_OPS))
    def test_new_keys_reach_the_source_reshaped_back(self, name: str) -> None:
        make, size, _ = _OPS[name]
        td = _td()
        v = make(td)
        v.set("c", torch.ones(size + [5]))
        v.set(("n", "d"), torch.ones(size + [5]))
        v.set(("new", "deep"), torch.ones(size))
        v["e"] = torch.ones(size)
        assert td["c"].shape == (3, 4, 5) and td["n", "d"].shape == (3, 4, 5)
        assert td["new", "deep"].shape == (3, 4) and td["e"].shape == (3, 4)
        assert td["new"].batch_size == td.batch_size

    @pytest.mark.parametrize("name", list(_OPS))
    def test_in_place_writes_reach_the_source(self, name: str) -> None:
        make, size, _ = _OPS[name]
        td = _td()
        v = make(td)
        v.set_("a", torch.full(size + [2], 2.0))
        assert (td["a"] == 2).all()
        v.update_({"a": torch.full(size + [2], 3.0)})
        assert (td["a"] == 3).all()
        v.apply_(lambda t: t.fill_(4.0))
        assert (td["a"] == 4).all() and (td["n", "b"] == 4).all()
        v.fill_("a", 5.0)
        assert (td["a"] == 5).all()
        v.zero_()
        assert (td["a"] == 0).all()
        v[0] = TensorDict({"a": torch.full(size[1:] + [2], 6.0)}, size[1:])
        assert (td["a"] == 6).sum() == 2 * (12 // size[0])

    @pytest.mark.parametrize("name", list(_OPS))
    def test_update_delete_rename_pop(self, name: str) -> None:
        make, size, _ = _OPS[name]
        td = _td()
        v = make(td)
        v.update({"a": torch.ones(size + [2]), "u": torch.ones(size), "n": {"w": torch.ones(size)}})
        assert (td["a"] == 1).all() and td["u"].shape == (3, 4) and td["n", "w"].shape == (3, 4)
        assert "b" in td["n"].keys()  # nested entries merged, as update does
        v.rename_key_("u", "u2")
        assert "u2" in td.keys() and "u" not in td.keys()
        del v["u2"]
        assert "u2" not in td.keys()
        popped = v.pop("a")
        assert popped.shape == torch.Size(size + [2]) and "a" not in td.keys()

    @pytest.mark.parametrize("name", list(_OPS))
    def test_the_inverse_gives_the_source(self, name: str) -> None:
        make, _, inverse = _OPS[name]
        td = _td()
        assert inverse(make(td)) is td

    def test_nested_views_write_through(self) -> None:
        td = _td()
        nested = td.unsqueeze(0)["n"]
        assert isinstance(nested, LegacyLazyView) and nested.batch_size == (1, 3, 4)
        nested.set("q", torch.ones(1, 3, 4))
        assert td["n", "q"].shape == (3, 4)

    def test_reads_are_views_of_the_source(self) -> None:
        td = _td()
        v = td.permute(1, 0)
        assert v["a"].data_ptr() == td["a"].data_ptr() and v["a"].shape == (4, 3, 2)
        assert v["s"] == "text"
        dense = v.to_tensordict()
        assert type(dense) is TensorDict and dense.batch_size == (4, 3)
        dense["a"] += 1
        assert (td["a"] == 0).all()  # a copy
        assert type(v.clone()) is TensorDict and type(v[0]) is TensorDict
        assert type(v.apply(lambda t: t + 1)) is TensorDict

    def test_names_lock_device_follow_the_source(self) -> None:
        td = _td()
        assert td.unsqueeze(0).names == [None, "x", "y"]
        assert td.permute(1, 0).names == ["y", "x"]
        assert td.view(-1).names == [None]
        v = td.unsqueeze(0)
        assert v.device is None and not v.is_locked
        v.lock_()
        assert td.is_locked and v.is_locked
        with pytest.raises(errors.LockedError):
            v.set("new", torch.ones(1, 3, 4))
        v["a"] = torch.ones(1, 3, 4, 2)  # in place when locked
        assert (td["a"] == 1).all()
        with v.unlock_():
            assert not td.is_locked
        assert td.is_locked

    def test_squeeze_without_dim_is_a_view_of_the_view(self) -> None:
        td = _td()
        v = td.unsqueeze(0)
        squeezed = v.squeeze()  # as the peer: only an explicit dim undoes unsqueeze
        assert isinstance(squeezed, LegacyLazyView) and squeezed.batch_size == (3, 4)
        squeezed.set("c", torch.ones(3, 4))
        assert td["c"].shape == (3, 4)
        assert v.squeeze(0) is td and v.unsqueeze(0).squeeze(0) is v

    def test_lazy_stacks(self) -> None:
        parts = [TensorDict({"a": torch.zeros(3, 2)}, [3]) for _ in range(2)]
        stack = tclass.lazy_stack(parts, 0)
        u = stack.unsqueeze(1)  # member by member: a lazy stack of views
        assert isinstance(u, LazyStackedTensorDict)
        u.set("a", torch.ones(2, 1, 3, 2))
        assert all((part["a"] == 1).all() for part in parts)
        assert all(x is y for x, y in zip(u.squeeze(1).tensordicts, parts))
        t = stack.transpose(0, 1)
        assert isinstance(t, LegacyLazyView) and t.transpose(0, 1) is stack
        t.set("c", torch.ones(3, 2))
        assert parts[1]["c"].shape == (3,)

    @pytest.mark.parametrize(
        "write",
        [
            lambda v: v.fill_("a", 1.0),
            lambda v: v.apply_(lambda t: t.add_(1)),
            lambda v: v.add_(1),
            lambda v: v.copy_(v.apply(lambda t: t + 1)),
            lambda v: v.update_({"a": torch.ones(3, 2, 2)}),
            lambda v: v.set_at_("a", torch.ones(3, 2), (slice(None), 0)),
        ],
    )
    def test_in_place_writes_reach_the_members_of_a_lazy_stack(
        self, write: Callable[[Any], Any]
    ) -> None:
        parts = [TensorDict({"a": torch.zeros(3, 2)}, [3]) for _ in range(2)]
        view = tclass.lazy_stack(parts, 0).transpose(0, 1)  # entries read stacked: copies
        write(view)
        assert (parts[0]["a"] == 1).all()  # (set_at_ writes member 0 only)

    def test_records(self) -> None:
        class Rec(tclass.TensorClass):
            a: torch.Tensor

        rec = Rec(a=torch.zeros(3, 4), batch_size=[3])
        u = rec.unsqueeze(0)
        assert type(u) is Rec and u.batch_size == (1, 3)
        u.a = torch.ones(1, 3, 4)
        assert (rec.a == 1).all()
        td = TensorDict({"r": rec}, [3])
        inner = td.unsqueeze(0)["r"]
        assert type(inner) is Rec
        inner.a = torch.full((1, 3, 4), 2.0)
        assert (rec.a == 2).all()

    def test_saving_pickling_pytrees(self, tmp_path: Path) -> None:
        td = TensorDict({"a": torch.arange(12.0).reshape(3, 4)}, [3, 4])
        v = td.permute(1, 0)
        copy = v.memmap(tmp_path / "copy")
        assert copy.batch_size == (4, 3) and torch.equal(copy["a"], td["a"].T)
        assert TensorDict.load_memmap(tmp_path / "copy").batch_size == (4, 3)
        back = pickle.loads(pickle.dumps(v))
        assert isinstance(back, LegacyLazyView) and torch.equal(back["a"], v["a"])
        doubled = torch.vmap(lambda t: t["a"] * 2)(v)  # a view is a pytree node
        assert torch.equal(doubled, 2 * td["a"].T)
        assert v.memmap_(tmp_path / "inplace") is v
        assert td.is_memmap() and v.is_memmap() and v.is_locked
        v["a"][0, 1] = 100.0  # into the file, laid out as the view reads (as the peer's)
        loaded = TensorDict.load_memmap(tmp_path / "inplace")
        assert loaded.batch_size == (4, 3) and loaded["a"][0, 1] == 100 == td["a"][1, 0]
        with pytest.raises(errors.FileConflictError):
            v.memmap_(tmp_path / "again")  # already saved: copy_existing=True to copy


@pytest.mark.usefixtures("legacy")
class TestRefused:
    def test_batch_size_and_names_are_the_source_s(self) -> None:
        v = _td().unsqueeze(0)
        v.batch_size = [1, 3, 4]  # the same size: nothing to do
        with pytest.raises(errors.BatchSizeError) as info:
            v.batch_size = [1, 3]
        assert isinstance(info.value, RuntimeError)  # as the peer raises
        with pytest.raises(errors.BatchSizeError):
            v.auto_batch_size_()
        with pytest.raises(errors.DimNameError) as named:
            v.names = ["p", "q", "r"]
        assert isinstance(named.value, RuntimeError)
        with pytest.raises(errors.DimNameError):
            v.rename_("p", "q", "r")

    def test_moving_in_place(self) -> None:
        with pytest.raises(errors.ArgumentError, match="Cannot use inplace=True with ") as info:
            _td().unsqueeze(0).to(torch.float64, inplace=True)
        assert isinstance(info.value, TypeError)  # as the peer raises
        with pytest.raises(errors.ArgumentError, match="Cannot pass batch-size to "):
            _td().unsqueeze(0).to(batch_size=[1, 3, 4])

    @pytest.mark.parametrize(
        "rewrite",
        [
            lambda v: v.flatten_keys(inplace=True),
            lambda v: v.unflatten_keys(inplace=True),
        ],
    )
    def test_in_place_key_rewrites(self, rewrite: Callable[[Any], Any]) -> None:
        td = _td()
        with pytest.raises(errors.UnsupportedError, match="Cannot call exclude") as info:
            rewrite(td.unsqueeze(0))
        assert isinstance(info.value, RuntimeError)  # as the peer raises
        assert "inplace=False" in str(info.value)
        assert set(td.keys()) == {"a", "n", "s"}  # the source is untouched

    def test_transpose_of_dims_out_of_range(self) -> None:
        """The peer's words in the mode ("The provided dimensions are incompatible"), on a
        collection, a view of it and a lazy stack, with the range of the dims."""
        td = _td()
        stack = tclass.lazy_stack([td[0], td[1]])
        for source in (td, td.unsqueeze(0), stack):
            with pytest.raises(
                errors.DimError, match="The provided dimensions are incompatible"
            ) as info:
                source.transpose(-5, -6)
            assert isinstance(info.value, ValueError)  # as the peer raises
            assert "dim0 and dim1 must be within the range" in str(info.value)

    def test_wrong_shapes(self) -> None:
        v = _td().unsqueeze(0)
        with pytest.raises(errors.BatchSizeError):
            v.set("w", torch.ones(7))
        with pytest.raises(errors.KeyNotFoundError):
            v.set_("missing", torch.ones(1, 3, 4))


class TestOutsideTheMode:
    def test_shape_operations_are_unchanged(self) -> None:
        td = _td()
        for make, _, _ in _OPS.values():
            assert type(make(td)) is TensorDict

    def test_a_view_refuses_shape_operations_outside_the_mode(self, legacy: None) -> None:
        td = _td()
        v = td.unsqueeze(0)
        with tclass.set_lazy_legacy(False):
            for method in ("squeeze", "unsqueeze"):
                # the peer's words, which code written for it matches
                with pytest.raises(errors.ShapeError, match=f"Cannot call `{method}`") as info:
                    getattr(v, method)(0)
                assert isinstance(info.value, RuntimeError)  # as the peer raises
                assert "Make it dense" in str(info.value)
            with pytest.raises(errors.ShapeError, match="unsqueeze.*of a TensorDict"):
                v.permute(0, 2, 1)
            with pytest.raises(errors.ShapeError, match="Cannot call `view`"):
                v.view(-1)
            assert v.reshape(-1).batch_size == (12,)  # copies: fine
            v.set("b", torch.ones(1, 3, 4))  # writes still go through
        assert td["b"].shape == (3, 4)


@pytest.mark.parametrize(
    "op",
    [
        ShapeOp("unsqueeze", (0, 2), 2),
        ShapeOp("squeeze", (1,), 3),
        ShapeOp("permute", (2, 0, 1), 3),
        ShapeOp("view", (6,), 2, (2, 3)),
    ],
)
def test_shape_op_inverse(op: ShapeOp) -> None:
    size = torch.Size([2, 1, 3][: op.ndim] if op.kind != "view" else [2, 3])
    if op.kind == "squeeze":
        size = torch.Size([2, 1, 3])
    tensor = torch.arange(float(size.numel() * 5)).reshape(size + (5,))
    out = op.apply(tensor)
    assert out.shape == op.out_size(tensor.shape)
    assert torch.equal(op.inverse().apply(out), tensor)
    assert op.inverse().inverse() == op


# --- against the peer --------------------------------------------------------------------


def _scenario(lib: ModuleType) -> Any:
    """Writes through each kind of view, and what the inverse operation returns."""
    seen = []
    for make in (
        lambda t: t.unsqueeze(0),
        lambda t: t.squeeze(-1),
        lambda t: t.permute(2, 0, 1),
        lambda t: t.transpose(0, 2),
        lambda t: t.view(-1),
    ):
        td = lib.TensorDict(
            {"a": torch.zeros(2, 3, 1, 4), "n": {"b": torch.zeros(2, 3, 1)}}, [2, 3, 1]
        )
        v = make(td)
        v.set("a", torch.arange(float(v.numel() * 4)).reshape(*v.batch_size, 4))
        v.set("c", torch.ones(v.batch_size))
        v.set_("c", torch.full(v.batch_size, 2.0))
        v[0] = v[0].select("a", "c").apply(lambda t: t + 1)
        seen.append((
            td["a"].tolist(), td["c"].tolist(), td["n", "b"].tolist(), list(v.batch_size),
            v.names, type(v.to_tensordict()).__name__,
        ))  # fmt: skip
    td = lib.TensorDict({"a": torch.zeros(2, 3)}, [2, 3])
    seen.append((
        td.unsqueeze(0).squeeze(0) is td, td.permute(1, 0).permute(1, 0) is td,
        td.view(-1).view(2, 3) is td, td.transpose(0, 1).transpose(1, 0) is td,
    ))  # fmt: skip
    return seen


def test_a_view_joins_a_tensordict_as_its_data() -> None:
    """``torch.stack`` / ``torch.cat`` of a legacy view and a TensorDict (after the mode
    too) give a TensorDict of the view's data, as the peer joins its views."""
    td = _td()
    with pytest.warns(DeprecationWarning), tclass.set_lazy_legacy(True):
        view = td.permute(1, 0)
    dense = view.contiguous()
    for joined in (torch.stack([view, dense], 0), torch.stack([dense, view], 0)):
        assert type(joined) is TensorDict and joined.batch_size == torch.Size([2, 4, 3])
        assert torch.equal(joined["a"][0], joined["a"][1])
        assert torch.equal(joined["n", "b"][0], td["n", "b"].transpose(0, 1))
    cat = torch.cat([view, td.transpose(0, 1).clone()], 0)
    assert type(cat) is TensorDict and cat.batch_size == torch.Size([8, 3])
    cat["a"].fill_(7.0)  # a copy, as any join: the source keeps its data
    assert not bool((td["a"] == 7.0).any())


@pytest.mark.usefixtures("legacy")
def test_identity_permute_of_a_lazy_stack_is_the_stack() -> None:
    """As the peer in the mode: ``permute`` in the same order gives the stack itself,
    and a permutation undone gives it back (outside the mode: a new stack, as the
    peer)."""
    td = _td()
    stack = tclass.lazy_stack([td[:, i] for i in range(4)], 1)
    assert stack.permute(0, 1) is stack
    assert stack.permute(1, 0).permute(1, 0) is stack
    assert stack.transpose(0, 0) is stack
    with tclass.set_lazy_legacy(False):
        other = stack.permute(0, 1)
    assert other is not stack and isinstance(other, LazyStackedTensorDict)


@pytest.mark.usefixtures("legacy")
def test_detach_of_a_view_that_requires_grad_names_the_source() -> None:
    x = torch.ones(3, 4, requires_grad=True)
    view = TensorDict(a=x * 2, batch_size=[3, 4]).permute(1, 0)
    with pytest.raises(RuntimeError, match="detach_\\(\\) the collection it comes from"):
        view.detach_()
    assert TensorDict(a=torch.zeros(3, 4), batch_size=[3, 4]).permute(1, 0).detach_() is not None


@pytest.mark.peer
def test_same_as_the_peer() -> None:
    peer = pytest.importorskip("tensordict")
    with pytest.warns(DeprecationWarning), tclass.set_lazy_legacy(True):
        ours = _scenario(tclass)
    with pytest.warns(DeprecationWarning), peer.set_lazy_legacy(True):
        theirs = _scenario(peer)
    assert ours == theirs
