"""The two libraries a program runs in, and the tensorclasses declared in each.

The peer is optional: ``peer()`` is ``None`` without tensordict. The classes are declared
at module level in both libraries, with the same fields, so that saved records load back
(each library finds a record's class by its module and name).
"""

from __future__ import annotations

import importlib.util
import warnings
from dataclasses import dataclass
from types import ModuleType
from typing import Optional

import torch

import tclass


@dataclass(frozen=True)
class Lib:
    """A library as the programs see it: ``L`` and the record classes ``Rec`` and ``Inner``."""

    name: str
    module: ModuleType
    rec: type
    inner: type


@tclass.tensorclass
class Inner:
    y: torch.Tensor
    z: Optional[torch.Tensor] = None  # noqa: UP045 (the peer's spelling)


@tclass.tensorclass
class Rec:
    x: torch.Tensor
    label: str
    inner: Inner
    opt: Optional[torch.Tensor] = None  # noqa: UP045


TCLASS = Lib("tclass", tclass, Rec, Inner)


PEER: Lib | None = None
if importlib.util.find_spec("tensordict") is not None:
    with warnings.catch_warnings():  # the peer's import and decorator may warn
        warnings.simplefilter("ignore")
        import tensordict

        @tensordict.tensorclass
        class PeerInner:
            y: torch.Tensor
            z: Optional[torch.Tensor] = None  # noqa: UP045

        @tensordict.tensorclass
        class PeerRec:
            x: torch.Tensor
            label: str
            inner: PeerInner
            opt: Optional[torch.Tensor] = None  # noqa: UP045

    PEER = Lib("tensordict", tensordict, PeerRec, PeerInner)


def libraries() -> tuple[Lib, Lib] | None:
    """(peer, tclass), or None when the peer is not installed."""
    return None if PEER is None else (PEER, TCLASS)
