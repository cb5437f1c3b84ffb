"""The tensorclass facade: typed, batched records over the TensorDict engine.

``_fields`` decides what each annotation accepts, ``_builder`` turns a class into a
tensorclass, ``_record`` is the base class holding every method, ``_interop`` connects
records to pytree and ``DataLoader`` (state dicts are interop's,
``tclass/_interop/_state_dict.py``).
"""

from tclass._tensorclass._decorator import is_tensorclass as is_tensorclass
from tclass._tensorclass._decorator import tensorclass as tensorclass
from tclass._tensorclass._record import TensorClass as TensorClass

__all__ = ["TensorClass", "is_tensorclass", "tensorclass"]
