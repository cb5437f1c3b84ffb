"""The functions the peer keeps in ``tensordict.functional``, where code written for it
imports them from (``from tclass.functional import pad_sequence, collate``): stacking,
padding, merging and batching collections.
"""

from tclass._engine._collate import collate as collate
from tclass._engine._collate import default_collate as default_collate
from tclass._engine._collate import group_by as group_by
from tclass._engine._combine import merge_tensordicts as merge_tensordicts
from tclass._engine._lazy._build import dense_stack_tds as dense_stack_tds
from tclass._engine._pad import pad as pad
from tclass._engine._pad import pad_sequence as pad_sequence
from tclass._engine._pad import unpad_sequence as unpad_sequence
from tclass._interop._constructors import make_tensordict as make_tensordict

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
