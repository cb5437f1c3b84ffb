"""The persistence layer: the peer's memory-mapped folder format, written safely
(``_write``, staged and swapped into place) and read strictly (``_read``, validated,
never following links, never changing a file).

Nothing is imported here eagerly: the engine's classes import the methods mixin
(``_methods``), and the writer and reader import the engine.
"""
