"""The helpers the peer keeps in ``tensordict.utils``, where code written for it imports
them from (``from tclass.utils import NestedKey, unravel_key``): key helpers, dtype
predicates for ``cast_filter``, print options, the switches, ``assert_close``,
``TensorDictFuture`` and ``logger`` (the ``logging.Logger`` named ``"tclass"``).
"""

import importlib
import json
from collections.abc import Callable
from types import ModuleType
from typing import Any, TypeAlias

import torch
from torch.torch_version import TorchVersion

from tclass._base.implemented._casts import is_bool as is_bool
from tclass._base.implemented._casts import is_floating as is_floating
from tclass._base.implemented._casts import is_inexact as is_inexact
from tclass._base.implemented._casts import is_integer as is_integer
from tclass._base.implemented._collection import _is_default_leaf as default_is_leaf
from tclass._base.implemented._leaf_rules import is_leaf_nontensor as is_leaf_nontensor
from tclass._core._batch import convert_ellipsis_to_idx as _convert_ellipsis_to_idx
from tclass._core._keyfuncs import KEY_SEPARATOR as KEY_SEPARATOR
from tclass._core._keyfuncs import NestedKey as NestedKey
from tclass._core._keyfuncs import unravel_key as unravel_key
from tclass._core._keyfuncs import unravel_key_list as unravel_key_list
from tclass._core._keyfuncs import unravel_key_to_tuple as unravel_key_to_tuple
from tclass._core._keys import BatchIndex
from tclass._core._linked_list import LinkedList as LinkedList
from tclass._core._options import _deprecated
from tclass._core._options import capture_non_tensor_stack as capture_non_tensor_stack
from tclass._core._options import lazy_legacy as lazy_legacy
from tclass._core._options import list_to_stack as list_to_stack
from tclass._core._options import set_capture_non_tensor_stack as set_capture_non_tensor_stack
from tclass._core._options import set_lazy_legacy as set_lazy_legacy
from tclass._core._options import set_list_to_stack as set_list_to_stack
from tclass._core._printoptions import get_printoptions as get_printoptions
from tclass._core._printoptions import set_printoptions as set_printoptions
from tclass._core._timing import logger as logger
from tclass._core._timing import timeit as timeit
from tclass._engine._combine import expand_as_right as expand_as_right
from tclass._engine._combine import expand_right as expand_right
from tclass._engine._combine import isin as isin
from tclass._engine._combine import remove_duplicates as remove_duplicates
from tclass._engine._compare import assert_close as assert_close
from tclass._engine._nontensor import is_non_tensor as is_non_tensor
from tclass._interop._parse import parse_tensor_dict_string as parse_tensor_dict_string
from tclass._io._api import TensorDictFuture as TensorDictFuture
from tclass._io.memmap._tree import print_directory_tree as print_directory_tree
from tclass._tensorclass import is_tensorclass as is_tensorclass
from tclass.errors import ArgumentValueError, MissingDependencyError

DeviceType: TypeAlias = torch.device | str | int
"""A device as the peer's annotations write it (``"cuda:0"``, ``0``, a ``torch.device``)."""
IndexType: TypeAlias = BatchIndex
"""An index of the batch dims, as for a tensor."""

assert_allclose_td = assert_close


# The dtypes numpy and torch share, each as the other library names it.
_SHARED_DTYPES = (
    torch.bool, torch.complex128, torch.complex64, torch.float16, torch.float32,
    torch.float64, torch.int16, torch.int32, torch.int64, torch.int8, torch.uint8,
    torch.uint16, torch.uint32, torch.uint64,
)  # fmt: skip


def _numpy_dtype(dtype: torch.dtype) -> Any:
    return torch.empty((), dtype=dtype).numpy().dtype


_JSON_BACKENDS = ("json", "orjson")
_json_backend = "json"


def _set_json_backend(backend: str) -> None:
    """``set_json_backend``: the module :func:`_json_dumps` serializes with (``"json"``
    or ``"orjson"``, which must be installed). tclass writes its own files with ``json``
    whatever is set: ``orjson`` writes NaN and infinite floats as ``null``."""
    global _json_backend
    if backend not in _JSON_BACKENDS:
        msg = f"set_json_backend: the backend must be 'json' or 'orjson', got {backend!r}"
        raise ArgumentValueError(msg)
    importlib.import_module(backend)  # ModuleNotFoundError if it is not installed
    _json_backend = backend


def _get_json_backend() -> ModuleType:
    """``get_json_backend``: the module of the backend :func:`_set_json_backend` set."""
    return importlib.import_module(_json_backend)


def _json_dumps(data: Any, **kwargs: Any) -> str | bytes:
    """``json_dumps``: ``data`` as JSON by the backend set (a ``str`` with ``json``,
    ``bytes`` with ``orjson``, which takes no ``separators``)."""
    if _json_backend == "orjson":
        kwargs.pop("separators", None)
        return _get_json_backend().dumps(data, **kwargs)  # type: ignore[no-any-return]
    return json.dumps(data, **kwargs)


# The implementation chosen for each function name (module and qualified name) by
# ``implement_for``: the last one whose version range holds the installed version.
_IMPLEMENTATIONS: dict[str, Callable[..., Any]] = {}


class _ImplementFor:
    """``implement_for(module, from_version=None, to_version=None, class_method=False)``:
    a decorator that keeps a function only where the installed version of ``module`` (a
    name, or a function returning the module) is in ``[from_version, to_version)``
    (``None``: open); several definitions of one name each give their range, and the name
    is bound to the last one that fits, wherever it is defined. Where none fits (or the
    module is missing), calling it raises ``MissingDependencyError`` (a
    ``ModuleNotFoundError``). ``class_method=True`` makes it a classmethod;
    ``compilable`` is accepted and changes nothing (the version is read when the
    function is defined)."""

    def __init__(
        self,
        module_name: str | Callable[[], Any],
        from_version: str | None = None,
        to_version: str | None = None,
        *,
        class_method: bool = False,
        compilable: bool = False,
    ) -> None:
        self.module_name = module_name
        self.from_version, self.to_version = from_version, to_version
        self.class_method = class_method

    def __call__(self, fn: Callable[..., Any]) -> Any:
        name = f"{fn.__module__}.{fn.__qualname__}"
        if self._fits():
            _IMPLEMENTATIONS[name] = fn
        chosen = _IMPLEMENTATIONS.get(name) or _no_implementation(name)
        return classmethod(chosen) if self.class_method else chosen

    def _fits(self) -> bool:
        """Whether the installed version of the module is in the range."""
        try:
            module = (
                importlib.import_module(self.module_name)
                if isinstance(self.module_name, str)
                else self.module_name()
            )
        except ImportError:
            return False
        version = getattr(module, "__version__", None)
        if not isinstance(version, str):
            return False
        installed = TorchVersion(version)
        low, high = self.from_version, self.to_version
        return (low is None or installed >= low) and (high is None or installed < high)


def _no_implementation(name: str) -> Callable[..., Any]:
    """A function that says no version of ``name`` fits what is installed."""

    def missing(*args: Any, **kwargs: Any) -> Any:
        msg = f"implement_for: no implementation of {name!r} fits the installed version"
        raise MissingDependencyError(msg)

    return missing


_DEPRECATED_JSON = {
    "set_json_backend": _set_json_backend,
    "get_json_backend": _get_json_backend,
    "json_dumps": _json_dumps,
}


def __getattr__(name: str) -> Any:
    """The deprecated helpers, with the peer's warning when they are looked up (at
    ``from tclass.utils import convert_ellipsis_to_idx``), not on every call:
    ``convert_ellipsis_to_idx``, the dtype tables ``NUMPY_TO_TORCH_DTYPE_DICT`` and
    ``TORCH_TO_NUMPY_DTYPE_DICT`` (a new dict at each look-up), and the JSON backend
    switch ``set_json_backend`` / ``get_json_backend`` / ``json_dumps``, and the version
    switch ``implement_for``."""
    if name == "convert_ellipsis_to_idx":
        _deprecated("tclass.utils.convert_ellipsis_to_idx", "Index the collection instead.")
        return _convert_ellipsis_to_idx
    if name == "NUMPY_TO_TORCH_DTYPE_DICT":
        _deprecated(f"tclass.utils.{name}", "Use torch.from_numpy(array).dtype instead.")
        return {_numpy_dtype(dtype): dtype for dtype in _SHARED_DTYPES}
    if name == "TORCH_TO_NUMPY_DTYPE_DICT":
        _deprecated(f"tclass.utils.{name}", "Use tensor.numpy().dtype instead.")
        return {dtype: _numpy_dtype(dtype) for dtype in _SHARED_DTYPES}
    if name == "implement_for":
        _deprecated("tclass.utils.implement_for", "Use pyvers.implement_for instead.")
        return _ImplementFor
    if name in _DEPRECATED_JSON:
        _deprecated(f"tclass.utils.{name}", "Use json (or orjson) directly.")
        return _DEPRECATED_JSON[name]
    msg = f"module 'tclass.utils' has no attribute {name!r}"
    raise AttributeError(msg)


__all__ = [
    "KEY_SEPARATOR",
    "DeviceType",
    "IndexType",
    "LinkedList",
    "NestedKey",
    "TensorDictFuture",
    "assert_allclose_td",
    "assert_close",
    "capture_non_tensor_stack",
    "default_is_leaf",
    "expand_as_right",
    "expand_right",
    "get_printoptions",
    "is_bool",
    "is_floating",
    "is_inexact",
    "is_integer",
    "is_leaf_nontensor",
    "is_non_tensor",
    "is_tensorclass",
    "isin",
    "lazy_legacy",
    "list_to_stack",
    "logger",
    "parse_tensor_dict_string",
    "print_directory_tree",
    "remove_duplicates",
    "set_capture_non_tensor_stack",
    "set_lazy_legacy",
    "set_list_to_stack",
    "set_printoptions",
    "timeit",
    "unravel_key",
    "unravel_key_list",
    "unravel_key_to_tuple",
]
