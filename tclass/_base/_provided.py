"""What the base layer declares and the layers above it provide.

Every collection derives from the base layer, so the layers above it (engine, interop,
io, distributed, the tensorclass facade) cannot be imported here, yet many methods of
``TensorDictBase`` are implemented there (``consolidate`` in the engine, ``memmap`` in
io...). Each such method is a one-line forwarder reading its implementation from a slot
of this module, one table per providing layer::

    def consolidate(self, filename=None, ...):
        return ENGINE.consolidate(self, filename, ...)

and the module that holds the implementation binds the slot next to it, once, when
``import tclass`` runs (``tclass/__init__.py`` imports every providing module)::

    ENGINE.consolidate = consolidate  # at the end of tclass/_engine/_consolidate.py

A table is a class used as a namespace (never instantiated): reading a bound slot is one
class attribute read. Its slots are declared under ``TYPE_CHECKING`` as the very
implementations (``consolidate = _consolidate.consolidate``), so mypy checks every call
and every binding against the implementation's signature, and those imports are
annotations only (the layers contract does not count them). Reading a slot that is not
bound raises :class:`~tclass.errors.NotProvidedError` naming the slot and the module that
binds it; binding a slot twice raises it too. This is the same idea as
``_core/_dispatch.py``'s ``@implements``, which fills the table of torch functions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar, final

from tclass.errors import NotProvidedError

if TYPE_CHECKING:
    from tclass._base._tensordict_base import TensorDictBase
    from tclass._engine import (
        _consolidate,
        _map,
        _nontensor_stack,
        _pack,
        _pad,
        _pickle5,
        _pyvalues,
        _ragged_values,
        _record_fields,
        _repr_html,
    )
    from tclass._engine._lazy import _build, _stack
    from tclass._interop import _bridges, _constructors, _modules, _state_dict
    from tclass._io import _api, _preallocate
    from tclass._io.export import _mds, _tabular
    from tclass._io.memmap import _append, _saved_entries
    from tclass._io.store import _open
    from tclass._tensorclass import _attrs, _dataclass
    from tclass.distributed import _collectives, _transfer

    _C = TypeVar("_C", bound=TensorDictBase)

    class _Join(Protocol):
        """``_engine/_ops.py``'s ``stack`` and ``cat``, whose types mypy cannot infer
        from here (``@implements`` decorates them, and the two modules import each other
        for annotations)."""

        def __call__(
            self, collections: Sequence[_C], dim: int = 0, *, out: _C | None = None
        ) -> _C: ...


__all__ = ["DISTRIBUTED", "ENGINE", "INTEROP", "IO", "TENSORCLASS", "Provided"]


class Provided(type):
    """The metaclass of a slot table: ``layer`` names the package whose modules bind the
    slots, read only to say where a missing one should come from."""

    _layer: str

    def __new__(
        mcs, name: str, bases: tuple[type, ...], namespace: dict[str, Any], *, layer: str
    ) -> Provided:
        table = super().__new__(mcs, name, bases, namespace)
        type.__setattr__(table, "_layer", layer)
        return table

    def __setattr__(cls, slot: str, implementation: object) -> None:
        if slot in cls.__dict__:
            raise NotProvidedError(
                f"{cls.__name__}.{slot} is bound twice: one module of {cls._layer} binds "
                "it, when tclass is imported; remove the second binding"
            )
        type.__setattr__(cls, slot, implementation)

    if not TYPE_CHECKING:  # mypy reports unknown slots as unknown attributes instead

        def __getattr__(cls, slot: str) -> Any:
            if slot.startswith("__"):
                raise AttributeError(slot)
            raise NotProvidedError(
                f"{cls.__name__}.{slot} is not bound: {cls._layer} binds it when tclass is "
                "imported; `import tclass` before calling it"
            )


@final
class ENGINE(metaclass=Provided, layer="tclass._engine"):
    """Stacking, padding, consolidation, packing, data addresses, map, Python values,
    protocol-5 pickling, the lazy stack class and the stack of Python values
    (``StackOps``, ``PackingOps``,
    ``MapOps``; the hooks of ``TensorCollection`` and ``DeviceOps.pin_memory``; the
    ``__reduce_ex__`` of TensorDict and lazy stacks)."""

    if TYPE_CHECKING:
        LazyStackedTensorDict: ClassVar[type[_stack.LazyStackedTensorDict]]
        NonTensorStack: ClassVar[type[_nontensor_stack.NonTensorStack]]
        RaggedNonTensorStack: ClassVar[type[_ragged_values.RaggedNonTensorStack]]
        join_ragged = _ragged_values.join_ragged
        stack_of_lists = _ragged_values.stack_of_lists
        set_non_tensor = _pyvalues.set_non_tensor
        get_non_tensor = _pyvalues.get_non_tensor
        stored_value = _pyvalues.stored_value
        consolidate = _consolidate.consolidate
        consolidation_of = _consolidate.consolidation_of
        from_consolidated_file = _consolidate.from_consolidated_file
        pinned = _consolidate.pinned
        reduce_out_of_band = _pickle5.reduce_out_of_band
        data_ptrs = _record_fields.data_ptrs
        stack: ClassVar[_Join]
        cat: ClassVar[_Join]
        lazy_stack = _build.lazy_stack
        maybe_dense_stack = _build.maybe_dense_stack
        to_lazystack = _build.to_lazystack
        densify = _build.densify
        pad = _pad.pad
        pack = _pack.pack
        map_chunks = _map.map_chunks
        map_iter = _map.map_iter
        html_repr = _repr_html.html_repr


@final
class DISTRIBUTED(metaclass=Provided, layer="tclass.distributed"):
    """Point-to-point transfers and collectives (``DistributedOps``)."""

    if TYPE_CHECKING:
        send = _transfer.send
        isend = _transfer.isend
        recv = _transfer.recv
        irecv = _transfer.irecv
        broadcast = _transfer.broadcast
        all_reduce = _transfer.all_reduce
        all_gather = _transfer.all_gather
        init_remote = _transfer.init_remote
        from_remote_init = _transfer.from_remote_init
        reduce = _collectives.reduce
        gather_and_stack = _collectives.gather_and_stack
        scatter = _collectives.scatter


@final
class IO(metaclass=Provided, layer="tclass._io"):
    """Memory-mapped folders, persistent stores (HDF5, zarr), tables and MDS
    (``PersistenceOps``, ``FormatOps``, ``ConversionOps.from_schema``; ``from_any``'s
    readers of open h5py and zarr groups and of DataFrames)."""

    if TYPE_CHECKING:
        memmap_in_place = _api.memmap_in_place
        saved_copy = _api.saved_copy
        load_memmap = _api.load_memmap
        is_memmap = _api.is_memmap
        append_in_place = _append.append_in_place
        saved_path = _saved_entries.saved_path
        memmap_refresh = _saved_entries.memmap_refresh
        make_memmap = _saved_entries.make_memmap
        make_memmap_from_tensor = _saved_entries.make_memmap_from_tensor
        make_memmap_from_storage = _saved_entries.make_memmap_from_storage
        to_h5 = _open.to_h5
        open_as = _open.open_as
        to_zarr = _open.to_zarr
        open_zarr_as = _open.open_zarr_as
        open_group = _open.open_group
        Reader: ClassVar[type[_tabular.Reader]]
        read_file = _tabular.read_file
        read_frame = _tabular.read_frame
        to_frame = _tabular.to_frame
        write_table = _tabular.write_table
        to_mds = _mds.to_mds
        from_schema = _preallocate.from_schema


@final
class INTEROP(metaclass=Provided, layer="tclass._interop"):
    """Constructors, numpy and pytree bridges, state dicts and ``nn.Module`` interop
    (``ConversionOps``, ``ModuleOps``)."""

    if TYPE_CHECKING:
        from_dict = _constructors.from_dict
        collection_from_dict = _constructors.collection_from_dict
        from_dict_instance = _constructors.from_dict_instance
        from_tuple = _constructors.from_tuple
        from_namedtuple = _constructors.from_namedtuple
        fromkeys = _constructors.fromkeys
        to_dict = _constructors.to_dict
        to_namedtuple = _constructors.to_namedtuple
        from_any = _bridges.from_any
        from_list = _bridges.from_list
        from_struct_array = _bridges.from_struct_array
        collection_from_pytree = _bridges.collection_from_pytree
        to_struct_array = _bridges.to_struct_array
        to_pytree = _bridges.to_pytree
        state_dict = _state_dict.state_dict
        load_state_dict = _state_dict.load_state_dict
        collection_from_module = _modules.collection_from_module
        collection_from_modules = _modules.collection_from_modules
        swap_into_module = _modules.swap_into_module


@final
class TENSORCLASS(metaclass=Provided, layer="tclass._tensorclass"):
    """The tensorclass facade's ``attrs`` view and dataclass conversion
    (``ConversionOps.attrs``, ``ConversionOps.from_dataclass``)."""

    if TYPE_CHECKING:
        attrs_of = _attrs.attrs_of
        dataclass_to_collection = _dataclass.dataclass_to_collection
