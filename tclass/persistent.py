"""``tensordict.persistent``'s public name (``from tclass.persistent import
PersistentTensorDict``; HDF5 needs ``pip install 'tclass[h5]'``, zarr
``pip install 'tclass[zarr]'``)."""

from tclass._io.store._persistent import PersistentTensorDict as PersistentTensorDict

__all__ = ["PersistentTensorDict"]
