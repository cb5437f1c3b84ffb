"""The programs of the compatibility corpus: one module each, with a ``main()``."""
