"""The cost of ``@tclass.checked`` per call, against the undecorated function, a
hand-written check of the same dims, and jaxtyping's ``jaxtyped`` + beartype.

Usage: ``python benchmarks/checked.py [--quick] [--repeat N] [--calls N]``
(``--quick``: a smoke run, 2 repeats of 2,000 calls).

The contract (issue 31, item 4: "<= 2 us per call for three record arguments"): a
function of three records, ``A`` (``x: Spec("n d")``), ``B`` (``y: Spec("d")``),
``C`` (``z: Spec("n")``), returning an ``A``, whose dims ``n`` and ``d`` must agree
across the arguments and the return value. Its body returns its first argument, so
what is timed is the call and its checks. The implementations:

* ``plain``: the undecorated function (the floor every overhead is measured from);
* ``checked``: ``tclass.checked(plain)``; ``checked, off``: the same after
  ``tclass.set_checks(False)`` (one flag read per call);
* ``by hand``: the same comparisons written in the function body (reads each shape);
* ``jaxtyped + beartype`` (when both are installed): the three records' tensors as
  ``Float[Tensor, "b n d"]``, ``Float[Tensor, "b d"]``, ``Float[Tensor, "b n"]`` and the
  return value, checked by ``@jaxtyped(typechecker=beartype)``: jaxtyping's own
  binding of the same dims over tensors (it cannot read records);
* ``checked, tensors``: ``@tclass.checked`` on that tensor function (the same
  jaxtyping annotations), to compare like with like.

CPU time (``time.process_time``; run with ``OMP_NUM_THREADS=1``, which the script sets
before importing torch): each repeat times ``calls`` calls of every implementation in a
rotating order; the overhead of each is its time per call minus ``plain``'s in the same
repeat. Reported: the median over the repeats with the min-max spread, and the ratio
of ``checked`` to ``jaxtyped + beartype`` (per repeat, then median and spread).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Annotated, Any

os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402

import tclass  # noqa: E402
from tclass import Spec, TensorClass  # noqa: E402

Tensor = torch.Tensor


class A(TensorClass):
    x: Annotated[Tensor, Spec("n d", torch.float32)]


class B(TensorClass):
    y: Annotated[Tensor, Spec("d", torch.float32)]


class C(TensorClass):
    z: Annotated[Tensor, Spec("n", torch.float32)]


def plain(a: A, b: B, c: C) -> A:
    return a


def by_hand(a: A, b: B, c: C) -> A:
    n, d = a.x.shape[-2:]
    if b.y.shape[-1] != d or c.z.shape[-1] != n:
        raise ValueError("n and d must agree")
    out = a
    if out.x.shape[-2] != n or out.x.shape[-1] != d:
        raise ValueError("the result's n and d must agree")
    return out


def _tensor_functions() -> dict[str, Callable[..., Any]]:
    """The same contract over the records' tensors, for jaxtyping (if installed)."""
    try:
        from jaxtyping import Float, jaxtyped
    except ImportError:
        return {}

    def tensors(
        x: Float[Tensor, "b n d"],  # noqa: F722
        y: Float[Tensor, "b d"],  # noqa: F722
        z: Float[Tensor, "b n"],  # noqa: F722
    ) -> Float[Tensor, "b n d"]:  # noqa: F722
        return x

    made: dict[str, Callable[..., Any]] = {"checked, tensors": tclass.checked(tensors)}
    try:
        from beartype import beartype
    except ImportError:
        return made
    made["jaxtyped + beartype"] = jaxtyped(typechecker=beartype)(tensors)
    return made


def implementations() -> dict[str, tuple[Callable[..., Any], str]]:
    """Each implementation, and the arguments it takes ("records" or "tensors")."""
    out: dict[str, tuple[Callable[..., Any], str]] = {
        "plain": (plain, "records"),
        "checked": (tclass.checked(plain), "records"),
        "checked, off": (tclass.checked(plain), "records"),
        "by hand": (by_hand, "records"),
    }
    out.update({name: (fn, "tensors") for name, fn in _tensor_functions().items()})
    return out


def _arguments() -> dict[str, tuple[Any, ...]]:
    batch, n, d = 8, 3, 4
    a = A(x=torch.zeros(batch, n, d), batch_size=[batch])
    b = B(y=torch.zeros(batch, d), batch_size=[batch])
    c = C(z=torch.zeros(batch, n), batch_size=[batch])
    return {"records": (a, b, c), "tensors": (a.x, b.y, c.z)}


def _time(fn: Callable[..., Any], args: tuple[Any, ...], calls: int, off: bool) -> float:
    """Seconds of CPU time per call."""
    switch = tclass.set_checks(not off)
    try:
        start = time.process_time()
        for _ in range(calls):
            fn(*args)
        return (time.process_time() - start) / calls
    finally:
        switch.__exit__()


def measure(repeat: int, calls: int) -> dict[str, list[float]]:
    """Per implementation, its overhead per call (seconds) in each repeat."""
    impls = implementations()
    args = _arguments()
    for fn, kind in impls.values():  # warm up (and check every one runs)
        for _ in range(100):
            fn(*args[kind])
    names = list(impls)
    overheads: dict[str, list[float]] = {name: [] for name in names if name != "plain"}
    overheads["plain (its own time per call)"] = []
    for r in range(repeat):
        order = names[r % len(names) :] + names[: r % len(names)]  # rotated each repeat
        times = {}
        for name in order:
            fn, kind = impls[name]
            times[name] = _time(fn, args[kind], calls, off=name == "checked, off")
        for name in names[1:]:
            overheads[name].append(times[name] - times["plain"])
        overheads["plain (its own time per call)"].append(times["plain"])
    return overheads


def _us(values: list[float]) -> str:
    median = statistics.median(values) * 1e6
    return f"{median:7.3f} us ({min(values) * 1e6:.3f} - {max(values) * 1e6:.3f})"


def report(overheads: dict[str, list[float]], repeat: int, calls: int) -> list[str]:
    lines = [
        f"@tclass.checked, overhead per call over the undecorated function "
        f"(CPU time, {repeat} repeats x {calls} calls, median (min - max))",
        "",
        "| implementation | overhead per call |",
        "| --- | --- |",
    ]
    lines += [f"| {name} | {_us(values)} |" for name, values in overheads.items()]
    theirs = overheads.get("jaxtyped + beartype")
    if theirs is not None:
        ratios = [ours / other for ours, other in zip(overheads["checked"], theirs)]
        lines.append("")
        lines.append(
            f"checked (3 records) / jaxtyped + beartype (3 tensors): "
            f"{statistics.median(ratios):.3f} ({min(ratios):.3f} - {max(ratios):.3f})"
        )
    else:
        lines.append("")
        lines.append("jaxtyped + beartype: not installed (pip install jaxtyping beartype)")
    lines.append("target: checked <= 2 us per call for three record arguments")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--calls", type=int, default=100_000)
    options = parser.parse_args(argv)
    repeat, calls = (2, 2_000) if options.quick else (options.repeat, options.calls)
    print("\n".join(report(measure(repeat, calls), repeat, calls)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
