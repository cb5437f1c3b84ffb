"""The schema travels with the data, and folders evolve with their classes (issue 21,
items 3 and 4).

- saving a record writes its class's schema (fields, kinds, dtypes, dim specs, the dims
  its tensors bind) into the ``_tclass`` marker of its ``_tensordict/meta.json``, where
  the peer ignores it; ``python -m tclass info`` shows it;
- loading with a class checks the folder against it and reports every difference at
  once (missing, extra, dtype, shape), naming both sides and the option accepting each;
- compatible changes load: a field added with a default or ``| None``, a field removed
  (``strict=False``), a dtype widened (``widen=True``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import pytest
import torch

import tclass
from tclass import Spec, TensorClass, errors

Tensor = torch.Tensor
SchemaMismatchError = errors.SchemaMismatchError
U8 = torch.uint8


def meta(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())  # type: ignore[no-any-return]


class Info(TensorClass):
    score: Annotated[Tensor, Spec("", torch.float32)]


class Step(TensorClass):
    obs: Annotated[Tensor, Spec("3 h w", torch.uint8)]
    mask: Annotated[Tensor, Spec("h w", torch.bool)]
    reward: Tensor
    info: Info
    env: str = "pong"
    extra: Tensor | None = None


def step(b: int = 2, h: int = 4, w: int = 5) -> Step:
    return Step(
        obs=torch.arange(b * 3 * h * w, dtype=U8).reshape(b, 3, h, w),
        mask=torch.ones(b, h, w, dtype=torch.bool),
        reward=torch.arange(b, dtype=torch.float64),
        info=Info(score=torch.ones(b), batch_size=[b]),
        batch_size=[b],
    )


# --- 3. the schema in the folder ------------------------------------------------------------


def test_saving_writes_the_schema_into_the_fields_node(tmp_path: Path) -> None:
    step().memmap(tmp_path / "s")
    schema = meta(tmp_path / "s" / "_tensordict" / "meta.json")["_tclass"]["schema"]
    assert schema["class"] == f"{__name__}:Step"
    fields = schema["fields"]
    assert list(fields) == ["obs", "mask", "reward", "info", "env", "extra"]
    assert fields["obs"]["kind"] == "tensor"
    assert fields["obs"]["spec"] == {
        "dims": "3 h w",
        "whole": False,
        "dtypes": ["torch.uint8"],
        "text": "Spec('3 h w', torch.uint8)",
    }
    assert fields["obs"]["annotation"] == "Annotated[Tensor, Spec('3 h w', torch.uint8)]"
    assert "spec" not in fields["reward"]
    assert fields["info"]["kind"] == "record" and fields["info"]["class"] == f"{__name__}:Info"
    assert fields["env"]["kind"] == "value" and fields["env"]["default"] is True
    assert fields["extra"]["optional"] is True
    assert schema["dims"] == {"h": 4, "w": 5}
    # The record's own meta.json stays the peer's (it passes every key there to the class).
    assert set(meta(tmp_path / "s" / "meta.json")) == {"_type"}
    inner = meta(tmp_path / "s" / "_tensordict" / "info" / "_tensordict" / "meta.json")
    assert inner["_tclass"]["schema"]["class"] == f"{__name__}:Info"


def test_every_way_of_saving_writes_the_schema(tmp_path: Path) -> None:
    step().memmap_(tmp_path / "a")
    step().memmap_like(tmp_path / "b")
    tclass.save(step(), tmp_path / "c")
    for name in "abc":
        marker = meta(tmp_path / name / "_tensordict" / "meta.json")["_tclass"]
        assert marker["schema"]["dims"] == {"h": 4, "w": 5}, name


def test_a_value_written_into_the_folder_keeps_the_schema(tmp_path: Path) -> None:
    saved = step().memmap(tmp_path / "s")
    with saved.unlock_():
        saved.env = "breakout"  # rewrites _tensordict/meta.json's entries
    marker = meta(tmp_path / "s" / "_tensordict" / "meta.json")["_tclass"]
    assert "schema" in marker
    assert Step.load_memmap(tmp_path / "s").env == "breakout"


def test_the_peer_ignores_the_schema(tmp_path: Path) -> None:
    tensordict = pytest.importorskip("tensordict")
    step().memmap(tmp_path / "s")
    # The fields of a record are a TensorDict node holding the schema.
    fields = tensordict.TensorDict.load_memmap(
        tmp_path / "s" / "_tensordict" / "info" / "_tensordict"
    )
    assert list(fields.keys()) == ["score"] and fields["score"].shape == (2,)
    flat = make({"obs": Annotated[Tensor, Spec("3 h w", torch.uint8)], "env": str})
    flat(obs=torch.zeros(2, 3, 4, 5, dtype=U8), env="a", batch_size=[2]).memmap(tmp_path / "f")
    loaded = tensordict.TensorDict.load_memmap(tmp_path / "f" / "_tensordict")
    assert sorted(loaded.keys()) == ["env", "obs"] and loaded["obs"].dtype == U8


def test_info_shows_the_schema(tmp_path: Path) -> None:
    step().memmap(tmp_path / "s")
    run = [sys.executable, "-m", "tclass", "info", str(tmp_path / "s")]
    text = subprocess.run(run, capture_output=True, text=True, check=True).stdout
    assert "Spec('3 h w', torch.uint8)" in text
    assert "h=4" in text and "w=5" in text
    assert "extra" in text and "None" in text  # a declared field not set when saved
    described = json.loads(
        subprocess.run(run + ["--json"], capture_output=True, text=True, check=True).stdout
    )
    schema = described["root"]["schema"]
    assert schema["fields"]["obs"]["spec"]["dims"] == "3 h w"


# --- 3. loading checks the folder against the class ---------------------------------------


def make(fields: dict[str, Any], defaults: dict[str, Any] | None = None) -> Any:
    """A record class named ``Rec`` with these annotations (each call a new class of the
    same qualified name, as a class edited between two runs of a program)."""
    namespace: dict[str, Any] = {"__annotations__": dict(fields), **(defaults or {})}
    return type(TensorClass)(
        "Rec", (TensorClass,), {"__module__": __name__, "__qualname__": "Rec", **namespace}
    )


V1 = {
    "obs": Annotated[Tensor, Spec("3 h w", torch.uint8)],
    "mask": Annotated[Tensor, Spec("h w", torch.bool)],
    "reward": Annotated[Tensor, Spec("", torch.float32)],
    "gone": Tensor,
}


def save_v1(path: Path) -> None:
    Old = make(V1)
    Old(
        obs=torch.zeros(2, 3, 4, 5, dtype=U8),
        mask=torch.zeros(2, 4, 5, dtype=torch.bool),
        reward=torch.zeros(2),
        gone=torch.zeros(2),
        batch_size=[2],
    ).memmap(path)


def test_every_difference_is_reported_at_once(tmp_path: Path) -> None:
    save_v1(tmp_path / "v1")
    New = make(
        {
            "obs": Annotated[Tensor, Spec("3 h w", torch.float32)],  # dtype changed
            "mask": Annotated[Tensor, Spec("h 6", torch.bool)],  # shape changed
            "reward": Annotated[Tensor, Spec("", torch.float32)],
            "added": Tensor,  # new, required
        }
    )
    with pytest.raises(SchemaMismatchError) as caught:
        New.load_memmap(tmp_path / "v1")
    kinds = {d.field: d.kind for d in caught.value.differences}
    assert kinds == {"obs": "dtype", "mask": "shape", "added": "missing", "gone": "extra"}
    message = str(caught.value)
    for text in ("obs", "uint8", "float32", "mask", "6", "5", "added", "gone"):
        assert text in message, text
    assert "strict=False" in message and "widen=True" in message
    options = {d.field: d.option for d in caught.value.differences}
    assert options == {
        "obs": "widen=True",
        "mask": None,
        "added": "strict=False",
        "gone": "strict=False",
    }
    assert isinstance(caught.value, (ValueError, errors.MetadataError))


def test_a_field_added_with_a_default_or_none_loads(tmp_path: Path) -> None:
    save_v1(tmp_path / "v1")
    New = make(
        {**V1, "tag": str, "maybe": Tensor | None},
        {"tag": "default", "maybe": None},
    )
    loaded = New.load_memmap(tmp_path / "v1")
    assert loaded.tag == "default" and loaded.maybe is None
    assert loaded.obs.shape == (2, 3, 4, 5)


def test_a_removed_field_needs_strict_false(tmp_path: Path) -> None:
    save_v1(tmp_path / "v1")
    New = make({k: v for k, v in V1.items() if k != "gone"})
    with pytest.raises(SchemaMismatchError, match="gone") as caught:
        New.load_memmap(tmp_path / "v1")
    assert [d.kind for d in caught.value.differences] == ["extra"]
    loaded = New.load_memmap(tmp_path / "v1", strict=False)
    assert "gone" not in loaded.to_dict()


def test_a_dtype_widens_when_asked(tmp_path: Path) -> None:
    save_v1(tmp_path / "v1")
    New = make({**V1, "obs": Annotated[Tensor, Spec("3 h w", (torch.float32,))]})
    with pytest.raises(SchemaMismatchError, match="widen=True"):
        New.load_memmap(tmp_path / "v1")
    loaded = New.load_memmap(tmp_path / "v1", widen=True)
    assert loaded.obs.dtype == torch.float32 and loaded.mask.dtype == torch.bool
    # The folder is not changed.
    assert meta(tmp_path / "v1" / "_tensordict" / "meta.json")["obs"]["dtype"] == "torch.uint8"


def test_a_narrowing_is_refused_without_an_option(tmp_path: Path) -> None:
    save_v1(tmp_path / "v1")
    New = make({**V1, "reward": Annotated[Tensor, Spec("", torch.float16)]})
    with pytest.raises(SchemaMismatchError) as caught:
        New.load_memmap(tmp_path / "v1", widen=True)
    (difference,) = caught.value.differences
    assert difference.kind == "dtype" and difference.option is None
    assert "float32" in str(caught.value) and "float16" in str(caught.value)


def test_a_field_that_was_none_when_saved_loads_as_none(tmp_path: Path) -> None:
    Old = make({"x": Tensor, "y": Tensor})
    Old(x=torch.zeros(2), y=None, batch_size=[2]).memmap(tmp_path / "s")
    assert Old.load_memmap(tmp_path / "s").y is None


def test_a_folder_without_a_schema_loads_missing_fields_as_none(tmp_path: Path) -> None:
    # The peer (and tclass before schemas) stores None by leaving the field out.
    save_v1(tmp_path / "v1")
    path = tmp_path / "v1" / "_tensordict" / "meta.json"
    stripped = meta(path)
    del stripped["_tclass"]
    path.write_text(json.dumps(stripped))
    New = make({**V1, "later": Tensor})
    assert New.load_memmap(tmp_path / "v1").later is None


def test_differences_in_nested_records_are_listed_with_their_path(tmp_path: Path) -> None:
    step().memmap(tmp_path / "s")

    class Info(TensorClass):  # noqa: F811 (the same qualified name, edited)
        score: Annotated[Tensor, Spec("", torch.int64)]

    Info.__qualname__ = "Info"
    Info.__module__ = __name__

    fields = {
        "obs": Annotated[Tensor, Spec("3 h w", torch.uint8)],
        "mask": Annotated[Tensor, Spec("h w", torch.bool)],
        "reward": Tensor,
        "info": Info,  # the edited one (a string would name the module's)
        "env": str,
    }
    namespace = {"__annotations__": fields, "env": "pong", "__module__": __name__}
    edited = type(TensorClass)("Step", (TensorClass,), {**namespace, "__qualname__": "Step"})
    with pytest.raises(SchemaMismatchError) as caught:
        edited.load_memmap(tmp_path / "s")
    found = {(d.path, d.field, d.kind) for d in caught.value.differences}
    assert ("_tensordict/info", "score", "dtype") in found


def test_a_value_where_a_tensor_is_declared_is_a_kind_difference(tmp_path: Path) -> None:
    Old = make({"x": str})
    Old(x="text", batch_size=[]).memmap(tmp_path / "s")
    New = make({"x": Annotated[Tensor, Spec("")]})
    with pytest.raises(SchemaMismatchError) as caught:
        New.load_memmap(tmp_path / "s", strict=False)
    (difference,) = caught.value.differences
    assert difference.kind == "kind" and difference.option is None


def test_loading_an_unchanged_class_is_not_slowed_by_options(tmp_path: Path) -> None:
    step().memmap(tmp_path / "s")
    for options in ({}, {"strict": False}, {"widen": True}):
        loaded = Step.load_memmap(tmp_path / "s", **options)
        assert loaded.obs.dtype == U8 and isinstance(loaded.obs, tclass.MemoryMappedTensor)


def test_the_peer_loads_a_record_saved_with_a_schema(tmp_path: Path) -> None:
    tensordict = pytest.importorskip("tensordict")
    Plain = make({"x": Annotated[Tensor, Spec("3", torch.float32)]})
    Plain(x=torch.ones(2, 3), batch_size=[2]).memmap(tmp_path / "s")

    @tensordict.tensorclass
    class Rec:
        x: torch.Tensor

    Rec.__qualname__ = "Rec"
    loaded = Rec.load_memmap(tmp_path / "s")
    assert loaded.x.sum() == 6


Build = Callable[..., Any]


def test_a_lazy_stack_of_records_round_trips_with_its_schema(tmp_path: Path) -> None:
    class Ragged(TensorClass):
        x: Annotated[Tensor, Spec("n", torch.float32)]

    stack = tclass.lazy_stack([Ragged(x=torch.zeros(n), batch_size=[]) for n in (2, 3)])
    stack.memmap(tmp_path / "s")
    marker = meta(tmp_path / "s" / "_tensordict" / "meta.json")["_tclass"]
    assert marker["members"] == 2 and "x" in marker["schema"]["fields"]
    loaded = Ragged.load_memmap(tmp_path / "s")
    assert [loaded[i].x.shape[0] for i in range(2)] == [2, 3]

    class Ragged(TensorClass):  # type: ignore[no-redef]  # noqa: F811
        x: Annotated[Tensor, Spec("n", torch.float64)]

    with pytest.raises(SchemaMismatchError) as caught:
        Ragged.load_memmap(tmp_path / "s")
    assert [d.kind for d in caught.value.differences] == ["dtype"]  # once, not per member


def test_a_class_of_plain_tensors_is_compared_with_any_other_folder(tmp_path: Path) -> None:
    """A folder holding exactly the fields of a class of plain tensors (no spec), each a
    tensor, needs no comparison (the loader's shortcut); any other folder is compared in
    full, the shortcut already taken for that class or not."""
    ab = {"a": torch.zeros(2), "b": torch.ones(2)}
    Plain = make({"a": Tensor, "b": Tensor})
    Plain(**ab, batch_size=[2]).memmap(tmp_path / "same")
    assert torch.equal(Plain.load_memmap(tmp_path / "same").b, torch.ones(2))
    make({"a": Tensor, "b": Tensor, "c": Tensor})(**ab, c=ab["a"], batch_size=[2]).memmap(
        tmp_path / "extra"
    )
    make({"a": Tensor})(a=ab["a"], batch_size=[2]).memmap(tmp_path / "missing")
    make({"a": Tensor, "b": str})(a=ab["a"], b="text", batch_size=[2]).memmap(tmp_path / "value")
    for folder, kind in (("extra", "extra"), ("missing", "missing"), ("value", "kind")):
        with pytest.raises(SchemaMismatchError) as caught:
            Plain.load_memmap(tmp_path / folder)
        assert [(d.field, d.kind) for d in caught.value.differences] == [
            ({"extra": "c"}.get(folder, "b"), kind)
        ]
    assert torch.equal(Plain.load_memmap(tmp_path / "same").a, torch.zeros(2))


class HoldsAnything(TensorClass):
    x: torch.Tensor
    opt: torch.Tensor | None = None


def test_a_collection_kept_in_a_tensor_field_loads_back(tmp_path: Path) -> None:
    # the record keeps a TensorDict set into a Tensor field as it is (as the peer); its
    # folder was refused on load ("Rec.opt is annotated Tensor | None; got a TensorDict")
    rec = HoldsAnything(x=torch.zeros(2), batch_size=[2])
    rec.set("opt", tclass.TensorDict({"a": torch.ones(2)}, [2]))
    rec.memmap(tmp_path / "a")
    loaded = HoldsAnything.load_memmap(tmp_path / "a")
    assert type(loaded.opt) is tclass.TensorDict and torch.equal(loaded.opt["a"], torch.ones(2))
    empty = HoldsAnything(x=torch.zeros(2), opt=tclass.TensorDict({}, [2]), batch_size=[2])
    empty.memmap(tmp_path / "b")
    assert HoldsAnything.load_memmap(tmp_path / "b").opt.batch_size == torch.Size([2])


def test_a_metadata_set_into_a_value_field_loads_back(tmp_path: Path) -> None:
    # ``set("env", MetaData(3))`` into a ``str`` field: the record holds it, its folder
    # saves it as a MetaData node, which the load took for a collection and refused
    # ("Step.env is annotated str; got a MetaData in the folder"); the peer loads it
    rec = step()
    rec.set("env", tclass.MetaData(3, batch_size=[2]))
    rec.memmap(tmp_path / "s")
    loaded = Step.load_memmap(tmp_path / "s")
    assert loaded.env == 3 and "env: MetaData" in repr(loaded)  # kept a MetaData


@pytest.mark.parametrize(
    "derive",
    [
        lambda s: s.to(torch.float64),  # every tensor, obs and mask too
        lambda s: s.apply(lambda x: x.unsqueeze(-1) if x.dtype is torch.bool else x),
        lambda s: torch.stack([s, s]).apply(lambda x: x.float()),
        lambda s: tclass.TensorDict(rec=s.half(), batch_size=[2]),  # nested in a TensorDict
    ],
)
@pytest.mark.parametrize("save", ["memmap", "memmap_like", "save", "h5", "tdz"])
def test_a_derived_record_its_class_would_not_load_is_refused_before_any_file(
    tmp_path: Path, derive: Callable[[Step], Any], save: str
) -> None:
    # A record derived without the checks (to(dtype), apply) saved into a folder no load
    # reads back (SchemaMismatchError, with no option that accepts a narrowing or another
    # shape): refused before any file, as breaking value constraints is, naming the field.
    # Before, the folder was written and every load of it refused.
    derived = derive(step())
    target = tmp_path / ("x.h5" if save == "h5" else "x.tdz" if save == "tdz" else "x")
    writes = {
        "memmap": lambda: derived.memmap(target),
        "memmap_like": lambda: derived.memmap_like(target),  # its dtypes and dims count
        "save": lambda: derived.save(target),
        "h5": lambda: derived.to_h5(target),
        "tdz": lambda: tclass.save(derived, target),
    }
    with pytest.raises(errors.FieldSpecError, match=r"cannot save .*would refuse it on load"):
        writes[save]()
    assert list(tmp_path.iterdir()) == []
    fine = step().to(torch.float32, cast_filter=lambda key, x: key == ("reward",))
    derived = fine  # a cast its specs allow saves and loads back exactly
    writes[save]()
    loaded = Step.from_h5(target) if save == "h5" else Step.load_memmap(target)
    assert loaded.reward.dtype == torch.float32 and loaded.obs.dtype == torch.uint8
    assert save == "memmap_like" or torch.equal(loaded.obs, step().obs)


class Defaulted(TensorClass):
    x: torch.Tensor
    env: str | None = "pong"
    steps: int | None = 5


def test_a_value_field_none_when_saved_loads_as_none_not_its_default(tmp_path: Path) -> None:
    # None is saved by leaving the field out (the peer's format); its schema lists the
    # field, so a load gives None back, as the peer's does (before: the default, "pong")
    Defaulted(x=torch.zeros(2), env=None, steps=None, batch_size=[2]).memmap(tmp_path / "n")
    for loaded in (Defaulted.load_memmap(tmp_path / "n"), tclass.load_memmap(tmp_path / "n")):
        assert (loaded.env, loaded.steps) == (None, None)
    Defaulted(x=torch.zeros(2), env=None, batch_size=[2]).save(tmp_path / "n.tdz")
    assert Defaulted.load_memmap(tmp_path / "n.tdz").env is None
    # a field the saving class did not have takes its default (schema evolution)
    meta_path = tmp_path / "n" / "_tensordict" / "meta.json"
    meta = json.loads(meta_path.read_text())
    del meta["_tclass"]["schema"]["fields"]["env"]
    meta_path.write_text(json.dumps(meta))
    loaded = Defaulted.load_memmap(tmp_path / "n")
    assert (loaded.env, loaded.steps) == ("pong", None)
    full = Defaulted(x=torch.zeros(2), batch_size=[2]).memmap(tmp_path / "d")
    assert (Defaulted.load_memmap(tmp_path / "d").env, full.steps) == ("pong", 5)


class DefaultedCast(TensorClass, autocast=True):
    x: torch.Tensor
    steps: int | None = 5


def test_none_when_saved_is_unset_on_load_under_autocast_too(tmp_path: Path) -> None:
    # the loaded record lacks the field as the saved one did (keys() as the peer's),
    # and autocast does not try int(None) (before: a MetadataError)
    for cls in (Defaulted, DefaultedCast):
        cls(x=torch.zeros(2), steps=None, batch_size=[2]).memmap(tmp_path / cls.__name__)
        loaded = cls.load_memmap(tmp_path / cls.__name__)
        assert loaded.steps is None and "steps" not in loaded.keys()
        assert loaded.to_dict()["steps"] is None and loaded[0].steps is None


def make_autocast(fields: dict[str, Any]) -> Any:
    """:func:`make` with ``autocast=True``: the class converts its Python values."""
    namespace = {"__annotations__": dict(fields), "__module__": __name__, "__qualname__": "Rec"}
    return tclass.tensorclass(autocast=True)(type("Rec", (), namespace))


@pytest.mark.parametrize("autocast_saved", [False, True])
def test_a_value_its_changed_annotation_converts_is_a_difference(
    tmp_path: Path, autocast_saved: bool
) -> None:
    """``x: float`` saved ``1.5``, the annotation ``int`` (autocast) since: the load would
    make it ``1``, which no option accepts (tclass loaded ``1`` with no word; the peer
    keeps ``1.5``, not converting on load). The other way, ``x: int`` saved ``3`` and
    ``float`` since, keeps the value (``3.0``): ``widen=True`` accepts it."""
    Old = (make_autocast if autocast_saved else make)({"x": float, "t": Tensor})
    Old(x=1.5, t=torch.zeros(2), batch_size=[2]).memmap(tmp_path / "f")
    New = make_autocast({"x": int, "t": Tensor})
    for options in ({}, {"widen": True}, {"strict": False}):
        with pytest.raises(SchemaMismatchError, match=r"Rec.x holds 1.5 \(float\)") as caught:
            New.load_memmap(tmp_path / "f", **options)
        (difference,) = caught.value.differences
        assert difference.kind == "value" and difference.option is None
        assert "makes it 1 (int)" in str(caught.value) and "changes the value" in str(caught.value)
    assert isinstance(caught.value, ValueError)
    Old = (make_autocast if autocast_saved else make)({"x": int, "t": Tensor})
    Old(x=3, t=torch.zeros(2), batch_size=[2]).memmap(tmp_path / "i")
    New = make_autocast({"x": float, "t": Tensor})
    with pytest.raises(SchemaMismatchError, match="widen=True") as caught:
        New.load_memmap(tmp_path / "i")
    (difference,) = caught.value.differences
    assert difference.kind == "value" and difference.option == "widen=True"
    loaded = New.load_memmap(tmp_path / "i", widen=True)
    assert loaded.x == 3.0 and type(loaded.x) is float
    # The same class (or one whose annotation did not change) loads its values as saved.
    assert type(Old.load_memmap(tmp_path / "i").x) is int


def test_a_converted_value_of_a_stack_or_a_folder_without_schema_is_a_difference(
    tmp_path: Path,
) -> None:
    """Also a record's values in a lazy stack of records (a changed value found after
    an equal one, ``2.0`` then ``2.5``); a folder without a schema (as the peer writes)
    is checked by its values alike."""
    Old = make({"x": float, "t": Tensor})
    members = [Old(x=v, t=torch.zeros(2), batch_size=[2]) for v in (2.0, 2.5)]
    tclass.lazy_stack(members).memmap(tmp_path / "s")
    New = make_autocast({"x": int, "t": Tensor})
    with pytest.raises(SchemaMismatchError, match=r"holds 2.5 \(float\).*makes it 2 \(int\)"):
        New.load_memmap(tmp_path / "s")
    Old(x=0.5, t=torch.zeros(2), batch_size=[2]).memmap(tmp_path / "p")
    path = tmp_path / "p" / "_tensordict" / "meta.json"
    stripped = meta(path)
    del stripped["_tclass"]
    path.write_text(json.dumps(stripped))
    with pytest.raises(SchemaMismatchError, match=r"holds 0.5 \(float\)"):
        New.load_memmap(tmp_path / "p")
