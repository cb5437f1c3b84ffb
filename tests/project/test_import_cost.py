"""What ``import tclass`` costs a process beyond its own modules, and what it leaves as it
found it: the garbage collector (tclass/__init__.py sets torch's objects aside while it
loads) and the set of modules (only tclass's and the standard library's are added after
``import torch``). Each case runs in a fresh interpreter: ``tclass`` is already imported in
this one."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import tclass

ROOT = Path(tclass.__file__).parents[1]  # the tclass under test, first on sys.path


def run_fresh(script: str) -> object:
    """Runs ``script`` in a fresh interpreter from the checkout; returns what it printed,
    read as JSON."""
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=ROOT
    )
    return json.loads(result.stdout)


def test_no_collection_during_the_import_walks_the_objects_torch_made() -> None:
    """``import torch`` leaves gc's oldest count at 9 of 10: without the freeze, tclass's
    import ran a full collection over torch's 165,000 objects (70-90 ms, CPU)."""
    script = (
        "import gc, json, torch\n"
        "before = len(gc.get_objects())\n"
        "seen = []\n"
        "def watch(phase, info):\n"
        "    if phase == 'start':\n"
        "        young = range(info['generation'] + 1)  # what the collection walks\n"
        "        seen.append(sum(len(gc.get_objects(generation=g)) for g in young))\n"
        "gc.callbacks.append(watch)\n"
        "import tclass\n"
        "gc.callbacks.remove(watch)\n"
        "print(json.dumps([before, seen]))\n"
    )
    before, seen = run_fresh(script)  # type: ignore[misc]
    assert before > 50_000  # torch's objects, the ones a full collection would walk
    assert seen, "the import triggers collections of its own objects"
    assert max(seen) < before / 2, seen


def test_the_collector_is_left_as_it_was() -> None:
    script = (
        "import gc, json, torch\n"
        "gc.set_threshold(500, 7, 9)\n"
        "import tclass\n"
        "print(json.dumps([gc.isenabled(), gc.get_threshold(), gc.get_freeze_count()]))\n"
    )
    assert run_fresh(script) == [True, [500, 7, 9], 0]


def test_a_callers_frozen_objects_stay_frozen_and_a_disabled_collector_off() -> None:
    script = (
        "import gc, json, torch\n"
        "gc.freeze()\n"
        "frozen = gc.get_freeze_count()\n"
        "gc.disable()\n"
        "import tclass\n"
        "print(json.dumps([frozen, gc.get_freeze_count(), gc.isenabled()]))\n"
    )
    frozen, after, enabled = run_fresh(script)  # type: ignore[misc]
    assert frozen > 50_000
    assert frozen - 1_000 < after <= frozen  # (a few frozen objects die by refcount)
    assert enabled is False


def test_a_failed_import_leaves_nothing_frozen() -> None:
    """A module tclass imports raising: the objects set aside are given back."""
    script = (
        "import gc, json, sys, torch\n"
        "sys.modules['tclass.errors'] = None  # makes `from tclass import errors` raise\n"
        "try:\n"
        "    import tclass\n"
        "except ImportError:\n"
        "    print(json.dumps([gc.get_freeze_count(), gc.isenabled()]))\n"
    )
    assert run_fresh(script) == [0, True]


def test_import_adds_only_tclass_and_standard_library_modules_after_torch() -> None:
    """numpy only as torch imports it; no third-party package (annotated_types, jaxtyping,
    h5py, zarr, ray, pandas, pyarrow...) and no torch submodule (torch._dynamo) more."""
    script = (
        "import json, sys, torch\n"
        "before = set(sys.modules)\n"
        "import tclass, tclass.ray\n"
        "print(json.dumps(sorted(set(sys.modules) - before)))\n"
    )
    added = run_fresh(script)
    assert isinstance(added, list)
    foreign = [
        name
        for name in added
        if name.split(".")[0] != "tclass" and name.split(".")[0] not in sys.stdlib_module_names
    ]
    assert foreign == []
    assert any(name.split(".")[0] == "tclass" for name in added)
