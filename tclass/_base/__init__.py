"""The base layer: ``TensorDictBase`` and its method groups, written against the
collection primitives of ``_collection.py``. The only deferred imports of the package
live here: one-line forwarders to the layers above (see README.md)."""
