"""How much of the conformance checks a run takes: ``TCLASS_MATRIX=full`` runs every pair
(of the matrix and of the error check), the default run a sample drawn under a fixed seed
that still holds every kind, every method or bad call, and every pair of the reviewed
tables (see README.md)."""

from __future__ import annotations

import os

FULL = os.environ.get("TCLASS_MATRIX", "") == "full"
SAMPLE_SEED = 27
