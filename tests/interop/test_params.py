"""``TensorDictParams``: a TensorDict that is also an ``nn.Module``, whose tensors are that
module's parameters and buffers (the peer's semantics): float tensors become
``nn.Parameter``s, other tensors buffers; ``parameters()``, ``state_dict``, optimizers and
``module.to()`` see them, under their nested keys joined by ``"."``; the collection API
works on top, and ``from_module`` / ``from_modules(as_module=True)`` / ``to_module`` /
``torch.vmap`` ensembles go through it.
"""

from __future__ import annotations

import copy
import io
import json
import pathlib
import pickle
import re
from typing import Any

import pytest
import torch
from torch import nn

import tclass
from tclass import TensorDict, TensorDictBase, TensorDictParams, errors


def net() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.Linear(4, 2))


class Holder(nn.Module):
    def __init__(self, params: TensorDictParams) -> None:
        super().__init__()
        self.params = params


def test_it_is_a_module_and_a_collection() -> None:
    params = TensorDictParams(TensorDict.from_module(net()))
    assert isinstance(params, nn.Module) and isinstance(params, TensorDictBase)
    assert tclass.is_tensor_collection(params)
    assert params.batch_size == torch.Size([]) and set(params.keys()) == {"0", "1", "2"}
    assert hash(params) == hash(params)  # a module can be a dict key, as every module


def test_float_tensors_become_parameters_and_the_rest_buffers() -> None:
    model = net()
    params = TensorDictParams(TensorDict.from_module(model))
    names = [name for name, _ in params.named_parameters()]
    assert names == [
        "0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean", "1.running_var",
        "2.weight", "2.bias",
    ]  # fmt: skip
    assert [name for name, _ in params.named_buffers()] == ["1.num_batches_tracked"]
    assert params["0", "weight"] is model[0].weight  # the module's own parameter objects
    assert isinstance(params["1", "running_mean"], nn.Parameter)  # a float tensor, as the peer
    assert not isinstance(params["1", "num_batches_tracked"], nn.Parameter)


def test_no_convert_registers_buffers_only() -> None:
    td = TensorDict({"w": torch.zeros(2), "p": nn.Parameter(torch.ones(2))}, [])
    params = TensorDictParams(td, no_convert=True)
    assert [name for name, _ in params.named_parameters()] == ["p"]
    assert [name for name, _ in params.named_buffers()] == ["w"]


def test_constructors() -> None:
    assert set(TensorDictParams({"a": torch.zeros(2)}).keys()) == {"a"}
    assert set(TensorDictParams(a=torch.zeros(2), b=torch.ones(1)).keys()) == {"a", "b"}
    first = TensorDictParams(a=torch.zeros(2))
    again = TensorDictParams(first)
    assert again["a"] is first["a"]  # same parameters, not copies
    with pytest.raises(errors.ArgumentError, match="parameters or keyword entries, not both"):
        TensorDictParams({"a": torch.zeros(2)}, b=torch.zeros(1))
    with pytest.raises(TypeError, match="a dict of named tensors, got int 3"):
        TensorDictParams(3)  # type: ignore[arg-type]


SOURCES = {
    "tensor": (torch.ones(2), "got a Tensor of shape [2]; name it"),
    "str": ("x", "got str 'x'"),
    "list": ([nn.Parameter(torch.ones(2))] * 2, "got a list of 2 items; name each"),
    "module": (nn.Linear(2, 2), "got a Linear module; take its parameters"),
}


@pytest.mark.parametrize("source, words", list(SOURCES.values()), ids=list(SOURCES))
def test_what_holds_no_named_parameters_is_refused_as_the_peer(source: Any, words: str) -> None:
    # lo24a: the peer raises AttributeError (it reads source.items()); tclass raised a
    # TypeError only. NotAMappingError is both, and says what to pass; a dict is taken
    with pytest.raises(errors.NotAMappingError, match=re.escape(words)) as caught:
        TensorDictParams(source)
    assert isinstance(caught.value, AttributeError) and isinstance(caught.value, TypeError)
    params = TensorDictParams({"w": torch.ones(2)})
    assert isinstance(params["w"], nn.Parameter) and params["w"].tolist() == [1.0, 1.0]


class Layer(tclass.TensorClass):
    weight: torch.Tensor
    name: str = "layer"


def test_a_record_is_wrapped_in_place_its_fields_the_parameters() -> None:
    """The peer takes a record too, but registers none of its fields as parameters (an
    optimizer given them would train nothing): here they are the parameters."""
    layer = Layer(weight=torch.ones(3, 2), batch_size=[3])
    params = TensorDictParams(layer)
    assert [name for name, _ in params.named_parameters()] == ["weight"]
    assert type(layer.weight) is nn.Parameter and params["weight"] is layer.weight
    assert params["name"] == "layer"
    (params["weight"] * 2).sum().backward()
    assert layer.weight.grad is not None and (layer.weight.grad == 2).all()
    holder = Holder(params)
    assert [name for name, _ in holder.named_parameters()] == ["params.weight"]


class Block(tclass.TensorClass):
    scale: torch.Tensor
    layer: Layer


def test_a_record_with_a_nested_record_is_wrapped_its_nested_fields_too() -> None:
    """A nested record's fields were walked as a TensorDict's and the wrap failed
    ("'Layer' object has no attribute '_put'"); the peer wraps it."""
    block = Block(
        scale=torch.ones(3), layer=Layer(weight=torch.ones(3, 2), batch_size=[3]), batch_size=[3]
    )
    params = TensorDictParams(block)
    assert [name for name, _ in params.named_parameters()] == ["scale", "layer.weight"]
    assert type(block.layer.weight) is nn.Parameter
    assert params["layer", "weight"] is block.layer.weight and params["layer", "name"] == "layer"
    (params["layer", "weight"] * 3).sum().backward()
    assert (block.layer.weight.grad == 3).all()
    with torch.no_grad():
        total = params.sum(dim=0)  # a Block, as the peer's
        assert type(total) is Block and (total.layer.weight == 3).all()


def test_a_parent_module_sees_them() -> None:
    model = net()
    holder = Holder(TensorDictParams(TensorDict.from_module(model)))
    assert [name for name, _ in holder.named_parameters()][:2] == [
        "params.0.weight",
        "params.0.bias",
    ]
    state = holder.state_dict()
    assert "params.1.num_batches_tracked" in state and "params.2.bias" in state
    assert len(list(holder.parameters())) == 8


def test_state_dict_round_trips_through_a_parent_module() -> None:
    source = Holder(TensorDictParams(TensorDict.from_module(net())))
    target = Holder(TensorDictParams(TensorDict.from_module(net()).clone().zero_()))
    result = target.load_state_dict(source.state_dict())
    assert not result.missing_keys and not result.unexpected_keys
    assert torch.equal(target.params["0", "weight"], source.params["0", "weight"])
    assert list(source.params.state_dict()) == list(
        TensorDict.from_module(net()).state_dict(flatten=True)
    )


def test_an_optimizer_trains_the_entries_in_place() -> None:
    params = TensorDictParams(TensorDict({"w": torch.ones(3)}, []))
    w = params["w"]
    optimizer = torch.optim.SGD(params.parameters(), lr=0.5)
    (params["w"] * 2).sum().backward()
    optimizer.step()
    assert params["w"] is w and torch.allclose(w, torch.zeros(3))
    params.zero_grad()
    assert w.grad is None or not w.grad.any()


def test_module_to_converts_the_entries_and_keeps_them_registered() -> None:
    model = net()
    holder = Holder(TensorDictParams(TensorDict.from_module(model)))
    holder.double()
    params = holder.params
    assert params["0", "weight"].dtype == torch.float64
    assert isinstance(params["0", "weight"], nn.Parameter)
    assert params["1", "num_batches_tracked"].dtype == torch.int64
    assert (
        dict(params.named_buffers())["1.num_batches_tracked"] is params["1", "num_batches_tracked"]
    )
    assert dict(params.named_parameters())["0.weight"] is params["0", "weight"]
    holder.to("meta")
    assert params["2", "bias"].device.type == "meta"


def test_new_entries_are_converted_and_registered() -> None:
    params = TensorDictParams(TensorDict({"w": torch.ones(2)}, []))
    params["x"] = torch.zeros(3)
    params["i"] = torch.zeros(3, dtype=torch.long)
    params["a", "b"] = torch.zeros(2)
    params.set("c", torch.ones(1))
    params.update({"d": torch.ones(1)})
    assert isinstance(params["x"], nn.Parameter) and isinstance(params["a", "b"], nn.Parameter)
    assert not isinstance(params["i"], nn.Parameter)
    assert {name for name, _ in params.named_parameters()} == {"w", "x", "a.b", "c", "d"}
    assert {name for name, _ in params.named_buffers()} == {"i"}
    del params["x"]
    assert "x" not in dict(params.named_parameters())
    params.pop("c")
    assert "c" not in dict(params.named_parameters())


def test_a_nested_collection_set_keeps_its_batch_size() -> None:
    params = TensorDictParams(TensorDict({"w": torch.ones(4, 3)}, [4]))
    params.set("empty", TensorDict({}, [4, 3]))
    params["sub"] = TensorDict({"x": torch.zeros(4, 3, 2)}, [4, 3])
    params.update({"u": TensorDict({"y": torch.zeros(4, 3)}, [4, 3])})
    stack = tclass.lazy_stack([TensorDict({"z": torch.zeros(3)}, [3])] * 4)
    params["lazy"] = stack
    assert params["empty"].batch_size == params["sub"].batch_size == torch.Size([4, 3])
    assert params["u"].batch_size == torch.Size([4, 3])
    assert type(params["lazy"]) is tclass.LazyStackedTensorDict
    assert params["lazy"].batch_size == torch.Size([4, 3])
    assert isinstance(params["sub", "x"], nn.Parameter)
    assert {"sub.x", "u.y"} <= {name for name, _ in params.named_parameters()}


def test_math_over_parameters_and_integer_buffers() -> None:
    # Autograd has no fused kernel for a list mixing both: the ops run leaf by leaf.
    params = TensorDictParams(
        TensorDict({"w": torch.randn(4, 3), "i": torch.arange(12).reshape(4, 3)}, [4])
    )
    clamped = params.clamp(-1, 1)
    assert clamped["w"].requires_grad and clamped["i"].dtype == torch.long
    assert clamped["i"].max() == 1 and (clamped["w"].abs() <= 1).all()
    added = params + 1
    assert torch.equal(added["i"], params["i"] + 1) and added["w"].requires_grad
    added["w"].sum().backward()
    assert torch.equal(params["w"].grad, torch.ones(4, 3))


@pytest.mark.parametrize("kind", ["td", "lazy"])
def test_math_with_parameters_and_integer_buffers_as_the_operand(kind: str) -> None:
    # ``td + params``: the parameters are in the operand's tensor lists, the integer
    # buffer beside them; the fused kernel is refused as above, the ops run leaf by leaf.
    params = TensorDictParams(
        TensorDict({"w": torch.randn(4, 3), "i": torch.arange(12).reshape(4, 3)}, [4])
    )
    plain = params.detach().clone()
    if kind == "lazy":
        plain = tclass.LazyStackedTensorDict.lazy_stack(list(plain.unbind(0)), 0)
    for out, expected in ((plain * params, params["i"] ** 2), (plain - params, 0 * params["i"])):
        assert torch.equal(out["i"], expected) and out["w"].requires_grad
    total = plain + params
    assert torch.equal(total["i"], 2 * params["i"])
    total["w"].sum().backward()
    assert torch.equal(params["w"].grad, torch.ones(4, 3))
    with torch.no_grad():
        assert not (plain + params)["w"].requires_grad


def test_out_arguments_with_parameters_as_the_peer() -> None:
    # gather and logsumexp call torch's out= kernels (as the peer's): they refuse tensors
    # that require grad; where and clamp compute, then write into out (as the peer's).
    params = TensorDictParams(TensorDict({"w": torch.randn(4, 3)}, [4]))
    index = torch.tensor([0, 2])
    out = params.detach()[:2].clone()
    for call in (
        lambda: torch.gather(params, 0, index, out=out),
        lambda: params.logsumexp(0, out=out[0]),
    ):
        with pytest.raises(errors.GradError, match="don't support automatic differentiation"):
            call()
    with torch.no_grad():
        assert torch.gather(params, 0, index, out=out) is out
    assert torch.equal(out["w"], params["w"][index].detach())
    mask = torch.tensor([True, False, True, False])
    into = params.clone()  # parameters: written in place, outside autograd
    weight = into["w"]
    assert torch.where(mask, params, torch.ones_like(params), out=into) is into
    assert (
        into["w"] is weight
        and (weight[~mask] == 1).all()
        and torch.equal(weight[mask], params["w"][mask])
    )
    assert params.clamp(-0.1, 0.1, out=into) is into and into["w"].abs().max() <= 0.1


def test_lock_true_still_takes_writes_through_the_params() -> None:
    td = TensorDict({"w": torch.ones(2)}, [])
    params = TensorDictParams(td, lock=True)
    assert td.is_locked
    params["v"] = torch.zeros(1)
    assert "v" in dict(params.named_parameters())


def test_ops_follow_the_peer() -> None:
    params = tclass.from_modules(nn.Linear(2, 3), nn.Linear(2, 3), as_module=True)
    assert type(params) is TensorDictParams and params.batch_size == torch.Size([2])
    # what keeps the parameters: clone (new ones), to, copy, in-place ops
    clone = params.clone()
    assert type(clone) is TensorDictParams and isinstance(clone["weight"], nn.Parameter)
    assert clone["weight"] is not params["weight"] and torch.equal(
        clone["weight"], params["weight"]
    )
    doubled = params.to(torch.float64)
    assert type(doubled) is TensorDictParams and isinstance(doubled["weight"], nn.Parameter)
    assert doubled["weight"].dtype == torch.float64
    assert params.requires_grad_(False) is params and not params["weight"].requires_grad
    # what reads data out gives plain TensorDicts of tensors, as in the peer
    for result in (
        params[0],
        params.data,
        params.detach(),
        params.to_tensordict(),
        params.apply(lambda t: t + 1),
    ):
        assert type(result) is TensorDict, type(result)
    assert not isinstance(params.data["weight"], nn.Parameter)
    assert [type(member) for member in params.unbind(0)] == [TensorDict, TensorDict]


def test_to_tensordict_copies_stay_in_the_graph() -> None:
    # as the peer's (and a TensorDict's to_tensordict): copies, not parameters, whose
    # loss reaches the parameters' grads; a buffer's copy needs none
    params = TensorDictParams(TensorDict({"w": torch.ones(2), "n": {"b": torch.ones(3)}}, []))
    params["n", "b"].requires_grad_(False)
    copy = params.to_tensordict()
    assert type(copy) is TensorDict and type(copy["w"]) is torch.Tensor
    assert copy["w"].requires_grad and not copy["n", "b"].requires_grad
    assert copy["w"].data_ptr() != params["w"].data_ptr()
    (copy["w"] * 3).sum().backward()
    assert torch.equal(params["w"].grad, torch.full((2,), 3.0))
    assert not params.detach().to_tensordict()["w"].requires_grad


def test_in_place_ops_write_the_parameters() -> None:
    params = TensorDictParams(TensorDict({"w": torch.ones(2)}, []))
    w = params["w"]
    params.zero_()
    assert params["w"] is w and w.sum() == 0
    params.data.apply_(lambda t: t.add_(3))
    assert w.tolist() == [3.0, 3.0]


def test_zero_of_a_collection_holding_params_zeroes_them_outside_autograd() -> None:
    """``zero_`` of a collection holding a TensorDictParams zeroes the parameters as the
    params' own ``zero_`` does (their data, outside autograd); a bare parameter beside
    them is still refused, as torch refuses it (and the peer)."""
    params = TensorDictParams(TensorDict({"w": torch.ones(2), "n": {"v": torch.ones(2, 3)}}, [2]))
    w, v = params["w"], params["n", "v"]
    td = TensorDict({"p": params, "b": torch.ones(2), "m": {"p": params}}, [2])
    assert td.zero_() is td
    assert td["p"] is params and params["w"] is w and params["n", "v"] is v
    assert isinstance(w, nn.Parameter) and w.requires_grad and w.grad_fn is None
    assert w.tolist() == [0.0, 0.0] and v.sum() == 0 and td["b"].sum() == 0
    loss = (params["w"] * torch.arange(2.0)).sum()  # still trains
    loss.backward()
    assert w.grad is not None and w.grad.tolist() == [0.0, 1.0]
    bare = TensorDict(
        {"p": TensorDictParams(TensorDict(w=torch.ones(2))), "q": nn.Parameter(torch.ones(2))}
    )
    with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
        bare.zero_()
    with torch.no_grad():
        bare.zero_()
    assert bare["q"].sum() == 0 and bare["p", "w"].sum() == 0


def test_to_module_swaps_the_parameter_objects_in_and_back() -> None:
    source, target = nn.Linear(3, 4), nn.Linear(3, 4)
    params = TensorDictParams(TensorDict.from_module(source).clone())
    original = target.weight
    with params.to_module(target):
        assert target.weight is params["weight"]
        out = target(torch.ones(1, 3))
    assert target.weight is original
    out.sum().backward()
    assert params["weight"].grad is not None


def test_from_module_as_module() -> None:
    model = net()
    params = TensorDict.from_module(model, as_module=True)
    assert type(params) is TensorDictParams
    assert params["0", "weight"] is model[0].weight
    assert type(tclass.from_module(model, as_module=True)) is TensorDictParams


def test_a_vmap_ensemble_trains_through_it() -> None:
    models = [nn.Linear(3, 2) for _ in range(4)]
    ensemble = tclass.from_modules(*models, as_module=True)
    optimizer = torch.optim.Adam(ensemble.parameters(), lr=0.1)
    base = copy.deepcopy(models[0]).to("meta")

    def run(p: TensorDictBase, x: torch.Tensor) -> torch.Tensor:
        with p.to_module(base):
            return base(x)

    x = torch.randn(5, 3)
    before = ensemble["weight"].detach().clone()
    out = torch.vmap(run, (0, None))(ensemble, x)
    assert out.shape == (4, 5, 2)
    expected = torch.stack([m(x) for m in models])
    torch.testing.assert_close(out, expected)
    out.pow(2).sum().backward()
    optimizer.step()
    assert not torch.equal(ensemble["weight"], before)
    assert ensemble["weight"].grad is not None


def test_deepcopy_pickle_and_torch_save() -> None:
    holder = Holder(TensorDictParams(TensorDict.from_module(net())))
    copied = copy.deepcopy(holder)
    assert isinstance(copied.params, TensorDictParams)
    assert copied.params["0", "weight"] is not holder.params["0", "weight"]
    assert torch.equal(copied.params["0", "weight"], holder.params["0", "weight"])
    assert [n for n, _ in copied.named_parameters()] == [n for n, _ in holder.named_parameters()]
    buffer = io.BytesIO()
    torch.save(holder, buffer)
    buffer.seek(0)
    loaded = torch.load(buffer, weights_only=False)
    assert torch.equal(loaded.params["2", "bias"], holder.params["2", "bias"])
    assert isinstance(pickle.loads(pickle.dumps(holder.params))["2", "bias"], nn.Parameter)


def test_repr_names_the_kind() -> None:
    assert repr(TensorDictParams(a=torch.zeros(2))).startswith("TensorDictParams(")


@pytest.mark.peer
def test_the_same_program_runs_on_the_peer() -> None:
    tensordict = pytest.importorskip("tensordict")
    for lib in (tclass, tensordict):
        model = net()
        params = lib.TensorDictParams(lib.TensorDict.from_module(model))
        holder = Holder(params)
        names = [name for name, _ in holder.named_parameters()]
        assert names[0] == "params.0.weight" and len(names) == 8
        assert list(holder.state_dict())[-1] == "params.2.bias"


# --- the peer's wider surface (issue 19) on TensorDictParams -------------------------------


def _batched_params() -> tuple[TensorDict, TensorDictParams]:
    td = TensorDict({"a": torch.randn(3, 4), "b": {"c": torch.randn(3, 4, 2)}}, [3, 4])
    return td, TensorDictParams(td)


def test_names_are_the_wrapped_tensordicts() -> None:
    td, params = _batched_params()
    assert params.names == [None, None]
    assert params.refine_names("x", "y") is params
    assert params.names == ["x", "y"] and td.names == ["x", "y"] and td["b"].names == ["x", "y"]
    params.rename_(y="z")
    assert td.names == ["x", "z"] and params.unsqueeze(0).names == [None, "x", "z"]
    params.names = None
    assert td.names == [None, None]


def test_writes_at_indices_go_outside_autograd() -> None:
    _, params = _batched_params()
    params.set_at_("a", torch.ones(4), 0)
    params.update_at_({"b": {"c": torch.full((4, 2), 2.0)}}, 1)
    assert isinstance(params["a"], nn.Parameter) and params["a"][0].eq(1).all()
    assert params["b", "c"][1].eq(2).all()


def test_in_place_math_on_parameters_is_refused_before_any_write() -> None:
    """Autograd refuses in-place math on leaf parameters (so does the peer); the error is
    a TclassError naming the entry, raised before any parameter is changed; under
    torch.no_grad() the math runs."""
    _, params = _batched_params()
    before = params.detach().clone()
    params["b", "c"].requires_grad_(False)  # one entry that could take the write
    for op in (lambda: params.add_(1), lambda: params.mul_(2), lambda: params.lerp_(before, 0.5)):
        with pytest.raises(errors.InPlaceWriteError, match="'a'.*requires grad.*no_grad"):
            op()
        assert (params.detach() == before).all()
    with torch.no_grad():
        params.add_(1)
    assert (params.detach() == before + 1).all()
    params.copy_(before)  # writes outside autograd, as set_, zero_ and fill_ (and the peer)
    assert (params.detach() == before).all() and isinstance(params["a"], nn.Parameter)


def test_apply_in_place_writes_through_autograd_as_the_peer() -> None:
    """apply(inplace=True) and named_apply(inplace=True) write with autograd recording, so
    a leaf parameter refuses them (the peer's ValueError, "Failed to update"); under
    torch.no_grad() they write and return the params; apply_() writes the data."""
    _, params = _batched_params()
    before = params.detach().clone()
    calls = (
        lambda: params.apply(lambda t: t + 1, inplace=True),
        lambda: params.apply(lambda t, o: t + o, before, inplace=True, default=None),
        lambda: params.named_apply(lambda k, t: t + 1 if k == "a" else None, inplace=True),
    )
    for call in calls:
        with pytest.raises(errors.InPlaceWriteError, match="Failed to update 'a'.*no_grad"):
            call()
        assert isinstance(errors.InPlaceWriteError("x"), ValueError)
        assert (params.detach() == before).all()
    assert params.apply(lambda t: t, inplace=True) is params  # the tensor itself: no write
    assert params.apply(lambda t: None, inplace=True, filter_empty=True) is None  # as apply
    with torch.no_grad():
        assert params.apply(lambda t: t * 2, inplace=True) is params
    assert (params.detach() == before * 2).all() and isinstance(params["a"], nn.Parameter)
    assert params.apply_(lambda t: t / 2, default=None) is params  # on the data
    assert (params.detach() == before).all() and params["a"].requires_grad


def test_apply_in_place_over_parameters_without_elements_writes_nothing_as_the_peer() -> None:
    """A parameter with no element takes an in-place write of no element (the peer lets
    it pass; autograd would refuse the copy): apply(inplace=True) returns the params,
    the same parameters; one with elements is still refused."""
    params = TensorDictParams(
        TensorDict({"a": torch.zeros(2, 0), "n": {"b": torch.zeros(2, 0, 3)}}, [2, 0])
    )
    weight = params["a"]
    calls = (
        lambda: params.apply(lambda t: t + 1, inplace=True),
        lambda: params.apply(lambda t, o: t + o, params.clone(), inplace=True, default=None),
        lambda: params.named_apply(lambda k, t: t + 1, inplace=True),
    )
    for call in calls:
        assert call() is params
        assert params["a"] is weight and isinstance(params["n", "b"], nn.Parameter)
    with pytest.raises(errors.InPlaceWriteError, match="Failed to update 'a'"):
        TensorDictParams(TensorDict({"a": torch.zeros(2)}, [2])).apply(
            lambda t: t + 1, inplace=True
        )


def test_zero_of_a_parent_zeroes_nested_params_data_as_their_own_zero() -> None:
    """The peer's zero_ calls each nested collection's own zero_, and a TensorDictParams'
    zero_ writes its parameters' data: a TensorDict holding one zeroes it too."""
    _, params = _batched_params()
    weight = params["a"]
    parent = TensorDict({"params": params, "x": torch.ones(params.batch_size)}, params.batch_size)
    assert parent.zero_() is parent
    assert parent["params", "a"] is weight and weight.requires_grad and weight.grad_fn is None
    assert (parent == 0).all() and (params == 0).all()
    with pytest.raises(errors.InPlaceWriteError, match="requires grad"):
        parent.add_(1)  # other in-place math stays refused, as in the peer


def test_in_place_shape_changes_keep_parameters() -> None:
    td, params = _batched_params()
    params.flatten(0, 1, inplace=True)
    assert params.batch_size == torch.Size([12]) and td.batch_size == torch.Size([12])
    assert isinstance(params["a"], nn.Parameter) and params["a"].shape == (12,)
    assert sorted(name for name, _ in params.named_parameters()) == ["a", "b.c"]


def test_lock_and_unlock_are_context_managers() -> None:
    """As the peer's (issue 27): a block restores the lock state on exit."""
    _, params = _batched_params()
    with params.lock_() as inner:
        assert inner is params and params.is_locked and params["b"].is_locked
        with pytest.raises(tclass.errors.LockedError):
            params["new"] = torch.zeros(3, 4)
    assert not params.is_locked and not params["b"].is_locked
    params.lock_()
    with params.unlock_():
        params["new"] = torch.zeros(3, 4)
        assert not params.is_locked
    assert params.is_locked and isinstance(params["new"], nn.Parameter)
    assert sorted(name for name, _ in params.named_parameters()) == ["a", "b.c", "new"]


def test_consolidate_gives_a_locked_tensordict() -> None:
    td, params = _batched_params()
    packed = params.consolidate()
    assert type(packed) is TensorDict and packed.is_locked
    assert (packed == td).all() and not packed["a"].requires_grad


@pytest.mark.peer
def test_the_peer_agrees_on_lock_blocks_and_consolidate() -> None:
    tensordict = pytest.importorskip("tensordict")
    for lib in (tclass, tensordict):
        params = lib.TensorDictParams(lib.TensorDict({"a": torch.randn(3)}, [3]))
        with params.lock_():
            assert params.is_locked
        assert not params.is_locked
        assert type(params.consolidate()) is lib.TensorDict


# --- saving and loading (issue 26): the folder holds a TensorDict, as the peer's ---------


def _bits(tensor: torch.Tensor) -> torch.Tensor:
    """The raw bytes of a tensor (NaN payloads and -0.0 compared exactly)."""
    return tensor.detach().contiguous().view(-1).view(torch.uint8)


def _trained_params() -> TensorDictParams:
    """Parameters and buffers whose values only a bit-exact copy keeps."""
    params = TensorDictParams(TensorDict.from_module(net()))
    with torch.no_grad():
        weight = params["0", "weight"]
        weight[0, 0] = -0.0
        weight[0, 1] = float("nan")
        weight.view(-1).view(torch.int32)[2] = 0x7FC01234  # a NaN with a payload
        weight[1, 0] = 1e-42  # a subnormal
    params["1", "num_batches_tracked"].fill_(7)
    return params


def _same_bits(a: TensorDictBase, b: TensorDictBase) -> bool:
    keys = sorted(a.keys(include_nested=True, leaves_only=True))
    assert keys == sorted(b.keys(include_nested=True, leaves_only=True))
    return all(a[k].dtype == b[k].dtype and torch.equal(_bits(a[k]), _bits(b[k])) for k in keys)


def _kinds(params: TensorDictParams) -> tuple[list[str], list[str]]:
    return [n for n, _ in params.named_parameters()], [n for n, _ in params.named_buffers()]


@pytest.mark.parametrize(
    "save",
    [
        lambda p, path: p.memmap(path),
        lambda p, path: p.save(path),
        lambda p, path: p.memmap(path, num_threads=2),
        lambda p, path: tclass.save(p, path),
        lambda p, path: p.save(path.with_suffix(".tdz")),
    ],
    ids=["memmap", "save", "threads", "tclass.save", "tdz"],
)
def test_a_saved_copy_is_a_plain_tensordict_that_loads_into_new_parameters(
    tmp_path: pathlib.Path, save: Any
) -> None:
    params = _trained_params()
    path = tmp_path / "ckpt"
    saved = save(params, path)
    assert type(saved) is TensorDict  # as the peer: the data, not the module
    assert not any(leaf.requires_grad for leaf in saved.values(True, True))
    assert isinstance(params["0", "weight"], nn.Parameter)  # self is left as it is
    where = path.with_suffix(".tdz") if not path.exists() else path
    loaded = tclass.load_memmap(where)
    assert type(loaded) is TensorDict and _same_bits(loaded, params)
    wrapped = TensorDictParams(loaded)  # a MemoryMappedTensor leaf becomes a Parameter
    assert _kinds(wrapped) == _kinds(params)
    assert _same_bits(wrapped, params)
    assert all(p.requires_grad for p in wrapped.parameters())
    assert Holder(wrapped).state_dict().keys() == Holder(params).state_dict().keys()


@pytest.mark.parametrize("where", ["nested", "stacked"])
def test_parameters_inside_a_saved_collection_are_saved_as_a_tensordict(
    tmp_path: pathlib.Path, where: str
) -> None:
    """A TensorDictParams nested in a TensorDict or a member of a lazy stack is saved as
    the TensorDict of its data, as the peer saves (and loads) it (fz40c: program
    5,000,977 of ``--families records,combine --length 6``)."""
    data = TensorDict({"d": torch.arange(2.0), "m": {"b": torch.ones(2, 3)}}, [2])
    params = TensorDictParams(data, no_convert=True)
    if where == "nested":
        holder: Any = TensorDict({"p": params}, [2])
        members = [holder["p"]]
    else:
        holder = tclass.lazy_stack([params, params.clone()], 0)
        members = list(holder.tensordicts)
    saved = holder.memmap(tmp_path / "w")
    loaded = tclass.load_memmap(tmp_path / "w")
    for copy_ in (saved, loaded):
        parts = [copy_["p"]] if where == "nested" else list(copy_.tensordicts)
        assert [type(part) for part in parts] == [TensorDict] * len(members)
        assert all((part == member.to_tensordict()).all() for part, member in zip(parts, members))
        assert all(part["m", "b"].shape == (2, 3) for part in parts)
    assert isinstance(members[0]["d"], torch.Tensor)  # what was saved is left as it was


def test_the_saved_meta_json_records_a_tensordict(tmp_path: pathlib.Path) -> None:
    _trained_params().memmap(tmp_path / "ckpt")
    meta = json.loads((tmp_path / "ckpt" / "meta.json").read_text())
    assert meta["_type"] == "<class 'tensordict._td.TensorDict'>"


def test_parameters_wrapping_a_checkpoint_train_in_its_files(tmp_path: pathlib.Path) -> None:
    _trained_params().memmap(tmp_path / "ckpt")
    params = TensorDictParams(tclass.load_memmap(tmp_path / "ckpt"))
    before = params["2", "weight"].detach().clone()
    params["2", "weight"].sum().backward()
    torch.optim.SGD(params.parameters(), lr=1.0).step()
    on_disk = tclass.load_memmap(tmp_path / "ckpt")["2", "weight"]
    assert torch.equal(on_disk, before - 1)  # the default mode writes through, as the peer


def test_no_convert_and_requires_grad_after_a_round_trip(tmp_path: pathlib.Path) -> None:
    params = _trained_params()
    params["0", "weight"].requires_grad_(False)
    params.memmap(tmp_path / "ckpt")
    loaded = tclass.load_memmap(tmp_path / "ckpt")
    # as the peer: the folder keeps data only, the wrap decides the kinds again
    assert all(p.requires_grad for p in TensorDictParams(loaded).parameters())
    buffers_only = TensorDictParams(tclass.load_memmap(tmp_path / "ckpt"), no_convert=True)
    assert _kinds(buffers_only)[0] == [] and len(_kinds(buffers_only)[1]) == 9
    assert _same_bits(buffers_only, params)


def test_memmap_like_allocates_zeros_of_the_same_layout(tmp_path: pathlib.Path) -> None:
    params = _trained_params()
    like = params.memmap_like(tmp_path / "ckpt")
    assert type(like) is TensorDict and like["1", "num_batches_tracked"].item() == 0
    loaded = tclass.load_memmap(tmp_path / "ckpt")
    assert loaded["0", "weight"].shape == (4, 3) and not loaded["0", "weight"].any()


def test_memmap_in_place_keeps_the_parameter_objects(tmp_path: pathlib.Path) -> None:
    params = _trained_params()
    params["2", "bias"].requires_grad_(False)
    weight, expected = params["0", "weight"], params.to_tensordict()
    optimizer = torch.optim.SGD(params.parameters(), lr=1.0)
    assert params.memmap_(tmp_path / "ckpt") is params
    assert params.is_locked and params["0", "weight"] is weight
    assert isinstance(weight, nn.Parameter) and not params["2", "bias"].requires_grad
    assert _same_bits(params, expected) and _kinds(params) == _kinds(_trained_params())
    params["2", "weight"].sum().backward()
    optimizer.step()  # trains the same objects, in the files
    on_disk = tclass.load_memmap(tmp_path / "ckpt")
    assert torch.equal(on_disk["2", "weight"], expected["2", "weight"] - 1)
    with pytest.raises(tclass.errors.UnsupportedError, match="return_early"):
        _trained_params().memmap_(tmp_path / "x", num_threads=2, return_early=True)


def test_load_memmap_in_place_copies_into_the_registered_parameters(
    tmp_path: pathlib.Path,
) -> None:
    saved = _trained_params()
    saved.memmap(tmp_path / "ckpt")
    fresh = TensorDictParams(TensorDict.from_module(nn.Sequential(nn.Linear(3, 4))))
    fresh["0", "weight"].requires_grad_(False)
    weight = fresh["0", "weight"]
    assert fresh.load_memmap_(tmp_path / "ckpt") is fresh
    assert fresh["0", "weight"] is weight and not weight.requires_grad  # copied in place
    assert _same_bits(fresh, saved) and _kinds(fresh) == _kinds(saved)  # new keys converted
    assert isinstance(fresh["2", "weight"], nn.Parameter)


def test_a_checkpoint_loads_into_a_fresh_model(tmp_path: pathlib.Path) -> None:
    saved = _trained_params()
    saved.memmap(tmp_path / "ckpt")
    model = net()
    tclass.load_memmap(tmp_path / "ckpt", mode="r").to_module(model)
    assert isinstance(model[0].weight, nn.Parameter) and model[0].weight.requires_grad
    assert _same_bits(TensorDict.from_module(model), saved)
    fresh = TensorDictParams(TensorDict.from_module(net()))
    weight = fresh["0", "weight"]
    fresh.update_(tclass.load_memmap(tmp_path / "ckpt"))
    assert fresh["0", "weight"] is weight and _same_bits(fresh, saved)


@pytest.mark.peer
def test_checkpoints_cross_between_the_libraries(tmp_path: pathlib.Path) -> None:
    tensordict = pytest.importorskip("tensordict")
    ours = _trained_params()
    theirs = tensordict.TensorDictParams(tensordict.TensorDict.from_module(net()))
    theirs.update_(ours.to_tensordict().to_dict())
    theirs.memmap(tmp_path / "peer")
    theirs.save(tmp_path / "peer.tdz")
    for path in (tmp_path / "peer", tmp_path / "peer.tdz"):
        wrapped = TensorDictParams(tclass.load_memmap(path))
        assert _same_bits(wrapped, ours) and _kinds(wrapped) == _kinds(ours)
    ours.memmap(tmp_path / "ours")
    ours.save(tmp_path / "ours.tdz")
    for path in (tmp_path / "ours", tmp_path / "ours.tdz"):
        loaded = tensordict.load_memmap(path)
        assert type(loaded) is tensordict.TensorDict
        for key in ours.keys(include_nested=True, leaves_only=True):
            assert torch.equal(_bits(loaded[key]), _bits(ours[key]))
        # the peer cannot wrap its maps; its clone of an archive's TensorDict loses -0.0
        wrapped = tensordict.TensorDictParams(loaded.clone())
        assert [n for n, _ in wrapped.named_parameters()] == _kinds(ours)[0]


def test_auto_device_rename_and_consolidation() -> None:
    """As the peer's: ``auto_device_`` records the parameters' device (nested levels
    too); ``rename`` names the copy's dims and leaves this one's nested levels unnamed;
    parameters are never consolidated."""
    params = TensorDictParams(TensorDict({"w": torch.zeros(3, 4), "n": {"b": torch.zeros(3)}}, [3]))
    assert params.device is None and params.auto_device_() is params
    assert params.device == torch.device("cpu") and params["n"].device == torch.device("cpu")
    renamed = params.rename("t")
    assert renamed.names == ["t"] and renamed["n"].names == ["t"]
    assert params.names == [None] and params["n"].names == [None]
    assert renamed["w"] is params["w"]
    assert params.is_consolidated() is False


def test_with_blocks_write_into_the_parameters() -> None:
    """``with params.unlock_(): params.set_(...)`` and an assignment in a rearranged
    view's block write into the parameters; ``set_`` into the view's leaves is refused
    by autograd (the peer raises too), with the way out in the message."""
    params = TensorDictParams(TensorDict({"w": torch.zeros(3, 4)}, [3, 4]))
    weight = params["w"]
    with params.unlock_():
        params.set_("w", params["w"] + 1)
    assert params["w"] is weight
    with params.permute(1, 0) as view:
        with pytest.raises(errors.InPlaceWriteError, match="torch.no_grad"):
            view.set_("w", view["w"] + 1)
        view["w"] = view["w"] + 1
    assert bool((weight == 1).all()) and bool((params["w"] == 2).all())
    assert list(params.parameters()) == [params["w"]]  # registered, as the peer's


@pytest.mark.parametrize("join", [torch.stack, torch.cat])
def test_stack_and_cat_with_a_tensordict_give_a_tensordict(join: Any) -> None:
    # As the peer: the parameters' values joined, in a TensorDict, gradients flowing back.
    params = TensorDictParams(TensorDict({"w": torch.ones(3, 2)}, [3]))
    plain = TensorDict({"w": torch.zeros(3, 2)}, [3])
    for members in ([params, plain], [plain, params], [params, params]):
        out = join(members, 0)
        assert type(out) is TensorDict
        want = join([m["w"].detach() for m in members], 0)
        torch.testing.assert_close(out["w"].detach(), want)
    out = join([params, plain], 0)
    out["w"].sum().backward()
    assert params["w"].grad is not None
    torch.testing.assert_close(params["w"].grad, torch.ones(3, 2))


def test_get_of_a_key_through_a_tensor_raises() -> None:
    params = TensorDictParams(TensorDict({"w": torch.ones(3, 2)}, [3]))
    with pytest.raises(errors.KeyThroughTensorError, match="'w'.* is a tensor"):
        params.get(("w", "x"))
    assert params.get(("w", "x"), 5) == 5 and params.get("missing") is None


def test_a_locked_write_names_the_key() -> None:
    params = TensorDictParams(TensorDict({"w": torch.ones(3, 2)}, [3])).lock_()
    with pytest.raises(errors.LockedError, match="'new'.*locked TensorDict \\(a TensorDictParams"):
        params.set("new", torch.zeros(3))
    with pytest.raises(
        errors.LockedError, match=r"\['new'\].*locked TensorDict \(a TensorDictParams"
    ):
        params.update({"new": torch.zeros(3)})
    # the peer's words first (its tests match them), as for a TensorDict
    with pytest.raises(
        errors.LockedError, match="Cannot modify locked TensorDict \\(a TensorDictParams"
    ):
        params.set_non_tensor(("this", "will"), "fail")


def test_to_and_cpu_keep_the_dim_names() -> None:
    names = ["i", "j"]
    inner = TensorDict({"w": torch.randn(2, 3)}, [2, 3], names=names)
    params = TensorDictParams(
        TensorDict({"w": torch.randn(2, 3, 4), "n": inner}, [2, 3], names=names)
    )
    for moved in (params.to(torch.float64), params.cpu(), params.to(dtype=torch.float16)):
        assert isinstance(moved, TensorDictParams)
        assert moved.names == names and moved["n"].names == names
        assert isinstance(moved["w"], nn.Parameter)


def test_type_gives_an_unlocked_tensordict_as_a_tensordicts_type() -> None:
    td = TensorDict({"w": torch.randn(3), "n": {"b": torch.randn(3)}}, [3])
    params = TensorDictParams(td.clone()).lock_()
    cast = params.type(torch.uint8)
    plain = td.clone().lock_().type(torch.uint8)
    assert type(cast) is TensorDict and not cast.is_locked and not cast["n"].is_locked
    assert cast.is_locked == plain.is_locked
    assert cast["w"].dtype == torch.uint8 and not isinstance(cast["w"], nn.Parameter)


def test_an_index_that_takes_all_of_it_gives_it_back() -> None:
    params = TensorDictParams(TensorDict({"w": torch.randn(2, 3)}, [2]))
    assert params[...] is params
    rows = params[1:]
    assert type(rows) is TensorDict and rows.batch_size == torch.Size([1])


def test_a_lazy_stack_is_refused_and_a_nested_one_held_as_set_holds_it() -> None:
    stack = tclass.lazy_stack([TensorDict({"w": torch.randn(3)}, [3]) for _ in range(2)])
    with pytest.raises(errors.UnsupportedError, match="lazy stack") as raised:
        TensorDictParams(stack)  # its entries are stacked copies: nothing to share
    assert isinstance(raised.value, RuntimeError)  # the peer's builtin
    assert ".to_tensordict()" in str(raised.value)
    assert isinstance(TensorDictParams(stack.to_tensordict())["w"], nn.Parameter)
    params = TensorDictParams(TensorDict({"n": stack, "b": torch.randn(2)}, [2]))
    assert type(params["n"]) is tclass.LazyStackedTensorDict
    assert all(isinstance(member["w"], nn.Parameter) for member in params["n"].tensordicts)
    assert isinstance(params["b"], nn.Parameter)
    assert torch.equal(params["n", "w"], stack["w"])


def test_params_of_a_file_hold_its_entries_read_into_memory(tmp_path: pathlib.Path) -> None:
    pytest.importorskip("h5py")
    nested = TensorDict({"i": torch.arange(2)}, batch_size=[2])
    td = TensorDict({"w": torch.ones(2, 3), "n": nested}, batch_size=[2], names=["b"])
    ptd = td.to_h5(tmp_path / "p.h5")
    params = TensorDictParams(ptd)
    assert params.batch_size == torch.Size([2]) and params.names == ["b"]
    assert list(dict(params.named_parameters())) == ["w"]  # (the peer's registers none)
    assert list(dict(params.named_buffers())) == ["n.i"]
    params["w"].data.zero_()  # parameters live in memory: the file keeps its values
    assert torch.equal(ptd["w"], torch.ones(2, 3))
    view = TensorDictParams(ptd[1:])
    assert view.batch_size == torch.Size([1]) and isinstance(view["w"], nn.Parameter)
    # contiguous as the tensors it holds (the file is not: the peer's answers for it)
    assert not ptd.is_contiguous() and params.is_contiguous()
    ptd.close()


def test_params_of_a_locked_file_keep_its_lock_on_their_data(tmp_path: pathlib.Path) -> None:
    """The peer's ``.data`` of a locked file's TensorDictParams is the locked file; tclass's
    copy in memory is locked too, and its own lock stays off (as for a locked TensorDict)."""
    pytest.importorskip("h5py")
    td = TensorDict({"w": torch.ones(2, 3), "n": {"i": torch.arange(2)}}, batch_size=[2])
    ptd = td.to_h5(tmp_path / "p.h5")
    assert not TensorDictParams(ptd).data.is_locked
    ptd.lock_()
    params = TensorDictParams(ptd)
    assert params.data.is_locked and params["n"].is_locked and not params.is_locked
    params["z"] = torch.zeros(2)  # as TensorDictParams(locked TensorDict) in both
    assert isinstance(params["z"], nn.Parameter) and "z" not in ptd.keys()
    ptd.close()


@pytest.mark.parametrize("recurse", [True, False])
def test_tensors_set_into_a_clone_are_buffers_as_the_peers(recurse: bool) -> None:
    """The peer's clone (and ``clone(False)``) keeps tensors set into it later as they
    are, registered as buffers; the original makes a float tensor a parameter."""
    params = TensorDictParams(TensorDict({"a": torch.zeros(2)}, [2]))
    clone = params.clone(recurse)
    clone["zz"] = torch.ones(2)
    assert not isinstance(clone["zz"], nn.Parameter) and isinstance(clone["a"], nn.Parameter)
    assert dict(clone.named_parameters()).keys() == {"a"}
    assert dict(clone.named_buffers()).keys() == {"zz"}
    params["zz"] = torch.ones(2)
    assert isinstance(params["zz"], nn.Parameter)
    assert dict(params.named_parameters()).keys() == {"a", "zz"}


def test_a_nested_entry_reads_as_an_attribute_sharing_its_tensors() -> None:
    inner = TensorDict({"b": torch.zeros(3), "q": {"z": torch.ones(3)}}, [3])
    td = TensorDict({"m": inner, "d": torch.zeros(3, 1), "s": "text"}, [3])
    params = TensorDictParams(td)
    nested = params.m  # the peer's TensorDictParams(params["m"]), over the same TensorDict
    assert type(nested) is TensorDictParams and nested.batch_size == torch.Size([3])
    assert nested["b"] is td["m", "b"] and isinstance(nested["b"], nn.Parameter)
    assert type(nested.q) is TensorDictParams and nested.q["z"] is td["m", "q", "z"]
    nested["new"] = torch.ones(3)
    assert "new" in td["m"].keys()  # writes reach the wrapped TensorDict
    assert isinstance(params.d, nn.Parameter)  # a leaf is the module's parameter
    for missing in ("zz", "s", "_m"):  # no entry, not a collection, a private name
        with pytest.raises(AttributeError, match=missing):
            getattr(params, missing)


@pytest.mark.parametrize("entries", [{}, {"b": torch.zeros(2)}], ids=["empty", "leaf"])
def test_a_nested_entry_of_locked_params_reads_as_an_attribute(entries: dict[str, Any]) -> None:
    # the peer's params.m unlocks m to convert it, which its lock refuses ("Cannot unlock a
    # tensordict that is part of a locked graph"); tclass reads it, as params["m"] is read
    params = TensorDictParams(TensorDict({"m": TensorDict(entries, [])}, [])).lock_()
    nested = params.m
    assert type(nested) is TensorDictParams and nested.keys() == params["m"].keys()
    assert all(nested[key] is params["m", key] for key in entries)
    with pytest.raises(errors.LockedError):  # the lock of params still holds below it
        nested["new"] = torch.ones(1)
    assert "new" not in params["m"].keys()


def test_a_lazy_stack_of_params_saves_what_they_wrap(tmp_path: pathlib.Path) -> None:
    # as the peer, and as params.memmap() saves its TensorDict: each member a TensorDict
    params = TensorDictParams(TensorDict({"a": torch.arange(2.0), "n": {"b": torch.ones(1)}}))
    stack = tclass.lazy_stack([params, params.clone()], 0)
    saved = stack.memmap(tmp_path / "s")
    assert [type(member) for member in saved.tensordicts] == [TensorDict, TensorDict]
    assert all(isinstance(m["a"], tclass.MemoryMappedTensor) for m in saved.tensordicts)
    loaded = tclass.load_memmap(tmp_path / "s")
    assert loaded["a"].tolist() == [[0.0, 1.0]] * 2 and loaded["n", "b"].tolist() == [[1.0]] * 2
    like = stack.memmap_like(tmp_path / "like")
    assert like["a"].shape == (2, 2) and type(like.tensordicts[0]) is TensorDict


def test_tensor_split_of_params_gives_tensordicts_as_split_does() -> None:
    # one section of all of it too (params[:] is params itself, as the peer's)
    params = TensorDictParams(TensorDict({"a": torch.zeros(2, 4)}, [2, 4]), no_convert=True)
    for pieces in (params.tensor_split([]), params.tensor_split([], 1), params.tensor_split([1])):
        assert all(type(piece) is TensorDict for piece in pieces)
    (whole,) = params.tensor_split(1, 1)
    assert whole.batch_size == (2, 4) and whole["a"] is not params["a"]
    assert whole["a"].data_ptr() == params["a"].data_ptr()  # a view, as split's
    assert type(params.split(4, 1)[0]) is TensorDict and params[:] is params
