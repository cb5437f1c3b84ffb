"""The two libraries a program runs in, and the tensorclasses declared in each: ``Rec``
and ``Inner``, and one record per class option the peer has (``Auto``: ``autocast``,
``NoCast``: ``nocast``, ``TOnly``: ``tensor_only``, ``Frozen``: ``frozen``).

The peer is optional: ``peer()`` is ``None`` without tensordict. The classes are declared
at module level in both libraries, with the same fields, so that saved records load back
(each library finds a record's class by its module and name).
"""

from __future__ import annotations

import importlib.util
import warnings
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Optional

import torch

import tclass


@dataclass(frozen=True)
class Lib:
    """A library as the programs see it: ``L`` and the record classes ``Rec`` and ``Inner``."""

    name: str
    module: ModuleType
    rec: type
    inner: type
    options: tuple[type, ...] = ()  # the records with class options (family ``records``)

    def classes(self) -> dict[str, type]:
        """The record classes by the name programs use (the peer's without ``Peer``)."""
        found = (self.rec, self.inner, *self.options)
        return {cls.__name__.removeprefix("Peer"): cls for cls in found}


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


@tclass.tensorclass(autocast=True)
class Auto:
    x: torch.Tensor
    n: int
    s: str
    lst: list  # type: ignore[type-arg]  # (bare, as records declare it)
    opt: Optional[torch.Tensor] = None  # noqa: UP045


@tclass.tensorclass(nocast=True)
class NoCast:
    x: torch.Tensor
    n: int
    v: Any = None


@tclass.tensorclass(tensor_only=True)
class TOnly:
    x: torch.Tensor
    y: Optional[torch.Tensor] = None  # noqa: UP045


@tclass.tensorclass(frozen=True)
class Frozen:
    x: torch.Tensor
    s: str
    n: Optional[int] = None  # noqa: UP045


TCLASS = Lib("tclass", tclass, Rec, Inner, (Auto, NoCast, TOnly, Frozen))


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

        @tensordict.tensorclass(autocast=True)
        class PeerAuto:
            x: torch.Tensor
            n: int
            s: str
            lst: list  # type: ignore[type-arg]
            opt: Optional[torch.Tensor] = None  # noqa: UP045

        @tensordict.tensorclass(nocast=True)
        class PeerNoCast:
            x: torch.Tensor
            n: int
            v: Any = None

        @tensordict.tensorclass(tensor_only=True)
        class PeerTOnly:
            x: torch.Tensor
            y: Optional[torch.Tensor] = None  # noqa: UP045

        @tensordict.tensorclass(frozen=True)
        class PeerFrozen:
            x: torch.Tensor
            s: str
            n: Optional[int] = None  # noqa: UP045

    PEER = Lib(
        "tensordict",
        tensordict,
        PeerRec,
        PeerInner,
        (PeerAuto, PeerNoCast, PeerTOnly, PeerFrozen),
    )


def libraries() -> tuple[Lib, Lib] | None:
    """(peer, tclass), or None when the peer is not installed."""
    return None if PEER is None else (PEER, TCLASS)
