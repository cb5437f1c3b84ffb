"""A ``TensorDictParams`` remembers which of its entries are parameter slots, as
``nn.Module``'s ``_parameters`` does: ``to_module`` and ``torch.func.functional_call``
put tensors that are no ``nn.Parameter`` (ones requiring grad) into its parameters'
slots, and the module kept listing them by their type, as buffers: missing from
``named_parameters()`` (an optimizer built from ``net.parameters()`` skipped them), and
a parameter written into a buffer's slot was listed as a parameter. The peer lists the
slot's kind."""

from __future__ import annotations

import copy
import io
from typing import Any

import pytest
import torch
from torch import nn

from tclass import TensorDict, TensorDictParams
from tclass._interop import _param_leaves

_PARAMS = ["extra.inner.b", "extra.w", "lin.bias", "lin.weight"]


class _Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(2, 2)
        self.extra = TensorDictParams(
            TensorDict(
                w=torch.ones(3),
                cnt=torch.zeros(3, dtype=torch.long),
                inner=TensorDict(b=torch.zeros(2)),
            )
        )


def _kinds(net: nn.Module) -> tuple[list[str], list[str]]:
    return sorted(n for n, _ in net.named_parameters()), sorted(n for n, _ in net.named_buffers())


def _grad_copy(net: nn.Module) -> TensorDict:
    return TensorDict.from_module(net).data.clone().exclude(("extra", "cnt")).requires_grad_()


def test_to_module_keeps_the_parameter_slots_of_a_tensordictparams() -> None:
    net = _Net()
    params = _grad_copy(net)
    params.to_module(net)
    assert net.extra["w"] is params["extra", "w"] and not isinstance(net.extra["w"], nn.Parameter)
    assert _kinds(net) == (_PARAMS, ["extra.cnt"])
    assert sorted(net.state_dict()) == sorted([*_PARAMS, "extra.cnt"])
    optimizer = torch.optim.SGD(net.parameters(), lr=1.0)
    (net.extra["w"].sum() + net.extra["inner", "b"].sum()).backward()
    optimizer.step()
    assert torch.equal(params["extra", "w"].detach(), torch.zeros(3))
    assert torch.equal(params["extra", "inner", "b"].detach(), torch.full((2,), -1.0))


def test_inside_the_with_block_and_back() -> None:
    net = _Net()
    before = net.extra["w"]
    params = _grad_copy(net)
    with params.to_module(net):
        assert _kinds(net) == (_PARAMS, ["extra.cnt"])
        assert sorted(net.extra._parameters) == ["inner.b", "w"]
    assert net.extra["w"] is before and isinstance(before, nn.Parameter)
    assert _kinds(net) == (_PARAMS, ["extra.cnt"])
    assert not net.extra._slots.held  # the parameters back: nothing left to remember


def test_a_parameter_put_in_a_buffer_slot_stays_a_buffer() -> None:
    net = _Net()
    params = TensorDict.from_module(net).data.clone()
    params["extra", "cnt"] = nn.Parameter(torch.zeros(3))
    with params.to_module(net):
        assert _kinds(net) == (_PARAMS, ["extra.cnt"])
        assert isinstance(net.extra["cnt"], nn.Parameter)
    assert _kinds(net) == (_PARAMS, ["extra.cnt"])


def test_functional_call_nested_and_buffer_slots() -> None:
    net = _Net()
    seen: list[tuple[list[str], list[str]]] = []
    values: list[torch.Tensor] = []

    def forward() -> torch.Tensor:
        seen.append(_kinds(net))
        values.append(net.extra["inner", "b"].detach().clone())
        return torch.zeros(())

    net.forward = forward  # type: ignore[method-assign]
    given = {
        "extra.inner.b": torch.full((2,), 5.0, requires_grad=True),
        "extra.cnt": torch.ones(3, requires_grad=True),
    }
    torch.func.functional_call(net, given, ())
    assert seen == [(_PARAMS, ["extra.cnt"])]
    assert torch.equal(values[0], torch.full((2,), 5.0))
    assert _kinds(net) == (_PARAMS, ["extra.cnt"])
    assert isinstance(net.extra["inner", "b"], nn.Parameter)
    assert torch.equal(net.extra["inner", "b"].detach(), torch.zeros(2))


def test_a_new_tensor_set_is_classified_by_its_type_as_the_peer() -> None:
    net = _Net()
    _grad_copy(net).to_module(net)
    copied = net.extra.clone(recurse=False)  # no_convert: what is set is kept as it is
    assert sorted(copied._parameters) == ["inner.b", "w"]
    copied.set("w", torch.ones(3, requires_grad=True))
    assert sorted(copied._parameters) == ["inner.b"]
    assert sorted(copied._buffers) == ["cnt", "w"]
    net.extra["w"] = torch.ones(3)  # converted: a new parameter
    assert isinstance(net.extra["w"], nn.Parameter)
    assert _kinds(net) == (_PARAMS, ["extra.cnt"])


def test_copies_keep_the_slot_kinds() -> None:
    net = _Net()
    params = _grad_copy(net)
    params.to_module(net)
    buffer = io.BytesIO()
    torch.save(net, buffer)
    buffer.seek(0)
    loaded = torch.load(buffer, weights_only=False)
    assert _kinds(loaded) == (_PARAMS, ["extra.cnt"])
    assert loaded.extra["w"] is not params["extra", "w"]
    deep = copy.deepcopy(net)
    assert _kinds(deep) == (_PARAMS, ["extra.cnt"])
    assert isinstance(deep.extra["w"], nn.Parameter)  # (a clone: new parameters)
    assert torch.equal(deep.extra["w"].detach(), torch.ones(3))


def test_named_parameters_walks_the_leaves_once() -> None:
    """``nn.Module.named_parameters`` lists ``_parameters.items()``: one walk of the
    TensorDictParams' leaves, not one per key (200 entries took 16 ms, now 0.13)."""

    leaves: dict[str, torch.Tensor] = {
        f"k{i}": nn.Parameter(torch.full((2,), float(i))) for i in range(50)
    }
    params = TensorDictParams(TensorDict({**leaves, "buf": torch.zeros(2)}), no_convert=True)
    walks = []
    real = _param_leaves.tensor_leaves

    def counted(*args: object, **kwargs: object) -> object:
        walks.append(1)
        return real(*args, **kwargs)  # type: ignore[arg-type]

    patch = pytest.MonkeyPatch()
    patch.setattr(_param_leaves, "tensor_leaves", counted)
    try:
        names = [name for name, _ in params.named_parameters()]
        buffers = dict(params.named_buffers())
    finally:
        patch.undo()
    assert names == [f"k{i}" for i in range(50)] and list(buffers) == ["buf"]
    assert len(walks) <= 4  # (before: one walk per key, 50 and more)
    assert [float(v[0].detach()) for v in params._parameters.values()] == [
        float(i) for i in range(50)
    ]


# --- to() / cpu() / module.to() consult the slots (inv21e) ----------------------------


def _extra_kinds(params: TensorDictParams) -> tuple[list[str], list[str]]:
    return sorted(n for n, _ in params.named_parameters()), sorted(
        n for n, _ in params.named_buffers()
    )


@pytest.mark.parametrize(
    "move",
    [
        lambda p: p.to(torch.float64),
        lambda p: p.to(dtype=torch.float64),
        lambda p: p.to("cpu", torch.float64),
        lambda p: p.to(torch.zeros((), dtype=torch.float64)),
    ],
)
def test_to_a_dtype_gives_each_leaf_its_slots_kind(move: Any) -> None:
    """A plain tensor ``to_module`` put in a parameter's slot is a parameter of the
    result (it was a buffer: listed by its type, out of ``named_parameters()``, so an
    optimizer skipped it), requiring grad as it did; a parameter in a buffer's slot a
    buffer, as the source's ``nn.Module`` views list them."""
    net = _Net()
    params = TensorDict.from_module(net).data.clone()
    params["extra", "w"] = torch.ones(3, requires_grad=True)
    params["extra", "cnt"] = nn.Parameter(torch.zeros(3))
    params.to_module(net)
    assert _extra_kinds(net.extra) == (["inner.b", "w"], ["cnt"])
    moved = move(net.extra)
    assert isinstance(moved, TensorDictParams) and moved is not net.extra
    assert _extra_kinds(moved) == (["inner.b", "w"], ["cnt"])
    assert isinstance(moved["w"], nn.Parameter) and moved["w"].requires_grad
    assert moved["w"].dtype == moved["cnt"].dtype == torch.float64
    assert not isinstance(moved["cnt"], nn.Parameter)
    assert torch.equal(moved["w"].detach(), torch.ones(3, dtype=torch.float64))


def test_to_a_device_keeps_the_kinds_of_the_leaves_it_keeps() -> None:
    """``cpu()`` of parameters already there: the same tensors, listed by their slots'
    kinds (the plain tensor in a parameter's slot was listed as a buffer)."""
    net = _Net()
    params = TensorDict.from_module(net).data.clone()
    params["extra", "w"] = torch.ones(3, requires_grad=True)
    params["extra", "cnt"] = nn.Parameter(torch.zeros(3))
    params.to_module(net)
    for moved in (net.extra.cpu(), net.extra.to("cpu")):
        assert moved["w"] is params["extra", "w"]
        assert _extra_kinds(moved) == (["inner.b", "w"], ["cnt"])


def test_module_to_a_dtype_keeps_the_slots() -> None:
    net = _Net()
    _grad_copy(net).to_module(net)
    net.to(torch.float64)
    assert _kinds(net) == (_PARAMS, ["extra.cnt"])
    assert net.extra["w"].dtype == torch.float64 and net.extra["w"].requires_grad
    assert net.extra["cnt"].dtype == torch.long  # an integer buffer: not cast
    net.double().float()
    assert _kinds(net) == (_PARAMS, ["extra.cnt"]) and net.extra["w"].dtype == torch.float32


@pytest.mark.parametrize("keys_to_update", [None, [("n", "c")]])
def test_nested_update_keeps_the_parameter_slot(keys_to_update: Any) -> None:
    """README (TensorDictParams registers what it holds): ``update`` of a nested entry
    keeps its parameter slot, as of a top-level one; the peer's nested update puts the
    plain tensor in, outside ``parameters()`` (nu26a params_update_nested_type)."""
    p = TensorDictParams(
        TensorDict(a=torch.ones(2), n=TensorDict(c=torch.ones(2), batch_size=[2]), batch_size=[2])
    )
    p.update({"a": torch.zeros(2), "n": {"c": torch.zeros(2)}}, keys_to_update=keys_to_update)
    assert isinstance(p["n", "c"], nn.Parameter)
    assert torch.equal(p["n", "c"].detach(), torch.zeros(2))
    assert sorted(name for name, _ in p.named_parameters()) == ["a", "n.c"]
