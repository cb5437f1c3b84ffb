"""``torch.vmap`` returning an ``UnbatchedTensor``: the tensor itself, whose batch size
gains the mapped dim, as the peer's vmap gives it back.

An ``UnbatchedTensor`` belongs to the whole batch, so vmap's function gets it as it is
(see ``_pytree``) and may return it. vmap would then expand it along the mapped dim into
a plain tensor (a copy of the view, its class lost); the peer returns the same tensor
with the mapped dim inserted in its batch size at ``out_dims``, and so does tclass: vmap
turns each output into its result with ``torch._functorch.vmap._maybe_remove_batch_dim``,
which is wrapped here for ``UnbatchedTensor`` outputs that vmap did not batch at that
level (any other output goes to torch's function unchanged).

A one-entry tuple of ``out_dims`` given for one collection returned alone is read as its
entry, as torch reads it for one tensor (``_unwrap_batched`` wrapped).

vmap's steps that rebuild collections, its batched inputs (``_create_batched_inputs``)
and its outputs (``_unwrap_batched``), are noted too (by ``_flat_vmap``, which calls
them: the peer replaces both with its own when imported, not it), the step under way
(``vmap_step``), with the ``in_dims`` as given (``_process_batched_inputs``, wrapped
too, makes negative ones non-negative): under ``torch.compile`` the pytree code cannot
read vmap's frames or functorch's levels (Dynamo traces neither), and a collection
rebuilt there would keep the batch size it was flattened with (a TensorDict built
inside vmap came back with batch size ``[]``). The note is a Python list Dynamo traces
as any other.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import torch
import torch._functorch.vmap as _vmap
from torch._C._functorch import maybe_get_level
from torch.utils._pytree import _broadcast_to_and_flatten

from tclass._base.implemented._collection import TensorCollection
from tclass._core._tracing import tracing
from tclass._core._unbatched import UnbatchedTensor

__all__ = ["VmapStep", "register_vmap_outputs", "vmap_step"]

_torch_remove = _vmap._maybe_remove_batch_dim
_torch_flat_vmap = _vmap._flat_vmap
# The function that processes vmap's inputs, wrapped: torch's, or what replaced it (the
# peer's, imported after tclass: noted again at the next vmap, see _keep_noting).
_PROCESS = [_vmap._process_batched_inputs]
# The same for the function that rebuilds vmap's outputs.
_UNWRAP = [_vmap._unwrap_batched]


class VmapStep(NamedTuple):
    """A step of vmap rebuilding collections: ``inputs`` (with the flat ``in_dims`` of
    its leaves, as torch made them non-negative, and the ``spec`` of their tree) or not
    (its outputs, with ``out_dims`` and the mapped ``size``)."""

    inputs: bool
    dims: Any
    size: int
    spec: Any = None
    given: list[int | None] | None = None  # the flat in_dims as given (negative ones too)


_STEPS: list[VmapStep] = []  # the steps under way, innermost last
# The flat in_dims as given to the last vmap whose inputs were processed, with the spec
# of its inputs' tree (torch turns negative ones into dims counted from the first).
_GIVEN: list[tuple[Any, list[int | None] | None]] = []


def vmap_step() -> VmapStep | None:
    """The step of vmap rebuilding collections now (its inputs or outputs), or None
    (tree code elsewhere, inside vmap's function too)."""
    return _STEPS[-1] if _STEPS else None


def _flat_vmap(
    func: Any,
    batch_size: int,
    flat_in_dims: list[int | None],
    flat_args: list[Any],
    args_spec: Any,
    out_dims: Any,
    randomness: str,
    **kwargs: Any,
) -> Any:
    # torch's own _flat_vmap (whatever its version does around the steps), its two steps
    # noted: the inputs until ``func`` is called, the outputs once it has returned
    depth = len(_STEPS)

    @functools.wraps(func)
    def noted(*inputs: Any, **options: Any) -> Any:
        del _STEPS[depth:]  # its inputs are built: none noted while ``func`` runs
        outputs = func(*inputs, **options)
        _STEPS.append(VmapStep(False, _one_out_dim(outputs, out_dims), batch_size))
        return outputs

    given = _GIVEN[0][1] if _GIVEN and _GIVEN[0][0] is args_spec else None
    _STEPS.append(VmapStep(True, flat_in_dims, 0, args_spec, given))
    try:
        return _torch_flat_vmap(
            noted, batch_size, flat_in_dims, flat_args, args_spec, out_dims, randomness, **kwargs
        )
    finally:
        del _STEPS[depth:]
        if not depth:
            _GIVEN.clear()  # (holding no tree of inputs past the vmap's call)
            if not tracing():
                _keep_noting()


def _keep_noting() -> None:
    """Wraps the functions that process vmap's inputs and rebuild its outputs again if
    another replaced them."""
    current = _vmap._process_batched_inputs
    if current is not _process_batched_inputs:
        _PROCESS[0] = current
        _vmap._process_batched_inputs = _process_batched_inputs
    rebuild = _vmap._unwrap_batched
    if rebuild is not _unwrap_batched:
        _UNWRAP[0] = rebuild
        _vmap._unwrap_batched = _unwrap_batched


def _one_out_dim(outputs: Any, out_dims: Any) -> Any:
    """vmap's ``out_dims`` for ``outputs``: a one-entry tuple given for one collection
    returned alone is its entry, as torch reads it for one tensor (the peer too)."""
    if isinstance(outputs, TensorCollection) and isinstance(out_dims, tuple):
        if len(out_dims) == 1:
            return out_dims[0]
    return out_dims


def _unwrap_batched(
    batched_outputs: Any, out_dims: Any, vmap_level: int, batch_size: int, func: Any
) -> Any:
    # torch's own (or what replaced it), given the out_dims of one collection returned alone
    dims = _one_out_dim(batched_outputs, out_dims)
    return _UNWRAP[0](batched_outputs, dims, vmap_level, batch_size, func)


def _process_batched_inputs(in_dims: Any, args: tuple[Any, ...], func: Any) -> Any:
    # torch's own, its in_dims noted as given, flat, before it makes them non-negative
    processed = _PROCESS[0](in_dims, args, func)
    _GIVEN[:] = [(processed[3], _broadcast_to_and_flatten(in_dims, processed[3]))]
    return processed


def _remove_batch_dim(
    name: str, batched_output: Any, vmap_level: int, batch_size: int, out_dim: int | None
) -> Any:
    if (
        type(batched_output) is UnbatchedTensor
        and out_dim is not None
        and maybe_get_level(batched_output) != vmap_level
    ):
        batch = list(batched_output.batch_size)
        batch.insert(min(out_dim, len(batch)), batch_size)
        return batched_output._with_batch_size(torch.Size(batch))
    return _torch_remove(name, batched_output, vmap_level, batch_size, out_dim)


def register_vmap_outputs() -> None:
    """Wraps vmap's output step (once) so that it gives ``UnbatchedTensor`` outputs back,
    and its steps rebuilding collections so that they are noted."""
    if _vmap._maybe_remove_batch_dim is _torch_remove:
        _vmap._maybe_remove_batch_dim = _remove_batch_dim
    if _vmap._flat_vmap is _torch_flat_vmap:
        _vmap._flat_vmap = _flat_vmap
    _keep_noting()


register_vmap_outputs()
