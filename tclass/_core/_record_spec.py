"""Checking the tensors of one record against its fields' specs (pure).

A record's spec'd fields are checked together: each tensor's dtype and feature dims
against its own spec, and every named dim (``h``, ``*rest``) to one size across the
fields that name it. Batch dims are left to ``batch_size``.

Two paths give the same answer. ``RecordSpecs.check`` runs a function generated once
per class from the specs (a few attribute reads and integer comparisons per field, no
dicts or loops), the path every construction takes; only when it says no, or when a
spec uses a form it does not cover (expressions, broadcastable or mid-spec variadic
dims), does the general matcher run, which also writes the message: every problem, each
naming the field, the dim and both values.
"""

from __future__ import annotations

import linecache
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import torch

from tclass._core._constraints import Constraints, Violation
from tclass._core._jagged import leaf_shape
from tclass._core._spec import ANON, FIXED, NAMED, SYMBOLIC, VARIADIC, Dim, TensorSpec
from tclass._core._tracing import tracing
from tclass.errors import FieldSpecError, SpecProblem

__all__ = [
    "Bound",
    "Inline",
    "Observed",
    "RecordSpecs",
    "Site",
    "bind_lines",
    "format_shape_list",
    "match_sites",
    "value_problem",
]

# A tensor as the matcher sees it: its dtype and shape (from a tensor, or a meta.json).
Observed = tuple[torch.dtype | None, Sequence[int]]
_Fast = Callable[[Mapping[str, Any], int], bool]


def format_shape_list(shape: Sequence[int]) -> str:
    return "[" + ", ".join(str(size) for size in shape) + "]"


class RecordSpecs:
    """The specs of one record class's fields, checked together.

    ``fields``: (name, spec, tensors_only) for each spec'd field, in field order;
    ``tensors_only`` says that the field stores nothing but tensors (or nothing).
    """

    __slots__ = ("owner", "specs", "names", "tensors_only", "inline", "constrained", "_fast")

    def __init__(self, owner: str, fields: Sequence[tuple[str, TensorSpec, bool]]) -> None:
        self.owner = owner
        self.specs: dict[str, TensorSpec] = {name: spec for name, spec, _ in fields}
        self.names = tuple(self.specs)
        self.tensors_only = frozenset(name for name, _, only in fields if only)
        self._fast, self.inline = _compile(owner, fields)
        # The fields whose values are bounded: checked with one pass each, the others
        # cost nothing.
        self.constrained: dict[str, Constraints] = {
            name: spec.constraints for name, spec, _ in fields if spec.constraints is not None
        }

    def check(self, entries: Mapping[str, Any], batch_ndim: int, values: bool = True) -> None:
        """Checks the spec'd fields among ``entries`` (absent or non-tensor ones pass):
        their shapes and dtypes, then (with ``values``) their values.

        Raises:
            FieldSpecError: listing every problem.
        """
        if not self._fast(entries, batch_ndim):
            self._raise(_observed(entries, self.names), batch_ndim, None)
        if values and self.constrained:
            self.check_values(entries)

    def check_values(self, entries: Mapping[str, Any], names: Iterable[str] | None = None) -> None:
        """Checks the values of the constrained tensors among ``entries`` (of the fields
        ``names`` only, when given).

        Raises:
            FieldSpecError: naming, for each field, the first value that breaks a
                constraint, its index and the constraint.
        """
        constrained = self.constrained
        if tracing():  # the values are unknown until the compiled code runs: checked there
            self._assert_values(entries, names)
            return
        for name in constrained if names is None else names:
            value = entries.get(name)
            if isinstance(value, torch.Tensor) and constrained[name].first_violation(value):
                # Only now every field is looked at closer, to list each problem.
                problems = self.value_problems(entries, "holds", names)
                raise FieldSpecError(_joined(self.owner, problems), problems)

    def _assert_values(self, entries: Mapping[str, Any], names: Iterable[str] | None) -> None:
        """Traced by ``torch.compile``: one assertion per constrained field in the graph
        (a ``RuntimeError`` when the compiled code runs on a value that breaks it; reading
        the values while tracing would break the graph)."""
        for name in self.constrained if names is None else names:
            value = entries.get(name)
            if isinstance(value, torch.Tensor) and not value.is_complex():
                constraints = self.constrained[name]
                msg = (
                    f"{self.owner}.{name} holds a value that breaks {constraints.text} "
                    "(checked in compiled code; run it eagerly for the index and value)"
                )
                torch._assert_async(constraints.holds(value).all(), msg)

    def value_problems(
        self, entries: Mapping[str, Any], subject: str, names: Iterable[str] | None = None
    ) -> list[SpecProblem]:
        """The first value breaking a constraint of each constrained tensor among
        ``entries``; ``subject`` starts each message after the field (``holds``)."""
        constrained = self.constrained
        problems = []
        for name in constrained if names is None else names:
            constraints = constrained.get(name)
            value = entries.get(name)
            if constraints is None or not isinstance(value, torch.Tensor):
                continue
            found = constraints.first_violation(value)
            if found is not None:
                spec = self.specs[name]
                problems.append(value_problem(f"{self.owner}.{name}", name, spec, found, subject))
        return problems

    def check_assign(
        self, entries: Mapping[str, Any], name: str, value: Any, batch_ndim: int
    ) -> None:
        """Checks ``value`` for the field ``name`` of a record holding ``entries``: its
        spec, and its named dims against those the other fields bind."""
        if name not in self.specs:
            return
        merged = {**entries, name: value}
        if not self._fast(merged, batch_ndim):
            self._raise(_observed(merged, self.names), batch_ndim, name)
        if name in self.constrained:
            try:
                self.check_values({name: value}, (name,))
            except FieldSpecError as error:
                if entries.get(name) is not value:
                    raise
                # ``record.p += x``: torch wrote into the field's own tensor before the
                # record was given it back; nothing can undo that, so say so.
                message = f"{error}. {_CHANGED_IN_PLACE.format(field=f'{self.owner}.{name}')}"
                raise FieldSpecError(message, error.problems) from None

    def problems(
        self, observed: Mapping[str, Observed], batch_ndim: int, last: str | None = None
    ) -> list[SpecProblem]:
        """Every problem of the tensors described by ``observed`` (name -> dtype, shape;
        a None dtype is not checked); ``last``: the field checked last, so that a dim it
        binds differently is reported on it (the field being assigned)."""
        order = [name for name in self.names if name in observed and name != last]
        if last is not None and last in observed:
            order.append(last)
        return _match_all(self.owner, [(n, self.specs[n], observed[n]) for n in order], batch_ndim)

    def bind(self, observed: Mapping[str, Observed], batch_ndim: int) -> dict[str, Any]:
        """The named dims the tensors in ``observed`` bind (the first field naming a
        dim gives its size)."""
        items = [(n, self.specs[n], observed[n]) for n in self.names if n in observed]
        bound: Bound = {}
        _match_all(self.owner, items, batch_ndim, bound)
        return {name: value for name, (value, _, _) in bound.items()}

    def _raise(self, observed: dict[str, Observed], batch_ndim: int, last: str | None) -> None:
        problems = self.problems(observed, batch_ndim, last)
        if not problems:
            return
        raise FieldSpecError(_joined(self.owner, problems), problems)


_CHANGED_IN_PLACE = (
    "The field's own tensor was changed in place before it was assigned back (as "
    "`record.p += x` does: torch writes into the tensor first), so {field} holds these "
    "values now; write `record.p = record.p + x` or the record's in-place method "
    "(`record.add_(x)`), which check the result before writing it"
)


def _joined(owner: str, problems: Sequence[SpecProblem]) -> str:
    if len(problems) == 1:
        return problems[0].message
    listed = "; ".join(problem.message for problem in problems)
    return f"{owner}: {len(problems)} problems with the field specs: {listed}"


def value_problem(
    where: str, field: str, spec: TensorSpec, found: Violation, subject: str = "holds"
) -> SpecProblem:
    """The problem of a value that breaks a constraint of ``field`` (``where``: as
    messages name it, ``Owner.field``; ``subject``: what follows it, ``holds``)."""
    index = (
        "(" + ", ".join(map(str, found.element)) + ("," if len(found.element) == 1 else "") + ")"
    )
    at = f" at index {index}" if found.element else ""  # a 0-dim tensor's one value
    value = found.shown or repr(found.value)
    message = (
        f"{where} {subject} {value}{at}, which breaks {found.constraint} (its "
        f"annotation {spec.text})"
    )
    key = found.constraint.partition("=")[0]
    return SpecProblem(field, key, found.value, found.constraint, None, message, found.element)


def _observed(entries: Mapping[str, Any], names: Iterable[str]) -> dict[str, Observed]:
    found: dict[str, Observed] = {}
    for name in names:
        value = entries.get(name)
        if isinstance(value, torch.Tensor):
            found[name] = (value.dtype, tuple(leaf_shape(value)))
    return found


# --- the general matcher ---------------------------------------------------------------


class Site(NamedTuple):
    """One tensor the general matcher compares with its spec."""

    field: str  # the field (or argument) it is in, as problems name it
    spec: TensorSpec
    observed: Observed
    where: str  # as messages name it: "Frame.obs", "argument 'a' (Frame.obs)"
    batch_ndim: int  # its leading dims that are batch dims
    argument: str | None = None  # a function's argument it is in ("argument 'a'")
    in_record: bool = True  # a record's field (a row lacks the batch dims of its spec)


# A named dim's binding: its size (a tuple for a variadic), and the field and the site
# (``Site.where``) that bound it first.
Bound = dict[str, tuple[Any, str, str]]


def _match_all(
    owner: str,
    items: Sequence[tuple[str, TensorSpec, Observed]],
    batch_ndim: int,
    bound: Bound | None = None,
) -> list[SpecProblem]:
    """Every problem of ``items`` (field, spec, dtype and shape) of one record."""
    sites = [Site(f, spec, seen, f"{owner}.{f}", batch_ndim) for f, spec, seen in items]
    return match_sites(sites, bound)


def match_sites(
    sites: Sequence[Site],
    bound: Bound | None = None,
    *,
    bind_batch: bool = False,
    agree: str = "fields",
) -> list[SpecProblem]:
    """Every problem of ``sites``, in order: dtypes, ranks, fixed dims, and each named
    dim against the size the first site naming it binds (``bound`` receives each
    binding, and may hold some already). Dims on batch dims are left to the batch size
    unless ``bind_batch`` (a function's contract binds them too). ``agree`` names what
    must agree in messages ("fields", "arguments")."""
    bound = {} if bound is None else bound
    deferred: list[tuple[Site, Dim, int]] = []
    problems: list[SpecProblem] = []
    for site in sites:
        found = _match_site(site, bound, deferred, bind_batch, agree)
        if site.argument is not None:
            found = [problem._replace(argument=site.argument) for problem in found]
        problems += found
    for site, dim, position in deferred:
        problem = _match_expression(site, dim, position, bound)
        if problem is not None:
            problems.append(problem._replace(argument=site.argument))
    return problems


def _match_site(
    site: Site,
    bound: Bound,
    deferred: list[tuple[Site, Dim, int]],
    bind_batch: bool,
    agree: str,
) -> list[SpecProblem]:
    """The problems of one site; its computed dims are appended to ``deferred``."""
    field, spec, (dtype, shape), where, batch_ndim, _, in_record = site
    problems = []
    if dtype is not None and spec.dtypes is not None and dtype not in spec.dtypes:
        wanted = " or ".join(sorted(str(d).replace("torch.", "") for d in spec.dtypes))
        got = str(dtype).replace("torch.", "")
        message = f"{where} has dtype {got}, but its annotation {spec.text} wants {wanted}"
        problems.append(SpecProblem(field, "dtype", got, wanted, None, message))
    places = spec.placement(len(shape), batch_ndim, in_record)
    if places is None:
        features = len(shape) - batch_ndim
        after = f", {features} feature dim(s) after the {batch_ndim} batch dim(s)"
        wants = spec.rank_text()
        if not batch_ndim and agree != "fields":  # a function's tensor: its whole shape
            after = ""
            fixed = sum(dim.kind != VARIADIC for dim in spec.dims)
            wants = f"{fixed}{' or more' if spec.variadic is not None else ''} dim(s)"
        message = (
            f"{where} has shape {format_shape_list(shape)}{after}; its annotation {spec.text} "
            f"wants {wants}"
        )
        problems.append(SpecProblem(field, "ndim", features, wants, None, message))
        return problems
    for position, (dim, start, stop) in enumerate(places):
        on_batch = start < batch_ndim or (position == 0 and spec.whole and dim.kind == VARIADIC)
        if on_batch and not bind_batch:
            # On batch dims, or a jaxtyping spec's leading variadic, which stands for
            # the batch dims (and any leading dims more): batch_size's business.
            continue
        if dim.kind == SYMBOLIC:
            deferred.append((site, dim, start))
            continue
        problem = _match_dim(site, dim, start, stop, bound, agree)
        if problem is not None:
            problems.append(problem)
    return problems


def _match_dim(
    site: Site, dim: Dim, start: int, stop: int, bound: Bound, agree: str
) -> SpecProblem | None:
    field, spec, (_, shape), where, _, _, _ = site
    shown = format_shape_list(shape)
    if dim.kind == ANON or (dim.kind == VARIADIC and dim.name is None):
        return None
    if dim.kind == FIXED:
        size = shape[start]
        if size == dim.size or (dim.broadcast and size == 1):
            return None
        message = (
            f"{where} has shape {shown}: dim {start} is {size}, but its annotation "
            f"{spec.text} fixes it to {dim.size}"
        )
        return SpecProblem(field, dim.text, size, dim.size, None, message)
    assert dim.name is not None
    value: Any = shape[start] if dim.kind == NAMED else tuple(shape[start:stop])
    if dim.broadcast and (value == 1 or (dim.kind == VARIADIC and all(s == 1 for s in value))):
        return None
    previous = bound.get(dim.name)
    if previous is None:
        bound[dim.name] = (value, field, where)
        return None
    if _same(previous[0], value, dim.broadcast):
        return None
    first, other, other_where = previous
    label = f"*{dim.name}" if dim.kind == VARIADIC else dim.name
    shown_value = list(value) if isinstance(value, tuple) else value
    shown_first = list(first) if isinstance(first, tuple) else first
    elsewhere = f"in {other_where}" if other_where != where else "earlier in the same shape"
    message = (
        f"{where} has shape {shown}: dim {label!r} is {shown_value} here, but {shown_first} "
        f"{elsewhere}; {agree} that name {label!r} must agree on its size"
    )
    return SpecProblem(field, label, shown_value, shown_first, other, message)


def _same(a: Any, b: Any, broadcast: bool) -> bool:
    if a == b:
        return True
    if not broadcast or not isinstance(a, tuple) or len(a) != len(b):
        return False
    return all(x == y or x == 1 or y == 1 for x, y in zip(a, b))


def _match_expression(site: Site, dim: Dim, position: int, bound: Bound) -> SpecProblem | None:
    field, spec, (_, shape), where, _, _, _ = site
    values = {name: bound[name][0] for name in dim.names if name in bound}
    if len(values) < len(dim.names) or not all(type(v) is int for v in values.values()):
        return None  # a dim it reads is not bound (a field not set): nothing to compare
    assert dim.code is not None
    try:
        expected = eval(dim.code, {"__builtins__": {}}, values)  # noqa: S307 (checked AST)
    except ArithmeticError:
        expected = None
    size = shape[position]
    if size == expected:
        return None
    given = ", ".join(f"{name}={value}" for name, value in sorted(values.items()))
    message = (
        f"{where} has shape {format_shape_list(shape)}: dim {position} is {size}, but "
        f"its annotation {spec.text} computes {dim.name} = {expected} (with {given})"
    )
    return SpecProblem(field, str(dim.name), size, expected, None, message)


# --- the generated fast path -----------------------------------------------------------


def _fast_form(spec: TensorSpec) -> str | None:
    """How the generated check handles ``spec``: 'any' (dtype only), 'exact' (a Spec of
    fixed, named and anonymous dims), 'tail' (a jaxtyping spec whose variadic comes
    first), 'right' (a jaxtyping spec without a variadic), or None (the general matcher
    decides)."""
    if spec.any_shape:
        return "any"
    dims, v = spec.dims, spec.variadic
    plain = all(
        dim.kind in (FIXED, NAMED, ANON) and not dim.broadcast
        for dim in dims
        if dim.kind != VARIADIC
    )
    if not plain:
        return None
    if not spec.whole and v is None:
        return "exact"
    if spec.whole and v == 0:
        return "tail"
    if spec.whole and v is None:
        return "right"
    return None


@dataclass(frozen=True)
class Inline:
    """The generated checks, for a generated ``__init__`` to inline: ``preamble`` starts
    the function (``bad = False`` and one ``-1`` per named dim), ``fields[name]`` checks
    that field's tensor ``v`` whose shape is in ``s`` (after the batch check) and sets
    ``bad`` on a mismatch; ``namespace`` holds the constants they read. After them,
    ``if bad:`` must run the general matcher (``RecordSpecs.check``), which raises."""

    preamble: list[str]
    fields: dict[str, list[str]]
    namespace: dict[str, Any]
    # assign[name](entries, tensor, batch_size): whether ``tensor`` may be assigned to
    # the field ``name`` of a record holding ``entries``: its batch dims, its spec and its
    # named dims against the other fields' (False: the slow path says why).
    assign: dict[str, Callable[[Mapping[str, Any], Any, Any], bool]]


def _compile(
    owner: str, fields: Sequence[tuple[str, TensorSpec, bool]]
) -> tuple[_Fast, Inline | None]:
    forms = [_fast_form(spec) for _, spec, _ in fields]
    if any(form is None for form in forms):
        return _never_fast, None
    namespace: dict[str, Any] = {
        "_Tensor": torch.Tensor,
        "_isinstance": isinstance,
        "leaf_shape": leaf_shape,
    }
    names = sorted(
        {dim.name for _, spec, _ in fields for dim in spec.dims if dim.kind == NAMED and dim.name}
    )
    local = {name: f"d{index}" for index, name in enumerate(names)}
    preamble = ["bad = False"]
    if names:
        preamble.append(" = ".join(local.values()) + " = -1")
    checks = [
        _check_lines(spec, form, i, namespace, local)
        for i, ((_, spec, _), form) in enumerate(zip(fields, forms))
    ]
    inline = {
        name: [line.replace("{v}", "v") for line in lines]
        for (name, _, _), lines in zip(fields, checks)
    }
    everyone = range(len(fields))
    source = _function("fast", "e, n", preamble, fields, checks, everyone, None)
    for index, (_, spec, _) in enumerate(fields):
        # Assigning one field: its checks, after those of the fields sharing a dim name.
        mine = {dim.name for dim in spec.dims if dim.kind == NAMED}
        sharing = [
            i
            for i in everyone
            if i != index and mine & {d.name for d in fields[i][1].dims if d.kind == NAMED}
        ]
        source += _function(
            f"assign{index}", "e, v, batch", preamble, fields, checks, [*sharing, index], index
        )
    filename = f"<tclass spec check {owner}>"
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    fast: _Fast = namespace["fast"]
    assign = {name: namespace[f"assign{index}"] for index, (name, _, _) in enumerate(fields)}
    constants = {key: value for key, value in namespace.items() if key.startswith("D")}
    return fast, Inline(preamble, inline, constants, assign)


def _function(
    name: str,
    parameters: str,
    preamble: list[str],
    fields: Sequence[tuple[str, TensorSpec, bool]],
    checks: list[list[str]],
    order: Iterable[int],
    given: int | None,
) -> str:
    """The source of a check of the fields at ``order``: each read from ``e``, but the
    one at ``given``, which is ``v``."""
    lines = [f"def {name}({parameters}):", *("    " + line for line in preamble)]
    if given is not None:
        lines.append("    n = len(batch)")
    for index in order:
        field, _, tensors_only = fields[index]
        value = "v" if index == given else f"v{index}"
        if index != given:
            lines.append(f"    {value} = e.get({field!r})")
        guard = f"{value} is not None" if tensors_only else f"_isinstance({value}, _Tensor)"
        # (a strided nested tensor has no .shape: its parts' sizes, -1 where they differ)
        shape = f"leaf_shape({value}) if {value}.is_nested else {value}.shape"
        lines += [f"    if {guard}:", f"        s = {shape}"]
        if index == given:  # the batch check too, on the same shape
            lines.append("        if n and s[:n] != batch: bad = True")
        lines += ["        " + line.replace("{v}", value) for line in checks[index]]
    return "\n".join([*lines, "    return not bad"]) + "\n"


def _check_lines(
    spec: TensorSpec,
    form: str | None,
    index: int,
    namespace: dict[str, Any],
    local: dict[str, str],
) -> list[str]:
    """The checks of one field's tensor ``{v}`` (its shape in ``s``): they set ``bad``."""
    conditions = []
    if spec.dtypes is not None:
        namespace[f"D{index}"] = next(iter(spec.dtypes)) if len(spec.dtypes) == 1 else spec.dtypes
        conditions.append(f"{{v}}.dtype {'is not' if len(spec.dtypes) == 1 else 'not in'} D{index}")
    if form == "any":
        return [f"if {conditions[0]}: bad = True"] if conditions else []
    dims = spec.dims[1:] if form == "tail" else spec.dims
    k = len(dims)
    if form == "right":  # the last f = len(s) - n dims are features, f <= k <= len(s)
        conditions.append(f"len(s) - n > {k} or n and len(s) < {k}")  # a row lacks b of "b 3"
    else:
        conditions.append(f"len(s) {'!=' if form == 'exact' else '<'} n + {k}")
    after: list[str] = ["f = len(s) - n"] if form == "right" else []
    for i, dim in enumerate(dims):
        position = i - k  # from the end: the same whatever the batch dims
        check: list[str] = []
        if dim.kind == FIXED and form != "right":
            conditions.append(f"s[{position}] != {dim.size}")
        elif dim.kind == FIXED:
            check.append(f"if s[{position}] != {dim.size}: bad = True")
        elif dim.kind == NAMED:
            var = local[str(dim.name)]
            check += bind_lines(var, position)
        if check and form == "right":  # only where the dim falls on a feature dim
            after.append(f"if f >= {k - i}:")
            check = ["    " + line for line in check]
        after += check
    lines = [f"if {' or '.join(conditions)}:", "    bad = True"]
    if after and after != ["f = len(s) - n"]:
        lines += ["else:", *("    " + line for line in after)]
    return lines


def bind_lines(var: str, position: int, indent: str = "") -> list[str]:
    """Generated lines binding the dim at ``position`` of the shape ``s`` to the local
    ``var`` (-1 while unbound), or setting ``bad`` when it holds another size: the one
    binding step of every generated check (records, rows, ``@checked`` contracts)."""
    return [
        f"{indent}x = s[{position}]",
        f"{indent}if x != {var}:",
        f"{indent}    if {var} >= 0: bad = True",
        f"{indent}    else: {var} = x",
    ]


def _never_fast(entries: Mapping[str, Any], batch_ndim: int) -> bool:
    del entries, batch_ndim
    return False
