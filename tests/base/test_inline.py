"""``inline_inherited``: a collection class holds what it inherits from tclass's method
groups, so that torch.compile's guards stop at the class (tclass/_base/_inline.py)."""

from __future__ import annotations

from typing import Any

import pytest
import torch

import tclass
from tclass._base._inline import inline_inherited

PER_CLASS = {"__new__", "__init__", "__init_subclass__", "__class_getitem__", "__subclasshook__"}
CLASSES = [
    tclass.TensorDict,
    tclass.LazyStackedTensorDict,
    tclass.TensorClass,
    tclass.NonTensorData,
    tclass.NonTensorStack,
]


@pytest.mark.parametrize("cls", CLASSES, ids=lambda cls: cls.__name__)
def test_a_collection_class_holds_what_lookup_finds_in_tclass_classes(cls: type) -> None:
    for base in cls.__mro__[1:]:
        for name in vars(base):
            found = next(k for k in cls.__mro__ if name in vars(k))
            value = vars(found)[name]
            special = name.startswith("__") and name.endswith("__")
            method = callable(getattr(value, "__func__", value)) and name not in PER_CLASS
            if found.__module__.startswith("tclass.") and (method or not special):
                assert vars(cls)[name] is vars(found)[name], (cls, name)
    for name in ("__getitem__", "__torch_function__", "__add__", "__iter__"):
        assert name in vars(cls), (cls, name)
    assert "__init_subclass__" not in vars(cls) or cls.__init_subclass__.__qualname__.startswith(
        cls.__name__
    )


def _tclass_class(name: str, bases: tuple[type, ...], **attributes: Any) -> type:
    return type(name, bases, {"__module__": "tclass._fake", **attributes})


def test_the_mro_decides_and_a_foreign_class_shadows_what_follows_it() -> None:
    def first(self: object) -> str:
        return "first"

    def second(self: object) -> str:
        return "second"

    def init(self: object) -> None:
        return None

    low = _tclass_class(
        "Low", (), f=second, g=second, h=second, __len__=lambda self: 2, __init__=init, __x__=1
    )
    foreign = type("Foreign", (), {"g": first})
    mid = _tclass_class("Mid", (foreign, low), f=first, i=staticmethod(second))
    top = _tclass_class("Top", (mid,), h=first)
    inline_inherited(top)
    assert vars(top)["f"] is vars(mid)["f"]  # the first class defining it
    assert "g" not in vars(top) and top().g() == "first"  # the foreign class's, found as before
    assert vars(top)["h"] is first  # its own is kept
    assert vars(top)["i"] is vars(mid)["i"] and top.i(None) == "second"  # the raw descriptor
    assert vars(top)["__len__"] is vars(low)["__len__"] and len(top()) == 2  # copied too
    assert "__init__" not in vars(top) and "__x__" not in vars(top)  # not these


def test_instances_behave_as_before() -> None:
    td = tclass.TensorDict({"a": torch.zeros(3, 2), "n": {"b": torch.ones(3)}}, [3])
    assert td.batch_size == torch.Size([3]) and td.shape == td.batch_size
    assert set(td.keys(True, True)) == {"a", ("n", "b")}
    assert tclass.TensorDict.from_dict({"a": torch.zeros(2)}).batch_size == torch.Size([])
    assert isinstance(td, tclass.TensorDictBase) and tclass.is_tensor_collection(td)
