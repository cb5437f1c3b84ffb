"""The persistence layer, grouped by what it is: ``memmap/`` (the peer's memory-mapped
folder format, its archives and appends), ``shards/`` (sharded datasets: saved folders
grown by many writers, read as one), ``store/`` (``PersistentTensorDict`` over the
``Store`` protocol: HDF5 files and zarr stores) and ``export/`` (tables, Arrow,
safetensors, MDS). At this level: the entry points every collection's persistence
methods forward to (``_api``), ``from_schema`` (``_preallocate``), and what the groups
share (a record's schema, ``_schema``; what its annotations say, ``_annotations``).
Built on the engine."""
