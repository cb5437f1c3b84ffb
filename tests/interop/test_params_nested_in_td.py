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


def _outer() -> tuple[tclass.TensorDict, tclass.TensorDictParams]:
    params = tclass.TensorDictParams(
        tclass.TensorDict(
            a=torch.zeros(3, 2),
            s=tclass.TensorDict(b=torch.zeros(3), batch_size=[3]),
            batch_size=[3],
        )
    )
    return tclass.TensorDict(x=torch.zeros(3), n=params, batch_size=[3]), params


def test_rename_keys_gives_a_nested_params_as_a_tensordict() -> None:
    # the peer's rename_keys rebuilds the tree (_fast_apply): a TensorDictParams, nested
    # or renamed itself, gives a TensorDict over the same parameters, as its exclude does
    outer, params = _outer()
    out = outer.rename_keys({"x": "y"})
    assert type(out["n"]) is tclass.TensorDict and type(out["n", "s"]) is tclass.TensorDict
    assert out["n", "a"] is params["a"] and isinstance(out["n", "a"], nn.Parameter)
    assert sorted(out.keys()) == ["n", "y"]
    moved = outer.rename_keys({"n": "m", ("x",): "z"})
    assert type(moved["m"]) is tclass.TensorDict and moved["m", "a"] is params["a"]
    top = params.rename_keys({"a": "c"})
    assert type(top) is tclass.TensorDict and top["c"] is params["a"]
    assert sorted(params.keys()) == ["a", "s"]  # the source is unchanged


def test_other_copies_keep_or_drop_the_params_kind_as_the_peer() -> None:
    # checked against tensordict 0.15.3: select/exclude/clone/copy keep a nested
    # TensorDictParams; apply, indexing, to(dtype), detach give a TensorDict
    outer, _ = _outer()
    kept = [outer.select("n", "x"), outer.exclude("x"), outer.clone(), outer.copy()]
    assert all(type(td["n"]) is tclass.TensorDictParams for td in kept)
    plain = [outer.apply(lambda t: t + 1), outer[0], outer[:2], outer.to(torch.float64)]
    plain.append(outer.detach())
    assert all(type(td["n"]) is tclass.TensorDict for td in plain)
