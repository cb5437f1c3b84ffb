"""Named dims bound across a function's arguments and return value (pure): the work of
``@tclass.checked`` once the facade has read the annotations.

Each annotated parameter (and the return value) is a *site* holding a record of a class
with specs, or a tensor with a spec of its own (``Float[Tensor, "b d"]``,
``Annotated[Tensor, Spec("b d")]``); a record annotation may carry a ``Spec`` too,
which describes its batch dims (``Annotated[Frame, Spec("b")]``). A named dim takes one
size across every site of a call, as jaxtyping's ``jaxtyped`` binds the dims of tensors.

Two paths give the same answer, as for the records themselves (``_record_spec``):

* the **fast path**, a function generated once per decorated function. A record is
  already valid (every write into it is checked), so it reads only the dims that
  another site names too, from the first field holding them (fields of a jaxtyping
  spec, whose dims may fall on batch dims the record does not compare, each); a
  tensor gets its full check (dtype, rank, fixed dims, values where the spec bounds
  them). A few attribute reads and integer comparisons per site.
* the **general matcher** (``_record_spec.match_sites`` with the batch dims bound),
  which runs when the fast path says no, or always where a spec uses a form the fast
  path does not read (variadic, broadcastable or computed dims shared between sites):
  it lists every problem, each naming the argument (or the return value), the field,
  the dim and both sizes.

``set_checks(False)`` (or ``TCLASS_CHECKS=0`` in the environment when tclass is
imported) turns the contracts off: each wrapper then reads one flag and calls the
function.
"""

from __future__ import annotations

import linecache
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import torch

from tclass._core._record_spec import (
    Bound,
    Observed,
    Site,
    bind_lines,
    match_sites,
    value_problem,
)
from tclass._core._spec import ANON, FIXED, NAMED, VARIADIC, TensorSpec
from tclass.errors import FieldSpecError, FieldTypeError, SpecProblem

__all__ = [
    "Access",
    "Contract",
    "Param",
    "RecordKind",
    "TensorKind",
    "checks_enabled",
    "set_checks",
]

_Tensor = torch.Tensor
_OFF = ("0", "false", "no", "off", "n", "f")
# The switch every wrapper reads: a one-item list, read as ``_ON[0]``.
_ON = [os.environ.get("TCLASS_CHECKS", "1").strip().lower() not in _OFF]
ENABLED_AT_IMPORT = _ON[0]


class set_checks:  # noqa: N801  (a function to its callers, as torch.set_grad_enabled)
    """Turns the contracts of ``@tclass.checked`` functions on or off, now; as a
    context manager, for the ``with`` block (the previous state comes back after).

    Off, a checked function reads one flag and calls the function. With
    ``TCLASS_CHECKS=0`` in the environment when tclass is imported, ``@checked``
    returns the function itself (nothing to read at all), and ``set_checks(True)``
    only reaches the functions decorated after it.
    """

    __slots__ = ("_previous",)

    def __init__(self, mode: bool) -> None:
        self._previous = _ON[0]
        _ON[0] = bool(mode)

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc_info: object) -> None:
        _ON[0] = self._previous


def checks_enabled() -> bool:
    """Whether the contracts of ``@tclass.checked`` functions are checked."""
    return _ON[0]


class RecordKind(NamedTuple):
    """A record class a site accepts: its spec'd fields and its annotation's batch spec."""

    cls: type
    fields: tuple[tuple[str, TensorSpec, bool], ...]  # (name, spec, holds only tensors)
    batch: TensorSpec | None  # Annotated[Frame, Spec("b t")]: the batch dims


class TensorKind(NamedTuple):
    """A tensor with a spec of its own (its whole shape)."""

    spec: TensorSpec


class Param(NamedTuple):
    """One site: a parameter (or the return value, ``name`` None) and what it accepts."""

    name: str | None
    kinds: tuple[RecordKind | TensorKind, ...]
    optional: bool  # None passes
    open: bool  # values of other types pass unchecked (a union with other types)

    @property
    def label(self) -> str:
        """As messages name it."""
        return "return value" if self.name is None else f"argument {self.name!r}"

    @property
    def argument(self) -> str:
        """As ``SpecProblem.argument`` names it: the parameter, or ``"return"``."""
        return "return" if self.name is None else self.name


class Access(NamedTuple):
    """How the contract reads a record (the facade's accessors)."""

    dense: Callable[[Any], Mapping[str, Any] | None]  # its entries; None over a lazy stack
    parts: Callable[[Any], list[tuple[Mapping[str, Any], int]]]  # (entries, batch dims) each
    batch_size: Callable[[Any], torch.Size]


_NO_RESULT: Any = object()


class Contract:
    """The checks of one decorated function: ``check_args(*values)`` gives the sizes
    the arguments bind (for the return value's check), ``check_result(result, bound,
    values)`` checks the return value; each raises ``FieldSpecError`` (or
    ``FieldTypeError`` for a value of a type its annotation does not accept)."""

    def __init__(
        self, qualname: str, params: Sequence[Param], result: Param | None, access: Access
    ) -> None:
        self.qualname = qualname
        self.params = tuple(params)
        self.result = result
        self.access = access
        sites = [*self.params, *([result] if result is not None else [])]
        self.names = _shared_names(sites)
        fast = all(_fast_site(site, self.names) for site in sites)
        if fast:
            self.check_args, self.check_result = _compile(self)
        else:
            self.check_args, self.check_result = self._general_args, self._general_result

    # --- the general matcher -------------------------------------------------------------

    def _general_args(self, *values: Any) -> tuple[Any, ...]:
        return self.general(values, _NO_RESULT)

    def _general_result(self, result: Any, bound: object, values: tuple[Any, ...]) -> None:
        del bound
        self.general(values, result)

    def general(self, values: Sequence[Any], result: Any) -> tuple[Any, ...]:
        """Every site matched by the general matcher; the sizes of the fast path's names
        (-1: not bound).

        Raises:
            FieldTypeError: a value of a type its annotation does not accept.
            FieldSpecError: listing every problem.
        """
        pairs = list(zip(self.params, values))
        if result is not _NO_RESULT and self.result is not None:
            pairs.append((self.result, result))
        sites: list[Site] = []
        tensors: list[tuple[Param, TensorSpec, Any]] = []
        for param, value in pairs:
            kind = self._kind_of(param, value)
            if kind is None:
                continue
            if isinstance(kind, TensorKind):
                seen = (value.dtype, tuple(value.shape))
                label = param.label
                sites.append(Site(label, kind.spec, seen, label, 0, param.argument, False))
                tensors.append((param, kind.spec, value))
            else:
                sites += self._record_sites(param, kind, value)
        bound: Bound = {}
        agree = "the arguments and return value"
        problems = match_sites(sites, bound, bind_batch=True, agree=agree)
        for param, spec, value in tensors:
            problems += _value_problems(param, spec, value)
        if problems:
            raise FieldSpecError(self._message(problems), problems)
        return tuple(_int_or_unbound(bound.get(name)) for name in self.names)

    def _record_sites(self, param: Param, kind: RecordKind, record: Any) -> list[Site]:
        cls = kind.cls.__name__
        sites = []
        if kind.batch is not None:
            seen: Observed = (None, tuple(self.access.batch_size(record)))
            where = f"{param.label} ({cls} batch size)"
            sites.append(Site(param.label, kind.batch, seen, where, 0, param.argument, False))
        for entries, batch_ndim in self.access.parts(record):
            for name, spec, _ in kind.fields:
                value = entries.get(name)
                if isinstance(value, _Tensor):
                    where = f"{param.label} ({cls}.{name})"
                    seen = (value.dtype, tuple(value.shape))
                    sites.append(Site(name, spec, seen, where, batch_ndim, param.argument))
        return sites

    def _message(self, problems: Sequence[SpecProblem]) -> str:
        listed = "; ".join(problem.message for problem in problems)
        count = "" if len(problems) == 1 else f"{len(problems)} problems: "
        return f"{self.qualname}(): {count}{listed}"

    def _kind_of(self, param: Param, value: Any) -> RecordKind | TensorKind | None:
        """The kind of ``param`` that ``value`` is checked as; None when it passes
        unchecked (None where allowed, another type where the annotation allows others).

        Raises:
            FieldTypeError: a value the annotation does not accept.
        """
        if value is None and param.optional:
            return None
        for kind in param.kinds:
            if isinstance(kind, RecordKind) and isinstance(value, kind.cls):
                return kind
        for kind in param.kinds:
            if isinstance(kind, TensorKind) and isinstance(value, _Tensor):
                return kind
        if param.open:
            return None
        raise self._type_error(param, value)

    def _type_error(self, param: Param, value: Any) -> FieldTypeError:
        wanted = [
            kind.cls.__name__ if isinstance(kind, RecordKind) else kind.spec.text
            for kind in param.kinds
        ]
        if param.optional:
            wanted.append("None")
        msg = (
            f"{self.qualname}(): {param.label} is of type {type(value).__name__}, but its "
            f"annotation wants {' or '.join(wanted)}; pass one, or change the annotation"
        )
        return FieldTypeError(msg)


def _value_problems(param: Param, spec: TensorSpec, value: _Tensor) -> list[SpecProblem]:
    if spec.constraints is None:
        return []
    found = spec.constraints.first_violation(value)
    if found is None:
        return []
    problem = value_problem(param.label, param.label, spec, found)
    return [problem._replace(argument=param.argument)]


def _int_or_unbound(binding: tuple[Any, str, str] | None) -> int:
    if binding is None or type(binding[0]) is not int:
        return -1
    return binding[0]


# --- which dims the fast path reads --------------------------------------------------------


def _site_names(site: Param) -> set[str]:
    names: set[str] = set()
    for kind in site.kinds:
        specs = [kind.spec] if isinstance(kind, TensorKind) else [s for _, s, _ in kind.fields]
        if isinstance(kind, RecordKind) and kind.batch is not None:
            specs.append(kind.batch)
        for spec in specs:
            for dim in spec.dims:
                if dim.kind in (NAMED, VARIADIC) and dim.name is not None:
                    names.add(dim.name)
                names.update(dim.names)  # an expression's
    return names


def _shared_names(sites: Sequence[Param]) -> tuple[str, ...]:
    """The dims that more than one site names (the ones a call binds across sites)."""
    counts: dict[str, int] = {}
    for site in sites:
        for name in _site_names(site):
            counts[name] = counts.get(name, 0) + 1
    return tuple(sorted(name for name, count in counts.items() if count > 1))


def _positions(spec: TensorSpec) -> list[tuple[int, Any]] | None:
    """Each dim the fast path reads of a tensor fitting ``spec``, with its position
    counted from the end; None when the spec is not one it reads (a variadic that is
    not a jaxtyping spec's first dim)."""
    dims, v = spec.dims, spec.variadic
    if v is not None and v != 0:
        return None
    after = dims[1:] if v == 0 else dims
    k = len(after)
    return [(i - k, dim) for i, dim in enumerate(after)]


def _fast_site(site: Param, names: tuple[str, ...]) -> bool:
    """Whether the fast path reads every dim of ``site`` it must compare."""
    if len(site.kinds) != 1:
        return False
    (kind,) = site.kinds
    if isinstance(kind, TensorKind):
        return _fast_spec(kind.spec, names, every=True)
    if kind.batch is not None and (kind.batch.variadic is not None or not _plain(kind.batch)):
        return False
    return all(_fast_spec(spec, names, every=False) for _, spec, _ in kind.fields)


def _plain(spec: TensorSpec) -> bool:
    return all(dim.kind in (FIXED, NAMED) and not dim.broadcast for dim in spec.dims)


def _fast_spec(spec: TensorSpec, names: tuple[str, ...], every: bool) -> bool:
    """Whether the fast path reads ``spec``: its shared dims (``every``: all its dims,
    a tensor's) are plain named or fixed ones at a position it can count."""
    if every and spec.any_shape:
        return True
    positions = _positions(spec)
    relevant = [dim for dim in spec.dims if every or _names_of(dim) & set(names)]
    if not relevant:
        return True
    if positions is None:
        return False
    read = {id(dim) for _, dim in positions}
    for dim in relevant:
        if dim.kind == VARIADIC and not every:
            return False  # a shared variadic: the general matcher binds its tuple
        if dim.kind == VARIADIC:
            if dim.name is not None and dim.name in names:
                return False
            continue
        if id(dim) not in read or dim.broadcast or dim.kind not in (FIXED, NAMED, ANON):
            return False
    return True


def _names_of(dim: Any) -> set[str]:
    found = set(dim.names)
    if dim.name is not None and dim.kind in (NAMED, VARIADIC):
        found.add(dim.name)
    return found


# --- the generated fast path ---------------------------------------------------------------


def _compile(contract: Contract) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """``check_args`` and ``check_result`` of ``contract``, generated (see the module
    docstring); each calls the general matcher when it finds anything wrong."""
    namespace: dict[str, Any] = {
        "_Tensor": _Tensor,
        "_isinstance": isinstance,
        "_dense": contract.access.dense,
        "_batch_size": contract.access.batch_size,
        "_general": contract.general,
        "_NO": _NO_RESULT,
    }
    local = {name: f"d{index}" for index, name in enumerate(contract.names)}
    every = ", ".join(local.values())
    packed = f"({every},)" if local else "()"
    params = [f"p{i}" for i in range(len(contract.params))]
    lines = [f"def check_args({', '.join(params)}):", "    bad = False"]
    if local:
        lines.append(f"    {' = '.join(local.values())} = -1")
    for index, param in enumerate(contract.params):
        lines += _site_lines(param, f"p{index}", f"a{index}", namespace, local)
    values = f"({', '.join(params)},)" if params else "()"
    lines += ["    if bad:", f"        return _general({values}, _NO)", f"    return {packed}"]
    lines += ["", "def check_result(r, bound, values):", "    bad = False"]
    if local:
        lines.append(f"    {every}, = bound")
    if contract.result is not None:
        lines += _site_lines(contract.result, "r", "r", namespace, local)
    lines += ["    if bad:", "        _general(values, r)"]
    source = "\n".join(lines) + "\n"
    filename = f"<tclass contract {contract.qualname}>"
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    return namespace["check_args"], namespace["check_result"]


def _site_lines(
    param: Param, value: str, tag: str, namespace: dict[str, Any], local: dict[str, str]
) -> list[str]:
    """The fast path of one site (its value in ``value``): sets ``bad`` on anything it
    cannot vouch for (a problem, a subclass, a lazy stack, a type the annotation does
    not name), binds the dims in ``local``."""
    (kind,) = param.kinds
    lines = [f"    o = {value}"]
    indent = "    "
    if param.optional:
        lines.append("    if o is not None:")
        indent = "        "
    if isinstance(kind, TensorKind):
        namespace[f"K{tag}"] = kind.spec
        test = "o.__class__ is _Tensor or _isinstance(o, _Tensor)"
        body = _tensor_lines(kind.spec, tag, namespace, local)
    else:
        namespace[f"C{tag}"] = kind.cls
        test = f"o.__class__ is C{tag}"
        body = _record_lines(kind, local)
    lines.append(f"{indent}if {test}:")
    lines += [indent + "    " + line for line in body or ["pass"]]
    if not param.open:
        lines += [f"{indent}else:", f"{indent}    bad = True"]
    elif isinstance(kind, RecordKind):  # a subclass: the general matcher reads it
        lines += [f"{indent}elif _isinstance(o, C{tag}):", f"{indent}    bad = True"]
    return lines


def _tensor_lines(
    spec: TensorSpec, tag: str, namespace: dict[str, Any], local: dict[str, str]
) -> list[str]:
    """A tensor ``o`` against its spec: dtype, rank, fixed dims, named dims, values."""
    conditions = []
    if spec.dtypes is not None:
        namespace[f"D{tag}"] = spec.dtypes
        conditions.append(f"o.dtype not in D{tag}")
    lines = []
    if not spec.any_shape:
        positions = _positions(spec)
        assert positions is not None
        k = len(positions)
        conditions.append(f"len(s) {'<' if spec.variadic is not None else '!='} {k}")
        lines.append("s = o.shape")
        for position, dim in positions:
            if dim.kind == FIXED:
                conditions.append(f"s[{position}] != {dim.size}")
        binds: list[str] = []
        own: dict[str, str] = {}
        named = [dim.name for _, dim in positions if dim.kind == NAMED]
        for position, dim in positions:
            if dim.kind != NAMED or dim.name is None:
                continue
            if dim.name in local:
                binds += bind_lines(local[dim.name], position, "    ")
            elif named.count(dim.name) > 1:  # "n n": the same size twice in one tensor
                var = own.setdefault(dim.name, f"t{tag}_{len(own)}")
                binds += bind_lines(var, position, "    ")
        lines += [f"{var} = -1" for var in own.values()]
        lines.append(f"if {' or '.join(conditions)}:" if conditions else "if False:")
        lines += ["    bad = True", "else:", *(binds or ["    pass"])]
    elif conditions:
        lines += [f"if {conditions[0]}: bad = True"]
    if spec.constraints is not None:
        lines.append(f"if K{tag}.constraints.first_violation(o) is not None: bad = True")
    return lines


def _record_lines(kind: RecordKind, local: dict[str, str]) -> list[str]:
    """A record ``o`` of the exact class: the shared dims, read from its fields (and its
    batch size, where the annotation has a spec of it)."""
    lines = []
    batch = kind.batch
    if batch is not None:
        lines.append("s = _batch_size(o)")
        conditions = [f"len(s) != {len(batch.dims)}"]
        binds: list[str] = []
        for i, dim in enumerate(batch.dims):
            if dim.kind == FIXED:
                conditions.append(f"s[{i}] != {dim.size}")
            elif dim.name in local:
                binds += bind_lines(local[dim.name], i, "    ")
        lines += [
            f"if {' or '.join(conditions)}:",
            "    bad = True",
            "else:",
            *(binds or ["    pass"]),
        ]
    reads = _field_reads(kind, local)
    if reads:
        lines += ["e = _dense(o)", "if e is None:", "    bad = True", "else:"]
        lines += ["    " + line for line in reads]
    return lines


def _field_reads(kind: RecordKind, local: dict[str, str]) -> list[str]:
    """For each shared dim: the first field of a ``Spec`` naming it that the record
    holds (the record vouches for the others), and every field of a jaxtyping spec.
    Dims read from the same field, with no other to fall back on, read its shape once."""
    single: dict[tuple[str, bool], list[tuple[int, str, bool]]] = {}  # (position, var, guard)
    chains: list[tuple[str, list[tuple[str, int, bool]]]] = []
    for name, var in local.items():
        chain: list[tuple[str, int, bool]] = []  # Spec fields: the first present is read
        for field, spec, only in kind.fields:
            for position, dim in _positions(spec) or []:
                if dim.kind == NAMED and dim.name == name:
                    if spec.whole and spec.variadic is None:  # absent in a row: -position
                        single.setdefault((field, only), []).append((position, var, True))
                    elif spec.whole:
                        single.setdefault((field, only), []).append((position, var, False))
                    else:
                        chain.append((field, position, only))
                    break
        if len(chain) == 1:
            field, position, only = chain[0]
            single.setdefault((field, only), []).append((position, var, False))
        elif chain:
            chains.append((var, chain))
    lines: list[str] = []
    for (field, only), reads in single.items():
        lines += _read_field(field, only, reads, "")
    for var, chain in chains:
        indent = ""
        for number, (field, position, only) in enumerate(chain):
            lines += _read_field(field, only, [(position, var, False)], indent)
            if number < len(chain) - 1:
                lines.append(f"{indent}else:")
                indent += "    "
    return lines


def _read_field(
    field: str, only: bool, reads: list[tuple[int, str, bool]], indent: str
) -> list[str]:
    """Lines binding each ``(position, var, guard)`` of the field's shape; a guarded one
    only where the tensor has that dim (a row lacks the batch dims its spec names)."""
    present = "v is not None" if only else "_isinstance(v, _Tensor)"
    lines = [f"{indent}v = e.get({field!r})", f"{indent}if {present}:", f"{indent}    s = v.shape"]
    for position, var, guard in reads:
        if guard:
            lines.append(f"{indent}    if len(s) >= {-position}:")
        lines += bind_lines(var, position, indent + ("        " if guard else "    "))
    return lines
