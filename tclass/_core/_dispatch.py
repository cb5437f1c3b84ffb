"""The one table of torch functions that tensor collections answer.

``torch.stack([td1, td2])`` calls ``TensorDict.__torch_function__``, which looks the
function up here. Implementations register themselves with :func:`implements` (in
``_ops.py``); every container type shares this table, so there is a single place that
says which torch functions work on collections.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["TORCH_FUNCTIONS", "implements"]

TORCH_FUNCTIONS: dict[Callable[..., Any], Callable[..., Any]] = {}

_F = TypeVar("_F", bound=Callable[..., Any])


def implements(*torch_functions: Callable[..., Any]) -> Callable[[_F], _F]:
    """Registers the decorated function as the collection version of ``torch_functions``."""

    def register(function: _F) -> _F:
        for torch_function in torch_functions:
            TORCH_FUNCTIONS[torch_function] = function
        return function

    return register
