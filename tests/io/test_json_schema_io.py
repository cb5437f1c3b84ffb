"""The JSON Schema document travels with the data (issue 31, item 2).

Saving a record writes ``Cls.json_schema()`` into the ``_tclass`` marker of its
``_tensordict/meta.json`` (next to the schema older tclass versions read, which they
keep reading; the peer ignores the marker). A reader without the classes (``info``,
``python -m tclass schema FOLDER``, or a program with only ``json``, ``numpy`` and a
JSON Schema validator) finds there everything to check the folder: dtypes, dims,
constraints, the JSON types of the Python values.
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

from schema_records import Part, Scored, scored  # noqa: E402


def marker(folder: Path) -> dict[str, Any]:
    meta = json.loads((folder / "_tensordict" / "meta.json").read_text())
    schema: dict[str, Any] = meta["_tclass"]["schema"]
    return schema


def test_the_saved_schema_is_the_class_document(tmp_path: Path) -> None:
    scored().memmap(tmp_path / "s")
    saved = marker(tmp_path / "s")
    assert saved["json_schema"] == Scored.json_schema()
    assert saved["class"] == "schema_records:Scored" and "prob" in saved["fields"]  # as before
    assert marker(tmp_path / "s" / "_tensordict" / "part")["json_schema"] == Part.json_schema()


def test_a_folder_without_the_document_loads_as_before(tmp_path: Path) -> None:
    scored().memmap(tmp_path / "s")
    path = tmp_path / "s" / "_tensordict" / "meta.json"
    meta = json.loads(path.read_text())
    del meta["_tclass"]["schema"]["json_schema"]  # as an older tclass wrote it
    path.write_text(json.dumps(meta))
    assert (Scored.load_memmap(tmp_path / "s") == scored()).all()
    assert main(["info", str(tmp_path / "s")]) == 0
    assert main(["schema", str(tmp_path / "s")]) == 1


def test_a_malformed_document_is_a_damaged_folder(tmp_path: Path) -> None:
    scored().memmap(tmp_path / "s")
    path = tmp_path / "s" / "_tensordict" / "meta.json"
    meta = json.loads(path.read_text())
    meta["_tclass"]["schema"]["json_schema"] = "not an object"
    path.write_text(json.dumps(meta))
    with pytest.raises(tclass.errors.MetadataError, match="json_schema of its _tclass entry"):
        Scored.load_memmap(tmp_path / "s")


def test_the_peer_loads_a_folder_with_the_document(tmp_path: Path) -> None:
    peer = pytest.importorskip("tensordict")
    Part(level=torch.tensor([1, 3]), batch_size=[2]).memmap(tmp_path / "p")
    assert "json_schema" in marker(tmp_path / "p")
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
    document = marker(folder)["json_schema"]
    instance = _read(folder / "_tensordict", document, document.get("$defs", {}))
    jsonschema.Draft202012Validator(document).validate(instance)


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
