"""Names of batch dims: checking them, and what each shape operation does to them.

A collection's names are a tuple with one name (any hashable: a ``str`` usually, an
``int`` as the peer allows; dims are addressed by position, so a name is a label and is
never read as a dim) or ``None`` per batch dim, or ``None`` when
no dim has a name (the common case, which costs nothing: every rule below returns
``None`` for it at once). The rules are the peer's: a dim keeps its name wherever the
operation keeps the dim (indexing by a slice or a 1-d index, permutes, stacking...); dims
an operation merges or invents are unnamed; ``reshape`` to another shape unnames every
dim. Pure functions of shapes and names, like ``_batch``.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any, TypeAlias

import torch

from tclass._core._batch import is_first_class_dim
from tclass.errors import DimNameCountError, DimNameError, DimNameTypeError

__all__ = [
    "DimName",
    "Names",
    "as_names",
    "expanded",
    "flattened",
    "indexed",
    "inserted",
    "padded_front",
    "permuted",
    "refined",
    "removed",
    "renamed",
    "resized",
    "show",
    "stacked",
    "unflattened",
    "unsaved_name",
]

DimName: TypeAlias = Hashable  # a str usually; None for an unnamed dim
Names: TypeAlias = "tuple[DimName, ...] | None"


def show(names: Names, ndim: int) -> list[DimName]:
    """The names as the public ``names`` property lists them (``None`` per unnamed dim)."""
    return [None] * ndim if names is None else list(names)


def as_names(value: object, ndim: int, where: str = "names") -> Names:
    """Checks user-given names: one name or ``None`` per batch dim, no repeats. A name
    is any hashable, as in the peer (``td.names = [0, 1]``); saving checks that it is a
    JSON scalar (see ``unsaved_name``).

    Raises:
        DimNameError: for a wrong count or a repeated name (a ``ValueError``, as the
            peer raises).
        DimNameTypeError: for a name that is not hashable (a ``TypeError``, as the
            peer's ``unhashable type``), or names that are not a sequence.
    """
    if value is None:
        return None
    text = value if isinstance(value, str) else None
    if text is not None:
        value = [text]  # one name (the peer's would take each letter as a name)
    if not isinstance(value, Sequence):
        msg = (
            f"{where} must be a sequence of names or None (one per batch dim), got "
            f"{type(value).__name__} {value!r}; pass e.g. {where}=['batch', 'time']"
        )
        raise DimNameTypeError(msg)
    names = tuple(value)
    for name in names:
        if not isinstance(name, Hashable):
            msg = (
                f"{where}: every name must be hashable (a str, an int...) or None, got "
                f"{name!r} in {list(names)}; name the dims with strings (None for an "
                "unnamed dim)"
            )
            raise DimNameTypeError(msg)
    if len(names) != ndim:
        msg = (
            f"{where}: {list(names)} names {len(names)} dims but the batch has {ndim} (the "
            "length of the dimension names must equate the tensordict batch_dims); give one "
            "name (or None) per batch dim"
        )
        if text is not None:
            msg += f" in a list ({where}={text!r} is one name: a str names one dim)"
        raise DimNameCountError(msg)
    _check_unique(names, where)
    return None if all(name is None for name in names) else names


def unsaved_name(names: Names) -> object:
    """The first name that a ``meta.json`` would not give back as it is (``None`` if
    none): JSON keeps ``str``, ``int``, ``float`` and ``bool``; a tuple would come back
    as a list (which the peer's loader then refuses), another object not at all."""
    for name in names or ():
        if name is not None and type(name) not in (str, int, float, bool):
            return name
    return None


def _check_unique(names: Sequence[DimName], where: str) -> None:
    given = [name for name in names if name is not None]
    if len(set(given)) != len(given):
        msg = f"{where}: dim names must be unique, got {list(names)}"
        raise DimNameError(msg)


def _normal(names: Sequence[DimName]) -> Names:
    return None if all(name is None for name in names) else tuple(names)


def collapsed(names: Names) -> Names:
    """``None`` for names that name no dim (all ``None``): the one spelling of unnamed."""
    return None if names is None else _normal(names)


# --- refining and renaming -------------------------------------------------------------


def refined(current: Names, requested: Sequence[Any], ndim: int) -> Names:
    """``refine_names(*requested)``: ``...`` stands for the dims not listed (they keep
    their names); an unnamed dim takes the listed name (or stays unnamed for ``None``); a
    named dim must be listed with its own name, as in torch and the peer.

    Raises:
        DimNameError: if a named dim is listed with another name or ``None`` (a
            ``RuntimeError`` too, as the peer raises), or the count is wrong.
    """
    have = show(current, ndim)
    wanted = _spell_out(list(requested), ndim)
    out: list[DimName] = []
    for old, new in zip(have, wanted):
        if new is Ellipsis:
            out.append(old)
            continue
        if old is not None and new != old:
            msg = (
                f"refine_names: cannot coerce TensorDict names {have} to {wanted}: a dim "
                f"named {old!r} cannot become {new!r} (use rename for that, or list {old!r} or "
                "'...')"
            )
            raise DimNameError(msg)
        out.append(new)
    return as_names(out, ndim, "refine_names")


def _spell_out(requested: list[Any], ndim: int) -> list[Any]:
    if requested.count(Ellipsis) > 1:
        msg = "refine_names: at most one '...' may stand for the unlisted dims"
        raise DimNameError(msg)
    if Ellipsis in requested:
        at = requested.index(Ellipsis)
        fill = ndim - (len(requested) - 1)
        if fill < 0:
            msg = f"refine_names: {requested} lists more dims than the batch has ({ndim})"
            raise DimNameCountError(msg)
        requested = requested[:at] + [Ellipsis] * fill + requested[at + 1 :]
    if len(requested) != ndim:
        more = len(requested) > ndim
        msg = (
            f"refine_names: {requested} names {len(requested)} dims but the batch has {ndim}"
            f"{' (more names than dims)' if more else ''}; give one name (or None) per batch dim"
        )
        raise (DimNameCountError if more else DimNameError)(msg)
    return requested


def renamed(
    current: Names, positional: Sequence[DimName], mapping: Mapping[Any, DimName], ndim: int
) -> Names:
    """``rename(*names)`` (all dims at once; a single ``None`` unnames every dim) or
    ``rename(old=new, ...)``.

    Raises:
        DimNameError: for a mapping key that names no dim, both forms at once or neither
            (``rename()``, as the peer).
    """
    if not positional and not mapping:
        msg = "rename: no names given; pass the new name of every dim, or old=new pairs"
        raise DimNameError(msg)
    if positional and mapping:
        msg = "rename takes either the new names of every dim or old=new pairs, not both"
        raise DimNameError(msg)
    if mapping:
        have = show(current, ndim)
        unknown = [old for old in mapping if old not in have]
        if unknown:
            msg = f"rename: {unknown} are not names of this collection's dims {have}"
            raise DimNameError(msg)
        return as_names(
            [mapping.get(n, n) if n is not None else None for n in have], ndim, "rename"
        )
    if len(positional) == 1 and positional[0] is None:
        return None
    return as_names(list(positional), ndim, "rename")


# --- what shape operations do to names ---------------------------------------------------


def resized(names: Names, new_ndim: int) -> Names:
    """A new batch size set directly: names of kept leading dims stay, new dims have none."""
    if names is None:
        return None
    return _normal((names + (None,) * new_ndim)[:new_ndim])


def removed(names: Names, dims: Sequence[int]) -> Names:
    if names is None:
        return None
    return _normal([name for i, name in enumerate(names) if i not in dims])


def inserted(names: Names, dim: int) -> Names:
    if names is None:
        return None
    return names[:dim] + (None,) + names[dim:]


def padded_front(names: Names, count: int) -> Names:
    """``count`` new unnamed leading dims (``expand`` to more dims)."""
    return None if names is None or count < 0 else (None,) * count + names


def right_aligned(names: Names, new_ndim: int) -> Names:
    """The names of a new batch size of ``new_ndim`` dims built like this one
    (``new_ones(*size)``...): the last dims keep the last names, as the peer does; new
    leading dims have none. A 0-d batch has none."""
    if names is None or new_ndim == 0:
        return None
    return _normal(((None,) * new_ndim + names)[-new_ndim:])


def expanded(names: Names, new_ndim: int) -> Names:
    return padded_front(names, new_ndim - len(names)) if names is not None else None


def permuted(names: Names, order: Sequence[int]) -> Names:
    return None if names is None else tuple(names[d] for d in order)


def flattened(names: Names, start: int, end: int) -> Names:
    if names is None:
        return None
    return _normal(names[:start] + (None,) + names[end + 1 :])


def unflattened(names: Names, dim: int, count: int) -> Names:
    """``unflatten(dim, sizes)`` with ``count`` sizes: the dim's name goes to the last
    new dim, as the peer does."""
    if names is None:
        return None
    return names[:dim] + (None,) * (count - 1) + (names[dim],) + names[dim + 1 :]


def stacked(all_names: Sequence[Names], dim: int) -> Names:
    """Members with the same names give those names plus an unnamed stack dim; members
    whose names differ give none."""
    first = all_names[0]
    if first is None or any(names != first for names in all_names):
        return None
    return first[:dim] + (None,) + first[dim:]


def indexed(names: Names, items: tuple[Any, ...]) -> Names:
    """Names after indexing with ``items`` (an index tuple with ``...`` spelled out).

    A dim kept by a slice keeps its name; a ``None`` item adds an unnamed dim; an int
    removes its dim. The dims of the advanced block (tensor, list and mask indices,
    placed where torch places them) are named as the peer names them: a block dim takes
    the name of the one input dim whose indices vary along it (or, if none varies, of the
    one input dim of the indices that have it); a dim fed by several input dims (indices
    that broadcast together, an N-d mask) is unnamed, and a name two block dims would
    take stays only on the one along which its index varies, so names stay unique.
    """
    if names is None:
        return None
    advanced = [i for i, item in enumerate(items) if _is_advanced(item)]
    out: list[DimName] = []
    sources: list[tuple[tuple[int | None, ...], range]] = []
    block_at = -1
    dim = 0
    for position, item in enumerate(items):
        if item is None:
            out.append(None)
        elif (
            type(item) is int
            or (isinstance(item, torch.Tensor) and _is_scalar_int(item))
            or is_first_class_dim(item)  # bound to the dim object: out of the batch dims
        ):
            dim += 1
        elif type(item) is slice:
            out.append(names[dim])
            dim += 1
        else:
            shape, consumed = _advanced_shape(item)
            sources.append((shape, range(dim, dim + consumed)))
            if position == advanced[0]:
                block_at = len(out)
            dim += consumed
    if block_at >= 0:
        between = items[advanced[0] : advanced[-1] + 1]  # ints select first, as torch's
        adjacent = not any(item is None or type(item) is slice for item in between)
        at = block_at if adjacent else 0
        out[at:at] = _block_names(names, sources)
    out.extend(names[dim:])
    return _normal(out)


def _advanced_shape(item: Any) -> tuple[tuple[int | None, ...], int]:
    """The shape an advanced index gives the block (``None``: a mask's unknown count,
    which varies), and how many input dims it consumes. A 0-d bool uses no dim."""
    tensor = item if isinstance(item, torch.Tensor) else torch.as_tensor(item)
    if tensor.dtype is torch.bool:
        return (None,) if tensor.ndim else (1,), tensor.ndim
    return tuple(tensor.shape), 1


def _block_names(names: tuple[DimName, ...], sources: list[Any]) -> list[DimName]:
    """The names of the advanced block's dims (see :func:`indexed`), right-aligned as
    the indices broadcast."""
    ndim = max(len(shape) for shape, _ in sources)
    out: list[tuple[DimName, bool]] = []
    for d in range(-ndim, 0):
        having = [(shape[d], used) for shape, used in sources if len(shape) >= -d]
        varying = [used for size, used in having if size != 1]
        dims = set().union(*(varying or [used for _, used in having]))
        out.append((names[dims.pop()] if len(dims) == 1 else None, bool(varying)))
    block = [name for name, _ in out]
    return [
        name
        if name is None
        or block.count(name) == 1
        or (varies and [v for other, v in out if other == name].count(True) == 1)
        else None
        for name, varies in out
    ]


def _is_scalar_int(item: torch.Tensor) -> bool:
    return item.ndim == 0 and item.dtype is not torch.bool


def _is_advanced(item: object) -> bool:
    if isinstance(item, torch.Tensor):
        return not _is_scalar_int(item)
    if is_first_class_dim(item):
        return False
    # a Python bool indexes as a 0-d mask (a new dim of size 1 or 0), a range as a list
    return isinstance(item, (list, tuple, range, bool)) or hasattr(item, "__array__")
