"""``timeit``: time spent in named functions or blocks, accumulated per name (the peer's
``tensordict.utils.timeit``, which RL code uses to profile its loops)."""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from types import TracebackType
from typing import ClassVar, ParamSpec, TypeVar

__all__ = ["timeit"]

_P = ParamSpec("_P")
_R = TypeVar("_R")

logger = logging.getLogger("tclass")


class timeit:  # the peer's (lower-case) name
    """Measures the time spent in a function (as a decorator) or a block (as a context
    manager) under ``name``; each name accumulates its mean time, total time and call
    count in ``timeit._REG`` (``[mean seconds, total seconds, count]``).
    :meth:`print` logs them at the ``INFO`` level, :meth:`erase` resets them.
    """

    _REG: ClassVar[dict[str, list[float]]] = {}

    def __init__(self, name: str) -> None:
        self.name = name
        self._start = 0.0

    def __call__(self, fn: Callable[_P, _R]) -> Callable[_P, _R]:
        @functools.wraps(fn)
        def timed(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            with timeit(self.name):  # a new timer per call: calls may nest or overlap
                return fn(*args, **kwargs)

        return timed

    def __enter__(self) -> timeit:
        self._start = time.perf_counter()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        elapsed = time.perf_counter() - self._start
        entry = self._REG.setdefault(self.name, [0.0, 0.0, 0])
        entry[2] += 1
        entry[1] += elapsed
        entry[0] = entry[1] / entry[2]

    @staticmethod
    def print(prefix: str | None = None) -> None:
        """Logs each name's mean and total time (``INFO``), ``prefix`` before each line."""
        for name, (mean, total, count) in sorted(timeit._REG.items()):
            line = f"{name} took {mean * 1000:.4g} msec on average over {int(count)} calls "
            line += f"(total = {total:.4g} sec)"
            logger.info(f"{prefix} -- {line}" if prefix else line)

    @staticmethod
    def erase() -> None:
        """Resets the count and the times of every name to zero."""
        for name in timeit._REG:
            timeit._REG[name] = [0.0, 0.0, 0]
