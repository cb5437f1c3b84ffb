"""The leaves of a ``TensorDictParams`` (``_params.py``): how its tensors become
parameters and buffers (the peer's rule), the module's live views of them
(:class:`ModuleLeaves`, its ``_parameters`` / ``_buffers``), and the walks over its
TensorDict that ``to``, ``clone``, ``memmap_``, ``load_memmap_`` and ``state_dict`` use."""

from __future__ import annotations

from collections.abc import Callable, ItemsView, Iterator, Mapping, MutableMapping, ValuesView
from typing import Any, Protocol, cast

import torch
from torch import nn

from tclass._base._tensordict_base import Value
from tclass._base.implemented._collection import TensorCollection
from tclass._core._records import is_record, storage_of
from tclass._engine._lazy._stack import LazyStackedTensorDict
from tclass._engine._nontensor import _NonTensorNode
from tclass._engine._td import TensorDict
from tclass.errors import HeterogeneousEntryError, KeyNotFoundError, UnknownFieldError

__all__ = [
    "ModuleLeaves",
    "SlotKinds",
    "adopt_saved",
    "as_buffer",
    "as_param",
    "check_field",
    "convert_tensors",
    "flat_items",
    "forget_folders",
    "kinds_like",
    "leaf_like",
    "map_leaves",
    "read_held",
    "same_layout",
    "set_field",
    "tensor_leaves",
]

_FLOATS = (torch.float16, torch.float32, torch.float64)


class _Owner(Protocol):
    """What :class:`ModuleLeaves` reads of its ``TensorDictParams``."""

    _param_td: TensorDict
    _slots: SlotKinds


def as_param(tensor: torch.Tensor) -> torch.Tensor:
    """A float tensor as an ``nn.Parameter`` (the peer's rule), another as a buffer.

    A tensor subclass whose ``detach()`` gives a plain tensor (a loaded checkpoint's
    ``MemoryMappedTensor``) is refused by ``nn.Parameter``; its plain view over the same
    storage (the mapped file) becomes the parameter instead."""
    if isinstance(tensor, nn.Parameter) or getattr(tensor, "_is_buffer", False):
        return tensor
    if tensor.dtype in _FLOATS:
        return nn.Parameter(tensor if type(tensor) is torch.Tensor else tensor.detach())
    return nn.Buffer(tensor)


def as_buffer(tensor: torch.Tensor) -> torch.Tensor:
    """``no_convert=True``: tensors that are not parameters become buffers (a tensor in
    an autograd graph is kept as it is)."""
    if isinstance(tensor, nn.Parameter) or tensor.requires_grad:
        return tensor
    return nn.Buffer(tensor)


def leaf_like(
    tensor: torch.Tensor, original: torch.Tensor, parameter: bool | None = None
) -> torch.Tensor:
    """A converted leaf (``to``, ``cpu``) made of the kind of the leaf it replaces
    (``parameter``: of its slot's kind, where that differs from its type's)."""
    if tensor is original:
        return tensor
    if parameter is None:
        parameter = isinstance(original, nn.Parameter)
    if parameter and (tensor.is_floating_point() or tensor.is_complex()):
        return nn.Parameter(tensor.detach(), requires_grad=original.requires_grad)
    return as_buffer(tensor)


def convert_tensors(value: Any, convert: Callable[[torch.Tensor], torch.Tensor]) -> Any:
    """``value`` with its tensors converted (a collection's leaves, in place of it)."""
    if isinstance(value, torch.Tensor):
        return convert(value)
    if isinstance(value, TensorCollection):  # (a Mapping too: keeps its batch size)
        if value._is_leaf_node:
            return value
        out = value._map_values(lambda leaf: convert_tensors(leaf, convert), value.batch_size)
        if isinstance(storage_of(out), LazyStackedTensorDict):
            _check_dense(out)
        return out
    if isinstance(value, Mapping):
        return {key: convert_tensors(item, convert) for key, item in value.items()}
    return value


def check_field(record: Any, key: Any) -> None:
    """Refuses a top-level key that is not a field of ``record``, the record class a
    params wraps (``None``: a params of a TensorDict, which takes any key)."""
    if record is None:
        return
    top = key[0] if isinstance(key, tuple) and key else key
    fields = record.__tclass_info__.field_names  # (records are duck-typed here)
    if isinstance(top, str) and top not in fields:
        name = record.__name__
        msg = (
            f"TensorDictParams of a {name}: {top!r} is not a field of {name} (fields: "
            f"{', '.join(fields)}); declare it in {name}, or wrap a TensorDict "
            "(record.to_tensordict()) to hold other entries"
        )
        raise UnknownFieldError(msg)


def set_field(
    record: Any,
    td: TensorDict,
    key: Any,
    value: Any,
    inplace: bool,
    convert: Callable[[torch.Tensor], torch.Tensor],
) -> None:
    """Sets ``key`` in ``td``, the storage of a params of the record class ``record``
    (``None`` for a TensorDict), its tensors converted by ``convert``. A field of the
    record is set as the record's own ``set`` sets it (the peer's params of a record sets
    through the record it holds): cast by its annotation (an ``autocast`` class's ``"3"``
    into an ``int`` field is ``3``) and checked against its constraints, a tensor the
    cast makes of a value (a list) converted too. A nested key, and a field of a frozen
    class (whose record over ``td`` would lock it), are set in ``td`` as they are."""
    value = convert_tensors(value, convert)
    name = key if type(key) is str else key[0] if type(key) is tuple and len(key) == 1 else None
    if record is None or name is None or record.__tclass_info__.options["frozen"]:
        td.set(key, value, inplace=inplace)
        return
    record._from_tensordict_unchecked(td).set(name, value, inplace=inplace)
    written = td._entries().get(name)
    if isinstance(written, torch.Tensor) and written is not value:
        td._put(name, convert(written))


def _check_dense(stack: Any) -> None:
    """A lazy stack held in a TensorDictParams: each entry must stack (its members'
    parameters are saved and read by its stacked keys), as the peer's ``set`` checks."""
    try:
        for _ in tensor_leaves(stack, members=False):
            pass
    except HeterogeneousEntryError as error:
        msg = (
            f"TensorDictParams cannot hold this lazy stack: {error}. Give its members the "
            "same shapes (tclass.pad_sequence) or hold them at separate keys"
        )
        raise HeterogeneousEntryError(msg) from None


def tensor_leaves(
    td: TensorCollection, prefix: str = "", members: bool = True
) -> Iterator[tuple[str, TensorCollection, str, Value]]:
    """(dotted name, parent collection, key, leaf) for every tensor leaf, depth first.
    A lazy stack's are its members' own (``"l.0.c"``): the parameters and buffers the
    module lists, saves and loads, which an optimizer trains (``members=False``: the
    stacked copies its keys read, which are no leaves to train nor to load into)."""
    if members and isinstance(storage_of(td), LazyStackedTensorDict):  # a record's too
        for index, member in enumerate(storage_of(td).tensordicts):
            yield from tensor_leaves(member, f"{prefix}{index}.", members)
        return
    for key, value in td._items():
        if isinstance(value, torch.Tensor):
            yield prefix + key, td, key, value
        elif isinstance(value, TensorCollection) and not isinstance(value, _NonTensorNode):
            yield from tensor_leaves(value, f"{prefix}{key}.", members)


def adopt_saved(td: TensorDict, saved: Any, adopt: Callable[[Any, Any], None]) -> None:
    """``adopt(td, saved)`` gives ``td`` (a TensorDictParams') the saved leaves; then the
    same parameter and buffer objects hold their data (``memmap_``), a lazy stack's
    members' too."""
    before = [(parent, key, cast(torch.Tensor, leaf)) for _, parent, key, leaf in tensor_leaves(td)]
    adopt(td, saved)
    with td.unlock_(), torch.no_grad():
        for parent, key, leaf in before:
            holder = cast(TensorDict, storage_of(parent))  # a record's: its storage
            mapped = cast(torch.Tensor, holder._entry(key))
            leaf.data = mapped.detach()  # a plain tensor over the mapped file
            with holder.unlock_():  # a lazy stack's member is locked with it
                holder._put(key, leaf)


def read_held(held: Any) -> Any:
    """A file held in a TensorDictParams, read into memory (a record over one: the
    record over the copy read)."""
    read = storage_of(held).to_tensordict()
    return type(held)._from_tensordict_unchecked(read) if is_record(held) else read


def same_layout(leaf: torch.Tensor, loaded: Value) -> bool:
    return (
        isinstance(loaded, torch.Tensor)
        and leaf.shape == loaded.shape
        and leaf.dtype == loaded.dtype
        and leaf.device == loaded.device
    )


def forget_folders(td: TensorCollection) -> None:
    """Detaches ``td`` and its nested TensorDicts from the folder they were loaded from."""
    if isinstance(td, TensorDict):
        td._attach_folder(None)
    for _, value in td._items():
        if isinstance(value, TensorCollection) and not isinstance(value, _NonTensorNode):
            forget_folders(storage_of(value))


class SlotKinds:
    """Which entries of a TensorDictParams sit in a slot of the other kind than their
    type says, as ``nn.Module``'s ``_parameters`` / ``_buffers`` remember: ``to_module``
    and ``torch.func.functional_call`` put a plain tensor (one requiring grad) in a
    parameter's slot, or a parameter in a buffer's; the module keeps listing the slot's
    kind (``named_parameters``, so optimizers see it) until the slot holds another tensor.

    ``held`` maps a dotted name (from the root TensorDictParams) to the tensor written
    there and its slot's kind; an entry counts only while that very tensor is the leaf
    (a later ``set`` of a new tensor classifies it by its type again, as the peer's).
    A nested view (``params.encoder``) shares its root's ``held``, under a ``prefix``."""

    def __init__(self, held: dict[str, tuple[torch.Tensor, bool]] | None = None, prefix: str = ""):
        self.held = {} if held is None else held
        self.prefix = prefix

    def nested(self, key: str) -> SlotKinds:
        """The slot kinds of the nested collection at ``key`` (shared with these)."""
        return SlotKinds(self.held, f"{self.prefix}{key}.")

    def is_param(self, name: str, leaf: Value) -> bool:
        held = self.held.get(self.prefix + name)
        if held is not None and held[0] is leaf:
            return held[1]
        return isinstance(leaf, nn.Parameter)

    def note(self, name: str, value: Any, parameter: bool) -> None:
        """``value`` was written into the slot ``name`` of kind ``parameter``."""
        if isinstance(value, torch.Tensor) and isinstance(value, nn.Parameter) != parameter:
            self.held[self.prefix + name] = (value, parameter)
        else:
            self.held.pop(self.prefix + name, None)

    def prune(self, leaves: Mapping[str, Value]) -> None:
        """Forgets the slots (under ``prefix``) whose tensor is no longer the leaf."""
        start = len(self.prefix)
        for name, (tensor, _) in list(self.held.items()):
            if name.startswith(self.prefix) and leaves.get(name[start:]) is not tensor:
                del self.held[name]

    def saved(self, td: TensorCollection) -> dict[str, bool]:
        """The kinds held for ``td``'s leaves, by name (what a pickle or deepcopy keeps:
        :meth:`restored` finds the copied tensors by these names)."""
        self.prune({name: leaf for name, _, _, leaf in tensor_leaves(td)})
        start = len(self.prefix)
        return {
            name[start:]: kind
            for name, (_, kind) in self.held.items()
            if name.startswith(self.prefix)
        }

    @classmethod
    def restored(cls, kinds: Mapping[str, bool], td: TensorCollection) -> SlotKinds:
        """The slot kinds :meth:`saved` gave, over the leaves of ``td`` (a copy)."""
        leaves = {name: leaf for name, _, _, leaf in tensor_leaves(td)}
        held = {name: (leaves[name], kind) for name, kind in kinds.items() if name in leaves}
        return cls(cast(dict[str, tuple[torch.Tensor, bool]], held))


class ModuleLeaves(MutableMapping[str, Any]):
    """The parameters (or the buffers) of a TensorDictParams: its tensor leaves that are
    (or are not) ``nn.Parameter``, by dotted name, read from and written to its
    TensorDict. Installed as the module's ``_parameters`` / ``_buffers``. A leaf's kind is
    its slot's (:class:`SlotKinds`): its type's unless written here as the other kind."""

    def __init__(self, owner: _Owner, parameters: bool) -> None:
        self.owner, self.parameters = owner, parameters

    def _found(self) -> dict[str, tuple[TensorCollection, str, Value]]:
        wanted, slots = self.parameters, self.owner._slots
        leaves = tensor_leaves(self.owner._param_td)
        if not slots.held:  # (every leaf of its type's kind)
            return {
                name: (parent, key, leaf)
                for name, parent, key, leaf in leaves
                if isinstance(leaf, nn.Parameter) == wanted
            }
        found = {name: (parent, key, leaf) for name, parent, key, leaf in leaves}
        slots.prune({name: entry[2] for name, entry in found.items()})
        return {
            name: entry for name, entry in found.items() if slots.is_param(name, entry[2]) == wanted
        }

    def __getitem__(self, name: str) -> Any:
        return self._found()[name][2]

    def __setitem__(self, name: str, value: Any) -> None:
        # nn.Module replaces entries it holds. A leaf of the other kind is found too:
        # to_module puts a tensor that is no parameter (one requiring grad, vmap's) in
        # a parameter's place, and gives the parameter back through ``_parameters`` on
        # exit; the slot stays a parameter's meanwhile (``_slots``), as nn.Module's.
        found = {n: (parent, key) for n, parent, key, _ in tensor_leaves(self.owner._param_td)}
        if name not in found:  # register_parameter / register_buffer of a new name
            self._add(name, value)
            return
        parent, key = found[name]
        with self._unlocked(parent):
            cast(TensorDict, parent)._store_entry(key, value)
        self.owner._slots.note(name, value, self.parameters)  # the slot keeps its kind

    def _add(self, name: str, value: Any) -> None:
        if not isinstance(value, torch.Tensor) or name in self.owner._param_td.keys():
            kind = "parameter" if self.parameters else "buffer"
            msg = (
                f"TensorDictParams: cannot register {name!r} as a {kind}: it holds tensors "
                f"only, and {name!r} is "
                + ("taken" if isinstance(value, torch.Tensor) else f"{value!r}")
                + "; set a tensor under a new key (inside unlock_())"
            )
            raise KeyNotFoundError(msg)
        root = self.owner._param_td
        with root.unlock_():
            root.set(name, value)
        self.owner._slots.note(name, value, self.parameters)

    def __delitem__(self, name: str) -> None:
        parent, key, _ = self._found()[name]
        with self._unlocked(parent):
            cast(TensorDict, parent)._remove_entry(key)
        self.owner._slots.note(name, None, self.parameters)

    def _unlocked(self, parent: TensorCollection) -> TensorDict:
        """What to unlock (in a ``with`` block) to replace an entry of ``parent``: the
        root, when it is locked (a nested TensorDict of a locked tree cannot unlock
        alone), else ``parent`` itself."""
        root = self.owner._param_td
        return cast(TensorDict, root if root.is_locked else parent).unlock_()

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._found()))

    def items(self) -> ItemsView[str, Any]:
        """One walk of the leaves (``nn.Module.named_parameters`` lists them so; the
        mapping's default reads each key again, a walk per key)."""
        return {name: entry[2] for name, entry in self._found().items()}.items()

    def values(self) -> ValuesView[Any]:
        """One walk of the leaves, as :meth:`items`."""
        return {name: entry[2] for name, entry in self._found().items()}.values()

    def __len__(self) -> int:
        return len(self._found())

    def __contains__(self, name: object) -> bool:
        return name in self._found()

    def __repr__(self) -> str:
        return repr(dict(self.items()))


def flat_items(state: Mapping[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    for key, value in state.items():
        if isinstance(value, Mapping):
            yield from flat_items(value, f"{prefix}{key}.")
        else:
            yield prefix + key, value


def map_leaves(
    td: TensorDict, fn: Callable[[torch.Tensor], torch.Tensor], new_nodes: bool = False
) -> TensorDict:
    """``td`` with ``fn`` of each tensor, a lazy stack's members' and a record's fields'
    included (new lazy stacks and records over them: a clone shares none of their
    tensors); ``new_nodes``: its Python-value nodes new ones over the same values (a
    clone shares no node, nor the lock of its source's tree)."""

    def one(value: Any) -> Any:
        if isinstance(value, torch.Tensor):
            return fn(value)
        storage = storage_of(value)
        if isinstance(storage, LazyStackedTensorDict):
            members = [one(member) for member in storage.tensordicts]
            mapped: Any = storage._restacked(members, None, storage.batch_size)
        elif isinstance(storage, TensorDict):
            mapped = map_leaves(storage, fn, new_nodes)
        elif new_nodes and isinstance(value, _NonTensorNode):
            return value.clone(recurse=False)
        else:
            return value
        return mapped if storage is value else type(value)._from_tensordict_unchecked(mapped)

    return td._map_values(one, td.batch_size)


def kinds_like(
    moved: TensorDict, original: TensorDict, slots: SlotKinds, prefix: str = ""
) -> TensorDict:
    """``moved`` (``original`` after ``to()``) with each leaf of its original's slot's
    kind (``slots``: a plain tensor in a parameter's slot gives a parameter, a parameter
    in a buffer's slot a buffer, as ``nn.Module`` lists them)."""

    entries = {
        key: _kind_like(value, original._entry(key), slots, prefix + key)
        for key, value in moved._items()
    }
    return moved._new_like(entries, moved.batch_size, moved.device)  # (names kept)


def _kind_like(value: Any, before: Any, slots: SlotKinds, name: str) -> Any:
    """``value`` (``before`` after ``to()``) with its leaves of their slots' kinds, a lazy
    stack's members' and a record's fields' included (``name``: its dotted name)."""
    if isinstance(value, torch.Tensor) and isinstance(before, torch.Tensor):
        return leaf_like(value, before, slots.is_param(name, before))
    storage, held = storage_of(value), storage_of(before)
    if isinstance(storage, LazyStackedTensorDict) and isinstance(held, LazyStackedTensorDict):
        pairs = enumerate(zip(storage.tensordicts, held.tensordicts))
        members = [_kind_like(member, old, slots, f"{name}.{i}") for i, (member, old) in pairs]
        mapped: Any = storage._restacked(members, None, storage.batch_size)
    elif isinstance(storage, TensorDict) and isinstance(held, TensorDict):
        mapped = kinds_like(storage, held, slots, name + ".")
    else:
        return value
    return mapped if storage is value else type(value)._from_tensordict_unchecked(mapped)
