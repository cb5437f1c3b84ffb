"""Sharded datasets: one logical dataset as a folder of shards, each a saved folder that
one writer grows with ``append_memmap`` (``_writer``), read as one collection
(``_dataset``) and described by ``python -m tclass info`` (``_info``). The folder's
layout, its manifest and the claim of a shard are in ``_folder``; the schema the shards
share, as their keys, dtypes and shapes, in ``_layout``."""
