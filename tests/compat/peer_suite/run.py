"""Runs the peer's own test files against tclass (and against the peer, for the baseline)
and summarises the results: see README.md.

    python tests/compat/peer_suite/run.py --lib tensordict      # the peer's baseline, once
    python tests/compat/peer_suite/run.py                       # tclass
    python tests/compat/peer_suite/run.py --summary             # the report again
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
MIRROR = Path("/work/.mirror/pytorch+tensordict/repo")
DEFAULT_TESTS = Path(tempfile.gettempdir()) / "tclass-peer-tests"
DEFAULT_OUT = Path(tempfile.gettempdir()) / "tclass-peer-results"
FILES = (
    "test/tensordict/test_methods.py",
    "test/tensordict/test_generic.py",
    "test/tensordict/test_lazy.py",
    "test/tensordict/test_nontensor.py",
    "test/tensorclass/test_tensorclass.py",
    "test/memmap/test_memmap.py",
)
# The kinds of collection of the peer's per-kind suite (test/_utils_internal.py).
KINDS = (
    "td", "nested_td", "nested_tensorclass", "nested_stacked_td", "stacked_td", "idx_td",
    "sub_td", "sub_td2", "memmap_td", "permute_td", "unsqueezed_td", "squeezed_td",
    "td_reset_bs", "td_h5", "td_params", "td_with_non_tensor",
    "td_with_non_tensor_and_metadata", "td_with_unbatched", "typed_td", "nested_typed_td",
)  # fmt: skip


def extract(tests: Path, mirror: Path, ref: str) -> None:
    """The peer's ``test/`` folder and ``pytest.ini`` at ``ref``, into ``tests``."""
    tests.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(
        ["git", "-C", str(mirror), "archive", ref, "test", "pytest.ini"],
        check=True,
        capture_output=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(tests)], input=archive, check=True)
    print(f"extracted the peer's tests at {ref} into {tests}")


def run(lib: str, args: argparse.Namespace) -> None:
    """One pytest run of the chosen files on ``lib``; merges its results into OUT/lib.jsonl."""
    report = args.out / f"{lib}.run.jsonl"
    env = dict(os.environ)
    paths = [str(REPO), str(HERE / "shim"), str(args.tests / "test")]
    env["PYTHONPATH"] = os.pathsep.join(paths + [env.get("PYTHONPATH", "")])
    env["TCLASS_PEER_SHIM"] = "1" if lib == "tclass" else "0"
    env["TCLASS_PEER_REPORT"] = str(report)
    env["TCLASS_PEER_TIMEOUT"] = str(args.timeout)
    env.setdefault("OMP_NUM_THREADS", "1")
    command = [
        sys.executable,
        "-m",
        "pytest",
        *args.files,
        "-p",
        "peer_report",
        "-p",
        "no:cacheprovider",
    ]
    command += ["-q", "--tb=no", "-rN", "-W", "ignore", "--rootdir", str(args.tests)]
    if args.workers > 0:
        command += ["-n", str(args.workers)]
    if args.k:
        command += ["-k", args.k]
    if args.failed:
        ours, peer = load(args.out / "tclass.jsonl"), load(args.out / "tensordict.jsonl")
        chosen = [n for n, e in peer.items() if e["outcome"] == "passed" and _file(n) in args.files]
        redo = [n for n in chosen if ours.get(n, {}).get("outcome") != "passed"]
        command = [c for c in command if c not in args.files] + redo
        print(f"[{lib}] rerunning the {len(redo)} tests the peer passes and tclass did not")
    print(f"[{lib}] {' '.join(command[2:12])} ...", flush=True)
    subprocess.run(command, cwd=args.tests, env=env, check=False)
    merged = load(args.out / f"{lib}.jsonl")
    merged.update(load(report))
    with open(args.out / f"{lib}.jsonl", "w", encoding="utf-8") as out:
        for entry in merged.values():
            out.write(json.dumps(entry) + "\n")


def load(path: Path) -> dict[str, dict[str, Any]]:
    if not path.exists():
        return {}
    with open(path, encoding="utf-8") as lines:
        return {entry["nodeid"]: entry for entry in map(json.loads, lines)}


def kind_of(nodeid: str) -> str:
    params = nodeid.partition("[")[2].rstrip("]").split("-")
    return next((p for p in params if p in KINDS), "-")


def _file(nodeid: str) -> str:
    return nodeid.split("::")[0]


def summarise(args: argparse.Namespace) -> None:
    ours, peer = load(args.out / "tclass.jsonl"), load(args.out / "tensordict.jsonl")
    if not peer:
        print("no baseline: run with --lib tensordict first")
    files = sorted({_file(n) for n in ours} | {_file(n) for n in peer})
    print(
        f"\n{'file':42} {'peer ok':>8} {'private':>8} {'tclass ok':>9} {'rate':>6}"
        "   (all incl. private)"
    )
    groups: Counter[str] = Counter()
    examples: dict[str, list[str]] = defaultdict(list)
    by_kind: dict[str, Counter[str]] = defaultdict(Counter)
    for file in files:
        passing = [n for n, e in peer.items() if _file(n) == file and e["outcome"] == "passed"]
        private = [n for n in passing if ours.get(n, peer[n]).get("private")]
        public = [n for n in passing if n not in private]
        ok = [n for n in public if ours.get(n, {}).get("outcome") == "passed"]
        ok_all = [n for n in passing if ours.get(n, {}).get("outcome") == "passed"]
        rate = len(ok) / len(public) if public else 0.0
        rate_all = len(ok_all) / len(passing) if passing else 0.0
        print(
            f"{file:42} {len(passing):8} {len(private):8} {len(ok):9} {rate:6.1%}"
            f"   ({rate_all:.1%})"
        )
        for n in public:
            entry = ours.get(n, {"outcome": "not run"})
            by_kind[kind_of(n)][entry["outcome"] == "passed"] += 1
            if entry["outcome"] != "passed":
                cause = entry.get("cause") or entry["outcome"]
                groups[cause] += 1
                examples[cause].append(n)
    if args.kinds:
        print("\nper kind (public tests the peer passes):")
        for kind, counts in sorted(by_kind.items(), key=lambda kv: -kv[1][False]):
            total = counts[True] + counts[False]
            print(f"  {kind:34} {counts[True]:5}/{total:<5} {counts[True] / total:6.1%}")
    print(f"\ntop failure groups (public tests the peer passes; {sum(groups.values())} in all):")
    for cause, count in groups.most_common(args.groups):
        print(f"{count:5}  {cause}")
        for nodeid in examples[cause][: args.examples]:
            print(f"         {nodeid}")
    if args.show:
        pattern = re.compile(args.show)
        for cause, nodeids in examples.items():
            if pattern.search(cause):
                print(f"\n{cause}:")
                print("\n".join(f"  {n}" for n in nodeids))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--lib", choices=("tclass", "tensordict"), action="append")
    parser.add_argument("--files", nargs="+", default=list(FILES), help="relative to --tests")
    parser.add_argument("-k", help="pytest -k expression (results merge with earlier runs)")
    parser.add_argument("--workers", type=int, default=2, help="pytest-xdist workers (0: none)")
    parser.add_argument("--timeout", type=int, default=120, help="seconds per test")
    parser.add_argument("--tests", type=Path, default=DEFAULT_TESTS, help="the peer's tests")
    parser.add_argument("--mirror", type=Path, default=MIRROR, help="git dir of the peer")
    parser.add_argument("--ref", default="HEAD", help="the peer's commit to take tests from")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="results folder")
    parser.add_argument(
        "--failed", action="store_true", help="only the tests the peer passes and tclass failed"
    )
    parser.add_argument("--summary", action="store_true", help="only summarise earlier runs")
    parser.add_argument("--fresh", action="store_true", help="forget earlier results of --lib")
    parser.add_argument("--kinds", action="store_true", help="break the rates down per kind")
    parser.add_argument("--groups", type=int, default=25, help="failure groups to list")
    parser.add_argument("--examples", type=int, default=2, help="test ids per group")
    parser.add_argument("--show", help="list every test of the groups matching this regex")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if not args.summary:
        if not (args.tests / "test").exists():
            extract(args.tests, args.mirror, args.ref)
        for lib in args.lib or ["tclass"]:
            if args.fresh:
                (args.out / f"{lib}.jsonl").unlink(missing_ok=True)
            run(lib, args)
    summarise(args)


if __name__ == "__main__":
    main()
