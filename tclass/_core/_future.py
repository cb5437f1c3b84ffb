"""``TensorDictFuture``: work still being done by background threads (a save or a
consolidation asked to ``return_early``), as the peer's ``tensordict.utils`` names it."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable
from typing import Any, Generic, TypeVar

__all__ = ["TensorDictFuture"]

T = TypeVar("T")


class TensorDictFuture(Generic[T]):
    """A collection still being written by background threads (``memmap(...,
    return_early=True, num_threads=n)``, ``consolidate(return_early=True,
    num_threads=n)``): :meth:`result` waits for it and returns the collection, or raises
    what the work raised."""

    __slots__ = ("_then", "future")

    def __init__(
        self, future: concurrent.futures.Future[Any], then: Callable[[Any], Any] | None = None
    ) -> None:
        self.future = future
        self._then = then

    def result(self, timeout: float | None = None) -> T:
        """Waits for the work (at most ``timeout`` seconds) and returns its result."""
        done = self.future.result(timeout)
        return done if self._then is None else self._then(done)  # type: ignore[no-any-return]

    def done(self) -> bool:
        """Whether the work has finished (``result()`` would not wait)."""
        return self.future.done()
