"""Opening a store for ``PersistentTensorDict`` (``_persistent.py``), whatever its backend:
the one walk of its groups, and the order its batch sizes are settled in.

An HDF5 file is a graph, not a tree: soft and hard links can make a group hold one of its
ancestors, and a group can be reached by several links (a zarr store is a tree). Opening
walks it once, depth first and without recursion, making each group's collection once (a
group reached again, by its ``identity``, is shared, not walked again: the walk is linear
in the number of groups, however they are linked) and refusing, before anything reads it:

* a link cycle (a group reached again while it is being walked), and groups nested more
  than ``MAX_GROUP_DEPTH`` deep (what reads a collection recurses once per level): a
  ``MetadataError`` (a ``RuntimeError``, as the peer's ``RecursionError``);
* a dangling link: a ``KeyNotFoundError`` naming it;
* data kept in another file (an external link, raw external storage, a virtual dataset
  mapping another file) unless ``allow_external``: an ``UnsafePathError``;
* a dataset torch cannot hold, a per-row list whose declared shape is not its dataset's,
  a ``_tclass`` attribute holding JSON nested too deep or a batch size past int64: a
  ``MetadataError``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

import torch

from tclass._base._tensordict_base import Value
from tclass._core._names import Names
from tclass._engine._nontensor import NonTensorData
from tclass._io.memmap._meta_file import fits_int64, is_sizes
from tclass._io.store._datasets import check_json, common_prefix
from tclass._io.store._protocol import is_group
from tclass.errors import MetadataError

if TYPE_CHECKING:
    from tclass._io.store._persistent import PersistentTensorDict

__all__ = [
    "MAX_GROUP_DEPTH",
    "META",
    "Entries",
    "saved_batch",
    "saved_meta",
    "settle_batch",
    "walk_file",
]

# The deepest nesting of groups a file may have (reading, saving and converting a
# collection recurse once per level, within Python's default recursion limit).
MAX_GROUP_DEPTH = 100
META = "_tclass"  # tclass's attribute of a group: its batch size (a record's schema), JSON
_MAX_META = 1 << 20  # a larger one is not tclass's: ignored


def walk_file(root: PersistentTensorDict) -> None:
    """Makes the nested collections of ``root`` (each group once), checking every
    link, array and ``_tclass`` attribute on the way (see the module docstring)."""
    made = {root._group.identity: root}
    walking = {root._group.identity: root._group.name}  # the groups being walked: a cycle
    saved_batch(root)
    stack = [(root, iter(root._key_names()))]
    while stack:
        node, keys = stack[-1]
        key = next(keys, None)
        if key is None:
            stack.pop()
            del walking[node._group.identity]
            continue
        found = node._group.linked(key, node._where(key))
        if not is_group(found):
            found.check(node._where(key))
            found.stack_shape(node._where(key))
            continue
        identity = found.identity
        if identity in walking:
            msg = (
                f"{node._where(key)} links back to {walking[identity]!r}, which holds it (a "
                "link cycle): tclass refuses cyclic files; remove the link"
            )
            raise MetadataError(msg)
        shared = made.get(identity)
        if shared is not None:
            node._nested[key] = shared
            continue
        if len(stack) > MAX_GROUP_DEPTH:
            msg = (
                f"{node._where(key)}: groups nested more than {MAX_GROUP_DEPTH} deep; tclass "
                "refuses deeper files (damaged or crafted)"
            )
            raise MetadataError(msg)
        child = made[identity] = node._child_of(key, found)
        walking[identity] = found.name
        stack.append((child, iter(child._key_names())))


def saved_meta(node: PersistentTensorDict) -> dict[str, Any]:
    """tclass's metadata of a group (its batch size, a record's schema: the ``_tclass``
    attribute), or {} when there is none or it is malformed (written by another tool).

    Raises:
        MetadataError: its JSON is nested too deep to parse safely.
    """
    raw = node._live().read_meta()
    if raw is None or len(raw) > _MAX_META:
        return {}
    check_json(raw, f"{node._where()}: its {META} attribute")
    try:
        meta = json.loads(raw)
    except ValueError:
        return {}
    return meta if isinstance(meta, dict) else {}


def saved_batch(node: PersistentTensorDict) -> torch.Size | None:
    """The batch size tclass recorded in a group, if any.

    Raises:
        MetadataError: one torch cannot hold.
    """
    sizes = saved_meta(node).get("batch_size")
    if not is_sizes(sizes):
        return None
    if not fits_int64(sizes):
        msg = (
            f"{node._where()}: its {META} attribute gives the batch size {sizes}, too large "
            "for torch (the product of its sizes reaches 2**63); the file is damaged or crafted"
        )
        raise MetadataError(msg)
    return torch.Size(sizes)


def saved_names(node: PersistentTensorDict) -> Names:
    """The dim names recorded in a group (by tclass, or the peer in a zarr store) when
    they fit its batch size (one ``str`` or ``None`` per dim, names not repeated), else
    None (no names)."""
    names = saved_meta(node).get("names")
    ndim = len(node._batch_size)
    if not isinstance(names, list) or len(names) != ndim:
        return None
    if not all(name is None or isinstance(name, str) for name in names):
        return None
    given = [name for name in names if name is not None]
    if not given or len(set(given)) != len(given):
        return None
    return tuple(names)


def settle_batch(root: PersistentTensorDict, batch_dims: int | None, infer: bool = False) -> None:
    """Each group's saved batch size, else (or with ``infer``: always) the largest its
    entries share (at most ``batch_dims`` dims), the nested groups first."""
    for node in _post_order(root):
        saved = None if infer else saved_batch(node)
        if saved is not None:
            node._check_shapes(saved)
            node._batch_size = saved
        else:
            node._batch_size = common_prefix(node._shapes(), batch_dims)


def _post_order(root: PersistentTensorDict) -> list[PersistentTensorDict]:
    """``root`` and its nested collections (as made so far), each once, every nested one
    before its parents."""
    order: list[PersistentTensorDict] = []
    seen = {id(root)}
    stack = [(root, iter(list(root._nested.values())))]
    while stack:
        _, children = stack[-1]
        child = next(children, None)
        if child is None:
            order.append(stack.pop()[0])
        elif id(child) not in seen:
            seen.add(id(child))
            stack.append((child, iter(list(child._nested.values()))))
    return order


class Entries(Mapping[str, Value]):
    """The entries of a PersistentTensorDict as a mapping (read on access, written to the
    file): what a record over one reads its fields through."""

    def __init__(self, owner: PersistentTensorDict) -> None:
        self.owner = owner

    def __getitem__(self, key: str) -> Value:
        return self.owner._entry(key)

    def get(self, key: str, default: Any = None) -> Any:
        """The entry, or ``default`` when absent or None (an ``h5py.Empty`` dataset: for
        a record, an unset field). A closed file is an error, not absent
        (``ClosedFileError`` is a ``KeyError``, which ``Mapping.get`` would swallow)."""
        if not self.owner._has_entry(key):
            return default
        value = self.owner._entry(key)
        return default if isinstance(value, NonTensorData) and value.data is None else value

    def __setitem__(self, key: str, value: Any) -> None:
        self.owner._store_entry(key, value)

    def __iter__(self) -> Iterator[str]:
        return iter(self.owner._key_names())

    def __len__(self) -> int:
        return len(self.owner._key_names())

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self.owner._has_entry(key)
