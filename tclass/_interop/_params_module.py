"""``ParamsModule``: the tensors of a TensorDict registered in an ``nn.Module``, which
``from_module(..., as_module=True)`` and ``from_modules(..., as_module=True)`` return, so
that an optimizer, ``module.to()`` or a parent module see them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Literal, overload

import torch
from torch import nn

from tclass._base._tensordict_base import Value
from tclass._engine._td import TensorDict
from tclass.errors import EntryTypeError

__all__ = ["ParamsModule", "own_tensors"]


def own_tensors(module: nn.Module) -> Iterator[tuple[str, torch.Tensor]]:
    """A module's direct parameters then buffers, skipping empty (``None``) slots."""
    for slots in (module._parameters, module._buffers):
        for name, tensor in slots.items():
            if tensor is not None:
                yield name, tensor


class ParamsModule(nn.Module):
    """An ``nn.Module`` that registers the tensors of a TensorDict (``as_module=True``).

    Parameters stay parameters and other tensors become buffers; nested TensorDicts
    become child ``ParamsModule``s under the same names, so ``named_parameters()`` gives
    ``"0.weight"`` for the key ``("0", "weight")``. Store it in a model to have an
    optimizer, ``model.to()`` or ``state_dict()`` see the tensors; :attr:`params` gives
    them back as a TensorDict (the current tensors, after any ``to()``).

    Example:
        >>> ensemble = tclass.from_modules(*models, as_module=True)
        >>> optimizer = torch.optim.Adam(ensemble.parameters())
        >>> torch.vmap(run, (0, None))(ensemble.params, x)
    """

    def __init__(self, params: TensorDict) -> None:
        super().__init__()
        self._batch_size = params.batch_size
        for key, value in params._items():
            if isinstance(value, TensorDict):
                self.add_module(key, ParamsModule(value))
            elif isinstance(value, nn.Parameter):
                self.register_parameter(key, value)
            elif isinstance(value, torch.Tensor):
                self.register_buffer(key, value)
            else:
                raise EntryTypeError(
                    f"as_module=True: {key!r} holds a {type(value).__name__}; a module can hold "
                    "only tensors and nested TensorDicts of tensors"
                )

    @property
    def params(self) -> TensorDict:
        """The registered tensors (the objects themselves) as a TensorDict."""
        entries: dict[str, Value] = dict(own_tensors(self))
        for name, child in self._modules.items():
            if isinstance(child, ParamsModule):
                entries[name] = child.params
        return TensorDict._new_unchecked(entries, self._batch_size, None)

    def __getitem__(self, key: Any) -> Any:
        """``module["0", "weight"]``: an entry of :attr:`params`."""
        return self.params[key]

    @overload
    def to_module(
        self, module: nn.Module, *, return_swap: Literal[True] = ..., **kwargs: Any
    ) -> TensorDict: ...
    @overload
    def to_module(
        self, module: nn.Module, *, return_swap: bool, **kwargs: Any
    ) -> TensorDict | None: ...

    def to_module(
        self, module: nn.Module, *, return_swap: bool = True, **kwargs: Any
    ) -> TensorDict | None:
        """``self.params.to_module(module, ...)``; also a context manager."""
        previous: TensorDict | None = self.params.to_module(
            module, return_swap=return_swap, **kwargs
        )
        return previous

    def extra_repr(self) -> str:
        return f"batch_size={list(self._batch_size)}"
