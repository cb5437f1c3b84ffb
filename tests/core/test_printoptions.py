"""``set_printoptions`` / ``get_printoptions``: the peer's options change every repr (the
compact one-line form and the detailed ``compact=False`` form), for a block, a decorated
function or the rest of the program."""

from __future__ import annotations

from typing import Any

import pytest
import torch

import tclass
from tclass import TensorDict, set_printoptions


@pytest.fixture
def td() -> TensorDict:
    inner = TensorDict(c=torch.ones(3, dtype=torch.long), batch_size=[3])
    return TensorDict(b=torch.zeros(3, 2), a=inner, s="hi", batch_size=[3])


def test_defaults_are_the_peers() -> None:
    options = tclass.get_printoptions()
    assert options["compact"] is True and options["sort_keys"] == "alphabetical"
    assert options["show_dtype"] and not options["show_grad"] and not options["plain"]
    options["compact"] = False  # a copy
    assert tclass.get_printoptions()["compact"] is True


def test_compact_options(td: TensorDict) -> None:
    assert repr(td) == "TensorDict(batch_size=[3], fields={a: {c: i64[]}, b: f32[2], s: str})"
    with set_printoptions(show_batch_size=False):
        assert repr(td) == "TensorDict(fields={a: {c: i64[]}, b: f32[2], s: str})"
    with set_printoptions(show_dtype=False):
        assert repr(td) == "TensorDict(batch_size=[3], fields={a: {c: []}, b: [2], s: str})"
    with set_printoptions(sort_keys="insertion"):
        assert repr(td) == "TensorDict(batch_size=[3], fields={b: f32[2], a: {c: i64[]}, s: str})"
    placed = TensorDict(x=torch.zeros(2), device="cpu", batch_size=[2])
    with set_printoptions(show_device=False):
        assert repr(placed) == "TensorDict(batch_size=[2], fields={x: f32[]})"
    assert repr(td).startswith("TensorDict(batch_size=[3]")  # restored


DETAILED = """TensorDict(
    fields={
        a: TensorDict(
            fields={
                c: Tensor(shape=torch.Size([3]), device=cpu, dtype=torch.int64, is_shared=False)},
            batch_size=torch.Size([3]),
            device=None,
            is_shared=False),
        b: Tensor(shape=torch.Size([3, 2]), device=cpu, dtype=torch.float32, is_shared=False),
        s: NonTensorData(data=hi, batch_size=torch.Size([3]), device=None)},
    batch_size=torch.Size([3]),
    device=None,
    is_shared=False)"""


def test_detailed_form(td: TensorDict) -> None:
    with set_printoptions(compact=False):
        assert repr(td) == DETAILED
    with set_printoptions(compact=False, verbose=False):
        text = repr(td)
    assert "b: Tensor(shape=torch.Size([3, 2]))," in text and "device=cpu" not in text
    with set_printoptions(show_grad=True):  # a detailed-only option turns compact off
        assert "requires_grad=False" in repr(td)
    with set_printoptions(plain=True):
        shown = repr(TensorDict(a=torch.tensor([1.0, 2.0, 3.0]), b=torch.tensor([True])))
    assert "mean=2, std=1" in shown and "min=True, max=True" in shown


def test_detailed_form_of_records_and_lazy_stacks() -> None:
    @tclass.tensorclass
    class Point:
        x: torch.Tensor
        y: torch.Tensor | None = None

    with set_printoptions(compact=False, show_is_shared=False):
        text = repr(Point(x=torch.zeros(2, 3), batch_size=[2]))
    assert text.startswith("Point(\n    x=Tensor(shape=torch.Size([2, 3])")
    assert "    y=None,\n    batch_size=torch.Size([2]),\n    device=None)" in text
    lazy = tclass.lazy_stack(
        [TensorDict(x=torch.zeros(2), y=1), TensorDict(x=torch.zeros(3), z=torch.ones(1))]
    )
    with set_printoptions(compact=False):
        text = repr(lazy)
    assert "x: Tensor(shape=torch.Size([2, -1])" in text
    assert "exclusive_fields={\n        0 ->\n            y: Tensor(shape=torch.Size([])" in text
    assert text.endswith("    is_shared=False,\n    stack_dim=0)")


def test_set_and_decorator_and_errors(td: TensorDict) -> None:
    @set_printoptions(show_batch_size=False)
    def shown() -> str:
        return repr(td)

    assert shown().startswith("TensorDict(fields=")
    assert repr(td).startswith("TensorDict(batch_size=")
    before = tclass.get_printoptions()
    try:
        set_printoptions(sort_keys="insertion").set()
        assert tclass.get_printoptions()["sort_keys"] == "insertion"
    finally:
        set_printoptions(**before).set()
    with pytest.raises(TypeError, match="Unknown printoptions"):
        set_printoptions(colour=True)
    with pytest.raises(TypeError, match="sort_keys"):
        set_printoptions(sort_keys="size")


def test_exit_after_set_restores_the_options_before() -> None:
    before = tclass.get_printoptions()
    options = set_printoptions(show_device=False)
    options.set()
    assert tclass.get_printoptions()["show_device"] is False
    options.__exit__(None, None, None)  # as tensordict's: back to the options before set()
    assert tclass.get_printoptions() == before


@pytest.mark.peer
def test_same_text_as_the_peer(td: TensorDict) -> None:
    tensordict = pytest.importorskip("tensordict")
    peer = tensordict.TensorDict(
        b=torch.zeros(3, 2), a=tensordict.TensorDict(c=torch.ones(3, dtype=torch.long),
        batch_size=[3]), s="hi", batch_size=[3],
    )  # fmt: skip
    for options in ({}, {"compact": False}, {"show_dtype": False}, {"sort_keys": None}):
        with tensordict.set_printoptions(**options), set_printoptions(**options):
            assert repr(td) == repr(peer)


def test_options_never_vanish_while_a_block_ends(
    td: TensorDict, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A block ending once emptied the options for a moment: a set_printoptions in
    # another thread then said "Valid options: []", and its repr raised KeyError.
    from tclass._core import _printoptions

    names = set(_printoptions.PRINT_OPTIONS)
    states: list[set[str]] = []

    class Watched(dict[str, object]):
        def clear(self) -> None:
            super().clear()
            states.append(set(self))

        def update(self, *args: Any, **kwargs: Any) -> None:
            super().update(*args, **kwargs)
            states.append(set(self))

    monkeypatch.setattr(_printoptions, "PRINT_OPTIONS", Watched(_printoptions.PRINT_OPTIONS))
    with set_printoptions(compact=False), set_printoptions(show_dtype=False):
        pass
    assert states and all(state == names for state in states)


def test_sort_keys_false_and_callables_as_the_peer() -> None:
    # sort_keys=False (insertion order) and a callable (a sort key of each entry's text,
    # 'key: f32[2,2]') were refused; the peer takes both. The detailed form sorts each
    # entry's text too, so 'a0: ...' comes before 'a: ...', as in the peer.
    td = TensorDict(bb=torch.zeros(3), a=torch.zeros(3, 2, 2), batch_size=[3])
    with set_printoptions(sort_keys=False):
        assert repr(td) == "TensorDict(batch_size=[3], fields={bb: f32[], a: f32[2,2]})"
    with set_printoptions(sort_keys=lambda text: -len(text)):
        assert repr(td) == "TensorDict(batch_size=[3], fields={a: f32[2,2], bb: f32[]})"
    with set_printoptions(sort_keys=len, compact=False):
        assert repr(td).index("bb: Tensor") < repr(td).index("a: Tensor")
    prefixed = TensorDict(a=torch.zeros(3), a0=torch.zeros(3), batch_size=[3])
    with set_printoptions(compact=False):
        assert repr(prefixed).index("a0: Tensor") < repr(prefixed).index("a: Tensor")
    for typo in (True, 1, "keys"):
        with pytest.raises(TypeError, match="sort_keys"):
            set_printoptions(sort_keys=typo)


@pytest.mark.peer
def test_sort_keys_orders_as_the_peers() -> None:
    tensordict = pytest.importorskip("tensordict")
    data = {"bb": torch.zeros(3), "a0": torch.zeros(3, 2), "a": torch.zeros(3, 2, 2)}
    mine, peer = TensorDict(data, [3]), tensordict.TensorDict(data, [3])
    for order in (False, None, "insertion", lambda text: -len(text), len):
        for compact in (True, False):
            with (
                tensordict.set_printoptions(sort_keys=order, compact=compact),
                set_printoptions(sort_keys=order, compact=compact),
            ):
                assert repr(mine) == repr(peer)
