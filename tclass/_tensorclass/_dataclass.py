"""``from_dataclass``: a dataclass type or instance as a tensorclass (or a TensorDict).

A dataclass *type* becomes a new tensorclass named ``<Name>_tc`` with the same fields
(defaults and factories included), or, with ``inplace=True``, a tensorclass of the same
name built from it. A dataclass *instance* becomes an instance of such a class (or of
``dest_cls``), holding deep copies of its values (the values themselves under
``tensor_only``, as the peer). ``TensorDict.from_dataclass`` gives a
TensorDict instead, nested dataclasses becoming nested TensorDicts.
"""

from __future__ import annotations

import copy
import dataclasses
import typing
import warnings
from typing import Any

from typing_extensions import Unpack

from tclass._base._provided import TENSORCLASS
from tclass._core._batch import BatchSizeLike, as_batch_size
from tclass._core._class_options import ClassOptions, check_option_names, named_options
from tclass._core._device import DeviceLike
from tclass._interop._bridges import dataclass_as_dict
from tclass._interop._constructors import infer_batch_size
from tclass._tensorclass._decorator import is_tensorclass, tensorclass
from tclass._tensorclass._generated import generated_build
from tclass.errors import BatchSizeError, EntryTypeError, SharedDefaultWarning

__all__ = ["dataclass_to_collection", "from_dataclass"]


@named_options
def from_dataclass(
    obj: Any,
    *,
    dest_cls: type | None = None,
    auto_batch_size: bool = False,
    batch_dims: int | None = None,
    batch_size: BatchSizeLike = None,
    inplace: bool = False,
    device: DeviceLike = None,
    **options: Unpack[ClassOptions],
) -> Any:
    """A tensorclass from a dataclass type, or a tensorclass instance from a dataclass
    instance.

    Args:
        obj: the dataclass type or instance.
        dest_cls: for an instance, the tensorclass to build (the options are then its own).
        auto_batch_size: for an instance, infer the batch size (the largest leading shape
            the tensors share, at most ``batch_dims`` dims); exclusive with ``batch_size``.
        batch_size: for an instance, the batch size of the result (default ``[]``).
        inplace: for a type, keep its name instead of adding ``_tc``.
        device: for an instance, the device of the result.
        options: the new class's options (``frozen``, ``autocast``...: their list is
            ``tclass/_core/_class_options.py``).

    Returns:
        A tensorclass (for a type; a tensorclass type is returned as it is) or a record.

    Raises:
        ArgumentError: (a ``TypeError``) for a keyword that is no class option.
        EntryTypeError: if ``obj`` is not a dataclass type or instance.
        BatchSizeError: if both ``auto_batch_size`` and ``batch_size`` are given.
    """
    check_option_names(options, "from_dataclass")
    if isinstance(obj, type):
        if is_tensorclass(obj):
            return obj
        _check_dataclass(obj)
        return _tensorclass_of(obj, obj.__name__ if inplace else f"{obj.__name__}_tc", options)
    _check_dataclass(obj)
    if auto_batch_size and batch_size is not None:
        msg = "from_dataclass: pass either auto_batch_size=True or batch_size, not both"
        raise BatchSizeError(msg)
    if dest_cls is None:
        with warnings.catch_warnings():  # the defaults are not used: the values are copied
            warnings.simplefilter("ignore", SharedDefaultWarning)
            dest_cls = _tensorclass_of(type(obj), f"{type(obj).__name__}_tc", options)
    # A tensor_only record holds the instance's tensors and collections themselves, as the
    # peer; otherwise it holds copies (its Python values may be mutable), nested dataclasses
    # as dicts, as ``dataclasses.asdict`` gives them (the peer's): a field annotated with a
    # tensorclass casts such a dict to its class.
    info = getattr(dest_cls, "__tclass_info__", None)
    keep = info is not None and info.options["tensor_only"]
    copied = {} if keep else dataclasses.asdict(obj)
    values = {
        f.name: getattr(obj, f.name) if keep else copied[f.name]
        for f in dataclasses.fields(obj)
        if f.init
    }
    if auto_batch_size:
        batch_size = infer_batch_size(values, batch_dims)
    return dest_cls(**values, batch_size=batch_size, device=device)


def dataclass_to_collection(
    cls: Any,
    dataclass: Any,
    *,
    dest_cls: type | None = None,
    auto_batch_size: bool = False,
    batch_dims: int | None = None,
    as_tensorclass: bool = False,
    device: DeviceLike = None,
    batch_size: BatchSizeLike = None,
) -> Any:
    """``TensorDict.from_dataclass``: one entry per field (nested dataclasses as nested
    TensorDicts), or :func:`from_dataclass` with ``as_tensorclass=True``."""
    if as_tensorclass:
        return from_dataclass(
            dataclass,
            dest_cls=dest_cls,
            auto_batch_size=auto_batch_size,
            batch_dims=batch_dims,
            batch_size=batch_size,
            device=device,
        )
    _check_dataclass(dataclass)
    if isinstance(dataclass, type):
        msg = (
            "TensorDict.from_dataclass takes a dataclass instance; pass as_tensorclass=True "
            "for a type"
        )
        raise EntryTypeError(msg)
    if auto_batch_size and batch_size is not None:
        msg = "from_dataclass: pass either auto_batch_size=True or batch_size, not both"
        raise BatchSizeError(msg)
    if auto_batch_size:
        return cls.from_dict(
            dataclass_as_dict(dataclass),
            auto_batch_size=True,
            batch_dims=batch_dims,
            device=device,
        )
    # Built as the constructor builds it, as the peer: a number is a 0-dim tensor, which
    # cannot start with a batch size that has dims (from_dict would read it as one value).
    fields, batch = dataclass_as_dict(dataclass), as_batch_size(batch_size)
    if is_tensorclass(cls):  # the fields as arguments: __post_init__ runs, as the peer's
        return generated_build(cls, **fields, batch_size=batch, device=device)
    return cls(fields, batch_size=batch, device=device)


def _check_dataclass(obj: object) -> None:
    if not dataclasses.is_dataclass(obj):
        kind = obj.__name__ if isinstance(obj, type) else type(obj).__name__
        msg = f"from_dataclass expects a dataclass type or instance, got {kind}"
        raise EntryTypeError(msg)


def _tensorclass_of(source: type, name: str, options: ClassOptions) -> type:
    """A new tensorclass named ``name`` with the fields of the dataclass ``source``."""
    try:
        hints = typing.get_type_hints(source, include_extras=True)
    except (NameError, TypeError):  # resolved later, on first use, from the strings
        hints = {}
    annotations: dict[str, Any] = {}
    namespace: dict[str, Any] = {
        "__module__": source.__module__,
        "__qualname__": source.__qualname__.rsplit(".", 1)[0] + "." + name
        if "." in source.__qualname__
        else name,
        "__doc__": source.__doc__,
        "__annotations__": annotations,
    }
    for field in dataclasses.fields(source):
        annotations[field.name] = hints.get(field.name, field.type)
        spec = copy.copy(field)
        namespace[field.name] = dataclasses.field(
            default=spec.default,
            default_factory=spec.default_factory,
            init=spec.init,
            repr=spec.repr,
            compare=spec.compare,
            metadata=spec.metadata,
            kw_only=spec.kw_only,
        )
    plain = type(name, (), namespace)
    return tensorclass(**options)(plain)


# --- implementations of the base layer's methods (``_base/_provided.py``) ---------------

TENSORCLASS.dataclass_to_collection = dataclass_to_collection
