"""tclass: typed, batched, memory-mappable records of tensors for PyTorch.

One import gives the public surface::

    import tclass
    td = tclass.TensorDict({"obs": torch.zeros(4, 3)}, batch_size=[4])
"""

from tclass import errors as errors
from tclass import _pytree as _pytree
from tclass._io._api import load as load
from tclass._io._consolidate import from_consolidated as from_consolidated
from tclass._io._api import load_memmap as load_memmap
from tclass._io._api import memmap as memmap
from tclass._io._api import save as save
from tclass._lazy import LazyStackedTensorDict as LazyStackedTensorDict
from tclass._lazy import dense_stack_tds as dense_stack_tds
from tclass._lazy import lazy_stack as lazy_stack
from tclass._lazy import maybe_dense_stack as maybe_dense_stack
from tclass._memmap import MemoryMappedTensor as MemoryMappedTensor
from tclass._nontensor import NonTensorData as NonTensorData
from tclass._nontensor import NonTensorStack as NonTensorStack
from tclass._ops import cat as cat
from tclass._ops import stack as stack
from tclass._pad import pad as pad
from tclass._pad import pad_sequence as pad_sequence
from tclass._base import TensorDictBase as TensorDictBase
from tclass._td import TensorDict as TensorDict
from tclass._tensorclass import TensorClass as TensorClass
from tclass._tensorclass import is_tensorclass as is_tensorclass
from tclass._tensorclass import tensorclass as tensorclass
from tclass.errors import TclassError as TclassError

__all__ = [
    "LazyStackedTensorDict",
    "MemoryMappedTensor",
    "NonTensorData",
    "NonTensorStack",
    "TclassError",
    "TensorClass",
    "TensorDict",
    "TensorDictBase",
    "cat",
    "dense_stack_tds",
    "errors",
    "from_consolidated",
    "is_tensorclass",
    "lazy_stack",
    "load",
    "load_memmap",
    "maybe_dense_stack",
    "memmap",
    "pad",
    "pad_sequence",
    "save",
    "stack",
    "tensorclass",
]

__version__ = "0.1.0"
