"""The module-interop methods every collection has (``from_module``, ``to_module``...).

A mixin of ``TensorDictBase``: each method forwards to its implementation
(``_interop/_modules.py``, read from ``_provided.INTEROP``), which builds on the engine
classes deriving from this mixin.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal, overload

from torch import nn
from typing_extensions import Self

from tclass._base._provided import INTEROP

if TYPE_CHECKING:
    from tclass._base.implemented._collection import TensorCollection
    from tclass._interop._params import TensorDictParams

__all__ = ["ModuleOps"]


class ModuleOps:
    """Reading parameters from, and putting them into, ``torch.nn`` modules."""

    __slots__ = ()

    @overload
    @classmethod
    def from_module(
        cls,
        module: nn.Module,
        as_module: Literal[False] = ...,
        lock: bool = ...,
        use_state_dict: bool = ...,
        filter_empty: bool = ...,
    ) -> Self: ...
    @overload
    @classmethod
    def from_module(
        cls,
        module: nn.Module,
        as_module: Literal[True],
        lock: bool = ...,
        use_state_dict: bool = ...,
        filter_empty: bool = ...,
    ) -> TensorDictParams: ...
    @overload
    @classmethod
    def from_module(
        cls,
        module: nn.Module,
        as_module: bool = ...,
        lock: bool = ...,
        use_state_dict: bool = ...,
        filter_empty: bool = ...,
    ) -> Self | TensorDictParams: ...

    @classmethod
    def from_module(
        cls,
        module: nn.Module,
        as_module: bool = False,
        lock: bool = False,
        use_state_dict: bool = False,
        filter_empty: bool = True,
    ) -> Self | TensorDictParams:
        """The parameters and buffers of ``module`` in a collection: one nested
        TensorDict per submodule (``params["0", "weight"]`` is ``module[0].weight``).

        The leaves are the module's own tensors, not copies, so writes reach the module
        (``.clone()`` first for a copy, as ``TensorDict.from_module(m).clone().zero_()``).
        On a tensorclass whose fields are the module's names (``weight``, ``bias``...),
        ``P.from_module(linear)`` returns a ``P``.

        Args:
            module: the module to read.
            as_module: return a :class:`~tclass.TensorDictParams`, an ``nn.Module``
                registering the tensors (for an optimizer or a parent module).
            lock: lock the result (``tclass.from_module`` locks by default; this method,
                like the peer's, does not).
            use_state_dict: read ``module.state_dict(keep_vars=True)`` instead, so that
                state-dict hooks run.
            filter_empty: leave out submodules without tensors (``nn.ReLU``...); if
                false they appear as empty TensorDicts.

        Raises:
            EntryTypeError: if ``module`` is not an ``nn.Module``.
            UnsupportedError: for a lazy module not run yet (its parameters have no shape),
                or on ``LazyStackedTensorDict`` (module parameters are dense).
        """
        return INTEROP.collection_from_module(  # type: ignore[no-any-return]
            cls, module, as_module, lock, use_state_dict=use_state_dict, filter_empty=filter_empty
        )

    @overload
    @classmethod
    def from_modules(
        cls,
        *modules: nn.Module,
        as_module: Literal[False] = ...,
        lock: bool = ...,
        use_state_dict: bool = ...,
        lazy_stack: bool = ...,
        expand_identical: bool = ...,
    ) -> Self: ...
    @overload
    @classmethod
    def from_modules(
        cls,
        *modules: nn.Module,
        as_module: Literal[True],
        lock: bool = ...,
        use_state_dict: bool = ...,
        lazy_stack: bool = ...,
        expand_identical: bool = ...,
    ) -> TensorDictParams: ...
    @overload
    @classmethod
    def from_modules(
        cls,
        *modules: nn.Module,
        as_module: bool = ...,
        lock: bool = ...,
        use_state_dict: bool = ...,
        lazy_stack: bool = ...,
        expand_identical: bool = ...,
    ) -> Self | TensorDictParams: ...

    @classmethod
    def from_modules(
        cls,
        *modules: nn.Module,
        as_module: bool = False,
        lock: bool = True,
        use_state_dict: bool = False,
        lazy_stack: bool = False,
        expand_identical: bool = False,
    ) -> Self | TensorDictParams:
        """The parameters and buffers of several modules of one architecture, stacked
        along a new leading dim (batch size ``[len(modules)]``): an ensemble to run with
        ``torch.vmap``.

        The leaves are *new* tensors (stacked copies); stacked parameters are new
        ``nn.Parameter``s with the same ``requires_grad``, so gradients reach them, not
        the modules' own parameters: give these to the optimizer.

        Example:
            >>> params = TensorDict.from_modules(*models)      # batch_size [len(models)]
            >>> base = copy.deepcopy(models[0]).to("meta")     # a module holding no data
            >>> def run(p, x):
            ...     with p.to_module(base):
            ...         return base(x)
            >>> torch.vmap(run, (0, None))(params, x)          # one output per model
            >>> # or: torch.func.functional_call(base, flat_params, (x,)) inside vmap

        Args:
            *modules: the modules, with the same parameter and buffer names and shapes.
            as_module: return a :class:`~tclass.TensorDictParams`
                registering them.
            lock: lock the result (default, as in the peer).
            use_state_dict: read each module's ``state_dict(keep_vars=True)``.
            lazy_stack: a :class:`~tclass.LazyStackedTensorDict` of each module's own
                tensors (not copies: gradients reach the modules) instead, whose members
                may differ in keys and shapes; not with ``as_module`` or lazy modules (an
                ``UnsupportedError``).
            expand_identical: a tensor all the modules share (one object) is expanded
                along the new dim (a view, not a parameter) instead of stacked.

        Raises:
            StackError: no module, or (dense) modules that differ in keys, shapes, dtypes or
                devices (the message names the module and the key).
        """
        return INTEROP.collection_from_modules(  # type: ignore[no-any-return]
            cls, modules, as_module, lock, use_state_dict, lazy_stack, expand_identical
        )

    @overload
    def to_module(
        self,
        module: nn.Module,
        *,
        inplace: bool | None = ...,
        return_swap: Literal[True] = ...,
        swap_dest: TensorCollection | None = ...,
        use_state_dict: bool = ...,
        non_blocking: bool = ...,
        preserve_module_state: bool = ...,
    ) -> Self: ...
    @overload
    def to_module(
        self,
        module: nn.Module,
        *,
        inplace: bool | None = ...,
        return_swap: Literal[False],
        swap_dest: TensorCollection | None = ...,
        use_state_dict: bool = ...,
        non_blocking: bool = ...,
        preserve_module_state: bool = ...,
    ) -> None: ...
    @overload
    def to_module(
        self,
        module: nn.Module,
        *,
        inplace: bool | None = ...,
        return_swap: bool = ...,
        swap_dest: TensorCollection | None = ...,
        use_state_dict: bool = ...,
        non_blocking: bool = ...,
        preserve_module_state: bool = ...,
    ) -> Self | None: ...

    def to_module(
        self,
        module: nn.Module,
        *,
        inplace: bool | None = None,
        return_swap: bool = True,
        swap_dest: TensorCollection | None = None,
        use_state_dict: bool = False,
        non_blocking: bool = False,
        preserve_module_state: bool = True,
    ) -> Self | None:
        """Puts these tensors into ``module`` as its parameters and buffers, now.

        The keys are those :meth:`from_module` gives (a nested key is a submodule); a
        subset is fine. Every key and shape is checked before anything changes, so an
        error leaves the module as it was. A lazy stack puts in its members stacked
        (with gradients flowing to them), as the peer.

        Returns the tensors the module held before, in a collection of this kind.
        Used as a context manager, that collection puts them back when the block
        exits, even on an exception, so the module ends with its original objects::

            with params.to_module(module):
                y = module(x)            # runs with params; module restored after

        Without ``with`` the swap stays; ``previous.to_module(module)`` undoes it (and
        a later ``with previous:`` block would too, once).

        Args:
            module: the module to write into.
            inplace: copy the values into the module's existing tensors (which keep their
                identity) instead of replacing them; the returned collection then holds
                copies of the old values. ``None`` means ``False``.
            return_swap: return the previous tensors; if false, return ``None`` (no way
                back then).
            swap_dest: with ``return_swap``, a collection the previous tensors are
                written into (``update``) and that is returned instead, its ``with``
                block putting them back.
            use_state_dict: after the swap, give the tensors to
                ``module.load_state_dict(..., assign=True)``, so that its load hooks see
                (and may change) them, as in the peer; not with ``inplace``.
            non_blocking: with ``inplace``, copy between devices asynchronously.
            preserve_module_state: where a tensor that neither is a parameter nor takes part
                in autograd (loaded weights, a detached copy) replaces a parameter, put a
                parameter over the same storage with the old ``requires_grad``, so the
                module stays trainable (an optimizer step then writes that storage: for
                a loaded folder, its files; use ``inplace=True`` to copy instead).
                Tensors that require grad, and tensors batched by ``torch.vmap``,
                always go in as they are, so gradients reach them.

        Raises:
            KeyNotFoundError: a key is not a parameter, buffer or submodule of the module.
            EntryTypeError: a tensor where the module has a submodule (or the reverse), a
                Python value, or ``inplace`` onto an empty (``None``) slot.
            ShapeError: a tensor's shape differs from the one it replaces (a stack from
                ``from_modules`` goes in inside ``torch.vmap``).
        """
        return INTEROP.swap_into_module(  # type: ignore[no-any-return]
            self,  # type: ignore[arg-type]
            module,
            inplace=inplace,
            return_swap=return_swap,
            swap_dest=swap_dest,
            use_state_dict=use_state_dict,
            non_blocking=non_blocking,
            preserve_module_state=preserve_module_state,
        )
