"""The functions the peer keeps in ``tensordict.functional``, where code written for it
imports them from (``from tclass.functional import pad_sequence, collate``): stacking,
padding, merging and batching collections. The classes and helpers the peer's module
also imports are reachable here too, as there.
"""

from tclass._base._tensordict_base import TensorDictBase as TensorDictBase
from tclass._core._keyfuncs import NestedKey as NestedKey
from tclass._core._keyfuncs import unravel_key as unravel_key
from tclass._engine._collate import collate as collate
from tclass._engine._collate import default_collate as default_collate
from tclass._engine._collate import group_by as group_by
from tclass._engine._combine import merge_tensordicts as merge_tensordicts
from tclass._engine._lazy._build import dense_stack_tds as dense_stack_tds
from tclass._engine._lazy._stack import LazyStackedTensorDict as LazyStackedTensorDict
from tclass._engine._nontensor import NonTensorData as NonTensorData
from tclass._engine._nontensor import is_non_tensor as is_non_tensor
from tclass._engine._nontensor_stack import NonTensorStack as NonTensorStack
from tclass._engine._pad import pad as pad
from tclass._engine._pad_sequence import pad_sequence as pad_sequence
from tclass._engine._pad_sequence import unpad_sequence as unpad_sequence
from tclass._engine._td import TensorDict as TensorDict
from tclass._interop._constructors import make_tensordict as make_tensordict
from tclass._tensorclass import is_tensorclass as is_tensorclass

__all__ = [
    "collate",
    "default_collate",
    "dense_stack_tds",
    "group_by",
    "make_tensordict",
    "merge_tensordicts",
    "pad",
    "pad_sequence",
    "unpad_sequence",
]
