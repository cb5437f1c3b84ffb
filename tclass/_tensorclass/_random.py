"""Random records built from their class's schema: ``Cls.rand(...)`` and the hypothesis
strategy ``tclass.testing.records(Cls)``.

A random record satisfies everything its class declares: each tensor field gets one of
its allowed dtypes and its spec'd shape, every named dim one size across the record
(from ``dims``, else drawn), values within its constraints (bounds, ``isin``,
``finite``, ``multiple_of``); nested records are built the same way; Python-value
fields get a value of their annotation (``int``, ``float``, ``str``, ``bool``,
``Literal``, ``list[X]``, ``dict[str, X]``, ``tuple``, unions); optional fields are set
(``rand``) or drawn set or ``None`` (the strategy). The record is built by the class's
constructor, which checks it all again.

Every choice goes through a ``Chooser``: ``rand``'s draws from a ``torch.Generator``,
the strategy's from hypothesis (so that it shrinks the structure: sizes, set fields,
Python values), both drawing the tensors' values with a generator.
"""

from __future__ import annotations

import dataclasses
import math
import typing
from collections.abc import Mapping, Sequence
from typing import Any, Literal, Protocol, TypeVar

import torch

from tclass._base.implemented._collection import TensorCollection
from tclass._core._batch import BatchSizeLike, as_batch_size
from tclass._core._constraints import Constraints, _in_dtype
from tclass._core._device import DeviceLike, as_device
from tclass._core._records import is_record_class
from tclass._core._spec import ANON, FIXED, NAMED, SYMBOLIC, VARIADIC, Dim, TensorSpec
from tclass._engine._td import TensorDict
from tclass._tensorclass._allocate import spec_dim_names
from tclass._tensorclass._builder import record_from_entries
from tclass._tensorclass._fields import FieldRule
from tclass._tensorclass._hints import annotated_members
from tclass._tensorclass._json_schema import is_tensor_annotation
from tclass.errors import FieldSpecError, FieldTypeError, SpecProblem

if typing.TYPE_CHECKING:
    from tclass._tensorclass._record import TensorClass

__all__ = ["Chooser", "TorchChooser", "random_record"]

_R = TypeVar("_R", bound="TensorClass")
_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789 _-éλ"
_MAX_SIZE = 4  # a drawn named dim: 1 to 4
_INT_RANGE = 2**31  # integers with no bounds: within +-2**31 (and the dtype's range)


class Chooser(Protocol):
    """Where a random record's choices come from."""

    generator: torch.Generator  # the tensors' values
    specials: bool  # sprinkle NaN, infinities, -0.0, subnormals where constraints allow

    def integer(self, low: int, high: int) -> int:
        """An integer in ``[low, high]``."""

    def optional(self) -> bool:
        """Whether an optional field is left unset (``None``)."""

    def text(self) -> str: ...

    def real(self) -> float:
        """A finite float."""


class TorchChooser:
    """``Cls.rand``'s choices: from a ``torch.Generator``; optional fields always set."""

    specials = False

    def __init__(self, generator: torch.Generator | None) -> None:
        if generator is None:
            generator = torch.Generator().manual_seed(int(torch.randint(0, 2**62, ()).item()))
        self.generator = generator

    def integer(self, low: int, high: int) -> int:
        return int(torch.randint(low, high + 1, (), generator=self.generator).item())

    def optional(self) -> bool:
        return False

    def text(self) -> str:
        return "".join(
            _ALPHABET[self.integer(0, len(_ALPHABET) - 1)] for _ in range(self.integer(0, 8))
        )

    def real(self) -> float:
        return float(torch.randn((), dtype=torch.float64, generator=self.generator).item())


def random_record(
    cls: type[_R],
    batch_size: BatchSizeLike,
    dims: Mapping[str, int | Sequence[int]] | None,
    chooser: Chooser,
    device: DeviceLike = None,
) -> _R:
    """A random record of ``cls`` (see the module docstring).

    Raises:
        FieldSpecError: a name in ``dims`` no spec uses, or a field no value can be
            built for (a dtype without a value its constraints allow).
        FieldTypeError: a required Python-value field of a class tclass cannot build.
    """
    sizes: dict[str, Any] = {
        k: tuple(v) if isinstance(v, Sequence) else int(v) for k, v in (dims or {}).items()
    }
    known = spec_dim_names(cls)
    unknown = sorted(set(sizes) - known)
    if unknown:
        problems = [
            SpecProblem(
                "",
                name,
                sizes[name],
                None,
                None,
                f"dims={{{name!r}: ...}} names no dim of {cls.__name__}'s specs",
            )
            for name in unknown
        ]
        raise FieldSpecError(
            f"{cls.__name__}.rand: " + "; ".join(p.message for p in problems), problems
        )
    target = None if device is None else as_device(device)
    return _Builder(chooser, sizes, target).record(cls, as_batch_size(batch_size), frozenset())


@dataclasses.dataclass
class _Builder:
    chooser: Chooser
    sizes: dict[str, Any]  # the named dims, given or drawn, shared by the whole tree
    device: torch.device | None

    # --- records -------------------------------------------------------------------------

    def record(self, cls: type[_R], batch: torch.Size, within: frozenset[type]) -> _R:
        info: Any = getattr(cls, "__tclass_info__")  # noqa: B009 (a record class's)
        rules, hints = info.rules, info.hints
        self._bind_batch_dims(rules.values(), batch)
        defaults = {f.name: f for f in dataclasses.fields(cls)}
        values: dict[str, Any] = {}
        for name in info.field_names:
            rule = rules[name]
            if rule.optional and self.chooser.optional():
                values[name] = None
                continue
            where = f"{cls.__name__}.{name}"
            hint = hints.get(name, Any)
            field = defaults.get(name)
            values[name] = self.field(where, hint, rule, batch, within | {cls}, field)
        if not info.has_user_init:  # the generated constructor (init fields only)
            given = {name: values[name] for name in info.init_names}
            built: _R = cls(**given, batch_size=batch, device=self.device)
            return built
        return record_from_entries(cls, values, batch, self.device)

    def _bind_batch_dims(self, rules: Any, batch: torch.Size) -> None:
        """Named dims of jaxtyping annotations that fall on batch dims take their sizes
        (``"b 3"`` under a batch of 4: ``b`` is 4; see ``TensorSpec.placement``)."""
        n = len(batch)
        for rule in rules:
            spec = rule.spec
            if spec is None or not spec.whole or spec.variadic == 0:
                continue
            dims, v = spec.dims, spec.variadic
            if v is not None:
                pairs = zip(dims[: min(v, n)], batch)
            elif len(dims) >= n:
                pairs = zip(dims[:n], batch)
            else:  # aligned on the right: on the last batch dims
                pairs = zip(dims, batch[n - len(dims) :])
            for dim, size in pairs:
                if dim.kind == NAMED and dim.name not in self.sizes:
                    self.sizes[str(dim.name)] = size

    def field(
        self,
        where: str,
        hint: object,
        rule: FieldRule,
        batch: torch.Size,
        within: frozenset[type],
        default: dataclasses.Field[Any] | None,
    ) -> Any:
        members = [m for m, _ in annotated_members(hint) if m is not None and m is not type(None)]
        if not members:
            return None
        tensors = [m for m in members if is_tensor_annotation(m)]
        if tensors:
            return self.tensor(where, rule.spec, batch)
        member = (
            members[self.chooser.integer(0, len(members) - 1)] if len(members) > 1 else members[0]
        )
        if isinstance(member, type) and is_record_class(member):
            if member in within and rule.optional:
                return None  # a record holding its own class (a tree) ends here
            if member in within:  # a required field holding its own class: no end
                msg = (
                    f"{where}: a record that must hold a {member.__name__} cannot be built "
                    "at random without end; make the field optional"
                )
                raise FieldTypeError(msg)
            return self.record(member, batch, within)
        if isinstance(member, type) and issubclass(member, TensorCollection):
            x = torch.randn(tuple(batch), generator=self.chooser.generator)
            return TensorDict(x=x, batch_size=batch, device=self.device)
        try:
            return self.value_meeting(member, rule)
        except _NoValue:
            if default is not None and default.default is not dataclasses.MISSING:
                return default.default
            if default is not None and default.default_factory is not dataclasses.MISSING:
                return default.default_factory()
            msg = (
                f"{where}: tclass cannot build a random {member!r}; give the field a "
                "default or make it optional"
            )
            raise FieldTypeError(msg) from None

    # --- Python values -------------------------------------------------------------------

    def value_meeting(self, annotation: object, rule: FieldRule) -> Any:
        """A random value of ``annotation`` that meets the field's constraints on Python
        values (``Annotated[int, Ge(0)]``): drawn again until one does (_NoValue after
        100 draws: the default is taken, or the field must have one)."""
        found = rule.values
        for _ in range(100):
            value = self.value(annotation)
            if found is None or found.broken_by(value) is None:
                return value
        raise _NoValue

    def value(self, annotation: object) -> Any:
        choose = self.chooser
        if annotation is Any or annotation is object or isinstance(annotation, typing.TypeVar):
            return choose.integer(-1000, 1000)
        if annotation is bool:
            return choose.integer(0, 1) == 1
        if annotation is int:
            return choose.integer(-1000, 1000)
        if annotation is float:
            return choose.real()
        if annotation is str:
            return choose.text()
        origin, args = typing.get_origin(annotation), typing.get_args(annotation)
        if origin is Literal:
            return args[choose.integer(0, len(args) - 1)]
        if origin is not None and args:
            members = [m for m, _ in annotated_members(annotation) if m is not type(None)]
            if len(members) > 1 or members[0] is not annotation:
                return self.value(members[choose.integer(0, len(members) - 1)])
        kind = origin or annotation
        if kind in (list, Sequence, set, frozenset, tuple):
            if kind is tuple and args and args[-1] is not Ellipsis:
                return tuple(self.value(arg) for arg in args if arg != ())
            item = args[0] if args else int
            items = [self.value(item) for _ in range(choose.integer(0, 3))]
            if kind is set or kind is frozenset or kind is tuple:
                return kind(items)
            return items
        if kind in (dict, Mapping):
            value_type = args[1] if len(args) == 2 else int
            return {choose.text(): self.value(value_type) for _ in range(choose.integer(0, 3))}
        supertype = getattr(annotation, "__supertype__", None)  # typing.NewType
        if supertype is not None:
            return self.value(supertype)
        raise _NoValue

    # --- tensors -------------------------------------------------------------------------

    def tensor(self, where: str, spec: TensorSpec | None, batch: torch.Size) -> torch.Tensor:
        dtypes = None if spec is None else spec.dtypes
        if dtypes is None:
            dtype = torch.get_default_dtype()
        else:
            ordered = sorted(dtypes, key=str)
            dtype = ordered[self.chooser.integer(0, len(ordered) - 1)]
        shape = (*batch, *self.features(spec, len(batch)))
        constraints = None if spec is None else spec.constraints
        values = random_values(shape, dtype, constraints, self.chooser, where)
        return values if self.device is None else values.to(self.device)

    def features(self, spec: TensorSpec | None, batch_ndim: int) -> list[int]:
        """The feature dims of a tensor for ``spec``, its named dims bound once."""
        if spec is None:
            return []
        dims = spec.feature_dims(batch_ndim)
        if dims is None:
            return []
        shape: list[int] = []
        for dim in dims:
            shape += self.dim(dim)
        return shape

    def dim(self, dim: Dim) -> list[int]:
        choose = self.chooser
        if dim.kind == FIXED:
            return [dim.size]
        if dim.kind == ANON:
            return [choose.integer(1, _MAX_SIZE)]
        if dim.kind == VARIADIC:
            if dim.name is None:
                return [choose.integer(1, 3) for _ in range(choose.integer(0, 2))]
            if dim.name not in self.sizes:
                self.sizes[dim.name] = tuple(
                    choose.integer(1, 3) for _ in range(choose.integer(0, 2))
                )
            return list(self.sizes[dim.name])
        if dim.kind == NAMED:
            if dim.name not in self.sizes:
                self.sizes[str(dim.name)] = choose.integer(1, _MAX_SIZE)
            return [int(self.sizes[str(dim.name)])]
        assert dim.kind == SYMBOLIC and dim.code is not None
        for name in dim.names:
            if name not in self.sizes:
                self.sizes[name] = choose.integer(1, _MAX_SIZE)
        values = {name: self.sizes[name] for name in dim.names}
        size = int(eval(dim.code, {"__builtins__": {}}, values))  # noqa: S307 (checked AST)
        if size < 0:
            msg = (
                f"the dim {dim.name!r} is {size} with {values}; pass dims= with sizes "
                "that make it 0 or more"
            )
            raise FieldSpecError(msg, [SpecProblem("", str(dim.name), size, ">= 0", None, msg)])
        return [size]


class _NoValue(Exception):
    """An annotation ``value`` cannot build a random value of."""


# --- values -------------------------------------------------------------------------------


def random_values(
    shape: Sequence[int],
    dtype: torch.dtype,
    constraints: Constraints | None,
    chooser: Chooser,
    where: str = "",
) -> torch.Tensor:
    """A tensor of ``shape`` and ``dtype`` whose values meet ``constraints`` (drawn
    within the bounds; those that rounding or a multiple puts outside, replaced by an
    allowed value).

    Raises:
        FieldSpecError: ``dtype`` holds no value the constraints allow.
    """
    generator = chooser.generator
    fill = None
    if constraints is not None:
        fill = constraints.example(dtype)
        if fill is None:
            msg = f"{where}: no {str(dtype).replace('torch.', '')} value meets {constraints.text}"
            raise FieldSpecError(
                msg,
                [
                    SpecProblem(
                        where.rpartition(".")[2], "dtype", str(dtype), constraints.text, None, msg
                    )
                ],
            )
    if constraints is not None and constraints.isin is not None:
        allowed = [
            v
            for v in (_in_dtype(float(x), dtype) for x in constraints.isin)
            if v is not None and constraints.allows(v)
        ]
        picks = torch.randint(0, len(allowed), tuple(shape), generator=generator)
        return torch.tensor(allowed, dtype=torch.float64).to(dtype)[picks]
    if dtype == torch.bool:
        values = torch.randint(0, 2, tuple(shape), generator=generator).bool()
    elif dtype.is_complex:
        values = torch.randn(tuple(shape), dtype=dtype, generator=generator)
    elif dtype.is_floating_point:
        values = _floats(shape, dtype, constraints, generator)
    else:
        values = _integers(shape, dtype, constraints, generator)
    if chooser.specials and dtype.is_floating_point and values.numel():
        _sprinkle(values, constraints, chooser)
    if constraints is not None and values.numel():
        bad = ~constraints.holds(values)
        if bool(bad.any()):
            values[bad] = torch.tensor(fill, dtype=torch.float64).to(dtype)
    return values


def _bounds(constraints: Constraints | None) -> tuple[float | None, float | None]:
    if constraints is None:
        return None, None
    low, high = constraints.bounds
    return (None if low is None else low[0]), (None if high is None else high[0])


def _floats(
    shape: Sequence[int],
    dtype: torch.dtype,
    constraints: Constraints | None,
    generator: torch.Generator,
) -> torch.Tensor:
    low, high = _bounds(constraints)
    size = tuple(shape)
    if low is not None and high is not None:
        unit = torch.rand(size, dtype=torch.float64, generator=generator)
        values = low + (high - low) * unit
    else:
        noise = torch.randn(size, dtype=torch.float64, generator=generator)
        if low is not None:
            values = low + noise.abs() * max(1.0, abs(low))
        elif high is not None:
            values = high - noise.abs() * max(1.0, abs(high))
        else:
            values = noise * 10
    step = None if constraints is None else constraints.multiple_of
    if step is not None:
        values = torch.round(values / step) * step
    return values.to(dtype)


def _integers(
    shape: Sequence[int],
    dtype: torch.dtype,
    constraints: Constraints | None,
    generator: torch.Generator,
) -> torch.Tensor:
    info = torch.iinfo(dtype)
    lowest = max(info.min, -_INT_RANGE)
    highest = min(info.max, _INT_RANGE - 1)
    step = None
    if constraints is not None:
        low, high = constraints.bounds  # (bound, strict)
        if low is not None:
            lowest = max(lowest, math.floor(low[0]) + 1 if low[1] else math.ceil(low[0]))
        if high is not None:
            highest = min(highest, math.ceil(high[0]) - 1 if high[1] else math.floor(high[0]))
        step = constraints.multiple_of
    size = tuple(shape)
    if step is not None and float(step).is_integer():
        first, last = math.ceil(lowest / step), math.floor(highest / step)
        if first <= last:
            picks = torch.randint(first, last + 1, size, generator=generator)
            return (picks * int(step)).to(dtype)
    if highest < lowest:
        return torch.zeros(size, dtype=dtype)  # every value is replaced by the fill
    return torch.randint(lowest, highest + 1, size, generator=generator).to(dtype)


def _sprinkle(values: torch.Tensor, constraints: Constraints | None, chooser: Chooser) -> None:
    """Writes special floats (those the constraints allow) at a few drawn places."""
    info = torch.finfo(values.dtype)
    candidates = [math.nan, math.inf, -math.inf, -0.0, info.tiny / 2, info.max, info.min]
    allowed = [c for c in candidates if constraints is None or constraints.allows(c)]
    flat = values.view(-1)
    for _ in range(chooser.integer(0, 2) if allowed else 0):
        flat[chooser.integer(0, flat.numel() - 1)] = allowed[chooser.integer(0, len(allowed) - 1)]
