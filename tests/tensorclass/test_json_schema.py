"""A record class as a JSON Schema document (issue 31, item 2): ``Cls.json_schema()``.

The document (draft 2020-12, checked with the ``jsonschema`` package) describes a
record's JSON form (``to_dict(convert_tensors=True)``): records of every batch size
validate against it, and a value that breaks a field's dtype, shape, constraint or
annotation does not. The folder side (the document saved with the data, read without
the classes, the command line) is in tests/io/test_json_schema_io.py.
"""

from __future__ import annotations

import copy
import json
from typing import Annotated, Any, Literal

import annotated_types as at
import jsonschema
import pytest
import torch

from tclass import Spec, TensorClass, TensorDict, tensorclass

try:
    import jaxtyping as jt
except ImportError:  # an optional extra: its tests skip
    jt = None

Tensor = torch.Tensor
DIALECT = "https://json-schema.org/draft/2020-12/schema"


class Level(TensorClass):
    value: Annotated[Tensor, Spec("", torch.int64, isin=(1, 2, 3))]


class Frame(TensorClass):
    obs: Annotated[Tensor, Spec("3 h w", torch.uint8, ge=1)]
    mask: Annotated[Tensor, Spec("h w", torch.bool)]
    prob: Annotated[Tensor, Spec("", torch.float32), at.Gt(0), at.Le(1)]
    free: Tensor
    level: Level
    name: str
    count: int = 0
    scale: float = 1.0
    flag: bool = False
    tags: list[str] | None = None
    weights: dict[str, float] | None = None
    mode: Literal["train", "eval"] = "train"
    pair: tuple[int, str] | None = None
    extra: TensorDict | None = None
    anything: Any = None
    maybe: Annotated[Tensor, Spec("h", torch.float64)] | None = None


def frame(batch: tuple[int, ...] = (4,), h: int = 2, w: int = 3) -> Frame:
    return Frame(
        obs=torch.ones(*batch, 3, h, w, dtype=torch.uint8),
        mask=torch.ones(*batch, h, w, dtype=torch.bool),
        prob=torch.full(batch, 0.5),
        free=torch.zeros(*batch, 5),
        level=Level(value=torch.ones(batch, dtype=torch.int64), batch_size=batch),
        name="pong",
        tags=["a", "b"],
        weights={"x": 0.5},
        batch_size=batch,
    )


def validator(cls: type) -> jsonschema.Draft202012Validator:
    document = cls.json_schema()  # type: ignore[attr-defined]
    jsonschema.Draft202012Validator.check_schema(document)
    return jsonschema.Draft202012Validator(document)


def as_json(record: Any) -> dict[str, Any]:
    """The record's JSON form: its dict with tensors as lists, through JSON (tuples
    become arrays)."""
    out: dict[str, Any] = json.loads(json.dumps(record.to_dict(convert_tensors=True)))
    return out


# --- the document ---------------------------------------------------------------------------


def test_the_document_is_a_valid_draft_2020_12_schema() -> None:
    document = Frame.json_schema()
    assert document["$schema"] == DIALECT
    jsonschema.Draft202012Validator.check_schema(document)
    assert document["title"] == "Frame" and document["type"] == "object"
    assert document["x-tclass-class"] == f"{__name__}:Frame"
    assert document["additionalProperties"] is False
    assert set(document["properties"]) == set(Frame.__tclass_info__.field_names)


def test_required_are_the_fields_without_default_nor_none() -> None:
    assert Frame.json_schema()["required"] == ["obs", "mask", "prob", "free", "level", "name"]


def test_tensor_fields_carry_dtype_dims_and_constraints() -> None:
    properties = Frame.json_schema()["properties"]
    obs = properties["obs"]
    assert obs["x-tclass-kind"] == "tensor"
    assert obs["x-tclass-dtype"] == ["uint8"]
    assert obs["x-tclass-dims"] == ["3", "h", "w"]
    assert obs["x-tclass-batch-dims"] == "leading"
    assert obs["x-tclass-constraints"] == {"ge": 1}
    assert properties["prob"]["x-tclass-constraints"] == {"gt": 0, "le": 1}
    assert (
        properties["free"]["x-tclass-dtype"] is None and "x-tclass-dims" not in properties["free"]
    )
    assert Frame.json_schema()["x-tclass-named-dims"] == {
        "h": ["obs", "mask", "maybe"],
        "w": ["obs", "mask"],
    }


def test_element_schemas_follow_dtype_and_constraints() -> None:
    defs = Frame.json_schema()["$defs"]
    # Any number of batch levels (a $defs entry naming itself) around the feature dims.
    obs_rows = defs[f"{__name__}.Frame.obs.rows"]["anyOf"]
    assert obs_rows[1] == {"type": "array", "items": {"$ref": f"#/$defs/{__name__}.Frame.obs.rows"}}
    obs_items = obs_rows[0]
    assert obs_items["minItems"] == obs_items["maxItems"] == 3
    assert "minItems" not in obs_items["items"]  # h: any size
    leaf = obs_items["items"]["items"]["items"]
    assert leaf == {"type": "integer", "minimum": 1, "maximum": 255}  # ge=1 over uint8's 0
    mask = defs[f"{__name__}.Frame.mask.rows"]["anyOf"][0]
    assert mask["items"]["items"] == {"type": "boolean"}
    prob = defs[f"{__name__}.Frame.prob.rows"]["anyOf"][0]
    assert prob == {"type": "number", "exclusiveMinimum": 0, "maximum": 1}
    level = defs[f"{__name__}.Level.value.rows"]["anyOf"][0]
    assert level["enum"] == [1, 2, 3]


def test_python_value_fields_have_their_json_types() -> None:
    properties = Frame.json_schema()["properties"]

    def bare(name: str) -> dict[str, Any]:
        return {k: v for k, v in properties[name].items() if k != "x-tclass-annotation"}

    assert bare("name") == {"type": "string"}
    assert bare("count") == {"type": "integer"}
    assert bare("scale") == {"type": "number"}
    assert bare("flag") == {"type": "boolean"}
    assert bare("tags") == {
        "anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]
    }
    assert bare("weights")["anyOf"][0] == {
        "type": "object",
        "additionalProperties": {"type": "number"},
    }
    assert bare("mode") == {"enum": ["train", "eval"]}
    pair = bare("pair")["anyOf"][0]
    assert (
        pair["prefixItems"] == [{"type": "integer"}, {"type": "string"}] and pair["maxItems"] == 2
    )
    assert bare("extra")["anyOf"][0] == {"type": "object", "x-tclass-kind": "collection"}
    assert bare("anything") == {}
    assert properties["tags"]["x-tclass-annotation"] == "list[str] | None"


def test_nested_records_are_references_into_defs() -> None:
    document = Frame.json_schema()
    assert document["properties"]["level"]["$ref"] == f"#/$defs/{__name__}.Level"
    level = document["$defs"][f"{__name__}.Level"]
    assert level["x-tclass-class"] == f"{__name__}:Level" and level["required"] == ["value"]


def test_a_class_that_names_itself_refers_to_the_root() -> None:
    @tensorclass
    class Tree:
        value: Annotated[Tensor, Spec("", torch.float32)]
        child: Tree | None = None

    document = Tree.json_schema()
    child = document["properties"]["child"]["anyOf"]
    assert {"$ref": "#"} in child and {"type": "null"} in child
    leaf = Tree(value=torch.ones(2), batch_size=[2])
    tree = Tree(value=torch.ones(2), child=leaf, batch_size=[2])
    validator(Tree).validate(as_json(tree))


def test_json_schema_returns_a_copy() -> None:
    document = Frame.json_schema()
    document["properties"].clear()
    assert Frame.json_schema()["properties"]
    assert copy.deepcopy(Frame.json_schema()) == Frame.json_schema()


@pytest.mark.skipif(jt is None, reason="jaxtyping is an optional extra")
def test_jaxtyping_fields_mark_their_batch_dims_as_included() -> None:
    assert jt is not None

    class Jax(TensorClass):
        x: jt.Float[Tensor, "*batch 3"]  # noqa: F722
        y: jt.Int64[Tensor, "b n"]  # noqa: F722

    properties = Jax.json_schema()["properties"]
    assert properties["x"]["x-tclass-batch-dims"] == "included"
    assert properties["x"]["x-tclass-dims"] == ["*batch", "3"]
    assert Jax.json_schema()["x-tclass-named-dims"] == {"b": ["y"], "n": ["y"]}
    record = Jax(x=torch.ones(2, 3), y=torch.ones(2, 4, dtype=torch.int64), batch_size=[2])
    validator(Jax).validate(as_json(record))
    bad = as_json(record)
    bad["x"][1] = [1.0, 2.0]
    assert not validator(Jax).is_valid(bad)


# --- records validate, and what breaks their fields does not --------------------------------


@pytest.mark.parametrize("batch", [(), (4,), (2, 3)])
def test_records_of_every_batch_size_validate(batch: tuple[int, ...]) -> None:
    validator(Frame).validate(as_json(frame(batch)))


def test_optional_fields_set_or_not_validate() -> None:
    record = frame()
    record.maybe = torch.zeros(4, 2, dtype=torch.float64)
    record.extra = TensorDict(a=torch.zeros(4), batch_size=[4])
    record.pair = (1, "x")
    validator(Frame).validate(as_json(record))


def _broken(change: str) -> dict[str, Any]:
    out = as_json(frame())
    if change == "constraint":
        out["prob"][2] = 1.5
    elif change == "constraint on a nested record":
        out["level"]["value"][0] = 7
    elif change == "fixed dim":
        out["obs"][0] = out["obs"][0][:2]
    elif change == "dtype":
        out["obs"][0][0][0][0] = 0.5
    elif change == "bool dtype":
        out["mask"][0][0][0] = 1
    elif change == "missing field":
        del out["name"]
    elif change == "extra field":
        out["other"] = 1
    elif change == "value type":
        out["count"] = "three"
    elif change == "literal":
        out["mode"] = "test"
    elif change == "list items":
        out["tags"] = ["a", 2]
    elif change == "none in a required field":
        out["name"] = None
    return out


@pytest.mark.parametrize(
    "change",
    [
        "constraint", "constraint on a nested record", "fixed dim", "dtype", "bool dtype",
        "missing field", "extra field", "value type", "literal", "list items",
        "none in a required field",
    ],
)  # fmt: skip
def test_what_breaks_a_field_does_not_validate(change: str) -> None:
    assert not validator(Frame).is_valid(_broken(change))
