"""The base layer: ``TensorDictBase`` and its method groups, written against the
collection primitives of ``_collection.py``. Methods implemented by the layers above are
one-line forwarders reading their implementation from ``_provided.py`` (see README.md)."""
