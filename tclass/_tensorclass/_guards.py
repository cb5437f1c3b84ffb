"""Checks of the writes into a record's tensors that are not row writes (those are in
``_writes``): in-place math and ``copy_`` (``record.add_(x)``, ``record += x``,
``clamp_``, ``masked_fill_``, ``lerp_``, ``zero_``, ``out=record``...), ``apply_``,
``fill_`` and ``rename_key_``.

In-place math cannot know its results before it computes them: for the fields whose
spec bounds their values (``Spec(ge=0)``, ``Ge(0)``...) they are computed into copies,
checked, and only then written, the other tensors afterwards; nothing is written when
one breaks a constraint. Unbounded fields pay nothing: the walk of the leaf-walk
(``_base/implemented/_leaf_kernels.py``, ``run_guarded``) lists the bounded ones
(:func:`guard_leaves`, called from the record's part of that walk) and runs as before
when there are none.

Not checked, because nothing passes through the record: writes into a field's tensor
itself (``record.prob.add_(1)``, ``record.prob[:] = x``, ``torch.add(a, b,
out=record.prob)``): the tensor is a plain ``torch.Tensor``. Write through the record
(``record.add_``, ``record[:] = ...``, ``record.set_("prob", ...)``), or check after
the fact with ``type(record).from_tensordict(record.to_tensordict())``.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import torch

from tclass._base.implemented._leaf_walk import Gather
from tclass._base.implemented._staged_writes import Shadows, StagedWrites
from tclass._core._keys import key_path
from tclass._core._record_spec import RecordSpecs, value_problem
from tclass._core._records import is_record
from tclass._engine._record_fields import dense_entries, record_parts
from tclass.errors import FieldSpecError, SpecProblem

__all__ = ["apply_in_place_checked", "check_fill", "check_rename", "guard_leaves"]

_Tensor = torch.Tensor


def guard_leaves(record: Any, into: Gather, start: int, specs: RecordSpecs) -> None:
    """Lists in ``into.guards`` the tensors of ``record``'s bounded fields (``specs``:
    its class's) among the leaves its walk gathered from position ``start`` on (its
    nested records list their own as the walk reaches them)."""
    owner = type(record).__name__
    names: dict[int, str] = {}
    for entries, _ in record_parts(record):
        for name in specs.constrained:
            value = entries.get(name)
            if isinstance(value, _Tensor):
                names[id(value)] = name
    leaves, guards = into.leaves, into.guards
    assert guards is not None
    for position in range(start, len(leaves)):
        field = names.get(id(leaves[position]))
        if field is not None:
            guards.append((position, f"{owner}.{field}", field, specs.specs[field]))


class _Staged:
    """``apply_``'s function in one of the two passes of a checked ``apply_`` (nested
    records see it and do not check again: the outer pass covers them)."""

    __slots__ = ("fn", "first", "guarded", "pending", "shadows")

    def __init__(self, fn: Callable[..., Any], guarded: dict[int, Any], first: bool) -> None:
        self.fn, self.guarded, self.first = fn, guarded, first
        self.pending: list[tuple[_Tensor, _Tensor, Any]] = []
        self.shadows = Shadows()  # (two bounded fields over one memory: read in turn)

    def __call__(self, value: _Tensor, *paired: Any) -> _Tensor | None:
        guard = self.guarded.get(id(value))
        if not self.first:
            return None if guard is not None else self.fn(value, *paired)
        if guard is None:
            return None  # the second pass writes it
        copy = self.shadows.read(value).clone()
        result = self.fn(copy, *paired)
        if result is None:
            result = copy  # fn wrote into what it was given
        elif result.dtype != value.dtype or result.shape != value.shape:
            result = torch.empty_like(value).copy_(result)  # as the tensor would hold it
        self.pending.append((value, result, guard))
        self.shadows.wrote(value, result)
        return None


def apply_in_place_checked(
    record: Any,
    fn: Callable[..., Any],
    others: tuple[Any, ...],
    staged: StagedWrites | None = None,
) -> bool:
    """``record.apply_(fn, *others)`` with the results for its bounded fields (its
    nested records' too) computed first, from copies, and checked; then the results
    for the other tensors ``fn`` changes computed, and all written once all are (by
    ``staged``, the writes of an ``apply_`` of a collection holding the record, when
    given). False, having done nothing, when the record holds no bounded tensor (the
    storage's walk does it all).

    Raises:
        FieldSpecError: a result that breaks a constraint; nothing was written.
    """
    if isinstance(fn, _Staged):
        return False  # inside the checked apply_ of a record holding this one
    into = Gather(guard=True)
    record._collect(into, (), len(record.batch_size), ())
    if not into.guards:
        return False
    guarded = {id(into.leaves[g[0]]): g for g in into.guards}
    bounded = [into.leaves[g[0]] for g in into.guards]
    # a result waiting for memory a bounded field shares: written before the field is
    # read, as the peer's walk reads it (so not undone if the field's result is refused)
    flushed = staged is not None and any(staged.before(leaf) for leaf in bounded)
    first = _Staged(fn, guarded, True)
    storage = record._tensordict
    storage._apply_in_place(first, others)
    problems: list[SpecProblem] = []
    for _, result, (_, where, field, spec) in first.pending:
        found = spec.constraints.first_violation(result)
        if found is not None:
            problems.append(value_problem(f"{where}:", field, spec, found, "the result would hold"))
    if problems:
        listed = "; ".join(problem.message for problem in problems)
        message = f"{type(record).__name__}.apply_(...): {listed}. " + (
            "Nothing of it was written (the results before it that share its memory were, "
            "as the walk reads them after they are written)"
            if flushed
            else "Nothing was written"
        )
        raise FieldSpecError(message, problems)
    writes = StagedWrites() if staged is None else staged
    try:
        writes.defer(partial(_write_checked, first.pending), shares=bounded)
        storage._stage_in_place(_Staged(fn, guarded, False), others, writes)
        if staged is None:
            writes.write()
    finally:
        if staged is None:
            writes.close()
    return True


def _write_checked(pending: list[tuple[_Tensor, _Tensor, Any]]) -> None:
    """The checked results of a record's bounded fields, into their tensors."""
    for value, result, _ in pending:
        value.copy_(result)


def check_fill(record: Any, key: Any, value: Any) -> None:
    """Checks ``record.fill_(key, value)``: ``value`` as the dtype of each bounded tensor
    it fills (the field ``key``, or every field of the nested record at ``key``).

    Raises:
        FieldSpecError: naming the field, the constraint and the value.
    """
    path = key_path(key)
    specs = record.__tclass_info__.specs
    name = path[0]
    target = _entry(record, name)
    if is_record(target):
        if len(path) > 1:
            check_fill(target, path[1:], value)
        else:
            for field in target.__tclass_info__.field_names:
                if isinstance(_entry(target, field), _Tensor):
                    check_fill(target, field, value)
        return
    if len(path) > 1 or specs is None or name not in specs.constrained:
        return
    if not isinstance(target, _Tensor):
        return  # not set: fill_ says so
    written = torch.as_tensor(value).to(target.dtype)
    found = specs.constrained[name].first_violation(written)
    if found is not None:
        where = f"{type(record).__name__}.{name}:"
        problem = value_problem(where, name, specs.specs[name], found, "the value written is")
        message = f"{type(record).__name__}.fill_({name!r}, ...): {problem.message}"
        raise FieldSpecError(f"{message}. Nothing was written", [problem])


def _entry(record: Any, name: str) -> Any:
    """The entry ``name`` of ``record`` (a lazy stack's: its first member's)."""
    parts = record_parts(record)
    return parts[0][0].get(name) if parts else None


def check_rename(record: Any, old_key: Any, new_key: Any) -> None:
    """Checks ``record.rename_key_(old_key, new_key)``: the value moved must fit the
    spec of the field it moves to, as if that field were assigned.

    Raises:
        FieldSpecError: naming the field and what does not fit.
    """
    old, new = key_path(old_key), key_path(new_key)
    specs = record.__tclass_info__.specs
    entries = dense_entries(record)
    if len(old) > 1 or len(new) > 1 or specs is None or entries is None:
        return
    value = entries.get(old[0])
    if not isinstance(value, _Tensor):
        return
    others = {key: item for key, item in entries.items() if key != old[0]}
    specs.check_assign(others, new[0], value, len(record.batch_size))
