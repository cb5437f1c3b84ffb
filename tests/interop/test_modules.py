"""Tests for tclass._interop._modules: from_module, to_module (and its with block), from_modules
(ensembles under torch.vmap), TensorDictParams (as_module=True)."""

from __future__ import annotations

import collections.abc
import copy
import gc
import weakref
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn
from torch.func import functional_call

import tclass
from tclass import LazyStackedTensorDict, NonTensorData, TensorClass, TensorDict, errors


class Net(nn.Module):
    """Parameters, buffers (one not persistent), a nested Sequential and a ReLU."""

    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.ReLU())
        self.head = nn.Linear(4, 2)
        self.register_buffer("scale", torch.tensor(2.0))
        self.register_buffer("cache", torch.zeros(2), persistent=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x)) * self.scale


class LinearParams(TensorClass):
    weight: torch.Tensor
    bias: torch.Tensor


def _net() -> Net:
    torch.manual_seed(0)
    return Net().eval()


def _ids(module: nn.Module) -> dict[str, int]:
    tensors = {**dict(module.named_parameters()), **dict(module.named_buffers())}
    return {name: id(tensor) for name, tensor in tensors.items()}


def _flat(params: Any) -> dict[str, torch.Tensor]:
    return {
        key if isinstance(key, str) else ".".join(key): value
        for key, value in params.items(True, True)
    }


# --- from_module ---------------------------------------------------------------------------


def test_from_module_nests_submodules_and_holds_the_modules_own_tensors() -> None:
    net = _net()
    params = TensorDict.from_module(net)
    assert set(params.keys()) == {"scale", "cache", "body", "head"}
    assert set(params["body"].keys()) == {"0", "1"}  # the ReLU holds nothing
    assert set(params["body", "1"].keys()) == {
        "weight", "bias", "running_mean", "running_var", "num_batches_tracked",
    }  # fmt: skip
    assert params["body", "0", "weight"] is net.body[0].weight
    assert params["body", "1", "running_mean"] is net.body[1].running_mean
    assert params["cache"] is net.cache
    assert params.batch_size == torch.Size([]) and params.device is None
    assert _flat(params).keys() == {*_ids(net)}


class _HoldsParams(nn.Module):
    def __init__(self, lock: bool = False) -> None:
        super().__init__()
        nested = TensorDict({"w": torch.ones(2), "n": {"b": torch.zeros(2)}}, [])
        self.p = tclass.TensorDictParams(nested, lock=lock)
        self.lin = nn.Linear(2, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x * self.p["w"]).sum() + self.p["n", "b"].sum()


@pytest.mark.parametrize("lock", [False, True])
def test_a_tensordictparams_child_reads_and_swaps_its_nested_keys(lock: bool) -> None:
    # from_module gave ("p", "n.b"), the dotted parameter name, where the peer gives the
    # TensorDictParams's own keys ("p", "n", "b"); to_module wrote only the dotted form,
    # and into a locked TensorDictParams (``lock=True``, ``module.double()``) not at all
    net = _HoldsParams(lock)
    params = tclass.from_module(net)
    assert sorted(params.keys(True, True)) == [
        ("lin", "bias"), ("lin", "weight"), ("p", "n", "b"), ("p", "w"),
    ]  # fmt: skip
    assert params["p", "n", "b"] is net.p["n", "b"]
    zeros = params.detach().clone().zero_()
    zeros["p", "n", "b"] += 3
    with zeros.to_module(net) as old:
        assert net(torch.ones(2)).item() == 6.0
        assert torch.equal(old["p", "n", "b"], torch.zeros(2))
    assert net(torch.ones(2)).item() == 2.0 and net.p["n", "b"] is params["p", "n", "b"]
    assert net.double().p["n", "b"].dtype == torch.float64
    stacked = tclass.from_modules(_HoldsParams(lock), _HoldsParams(lock))
    assert ("p", "n", "b") in stacked.keys(True, True) and stacked.batch_size == (2,)


def test_from_module_locking_follows_the_peer() -> None:
    net = _net()
    assert not TensorDict.from_module(net).is_locked
    assert TensorDict.from_module(net, lock=True).is_locked
    assert tclass.from_module(net).is_locked  # the function locks by default
    assert not tclass.from_module(net, lock=False).is_locked


def test_from_module_filter_empty_false_keeps_empty_submodules() -> None:
    params = TensorDict.from_module(_net(), filter_empty=False)
    assert set(params["body"].keys()) == {"0", "1", "2"}
    assert params["body", "2"].is_empty()


def test_from_module_skips_empty_parameter_slots() -> None:
    params = TensorDict.from_module(nn.Linear(3, 4, bias=False))
    assert list(params.keys()) == ["weight"]


def test_from_module_with_state_dict_runs_its_hooks() -> None:
    net = _net()

    def add_entry(module: nn.Module, state: dict[str, Any], prefix: str, meta: Any) -> None:
        state[prefix + "extra"] = torch.ones(1)

    net.head.register_state_dict_post_hook(add_entry)
    params = TensorDict.from_module(net, use_state_dict=True)
    assert "cache" not in params  # not persistent: not in the state dict
    assert params["head", "extra"].tolist() == [1.0]
    weight = params["body", "0", "weight"]  # the state dict's detached tensor, as the peer
    assert not weight.requires_grad and type(weight) is torch.Tensor
    assert weight.data_ptr() == net.body[0].weight.data_ptr()


def test_from_module_with_state_dict_takes_what_the_hooks_leave() -> None:
    net = _net()

    def bump(module: nn.Module, *args: Any) -> None:
        for param in module.parameters(recurse=False):
            param.data += 1  # in place: the state dict's tensors see it

    def restore(module: nn.Module, *args: Any) -> None:
        for param in module.parameters(recurse=False):
            param.data = param.data - 1  # a new tensor: the state dict keeps the bumped one

    for module in net.modules():
        module.register_state_dict_pre_hook(bump)
        module.register_state_dict_post_hook(restore)
    plain = TensorDict.from_module(net).clone()
    params = TensorDict.from_module(net, use_state_dict=True)
    torch.testing.assert_close(params["body", "0", "weight"], plain["body", "0", "weight"] + 1)


def test_from_module_refuses_extra_state_that_is_not_a_tensor() -> None:
    class WithExtra(nn.Linear):
        def get_extra_state(self) -> Any:
            return {"note": "hi"}

        def set_extra_state(self, state: Any) -> None:
            pass

    with pytest.raises(errors.EntryTypeError, match="_extra_state.*use_state_dict=False"):
        TensorDict.from_module(WithExtra(2, 2), use_state_dict=True)
    assert set(TensorDict.from_module(WithExtra(2, 2)).keys()) == {"weight", "bias"}


def test_collections_are_mappings_so_module_load_state_dict_takes_them(tmp_path: Path) -> None:
    """As the peer's: TensorDicts, lazy stacks, HDF5 and parameter collections are
    mutable mappings (torch's ``load_state_dict`` asks for one); records are not."""
    source = nn.Linear(2, 3)
    flat = TensorDict.from_module(source).flatten_keys(".")
    target = nn.Linear(2, 3)
    assert str(target.load_state_dict(flat)) == "<All keys matched successfully>"
    assert torch.equal(target.weight, source.weight) and torch.equal(target.bias, source.bias)
    kinds = [
        flat,
        tclass.lazy_stack([flat, flat]),
        tclass.TensorDictParams(TensorDict.from_module(source)),
        flat.to_h5(tmp_path / "w.h5"),
    ]
    for kind in kinds:
        assert isinstance(kind, collections.abc.MutableMapping), type(kind)
    assert not isinstance(LinearParams.from_module(source), collections.abc.Mapping)
    kinds[-1].close()


def test_from_module_errors() -> None:
    with pytest.raises(TypeError, match="expects a torch.nn.Module.*got dict"):
        TensorDict.from_module({"weight": torch.zeros(1)})  # type: ignore[call-overload]
    with pytest.raises(NotImplementedError, match="lazy module.*run the module once"):
        TensorDict.from_module(nn.Sequential(nn.LazyLinear(3)))
    with pytest.raises(errors.UnsupportedError, match="TensorDict.from_module"):
        LazyStackedTensorDict.from_module(nn.Linear(2, 2))


def test_tensorclass_from_module_gives_the_class() -> None:
    linear = nn.Linear(3, 4)
    params = LinearParams.from_module(linear)
    assert isinstance(params, LinearParams)
    assert params.weight is linear.weight and params.bias is linear.bias
    with pytest.raises(errors.UnknownFieldError):
        LinearParams.from_module(nn.Sequential(linear))


def test_memmap_round_trip_of_module_weights(tmp_path: Path) -> None:
    net = _net()
    TensorDict.from_module(net).memmap(tmp_path / "w")
    head = TensorDict.load_memmap(tmp_path / "w" / "head")  # one submodule's folder
    other = nn.Linear(4, 2)
    head.to_module(other)
    assert torch.equal(other.weight, net.head.weight)
    assert isinstance(other.weight, nn.Parameter) and other.weight.requires_grad


# --- to_module -----------------------------------------------------------------------------


def test_seed_example_zeroed_params_inside_the_block_originals_after() -> None:
    net, x = _net(), torch.randn(5, 3)
    before, expected = _ids(net), net(x)
    params = TensorDict.from_module(net).clone()
    params.zero_()
    with params.to_module(net) as previous:
        assert bool((net.body[0].weight == 0).all())
        y = net(x)
        assert isinstance(previous, TensorDict)
        assert previous["head", "weight"] is not net.head.weight
    assert bool((y == 0).all())
    assert _ids(net) == before  # the very same parameter and buffer objects are back
    assert torch.equal(net(x), expected)


def test_with_block_restores_on_exception() -> None:
    net = _net()
    before = _ids(net)
    zeros = TensorDict.from_module(net).clone().zero_()
    with pytest.raises(ValueError, match="stop"), zeros.to_module(net):
        raise ValueError("stop")
    assert _ids(net) == before


def test_without_with_the_swap_stays_and_the_previous_tensors_undo_it() -> None:
    linear = nn.Linear(3, 4)
    weight, bias = linear.weight, linear.bias
    zeros = TensorDict({"weight": torch.zeros(4, 3), "bias": torch.zeros(4)})
    previous = zeros.to_module(linear)
    assert previous["weight"] is weight and previous["bias"] is bias
    assert bool((linear.weight == 0).all())
    previous.to_module(linear)
    assert linear.weight is weight and linear.bias is bias


def test_partial_swap_returns_only_what_it_replaced() -> None:
    linear = nn.Linear(3, 4)
    bias = linear.bias
    with TensorDict({"weight": torch.ones(4, 3)}).to_module(linear) as previous:
        assert list(previous.keys()) == ["weight"]
        assert bool((linear.weight == 1).all()) and linear.bias is bias
    assert not bool((linear.weight == 1).all())


def test_an_empty_slot_gets_a_tensor_and_is_emptied_again() -> None:
    linear = nn.Linear(3, 4, bias=False)
    with TensorDict({"bias": torch.ones(4)}).to_module(linear) as previous:
        assert previous.is_empty()
        assert linear(torch.zeros(1, 3)).tolist() == [[1.0] * 4]
    assert linear.bias is None


def test_detached_tensors_go_in_as_parameters_over_the_same_storage() -> None:
    linear = nn.Linear(3, 4)
    weight = torch.randn(4, 3)
    TensorDict({"weight": weight}).to_module(linear)
    assert isinstance(linear.weight, nn.Parameter) and linear.weight.requires_grad
    assert linear.weight.data_ptr() == weight.data_ptr()
    assert [name for name, _ in linear.named_parameters()] == ["weight", "bias"]
    TensorDict({"weight": weight}).to_module(linear, preserve_module_state=False)
    assert type(linear.weight) is torch.Tensor


def test_tensors_that_require_grad_go_in_as_they_are_and_receive_gradients() -> None:
    linear = nn.Linear(3, 4)
    weight = torch.zeros(4, 3, requires_grad=True)
    with TensorDict({"weight": weight}).to_module(linear):
        assert linear.weight is weight
        linear(torch.ones(2, 3)).sum().backward()
    assert weight.grad is not None and bool((weight.grad == 2).all())
    assert linear.weight.grad is None


def test_buffers_are_replaced_as_they_are() -> None:
    norm = nn.BatchNorm1d(2)
    mean = torch.ones(2)
    with TensorDict({"running_mean": mean}).to_module(norm):
        assert norm.running_mean is mean
    assert norm.running_mean is not mean and bool((norm.running_mean == 0).all())


def test_inplace_copies_into_the_modules_tensors_and_restores_their_values() -> None:
    linear = nn.Linear(3, 4)
    weight, original = linear.weight, linear.weight.detach().clone()
    with TensorDict({"weight": torch.zeros(4, 3)}).to_module(linear, inplace=True) as previous:
        assert linear.weight is weight and bool((weight == 0).all())
        assert torch.equal(previous["weight"], original)
    assert linear.weight is weight and torch.equal(weight, original)
    assert (
        TensorDict({"weight": torch.ones(4, 3)}).to_module(linear, inplace=True, return_swap=False)
        is None
    )
    assert bool((linear.weight == 1).all())


def test_inplace_swap_is_a_clone_in_the_parameters_graph() -> None:
    """The values ``to_module(inplace=True)`` returns are ``param.clone()``, as the
    peer's (fz28f, program 15,881,813): a gradient through them reaches the parameter,
    and they hold no ``grad`` of their own."""
    linear = nn.Linear(3, 4)
    original = linear.weight.detach().clone()
    swap = TensorDict({"weight": torch.zeros(4, 3)}).to_module(linear, inplace=True)
    old = swap["weight"]
    assert torch.equal(old, original) and old.requires_grad and old.grad_fn is not None
    assert old.data_ptr() != linear.weight.data_ptr()
    (old * 2).sum().backward()
    assert linear.weight.grad is not None and bool((linear.weight.grad == 2).all())


def test_return_swap_false_returns_none_and_keeps_the_swap() -> None:
    linear = nn.Linear(3, 4)
    ones = torch.ones(4, 3, requires_grad=True)
    assert TensorDict({"weight": ones}).to_module(linear, return_swap=False) is None
    assert linear.weight is ones


def test_tensorclass_to_module_returns_the_class_and_restores() -> None:
    linear = nn.Linear(3, 4)
    weight = linear.weight
    zeros = LinearParams.from_module(linear).clone().zero_()
    with zeros.to_module(linear) as previous:
        assert isinstance(previous, LinearParams) and previous.weight is weight
        assert bool((linear.weight == 0).all())
    assert linear.weight is weight


def _assert_refused(module: nn.Module, params: Any, error: type[Exception], match: str) -> None:
    before = _ids(module)
    with pytest.raises(error, match=match):
        params.to_module(module)
    assert _ids(module) == before  # checked before anything was swapped


def test_unknown_key_names_it_and_the_modules_names() -> None:
    params = TensorDict.from_module(_net()).clone()
    params["head", "wieght"] = torch.zeros(2, 4)
    _assert_refused(
        _net(),
        params,
        KeyError,
        r"'head.wieght' is not a parameter, buffer or submodule of Linear \(it has: weight, bias\)",
    )
    _assert_refused(
        nn.Linear(2, 2),
        TensorDict({"x": {"w": torch.zeros(1)}}),
        KeyError,
        "'x' is not a submodule",
    )


def test_shape_mismatch_names_both_shapes_and_changes_nothing() -> None:
    params = TensorDict.from_module(_net()).clone()
    params["head", "bias"] = torch.zeros(3)  # head.weight, visited first, would fit
    _assert_refused(
        _net(), params, ValueError, r"'head.bias' has shape \[3\].*Linear has shape \[2\]"
    )


def test_a_stack_outside_vmap_suggests_vmap() -> None:
    stacked = TensorDict.from_modules(nn.Linear(2, 2), nn.Linear(2, 2))
    _assert_refused(nn.Linear(2, 2), stacked, errors.ShapeError, "torch.vmap")


def test_structure_mismatches() -> None:
    net = _net()
    _assert_refused(
        net, TensorDict({"head": torch.zeros(2)}), TypeError, "'head' is a submodule \\(Linear\\)"
    )
    _assert_refused(
        net, TensorDict({"scale": {"x": torch.zeros(1)}}), TypeError, "'scale' is a tensor of Net"
    )
    # a KeyError too, as the peer raises there (it was a TypeError only)
    _assert_refused(net, TensorDict({"scale": {"x": torch.zeros(1)}}), KeyError, "tensor of Net")
    with_value = TensorDict({"scale": NonTensorData("two")})
    _assert_refused(net, with_value, TypeError, "'scale' holds a Python value")
    with pytest.raises(TypeError, match="expects a torch.nn.Module"):
        TensorDict({}).to_module(object())  # type: ignore[call-overload]


def test_inplace_onto_an_empty_slot_is_refused() -> None:
    linear = nn.Linear(2, 2, bias=False)
    with pytest.raises(errors.EntryTypeError, match="inplace=True.*None"):
        TensorDict({"bias": torch.zeros(2)}).to_module(linear, inplace=True)


def test_to_module_use_state_dict_runs_the_load_hooks() -> None:
    linear = nn.Linear(2, 2)
    before = _ids(linear)
    seen: list[str] = []

    def hook(module: nn.Module, state: dict[str, Any], prefix: str, *args: Any) -> None:
        seen.extend(state)
        for key in list(state):
            state[key] = state[key] * 0

    linear._register_load_state_dict_pre_hook(hook, with_module=True)
    params = TensorDict({"weight": torch.ones(2, 2), "bias": torch.ones(2)})
    with params.to_module(linear, use_state_dict=True):
        assert sorted(seen) == ["bias", "weight"]
        assert isinstance(linear.weight, nn.Parameter) and (linear.weight == 0).all()
    assert _ids(linear) == before  # the with block put the old ones back
    with pytest.raises(errors.UnsupportedError, match="inplace"):
        params.to_module(linear, use_state_dict=True, inplace=True)
    assert _ids(linear) == before


def test_to_module_of_a_lazy_stack_stacks_its_members() -> None:
    linear = nn.Linear(2, 2, device="meta")
    members = [TensorDict({"weight": torch.full((2,), float(i))}) for i in range(2)]
    with tclass.lazy_stack(members).to_module(linear):  # the peer's: stacked, as a dense one
        assert linear.weight.tolist() == [[0.0, 0.0], [1.0, 1.0]]
    assert linear.weight.device.type == "meta"


def test_the_restore_is_forgotten_with_the_returned_tensordict() -> None:
    linear = nn.Linear(2, 2)
    previous = TensorDict({"weight": torch.zeros(2, 2)}).to_module(linear)
    returned = weakref.ref(previous)
    del previous
    gc.collect()
    assert returned() is None  # nothing outside it keeps it (or its restore) alive


def test_lock_blocks_still_work_and_run_the_restore_once() -> None:
    linear = nn.Linear(2, 2)
    weight = linear.weight
    with TensorDict({"weight": torch.zeros(2, 2)}).to_module(linear) as previous:
        with previous.lock_():
            assert previous.is_locked
        assert not previous.is_locked and linear.weight is weight  # the inner block restored
        TensorDict({"weight": torch.ones(2, 2)}).to_module(linear, return_swap=False)
    assert bool((linear.weight == 1).all())  # nothing left to restore for the outer block


# --- from_modules --------------------------------------------------------------------------


def _mlps(count: int = 3) -> list[nn.Sequential]:
    torch.manual_seed(1)
    return [nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 2)) for _ in range(count)]


def test_from_modules_stacks_new_parameters() -> None:
    mlps = _mlps()
    params = TensorDict.from_modules(*mlps)
    assert params.batch_size == torch.Size([3]) and params.is_locked
    assert set(params.keys()) == {"0", "2"}
    weight = params["0", "weight"]
    assert isinstance(weight, nn.Parameter) and weight.is_leaf and weight.requires_grad
    assert weight.shape == (3, 8, 3)
    assert torch.equal(weight[1], mlps[1][0].weight)
    assert weight.data_ptr() != mlps[0][0].weight.data_ptr()
    assert not tclass.from_modules(*mlps, lock=False).is_locked


def test_from_modules_stacks_buffers_as_tensors() -> None:
    norms = [nn.BatchNorm1d(2) for _ in range(2)]
    params = tclass.from_modules(*norms)
    assert type(params["running_mean"]) is torch.Tensor
    assert params["num_batches_tracked"].shape == (2,)


def _ensemble_call(base: nn.Module, params: TensorDict, x: torch.Tensor) -> torch.Tensor:
    def run(p: TensorDict, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = functional_call(base, _flat(p), (x,))
        return out

    out: torch.Tensor = torch.vmap(run, (0, None))(params, x)
    return out


def test_ensemble_with_functional_call_under_vmap_matches_each_module() -> None:
    mlps, x = _mlps(), torch.randn(5, 3)
    params = TensorDict.from_modules(*mlps)
    base = copy.deepcopy(mlps[0]).to("meta")  # holds no data
    y = _ensemble_call(base, params, x)
    assert y.shape == (3, 5, 2)
    expected = torch.stack([mlp(x) for mlp in mlps])
    torch.testing.assert_close(y, expected)


def test_ensemble_with_to_module_under_vmap_and_gradients() -> None:
    mlps, x = _mlps(), torch.randn(5, 3)
    params = TensorDict.from_modules(*mlps)
    base = copy.deepcopy(mlps[0]).to("meta")
    meta_weight = base[0].weight

    def run(p: TensorDict, x: torch.Tensor) -> torch.Tensor:
        with p.to_module(base):
            out: torch.Tensor = base(x)
        return out

    y = torch.vmap(run, (0, None))(params, x)
    assert base[0].weight is meta_weight  # restored after each call
    torch.testing.assert_close(y, torch.stack([mlp(x) for mlp in mlps]))
    y.pow(2).sum().backward()
    for mlp in mlps:
        mlp(x).pow(2).sum().backward()
    grad = params["2", "weight"].grad
    assert grad is not None
    torch.testing.assert_close(grad, torch.stack([mlp[2].weight.grad for mlp in mlps]))  # type: ignore[misc]


def test_layouts_match_the_peer() -> None:
    tensordict = pytest.importorskip("tensordict")
    net, mlps = _net(), _mlps(2)
    mine, theirs = TensorDict.from_module(net), tensordict.TensorDict.from_module(net)
    assert set(mine.keys(True, True)) == set(theirs.keys(True, True))
    for key in mine.keys(True, True):
        assert mine[key] is theirs[key]
    mine, theirs = TensorDict.from_modules(*mlps), tensordict.TensorDict.from_modules(*mlps)
    assert set(mine.keys(True, True)) == set(theirs.keys(True, True))
    assert mine.batch_size == theirs.batch_size
    for key in mine.keys(True, True):
        assert torch.equal(mine[key], theirs[key])


def test_from_modules_errors_name_the_module_and_key() -> None:
    with pytest.raises(errors.StackError, match="at least one module"):
        TensorDict.from_modules()
    with pytest.raises(
        RuntimeError,
        match=r"'weight' is float32\[5, 3\] on cpu in module 1 \(Linear\) but float32\[4, 3\]",
    ):
        TensorDict.from_modules(nn.Linear(3, 4), nn.Linear(3, 5))
    with pytest.raises(
        ValueError,
        match=r"module 1 \(Sequential\).*missing \['bias', 'weight'\], extra \['0.bias', "
        r"'0.weight'\]",
    ):
        TensorDict.from_modules(nn.Linear(3, 4), nn.Sequential(nn.Linear(3, 4)))
    with pytest.raises(errors.StackError, match=r"float64\[2, 2\] on cpu in module 1"):
        TensorDict.from_modules(nn.Linear(2, 2), nn.Linear(2, 2).double())
    with pytest.raises(errors.StackError, match=r"on meta in module 1"):
        TensorDict.from_modules(nn.Linear(2, 2), nn.Linear(2, 2, device="meta"))
    with pytest.raises(TypeError, match=r"argument 1"):
        TensorDict.from_modules(nn.Linear(3, 4), "linear")  # type: ignore[call-overload]
    with pytest.raises(errors.UnsupportedError, match="TensorDictParams"):
        TensorDict.from_modules(nn.Linear(3, 4), lazy_stack=True, as_module=True)
    with pytest.raises(RuntimeError, match="lazy"):
        TensorDict.from_modules(nn.LazyLinear(4), lazy_stack=True)
    with pytest.raises(errors.UnsupportedError, match="dense"):
        LazyStackedTensorDict.from_modules(nn.Linear(3, 4))


def test_from_modules_lazy_stack_holds_the_modules_own_parameters() -> None:
    modules = [nn.Linear(3, 4) for _ in range(3)]
    params = TensorDict.from_modules(*modules, lazy_stack=True)
    assert isinstance(params, LazyStackedTensorDict) and params.is_locked
    assert params.batch_size == (3,) and params[1]["weight"] is modules[1].weight
    assert not TensorDict.from_modules(*modules, lazy_stack=True, lock=False).is_locked


@pytest.mark.parametrize("as_module", [False, True])
def test_from_modules_expand_identical_shares_the_common_tensors(as_module: bool) -> None:
    shared = nn.Linear(3, 3)
    modules = [nn.Sequential(shared, nn.Linear(3, 4)) for _ in range(3)]
    params = tclass.from_modules(*modules, expand_identical=True, as_module=as_module)
    common = params["0", "weight"]
    assert not isinstance(common, nn.Parameter) and common.shape == (3, 3, 3)
    assert common.data_ptr() == shared.weight.data_ptr() and common.stride()[0] == 0
    assert isinstance(params["1", "weight"], nn.Parameter)
    assert params["1", "weight"].data_ptr() != modules[0][1].weight.data_ptr()
    common.sum().backward()  # gradients reach the shared module
    assert shared.weight.grad is not None and (shared.weight.grad == 3).all()


def test_tensorclass_from_modules() -> None:
    params = LinearParams.from_modules(nn.Linear(3, 4), nn.Linear(3, 4))
    assert isinstance(params, LinearParams) and params.batch_size == torch.Size([2])
    assert params.weight.shape == (2, 4, 3)


# --- as_module -----------------------------------------------------------------------------


def test_as_module_registers_parameters_and_buffers() -> None:
    net = _net()
    module = TensorDict.from_module(net, as_module=True)
    assert isinstance(module, tclass.TensorDictParams)
    assert dict(module.named_parameters()) == dict(net.named_parameters())
    assert {name for name, _ in module.named_buffers()} == {name for name, _ in net.named_buffers()}
    assert module["head", "weight"] is net.head.weight
    assert module.batch_size == torch.Size([])


def test_as_module_ensemble_trains_with_an_optimizer() -> None:
    mlps, x = _mlps(), torch.randn(5, 3)
    ensemble = tclass.from_modules(*mlps, as_module=True)
    holder = nn.Module()
    holder.ensemble = ensemble
    assert len(list(holder.parameters())) == 4
    optimizer = torch.optim.SGD(holder.parameters(), lr=0.1)
    base = copy.deepcopy(mlps[0]).to("meta")
    before = ensemble["0", "weight"].detach().clone()
    _ensemble_call(base, ensemble, x).sum().backward()
    optimizer.step()
    assert not torch.equal(ensemble["0", "weight"], before)
    holder.to(torch.float64)
    assert ensemble["0", "weight"].dtype == torch.float64
    assert "batch_size=[3]" in repr(ensemble)


def test_as_module_to_module_swaps_like_the_tensordict() -> None:
    linear = nn.Linear(3, 4)
    module = TensorDict.from_module(linear, as_module=True)
    other = nn.Linear(3, 4)
    with module.to_module(other):
        assert other.weight is linear.weight
    assert other.weight is not linear.weight


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_weights_and_ensemble(tmp_path: Path) -> None:
    net = _net()
    TensorDict.from_module(net).memmap(tmp_path / "w")
    gpu = copy.deepcopy(net).cuda()
    weights = TensorDict.load_memmap(tmp_path / "w", device="cuda")
    with weights.to_module(gpu):
        assert gpu.head.weight.device.type == "cuda"
    mlps = [mlp.cuda() for mlp in _mlps()]
    x = torch.randn(5, 3, device="cuda")
    y = _ensemble_call(copy.deepcopy(mlps[0]).to("meta"), TensorDict.from_modules(*mlps), x)
    torch.testing.assert_close(y, torch.stack([mlp(x) for mlp in mlps]))


def test_a_previous_empty_slot_is_a_field_not_set() -> None:
    linear = nn.Linear(3, 4, bias=False)  # its bias slot is None: no old bias to return
    params = LinearParams(weight=torch.zeros(4, 3), bias=torch.ones(4), batch_size=[])
    with params.to_module(linear) as previous:
        assert previous.bias is None and torch.equal(linear.bias, torch.ones(4))
    assert linear.bias is None


def test_nested_blocks_unwind_in_order() -> None:
    linear = nn.Linear(2, 2)
    weight = linear.weight
    ones, twos = torch.ones(2, 2, requires_grad=True), torch.full((2, 2), 2.0, requires_grad=True)
    with TensorDict({"weight": ones}).to_module(linear):
        with TensorDict({"weight": twos}).to_module(linear):
            assert linear.weight is twos
        assert linear.weight is ones
    assert linear.weight is weight


# --- from_modules of lazy modules (issue 27) -----------------------------------------------


def _run_ensemble(params: Any, x: torch.Tensor) -> torch.Tensor:
    empty = nn.LazyLinear(4, device="meta")

    def member(p: Any, x: torch.Tensor) -> torch.Tensor:
        with p.to_module(empty, preserve_module_state=False):
            return empty(x)  # type: ignore[no-any-return]

    return torch.vmap(member, (0, None), randomness="same")(params, x)  # type: ignore[no-any-return]


@pytest.mark.parametrize("as_module", [False, True])
def test_from_modules_of_lazy_modules_materializes_one_set_per_module(as_module: bool) -> None:
    """The stacked parameters take their shape when the module they go into first runs
    under vmap: one set of weights per module, trained through the collection."""
    modules = [nn.LazyLinear(4) for _ in range(3)]
    params = TensorDict.from_modules(*modules, as_module=as_module)
    assert isinstance(params["weight"], nn.UninitializedParameter)
    assert "weight: f32[-1]" in repr(params) and params.batch_size == (3,)
    optim = torch.optim.SGD(list(params.values(True, True)), lr=1.0)
    x = torch.arange(3.0)
    y = _run_ensemble(params, x)
    weight, bias = params["weight"], params["bias"]
    assert type(weight) is nn.Parameter and weight.shape == (3, 4, 3) and bias.shape == (3, 4)
    assert torch.allclose(y, torch.einsum("moi,i->mo", weight, x) + bias)
    assert len({tuple(w.flatten().tolist()) for w in weight}) == 3  # one init per member
    y.sum().backward()
    optim.step()
    assert torch.equal(bias.grad, torch.ones(3, 4)) and all(
        p.grad is None for p in modules[0].parameters()
    )
    again = _run_ensemble(params, x)  # materialized: a plain ensemble now
    assert torch.allclose(again, y - (1 + x.square().sum()))  # SGD, lr 1


def test_from_modules_of_lazy_modules_outside_vmap_gives_the_stack() -> None:
    params = TensorDict.from_modules(nn.LazyLinear(2), nn.LazyLinear(2))
    module = nn.LazyLinear(2)
    with params.to_module(module):
        with pytest.raises(RuntimeError, match="3D"):  # the stack goes in whole
            module(torch.ones(5))
    assert params["weight"].shape == (2, 2, 5)


def test_from_modules_refuses_lazy_and_initialized_members_together() -> None:
    ready = nn.Linear(3, 4)
    with pytest.raises(errors.StackError, match=r"'weight' is initialized .* in module 1"):
        TensorDict.from_modules(nn.LazyLinear(4), ready)
    with pytest.raises(errors.StackError, match=r"'weight' is uninitialized .* in module 1"):
        TensorDict.from_modules(ready, nn.LazyLinear(4))
    with pytest.raises(
        errors.StackError, match=r"float64 on cpu\) in module 1 \(LazyLinear\) but uninitialized"
    ):
        TensorDict.from_modules(nn.LazyLinear(4), nn.LazyLinear(4, dtype=torch.float64))


@pytest.mark.peer
def test_from_modules_of_lazy_modules_as_the_peer() -> None:
    tensordict = pytest.importorskip("tensordict")
    for lib in (tclass, tensordict):
        torch.manual_seed(0)
        params = lib.TensorDict.from_modules(*[nn.LazyLinear(4) for _ in range(2)])
        y = _run_ensemble(params, torch.ones(5))
        assert y.shape == (2, 4) and params["weight"].shape == (2, 4, 5), lib
        assert torch.allclose(y, params["weight"].sum(-1) + params["bias"]), lib
