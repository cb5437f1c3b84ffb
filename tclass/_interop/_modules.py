"""Module interop: the parameters and buffers of ``torch.nn`` modules as TensorDicts.

* :func:`module_tensordict` (``from_module``) reads a module's parameters and buffers
  into a TensorDict with one nested TensorDict per submodule. The leaves *are* the
  module's tensors (no copy), as in the peer: ``params["0", "weight"] is module[0].weight``.
* :func:`swap_into_module` (``to_module``) puts a TensorDict's tensors into a module, after
  checking every key and shape first (an error changes nothing). It returns the tensors
  the module held before, as a TensorDict; a ``with`` block on that TensorDict puts them
  back on exit, which is how ``with params.to_module(module): y = module(x)`` restores
  the module.
* :func:`stack_module_params` (``from_modules``) stacks the parameters of modules of one
  architecture into new parameters with a leading ensemble dim, for ``torch.vmap``.
* ``as_module=True`` gives a :class:`~tclass._interop._params.TensorDictParams` instead
  (an ``nn.Module`` registering them, as the peer's).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, Literal, NamedTuple, overload

import torch
from torch import nn

from tclass._base._provided import INTEROP
from tclass._base._tensordict_base import Value
from tclass._base.implemented._collection import TensorCollection
from tclass._core._records import is_record_class, storage_of
from tclass._core._tracing import tracing
from tclass._engine._lazy._stack import LazyStackedTensorDict
from tclass._engine._nontensor import _NonTensorNode
from tclass._engine._td import TensorDict
from tclass._interop._lazy_params import (
    is_lazy,
    is_lazy_stack,
    stack_lazy,
    watch_materialization,
)
from tclass._interop._params import TensorDictParams
from tclass.errors import (
    EntryTypeError,
    KeyNotFoundError,
    ModuleStructureError,
    NotAMappingError,
    ShapeError,
    StackError,
    UnsupportedError,
)

__all__ = [
    "as_collection",
    "from_module",
    "from_modules",
    "module_tensordict",
    "stack_module_params",
    "swap_into_module",
]

_NO_DIMS = torch.Size([])


def own_tensors(module: nn.Module) -> Iterator[tuple[str, torch.Tensor]]:
    """A module's direct parameters then buffers, skipping empty (``None``) slots."""
    for slots in (module._parameters, module._buffers):
        for name, tensor in slots.items():
            if tensor is not None:
                yield name, tensor


# --- from_module ---------------------------------------------------------------------------


def module_tensordict(
    module: nn.Module,
    *,
    use_state_dict: bool = False,
    filter_empty: bool = True,
    caller: str = "from_module",
    allow_lazy: bool = False,
) -> TensorDict:
    """The parameters and buffers of ``module`` (the tensors themselves) as a TensorDict
    with batch size ``[]``: a nested TensorDict per submodule, parameters and buffers as
    leaves. ``use_state_dict`` reads ``module.state_dict()`` instead, so that state-dict
    hooks run: its tensors, detached from the parameters as a state dict's are (as the
    peer's); ``filter_empty`` drops submodules that hold no tensor; ``allow_lazy`` keeps
    the uninitialized parameters of lazy modules (``from_modules`` stacks them)."""
    _check_module(module, caller, None)
    if use_state_dict:
        return _from_state_dict(module, caller)
    return _from_attributes(module, filter_empty, caller if not allow_lazy else None, ())


def _from_attributes(
    module: nn.Module, filter_empty: bool, caller: str | None, path: tuple[str, ...]
) -> TensorDict:
    """``caller``: who refuses uninitialized (lazy) parameters; None keeps them."""
    if isinstance(module, TensorDictParams):  # its leaves nested as it holds them (the peer's)
        return _leaf_tree(module, caller, path)
    entries: dict[str, Value] = {}
    for name, tensor in own_tensors(module):
        if caller is not None:
            _check_initialized(tensor, path + (name,), caller)
        entries[name] = tensor
    for name, child in module._modules.items():
        if child is None:
            continue
        nested = _from_attributes(child, filter_empty, caller, path + (name,))
        if filter_empty and not nested._entries():
            continue
        entries[name] = nested
    return TensorDict._new_unchecked(entries, _NO_DIMS, None)


def _leaf_tree(params: TensorCollection, caller: str | None, path: tuple[str, ...]) -> TensorDict:
    """The tensors of a TensorDictParams (or of a collection nested in one) under their
    keys, nested collections as nested TensorDicts: ``from_module(m)["p", "n", "b"]``, where
    the module's parameter names are dotted (``p.n.b``)."""
    entries: dict[str, Value] = {}
    for key, value in params._items():
        if isinstance(value, torch.Tensor):
            if caller is not None:
                _check_initialized(value, path + (key,), caller)
            entries[key] = value
        elif isinstance(value, TensorCollection) and not isinstance(value, _NonTensorNode):
            nested = _leaf_tree(value, caller, path + (key,))
            if nested._entries():
                entries[key] = nested
    return TensorDict._new_unchecked(entries, _NO_DIMS, None)


def _from_state_dict(module: nn.Module, caller: str) -> TensorDict:
    root: dict[str, Any] = {}
    for name, value in module.state_dict().items():
        path = tuple(name.split("."))
        if not isinstance(value, torch.Tensor):
            raise EntryTypeError(
                f"{caller}(use_state_dict=True): the state dict of {type(module).__name__} holds "
                f"a {type(value).__name__} at {name!r} (extra state), which is not a tensor; "
                "pass use_state_dict=False to read the parameters and buffers themselves"
            )
        _check_initialized(value, path, caller)
        node = root
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = value
    return _nested_tensordict(root)


def _nested_tensordict(tree: dict[str, Any]) -> TensorDict:
    entries: dict[str, Value] = {
        key: _nested_tensordict(value) if isinstance(value, dict) else value
        for key, value in tree.items()
    }
    return TensorDict._new_unchecked(entries, _NO_DIMS, None)


def _check_module(module: object, caller: str, index: int | None) -> None:
    if not isinstance(module, nn.Module):
        which = "" if index is None else f" (argument {index})"
        raise NotAMappingError(  # an AttributeError too, as the peer's
            f"{caller} expects a torch.nn.Module{which}, got {type(module).__name__}"
        )


def _check_initialized(tensor: torch.Tensor, path: tuple[str, ...], caller: str) -> None:
    if is_lazy(tensor):
        raise UnsupportedError(
            f"{caller}: {_dotted(path)} is an uninitialized parameter of a lazy module, which has "
            "no shape yet; run the module once on an input (or call initialize_parameters) first"
        )


def _dotted(path: Sequence[str]) -> str:
    return repr(".".join(path))


# --- to_module -----------------------------------------------------------------------------


class _Write(NamedTuple):
    """One tensor to put into a module: ``slots[name] = new`` (slots is the module's
    ``_parameters`` or ``_buffers``), where ``old`` was."""

    slots: dict[str, Any]
    name: str
    old: torch.Tensor | None
    new: torch.Tensor
    path: tuple[str, ...]


def swap_into_module(
    params: TensorCollection,
    module: nn.Module,
    *,
    inplace: bool | None = False,
    return_swap: bool = True,
    swap_dest: TensorCollection | None = None,
    use_state_dict: bool = False,
    non_blocking: bool = False,
    preserve_module_state: bool = True,
) -> Any:
    """Puts the tensors of ``params`` into ``module`` (see ``TensorDictBase.to_module``).

    Every key and shape is checked before anything changes. Returns the tensors the
    module held before, as a collection of the kind of ``params`` (``None`` without
    ``return_swap``); a ``with`` block on it puts them back on exit.
    """
    if use_state_dict:
        return _swap_through_state_dict(
            params, module, inplace, return_swap, swap_dest, preserve_module_state
        )
    if isinstance(storage_of(params), LazyStackedTensorDict):  # its members stacked, as the peer
        params = storage_of(params).to_tensordict()
    inplace = bool(inplace)
    _check_module(module, "to_module", None)
    writes: list[_Write] = []
    _plan_writes(params, module, (), writes, inplace)
    # The old tensors (copies, for inplace: the copy overwrites them), and the collection
    # returned, are built before anything changes, so that any error leaves the module be.
    olds = [(write.path, write.old) for write in writes if write.old is not None]
    if inplace and return_swap:
        olds = [(path, old.clone()) for path, old in olds]  # in its graph, as the peer's
    result = as_collection(type(params), _tree(olds), "to_module") if return_swap else None
    if inplace:  # every slot holds a tensor: _check_fits refuses None slots
        _copy_into(writes, [write.new for write in writes], non_blocking)
    else:
        for write in writes:
            write.slots[write.name] = _module_tensor(write.old, write.new, preserve_module_state)
        _watch_lazy_stacks(module, writes)
    if result is None:
        return None
    if swap_dest is not None:
        result = swap_dest.update(result)
    storage_of(result)._call_on_exit(_undo(writes, olds, inplace, non_blocking))
    return result


def _swap_through_state_dict(
    params: TensorCollection,
    module: nn.Module,
    inplace: bool | None,
    return_swap: bool,
    swap_dest: TensorCollection | None,
    preserve_module_state: bool,
) -> Any:
    """``to_module(use_state_dict=True)``: the tensors put into ``module`` as without it
    (checked first, undone on exit), then given to ``module.load_state_dict(...,
    assign=True)`` so that its load hooks see (and may change) them, as in the peer."""
    if inplace:
        raise UnsupportedError(
            "to_module(use_state_dict=True) assigns the tensors through load_state_dict; "
            "it cannot also copy them in place (drop inplace=True)"
        )
    result = swap_into_module(
        params, module, return_swap=return_swap, swap_dest=swap_dest,
        preserve_module_state=preserve_module_state,
    )  # fmt: skip
    state = {
        _key_name(key): value
        for key, value in params.items(include_nested=True, leaves_only=True)
        if isinstance(value, torch.Tensor)
    }
    module.load_state_dict(state, strict=False, assign=True)
    return result


def _undo(
    writes: list[_Write], olds: list[Any], inplace: bool, non_blocking: bool
) -> Callable[[], None]:
    """What puts the module's previous tensors back (``with previous:`` runs it)."""
    if inplace:
        return lambda: _copy_into(writes, [old for _, old in olds], non_blocking)
    return lambda: _restore(writes)  # slots that held None are emptied again


def _plan_writes(
    params: TensorCollection,
    module: nn.Module,
    path: tuple[str, ...],
    writes: list[_Write],
    inplace: bool,
    prefix: str = "",
) -> None:
    """``prefix``: the dotted name, in a TensorDictParams ``module``, of the nested
    collection ``params`` writes (its leaves are that module's parameters and buffers)."""
    for key, value in params._items():
        where = path + (key,)
        if isinstance(value, _NonTensorNode):
            raise EntryTypeError(
                f"to_module: {_dotted(where)} holds a Python value ({value.tolist()!r}); only "
                "tensors can go into a module: drop it first (params.exclude(key))"
            )
        name = prefix + key
        child = module._modules.get(name)
        slots = _slots_holding(module, name)
        if isinstance(value, TensorCollection):
            if child is None and slots is None and isinstance(module, TensorDictParams):
                _plan_writes(value, module, where, writes, inplace, name + ".")
                continue
            if child is None:
                raise _not_a_submodule(module, where, slots is not None)
            _plan_writes(value, child, where, writes, inplace)
            continue
        if slots is None:
            raise _not_a_tensor_slot(module, where, child)
        old = slots[name]
        _check_fits(module, where, old, value, inplace)
        writes.append(_Write(slots, name, old, value, where))


def _slots_holding(module: nn.Module, key: str) -> dict[str, Any] | None:
    if key in module._parameters:
        return module._parameters
    if key in module._buffers:
        return module._buffers
    return None


def _names_of(module: nn.Module) -> str:
    names = [
        *module._parameters,
        *module._buffers,
        *(k for k, v in module._modules.items() if v is not None),
    ]
    return ", ".join(names) if names else "nothing"


def _not_a_submodule(
    module: nn.Module, where: tuple[str, ...], is_tensor: bool
) -> TypeError | KeyError:
    owner = type(module).__name__
    if is_tensor:
        return ModuleStructureError(
            f"to_module: {_dotted(where)} is a tensor of {owner}, but the TensorDict "
            "holds a nested "
            "collection there; the structure must be the one TensorDict.from_module(module) gives"
        )
    return KeyNotFoundError(
        f"to_module: {_dotted(where)} is not a submodule of {owner} (it has: {_names_of(module)}); "
        "the keys must be those TensorDict.from_module(module) gives"
    )


def _not_a_tensor_slot(
    module: nn.Module, where: tuple[str, ...], child: nn.Module | None
) -> TypeError | KeyError:
    owner = type(module).__name__
    if child is not None:
        return EntryTypeError(
            f"to_module: {_dotted(where)} is a submodule ({type(child).__name__}) of "
            f"{owner}, but the "
            "TensorDict holds a tensor there; nest that submodule's tensors under its name, "
            "as TensorDict.from_module(module) does"
        )
    return KeyNotFoundError(
        f"to_module: {_dotted(where)} is not a parameter, buffer or submodule of {owner} "
        f"(it has: {_names_of(module)}); the keys must be those "
        "TensorDict.from_module(module) gives"
    )


def _check_fits(
    module: nn.Module,
    where: tuple[str, ...],
    old: torch.Tensor | None,
    new: torch.Tensor,
    inplace: bool,
) -> None:
    if old is None:
        if inplace:
            raise EntryTypeError(
                f"to_module(inplace=True): {_dotted(where)} of {type(module).__name__} is None, so "
                "there is no tensor to copy into; call to_module without inplace to set it"
            )
        return
    if is_lazy(old) or old.shape == new.shape:
        return
    hint = ""
    if new.shape[1:] == old.shape:
        hint = (
            "; it looks like a stack of parameters (from_modules): call to_module inside "
            "torch.vmap, which maps over the first dim"
        )
    raise ShapeError(
        f"to_module: {_dotted(where)} has shape {list(new.shape)}, but the tensor it would replace "
        f"in {type(module).__name__} has shape {list(old.shape)}{hint}. Nothing was changed"
    )


def _module_tensor(
    old: torch.Tensor | None, new: torch.Tensor, preserve_module_state: bool
) -> torch.Tensor:
    """What goes into the module: ``new`` itself, or, where it replaces a parameter and is
    a plain tensor outside autograd (loaded weights, a detached copy), a parameter over
    the same storage with the old ``requires_grad``, so the module stays trainable.

    Under ``torch.compile`` the parameter is made of ``new`` itself: Dynamo lifts a
    parameter made of a tensor given to the compiled function out of the graph, but
    breaks the graph at one made of a tensor computed in it (``new.detach()`` is one)."""
    if (
        preserve_module_state
        and isinstance(old, nn.Parameter)
        and not isinstance(new, nn.Parameter)
        and not new.requires_grad
        and not _functorch_wrapped(new)
    ):
        grad = old.requires_grad and (new.is_floating_point() or new.is_complex())
        data = new if tracing() else new.detach()  # detach: a plain tensor view
        return nn.Parameter(data, requires_grad=grad)
    return new


def _functorch_wrapped(tensor: torch.Tensor) -> bool:
    """Whether a functorch transform (vmap, grad) wrapped ``tensor``; under
    ``torch.compile``, which cannot call functorch's test (Dynamo gave up the frame:
    ``to_module`` inside a compiled ``vmap`` ran eagerly), whether one is active."""
    if torch.compiler.is_compiling():
        return bool(torch._C._are_functorch_transforms_active())
    return bool(torch._C._functorch.is_functorch_wrapped_tensor(tensor))


def _watch_lazy_stacks(module: nn.Module, writes: list[_Write]) -> None:
    """For each submodule given stacks of lazy parameters (``from_modules`` of lazy
    modules), a hook that gives it vmap's view of them once they are materialized."""
    owners: dict[tuple[str, ...], list[str]] = {}
    for write in writes:
        if is_lazy_stack(write.new):
            owners.setdefault(write.path[:-1], []).append(write.name)
    for path, names in owners.items():
        watch_materialization(module.get_submodule(".".join(path)), names)


def _restore(writes: list[_Write]) -> None:
    for write in reversed(writes):  # a key written twice gets its first value back
        write.slots[write.name] = write.old


def _copy_into(writes: list[_Write], values: Sequence[torch.Tensor], non_blocking: bool) -> None:
    with torch.no_grad():
        for write, value in zip(writes, values):
            if write.old is not None:
                write.old.copy_(value, non_blocking=non_blocking)


def _tree(leaves: Sequence[tuple[tuple[str, ...], torch.Tensor]]) -> TensorDict:
    root: dict[str, Any] = {}
    for path, tensor in leaves:
        node = root
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = tensor
    return _nested_tensordict(root)


# --- from_modules --------------------------------------------------------------------------


def stack_module_params(
    modules: Sequence[nn.Module], *, use_state_dict: bool = False, expand_identical: bool = False
) -> TensorDict:
    """New parameters (and buffers) stacking those of ``modules`` along a leading dim,
    with the layout of :func:`module_tensordict` and batch size ``[len(modules)]``.
    ``expand_identical``: a tensor every module shares (one object) is expanded along
    the new dim instead (a view of it, not a parameter: gradients reach the shared one).

    Raises:
        StackError: if there is no module, or if the modules differ in their keys, shapes,
            dtypes or devices (they must share one architecture).
    """
    if not modules:
        raise StackError(
            "from_modules() needs at least one module (an ensemble of identical modules)"
        )
    for index, module in enumerate(modules):
        _check_module(module, "from_modules", index)
    trees = [
        module_tensordict(
            module, use_state_dict=use_state_dict, caller="from_modules", allow_lazy=True
        )
        for module in modules
    ]
    _check_same_keys(trees, modules)
    return _stack_nodes(trees, (), modules, expand_identical)


def _check_same_keys(trees: Sequence[TensorDict], modules: Sequence[nn.Module]) -> None:
    expected = set(trees[0].keys(include_nested=True, leaves_only=True))
    for index, tree in enumerate(trees[1:], 1):
        keys = set(tree.keys(include_nested=True, leaves_only=True))
        if keys == expected:
            continue
        missing = sorted(map(_key_name, expected - keys))
        extra = sorted(map(_key_name, keys - expected))
        raise StackError(
            f"from_modules: module {index} ({type(modules[index]).__name__}) does not have the "
            f"parameters and buffers of module 0 ({type(modules[0]).__name__}): missing "
            f"{missing or 'none'}, extra {extra or 'none'}. An ensemble needs modules of one "
            "architecture; build them with the same constructor and arguments"
        )


def _key_name(key: str | tuple[str, ...]) -> str:
    return key if isinstance(key, str) else ".".join(key)


def _stack_nodes(
    nodes: Sequence[TensorDict],
    path: tuple[str, ...],
    modules: Sequence[nn.Module],
    expand_identical: bool,
) -> TensorDict:
    entries: dict[str, Value] = {}
    for key, value in nodes[0]._items():
        values: list[Any] = [node._entry(key) for node in nodes]
        if isinstance(value, TensorDict):
            entries[key] = _stack_nodes(values, path + (key,), modules, expand_identical)
        elif expand_identical and all(other is value for other in values):
            entries[key] = value.expand(len(values), *value.shape)
        else:
            entries[key] = _stack_leaves(values, path + (key,), modules)
    return TensorDict._new_unchecked(entries, torch.Size([len(nodes)]), None)


def _stack_leaves(
    values: Sequence[torch.Tensor], path: tuple[str, ...], modules: Sequence[nn.Module]
) -> torch.Tensor:
    first = values[0]
    if any(map(is_lazy, values)):
        return _stack_lazy_leaves(values, path, modules)
    for index, value in enumerate(values[1:], 1):
        if (value.shape, value.dtype, value.device) != (first.shape, first.dtype, first.device):
            raise StackError(
                f"from_modules: {_dotted(path)} is {_describe(value)} in module {index} "
                f"({type(modules[index]).__name__}) but {_describe(first)} in module 0; an "
                "ensemble needs modules of one architecture, dtype and device"
            )
    with torch.no_grad():
        stacked = torch.stack([value.detach() for value in values])
    if isinstance(first, nn.Parameter):
        return nn.Parameter(stacked, requires_grad=first.requires_grad)
    return stacked


def _stack_lazy_leaves(
    values: Sequence[torch.Tensor], path: tuple[str, ...], modules: Sequence[nn.Module]
) -> torch.Tensor:
    """The stack of the uninitialized parameters (or buffers) of lazy modules: one that
    takes the ensemble dims first when the module it is put into materializes it."""
    first = values[0]
    for index, value in enumerate(values[1:], 1):
        if _lazy_kind(value) != _lazy_kind(first):
            raise StackError(
                f"from_modules: {_dotted(path)} is {_lazy_state(value)} in module {index} "
                f"({type(modules[index]).__name__}) but {_lazy_state(first)} in module 0; an "
                "ensemble of lazy modules needs them all uninitialized (or all run once "
                "first), of one dtype and device"
            )
    return stack_lazy(list(values))


def _lazy_kind(tensor: torch.Tensor) -> tuple[Any, ...]:
    return is_lazy(tensor), type(tensor), tensor.dtype, tensor.device


def _lazy_state(tensor: torch.Tensor) -> str:
    state = "uninitialized" if is_lazy(tensor) else "initialized"
    return f"{state} ({type(tensor).__name__}, {tensor.dtype} on {tensor.device})"


def _describe(tensor: torch.Tensor) -> str:
    return f"{str(tensor.dtype).removeprefix('torch.')}{list(tensor.shape)} on {tensor.device}"


# --- public entry points -------------------------------------------------------------------


def as_collection(cls: type, td: TensorDict | LazyStackedTensorDict, caller: str) -> Any:
    """``td`` as an instance of ``cls``: itself for TensorDict (and the abstract bases),
    the tensorclass ``cls`` over its entries otherwise."""
    if issubclass(cls, LazyStackedTensorDict):
        raise UnsupportedError(
            f"LazyStackedTensorDict.{caller}: module parameters are read as a dense TensorDict; "
            f"call TensorDict.{caller} (stacks of modules are dense too, ready for torch.vmap)"
        )
    if is_record_class(cls):
        return cls.from_tensordict(td)  # type: ignore[attr-defined]
    return td


@overload
def from_module(
    module: nn.Module,
    as_module: Literal[False] = ...,
    lock: bool = ...,
    use_state_dict: bool = ...,
    filter_empty: bool = ...,
) -> TensorDict: ...
@overload
def from_module(
    module: nn.Module,
    as_module: Literal[True],
    lock: bool = ...,
    use_state_dict: bool = ...,
    filter_empty: bool = ...,
) -> TensorDictParams: ...
@overload
def from_module(
    module: nn.Module,
    as_module: bool = ...,
    lock: bool = ...,
    use_state_dict: bool = ...,
    filter_empty: bool = ...,
) -> TensorDict | TensorDictParams: ...


def from_module(
    module: nn.Module,
    as_module: bool = False,
    lock: bool = True,
    use_state_dict: bool = False,
    filter_empty: bool = True,
) -> TensorDict | TensorDictParams:
    """The parameters and buffers of ``module`` as a TensorDict (locked by default, as
    the peer's function is; ``TensorDict.from_module`` is not). See
    ``TensorDictBase.from_module``."""
    return collection_from_module(  # type: ignore[no-any-return]
        TensorDict,
        module,
        as_module,
        lock,
        use_state_dict=use_state_dict,
        filter_empty=filter_empty,
    )


@overload
def from_modules(
    *modules: nn.Module,
    as_module: Literal[False] = ...,
    lock: bool = ...,
    use_state_dict: bool = ...,
    lazy_stack: bool = ...,
    expand_identical: bool = ...,
) -> TensorDict: ...
@overload
def from_modules(
    *modules: nn.Module,
    as_module: Literal[True],
    lock: bool = ...,
    use_state_dict: bool = ...,
    lazy_stack: bool = ...,
    expand_identical: bool = ...,
) -> TensorDictParams: ...
@overload
def from_modules(
    *modules: nn.Module,
    as_module: bool = ...,
    lock: bool = ...,
    use_state_dict: bool = ...,
    lazy_stack: bool = ...,
    expand_identical: bool = ...,
) -> TensorDict | TensorDictParams: ...


def from_modules(
    *modules: nn.Module,
    as_module: bool = False,
    lock: bool = True,
    use_state_dict: bool = False,
    lazy_stack: bool = False,
    expand_identical: bool = False,
) -> TensorDict | TensorDictParams:
    """The parameters and buffers of identical ``modules``, stacked into new parameters
    along a leading dim (an ensemble for ``torch.vmap``). See ``TensorDictBase.from_modules``."""
    return collection_from_modules(  # type: ignore[no-any-return]
        TensorDict, modules, as_module, lock, use_state_dict, lazy_stack, expand_identical
    )


def collection_from_module(
    cls: type, module: nn.Module, as_module: bool, lock: bool, *, use_state_dict: bool,
    filter_empty: bool,
) -> Any:  # fmt: skip
    """``cls.from_module(module, ...)``: see ``TensorDictBase.from_module``."""
    td = module_tensordict(module, use_state_dict=use_state_dict, filter_empty=filter_empty)
    return _finish(cls, td, as_module, lock, "from_module")


def collection_from_modules(
    cls: type, modules: Sequence[nn.Module], as_module: bool, lock: bool, use_state_dict: bool,
    lazy_stack: bool, expand_identical: bool,
) -> Any:  # fmt: skip
    """``cls.from_modules(*modules, ...)``: see ``TensorDictBase.from_modules``."""
    if lazy_stack:
        return _lazy_stack_of_modules(cls, modules, as_module, lock, use_state_dict)
    td = stack_module_params(
        modules, use_state_dict=use_state_dict, expand_identical=expand_identical
    )
    return _finish(cls, td, as_module, lock, "from_modules")


def _lazy_stack_of_modules(
    cls: type, modules: Sequence[nn.Module], as_module: bool, lock: bool, use_state_dict: bool
) -> Any:
    """``from_modules(lazy_stack=True)``: a lazy stack of each module's own parameters
    (not copies: gradients reach the modules), as the peer."""
    if not modules:
        raise StackError("from_modules() needs at least one module (an ensemble of modules)")
    for index, module in enumerate(modules):
        _check_module(module, "from_modules", index)
        if any(is_lazy(p) for p in module.parameters()):
            raise UnsupportedError(  # the peer's words (its spelling), which code matches
                "from_modules: lasy_stack=True is not compatible with lazy modules. Module "
                f"{index} ({type(module).__name__}) has uninitialized (lazy) parameters, "
                "which a lazy stack cannot hold; use lazy_stack=False, or run each module "
                "once first"
            )
    if as_module:
        raise UnsupportedError(
            "from_modules(lazy_stack=True, as_module=True): a lazy stack cannot be held "
            "within a TensorDictParams; pass as_module=False, or lazy_stack=False for a "
            "dense stack of new parameters"
        )
    trees = [
        module_tensordict(module, use_state_dict=use_state_dict, caller="from_modules")
        for module in modules
    ]
    # Members may differ (keys, shapes: an ensemble of different architectures), as in
    # the peer's lazy stack: each module's tensors stay its own.
    result = as_collection(cls, LazyStackedTensorDict(*trees, stack_dim=0), "from_modules")
    return result.lock_() if lock else result


def _finish(cls: type, td: TensorDict, as_module: bool, lock: bool, caller: str) -> Any:
    result = as_collection(cls, td, caller)  # a record class checks its fields
    if as_module:  # the peer's: buffers stay buffers; a record keeps its class inside
        result = TensorDictParams(result, no_convert=True)
    if lock:
        result.lock_()
    return result


# --- implementations of the base layer's methods (``_base/_provided.py``) ---------------

INTEROP.collection_from_module = collection_from_module
INTEROP.collection_from_modules = collection_from_modules
INTEROP.swap_into_module = swap_into_module
