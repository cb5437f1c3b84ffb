"""Runs matrix pairs outside pytest and prints each failing one with its first problem:
``python -m conformance.report [KIND_OR_METHOD ...]`` from ``tests/`` (every pair when
none is named). The reviewed tables are not applied: the listing is what to review."""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

from .test_matrix import all_pairs, check_pair


def main(names: list[str]) -> None:
    pairs = [p for p in all_pairs() if not names or p[0] in names or p[1] in names]
    start, failed = time.process_time(), 0
    with tempfile.TemporaryDirectory() as folder:
        for index, (kind, method) in enumerate(pairs):
            try:
                problems = check_pair(kind, method, Path(folder) / str(index))
            except Exception as error:  # a crash of the harness is a finding too
                problems = [f"harness: {type(error).__name__}: {error}"]
            if problems:
                failed += 1
                lines = " | ".join(line[:200] for line in problems[:4])
                print(f"{kind}\t{method}\t{lines}", flush=True)
    print(f"# {len(pairs)} pairs, {failed} failing, {time.process_time() - start:.0f} s CPU")


if __name__ == "__main__":
    main(sys.argv[1:])
