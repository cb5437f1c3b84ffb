"""Reading a TensorDict: ``get``, and indexing by key or over the batch dims (a mixin of
``TensorDict``, which holds the slots these methods read).

Indexing is a hot path: an int or a slice builds the result with direct slot writes, and
every other index goes through one normalization (``_batch.normalize_index``) before each
entry is indexed once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NoReturn, cast, overload

import torch
from typing_extensions import Self

from tclass._base._tensordict_base import TensorDictBase, Value
from tclass._base.implemented._collection import TensorCollection
from tclass._core import _batch, _keys, _names
from tclass._core._jagged import index_rows
from tclass._core._keys import BatchIndex
from tclass._core._names import Names
from tclass._core._options import OPTIONS
from tclass._core._records import storage_of
from tclass._core._unbatched import UnbatchedTensor
from tclass._engine._nontensor import _NonTensorNode
from tclass._engine._scope import Scope
from tclass.errors import ArgumentValueError, DimError, KeyNotFoundError, KeyThroughTensorError

__all__ = ["IndexingOps", "raise_no_batch_dims"]

_Tensor = torch.Tensor
_Unbatched = UnbatchedTensor
_MISSING: Any = object()
_NO_DEFAULT: Any = object()
_NO_DIMS = torch.Size([])


class IndexingOps(TensorDictBase):
    """The reading methods of ``TensorDict`` (see the module docstring)."""

    if TYPE_CHECKING:  # TensorDict's slots and constructor, and ScopedOps' methods
        _tensors: dict[str, Value]
        _batch_size: torch.Size
        _device: torch.device | None
        _locked: bool
        _consolidated: Any
        _saved_at: Any
        _scope: Scope | None

        @classmethod
        def _new_unchecked(
            cls, tensors: dict[str, Value], batch_size: torch.Size, device: torch.device | None
        ) -> Self: ...
        def _assign_names(self, names: Names) -> None: ...
        def _mark_unbatched(self) -> None: ...
        def _scoped(self) -> Scope: ...
    else:
        __slots__ = ()

    def get(self, key: Any, default: Any = _NO_DEFAULT, **options: Any) -> Any:
        """The entry at ``key`` (a string or a nested tuple), or ``default`` (``None`` if
        not given) when it is absent.

        A Python value is returned as its node (``NonTensorData``...); ``td[key]`` gives
        the value itself. ``options`` are a lazy stack's reading options (``as_list``,
        ``as_padded_tensor``, ``as_nested_tensor``...): a nested key through a lazy stack
        is read with them; a tensor stored here is returned as it is, as the peer.

        Raises:
            KeyThroughTensorError: if no ``default`` is given and a nested key passes
                through a tensor (``("obs", "x")`` where ``"obs"`` is a tensor): that is
                a wrong key rather than a missing entry (the peer raises here too).
            KeyNotFoundError: for a missing key without ``default``, after
                ``set_get_defaults_to_none(False)``.
        """
        if options:
            return self._get_through_lazy(_keys.key_path(key), default, options)
        if type(key) is str:
            if default is not _NO_DEFAULT:
                return self._tensors.get(key, default)
            value = self._tensors.get(key)
            if value is None and not OPTIONS.get_defaults_to_none:
                raise self._missing_key(key)
            return value
        path = _keys.key_path(key)
        node: Any = self
        for depth, part in enumerate(path):
            if not isinstance(node, TensorCollection):
                if default is _NO_DEFAULT:
                    _raise_through_tensor(path, depth)
                return default
            if node.__class__ is not self.__class__:
                node = storage_of(node)  # through a record: the node its storage holds
            node = node.get(part, _MISSING)
            if node is _MISSING:
                if default is _NO_DEFAULT and not OPTIONS.get_defaults_to_none:
                    raise self._missing_key(path)
                return None if default is _NO_DEFAULT else default
        return node

    def _get_through_lazy(self, path: tuple[str, ...], default: Any, options: Any) -> Any:
        """``get(path, default, **options)``: the first lazy stack on ``path`` reads the
        rest with ``options``; without one, the entry as ``get`` gives it."""
        node: Any = self
        depth = 0
        while depth < len(path) and isinstance(node, TensorCollection) and not node._is_lazy:
            node = node.get(path[depth], _MISSING)
            if node is _MISSING:
                return self.get(path, default)  # missing: as get answers (or raises)
            depth += 1
        if depth == len(path):
            return node
        if isinstance(node, TensorCollection):
            rest = path[depth:]
            return (
                node.get(rest, **options)
                if default is _NO_DEFAULT
                else node.get(rest, default, **options)
            )
        return self.get(path, default)  # through a tensor: as get answers (or raises)

    @overload
    def __getitem__(self, index: str | tuple[str, ...]) -> Any: ...
    @overload
    def __getitem__(self, index: BatchIndex) -> Self: ...

    def __getitem__(self, index: Any) -> Any:
        """``td["key"]`` or ``td["a", "b"]`` reads an entry (KeyError if missing), a Python
        value as the value itself (a ``NonTensorStack`` as a list); any other index (int,
        slice, list, tensor, mask, ``...``, ``None`` or a tuple of them) indexes the batch
        dims of every entry and returns a TensorDict."""
        # Keep this body small: CPython runs a small __getitem__ frame measurably faster
        # (46 ns vs 58 ns per key read), so other indices go to helper methods.
        if index.__class__ is str:
            try:
                value = self._tensors[index]
            except KeyError:
                raise self._missing_key(index) from None
            if value.__class__ is _Tensor or not isinstance(value, _NonTensorNode):
                return value
            return value._read()
        if index.__class__ is int:
            return self._index_int(index)
        if index.__class__ is slice:
            return self._index_slice(index)
        if isinstance(index, str):  # a str subclass (numpy.str_, a str enum) names a key
            return self[_keys.plain_key(index)]
        return self._index(index)

    def _index_int(self, index: int) -> Self:
        batch = self._batch_size
        tensors = self._tensors
        if not batch or not tensors:
            # With entries, indexing them checks the bounds (an IndexError from torch).
            _check_int_index(index, batch)
        if self._scope is not None and self._scope.special:
            return cast(Self, self._index(index))  # names or unbatched tensors to carry
        try:
            values = {key: value[index] for key, value in tensors.items()}
        except IndexError:
            _check_int_index(index, batch)  # raises DimError (an IndexError) for the bounds
            raise
        out = self._new_unchecked(values, batch[1:] if len(batch) > 1 else _NO_DIMS, self._device)
        return self._locked_view(out, index) if self._locked else out

    def _index_slice(self, index: slice) -> Self:
        batch = self._batch_size
        if not batch:
            raise_no_batch_dims(index)
        if index.start is None and index.stop is None and index.step is None:
            return self  # td[:] is td, as in the peer
        step = index.step
        if step is not None and step <= 0:
            msg = f"slice step must be positive, got {step}; reverse a dim with .flip(dim) instead"
            raise ArgumentValueError(msg)
        if self._scope is not None and self._scope.special:
            return cast(Self, self._index(index))  # names or unbatched tensors to carry
        values = _indexed(self._tensors, index)
        for value in values.values():
            if value.__class__ is _Tensor:  # its leading dims: the new batch size
                new_batch = value.shape[: len(batch)]
                break
        else:  # (slice.indices would pin a symbolic size under torch.compile)
            start, stop, step = index.indices(batch[0])
            length = max(0, (stop - start + step - 1) // step)
            new_batch = torch.Size((length, *batch[1:]))
        out = self._new_unchecked(values, new_batch, self._device)
        return self._locked_view(out, index) if self._locked else out

    def _locked_view(self, out: Self, index: Any) -> Self:
        """``out``, the result of ``self[index]`` for a locked ``self``, locked as the
        peer locks it: when ``self`` is memory-mapped or shared and the index keeps the
        data pointer (see ``_batch.keeps_data_pointer``)."""
        if _batch.keeps_data_pointer(index) and self._views_stay_locked():
            out.lock_()
            self._mark_view_of(out)
        return out

    def _mark_view_of(self, view: Self) -> None:
        if any(isinstance(value, torch.Tensor) for value in view._tensors.values()):
            return  # its tensors tell whether its data is mapped or shared
        # No tensor to tell it: the view is marked, and its rows are locked too.
        if self._saved_or_view_of_saved():
            view._scoped().saved_view = True
        scope = self._scope
        if scope is not None and scope.shared:
            view._scoped().shared = True

    def _shared_without_tensors(self) -> bool:
        scope = self._scope
        return scope is not None and scope.shared

    def _mark_shared(self) -> None:
        self._scoped().shared = True
        for value in self._tensors.values():
            if isinstance(value, (IndexingOps, _NonTensorNode)):  # a nested TensorDict, a value
                value._mark_shared()

    def _views_stay_locked(self) -> bool:
        return self._saved_or_view_of_saved() or super()._views_stay_locked()

    def _saved_or_view_of_saved(self) -> bool:
        """Saved in a folder, or a locked view of one without tensors (see ``Scope``)."""
        scope = self._scope
        return self._saved_at is not None or (
            self._locked and scope is not None and scope.saved_view
        )

    def _index(self, index: Any) -> Any:
        batch = self._batch_size
        kind = type(index)
        if kind is tuple:
            if _keys.is_key_tuple(index):
                node = self._get_nested(index)
                return node._read() if isinstance(node, _NonTensorNode) else node
            if _batch.is_whole_index(index, len(batch)):
                return self  # td[...], td[()], td[:, :]: the collection itself, as the peer
            index = _batch.normalize_index(index, len(batch))
        elif index is Ellipsis:
            return self  # as the peer
        elif isinstance(index, _Tensor) and index.ndim == 1 and batch:
            if index.dtype is torch.bool and not (self._scope and self._scope.special):
                return self._index_mask(index)
        elif kind is list:
            # ``td[[[0, 1]]]`` is ``td[([[0, 1]],)]``, as the peer: a nested list is one
            # advanced index (a tensor of its shape), never torch's deprecated reading of
            # a bare list as one index per dim
            index = _batch.normalize_index((index,), len(batch))
        elif index is not None:
            index = _batch.normalize_index((index,), len(batch))[0]
        scope = self._scope
        if scope is None or not scope.special:
            try:
                values = _indexed(self._tensors, index)
            except IndexError as error:
                raise _out_of_range(index, batch, error) from None
            out = self._new_unchecked(values, self._indexed_size(index, values), self._device)
        else:
            out = self._index_special(index, scope)
        return self._locked_view(out, index) if self._locked else out

    def _index_special(self, index: Any, scope: Scope) -> Self:
        """Indexing a TensorDict with dim names or unbatched tensors: both carried."""
        try:
            values = {
                key: value if value.__class__ is _Unbatched else value[index]
                for key, value in self._tensors.items()
            }
        except IndexError as error:
            raise _out_of_range(index, self._batch_size, error) from None
        new = self._indexed_size(index, values)
        if scope.unbatched:
            for key, value in values.items():
                if value.__class__ is _Unbatched:
                    values[key] = value._with_batch_size(new)
        out = self._new_unchecked(values, new, self._device)
        if scope.names is not None:
            items = index if type(index) is tuple else (index,)
            nb = len(self._batch_size)
            out._assign_names(_names.indexed(scope.names, _batch.normalize_index(items, nb)))
        if scope.unbatched:
            out._mark_unbatched()
        return out

    def _index_mask(self, mask: torch.Tensor) -> Self:
        """``td[mask]`` for a 1-d mask over the first batch dim.

        The mask is turned into row numbers once and every tensor gathers those rows with
        ``index_select``; indexing each tensor with the mask would redo that conversion
        per tensor (7.8 us instead of 11.8 us for three tensors). A dtype torch has no
        ``index_select`` for (``uint16``, ``uint32``, ``uint64``) is indexed by the rows.
        """
        batch = self._batch_size
        if mask.shape[0] != batch[0]:
            msg = (
                f"the mask has shape {list(mask.shape)} but batch dim 0 has size {batch[0]}; "
                "a boolean index must match the batch dims it covers (the shape of the mask "
                "does not match the shape of the indexed tensor)"
            )
            raise DimError(msg)
        rows = mask.nonzero().squeeze(1)
        device = rows.device
        values: dict[str, Value] = {}
        for key, value in self._tensors.items():
            if isinstance(value, _Tensor) and value.device == device and not value.is_nested:
                try:
                    values[key] = value.index_select(0, rows)
                except NotImplementedError:  # no kernel for its dtype (uint16): torch's [rows]
                    values[key] = value[rows]
            else:
                values[key] = index_rows(value, rows)
        new = torch.Size((rows.shape[0],) if len(batch) == 1 else (rows.shape[0], *batch[1:]))
        return self._new_unchecked(values, new, self._device)

    def _indexed_size(self, index: Any, values: dict[str, Value]) -> torch.Size:
        """The batch size after ``index``, read off the first result (its feature dims are
        unchanged), or worked out on a stride-0 stand-in when there are no entries."""
        for key, result in values.items():
            if result.__class__ is _Unbatched:
                continue  # kept whole: no batch dims to read
            feature_dims = self._tensors[key].ndim - len(self._batch_size)
            shape = result.shape
            shape = shape[: len(shape) - feature_dims] if feature_dims else shape
            if isinstance(result, _Tensor) and result.is_nested:
                # a ragged dim reads as a symbol (j3): the batch size has -1 there
                dims: list[Any] = list(shape)  # ints, and the symbol (a torch.SymInt)
                return torch.Size(-1 if isinstance(d, torch.SymInt) else d for d in dims)
            return shape
        return _batch.indexed_shape(self._batch_size, index)

    def _get_nested(self, key: Any) -> Any:
        path = _keys.key_path(key)
        node: Any = self
        for depth, part in enumerate(path):
            if not isinstance(node, TensorCollection):
                _raise_through_tensor(path, depth)
            try:
                node = node._entry(part)
            except KeyNotFoundError:
                raise self._missing_key(path) from None  # naming the whole key
        return node


def _indexed(tensors: dict[str, Value], index: Any) -> dict[str, Value]:
    """Every entry indexed by ``index``; a jagged nested tensor, which torch cannot index
    along its first dim, has its rows gathered (see ``_core._jagged``)."""
    try:
        return {key: value[index] for key, value in tensors.items()}
    except (RuntimeError, ValueError, NotImplementedError):
        return {key: index_rows(value, index) for key, value in tensors.items()}


def _out_of_range(index: Any, batch: torch.Size, error: IndexError) -> DimError:
    return _batch.index_error(index, batch, error)


def _check_int_index(index: int, batch: torch.Size) -> None:
    if not batch:
        raise_no_batch_dims(index)
    if not -batch[0] <= index < batch[0]:
        msg = f"index {index} is out of bounds for batch dim 0 of size {batch[0]}"
        raise DimError(msg)


def _raise_through_tensor(path: tuple[str, ...], depth: int) -> NoReturn:
    msg = (
        f"key {path!r} not found: {path[:depth]!r} is a tensor, not a collection, so it "
        f"has no entry {path[depth]!r}"
    )
    raise KeyThroughTensorError(msg)


def raise_no_batch_dims(index: object) -> None:
    msg = (
        f"cannot index a TensorDict that has no batch dims with {index!r}; read entries "
        "with td['key'], or give it a batch size"
    )
    raise DimError(msg)
