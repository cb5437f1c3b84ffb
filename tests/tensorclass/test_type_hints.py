"""``typing.get_type_hints`` of records and of every collection class: it runs (it raised
``NameError: name 'Value' is not defined``, a name the base classes imported for checkers
only), and a record's gives its own fields alone, as the peer's."""

from __future__ import annotations

import inspect
import typing

import pytest
import torch

import tclass


@tclass.tensorclass
class Step:
    obs: torch.Tensor
    env: str
    info: torch.Tensor | None = None


class Frame(tclass.TensorClass):
    pixels: torch.Tensor
    step: Step | None = None


PUBLIC = [
    tclass.TensorDict, tclass.LazyStackedTensorDict, tclass.TensorDictParams,
    tclass.NonTensorData, tclass.NonTensorStack, tclass.MetaData, tclass.TensorDictBase,
    tclass.PersistentTensorDict, tclass.TypedTensorDict, tclass.MemoryMappedTensor,
    tclass.TensorClass,
]  # fmt: skip


@pytest.mark.parametrize("cls", PUBLIC, ids=lambda cls: cls.__name__)
def test_every_public_class_has_type_hints(cls: type) -> None:
    assert isinstance(typing.get_type_hints(cls), dict)


def test_no_hint_reads_a_method_for_a_builtin() -> None:
    # `_locked: bool` read `bool` as the collection's .bool() method (the class namespace
    # comes first); every public class's hints are types, not functions
    classes = [value for value in vars(tclass).values() if isinstance(value, type)]
    for cls in classes:
        for name, hint in typing.get_type_hints(cls).items():
            assert not inspect.isfunction(hint), (cls.__name__, name, hint)


def test_a_records_hints_are_its_fields() -> None:
    assert typing.get_type_hints(Step) == {
        "obs": torch.Tensor, "env": str, "info": torch.Tensor | None
    }  # fmt: skip
    assert typing.get_type_hints(Frame) == {"pixels": torch.Tensor, "step": Step | None}
    # the keywords and accessors the hints leave out are there at runtime
    frame = Frame(pixels=torch.zeros(2, 3), batch_size=[2], device="cpu")
    assert frame.batch_size == (2,) and frame.device == torch.device("cpu")
    assert Frame.__expected_keys__ == {"pixels", "step"}


@pytest.mark.peer
def test_same_hints_as_the_peers() -> None:
    tensordict = pytest.importorskip("tensordict")

    @tensordict.tensorclass
    class PeerStep:
        obs: torch.Tensor
        env: str
        info: torch.Tensor | None = None

    assert typing.get_type_hints(Step) == typing.get_type_hints(PeerStep)


def test_the_generated_init_is_annotated() -> None:
    # The generated __init__ had no annotations (get_type_hints(R.__init__) was {}, the
    # signature bare); the peer's dataclass __init__ has the fields' and "-> None".
    assert typing.get_type_hints(Step.__init__) == {
        "obs": torch.Tensor, "env": str, "info": torch.Tensor | None, "return": type(None)
    }  # fmt: skip
    text = str(inspect.signature(Frame))
    assert text.startswith("(pixels: torch.Tensor, step: ") and text.endswith("-> None")
    assert str(inspect.signature(Step.__init__)).startswith("(self, obs: torch.Tensor, env: str")

    class Later(tclass.TensorClass):  # a forward reference not found yet: kept as written
        early: Early | None = None

    class Early(tclass.TensorClass):
        x: torch.Tensor

    assert Later.__init__.__annotations__["early"] in ("Early | None", Early | None)
    assert Later(early=Early(x=torch.zeros(2), batch_size=[2]), batch_size=[2]).early.x.shape == (
        2,
    )


@pytest.mark.peer
def test_same_init_hints_as_the_peers() -> None:
    tensordict = pytest.importorskip("tensordict")

    @tensordict.tensorclass
    class PeerStep:
        obs: torch.Tensor
        env: str
        info: torch.Tensor | None = None

    assert typing.get_type_hints(Step.__init__) == typing.get_type_hints(PeerStep.__init__)
    # the same parameters (the peer's show the annotations as written: strings here)
    mine, peer = inspect.signature(Step), inspect.signature(PeerStep)
    assert list(mine.parameters) == list(peer.parameters)
