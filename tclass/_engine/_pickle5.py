"""Pickle protocol 5: a collection as one out-of-band buffer and a small JSON header.

``pickle.dumps(td, protocol=5, buffer_callback=...)`` (what Ray does for ``ray.put``, task
arguments and results, actor calls) hands the callback ONE buffer: every tensor of the
collection, nested ones included, in the layout of :func:`consolidate` (each leaf at a
16-byte aligned offset; a consolidated collection's own buffer, so nothing is copied).
The pickle stream itself holds a JSON header, the consolidation tree (keys, batch sizes,
dim names, devices, locks, Python values, record classes by name) with each leaf's
dtype, shape and offset, plus, pickled as before, the record classes by reference and
the Python values that are not JSON. Unpickling builds every tensor as a view of the
buffer it is given (``torch.frombuffer``, each leaf on a storage of its own, so that
``torch.save`` takes leaves of several dtypes): a transport that shares memory (Ray's
object store, shared memory) gives a collection without a copy.

A read-only buffer (Ray's object store: every reader of the object maps the same memory)
gives :class:`~tclass._core._readonly.ReadOnlyTensor` views, whose in-place writes raise
:class:`~tclass.errors.ReadOnlyError` instead of changing the shared object; ``clone()``
gives a writable copy. Without a ``buffer_callback`` the buffer is written into the
pickle stream (a copy), and unpickled as a private, writable ``bytearray``.

The collection keeps its pickling of protocols below 5, through ``multiprocessing`` (whose
default protocol is 5 from Python 3.14 on: torch shares the tensors' memory there), and
of protocol 5 when one buffer cannot say it exactly: nodes the consolidation tree does
not describe (TensorDict subclasses other than TypedTensorDict, legacy lazy views,
unbatched tensors; a ``MetaData`` value travels in the header, as a ``NonTensorData``
one does), and collections whose every tensor is memory-mapped (file references), off
the CPU, requires grad or is of a tensor subclass. Beside plain CPU tensors, such a
tensor is pickled in the stream as before (a memory-mapped one as its file reference)
and the others still travel in the buffer.
A leaf that is not contiguous arrives contiguous (the same values).
"""

from __future__ import annotations

import json
import pickle
import warnings
from collections.abc import Sequence
from multiprocessing.reduction import ForkingPickler
from typing import Any

import torch

from tclass._base._provided import ENGINE
from tclass._base._tensordict_base import TensorDictBase
from tclass._core._dtypes import dtype_named
from tclass._core._readonly import ReadOnlyTensor, read_only
from tclass._core._records import is_record_class
from tclass._engine._consolidate import (
    Consolidated,
    Description,
    Rebuild,
    Target,
    _attach,
    _Flatten,
    _Leaves,
    consolidation_of,
    exact_json,
    rebuild_from_description,
)
from tclass._engine._consolidate_views import ALIGN, leaf_layout, leaf_views
from tclass._engine._lazy._legacy import LegacyLazyView
from tclass._engine._lazy._stack import LazyStackedTensorDict
from tclass._engine._nontensor import MetaData, NonTensorData
from tclass._engine._nontensor_stack import NonTensorStack
from tclass._engine._td import TensorDict
from tclass.errors import PickleRefusedError, UnsupportedError

__all__ = ["reduce_out_of_band"]

FORMAT = "tclass-pickle5"
VERSION = 1
_CPU = torch.device("cpu")
_PLAIN_LEAVES = (torch.Tensor, ReadOnlyTensor)
Layout = list[tuple[torch.dtype, torch.Size, int]]


class _NotOneBuffer(Exception):
    """The collection holds something one buffer and the tree cannot say exactly."""


# --- the sender ----------------------------------------------------------------------------


def reduce_out_of_band(node: Any, protocol: int) -> tuple[Any, ...] | None:
    """``node.__reduce_ex__(protocol)`` for a TensorDict or lazy stack: its one buffer as
    a ``PickleBuffer`` (out of band under protocol 5) with the header; None when the
    protocol is older or the collection cannot travel so (see the module doc)."""
    if protocol < 5:
        return None
    state = consolidation_of(node)
    if state is not None and type(state.buffer) not in _PLAIN_LEAVES:
        return None  # consolidated into a file: the buffer pickles as a file reference
    # a consolidated collection comes back unlocked when its lock is consolidate()'s, and
    # locked when the user had locked its source, as from the peer's pickle
    flatten = _Describe(locks=state is None or not state.own_lock)
    try:
        _, tree = flatten.visit(node)
    except (_NotOneBuffer, UnsupportedError):  # the pickling of old says what it can
        return None
    leaves = flatten.leaves
    if flatten.beside and not leaves:
        return None  # nothing for the buffer (a memory-mapped collection): as before
    buffer, layout = _buffer_of(state, leaves)
    header = {
        "format": FORMAT,
        "version": VERSION,
        "size": buffer.numel(),
        "tree": tree,
        "leaves": [[str(dtype), list(shape), offset] for dtype, shape, offset in layout],
        "classes": list(flatten.classes),  # the names the tree gives the classes pickled
    }
    data = pickle.PickleBuffer(buffer.numpy().data) if buffer.numel() else b""
    classes = tuple(flatten.classes.values())
    return (_from_out_of_band, (json.dumps(header), classes, tuple(flatten.values), data))


def _fits(leaf: torch.Tensor) -> bool:
    """Whether a leaf goes into the buffer as it is: a plain CPU tensor without grad."""
    return (
        type(leaf) in _PLAIN_LEAVES
        and leaf.device.type == "cpu"
        and leaf.layout is torch.strided
        and not leaf.requires_grad
    )


def _buffer_of(
    state: Consolidated | None, leaves: Sequence[torch.Tensor]
) -> tuple[torch.Tensor, Layout]:
    """The buffer holding ``leaves`` and where each is: a consolidated collection's own
    buffer, else a new one they are copied into."""
    if state is not None and state.buffer.is_cpu:
        layout = _layout_within(state.buffer, leaves)
        if layout is not None:
            return state.buffer, layout
    layout, end = leaf_layout(leaves)
    buffer = torch.empty(end, dtype=torch.uint8)
    with torch.no_grad():
        for view, leaf, (_, _, offset) in zip(leaf_views(buffer, layout), leaves, layout):
            view.copy_(leaf)
            used = offset + leaf.numel() * leaf.element_size()
            buffer[used : -(-used // ALIGN) * ALIGN].zero_()  # the padding: no stale bytes
    return buffer, layout


def _layout_within(buffer: torch.Tensor, leaves: Sequence[torch.Tensor]) -> Layout | None:
    """Each leaf's (dtype, shape, offset) in ``buffer``, if every leaf is a contiguous,
    aligned view inside it (as a consolidated collection's are); else None."""
    start, end = buffer.data_ptr(), buffer.data_ptr() + buffer.numel()
    layout: Layout = []
    for leaf in leaves:
        offset = leaf.data_ptr() - start
        size = leaf.numel() * leaf.element_size()
        if not leaf.is_contiguous() or offset < 0 or offset + size > end - start:
            return None
        if offset % ALIGN and size:
            return None
        layout.append((leaf.dtype, leaf.shape, offset if size else 0))
    return layout


class _Describe(_Flatten):
    """The consolidation tree, with what a pickle must restore besides: locks, a lazy
    stack's batch size and dim name, TensorDict subclasses, and the classes and Python
    values that travel in the pickle stream itself."""

    def __init__(self, *, locks: bool = True) -> None:
        super().__init__()
        self.locks = locks  # whether the locks travel
        self.classes: dict[str, type] = {}
        self.values: list[Any] = []
        self.beside = 0  # tensors pickled in the stream, beside the buffer

    def visit(self, node: Any, *args: Any) -> Description:
        if isinstance(node, LegacyLazyView):  # it pickles as a view of its source
            raise _NotOneBuffer
        return super().visit(node, *args)

    def visit_record(self, record: Any) -> Description:
        rebuild, tree = super().visit_record(record)
        tree["record"] = self._name_of(type(record), tree["record"])
        return rebuild, tree

    def visit_tensordict(self, td: TensorDict) -> Description:
        rebuild, tree = super().visit_tensordict(td)
        cls = type(td)
        if cls is not TensorDict:  # a TypedTensorDict: the walk takes no other subclass
            tree["class"] = self._name_of(cls, f"{cls.__module__}.{cls.__qualname__}")
        return rebuild, tree

    def visit_lazy(self, stack: LazyStackedTensorDict) -> Description:
        if type(stack) is not LazyStackedTensorDict:
            raise _NotOneBuffer
        rebuild, tree = super().visit_lazy(stack)
        tree["batch"] = list(stack.batch_size)
        if stack._stack_dim_name is not None:
            tree["name"] = stack._stack_dim_name
        return rebuild, tree

    def visit_value(self, node: NonTensorData) -> Description:
        if type(node) not in (NonTensorData, MetaData):  # typed forms of MetaData
            raise _NotOneBuffer
        rebuild, tree = super().visit_value(node)
        if not exact_json(tree["value"]):
            tree["pickled_value"] = self._by_pickle(tree.pop("value"))
        return rebuild, tree

    def visit_values(self, node: NonTensorStack) -> Description:
        if type(node) is not NonTensorStack:
            raise _NotOneBuffer
        rebuild, tree = super().visit_values(node)
        if not exact_json(tree["values"]):
            tree["pickled_values"] = self._by_pickle(tree.pop("values"))
        return rebuild, tree

    def visit_leaf(self, tensor: torch.Tensor) -> tuple[int | Rebuild, Any]:
        """A plain CPU tensor goes into the buffer; another one (memory-mapped: its file
        reference, off the CPU, requiring grad, a subclass) is pickled in the stream as
        it was, without taking the others out of the buffer."""
        if _fits(tensor):
            return super().visit_leaf(tensor)
        self.beside += 1
        return (lambda views, target: tensor), {"pickled_tensor": self._by_pickle(tensor)}

    def visit_other(self, node: Any) -> Description:
        raise _NotOneBuffer  # a PersistentTensorDict, TensorDictParams...: pickled as before

    def _name_of(self, cls: type, name: str) -> str:
        """The name the header gives ``cls``: its qualified name, made unique where two
        classes share one (a class factory's ``make.<locals>.Rec``, called twice)."""
        unique, count = name, 1
        while self.classes.setdefault(unique, cls) is not cls:
            count += 1
            unique = f"{name}#{count}"
        return unique

    def _by_pickle(self, value: Any) -> int:
        """Where the pickle stream holds ``value``, which the header cannot."""
        self.values.append(value)
        return len(self.values) - 1


# --- the receiver --------------------------------------------------------------------------


def _from_out_of_band(
    header: str, classes: tuple[type, ...], values: tuple[Any, ...], data: Any
) -> Any:
    """The collection :func:`reduce_out_of_band` pickled, its tensors views of ``data``
    (read-only ones if ``data`` is read-only)."""
    description = _read_header(header)
    known = _known_classes(description.get("classes"), classes)
    tree = description["tree"]
    _put_values(tree, values)
    layout: Layout = [
        (dtype_named(name, "a pickled collection"), torch.Size(shape), offset)
        for name, shape, offset in description["leaves"]
    ]
    buffer, readonly = _tensor_over(data, description["size"])
    views = _leaf_views(buffer, layout)
    if readonly:
        jagged = _jagged_parts(tree)
        views = [
            view.clone() if position in jagged else read_only(view)
            for position, view in enumerate(views)
        ]  # a jagged tensor's parts are copied: its own ops would not see the check
        buffer = read_only(buffer)
    rebuild = rebuild_from_description(tree, None, known)
    node = rebuild(views, Target(_CPU, False))
    leaves = _Leaves().of(node)
    if len(leaves) == len(layout):  # every tensor a view of the buffer (none beside it)
        state = Consolidated(buffer, leaves, layout, rebuild, standalone=False)
        _attach(node, state)  # moves with one copy; pickles again without a copy
    return node


def _known_classes(names: Any, classes: tuple[type, ...]) -> dict[str, type]:
    """The classes pickled beside the header, by the names the sender's tree gives them.
    The names travel in the header: a class rebuilt by value (cloudpickle's, Ray's, for
    a class defined inside a function) may not carry the qualified name it had where it
    was pickled (``make.<locals>.In`` arrives as ``In``)."""
    checked = [_checked(cls) for cls in classes]
    if isinstance(names, list) and len(names) == len(checked):
        return dict(zip(map(str, names), checked))
    return {f"{cls.__module__}.{cls.__qualname__}": cls for cls in checked}  # older senders


def _read_header(header: Any) -> dict[str, Any]:
    description = json.loads(header) if isinstance(header, str) else None
    if not isinstance(description, dict) or description.get("format") != FORMAT:
        raise PickleRefusedError("a protocol-5 pickle of a tclass collection has no valid header")
    if description.get("version") != VERSION:
        msg = (
            f"this pickle was written with tclass pickle format {description.get('version')}, "
            f"this tclass reads format {VERSION}: unpickle it with the tclass that wrote it"
        )
        raise PickleRefusedError(msg)
    return description


def _checked(cls: Any) -> type:
    if isinstance(cls, type) and (is_record_class(cls) or issubclass(cls, TensorDictBase)):
        return cls
    raise PickleRefusedError(
        f"a protocol-5 pickle of a tclass collection names {cls!r}, which is not a record class"
    )


def _put_values(tree: dict[str, Any], values: tuple[Any, ...]) -> None:
    """Replaces the references to values pickled in the stream by the values."""
    for key in ("value", "values", "tensor"):
        if f"pickled_{key}" in tree:
            tree[key] = values[tree.pop(f"pickled_{key}")]
    for child in _children(tree):
        _put_values(child, values)


def _children(tree: dict[str, Any]) -> list[dict[str, Any]]:
    if "content" in tree:
        return [tree["content"]]
    if "members" in tree:
        return list(tree["members"])
    entries = tree.get("entries", {})
    return [entry for entry in entries.values() if isinstance(entry, dict)]


def _jagged_parts(tree: dict[str, Any]) -> set[int]:
    """The leaf positions that are parts of jagged nested tensors."""
    found: set[int] = set(tree.get("jagged", ()))
    for child in _children(tree):
        found |= _jagged_parts(child)
    return found


def _tensor_over(data: Any, size: int) -> tuple[torch.Tensor, bool]:
    """``data`` as a flat uint8 tensor without a copy, and whether it is read-only (an
    unaligned buffer is copied: the leaves need their dtype's alignment)."""
    view = memoryview(data)
    if view.nbytes != size:
        msg = f"a pickled collection expects a buffer of {size} bytes, got {view.nbytes}"
        raise PickleRefusedError(msg)
    if not size:
        return torch.empty(0, dtype=torch.uint8), False
    if view.ndim != 1 or view.format != "B":
        view = view.cast("B")
    readonly = view.readonly
    with warnings.catch_warnings():  # torch warns that it has no read-only tensors
        warnings.filterwarnings("ignore", message="The given buffer is not writable")
        buffer = torch.frombuffer(view, dtype=torch.uint8)
    if buffer.data_ptr() % ALIGN:
        return buffer.clone(), False
    return buffer, readonly


def _leaf_views(buffer: torch.Tensor, layout: Layout) -> list[torch.Tensor]:
    """The leaves over ``buffer``'s memory without a copy, each on a storage of its own
    (as the peer's unpickled leaves are): ``torch.save`` of the collection, or of its
    leaves, refuses tensors of different dtypes that view one storage."""
    if not buffer.numel():
        return leaf_views(buffer, layout)
    memory = buffer.numpy()  # the buffer's memory (it keeps the transport's alive)
    views = []
    with warnings.catch_warnings():  # torch warns that it has no read-only tensors
        warnings.filterwarnings("ignore", message="The given buffer is not writable")
        for dtype, shape, offset in layout:
            numel = shape.numel()
            if not numel:
                views.append(torch.empty(shape, dtype=dtype))
                continue
            leaf = torch.frombuffer(memory, dtype=dtype, count=numel, offset=offset)
            views.append(leaf.view(shape))
    return views


def _reduce_for_ipc(node: Any) -> tuple[Any, ...]:
    return node.__reduce__()  # type: ignore[no-any-return]


# multiprocessing pickles with the default protocol, 5 from Python 3.14 on, without a
# buffer_callback: there a collection keeps travelling leaf by leaf, so that torch's
# reductions share its tensors' memory with the other process instead of copying it.
ForkingPickler.register(TensorDict, _reduce_for_ipc)
ForkingPickler.register(LazyStackedTensorDict, _reduce_for_ipc)

# --- implementations of the base layer's methods (``_base/_provided.py``) ---------------

ENGINE.reduce_out_of_band = reduce_out_of_band
