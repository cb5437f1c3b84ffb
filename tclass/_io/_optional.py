"""The optional dependencies of the io layer (h5py, zarr, pandas, pyarrow, safetensors,
mosaicml-streaming), imported on first use, never by ``import tclass``."""

from __future__ import annotations

import importlib
from typing import Any

from tclass.errors import MissingDependencyError

__all__ = ["need"]


def need(module: str, extra: str, what: str) -> Any:
    """Imports the optional dependency ``module``, or raises a MissingDependencyError that
    names the extra installing it."""
    try:
        return importlib.import_module(module)
    except ImportError as err:
        package = module.partition(".")[0]
        msg = (
            f"{what} needs {package}, an optional dependency: install it with "
            f"pip install 'tclass[{extra}]' (or pip install {package})"
        )
        raise MissingDependencyError(msg) from err
