"""Running one operation over a walk's tensors: one fused multi-tensor kernel
(``torch._foreach_*``) where torch has one for the arguments, else the torch function
tensor by tensor (:func:`run_leafwise`, :func:`run_flat`), and :func:`run_guarded`, the
in-place run of a walk in which records listed the tensors whose values their specs
bound (computed into copies and checked before anything is written). The walk that
gathers the tensors and rebuilds the results is ``_leaf_walk.py``."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import torch
from torch._C import _are_functorch_transforms_active as _transforms_active

from tclass._base.implemented._scalar_operand import ROUTED, tensor_operand
from tclass._base.implemented._staged_writes import Shadows, any_shared
from tclass._core._batch import format_shape
from tclass._core._record_spec import value_problem
from tclass._core._spec import TensorSpec
from tclass.errors import FieldSpecError, ShapeError, TclassError

if TYPE_CHECKING:
    from tclass._base.implemented._leaf_walk import Gather

__all__ = ["mismatched_operands", "run_flat", "run_guarded", "run_leafwise"]

_NO_KWARGS: dict[str, Any] = {}


def run_leafwise(
    foreach: Callable[..., Any] | None,
    each: Callable[..., Any],
    leaves: list[torch.Tensor],
    operands: Sequence[Any],
    kwargs: Mapping[str, Any],
    kinds: frozenset[tuple[Any, ...]] | None = None,
) -> list[Any]:
    """``foreach(leaves, *operands, **kwargs)`` or, where torch has no fused kernel for
    these arguments, ``each(leaf, *leaf_operands, **kwargs)`` leaf by leaf.

    Each operand is a scalar (the same for every leaf) or a list with one item per leaf.
    In-place kernels return None: the leaves themselves are then the results.
    ``kinds``: what ``number_kinds`` read of these leaves and operands (else read here).
    """
    if not leaves:
        return []
    if foreach is _FOREACH_COPY and _copies_a_graph(operands):
        foreach = None  # the fused copy has no derivative: Tensor.copy_ records CopyBackwards
    # Under torch.func transforms (vmap, grad, jvp...) the fused kernels have no batching
    # rule: the per-leaf operation, which every transform handles, runs instead.
    if foreach is not None and not _transforms_active():
        try:
            if leaves[0].is_cpu and not kwargs:  # one call: torch loops over the tensors
                routed = (
                    tensor_operand(foreach, leaves, operands, kwargs, kinds)
                    if foreach in ROUTED
                    else None
                )
                results = foreach(leaves, *(routed or operands))
            elif leaves[0].is_cpu:
                results = foreach(leaves, *operands, **kwargs)
            else:
                results = _fused(foreach, leaves, operands, kwargs)
        except TypeError:  # no kernel takes these arguments: leaf by leaf below
            pass
        except RuntimeError:
            # Autograd has no fused out-of-place kernel for a list that mixes tensors
            # requiring grad with integer ones (parameters beside integer buffers, as
            # TensorDictParams holds, on either side): nothing was computed, leaf by leaf.
            if not _mixes_grad_and_integers(leaves, operands):
                raise
        else:
            return leaves if results is None else _grad_where_asked(leaves, operands, results)
    columns = [op if type(op) is list else itertools.repeat(op) for op in operands]
    if kwargs:
        results = [each(*args, **kwargs) for args in zip(leaves, *columns)]
    else:  # one C-level loop where `each` is a C function
        results = list(map(each, leaves, *columns))
    return leaves if results[0] is None else results


def run_flat(
    foreach: Callable[..., Any] | None,
    each: Callable[..., Any],
    leaves: list[torch.Tensor],
    args: Sequence[Any],
    kwargs: Mapping[str, Any] | None,
) -> list[Any]:
    """:func:`run_leafwise` for the flat forms of out-of-place math, its common case (CPU
    tensors, no keyword) inline: those forms are all Python overhead."""
    if kwargs or foreach is None or not leaves or not leaves[0].is_cpu or _transforms_active():
        return run_leafwise(foreach, each, leaves, args, kwargs or _NO_KWARGS)
    # (a number as 0-d tensors; an operand's pieces, a list, go as they are)
    routed = (
        tensor_operand(foreach, leaves, args, None)
        if args and args[0].__class__ is not list
        else None
    )
    try:
        results = foreach(leaves, *(routed or args))
    except TypeError:  # no fused kernel takes these arguments: leaf by leaf
        return run_leafwise(None, each, leaves, args, _NO_KWARGS)
    except RuntimeError:  # autograd's refusal of a fused kernel (see run_leafwise)
        if not _mixes_grad_and_integers(leaves, args):
            raise
        return run_leafwise(None, each, leaves, args, _NO_KWARGS)
    if not results[0].requires_grad:  # (the common case, without a call)
        return results  # type: ignore[no-any-return]
    return cast("list[Any]", _grad_where_asked(leaves, args, results))


def _grad_where_asked(leaves: list[torch.Tensor], operands: Sequence[Any], results: Any) -> Any:
    """``results`` of a fused out-of-place kernel, each requiring grad only where its own
    inputs do: autograd marks every output of a fused kernel once one input requires grad
    (``params ** t``: an integer buffer's float result too, a non-leaf without a parameter
    behind it), where torch's per-tensor operation marks that tensor's alone."""
    if not isinstance(results, (list, tuple)) or not results or not results[0].requires_grad:
        return results  # (outputs of one fused kernel require grad all or none)
    if any(getattr(op, "requires_grad", False) for op in operands if type(op) is not list):
        return results  # a tensor operand every output reads
    columns = [op for op in operands if type(op) is list]
    return [
        out
        if leaf.requires_grad or any(getattr(c[i], "requires_grad", False) for c in columns)
        else out.detach()
        for i, (leaf, out) in enumerate(zip(leaves, results))
    ]


_FOREACH_COPY = torch._foreach_copy_


def mismatched_operands(
    node: Any, operands: Sequence[Any], each: Callable[..., Any], error: RuntimeError
) -> ShapeError | None:
    """The error for an out-of-place operation that torch refused (``error``) because an
    entry of ``node`` and the same entry of a collection operand have shapes that do not
    broadcast, naming the entry and both shapes; None where that is not the cause (torch's
    error then stands). Only the error path pays for this walk."""
    if isinstance(error, TclassError):  # tclass's own, already precise
        return None
    try:
        return _first_mismatch(node, operands, each, error)
    except TclassError:  # an entry with no dense value (a ragged lazy stack's): torch's
        return None  # error stands, as the peer's (`x & x` of float entries)


def _first_mismatch(
    node: Any, operands: Sequence[Any], each: Callable[..., Any], error: RuntimeError
) -> ShapeError | None:
    """:func:`mismatched_operands`' walk: the error naming the first entry of ``node``
    whose shape does not broadcast with the same entry of a collection operand."""
    for other in operands:
        if not hasattr(other, "_entries") or not hasattr(other, "items"):
            continue
        for key, mine in node.items(include_nested=True, leaves_only=True):
            theirs = other.get(key, None)
            if not isinstance(mine, torch.Tensor) or not isinstance(theirs, torch.Tensor):
                continue
            try:
                torch.broadcast_shapes(mine.shape, theirs.shape)  # type: ignore[no-untyped-call]
            except RuntimeError:
                name = getattr(each, "__name__", "the operation")
                msg = (
                    f"{name}: entry {key!r} has shape {format_shape(mine.shape)} in "
                    f"{type(node).__name__} but {format_shape(theirs.shape)} in the other "
                    f"operand ({type(other).__name__}), and these shapes do not broadcast "
                    f"({error}); give the operands entries of the same (or broadcastable) "
                    "shapes"
                )
                return ShapeError(msg)
    return None


def _copies_a_graph(operands: Sequence[Any]) -> bool:
    """Whether ``copy_`` writes tensors that require grad (with grad mode on): autograd
    then needs the per-tensor copy, as torch's ``_foreach_copy_`` has no derivative."""
    if not torch.is_grad_enabled() or not operands or type(operands[0]) is not list:
        return False
    return any(getattr(t, "requires_grad", False) for t in operands[0])


def _mixes_grad_and_integers(leaves: list[torch.Tensor], operands: Sequence[Any] = ()) -> bool:
    """Whether autograd refuses a fused kernel on ``leaves`` and the tensor lists of
    ``operands``: some require grad, some have a dtype without gradients (integers,
    bool), in any of the lists (``td + params``: the parameters in the operand's)."""
    if not torch.is_grad_enabled():
        return False
    tensors = [*leaves]
    for operand in operands:
        if type(operand) is list:
            tensors.extend(t for t in operand if isinstance(t, torch.Tensor))
    return any(t.requires_grad for t in tensors) and any(
        not (t.is_floating_point() or t.is_complex()) for t in tensors
    )


def _fused(
    foreach: Callable[..., Any],
    leaves: list[torch.Tensor],
    operands: Sequence[Any],
    kwargs: Mapping[str, Any],
) -> list[torch.Tensor] | None:
    """One kernel call per (device, dtype) group of tensors off the CPU, which is what
    the fast fused kernels take (one call where they all share them)."""
    groups: dict[tuple[torch.device, torch.dtype], list[int]] = {}
    for position, leaf in enumerate(leaves):
        groups.setdefault((leaf.device, leaf.dtype), []).append(position)
    if len(groups) == 1:
        return foreach(leaves, *operands, **kwargs)  # type: ignore[no-any-return]
    out: list[torch.Tensor] = list(leaves)
    for positions in groups.values():
        part = [leaves[i] for i in positions]
        args = [[op[i] for i in positions] if type(op) is list else op for op in operands]
        results = foreach(part, *args, **kwargs)
        if results is not None:
            for i, result in zip(positions, results):
                out[i] = result
    return out


def run_guarded(
    foreach: Callable[..., Any] | None,
    each: Callable[..., Any],
    gather: Gather,
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    writes: bool,
    what: str,
) -> None:
    """An in-place operation over ``gather``'s leaves, some of which (its ``guards``)
    hold values bounded by their field's spec: the results for those are computed into
    copies and checked first, then written, then the other leaves are written. Nothing
    is written when a result breaks a constraint; the other leaves pay nothing more.
    ``writes``: the first operand's pieces are the values written, as they are
    (``copy_``): each is checked itself where it has its leaf's dtype (no copy), and
    the operation then runs once over every leaf.

    Raises:
        FieldSpecError: naming each bounded field whose result breaks a constraint,
            the constraint, the first offending index and value; ``what`` (the
            operation) leads the message.
    """
    leaves, guards = gather.leaves, cast("list[tuple[int, str, str, TensorSpec]]", gather.guards)
    positions = [guard[0] for guard in guards]
    results = []
    for position in positions:
        leaf = leaves[position]
        piece = args[0][position] if writes else None
        if piece is not None and piece.dtype == leaf.dtype:
            results.append(piece)  # written as it is: checked as it is
        elif piece is not None:
            results.append(torch.empty_like(leaf).copy_(piece))  # as the leaf's dtype holds it
        else:
            results.append(leaf.clone())
    if not writes and len(positions) > 1 and any_shared([leaves[p] for p in positions]):
        _run_in_turn(each, [leaves[p] for p in positions], positions, results, args, kwargs)
    elif not writes:
        picked = [[arg[i] for i in positions] if type(arg) is list else arg for arg in args]
        run_leafwise(foreach, each, results, picked, kwargs)
    problems = []
    for (_, where, field, spec), result in zip(guards, results):
        found = cast(Any, spec.constraints).first_violation(result)
        if found is not None:
            subject = "the value written holds" if writes else "the result would hold"
            problems.append(value_problem(f"{where}:", field, spec, found, subject))
    if problems:
        listed = "; ".join(problem.message for problem in problems)
        raise FieldSpecError(f"{what}: {listed}. Nothing was written", problems)
    if writes:
        run_leafwise(foreach, each, leaves, args, kwargs)
        return
    for position, result in zip(positions, results):
        leaves[position].copy_(result)
    taken = set(positions)
    rest = [i for i in range(len(leaves)) if i not in taken]
    if rest:
        others = [[arg[i] for i in rest] if type(arg) is list else arg for arg in args]
        run_leafwise(foreach, each, [leaves[i] for i in rest], others, kwargs)


def _run_in_turn(
    each: Callable[..., Any],
    leaves: list[torch.Tensor],
    positions: list[int],
    results: list[torch.Tensor],
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
) -> None:
    """:func:`run_guarded`'s results for bounded leaves that share memory: each computed
    in turn from that memory as the results before it leave it (:class:`Shadows`), as
    the peer's one-at-a-time writes read it, where copies taken at once would each miss
    the others' writes."""
    shadows = Shadows()
    for k, (leaf, position) in enumerate(zip(leaves, positions, strict=True)):
        result = shadows.read(leaf).clone()
        picked = [[arg[position]] if type(arg) is list else arg for arg in args]
        run_leafwise(None, each, [result], picked, kwargs)
        results[k] = result
        shadows.wrote(leaf, result)
