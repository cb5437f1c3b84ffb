"""Persistent stores: ``PersistentTensorDict``, a collection whose entries live in an HDF5
file (``_persistent``), read and written entry by entry."""
