"""Member-by-member operations of a lazy stack.

Element-wise operations (``apply``, ``clone``, comparisons, fills, ``where``) and shape
operations that keep every element inside its member (``unsqueeze``, ``permute``,
``expand``, ``split`` along other dims, ...) run on each member and give a new lazy stack;
nothing is stacked or copied beyond what the operation itself produces. Operands shaped
like the batch (other collections, masks, conditions) are cut along the stack dim first.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import torch
from typing_extensions import Self

from tclass._base._tensordict_base import TensorDictBase
from tclass._base.implemented._apply import ApplyOptions, ApplyRules
from tclass._base.implemented._collection import TensorCollection, check_replaced_keys
from tclass._base.implemented._leaf_walk import Alignment, Gather, Resize
from tclass._base.implemented._reductions import Along
from tclass._core import _batch, _keys
from tclass._core._batch import format_shape
from tclass._core._names import DimName
from tclass._core._options import OPTIONS
from tclass._core._records import is_record, storage_of
from tclass._core._shape_op import ShapeOp
from tclass._engine._lazy._index import as_records
from tclass._engine._lazy._parts import (
    check_members,
    insert_dim,
    remove_dim,
    split_operand,
    split_tensor,
    stacked_size,
)
from tclass._engine._nontensor_stack import NonTensorStack, join_non_tensor
from tclass._engine._td import TensorDict
from tclass.errors import (
    BatchSizeError,
    HeterogeneousEntryError,
    KeyNotFoundError,
    KeyThroughTensorError,
    LockedError,
    ShapeError,
    StackError,
    StackTypeError,
)

__all__ = ["LazyStackOps"]


class LazyStackOps(TensorDictBase):
    """The member-wise half of ``LazyStackedTensorDict``."""

    if TYPE_CHECKING:  # LazyStackedTensorDict's slots and methods
        _members: list[Any]
        _locked: bool | None
        _stack_dim: int
        _batch_size: torch.Size
        _device: torch.device | None
        _stack_dim_name: DimName

        def _from_members(
            self, members: list[Any], stack_dim: int, batch_size: torch.Size
        ) -> Self: ...
        def _restacked(
            self,
            members: list[Any],
            stack_dim: int | None = None,
            batch_size: torch.Size | None = None,
        ) -> Self: ...
        def _dense(self, action: str) -> Any: ...
        def _batch_item(self, index: Any) -> Any: ...
        def _parts(self, key: str) -> list[Any]: ...
        def _init(self, members: list[Any], stack_dim: int, batch_size: torch.Size) -> None: ...
    else:
        __slots__ = ()  # (mypy would refuse the writes to the slots below)

    def _take_batch_size_of(self, source: TensorCollection) -> None:
        """``update(update_batch_size=True)`` from a source of another batch size: its
        parts along the stack dim (a lazy source's members themselves, shared as ``set``
        shares a collection) become the members, so this stack keeps its identity, as in
        the peer. A batch size that starts with the other changes nothing here."""
        own, new = self._batch_size, source.batch_size
        n = min(len(own), len(new))
        if own[:n] == new[:n]:
            return
        d = self._stack_dim
        if len(new) <= d:
            msg = (
                f"update(update_batch_size=True): the source's batch size {list(new)} has no "
                f"dim {d}, the stack dim of this lazy stack; give a source with that dim"
            )
            raise BatchSizeError(msg)
        check_replaced_keys(self, source)
        name = self._stack_dim_name
        self._init(list(source.unbind(d)), d, new)
        self._stack_dim_name = name

    # --- growing -------------------------------------------------------------------------

    def insert(self, index: int, tensordict: TensorCollection) -> None:
        """Inserts ``tensordict`` as a new member before position ``index``.

        Raises:
            LockedError: if the stack is locked.
            StackTypeError: (a ``TypeError``) if it is not a collection, or is a
                tensorclass record (as the peer: a record kept as a member would be read
                back wrapped twice through the record stacked over this stack).
            StackError: (a ``ValueError``) if its batch size differs from the members',
                which all have one (as the peer; a stack already ragged takes any size).
        """
        if is_record(tensordict):
            msg = (
                f"insert/append/extend: got a {type(tensordict).__name__} record. Expected "
                "new value to be TensorDictBase instance: a record is not added to a lazy "
                "stack as a member; pass its storage (record._tensordict), or stack records "
                "with lazy_stack([...])"
            )
            raise StackTypeError(msg)
        if self._lock_state():
            msg = (
                "Cannot modify locked TensorDict (a LazyStackedTensorDict): "
                "cannot insert a member; unlock "
                "it first (lazy.unlock_())"
            )
            raise LockedError(msg)
        members = self._members
        if members:
            check_members([members[0], tensordict], "insert")
            first = members[0].batch_size
            if -1 not in self._batch_size and tensordict.batch_size != first:
                msg = (
                    f"insert: Batch sizes in tensordicts differs: the members have batch size "
                    f"{format_shape(first)}, the new one {format_shape(tensordict.batch_size)}; "
                    "build a ragged stack with lazy_stack([...]) instead"
                )
                raise StackError(msg)
            self._batch_size = stacked_size([*members, tensordict], self._stack_dim)
            self._device = self._device if tensordict.device == self._device else None
        else:
            check_members([tensordict], "insert")
            batch = tensordict.batch_size
            dim = _batch.normalize_dim(self._stack_dim, len(batch), op="insert", inclusive=True)
            self._stack_dim = dim
            self._batch_size = insert_dim(batch, dim, 1)
            self._device = tensordict.device
        members.insert(index, tensordict)

    def _relayout(self, member_batch: torch.Size) -> None:
        """Takes the members' new batch size (after they inferred theirs)."""
        self._stack_dim = min(self._stack_dim, len(member_batch))
        self._batch_size = stacked_size(self._members, self._stack_dim)

    def _drop_member(self, index: int) -> None:
        """Removes the member at ``index`` (a crop along the stack dim)."""
        del self._members[index]
        sizes = list(self._batch_size)
        sizes[self._stack_dim] -= 1
        self._batch_size = torch.Size(sizes)

    def append(self, tensordict: TensorCollection) -> None:
        """Adds ``tensordict`` as the last member (see :meth:`insert`)."""
        self.insert(len(self._members), tensordict)

    def extend(self, tensordict: Sequence[TensorCollection] | TensorCollection) -> None:
        """Appends each of a list of collections, or the parts of one collection along
        the stack dim, as new members (see :meth:`insert`), as ``list.extend``. All or
        nothing, as the peer's: a part refused leaves the stack as it was."""
        if isinstance(tensordict, TensorCollection):
            parts: Sequence[TensorCollection] = tensordict.unbind(self._stack_dim)
        else:
            parts = tensordict
        before = (list(self._members), self._batch_size, self._device, self._stack_dim)
        try:
            for part in parts:
                self.append(part)
        except BaseException:
            self._members[:] = before[0]
            self._batch_size, self._device, self._stack_dim = before[1:]
            raise

    def __contains__(self, key: object) -> bool:
        """A key (a string or a tuple of strings) of the stack, or a collection that is
        one of its members (``member in lazy``, by identity, as the peer)."""
        if isinstance(key, TensorCollection):
            return any(member is key for member in self._members)
        return super().__contains__(key)

    def _empty_members(self, shape: torch.Size, device: torch.device | None) -> Self:
        """``new_empty(shape, empty_lazy=True)``: a lazy stack of ``shape`` along this
        stack dim (the last dim when ``shape`` has fewer), of empty TensorDicts."""
        d = min(self._stack_dim, len(shape) - 1)
        member = remove_dim(shape, d)
        members = [TensorDict(batch_size=member, device=device) for _ in range(shape[d])]
        return self._restacked(members, d)

    def _child(self, key: str) -> TensorCollection | None:
        # The first member's child, not its entry: a member that is itself a lazy stack
        # has no dense value for a heterogeneous tensor, and the walk reads no leaf.
        first = self._members[0]._child_type(key) if self._members else None
        return None if first is None else cast(TensorCollection, self._entry(key))

    def _child_type(self, key: str) -> type[TensorCollection] | None:
        """A stack of Python values is a ``NonTensorStack``, known without stacking them
        (ragged members' values have no stacked form)."""
        first = self._members[0]._child_type(key) if self._members else None
        if first is not None and first._is_value_node:
            return NonTensorStack
        return None if first is None else cast(type[TensorCollection], type(self._entry(key)))

    def _check_set_(self, key: Any, value: Any) -> None:
        """``set_`` of a key not in every member: a nested key under a node the stack lacks
        is added by the members, as a TensorDict's ``set_`` and the peer's add it (a
        ``LockedError`` when locked; members that are files add none: their
        ``KeyNotFoundError``, as the peer's); any other missing key is an error, raised first (for
        a nested one after the value's batch size is checked, as the peer orders them, locked
        or files alike)."""
        path = _keys.key_path(key)
        if len(path) > 1:
            split_operand(value, self, key, fill=True)  # a value that does not fit: first
        if len(path) == 1 or path[0] in self:
            error = self._absent(key)
            if type(error) is KeyNotFoundError:  # the peer's words first, which code matches
                msg = (
                    f"setting a value in-place on a stack of TensorDict failed: {error}; "
                    "set_() writes into existing entries: use set() to add it"
                )
                raise KeyNotFoundError(msg)
            raise error
        if self._members and self._members[0]._is_store:  # a file adds no node in set_:
            raise self._members[0]._missing_key(path[0])  # its KeyError, locked or not
        if self._lock_state():
            msg = (
                "Cannot modify locked TensorDict (a LazyStackedTensorDict): "
                f"cannot set {key!r} in place: it "
                f"has no entry {path[0]!r}, which would have to be added. Unlock it first "
                "(lazy.unlock_())"
            )
            raise LockedError(msg)

    def _absent(self, key: Any, *, popping: bool = False) -> Exception:
        """The error for a key not in every member: a ``KeyThroughTensorError`` (a
        ``KeyError`` and ``ValueError``, as the peer's) for a path through a tensor of the
        first member, else a ``KeyNotFoundError``."""
        if self._members and type(key) is tuple:
            try:
                self._members[0].get(key)
            except KeyThroughTensorError as error:
                return error
            except KeyError:
                pass
        return self._missing_key(key, popping=popping)

    def _distinct_members(self) -> list[Any]:
        """The members, each once, for a change of their keys: ``torch.cat([lazy,
        lazy[:1]])`` holds member 0 twice, and ``stack[[1, 1]][rows]`` two views of
        member 1 (a view's keys are its source's: a view of a file's rows, a lazy view,
        each with a ``_source``), which one change reaches both; through the lazy stacks
        a reshape nests members in (``reshape(-1, 1, 1)`` of that ``cat``)."""
        distinct: dict[int, Any] = {}
        pending = list(reversed(self._members))
        while pending:
            member = pending.pop()
            if isinstance(member, LazyStackOps):  # a reshape nests members in lazy stacks
                pending.extend(reversed(member._members))  # of their own, several over one
                continue
            distinct.setdefault(id(getattr(member, "_source", member)), member)
        return list(distinct.values())

    # --- splitting operands --------------------------------------------------------------

    def _cut(self, operand: Any) -> list[Any]:
        """``operand`` as one piece per member: collections and tensors over the batch
        are cut along the stack dim, anything else is shared."""
        count = len(self._members)
        d = self._stack_dim
        if isinstance(operand, TensorCollection):
            if operand.batch_size != self._batch_size:
                operand = cast(TensorDictBase, operand).expand(self._batch_size)
            return list(operand.unbind(d))
        if isinstance(operand, torch.Tensor):
            return split_tensor(operand, d, count)
        return [operand] * count

    def _keeps_stack_dim(self, batch_size: torch.Size) -> bool:
        """Whether ``batch_size`` (a new batch size of this stack) keeps its stack dim."""
        d = self._stack_dim
        return len(batch_size) > d and batch_size[d] == len(self._members)

    def _member_batch(self, batch_size: torch.Size, op: str) -> torch.Size:
        """The members' batch size for a new stack batch size, which must keep the stack dim."""
        d = self._stack_dim
        if len(batch_size) <= d or batch_size[d] != len(self._members):
            msg = (
                f"{op}: the batch size {format_shape(batch_size)} of a lazy stack must keep "
                f"its stack dim {d} of size {len(self._members)}"
            )
            raise ShapeError(msg)
        return remove_dim(batch_size, d)

    def _each(self, method: str, *args: Any, **kwargs: Any) -> Self:
        """``member.method(*args, **kwargs)`` for every member, restacked as they are."""
        return self._restacked(
            [getattr(member, method)(*args, **kwargs) for member in self._members]
        )

    # --- apply ---------------------------------------------------------------------------

    def _apply_all(
        self, fn: Callable[..., Any], others: tuple[TensorCollection, ...], options: ApplyOptions
    ) -> Self:
        """``fn`` on every member's tensors (see ``TensorDict.apply``); ``others`` are cut
        along the stack dim. With a ``batch_size``, as the peer: ``fn`` gets the stacked
        tensors and the result is a TensorDict."""
        if options.get("batch_size") is not None and not options.get("inplace"):
            if -1 in self._batch_size and not any(m._key_names() for m in self._members):
                # a ragged stack without entries has no dense form, and nothing to apply
                # fn to: the new, empty TensorDict (as the peer)
                size, names = options["batch_size"], options.get("names")
                return cast(Self, TensorDict({}, size, self.device, names))
            dense = self._dense_storage("apply")
            out: Any = dense.apply(fn, *others, **options)
            kept = out is not None and out.batch_dims == dense.batch_dims
            if kept and "names" not in options:  # as the peer's: the stack's names, per dim
                out._rename_all(dense._dim_names)
            return cast(Self, out)
        cut = [self._cut(other) for other in others]
        member_options, member_size = self._member_options(options, "apply")
        outs = self._out_members(options.get("out"))
        results = [
            member.apply(
                fn,
                *(pieces[i] for pieces in cut),
                **member_options,
                **({} if outs is None else {"out": outs[i]}),
            )
            for i, member in enumerate(self._members)
        ]
        if outs is not None:
            options = cast(ApplyOptions, {k: v for k, v in options.items() if k != "out"})
        return self._restacked_results(results, options, member_size)

    def _out_members(self, out: Any) -> list[Any] | None:
        """The members of ``apply(out=...)``'s lazy stack that this ragged stack's members
        write into, as the peer's (an ``out`` along the same stack dim, one member each:
        a ragged stack has no dense result to write into ``out`` whole); else None."""
        if out is None or -1 not in self._batch_size:
            return None
        target = storage_of(out)
        if not target._is_lazy:
            return None
        lazy = cast("LazyStackOps", target)
        if lazy._stack_dim != self._stack_dim or len(lazy._members) != len(self._members):
            return None
        return list(lazy._members)

    def _named_apply_all(
        self,
        fn: Callable[..., Any],
        others: tuple[TensorCollection, ...],
        nested_keys: bool,
        batch_size: _batch.BatchSizeLike,
        options: ApplyRules,
    ) -> Self:
        """``fn(key, tensor, *others)`` on every member (see ``TensorDict.named_apply``);
        with a ``batch_size``, on the stacked tensors, as :meth:`apply`."""
        if batch_size is not None:
            dense = self._dense_storage("named_apply")
            result = dense.named_apply(
                fn, *others, nested_keys=nested_keys, batch_size=batch_size, **options
            )
            kept = result is not None and result.batch_dims == dense.batch_dims
            if kept and "names" not in options:  # as apply
                result._rename_all(dense._dim_names)
            return cast(Self, result)
        cut = [self._cut(other) for other in others]
        full = cast(ApplyOptions, {**options})
        member_options, member_size = self._member_options(full, "named_apply")
        outs = self._out_members(full.get("out"))  # a ragged stack's out, member by member
        results = [
            member.named_apply(
                fn,
                *(pieces[i] for pieces in cut),
                nested_keys=nested_keys,
                **member_options,
                **({} if outs is None else {"out": outs[i]}),
            )
            for i, member in enumerate(self._members)
        ]
        if outs is not None:
            full = cast(ApplyOptions, {k: v for k, v in full.items() if k != "out"})
        return self._restacked_results(results, full, member_size)

    def _dense_storage(self, action: str) -> TensorDict:
        """The dense stack ``apply(batch_size=...)`` works on: a TensorDict (a stack of
        records gives its fields' storage), whose nested records keep their classes, as
        the peer's (``to_tensordict()`` would make them TensorDicts)."""
        dense = storage_of(self._dense(f"{action}(batch_size=...)"))
        return dense if isinstance(dense, TensorDict) else self.to_tensordict()

    def _member_options(
        self, options: ApplyOptions, op: str
    ) -> tuple[dict[str, Any], torch.Size | None]:
        """The options each member's ``apply`` takes (those about the result are applied
        to the restacked result), and the members' batch size."""
        member_options: dict[str, Any] = {
            key: value
            for key, value in options.items()
            if key not in ("device", "names", "propagate_lock", "out", "batch_size")
        }
        batch_size = options.get("batch_size")
        member_size = None
        if batch_size is not None:
            member_size = self._member_batch(_batch.as_batch_size(batch_size), op)
            member_options["batch_size"] = member_size
        return member_options, member_size

    def _restacked_results(
        self, results: list[Any], options: ApplyOptions, member_size: torch.Size | None
    ) -> Self:
        """The members' results restacked, with the options about the result applied."""
        if options.get("inplace"):  # None where every member's is (all filtered out)
            filtered = results and all(result is None for result in results)
            return None if filtered else self  # type: ignore[return-value]
        if all(result is None for result in results):
            return None  # type: ignore[return-value]  # everything filtered out, as apply
        filled = [
            member.empty() if result is None else result
            for member, result in zip(self._members, results)
        ]
        out = self._restacked(filled)
        rest = cast(
            ApplyOptions,
            {key: options[key] for key in ("device", "names", "out") if key in options},
        )
        names: Any = ...
        if "names" in rest and "out" not in rest and -1 in out.batch_size:
            names = rest.pop("names")
        result = TensorDictBase._apply_with(out, _identity, (), rest) if rest else out
        if names is not ... and result is not None:  # set on the ragged stack, as the
            cast(Any, result).names = names  # peer's (no dense form to apply them through)
        if result is not None and options.get("propagate_lock") and self.is_locked:
            result.lock_()  # this stack's lock (the restacked result has none yet)
        return result  # type: ignore[return-value]

    # What a parent collection calls on a nested lazy stack.
    def _apply_plain(
        self,
        fn: Callable[[torch.Tensor], torch.Tensor | None],
        batch_size: torch.Size,
        prefix: tuple[str, ...],
    ) -> Self:
        if not self._keeps_stack_dim(batch_size):  # the dense stack's, as the peer's
            return cast(Self, self._dense_storage("apply")._apply_plain(fn, batch_size, prefix))
        member_size = self._member_batch(batch_size, "apply")
        return self._restacked([m._apply_plain(fn, member_size, prefix) for m in self._members])

    def _apply_nested(
        self,
        fn: Callable[..., torch.Tensor | None],
        others: tuple[Any, ...],
        batch_size: torch.Size,
        prefix: tuple[str, ...],
        rules: Any,
    ) -> Self:
        if not self._keeps_stack_dim(batch_size):  # the dense stack's, as the peer's
            dense = self._dense_storage("apply")
            return cast(Self, dense._apply_nested(fn, others, batch_size, prefix, rules))
        member_size = self._member_batch(batch_size, "apply")
        cut = [self._cut(other) for other in others]
        results = [
            member._apply_nested(fn, tuple(pieces[i] for pieces in cut), member_size, prefix, rules)
            for i, member in enumerate(self._members)
        ]
        return self._restacked(results)

    def _stage_in_place(
        self, fn: Callable[..., torch.Tensor | None], others: tuple[Any, ...], staged: Any
    ) -> None:
        cut = [self._cut(other) for other in others]
        for i, member in enumerate(self._members):
            member._stage_in_place(fn, tuple(pieces[i] for pieces in cut), staged)

    # --- copies and fills ----------------------------------------------------------------

    def clone(self, recurse: bool = True) -> Self:
        """A lazy stack of the members' clones."""
        return self._each("clone", recurse)

    def detach(self) -> Self:
        return self._each("detach")

    def fill_(self, key: Any, value: float | bool | torch.Tensor) -> Self:
        for member in self._members:
            member.fill_(key, value)
        return self

    # --- comparisons and reductions ------------------------------------------------------

    def _compare(self, other: object, op: Callable[[Any, Any], Any]) -> Self:
        if isinstance(other, torch.Tensor):  # over the batch dims, as arithmetic takes it
            return self._pointwise(None, op, (other,), lock=False)
        if isinstance(other, (TensorCollection, int, float, bool, complex)):
            pieces = self._cut(other)
        elif isinstance(other, Mapping):  # td == td.to_dict(): each member its rows
            pieces = [_row_of_dict(other, self._stack_dim, i) for i in range(len(self._members))]
        else:
            return NotImplemented  # type: ignore[no-any-return]
        return self._restacked([op(member, pieces[i]) for i, member in enumerate(self._members)])

    # --- math: member by member, never densified ------------------------------------------

    def _pointwise_(
        self,
        foreach: Callable[..., Any] | None,
        each: Callable[..., Any],
        operands: tuple[Any, ...] = (),
        kwargs: dict[str, Any] | None = None,
        **options: Any,
    ) -> Self:
        """In-place math (``zero_``, ``mul_``, ``+=``...). A member over a file (a
        ``PersistentTensorDict`` or its rows), whose reads are copies, is read into
        memory, the whole stack worked on there (checked before anything is written, as
        always), and the member's results written back into the file; so is a member
        that is a lazy stack holding one, at any depth. A member's 0-d tensor is an
        element of a tensor with dims in the dense stack: a 0-d tensor operand reads as
        with dims there (``promote_0d`` does not apply)."""
        options.pop("promote_0d", None)
        if not self._reads_copies():
            return super()._pointwise_(foreach, each, operands, kwargs, **options)
        read: dict[int, TensorDictBase] = {}
        local = self._read_into_memory(read)
        before = {i: read[i].clone() for i in self._sharing_a_file()}
        self._restacked(local)._pointwise_(foreach, each, operands, kwargs, **options)
        self._written_back(local, before=before)
        return self

    def _reads_copies(self) -> bool:
        """Whether a member, or a member of a lazy stack among them (at any depth), is
        over a file: its tensors, read, are copies that in-place math cannot write to."""
        return any(
            member._is_store or (isinstance(member, LazyStackOps) and member._reads_copies())
            for member in self._members
        )

    def _store_members(self) -> Iterator[TensorDictBase]:
        """The members over a file, at any depth (one held twice: twice)."""
        for member in self._members:
            if member._is_store:
                yield member
            elif isinstance(member, LazyStackOps):
                yield from member._store_members()

    def _sharing_a_file(self) -> set[int]:
        """The ``id`` of each member over a file that another member object is over too
        (views of the same rows: ``torch.cat`` of a stack of file rows with its slice,
        indexed), whose copies each hold only their own places' writes."""
        by_file: dict[str | None, set[int]] = {}
        for member in self._store_members():
            by_file.setdefault(member._stored_in(), set()).add(id(member))
        return {i for ids in by_file.values() if len(ids) > 1 for i in ids}

    def _read_into_memory(
        self, read: dict[int, TensorDictBase] | None = None
    ) -> list[TensorDictBase]:
        """The members, those over a file read into memory (a lazy stack holding one
        restacked from its own members so read). A member held more than once (``cat``
        of a stack with its own slice) is read once (``read``: by ``id``), so that the
        math on each of its places reaches one copy, as it reaches one tensor in memory."""
        read = {} if read is None else read
        local: list[TensorDictBase] = []
        for member in self._members:
            if id(member) in read:
                member = read[id(member)]
            elif member._is_store:
                member = read.setdefault(id(member), member.to_tensordict())
            elif isinstance(member, LazyStackOps) and member._reads_copies():
                restacked = member._restacked(member._read_into_memory(read))
                member = read.setdefault(id(member), restacked)
            local.append(member)
        return local

    def _written_back(
        self,
        local: Sequence[TensorDictBase],
        done: set[int] | None = None,
        before: Mapping[int, TensorDictBase] | None = None,
    ) -> None:
        """Writes ``local`` (:meth:`_read_into_memory`'s members, changed in memory) into
        the members over a file it was read from, each member once (``done``: by ``id``:
        a later write of a stale copy would undo an earlier one). A member whose file
        another member object is over too (``before``: its copy as read) writes only the
        elements its math changed, over the file's rows as they are now, so that every
        view's writes are kept, as the peer's (each view read and written in turn)."""
        done = set() if done is None else done
        before = {} if before is None else before
        for member, changed in zip(self._members, local):
            if id(member) in done:
                continue
            done.add(id(member))
            if member._is_store:
                if id(member) in before:
                    changed = changed.apply(
                        _kept_change, member.to_tensordict(), before[id(member)]
                    )
                member.update_(changed)
            elif isinstance(member, LazyStackOps) and member._reads_copies():
                member._written_back(cast(LazyStackOps, changed)._members, done, before)

    def _collect(
        self, into: Gather, operands: tuple[Any, ...], batch_dims: int, prefix: tuple[str, ...]
    ) -> None:
        """Each member's tensors in turn, each with its piece of every operand."""
        d = self._stack_dim
        cut = [self._operand_pieces(op, batch_dims, into.alignment) for op in operands]
        member_dims = batch_dims - 1 if d < batch_dims else batch_dims
        for i, member in enumerate(self._members):
            member._collect(into, tuple(pieces[i] for pieces in cut), member_dims, prefix)

    def _operand_pieces(self, operand: Any, batch_dims: int, alignment: Alignment) -> list[Any]:
        """An operand cut along the stack dim, one piece per member."""
        count, d = len(self._members), self._stack_dim
        if not isinstance(operand, torch.Tensor):
            return self._cut(operand)
        if not operand.ndim:  # stays 0-d: torch's type promotion treats it as a scalar
            return [operand] * count
        if alignment == "mask" or d >= batch_dims:
            return split_tensor(operand, d, count)
        if operand.ndim > batch_dims:
            msg = (
                f"a tensor of shape {format_shape(operand.shape)} would add batch dims to a "
                f"lazy stack of batch size {format_shape(self._batch_size)}; densify it "
                "first (contiguous()) or give a tensor with at most its batch dims"
            )
            raise BatchSizeError(msg)
        padded = operand.reshape((1,) * (batch_dims - operand.ndim) + tuple(operand.shape))
        return split_tensor(padded, d, count)

    def _rebuilt(
        self,
        results: Iterator[torch.Tensor],
        resize: Resize | None,
        values: Iterator[Any] | None = None,
    ) -> Self:
        """The members rebuilt from ``results``, stacked as they were."""
        if resize is None:
            members = [member._rebuilt(results, None, values) for member in self._members]
            return self._restacked(members, self._stack_dim, self._batch_size)
        old = self._batch_size
        new = resize(old)
        d = self._stack_dim + len(new) - len(old)
        old_member, new_member = remove_dim(old, self._stack_dim), remove_dim(new, d)
        grow: Resize = lambda size: new_member + size[len(old_member) :]  # noqa: E731
        members = [member._rebuilt(results, grow, values) for member in self._members]
        return self._restacked(members, d, new)

    def _reduced(self, along: Along) -> tuple[Self, ...]:
        """Member by member where ``along`` leaves the stack dim alone; the members'
        elements together for whole tensors; the dense stack along the stack dim. As in
        the peer, the results are dense where the members' line up (a lazy stack for
        ``along.lazy``)."""
        d = self._stack_dim
        if along.dims is None and not along.keepdim:
            return cast("tuple[Self, ...]", self._joined()._reduced(along))
        if along.dims == "feature" or (along.dims is not None and d not in along.dims):
            member_along = along.without(d)
            results = [member._reduced(member_along) for member in self._members]
            new_d = along.stack_dim_after(d)
            stacks = [
                self._restacked([result[i] for result in results], new_d)
                for i in range(along.outputs)
            ]
            return tuple(stack if along.lazy else self._densified(stack) for stack in stacks)
        action = f"an operation along the stack dim {d}"
        dense = self._dense(action)
        if dense._is_lazy:  # a member's own members differ: it stays lazy (it recursed)
            msg = (
                f"Failed to stack tensors within a tensordict: {action} needs the dense "
                f"stack of this lazy stack (batch size {format_shape(self._batch_size)}), "
                "but a member is a lazy stack whose members differ in shape. Pad them "
                "first (tclass.pad_sequence), or work on the members (lazy.tensordicts)"
            )
            raise HeterogeneousEntryError(msg)
        outs = dense._reduced(along)
        if along.lazy and along.scan:  # the batch is unchanged: each leaf gets its slice,
            # in a tree shaped as this one (nested lazy stacks stay lazy), as the peer's;
            # the slices are indexed (one view each, which may be written in place as the
            # peer's per-member results may; `unbind`'s pieces refuse it once they need grad)
            d, rows = self._stack_dim, range(len(self._members))
            at = [(slice(None),) * d + (i,) for i in rows]
            outs = tuple(
                self._pointwise(
                    None,
                    _slice_of,
                    (self._from_members([out[i] for i in at], d, self._batch_size),),
                    lock=False,
                )
                for out in outs
            )
        return cast("tuple[Self, ...]", outs)

    def _joined(self) -> Any:
        """A collection of batch size [] holding, for each key, the members' elements
        joined in one flat tensor (what a whole-tensor reduction reads)."""
        values: dict[str, Any] = {}
        for key in self._key_names():
            parts = self._parts(key)
            first = parts[0]
            if isinstance(first, torch.Tensor):
                values[key] = torch.cat([part.reshape(-1) for part in parts])
            elif first._is_value_node:
                values[key] = join_non_tensor(parts, "stack", 0, (key,))
            else:  # nested collections: their members' elements joined the same way
                values[key] = self._from_members(parts, 0, stacked_size(parts, 0))._joined()
        return self._members[0]._new_like(values, torch.Size([]), self.device)

    def _renamed(self, key_transform: Callable[[str], str]) -> Self:
        return self._restacked([member._renamed(key_transform) for member in self._members])

    # --- shape operations that keep elements in their member -----------------------------

    # A ``with`` block on the result writes its entries back on exit (the inverse op), as
    # for a TensorDict: the result's members are new collections.

    def unsqueeze(self, dim: int) -> Self:
        dim = _batch.normalize_dim(dim, len(self._batch_size), op="unsqueeze", inclusive=True)
        d = self._stack_dim
        if dim <= d:
            out = self._restacked([m.unsqueeze(dim) for m in self._members], d + 1)
        else:
            out = self._restacked([m.unsqueeze(dim - 1) for m in self._members])
        return self._carried(out, inverse=lambda r: r.squeeze(dim))

    def squeeze(self, dim: int | None = None) -> Self:
        d = self._stack_dim
        dims = _batch.squeeze_dims(self._batch_size, dim)
        if not dims:
            return self
        if d in dims:  # one member: the stack dim goes away with it
            rest = [i if i < d else i - 1 for i in dims if i != d]
            out = _squeeze_dims(self._members[0], rest)
        else:
            member_dims = [i if i < d else i - 1 for i in dims]
            new_d = d - sum(1 for i in dims if i < d)
            out = self._restacked([_squeeze_dims(m, member_dims) for m in self._members], new_d)
        batch_size = self._batch_size
        if d in dims:
            return self._carry(out, None, lock=False, inverse=lambda r: r.reshape(batch_size))
        return self._carried(out, inverse=lambda r: r.reshape(batch_size))

    def permute(self, *dims_list: int | Sequence[int], dims: Sequence[int] | None = None) -> Self:
        order = _batch.permute_dims(_batch.permute_args(dims_list, dims), len(self._batch_size))
        return self._permuted(order, records=True)

    def _permuted(self, order: Sequence[int], *, records: bool) -> Self:
        """The stack's dims in ``order``; a stack of records as a record where
        ``records`` (the peer's ``permute``), a lazy stack otherwise (its ``transpose``)."""
        order = tuple(order)
        if OPTIONS.lazy_legacy:  # the identity is the stack itself there, as in the peer
            identity = order == tuple(range(len(order)))
            return self if identity else self._legacy(ShapeOp("permute", order, len(order)))
        d = self._stack_dim
        member_order = [i if i < d else i - 1 for i in order if i != d]
        out = self._restacked([m.permute(*member_order) for m in self._members], order.index(d))
        back = [order.index(i) for i in range(len(order))]
        return self._carried(out, inverse=lambda r: r.permute(*back), records=records)

    def _carried(self, out: Self, inverse: Callable[[Any], Any], *, records: bool = True) -> Self:
        """``out`` (a lazy stack of this one's members' pieces) carried as ``_carry``
        does, as a record of the members' class where they are records and ``records``:
        the peer's ``unsqueeze`` / ``squeeze`` / ``permute`` re-stack them with its
        ``lazy_stack`` (its ``transpose`` keeps a lazy stack)."""
        wrapped = as_records(cast(Any, out)) if records else out
        self._carry(storage_of(wrapped), None, lock=False, inverse=inverse)
        return cast(Self, wrapped)

    def transpose(self, dim0: int, dim1: int) -> Self:
        ndim = len(self._batch_size)
        a, b = _batch.normalize_dim_pair(dim0, dim1, ndim, op="transpose")
        if a == b:
            return self  # as the peer
        order = list(range(ndim))
        order[a], order[b] = order[b], order[a]
        return self._permuted(order, records=False)  # a lazy stack, as the peer's

    def _expanded(self, shape: tuple[int, ...], leaf_op: str) -> Self:
        """Expands each member; new leading dims shift the stack dim, and a stack dim of
        size 1 expands to that member repeated (shared, as expand shares memory). A dense
        result of ``expand`` is unlocked (a new stack), a lazy one keeps its members' lock
        (views of locked members stay locked), that of ``broadcast_to`` has this stack's
        lock; all as the peer's (its ``broadcast_to`` is one of its batch ops, as ``flip``:
        it broadcasts the dense stack, whose rows along a new dim share memory, as torch's)."""
        target = _batch.expand_shape(shape, self._batch_size)
        if leaf_op == "broadcast_to":  # the dense stack broadcast: rows share memory
            dense = self._densified(self)
            if dense is not self:
                out = dense._expanded(target, leaf_op)
                return out.lock_() if self.is_locked and not out.is_locked else out
        new_d = self._stack_dim + len(target) - len(self._batch_size)
        member_shape = remove_dim(target, new_d)
        members = [getattr(m, leaf_op)(member_shape) for m in self._members]
        if not target[new_d]:  # no member left to keep lazily: the dense stack of none
            return self._densified_empty(members[0].unsqueeze(new_d).expand(target))
        if target[new_d] != len(members):  # expand_shape allows this from size 1 only
            members = members * target[new_d]
        expanded = self._restacked(members, new_d, target)
        out = self._densified(expanded, records=leaf_op == "expand")
        if out is not expanded and out.is_locked:  # a new dense stack of them: unlocked
            out.unlock_()
        if leaf_op == "broadcast_to" and self.is_locked and not out.is_locked:
            out.lock_()
        return out

    def _densified_empty(self, result: Any) -> Self:
        """``result`` (member 0 expanded to none along the stack dim, as a selection of
        no member is shaped by member 0) unlocked: a new collection sharing no element."""
        return cast(Self, result.unlock_() if result.is_locked else result)

    def _densified(self, result: Any, *, records: bool = False) -> Self:
        """``result`` (a lazy stack) as one TensorDict when its members line up, locked
        as it was: the peer computes flip, roll, narrow, tile, expand and pad of a lazy
        stack on its dense stack. Members that differ in shape keep it lazy (where the
        peer raises, except for expand). Members that are records of one class give a
        record of it where ``records`` (the peer's ``expand``), a TensorDict otherwise."""
        if not result._is_lazy:
            return cast(Self, result)
        try:
            dense = result._dense("this operation") if records else result.contiguous()
        except HeterogeneousEntryError:
            return cast(Self, result)
        return cast(Self, dense.lock_() if result.is_locked else dense)


def _squeeze_dims(member: Any, dims: list[int]) -> Any:
    for dim in sorted(dims, reverse=True):
        member = member.squeeze(dim)
    return member


def _identity(path: tuple[str, ...], value: Any) -> Any:
    return value


def _row_of_dict(values: Mapping[str, Any], dim: int, i: int) -> dict[str, Any]:
    """Member ``i``'s part of a dict compared with a lazy stack: its tensors' row ``i``
    along the stack dim; numbers and other values as they are."""
    return {
        key: _row_of_dict(value, dim, i)
        if isinstance(value, Mapping)
        else value.select(dim, i)
        if isinstance(value, torch.Tensor) and value.ndim > dim
        else value
        for key, value in values.items()
    }


def _slice_of(tensor: torch.Tensor, piece: torch.Tensor) -> torch.Tensor:
    """The piece of a dense result that goes where ``tensor`` was."""
    return piece


def _kept_change(mine: torch.Tensor, now: torch.Tensor, was: torch.Tensor) -> torch.Tensor:
    """``mine`` where it differs from ``was`` (bit for bit: NaN kept, ``-0.0`` a
    change), ``now`` elsewhere: one view's writes over what others wrote since."""
    differs = mine != was
    if mine.is_floating_point():
        differs = (differs & ~(mine.isnan() & was.isnan())) | (mine.signbit() != was.signbit())
    return torch.where(differs, mine, now)
