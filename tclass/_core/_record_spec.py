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
from typing import Any

import torch

from tclass._core._spec import ANON, FIXED, NAMED, SYMBOLIC, VARIADIC, Dim, TensorSpec
from tclass.errors import FieldSpecError, SpecProblem

__all__ = ["Observed", "RecordSpecs", "bind", "format_shape_list"]

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

    __slots__ = ("owner", "specs", "names", "_fast")

    def __init__(self, owner: str, fields: Sequence[tuple[str, TensorSpec, bool]]) -> None:
        self.owner = owner
        self.specs: dict[str, TensorSpec] = {name: spec for name, spec, _ in fields}
        self.names = tuple(self.specs)
        self._fast = _compile(owner, fields)

    def check(self, entries: Mapping[str, Any], batch_ndim: int) -> None:
        """Checks the spec'd fields among ``entries`` (absent or non-tensor ones pass).

        Raises:
            FieldSpecError: listing every problem.
        """
        if not self._fast(entries, batch_ndim):
            self._raise(_observed(entries, self.names), batch_ndim, None)

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
        bound: dict[str, tuple[Any, str]] = {}
        for name in self.names:
            if name in observed:
                dtype, shape = observed[name]
                del dtype
                places = self.specs[name].placement(len(shape), batch_ndim)
                for dim, start, stop in places or ():
                    if (
                        dim.name is not None
                        and dim.kind in (NAMED, VARIADIC)
                        and start >= batch_ndim
                    ):
                        value = shape[start] if dim.kind == NAMED else tuple(shape[start:stop])
                        bound.setdefault(dim.name, (value, name))
        return {key: value for key, (value, _) in bound.items()}

    def _raise(self, observed: dict[str, Observed], batch_ndim: int, last: str | None) -> None:
        problems = self.problems(observed, batch_ndim, last)
        if not problems:
            return
        if len(problems) == 1:
            message = problems[0].message
        else:
            listed = "; ".join(problem.message for problem in problems)
            message = f"{self.owner}: {len(problems)} problems with the field specs: {listed}"
        raise FieldSpecError(message, problems)


def _observed(entries: Mapping[str, Any], names: Iterable[str]) -> dict[str, Observed]:
    found: dict[str, Observed] = {}
    for name in names:
        value = entries.get(name)
        if isinstance(value, torch.Tensor):
            found[name] = (value.dtype, tuple(value.shape))
    return found


def bind(owner: str, items: Sequence[tuple[str, TensorSpec, Observed]], batch_ndim: int) -> None:
    """Raises ``FieldSpecError`` for the problems of ``items`` (field, spec, observed)."""
    problems = _match_all(owner, items, batch_ndim)
    if problems:
        raise FieldSpecError("; ".join(problem.message for problem in problems), problems)


# --- the general matcher ---------------------------------------------------------------


def _match_all(
    owner: str, items: Sequence[tuple[str, TensorSpec, Observed]], batch_ndim: int
) -> list[SpecProblem]:
    bound: dict[str, tuple[Any, str]] = {}
    deferred: list[tuple[str, TensorSpec, Dim, int, Sequence[int]]] = []
    problems: list[SpecProblem] = []
    for field, spec, (dtype, shape) in items:
        where = f"{owner}.{field}"
        if dtype is not None and spec.dtypes is not None and dtype not in spec.dtypes:
            wanted = " or ".join(sorted(str(d).replace("torch.", "") for d in spec.dtypes))
            got = str(dtype).replace("torch.", "")
            message = f"{where} has dtype {got}, but its annotation {spec.text} wants {wanted}"
            problems.append(SpecProblem(field, "dtype", got, wanted, None, message))
        places = spec.placement(len(shape), batch_ndim)
        if places is None:
            features = len(shape) - batch_ndim
            message = (
                f"{where} has shape {format_shape_list(shape)}, {features} feature dim(s) after "
                f"the {batch_ndim} batch dim(s); its annotation {spec.text} wants "
                f"{spec.rank_text()}"
            )
            problems.append(SpecProblem(field, "ndim", features, spec.rank_text(), None, message))
            continue
        for dim, start, stop in places:
            if start < batch_ndim:
                continue  # on batch dims: batch_size's business
            if dim.kind == SYMBOLIC:
                deferred.append((field, spec, dim, start, shape))
                continue
            problem = _match_dim(owner, field, spec, dim, shape, start, stop, bound)
            if problem is not None:
                problems.append(problem)
    for field, spec, dim, position, shape in deferred:
        problem = _match_expression(owner, field, spec, dim, shape, position, bound)
        if problem is not None:
            problems.append(problem)
    return problems


def _match_dim(
    owner: str,
    field: str,
    spec: TensorSpec,
    dim: Dim,
    shape: Sequence[int],
    start: int,
    stop: int,
    bound: dict[str, tuple[Any, str]],
) -> SpecProblem | None:
    where = f"{owner}.{field}"
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
        bound[dim.name] = (value, field)
        return None
    if _same(previous[0], value, dim.broadcast):
        return None
    first, other = previous
    label = f"*{dim.name}" if dim.kind == VARIADIC else dim.name
    shown_value = list(value) if isinstance(value, tuple) else value
    shown_first = list(first) if isinstance(first, tuple) else first
    elsewhere = f"in {owner}.{other}" if other != field else "earlier in the same shape"
    if other == "dims=":
        elsewhere = "in dims="
    message = (
        f"{where} has shape {shown}: dim {label!r} is {shown_value} here, but {shown_first} "
        f"{elsewhere}; fields that name {label!r} must agree on its size"
    )
    return SpecProblem(field, label, shown_value, shown_first, other, message)


def _same(a: Any, b: Any, broadcast: bool) -> bool:
    if a == b:
        return True
    if not broadcast or not isinstance(a, tuple) or len(a) != len(b):
        return False
    return all(x == y or x == 1 or y == 1 for x, y in zip(a, b))


def _match_expression(
    owner: str,
    field: str,
    spec: TensorSpec,
    dim: Dim,
    shape: Sequence[int],
    position: int,
    bound: dict[str, tuple[Any, str]],
) -> SpecProblem | None:
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
        f"{owner}.{field} has shape {format_shape_list(shape)}: dim {position} is {size}, but "
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


def _compile(owner: str, fields: Sequence[tuple[str, TensorSpec, bool]]) -> _Fast:
    forms = [_fast_form(spec) for _, spec, _ in fields]
    if any(form is None for form in forms):
        return _never_fast
    namespace: dict[str, Any] = {"_Tensor": torch.Tensor, "_isinstance": isinstance}
    lines = ["def fast(e, n):"]
    names = sorted(
        {dim.name for _, spec, _ in fields for dim in spec.dims if dim.kind == NAMED and dim.name}
    )
    local = {name: f"d{index}" for index, name in enumerate(names)}
    if names:
        lines.append("    " + " = ".join(local.values()) + " = -1")
    for index, ((name, spec, tensors_only), form) in enumerate(zip(fields, forms)):
        value = f"v{index}"
        lines.append(f"    {value} = e.get({name!r})")
        guard = f"{value} is not None" if tensors_only else f"_isinstance({value}, _Tensor)"
        lines.append(f"    if {guard}:")
        body = _field_lines(value, spec, form, index, namespace, local)
        lines += ["        " + line for line in body] or ["        pass"]
    lines.append("    return True")
    source = "\n".join(lines) + "\n"
    filename = f"<tclass spec check {owner}>"
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    fast: _Fast = namespace["fast"]
    return fast


def _field_lines(
    value: str,
    spec: TensorSpec,
    form: str | None,
    index: int,
    namespace: dict[str, Any],
    local: dict[str, str],
) -> list[str]:
    lines = []
    if spec.dtypes is not None:
        if len(spec.dtypes) == 1:
            namespace[f"D{index}"] = next(iter(spec.dtypes))
            lines.append(f"if {value}.dtype is not D{index}: return False")
        else:
            namespace[f"D{index}"] = spec.dtypes
            lines.append(f"if {value}.dtype not in D{index}: return False")
    if form == "any":
        return lines
    dims = spec.dims[1:] if form == "tail" else spec.dims
    k = len(dims)
    lines.append(f"s = {value}.shape")
    if form == "right":  # the last f = len(s) - n dims are features, f <= k <= len(s)
        lines.append("f = len(s) - n")
        lines.append(f"if f > {k} or len(s) < {k}: return False")
    else:
        lines.append(f"if len(s) {'!=' if form == 'exact' else '<'} n + {k}: return False")
    for i, dim in enumerate(dims):
        position = i - k  # from the end: the same whatever the batch dims
        check: list[str] = []
        if dim.kind == FIXED:
            check.append(f"if s[{position}] != {dim.size}: return False")
        elif dim.kind == NAMED:
            var = local[str(dim.name)]
            check.append(f"x = s[{position}]")
            check.append(f"if x != {var}:")
            check.append(f"    if {var} >= 0: return False")
            check.append(f"    {var} = x")
        if check and form == "right":  # only where the dim falls on a feature dim
            lines.append(f"if f >= {k - i}:")
            check = ["    " + line for line in check]
        lines += check
    return lines


def _never_fast(entries: Mapping[str, Any], batch_ndim: int) -> bool:
    del entries, batch_ndim
    return False
