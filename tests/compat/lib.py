"""The library the compatibility programs run against: ``tclass`` or the peer ``tensordict``.

Each program imports its library through this module, the way user code imports the peer::

    from compat.lib import TensorDict, tensorclass  # was: from tensordict import ...
    from compat import lib as tensordict  # was: import tensordict

The choice is made once per process, from the ``TCLASS_COMPAT_LIB`` environment variable
(``tclass`` by default), before any program is imported (``compat.run`` sets it).
A name the chosen library lacks raises ``ImportError`` at the program's import, as it would
in a user's program.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from types import ModuleType
from typing import Any

LIBRARIES = ("tclass", "tensordict")
NAME = os.environ.get("TCLASS_COMPAT_LIB", "tclass")
if NAME not in LIBRARIES:
    raise ValueError(f"TCLASS_COMPAT_LIB={NAME!r}: expected one of {LIBRARIES}")

module: ModuleType = importlib.import_module(NAME)


class Unavailable(Exception):
    """Raised by a program that needs an optional package which is not installed: the
    program is reported as skipped, not failed."""


def require(package: str) -> ModuleType:
    """Import the optional ``package`` a program needs, or raise ``Unavailable``."""
    if importlib.util.find_spec(package) is None:
        raise Unavailable(f"{package} is not installed")
    return importlib.import_module(package)


def __getattr__(name: str) -> Any:
    """``from compat.lib import X`` and ``lib.X`` read ``X`` from the chosen library."""
    try:
        return getattr(module, name)
    except AttributeError:
        raise AttributeError(f"module {NAME!r} has no attribute {name!r}") from None


def submodule(name: str) -> ModuleType:
    """The chosen library's submodule ``name`` (``submodule("utils")`` is ``tensordict.utils``)."""
    return importlib.import_module(f"{NAME}.{name}")
