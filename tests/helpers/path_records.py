"""The records of the options x paths tests (test_tensorclass_paths.py): for each class
option, a record class and its nested record class, declared with ``@tensorclass``, as a
``TensorClass`` subclass, and (where the peer is installed) with the peer's decorator.

The classes are built from one list of fields per option and bound to this module's
names (``Rec_autocast``, ``BaseRec_autocast``, ``PeerRec_autocast``...), so that pickling
finds them. Fields: tensors of several dtypes, a nested record, an optional tensor and,
unless ``tensor_only``, Python values of each kind and a ``MetaData``; ``nocast`` adds a
tensor field given a number, ``shadow`` fields named after members.

``tests/helpers`` is on pytest's ``pythonpath`` (pyproject.toml), so this module is
imported as ``path_records``.
"""

from __future__ import annotations

import types
from typing import Any, NamedTuple

import torch

import tclass

__all__ = ["FORMS", "OPTIONS", "Classes", "classes", "given"]


def floating(key: tuple[str, ...], value: torch.Tensor) -> bool:
    """The ``cast_filter`` of the ``cast_filter`` classes: floating-point leaves."""
    return value.is_floating_point()


OPTIONS: dict[str, dict[str, Any]] = {
    "default": {},
    "autocast": {"autocast": True},
    "nocast": {"nocast": True},
    "tensor_only": {"tensor_only": True},
    "frozen": {"frozen": True},
    "shadow": {"shadow": True},
    "kw_only": {"kw_only": True},
    "skip_post_init_on_rebuild": {"skip_post_init_on_rebuild": True},
    "cast_filter": {"cast_filter": floating},
}
FORMS = ("decorator", "base", "peer")

_TENSORS = {"f32": torch.float32, "f16": torch.float16, "i64": torch.int64, "b": torch.bool}
# Python values: (annotation, value); autocast records get those of _CASTS as tensors
# (which read as the annotated type).
_VALUES: dict[str, tuple[Any, Any]] = {
    "name": (str, "walker"),
    "count": (int, 3),
    "rate": (float, 1.5),
    "done": (bool, True),
    "tags": (list, [1, "x"]),
    "info": (dict, {"k": [1.0]}),
}
_CASTS = ("count", "rate", "done")


class Classes(NamedTuple):
    rec: Any
    inner: Any
    lib: Any  # the library the classes come from (tclass or tensordict)


def _declare(lib: Any, form: str, name: str, annotations: dict[str, Any], **options: Any) -> Any:
    defaults = {k: None for k, a in annotations.items() if k in ("opt", "maybe", "label")}
    body = {"__annotations__": annotations, "__module__": __name__, **defaults}
    if form == "base":
        cls = types.new_class(name, (lib.TensorClass,), options, lambda ns: ns.update(body))
    else:
        cls = lib.tensorclass(**options)(type(name, (), body))
    globals()[name] = cls
    return cls


def _fields(option: str, inner: Any) -> dict[str, Any]:
    fields: dict[str, Any] = dict.fromkeys(_TENSORS, torch.Tensor)
    fields["inner"] = inner
    if option != "tensor_only":
        fields.update({key: annotation for key, (annotation, _) in _VALUES.items()})
        fields["run"] = Any
    if option == "nocast":
        fields["step"] = torch.Tensor
    if option == "shadow":
        fields.update(sum=torch.Tensor, to=str)
    fields["opt"] = torch.Tensor | None
    if option != "tensor_only":
        fields.update(maybe=int | None, label=str | None)
    return fields


_CACHE: dict[tuple[str, str], Classes] = {}


def classes(option: str, form: str) -> Classes:
    """The record class and nested record class of ``option`` in ``form`` (the peer's:
    ``form="peer"``, imports the peer)."""
    key = (option, form)
    if key not in _CACHE:
        lib: Any = tclass
        if form == "peer":
            import tensordict as lib
        prefix = {"decorator": "", "base": "Base", "peer": "Peer"}[form]
        options = OPTIONS[option]
        inner_fields = {"z": torch.Tensor, **({} if option == "tensor_only" else {"tag": str})}
        inner = _declare(lib, form, f"{prefix}Inner_{option}", inner_fields, **options)
        rec = _declare(lib, form, f"{prefix}Rec_{option}", _fields(option, inner), **options)
        _CACHE[key] = Classes(rec, inner, lib)
    return _CACHE[key]


def given(option: str, kinds: Classes, shift: int = 0, index: Any = None) -> dict[str, Any]:
    """The constructor arguments of a record of batch size ``[2]`` (``shift`` changes
    every value), its tensors indexed with ``index`` when given."""

    def rows(t: torch.Tensor) -> torch.Tensor:
        return t if index is None else t[index]

    batch = rows(torch.empty(2)).shape
    base = torch.arange(4.0).view(2, 2) + shift
    tensors = {key: rows(base.to(dtype)) for key, dtype in _TENSORS.items()}
    tensors["b"] = rows((base + 1).remainder(2).bool())
    inner_args = {"z": rows(base[:, 0] * 10)}
    if option != "tensor_only":
        inner_args["tag"] = f"t{shift}"
    args: dict[str, Any] = {
        **tensors,
        "inner": kinds.inner(**inner_args, batch_size=batch, device="cpu"),
    }
    if option != "tensor_only":
        values = {key: value for key, (_, value) in _VALUES.items()}
        values.update(name=f"walker{shift}", count=3 + shift)
        if option == "autocast":  # given as tensors, read as the annotated types
            values.update({k: torch.tensor(v) for k, v in values.items() if k in _CASTS})
        args.update(values, run=kinds.lib.MetaData("run-7"), label="x")
    if option == "nocast":
        args["step"] = 5 + shift  # a number to a tensor field stays a number
    if option == "shadow":
        args.update(sum=rows(base[:, 1]), to="here")
    return {**args, "batch_size": batch, "device": "cpu"}
