"""``ReadOnlyTensor``: a view of memory that other processes read, which refuses writes.

A collection unpickled over a read-only out-of-band buffer (pickle protocol 5: Ray's
object store hands every reader the same shared, read-only memory) gets its tensors as
views of that buffer without a copy. torch has no read-only tensors: a plain view would
let ``x.add_(1)`` or ``x[0] = 5`` change the object for every reader. Its tensors are
therefore ``ReadOnlyTensor`` views, which raise :class:`~tclass.errors.ReadOnlyError`
(nothing written) on any in-place write: an in-place method or function (``add_``,
``x[i] = v``, ``torch._foreach_mul_``, ``copy_`` into it), an ``out=`` argument, a
functional with ``inplace=True``. Everything else works as on any tensor: the results
are plain tensors, except views of the shared memory (``x[0]``, ``x.view(-1)``,
``x.detach()``), which stay read-only, and ``numpy()``, which gives a read-only array.
``clone()`` (of the tensor or of the collection) gives a writable copy. ``share_memory_()``
copies the memory into a new shared segment and moves the tensor there (for worker
processes), writing nothing of the memory it leaves.

What this cannot stop: writes through the raw memory (``x.untyped_storage()``, DLPack,
``torch.from_numpy`` of a read-only array, which torch makes writable with a warning).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import torch

from tclass.errors import ReadOnlyError

__all__ = ["ReadOnlyTensor", "read_only"]

_disabled = torch._C.DisableTorchFunctionSubclass
_Tensor = torch.Tensor
# In-place methods that never write a tensor's memory: metadata changes, and
# ``share_memory_``, which copies the memory into a new shared segment and moves the
# tensor there (the memory other readers share is left as it was).
_METADATA_ONLY = frozenset({"requires_grad_", "rename_", "detach_", "share_memory_"})
# Where a functional of torch.nn.functional takes ``inplace`` positionally (None: it has
# no such parameter), by function.
_INPLACE_POSITION: dict[Callable[..., Any], int | None] = {}


class ReadOnlyTensor(torch.Tensor):
    """A tensor over memory shared read-only with other processes (see the module doc):
    in-place writes raise :class:`~tclass.errors.ReadOnlyError`; views stay read-only;
    ``clone()`` gives a writable plain tensor."""

    @classmethod
    def __torch_function__(
        cls,
        func: Callable[..., Any],
        types: tuple[type, ...],
        args: Sequence[Any] = (),
        kwargs: Mapping[str, Any] | None = None,
    ) -> Any:
        kwargs = kwargs or {}
        written = _written(func, args, kwargs)
        if written is not None and _holds_read_only(written):
            raise ReadOnlyError(_refusal(func, written))
        with _disabled():
            result = func(*args, **kwargs)
            return _rewrap(result, args)

    def __reduce_ex__(self, protocol: Any) -> Any:
        # A pickle holds the values (a copy), so the unpickled tensor is a plain one.
        return plain(self).__reduce_ex__(protocol)  # type: ignore[no-untyped-call]

    def __deepcopy__(self, memo: dict[int, object]) -> torch.Tensor:
        out = plain(self).clone()
        memo[id(self)] = out
        return out


def read_only(tensor: torch.Tensor) -> ReadOnlyTensor:
    """A read-only alias of ``tensor`` (its memory, no copy)."""
    with _disabled():
        out: ReadOnlyTensor = tensor.as_subclass(ReadOnlyTensor)
    return out


def plain(tensor: torch.Tensor) -> torch.Tensor:
    """A plain alias of ``tensor`` (its memory, no copy): writes through it are not
    checked, so it stays private to tclass."""
    with _disabled():
        return tensor.as_subclass(_Tensor)


def _written(func: Callable[..., Any], args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
    """What ``func(*args, **kwargs)`` writes into (a tensor or a list of them), or None."""
    out = kwargs.get("out")
    if out is not None:
        return out
    name: str = getattr(func, "__name__", "")
    if name[-1:] == "_" and name[:2] != "__":
        return None if name in _METADATA_ONLY else _first(args, kwargs)
    if name == "__setitem__" or kwargs.get("inplace") is True:
        return _first(args, kwargs)
    position = _inplace_position(func)
    if position is not None and len(args) > position and args[position] is True:
        return args[0]
    return None


def _first(args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
    """The tensor an in-place function writes: its first argument, positional or named
    (``torch.nn.init`` passes it as ``tensor=``)."""
    if args:
        return args[0]
    return next((kwargs[name] for name in ("input", "tensor", "self") if name in kwargs), None)


def _inplace_position(func: Callable[..., Any]) -> int | None:
    """Where ``func`` (a functional of ``torch.nn.functional``) takes ``inplace``
    positionally, or None."""
    try:
        return _INPLACE_POSITION[func]
    except (KeyError, TypeError):  # TypeError: an unhashable callable
        pass
    position = None
    if getattr(func, "__module__", None) == "torch.nn.functional":
        try:
            names = list(inspect.signature(func).parameters)
        except (TypeError, ValueError):  # a builtin without a signature
            names = []
        position = names.index("inplace") if "inplace" in names else None
    try:
        _INPLACE_POSITION[func] = position
    except TypeError:
        pass
    return position


def _holds_read_only(written: Any) -> bool:
    if isinstance(written, ReadOnlyTensor):
        return True
    if isinstance(written, (list, tuple)):
        return any(isinstance(item, ReadOnlyTensor) for item in written)
    return False


def _refusal(func: Callable[..., Any], written: Any) -> str:
    name = getattr(func, "__name__", repr(func))
    if isinstance(written, (list, tuple)):
        written = next(item for item in written if isinstance(item, ReadOnlyTensor))
    shape = list(written.shape)
    return (
        f"cannot write into a read-only tensor ({name}, on a {written.dtype} tensor of "
        f"shape {shape}): it is a view of memory that other readers share (a collection "
        "received through Ray's object store, as ray.get, a task's or an actor's argument, "
        "or another read-only pickle buffer, or rows "
        "read from a sharded dataset), and writing would change it for every reader; "
        "write into a copy: "
        "t.clone() for the tensor, or .clone() of the collection it came from"
    )


def _rewrap(result: Any, args: Sequence[Any]) -> Any:
    """``result`` with the tensors that alias a read-only argument's memory read-only."""
    kind = type(result)
    if kind is _Tensor:
        return read_only(result) if _aliases(result, args) else result
    if (kind is tuple or kind is list) and any(type(item) is _Tensor for item in result):
        return kind(_rewrap(item, args) for item in result)
    if kind is np.ndarray:  # numpy() and __array__: numpy can refuse writes itself
        result.flags.writeable = False
    return result


def _aliases(result: torch.Tensor, args: Sequence[Any]) -> bool:
    """Whether ``result`` shares its storage with a read-only tensor in ``args``."""
    storage = result.untyped_storage().data_ptr()
    if not storage:
        return False
    for arg in args:
        if isinstance(arg, ReadOnlyTensor):
            if arg.untyped_storage().data_ptr() == storage:
                return True
        elif isinstance(arg, (list, tuple)):
            for item in arg:
                if isinstance(item, ReadOnlyTensor) and (
                    item.untyped_storage().data_ptr() == storage
                ):
                    return True
    return False
