"""The tensorclasses saved in ``tests/data/golden/v1_tensorclass`` (see make_golden.py).

``tests/helpers`` is on pytest's ``pythonpath`` (pyproject.toml), so this module is
imported as ``golden_classes`` and the saved ``_type`` strings name ``golden_classes.Step``.
"""

from __future__ import annotations

import torch

import tclass


@tclass.tensorclass
class Inner:
    z: torch.Tensor


@tclass.tensorclass
class Step:
    obs: torch.Tensor
    name: str
    inner: Inner
