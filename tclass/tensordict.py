"""``tensordict.tensordict``'s names (the peer's module of its classes and helpers, kept
for older code: ``from tclass.tensordict import TensorDict, TensorDictBase``)."""

from tclass._base._tensordict_base import TensorDictBase as TensorDictBase
from tclass._core._keyfuncs import NestedKey as NestedKey
from tclass._core._memmap import MemoryMappedTensor as MemoryMappedTensor
from tclass._engine._combine import expand_as_right as expand_as_right
from tclass._engine._combine import expand_right as expand_right
from tclass._engine._combine import merge_tensordicts as merge_tensordicts
from tclass._engine._compare import assert_close as assert_allclose_td
from tclass._engine._lazy._build import dense_stack_tds as dense_stack_tds
from tclass._engine._lazy._stack import LazyStackedTensorDict as LazyStackedTensorDict
from tclass._engine._pad import pad as pad
from tclass._engine._pad_sequence import pad_sequence as pad_sequence
from tclass._engine._td import TensorDict as TensorDict
from tclass._interop._constructors import is_tensor_collection as is_tensor_collection
from tclass._interop._constructors import make_tensordict as make_tensordict
from tclass._tensorclass import is_tensorclass as is_tensorclass

__all__ = [
    "LazyStackedTensorDict",
    "MemoryMappedTensor",
    "NestedKey",
    "TensorDict",
    "TensorDictBase",
    "assert_allclose_td",
    "dense_stack_tds",
    "expand_as_right",
    "expand_right",
    "is_tensor_collection",
    "is_tensorclass",
    "make_tensordict",
    "merge_tensordicts",
    "pad",
    "pad_sequence",
]
