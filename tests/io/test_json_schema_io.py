"""The JSON Schema document travels with the data (issue 31, item 2; in its own file since
issue 29).

Saving a record writes ``Cls.json_schema()`` into ``_tensordict/schema.json``, which the
schema in the ``_tclass`` marker of the ``meta.json`` beside it names
(``"json_schema_file"``); no load reads it. Folders of earlier versions hold the
document inline in that marker (``"json_schema"``), and still load and show it; the
peer ignores both. A reader without the classes (``info``, ``python -m tclass schema
FOLDER``, or a program with only ``json``, ``numpy`` and a JSON Schema validator) finds
there everything to check the folder: dtypes, dims, constraints, the JSON types of the
Python values.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import jsonschema
import numpy as np
import pytest
import torch

import tclass
from tclass.__main__ import main
from tclass._io.memmap._folder import DirFolder

from schema_records import Part, Scored, scored  # noqa: E402


def marker(folder: Path) -> dict[str, Any]:
    meta = json.loads((folder / "_tensordict" / "meta.json").read_text())
    schema: dict[str, Any] = meta["_tclass"]["schema"]
    return schema


def document(folder: Path) -> dict[str, Any]:
    """The JSON Schema document a record's folder holds, found as a reader finds it."""
    name = marker(folder).get("json_schema_file")
    if name is None:  # as earlier versions wrote it
        return marker(folder)["json_schema"]  # type: ignore[no-any-return]
    found: dict[str, Any] = json.loads((folder / "_tensordict" / name).read_text())
    return found


def inline_document(folder: Path) -> None:
    """Rewrites a record's folder as versions before issue 29 wrote it: the document
    inline in the marker, no schema.json."""
    path, file = folder / "_tensordict" / "meta.json", folder / "_tensordict" / "schema.json"
    meta = json.loads(path.read_text())
    del meta["_tclass"]["schema"]["json_schema_file"]
    meta["_tclass"]["schema"]["json_schema"] = json.loads(file.read_text())
    path.write_text(json.dumps(meta))
    file.unlink()


def test_the_saved_schema_is_the_class_document(tmp_path: Path) -> None:
    scored().memmap(tmp_path / "s")
    saved = marker(tmp_path / "s")
    assert saved["json_schema_file"] == "schema.json" and "json_schema" not in saved
    assert document(tmp_path / "s") == Scored.json_schema()
    assert saved["class"] == "schema_records:Scored" and "prob" in saved["fields"]  # as before
    assert document(tmp_path / "s" / "_tensordict" / "part") == Part.json_schema()
    meta = (tmp_path / "s" / "_tensordict" / "meta.json").read_bytes()
    assert b"$schema" not in meta and b"x-tclass" not in meta  # none of the document


def test_a_load_never_reads_the_document(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    scored().memmap(tmp_path / "s")
    read: list[str] = []
    original = DirFolder.read_small

    def spy(self: DirFolder, name: str, what: str) -> bytes:
        read.append(name)
        return original(self, name, what)

    monkeypatch.setattr(DirFolder, "read_small", spy)
    assert (Scored.load_memmap(tmp_path / "s") == scored()).all()
    assert read and "schema.json" not in read
    # A missing document: the folder still loads, and info says what is wrong with it.
    (tmp_path / "s" / "_tensordict" / "schema.json").unlink()
    assert (Scored.load_memmap(tmp_path / "s") == scored()).all()
    assert main(["info", "--json", str(tmp_path / "s")]) == 0
    shown = json.loads(capsys.readouterr().out)["root"]["schema"]
    assert "json_schema" not in shown and "schema.json' is missing" in shown["json_schema_problem"]
    assert main(["schema", str(tmp_path / "s")]) == 1
    assert "JSON Schema document does not read" in capsys.readouterr().err


def test_a_folder_with_the_document_inline_loads_and_shows_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scored().memmap(tmp_path / "s")
    inline_document(tmp_path / "s")
    assert (Scored.load_memmap(tmp_path / "s") == scored()).all()
    assert main(["schema", str(tmp_path / "s")]) == 0
    assert json.loads(capsys.readouterr().out) == Scored.json_schema()
    scored().memmap(tmp_path / "s")  # saved again: the document moves to its file
    assert document(tmp_path / "s") == Scored.json_schema()
    assert "json_schema" not in marker(tmp_path / "s")


def test_a_folder_without_the_document_loads_as_before(tmp_path: Path) -> None:
    scored().memmap(tmp_path / "s")
    inline_document(tmp_path / "s")
    path = tmp_path / "s" / "_tensordict" / "meta.json"
    meta = json.loads(path.read_text())
    del meta["_tclass"]["schema"]["json_schema"]  # as an older tclass wrote it
    path.write_text(json.dumps(meta))
    assert (Scored.load_memmap(tmp_path / "s") == scored()).all()
    assert main(["info", str(tmp_path / "s")]) == 0
    assert main(["schema", str(tmp_path / "s")]) == 1


@pytest.mark.parametrize(
    ("entry", "value", "words"),
    [
        ("json_schema", "not an object", "json_schema of its _tclass entry"),
        ("json_schema_file", "../../elsewhere.json", "always in 'schema.json'"),
        ("json_schema_file", 3, "json_schema_file of its _tclass entry"),
    ],
)
def test_a_malformed_document_entry_is_a_damaged_folder(
    tmp_path: Path, entry: str, value: object, words: str
) -> None:
    scored().memmap(tmp_path / "s")
    path = tmp_path / "s" / "_tensordict" / "meta.json"
    meta = json.loads(path.read_text())
    meta["_tclass"]["schema"][entry] = value
    path.write_text(json.dumps(meta))
    with pytest.raises(tclass.errors.MetadataError, match=words):
        Scored.load_memmap(tmp_path / "s")
    assert main(["info", str(tmp_path / "s")]) == 1  # info refuses what a load refuses


@pytest.mark.parametrize("content", [b"[1, 2]", b"{not json", b"[" * 300])
def test_a_damaged_document_file_is_shown_not_loaded(
    tmp_path: Path, content: bytes, capsys: pytest.CaptureFixture[str]
) -> None:
    scored().memmap(tmp_path / "s")
    (tmp_path / "s" / "_tensordict" / "schema.json").write_bytes(content)
    assert (Scored.load_memmap(tmp_path / "s") == scored()).all()
    assert main(["info", "--json", str(tmp_path / "s")]) == 0
    problem = json.loads(capsys.readouterr().out)["root"]["schema"]["json_schema_problem"]
    assert "schema.json" in problem


def test_appending_keeps_the_document(tmp_path: Path) -> None:
    scored().memmap(tmp_path / "s")
    tclass.append_memmap(tmp_path / "s", scored(2))
    assert document(tmp_path / "s") == Scored.json_schema()
    assert Scored.load_memmap(tmp_path / "s").batch_size == (6,)


def test_the_peer_loads_a_folder_with_the_document(tmp_path: Path) -> None:
    peer = pytest.importorskip("tensordict")
    Part(level=torch.tensor([1, 3]), batch_size=[2]).memmap(tmp_path / "p")
    assert document(tmp_path / "p") == Part.json_schema()
    # The fields' node (the record's class is tclass's, which the peer cannot import).
    loaded = peer.TensorDict.load_memmap(tmp_path / "p" / "_tensordict")
    assert loaded["level"].tolist() == [1, 3] and "_tclass" not in loaded.keys()


def test_info_shows_the_document(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scored().memmap(tmp_path / "s")
    assert main(["info", "--json", str(tmp_path / "s")]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["root"]["schema"]["json_schema"] == Scored.json_schema()


def test_the_schema_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "schema_records:Scored"]) == 0
    assert json.loads(capsys.readouterr().out) == Scored.json_schema()
    scored().memmap(tmp_path / "s")
    assert main(["schema", "--indent", "0", str(tmp_path / "s")]) == 0
    assert json.loads(capsys.readouterr().out) == Scored.json_schema()
    tclass.save(scored(), tmp_path / "s.tdz")
    assert main(["schema", str(tmp_path / "s.tdz")]) == 0
    assert json.loads(capsys.readouterr().out) == Scored.json_schema()


@pytest.mark.parametrize(
    ("target", "words"),
    [
        (f"{__name__}:Nowhere", "is nothing, not a record class"),
        ("schema_records:scored", "is a function, not a record class"),
        ("no_such_module_here:X", "cannot import 'no_such_module_here'"),
    ],
)
def test_the_schema_command_says_what_it_cannot_find(
    target: str, words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["schema", target]) == 1
    assert words in capsys.readouterr().err


def test_the_schema_command_on_a_folder_of_no_record(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tclass.TensorDict(a=torch.zeros(2), batch_size=[2]).memmap(tmp_path / "td")
    assert main(["schema", str(tmp_path / "td")]) == 1
    assert "holds no record" in capsys.readouterr().err
    assert main(["schema"]) == 2


# --- a reader without tclass's classes ---------------------------------------------------------


def _read(folder: Path, schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """A record's JSON form, read from its folder with json and numpy alone, each tensor's
    dtype and dims checked against the document's x-tclass keywords."""
    meta = json.loads((folder / "meta.json").read_text())
    out: dict[str, Any] = {}
    for key, entry in meta.items():
        if not isinstance(entry, dict) or key == "_tclass":
            continue
        field = schema["properties"][key]
        if "dtype" in entry:
            dtype = entry["dtype"].removeprefix("torch.")
            assert field["x-tclass-dtype"] is None or dtype in field["x-tclass-dtype"]
            features = entry["shape"][len(meta["shape"]) :]
            for size, dim in zip(features, field.get("x-tclass-dims", [])):  # none: no spec
                assert not dim.isdigit() or int(dim) == size
            data = np.memmap(folder / f"{key}.memmap", dtype=dtype, mode="r")
            out[key] = data.reshape(entry["shape"]).tolist()
        elif entry["type"] == "NonTensorData":
            out[key] = json.loads((folder / key / "meta.json").read_text())["data"]
        else:  # a nested record: its own folder, its class in $defs
            nested = defs[field["$ref"].removeprefix("#/$defs/")]
            out[key] = _read(folder / key / "_tensordict", nested, defs)
    return out


def _validate_without_classes(folder: Path) -> None:
    schema = document(folder)
    instance = _read(folder / "_tensordict", schema, schema.get("$defs", {}))
    jsonschema.Draft202012Validator(schema).validate(instance)


def test_a_folder_validates_without_the_classes(tmp_path: Path) -> None:
    scored().memmap(tmp_path / "s")
    _validate_without_classes(tmp_path / "s")
    file = tmp_path / "s" / "_tensordict" / "part" / "_tensordict" / "level.memmap"
    data = np.memmap(file, dtype=np.int64, mode="r+")
    data[1] = 5  # breaks isin=(1, 2, 3)
    data.flush()
    del data
    with pytest.raises(jsonschema.ValidationError, match=r"\[1, 5, 1, 1\] is not valid"):
        _validate_without_classes(tmp_path / "s")
    assert os.path.exists(file)
