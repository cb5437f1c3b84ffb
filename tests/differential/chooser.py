"""Where a program's random choices come from: a seeded ``random.Random`` (the runner) or
hypothesis's ``data.draw`` (the pytest run, which shrinks a failing program)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any, Protocol, TypeVar

from hypothesis import strategies as st

T = TypeVar("T")


class Chooser(Protocol):
    def integer(self, low: int, high: int) -> int:
        """An int in ``[low, high]``."""

    def choice(self, options: Sequence[T]) -> T:
        """One of ``options``."""

    def chance(self, percent: int) -> bool:
        """True ``percent`` times in 100."""


class RandomChooser:
    def __init__(self, seed: int) -> None:
        self._rng = random.Random(seed)

    def integer(self, low: int, high: int) -> int:
        return self._rng.randint(low, high)

    def choice(self, options: Sequence[T]) -> T:
        return options[self._rng.randrange(len(options))]

    def chance(self, percent: int) -> bool:
        return self._rng.randrange(100) < percent


class DataChooser:
    """Choices drawn from hypothesis's ``st.data()``: shrinking goes to small ints, the
    first option and ``chance`` being true, which are the simplest programs."""

    def __init__(self, data: Any) -> None:
        self._data = data

    def integer(self, low: int, high: int) -> int:
        return int(self._data.draw(st.integers(low, high)))

    def choice(self, options: Sequence[T]) -> T:
        return options[self.integer(0, len(options) - 1)]

    def chance(self, percent: int) -> bool:
        return self.integer(0, 99) < percent
