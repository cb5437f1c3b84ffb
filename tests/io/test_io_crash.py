"""Crash safety of saving: a writer killed with SIGKILL at random moments, and a reader
racing a re-saving thread, only ever see one complete generation of the data (or a
clear ``TclassError``), never a mix, wrong values or a truncated ``meta.json``."""

from __future__ import annotations

import inspect
import multiprocessing
import random
import shutil
import signal
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

import tclass
import tclass._io.memmap._write
from tclass import NonTensorData, TensorDict

_ROWS = 256  # leaves of 2 MB, 16 MB a tree: a save takes tens of ms
_KILLS = 24
_FRESH_KILLS = 8


def _generation_td(gen: int) -> Any:
    """Generation ``gen``: leaf i holds ``gen * 100 + i`` everywhere, the string says
    ``gen-<gen>``. Self-contained: its source is also run in the child process."""
    import torch

    from tclass import NonTensorData, TensorDict

    rows = 256

    def leaf(index: int, dtype: torch.dtype = torch.float32, cols: int = 2048) -> torch.Tensor:
        return torch.full((rows, cols), gen * 100 + index, dtype=dtype)

    entries: dict[str, Any] = {f"x{i}": leaf(i) for i in range(5)}
    entries["sub"] = TensorDict(
        {"y5": leaf(5), "y6": leaf(6, torch.int32), "deeper": {"z7": leaf(7, torch.float64, 1024)}},
        batch_size=[rows],
    )
    entries["tag"] = NonTensorData(f"gen-{gen}", batch_size=[rows])
    # A nested leaf: two files whose sizes differ between generations (a torn pair shows).
    parts = [torch.full((1 + (gen + i) % 3, 64), gen * 100 + 8.0) for i in range(rows)]
    entries["n8"] = torch.nested.nested_tensor(parts, layout=torch.jagged)
    return TensorDict(entries, batch_size=[rows])


_LEAF_INDEX = {("x0",): 0, ("x1",): 1, ("x2",): 2, ("x3",): 3, ("x4",): 4,
               ("sub", "y5"): 5, ("sub", "y6"): 6, ("sub", "deeper", "z7"): 7,
               ("n8",): 8}  # fmt: skip


def _generation_of(loaded: Any) -> int:
    """The one generation ``loaded`` holds; fails the test on any mix or wrong value."""
    tag = loaded.get("tag")
    assert isinstance(tag, NonTensorData) and tag.data.startswith("gen-"), tag
    gen = int(tag.data[4:])
    leaves = {
        k if isinstance(k, tuple) else (k,): v
        for k, v in loaded.items(include_nested=True, leaves_only=True)
    }
    leaves.pop(("tag",), None)
    assert leaves.keys() == _LEAF_INDEX.keys()
    for key, index in _LEAF_INDEX.items():
        value = leaves[key]
        if value.is_nested:  # this generation's sizes, then its values
            parts = value.unbind()
            assert [len(p) for p in parts] == [1 + (gen + i) % 3 for i in range(_ROWS)], key
            value = torch.cat(parts)
        else:
            assert value.shape[0] == _ROWS and value.numel() > 0, key
        # Every element must be this generation's: a torn or mixed file shows here.
        assert bool((value == gen * 100 + index).all()), (
            f"{key} is not all {gen * 100 + index} (tag says gen {gen})"
        )
    return gen


def _load_outcome(prefix: Path) -> int | tclass.TclassError:
    """The loaded generation, or the clear error a damaged/missing folder gives."""
    try:
        loaded = TensorDict.load_memmap(prefix)
    except tclass.TclassError as error:
        return error
    return _generation_of(loaded)


def _staging_left(prefix: Path) -> list[str]:
    return sorted(p.name for p in prefix.parent.glob(f".{prefix.name}.tclass-staging-*"))


# --- the writer child -----------------------------------------------------------------

# The child runs source text (not a function of this module), so it never imports
# pytest or this file; the forkserver has already imported tclass, so a child starts in
# milliseconds and 20+ kills stay cheap.
_CHILD_HEAD = "from __future__ import annotations\nfrom typing import Any\n"
_CHILD_LOOP = """
tds = [_generation_td(BASE), _generation_td(BASE + 1)]
READY.set()
i = 0
while True:  # re-save, alternating two generations, until SIGKILLed
    tds[i % 2].memmap(PREFIX, num_threads=THREADS)
    i += 1
"""


def _forkserver() -> Any:
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["tclass"])
    return ctx


def _kill_writer(ctx: Any, prefix: Path, base: int, delay: float, threads: int) -> None:
    """Start a child re-saving generations ``base``/``base + 1`` into ``prefix`` and
    SIGKILL it ``delay`` seconds after it starts saving."""
    ready = ctx.Event()
    source = _CHILD_HEAD + inspect.getsource(_generation_td) + _CHILD_LOOP
    scope = {"PREFIX": str(prefix), "BASE": base, "THREADS": threads, "READY": ready}
    child = ctx.Process(target=exec, args=(source, scope), daemon=True)
    child.start()
    try:
        while not ready.wait(0.05):  # a child that fails to start fails fast
            assert child.is_alive(), f"writer child did not start (exit code {child.exitcode})"
        time.sleep(delay)
        assert child.is_alive(), f"writer child died by itself (exit code {child.exitcode})"
    finally:
        child.kill()
        child.join(10)
    assert child.exitcode == -signal.SIGKILL, child.exitcode


class _Delays:
    """Random kill delays in [0, scale]. A save's duration swings from 15 ms to 1 s with
    the disk's writeback, so no fixed scale fits: it grows after a kill that left the old
    data and shrinks after one that found new data, and the kills spread over the whole
    save (writing, fsync, swap, removing the old tree) whatever the disk does."""

    def __init__(self, first_guess: float, seed: int) -> None:
        self.scale, self.rng = 2 * first_guess, random.Random(seed)

    def next(self) -> float:
        return self.rng.uniform(0, self.scale)

    def saw(self, finished: bool) -> None:
        self.scale = self.scale / 1.5 if finished else min(self.scale * 1.5, 2.0)


def _save_seconds(tmp_path: Path) -> float:
    """A first guess of how long a save takes here."""
    td, times = _generation_td(999), []
    for _ in range(3):
        start = time.perf_counter()
        td.memmap(tmp_path / "timing")
        times.append(time.perf_counter() - start)
    return max(times)


def _report(
    request: pytest.FixtureRequest, name: str, counts: Counter[str], staging: list[str]
) -> None:
    line = f"{name}: {dict(counts)}; staging folders left: {len(staging)}"
    print(line)
    request.node.user_properties.append((name, line))


def _remove_staging(parent: Path) -> None:
    """Killed writers leave their staging folders (16 MB each); free the disk."""
    for path in parent.glob(".*.tclass-staging-*"):
        shutil.rmtree(path)


def test_sigkilled_writer_leaves_old_or_new_data_never_a_mix(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    prefix = tmp_path / "data"
    _generation_td(0).memmap(prefix)
    delays, ctx = _Delays(_save_seconds(tmp_path), seed=1234), _forkserver()
    counts: Counter[str] = Counter()
    last, base = 0, 1
    for kill in range(_KILLS):
        _kill_writer(ctx, prefix, base, delays.next(), threads=4 * (kill % 2))
        counts["kills"] += 1
        outcome = _load_outcome(prefix)
        delays.saw(finished=outcome in (base, base + 1))
        if isinstance(outcome, tclass.TclassError):
            counts["error"] += 1
        else:
            assert outcome in (last, base, base + 1), (
                f"generation {outcome}: neither old ({last}) nor new ({base}, {base + 1})"
            )
            counts["old" if outcome == last else "new"] += 1
            last = outcome
        base += 2
    staging = _staging_left(prefix)
    _report(request, "sigkill", counts, staging)
    assert counts["kills"] >= 20
    # Stale staging folders from the killed writers must not get in the way of a save,
    # and the save removes them (no writer holds them locked any more).
    _generation_td(base).memmap(prefix)
    assert _staging_left(prefix) == []
    assert _generation_of(TensorDict.load_memmap(prefix)) == base
    assert _generation_of(tclass.load_memmap(prefix)) == base
    _remove_staging(tmp_path)


def test_sigkilled_first_save_leaves_no_folder_or_a_complete_one(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    delays, ctx = _Delays(_save_seconds(tmp_path), seed=99), _forkserver()
    counts: Counter[str] = Counter()
    for kill in range(_FRESH_KILLS):
        prefix = tmp_path / f"fresh{kill}"  # nothing there yet: the save creates the folder
        _kill_writer(ctx, prefix, 10 * kill, delays.next(), threads=0)
        outcome = _load_outcome(prefix)
        delays.saw(finished=not isinstance(outcome, tclass.TclassError))
        if isinstance(outcome, tclass.TclassError):
            # Only "no folder": a half-built one is never visible under the name.
            assert isinstance(outcome, tclass.errors.MissingFileError) and not prefix.exists(), (
                outcome
            )
            counts["absent"] += 1
        else:
            assert outcome in (10 * kill, 10 * kill + 1)
            counts["new"] += 1
    _report(
        request,
        "sigkill-fresh",
        counts,
        [s for k in range(_FRESH_KILLS) for s in _staging_left(tmp_path / f"fresh{k}")],
    )
    assert sum(counts.values()) == _FRESH_KILLS
    _remove_staging(tmp_path)


# --- a reader racing a re-saving thread ---------------------------------------------------


def _in_thread(target: Callable[[], None], failures: list[BaseException]) -> threading.Thread:
    def run() -> None:
        try:
            target()
        except BaseException as error:  # handed to the test thread, which fails on it
            failures.append(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("exchange", [True, False], ids=["exchange", "two-renames"])
def test_reader_never_sees_a_partial_save(
    tmp_path: Path, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, exchange: bool
) -> None:
    if not exchange:  # the path taken where the OS has no renameat2(RENAME_EXCHANGE)
        monkeypatch.setattr(tclass._io.memmap._write, "_exchange", lambda a, b: False)
    prefix = tmp_path / "data"
    tds = [_generation_td(0), _generation_td(1)]
    tds[0].memmap(prefix)
    stop, failures = threading.Event(), list[BaseException]()
    counts: Counter[str] = Counter()
    errors: list[tclass.TclassError] = []

    def write() -> None:
        # ~2 s, longer (up to 8 s) while fewer than 20 saves: fsync can stall for 300 ms.
        start, i = time.monotonic(), 1
        while (elapsed := time.monotonic() - start) < 2.0 or (i <= 20 and elapsed < 8.0):
            tds[i % 2].memmap(prefix)
            i += 1
        counts["saves"] = i - 1

    def read() -> None:
        while not stop.is_set():
            # Any other exception (json.JSONDecodeError, a raw OSError) escapes and fails.
            outcome = _load_outcome(prefix)
            if isinstance(outcome, tclass.TclassError):
                errors.append(outcome)
                time.sleep(0.001)  # a retry spinning on the GIL would starve the writer
            else:
                assert outcome in (0, 1)
                counts["loads"] += 1

    reader = _in_thread(read, failures)
    _in_thread(write, failures).join(30)
    stop.set()
    reader.join(30)
    if failures:
        raise failures[0]
    counts["errors"] = len(errors)
    counts.update(type(e).__name__ for e in errors)
    _report(
        request,
        f"concurrent-{'exchange' if exchange else 'renames'}",
        counts,
        _staging_left(prefix),
    )
    # A truncated meta.json would surface as a MetadataError "is not valid JSON".
    assert not [e for e in errors if "JSON" in str(e)], errors[:3]
    assert counts["saves"] >= 5 and counts["loads"] >= 10  # the two really raced
    if exchange:  # the folder is always there: a load fails only after 5 swaps mid-read
        assert counts["loads"] >= 9 * len(errors), (
            f"{len(errors)} errors for {counts['loads']} loads: {errors[:3]}"
        )
    else:  # between the two renames there is no folder (longer when the journal stalls)
        assert all(isinstance(e, tclass.errors.MissingFileError) for e in errors), errors[:3]
