"""The base layer: ``TensorDictBase`` and its method groups, in ``implemented/`` (written
against the collection primitives of ``implemented/_collection.py``) and ``declared/``
(one-line forwarders reading their implementation, written by a layer above, from
``_provided.py``); see README.md."""
