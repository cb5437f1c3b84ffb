"""Value constraints of tensor fields: bounds, allowed values, finiteness (pure).

A field's annotation may bound the values of its tensors, with ``Spec``'s keywords or
with the ``annotated-types`` objects pydantic and msgspec users write (recognised by
their class, without importing that package)::

    prob: Annotated[Tensor, Spec("3", torch.float32, ge=0, le=1)]
    prob: Annotated[Tensor, Spec("3", torch.float32), Ge(0), Le(1)]  # the same
    label: Annotated[Tensor, Spec("", torch.int64, isin=(0, 1, 2))]

=================  ===============================================================
``ge``, ``gt``     every value ``>=`` / ``>`` the bound
``le``, ``lt``     every value ``<=`` / ``<`` the bound
``isin``           every value one of the listed numbers
``finite``         no NaN and no infinity
``multiple_of``    every value an exact multiple (``x % m == 0``)
=================  ===============================================================

A NaN breaks every bound (``nan >= 0`` is false), as in annotated-types. Other
annotated-types metadata (``MinLen``, ``Predicate``, ...) says nothing tclass checks on a
tensor's values and is left to the tools that read it. Fields of Python values
(``Annotated[int, Ge(0)]``, ``Annotated[str, MinLen(2)]``, ``Literal[...]``) are checked
by ``ValueConstraints``: its numbers by ``Constraints.broken_by``, lengths by ``len``.

The check is one fused pass over the values for bounds and finiteness (``torch.aminmax``,
then two Python comparisons), plus one ``isin`` or remainder pass when those are given;
only when it finds a problem does a second pass locate the first offending element.
Values on the ``meta`` device and fake tensors have none to check.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, ClassVar, NamedTuple

import torch
from torch._subclasses.fake_tensor import FakeTensor

from tclass.errors import SpecSyntaxError

_Tensor = torch.Tensor
_is_batched = torch._C._functorch.is_batchedtensor
_unwrapped = torch._C._functorch.get_unwrapped

__all__ = ["BOUNDS", "Constraints", "ValueConstraints", "Violation", "constraints_from"]

BOUNDS = ("ge", "gt", "le", "lt")
_KEYS = (*BOUNDS, "isin", "finite", "multiple_of")
# The annotated-types classes read, by name, and the attributes each carries.
_ANNOTATED_TYPES = {
    "Ge": ("ge",),
    "Gt": ("gt",),
    "Le": ("le",),
    "Lt": ("lt",),
    "Interval": BOUNDS,
    "MultipleOf": ("multiple_of",),
}
# The annotated-types length classes, checked on Python values (``len(value)``).
_LENGTHS = {
    "MinLen": ("min_length",),
    "MaxLen": ("max_length",),
    "Len": ("min_length", "max_length"),
}
# Dtypes torch.aminmax reads on every device (not the wide unsigned ones).
_AMINMAX = frozenset(
    {
        torch.float16, torch.bfloat16, torch.float32, torch.float64, torch.bool,
        torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64,
    }
)  # fmt: skip


class Violation(NamedTuple):
    """The first element of a tensor that breaks a constraint."""

    constraint: str  # as written: "ge=0", "isin=(0, 1)", "finite=True"
    element: tuple[int, ...]  # its index into the tensor checked
    value: object  # the element, as a Python number
    shown: str = ""  # the element as messages show it (its dtype's shortest repr), or ""


def shown(value: object, dtype: torch.dtype) -> str:
    """``value``, an element of a tensor of ``dtype``, as an error message shows it: a
    number of a narrow floating dtype by the fewest digits that give it back in that
    dtype (``1.3`` written into a float32 field reads back as 1.2999999523162842 in
    Python's double: the message shows ``1.3``), other values by their ``repr``."""
    if type(value) is not float or not dtype.is_floating_point or not math.isfinite(value):
        return repr(value)
    for digits in range(1, 17):
        text = repr(float(f"{value:.{digits}g}"))
        if torch.tensor(float(text), dtype=dtype).item() == value:
            return text
    return repr(value)


@dataclass(frozen=True)
class Constraints:
    """The value constraints of one field (see the module docstring); ``None`` (or
    ``False`` for ``finite``): not constrained."""

    ge: int | float | None = None
    gt: int | float | None = None
    le: int | float | None = None
    lt: int | float | None = None
    isin: tuple[int | float | bool, ...] | None = None
    finite: bool = False
    multiple_of: int | float | None = None
    # Set in __post_init__ on each instance (a ClassVar: not a field).
    _range: ClassVar[tuple[bool, tuple[float, bool] | None, tuple[float, bool] | None]]

    # --- reading ---------------------------------------------------------------------

    @classmethod
    def build(cls, given: Mapping[str, Any], where: str) -> Constraints | None:
        """The constraints ``given`` (keyword -> value, ``None`` for absent), checked;
        None when none is given.

        Raises:
            SpecSyntaxError: a bound that is not a finite real number, an ``isin`` that
                is not a non-empty collection of them, or constraints no value meets.
        """
        out: dict[str, Any] = {}
        for key in BOUNDS:
            if given.get(key) is not None:
                out[key] = _real(given[key], key, where)
        if given.get("isin") is not None:
            out["isin"] = _allowed(given["isin"], where)
        finite = given.get("finite")
        if finite is not None and finite is not False and finite is not True:
            raise SpecSyntaxError(f"{where}finite must be True or False, got {finite!r}")
        if finite:
            out["finite"] = True
        if given.get("multiple_of") is not None:
            step = _real(given["multiple_of"], "multiple_of", where)
            if step <= 0:
                raise SpecSyntaxError(f"{where}multiple_of must be positive, got {step!r}")
            out["multiple_of"] = step
        if not out:
            return None
        made = cls(**out)
        made._refuse_empty(where)
        return made

    def _refuse_empty(self, where: str) -> None:
        low = max((b for b in (self.ge, self.gt) if b is not None), default=-math.inf)
        high = min((b for b in (self.le, self.lt) if b is not None), default=math.inf)
        strict = (self.gt is not None and self.gt >= low) or (
            self.lt is not None and self.lt <= high
        )
        if low > high or (low == high and strict):
            msg = f"{where}{self.text} admits no value; loosen a bound"
            raise SpecSyntaxError(msg)
        if self.isin is not None and not any(self._allows_bounds(v) for v in self.isin):
            msg = f"{where}{self.text}: no value of isin meets the bounds; fix either"
            raise SpecSyntaxError(msg)

    # --- describing --------------------------------------------------------------------

    def items(self) -> list[tuple[str, Any]]:
        """The constraints given, as (keyword, value), in a fixed order."""
        found = []
        for f in fields(self):
            value = getattr(self, f.name)
            if value is not None and value is not False:
                found.append((f.name, value))
        return found

    @property
    def text(self) -> str:
        """As keywords: ``ge=0, le=1``."""
        return ", ".join(f"{key}={value!r}" for key, value in self.items())

    def to_json(self) -> dict[str, Any]:
        """As a saved schema records them (``isin`` as a list)."""
        return {key: list(value) if key == "isin" else value for key, value in self.items()}

    @classmethod
    def from_json(cls, raw: object, where: str) -> Constraints | None:
        """Constraints read back from :meth:`to_json`.

        Raises:
            SpecSyntaxError: for a malformed entry.
        """
        if not isinstance(raw, dict) or not set(raw) <= set(_KEYS):
            raise SpecSyntaxError(f"{where}malformed constraints {raw!r:.80}")
        return cls.build(raw, where)

    # --- checking ----------------------------------------------------------------------

    @property
    def bounds(self) -> tuple[tuple[float, bool] | None, tuple[float, bool] | None]:
        """The tightest lower and upper bounds, each ``(bound, strict)`` (None: none)."""
        return self._range[1], self._range[2]

    @property
    def _ranged(self) -> bool:
        return bool(self._range[0])

    def allows(self, value: Any) -> bool:
        """Whether one Python number meets every constraint."""
        return self.broken_by(value) is None

    def broken_by(self, value: Any) -> str | None:
        """The first constraint the Python number ``value`` breaks, as written, or None."""
        if isinstance(value, complex):
            if value.imag != 0 or self.multiple_of is not None or self._ranged:
                return f"{self.text} (a complex value)"
            value = value.real
        if self.finite and not math.isfinite(value):
            return "finite=True"
        for key, bound in (("ge", self.ge), ("gt", self.gt), ("le", self.le), ("lt", self.lt)):
            if bound is not None and not _compares(value, key, bound):
                return f"{key}={bound!r}"
        if self.isin is not None and not any(value == item for item in self.isin):
            return f"isin={self.isin!r}"
        if self.multiple_of is not None and (
            not math.isfinite(value) or math.fmod(value, self.multiple_of) != 0
        ):  # (an infinity is no multiple, as torch.remainder's NaN says; fmod raises)
            return f"multiple_of={self.multiple_of!r}"
        return None

    def _allows_bounds(self, value: Any) -> bool:
        broken = self.broken_by(value)
        return broken is None or broken.startswith(("isin", "multiple_of"))

    def __post_init__(self) -> None:
        # What first_violation reads, worked out once: the tightest lower and upper
        # bounds with their strictness, and whether any range check applies.
        low = max(((b, b == self.gt) for b in (self.ge, self.gt) if b is not None), default=None)
        high = min(((b, b == self.lt) for b in (self.le, self.lt) if b is not None), default=None)
        ranged = self.finite or low is not None or high is not None
        object.__setattr__(self, "_range", (ranged, low, high))

    def first_violation(self, tensor: torch.Tensor) -> Violation | None:
        """The first element of ``tensor`` (in row-major order) that breaks a constraint,
        or None when every element meets them all (or there are no values to read)."""
        t = tensor
        if t.__class__ is not _Tensor and isinstance(t, FakeTensor):
            return None
        while _is_batched(t):  # under torch.vmap: every batch element's values, read
            t = _unwrapped(t)  # from the tensor vmap maps over (a batched one has none)
        if t.is_meta or not t.numel():
            return None
        if t.is_complex():
            return self._complex_violation(t)
        ok = True
        ranged, low, high = self._range
        if ranged:
            if t.dtype in _AMINMAX:
                smallest, largest = torch.aminmax(t)
                ok = _within(smallest.item(), largest.item(), low, high, self.finite)
            else:
                ok = False  # the wide unsigned dtypes: the element-wise pass decides
        if ok and self.isin is not None:
            x = t if t.dtype in _AMINMAX and t.dtype != torch.bool else _comparable(t)
            ok = bool(torch.isin(x, _listed(self.isin, t.device)).all())
        if ok and self.multiple_of is not None:
            ok = not bool(torch.remainder(_comparable(t), self.multiple_of).ne(0).any())
        return None if ok else self._locate(t.detach())

    def _locate(self, t: torch.Tensor) -> Violation | None:
        """The element-wise pass, run only when the fused one found a problem."""
        bad = (~self.holds(t)).nonzero()
        if bad.shape[0] == 0:
            return None
        index = tuple(int(i) for i in bad[0].tolist())
        value = t[index].item()
        return Violation(self.broken_by(value) or self.text, index, value, shown(value, t.dtype))

    def holds(self, t: torch.Tensor) -> torch.Tensor:
        """Where the elements of the real tensor ``t`` meet every constraint (a bool
        tensor of its shape)."""
        x = _comparable(t)
        good = torch.ones(x.shape, dtype=torch.bool, device=x.device)
        if self.finite and x.is_floating_point():
            good &= torch.isfinite(x)
        for key, holds in (
            ("ge", x.__ge__),
            ("gt", x.__gt__),
            ("le", x.__le__),
            ("lt", x.__lt__),
        ):
            bound = getattr(self, key)
            if bound is not None:
                good &= holds(bound)
        if self.isin is not None:
            good &= torch.isin(x, _listed(self.isin, x.device))
        if self.multiple_of is not None:
            good &= torch.remainder(x, self.multiple_of).eq(0)
        return good

    def example(self, dtype: torch.dtype) -> int | float | bool | None:
        """A value of ``dtype`` that meets every constraint: 0 when it does, else one
        near the lower bound (or the smallest allowed value); None when ``dtype`` holds
        none that tclass finds."""
        low = max((b for b in (self.ge, self.gt) if b is not None), default=None)
        high = min((b for b in (self.le, self.lt) if b is not None), default=None)
        candidates: list[float] = [0]
        if self.isin is not None:
            candidates += sorted(float(v) for v in self.isin)
        for bound in (low, high):
            if bound is not None:
                candidates += [bound, math.floor(bound) + 1, math.ceil(bound) - 1]
        if low is not None and high is not None:
            candidates.append((low + high) / 2)
        if self.multiple_of is not None:
            step = self.multiple_of
            start = math.ceil(low / step) if low is not None else 0
            candidates += [k * step for k in range(start, start + 3)]
        for candidate in candidates:
            value = _in_dtype(candidate, dtype)
            if value is not None and self.broken_by(value) is None:
                return value
        return None

    def _complex_violation(self, t: torch.Tensor) -> Violation | None:
        index = (0,) * t.ndim
        if self._ranged or self.multiple_of is not None:
            return Violation(f"{self.text} (complex values have no order)", index, t[index].item())
        assert self.isin is not None
        inside = torch.isin(t.real, _listed(self.isin, t.device)) & (t.imag == 0)
        bad = (~inside).nonzero()
        if bad.shape[0] == 0:
            return None
        index = tuple(int(i) for i in bad[0].tolist())
        return Violation(f"isin={self.isin!r}", index, t[index].item())


def _in_dtype(value: float, dtype: torch.dtype) -> int | float | bool | None:
    """``value`` as ``dtype`` holds it (rounded for a floating dtype), or None when it
    does not fit (an integer dtype's range, a fraction in an integer dtype)."""
    if dtype.is_complex:
        return None
    if dtype == torch.bool:
        return bool(value) if value in (0, 1) else None
    if dtype.is_floating_point:
        held = torch.tensor(value, dtype=torch.float64).to(dtype).item()
        return held if math.isfinite(held) else None
    info = torch.iinfo(dtype)
    if value != math.floor(value) or not info.min <= value <= info.max:
        return None
    return int(value)


def _compares(value: Any, key: str, bound: float) -> bool:
    """Whether ``value`` meets the bound ``key`` (``ge``...) of ``bound``."""
    if key == "ge":
        return bool(value >= bound)
    if key == "gt":
        return bool(value > bound)
    if key == "le":
        return bool(value <= bound)
    return bool(value < bound)


def _within(
    smallest: Any,
    largest: Any,
    low: tuple[float, bool] | None,
    high: tuple[float, bool] | None,
    finite: bool,
) -> bool:
    """Whether the smallest and largest values meet the bounds (``(bound, strict)``); a
    NaN (then both are NaN) fails every comparison."""
    if finite and not (math.isfinite(smallest) and math.isfinite(largest)):
        return False
    if low is not None and not (smallest > low[0] if low[1] else smallest >= low[0]):
        return False
    return high is None or (largest < high[0] if high[1] else largest <= high[0])


def _listed(values: tuple[int | float | bool, ...], device: torch.device) -> torch.Tensor:
    """The allowed values as a tensor ``torch.isin`` reads (bools as 0 and 1)."""
    return torch.tensor([int(v) if isinstance(v, bool) else v for v in values], device=device)


def _comparable(t: torch.Tensor) -> torch.Tensor:
    """``t`` in a dtype whose comparisons with Python numbers do not wrap around
    (``uint8 >= -1`` is false in torch): integers and bools as int64 (uint64 as float64)."""
    if t.is_floating_point():
        return t
    if t.dtype == torch.uint64:
        return t.to(torch.float64)
    return t if t.dtype == torch.int64 else t.to(torch.int64)


def _real(value: object, key: str, where: str) -> int | float:
    if isinstance(value, torch.Tensor) and value.numel() == 1:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise SpecSyntaxError(f"{where}{key} must be a real number, got {value!r}")
    number = int(value) if isinstance(value, numbers.Integral) else float(value)
    if not math.isfinite(number):
        msg = f"{where}{key} must be finite, got {value!r} (finite=True refuses NaN and infinities)"
        raise SpecSyntaxError(msg)
    return number


def _allowed(values: object, where: str) -> tuple[int | float | bool, ...]:
    if isinstance(values, torch.Tensor):
        values = values.reshape(-1).tolist()
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise SpecSyntaxError(f"{where}isin must be a collection of numbers, got {values!r}")
    out: list[int | float | bool] = []
    for value in values:
        if isinstance(value, torch.Tensor) and value.numel() == 1:
            value = value.item()
        if isinstance(value, bool):
            item: int | float | bool = value
        elif isinstance(value, numbers.Real) and math.isfinite(float(value)):
            item = int(value) if isinstance(value, numbers.Integral) else float(value)
        else:
            msg = f"{where}isin must hold finite real numbers or bools, got {value!r}"
            raise SpecSyntaxError(msg)
        if not any(type(item) is type(seen) and item == seen for seen in out):
            out.append(item)
    if not out:
        raise SpecSyntaxError(f"{where}isin must list at least one value")
    return tuple(out)


def constraints_from(
    own: Mapping[str, Any], metadata: Sequence[object], where: str
) -> tuple[Constraints | None, bool]:
    """The constraints of a field: ``own`` (a ``Spec``'s keywords) merged with the
    annotated-types objects in ``metadata`` (a later one wins for the same keyword);
    and whether any came from annotated-types.

    Raises:
        SpecSyntaxError: see :meth:`Constraints.build`.
    """
    given = {key: value for key, value in own.items() if value is not None}
    foreign = False
    for item in metadata:
        keys = annotated_types_keys(item)
        for key in keys:
            value = getattr(item, key, None)
            if value is not None:
                given[key] = value
                foreign = True
    return Constraints.build(given, where), foreign


def annotated_types_keys(item: object) -> tuple[str, ...]:
    """The constraint keywords an annotated-types object carries (``Ge(0)``: ``ge``),
    recognised by its class without importing the package; () for anything else."""
    kind = type(item)
    if not kind.__module__.startswith("annotated_types"):
        return ()
    return _ANNOTATED_TYPES.get(kind.__name__, ())


@dataclass(frozen=True)
class ValueConstraints:
    """The constraints of a field of Python values: annotated-types' bounds and
    ``MultipleOf`` on numbers (checked by :meth:`Constraints.broken_by`, as a tensor's
    elements are), ``MinLen``/``MaxLen``/``Len`` on values that have a length (``str``,
    ``list``...), and a ``Literal``'s values (``allowed``: one of them, of its type).
    A value of another kind than a constraint reads (a ``str`` in a bounded ``int``
    field, which the field keeps as given) is left to the annotation's rules."""

    numbers: Constraints | None = None
    min_length: int | None = None
    max_length: int | None = None
    allowed: tuple[object, ...] | None = None

    @classmethod
    def build(
        cls, metadata: Sequence[object], allowed: tuple[object, ...] | None, where: str
    ) -> ValueConstraints | None:
        """The constraints in ``metadata`` (annotated-types objects) and a ``Literal``'s
        ``allowed`` values; None when there are none.

        Raises:
            SpecSyntaxError: see :meth:`Constraints.build`; a length that is not a
                non-negative int, or a minimum above the maximum.
        """
        numbers, _ = constraints_from({}, metadata, where)
        lengths: dict[str, int] = {}
        for item in metadata:
            kind = type(item)
            if not kind.__module__.startswith("annotated_types"):
                continue
            for key in _LENGTHS.get(kind.__name__, ()):
                value = getattr(item, key, None)
                if value is None:
                    continue
                if type(value) is not int or value < 0:
                    raise SpecSyntaxError(f"{where}{key} must be an int >= 0, got {value!r}")
                lengths[key] = value
        low, high = lengths.get("min_length"), lengths.get("max_length")
        if low is not None and high is not None and low > high:
            raise SpecSyntaxError(f"{where}min_length={low} > max_length={high}: no value fits")
        if numbers is None and not lengths and allowed is None:
            return None
        return cls(numbers, low, high, allowed)

    @property
    def text(self) -> str:
        """As keywords: ``ge=0, max_length=8``, ``in ('a', 'b')``."""
        parts = [self.numbers.text] if self.numbers is not None else []
        parts += [f"{k}={v!r}" for k, v in self._lengths() if v is not None]
        if self.allowed is not None:
            parts.append(f"in {self.allowed!r}")
        return ", ".join(parts)

    def _lengths(self) -> tuple[tuple[str, int | None], ...]:
        return (("min_length", self.min_length), ("max_length", self.max_length))

    def broken_by(self, value: object) -> str | None:
        """The first constraint the Python value ``value`` breaks, as written, or None."""
        if self.allowed is not None and not any(
            type(value) is type(a) and value == a for a in self.allowed
        ):
            return f"in {self.allowed!r}"
        if self.numbers is not None and isinstance(value, numbers.Number):
            broken = self.numbers.broken_by(value)
            if broken is not None:
                return broken
        if (self.min_length is not None or self.max_length is not None) and hasattr(
            value, "__len__"
        ):
            size = len(value)
            if self.min_length is not None and size < self.min_length:
                return f"min_length={self.min_length!r}"
            if self.max_length is not None and size > self.max_length:
                return f"max_length={self.max_length!r}"
        return None

    def to_json(self) -> dict[str, Any]:
        """The JSON Schema keywords saying the same (``minimum``, ``minLength``, ``enum``...)."""
        out: dict[str, Any] = {}
        found = self.numbers
        if found is not None:
            names = {"ge": "minimum", "gt": "exclusiveMinimum", "le": "maximum"}
            for key, keyword in {**names, "lt": "exclusiveMaximum"}.items():
                if getattr(found, key) is not None:
                    out[keyword] = getattr(found, key)
            if found.multiple_of is not None:
                out["multipleOf"] = found.multiple_of
        if self.min_length is not None:
            out["minLength"] = self.min_length
        if self.max_length is not None:
            out["maxLength"] = self.max_length
        if self.allowed is not None:
            out["enum"] = list(self.allowed)
        return out
