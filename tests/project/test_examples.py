"""Every example runs, at a small size, as a user would run it."""

from __future__ import annotations

import importlib.util
import json
import re
import runpy
import subprocess
import sys
from pathlib import Path

import pytest

from tclass import TensorDict
from tclass.__main__ import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run_example(name: str, *args: str) -> str:
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize("name", sorted(path.name for path in EXAMPLES.glob("*.py")))
def test_help_describes_every_option(
    name: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--help`` says what the example does and what each option is for (run in this
    process: argparse prints the help and exits before the example does anything)."""
    example = runpy.run_path(str(EXAMPLES / name), run_name=f"example_{Path(name).stem}")
    monkeypatch.setattr(sys, "argv", [name, "--help"])
    with pytest.raises(SystemExit) as exited:
        example["main"]()
    assert exited.value.code == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("usage: ") and "options:" in lines
    options = lines[lines.index("options:") + 1 :]
    for i, line in enumerate(options):
        if line.startswith("  -"):  # its help on the same line, or wrapped onto the next
            wrapped = i + 1 < len(options) and re.match(r" {6,}\S", options[i + 1])
            assert re.search(r"\S {2,}\S", line) or wrapped, f"{name}: {line.strip()} has no help"


def test_quickstart_runs_and_reports_each_step() -> None:
    out = run_example("quickstart.py", "--capacity", "2000", "--batch-size", "64", "--batches", "3")
    assert "1. a batch of 8 transitions" in out
    assert "next: Step{done: bool[], obs: u8[3,84,84]}" in out
    assert "different envs    -> LinkedList(['pong', 'breakout'])" in out
    assert "sampled 32 rows -> Transition torch.Size([32])" in out
    assert "stack of 5 steps  -> torch.Size([8, 5])" in out
    assert "wrote 192 rows" in out
    assert "reward[0] = 42.0" in out


def test_replay_buffer_wraps_samples_reloads_and_describes(tmp_path: Path) -> None:
    folder = tmp_path / "buffer"
    out = run_example(
        "replay_buffer.py", "--capacity", "500", "--batch-size", "64", "--batches", "12",
        "--folder", str(folder),
    )  # fmt: skip
    assert "1. preallocated 500 transitions with Transition.allocate" in out
    assert "0.0 MiB on disk (sparse until written)" in out
    assert "2. wrote 12 batches of 64 = 768 rows" in out and "(1.54 laps of the buffer)" in out
    assert "cursor at row 268, 500 rows filled" in out
    assert "3. sampled 256 rows uniformly by index -> Transition [256]" in out
    assert "only the newest 500 of 768 writes remain" in out
    assert "reloaded with Transition.load_memmap" in out and "cursor 268" in out
    assert "5. grew the buffer from 500 to 750 rows with append_memmap_" in out
    assert "750 rows filled, the newest of 1,472 writes; a reload sees 750 rows" in out
    assert "6. python -m tclass info buffer/rows:" in out
    assert "Transition  batch [750]" in out and 'env     "pong"' in out
    # The schema travels with the data: info shows the specs and the dims they bind.
    assert "dims frames=4, h=84, w=84" in out and "Spec('frames h w', torch.uint8)" in out
    # The kept folder: the fields of a tensorclass live in _tensordict/, a TensorDict
    # (the class itself, defined in the example's __main__, is not in this process).
    fields = TensorDict.load_memmap(folder / "rows" / "_tensordict")
    assert fields.batch_size == (750,) and int(fields["step"].max()) == 1471
    state = TensorDict.load_memmap(folder / "state")
    assert (int(state["cursor"]), int(state["size"])) == (222, 750)


def test_replay_buffer_refuses_a_batch_larger_than_the_buffer() -> None:
    result = subprocess.run(
        [
            sys.executable,
            str(EXAMPLES / "replay_buffer.py"),
            "--capacity",
            "10",
            "--batch-size",
            "11",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode != 0
    assert "a batch of 11 rows does not fit a buffer of 10" in result.stderr


def test_image_dataset_preallocates_fills_and_loads_with_workers() -> None:
    out = run_example(
        "image_dataset.py", "--size", "100000", "--chunks", "3", "--chunk-size", "1000",
        "--batch-size", "128", "--workers", "1",
    )  # fmt: skip
    assert "1. preallocated 100,000 images of 3x32x32" in out
    assert "the files span 0.29 GiB, 0.0 MiB of it on disk" in out
    assert "2. filled 3,000 images in 3 chunks of 1,000" in out and "8.8 MiB on disk" in out
    assert "3. read one shuffled epoch with DataLoader(num_workers=1)" in out
    assert "24 batches of up to 128, each one Image record from one __getitems__ call" in out
    assert "4. Image.load_memmap maps the 100,000 images again" in out
    assert "rows past 3,000 read as zeros until written" in out


def test_model_weights_saves_inspects_and_loads_parts() -> None:
    out = run_example("model_weights.py", "--hidden", "32")
    assert "1-2. from_module + memmap:" in out and "in 13 files" in out
    assert "encoder: " in out and "first layer float32[32, 512] on meta" in out
    assert "4. load_memmap + to_module(inplace=True) into a fresh model: same outputs" in out
    assert "5. load_memmap(weights/encoder) into another model's encoder" in out
    assert "6. with load_memmap(...).to_module(model)" in out


@pytest.mark.skipif(
    importlib.util.find_spec("ray") is None,
    reason="Ray is not installed: pip install 'tclass[ray]'",
)
def test_ray_replay_collects_into_shards_while_the_learner_samples(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The example starts its own local Ray cluster (2 CPUs): one per test, as the Ray
    tests keep one per module."""
    folder = tmp_path / "buffer"
    result = subprocess.run(
        [
            sys.executable, str(EXAMPLES / "ray_replay.py"), "--collectors", "2", "--steps",
            "1000", "--chunk", "100", "--batch-size", "64", "--min-batches", "5",
            "--folder", str(folder),
        ],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "1. Ray with 2 CPUs" in out and "(one shard per collector)" in out
    assert re.search(r"2\. 2 collectors wrote 2,000 transitions, 100 per append: [\d,]+ ", out)
    assert re.search(r"transitions/s in all \([\d,]+/s per collector\)", out)
    assert re.search(r"3\. the learner sampled \d+ batches of 64 across the shards: [\d,]+ ", out)
    assert "4. reopened: 2,000 rows in 2 shards, each collector's steps once and in order" in out
    assert "total: 2 shards, 2,000 rows" in out  # python -m tclass info
    # The kept buffer, described without its class (defined in the example's __main__).
    assert main(["info", "--json", str(folder)]) == 0
    described = json.loads(capsys.readouterr().out)
    assert described["class"] == "__main__:Transition"
    assert [shard["rows"] for shard in described["shards"]] == [1000, 1000]
    assert [["obs"], "tensor float32 [16]"] in described["layout"]
