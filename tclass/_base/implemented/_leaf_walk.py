"""Element-wise work on every tensor of a collection at once: the shared machinery.

A collection's tensors are *gathered* into one flat list (depth first, in key order),
together with the piece of each operand that goes with every tensor; one fused
multi-tensor kernel (``torch._foreach_*``) works on the whole list where torch has one for
the arguments, else the torch function runs tensor by tensor; the results are put back
into a collection of the same structure (*rebuilt*): :class:`LeafWalkOps`, whose walk a
lazy stack (member by member), a record (its storage) and a Python-value node (kept)
override; the operation runs over the gathered tensors in ``_leaf_kernels.py``. The
methods built on it are in ``_math.py``, ``_operators.py``, ``_reductions.py`` and
``_casts.py``.

Operands are numbers (given to the kernel as they are), tensors and collections:

* in ``"batch"`` alignment (arithmetic, comparisons) a tensor covers the batch dims the
  way torch broadcasts shapes: its dims line up with the *last* batch dims, and it is
  padded with size-1 dims on the right to reach over each tensor's feature dims; one with
  more dims than the batch adds batch dims in front, as torch does;
* in ``"mask"`` alignment (``where``, ``masked_fill``) it covers the *leading* batch dims;
* a collection must hold the same keys (Python values aside), nested alike; its batch
  size broadcasts with this one's.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Literal, TypeAlias, TypeVar, cast

import torch
from typing_extensions import Self

from tclass._base.implemented._collection import TensorCollection
from tclass._base.implemented._inplace import Refusal, as_over_dims, first_refusal
from tclass._base.implemented._leaf_kernels import (
    mismatched_operands,
    run_flat,
    run_guarded,
    run_leafwise,
)
from tclass._base.implemented._operand_checks import (
    broadcast_batch,
    check_mask,
    check_same_keys,
    grown_in_place,
    mismatched_entry,
    refuse_operand,
)
from tclass._base.implemented._scalar_operand import number_kinds
from tclass._core._batch import format_shape
from tclass._core._records import is_record
from tclass._core._spec import TensorSpec
from tclass._core._tracing import tracing
from tclass.errors import (
    InPlaceKernelError,
    InPlaceWriteError,
    OperandError,
    ShapeError,
    TclassError,
)

__all__ = [
    "Alignment",
    "Check",
    "Gather",
    "LeafWalkOps",
    "Resize",
    "as_scalar",
    "FlatSplit",
    "check_same_keys",
    "flat_split",
    "mismatched_entry",
    "pad_operand",
    "refuse_operand",
    "writing_out_of",
]

Alignment: TypeAlias = Literal["batch", "mask"]
Check: TypeAlias = Literal["all", "shapes", "none"]
"""What an in-place operation checks before writing: dtypes and shapes, shapes, nothing."""
Resize: TypeAlias = Callable[[torch.Size], torch.Size]
"""Maps a node's batch size before an operation to its batch size after it."""

# Inside ``writing_out_of("where")``: the public operation whose ``out=`` the writes fill.
_OUT_OF: ContextVar[str | None] = ContextVar("tclass_out_of", default=None)


@contextmanager
def writing_out_of(operation: str) -> Iterator[None]:
    """In-place writes done inside it (``out.copy_(result)``) are named in messages as
    the ``out=`` of ``operation`` the user called: ``Frame.where(..., out=...)``."""
    token = _OUT_OF.set(operation)
    try:
        yield
    finally:
        _OUT_OF.reset(token)


def _out_of(operation: str) -> str:
    """``operation``, or the call whose ``out=`` it writes (see :func:`writing_out_of`)."""
    out_of = _OUT_OF.get()
    return operation if out_of is None else f"{out_of}(..., out=...)"


_Tensor = torch.Tensor
_PYTHON_NUMBERS = (int, float, bool, complex)
_PLAIN = frozenset({torch.Tensor})  # entries of exactly this type take the list fast paths
# `_only_tensors(map(type, values))`: whether every value is exactly a tensor, stopping
# at the first that is not, and building no set (the checks run once per node per walk)
_only_tensors = _PLAIN.issuperset
_NO_KWARGS: dict[str, Any] = {}
_NOTHING: Iterator[Any] = iter(())  # the results a Python-value node is rebuilt from
_is_compiling = torch.compiler.is_compiling
# (the loops below test `value.__class__ is _Tensor` first: isinstance() with torch.Tensor
# goes through its metaclass's check, several times slower, and they run per tensor; a
# nested collection is ruled out by isinstance() with TensorCollection, a plain class, before)
_Collection: type[Any] = TensorCollection  # (that test leaves the entry's type to the walk)


class Gather:
    """What a walk collects: the tensors in walk order, for each tensor operand the piece
    aligned with each tensor, and (for ``cast_filter``) each tensor's full key.

    ``subset``: a collection operand may hold only some of the keys (``copy_``); only
    the tensors it has a counterpart for are gathered. ``extra``: a collection operand
    may hold more keys than the collection, which are not read (the peer's in-place
    operations, ``lerp``, ``addcmul``, ``addcdiv`` and ``clamp`` read the collection's
    own keys from it). ``values``: also collect each
    Python-value node with the operands' counterparts of it (``where`` picks values).
    ``guard``: an in-place write's walk, in which each record whose fields bound their
    values (``Spec(ge=0)``...) lists those fields' tensors in ``guards`` (see
    :func:`run_guarded`). ``on_data``: the walk of ``zero_``, which a node whose own
    ``zero_`` writes its tensors' ``.data`` (a TensorDictParams) joins with those, as
    the peer's ``zero_`` calls each nested collection's own. ``write_back``: an
    in-place write's walk, in which a nested node whose reads are copies (a lazy stack
    of a file's rows) gives tensors read into memory and lists in ``written_back`` what
    writes them into the file once the kernels have run.
    """

    __slots__ = (
        "alignment", "extra", "guards", "leaves", "on_data", "operands", "paths", "subset",
        "values", "written_back",
    )  # fmt: skip

    def __init__(
        self,
        operands: int = 0,
        alignment: Alignment = "batch",
        *,
        paths: bool = False,
        subset: bool = False,
        extra: bool = False,
        values: bool = False,
        guard: bool = False,
        on_data: bool = False,
        write_back: bool = False,
    ) -> None:
        self.leaves: list[torch.Tensor] = []
        self.on_data = on_data
        self.written_back: list[Callable[[], None]] | None = [] if write_back else None
        # (position in leaves, where: "Owner.field", field, its spec) per bounded tensor
        self.guards: list[tuple[int, str, str, TensorSpec]] | None = [] if guard else None
        # (most operations have no operand or one: no comprehension's frame for those)
        self.operands: list[list[Any]] = (
            [[] for _ in range(operands)] if operands > 1 else [[]] if operands else []
        )
        self.paths: list[tuple[str, ...]] | None = [] if paths else None
        self.values: list[tuple[Any, tuple[Any, ...]]] | None = [] if values else None
        self.alignment = alignment
        self.subset = subset
        self.extra = extra

    @property
    def in_place(self) -> bool:
        """Whether this is an in-place write's walk: the tensors gathered are the ones
        written into (a view reading its entries through another collection gathers
        that one's, see ``TypedTensorDict.from_tensordict``)."""
        return self.written_back is not None


def as_scalar(value: object) -> int | float | bool | complex | None:
    """``value`` as a Python number if it is a number (numpy scalars included), else None."""
    if isinstance(value, _PYTHON_NUMBERS):
        return value
    if isinstance(value, numbers.Number) and hasattr(value, "item"):
        item = value.item()
        if isinstance(item, _PYTHON_NUMBERS):
            return item
    return None


def pad_operand(
    operand: torch.Tensor,
    leaf: torch.Tensor,
    batch_dims: int,
    alignment: Alignment,
    path: tuple[str, ...] = (),
) -> torch.Tensor:
    """``operand`` reshaped (a view) to broadcast against ``leaf`` as ``alignment`` says
    (``path``: the leaf's key, for the error of a mask with more dims than the leaf)."""
    extra = leaf.ndim - (batch_dims if alignment == "batch" else operand.ndim)
    if extra <= 0 or operand.ndim == 0:  # a 0-dim tensor stays one (torch's type promotion)
        if extra < 0 and alignment == "mask" and operand.ndim:
            raise _mask_past_leaf(operand, leaf, path)
        return operand
    return operand.reshape(operand.shape + (1,) * extra)


def _mask_past_leaf(mask: torch.Tensor, leaf: torch.Tensor, path: tuple[str, ...]) -> ShapeError:
    """The error for a mask (``where``, ``masked_fill``) with more dims than an entry: it
    covers an entry's leading dims, so torch would broadcast the entry to a new shape (the
    peer's ``expand_as_right`` refuses it too)."""
    key = path[0] if len(path) == 1 else path
    msg = (
        f"a mask (or tensor operand of where) of shape {format_shape(mask.shape)} has more "
        f"dims than the entry {key!r} of shape {format_shape(leaf.shape)}: a mask covers "
        "the leading dims of each entry "
        "(the batch dims first); give a mask with at most as many dims as every entry"
    )
    return ShapeError(msg)


class LeafWalkOps(TensorCollection):
    """The walk every element-wise operation goes through: gather the tensors of a
    collection's tree (with their operands), run the kernels, rebuild the tree."""

    __slots__ = ()

    # --- the walk: gather the tensors, rebuild the tree ------------------------------------

    def _walk_leaves(self) -> list[torch.Tensor]:
        """This tree's tensors in walk order, as :meth:`_collect` gathers them with no
        operand (a TensorDict holding only tensors gives them without a walk)."""
        gather = Gather()
        self._collect(gather, (), len(self.batch_size), ())
        return gather.leaves

    def _collect(
        self, into: Gather, operands: tuple[Any, ...], batch_dims: int, prefix: tuple[str, ...]
    ) -> None:
        """Appends this tree's tensors (and each operand's matching pieces) to ``into``.

        ``batch_dims`` is the batch dims of the collection the walk started from (tensor
        operands are aligned with those).
        """
        mine = self._entries()
        plain = _only_tensors(map(type, mine.values()))  # only tensors here: whole lists
        if into.paths is None and into.values is None:
            if not operands:
                if plain:
                    into.leaves.extend(mine.values())  # type: ignore[arg-type]
                    return
                for value in mine.values():
                    if value.__class__ is _Tensor or (
                        not isinstance(value, _Collection) and isinstance(value, _Tensor)
                    ):
                        into.leaves.append(value)
                    elif not value._is_value_node:
                        value._collect(into, operands, batch_dims, prefix)
                return
            if len(operands) == 1 and not into.subset:
                other = operands[0]
                if isinstance(other, TensorCollection):  # td * td: the common case
                    theirs = other._entries()
                    if plain and len(mine) == len(theirs):  # the same keys, if all found
                        try:
                            pieces = list(map(theirs.__getitem__, mine))
                        except KeyError:
                            pieces = []
                        if pieces and _only_tensors(map(type, pieces)):
                            into.leaves.extend(mine.values())  # type: ignore[arg-type]
                            into.operands[0].extend(pieces)
                            return
                    if mine.keys() != theirs.keys():
                        check_same_keys(mine, theirs, prefix, False, extra=into.extra)
                    self._collect_pairs(mine, theirs, into, batch_dims, prefix)
                    return
        self._collect_entries(mine, into, operands, batch_dims, prefix)

    def _collect_pairs(
        self,
        mine: Mapping[str, Any],
        theirs: Mapping[str, Any],
        into: Gather,
        batch_dims: int,
        prefix: tuple[str, ...],
    ) -> None:
        """:meth:`_collect` with one collection operand (keys already checked), entry by
        entry: a record's fields beside its Python values, nested collections."""
        leaves, pieces = into.leaves, into.operands[0]
        for key, value in mine.items():
            if value.__class__ is _Tensor or (
                not isinstance(value, _Collection) and isinstance(value, _Tensor)
            ):
                piece = theirs[key]
                if piece.__class__ is not _Tensor and not isinstance(piece, _Tensor):
                    raise mismatched_entry(key, prefix, value, piece)
                leaves.append(value)
                pieces.append(piece)
            elif not value._is_value_node:
                # (_sub_operand's check, inline: this runs per node; a key the operand
                # lacks is a collection holding nothing, checked: itself stands for it)
                sub = theirs.get(key, value)
                if not isinstance(sub, TensorCollection) or sub._is_value_node:
                    raise mismatched_entry(key, prefix, "collection", sub)
                value._collect(into, (sub,), batch_dims, prefix + (key,))

    def _collect_entries(
        self,
        mine: Mapping[str, Any],
        into: Gather,
        operands: tuple[Any, ...],
        batch_dims: int,
        prefix: tuple[str, ...],
    ) -> None:
        """:meth:`_collect` entry by entry (nested collections, Python values, tensor
        operands to align, keys to record)."""
        theirs = [op._entries() if isinstance(op, TensorCollection) else None for op in operands]
        for entries in theirs:
            if entries is not None:
                check_same_keys(mine, entries, prefix, into.subset, extra=into.extra)
        source = theirs[0] if into.subset else None
        leaves, paths, alignment = into.leaves, into.paths, into.alignment
        # One (pieces, operand, entries) column per operand: this loop runs per tensor.
        columns = list(zip(into.operands, operands, theirs))
        for key, value in mine.items():
            if source is not None and key not in source:
                continue  # copy_ from a source holding some of the keys
            if value.__class__ is _Tensor or (
                not isinstance(value, _Collection) and isinstance(value, _Tensor)
            ):
                leaves.append(value)
                if paths is not None:
                    paths.append(prefix + (key,))
                for pieces, operand, entries in columns:
                    if entries is None:  # a tensor over the batch dims
                        padded = pad_operand(operand, value, batch_dims, alignment, prefix + (key,))
                        pieces.append(padded)
                        continue
                    piece = entries[key]
                    if piece.__class__ is not _Tensor and not isinstance(piece, _Tensor):
                        raise mismatched_entry(key, prefix, value, piece)
                    pieces.append(piece)
            elif not value._is_value_node:
                subs = tuple(
                    [_sub_operand(op, e, key, prefix, value) for op, e in zip(operands, theirs)]
                )
                value._collect(into, subs, batch_dims, prefix + (key,))
            elif into.values is not None:
                counterparts = tuple(
                    op if entries is None else entries.get(key)
                    for op, entries in zip(operands, theirs)
                )
                into.values.append((value, counterparts))

    def _rebuilt(
        self,
        results: Iterator[torch.Tensor],
        resize: Resize | None,
        values: Iterator[Any] | None = None,
    ) -> Self:
        """A collection shaped like this one holding the next ``results`` in walk order
        (the order of :meth:`_collect`); ``resize`` gives each node's new batch size;
        ``values``, if given, the new Python-value nodes in walk order."""
        mine = self._entries()
        if _only_tensors(map(type, mine.values())):  # only tensors here: one zip
            entries: dict[str, Any] = dict(zip(mine, results))  # mine first: stops in time
        else:
            entries = self._rebuilt_entries(mine, results, resize, values)
        batch = self.batch_size if resize is None else resize(self.batch_size)
        return self._new_like(entries, batch, self.device)

    def _rebuilt_entries(
        self,
        mine: Mapping[str, Any],
        results: Iterator[torch.Tensor],
        resize: Resize | None,
        values: Iterator[Any] | None,
    ) -> dict[str, Any]:
        entries: dict[str, Any] = {}
        for key, value in mine.items():
            if value.__class__ is _Tensor or (
                not isinstance(value, _Collection) and isinstance(value, _Tensor)
            ):
                entries[key] = next(results)
            elif values is not None and value._is_value_node:
                entries[key] = next(values)
            else:
                entries[key] = value._rebuilt(results, resize, values)
        return entries

    # --- the two helpers -----------------------------------------------------------------

    def _pointwise(
        self,
        foreach: Callable[..., Any] | None,
        each: Callable[..., Any],
        operands: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
        *,
        alignment: Alignment = "batch",
        operation: str = "",
        lock: bool = True,
        arithmetic: bool = False,
        values: Callable[..., Any] | None = None,
        drop_empty: bool = False,
        without_tensors: bool = False,
        extra: bool = False,
    ) -> Self:
        """A new collection holding ``each(tensor, *operand_pieces, **kwargs)`` for every
        tensor, computed by ``foreach`` on all of them at once where it takes the arguments.

        ``lock``: the result is locked when this collection is (the peer's rule for
        arithmetic and casts; comparisons give unlocked masks), for ``arithmetic`` (the
        peer's pointwise math) only when it holds a tensor and no operand is a tensor with
        dims. ``values``, if given,
        makes each Python-value node ``values(node, *counterparts)``; else nodes are kept.
        ``drop_empty``: binary arithmetic, whose result leaves out the nested collections
        that hold nothing (:func:`without_empty` with the one operand; the flat forms
        build no such collection); ``without_tensors``: see :func:`without_empty`;
        ``extra``: see :class:`Gather`.
        """
        try:
            flat = None
            base = self  # (expanded below where the operands broadcast the batch past itself)
            if values is None and alignment == "batch" and len(operands) < 2:
                flat = self._flat_pointwise(foreach, each, operands, kwargs)
            if flat is not None:
                out, leaves = flat
                drop_empty = False  # (the flat forms give up on a collection holding nothing)
            else:
                base = self._broadcast_for(operands, alignment)
                gather, args, batch = base._gathered(
                    operands, alignment, operation, each, values=values is not None, extra=extra
                )
                leaves = gather.leaves
                results = run_leafwise(foreach, each, leaves, args, kwargs or _NO_KWARGS)
                own = base.batch_size
                resize = None if batch == own else _grown(batch, len(own))
                nodes = None
                if values is not None and gather.values is not None:
                    nodes = iter(
                        [values(node, *_placed(operands, walked)) for node, walked in gather.values]
                    )
                out = base._rebuilt(iter(results), resize, nodes)
        except RuntimeError as error:  # entries whose shapes do not broadcast: named
            problem = mismatched_operands(self, operands, each, error)
            if problem is None:
                raise
            raise problem from error
        # (the lock state first: an unlocked collection, the common case, asks no more)
        if (
            lock
            and self._lock_state()
            and not (arithmetic and _unlocks(base, leaves, operands, without_tensors))
        ):
            out.lock_()
        if not drop_empty:
            return out
        return without_empty(out, operands[0], without_tensors=without_tensors)

    def _broadcast_for(self, operands: tuple[Any, ...], alignment: Alignment) -> Self:
        """This collection, or, where its operands broadcast its batch size to a larger
        one (a tensor with more dims than the batch, size-1 batch dims against larger
        ones), this collection expanded to that batch size, as the peer expands it
        before working on it: the old dims keep their names, Python values become one
        per element, lazy stacks become their dense expansion (each member of a lazy
        stack then needs no operand reaching past the batch)."""
        own = self.batch_size
        batch = _operands_batch(own, operands, alignment)
        return self if batch == own else cast(Self, cast(Any, self).expand(batch))  # (ShapeOps)

    def _gather_tree(self, into: Gather, other: Any) -> bool:
        """Gathers this tree's tensors into ``into`` (with ``other``, a collection operand
        or a tensor, its pieces) as :meth:`_collect` does, by a walk of this kind of
        collection's own that is faster than the general one, where it has one and it
        applies: True. False, with nothing gathered, where the general walk is needed
        (which also raises what is wrong)."""
        return False

    def _flat_entries(self) -> Mapping[str, Any] | None:
        """This node's entries, where its walk is those entries as they are and
        :meth:`_new_like` rebuilds it (a TensorDict, a record over one); else None (the
        walk of :meth:`_collect` and :meth:`_rebuilt` is needed)."""
        return None

    def _flat_pointwise(
        self,
        foreach: Callable[..., Any] | None,
        each: Callable[..., Any],
        operands: tuple[Any, ...],
        kwargs: dict[str, Any] | None,
    ) -> tuple[Self, list[torch.Tensor]] | None:
        """:meth:`_pointwise` without the walk, for a node holding only tensors and
        Python values (a record with a ``str`` field) with no operand, a Python number,
        or one such node holding the same keys over the same batch size (or over none):
        the result and the tensors it was computed from. None where this does not apply
        (the walk then does the work, and raises what is wrong)."""
        mine = self._flat_entries()
        if mine is None:
            return None
        theirs = None
        traced = False  # under torch.compile, with an operand over a batch size
        batch = self.batch_size
        if operands:
            other = operands[0]
            if isinstance(other, LeafWalkOps):
                theirs = other._flat_entries()
                if theirs is None or len(theirs) != len(mine):  # (the loop finds each key)
                    return None
                shape = other.batch_size
                if shape:  # over another batch size: a broadcast, which the walk resizes
                    # Traced, the sizes are compared on the leaves below: batch sizes
                    # compared as ints would be two more inputs of the graph.
                    traced = tracing()
                    if len(shape) != len(batch) if traced else shape != batch:
                        return None
            elif type(other) not in _PYTHON_NUMBERS:  # (numpy scalars: the walk's)
                return None
        split = flat_split(mine, theirs)
        if split is None:
            return None
        leaves, pieces, keys, entries = split
        if traced and pieces and pieces[0].shape[: len(batch)] != leaves[0].shape[: len(batch)]:
            return None
        results = run_flat(foreach, each, leaves, operands if theirs is None else (pieces,), kwargs)
        entries.update(zip(keys, results))
        return self._new_like(entries, batch, self.device), leaves

    def _pointwise_(
        self,
        foreach: Callable[..., Any] | None,
        each: Callable[..., Any],
        operands: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
        *,
        alignment: Alignment = "batch",
        operation: str = "",
        subset: bool = False,
        check: Check = "all",
        writes: bool = False,
        on_data: bool = False,
        promote_0d: bool = False,
    ) -> Self:
        """Writes ``each(tensor, *operand_pieces, **kwargs)`` into every tensor, with the
        in-place ``foreach`` kernel on all of them at once where it takes the arguments.

        Works on locked and memory-mapped collections: the data is written, no entry is
        replaced. All or nothing: if torch would refuse one tensor (a result that does not
        fit its dtype, an operand that does not broadcast into its shape), nothing is
        written and InPlaceWriteError names it. ``check``: ``"shapes"`` for operations
        that take every dtype (``copy_`` casts), ``"none"`` for those that take any
        tensor (``zero_``). A record's fields whose spec bounds their values are
        written only once their results are checked (:func:`run_guarded`; ``writes``:
        the operand's values are written as they are, ``copy_``). ``on_data``: see
        :class:`Gather` (``zero_``). ``promote_0d``: a 0-d tensor operand promotes with
        a 0-d tensor as torch's ``t.clamp_(torch.tensor(-300))`` does (the clamps), where
        the others read it as a tensor with dims does (see :func:`as_over_dims`).
        """
        if alignment == "batch" and check == "all" and not (subset or writes or on_data):
            if not promote_0d and self._tree_in_place(foreach, each, operands, kwargs, operation):
                return self
        own = self.batch_size
        batch = _operands_batch(own, operands, alignment)
        if batch != own and check != "none" and not _is_compiling() and self._walk_leaves():
            # (before the walk, which cuts the operands to the batch: compiling, traced)
            name = _out_of(operation or getattr(each, "__name__", "in-place operation"))
            raise grown_in_place(name, own, batch)
        gather, args, _ = self._gathered(
            operands,
            alignment,
            operation,
            each,
            subset=subset,
            extra=True,
            guard=True,
            on_data=on_data,
        )
        kwargs = kwargs or _NO_KWARGS
        if alignment == "batch" and check == "all" and not promote_0d:
            as_over_dims(gather.leaves, args, operands)
        # With a number for a routed kernel, the tensors' kinds are read once, for the
        # check and the route both (see number_kinds); not for the guarded run's subsets.
        kinds = None if gather.guards else number_kinds(foreach, gather.leaves, args, kwargs)
        if check != "none" and gather.leaves and not _is_compiling():  # compiling: traced
            refusal = first_refusal(
                foreach,
                each,
                gather.leaves,
                args,
                [_shared_dtype(op, alignment) for op in operands],
                kwargs,
                dtypes=check == "all",
                kinds=kinds,
            )
            if refusal is not None:
                name = _out_of(operation or getattr(each, "__name__", "in-place operation"))
                raise self._refused(refusal, gather.leaves, operands, alignment, subset, name)
        if gather.guards:
            what = self._operation_text(operation or getattr(each, "__name__", "?"))
            run_guarded(foreach, each, gather, args, kwargs, writes, what)
        else:
            run_leafwise(foreach, each, gather.leaves, args, kwargs, kinds)
        for write in gather.written_back or ():  # nested nodes over a file: their results
            write()
        return self

    def _tree_in_place(
        self,
        foreach: Callable[..., Any] | None,
        each: Callable[..., Any],
        operands: tuple[Any, ...],
        kwargs: dict[str, Any] | None,
        operation: str,
    ) -> bool:
        """:meth:`_pointwise_`'s common case in fewer steps: a tree its class gathers in one
        pass (:meth:`_gather_tree`), with numbers (``int``, ``float``) and at most one
        collection of its class over the same batch size (``lerp_``, the soft update). The
        same walk, check and kernels, without the general path's sorting of the operands
        (on large trees each step is paid with cold caches). False, with nothing written,
        where the general path is needed; raises what it would."""
        if _is_compiling() or type(self)._gather_tree is _NO_TREE_WALK:
            return False
        position = -1  # the collection operand's
        for i, operand in enumerate(operands):
            kind = operand.__class__
            if kind is float or kind is int:
                continue
            if position >= 0 or kind is not self.__class__:
                return False
            position = i
        other = None if position < 0 else operands[position]
        if other is not None and other.batch_size != self.batch_size:
            return False  # (a broadcast: the general path's to refuse or allow)
        gather = Gather(int(position >= 0), extra=True, guard=True, write_back=True)
        if not self._gather_tree(gather, other) or not gather.leaves:
            return False
        if gather.guards or gather.written_back:  # (a record's bounded fields, a file's rows)
            return False
        leaves, args, kwargs = gather.leaves, list(operands), kwargs or _NO_KWARGS
        if other is not None:
            args[position] = gather.operands[0]
        kinds = number_kinds(foreach, leaves, args, kwargs)
        refusal = first_refusal(
            foreach, each, leaves, args, [None] * len(args), kwargs, kinds=kinds
        )
        if refusal is not None:
            name = _out_of(operation or getattr(each, "__name__", "in-place operation"))
            raise self._refused(refusal, leaves, operands, "batch", False, name)
        run_leafwise(foreach, each, leaves, args, kwargs, kinds)
        return True

    def _operation_text(self, operation: str) -> str:
        """An in-place operation as the caller spelled it: ``Frame.add_(...)``,
        ``Frame += ...``."""
        owner = type(self).__name__
        out_of = _OUT_OF.get()
        if out_of is not None:
            return f"{owner}.{out_of}(..., out=...)"
        if operation.isidentifier():
            return f"{owner}.{operation}(...)"
        return f"{owner} {operation} ..."

    def _refused(
        self,
        refusal: Refusal,
        leaves: list[torch.Tensor],
        operands: tuple[Any, ...],
        alignment: Alignment,
        subset: bool,
        name: str,
    ) -> TclassError:
        """The error for an in-place operation torch would refuse on one tensor, naming
        its key (the walk redone, recording keys: only on this path); an
        :class:`OperandError` for arguments torch refuses whatever the tensors."""
        if refusal.arguments:
            msg = (
                f"{name}: torch refuses these arguments ({refusal.reason}); nothing was "
                "changed. Give the operands the tensor method takes (tensors or collections "
                "where it takes tensors)"
            )
            return OperandError(msg)
        walked = tuple(op for op in operands if isinstance(op, (TensorCollection, _Tensor)))
        # (the in-place walk again, recording keys: the same tensors in the same order)
        into = Gather(
            len(walked), alignment, paths=True, subset=subset, extra=True, write_back=True
        )
        self._collect(into, walked, len(self.batch_size), ())
        path = cast("list[tuple[str, ...]]", into.paths)[refusal.position]
        key = path[0] if len(path) == 1 else path
        leaf = leaves[refusal.position]
        if refusal.operand_shape is not None:
            msg = (
                f"{name}: the operand's entry {key!r} of shape "
                f"{format_shape(refusal.operand_shape)} does not broadcast into the shape "
                f"{format_shape(leaf.shape)} of the entry it would be written into; nothing "
                "was changed. Give an operand whose entries broadcast into these shapes, or "
                "use the out-of-place form"
            )
        else:
            msg = (
                f"{name}: torch cannot write into the entry {key!r} ({leaf.dtype}, shape "
                f"{format_shape(leaf.shape)}) in place: {refusal.reason}. Nothing was changed "
                "(every entry is checked before any is written): cast that entry first, leave "
                f"it out (td.exclude({key!r})), or use the out-of-place form"
            )
        return (InPlaceKernelError if refusal.unsupported else InPlaceWriteError)(msg)

    def _gathered(
        self,
        operands: tuple[Any, ...],
        alignment: Alignment,
        operation: str,
        each: Callable[..., Any],
        *,
        subset: bool = False,
        extra: bool = False,
        values: bool = False,
        guard: bool = False,
        on_data: bool = False,
    ) -> tuple[Gather, list[Any], torch.Size]:
        """The tensors gathered with their operands' pieces, the arguments for the kernels
        (each operand's list of pieces, or the number itself) and the batch size the
        operands broadcast this one to."""
        own = batch = self.batch_size
        walked: list[Any] = []
        for operand in operands:
            if isinstance(operand, (TensorCollection, _Tensor)):
                if alignment == "batch" and operand.shape != batch:
                    what = "a tensor of shape" if isinstance(operand, _Tensor) else "a batch size"
                    batch = broadcast_batch(batch, operand.shape, what)
                elif alignment == "mask" and isinstance(operand, _Tensor) and not operand.is_nested:
                    check_mask(operation, operand.shape, own)
                walked.append(operand)
            elif operand is not None and as_scalar(operand) is None:
                name = _out_of(operation or getattr(each, "__name__", "this operation"))
                raise refuse_operand(name, operand)
        gather = Gather(
            len(walked),
            alignment,
            subset=subset,
            extra=extra,
            values=values,
            guard=guard,
            on_data=on_data,
            write_back=guard,
        )
        if (
            alignment != "batch"
            or subset
            or values
            or on_data
            or len(walked) > 1
            or not self._gather_tree(gather, walked[0] if walked else None)
        ):
            self._collect(gather, tuple(walked), len(own), ())
        if not walked:
            return gather, [as_scalar(op) for op in operands], batch
        pieces = iter(gather.operands)
        args = [
            next(pieces) if isinstance(op, (TensorCollection, _Tensor)) else as_scalar(op)
            for op in operands
        ]
        return gather, args, batch


_NO_TREE_WALK = LeafWalkOps._gather_tree  # (a class without a walk of its own)


def _operands_batch(
    batch: torch.Size, operands: tuple[Any, ...], alignment: Alignment
) -> torch.Size:
    """The batch size ``batch`` broadcast with each tensor and collection operand's shape
    (``"batch"`` alignment; a mask's leaves it as it is)."""
    if alignment != "batch":
        return batch
    for operand in operands:
        if isinstance(operand, (TensorCollection, _Tensor)) and operand.shape != batch:
            what = "a tensor of shape" if isinstance(operand, _Tensor) else "a batch size"
            batch = broadcast_batch(batch, operand.shape, what)
    return batch


def _sub_operand(operand: Any, entries: Any, key: str, prefix: tuple[str, ...], value: Any) -> Any:
    """The part of a walked operand that goes with the nested collection at ``key``."""
    if entries is None:
        return operand
    part = entries.get(key, value)  # (missing: ``value`` holds nothing, check_same_keys)
    if not isinstance(part, TensorCollection) or getattr(part, "_is_value_node", False):
        raise mismatched_entry(key, prefix, "collection", part)
    return part


def _shared_dtype(operand: Any, alignment: Alignment) -> torch.dtype | None:
    """The dtype of every piece of a tensor operand over the batch dims, whose shape the
    batch size already checked (None: each piece is checked, as a collection's are)."""
    if isinstance(operand, _Tensor) and alignment == "batch":
        return operand.dtype
    return None


def _placed(operands: tuple[Any, ...], walked: tuple[Any, ...]) -> list[Any]:
    """The operands with each walked one (tensor, collection) replaced by its piece."""
    pieces = iter(walked)
    return [next(pieces) if isinstance(op, (TensorCollection, _Tensor)) else op for op in operands]


def _grown(batch: torch.Size, old_dims: int) -> Resize:
    """The resize of an operation whose operands broadcast the root batch to ``batch``."""
    return lambda size: batch + size[old_dims:]


_R = TypeVar("_R")


def without_empty(
    result: _R, operand: Any, *, always: bool = False, without_tensors: bool = False
) -> _R:
    """``result`` (a binary arithmetic result) without its nested collections that hold
    nothing, at any depth, as the peer's arithmetic gives it; records keep their fields.
    As in the peer, a collection holding no tensor (its result is a copy) and a tensor
    ``operand`` with dims (spread over the batch dims by an ``apply``) keep them all,
    except on a lazy stack whose members take 0-d slices of it (:func:`_sliced_to_0d`),
    and unless ``always`` (the peer's ``&`` drops them in every case).
    ``without_tensors``: a collection holding no tensor drops them too (the peer's ``%``
    makes no copy of it)."""
    if not isinstance(result, TensorCollection) or is_record(result):
        return result
    spread = isinstance(operand, torch.Tensor) and operand.ndim and not _sliced_to_0d(result)
    if spread and not always:
        return result
    if not (result._is_lazy or result._is_leaf_node) and _none_empty(result):
        return result  # nothing nested to drop (the common case), found by a cheap walk
    empty, _, tensors = _empty_nested(result, ())
    if not empty or not (tensors or always or without_tensors):
        return result
    out = result.exclude(*empty)
    return cast(_R, out.lock_() if result.is_locked else out)


def _none_empty(node: TensorCollection) -> bool:
    """Whether ``node`` surely holds no nested collection left empty: each nested one
    is of ``node``'s own class (so no record, lazy stack or Python value), holds
    something, and only tensors or such collections. False where this cheap walk cannot
    tell (:func:`_empty_nested` then decides)."""
    cls = node.__class__
    for value in node._entries().values():
        if value.__class__ is _Tensor:
            continue
        if value.__class__ is not cls:
            return False
        entries = value._entries()
        if not entries:
            return False
        if not _only_tensors(map(type, entries.values())) and not _none_empty(value):
            return False
    return True


def _lazy_child(node: TensorCollection, key: str) -> TensorCollection | bool:
    """A lazy stack's nested collection at ``key``; for a leaf, whether it is a tensor
    (ragged members' Python values have no stacked form)."""
    kind = node._child_type(key)
    if kind is None:
        return True
    child = None if kind._is_leaf_node else node._child(key)
    return False if child is None else child


def _empty_nested(node: TensorCollection, prefix: tuple[str, ...]) -> tuple[list[Any], bool, bool]:
    """The paths under ``node`` of nested collections left with nothing, whether
    ``node`` itself is left with nothing, and whether it holds a tensor."""
    paths: list[Any] = []
    kept = 0
    tensors = False
    if node._is_lazy:  # no leaf is read (a lazy stack's may differ in shape)
        items: Any = ((key, _lazy_child(node, key)) for key in node._key_names())
    else:
        items = node._entries().items()
    for key, value in items:
        if isinstance(value, TensorCollection) and not value._is_leaf_node and not is_record(value):
            inner, empty, held = _empty_nested(value, prefix + (key,))
            tensors = tensors or held
            if empty:
                paths.append(prefix + (key,))
                continue
            paths += inner
        elif value is True or isinstance(value, torch.Tensor):
            tensors = True
        elif is_record(value):
            tensors = tensors or _holds_tensor(value)
        kept += 1
    return paths, not kept, tensors


def _holds_tensor(record: Any) -> bool:
    """Whether ``record`` holds a tensor at any depth: as in the peer, a record without
    one (``attrs()``'s ``TensorAttrs``, a record of Python values) leaves its collection
    without tensors, whose empty nested collections the arithmetic keeps."""
    return any(isinstance(leaf, torch.Tensor) for leaf in record.values(True, True))


FlatSplit: TypeAlias = tuple[list[torch.Tensor], list[torch.Tensor], list[str], dict[str, Any]]


def flat_split(mine: Mapping[str, Any], theirs: Mapping[str, Any] | None) -> FlatSplit | None:
    """The flat forms' pass over a node's entries ``mine`` (with ``theirs``, an operand
    node's entries over the same keys): its tensors, their counterparts in ``theirs``,
    their keys, and the result's entries in key order (each Python value a new node, as
    rebuilt; each tensor's result goes in later). None where the node holds a nested
    collection or a tensor subclass, or the operand lacks a key or holds no tensor for
    one (the walk then does the work, and raises what is wrong)."""
    leaves: list[torch.Tensor] = []
    pieces: list[torch.Tensor] = []
    keys = []
    entries: dict[str, Any] = {}
    for key, value in mine.items():
        if value.__class__ is _Tensor:
            if theirs is not None:
                piece = theirs.get(key)
                if piece.__class__ is not _Tensor:  # (or not there: None)
                    return None
                pieces.append(piece)
            leaves.append(value)
            keys.append(key)
            entries[key] = value  # (its result later)
        elif getattr(value, "_is_value_node", False) and (theirs is None or key in theirs):
            entries[key] = value._rebuilt(_NOTHING, None)
        else:  # a nested collection, a tensor subclass, a key the operand lacks
            return None
    return leaves, pieces, keys, entries


def _unlocks(
    node: TensorCollection,
    leaves: Sequence[Any],
    operands: tuple[Any, ...],
    without_tensors: bool = False,
) -> bool:
    """As the peer's pointwise math: a collection without tensors, or a tensor operand
    with dims spread over the batch dims (:func:`_spread`), gives a new unlocked
    collection; a number or a 0-d tensor keeps the lock. A collection holding only
    Python values keeps it when a collection operand is paired key by key beside a
    tensor operand with dims (the peer's ``addcmul(t, td)``, ``lerp(td, t)``: its
    ``apply`` with the lock), and, for the ops ``without_tensors`` (``%``,
    ``bitwise_and``, ``logical_and``), as one holding tensors does."""
    if not leaves and (node.is_empty() or not without_tensors):
        return node.is_empty() or not _has_dims(operands) or not _paired(operands)
    return _spread(operands) and not _sliced_to_0d(node)


def _sliced_to_0d(node: TensorCollection) -> bool:
    """Whether ``node`` is a lazy stack whose members have no batch dims, or are such
    lazy stacks in turn: as in the peer, each member takes a slice of a tensor operand,
    down to a 0-d one, a scalar to the innermost members (the result keeps the lock and
    drops the nested collections left empty, as with a number)."""
    if not node._is_lazy:
        return False
    members: list[TensorCollection] = node.tensordicts  # type: ignore[attr-defined]
    return all(not member.batch_size or _sliced_to_0d(member) for member in members)


def _spread(operands: tuple[Any, ...]) -> bool:
    """Whether a tensor operand with dims is spread over the batch dims, with no
    collection operand paired key by key beside it (the peer's ``addcmul(t, td)`` keeps
    the lock)."""
    return _has_dims(operands) and not _paired(operands)


def _has_dims(operands: tuple[Any, ...]) -> bool:
    """Whether one of ``operands`` is a tensor with dims."""
    return any(isinstance(o, torch.Tensor) and o.ndim for o in operands)


def _paired(operands: tuple[Any, ...]) -> bool:
    """Whether one of ``operands`` is a collection (paired key by key)."""
    return any(isinstance(o, TensorCollection) for o in operands)
