"""Constructors and conversions every collection has: ``from_dict``, ``fromkeys``,
``from_namedtuple``, ``from_struct_array``, ``from_pytree`` (classmethods), ``to_dict``,
``attrs``, ``to_namedtuple``, ``to_struct_array``, ``to_pytree``, ``state_dict`` and
``load_state_dict``.

A mixin of ``TensorDictBase``, like ``PersistenceOps``: the implementations
(``_constructors``, ``_bridges``, ``_state_dict``; ``attrs`` and ``from_dataclass`` in the
facade, ``from_schema`` in io) build on the engine classes that derive from this mixin,
so the methods read them from ``_provided``. (``numpy``, ``as_tensor`` and
``to_tensordict`` are written in this layer, in ``implemented/``.) A classmethod builds
a TensorDict and hands it to :meth:`ConversionOps._from_plain`, which a tensorclass
overrides to wrap it in its class (casting nested entries to the annotated classes).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypedDict, cast

import torch
from typing_extensions import Self, Unpack

from tclass._base._provided import INTEROP, IO, TENSORCLASS
from tclass._base.implemented._collection import TensorCollection
from tclass._core._method_names import check_keywords
from tclass._core._names import DimName
from tclass._core._records import is_record
from tclass.errors import UnsupportedError

if TYPE_CHECKING:
    import numpy as np

    from tclass._base._tensordict_base import TensorDictBase
    from tclass._core._batch import BatchSizeLike
    from tclass._core._device import DeviceLike
    from tclass._engine._td import TensorDict

__all__ = ["BuildOptions", "ConversionOps"]


class BuildOptions(TypedDict, total=False):
    """The batch keywords of ``from_any`` / ``from_tuple`` / ``from_namedtuple`` (the
    peer's): ``batch_size``, or ``auto_batch_size`` (at most ``batch_dims`` dims) to infer
    it; ``device`` for every tensor."""

    auto_batch_size: bool
    batch_dims: int | None
    device: DeviceLike
    batch_size: BatchSizeLike


class ConversionOps:
    """Building collections from Python structures and converting them back."""

    __slots__ = ()

    @classmethod
    def _from_plain(cls, td: TensorDict) -> Self:
        """``td`` (just built by a classmethod) as an instance of ``cls``: TensorDict
        and tensorclasses override this; other collections cannot be built so."""
        msg = (
            f"{cls.__name__} cannot be built from a Python structure; build a TensorDict "
            f"(TensorDict.from_dict(...) and the like) and convert it"
        )
        raise UnsupportedError(msg)

    # --- constructors --------------------------------------------------------------------

    @classmethod
    def from_dict(
        cls,
        input_dict: Mapping[Any, Any],
        *,
        auto_batch_size: bool | None = None,
        batch_size: BatchSizeLike = None,
        device: DeviceLike = None,
        batch_dims: int | None = None,
        names: Sequence[DimName] | None = None,
    ) -> Self:
        """An instance from a (nested) dict: see :func:`tclass.from_dict`.

        Without ``batch_size``, the batch size is ``[]`` (the peer's default) unless
        ``auto_batch_size=True``, ``batch_dims`` or ``names`` asks for the largest leading
        shape the values share (at most ``batch_dims``, or as many dims as ``names``).
        A collection is returned as it is (its batch size and class kept), as the peer's.
        """
        return INTEROP.collection_from_dict(  # type: ignore[no-any-return]
            cls,
            input_dict,
            auto_batch_size=auto_batch_size,
            batch_size=batch_size,
            device=device,
            batch_dims=batch_dims,
            names=names,
        )

    def from_dict_instance(
        self,
        input_dict: Mapping[Any, Any],
        *,
        auto_batch_size: bool | None = None,
        batch_size: BatchSizeLike = None,
        device: DeviceLike = None,
        batch_dims: int | None = None,
        names: Sequence[DimName] | None = None,
    ) -> TensorDict:
        """A TensorDict from a (nested) dict, as :meth:`from_dict`, whose nested dicts
        take the classes of this collection's entries under the same keys: a dict where
        this collection holds a record becomes a record of that class (the values of
        this collection are not used). Turns ``to_dict()`` output back into records.
        A number is a 0-dim tensor here under any batch size (as the constructor and
        the peer's ``from_dict_instance`` read it; ``from_dict`` makes it a value).
        A record's gives a record of its own class, as the peer's."""
        return INTEROP.from_dict_instance(
            _collection(self),
            input_dict,
            auto_batch_size=auto_batch_size,
            batch_size=batch_size,
            device=device,
            batch_dims=batch_dims,
            names=names,
        )

    @classmethod
    def from_schema(
        cls,
        schema: Mapping[Any, tuple[Sequence[int] | torch.Size, torch.dtype]],
        *,
        batch_size: Sequence[int] | torch.Size | None = None,
        storage: str | None = None,
        device: DeviceLike = None,
        **kwargs: Any,
    ) -> Any:
        """A zero-filled collection from a schema ``{key: (element_shape, dtype)}``: each
        entry has shape ``[*batch_size, *element_shape]`` (keys may be nested tuples).

        ``storage`` says where the zeros live, allocated without building the buffer in
        memory first: ``None`` (tensors), ``"shared"`` (shared memory), ``"memmap"``
        (a folder of sparse memory-mapped files: ``prefix=`` and the options of
        :meth:`memmap_like`), ``"h5"`` / ``"zarr"`` (a ``PersistentTensorDict`` in the
        new HDF5 file or zarr store ``filename=``). On a tensorclass, a record of that
        class; on the dictionary kinds (a lazy stack included), a TensorDict.

        Raises:
            ArgumentError: (a ``TypeError``) an unknown ``storage``, or options it does
                not take; UnsupportedError for the peer's ``"redis"`` and
                ``"dragonfly"``.
            ShapeError: a schema entry is not an ``(element_shape, dtype)`` pair.
        """
        return IO.from_schema(
            cls, schema, batch_size=batch_size, storage=storage, device=device, **kwargs
        )

    @classmethod
    def from_any(cls, obj: Any, **options: Unpack[BuildOptions]) -> Self:
        """An instance from a mapping, tuple, namedtuple or structured array (a collection,
        a tensor or any other object is returned as it is): see :func:`tclass.from_any`."""
        return cls._from_built(
            INTEROP.from_any(obj, **check_keywords(options, BuildOptions, cls, "from_any"))
        )

    @classmethod
    def from_tuple(cls, obj: tuple[Any, ...], **options: Unpack[BuildOptions]) -> Self:
        """An instance with the items of ``obj`` under the keys ``"0"``, ``"1"``, ...:
        see :func:`tclass.from_tuple`."""
        return cls._from_plain(
            INTEROP.from_tuple(obj, **check_keywords(options, BuildOptions, cls, "from_tuple"))
        )

    @classmethod
    def from_list(
        cls,
        input: Sequence[Any],
        *,
        auto_batch_size: bool | None = None,
        batch_size: BatchSizeLike = None,
        device: DeviceLike = None,
        batch_dims: int | None = None,
        names: Sequence[DimName] | None = None,
        lazy: bool | None = None,
    ) -> Self:
        """The stack of one instance per item of ``input`` (a dict per element): dense
        when they agree, lazy when they differ (or with ``lazy=True``; a TensorDict
        class then gives a lazy stack). See :func:`tclass._interop._bridges.from_list`."""
        return cls._from_built(
            INTEROP.from_list(
                input,
                auto_batch_size=auto_batch_size,
                batch_size=batch_size,
                device=device,
                batch_dims=batch_dims,
                names=names,
                lazy=cls._lazy_by_default() if lazy is None else lazy,
                make=cls._item_builder(),
            )
        )

    @classmethod
    def _from_built(cls, built: Any) -> Self:
        """A collection a constructor returned, as an instance of ``cls`` when it is a
        TensorDict built for it (a lazy stack, a record, a Python value, a collection over a
        file or a tensor is returned as it is, as the peer)."""
        made: Any = built  # a tensor, or another object from_any keeps, as it is too
        if isinstance(made, cls) or not isinstance(built, TensorCollection):
            return made  # type: ignore[no-any-return]
        if made._is_lazy or made._is_leaf_node:
            return made  # type: ignore[no-any-return]
        if is_record(made) or made._is_store:  # a record; a collection over a file
            return made  # type: ignore[no-any-return]
        return cls._from_plain(made)

    @classmethod
    def _lazy_by_default(cls) -> bool:
        """Whether ``from_list`` stacks lazily unless told (a lazy stack class does)."""
        return False

    @classmethod
    def _item_builder(cls) -> Callable[..., Any] | None:
        """What builds one item of ``from_list`` from a dict (None: ``from_dict``)."""
        return None

    @classmethod
    def fromkeys(cls, keys: Iterable[Any], value: Any = 0) -> Self:
        """An instance (batch size ``[]``) holding ``value`` under each key (a tensor
        value is cloned per key): see :func:`tclass.fromkeys`."""
        return cls._from_plain(INTEROP.fromkeys(keys, value))

    @classmethod
    def from_namedtuple(cls, named_tuple: Any, **options: Unpack[BuildOptions]) -> Self:
        """An instance from a namedtuple (nested ones nest): see
        :func:`tclass.from_namedtuple`."""
        return cls._from_plain(
            INTEROP.from_namedtuple(
                named_tuple, **check_keywords(options, BuildOptions, cls, "from_namedtuple")
            )
        )

    @classmethod
    def from_dataclass(
        cls,
        dataclass: Any,
        *,
        dest_cls: type | None = None,
        auto_batch_size: bool = False,
        batch_dims: int | None = None,
        as_tensorclass: bool = False,
        device: DeviceLike = None,
        batch_size: BatchSizeLike = None,
    ) -> Any:
        """An instance with one entry per field of a dataclass instance (nested
        dataclasses nest), or with ``as_tensorclass=True`` what
        :func:`tclass.from_dataclass` gives."""
        return TENSORCLASS.dataclass_to_collection(
            cls,
            dataclass,
            dest_cls=dest_cls,
            auto_batch_size=auto_batch_size,
            batch_dims=batch_dims,
            as_tensorclass=as_tensorclass,
            device=device,
            batch_size=batch_size,
        )

    @classmethod
    def from_struct_array(
        cls,
        struct_array: np.ndarray[Any, Any],
        *,
        auto_batch_size: bool = False,
        batch_dims: int | None = None,
        device: DeviceLike = None,
        batch_size: BatchSizeLike = None,
    ) -> Self:
        """An instance with one entry per field of a numpy structured array, batch size
        the array's shape: see :func:`tclass.from_struct_array`."""
        return cls._from_plain(
            INTEROP.from_struct_array(
                struct_array,
                auto_batch_size=auto_batch_size,
                batch_dims=batch_dims,
                device=device,
                batch_size=batch_size,
            )
        )

    @classmethod
    def from_pytree(
        cls,
        pytree: Any,
        *,
        batch_size: BatchSizeLike = None,
        auto_batch_size: bool = False,
        batch_dims: int | None = None,
    ) -> Self:
        """An instance from a pytree: see :func:`tclass.from_pytree`. A TensorDict
        records the structure so that :meth:`to_pytree` rebuilds it; a tensorclass reads
        the top node's children as its fields."""
        return INTEROP.collection_from_pytree(  # type: ignore[no-any-return]
            cls,
            pytree,
            batch_size=batch_size,
            auto_batch_size=auto_batch_size,
            batch_dims=batch_dims,
        )

    # --- conversions ---------------------------------------------------------------------

    def to_dict(
        self,
        *,
        retain_none: bool = True,
        convert_tensors: bool | Literal["numpy"] = False,
        tolist_first: bool = False,
    ) -> dict[str, Any]:
        """Nested plain dicts: tensors (nested lists with ``convert_tensors``, numpy arrays
        with ``"numpy"``), Python
        values, nested collections as dicts (with ``tolist_first``, a nested collection
        with batch dims as its :meth:`tolist`, a list of dicts). ``retain_none`` is for
        tensorclasses (their absent fields, ``None`` unless it is false, nested ones
        too); a TensorDict has no ``None`` entries."""
        return INTEROP.to_dict(_collection(self), convert_tensors, tolist_first, retain_none)

    def attrs(
        self,
        *,
        fields: Sequence[str] = ("device", "dtype", "shape"),
        num_threads: int | None = None,
    ) -> TensorDictBase:
        """A TensorDict (batch size ``[]``, no device) holding, under the key of each
        tensor, a :class:`~tclass.TensorAttrs` record of its ``fields`` (any of
        ``"device"``, ``"dtype"``, ``"shape"``; the others ``None``); Python values are
        kept. ``other.to(td.attrs())`` moves and casts each tensor of ``other`` to the
        device and dtype of ``td``'s tensor under the same key. ``num_threads`` is
        accepted (the records are built in the calling thread)."""
        return TENSORCLASS.attrs_of(_collection(self), fields)

    def to_namedtuple(self, dest_cls: Callable[..., Any] | None = None) -> Any:
        """The collection as a namedtuple (nested ones nest; ``dest_cls`` for the top
        level, a generated ``GenericDict`` otherwise)."""
        return INTEROP.to_namedtuple(_collection(self), dest_cls)

    def to_struct_array(self) -> np.ndarray[Any, Any]:
        """A numpy structured array shaped like the batch size, one field per entry:
        see :func:`tclass._interop._bridges.to_struct_array`."""
        return INTEROP.to_struct_array(_collection(self))

    def to_pytree(self) -> Any:
        """The pytree :meth:`from_pytree` read; a collection built otherwise is a pytree
        node itself and is returned as it is."""
        return INTEROP.to_pytree(_collection(self))

    # --- state dicts ---------------------------------------------------------------------

    def state_dict(
        self,
        destination: dict[str, Any] | None = None,
        prefix: str = "",
        keep_vars: bool = False,
        flatten: bool = True,
    ) -> OrderedDict[str, Any]:
        """The tensors under dotted keys (``"next.obs"``), detached unless ``keep_vars``;
        batch sizes, devices and Python values in the result's ``_metadata``, as
        ``nn.Module`` keeps its extras.

        With ``keep_vars=True`` the values are this collection's own tensors (for a lazy
        stack, stacked copies), so writing into them writes into the collection: a
        checkpoint library restores a memory-mapped destination that way, in place.
        ``flatten=False`` nests the dicts like the collection instead.

        Raises:
            KeyConflictError: if two entries flatten to one dotted key (a key holding a
                '.'); use ``flatten=False``.
        """
        return INTEROP.state_dict(_collection(self), destination, prefix, keep_vars, flatten)

    def load_state_dict(
        self,
        state_dict: Mapping[str, Any],
        strict: bool = True,
        assign: bool = False,
        from_flatten: bool | None = None,
    ) -> Self:
        """Copies a :meth:`state_dict` (flat or nested) into this collection's tensors in
        place, then sets its Python values; returns ``self``.

        ``assign=True`` replaces the tensors instead of copying into them. An empty
        destination (``TensorDict()``) takes the state dict's whole structure, batch
        sizes included. With ``strict=False`` keys only one side has are skipped. A lazy
        stack's entries are stacked copies: load into it with ``assign=True``.

        Raises:
            StateDictKeyError: with ``strict``, if the tensor keys differ.
            BatchSizeError: if a tensor's shape differs from its destination's.
        """
        return INTEROP.load_state_dict(self, state_dict, strict, assign, from_flatten)  # type: ignore[type-var]


def _collection(obj: object) -> TensorCollection:
    return cast("TensorCollection", obj)
