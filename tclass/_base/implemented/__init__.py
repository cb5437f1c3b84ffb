"""The method groups of ``TensorDictBase`` implemented in the base layer, written against
the collection primitives of ``_collection.py`` (see ../README.md)."""
