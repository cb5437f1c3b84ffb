"""``update_``'s autograd check, done on every target before anything is written: under
grad mode, autograd refuses an in-place copy into a leaf tensor that requires grad (a
parameter) or into a view of one, as torch's ``copy_`` and the peer's ``update_`` refuse
it. ``update_`` copies every value, an entry's own tensor too (``x.update_(x.to_dict())``);
``set_`` alone skips that one as nothing to write (as the peer's ``set_``), and the writes
done inside :func:`writes_as_set_` follow ``set_``'s rule. A lazy stack's targets are its
members' own tensors (a stacked read is a copy, and members may differ in shape), each
checked, so that a refusal by its last member leaves the first ones unwritten too; a
lazy stack's ``set_`` checks its members' targets the same way, with ``set_``'s rule
(:func:`refuse_grad_member_sets`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from functools import partial
from typing import Any

import torch

from tclass._base.implemented._collection import TensorCollection
from tclass._core._batch import writes_nothing
from tclass._core._keys import key_path
from tclass._core._records import storage_of
from tclass._core._tracing import tracing
from tclass.errors import InPlaceWriteError

__all__ = ["refuse_grad_leaf_writes", "refuse_grad_member_sets", "writes_as_set_"]

# Inside ``writes_as_set_()``: ``update_`` keeps ``set_``'s rule for an entry's own tensor.
_AS_SET: ContextVar[bool] = ContextVar("tclass_update_as_set", default=False)


@contextmanager
def writes_as_set_() -> Iterator[None]:
    """``update_`` calls inside it write as ``set_`` does: an entry's own tensor (or its
    memory) is nothing to write, so autograd is not asked about it. The writes of
    ``apply(inplace=True)``, ``out=`` and a nested ``set_``, as the peer's ``_set_str``;
    a user's ``update_`` copies every value, as torch and the peer's ``update_``."""
    token = _AS_SET.set(True)
    try:
        yield
    finally:
        _AS_SET.reset(token)


def refuse_grad_leaf_writes(
    node: TensorCollection,
    paths: Iterable[tuple[str, ...]],
    keys_to_update: Sequence[Any] | None = None,
    *,
    action: str = "update_",
    member: tuple[int, ...] = (),
) -> None:
    """Refuses ``update_`` of ``node`` at the key ``paths`` (those ``keys_to_update``
    names or holds, when given) before it writes anything where autograd refuses the
    copy (see the module docstring). ``action`` names the write in the message, and
    ``member`` the member of a lazy stack ``node`` is (an indexed write into a lazy
    stack that selects no element: torch refuses it all the same, in each member the
    index picks).

    Raises:
        InPlaceWriteError: (a RuntimeError, as the peer's) naming the entry (and the
            member of a lazy stack).
    """
    if not torch.is_grad_enabled() or tracing() or _AS_SET.get():
        return  # traced: a refused copy_ fails the trace, before anything is written
    allowed = None if keys_to_update is None else [key_path(key) for key in keys_to_update]
    for path in paths:
        if allowed is not None and not any(path[: len(a)] == a for a in allowed):
            continue
        for target, members in _targets(node, path):
            if not target.requires_grad:
                continue
            if _refuses(target):
                raise _refused(path, target, (*member, *members), action=action)


def refuse_grad_member_sets(
    members: Sequence[Any],
    key: Any,
    parts: Sequence[Any],
    keys_to_update: Sequence[Any] | None = None,
) -> None:
    """Refuses a lazy stack's ``set_`` of ``key`` (each of ``members`` taking its part of
    ``parts``; ``key`` ``()`` for the whole members, as its ``update_`` inside
    :func:`writes_as_set_`, limited to ``keys_to_update``) before any member is written,
    where autograd refuses a member's copy: ``set_``'s rule, so a part that is the
    target's own elements writes nothing and passes (see the module docstring).

    Raises:
        InPlaceWriteError: (a RuntimeError, as the peer's) naming the entry and member.
    """
    if not torch.is_grad_enabled():
        return
    path = key_path(key) if key != () else ()
    allowed = None if keys_to_update is None else [key_path(k) for k in keys_to_update]
    for index, (member, part) in enumerate(zip(members, parts, strict=True)):
        for sub, read in _sources(part, ()):
            if allowed is not None and not any(sub[: len(a)] == a for a in allowed):
                continue
            refusing = [
                (target, chain)
                for target, chain in _targets(member, path + sub)
                if target.requires_grad and _refuses(target)
            ]
            source = read() if refusing else None  # a ragged part's entry is read only here
            for target, chain in refusing:
                if source is target or (
                    isinstance(source, torch.Tensor) and writes_nothing(target, source)
                ):
                    continue
                raise _refused(path + sub, target, (index, *chain), action="set_")


def _sources(
    value: Any, path: tuple[str, ...]
) -> Iterator[tuple[tuple[str, ...], Callable[[], Any]]]:
    """The values ``set_`` copies from ``value``, each with its key path below the
    written entry and a function reading it: a collection's (or dict's) leaves, else
    ``value`` itself. Read only where a target may refuse them: a lazy stack's part
    whose members' entries differ in shape has no dense value (its members' own
    ``update_`` writes it member by member)."""
    if isinstance(value, TensorCollection) and not value._is_leaf_node:
        for key in storage_of(value).keys(True, True):
            yield path + key_path(key), partial(value.get, key)
    elif isinstance(value, Mapping):
        for name, item in value.items():
            yield from _sources(item, (*path, *key_path(name)))
    else:
        yield path, partial(_itself, value)


def _itself(value: Any) -> Any:
    return value


def _refuses(target: torch.Tensor) -> bool:
    """Whether autograd refuses an in-place copy into ``target`` (which requires grad):
    a leaf, a view of a leaf that requires grad, or a view that a function returning
    several views made (``unbind``, ``split``, ``chunk``; or a view of one). A view
    whose base does not require grad is one of a leaf view given ``requires_grad_()``
    (a memory-mapped tensor over no elements is a view of a plain one): autograd
    refuses it as a view of that leaf."""
    base = target._base
    if target.is_leaf or base is None:
        return target.is_leaf
    return not base.requires_grad or base.is_leaf or _of_several_views(target)


# autograd's record of how a view was made (private to torch: absent, no view counts)
_CREATION_META = getattr(torch._C._autograd, "_get_creation_meta", None)


def _of_several_views(target: torch.Tensor) -> bool:
    """Whether ``target`` is (a view of) one of the views a function returning several
    made (``unbind``, ``split``...), which autograd refuses to write in place."""
    if _CREATION_META is None or not target._is_view():
        return False  # (autograd keeps no such record for a tensor that is no view)
    return str(_CREATION_META(target)).endswith("MULTI_OUTPUT_NODE")


def _targets(node: Any, path: tuple[str, ...]) -> Iterator[tuple[torch.Tensor, tuple[int, ...]]]:
    """The tensors stored at ``path`` under ``node`` (nothing read: a lazy stack's are
    its members', at any depth), each with the member indices on the way."""
    node = storage_of(node)
    if not isinstance(node, TensorCollection) or node._is_leaf_node:
        return
    if node._copies_without_grad:  # (a TensorDictParams member: it writes outside autograd)
        return
    lazy: Any = node
    if node._is_lazy:
        for index, member in enumerate(lazy.tensordicts):
            for target, members in _targets(member, path):
                yield target, (index, *members)
        return
    if not path:
        return
    found = node.get(path[0], None)
    if len(path) > 1:
        yield from _targets(found, path[1:])
    elif isinstance(found, torch.Tensor):
        yield found, ()


def _refused(
    path: tuple[str, ...], target: torch.Tensor, members: tuple[int, ...], action: str = "update_"
) -> InPlaceWriteError:
    leaf, several = target.is_leaf, _of_several_views(target)
    key = path[0] if len(path) == 1 else path
    what = "a leaf tensor" if leaf else "a view of a leaf tensor"
    what += " that requires grad (a parameter)"
    if not leaf and several:
        what = "a view that unbind / split made of a tensor that requires grad"
    held = ""
    if members:
        chain = "][".join(str(index) for index in members)
        held = f" (held by the lazy stack's member [{chain}]; nothing was written)"
    own = {"update_": ", even of its own values", "set_": ""}.get(action, ", even of no element")
    instead = "update() with new tensors" if action == "update_" else "set() a new tensor"
    params = f" (as TensorDictParams.{action} does)" if action in ("update_", "set_") else ""
    msg = (
        f"Failed to update {key!r} in place ({action}): autograd refuses an in-place write "
        f"into {what}{held} under grad mode{own}; write "
        f"under torch.no_grad(){params}, or {instead}"
    )
    return InPlaceWriteError(msg)
