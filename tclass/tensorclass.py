"""``tensordict.tensorclass``'s public names, for code that imports them from there
(``from tclass.tensorclass import NonTensorData``). The package's ``tclass.tensorclass``
attribute stays the decorator, as the peer's does. ``NonTensorDataBase`` (the peer's common
base of ``NonTensorData`` and ``MetaData``) is ``NonTensorData``, which ``MetaData``
derives from."""

from tclass._engine._nontensor import MetaData as MetaData
from tclass._engine._nontensor import NonTensorData as NonTensorData
from tclass._engine._nontensor import NonTensorData as NonTensorDataBase
from tclass._engine._nontensor import is_non_tensor as is_non_tensor
from tclass._engine._nontensor_stack import NonTensorStack as NonTensorStack
from tclass._tensorclass import TensorClass as TensorClass
from tclass._tensorclass import from_dataclass as from_dataclass
from tclass._tensorclass import is_tensorclass as is_tensorclass
from tclass._tensorclass import tensorclass as tensorclass

__all__ = [
    "MetaData",
    "NonTensorData",
    "NonTensorDataBase",
    "NonTensorStack",
    "TensorClass",
    "from_dataclass",
    "is_non_tensor",
    "is_tensorclass",
    "tensorclass",
]
