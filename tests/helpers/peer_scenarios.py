"""Scenarios written once against a library module (``tclass`` or the peer's
``tensordict``), run on tclass alone and compared with the peer: a test module defines
``SCENARIOS`` (name -> function of the module) and takes its two tests from
:func:`scenario_tests`.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest

import tclass

Scenario = Callable[[ModuleType], Any]


def scenario_tests(
    scenarios: dict[str, Scenario],
) -> tuple[Callable[[str], None], Callable[[str], None]]:
    """The tests of ``scenarios``: each runs on tclass (without the peer too), and gives
    the same result on tclass and on the peer (``peer``-marked, skipped without it)."""

    @pytest.mark.parametrize("name", sorted(scenarios))
    def test_scenario_on_tclass(name: str) -> None:
        scenarios[name](tclass)

    @pytest.mark.peer
    @pytest.mark.parametrize("name", sorted(scenarios))
    def test_same_as_the_peer(name: str) -> None:
        peer = pytest.importorskip("tensordict")
        assert scenarios[name](tclass) == scenarios[name](peer)

    return test_scenario_on_tclass, test_same_as_the_peer


def node_kind(node: Any) -> Any:
    """A node's class name and batch size; a stack's with its members' class names (the
    kind of a Python-value node, compared between the two libraries)."""
    name = type(node).__name__
    if name == "NonTensorStack":
        members = tuple(type(member).__name__ for member in node.tensordicts)
        return (name, tuple(node.batch_size), members)
    return (name, tuple(node.batch_size))
