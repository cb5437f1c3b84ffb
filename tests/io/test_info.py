"""``python -m tclass info [--json] PATH``: a saved folder described from its meta.json files.

Most cases call ``tclass.__main__.main`` in-process (fast); a few run the real command in
a subprocess, including on a folder whose tensorclass is not importable there.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest
import torch

import tclass
from tclass.__main__ import main
from tclass.errors import ClassResolutionError

from golden_classes import Inner, Step

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "golden"


def _step() -> Step:
    inner = Inner(z=torch.arange(2), batch_size=[2])
    return Step(obs=torch.zeros(2, 3), name="walker", inner=inner, batch_size=[2])


def _run(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    code = main(["info", *(str(arg) for arg in args)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _json(capsys: pytest.CaptureFixture[str], path: Path) -> dict[str, Any]:
    code, out, err = _run(capsys, "--json", str(path))
    assert code == 0, err
    data: dict[str, Any] = json.loads(out)
    return data


def _child(node: dict[str, Any], key: str) -> dict[str, Any]:
    matches = [child for child in node["children"] if child.get("key") == key]
    assert len(matches) == 1, [child.get("key") for child in node["children"]]
    found: dict[str, Any] = matches[0]
    return found


def _disk(path: Path) -> int:
    return os.lstat(path).st_blocks * 512


# --- the tree ----------------------------------------------------------------------------


def test_tensorclass_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _step().memmap(tmp_path / "x")
    code, out, err = _run(capsys, tmp_path / "x")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0] == f"{tmp_path / 'x'}  golden_classes.Step  batch [2]  (tensorclass)"
    assert lines[1].startswith("├── obs") and "float32  [2, 3]  24 B  (disk " in lines[1]
    assert lines[2].split() == ["├──", "name", '"walker"']
    assert lines[3] == "└── inner  golden_classes.Inner  batch [2]  (tensorclass)"
    assert lines[4].startswith("    └── z  int64  [2]  16 B  (disk ")
    assert lines[5].startswith("total: 2 leaves, 1 value, 40 B logical, ")
    assert len(lines) == 6


def test_tensorclass_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _step().memmap(tmp_path / "x")
    data = _json(capsys, tmp_path / "x")
    root = data["root"]
    assert data["path"] == str(tmp_path / "x")
    assert (root["kind"], root["class"], root["batch_size"]) == (
        "tensorclass",
        "golden_classes.Step",
        [2],
    )
    assert [child["key"] for child in root["children"]] == ["obs", "name", "inner"]
    obs = _child(root, "obs")
    assert obs == {
        "kind": "tensor",
        "path": "_tensordict/obs.memmap",
        "key": "obs",
        "dtype": "float32",
        "shape": [2, 3],
        "bytes": 24,
        "disk_bytes": _disk(tmp_path / "x" / "_tensordict" / "obs.memmap"),
        "file_bytes": 24,
    }
    assert _child(root, "name")["preview"] == '"walker"'
    inner = _child(root, "inner")
    assert (inner["kind"], inner["class"], inner["batch_size"]) == (
        "tensorclass",
        "golden_classes.Inner",
        [2],
    )
    z = _child(inner, "z")
    assert (z["dtype"], z["shape"], z["bytes"], z["path"]) == (
        "int64",
        [2],
        16,
        "_tensordict/inner/_tensordict/z.memmap",
    )
    disk = sum(_disk(path) for path in (tmp_path / "x").rglob("*.memmap"))
    assert data["totals"] == {"leaves": 2, "values": 1, "bytes": 40, "disk_bytes": disk}
    assert data["problems"] == []


def test_nested_tensordict_escaped_and_odd_keys(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    td = tclass.TensorDict(
        {"shape": torch.ones(2, 1), "a/b": torch.ones(2), "a\nb": torch.ones(2, dtype=torch.int8),
         "sub": {"b": torch.ones(2, 5, dtype=torch.bfloat16)}, "empty": torch.zeros(2, 0)},
        batch_size=[2],
    )  # fmt: skip
    td.memmap(tmp_path / "x")
    assert "%shape" in json.loads((tmp_path / "x" / "meta.json").read_text())  # stored escaped
    data = _json(capsys, tmp_path / "x")
    root = data["root"]
    assert [child["key"] for child in root["children"]] == ["shape", "a/b", "a\nb", "sub", "empty"]
    assert _child(root, "shape")["path"] == "%25shape.memmap"
    assert _child(root, "a/b")["path"] == "a%2Fb.memmap"
    assert _child(_child(root, "sub"), "b")["dtype"] == "bfloat16"
    empty = _child(root, "empty")
    assert (empty["bytes"], empty["disk_bytes"], empty["file_bytes"]) == (0, 0, None)
    code, out, _ = _run(capsys, tmp_path / "x")
    assert code == 0
    assert "├── shape " in out and "├── a/b " in out and "├── 'a\\nb' " in out  # one line each
    assert "│   └── b  bfloat16  [2, 5]  20 B" in out
    assert "└── empty   float32  [2, 0]  0 B  (no file)" in out  # keys aligned: 'a\nb' is 6 wide
    assert out.splitlines()[-1].startswith("total: 5 leaves, 38 B logical, ")


def test_long_values_are_shortened(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    td = tclass.TensorDict(
        {"label": tclass.NonTensorData("x" * 100, batch_size=[2]),
         "names": tclass.NonTensorStack.from_list(["alpha", "beta"]), "a": torch.ones(2)},
        batch_size=[2],
    )  # fmt: skip
    td.memmap(tmp_path / "x")
    root = _json(capsys, tmp_path / "x")["root"]
    label = _child(root, "label")["preview"]
    assert len(label) == 40 and label.startswith('"xxx') and label.endswith("…")
    names = _child(root, "names")
    assert (names["kind"], names["preview"], names["batch_size"]) == (
        "values",
        '["alpha", "beta"]',
        [2],
    )
    code, out, _ = _run(capsys, tmp_path / "x")
    assert code == 0
    assert f"├── label  {label}\n" in out
    assert '├── names  ["alpha", "beta"]  (NonTensorStack [2])' in out
    assert "total: 1 leaf, 2 values, 8 B logical" in out


def test_lazy_stack_lists_each_member(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    members = [
        tclass.TensorDict({"x": torch.ones(3)}),
        tclass.TensorDict({"x": torch.ones(4), "y": torch.ones(1, dtype=torch.int64)}),
    ]
    tclass.lazy_stack(members).memmap(tmp_path / "x")
    root = _json(capsys, tmp_path / "x")["root"]
    assert (root["kind"], root["members"], root["stack_dim"], root["batch_size"]) == (
        "lazy_stack",
        2,
        0,
        [2],
    )
    assert [(child["index"], child["path"], child["batch_size"]) for child in root["children"]] == [
        (0, "0", []),
        (1, "1", []),
    ]
    assert [leaf["key"] for leaf in root["children"][1]["children"]] == ["x", "y"]
    assert _child(root["children"][1], "y")["path"] == "1/y.memmap"
    code, out, _ = _run(capsys, tmp_path / "x")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].endswith("LazyStackedTensorDict  batch [2]  (lazy stack of 2 along dim 0)")
    assert lines[1] == "├── [0]  TensorDict  batch []"
    assert lines[2].startswith("│   └── x  float32  [3]  12 B")
    assert lines[3] == "└── [1]  TensorDict  batch []"
    assert lines[4].startswith("    ├── x  float32  [4]  16 B")
    assert lines[5].startswith("    └── y  int64    [1]   8 B")
    assert lines[6].startswith("total: 3 leaves, 36 B logical")


def test_lazy_stack_of_tensorclasses(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    stack = tclass.lazy_stack(
        [Inner(z=torch.ones(3), batch_size=[]), Inner(z=torch.ones(5), batch_size=[])]
    )
    stack.memmap(tmp_path / "x")
    root = _json(capsys, tmp_path / "x")["root"]
    assert (root["kind"], root["class"], root["members"], root["batch_size"]) == (
        "tensorclass",
        "golden_classes.Inner",
        2,
        [2],
    )
    assert [_child(member, "z")["shape"] for member in root["children"]] == [[3], [5]]
    code, out, _ = _run(capsys, tmp_path / "x")
    assert code == 0
    assert out.splitlines()[0].endswith(
        "golden_classes.Inner  batch [2]  (tensorclass, lazy stack of 2 along dim 0)"
    )


def test_memmap_like_takes_almost_no_disk(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    template = tclass.TensorDict({"image": torch.zeros(3, 64, 64, dtype=torch.uint8)}).expand(
        100000
    )
    template.memmap_like(tmp_path / "buffer")
    data = _json(capsys, tmp_path / "buffer")
    image = _child(data["root"], "image")
    logical = 100000 * 3 * 64 * 64
    assert (image["shape"], image["bytes"], image["file_bytes"]) == (
        [100000, 3, 64, 64],
        logical,
        logical,
    )
    assert data["totals"]["bytes"] == logical
    assert data["totals"]["disk_bytes"] == image["disk_bytes"] < 1 << 20  # sparse: nothing written
    code, out, _ = _run(capsys, tmp_path / "buffer")
    assert code == 0
    assert "└── image  uint8  [100000, 3, 64, 64]  1.1 GiB  (disk " in out
    assert "total: 1 leaf, 1.1 GiB logical, " in out


def test_hard_linked_files_count_once_on_disk(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tclass.TensorDict({"a": torch.ones(4), "b": torch.ones(4)}, [4]).memmap(tmp_path / "x")
    os.unlink(tmp_path / "x" / "b.memmap")
    os.link(tmp_path / "x" / "a.memmap", tmp_path / "x" / "b.memmap")
    data = _json(capsys, tmp_path / "x")
    one = _disk(tmp_path / "x" / "a.memmap")
    assert [child["disk_bytes"] for child in data["root"]["children"]] == [one, one]
    assert data["totals"]["disk_bytes"] == one and data["totals"]["bytes"] == 32


def test_a_folder_being_appended_to_is_described_whole(tmp_path: Path) -> None:
    """Each append swaps the folder for a new tree and removes the old one; a description
    under way when that happens walks the new tree, as a load does."""
    from tclass._io.memmap._info import describe

    prefix = tmp_path / "grows"
    tclass.TensorDict({"x": torch.zeros(2, 3), "n": {"y": torch.zeros(2)}}, [2]).memmap(prefix)
    stop, failures, counts = threading.Event(), list[BaseException](), []

    def read() -> None:
        try:
            while not stop.is_set():
                info = describe(prefix)
                assert info.problems == [], info.problems
                counts.append(info.root.batch_size[0] if info.root.batch_size else -1)
        except BaseException as error:
            failures.append(error)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    rows = tclass.TensorDict({"x": torch.ones(2, 3), "n": {"y": torch.ones(2)}}, [2])
    for _ in range(60):
        tclass.append_memmap(prefix, rows)
    stop.set()
    reader.join(30)
    if failures:
        raise failures[0]
    assert len(set(counts)) >= 2 and all(count % 2 == 0 for count in counts)


def test_golden_peer_folders(capsys: pytest.CaptureFixture[str]) -> None:
    for folder in sorted(GOLDEN.iterdir()):
        code, out, err = _run(capsys, folder)
        assert code == 0 and err == "", (folder, err)
        assert out.startswith(str(folder)) and "\ntotal: " in out
    data = _json(capsys, GOLDEN / "v1_tensorclass")
    assert data["root"]["class"] == "golden_classes.Step"
    assert _json(capsys, GOLDEN / "v1_lazy_stack")["root"]["batch_size"] == [
        2
    ]  # members count recorded nowhere


# --- classes that are not defined here ---------------------------------------------------


def test_class_not_defined_in_process(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _step().memmap(tmp_path / "x")
    (tmp_path / "x" / "meta.json").write_text(json.dumps({"_type": "<class 'nowhere.Ghost'>"}))
    with pytest.raises(ClassResolutionError):
        tclass.load_memmap(tmp_path / "x")
    code, out, err = _run(capsys, tmp_path / "x")
    assert code == 0, err
    assert out.splitlines()[0] == f"{tmp_path / 'x'}  nowhere.Ghost  batch [2]  (tensorclass)"
    assert "nowhere" not in sys.modules


_SAVE_SCRIPT = """
import sys, torch, tclass
from mypkg import Step, Inner
inner = Inner(z=torch.arange(2), batch_size=[2])
Step(obs=torch.zeros(2, 3), name="walker", inner=inner, batch_size=[2]).memmap(sys.argv[1])
"""
_MYPKG = """
import torch, tclass

@tclass.tensorclass
class Inner:
    z: torch.Tensor

@tclass.tensorclass
class Step:
    obs: torch.Tensor
    name: str
    inner: Inner
"""


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    return subprocess.run(
        [sys.executable, "-m", "tclass", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_command_line_on_a_class_it_cannot_import(tmp_path: Path) -> None:
    package = tmp_path / "src" / "mypkg"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(textwrap.dedent(_MYPKG))
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "src")}
    saved = subprocess.run(
        [sys.executable, "-c", _SAVE_SCRIPT, str(tmp_path / "x")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert saved.returncode == 0, saved.stderr
    text = _cli("info", str(tmp_path / "x"), cwd=tmp_path)  # mypkg is not importable here
    assert text.returncode == 0, text.stderr
    assert text.stdout.splitlines()[0] == f"{tmp_path / 'x'}  mypkg.Step  batch [2]  (tensorclass)"
    assert "└── inner  mypkg.Inner  batch [2]  (tensorclass)" in text.stdout
    as_json = _cli("info", "--json", str(tmp_path / "x"), cwd=tmp_path)
    assert as_json.returncode == 0, as_json.stderr
    data = json.loads(as_json.stdout)
    assert data["root"]["class"] == "mypkg.Step"
    assert data["totals"]["leaves"] == 2 and data["totals"]["bytes"] == 40


def test_command_line_missing_folder(tmp_path: Path) -> None:
    result = _cli("info", str(tmp_path / "nothing"), cwd=tmp_path)
    assert result.returncode == 1 and result.stdout == ""
    assert result.stderr.startswith("error: ") and str(tmp_path / "nothing") in result.stderr
    assert result.stderr.count("\n") == 1


# --- errors ------------------------------------------------------------------------------


@pytest.mark.parametrize("argv", [[], ["info"], ["frob", "x"], ["info", "--yaml", "x"]])
def test_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    assert "usage:" in capsys.readouterr().err


def test_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info", "--help"]) == 0
    assert "--json" in capsys.readouterr().out


def test_version() -> None:
    result = _cli("--version", cwd=Path(tclass.__file__).parents[1])  # the tclass under test
    assert result.returncode == 0 and result.stderr == "", result.stderr
    assert result.stdout == f"tclass {tclass.__version__}\n"


def test_version_without_package_metadata(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Run from a checkout that is not installed: the package's own ``__version__``."""

    def missing(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", missing)
    monkeypatch.setattr(tclass, "__version__", "9.9.9")
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == "tclass 9.9.9\n"


def _error_line(
    capsys: pytest.CaptureFixture[str], path: Path, *flags: str, tree: bool = False
) -> str:
    """The error line of a refused folder; ``tree``: the part that could be read is printed."""
    code, out, err = _run(capsys, *flags, path)
    assert code == 1
    assert out.endswith("(load_memmap would refuse this folder)\n") if tree else out == "", out
    assert err.startswith("error: ") and err.count("\n") == 1, err
    return err


def test_missing_folder_not_a_folder_not_saved(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert str(tmp_path / "nothing") in _error_line(capsys, tmp_path / "nothing")
    (tmp_path / "file").write_text("hi")
    assert "is a file" in _error_line(capsys, tmp_path / "file")
    (tmp_path / "empty").mkdir()
    assert "holds no meta.json" in _error_line(capsys, tmp_path / "empty", "--json")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": ', "is not valid JSON"),
        ("[1, 2]", "holds a JSON list"),
        ('{"shape": [2]}', "names no class"),
        ('{"_type": "<class \'tensordict._td.TensorDict\'>", "shape": [-1]}', "non-negative ints"),
        (
            '{"_type": "<class \'tensordict._td.TensorDict\'>", "shape": [], "_format_version": 9}',
            "Upgrade tclass",
        ),
    ],
)
def test_malformed_meta_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, expected: str
) -> None:
    tclass.TensorDict({"sub": {"a": torch.ones(2)}}, [2]).memmap(tmp_path / "x")
    (tmp_path / "x" / "sub" / "meta.json").write_text(text)
    err = _error_line(capsys, tmp_path / "x", tree=True)
    assert expected in err and str(tmp_path / "x" / "sub" / "meta.json") in err


def test_symlinks_are_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tclass.TensorDict({"a": torch.ones(2), "sub": {"b": torch.ones(2)}}, [2]).memmap(tmp_path / "x")
    os.rename(tmp_path / "x" / "a.memmap", tmp_path / "outside.memmap")
    os.symlink(tmp_path / "outside.memmap", tmp_path / "x" / "a.memmap")
    assert "a.memmap' is a symlink" in _error_line(capsys, tmp_path / "x", tree=True)
    os.unlink(tmp_path / "x" / "a.memmap")
    os.rename(tmp_path / "outside.memmap", tmp_path / "x" / "a.memmap")
    os.rename(tmp_path / "x" / "sub", tmp_path / "elsewhere")
    os.symlink(tmp_path / "elsewhere", tmp_path / "x" / "sub")
    assert "sub' is a symlink" in _error_line(capsys, tmp_path / "x", tree=True)


def test_damaged_leaves_still_print_the_tree(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tclass.TensorDict({"a": torch.ones(2), "b": torch.ones(2), "c": torch.ones(2)}, [2]).memmap(
        tmp_path / "x"
    )
    os.truncate(tmp_path / "x" / "a.memmap", 3)
    os.unlink(tmp_path / "x" / "b.memmap")
    code, out, err = _run(capsys, tmp_path / "x")
    assert code == 1
    assert "├── a  float32  [2]  8 B  (disk " in out and "!! file holds 3 B" in out
    assert "├── b  float32  [2]  8 B  (disk -)  !! file missing" in out
    assert "problems: 2 " in out
    assert err.startswith("error: ") and "a.memmap' holds 3 bytes" in err and "(and 1 more)" in err
    assert err.count("\n") == 1
    main(["info", "--json", str(tmp_path / "x")])
    data = json.loads(capsys.readouterr().out)
    assert len(data["problems"]) == 2
    assert _child(data["root"], "b")["problem"] == "file missing"
    assert "problem" not in _child(data["root"], "c")


def test_unreadable_dtype_and_view_node_are_problems(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tclass.TensorDict({"a": torch.ones(2), "sub": {"b": torch.ones(2)}}, [2]).memmap(tmp_path / "x")
    meta_path = tmp_path / "x" / "meta.json"
    meta = json.loads(meta_path.read_text())
    meta["a"]["dtype"] = "torch.qint8"
    meta_path.write_text(json.dumps(meta))
    view = {
        "_type": "<class 'tensordict._td._SubTensorDict'>",
        "_format_version": 1,
        "index": ["tuple", [0]],
    }
    (tmp_path / "x" / "sub" / "meta.json").write_text(json.dumps(view))
    code, out, err = _run(capsys, tmp_path / "x")
    assert code == 1
    assert "├── a    qint8" in out and "!! dtype not readable" in out
    assert "└── sub  tensordict._td._SubTensorDict  !! a view node tclass does not read" in out
    assert "qint8" in err


# --- info and load_memmap agree ----------------------------------------------------------


def _tree(root: Path) -> None:
    """A folder with one of each node kind: a record (nested record, value), a lazy stack,
    a NonTensorStack, a NonTensorData and a leaf."""
    lazy = tclass.lazy_stack(
        [tclass.TensorDict({"a": torch.ones(3)}), tclass.TensorDict({"a": torch.ones(4)})]
    )
    td = tclass.TensorDict(
        {
            "x": torch.arange(2),
            "step": _step(),
            "names": tclass.NonTensorStack.from_list(["u", "v"]),
        },
        [2],
    )
    td["label"] = tclass.NonTensorData("pong", batch_size=[2])
    td["lazy"] = lazy
    td.memmap(root)


def _meta(root: Path, rel: str, **changes: Any) -> None:
    path = root / rel / "meta.json"
    meta = json.loads(path.read_text())
    meta.update(changes)
    for key in [key for key, value in changes.items() if value is None]:
        del meta[key]
    path.write_text(json.dumps(meta))


def _pickled_label(root: Path) -> None:
    _meta(root, "label", data=None)
    (root / "label" / "other.pickle").write_bytes(__import__("pickle").dumps({"data": "pong"}))


def _user_tclass_key(root: Path) -> None:
    _meta(
        root,
        ".",
        _tclass={"device": "cpu", "shape": [2], "dtype": "torch.int64", "is_nested": False},
    )
    torch.tensor([1, 2]).numpy().tofile(root / "_tclass.memmap")


def _symlinked_leaf(root: Path) -> None:
    os.rename(root / "x.memmap", root.parent / "outside.memmap")
    os.symlink(root.parent / "outside.memmap", root / "x.memmap")


DAMAGES = {
    "fine": lambda root: None,
    "key named _tclass": _user_tclass_key,
    "short leaf": lambda root: os.truncate(root / "x.memmap", 3),
    "long leaf": lambda root: (root / "x.memmap").write_bytes(
        (root / "x.memmap").read_bytes() + b"\0" * 8
    ),
    "missing leaf": lambda root: (root / "step" / "_tensordict" / "obs.memmap").unlink(),
    "symlinked leaf": _symlinked_leaf,
    "unknown dtype": lambda root: _meta(
        root, ".", x={"shape": [2], "dtype": "torch.qint8", "device": "cpu"}
    ),
    "shape off the batch": lambda root: _meta(
        root, ".", x={"shape": [3], "dtype": "torch.int64", "device": "cpu"}
    ),
    "entry of no kind": lambda root: _meta(root, ".", odd={"foo": 1}),
    "device not a string": lambda root: _meta(root, ".", device=5),
    "root meta.json missing": lambda root: (root / "meta.json").unlink(),
    "sub meta.json not JSON": lambda root: (root / "lazy" / "0" / "meta.json").write_text("{"),
    "record fields of a future version": lambda root: _meta(
        root, "step/_tensordict", _format_version=9
    ),
    "record fields named a class": lambda root: _meta(
        root, "step/_tensordict", _type="<class 'ghost.Ghost'>", _class=None
    ),
    "record fields missing": lambda root: shutil.rmtree(root / "step" / "_tensordict"),
    "nested batch off": lambda root: _meta(root, "step/_tensordict/inner/_tensordict", shape=[3]),
    "member of a future version": lambda root: _meta(root, "lazy/1", _format_version=9),
    "member missing": lambda root: shutil.rmtree(root / "lazy" / "1"),
    "member too many": lambda root: shutil.copytree(root / "lazy" / "1", root / "lazy" / "2"),
    "member named ²": lambda root: shutil.copytree(root / "lazy" / "1", root / "lazy" / "²"),
    "value without data": lambda root: _meta(root, "label", data=None),
    "pickled value": _pickled_label,
    "values not a list": lambda root: _meta(root, "names", data="abc"),
    "view node": lambda root: _meta(
        root, "names", _type="<class 'tensordict._td._SubTensorDict'>", _class=None
    ),
}


@pytest.mark.parametrize("damage", DAMAGES.values(), ids=DAMAGES.keys())
def test_info_refuses_what_load_refuses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: Any
) -> None:
    root = tmp_path / "x"
    _tree(root)
    damage(root)
    try:
        tclass.load_memmap(root)
        loaded: str | None = None
    except tclass.TclassError as error:
        loaded = str(error)
    code, _, err = _run(capsys, root)
    if loaded is None:
        assert (code, err) == (0, "")
    else:
        assert code == 1 and err.startswith(f"error: {loaded}"), (loaded, err)


def test_info_maps_no_file_and_reads_no_pickle(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _tree(tmp_path / "x")
    _pickled_label(tmp_path / "x")

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("info read data")

    monkeypatch.setattr(torch, "from_file", refuse)
    monkeypatch.setattr(__import__("pickle"), "loads", refuse)
    code, out, err = _run(capsys, "--allow-pickle", tmp_path / "x")
    assert (code, err) == (0, "")
    assert "├── label  <pickled, " in out
    code, out, err = _run(capsys, tmp_path / "x")  # as load_memmap without allow_pickle
    assert (
        code == 1
        and "holds a pickled value" in err
        and "!! pickled: loads with allow_pickle=True" in out
    )


# --- claims checked before they are walked -----------------------------------------------


@pytest.mark.parametrize("claimed", [1000, 10**9])
def test_member_count_claim_is_checked_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], claimed: int
) -> None:
    # A meta.json recording more members than the folder holds is one problem, found
    # before any member is read: info does not walk the members it claims (it took 35
    # hours for 10**9), and says what load_memmap says.
    members = [tclass.TensorDict(a=torch.zeros(2), batch_size=[2]) for _ in range(3)]
    tclass.lazy_stack(members).memmap(tmp_path / "x")
    _meta(tmp_path / "x", ".", _tclass={"members": claimed})
    with pytest.raises(tclass.TclassError) as loaded:
        tclass.load_memmap(tmp_path / "x")
    assert f"records {claimed} members, the folder holds 3" in str(loaded.value)
    assert isinstance(loaded.value, FileNotFoundError)
    code, out, err = _run(capsys, "--json", tmp_path / "x")
    assert code == 1 and err.startswith(f"error: {loaded.value}; load_memmap would refuse")
    described = json.loads(out)
    assert described["problems"] == [str(loaded.value)]
    assert (described["root"]["kind"], described["root"]["children"]) == ("lazy_stack", [])
