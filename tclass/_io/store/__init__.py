"""Persistent stores: ``PersistentTensorDict`` (``_persistent``), a collection whose entries
live in an HDF5 file or a zarr store, read and written entry by entry through one
``Store`` protocol (``_protocol``); ``_h5`` and ``_zarr`` are its backends, the only
modules that import h5py and zarr. ``_open`` holds the entry points (``from_h5``,
``from_zarr``, ``to_h5``, ``to_zarr``, ``from_any``'s reader)."""
