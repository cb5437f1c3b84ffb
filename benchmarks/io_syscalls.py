"""Counts the system calls of tclass's saves and loads against the peer's (``tensordict``).

Usage: ``python benchmarks/io_syscalls.py [--cases load8,nested,...] [--show CASE]``
(needs ``strace``). A count does
not move with the machine's load, where a time does: on a busy machine, compare these.

Each case runs in a child process under ``strace -f``, three times to warm up, then once
between two marker calls (a ``stat`` of a path that does not exist); the table counts the
calls between the markers, by name. The cases (their folders made first, untimed):

* ``load8``: ``TensorDict.load_memmap`` of 8 leaves; ``nested``: of 5 leaves in 3 nested
  folders; ``record8``: a tensorclass of 8 fields (2 folders: the record's and its
  ``_tensordict/``);
* ``write256``: ``memmap`` of 256 small leaves into a new folder; ``like``:
  ``memmap_like`` of a record of an image and a label expanded to 1,000,000 rows;
  ``overwrite8``: ``memmap(existsok=True)`` over a saved folder of 8 leaves (tclass
  writes a new tree beside it and swaps it in, crash-safe; the peer writes in place).

The previous call's result is freed before the first marker (its ``munmap`` calls are not
counted). ``--show CASE`` prints tclass's calls of that case.
"""

import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile

CASES = ("load8", "nested", "record8", "write256", "like", "overwrite8")

CHILD = r"""
import itertools, os, sys, warnings
warnings.simplefilter("ignore")
import torch
import tclass
import tensordict
lib, case, base = sys.argv[1], sys.argv[2], sys.argv[3]
mod = tclass if lib == "tclass" else tensordict


@mod.tensorclass
class Record:
    f0: torch.Tensor
    f1: torch.Tensor
    f2: torch.Tensor
    f3: torch.Tensor
    f4: torch.Tensor
    f5: torch.Tensor
    f6: torch.Tensor
    f7: torch.Tensor


eight = {f"f{i}": torch.randn(1000, 16) for i in range(8)}
nested = {"a": torch.randn(10, 3), "g": torch.ones(10, dtype=torch.bool),
          "b": {"c": torch.randn(10), "d": {"e": torch.randn(10, 2), "f": torch.zeros(10)}}}
small = mod.TensorDict({f"k{i}": torch.randn(100, 4) for i in range(256)}, [100])
image = torch.zeros(3, 64, 64, dtype=torch.uint8)
like = mod.TensorDict({"image": image, "label": torch.tensor(0)}, []).expand(1_000_000)
names = (f"{base}/new{i}" for i in itertools.count())
if case == "load8":
    mod.TensorDict(eight, [1000]).memmap(f"{base}/td")
    run = lambda: mod.TensorDict.load_memmap(f"{base}/td")
elif case == "nested":
    mod.TensorDict(nested, [10]).memmap(f"{base}/td")
    run = lambda: mod.TensorDict.load_memmap(f"{base}/td")
elif case == "record8":
    Record(**eight, batch_size=[1000]).memmap(f"{base}/td")
    run = lambda: Record.load_memmap(f"{base}/td")
elif case == "write256":
    run = lambda: small.memmap(next(names))
elif case == "like":
    run = lambda: like.memmap_like(next(names))
else:
    saved = mod.TensorDict(eight, [1000])
    saved.memmap(f"{base}/td")
    run = lambda: saved.memmap(f"{base}/td", existsok=True)
for _ in range(3):
    kept = run()
del kept
for mark in ("BEGIN", "END"):
    try:
        os.stat(f"/tclass-syscalls-{mark}")
    except OSError:
        pass
    if mark == "BEGIN":
        kept = run()
"""

_CALL = re.compile(r"^(?:\[pid\s+\d+\]\s+|\d+\s+)?(\w+)\(")


def calls(lib: str, case: str) -> list[str]:
    """The system calls ``case`` makes with ``lib``, one line each (strace's text)."""
    base = tempfile.mkdtemp(prefix=f"syscalls-{lib}-")
    trace = os.path.join(base, "trace")
    try:
        subprocess.run(
            ["strace", "-f", "-o", trace, sys.executable, "-c", CHILD, lib, case, base],
            check=True,
        )
        with open(trace) as stream:
            lines = stream.read().splitlines()
    finally:
        shutil.rmtree(base, ignore_errors=True)
    begin = next(i for i, line in enumerate(lines) if "tclass-syscalls-BEGIN" in line)
    end = next(i for i, line in enumerate(lines) if "tclass-syscalls-END" in line)
    return [line for line in lines[begin + 1 : end] if _CALL.match(line)]


def counted(lines: list[str]) -> collections.Counter[str]:
    return collections.Counter(_CALL.match(line).group(1) for line in lines)  # type: ignore[union-attr]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--show", choices=CASES, help="print tclass's calls of this case")
    parser.add_argument("--cases", default=",".join(CASES), help="comma-separated cases")
    options = parser.parse_args(argv)
    cases = options.cases.split(",")
    unknown = sorted(set(cases) - set(CASES))
    if unknown:
        parser.error(f"unknown cases {unknown}; the cases are {', '.join(CASES)}")
    if shutil.which("strace") is None:
        sys.exit("strace is not installed")
    if options.show:
        print("\n".join(calls("tclass", options.show)))
        return
    print(f"{'case':12s} {'tclass':>7s} {'peer':>7s}  tclass's calls (peer's)")
    for case in cases:
        mine, theirs = counted(calls("tclass", case)), counted(calls("tensordict", case))
        names = sorted(mine.keys() | theirs.keys(), key=lambda n: -(mine[n] + theirs[n]))
        detail = ", ".join(f"{n} {mine[n]} ({theirs[n]})" for n in names)
        print(f"{case:12s} {sum(mine.values()):7d} {sum(theirs.values()):7d}  {detail}")


if __name__ == "__main__":
    main()
