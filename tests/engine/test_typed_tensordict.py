"""``TypedTensorDict``: TensorDicts whose fields are class annotations (the peer's
experimental class): construction checks, attribute access, defaults, ``NotRequired``,
inheritance, options, ``from_tensordict`` views, and results that keep the class."""

from __future__ import annotations

import pickle
import warnings
from pathlib import Path
from typing import ClassVar

import pytest
import torch
from torch import Tensor
from typing_extensions import NotRequired

import tclass
from tclass import TensorDict, TypedTensorDict


class State(TypedTensorDict):
    eta: Tensor
    X: Tensor
    steps: NotRequired[Tensor]
    scale: Tensor = torch.ones(5)
    registry: ClassVar[int] = 3


class Extended(State):
    extra: Tensor


def state() -> State:
    return State(eta=torch.zeros(5, 3), X=torch.zeros(5, 4), batch_size=[5])


def test_fields_of_the_class() -> None:
    assert State.__required_keys__ == {"eta", "X"}
    assert State.__optional_keys__ == {"steps", "scale"}
    assert Extended.__required_keys__ == {"eta", "X", "extra"}
    assert set(State.__field_defaults__) == {"scale"} and State.registry == 3


def test_construction_and_attribute_access() -> None:
    s = state()
    assert s.eta.shape == (5, 3) and s["X"].shape == (5, 4) and s.batch_size == (5,)
    assert sorted(s.keys()) == ["X", "eta"]  # a default is not an entry
    assert torch.equal(s.scale, torch.ones(5))
    with pytest.raises(tclass.errors.UnsetFieldError, match="'steps' declared but not set: set"):
        _ = s.steps  # an AttributeError, as the peer's
    assert issubclass(tclass.errors.UnsetFieldError, AttributeError) and not hasattr(s, "steps")
    s.steps = torch.arange(5)
    assert torch.equal(s["steps"], torch.arange(5))
    s.eta += 1
    assert s["eta"].sum() == 15
    with pytest.raises(tclass.errors.UnknownFieldError, match="'zeta'.*fields: X, eta, scale"):
        _ = s.zeta  # a misspelt field: an AttributeError naming the fields
    assert not hasattr(s, "zeta") and not hasattr(s, "_private")
    s["new"] = torch.ones(5)  # a TensorDict still: other keys are entries too
    assert "new" in s.keys() and dict(**s).keys() == s.to_dict().keys()
    assert repr(state()) == "State(batch_size=[5], fields={X: f32[4], eta: f32[3]})"
    with_dict = State({"eta": torch.zeros(2), "X": torch.zeros(2)}, batch_size=[2])
    assert with_dict.eta.shape == (2,)


def test_constructor_errors() -> None:
    with pytest.raises(TypeError, match=r"State\(\) missing required field\(s\): X"):
        State(eta=torch.zeros(5, 3), batch_size=[5])
    with pytest.raises(TypeError, match=r"got unexpected field\(s\): Y"):
        State(eta=torch.zeros(5, 3), X=torch.zeros(5, 4), Y=torch.zeros(5), batch_size=[5])
    with pytest.warns(FutureWarning, match="misses the required field"):
        State({"eta": torch.zeros(5, 3)}, batch_size=[5])
    with pytest.raises(AttributeError, match="shadows a TensorDictBase attribute"):

        class Bad(TypedTensorDict):
            batch_size: Tensor


def test_operations_keep_the_class() -> None:
    s = state()
    results = [
        s[0], s[1:], s.clone(), s.to("cpu"), s.reshape(5), s.apply(lambda x: x + 1),
        torch.stack([s, s]), torch.cat([s, s]), s.exclude("X"), s.select("eta"),
        s.unbind(0)[0], s.split(2)[0], s + 1, s.expand(2, 5), s.detach(),
    ]  # fmt: skip
    assert all(type(result) is State for result in results)
    assert type(s.to_tensordict()) is TensorDict
    assert isinstance(s, tclass.TensorDictBase) and tclass.is_tensor_collection(s)


def test_options() -> None:
    class Frozen(TypedTensorDict, frozen=True):
        a: Tensor

    class FrozenToo(TypedTensorDict["frozen"]):
        a: Tensor

    class Shadowing(TypedTensorDict["shadow"]):
        sum: Tensor

    assert Frozen(a=torch.zeros(1)).is_locked and FrozenToo(a=torch.zeros(1)).is_locked
    shadow = Shadowing(sum=torch.ones(3))
    assert torch.equal(shadow.sum, torch.ones(3))
    with pytest.warns(DeprecationWarning, match="'autocast' has no effect"):

        class Cast(TypedTensorDict, autocast=True):
            a: Tensor

    with pytest.raises(ValueError, match="Unknown TypedTensorDict option"):
        TypedTensorDict["fast"]


def test_from_tensordict_views_the_entries() -> None:
    td = TensorDict(eta=torch.zeros(5, 3), X=torch.zeros(5, 4), batch_size=[5])
    s = State.from_tensordict(td)
    assert type(s) is State and s.eta is td["eta"]
    s.x_new = 1  # a plain attribute: instances of subclasses take them
    s.eta = torch.ones(5, 3)
    assert torch.equal(td["eta"], torch.ones(5, 3))  # replaced through the view
    td["X"].add_(2)
    assert s.X.sum() == 40
    with pytest.raises(TypeError, match=r"from_tensordict\(\) missing required field\(s\): X"):
        State.from_tensordict(TensorDict(eta=torch.zeros(5, 3), batch_size=[5]))
    empty = State.from_tensordict(TensorDict(), check=False)
    with pytest.raises(AttributeError, match="declared but not set"):
        _ = empty.eta


def test_from_tensordict_of_a_lazy_stack_reads_and_writes_through_it() -> None:
    parts = [TensorDict(eta=torch.zeros(3), X=torch.zeros(4)) for _ in range(5)]
    stack = tclass.lazy_stack(parts)
    s = State.from_tensordict(stack)
    assert type(s) is State and s.batch_size == (5,) and s.eta.shape == (5, 3)
    s.eta = torch.ones(5, 3)
    assert torch.equal(parts[2]["eta"], torch.ones(3))  # written into the members
    s.update({"X": torch.full((5, 4), 2.0)})
    assert torch.equal(stack["X"], torch.full((5, 4), 2.0))
    s.steps = torch.arange(5)
    assert parts[4]["steps"] == 4
    del s["steps"]
    assert "steps" not in stack.keys()
    assert type(s[0]) is State and type(s[1:3]) is State and s[1:3].batch_size == (2,)
    assert type(s.clone()) is State and all(type(row) is State for row in s)
    assert type(torch.stack([s, s])) is State
    s[1] = State(eta=torch.full((3,), 5.0), X=torch.zeros(4))  # rows written into members
    assert torch.equal(parts[1]["eta"], torch.full((3,), 5.0))
    s.set_("eta", torch.zeros(5, 3))
    s += 1
    s.mul_(3)
    s.update_({"X": torch.ones(5, 4)})
    assert torch.equal(parts[0]["eta"], torch.full((3,), 3.0)) and parts[4]["X"].sum() == 4
    with pytest.raises(TypeError, match=r"missing required field\(s\): X"):
        State.from_tensordict(tclass.lazy_stack([TensorDict(eta=torch.zeros(3))] * 2))


def test_from_tensordict_of_a_file_reads_and_writes_through_it(tmp_path: Path) -> None:
    pytest.importorskip("h5py")
    td = TensorDict(eta=torch.zeros(5, 3), X=torch.zeros(5, 4), batch_size=[5])
    file = tclass.PersistentTensorDict.from_dict(td, filename=tmp_path / "f.h5")
    s = State.from_tensordict(file)
    assert type(s) is State and s.batch_size == (5,) and not s.is_locked
    with pytest.warns(tclass.errors.EntryReplacedWarning):  # as a write into the file warns
        s.eta = torch.ones(5, 3)
    assert torch.equal(file["eta"], torch.ones(5, 3))
    assert type(s[0]) is State and s[0].X.shape == (4,) and type(s.clone()) is State
    s.add_(1)
    s[0] = State(eta=torch.zeros(3), X=torch.zeros(4))
    assert file["eta"][:, 0].tolist() == [0.0, 2.0, 2.0, 2.0, 2.0]


def test_pickle_save_and_load(tmp_path: Path) -> None:
    s = state()
    again = pickle.loads(pickle.dumps(s))
    assert type(again) is State and torch.equal(again.eta, s.eta)
    saved = s.memmap(tmp_path / "s")
    like = s.memmap_like(tmp_path / "like")
    assert type(saved) is State and type(like) is State  # in memory: the class, as the peer
    assert type(s.consolidate()) is State and type(s.consolidate()[0]) is State
    loaded = TensorDict.load_memmap(tmp_path / "s")
    assert type(loaded) is TensorDict and sorted(loaded.keys()) == ["X", "eta"]  # as the peer
    assert State.from_tensordict(loaded).X.shape == (5, 4)


@pytest.mark.peer
def test_same_fields_and_errors_as_the_peer() -> None:
    tensordict = pytest.importorskip("tensordict")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")

        class PeerState(tensordict.TypedTensorDict):
            eta: Tensor
            X: Tensor
            steps: NotRequired[Tensor]
            scale: Tensor = torch.ones(5)

    for attribute in ("__required_keys__", "__optional_keys__", "__expected_keys__"):
        assert getattr(PeerState, attribute) == getattr(State, attribute)
    messages = []
    for cls in (PeerState, State):
        with pytest.raises(TypeError) as info:
            cls(eta=torch.zeros(5, 3), batch_size=[5])
        messages.append(str(info.value).replace("PeerState", "State"))
    assert messages[0] == messages[1]


class _Shared(TypedTensorDict):
    x: Tensor
    emb: tclass.UnbatchedTensor


def test_from_tensordict_and_from_dict_keep_unbatched_tensors_and_names() -> None:
    """As the peer's: the shared table stays whole through indexing and reshaping (it was
    indexed as a batched tensor: ``o[1].emb`` a scalar), and ``from_dict`` keeps names."""
    td = TensorDict(x=torch.zeros(2), emb=tclass.UnbatchedTensor(torch.ones(3)), batch_size=[2])
    view = _Shared.from_tensordict(td)
    assert view[1].emb.shape == (3,) and view.reshape(1, 2).get("emb").shape == (3,)
    later = TensorDict(x=torch.zeros(2), batch_size=[2])
    seen = _Shared.from_tensordict(later, check=False)
    later.set("emb", tclass.UnbatchedTensor(torch.arange(3.0)))
    assert seen[0].emb.tolist() == [0.0, 1.0, 2.0]
    data = {"x": torch.zeros(2, 3), "emb": tclass.UnbatchedTensor(torch.ones(4))}
    built = _Shared.from_dict(data, batch_size=[2, 3], names=["a", "b"])
    assert type(built) is _Shared and built.names == ["a", "b"]
    assert built[1].emb.shape == (4,) and built[1].names == ["b"]
