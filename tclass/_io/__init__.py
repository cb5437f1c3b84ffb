"""The persistence layer: the peer's memory-mapped folder format, written safely
(``_write``, staged and swapped into place) and read strictly (``_read``, validated,
never following links, never changing a file). Built on the engine; the base layer's
``PersistenceOps`` methods forward to ``_api``."""
