"""The tensorclass facade: typed, batched records over the TensorDict engine.

``_fields`` decides what each annotation accepts, ``_builder`` turns a class into a
tensorclass, ``_record`` is the base class holding every method, ``_state`` and
``_interop`` connect records to ``state_dict``, pytree and ``DataLoader``.
"""

from tclass._tensorclass._decorator import is_tensorclass as is_tensorclass
from tclass._tensorclass._decorator import tensorclass as tensorclass
from tclass._tensorclass._record import TensorClass as TensorClass

__all__ = ["TensorClass", "is_tensorclass", "tensorclass"]
