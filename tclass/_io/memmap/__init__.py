"""The peer's memory-mapped folder format: written safely (``_write``, staged and swapped
into place), read strictly (``_read``, validated, never following links, never changing a
file), its ``.tdz`` archives (``_zip``, ``_archive``), appends (``_append``), and the
folder a saved collection stays in step with (``_saved_folder``, ``_saved_entries``)."""
