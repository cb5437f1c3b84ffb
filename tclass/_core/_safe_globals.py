"""What ``torch.load(f, weights_only=True)`` may rebuild of tclass's collections.

torch's weights-only unpickler calls only the functions and classes on its allowlist
(``torch.serialization.add_safe_globals``). Each module that says how a kind of collection
pickles (its ``__reduce__``) puts the rebuild function and the class it names there with
:func:`allow_unpickling` when tclass is imported, so that a saved TensorDict, lazy stack or
Python value loads without the user doing anything.

The rule for what goes on the list ("loading never runs code"): a rebuild function builds
data from data. A class it is handed is checked with :func:`checked_class` to be one of
the kinds it builds (a pickle could name any allowlisted class), and it calls nothing else
it is handed. Not on the list: ``MemoryMappedTensor`` (its pickle names files to map),
``PersistentTensorDict`` (a file to open), ``TensorDictParams`` (an ``nn.Module``), and
users' tensorclasses: a user allows their own with
``torch.serialization.safe_globals([Cls])``, as for any class of theirs.
"""

from __future__ import annotations

from typing import Any, TypeVar

import torch.serialization

from tclass.errors import PickleRefusedError

__all__ = ["allow_unpickling", "checked_class"]

T = TypeVar("T")


def allow_unpickling(*objects: Any) -> None:
    """Puts rebuild functions and the classes their pickles name on torch's allowlist."""
    torch.serialization.add_safe_globals(list(objects))


def checked_class(cls: object, base: type[T], rebuilt: str) -> type[T]:
    """``cls`` if it is ``base`` or a subclass; otherwise the pickle is damaged or crafted.

    Raises:
        PickleRefusedError: (a ``RuntimeError``) naming what the pickle asked for.
    """
    if isinstance(cls, type) and issubclass(cls, base):
        return cls
    msg = (
        f"a pickle asks to rebuild {rebuilt} as {cls!r}, which is not a {base.__name__}; "
        "the pickle is damaged or was not written by tclass"
    )
    raise PickleRefusedError(msg)
