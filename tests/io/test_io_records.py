"""Records on disk: which class a saved record node is, what its folder may hold.

- nested records saved from a script (``__main__``) load in another program that defines
  the same classes in a module, through the annotations of the class being loaded; the
  advice of a ``ClassResolutionError`` works when followed (real processes);
- a key named ``_tclass`` (tclass's marker) round-trips, also through the peer;
- a stray member folder named with non-ASCII digits in a lazy stack is an error;
- a record's ``_tensordict/`` and lazy-stack members get the top node's header checks,
  its values are checked against the annotations, and a planted ``other.pickle`` never
  changes what loads.
"""

from __future__ import annotations

import json
import os
import pickle
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import torch

import tclass
from tclass.errors import (
    ClassResolutionError,
    MetadataError,
    PickleRefusedError,
    SchemaMismatchError,
)

# --- 1. nested records saved from __main__, loaded by another program ----------------------

_CLASSES = """
from typing import Any, Optional, Union
import torch, tclass

@tclass.tensorclass
class Obs:
    x: torch.Tensor

@tclass.tensorclass
class Other:
    y: torch.Tensor

@tclass.tensorclass
class Step:
    obs: Obs
    reward: torch.Tensor
    maybe: Optional[Obs] = None
    either: Union[Obs, Other, None] = None

@tclass.tensorclass
class Holder:
    payload: PAYLOAD = None
"""

# Run as a script: its classes are __main__.Obs, __main__.Step... Saves every layout that
# nests records, or (with "load") loads the TensorDict of records as a script that
# defines the classes itself.
_SCRIPT = """
import json, os, sys
exec(CLASSES)
folder, what = sys.argv[1], sys.argv[2]

def step(k):
    return Step(obs=Obs(x=torch.full((2, k), float(k)), batch_size=[2]), reward=torch.arange(2) + k,
                maybe=Obs(x=torch.zeros(2), batch_size=[2]),
                either=Other(y=torch.ones(2) * k, batch_size=[2]), batch_size=[2])

if what == "load":
    loaded = tclass.load_memmap(folder + "/in_td")
    print(json.dumps([type(loaded.get("step")).__qualname__, type(loaded["step"].obs).__module__]))
    sys.exit(0)
step(3).memmap(folder + "/dense")
tclass.lazy_stack([step(1), step(3)]).memmap(folder + "/lazy")
lazy_obs = tclass.lazy_stack([Obs(x=torch.ones(1)), Obs(x=torch.ones(3))])
Step(obs=lazy_obs, reward=torch.zeros(2), batch_size=[2]).memmap(folder + "/lazy_field")
# A record whose _tensordict/ is a lazy stack of record nodes.
tclass.LazyStackedTensorDict(step(1), step(3)).memmap(folder + "/record_members/_tensordict")
with open(folder + "/record_members/meta.json", "w") as out:
    json.dump({"_type": "<class '__main__.Step'>"}, out)
tclass.TensorDict({"step": step(1)}, [2]).memmap(folder + "/in_td")
Holder(payload=Obs(x=torch.ones(2, 1), batch_size=[2]), batch_size=[2]).memmap(folder + "/in_any")
import steps  # the same classes from a module: saved as steps.Step
obs = steps.Obs(x=torch.ones(2, 2), batch_size=[2])
steps.Step(obs=obs, reward=torch.ones(2), batch_size=[2]).memmap(folder + "/from_module")
"""

# Another program: imports the classes from modules (steps, and steps_alt, where
# Holder.payload is annotated Obs), and loads what the script saved.
_LOADER = """
import json, sys, tclass
folder = sys.argv[1]
out = {}

def error(load):
    try:
        load()
    except tclass.TclassError as e:
        return [type(e).__name__, str(e)]
    return None

out["from_module_error"] = error(lambda: tclass.load_memmap(folder + "/from_module"))
import steps_alt  # same class names, another module: the import hint's alternative
out["by_same_name"] = type(steps_alt.Step.load_memmap(folder + "/from_module").obs).__module__
import steps
out["after_import"] = type(tclass.load_memmap(folder + "/from_module")).__module__
from steps import Obs, Other, Step, Holder

dense = Step.load_memmap(folder + "/dense")
out["dense"] = [type(dense.obs).__name__, type(dense.maybe).__name__, type(dense.either).__name__,
                type(dense.either).__module__, dense.obs.x.tolist(), dense.either.y.tolist()]
lazy = Step.load_memmap(folder + "/lazy")
out["lazy"] = [type(lazy).__name__, list(lazy.batch_size), type(lazy[1].obs).__name__,
               list(lazy[1].obs.x.shape), type(lazy[0].either).__module__]
field = Step.load_memmap(folder + "/lazy_field")
out["lazy_field"] = [type(field.obs).__name__, [list(field.obs[i].x.shape) for i in range(2)]]
members = Step.load_memmap(folder + "/record_members")
out["record_members"] = [type(members).__name__, list(members.batch_size),
                         type(members[1].obs).__module__, members[1].reward.tolist()]
out["main_error"] = error(lambda: tclass.load_memmap(folder + "/dense"))
out["in_td_error"] = error(lambda: tclass.load_memmap(folder + "/in_td"))
out["in_td_alone"] = type(Step.load_memmap(folder + "/in_td/step")).__module__
out["in_any_error"] = error(lambda: Holder.load_memmap(folder + "/in_any"))
out["in_any_alone"] = type(Obs.load_memmap(folder + "/in_any/_tensordict/payload")).__module__
out["in_any_annotated"] = type(steps_alt.Holder.load_memmap(folder + "/in_any").payload).__module__
print(json.dumps(out))
"""


def _python(args: list[str], cwd: Path, path: Path) -> str:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(path), os.environ.get("PYTHONPATH", "")]),
    }
    result = subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.fixture(scope="module")
def saved_from_main(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """What another program sees of the folders a script saved (one run of each)."""
    root = tmp_path_factory.mktemp("main")
    modules = root / "modules"
    modules.mkdir()
    (modules / "steps.py").write_text(_CLASSES.replace("PAYLOAD", "Any"))
    (modules / "steps_alt.py").write_text(_CLASSES.replace("PAYLOAD", "Optional[Obs]"))
    script = root / "script.py"
    script.write_text(
        f"CLASSES = {_CLASSES.replace('PAYLOAD', 'Any')!r}\n{textwrap.dedent(_SCRIPT)}"
    )
    _python([str(script), str(root / "saved"), "save"], root, modules)
    loaded: dict[str, Any] = json.loads(
        _python(["-c", _LOADER, str(root / "saved")], root, modules)
    )
    loaded["script_load"] = json.loads(
        _python([str(script), str(root / "saved"), "load"], root, modules)
    )
    loaded["folder"] = str(root / "saved")
    return loaded


def test_nested_records_resolve_through_the_annotations(saved_from_main: dict[str, Any]) -> None:
    dense = saved_from_main["dense"]
    assert dense[:4] == ["Obs", "Obs", "Other", "steps"]  # Optional[Obs] and Obs | Other | None
    assert dense[4] == [[3.0, 3.0, 3.0]] * 2 and dense[5] == [3.0, 3.0]


def test_lazy_stacks_of_records_resolve_through_the_annotations(
    saved_from_main: dict[str, Any],
) -> None:
    # A lazy stack of Steps: its members' fields hold the nested records.
    assert saved_from_main["lazy"] == ["Step", [2, 2], "Obs", [2, 3], "steps"]
    # A field whose value is a lazy stack of records.
    assert saved_from_main["lazy_field"] == ["Obs", [[1], [3]]]
    # A record whose _tensordict/ is a lazy stack of record nodes.
    assert saved_from_main["record_members"] == ["Step", [2, 2], "steps", [3, 4]]


def test_resolution_advice_works_when_followed(saved_from_main: dict[str, Any]) -> None:
    folder = saved_from_main["folder"]
    # Saved from a module the loader has not imported: either hint works.
    kind, message = saved_from_main["from_module_error"]
    assert kind == "ClassResolutionError"
    assert (
        "import steps first" in message and f"Step.load_memmap('{folder}/from_module')" in message
    )
    assert (
        saved_from_main["by_same_name"] == "steps_alt"
        and saved_from_main["after_import"] == "steps"
    )
    # Saved from __main__: no import helps, and the message does not suggest one.
    kind, message = saved_from_main["main_error"]
    assert "no import defines it" in message and "import __main__" not in message
    assert f"Step.load_memmap('{folder}/dense')" in message  # followed in the other tests
    # A record inside a TensorDict: define the class in the loading script, or load the part.
    kind, message = saved_from_main["in_td_error"]
    assert "define your class named Step in the script (__main__)" in message
    assert f"Step.load_memmap('{folder}/in_td/step') loads this part alone" in message
    assert saved_from_main["script_load"] == ["Step", "__main__"]
    assert saved_from_main["in_td_alone"] == "steps"
    # A record in a field annotated Any: annotate the field, or load the part.
    kind, message = saved_from_main["in_any_error"]
    assert "annotate Holder.payload with your class named Obs" in message
    assert (
        f"Obs.load_memmap('{folder}/in_any/_tensordict/payload') loads this part alone" in message
    )
    assert (
        saved_from_main["in_any_annotated"] == "steps_alt"
        and saved_from_main["in_any_alone"] == "steps"
    )


# In-process variants: a saved class name rewritten to one no live class has.


@tclass.tensorclass
class Obs:
    x: torch.Tensor


@tclass.tensorclass
class Other:
    y: torch.Tensor


@tclass.tensorclass
class Step:
    obs: Obs
    name: str = "walker"
    pair: tuple[int, int] = (1, 2)
    maybe: Obs | None = None
    reward: torch.Tensor | None = None


def _step(batch: int = 2) -> Step:
    obs = Obs(x=torch.arange(batch * 2.0).reshape(batch, 2), batch_size=[batch])
    return Step(
        obs=obs,
        maybe=Obs(x=torch.zeros(batch), batch_size=[batch]),
        reward=torch.ones(batch),
        batch_size=[batch],
    )


def _edit(path: Path, **changes: Any) -> None:
    meta = json.loads(path.read_text())
    meta.update(changes)
    for key in [key for key, value in changes.items() if value is None]:
        del meta[key]
    path.write_text(json.dumps(meta))


def test_optional_field_resolves_by_name(tmp_path: Path) -> None:
    _step().memmap(tmp_path / "s")
    _edit(tmp_path / "s" / "meta.json", _type="<class '__main__.Step'>")
    _edit(tmp_path / "s" / "_tensordict" / "maybe" / "meta.json", _type="<class '__main__.Obs'>")
    loaded = Step.load_memmap(tmp_path / "s")
    assert type(loaded.maybe) is Obs and loaded.maybe.x.tolist() == [0.0, 0.0]


def test_a_live_class_of_another_kind_in_a_field_is_an_error(tmp_path: Path) -> None:
    _step().memmap(tmp_path / "s")
    _edit(tmp_path / "s" / "_tensordict" / "obs" / "meta.json", _type=f"<class '{__name__}.Other'>")
    with pytest.raises(
        MetadataError, match=r"_tensordict/obs' holds a .*Other, but Step.obs is annotated Obs"
    ):
        Step.load_memmap(tmp_path / "s")


# --- 4. a key named like tclass's marker -------------------------------------------------


def _leaf_entry(shape: list[int]) -> dict[str, Any]:
    return {"device": "cpu", "shape": shape, "dtype": "torch.int64", "is_nested": False}


def test_tclass_key_in_a_peer_folder_is_a_key(tmp_path: Path) -> None:
    # What the peer writes for TensorDict({"_tclass": tensor, "sub": {"_tclass": {...}}}).
    folder = tmp_path / "d"
    (folder / "sub" / "_tclass").mkdir(parents=True)
    td_fields = {
        "_type": "<class 'tensordict._td.TensorDict'>",
        "_format_version": 1,
        "_class": "tensordict:TensorDict",
    }
    root = {
        "_tclass": _leaf_entry([2]),
        "sub": {"type": "TensorDict"},
        "shape": [2],
        "device": "cpu",
        **td_fields,
    }
    (folder / "meta.json").write_text(json.dumps(root))
    torch.tensor([5, 6]).numpy().tofile(folder / "_tclass.memmap")
    (folder / "sub" / "meta.json").write_text(
        json.dumps({"_tclass": {"type": "TensorDict"}, "shape": [2], **td_fields})
    )
    (folder / "sub" / "_tclass" / "meta.json").write_text(json.dumps({"shape": [2], **td_fields}))
    loaded = tclass.load_memmap(folder)
    assert loaded.get("_tclass").tolist() == [5, 6]
    assert list(loaded["sub"].keys()) == ["_tclass"] and loaded[
        "sub", "_tclass"
    ].batch_size == torch.Size([2])


@pytest.mark.parametrize(
    "keys", [["_tclass"], ["_tclass", "shape"], ["%_tclass", "_tclass"], ["%_tclass"]]
)
def test_tclass_key_round_trips(tmp_path: Path, keys: list[str]) -> None:
    source = tclass.TensorDict({key: torch.tensor([i, i]) for i, key in enumerate(keys)}, [2])
    source["nested"] = tclass.TensorDict(
        {"_tclass": tclass.NonTensorData("v", batch_size=[2])}, [2]
    )
    source.memmap(tmp_path / "d")
    meta = json.loads((tmp_path / "d" / "meta.json").read_text())
    if "_tclass" in keys:  # stored by its name, unless the node's keys are escaped
        assert ("dtype" in meta["_tclass"]) == ("shape" not in keys)
    loaded = tclass.load_memmap(tmp_path / "d")
    assert sorted(loaded.keys()) == sorted([*keys, "nested"])
    assert all(loaded[key].tolist() == [i, i] for i, key in enumerate(keys))
    assert loaded["nested", "_tclass"] == "v"


@pytest.mark.peer
@pytest.mark.parametrize(
    ("keys", "peer_sees"),
    [
        (["_tclass"], ["_tclass"]),
        (["_tclass", "%_tclass", "type"], ["_tclass", "%_tclass", "type"]),
        (["_tclass", "shape"], ["%_tclass", "%shape"]),  # escaped next to a peer node field
    ],
)
def test_tclass_key_round_trips_through_the_peer(
    tmp_path: Path, keys: list[str], peer_sees: list[str]
) -> None:
    tensordict = pytest.importorskip("tensordict")

    def source(lib: Any, names: list[str]) -> Any:
        entries: dict[str, Any] = {key: torch.tensor([i, 7]) for i, key in enumerate(names)}
        entries["nested"] = lib.TensorDict(
            {"_tclass": torch.ones(2), "s": lib.NonTensorData("v", batch_size=[2])}, [2]
        )
        entries["value"] = lib.TensorDict({"_tclass": lib.NonTensorData("w", batch_size=[2])}, [2])
        return lib.TensorDict(entries, [2])

    peer_keys = [key for key in keys if key != "shape"]  # the peer loses a key named "shape"
    source(tensordict, peer_keys).memmap(tmp_path / "peer")
    from_peer = tclass.load_memmap(tmp_path / "peer")
    assert sorted(from_peer.keys()) == sorted([*peer_keys, "nested", "value"])
    assert [from_peer[key].tolist() for key in peer_keys] == [[i, 7] for i in range(len(peer_keys))]
    assert (
        from_peer["nested", "_tclass"].tolist() == [1.0, 1.0]
        and from_peer.get(("value", "_tclass")).data == "w"
    )
    # Written by tclass, each key loads in the peer by its name, and the marker tclass
    # adds (next to "shape") is not a key there.
    mine = source(tclass, keys)
    mine.memmap(tmp_path / "mine")
    by_peer = tensordict.TensorDict.load_memmap(tmp_path / "mine", allow_pickle=False)
    assert sorted(by_peer.keys()) == sorted([*peer_sees, "nested", "value"])
    assert (
        by_peer["nested", "_tclass"].tolist() == [1.0, 1.0]
        and by_peer.get(("value", "_tclass")).data == "w"
    )
    back = tclass.load_memmap(tmp_path / "mine")
    assert sorted(back.keys()) == sorted(mine.keys())
    assert [back[key].tolist() for key in keys] == [[i, 7] for i in range(len(keys))]


# --- 9. member folders named with other digits -------------------------------------------


@pytest.mark.parametrize("name", ["²", "٣", "３", "01"])
@pytest.mark.parametrize("recorded", [True, False], ids=["tclass", "peer"])
def test_stray_member_folder_is_an_error(tmp_path: Path, name: str, recorded: bool) -> None:
    tclass.lazy_stack(
        [tclass.TensorDict({"a": torch.ones(2)}), tclass.TensorDict({"a": torch.ones(3)})]
    ).memmap(tmp_path / "l")
    shutil.copytree(tmp_path / "l" / "1", tmp_path / "l" / name)
    if not recorded:  # the peer records no member count
        _edit(tmp_path / "l" / "meta.json", _tclass=None)
    with pytest.raises(
        MetadataError,
        match=re.escape(f"'{tmp_path / 'l' / name}' is not a member of the lazy stack"),
    ):
        tclass.load_memmap(tmp_path / "l")


# --- 10. a record's folder: headers, values, planted pickles -------------------------------


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"_format_version": 9}, "format version 9; this tclass reads up to 1"),
        ({"_format_version": "1"}, "_format_version must be a non-negative int"),
        (
            {"_type": "<class 'ghost.Ghost'>", "_class": None},
            "names a ghost.Ghost, but a record's _tensordict folder",
        ),
        (
            {"_type": "<class 'tensordict.tensorclass.NonTensorData'>", "_class": None},
            "names a tensordict.tensorclass.NonTensorData",
        ),
        ({"_type": None, "_class": None}, "names no class"),
    ],
)
def test_record_content_header_is_checked(
    tmp_path: Path, changes: dict[str, Any], expected: str
) -> None:
    _step().memmap(tmp_path / "s")
    _edit(tmp_path / "s" / "_tensordict" / "meta.json", **changes)
    with pytest.raises(MetadataError, match=expected) as caught:
        Step.load_memmap(tmp_path / "s")
    assert str(tmp_path / "s" / "_tensordict" / "meta.json") in str(caught.value)


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"_format_version": 9}, "format version 9"),
        ({"_format_version": -1}, "_format_version must be a non-negative int"),
    ],
)
def test_lazy_member_header_is_checked(
    tmp_path: Path, changes: dict[str, Any], expected: str
) -> None:
    tclass.lazy_stack([_step(), _step()]).memmap(tmp_path / "s")
    _edit(tmp_path / "s" / "_tensordict" / "1" / "meta.json", **changes)
    with pytest.raises(MetadataError, match=expected) as caught:
        Step.load_memmap(tmp_path / "s")
    assert str(tmp_path / "s" / "_tensordict" / "1" / "meta.json") in str(caught.value)


def _make_value(folder: Path, value: Any) -> None:
    """Turn the entry at ``folder`` (a leaf file or a value folder) into a NonTensorData."""
    parent, key = folder.parent, folder.name
    (parent / f"{key}.memmap").unlink(missing_ok=True)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    node = {
        "_type": "<class 'tensordict.tensorclass.NonTensorData'>",
        "data": value,
        "_metadata": None,
        "_is_non_tensor": True,
    }
    (folder / "meta.json").write_text(json.dumps(node))
    _edit(parent / "meta.json", **{key: {"type": "NonTensorData"}})


def test_a_value_of_another_type_loads_as_the_constructor_keeps_it(tmp_path: Path) -> None:
    # The constructor keeps a Python value of a type the annotation does not name (the
    # peer stores it), so a folder holding one loads: what was saved comes back.
    step = _step()
    step.name = 42
    step.memmap(tmp_path / "saved")
    assert Step.load_memmap(tmp_path / "saved").name == 42
    _step().memmap(tmp_path / "s")
    _make_value(tmp_path / "s" / "_tensordict" / "name", 43)
    assert Step.load_memmap(tmp_path / "s").name == 43


def test_values_per_row_load_as_saved(tmp_path: Path) -> None:
    step = _step()
    step.name = tclass.NonTensorStack.from_list(["a", "b"])
    step.memmap(tmp_path / "s")
    assert Step.load_memmap(tmp_path / "s").name == ["a", "b"]
    meta_path = tmp_path / "s" / "_tensordict" / "name" / "meta.json"
    meta_path.write_text(meta_path.read_text().replace('["a","b"]', '["a",3]'))
    loaded = Step.load_memmap(tmp_path / "s")
    assert loaded.name == ["a", 3] and loaded[1].name == 3


def test_tensor_where_a_value_belongs_and_the_reverse(tmp_path: Path) -> None:
    _step().memmap(tmp_path / "s")
    content = tmp_path / "s" / "_tensordict"
    shutil.rmtree(content / "name")
    _edit(content / "meta.json", name=_leaf_entry([2]))
    torch.tensor([1, 2]).numpy().tofile(content / "name.memmap")
    with pytest.raises(
        MetadataError, match=r"Step.name is annotated str; got a MemoryMappedTensor"
    ) as caught:
        Step.load_memmap(tmp_path / "s")
    assert str(tmp_path / "s") in str(caught.value)
    _step().memmap(tmp_path / "t")
    _make_value(tmp_path / "t" / "_tensordict" / "reward", "high")
    with pytest.raises(
        MetadataError, match=r"Step.reward is annotated Tensor \| None; got a NonTensorData"
    ):
        Step.load_memmap(tmp_path / "t")


def test_tuple_field_comes_back_a_tuple(tmp_path: Path) -> None:
    step = _step()
    step.pair = (3, 4)
    step.memmap(tmp_path / "s")
    assert Step.load_memmap(tmp_path / "s").pair == (3, 4)


class _Marker:
    """Unpickling it creates a file: proof that a pickle was read."""

    path = ""

    def __reduce__(self) -> tuple[Any, ...]:
        return (open, (self.path, "w"))


def _plant(folder: Path, marker_file: Path, **fields: Any) -> None:
    marker = _Marker()
    marker.path = str(marker_file)
    (folder / "other.pickle").write_bytes(pickle.dumps({**fields, "marker": marker}))


def test_planted_pickle_next_to_a_record_is_not_read(tmp_path: Path) -> None:
    _step().memmap(tmp_path / "s")
    _plant(tmp_path / "s", tmp_path / "MARKER", name="planted", pair=(9, 9))
    for allow_pickle in (False, True):
        loaded = Step.load_memmap(tmp_path / "s", allow_pickle=allow_pickle)
        assert (loaded.name, loaded.pair) == ("walker", (1, 2))  # the JSON wins
    assert not (tmp_path / "MARKER").exists()  # not even read


def test_pickle_fills_only_the_fields_json_lacks(tmp_path: Path) -> None:
    step = _step()
    step.maybe = None
    step.memmap(tmp_path / "s")
    _plant(tmp_path / "s", tmp_path / "MARKER", name="planted")
    with pytest.raises(PickleRefusedError):  # a field is absent: the pickle may hold it
        Step.load_memmap(tmp_path / "s")
    assert not (tmp_path / "MARKER").exists()
    (tmp_path / "s" / "other.pickle").write_bytes(pickle.dumps({"name": "planted", "unknown": 1}))
    loaded = Step.load_memmap(tmp_path / "s", allow_pickle=True)
    assert loaded.name == "walker" and loaded.maybe is None  # only absent fields are taken
    # An older writer's value field, kept in the record's own meta.json and in the pickle.
    (tmp_path / "s" / "other.pickle").write_bytes(pickle.dumps({"name": "pickled", "pair": (5, 6)}))
    shutil.rmtree(tmp_path / "s" / "_tensordict" / "name")
    _edit(tmp_path / "s" / "_tensordict" / "meta.json", name=None)
    _edit(tmp_path / "s" / "meta.json", name="from json")
    loaded = Step.load_memmap(tmp_path / "s", allow_pickle=True)
    assert (loaded.name, loaded.pair) == ("from json", (1, 2))


def test_class_in_another_module_still_refused_without_a_match(tmp_path: Path) -> None:
    _step().memmap(tmp_path / "s")
    _edit(tmp_path / "s" / "meta.json", _type="<class 'elsewhere.Unknown'>")
    with pytest.raises(ClassResolutionError, match="import elsewhere first"):
        Step.load_memmap(tmp_path / "s")


def test_a_class_renamed_after_creation_loads(tmp_path: Path) -> None:
    """A class factory that renames its classes (``cls.__qualname__ = ...``) saves them
    under the new name; loading finds them by it (the registry is keyed at creation)."""

    def make() -> Any:
        @tclass.tensorclass
        class Made:
            x: torch.Tensor

        Made.__qualname__ = "RenamedMade"
        return Made

    cls = make()
    cls(x=torch.arange(3), batch_size=[3]).memmap(tmp_path / "s")
    loaded = tclass.TensorDict.load_memmap(tmp_path / "s")
    assert type(loaded) is cls and torch.equal(loaded.x, torch.arange(3))


@tclass.tensorclass
class Tagged:
    x: torch.Tensor
    tag: str
    note: str


def _tagged_by_an_older_writer(folder: Path) -> None:
    """A record as older writers left it: ``note`` kept in its own meta.json, ``tag``
    only in its other.pickle, neither in its ``_tensordict/``."""
    Tagged(x=torch.arange(2), tag="a", note="b", batch_size=[2]).memmap(folder)
    for key in ("tag", "note"):
        shutil.rmtree(folder / "_tensordict" / key)
    _edit(folder / "_tensordict" / "meta.json", tag=None, note=None)
    _edit(folder / "meta.json", note="from json")
    (folder / "other.pickle").write_bytes(pickle.dumps({"tag": "pickled", "bogus": 0}))


def test_fields_in_an_older_writers_pickle_and_meta_json_load(tmp_path: Path) -> None:
    _tagged_by_an_older_writer(tmp_path / "s")
    loaded = Tagged.load_memmap(tmp_path / "s", allow_pickle=True)
    assert (loaded.tag, loaded.note, loaded.x.tolist()) == ("pickled", "from json", [0, 1])
    with pytest.raises(PickleRefusedError, match="other.pickle"):
        Tagged.load_memmap(tmp_path / "s")  # tag is only in the pickle: read only if allowed


def test_undeclared_value_beside_a_pickle_is_extra(tmp_path: Path) -> None:
    """A value the class does not declare, kept in the record's meta.json, is reported
    extra whether or not an other.pickle lies beside it (it was left out of the
    comparison when one did), and ``strict=False`` leaves it out (it reached the class's
    constructor, which refused it)."""
    _tagged_by_an_older_writer(tmp_path / "s")
    _edit(tmp_path / "s" / "meta.json", unknown=3)
    for beside in (True, False):
        with pytest.raises(
            SchemaMismatchError, match=r"Tagged.unknown is in the folder \(a value\)"
        ):
            Tagged.load_memmap(tmp_path / "s", allow_pickle=True)
        loaded = Tagged.load_memmap(tmp_path / "s", allow_pickle=True, strict=False)
        assert loaded.note == "from json" and "unknown" not in loaded.to_dict()
        assert loaded.tag == ("pickled" if beside else None)
        (tmp_path / "s" / "other.pickle").unlink(missing_ok=True)
