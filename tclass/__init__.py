"""tclass: typed, batched, memory-mappable records of tensors for PyTorch.

One import gives the public surface::

    import tclass
    td = tclass.TensorDict({"obs": torch.zeros(4, 3)}, batch_size=[4])
"""

import gc as _gc

# `import torch` leaves the collector one young collection short of a full one (gc's
# oldest count at 9 of 10), which tclass's import (some 30,000 allocations) then triggers:
# a pass over the 165,000 objects torch made, 70-90 ms of CPU, about as long as tclass's
# own modules take to load. So the objects alive before the import are set aside
# (gc.freeze, which also restarts the collection counts) while it runs and put back in the
# oldest generation after (gc.unfreeze): the collections the import triggers see its own
# objects only, and the next full collection comes on the collector's usual schedule. No
# threshold is touched; nothing stays frozen once `import tclass` returns or fails. Skipped
# when the collector is off or the caller has frozen objects (unfreeze would release them).
_FROZEN_HERE = _gc.isenabled() and not _gc.get_freeze_count()
if _FROZEN_HERE:
    _gc.freeze()
try:
    # The peer's public modules, for code importing from them (``from tclass.tensorclass import
    # NonTensorData``, ``from tclass.base import TensorDictBase``...). ``tensorclass`` and
    # ``memmap`` are loaded here, before the functions of those names are bound below, so that
    # the package attributes stay the functions (as the peer's do) once the modules are imported.
    from tclass import base as base
    from tclass import errors as errors
    from tclass import functional as functional
    from tclass import memmap as _memmap_module  # noqa: F401
    from tclass import persistent as persistent
    from tclass import tensorclass as _tensorclass_module  # noqa: F401
    from tclass import tensordict as tensordict
    from tclass import typedtensordict as typedtensordict
    from tclass import utils as utils
    from tclass._base._tensordict_base import TensorDictBase as TensorDictBase
    from tclass._base.implemented._casts import is_bool as is_bool
    from tclass._base.implemented._casts import is_floating as is_floating
    from tclass._base.implemented._casts import is_inexact as is_inexact
    from tclass._base.implemented._casts import is_integer as is_integer
    from tclass._base.implemented._collection import TensorCollection as TensorCollection
    from tclass._base.implemented._collection import _is_default_leaf as default_is_leaf
    from tclass._base.implemented._leaf_rules import is_leaf_nontensor as is_leaf_nontensor
    from tclass._core._contracts import checks_enabled as checks_enabled
    from tclass._core._contracts import set_checks as set_checks
    from tclass._core._keyfuncs import KEY_SEPARATOR as KEY_SEPARATOR
    from tclass._core._keyfuncs import NestedKey as NestedKey
    from tclass._core._keyfuncs import unravel_key as unravel_key
    from tclass._core._keyfuncs import unravel_key_list as unravel_key_list
    from tclass._core._keyfuncs import unravel_key_to_tuple as unravel_key_to_tuple
    from tclass._core._memmap import MemoryMappedTensor as MemoryMappedTensor
    from tclass._core._options import capture_non_tensor_stack as capture_non_tensor_stack
    from tclass._core._options import get_defaults_to_none as get_defaults_to_none
    from tclass._core._options import lazy_legacy as lazy_legacy
    from tclass._core._options import list_to_stack as list_to_stack
    from tclass._core._options import set_capture_non_tensor_stack as set_capture_non_tensor_stack
    from tclass._core._options import set_get_defaults_to_none as set_get_defaults_to_none
    from tclass._core._options import set_lazy_legacy as set_lazy_legacy
    from tclass._core._options import set_list_to_stack as set_list_to_stack
    from tclass._core._printoptions import get_printoptions as get_printoptions
    from tclass._core._printoptions import set_printoptions as set_printoptions
    from tclass._core._spec import Spec as Spec
    from tclass._core._unbatched import UnbatchedTensor as UnbatchedTensor
    from tclass._engine import _map as _map  # binds ENGINE (*)
    from tclass._engine import _pickle5 as _pickle5  # binds ENGINE (*)
    from tclass._engine import _ragged_values as _ragged_values  # binds ENGINE (*)
    from tclass._engine import _repr_html as _repr_html  # binds ENGINE (*)
    from tclass._engine import _torch_functions as _torch_functions
    from tclass._engine._collate import collate as collate
    from tclass._engine._collate import group_by as group_by
    from tclass._engine._combine import expand_as_right as expand_as_right
    from tclass._engine._combine import expand_right as expand_right
    from tclass._engine._combine import isin as isin
    from tclass._engine._combine import merge_tensordicts as merge_tensordicts
    from tclass._engine._combine import remove_duplicates as remove_duplicates
    from tclass._engine._compare import assert_close as assert_close
    from tclass._engine._consolidate import from_consolidated as from_consolidated
    from tclass._engine._lazy import _legacy as _legacy  # registers the legacy lazy views
    from tclass._engine._lazy._build import dense_stack_tds as dense_stack_tds
    from tclass._engine._lazy._build import lazy_stack as lazy_stack
    from tclass._engine._lazy._build import maybe_dense_stack as maybe_dense_stack
    from tclass._engine._lazy._stack import LazyStackedTensorDict as LazyStackedTensorDict
    from tclass._engine._nontensor import MetaData as MetaData
    from tclass._engine._nontensor import NonTensorData as NonTensorData
    from tclass._engine._nontensor import NonTensorData as NonTensorDataBase
    from tclass._engine._nontensor import is_non_tensor as is_non_tensor
    from tclass._engine._nontensor_stack import NonTensorStack as NonTensorStack
    from tclass._engine._ops import cat as cat
    from tclass._engine._ops import stack as stack
    from tclass._engine._pack import PackLayout as PackLayout
    from tclass._engine._pad import pad as pad
    from tclass._engine._pad_sequence import pad_sequence as pad_sequence
    from tclass._engine._pad_sequence import unpad_sequence as unpad_sequence
    from tclass._engine._td import TensorDict as TensorDict
    from tclass._engine._typed import TypedTensorDict as TypedTensorDict
    from tclass._interop import _pytree as _pytree
    from tclass._interop import _state_dict as _state_dict  # binds INTEROP (*)
    from tclass._interop import _vmap_outputs as _vmap_outputs  # vmap returning UnbatchedTensor
    from tclass._interop._bridges import from_any as from_any
    from tclass._interop._bridges import from_pytree as from_pytree
    from tclass._interop._bridges import from_struct_array as from_struct_array
    from tclass._interop._constructors import from_dict as from_dict
    from tclass._interop._constructors import from_namedtuple as from_namedtuple
    from tclass._interop._constructors import from_tuple as from_tuple
    from tclass._interop._constructors import fromkeys as fromkeys
    from tclass._interop._constructors import is_tensor_collection as is_tensor_collection
    from tclass._interop._constructors import make_tensordict as make_tensordict
    from tclass._interop._modules import from_module as from_module
    from tclass._interop._modules import from_modules as from_modules
    from tclass._interop._params import TensorDictParams as TensorDictParams
    from tclass._interop._parse import parse_tensor_dict_string as parse_tensor_dict_string
    from tclass._io import _preallocate as _preallocate  # binds IO (*)
    from tclass._io._api import load as load
    from tclass._io._api import load_memmap as load_memmap
    from tclass._io._api import memmap as memmap
    from tclass._io._api import save as save
    from tclass._io.export import _mds as _mds  # binds IO (*)
    from tclass._io.export._arrow import from_arrow as from_arrow
    from tclass._io.export._arrow import to_arrow as to_arrow
    from tclass._io.export._safetensors import from_safetensors as from_safetensors
    from tclass._io.export._safetensors import to_safetensors as to_safetensors
    from tclass._io.export._tabular import from_csv as from_csv
    from tclass._io.export._tabular import from_json as from_json
    from tclass._io.export._tabular import from_pandas as from_pandas
    from tclass._io.export._tabular import from_parquet as from_parquet
    from tclass._io.memmap import _saved_entries as _saved_entries  # binds IO (*)
    from tclass._io.memmap._append import append_memmap as append_memmap
    from tclass._io.memmap._archive import is_memmap_archive as is_memmap_archive
    from tclass._io.memmap._archive import pack_memmap as pack_memmap
    from tclass._io.memmap._archive import refresh_archive_checksums as refresh_archive_checksums
    from tclass._io.memmap._archive import unpack_memmap as unpack_memmap
    from tclass._io.memmap._tree import print_directory_tree as print_directory_tree
    from tclass._io.shards._dataset import ShardedDataset as ShardedDataset
    from tclass._io.shards._dataset import ShardInfo as ShardInfo
    from tclass._io.shards._dataset import open_sharded as open_sharded
    from tclass._io.shards._writer import ShardWriter as ShardWriter
    from tclass._io.shards._writer import shard_writer as shard_writer
    from tclass._io.store._open import from_h5 as from_h5
    from tclass._io.store._open import from_zarr as from_zarr
    from tclass._io.store._persistent import PersistentTensorDict as PersistentTensorDict
    from tclass._tensorclass import TensorClass as TensorClass
    from tclass._tensorclass import checked as checked
    from tclass._tensorclass import from_dataclass as from_dataclass
    from tclass._tensorclass import is_tensorclass as is_tensorclass
    from tclass._tensorclass import tensorclass as tensorclass
    from tclass._tensorclass._attrs import TensorAttrs as TensorAttrs
    from tclass.distributed import _collectives as _collectives  # binds DISTRIBUTED (*)
    from tclass.errors import TclassError as TclassError
finally:
    if _FROZEN_HERE:
        _gc.unfreeze()
    del _gc, _FROZEN_HERE

# (*) modules that bind slots of the base layer (tclass/_base/_provided.py) and that no
# import above loads: every slot is bound once `import tclass` returns.

assert_allclose_td = assert_close

__all__ = [
    "KEY_SEPARATOR",
    "NestedKey",
    "TensorCollection",
    "TypedTensorDict",
    "NonTensorDataBase",
    "refresh_archive_checksums",
    "append_memmap",
    "open_sharded",
    "shard_writer",
    "ShardedDataset",
    "ShardInfo",
    "ShardWriter",
    "assert_allclose_td",
    "assert_close",
    "collate",
    "default_is_leaf",
    "functional",
    "get_printoptions",
    "group_by",
    "is_bool",
    "is_floating",
    "is_integer",
    "is_leaf_nontensor",
    "set_checks",
    "set_printoptions",
    "unravel_key",
    "unravel_key_list",
    "unravel_key_to_tuple",
    "utils",
    "from_safetensors",
    "from_arrow",
    "to_arrow",
    "from_csv",
    "from_json",
    "from_pandas",
    "from_parquet",
    "to_safetensors",
    "LazyStackedTensorDict",
    "MemoryMappedTensor",
    "MetaData",
    "NonTensorData",
    "NonTensorStack",
    "PackLayout",
    "PersistentTensorDict",
    "Spec",
    "TclassError",
    "TensorAttrs",
    "TensorClass",
    "TensorDict",
    "TensorDictBase",
    "TensorDictParams",
    "UnbatchedTensor",
    "capture_non_tensor_stack",
    "cat",
    "checked",
    "checks_enabled",
    "dense_stack_tds",
    "errors",
    "expand_as_right",
    "expand_right",
    "from_any",
    "from_consolidated",
    "from_dataclass",
    "from_dict",
    "from_h5",
    "from_module",
    "from_modules",
    "from_namedtuple",
    "from_pytree",
    "from_struct_array",
    "from_tuple",
    "from_zarr",
    "fromkeys",
    "get_defaults_to_none",
    "is_non_tensor",
    "is_inexact",
    "is_tensor_collection",
    "is_memmap_archive",
    "is_tensorclass",
    "isin",
    "lazy_legacy",
    "lazy_stack",
    "list_to_stack",
    "load",
    "load_memmap",
    "make_tensordict",
    "maybe_dense_stack",
    "memmap",
    "merge_tensordicts",
    "pack_memmap",
    "pad",
    "pad_sequence",
    "parse_tensor_dict_string",
    "print_directory_tree",
    "remove_duplicates",
    "save",
    "set_capture_non_tensor_stack",
    "set_get_defaults_to_none",
    "set_lazy_legacy",
    "set_list_to_stack",
    "stack",
    "tensorclass",
    "unpad_sequence",
    "unpack_memmap",
]

__version__ = "0.1.0"
