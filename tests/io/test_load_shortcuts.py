"""The loader's shortcuts (issue 29) give what the long way gives, and refuse what it refuses.

- a node's meta.json is decoded inline in the usual case (a UTF-8 JSON object); trailing
  data, another JSON value, another encoding, a bad format version take the long way,
  with its verdicts and messages;
- the ``_type`` strings met are remembered: two classes saved by ``_type`` alone each
  load as themselves;
- a loaded record keeps the TensorDict it was loaded into as its storage when each entry
  is what its field keeps (a tensor, a nested record of an accepted class, a Python
  value): writes reach the folder as before; anything its fields convert (a TensorDict
  in a record field, a tensor cast by the annotation), a default to fill, or dim names
  go the constructor's way, and come out as they did.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

import tclass
from tclass import TensorDict
from tclass.errors import MetadataError


@tclass.tensorclass
class Inner:
    a: torch.Tensor
    b: torch.Tensor


@tclass.tensorclass
class Outer:
    x: torch.Tensor
    inner: Inner
    name: str


@tclass.tensorclass
class Defaults:
    x: torch.Tensor
    tag: str = "new"


@tclass.tensorclass
class Casting:
    x: torch.Tensor
    n: int


def _outer() -> Outer:
    inner = Inner(a=torch.arange(6.0).reshape(3, 2), b=torch.zeros(3), batch_size=[3])
    return Outer(x=torch.arange(3), inner=inner, name="pong", batch_size=[3])


# --- meta.json decoded inline ----------------------------------------------------------------


def _rewrite(path: Path, text: str | bytes) -> None:
    (path / "meta.json").unlink()
    if isinstance(text, bytes):
        (path / "meta.json").write_bytes(text)
    else:
        (path / "meta.json").write_text(text)


def test_meta_json_with_trailing_data_is_refused(tmp_path: Path) -> None:
    _outer().memmap(tmp_path / "r")
    content = tmp_path / "r" / "_tensordict"
    text = (content / "meta.json").read_text()
    _rewrite(content, text + " \n\t")  # JSON's own white space after the object: fine
    assert Outer.load_memmap(tmp_path / "r").name == "pong"
    _rewrite(content, text + ' {"x": 1}')
    with pytest.raises(MetadataError, match="is not valid JSON.*Extra data") as info:
        Outer.load_memmap(tmp_path / "r")
    assert str(content / "meta.json") in str(info.value)


def test_meta_json_of_another_json_value_is_refused(tmp_path: Path) -> None:
    _outer().memmap(tmp_path / "r")
    _rewrite(tmp_path / "r", "[1, 2]")
    with pytest.raises(MetadataError, match="holds a JSON list, not an object") as info:
        Outer.load_memmap(tmp_path / "r")
    assert str(tmp_path / "r" / "meta.json") in str(info.value)
    _rewrite(tmp_path / "r", b'{"_type": "\xff"}')  # not UTF-8
    with pytest.raises(MetadataError, match="is not valid JSON"):
        Outer.load_memmap(tmp_path / "r")


def test_meta_json_in_utf16_loads_as_json_reads_it(tmp_path: Path) -> None:
    # json.loads detects UTF-16 (and a UTF-8 BOM): the long way reads it as before.
    _outer().memmap(tmp_path / "r")
    content = tmp_path / "r" / "_tensordict"
    text = (content / "meta.json").read_text()
    _rewrite(content, text.encode("utf-16"))
    assert Outer.load_memmap(tmp_path / "r").inner.a.sum().item() == 15.0
    _rewrite(content, b"\xef\xbb\xbf" + text.encode())
    assert Outer.load_memmap(tmp_path / "r").name == "pong"


@pytest.mark.parametrize(
    ("version", "message"),
    [
        (9, "format version 9; this tclass reads up to 1"),
        (True, "_format_version must be a non-negative int, got True"),
        (-1, "_format_version must be a non-negative int"),
        (1.0, "_format_version must be a non-negative int"),
    ],
)
def test_format_version_checked_on_every_node(
    tmp_path: Path, version: object, message: str
) -> None:
    _outer().memmap(tmp_path / "r")
    meta_path = tmp_path / "r" / "_tensordict" / "inner" / "_tensordict" / "meta.json"
    meta = json.loads(meta_path.read_text())
    meta["_format_version"] = version
    _rewrite(meta_path.parent, json.dumps(meta))
    with pytest.raises(MetadataError, match=message) as info:
        Outer.load_memmap(tmp_path / "r")
    assert str(meta_path) in str(info.value)


def test_two_classes_saved_by_type_alone_load_as_themselves(tmp_path: Path) -> None:
    # The peer's records name their class in "_type" only; each string is matched once
    # and remembered: a second class's string is its own.
    for cls, name in ((Inner, "i"), (Defaults, "d")):
        record = (
            Inner(a=torch.ones(2, 1), b=torch.ones(2), batch_size=[2])
            if cls is Inner
            else Defaults(x=torch.ones(2), tag="t", batch_size=[2])
        )
        record.memmap(tmp_path / name)
        meta = json.loads((tmp_path / name / "meta.json").read_text())
        meta.pop("_class", None)
        _rewrite(tmp_path / name, json.dumps(meta))
    for _ in range(2):
        assert type(tclass.load_memmap(tmp_path / "i")) is Inner
        assert type(tclass.load_memmap(tmp_path / "d")) is Defaults
    meta = json.loads((tmp_path / "d" / "meta.json").read_text())
    meta["_type"] = "<class 'no_module.NoClass'>"
    _rewrite(tmp_path / "d", json.dumps(meta))
    with pytest.raises(tclass.errors.ClassResolutionError, match="NoClass"):
        tclass.load_memmap(tmp_path / "d")


# --- a record over the TensorDict it was loaded into ----------------------------------------


def test_nested_record_loads_and_writes_through(tmp_path: Path) -> None:
    _outer().memmap(tmp_path / "r")
    loaded = Outer.load_memmap(tmp_path / "r")
    assert type(loaded.inner) is Inner and loaded.name == "pong"
    assert list(loaded.keys()) == ["x", "inner", "name"]
    assert torch.equal(loaded.inner.a, torch.arange(6.0).reshape(3, 2))
    assert loaded.inner.a.filename == str(
        tmp_path / "r" / "_tensordict" / "inner" / "_tensordict" / "a.memmap"
    )
    loaded.name = "breakout"  # a Python value: written into the folder
    loaded.inner.b += 2  # a leaf: in place, into its file
    loaded.x.copy_(torch.tensor([7, 8, 9]))
    again = Outer.load_memmap(tmp_path / "r")
    assert again.name == "breakout" and again.inner.b.tolist() == [2.0, 2.0, 2.0]
    assert again.x.tolist() == [7, 8, 9]


def test_tensordict_in_a_record_field_is_still_converted(tmp_path: Path) -> None:
    # Saved from a TensorDict of the same shape: the field turns it into an Inner, which
    # the constructor does (the shortcut does not take it as it is).
    inner = TensorDict({"a": torch.ones(3, 2), "b": torch.zeros(3)}, [3])
    TensorDict({"x": torch.arange(3), "inner": inner, "name": "pong"}, [3]).memmap(tmp_path / "td")
    meta_path = tmp_path / "td" / "meta.json"
    node = json.loads(meta_path.read_text())
    # The same entries as a record's _tensordict/: wrap the folder as an Outer's.
    (tmp_path / "r").mkdir()
    (tmp_path / "td").rename(tmp_path / "r" / "_tensordict")
    (tmp_path / "r" / "meta.json").write_text(json.dumps({"_type": "<class 'x.Outer'>"}))
    assert node["inner"]["type"] == "TensorDict"
    loaded = Outer.load_memmap(tmp_path / "r")
    assert type(loaded.inner) is Inner and loaded.inner.a.sum().item() == 6.0


def test_a_value_field_absent_from_a_folder_without_schema_loads_as_none(
    tmp_path: Path,
) -> None:
    # A folder with no schema (the peer's, written by hand) lacking ``tag``: the peer
    # saves a None value by leaving it out, and loads it as None, not as the default;
    # so does tclass (nu20b). A field that a saved schema does not list (a folder saved
    # before the class had it) takes its default: tests/io/test_schema_io.py.
    (tmp_path / "r").mkdir()
    TensorDict({"x": torch.ones(2)}, [2]).memmap(tmp_path / "r" / "_tensordict")
    (tmp_path / "r" / "meta.json").write_text(json.dumps({"_type": "<class 'x.Defaults'>"}))
    loaded = Defaults.load_memmap(tmp_path / "r", strict=False)
    assert loaded.tag is None and loaded.x.tolist() == [1.0, 1.0]


def test_values_in_another_order_and_cast_fields(tmp_path: Path) -> None:
    record = Casting(x=torch.ones(2), n=3, batch_size=[2])
    record.memmap(tmp_path / "r")
    loaded = Casting.load_memmap(tmp_path / "r")
    assert loaded.n == 3 and type(loaded.n) is int and list(loaded.keys()) == ["x", "n"]
    defaults = Defaults(x=torch.ones(2), tag="saved", batch_size=[2])
    defaults.memmap(tmp_path / "d")
    assert Defaults.load_memmap(tmp_path / "d").tag == "saved"


def test_dim_names_reach_the_nested_record(tmp_path: Path) -> None:
    record = _outer()
    record.refine_names("time")
    record.memmap(tmp_path / "r")
    loaded = Outer.load_memmap(tmp_path / "r")
    assert loaded.names == ["time"] and loaded.inner.names == ["time"]


def test_nested_record_of_another_batch_is_refused(tmp_path: Path) -> None:
    _outer().memmap(tmp_path / "r")
    meta_path = tmp_path / "r" / "_tensordict" / "inner" / "_tensordict" / "meta.json"
    meta = json.loads(meta_path.read_text())
    meta["shape"] = [2]
    for key in ("a", "b"):
        meta[key]["shape"][0] = 2
    _rewrite(meta_path.parent, json.dumps(meta))
    with pytest.raises(MetadataError, match="does not start with its parent's"):
        Outer.load_memmap(tmp_path / "r")
