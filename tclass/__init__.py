"""tclass: typed, batched, memory-mappable records of tensors for PyTorch.

One import gives the public surface::

    import tclass
    td = tclass.TensorDict({"obs": torch.zeros(4, 3)}, batch_size=[4])
"""

from tclass import errors as errors
from tclass._memmap import MemoryMappedTensor as MemoryMappedTensor
from tclass._ops import cat as cat
from tclass._ops import stack as stack
from tclass._td import TensorDict as TensorDict
from tclass.errors import TclassError as TclassError

__all__ = [
    "MemoryMappedTensor",
    "TclassError",
    "TensorDict",
    "cat",
    "errors",
    "stack",
]

__version__ = "0.1.0"
