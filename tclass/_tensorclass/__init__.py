"""The tensorclass facade: typed, batched records over the TensorDict engine.

``_fields`` decides what each annotation accepts, ``_options`` which class options a
class has, ``_builder`` turns a class into a tensorclass (``_generated``: its
``__init__``), ``_record`` is the base class holding every method, ``_dataclass``
converts dataclasses, ``_checked`` makes a function's annotations a contract over
its calls (``@tclass.checked``), ``_interop`` connects records to pytree and ``DataLoader`` (state
dicts are interop's, ``tclass/_interop/_state_dict.py``).
"""

from tclass._tensorclass._checked import checked as checked
from tclass._tensorclass._dataclass import from_dataclass as from_dataclass
from tclass._tensorclass._decorator import is_tensorclass as is_tensorclass
from tclass._tensorclass._decorator import tensorclass as tensorclass
from tclass._tensorclass._record import TensorClass as TensorClass

__all__ = ["TensorClass", "checked", "from_dataclass", "is_tensorclass", "tensorclass"]
