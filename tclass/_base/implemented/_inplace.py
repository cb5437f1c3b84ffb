"""All-or-nothing in-place math: the first tensor of a collection that torch would refuse
to write an in-place operation into, found before any tensor is written.

torch checks each tensor as it writes it, and the fused kernels run tensor by tensor on
CPU (and per device and dtype elsewhere): a collection with one tensor torch refuses
(``+= 1`` on a bool tensor, ``exp_()`` on an integer one, an operand that does not
broadcast into the tensor's shape) would be left half-changed. :func:`first_refusal`
finds such a tensor from the dtypes and shapes alone, so that nothing is written:

* dtypes: torch's own verdict on the operation for the tensor's dtype and the operands'
  dtypes (or, for numbers, their type, sign and magnitude class: torch refuses a clamp
  bound that overflows ``float16``, a negative integer power, an integer division by
  zero). Type promotion (``torch.result_type`` / ``torch.can_cast``), kernels a dtype
  lacks (``abs`` of bools, bitwise operations on floats) and refused arguments are all
  decided by torch itself, once per combination on one-element tensors of those dtypes
  (never on the data), and cached; a call then reads each tensor's dtype and looks up
  the few combinations it holds.
* shapes: the piece of an operand that goes with a tensor must broadcast into that
  tensor's shape. A tensor operand over the batch dims is checked once, on the batch
  size (``_leaf_walk.py`` gives the batch size the operands broadcast to); a collection
  operand entry by entry, skipped where its tensors are the collection's own
  (``td.mul_(td)``).

What depends on the values of a tensor operand (an integer division by a zero in it) is
not decided up front.

With a collection operand, reading each tensor's and operand's dtype and shape (and
``requires_grad``) from Python costs about 0.3 µs a tensor, half the Python time of
``params.add_(other)`` on 200 parameters. So for those the check remembers, per
operation and kind of arguments, the metadata of the last tensors it passed, as a guard
of torch's own (``torch._C._dynamo.guards.TensorGuards``, what compiled code checks its
inputs with), which compares each tensor's type, dispatch keys, dtype, device,
``requires_grad`` and sizes in one C loop, about 0.05 µs a tensor. Tensors that match it
pass without a read; any other tensors (a dtype or a shape changed, even in place) are
checked in full. Only metadata with no tensor requiring grad is remembered while autograd
records (the guard does not see whether a tensor is a leaf), and nothing under a
dispatch mode (fake tensors) or with an argument that is not a plain number. Where torch
lacks that guard or it does not behave as expected, every call is checked in full.

With numbers or a tensor operand, the check reads each tensor's dtype and
``requires_grad`` alone, as before: values the kernel's dispatch reads from the same
memory anyway, where the guard would read each tensor's sizes too. On a large tree that
costs more than the Python it saves: the tensors' data pushes the metadata out of the
caches before the kernel comes to it, so that each value read up front is a memory
access paid twice. Where the number then goes to the kernel as a 0-d tensor
(``_scalar_operand.py``), the tensors' class, dtype and ``requires_grad`` are read once
for both (``number_kinds``), not in three passes; and not at all where the tensors are
all of the one kind of the last such tensors read for as many (:func:`remembered_kinds`:
a guard that leaves the sizes and strides free, and reads from each tensor about what
the three reads would). A verdict on those kinds and numbers that passed is remembered
too (:func:`_kinds_refusal`), so that a repeated call looks up one key, not one per dtype.
"""

from __future__ import annotations

import itertools
import math
import operator
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple, cast

import torch

__all__ = ["Refusal", "first_refusal", "remembered_kinds"]

_dtype_of = operator.attrgetter("dtype")
_shape_of = operator.attrgetter("shape")
_requires_grad = operator.attrgetter("requires_grad")
_NUMBERS = (bool, int, float, complex)
_VERDICTS: dict[Any, Refusal | None] = {}  # refusals at position 0
_MOST_VERDICTS = 4096  # a cache that only grows with new (operation, dtypes) combinations
_LARGEST: dict[torch.dtype, float] = {}
_SAME: Any = object()  # an operand whose pieces are the leaves themselves (td.mul_(td))
_LISTED: Any = object()  # in a key: an operand with one piece per tensor
# The guards of metadata that passed, per operation and kind of arguments (a cache that
# grows only with new kinds of calls), and whether torch's guard behaves as they need.
_PASSED: dict[tuple[Any, ...], Any] = {}
_MOST_PASSED = 1024
# The same for calls with numbers alone: (operation, kinds of tensors, numbers...) that passed.
_KINDS_PASSED: set[tuple[Any, ...]] = set()
_GUARDS_WORK: bool | None = None
_FLOAT_LIMITS: tuple[float, ...] = ()  # the largest value of each floating dtype (lazily)
# _plain_key of each finite float met (equal floats, 0.0 and -0.0 too, share one key)
_FLOAT_KEYS: dict[float, tuple[Any, ...]] = {}
_TensorGuards: Any = None  # torch's guard class, once _check_guards() found it
# Per number of tensors, guards of the last tensors of one kind (class, dtype,
# requires_grad) that remembered_kinds read, most recently passed first, with that kind;
# and how many guards were built for that number since one last passed.
_KINDS: dict[int, list[tuple[Any, frozenset[tuple[Any, ...]]]]] = {}
_MOST_KIND_GUARDS = 4  # per number of tensors
_MOST_KIND_BUILDS = 16  # missed in a row: no more guards built for that number
_KIND_BUILDS: dict[int, int] = {}


class Refusal(NamedTuple):
    """Which tensor (its position in walk order) torch refuses, and why."""

    position: int
    reason: str
    """torch's message (for a dtype), or "shape"."""
    operand_shape: tuple[int, ...] | None = None
    """The shape of the operand's piece that does not broadcast into the tensor's."""
    unsupported: bool = False
    """Whether torch has no kernel for the dtype (it raises NotImplementedError)."""
    arguments: bool = False
    """Whether torch refuses the arguments themselves (a ``TypeError``: a ``None`` or a
    number where it takes a tensor, ``value="x"``), whatever the tensors: the run raises
    it before anything is written, as torch's argument parser does before autograd's
    checks (so a parameter's "leaf that requires grad" comes after it, as in the peer)."""


def first_refusal(
    foreach: Callable[..., Any] | None,
    each: Callable[..., Any],
    leaves: list[torch.Tensor],
    args: Sequence[Any],
    shared: Sequence[torch.dtype | None],
    kwargs: Mapping[str, Any],
    *,
    dtypes: bool = True,
    kinds: frozenset[tuple[Any, ...]] | None = None,
) -> Refusal | None:
    """The first of ``leaves`` that ``foreach`` / ``each`` (as ``run_leafwise`` calls
    them with ``args`` and ``kwargs``) cannot write in place, or None if all can.

    ``args`` holds, per operand, a number (or None) or a list with one piece per leaf.
    ``shared`` gives, per operand, the dtype all its pieces share (a tensor operand, cut
    or reshaped for each leaf: its shape is the caller's to check, once) or None (a
    collection operand: each piece's dtype and shape are checked). ``dtypes=False``:
    the shapes alone (an operation that takes every dtype). ``kinds``: the leaves'
    (class, dtype, ``requires_grad``) combinations, already read (``number_kinds``), of
    which the check takes the dtypes and ``requires_grad`` instead of reading them again.
    """
    key = None
    for arg, dtype in zip(args, shared):  # (a loop: no generator's frame per call)
        if dtype is None and type(arg) is list:
            key = _passed_key(foreach, each, len(leaves), args, shared, kwargs, dtypes)
            break
    if key is not None:
        guard = _PASSED.get(key)
        if guard is not None and guard.check(*leaves, *_pieces(args)):
            return None  # the metadata of tensors passed before: passed again
    elif kinds is not None:
        return _kinds_refusal(foreach, each, leaves, args, shared, kwargs, dtypes, kinds)
    refusal = _checked(foreach, each, leaves, args, shared, kwargs, dtypes, kinds)
    if refusal is None and key is not None:
        _remember(key, leaves, args)
    return refusal


def _kinds_refusal(
    foreach: Callable[..., Any] | None,
    each: Callable[..., Any],
    leaves: list[torch.Tensor],
    args: Sequence[Any],
    shared: Sequence[torch.dtype | None],
    kwargs: Mapping[str, Any],
    dtypes: bool,
    kinds: frozenset[tuple[Any, ...]],
) -> Refusal | None:
    """:func:`first_refusal` with numbers alone, the tensors' ``kinds`` read: the verdict
    then depends on those kinds, the numbers (as ``_passed_key`` keys them) and the grad
    mode alone, so a pass is remembered for them (not where a tensor requires grad while
    autograd records: being a leaf decides there, read from each tensor)."""
    grad = torch.is_grad_enabled()
    key = None
    if (_GUARDS_WORK is True or _check_guards()) and list not in map(type, args):
        try:  # (_check_guards first: it gives _plain_key the floats' limits)
            named = tuple([(k, _plain_key(v)) for k, v in kwargs.items()]) if kwargs else ()
            numbers = tuple(map(_plain_key, args))
            key = (foreach, each, dtypes, grad, kinds, numbers, named, tuple(shared))
        except TypeError:  # not a plain number: checked afresh each time
            key = None
        if key is not None and key in _KINDS_PASSED:
            return None
    refusal = _checked(foreach, each, leaves, args, shared, kwargs, dtypes, kinds)
    if refusal is None and key is not None and not (grad and any(k[2] for k in kinds)):
        if len(_KINDS_PASSED) >= _MOST_PASSED:
            _KINDS_PASSED.clear()
        _KINDS_PASSED.add(key)
    return refusal


def _checked(
    foreach: Callable[..., Any] | None,
    each: Callable[..., Any],
    leaves: list[torch.Tensor],
    args: Sequence[Any],
    shared: Sequence[torch.dtype | None],
    kwargs: Mapping[str, Any],
    dtypes: bool,
    kinds: frozenset[tuple[Any, ...]] | None = None,
) -> Refusal | None:
    """:func:`first_refusal`, every tensor's metadata read (or taken from ``kinds``)."""
    columns: list[Any] = []  # per list operand: _SAME, one dtype, or its pieces
    misfit: Refusal | None = None
    for arg, dtype in zip(args, shared):
        if type(arg) is not list:
            continue
        if dtype is not None:
            columns.append(dtype)
        elif all(map(operator.is_, arg, leaves)):  # the collection's own tensors
            columns.append(_SAME)
        else:
            columns.append(arg)
            found = _first_misfit(leaves, arg)
            if found is not None and (misfit is None or found.position < misfit.position):
                misfit = found
    if not dtypes:
        return misfit
    seen = None if kinds is None else {kind[1] for kind in kinds}
    refused = _refused_dtypes(foreach, each, leaves, columns, args, kwargs, seen)
    if refused is not None and refused.arguments:
        return refused  # before anything else, as torch's argument parser refuses first
    if refused is not None and (misfit is None or refused.position < misfit.position):
        return refused
    if misfit is None and torch.is_grad_enabled():  # math (copy_ and fills go through,
        # as the peer's parameters take them)
        if kinds is not None and not any(kind[2] for kind in kinds):
            return None  # (no tensor requires grad: nothing to read again)
        return _first_grad_leaf(leaves)
    return misfit


def _passed_key(
    foreach: Callable[..., Any] | None,
    each: Callable[..., Any],
    count: int,
    args: Sequence[Any],
    shared: Sequence[torch.dtype | None],
    kwargs: Mapping[str, Any],
    dtypes: bool,
) -> tuple[Any, ...] | None:
    """What a verdict depends on besides the tensors' metadata (the operation, the
    numbers' classes, the grad mode), or None where none is remembered."""
    if _GUARDS_WORK is not True and not _check_guards():
        return None
    if torch._C._len_torch_dispatch_stack():  # a mode (fake tensors...) decides for itself
        return None
    numbers: list[Any] = []  # (loops, and no comprehension's frame without keywords)
    try:
        for arg in args:
            numbers.append(_LISTED if type(arg) is list else _plain_key(arg))
        named = (
            tuple([(name, _plain_key(value)) for name, value in kwargs.items()]) if kwargs else ()
        )
    except TypeError:  # not a plain number: checked afresh each time
        return None
    grad = torch.is_grad_enabled()
    return (foreach, each, dtypes, grad, count, tuple(numbers), named, tuple(shared))


def _plain_key(value: Any) -> Any:
    """:func:`_number_key` for every dtype at once (a float's magnitude against each
    floating dtype's largest value); TypeError for what is not a number or None."""
    kind = type(value)
    if kind is float and math.isfinite(value):
        found = _FLOAT_KEYS.get(value)
        if found is None:
            if len(_FLOAT_KEYS) >= _MOST_PASSED:
                _FLOAT_KEYS.clear()
            signs = (value > 0) - (value < 0)
            found = _FLOAT_KEYS[value] = (float, signs, *[abs(value) <= m for m in _FLOAT_LIMITS])
        return found
    if value is None or kind in _NUMBERS or kind is str:
        return _number_key(value, torch.float32)
    raise TypeError(kind)


def _pieces(args: Sequence[Any]) -> list[torch.Tensor]:
    """The operands' pieces (those of the list operands), in order: the one list operand
    itself where there is one (``lerp_(other, weight)``: no copy of its pieces)."""
    lists = []
    for arg in args:
        if type(arg) is list:
            lists.append(arg)
    if len(lists) == 1:
        return lists[0]
    return [piece for arg in lists for piece in arg]


def _remember(key: tuple[Any, ...], leaves: list[torch.Tensor], args: Sequence[Any]) -> None:
    """Keeps a guard of the metadata of ``leaves`` and the operands' pieces, which passed
    (not if a tensor requires grad while autograd records: being a leaf decides there).
    It compares the sizes, not the strides, which decide nothing here: each value read
    is a memory access that the kernel may pay again (on a large tree, its data pushes
    the metadata out of the caches before the kernel comes to it)."""
    if key[3] and any(map(_requires_grad, leaves)):
        return
    tensors = [*leaves, *_pieces(args)]
    try:
        free = [[None] * tensor.dim() for tensor in tensors]
        guard = _TensorGuards(*tensors, dynamic_dims_sizes=None, dynamic_dims_strides=free)
    except Exception:  # noqa: BLE001 - tensors it cannot describe: checked each time
        return
    if len(_PASSED) >= _MOST_PASSED:
        _PASSED.clear()
    _PASSED[key] = guard


def remembered_kinds(
    leaves: list[torch.Tensor], read: Callable[[torch.Tensor], tuple[Any, ...]]
) -> frozenset[tuple[Any, ...]]:
    """``frozenset(map(read, leaves))``: each kind (class, dtype, ``requires_grad``, as
    ``read`` gives it) among ``leaves``, where they are all of one kind taken from a guard
    of the last such tensors (torch's, as :func:`first_refusal`'s: one C loop, about
    0.05 µs a tensor where the three reads take 0.15). The guard compares each tensor's
    class, dispatch keys, dtype, device, ``requires_grad`` and number of dims (not its
    sizes or strides, which the kind leaves out): tensors that pass it are of its kind.
    The caller rules out dispatch modes and transforms, as for the reads."""
    count = len(leaves)
    held = _KINDS.get(count)
    if held is not None:
        for position, (guard, kinds) in enumerate(held):
            if guard.check(*leaves):
                if position:
                    held.insert(0, held.pop(position))
                _KIND_BUILDS[count] = 0
                return kinds
    kinds = frozenset(map(read, leaves))
    builds = _KIND_BUILDS.get(count, 0)
    if len(kinds) != 1 or builds >= _MOST_KIND_BUILDS or not (_GUARDS_WORK or _check_guards()):
        return kinds
    try:
        free = [[None] * leaf.dim() for leaf in leaves]
        guard = _TensorGuards(*leaves, dynamic_dims_sizes=free, dynamic_dims_strides=free)
    except Exception:  # noqa: BLE001 - tensors it cannot describe: read each time
        return kinds
    if held is None:
        if len(_KINDS) >= _MOST_PASSED:
            _KINDS.clear()
            _KIND_BUILDS.clear()
        held = _KINDS[count] = []
    held.insert(0, (guard, kinds))
    del held[_MOST_KIND_GUARDS:]
    _KIND_BUILDS[count] = builds + 1
    return kinds


def _check_guards() -> bool:
    """Whether torch's tensor guard is there and tells apart what the verdicts depend
    on (checked once: it is a part of torch that compiled code uses, not a public one)."""
    global _GUARDS_WORK, _FLOAT_LIMITS, _TensorGuards
    if _GUARDS_WORK is None:
        kinds = [getattr(torch, name) for name in dir(torch)]
        floating = {kind for kind in kinds if isinstance(kind, torch.dtype)}
        _FLOAT_LIMITS = tuple(sorted({_largest(d) for d in floating if d.is_floating_point}))
        try:
            from torch._C._dynamo import guards  # (a C module: no torch._dynamo import)

            _TensorGuards = getattr(guards, "TensorGuards", None)
        except ImportError:  # a torch without it: every call checked in full
            _TensorGuards = None
        _GUARDS_WORK = _TensorGuards is not None and _guards_behave()
    return _GUARDS_WORK


def _guards_behave() -> bool:
    """Whether a guard of a (2, 3) float tensor, its strides left free, passes tensors
    of that shape and dtype (whatever their strides) and no other; and whether one with
    its sizes left free too passes another shape of two dims, and no other kind."""
    try:
        free = [[None, None]]
        guard = _TensorGuards(torch.zeros(2, 3), dynamic_dims_sizes=None, dynamic_dims_strides=free)
        others = [
            torch.zeros(3, 2),
            torch.zeros(2, 3, dtype=torch.float64),
            torch.zeros(2, 3, requires_grad=True),
            torch.nn.Parameter(torch.zeros(2, 3), requires_grad=False),
            torch.zeros(2, 3, 1),
        ]
        taken = (torch.ones(2, 3), torch.zeros(3, 2).t())
        unsized = _TensorGuards(
            torch.zeros(2, 3), dynamic_dims_sizes=free, dynamic_dims_strides=free
        )
        return (
            all(guard.check(t) is True for t in taken)
            and not any(map(guard.check, others))
            and unsized.check(torch.zeros(3, 2)) is True
            and not any(map(unsized.check, others[1:]))
        )
    except Exception:  # noqa: BLE001 - any other behaviour: not used
        return False


_GRAD_LEAF = (
    "it is a leaf tensor that requires grad (a parameter), which autograd does not let "
    "in-place math change while it records; write under torch.no_grad() or into "
    "params.data"
)


def _first_grad_leaf(leaves: list[torch.Tensor]) -> Refusal | None:
    """The first leaf autograd refuses to change in place (torch's "a leaf Variable that
    requires grad"), found before anything is written (the per-tensor kernels would
    stop half-way)."""
    if not any(map(_requires_grad, leaves)):
        return None
    for position, leaf in enumerate(leaves):
        if leaf.requires_grad and leaf.is_leaf:
            return Refusal(position, _GRAD_LEAF)
    return None


def _fits_into(piece: Sequence[int], shape: Sequence[int]) -> bool:
    """Whether a tensor of shape ``piece`` broadcasts into ``shape`` (torch's rules: the
    last dims lined up, sizes equal or 1, no dims added)."""
    if len(piece) > len(shape):
        return False
    return all(p == 1 or p == s for p, s in zip(reversed(piece), reversed(shape)))


def _first_misfit(leaves: list[torch.Tensor], pieces: list[Any]) -> Refusal | None:
    try:
        mine, theirs = list(map(_shape_of, leaves)), list(map(_shape_of, pieces))
    except RuntimeError:  # nested tensors of the strided layout have no shape
        return None
    if mine == theirs:
        return None
    for index, (shape, piece) in enumerate(zip(mine, theirs)):
        if shape != piece and not _fits_into(piece, shape):
            return Refusal(index, "shape", tuple(piece))
    return None


def _refused_dtypes(
    foreach: Callable[..., Any] | None,
    each: Callable[..., Any],
    leaves: list[torch.Tensor],
    columns: list[Any],
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
    seen: set[torch.dtype] | None = None,
) -> Refusal | None:
    """The first leaf whose combination of dtypes (its own, its operands') torch refuses.

    ``columns``: per list operand, ``_SAME`` (the leaves themselves), the dtype of all
    its pieces, or its pieces (read one by one; ``_SAME`` again where they match).
    ``seen``: the leaves' dtypes, already read (else read here)."""
    dtypes: list[torch.dtype] | None = None
    if any(type(column) is list for column in columns):
        dtypes = list(map(_dtype_of, leaves))
        for position, column in enumerate(columns):
            if type(column) is list:
                theirs = list(map(_dtype_of, column))
                columns[position] = _SAME if theirs == dtypes else theirs
    if any(type(column) is list for column in columns):  # dtypes that differ pairwise
        own = cast("list[torch.dtype]", dtypes)
        combinations = set(zip(own, *[own if c is _SAME else _per_leaf(c) for c in columns]))
    else:  # one combination per dtype of the leaves
        if dtypes is not None:
            seen = set(dtypes)
        elif seen is None:
            seen = set(map(_dtype_of, leaves))
        combinations = {
            (d, *[d if column is _SAME else column for column in columns]) for d in seen
        }
    device = leaves[0].device
    refused: dict[tuple[torch.dtype, ...], Refusal] = {}
    for combination in combinations:
        verdict = _verdict(foreach, each, device, combination, args, kwargs)
        if verdict is not None:
            refused[combination] = verdict
    if not refused:
        return None
    own = dtypes if dtypes is not None else list(map(_dtype_of, leaves))
    per_leaf = [own if column is _SAME else _per_leaf(column) for column in columns]
    for index, combination in enumerate(zip(own, *per_leaf)):
        if combination in refused:
            return refused[combination]._replace(position=index)
    return None  # not reached: each refused combination is some leaf's


def _per_leaf(column: Any) -> Any:
    """A column of dtypes as one per leaf (``_SAME`` is resolved by the caller)."""
    return column if type(column) is list else itertools.repeat(column)


def _verdict(
    foreach: Callable[..., Any] | None,
    each: Callable[..., Any],
    device: torch.device,
    combination: tuple[torch.dtype, ...],
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
) -> Refusal | None:
    """torch's refusal of the operation in place for these dtypes, or None."""
    dtype = combination[0]
    key = (
        foreach,
        each,
        device,
        combination,
        tuple(None if type(arg) is list else _number_key(arg, dtype) for arg in args),
        tuple((name, _number_key(value, dtype)) for name, value in kwargs.items()),
    )
    try:
        return _VERDICTS[key]
    except KeyError:
        pass
    except TypeError:  # an argument that cannot be a key: decided afresh
        return _probe(foreach, each, device, combination, args, kwargs)
    verdict = _probe(foreach, each, device, combination, args, kwargs)
    if not torch._C._len_torch_dispatch_stack():  # a mode (fake tensors...) decides for itself
        if len(_VERDICTS) >= _MOST_VERDICTS:
            _VERDICTS.clear()
        _VERDICTS[key] = verdict
    return verdict


def _probe(
    foreach: Callable[..., Any] | None,
    each: Callable[..., Any],
    device: torch.device,
    combination: tuple[torch.dtype, ...],
    args: Sequence[Any],
    kwargs: Mapping[str, Any],
) -> Refusal | None:
    """The operation run in place on one-element tensors of these dtypes, as
    ``run_leafwise`` runs it (the fused kernel where it takes the arguments)."""
    try:
        dtypes = iter(combination[1:])
        leaf = torch.ones(1, dtype=combination[0], device=device)
        probes = [
            [torch.ones(1, dtype=next(dtypes), device=device)] if type(arg) is list else arg
            for arg in args
        ]
    except (RuntimeError, TypeError):  # a dtype torch cannot even fill: left to the run
        return None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            if foreach is not None:
                try:
                    foreach([leaf], *probes, **kwargs)
                    return None
                except TypeError:  # no fused kernel for these arguments: `each`, as run
                    pass
            columns = [probe[0] if type(probe) is list else probe for probe in probes]
            each(leaf, *columns, **kwargs)
        except RuntimeError as error:  # NotImplementedError too: a kernel a dtype lacks
            reason = str(error).split("\n", 1)[0]
            return Refusal(0, reason, unsupported=isinstance(error, NotImplementedError))
        except TypeError as error:  # the arguments themselves: the run raises it first
            return Refusal(0, str(error).split("\n", 1)[0], arguments=True)
        except Exception:  # noqa: BLE001 - not a refusal of a dtype: the run raises it
            return None
    return None


def _number_key(value: Any, dtype: torch.dtype) -> Any:
    """What torch's verdict on a number argument can depend on: its type, and the sign
    and magnitude class that decide whether it overflows ``dtype`` (or is a negative
    power, a zero divisor); anything else that is not a number, as it is."""
    kind = type(value)
    if kind is int:
        return (int, (value > 0) - (value < 0), value.bit_length(), (~value).bit_length())
    if kind is float:
        if not math.isfinite(value):
            return (float, repr(value))
        return (float, (value > 0) - (value < 0), abs(value) <= _largest(dtype))
    if kind in _NUMBERS:
        return (kind, value) if kind is bool else (kind,)
    return value


def _largest(dtype: torch.dtype) -> float:
    """The largest finite value of ``dtype``."""
    largest = _LARGEST.get(dtype)
    if largest is None:
        if dtype is torch.bool:
            largest = 1.0
        else:
            try:
                if dtype.is_floating_point or dtype.is_complex:
                    largest = torch.finfo(dtype).max
                else:
                    largest = float(torch.iinfo(dtype).max)
            except (TypeError, NotImplementedError):  # quantized, packed: no range read
                largest = math.inf
        _LARGEST[dtype] = largest
    return largest


def as_over_dims(leaves: list[torch.Tensor], args: list[Any], operands: Sequence[Any]) -> None:
    """A 0-d tensor operand (``x.minimum_(torch.tensor(-1))``) promoted with a 0-d tensor
    as with the others: torch lets a 0-d operand decide the dtype against a 0-d tensor
    but not against one with dims, so the 0-d tensors of a collection would compute in
    another dtype than the rest (a uint8 ``8`` with ``-1``: ``min`` -1, written back as
    255, where a uint8 ``[8]`` reads -1 as 255 first and keeps 8). As the peer's fused
    kernels read it (as a number of each tensor's dtype): where the tensor's dtype would
    win against the operand had it dims, the operand is cast to it for that tensor (in
    ``args``, each 0-d operand's list of pieces)."""
    for position, operand in enumerate(operands):
        if not isinstance(operand, torch.Tensor) or operand.ndim:
            continue
        pieces = gathered = args[position]
        for i, leaf in enumerate(leaves):
            piece = pieces[i]
            if leaf.ndim or piece.ndim or piece.dtype == leaf.dtype:
                continue
            dtype = torch.result_type(leaf.expand(1), piece)
            if dtype != torch.result_type(leaf, piece):
                if pieces is gathered:  # (the gathered list, copied once)
                    pieces = args[position] = list(pieces)
                pieces[i] = piece.to(dtype)
