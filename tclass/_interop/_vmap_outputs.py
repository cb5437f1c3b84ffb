"""``torch.vmap`` returning an ``UnbatchedTensor``: the tensor itself, whose batch size
gains the mapped dim, as the peer's vmap gives it back.

An ``UnbatchedTensor`` belongs to the whole batch, so vmap's function gets it as it is
(see ``_pytree``) and may return it. vmap would then expand it along the mapped dim into
a plain tensor (a copy of the view, its class lost); the peer returns the same tensor
with the mapped dim inserted in its batch size at ``out_dims``, and so does tclass: vmap
turns each output into its result with ``torch._functorch.vmap._maybe_remove_batch_dim``,
which is wrapped here for ``UnbatchedTensor`` outputs that vmap did not batch at that
level (any other output goes to torch's function unchanged).

vmap's steps that rebuild collections, its batched inputs (``_create_batched_inputs``)
and its outputs (``_unwrap_batched``), are noted too (by ``_flat_vmap``, which calls
them: the peer replaces both with its own when imported, not it), the step under way
(``vmap_step``): under ``torch.compile`` the pytree code cannot read vmap's frames or
functorch's levels (Dynamo traces neither), and a collection rebuilt there would keep
the batch size it was flattened with (a TensorDict built inside vmap came back with
batch size ``[]``). The note is a Python list Dynamo traces as any other.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import torch
import torch._functorch.vmap as _vmap
from torch._C._functorch import maybe_get_level

from tclass._core._unbatched import UnbatchedTensor

__all__ = ["VmapStep", "register_vmap_outputs", "vmap_step"]

_torch_remove = _vmap._maybe_remove_batch_dim
_torch_flat_vmap = _vmap._flat_vmap


class VmapStep(NamedTuple):
    """A step of vmap rebuilding collections: ``inputs`` (with the flat ``in_dims`` of
    its leaves) or not (its outputs, with ``out_dims`` and the mapped ``size``)."""

    inputs: bool
    dims: Any
    size: int


_STEPS: list[VmapStep] = []  # the steps under way, innermost last


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
        _STEPS.append(VmapStep(False, out_dims, batch_size))
        return outputs

    _STEPS.append(VmapStep(True, flat_in_dims, 0))
    try:
        return _torch_flat_vmap(
            noted, batch_size, flat_in_dims, flat_args, args_spec, out_dims, randomness, **kwargs
        )
    finally:
        del _STEPS[depth:]


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


register_vmap_outputs()
