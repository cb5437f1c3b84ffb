"""Makes ``import tensordict`` (and its submodules) resolve to tclass, for running the
peer's own test files against tclass (see ../README.md).

* ``tensordict`` and the peer's public modules (``tensordict.base``, ``.utils``,
  ``.tensorclass``, ``.memmap``, ``.persistent``, ``.functional``, ``.tensordict``,
  ``.typedtensordict``, ``.nn``) are proxy modules: a name is looked up in the tclass
  module of the same name, then in ``tclass`` itself.
* Any other ``tensordict.*`` module (the peer's private ``_td``, ``_lazy``, ``_C``...) is a
  proxy too, so that ``from tensordict._lazy import LazyStackedTensorDict`` finds the public
  name.
* A name tclass does not have becomes a placeholder, so that a test file still imports:
  using it raises :class:`PeerPrivateName` (a ``_private`` name of the peer) or
  :class:`PeerMissingName` (a public one tclass lacks, e.g. ``tensordict.nn``'s modules),
  and the runner counts those tests apart.
* The peer's shared fixture (``_utils_internal.py``) builds its kinds of collections with a
  few private helpers; ``FIXTURE_ADAPTERS`` gives them tclass equivalents, so that the
  kinds are built. Tests that call private names themselves are still counted apart.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
import types
from typing import Any

PEER = "tensordict"

# The peer's modules that tclass mirrors under the same name.
PUBLIC_MODULES = (
    "base",
    "functional",
    "memmap",
    "persistent",
    "tensorclass",
    "tensordict",
    "typedtensordict",
    "utils",
)


class PeerPrivateName(AttributeError):
    """A test used one of the peer's private names, which tclass does not provide."""


class PeerMissingName(AttributeError):
    """A test used a public name of the peer that tclass does not provide."""


def _is_private(qualname: str) -> bool:
    """Whether a dotted name of the peer has a ``_private`` part (``tensordict._td``)."""
    return any(part.startswith("_") and not part.startswith("__") for part in qualname.split("."))


def _placeholder(qualname: str) -> Any:
    """A stand-in class for a name tclass lacks: importing it works, using it raises."""
    private = _is_private(qualname)
    error = PeerPrivateName if private else PeerMissingName
    what = "private name" if private else "public name tclass does not provide"

    def fail(*_args: Any, **_kwargs: Any) -> Any:
        raise error(f"peer {what}: {qualname}")

    class _Meta(type):
        __call__ = fail
        __instancecheck__ = fail
        __subclasscheck__ = fail
        __bool__ = fail
        __iter__ = fail
        __len__ = fail
        __getitem__ = fail
        __eq__ = fail
        __hash__ = type.__hash__

        def __getattr__(cls, name: str) -> Any:
            if name.startswith("__"):
                raise AttributeError(name)
            return fail()

    return _Meta(qualname.rsplit(".", 1)[-1], (), {"__qualname__": qualname})


def _has_h5() -> bool:
    return importlib.util.find_spec("h5py") is not None


def _check_recursive_properties(td: Any) -> None:
    """The peer's fixture checks its own invariants here; nothing to check on tclass."""


def _fixture_adapters() -> dict[tuple[str, str], Any]:
    import tclass

    return {
        ("persistent", "_has_h5"): _has_h5(),
        ("utils", "_check_recursive_properties"): _check_recursive_properties,
        ("_torch_func", "_stack"): tclass.stack,
        ("_td", "lazy_stack"): tclass.lazy_stack,
        ("base", "_is_leaf_nontensor"): tclass.is_leaf_nontensor,
        ("base", "_is_tensor_collection"): tclass.is_tensor_collection,
        ("utils", "_getitem_batch_size"): _getitem_batch_size,
        # The peer's lock message, which its tests match: tclass's lock errors (of
        # TensorDicts and lazy stacks alike) start with the same words, then say more.
        ("utils", "_LOCK_ERROR"): "Cannot modify locked",
    }


def _get_sub_tensordict(self: Any, index: Any) -> Any:
    """The peer's write-through indexed view: tclass's indexing is the equivalent."""
    return self[index]


def _has_names(self: Any) -> bool:
    names = self.names
    return names is not None and any(name is not None for name in names)


def _check_batch_size(self: Any, *, raise_exception: bool = True) -> bool:
    """Whether every entry's leading dims are the batch size (nested collections too)."""
    import tclass

    for key, value in self.items():
        if isinstance(value, tclass.UnbatchedTensor):
            continue
        if tclass.is_tensor_collection(value):
            good = value._check_batch_size(raise_exception=raise_exception)
        else:
            good = tuple(value.shape[: self.batch_dims]) == tuple(self.batch_size)
        if not good:
            if raise_exception:
                raise RuntimeError(f"entry {key!r} does not match the batch size {self.batch_size}")
            return False
    return True


def _check_device(self: Any, *, raise_exception: bool = True) -> bool:
    """Whether every leaf is on the collection's device (when it has one)."""
    if self.device is None:
        return True
    for key, value in self.items(True, True):
        device = getattr(value, "device", self.device)
        if device is not None and device != self.device:
            if raise_exception:
                raise RuntimeError(f"entry {key!r} is on {device}, not {self.device}")
            return False
    return True


def _has_non_tensor(self: Any) -> bool:
    import tclass

    leaves = self.values(True, True, is_leaf=tclass.is_leaf_nontensor)
    return any(tclass.is_non_tensor(value) for value in leaves)


def _fast_apply(
    self: Any, fn: Any, *others: Any, checked: bool = False, named: bool = False, **kwargs: Any
) -> Any:
    """The peer's unchecked ``apply``: tclass's ``apply`` (``named_apply`` for ``named``)."""
    if named:
        return self.named_apply(fn, *others, **kwargs)
    kwargs.pop("nested_keys", None)
    return self.apply(fn, *others, **kwargs)


def _getitem_batch_size(batch_size: Any, index: Any) -> Any:
    import torch

    return torch.empty(batch_size, device="meta")[index].shape


# The peer's private helpers on collections that its tests call after the public calls
# they test (the runner still counts the tests that use them apart).
COLLECTION_ADAPTERS = {
    "_get_sub_tensordict": _get_sub_tensordict,
    "_has_names": _has_names,
    "_check_batch_size": _check_batch_size,
    "_check_device": _check_device,
    "_has_non_tensor": property(_has_non_tensor),
    "_fast_apply": _fast_apply,
}


class _Proxy(types.ModuleType):
    """``tensordict.<name>``: names from ``tclass.<name>`` (if any), then ``tclass``."""

    def __init__(self, name: str, sources: list[types.ModuleType], adapters: dict[str, Any]):
        super().__init__(name)
        self.__path__: list[str] = []  # a package: submodules may be imported
        self.__dict__["_shim_sources"] = sources
        self.__dict__["_shim_adapters"] = adapters

    def __getattr__(self, name: str) -> Any:
        if name == "__all__" and _is_private(self.__name__):
            # the names a private module of the peer exports: that module is not tclass's
            raise PeerPrivateName(f"peer private name: {self.__name__}.__all__")
        if name.startswith("__"):
            raise AttributeError(name)
        adapters = self.__dict__["_shim_adapters"]
        if name in adapters:
            return adapters[name]
        if not name.startswith("_"):
            for source in self.__dict__["_shim_sources"]:
                if hasattr(source, name):
                    return getattr(source, name)
        value = _placeholder(f"{self.__name__}.{name}")
        setattr(self, name, value)
        return value


class _Finder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Creates a proxy for any ``tensordict.*`` module not registered up front."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname == PEER or fullname.startswith(PEER + "."):
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec: Any) -> types.ModuleType:
        return _make_proxy(spec.name)

    def exec_module(self, module: types.ModuleType) -> None:
        pass


def _make_proxy(fullname: str) -> _Proxy:
    import tclass

    parts = fullname.split(".")[1:]
    sources: list[types.ModuleType] = []
    if len(parts) == 1 and parts[0] in PUBLIC_MODULES:
        sources.append(sys.modules[f"tclass.{parts[0]}"])
    sources.append(tclass)
    last = parts[-1] if parts else ""
    adapters = {
        name: value for (module, name), value in _fixture_adapters().items() if module == last
    }
    return _Proxy(fullname, sources, adapters)


def install() -> None:
    """Put the proxies in place of the peer (idempotent)."""
    if any(isinstance(finder, _Finder) for finder in sys.meta_path):
        return
    import tclass
    from tclass import TensorDictBase

    for name in PUBLIC_MODULES:
        __import__(f"tclass.{name}")
    top = _make_proxy(PEER)
    sys.modules[PEER] = top
    for name in PUBLIC_MODULES:
        module = _make_proxy(f"{PEER}.{name}")
        sys.modules[module.__name__] = module
        if not isinstance(getattr(tclass, name, None), types.ModuleType):
            setattr(top, name, getattr(tclass, name))  # the decorator / function, as the peer's
        else:
            setattr(top, name, module)
    sys.meta_path.insert(0, _Finder())
    # The fixture's private helpers on the collections (see the module docstring).
    for name, method in COLLECTION_ADAPTERS.items():
        if not hasattr(TensorDictBase, name):
            setattr(TensorDictBase, name, method)
