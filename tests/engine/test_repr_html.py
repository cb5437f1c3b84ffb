"""The display of notebooks (``_repr_html_``): the peer's HTML, for every kind of
collection (tests/helpers/repr_kinds.py), under the print options that change it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

import tclass

from repr_kinds import KINDS, NOT_THE_PEERS

_DIV = '<div style="font-family:monospace;line-height:1.4"><details open><summary>'
_UL = '<ul style="list-style:none;margin:0;padding-left:1.5em">'
_DIM = '<span style="opacity:0.7">'


def test_a_tensordict_shows_its_entries_as_the_peer() -> None:
    td = tclass.TensorDict(a=torch.zeros(3, 4), b=torch.ones(3, dtype=torch.long), batch_size=[3])
    assert td._repr_html_() == (
        f"{_DIV}<b>TensorDict</b> {_DIM}batch_size=[3]</span></summary>{_UL}"
        f"<li>a: {_DIM}f32[4]</span></li><li>b: {_DIM}i64[]</span></li></ul></details></div>"
    )


def test_a_nested_record_shows_its_class_and_dims_as_the_peer(tmp_path: Path) -> None:
    record = KINDS["record_nested"](tclass, tmp_path)
    assert record._repr_html_() == (
        f"{_DIV}<b>R</b> {_DIM}batch_size=[3]</span></summary>{_UL}"
        f"<li><details open><summary>inner: {_DIM}In[2] 1 entry</span></summary>{_UL}"
        f"<li>c: {_DIM}f32[5]</span></li></ul></details></li>"
        f"<li>x: {_DIM}f32[4]</span></li></ul></details></div>"
    )


def test_options_turn_it_off_or_to_text() -> None:
    td = tclass.TensorDict(a=torch.zeros(2), batch_size=[2])
    with tclass.set_printoptions(html=False):
        assert td._repr_html_() is None
    with tclass.set_printoptions(compact=False):
        assert td._repr_html_() == f"<pre>{td!r}</pre>"
    assert tclass.NonTensorData("a<b")._repr_html_() == (
        "<pre>NonTensorData(data=a&lt;b, batch_size=torch.Size([]), device=None)</pre>"
    )


def test_names_and_at_most_200_entries() -> None:
    inner = {f"j{j:02d}": torch.zeros(2) for j in range(30)}
    entries = {f"k{i}": tclass.TensorDict(inner, batch_size=[2]) for i in range(10)}
    shown = tclass.TensorDict(entries, batch_size=[2], names=["b"])._repr_html_()
    assert shown is not None
    assert f"{_DIM}batch_size=[2], names=[b]</span>" in shown
    assert shown.count("<li>j") == 200 - 7 and "<li>... and 17 more</li>" in shown


VIEWS: dict[str, dict[str, Any]] = {"": {}, "detailed": {"compact": False}, "off": {"html": False}}


@pytest.mark.parametrize("view", sorted(VIEWS))
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_the_peer_shows_the_same(kind: str, view: str, tmp_path: Path) -> None:
    peer = pytest.importorskip("tensordict", reason="the peer (tensordict) is not installed")
    if view == "detailed" and f"{kind}.detailed" in NOT_THE_PEERS:
        pytest.skip(NOT_THE_PEERS[f"{kind}.detailed"])  # the detailed text, as <pre>
    shown = []
    for lib in (tclass, peer):
        torch.manual_seed(0)
        (tmp_path / lib.__name__).mkdir()
        value = KINDS[kind](lib, tmp_path / lib.__name__)
        with lib.set_printoptions(**VIEWS[view]):
            shown.append(value._repr_html_())
    assert shown[0] == shown[1]


def test_a_class_keeping_its_own_repr_or_a_closed_file_shows_its_text(tmp_path: Path) -> None:
    # lo26c: which classes show blocks is known from their __repr__, not by building the
    # text twice; a closed file's display raised ClosedFileError (it never fails now)
    @tclass.tensorclass
    class Own:
        a: torch.Tensor

        def __repr__(self) -> str:
            return "own<"

    assert Own(a=torch.zeros(2), batch_size=[2])._repr_html_() == "<pre>own&lt;</pre>"
    pytest.importorskip("h5py")
    inner = tclass.TensorDict(a=torch.zeros(2, 3), batch_size=[2])
    ptd = tclass.PersistentTensorDict.from_dict(inner, filename=tmp_path / "f.h5")
    view = ptd[0]
    assert f"<li>a: {_DIM}f32[3]</span></li>" in str(ptd._repr_html_())
    ptd.close()
    for closed in (ptd, view):
        assert closed._repr_html_() == f"<pre>{repr(closed).replace(chr(39), '&#x27;')}</pre>"
        assert "closed file" in repr(closed)
