"""``tensordict.base``'s public names, for code that imports them from there
(``from tclass.base import TensorDictBase, is_tensor_collection``)."""

from tclass._base._tensordict_base import TensorDictBase as TensorDictBase
from tclass._core._options import get_defaults_to_none as get_defaults_to_none
from tclass._core._options import set_get_defaults_to_none as set_get_defaults_to_none
from tclass._interop._bridges import from_any as from_any
from tclass._interop._bridges import from_struct_array as from_struct_array
from tclass._interop._constructors import from_dict as from_dict
from tclass._interop._constructors import from_namedtuple as from_namedtuple
from tclass._interop._constructors import from_tuple as from_tuple
from tclass._interop._constructors import is_tensor_collection as is_tensor_collection
from tclass._io.export._tabular import from_csv as from_csv
from tclass._io.export._tabular import from_json as from_json
from tclass._io.export._tabular import from_pandas as from_pandas
from tclass._io.export._tabular import from_parquet as from_parquet
from tclass._io.store._open import from_h5 as from_h5
from tclass._io.store._open import from_zarr as from_zarr

__all__ = [
    "TensorDictBase",
    "from_any",
    "from_csv",
    "from_dict",
    "from_h5",
    "from_json",
    "from_namedtuple",
    "from_pandas",
    "from_parquet",
    "from_struct_array",
    "from_tuple",
    "from_zarr",
    "get_defaults_to_none",
    "is_tensor_collection",
    "set_get_defaults_to_none",
]
