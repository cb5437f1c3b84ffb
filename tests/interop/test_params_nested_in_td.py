"""A TensorDictParams held by a module or nested in a TensorDict keeps what it is:
``module.to(dtype)`` keeps its device (``None`` stays ``None``), and a parent's
``update`` (a shape op's ``with`` block writes back through it) merges into it instead of
replacing it with a plain TensorDict, as the peer does (nu21g)."""

from __future__ import annotations

import torch
from torch import nn

import tclass


def _data() -> tclass.TensorDict:
    return tclass.TensorDict(
        {"a": torch.arange(12.0).reshape(3, 4), "b": torch.ones(3, 4, dtype=torch.long)},
        batch_size=[3, 4],
    )


def test_module_to_dtype_keeps_the_device_none() -> None:
    holder = nn.Module()
    holder.params = tclass.TensorDictParams(_data())
    holder.to(torch.float64)
    params = holder.params
    assert params.device is None  # the peer's: a dtype conversion moves nothing
    assert params["a"].dtype == torch.float64 and isinstance(params["a"], nn.Parameter)
    assert params["b"].dtype == torch.long
    assert [name for name, _ in holder.named_parameters()] == ["params.a"]


def test_module_to_dtype_keeps_an_explicit_device() -> None:
    holder = nn.Module()
    holder.params = tclass.TensorDictParams(_data().to("cpu"))
    holder.double()
    assert holder.params.device == torch.device("cpu")


def test_update_of_a_parent_merges_into_the_params() -> None:
    params = tclass.TensorDictParams(_data())
    outer = tclass.TensorDict({"x": torch.zeros(3, 4), "n": params}, batch_size=[3, 4])
    outer.update(tclass.TensorDict({"x": torch.ones(3, 4), "n": _data() + 1}, [3, 4]))
    assert outer["n"] is params
    assert isinstance(params["a"], nn.Parameter)
    torch.testing.assert_close(params["a"].detach(), torch.arange(12.0).reshape(3, 4) + 1)
    torch.testing.assert_close(outer["x"], torch.ones(3, 4))


def test_a_shape_op_block_keeps_the_params_of_its_source() -> None:
    params = tclass.TensorDictParams(_data())
    outer = tclass.TensorDict({"x": torch.zeros(3, 4), "n": params}, batch_size=[3, 4])
    with outer.permute(1, 0) as permuted:
        permuted["x"] = permuted["x"] + 2
    assert outer["n"] is params
    assert type(outer["n"]).__name__ == "TensorDictParams"
    torch.testing.assert_close(outer["x"], torch.full((3, 4), 2.0))
    torch.testing.assert_close(params["a"].detach(), torch.arange(12.0).reshape(3, 4))


def test_a_parents_to_reads_the_params_as_data_connected_to_the_graph() -> None:
    params = tclass.TensorDictParams(_data())
    outer = tclass.TensorDict({"x": torch.zeros(3, 4), "n": params}, batch_size=[3, 4])
    moved = outer.to(torch.float64)
    assert type(moved["n"]) is tclass.TensorDict  # the peer's: not new parameters
    assert moved["n", "a"].dtype == torch.float64
    moved["n", "a"].sum().backward()  # the gradient reaches the module's parameter
    assert params["a"].grad is not None
    torch.testing.assert_close(params["a"].grad, torch.ones(3, 4))
    on_cpu = outer.cpu()
    assert type(on_cpu["n"]) is tclass.TensorDict and on_cpu["n"].device == torch.device("cpu")
    assert on_cpu["n", "a"] is params["a"]
