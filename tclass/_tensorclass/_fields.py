"""What each field annotation accepts, and how a given value is stored.

The rules (DESIGN.md, "Casting follows the annotation"), decided once per field when the
class is built:

=========================  ==================================================================
annotation                 accepted values, and what is stored
=========================  ==================================================================
``Tensor`` (or subclass)   tensors; array-likes (lists, numbers, numpy) via ``torch.as_tensor``
                           (a list of tensors of one shape: their stack)
                           (jaxtyping's ``Float[Tensor, "b 3"]``: the same, shapes unchecked)
a tensorclass ``C``        ``C`` instances; a dict (``C.from_dict``) or a TensorDict
                           (``C.from_tensordict``) becomes a ``C``
``TensorDict``             TensorDicts; a dict becomes a TensorDict
``str``, ``int``, ...      values of that type (``float`` takes ints, ``int`` takes bools, as
                           type checkers do), kept as Python values (``NonTensorData``);
                           ``int``/``float``/``complex``/``bool`` take tensors and numpy
                           arrays too (numbers in tensor form, kept as tensors, as the peer
                           keeps them; ``nocast`` keeps an array as given)
``list[X]``, ``dict``...   values whose type is the generic's origin (items are not checked)
``Literal[...]``           one of the listed values (others refused: ``FieldSpecError``)
``Annotated[int, Ge(0)]``  the annotated-types bounds, ``MultipleOf``, ``MinLen``/``MaxLen``/
                           ``Len`` of the Python values, checked (``FieldRule.values``)
``Any``, ``object``, a     anything: tensors and collections as entries, the rest as values
``TypeVar``, other forms   (``Annotated[X, ...]`` and ``NewType`` are read as ``X``)
``X | Y``                  what ``X`` or ``Y`` accepts
any other class            its instances, kept as Python values
=========================  ==================================================================

A field that takes Python values takes Python values of other types too, stored as a
TensorDict stores them (as the peer): a list one value per element along the batch
(``NonTensorStack``; one ``NonTensorData`` under ``set_list_to_stack(False)``), anything
else one value, and in a field that takes tensors too (``Tensor | str``) numbers and
lists of numbers a tensor. Under an explicit ``set_list_to_stack(True)``, a list is one
value per element even where the annotation names lists (as the peer stores every list).
A ``Tensor`` field keeps a record or TensorDict as it is (the peer). ``None`` is accepted
by every field: it means "not set yet" (nothing is stored; the field reads ``None``, and
writing a record into it by index creates its storage). A value of the other kind (a
tensor or collection where only Python values belong, a Python value where a tensor or
a record belongs) raises ``FieldTypeError`` naming the class, the field and the
annotation. Every stored tensor and collection must start with the batch size.

Class options change the rules: ``autocast`` converts a value to the field's annotated
class first (``int(tensor)``, ``str(1)``, ``np.asarray(t)``; numbers and arrays become
tensors in ``Any`` fields), ``nocast`` keeps numbers and numpy arrays given to a tensor
field as Python values (not in a field with a spec, ``Annotated[Tensor, Spec(...)]``, a
jaxtyping annotation or a constraint: those hold tensors that meet it, so an array-like is
converted and checked there as without the option, on every write path), and
``tensor_only`` allows tensor and collection annotations only.
"""

from __future__ import annotations

import numbers
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import torch

from tclass._base._tensordict_base import TensorDictBase, Value
from tclass._base.implemented._collection import TensorCollection
from tclass._core._batch import format_shape
from tclass._core._class_options import DEFAULTS, ClassOptions
from tclass._core._constraints import ValueConstraints
from tclass._core._jagged import leaf_shape
from tclass._core._linked_list import LinkedList, unlinked
from tclass._core._options import OPTIONS
from tclass._core._records import is_record, is_record_class
from tclass._core._spec import (
    TensorSpec,
    array_type_of,
    exact_tensor,
    inexact_value,
    spec_of,
    viewable,
)
from tclass._core._unbatched import UnbatchedTensor
from tclass._engine._entry_values import fit_to_batch
from tclass._engine._nontensor import NonTensorData, _NonTensorNode
from tclass._engine._nontensor_stack import NonTensorStack
from tclass._engine._pyvalues import stored_value
from tclass._engine._td import TensorDict
from tclass._tensorclass._hints import annotated_members, annotation_text
from tclass.errors import (
    BatchMismatchError,
    CastError,
    ClassDefinitionError,
    FieldSpecError,
    FieldTypeError,
    SpecProblem,
)

__all__ = ["FieldRule", "may_hold_collections", "rule_for"]

_Tensor = torch.Tensor
_V = typing.TypeVar("_V")


@dataclass(frozen=True)
class FieldRule:
    """What one field accepts (see the module table)."""

    name: str
    owner: str  # the class name, for messages
    text: str  # the annotation as written, for messages
    optional: bool = False
    any_value: bool = False
    tensor: bool = False  # accepts tensors
    number: bool = False  # a number annotation: accepts tensors too, as numbers in tensor form
    cast_arrays: bool = False  # array-likes become tensors (a pure Tensor annotation)
    # A ``list`` field without autocast or nocast: a numpy array given becomes a tensor
    # (the peer's makes every array one there), kept as a tensor.
    arrays: bool = False
    collections: tuple[type, ...] = ()  # accepted collection classes
    convert_to: type | None = None  # the collection class a dict / TensorDict becomes
    check_value: Callable[[object], bool] | None = None  # accepted Python values
    cast: Callable[[Any], Any] | None = None  # autocast: the conversion to the annotation
    spec: TensorSpec | None = None  # the shape and dtype its tensors must have
    # The one class of Python value the field keeps as it is (a plain class annotation,
    # no autocast): store() of a value of exactly this class is NonTensorData._make.
    value_class: type | None = None
    # The constraints of its Python values (annotated-types, a Literal's values).
    values: ValueConstraints | None = None

    def __post_init__(self) -> None:
        if self.values is not None:  # (only then: unconstrained fields pay nothing)
            object.__setattr__(self, "store", self._store_constrained)

    @property
    def value_field(self) -> bool:
        """Whether the field may hold a Python value (read back through ``.data``)."""
        return self.any_value or self.check_value is not None

    def store(self, value: Any, batch: torch.Size, device: torch.device | None) -> Value | None:
        """``value`` as the record keeps it (``None``: nothing stored, the field is not set
        yet), checked."""
        if value is None:
            return None
        if isinstance(value, LinkedList):
            value = unlinked(value)  # a field read from a stack: its values, not the link
        if self.cast is not None:
            value = self._cast(value, batch)
        if isinstance(value, _Tensor):
            if not (self.tensor or self.any_value or self.number or self.arrays):
                self._refuse(value)
            tensor: torch.Tensor = value
            if device is not None and tensor.device != device:
                tensor = tensor.to(device)
            return self._check_batch(tensor, batch)
        if isinstance(value, TensorCollection):
            if type(value) is NonTensorData and value.data is None and not self.value_field:
                return None  # the unset field ``to_tensordict(retain_none=True)`` kept
            return self._store_collection(value, batch, device)
        check = self.check_value
        if self.any_value or (check is not None and check(value)):
            if type(value) is not list or OPTIONS.list_to_stack is not True or check is None:
                return NonTensorData._make(value, batch, device)
            # set_list_to_stack(True) given: a list is one value per element (the peer)
            return self._check_batch(NonTensorStack.from_list(value, device), batch)
        if self.convert_to is not None and isinstance(value, Mapping):
            return self._convert(value, batch, device)
        if (self.number or self.arrays) and isinstance(value, np.ndarray):  # (the peer's)
            return self._check_batch(self._array_tensor(value, device), batch)
        if self.cast_arrays and not isinstance(value, (str, bytes, Mapping)):
            return self._check_batch(self._array_tensor(value, device), batch)
        if check is not None:
            return self._other_value(value, batch, device)
        self._refuse(value)

    def _store_constrained(
        self, value: Any, batch: torch.Size, device: torch.device | None
    ) -> Value | None:
        """:meth:`store` of a field whose Python values are constrained: checked."""
        stored = FieldRule.store(self, value, batch, device)
        if stored is not None:
            self.check_values(stored)
        return stored

    def check_values(self, value: Any) -> None:
        """Refuses a value (a Python value, a node or stack of them, a number in tensor
        form, a list of values written into rows) that breaks a constraint of the
        field's Python values (``Annotated[int, Ge(0)]``, ``Literal["a", "b"]``).

        Raises:
            FieldSpecError: naming the field, the constraint and the first value
                breaking it (with its index along the batch).
        """
        found = self.values
        if found is None or value is None:
            return
        if isinstance(value, _Tensor):
            hit = None if found.numbers is None else found.numbers.first_violation(value)
            if hit is not None:
                self._refuse_value(hit.value, hit.constraint, hit.element)
            return
        if isinstance(value, NonTensorData):
            items: list[Any] = [value.data]
        elif isinstance(value, _NonTensorNode):
            items = _flat_values(value.tolist(), value.batch_dims)
        elif isinstance(value, TensorCollection):
            return
        elif type(value) is list and not (self.check_value and self.check_value(value)):
            items = value  # one value per row written
        else:
            items = [value]
        for index, item in enumerate(items):
            broken = found.broken_by(item)
            if broken is not None:
                self._refuse_value(item, broken, (index,) if len(items) > 1 else ())

    def _refuse_value(
        self, value: object, broken: str, element: tuple[int, ...]
    ) -> typing.NoReturn:
        at = f" at index {element}" if element else ""
        found = typing.cast(ValueConstraints, self.values)
        said = self.text if broken.startswith("in ") else f"{self.text} with {found.text}"
        msg = (
            f"{self.owner}.{self.name} is given {_describe(value)}{at}, which breaks "
            f"{broken} (its annotation {said})"
        )
        key = broken.partition("=")[0] if "=" in broken else "isin"
        problem = SpecProblem(self.name, key, value, broken, None, msg, element or None)
        raise FieldSpecError(f"{msg}; give a value that meets it. Nothing was written", [problem])

    def over_stack(self, value: Any, batch: torch.Size, device: torch.device | None) -> Any:
        """``value`` as a lazy stack of records of ``batch`` stores it in this field: in a
        field that takes any value, a list nested as the stack's batch (as ``to_dict()`` of
        the stack writes the field) is one value per element, so that each member gets
        its own (the peer splits it too); anything else as :meth:`store` takes it."""
        if not (batch and self.any_value and type(value) is list and _nested_as(value, batch)):
            return value
        return NonTensorStack._make(_flat_values(value, len(batch)), batch, device)

    def per_member(self, value: Any, batch: torch.Size, stack_dim: int) -> list[Any] | None:
        """The items the members of a lazy stack of records of ``batch`` take of ``value``
        in this field, one each along the stack dim ``stack_dim`` (``None``: not split).
        As the peer splits a list written to a lazy stack: in a field that takes any value
        (not under ``autocast``, where the peer gives every member the whole value), a
        list as long as the stack (nested ``stack_dim`` levels as the dims before it)
        gives member ``i`` its ``i``-th item there (``[5, 6]`` over two members: ``5`` and
        ``6``), which that member stores as a record of the class would. Checked after
        :meth:`over_stack`, which reads a list nested as the whole batch first."""
        if not (self.any_value and self.cast is None and type(value) is list):
            return None
        if not _nested_as(value, batch[: stack_dim + 1]):
            return None
        return [_item_at(value, stack_dim, i) for i in range(batch[stack_dim])]

    def _other_value(self, value: Any, batch: torch.Size, device: torch.device | None) -> Value:
        """A Python value of a type the annotation does not name, in a field that takes
        Python values: stored as a TensorDict stores it, as the peer does (DESIGN.md 5):
        a list one value per element (unless ``set_list_to_stack(False)``; a list whose
        items the annotation names always), and in a field that takes tensors too
        (``Tensor | str``) numbers and lists of numbers a tensor."""
        if self.tensor:
            stored = stored_value(value, batch, device)
            return stored if isinstance(stored, NonTensorData) else self._check_batch(stored, batch)
        if type(value) is list:
            stack = NonTensorStack.from_list(value, device)
            check: Any = self.check_value
            flat = _flat_values(stack.tolist(), stack.batch_dims)
            if OPTIONS.list_to_stack is not False or all(map(check, flat)):
                return self._check_batch(stack, batch)
        return NonTensorData._make(value, batch, device)

    def array_tensor(self, value: Any) -> torch.Tensor | None:
        """The tensor an array-like (a list, tuple or numpy array) given to this field
        becomes (``None`` for a value the field keeps as a Python value), for ``from_dict``
        to read its shape when it infers the batch size, as the peer reads the tensors it
        makes of lists there.

        Raises:
            FieldSpecError, FieldTypeError: as storing the value would.
        """
        if not isinstance(value, (list, tuple, np.ndarray)):
            return None
        if self.cast_arrays or ((self.number or self.arrays) and isinstance(value, np.ndarray)):
            if self.check_value is None or not self.check_value(value):
                return self._array_tensor(value, None)
        return None

    def _array_tensor(self, value: Any, device: torch.device | None) -> torch.Tensor:
        """An array-like as a tensor: of its spec's dtype when it names one, which must
        hold every value exactly (any real number in a floating dtype).

        Raises:
            FieldSpecError: naming a value the dtype cannot hold (300 or 2.5 in uint8).
        """
        dtypes = self.spec.dtypes if self.spec is not None else None
        dtype = next(iter(dtypes)) if dtypes is not None and len(dtypes) == 1 else None
        value = viewable(value)
        try:
            if type(value) in (list, tuple) and value and all(type(v) is _Tensor for v in value):
                value = torch.stack(value)  # tensors of one shape: their stack (the peer)
            if dtype is None or dtype.is_floating_point or dtype.is_complex:
                return torch.as_tensor(value, dtype=dtype, device=device)
            tensor = exact_tensor(value)
        except (TypeError, ValueError, RuntimeError):
            self._refuse(value)
        bad = inexact_value(tensor, dtype)
        if bad is not None:
            assert self.spec is not None
            stored = str(dtype).replace("torch.", "")
            msg = (
                f"{self.owner}.{self.name} is given {bad!r}, which {stored} (the dtype of its "
                f"annotation {self.spec.text}) cannot hold exactly; give values it holds, or "
                f"a tensor of dtype {stored}"
            )
            raise FieldSpecError(msg, [SpecProblem(self.name, "dtype", bad, stored, None, msg)])
        return tensor.to(device=device, dtype=dtype)

    def _store_collection(
        self, value: TensorCollection, batch: torch.Size, device: torch.device | None
    ) -> Value:
        if isinstance(value, _NonTensorNode):
            if not self.value_field:
                self._refuse(value)
            if isinstance(value, NonTensorData) and value.batch_size[: len(batch)] != batch:
                value = value._make(value.data, batch, value.device)  # spans the record
        elif not (self.any_value or self.tensor or isinstance(value, self.collections)):
            # (a Tensor field keeps a record or TensorDict as it is, as the peer; so does a
            # TensorDict field any other collection: a lazy stack, a file, a record)
            if self.convert_to is not TensorDict:
                # a TensorDict, lazy stack, file or parameters becomes a record of the
                # annotated class (the peer stores those as given); another record is refused
                if self.convert_to is None or not isinstance(value, TensorDictBase):
                    self._refuse(value)
                if is_record(value):
                    self._refuse(value)
                return self._convert(value, batch, device)
        stored: Any = value
        if device is not None and stored.device != device:
            stored = stored.to(device)
        n = len(batch)
        size = stored.batch_size
        if n and size != batch and size[:n] != batch:  # (equal sizes: no slice to build)
            return fit_to_batch(stored, batch, self.name)  # type: ignore[no-any-return]
        return stored  # type: ignore[no-any-return]

    def _convert(self, value: Any, batch: torch.Size, device: torch.device | None) -> Value:
        target: Any = self.convert_to
        try:
            if isinstance(value, TensorDictBase):
                # a cast, not data coming in: no __post_init__ (from_tensordict runs those)
                converted = value if target is TensorDict else _cast_to(target, value)
            elif target is TensorDict:
                converted = TensorDict(value, batch, device)
            else:
                converted = target.from_dict(value, batch_size=batch, device=device)
        except BatchMismatchError as error:
            raise error.under(self.name) from None
        if device is not None and converted.device != device:
            converted = converted.to(device)
        return self._check_batch(converted, batch)

    def _check_batch(self, value: _V, batch: torch.Size) -> _V:
        if value.__class__ is UnbatchedTensor:  # any shape: it belongs to the whole batch
            return typing.cast(Any, value)._with_batch_size(batch)  # type: ignore[no-any-return]
        n = len(batch)
        if not n:
            return value
        held: Any = value
        # (a strided nested tensor has no .shape: its parts' sizes)
        shape = (
            leaf_shape(held) if isinstance(held, torch.Tensor) and held.is_nested else held.shape
        )
        # (one batch dim, the usual: its size compared, no slice of the shape made)
        if (not shape or shape[0] != batch[0]) if n == 1 else shape[:n] != batch:
            raise BatchMismatchError(self.name, shape, batch)
        return value

    def _cast(self, value: Any, batch: torch.Size) -> Any:
        """``value`` converted to the annotation; a stored Python value (a node, as a
        loaded folder or ``to_tensordict()`` holds it) has the value of each element
        converted, and stays a node (in an ``Any`` field, it is kept as it is). A stack of
        values with more dims than the record's batch (a list a TensorDict stored as one
        value per item) holds one value per record element, the nested list of its
        other dims: where that list is what the annotation takes (a ``list`` field), the
        node is kept; otherwise each value is converted, as for other nodes. A list of
        one value per element (nested as the batch, as ``to_dict()`` of a stacked record
        writes a field) is read as such a stack, unless the cast keeps it (a ``list``
        field) or the field takes tensors (a list is an array-like there)."""
        if type(value) is list and self._per_element(value, batch):
            value = NonTensorStack._make(_flat_values(value, len(batch)), batch, None)
        elif isinstance(value, _Tensor) and self._numbers_per_element(value, batch):
            value = NonTensorStack._make(_flat_values(value.tolist(), len(batch)), batch, None)
        if not isinstance(value, _NonTensorNode):
            return self._cast_one(value)
        if self.any_value:
            return value
        if value.batch_dims > len(batch) and self._kept_whole(value, len(batch)):
            return value
        return value._with_each_value(self._cast_one)

    def _per_element(self, value: list[Any], batch: torch.Size) -> bool:
        """Whether the list ``value`` holds one value per element of ``batch`` that the
        cast converts (see :meth:`_cast`)."""
        if not batch or self.tensor or self.any_value or not _nested_as(value, batch):
            return False
        try:
            return not _same_value(self.cast(value), value)  # type: ignore[misc]
        except (TypeError, ValueError, RuntimeError):
            return True

    def _numbers_per_element(self, value: torch.Tensor, batch: torch.Size) -> bool:
        """Whether the tensor ``value`` given to a number field holds one number per
        element of ``batch`` (of more than one element): what the tensors of a stack of
        records hold there, or a folder or file written by the peer, whose records keep
        numbers as tensors. Each is converted (exactly: ``tolist()``, not through a
        float), as a stack of autocast records holds them."""
        return (
            self.number
            and not self.tensor
            and bool(batch)
            and value.shape == batch
            and value.numel() > 1
            and value.layout is torch.strided
            and not value.is_meta
        )

    def _kept_whole(self, node: Any, depth: int) -> bool:
        """Whether the cast keeps, as they are, the nested lists of ``node``'s values
        below its first ``depth`` dims."""
        parts = _flat_values(unlinked(node.tolist()), depth)
        try:
            return all(_same_value(self.cast(part), part) for part in parts)  # type: ignore[misc]
        except (TypeError, ValueError, RuntimeError):
            return False

    def _cast_one(self, value: Any) -> Any:
        if value is None:  # not set (a value None when saved, loaded as a node of None;
            return None  # an element of a list: not set there, as a field given None)
        try:
            return self.cast(value)  # type: ignore[misc]
        except (TypeError, ValueError, RuntimeError) as error:
            msg = (
                f"{self.owner}.{self.name} is annotated {self.text} (autocast): cannot convert "
                f"{_describe(value)} to it ({error})"
            )
            raise CastError(msg) from None

    def check_written(self, value: Any) -> None:
        """Refuses a value written into rows of this field (or moved into it by
        ``rename_key_``) of a kind the field never holds, as assignment refuses it: a
        tensor in a field of Python values, a string or a node of Python values
        (``NonTensorData``, ``NonTensorStack``) in a field of tensors (a number fills a
        tensor; autocast converts).

        Raises:
            FieldTypeError: naming the class, the field and the annotation.
        """
        if self.values is not None:
            self.check_values(value)
        if self.any_value or self.cast is not None:
            return
        if isinstance(value, _Tensor):
            if not (self.tensor or self.number or self.arrays):
                self._refuse(value)
        elif isinstance(value, (str, bytes)) and self.check_value is None:
            self._refuse(value)
        elif isinstance(value, _NonTensorNode) and not self.value_field:
            self._refuse(value)

    def check_mapping(self, value: object) -> None:
        """Refuses a plain mapping where :meth:`store` refuses one: a field that holds no
        Python value and converts none to a collection (``Optional[Tensor]``).

        Raises:
            FieldTypeError: naming the class, the field and the annotation.
        """
        takes = self.any_value or self.cast is not None or self.check_value is not None
        if not (takes or self.convert_to is not None):
            self._refuse(value)

    def _refuse(self, value: object) -> typing.NoReturn:
        shown = _describe(value)
        msg = f"{self.owner}.{self.name} is annotated {self.text}; got {shown}"
        raise FieldTypeError(msg)


def may_hold_collections(rules: typing.Iterable[FieldRule]) -> bool:
    """Whether a field of these rules can hold a nested collection (whose dim names the
    record's constructor then checks and shares)."""
    return any(r.collections or r.convert_to is not None or r.any_value for r in rules)


def _same_value(new: Any, old: Any) -> bool:
    """Whether a cast left a Python value as it was (same type, equal)."""
    try:
        return type(new) is type(old) and bool(new == old)
    except (RuntimeError, TypeError, ValueError):  # values holding tensors or arrays
        return False


def _flat_values(values: Any, depth: int) -> list[Any]:
    """The items of nested lists ``depth`` levels deep, in order."""
    if depth == 0:
        return [values]
    return [item for part in values for item in _flat_values(part, depth - 1)]


def _item_at(values: Any, depth: int, index: int) -> Any:
    """Item ``index`` of nested lists at ``depth`` levels down, the levels above kept
    (``_item_at([[1, 2], [3, 4]], 1, 0)`` is ``[1, 3]``)."""
    if depth == 0:
        return values[index]
    return [_item_at(part, depth - 1, index) for part in values]


def _nested_as(values: Any, shape: torch.Size) -> bool:
    """Whether ``values`` are nested lists whose leading lengths are ``shape``."""
    if not shape:
        return True
    return (
        type(values) is list
        and len(values) == shape[0]
        and all(_nested_as(item, shape[1:]) for item in values)
    )


def _describe(value: object) -> str:
    if isinstance(value, (_Tensor, TensorCollection)):
        return f"a {type(value).__name__} of shape {format_shape(value.shape)}"
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{type(value).__name__} {text}"


def rule_for(
    name: str, owner: str, annotation: object, options: ClassOptions = DEFAULTS
) -> FieldRule:
    """The rule for a field ``name`` of class ``owner`` annotated ``annotation`` (resolved),
    under the class options ``options``.

    Raises:
        ClassDefinitionError: with ``tensor_only``, for an annotation that is not a tensor,
            a tensor collection or an optional of these.
    """
    text = annotation_text(annotation)
    members = annotated_members(annotation)
    optional = any(member in (type(None), None, Any, object) for member, _ in members)
    members = [(m, meta) for m, meta in members if m is not type(None) and m is not None]
    parts = [_part(member, name, owner, text) for member, _ in members]
    plain = not (options["autocast"] or options["nocast"])
    if plain:  # the peer's: arrays become tensors
        parts = [{"tensor": True} if p.get("value_class") is np.ndarray else p for p in parts]
    arrays = plain and any(p.get("value_class") is list for p in parts)
    any_value = any(part.get("any_value", False) for part in parts)
    tensor = any(part.get("tensor", False) for part in parts)
    number = any(part.get("number", False) for part in parts)
    collections = tuple(c for part in parts for c in part.get("collections", ()))
    checks = [part["check"] for part in parts if "check" in part]
    python_value = any(part.get("any_value", False) and not part.get("node") for part in parts)
    if options["tensor_only"] and (python_value or checks or not members):
        msg = (
            f"{owner}: tensor_only requires every field to be a tensor, a tensor collection or "
            f"an optional of these; {name!r} is annotated {text} (drop tensor_only to keep "
            "Python values)"
        )
        raise ClassDefinitionError(msg)
    spec = _one_spec(members, parts, f"{owner}.{name}: ")
    # Array-likes become tensors only when nothing else could claim them.
    cast_arrays = tensor and not checks and not collections and not any_value
    if options["nocast"] and tensor and spec is None:  # numbers and arrays stay as given
        checks.append(_is_castable)  # (a spec declares tensors: they meet it, converted)
    elif options["nocast"] and number:  # numpy arrays too (without nocast: tensors)
        checks.append(_is_array)
    cast = _caster([m for m, _ in members], parts) if options["autocast"] else None
    # (a list is not kept as it is under set_list_to_stack(True): see store())
    value_class = parts[0].get("value_class") if len(parts) == 1 and cast is None else None
    values = _value_constraints(members, parts, f"{owner}.{name}: ")
    return FieldRule(
        name=name,
        owner=owner,
        text=text,
        optional=optional,
        any_value=any_value,
        tensor=tensor,
        number=number,
        cast_arrays=cast_arrays,
        arrays=arrays,
        collections=collections,
        convert_to=collections[0] if len(collections) == 1 and not any_value else None,
        check_value=_any_of(checks) if checks else None,
        cast=cast,
        spec=spec,
        value_class=None if value_class is None or issubclass(value_class, list) else value_class,
        values=values,
    )


def _value_constraints(
    members: list[tuple[object, tuple[object, ...]]], parts: list[dict[str, Any]], where: str
) -> ValueConstraints | None:
    """The constraints of a field's Python values: the annotated-types objects around its
    Python-value members (``Annotated[int, Ge(0)]``), and the values of its ``Literal``s
    when every such member is one (``Literal["a", "b"]``)."""
    valued = [(meta, part) for (_, meta), part in zip(members, parts) if "check" in part]
    if not valued:
        return None
    metadata = [item for meta, _ in valued for item in meta]
    literals = [part.get("literal") for _, part in valued]
    allowed = None
    if all(found is not None for found in literals):
        allowed = tuple(a for found in literals for a in typing.cast("tuple[object, ...]", found))
    return ValueConstraints.build(metadata, allowed, where)


def _one_spec(
    members: list[tuple[object, tuple[object, ...]]], parts: list[dict[str, Any]], where: str
) -> TensorSpec | None:
    """The spec of a field's tensors: the one every tensor member of its union declares
    (``Annotated[Tensor, Spec(...)]``, or a jaxtyping annotation); members that disagree,
    or one without a spec, leave the tensors unchecked."""
    specs = [
        spec_of(m, meta, where) for (m, meta), part in zip(members, parts) if part.get("tensor")
    ]
    if not specs or specs[0] is None or any(spec != specs[0] for spec in specs):
        return None
    return specs[0]


def _part(option: object, name: str, owner: str, text: str) -> dict[str, Any]:
    """What one member of the annotation's union contributes."""
    if option is Any or option is object or isinstance(option, typing.TypeVar):
        return {"any_value": True}
    origin = typing.get_origin(option)
    if origin is Literal:
        allowed = typing.get_args(option)
        check = lambda v: any(type(v) is type(a) and v == a for a in allowed)  # noqa: E731
        return {"check": check, "literal": allowed}
    if origin is not None:  # list[int], dict[str, Any], type[X], Callable[...]
        return _part(origin, name, owner, text)
    array_type = array_type_of(option)
    if array_type is not None:  # jaxtyping's Float[Tensor, "b 3"] and the like
        return _part(array_type, name, owner, text)
    if isinstance(option, type):
        if issubclass(option, _Tensor):
            return {"tensor": True}
        if issubclass(option, _NonTensorNode):  # a node of Python values: a collection too
            return {"any_value": True, "node": True}
        if issubclass(option, TensorCollection):
            return {"collections": (option,)}
        number = option in (int, float, complex, bool)
        return {"check": _type_check(option), "number": number, "value_class": option}
    if option is typing.Callable:
        return {"check": callable}
    supertype = getattr(option, "__supertype__", None)  # typing.NewType
    if supertype is not None:
        return _part(supertype, name, owner, text)
    return {"any_value": True}  # a typing construct without a runtime check: anything


def _is_array(value: object) -> bool:
    return isinstance(value, np.ndarray)


def _is_castable(value: object) -> bool:
    return isinstance(value, (bool, int, float, np.ndarray, np.number, np.bool_))


def _caster(members: list[object], parts: list[dict[str, Any]]) -> Callable[[Any], Any] | None:
    """With ``autocast``: the conversion of a value to the field's one annotated class."""
    if len(parts) != 1:
        return None
    part, member = parts[0], members[0]
    if part.get("any_value"):
        return _to_tensor_if_castable
    if part.get("tensor") or "collections" in part:
        return None  # tensors from array-likes and records from dicts: the usual rules
    target = array_type_of(member) or getattr(member, "__supertype__", None) or member
    if not isinstance(target, type):
        return None
    if target is np.ndarray:
        return lambda v: v if isinstance(v, np.ndarray) else np.asarray(v)
    return lambda v: v if type(v) is target else target(v)


def _to_tensor_if_castable(value: Any) -> Any:
    if isinstance(value, (int, float, np.ndarray)):
        return torch.as_tensor(value)
    return value


def _type_check(kind: type) -> Callable[[object], bool]:
    if kind is float:
        return lambda v: isinstance(v, numbers.Real) and not isinstance(v, _Tensor)
    if kind is int:
        return lambda v: isinstance(v, numbers.Integral) and not isinstance(v, _Tensor)
    if kind is complex:
        return lambda v: isinstance(v, numbers.Complex) and not isinstance(v, _Tensor)
    if kind is bool:
        return lambda v: isinstance(v, (bool, np.bool_))
    try:
        isinstance(None, kind)
    except TypeError:  # a Protocol that is not runtime-checkable, and the like
        return lambda v: True
    return lambda v: isinstance(v, kind)


def _any_of(checks: list[Callable[[object], bool]]) -> Callable[[object], bool]:
    if len(checks) == 1:
        return checks[0]
    return lambda v: any(check(v) for check in checks)


def per_element_list(stored: Any, shape: torch.Size, device: torch.device | None) -> Any:
    """A list written over values held one per element (a stack of values, or the
    members of a lazy stack), with one item per element of a 1-d batch: the items, one
    per element, as the peer splits it (so ``update(x.to_dict())`` gives each element
    its own value back); ``stored`` as it is otherwise (one value over the batch)."""
    if type(stored) is not NonTensorData or len(shape) != 1:
        return stored
    data = stored.data
    if type(data) is not list or len(data) != shape[0]:
        return stored
    return NonTensorStack._from_values(data, device)


def _cast_to(target: Any, value: TensorDictBase) -> Any:
    """``value`` as an instance of the collection class ``target`` (a record class: its
    ``__post_init__`` does not run, as for the peer's field casts)."""
    return target._rebuild(value) if is_record_class(target) else target.from_tensordict(value)
