"""``TensorDictParams``: a TensorDict of parameters that is also an ``nn.Module``.

It holds a :class:`~tclass._engine._td.TensorDict` (``_param_td``) and answers the whole
collection API through it (the collection primitives below, the rest written once in
``TensorDictBase``'s mixins). As the peer's, it converts what it stores: float16/32/64
tensors become ``nn.Parameter``, other tensors buffers (``no_convert=True``: buffers
only), so that ``module.parameters()``, ``named_buffers()``, ``state_dict``, optimizers
and ``module.to()`` see them, named by their nested keys joined with ``"."``
(``"0.weight"``).

The module's ``_parameters`` and ``_buffers`` are live views of the TensorDict's leaves
(:class:`ModuleLeaves`), not copies kept in step: whatever the TensorDict holds, the module
registers, and what ``nn.Module`` writes into them (``module.to()``, ``load_state_dict``
with ``assign=True``) lands in the TensorDict. Operations that read data out (indexing,
``apply``, ``detach``, ``==``...) return plain TensorDicts, as in the peer; ``clone``,
``to`` and ``copy`` return a ``TensorDictParams`` (``clone`` with new parameters).

A ``TensorDictParams`` of a record (``TensorDictParams(Rec(...))``) keeps the record's
class (``_record``) and gives its results in it, as the peer's (which holds the record):
``params.sum(0)``, ``params[:2]``, ``params.detach()``, ``select``, ``apply``, ``unbind``...
are ``Rec`` instances, ``clone``/``to``/``copy`` a ``TensorDictParams`` that keeps the
class; ``to_tensordict``, ``split``, ``chunk``, ``gather``, ``torch.stack`` and ``cat``
give TensorDicts, as the peer's. Records are rebuilt by their class's
``_from_tensordict_unchecked`` over the result's TensorDict (duck-typed, as every layer
below the facade handles records: see ``_core/_records.py``). A record built from one
(``Rec.from_tensordict(params)``) keeps it as its storage (``_params_storage.py``).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator, Mapping, MutableMapping, Sequence
from typing import Any, ClassVar, cast

import torch
from torch import nn
from typing_extensions import Self, Unpack

from tclass._base._tensordict_base import TensorDictBase, Value
from tclass._base.declared._persistence import PathLike, SaveOptions
from tclass._base.declared._stack_ops import LazyStackOptions
from tclass._base.implemented._apply import ApplyOptions, ApplyRules
from tclass._base.implemented._casts import CastFilter
from tclass._base.implemented._collection import TensorCollection, ToArg
from tclass._base.implemented._leaf_walk import Gather
from tclass._base.implemented._lock_blocks import LockBlocks
from tclass._base.implemented._lock_graph import LockGraph, Ref
from tclass._core import _keys
from tclass._core._batch import BatchSizeLike
from tclass._core._memmap_args import Mode
from tclass._core._method_names import check_keywords, name_methods_after
from tclass._core._names import DimName, Names
from tclass._core._records import is_record, storage_of
from tclass._engine._lazy._stack import LazyStackedTensorDict
from tclass._engine._nontensor import _NonTensorNode
from tclass._engine._td import TensorDict
from tclass._interop._param_leaves import (
    ModuleLeaves,
    SlotKinds,
    adopt_saved,
    as_buffer,
    as_param,
    convert_tensors,
    flat_items,
    forget_folders,
    kinds_like,
    map_leaves,
    read_held,
    same_layout,
    tensor_leaves,
)
from tclass._interop._params_storage import ParamsStorage
from tclass._interop._pytree import register_collection
from tclass.errors import (
    ArgumentError,
    LockedError,
    NotAMappingError,
    TclassError,
    UnknownFieldError,
    UnsupportedError,
)

__all__ = ["TensorDictParams"]

_NO_DEFAULT: Any = object()
_PYTHON_VALUES = (str, int, float, bool, bytes, type(None))  # set through a record's class
_LOCKED = (
    "Cannot modify locked TensorDict (a TensorDictParams): "
    "cannot change its entries; unlock it first "
    "(with params.unlock_(): ...), or write data in place with set_()"
)


# zero_grad is TensorDictBase's (it returns self; nn.Module's returns None).
@name_methods_after
class TensorDictParams(ParamsStorage, LockBlocks, TensorDictBase, nn.Module):  # type: ignore[misc]
    """A TensorDict whose tensors are the parameters and buffers of an ``nn.Module``.

    Keep it on a module (an ensemble's stacked weights, a target network's copy) so that
    ``module.parameters()``, ``state_dict``, optimizers and ``module.to()`` see its
    entries. It wraps ``parameters`` without a copy, converting its leaves in place:
    float16/32/64 tensors become ``nn.Parameter``, the other tensors buffers.

    Args:
        parameters: a TensorDict (or a dict, or another TensorDictParams, whose
            parameters are kept) to wrap; or give the entries as keyword arguments.
        no_convert: keep tensors that are not parameters as buffers (do not make
            parameters of float tensors).
        lock: lock the wrapped TensorDict (its keys are then fixed for anyone holding
            it); writes through this object still work.

    Example:
        >>> params = TensorDictParams(TensorDict.from_module(model))
        >>> holder.params = params  # a parent module now sees "params.0.weight"...
        >>> optimizer = torch.optim.Adam(params.parameters())
    """

    _param_td: TensorDict
    no_convert: bool
    _slots: SlotKinds  # the entries in a slot of the other kind than their type's
    _record: Any = None  # the record class wrapped (its results are rebuilt in it)
    _copies_without_grad: ClassVar[bool] = True  # copy_ writes the parameters' data
    _kept_by_update: ClassVar[bool] = True  # a parent's update merges into it
    _moves_as_data: ClassVar[bool] = True  # a parent's to() gives a TensorDict of it
    _no_select_in_place = "the selected leaves would no longer be the module's parameters"

    def __init__(
        self,
        parameters: TensorDictBase | Mapping[str, Any] | None = None,
        *,
        no_convert: bool = False,
        lock: bool = False,
        **kwargs: Any,
    ) -> None:
        nn.Module.__init__(self)
        if parameters is None:
            parameters = kwargs
        elif kwargs:
            msg = (
                "TensorDictParams takes parameters or keyword entries, not both (got "
                f"{sorted(kwargs)})"
            )
            raise ArgumentError(msg)
        if isinstance(storage_of(parameters), LazyStackedTensorDict):  # a record's too
            kind = type(parameters).__name__
            kind = f"{kind} over a lazy stack" if is_record(parameters) else kind
            msg = (
                f"TensorDictParams cannot wrap a lazy stack (a {kind} of batch size "
                f"{list(storage_of(parameters).batch_size)}): its entries are stacked copies, "
                "not tensors that parameters can share; make it dense first with "
                ".to_tensordict(), or hold it at a key of a TensorDict"
            )
            raise UnsupportedError(msg)
        if isinstance(parameters, TensorDictParams):
            no_convert, td = parameters.no_convert, parameters._param_td._copy_top()
        elif isinstance(parameters, TensorDict):
            td = parameters
        elif is_record(parameters) and isinstance(storage_of(parameters), TensorDict):
            td = storage_of(parameters)  # its fields, shared: they become the parameters
        elif isinstance(parameters, TensorDictBase) and not is_record(parameters):
            # an HDF5 file or zarr store, or a view of one: parameters live in memory
            # (the peer holds the file and registers none of its tensors); a locked
            # file's copy is locked, as the peer's `.data` (the file) reads
            td = parameters.to_tensordict()
            if parameters.is_locked:
                td.lock_()
        elif is_record(parameters) and storage_of(parameters)._is_store:
            td = storage_of(read_held(parameters))  # a record over a file: read too
            if storage_of(parameters).is_locked:
                td.lock_()
        elif isinstance(parameters, Mapping):
            td = TensorDict(parameters)
        else:
            raise _source_error(parameters)
        self.no_convert = no_convert
        self._record = (
            parameters._record
            if isinstance(parameters, TensorDictParams)
            else type(parameters)
            if is_record(parameters)
            else None
        )
        self._lock_content = lock
        self._root_locked = False
        self._param_td = td
        self._slots = SlotKinds()
        if td.is_locked:  # a locked tree (a frozen record's too) keeps its lock, as the peer's
            with td.unlock_():
                self._convert_leaves(td)
        else:
            self._convert_leaves(td)
        if lock:
            td.lock_()
        self._install_views()

    def _install_views(self) -> None:
        self.__dict__["_parameters"] = ModuleLeaves(self, parameters=True)
        self.__dict__["_buffers"] = ModuleLeaves(self, parameters=False)

    def _convert(self, tensor: torch.Tensor) -> torch.Tensor:
        return as_buffer(tensor) if self.no_convert else as_param(tensor)

    def _convert_leaves(self, td: TensorCollection) -> None:
        for key, value in list(td._items()):
            if isinstance(storage_of(value), LazyStackedTensorDict):  # a record's too
                converted: Value = convert_tensors(value, self._convert)  # as set() stores it
            elif isinstance(value, torch.Tensor):
                converted = self._convert(value)
            elif isinstance(storage_of(value), TensorCollection) and storage_of(value)._is_store:
                # a held file (a record's over one): read, as a params of one
                converted = read_held(value)
                self._convert_leaves(storage_of(converted))
            else:
                if is_record(value):  # a nested record: its fields, in its TensorDict
                    self._convert_leaves(storage_of(value))
                elif isinstance(value, TensorCollection) and not isinstance(value, _NonTensorNode):
                    self._convert_leaves(value)
                continue
            if converted is not value:
                with cast(TensorDict, td).unlock_():
                    cast(TensorDict, td)._put(key, converted)

    def _wrap(
        self, td: TensorDict, no_convert: bool | None = None, record: Any = ...
    ) -> TensorDictParams:
        """A new TensorDictParams over ``td`` (whose leaves are already converted), of
        ``no_convert`` and ``record`` (by default this one's)."""
        out = TensorDictParams.__new__(TensorDictParams)
        nn.Module.__init__(out)
        out.no_convert = self.no_convert if no_convert is None else no_convert
        out._record = self._record if record is ... else record
        out._lock_content, out._root_locked = False, False
        out._param_td = td
        out._slots = SlotKinds()
        out._install_views()
        return out

    @classmethod
    def _from_plain(cls, td: TensorDict) -> Self:
        """``TensorDictParams.from_dict(...)`` and the like: the TensorDict built, wrapped
        (its float tensors made parameters), as the peer's."""
        return cls(td)

    def _as_record(self, td: Any) -> Any:
        """A result of the wrapped TensorDict as the peer's: in the record class wrapped
        (``td`` itself when none, or when it is not a TensorDict)."""
        if self._record is None or not isinstance(td, TensorDict):
            return td
        return self._record._from_tensordict_unchecked(td)

    # --- collection primitives: the wrapped TensorDict's (in the record class) ---------

    @property
    def batch_size(self) -> torch.Size:
        """The batch size of the wrapped TensorDict."""
        return self._param_td.batch_size

    @batch_size.setter
    def batch_size(self, value: Any) -> None:
        self._param_td.batch_size = value

    @property
    def device(self) -> torch.device | None:
        """The device of the wrapped TensorDict."""
        return self._param_td.device

    def _lock_state(self) -> bool:
        """Whether entries can be added or removed through this object."""
        return self._root_locked

    def _results_locked(self) -> bool:
        # As the peer: views and reshapes follow the wrapped TensorDict's lock.
        return self._param_td.is_locked

    def _items(self) -> Iterator[tuple[str, Value]]:
        return self._param_td._items()

    def _entries(self) -> Mapping[str, Value]:
        return self._param_td._entries()

    def _entry(self, key: str) -> Value:
        return self._param_td._entry(key)

    def _key_names(self) -> list[str]:
        return self._param_td._key_names()

    def _has_entry(self, key: str) -> bool:
        return self._param_td._has_entry(key)

    def _new_like(
        self, values: dict[str, Value], batch_size: torch.Size, device: torch.device | None
    ) -> Self:
        return self._as_record(self._param_td._new_like(values, batch_size, device))  # type: ignore[no-any-return]

    def _map_values(
        self, fn: Callable[[Value], Value], batch_size: torch.Size, device: Any = ...
    ) -> Self:
        if device is ...:
            return self._as_record(self._param_td._map_values(fn, batch_size))  # type: ignore[no-any-return]
        return self._as_record(self._param_td._map_values(fn, batch_size, device))  # type: ignore[no-any-return]

    def _map_values_split(
        self, fn: Callable[[Value], Sequence[Value]], batch_sizes: Sequence[torch.Size]
    ) -> tuple[Self, ...]:
        parts = self._param_td._map_values_split(fn, batch_sizes)
        return tuple(map(self._as_record, parts))

    def _check_new_batch_size(self, new: torch.Size, prefix: tuple[str, ...]) -> None:
        self._param_td._check_new_batch_size(new, prefix)

    def _assign_batch_size(self, new: torch.Size) -> None:
        self._param_td._assign_batch_size(new)

    @property
    def names(self) -> list[Any]:  # str names usually: any hashable, as the peer
        """The names of the wrapped TensorDict's batch dims."""
        return self._param_td.names

    @names.setter
    def names(self, value: Sequence[DimName] | None) -> None:
        self._param_td.names = value

    @property
    def _dim_names(self) -> Names:
        return self._param_td._dim_names

    def _assign_names(self, names: Names) -> None:
        self._param_td._assign_names(names)

    def _rename_all(self, names: Names) -> None:
        self._param_td._rename_all(names)

    def _become(self, other: Self) -> None:
        """An in-place shape change (``flatten(..., inplace=True)``): the wrapped
        TensorDict takes ``other``'s entries, converted."""
        td = self._writable()
        source = other._param_td if isinstance(other, TensorDictParams) else other
        with td.unlock_():
            td._become(source)
            self._convert_leaves(td)

    # --- reading -------------------------------------------------------------------------

    def __getattr__(self, name: str) -> Any:
        """A parameter or buffer by (dotted) name, as ``nn.Module``; or a nested TensorDict
        entry by key, as a TensorDictParams over it (``params.encoder``, as the peer); or,
        wrapping a record, any other field as the record reads it (a Python value, ``None``
        when unset), as the peer's."""
        try:
            return nn.Module.__getattr__(self, name)
        except AttributeError:
            td = self.__dict__.get("_param_td")
            if name.startswith("_") or td is None:
                raise
            value = td._entry(name) if td._has_entry(name) else None
            if isinstance(value, TensorDict):  # (its slots' kinds are this one's)
                nested = self._wrap(value, record=None)
                nested._slots = self.__dict__["_slots"].nested(name)
                return nested
            record = self.__dict__.get("_record")
            if record is None or name not in record.__tclass_info__.field_names:
                raise
            return getattr(self._as_record(td), name)

    def get(self, key: Any, default: Any = _NO_DEFAULT) -> Any:
        """The entry at ``key`` (a parameter or buffer, or a nested TensorDict), or
        ``default`` (``None`` if not given) when absent, as ``TensorDict.get`` (wrapping a
        record, as the record's ``get``: a Python value rather than its node)."""
        source = self._as_record(self._param_td)  # a record's get: its Python values
        if default is _NO_DEFAULT:
            return source.get(key)
        return source.get(key, default)

    def __getitem__(self, index: Any) -> Any:
        """An entry by key; any other index gives a plain TensorDict of the rows (a record
        of its class for the parameters of a record), or this object where the index
        takes all of it (``params[...]``, as a TensorDict's ``td[...]`` is ``td``; a
        record over the same tensors for the parameters of a record, as the peer's)."""
        rows = self._param_td[_keys.plain_key(index)]
        if rows is self._param_td:
            return self if self._record is None else self._as_record(rows._copy_top())
        return self._as_record(rows)

    def to_tensordict(self, *, retain_none: bool | None = None) -> TensorDict:
        """A plain TensorDict holding copies of the entries (plain tensors, not
        parameters), still in the autograd graph as the peer's: a loss computed from
        them gives the parameters their gradients (``detach()`` first for data only;
        ``retain_none``: the peer's keyword for tensorclass fields). Records it holds
        become TensorDicts of plain tensors too, as a TensorDict's do."""
        return self._param_td.to_tensordict(retain_none=retain_none)

    def _joined_as(self) -> TensorDict:
        """What stack and cat join (with TensorDicts too): the wrapped TensorDict, so the
        result is a TensorDict, as the peer's."""
        return self._param_td

    # --- writing: converted, then stored in the wrapped TensorDict ---------------------

    def _writable(self, key: Any = None) -> TensorDict:
        if self._root_locked:
            raise LockedError(_LOCKED if key is None else f"{key!r}: {_LOCKED}")
        return self._param_td

    def set(
        self, key: Any, value: Any, inplace: bool = False, *, non_blocking: bool = False
    ) -> Self:
        """Stores ``value`` (its tensors converted to parameters or buffers).

        Raises:
            UnknownFieldError: (an ``AttributeError``, as the peer's) a key that is not a
                field of the record wrapped (the record's own ``set`` refuses it).
        """
        self._check_field(key)
        td = self._writable(key)
        with td.unlock_():
            if self._record is not None and type(value) in _PYTHON_VALUES:
                # the record's rules, as the peer's (which sets it through the record):
                # autocast, the field's type and its constraints
                self._as_record(td).set(key, value, inplace=inplace)
            else:
                td.set(key, convert_tensors(value, self._convert), inplace=inplace)
        return self

    def _check_field(self, key: Any) -> None:
        """Refuses a top-level key that is not a field of the record wrapped."""
        if self._record is None:
            return
        top = key[0] if isinstance(key, tuple) and key else key
        fields = self._record.__tclass_info__.field_names  # (records are duck-typed here)
        if isinstance(top, str) and top not in fields:
            name = self._record.__name__
            msg = (
                f"TensorDictParams of a {name}: {top!r} is not a field of {name} (fields: "
                f"{', '.join(fields)}); declare it in {name}, or wrap a TensorDict "
                "(record.to_tensordict()) to hold other entries"
            )
            raise UnknownFieldError(msg)

    def __setitem__(self, index: Any, value: Any) -> None:
        """``params["key"] = v`` sets an entry (converted); any other index writes rows
        into the entries' data in place."""
        if isinstance(index, str) or (isinstance(index, tuple) and _keys.is_key_tuple(index)):
            self.set(index, value)
            return
        with torch.no_grad():
            self._param_td[index] = value

    def _update_entries(
        self,
        source: Any,
        clone: bool,
        inplace: bool,
        keys_to_update: Sequence[Any] | None,
        is_leaf: Callable[[type], bool] | None,
    ) -> Self:
        """Sets every entry of ``source`` (converted)."""
        if isinstance(source, TensorCollection):
            source = dict(source._items())
        td = self._writable(list(source) if self._root_locked else None)
        converted = convert_tensors(dict(source), self._convert)
        with td.unlock_():
            td.update(converted, clone, inplace, keys_to_update=keys_to_update, is_leaf=is_leaf)
        return self

    def update_(
        self,
        input_dict_or_td: Mapping[Any, Any] | TensorCollection | None = None,
        clone: bool = False,
        *,
        non_blocking: bool = False,
        keys_to_update: Sequence[Any] | None = None,
        **kwargs: Any,
    ) -> Self:
        """Copies every value into its parameter's data in place, outside autograd (as
        ``set_`` and the peer's)."""
        with torch.no_grad():
            return super().update_(
                input_dict_or_td,
                clone,
                non_blocking=non_blocking,
                keys_to_update=keys_to_update,
                **kwargs,
            )

    def set_(self, key: Any, value: Any, *, non_blocking: bool = False) -> Self:
        """Copies ``value`` into the existing entry ``key``, outside autograd."""
        with torch.no_grad():
            self._param_td.set_(key, value)
        return self

    def set_at_(self, key: Any, value: Any, index: Any, *, non_blocking: bool = False) -> Self:
        """Writes ``value`` into the elements ``index`` of the entry ``key``, outside
        autograd."""
        with torch.no_grad():
            self._param_td.set_at_(key, value, index, non_blocking=non_blocking)
        return self

    def pop(self, key: Any, default: Any = ...) -> Any:
        """Removes the entry ``key`` and returns it."""
        td = self._writable(key)
        with td.unlock_():
            return td.pop(key) if default is ... else td.pop(key, default)

    def del_(self, key: Any) -> Self:
        """Removes the entry ``key``."""
        td = self._writable(key)
        with td.unlock_():
            td.del_(key)
        return self

    def __delitem__(self, key: Any) -> None:
        self.del_(key)

    def rename_key_(self, old_key: Any, new_key: Any, safe: bool = False) -> Self:
        """Renames an entry (its parameter is registered under the new name)."""
        td = self._writable(old_key)
        with td.unlock_():
            td.rename_key_(old_key, new_key, safe=safe)
        return self

    def select(
        self, *keys: Any, inplace: bool = False, strict: bool = True, as_tensordict: bool = False
    ) -> Any:
        """A plain TensorDict of the entries ``keys`` (a record of its class for the
        parameters of a record; this object, with ``inplace``)."""
        if inplace:
            td = self._writable()
            with td.unlock_():
                td.select(*keys, inplace=True, strict=strict)
            return self
        return self._as_record(self._param_td.select(*keys, strict=strict))

    def exclude(self, *keys: Any, inplace: bool = False) -> Any:
        """A plain TensorDict without the entries ``keys`` (a record of its class for the
        parameters of a record; this object, with ``inplace``)."""
        if inplace:
            td = self._writable()
            with td.unlock_():
                td.exclude(*keys, inplace=True)
            return self
        return self._as_record(self._param_td.exclude(*keys))

    def split_keys(
        self,
        *key_sets: Sequence[Any] | Callable[[tuple[str, ...], Any], bool],
        inplace: bool = False,
        default: Any = _NO_DEFAULT,
        strict: bool = True,
        reproduce_struct: bool = False,
    ) -> tuple[Self, ...]:
        """As ``TensorDictBase.split_keys``: the parts of the key sets are TensorDicts and
        the keys left over a TensorDictParams over the same parameters (its ``copy()``
        without the keys taken, as the peer's; ``self`` with ``inplace``)."""
        given = {} if default is _NO_DEFAULT else {"default": default}
        parts = TensorDictBase.split_keys(
            self, *key_sets, inplace=inplace, strict=strict, reproduce_struct=reproduce_struct,
            **given,
        )  # fmt: skip
        if inplace:
            return parts
        rest = self._wrap(storage_of(parts[-1]), no_convert=True)
        return (*parts[:-1], cast(Self, rest))

    def _split_by_sizes(self, sizes: list[int], dim: int) -> tuple[Self, ...]:
        """``split`` and ``chunk``: plain TensorDicts, for the parameters of a record too,
        as the peer's (whose own ``split`` builds TensorDicts)."""
        return self._param_td._split_by_sizes(sizes, dim)  # type: ignore[return-value]

    def gather(
        self, dim: int, index: torch.Tensor, out: Self | None = None, *, inplace: bool = False
    ) -> Self:
        """As :meth:`TensorDictBase.gather`; a plain TensorDict for the parameters of a
        record too, as the peer's (``out`` and ``inplace`` write as a TensorDict's)."""
        if out is None and not inplace:
            return self._param_td.gather(dim, index)  # type: ignore[return-value]
        return super().gather(dim, index, out, inplace=inplace)

    def type(  # type: ignore[override]  # the collection's cast, not nn.Module.type
        self, dst_type: torch.dtype, *, cast_filter: CastFilter | None = None
    ) -> Self:
        """Every entry cast to ``dst_type``, as a plain TensorDict, not locked (as a
        TensorDict's ``type`` and the peer's)."""
        return self._cast(dst_type, cast_filter, lock=False)

    # --- in-place ops: on the data, outside autograd (a leaf parameter refuses them) ---

    def zero_(self) -> Self:
        """Sets every entry to zero in place."""
        with torch.no_grad():
            self._param_td.zero_()
        return self

    def _collect(
        self, into: Gather, operands: tuple[Any, ...], batch_dims: int, prefix: tuple[str, ...]
    ) -> None:
        if into.on_data:  # a parent's zero_ reaching this node: the data, as zero_ above
            self.data._collect(into, operands, batch_dims, prefix)
            return
        super()._collect(into, operands, batch_dims, prefix)

    def copy_(self, src: TensorCollection | Any, non_blocking: bool = False) -> Self:
        """Copies ``src``'s tensors into the parameters' data in place (as the peer)."""
        with torch.no_grad():
            self._param_td.copy_(src, non_blocking=non_blocking)
        return self

    def fill_(self, key: Any, value: float | bool | torch.Tensor) -> Self:
        """Fills the entry ``key`` in place."""
        with torch.no_grad():
            self._param_td.fill_(key, value)
        return self

    def _stage_in_place(
        self, fn: Callable[..., torch.Tensor | None], others: tuple[Any, ...], staged: Any
    ) -> None:
        """``apply_``: the results staged, and written with the others', outside autograd."""
        staged.stage_without_grad(lambda inner: self._param_td._stage_in_place(fn, others, inner))

    def apply_(self, fn: Callable[..., Any], *others: TensorCollection, **options: Any) -> Self:
        """Writes ``fn(tensor, *others)`` into the parameters' data in place, outside
        autograd (as the peer's); see :meth:`TensorDictBase.apply_`."""
        with torch.no_grad():
            self._param_td.apply_(fn, *others, **options)
        return self

    # apply(inplace=True) and named_apply(inplace=True) write with autograd recording, as
    # torch's in-place ops and the peer's do: a parameter (a leaf that requires grad)
    # refuses them outside torch.no_grad() (an InPlaceWriteError, the peer's ValueError);
    # apply_() and the methods above write the data.

    def _apply_all(
        self, fn: Callable[..., Any], others: tuple[TensorCollection, ...], options: ApplyOptions
    ) -> Self:
        if not options.get("inplace"):
            return super()._apply_all(fn, others, options)
        result = self._param_td._apply_all(fn, others, options)
        return self if result is not None else result  # (None: fn dropped every entry)

    def _named_apply_all(
        self,
        fn: Callable[..., Any],
        others: tuple[TensorCollection, ...],
        nested_keys: bool,
        batch_size: BatchSizeLike,
        options: ApplyRules,
    ) -> Self:
        if not options.get("inplace"):
            return super()._named_apply_all(fn, others, nested_keys, batch_size, options)
        result = self._param_td._named_apply_all(fn, others, nested_keys, batch_size, options)
        return self if result is not None else result  # (None: fn dropped every entry)

    # --- locking ---------------------------------------------------------------------------

    def lock_(self) -> Self:
        """Refuses new or removed entries (through this object and the wrapped one); also
        a context manager: ``with params.lock_(): ...`` unlocks on exit."""
        self._note_lock()
        self._lock_tree()
        return self

    def unlock_(self) -> Self:
        """Accepts new and removed entries again (the wrapped TensorDict stays locked
        when it was wrapped with ``lock=True``); ``with params.unlock_(): ...`` locks
        again on exit.

        Raises:
            LockedError: (a ``RuntimeError``) if this object, or a collection in it, is
                nested in another locked collection that is alive: unlock that one first.
        """
        self._note_lock()
        self._unlock_tree()
        return self

    def _flag_lock(self, locked: bool) -> None:
        self._root_locked = locked

    def _lock_down(self, above: list[Ref] | None, link: bool = True) -> None:
        # As the peer: the wrapped TensorDict is locked unless it is already (lock=True).
        self._flag_lock(True)
        chain = self._hold(above) if link else None
        if not self._param_td.is_locked:
            if chain is not None:
                chain.append(weakref.ref(self))
            self._param_td._lock_down(chain, link)

    def _unlock_down(self, reached: list[LockGraph]) -> None:
        # As the peer: a wrapped TensorDict locked with lock=True stays locked.
        self._flag_lock(False)
        if not self._lock_content:
            self._param_td._unlock_down(reached)

    # --- devices and copies ------------------------------------------------------------

    @classmethod
    def lazy_stack(  # type: ignore[override]  # not Self: a lazy stack, as the peer's
        cls, input: Sequence[Any], dim: int = 0, **options: Unpack[LazyStackOptions]
    ) -> LazyStackedTensorDict:
        """Same as :func:`tclass.lazy_stack`: a ``LazyStackedTensorDict``."""
        return LazyStackedTensorDict.lazy_stack(input, dim, **options)

    def to(self, *args: ToArg, **kwargs: Any) -> Self:
        """Moves or casts the entries: a TensorDictParams whose parameters stay
        parameters, of their slots' kinds (a tensor ``to_module`` put in a parameter's
        slot gives a parameter; a leaf kept as it is keeps its slot's kind), ``self``
        when nothing changes."""
        moved = self._param_td.to(*args, **kwargs)
        if moved is self._param_td:
            return self
        out = self._wrap(kinds_like(moved, self._param_td, self._slots))
        out._slots = SlotKinds.restored(self._slots.saved(self._param_td), out._param_td)
        return out  # type: ignore[return-value]

    def cpu(self) -> Self:
        """Same as ``to("cpu")``."""
        return self.to("cpu")

    def cuda(self, device: Any = None) -> Self:
        """Same as ``to("cuda")`` (or ``to("cuda:<device>")``)."""
        if isinstance(device, int):
            return self.to(torch.device("cuda", device))
        return self.to("cuda" if device is None else device)

    def clear_device_(self) -> Self:
        """Forgets the device (entries may then be on different devices)."""
        self._param_td.clear_device_()
        return self

    def _assign_device(self, device: torch.device | None) -> None:
        self._param_td._assign_device(device)

    def clone(self, recurse: bool = True) -> Self:
        """A TensorDictParams of new parameters and buffers holding copies of the data,
        outside the autograd graph (a parameter tied to several keys stays tied; a tensor
        in a parameter's slot, put there by ``to_module``, gives a parameter);
        ``recurse=False``: the same tensors in a new TensorDictParams. Tensors set into
        the copy later are buffers (``no_convert=True``), as the peer's copy keeps them."""
        if not recurse:
            out = self._wrap(self._param_td.clone(recurse=False), no_convert=True)
            out._slots = SlotKinds.restored(self._slots.saved(self._param_td), out._param_td)
            return out  # type: ignore[return-value]
        memo: dict[int, torch.Tensor] = {}
        slotted = {  # the leaves in parameters' slots
            id(leaf)
            for name, _, _, leaf in tensor_leaves(self._param_td)
            if self._slots.is_param(name, leaf)
        }

        def fresh(leaf: torch.Tensor) -> torch.Tensor:
            found = memo.get(id(leaf))
            if found is None:
                data = leaf.detach().clone()
                found = memo[id(leaf)] = (
                    nn.Parameter(data, requires_grad=leaf.requires_grad)
                    if id(leaf) in slotted
                    else nn.Buffer(data)
                )
            return found

        return self._wrap(map_leaves(self._param_td, fresh, True), no_convert=True)  # type: ignore[return-value]

    def copy(self) -> Self:
        """A new TensorDictParams over the same tensors (a shallow copy)."""
        return self.clone(recurse=False)

    # --- saving and loading: the wrapped TensorDict's (the folder holds a TensorDict) -----

    def memmap(
        self,
        prefix: PathLike | None = None,
        copy_existing: bool = False,
        **options: Unpack[SaveOptions],
    ) -> Self:
        """A locked memory-mapped copy saved in ``prefix``, as the peer's: a plain
        TensorDict of MemoryMappedTensors (the folder holds a TensorDict; which leaves
        were parameters is not saved, the wrap that loads it decides). Load it into a
        model with ``TensorDictParams(load_memmap(prefix))``, ``to_module`` or
        ``update_``. The parameters of a record save as a record of its class, as the
        peer's. Arguments as in ``TensorDict.memmap_``."""
        check_keywords(options, SaveOptions, self, "memmap")  # (named for this class)
        return self._as_record(self._param_td).memmap(prefix, copy_existing, **options)  # type: ignore[no-any-return]

    def memmap_like(
        self,
        prefix: PathLike | None = None,
        copy_existing: bool = False,
        **options: Unpack[SaveOptions],
    ) -> Self:
        """Like :meth:`memmap`, the files allocated and not filled (zeros)."""
        check_keywords(options, SaveOptions, self, "memmap_like")  # (named for this class)
        return self._as_record(self._param_td).memmap_like(prefix, copy_existing, **options)  # type: ignore[no-any-return]

    def memmap_(
        self,
        prefix: PathLike | None = None,
        copy_existing: bool = False,
        **options: Unpack[SaveOptions],
    ) -> Self:
        """Saves into ``prefix`` (as :meth:`memmap`) and moves the data of the parameters
        and buffers into the saved files: the same ``nn.Parameter`` objects stay
        registered (an optimizer holding them keeps training them, in place in the
        files), with their ``requires_grad``. Returns ``self``, locked, on ``cpu``.
        The peer refuses (``RuntimeError``).

        Raises:
            UnsupportedError: ``return_early=True`` (the parameters change when the save
                is done, so it is never left running).
            LockedError: a locked one (before any file is written or parameter moved).
        """
        self._writable()
        check_keywords(options, SaveOptions, self, "memmap_")
        if options.get("return_early"):
            msg = (
                "TensorDictParams.memmap_ does not take return_early=True: its parameters "
                "are moved into the files once they are written; call it without, or save "
                "a copy with memmap(..., return_early=True)"
            )
            raise UnsupportedError(msg)
        self._adopt_wrapped(None, lambda td, _: td.memmap_(prefix, copy_existing, **options))
        return self.lock_()

    def _adopt_wrapped(self, saved: Any, adopt: Callable[[Any, Any], None]) -> bool:
        """``adopt(td, saved)`` gives the wrapped TensorDict the saved leaves; then the
        same parameter and buffer objects hold their data (``memmap_``)."""
        adopt_saved(self._param_td, saved, adopt)
        return True

    def load_memmap_(
        self,
        prefix: PathLike,
        robust_key: bool | None = True,
        *,
        allow_pickle: bool | None = False,
        mode: Mode | None = None,
    ) -> Self:
        """Copies the data saved in ``prefix`` into the parameters and buffers, outside
        autograd (the same objects stay registered); an entry saved with another shape
        or dtype, or not held yet, takes the loaded tensor, converted as any entry set;
        keys that were not saved are removed, as ``TensorDict.load_memmap_``. The peer
        replaces the parameters with the loaded MemoryMappedTensors (no longer
        registered). Arguments as in ``TensorDict.load_memmap_``."""
        self._load_wrapped(
            lambda td: td.load_memmap_(prefix, robust_key, allow_pickle=allow_pickle, mode=mode)
        )
        return self

    def _load_wrapped(self, load: Callable[[Any], None]) -> bool:
        td = self._writable()
        before = {name: leaf for name, _, _, leaf in tensor_leaves(td)}
        with td.unlock_(), torch.no_grad():
            load(td)
            for name, parent, key, loaded in list(tensor_leaves(td)):
                leaf = before.get(name)
                if isinstance(leaf, torch.Tensor) and same_layout(leaf, loaded):
                    leaf.copy_(cast(torch.Tensor, loaded))  # the registered object stays
                    cast(TensorDict, storage_of(parent))._put(key, leaf)
            forget_folders(td)  # its leaves are in memory: later sets stay there
            self._convert_leaves(td)
        return True

    load_ = load_memmap_

    # --- nn.Module ---------------------------------------------------------------------------

    def _apply(self, fn: Callable[[torch.Tensor], torch.Tensor], recurse: bool = True) -> Self:
        """``module.to()``, ``.double()``...: nn.Module converts the parameters and
        buffers (through the views, into the TensorDict); the device is recomputed when
        a leaf moved (a dtype conversion keeps it, ``None`` included, as the peer's)."""
        before = [leaf.device for _, _, _, leaf in tensor_leaves(self._param_td)]
        nn.Module._apply(self, fn, recurse=recurse)  # type: ignore[no-untyped-call]
        after = [leaf.device for _, _, _, leaf in tensor_leaves(self._param_td)]
        if after == before:
            return self
        devices = set(after)
        self._param_td.clear_device_()
        if len(devices) == 1:
            self._param_td = self._param_td.to(devices.pop())
            self._install_views()
        return self

    def state_dict(
        self,
        destination: Any = None,
        prefix: str = "",
        keep_vars: bool = False,
        flatten: bool = True,
    ) -> Any:
        """The entries under dotted keys (``"0.weight"``), in key order, as a module's
        state dict (``flatten=False``: the wrapped TensorDict's nested state dict)."""
        if not flatten:
            return self._param_td.state_dict(prefix=prefix, keep_vars=keep_vars, flatten=False)
        return nn.Module.state_dict(
            self, destination=destination, prefix=prefix, keep_vars=keep_vars
        )

    def _save_to_state_dict(self, destination: Any, prefix: str, keep_vars: bool) -> None:
        for name, _, _, leaf in tensor_leaves(
            self._param_td
        ):  # parameters and buffers, in key order
            destination[prefix + name] = leaf if keep_vars else leaf.detach()

    def _load_from_state_dict(
        self,
        state_dict: Mapping[str, Any],
        prefix: str,
        local_metadata: dict[str, Any],
        strict: bool,
        missing_keys: list[str],
        unexpected_keys: list[str],
        error_msgs: list[str],
    ) -> None:
        """What a parent module's ``load_state_dict`` asks of this one: its entries under
        ``prefix`` + their dotted names (nn.Module's own version splits names at the
        first ".", which would take "0.weight" for a child module's)."""
        names = set()
        for name, _, _, leaf in tensor_leaves(self._param_td):
            key = prefix + name
            names.add(key)
            if key not in state_dict:
                missing_keys.append(key)
                continue
            value = state_dict[key]
            if value.shape != leaf.shape:
                error_msgs.append(
                    f"size mismatch for {key}: copying a param with shape {value.shape} from "
                    f"checkpoint, the shape in current model is {leaf.shape}."
                )
                continue
            with torch.no_grad():
                cast(torch.Tensor, leaf).copy_(value)
        if strict:
            unexpected_keys.extend(
                key for key in state_dict if key.startswith(prefix) and key not in names
            )

    def load_state_dict(  # type: ignore[override]
        self, state_dict: Mapping[str, Any], strict: bool = True, assign: bool = False
    ) -> Self:
        """Copies a state dict (dotted keys, or nested dicts) into the entries, as a
        module does (``strict``: the keys must match); returns ``self``."""
        flat = dict(flat_items(state_dict))
        nn.Module.load_state_dict(self, flat, strict=strict, assign=assign)
        return self

    def __hash__(self) -> int:  # type: ignore[override]  # a module: hashed by identity
        return id(self)

    def __repr__(self) -> str:
        held = self._param_td if self._record is None else self[...]  # (a record: its class)
        return f"TensorDictParams(params={held!r})"

    def __getstate__(self) -> dict[str, Any]:
        views = ("_parameters", "_buffers", "_slots")  # rebuilt over the TensorDict
        state = {key: value for key, value in self.__dict__.items() if key not in views}
        return {**state, "_slot_kinds": self._slots.saved(self._param_td)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        state = {**state, "_parameters": {}, "_buffers": {}}
        kinds = state.pop("_slot_kinds", {})
        nn.Module.__setstate__(self, state)  # type: ignore[no-untyped-call]
        self._slots = SlotKinds.restored(kinds, self._param_td)
        self._install_views()

    def __reduce_ex__(self, protocol: Any) -> Any:
        return (_rebuild, (self.__getstate__(),))


def _source_error(parameters: Any) -> TclassError:
    """The error for a ``TensorDictParams`` argument that holds no named parameters:
    what it got, and how to name its tensors."""
    kind = type(parameters).__name__
    if isinstance(parameters, TensorCollection):
        got, fix = f"a {kind}", "convert it with .to_tensordict() first"
    elif isinstance(parameters, torch.Tensor):
        got = f"a {kind} of shape {list(parameters.shape)}"
        fix = "name it: TensorDictParams({'weight': tensor}) or TensorDictParams(weight=tensor)"
    elif isinstance(parameters, (list, tuple)):
        got = f"a {kind} of {len(parameters)} items"
        fix = "name each: TensorDictParams({str(i): p for i, p in enumerate(params)})"
    elif isinstance(parameters, nn.Module):
        got = f"a {kind} module"
        fix = "take its parameters with TensorDict.from_module(module) and wrap that"
    else:
        got, fix = f"{kind} {parameters!r:.60}", "pass a dict of named tensors"
    msg = (
        f"TensorDictParams(parameters) takes a TensorDict, a record or a dict of named "
        f"tensors, got {got}; {fix}"
    )
    if isinstance(parameters, TensorCollection):
        return ArgumentError(msg)
    return NotAMappingError(msg)  # (an AttributeError too, as the peer's)


def _rebuild(state: dict[str, Any]) -> TensorDictParams:
    out = TensorDictParams.__new__(TensorDictParams)
    out.__setstate__(state)
    return out


register_collection(TensorDictParams)  # for torch.vmap and tree utilities: a TensorDict inside


# A TensorDictParams is a mutable mapping to code that asks (``isinstance(td, Mapping)``:
# torch's ``Module.load_state_dict(td)``, ``dict(td)``), as the peer's; records are not.
MutableMapping.register(TensorDictParams)
