"""Hypothesis strategies for records: ``tclass.testing.records(Cls)``.

``records(Cls)`` draws records that satisfy everything ``Cls`` declares (as
``Cls.rand`` builds them): hypothesis chooses the structure, so that it shrinks a
failing example to a small one (the batch size, each named dim, which optional fields
are set, the Python values), and a seed for the tensors' values, among which it puts
special floats (NaN, infinities, ``-0.0``, subnormals, the extremes) where the
constraints allow them::

    from hypothesis import given
    from tclass.testing import records

    @given(records(Transition, batch_size=(4,)))
    def test_round_trip(record):
        ...

Hypothesis is an optional dependency (``pip install 'tclass[testing]'``), imported
when ``records`` is called, never by ``import tclass``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import torch

from tclass._core._batch import BatchSizeLike
from tclass._core._device import DeviceLike
from tclass._io._optional import need
from tclass._tensorclass._random import random_record

if TYPE_CHECKING:
    from hypothesis.strategies import DrawFn, SearchStrategy

    from tclass._tensorclass._record import TensorClass

__all__ = ["records"]

_R = TypeVar("_R", bound="TensorClass")
_SEEDS = 2**63 - 1


class _DrawChooser:
    """A random record's choices, drawn by hypothesis."""

    def __init__(self, draw: DrawFn, strategies: Any, optional: bool, specials: bool) -> None:
        self._draw = draw
        self._st = strategies
        self._optional = optional
        self.specials = specials
        self.generator = torch.Generator().manual_seed(draw(strategies.integers(0, _SEEDS)))

    def integer(self, low: int, high: int) -> int:
        value: int = self._draw(self._st.integers(low, high))
        return value

    def optional(self) -> bool:
        return self._optional and bool(self._draw(self._st.booleans()))

    def text(self) -> str:
        alphabet = self._st.characters(blacklist_categories=("Cs", "Cc"))
        value: str = self._draw(self._st.text(alphabet, max_size=8))
        return value

    def real(self) -> float:
        value: float = self._draw(self._st.floats(allow_nan=False, allow_infinity=False))
        return value


def records(
    cls: type[_R],
    batch_size: BatchSizeLike | SearchStrategy[BatchSizeLike] | None = None,
    *,
    dims: Mapping[str, int | Sequence[int]] | None = None,
    device: DeviceLike = None,
    optional: bool = True,
    specials: bool = True,
) -> SearchStrategy[_R]:
    """A hypothesis strategy of records of ``cls`` (see the module docstring).

    Args:
        cls: a tensorclass.
        batch_size: the batch size, a strategy of them, or None: drawn (up to two dims
            of 0 to 3).
        dims: sizes of named dims to hold fixed (the others are drawn).
        device: where the tensors go.
        optional: draw optional fields unset (``None``) too; False: always set.
        specials: put NaN, infinities, ``-0.0``, subnormals and extremes in float
            fields whose constraints allow them.

    Raises:
        MissingDependencyError: hypothesis is not installed (the ``testing`` extra).
    """
    st = need("hypothesis.strategies", "testing", "tclass.testing.records")
    shapes = st.lists(st.integers(0, 3), max_size=2).map(tuple)

    @st.composite  # type: ignore[untyped-decorator]
    def build(draw: DrawFn) -> _R:
        if batch_size is None:
            batch = draw(shapes)
        elif isinstance(batch_size, st.SearchStrategy):
            batch = draw(batch_size)
        else:
            batch = batch_size
        chooser = _DrawChooser(draw, st, optional, specials)
        return random_record(cls, batch, dims, chooser, device)

    strategy: SearchStrategy[_R] = build()
    return strategy
