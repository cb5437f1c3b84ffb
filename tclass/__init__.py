"""tclass: typed, batched, memory-mappable records of tensors for PyTorch.

One import gives the public surface::

    import tclass
    td = tclass.TensorDict({"obs": torch.zeros(4, 3)}, batch_size=[4])
"""

from tclass import errors as errors
from tclass import _pytree as _pytree
from tclass._memmap import MemoryMappedTensor as MemoryMappedTensor
from tclass._nontensor import NonTensorData as NonTensorData
from tclass._nontensor import NonTensorStack as NonTensorStack
from tclass._ops import cat as cat
from tclass._ops import stack as stack
from tclass._td import TensorDict as TensorDict
from tclass._tensorclass import TensorClass as TensorClass
from tclass._tensorclass import is_tensorclass as is_tensorclass
from tclass._tensorclass import tensorclass as tensorclass
from tclass.errors import TclassError as TclassError

__all__ = [
    "MemoryMappedTensor",
    "NonTensorData",
    "NonTensorStack",
    "TclassError",
    "TensorClass",
    "TensorDict",
    "cat",
    "errors",
    "is_tensorclass",
    "stack",
    "tensorclass",
]

__version__ = "0.1.0"
