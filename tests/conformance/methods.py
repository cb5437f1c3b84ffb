"""The methods of the collection API and how each is called in the matrix.

``api_names()`` is generated from the classes: the public names of ``TensorDictBase`` and
``TensorDict``, and the special methods tclass defines on them. Each name has a *recipe*
(``RECIPES``: how to call it on a collection of batch size [3, 4] with float, int and bool
leaves ``a``, ``b``, ``c``) or sits in ``NOT_RUN`` with the reason it is not run here;
``test_matrix.py`` checks that, so a new method cannot be left out.
"""

from __future__ import annotations

import operator
import pickle
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

import tclass


@dataclass
class Env:
    """What a recipe may use besides the collection: the library (``L``), a fresh
    folder of its own, and ``other()``: a fresh collection of the same kind."""

    L: Any
    tmp: Path
    other: Callable[[], Any]

    def path(self, name: str) -> Path:
        self.tmp.mkdir(parents=True, exist_ok=True)
        return self.tmp / name


@dataclass(frozen=True)
class Recipe:
    call: Callable[[Any, Env], Any]
    floats: bool = False  # build the collection with float leaves only


Fn = Callable[[Any, Env], Any]


def r(call: Fn, floats: bool = False) -> Recipe:
    return Recipe(call, floats)


def _same(names: str, *args: Any, floats: bool = False, **kwargs: Any) -> dict[str, Recipe]:
    """One recipe per name: the method called with ``args`` and ``kwargs``."""

    def recipe(name: str) -> Recipe:
        return Recipe(lambda x, e: getattr(x, name)(*args, **kwargs), floats)

    return {name: recipe(name) for name in names.split()}


def _attribute(names: str) -> dict[str, Recipe]:
    return {name: Recipe(lambda x, e, n=name: getattr(x, n)) for name in names.split()}


def _ones(x: Any) -> torch.Tensor:
    return torch.ones(x.batch_size)


def _mask(x: Any) -> torch.Tensor:
    return torch.arange(x.batch_size.numel()).reshape(x.batch_size) % 2 == 0


def _saved(x: Any, e: Env) -> Path:
    path = e.path("other")
    e.other().memmap(path)
    return path


def _dunder(op: Callable[[Any, Any], Any], other: Any = 2) -> Recipe:
    return Recipe(lambda x, e: op(x, other), floats=True)


def _reflected(op: Callable[[Any, Any], Any], other: Any = 2) -> Recipe:
    return Recipe(lambda x, e: op(other, x), floats=True)


def _set_index(x: Any, e: Env) -> Any:
    x[0] = e.other()[1]
    return x


def _delete(x: Any, e: Env) -> Any:
    del x["c"]
    return x


def _context(x: Any, e: Env) -> Any:
    """A method's inverse applied on leaving its ``with`` block (writes reach ``x``)."""
    with x.permute(1, 0) as permuted:
        permuted.set_("a", permuted.get("a") + 1)
    return x


def _pickled(x: Any, e: Env) -> Any:
    return pickle.loads(pickle.dumps(x))


UNARY = (
    "abs acos asin atan ceil cos cosh erf erfc exp expm1 floor frac lgamma log log10 log1p log2 "
    "neg reciprocal round rsqrt sigmoid sign sin sinh sqrt tan tanh trunc"
)
CASTS = (
    "bfloat16 bool byte char complex128 complex32 complex64 double float float16 float32 "
    "float64 half int int16 int32 int64 int8 long short uint16 uint32 uint64 uint8 "
    "qint32 qint8 quint4x2 quint8"
)

RECIPES: dict[str, Recipe] = {
    **_same(UNARY, floats=True),
    **_same(" ".join(name + "_" for name in UNARY.split()), floats=True),
    **_same(CASTS),
    **_same("isfinite isinf isnan isneginf isposinf isreal"),
    **_attribute(
        "batch_dims batch_size data depth device dtype grad is_cpu is_cuda is_locked is_meta "
        "ndim requires_grad saved_path shape sorted_keys names"
    ),
    **_same("is_consolidated is_contiguous is_empty is_floating_point is_memmap is_shared"),
    **_same("dim ndimension numel clone contiguous copy detach detach_ as_tensor densify"),
    **_same("atleast_1d atleast_2d atleast_3d fliplr flipud zero_ zero_grad"),
    **_same("clear filter_empty_ filter_non_tensor_data clear_refs_for_compile_ cpu"),
    **_same("lock_ unlock_ clear_device_ auto_device_ share_memory_ popitem"),
    **_same("to_dict to_pytree to_tensordict tolist to_namedtuple numpy to_lazystack"),
    **_same("add mul sub div pow rsub maximum minimum clamp_min clamp_max mod", 2, floats=True),
    **_same("add_ mul_ sub_ div_ pow_ maximum_ minimum_ clamp_min_ clamp_max_", 2, floats=True),
    **_same("bitwise_and logical_and", True),
    **_same("addcdiv addcmul addcdiv_ addcmul_ lerp lerp_", 2.0, 3.0, floats=True),
    **_same("clamp clamp_", -0.5, 0.5, floats=True),
    **_same("nan_to_num nan_to_num_", 0.0, floats=True),
    **_same("all any"),
    **_same("amax amin nansum prod sum", dim=1),
    **_same("mean nanmean std var logsumexp", dim=1, floats=True),
    **_same("norm", floats=True),
    **_same("max min", dim=0),
    **_same("cummax cummin cumprod cumsum softmax", 1, floats=True),
    "quantile": r(lambda x, e: x.quantile(0.5, dim=1), floats=True),
    "bytes": r(lambda x, e: x.bytes()),
    "param_count": r(lambda x, e: x.param_count()),
    # shape
    **_same("chunk split", 2, 1),
    "tensor_split": r(lambda x, e: x.tensor_split([1, 2], 1)),
    "unbind": r(lambda x, e: x.unbind(1)),
    "expand": r(lambda x, e: x.expand(2, *x.batch_size)),
    "expand_as": r(lambda x, e: x.expand_as(torch.zeros(2, *x.batch_size))),
    "broadcast_to": r(lambda x, e: x.broadcast_to([2, *x.batch_size])),
    "flatten": r(lambda x, e: x.flatten(0, 1)),
    "unflatten": r(lambda x, e: x.unflatten(1, (2, 2))),
    "flip": r(lambda x, e: x.flip(0)),
    "gather": r(lambda x, e: x.gather(1, torch.zeros(x.batch_size, dtype=torch.long))),
    "masked_fill": r(lambda x, e: x.masked_fill(_mask(x), 1)),
    "masked_fill_": r(lambda x, e: x.masked_fill_(_mask(x), 1)),
    "masked_select": r(lambda x, e: x.masked_select(_mask(x))),
    "moveaxis": r(lambda x, e: x.moveaxis(0, 1)),
    "movedim": r(lambda x, e: x.movedim(1, 0)),
    "narrow": r(lambda x, e: x.narrow(1, 1, 2)),
    "pad": r(lambda x, e: x.pad([0, 1, 1, 0])),
    "permute": r(lambda x, e: x.permute(1, 0)),
    "repeat": r(lambda x, e: x.repeat(1, 2)),
    "repeat_interleave": r(lambda x, e: x.repeat_interleave(2, dim=1)),
    "reshape": r(lambda x, e: x.reshape(-1)),
    "roll": r(lambda x, e: x.roll(1, 1)),
    "rot90": r(lambda x, e: x.rot90()),
    "size": r(lambda x, e: x.size(1)),
    "squeeze": r(lambda x, e: x.squeeze()),
    "unsqueeze": r(lambda x, e: x.unsqueeze(1)),
    "swapaxes": r(lambda x, e: x.swapaxes(0, 1)),
    "swapdims": r(lambda x, e: x.swapdims(0, 1)),
    "transpose": r(lambda x, e: x.transpose(1, 0)),
    "tile": r(lambda x, e: x.tile([2, 1])),
    "view": r(lambda x, e: x.view(-1)),
    "where": r(lambda x, e: x.where(_mask(x), 0.0), floats=True),
    "refine_names": r(lambda x, e: x.refine_names("p", "q")),
    "rename": r(lambda x, e: x.rename("p", "q")),
    "rename_": r(lambda x, e: x.rename_("p", "q")),
    "auto_batch_size_": r(lambda x, e: x.auto_batch_size_()),
    "new_empty": r(lambda x, e: x.new_empty(2, 3).batch_size),
    "new_full": r(lambda x, e: x.new_full([2, 3], 7)),
    "new_ones": r(lambda x, e: x.new_ones(2, 3)),
    "new_zeros": r(lambda x, e: x.new_zeros(2, 3)),
    "new_tensor": r(lambda x, e: x.new_tensor([1, 2])),
    "empty": r(lambda x, e: x.empty()),
    # entries
    "get": r(lambda x, e: x.get("a")),
    "get_at": r(lambda x, e: x.get_at("b", 1)),
    "get_item_shape": r(lambda x, e: x.get_item_shape("a")),
    "get_non_tensor": r(lambda x, e: x.get_non_tensor("label", "none")),
    "entry_class": r(lambda x, e: x.entry_class("a")),
    "is_non_tensor": r(lambda x, e: x.is_non_tensor("b")),
    "set": r(lambda x, e: x.set("a", x.get("a") * 2)),
    "set_": r(lambda x, e: x.set_("b", torch.zeros_like(x.get("b")))),
    "set_at_": r(lambda x, e: x.set_at_("a", torch.zeros_like(x.get("a")[0]), 0)),
    "set_non_tensor": r(lambda x, e: x.set_non_tensor("word", "hi")),
    "setdefault": r(lambda x, e: x.setdefault("z", _ones(x))),
    "fill_": r(lambda x, e: x.fill_("a", 1.5)),
    "create_nested": r(lambda x, e: x.create_nested("fresh")),
    "del_": r(lambda x, e: x.del_("c")),
    "pop": r(lambda x, e: x.pop("c")),
    "rename_key_": r(lambda x, e: x.rename_key_("c", "c2")),
    "rename_keys": r(lambda x, e: x.rename_keys({"c": "c2"})),
    "select": r(lambda x, e: x.select("a", "c")),
    "exclude": r(lambda x, e: x.exclude("c")),
    "split_keys": r(lambda x, e: x.split_keys(["a"], ["b"])),
    "separates": r(lambda x, e: x.separates("a")),
    "flatten_keys": r(lambda x, e: x.flatten_keys()),
    "unflatten_keys": r(lambda x, e: x.flatten_keys("_").unflatten_keys("_")),
    "keys": r(lambda x, e: list(x.keys(True, True))),
    "values": r(lambda x, e: list(x.values(True, True))),
    "items": r(lambda x, e: list(x.items(True, True))),
    "non_tensor_items": r(lambda x, e: x.non_tensor_items(True)),
    "cat_tensors": r(lambda x, e: x.cat_tensors("a", "a", out_key="aa", dim=-1)),
    "stack_tensors": r(lambda x, e: x.stack_tensors("b", "c", out_key="bc", dim=-1)),
    "cat_from_tensordict": r(lambda x, e: x.select("a").cat_from_tensordict(-1)),
    "stack_from_tensordict": r(lambda x, e: x.select("b", "c").stack_from_tensordict(-1)),
    "update": r(lambda x, e: x.update(e.other())),
    "update_": r(lambda x, e: x.update_(e.other())),
    "update_at_": r(lambda x, e: x.update_at_(e.other()[0], 1)),
    "copy_": r(lambda x, e: x.copy_(e.other())),
    "copy_at_": r(lambda x, e: x.copy_at_(e.other()[0], 1)),
    "replace": r(lambda x, e: x.replace(a=torch.zeros_like(x.get("a")))),
    "apply": r(lambda x, e: x.apply(lambda t: t * 2)),
    "apply_": r(lambda x, e: x.apply_(lambda t: t * 2)),
    "named_apply": r(lambda x, e: x.named_apply(lambda k, t: t * 2)),
    "attrs": r(lambda x, e: x.attrs()),
    "data_ptr": r(lambda x, e: x.data_ptr().batch_size),
    "pack": r(lambda x, e: x.pack()[0]),
    "to": r(lambda x, e: x.to(torch.float64)),
    "type": r(lambda x, e: x.type(torch.float64)),
    "requires_grad_": r(lambda x, e: x.requires_grad_(), floats=True),
    "state_dict": r(lambda x, e: x.state_dict()),
    "load_state_dict": r(lambda x, e: x.load_state_dict(e.other().state_dict())),
    "to_padded_tensor": r(lambda x, e: x.to_padded_tensor()),
    "to_struct_array": r(lambda x, e: x.to_struct_array().shape),
    "to_pandas": r(lambda x, e: list(x.to_pandas().columns)),
    "to_csv": r(lambda x, e: x.to_csv(e.path("x.csv"))),
    "to_json": r(lambda x, e: x.to_json(e.path("x.json"))),
    "to_parquet": r(lambda x, e: x.to_parquet(e.path("x.parquet"))),
    "to_h5": r(lambda x, e: x.to_h5(e.path("x.h5")).to_tensordict()),
    "to_zarr": r(lambda x, e: x.to_zarr(e.path("x.zarr")).to_tensordict()),
    "to_module": r(lambda x, e: x.to_module(torch.nn.Module())),
    "consolidate": r(lambda x, e: x.consolidate()),
    # persistence
    "memmap": r(lambda x, e: x.memmap(e.path("mm"))),
    "memmap_": r(lambda x, e: x.memmap_(e.path("mm"))),
    "memmap_like": r(lambda x, e: x.memmap_like(e.path("mm"))),
    "save": r(lambda x, e: x.save(e.path("saved"))),
    "dumps": r(lambda x, e: x.dumps(e.path("dumped"))),
    "load_": r(lambda x, e: x.load_(_saved(x, e))),
    "load_memmap_": r(lambda x, e: x.load_memmap_(_saved(x, e))),
    "memmap_refresh_": r(lambda x, e: x.memmap_refresh_()),
    "append_memmap_": r(lambda x, e: x.append_memmap_(e.other()[:1])),
    "make_memmap": r(lambda x, e: x.make_memmap("m", [*x.batch_size, 2])),
    "make_memmap_from_tensor": r(lambda x, e: x.make_memmap_from_tensor("m", _ones(x))),
    "make_memmap_from_storage": r(
        lambda x, e: x.make_memmap_from_storage("m", _ones(x).untyped_storage(), x.batch_size)
    ),
    # special methods
    "__abs__": r(lambda x, e: abs(x), floats=True),
    "__neg__": r(lambda x, e: -x, floats=True),
    "__invert__": r(lambda x, e: ~x.bool()),
    "__add__": _dunder(operator.add),
    "__sub__": _dunder(operator.sub),
    "__mul__": _dunder(operator.mul),
    "__truediv__": _dunder(operator.truediv),
    "__floordiv__": _dunder(operator.floordiv),
    "__mod__": _dunder(operator.mod),
    "__pow__": _dunder(operator.pow),
    "__and__": r(lambda x, e: x.bool() & True),
    "__or__": r(lambda x, e: x.bool() | False),
    "__xor__": r(lambda x, e: x.bool() ^ True),
    "__eq__": r(lambda x, e: x == e.other()),
    "__ne__": r(lambda x, e: x != 0),
    "__lt__": _dunder(operator.lt, 0),
    "__le__": _dunder(operator.le, 0),
    "__gt__": _dunder(operator.gt, 0),
    "__ge__": _dunder(operator.ge, 0),
    "__iadd__": _dunder(operator.iadd),
    "__isub__": _dunder(operator.isub),
    "__imul__": _dunder(operator.imul),
    "__itruediv__": _dunder(operator.itruediv),
    "__ifloordiv__": _dunder(operator.ifloordiv),
    "__imod__": _dunder(operator.imod),
    "__ipow__": _dunder(operator.ipow),
    "__iand__": r(lambda x, e: operator.iand(x.bool(), True)),
    "__ior__": r(lambda x, e: operator.ior(x.bool(), False)),
    "__ixor__": r(lambda x, e: operator.ixor(x.bool(), True)),
    "__radd__": _reflected(operator.add),
    "__rsub__": _reflected(operator.sub),
    "__rmul__": _reflected(operator.mul),
    "__rtruediv__": _reflected(operator.truediv),
    "__rfloordiv__": _reflected(operator.floordiv),
    "__rmod__": _reflected(operator.mod),
    "__rpow__": _reflected(operator.pow),
    "__rand__": r(lambda x, e: True & x.bool()),
    "__ror__": r(lambda x, e: False | x.bool()),
    "__rxor__": r(lambda x, e: True ^ x.bool()),
    "__bool__": r(lambda x, e: bool(x)),
    "__len__": r(lambda x, e: len(x)),
    "__iter__": r(lambda x, e: list(x)),
    "__contains__": r(lambda x, e: ("a" in x, "zz" in x)),
    "__getitem__": r(lambda x, e: x[1:, [0, 2]]),
    "__getitems__": r(lambda x, e: x.__getitems__([0, 2])),
    "__setitem__": r(_set_index),
    "__reduce__": r(_pickled),
    "__repr__": r(lambda x, e: isinstance(repr(x), str)),
    "__delitem__": r(_delete),
    "__enter__": r(_context),
    "__exit__": r(_context),
}

_GROUP = "needs a process group: tests/distributed/ (test_distributed.py, test_collectives.py)"
_CLASSMETHOD = (
    "a constructor (classmethod): tests/interop/test_constructors.py, tests/io/test_formats.py"
)
NOT_RUN: dict[str, str] = {
    **dict.fromkeys(
        "all_gather all_reduce arecv asend broadcast gather_and_stack init_remote irecv isend "
        "recv reduce scatter send".split(),
        _GROUP,
    ),
    **dict.fromkeys(
        "cat from_any from_consolidated from_csv from_dataclass from_dict from_h5 from_json "
        "from_zarr "
        "from_list from_module from_modules from_namedtuple from_pandas from_parquet "
        "from_pytree from_remote_init from_schema from_struct_array from_tuple fromkeys "
        "lazy_stack load load_memmap maybe_dense_stack stack from_dict_instance".split(),
        _CLASSMETHOD,
    ),
    "cuda": "needs a CUDA device: tests/core/test_device.py (marker cuda)",
    "record_stream": "needs a CUDA stream: tests/core/test_device.py (marker cuda)",
    "pin_memory": "needs an accelerator for pinned memory: tests/base/test_device_ops.py",
    "pin_memory_": "needs an accelerator for pinned memory: tests/base/test_device_ops.py",
    "map": "starts worker processes: tests/base/test_surface_methods.py",
    "map_iter": "starts worker processes: tests/base/test_surface_methods.py",
    "to_mds": "needs mosaicml-streaming (not installed): tests/io/test_formats.py",
    "backward": "needs a scalar autograd graph: tests/base/test_arithmetic.py",
    "__torch_function__": "torch's protocol: tests/engine/test_torch_functions.py",
    "__init__": "construction: each kind's builder in kinds.py",
}


def api_names() -> list[str]:
    """The public names of the collection API, generated from the classes."""
    public = {
        name
        for cls in (tclass.TensorDictBase, tclass.TensorDict)
        for name in dir(cls)
        if not name.startswith("_")
    }
    special = {
        name
        for cls in tclass.TensorDict.__mro__
        if cls.__module__.startswith("tclass")
        for name in vars(cls)
        if name.startswith("__")
        and name.endswith("__")
        and _method(vars(cls)[name])
        and name not in _OBJECT_PROTOCOL
    }
    return sorted(public | special)


def _method(attribute: object) -> bool:
    return callable(attribute) or isinstance(attribute, (classmethod, staticmethod))


# The special methods every Python object has: exercised by all the tests, not a method
# of the collection API (``__init__`` is, and sits in ``NOT_RUN``).
_OBJECT_PROTOCOL = {
    "__new__", "__init_subclass__", "__getattribute__", "__getattr__", "__setattr__",
    "__delattr__", "__dir__", "__sizeof__", "__format__", "__class_getitem__", "__subclasshook__",
    "__reduce_ex__", "__setstate__", "__copy__", "__deepcopy__",
}  # fmt: skip
