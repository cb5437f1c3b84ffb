"""The operations a record leaves to its storage (a mixin of ``TensorClass``, in
``tclass._tensorclass._record``, which holds the storage in ``_tensordict``): applying
functions, clones, shape ops, comparisons and the like, each result given back in the
record's class."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import torch
from typing_extensions import Self

from tclass._base._tensordict_base import TensorDictBase
from tclass._base.implemented._apply import ApplyOptions, ApplyRules
from tclass._base.implemented._collection import TensorCollection
from tclass._base.implemented._entry_ops import _NO_DEFAULT
from tclass._base.implemented._key_ops import renamed
from tclass._base.implemented._shape_ops import Span
from tclass._core._batch import BatchSizeLike
from tclass._core._keys import key_path
from tclass._core._names import DimName
from tclass._core._records import field_names_of, storage_of
from tclass._engine._nontensor import _NonTensorNode
from tclass._tensorclass._guards import apply_in_place_checked, check_fill
from tclass._tensorclass._writes import check_entry_write, check_written_types, stored_value
from tclass.errors import UnknownFieldError

if TYPE_CHECKING:
    from tclass._engine._lazy._stack import LazyStackedTensorDict
    from tclass._engine._td import TensorDict

__all__ = ["RecordStorageOps"]


class RecordStorageOps(TensorDictBase):
    """What ``TensorClass`` answers through its storage."""

    # A lazy stack answers these member by member; a TensorDict as every collection does.
    # Either way the result is rewrapped in this record's class (see _record._rewrap). A
    # method added to TensorDictBase that a lazy stack overrides needs one such line here too.

    if TYPE_CHECKING:  # TensorClass's slot and method
        _tensordict: TensorDict | LazyStackedTensorDict

        def _result(self, result: TensorDictBase) -> Self: ...
        def _unknown_field(self, name: object) -> UnknownFieldError: ...
    else:
        __slots__ = ()

    def _apply_all(
        self, fn: Callable[..., Any], others: tuple[TensorCollection, ...], options: ApplyOptions
    ) -> Self:
        if options.get("inplace"):  # written through the record, whose writes are checked
            return super()._apply_all(fn, others, options)
        storages = tuple(storage_of(other) for other in others)
        result: TensorDictBase | None = self._tensordict._apply_all(fn, storages, options)
        if result is None or result is options.get("out"):  # out= is returned as it is
            return result  # type: ignore[return-value]
        return self._result(result)

    def _named_apply_all(
        self,
        fn: Callable[..., Any],
        others: tuple[TensorCollection, ...],
        nested_keys: bool,
        batch_size: BatchSizeLike,
        options: ApplyRules,
    ) -> Self:
        if options.get("inplace"):  # written through the record, whose writes are checked
            return super()._named_apply_all(fn, others, nested_keys, batch_size, options)
        result: TensorDictBase | None = self._tensordict._named_apply_all(
            fn, others, nested_keys, batch_size, options
        )
        if result is None or result is options.get("out"):  # out= is returned as it is
            return result  # type: ignore[return-value]
        return self._result(result)

    def _apply_plain(
        self,
        fn: Callable[[torch.Tensor], torch.Tensor | None],
        batch_size: torch.Size,
        prefix: tuple[str, ...],
    ) -> Self:
        return self._result(self._tensordict._apply_plain(fn, batch_size, prefix))

    def _apply_nested(
        self,
        fn: Callable[..., torch.Tensor | None],
        others: tuple[Any, ...],
        batch_size: torch.Size,
        prefix: tuple[str, ...],
        rules: Any,
    ) -> Self:
        return self._result(self._tensordict._apply_nested(fn, others, batch_size, prefix, rules))

    def _pointwise_(
        self,
        foreach: Callable[..., Any] | None,
        each: Callable[..., Any],
        operands: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
        **options: Any,
    ) -> Self:
        """In-place math (``zero_``, ``add_``, ``+=``...); over a store (a file, or a
        view of its rows), whose reads are copies: an array at a time, each result
        checked against the class and staged, all written once every one is (with an
        operand collection of other keys: the values read into a record in memory, its
        specs checked there, worked on, and written back)."""
        if self._tensordict._is_store:
            storage: Any = self._tensordict  # an array at a time, checked against the class
            if storage._staged_math(type(self), foreach, each, operands, kwargs, options):
                return self
            return self._on_rows(
                lambda local: local._pointwise_(foreach, each, operands, kwargs, **options)
            )
        return super()._pointwise_(foreach, each, operands, kwargs, **options)

    def _on_rows(self, work: Callable[[Self], object]) -> Self:
        """``work`` done on the values of this record over a store (a file, or a view of
        its rows, whose reads are copies) read into a record in memory, its specs
        checked there; then written back."""
        storage: Any = self._tensordict
        local = self._result(storage.to_tensordict())
        work(local)
        storage._write_back(storage_of(local))
        return self

    def _apply_in_place(
        self, fn: Callable[..., torch.Tensor | None], others: tuple[Any, ...]
    ) -> Self:
        """``apply_``'s walk; the fields whose spec bounds their values get their
        results checked before anything is written (see ``apply_in_place_checked``)."""
        if self._tensordict._is_store:  # an array at a time, checked against the class
            storage: Any = self._tensordict
            storage._staged_apply(type(self), fn, others)
            return self
        if not apply_in_place_checked(self, fn, others):
            self._tensordict._apply_in_place(fn, others)
        return self

    def _stage_in_place(
        self, fn: Callable[..., torch.Tensor | None], others: tuple[Any, ...], staged: Any
    ) -> None:
        """Nested in a collection's ``apply_``: every record adds its results to the
        outer ``staged`` (a stored or bounded one once its own checks pass)."""
        if self._tensordict._is_store:  # checked against the class, written with the rest
            storage: Any = self._tensordict
            storage._staged_apply(type(self), fn, others, staged)
        elif not apply_in_place_checked(self, fn, others, staged):
            self._tensordict._stage_in_place(fn, others, staged)

    def _tensor_leaves(self) -> Iterator[torch.Tensor]:
        return self._tensordict._tensor_leaves()

    def _check_grad_dtypes(self, prefix: tuple[str, ...]) -> None:
        self._tensordict._check_grad_dtypes(prefix)  # (a lazy stack's: member by member)

    def _detach_held_views(self) -> None:
        self._tensordict._detach_held_views()

    def _entry_class(self, key: str) -> type:
        return self._tensordict._entry_class(key)

    def _item_shape(self, key: str) -> torch.Size:
        return self._tensordict._item_shape(key)

    def clone(self, recurse: bool = True) -> Self:
        return self._result(self._tensordict.clone(recurse))

    def _shallow_clone(self) -> Self:  # ``copy.copy`` (a field may hide ``clone``: shadow)
        return self._result(self._tensordict.clone(False))

    def detach(self) -> Self:
        return self._result(self._tensordict.detach())

    def contiguous(self, *, canonical: bool = False, inplace: bool = False) -> Self:
        return self._result(self._tensordict.contiguous(canonical=canonical, inplace=inplace))

    def is_contiguous(self) -> bool:
        return self._tensordict.is_contiguous()  # over a lazy stack: False, as the peer

    def fill_(self, key: Any, value: float | bool | torch.Tensor) -> Self:
        """Fills the field ``key`` (every tensor of a nested record); a value that
        breaks the field's constraints (as the field's dtype holds it) is refused.

        Raises:
            FieldSpecError: naming the field, the constraint and the value; nothing is
                written.
        """
        if self._tensordict._is_store:
            return self._on_rows(lambda local: local.fill_(key, value))
        check_fill(self, key, value)
        return self._result(self._tensordict.fill_(key, value))

    def _compare(self, other: object, op: Callable[[Any, Any], Any]) -> Self:
        """As the storage's; a field left ``None`` here matches a ``None`` the other side
        holds under its name (``record == record.to_dict()``, or a TensorDict built from
        that dict, as in the peer): both are left out, and the result's field is ``None``."""
        absent = self._absent_fields()
        if absent and isinstance(other, (Mapping, TensorCollection)):
            nones = [name for name in absent if name in other.keys() and other[name] is None]
            if nones:
                other = _without(other, nones)
        result = self._tensordict._compare(other, op)  # NotImplemented for a str, None...
        return result if result is NotImplemented else self._result(result)

    def unsqueeze(self, dim: int) -> Self:
        return self._result(self._tensordict.unsqueeze(dim))

    def squeeze(self, dim: int | None = None) -> Self:
        return self._result(self._tensordict.squeeze(dim))

    def permute(self, *dims_list: int | Sequence[int], dims: Sequence[int] | None = None) -> Self:
        return self._result(self._tensordict.permute(*dims_list, dims=dims))

    def transpose(self, dim0: int, dim1: int) -> Self:
        return self._result(self._tensordict.transpose(dim0, dim1))

    def expand(self, *shape: int | Sequence[int]) -> Self:
        return self._result(self._tensordict.expand(*shape))

    def reshape(
        self, *shape: int | Sequence[int], size: Sequence[int] | None = None, inplace: bool = False
    ) -> Self:
        out = self._tensordict.reshape(*shape, size=size, inplace=inplace)
        return self if inplace else self._result(out)

    def _reshaped(self, new: torch.Size, *, always: bool = False, span: Span | None = None) -> Self:
        return self._result(self._tensordict._reshaped(new, always=always, span=span))

    def view(
        self,
        *shape: int | Sequence[int] | torch.dtype,
        size: Sequence[int] | None = None,
        batch_size: Sequence[int] | None = None,
    ) -> Self:
        return self._result(self._tensordict.view(*shape, size=size, batch_size=batch_size))

    def flip(self, dims: int | Sequence[int]) -> Self:
        return self._result(self._tensordict.flip(dims))

    def roll(
        self,
        shifts: int | Sequence[int],
        dims: int | Sequence[int] | None = None,
        *,
        inplace: bool = False,
    ) -> Self:
        out = self._tensordict.roll(shifts, dims, inplace=inplace)
        return self if inplace else self._result(out)

    def narrow(self, dim: int, start: int, length: int) -> Self:
        return self._result(self._tensordict.narrow(dim, start, length))

    def repeat(self, *repeats: int | Sequence[int] | torch.Tensor, inplace: bool = False) -> Self:
        out = self._tensordict.repeat(*repeats, inplace=inplace)
        return self if inplace else self._result(out)

    def masked_select(self, mask: torch.Tensor, *, inplace: bool = False) -> Self:
        """As the storage's: over a lazy stack, the selected rows copied into one
        TensorDict (unlocked), as the peer's (``self[mask]`` would share its members)."""
        out = self._tensordict.masked_select(mask, inplace=inplace)
        return self if inplace else self._result(out)

    def tile(self, dims: int | Sequence[int]) -> Self:
        return self._result(self._tensordict.tile(dims))

    def repeat_interleave(
        self,
        repeats: torch.Tensor | int,
        dim: int | None = None,
        *,
        output_size: int | None = None,
        inplace: bool = False,
    ) -> Self:
        out = self._tensordict.repeat_interleave(
            repeats, dim, output_size=output_size, inplace=inplace
        )
        return self if inplace else self._result(out)

    def set_at_(self, key: Any, value: Any, index: Any, *, non_blocking: bool = False) -> Self:
        check_written_types(self, {key: value})
        check_entry_write(self, key, value, index, "set_at_")
        self._tensordict.set_at_(key, stored_value(self, key, value, index), index)
        return self

    def _require_fields(self, keys: Iterable[Any]) -> None:
        """Refuses a key (a name or a nested key) that does not start with a field.

        Raises:
            UnknownFieldError: naming the first such field name.
        """
        fields = field_names_of(self)
        for key in keys:
            name = key_path(key)[0]
            if name not in fields:
                raise self._unknown_field(name)

    def split_keys(
        self,
        *key_sets: Sequence[Any] | Callable[[tuple[str, ...], Any], bool],
        inplace: bool = False,
        default: Any = _NO_DEFAULT,
        strict: bool = True,
        reproduce_struct: bool = False,
    ) -> tuple[Self, ...]:
        """The storage's parts, each in this record's class (no field is assigned, so a
        frozen record splits too, as in the peer).

        Raises:
            UnknownFieldError: (an ``AttributeError``) ``default`` would fill a key that
                is not a field (a ``None`` default fills nothing: the key is left out,
                as in a TensorDict's parts and in the peer).
        """
        if default is not _NO_DEFAULT and default is not None:
            for keys in key_sets:
                self._require_fields(() if callable(keys) else keys)
        parts = self._tensordict.split_keys(
            *key_sets,
            inplace=inplace,
            default=default,
            strict=strict,
            reproduce_struct=reproduce_struct,
        )
        return tuple(map(self._result, parts))  # the storage itself (inplace) is self

    def rename_keys(self, mapping: Mapping[Any, Any], *, strict: bool = True) -> Self:
        """The storage's entries renamed, in this record's class (no field is assigned,
        so a frozen record renames too, as in the peer); a field the renaming empties is
        kept.

        Raises:
            UnknownFieldError: (an ``AttributeError``, as the peer raises) a destination
                is not a field.
        """
        self._require_fields(mapping.values())
        return self._result(renamed(self._tensordict, mapping, strict, keep_root=True))

    def filter_non_tensor_data(self) -> Self:
        return self._result(self._tensordict.filter_non_tensor_data())

    def empty(
        self,
        recurse: bool = False,
        *,
        batch_size: BatchSizeLike = None,
        device: Any = ...,
        names: Sequence[DimName] | None = _NO_DEFAULT,
    ) -> Self:
        given: dict[str, Any] = {"device": device} if device is not ... else {}
        if names is not _NO_DEFAULT:  # ``None``: unnamed dims, as the storage's
            given["names"] = names
        return self._result(self._tensordict.empty(recurse, batch_size=batch_size, **given))

    def auto_batch_size_(
        self, batch_dims: int | None = None, keep_compliant_size: bool = False
    ) -> Self:
        self._tensordict.auto_batch_size_(batch_dims, keep_compliant_size)
        return self

    def setdefault(self, key: Any, default: Any, inplace: bool = False) -> Any:
        """The entry ``key`` (``default`` stored there first if it is unset or ``None``);
        a Python value comes back as the ``NonTensorData`` (or ``NonTensorStack``) that
        holds it, as the peer's record answers its storage's ``setdefault`` (where
        ``get`` gives the value itself)."""
        value = super().setdefault(key, default, inplace)
        if value is None or isinstance(value, (torch.Tensor, TensorCollection)):
            return value
        node = self._tensordict.get(key, None)
        return node if isinstance(node, _NonTensorNode) else value

    def flatten_keys(
        self,
        separator: str = ".",
        inplace: bool = False,
        is_leaf: Callable[[type], bool] | None = None,
    ) -> Self:
        """Records keep their fields: with nested collections among them, flattened keys
        would not be fields (use ``to_tensordict().flatten_keys()``).

        Raises:
            UnknownFieldError: if a field holds a nested collection (a ``ValueError``, as
                the peer raises when the flattened keys are not fields).
        """
        nested = [
            k for k, v in self._items() if isinstance(v, TensorDictBase) and not v._is_leaf_node
        ]
        if nested:
            msg = (
                f"{type(self).__name__}.flatten_keys: the fields {nested} hold nested "
                "collections, whose flattened keys would not be fields; flatten "
                "record.to_tensordict() instead"
            )
            raise UnknownFieldError(msg)
        return self if inplace else self.copy()

    def unflatten_keys(self, separator: str = ".", inplace: bool = False) -> Self:
        """A record's keys are its fields: nothing to unflatten."""
        return self if inplace else self.copy()


def _without(other: Mapping[str, Any] | TensorCollection, names: list[str]) -> Any:
    """``other`` without the entries ``names``."""
    if isinstance(other, TensorCollection):
        return other.exclude(*names)
    return {key: value for key, value in other.items() if key not in names}
