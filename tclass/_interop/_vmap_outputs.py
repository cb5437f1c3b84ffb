"""``torch.vmap`` returning an ``UnbatchedTensor``: the tensor itself, whose batch size
gains the mapped dim, as the peer's vmap gives it back.

An ``UnbatchedTensor`` belongs to the whole batch, so vmap's function gets it as it is
(see ``_pytree``) and may return it. vmap would then expand it along the mapped dim into
a plain tensor (a copy of the view, its class lost); the peer returns the same tensor
with the mapped dim inserted in its batch size at ``out_dims``, and so does tclass: vmap
turns each output into its result with ``torch._functorch.vmap._maybe_remove_batch_dim``,
which is wrapped here for ``UnbatchedTensor`` outputs that vmap did not batch at that
level (any other output goes to torch's function unchanged).
"""

from __future__ import annotations

from typing import Any

import torch
import torch._functorch.vmap as _vmap
from torch._C._functorch import maybe_get_level

from tclass._core._unbatched import UnbatchedTensor

__all__ = ["register_vmap_outputs"]

_torch_remove = _vmap._maybe_remove_batch_dim


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
    """Wraps vmap's output step (once) so that it gives ``UnbatchedTensor`` outputs back."""
    if _vmap._maybe_remove_batch_dim is _torch_remove:
        _vmap._maybe_remove_batch_dim = _remove_batch_dim


register_vmap_outputs()
