"""The operations users compile: each one function body written once for both libraries.

A case is a function ``body(lib, *inputs)`` that takes the library's names from ``lib``
(``lib.TensorDict``, ``lib.Rec``...: tclass's or the peer's, same spelling) and inputs built
by ``case.inputs(lib, rows)`` for a batch of ``rows``. ``tests/compile`` compiles each body
with ``torch.compile(fullgraph=True, dynamic=True)`` and checks it against eager, with no
recompilation when only the batch size changes; ``compile_bench.py`` times the compiled
bodies of tclass and the peer side by side, and each against its eager run.

This module deliberately has no ``from __future__ import annotations``: the records are
declared inside a function (once per library), where string annotations naming the
nested record would not resolve.
"""

import dataclasses
import functools
from collections.abc import Callable
from types import ModuleType
from typing import Any

import torch

import tclass

# The representative cases compiled with inductor by default (all of them with
# TCLASS_COMPILE=full); every case compiles with the "eager" backend.
INDUCTOR = (
    "rec field math",
    "rec build",
    "rec[idx]",
    "rec apply",
    "td + td",
    "td[idx] = other",
    "torch.stack(tds)",
    "td.to(float64)",
)


@dataclasses.dataclass(frozen=True)
class Lib:
    """One library's names, as the bodies spell them."""

    name: str
    module: ModuleType
    TensorDict: type
    Rec: type  # @tensorclass: obs [B, 4], action [B, 2], reward [B]
    RecTC: type  # the same fields, declared as a TensorClass subclass
    Inner: type  # x [B, 3]
    Outer: type  # inner: Inner, z [B]
    Named: type  # obs [B, 4] and env: str


def _declare(module: ModuleType, name: str) -> Lib:
    tensorclass = module.tensorclass

    @tensorclass
    class Rec:
        obs: torch.Tensor
        action: torch.Tensor
        reward: torch.Tensor

    class RecTC(module.TensorClass):  # type: ignore[name-defined,misc]
        obs: torch.Tensor
        action: torch.Tensor
        reward: torch.Tensor

    @tensorclass
    class Inner:
        x: torch.Tensor

    @tensorclass
    class Outer:
        inner: Inner
        z: torch.Tensor

    @tensorclass
    class Named:
        obs: torch.Tensor
        env: str

    return Lib(name, module, module.TensorDict, Rec, RecTC, Inner, Outer, Named)


@functools.cache
def tclass_lib() -> Lib:
    return _declare(tclass, "tclass")


@functools.cache
def peer_lib(peer: ModuleType) -> Lib:
    return _declare(peer, "peer")


# --- inputs ----------------------------------------------------------------------------


def _tensors(rows: int, seed: int = 0) -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    return {
        "obs": torch.randn(rows, 4, generator=generator),
        "action": torch.randn(rows, 2, generator=generator),
        "reward": torch.randn(rows, generator=generator),
    }


def _rec(lib: Lib, rows: int, seed: int = 0, cls: str = "Rec") -> Any:
    return getattr(lib, cls)(**_tensors(rows, seed), batch_size=[rows])


def _td(lib: Lib, rows: int, seed: int = 0) -> Any:
    t = _tensors(rows, seed)
    return lib.TensorDict(
        {"obs": t["obs"], "action": t["action"], "next": {"reward": t["reward"]}},
        batch_size=[rows],
    )


def _outer(lib: Lib, rows: int) -> Any:
    generator = torch.Generator().manual_seed(3)
    inner = lib.Inner(x=torch.randn(rows, 3, generator=generator), batch_size=[rows])
    return lib.Outer(inner=inner, z=torch.randn(rows, generator=generator), batch_size=[rows])


def _named(lib: Lib, rows: int) -> Any:
    return lib.Named(obs=_tensors(rows)["obs"], env="pong", batch_size=[rows])


def _labelled(lib: Lib, rows: int, seed: int = 0) -> Any:
    """Records stacked from rows with different labels: their ``env`` a stack of
    ``str`` values (one per row)."""
    obs = _tensors(rows, seed)["obs"]
    return torch.stack([lib.Named(obs=obs[i], env=f"env{i % 3}") for i in range(rows)])


@functools.cache
def _module(name: str) -> torch.nn.Module:
    """One small module per library (a compiled function guards on the module it is
    given: a new one each call would compile again)."""
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))


def _module_inputs(lib: Lib, rows: int) -> tuple[Any, ...]:
    """A batch, plain tensors (no grad) for a small module's parameters, and the module."""
    generator = torch.Generator().manual_seed(4)
    module = _module(lib.name)
    params = lib.module.from_module(module).apply(
        lambda p: torch.randn(p.shape, generator=generator)
    )
    return torch.randn(rows, 4, generator=generator), params, module


def _feature_weights(lib: Lib, rows: int) -> tuple[Any, ...]:
    """Weights for a feature dim of size 4, and a TensorDict whose tensors all have it."""
    obs = _tensors(rows)["obs"]
    return torch.arange(4.0), lib.TensorDict(obs=obs, goal=obs * 2, batch_size=[rows])


def _flat_td(lib: Lib, rows: int) -> tuple[Any, ...]:
    return (lib.TensorDict(_tensors(rows), batch_size=[rows]),)


def _index(rows: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(1)
    return torch.randint(0, rows, (rows - 3,), generator=generator)


def _mask(rows: int) -> torch.Tensor:
    return torch.arange(rows) % 3 == 0


def _lazy(lib: Lib, rows: int) -> Any:
    return lib.module.lazy_stack([_td(lib, rows, seed) for seed in range(3)])


Inputs = Callable[[Lib, int], tuple[Any, ...]]
Make = Callable[..., Any]  # _rec or _td: (lib, rows, seed=0)


def _one(make: Make) -> Inputs:
    return lambda lib, rows: (make(lib, rows),)


def _two(make: Make) -> Inputs:
    return lambda lib, rows: (make(lib, rows), make(lib, rows, seed=1))


def _tensor_args(lib: Lib, rows: int) -> tuple[Any, ...]:
    t = _tensors(rows)
    return t["obs"], t["action"], t["reward"]


def _with_index(make: Make) -> Inputs:
    return lambda lib, rows: (make(lib, rows), _index(rows))


def _with_mask(make: Make) -> Inputs:
    return lambda lib, rows: (make(lib, rows), _mask(rows))


def _buffer(make: Make) -> Inputs:
    """A buffer, the rows to write into it, and where."""

    def inputs(lib: Lib, rows: int) -> tuple[Any, ...]:
        index = _index(rows)
        return make(lib, rows), make(lib, len(index), seed=2), index

    return inputs


# --- bodies ----------------------------------------------------------------------------
# Records and TensorDicts alike


def first_row(lib: Lib, data: Any) -> Any:
    return data[0]


def inner_rows(lib: Lib, data: Any) -> Any:
    return data[1:-1]


def rows_at(lib: Lib, data: Any, index: torch.Tensor) -> Any:
    return data[index]


def rows_where(lib: Lib, data: Any, mask: torch.Tensor) -> Any:
    return data[mask]


def add(lib: Lib, a: Any, b: Any) -> Any:
    return a + b


def cat(lib: Lib, a: Any, b: Any) -> Any:
    return torch.cat([a, b])


def to_float64(lib: Lib, data: Any) -> Any:
    return data.to(torch.float64)


def write_rows(lib: Lib, buffer: Any, rows: Any, index: torch.Tensor) -> Any:
    buffer = buffer.clone()
    buffer[index] = rows
    return buffer


# Records (@tensorclass and TensorClass)


def rec_field_math(lib: Lib, rec: Any) -> torch.Tensor:
    return (rec.obs * 2).sum(-1) + rec.reward - rec.action.mean(-1)


def rec_field_write(lib: Lib, rec: Any) -> Any:
    out = rec.clone()
    out.obs = out.obs * 2 + 1
    return out


def rec_build(lib: Lib, obs: torch.Tensor, action: torch.Tensor, reward: torch.Tensor) -> Any:
    return lib.Rec(obs=obs, action=action, reward=reward, batch_size=[obs.shape[0]])


def rec_build_positional(
    lib: Lib, obs: torch.Tensor, action: torch.Tensor, reward: torch.Tensor
) -> Any:
    return lib.RecTC(obs, action, reward, batch_size=obs.shape[:1])


def rec_build_nested(
    lib: Lib, obs: torch.Tensor, action: torch.Tensor, reward: torch.Tensor
) -> Any:
    rows = obs.shape[0]
    inner = lib.Inner(x=obs[:, :3], batch_size=[rows])
    return lib.Outer(inner=inner, z=reward, batch_size=[rows])


def rec_build_str(lib: Lib, obs: torch.Tensor, action: torch.Tensor, reward: torch.Tensor) -> Any:
    return lib.Named(obs=obs, env="pong", batch_size=[obs.shape[0]])


def rec_from_dict(lib: Lib, obs: torch.Tensor, action: torch.Tensor, reward: torch.Tensor) -> Any:
    data = {"obs": obs, "action": action, "reward": reward}
    return lib.Rec.from_dict(data, batch_size=[obs.shape[0]])


def rec_nested_read(lib: Lib, outer: Any) -> torch.Tensor:
    return outer.inner.x.sum(-1) * outer.z


def rec_nested_math(lib: Lib, outer: Any) -> Any:
    return (outer * 2).apply(torch.tanh)


def rec_tc_math(lib: Lib, rec: Any) -> Any:
    return rec * 0.5 + rec


def rec_apply(lib: Lib, rec: Any) -> Any:
    return rec.apply(lambda t: t * 2 + 1)


def rec_stack(lib: Lib, a: Any, b: Any) -> Any:
    return torch.stack([a, b], dim=1)


def rec_replace(lib: Lib, rec: Any) -> Any:
    return rec.replace(obs=rec.obs + 1)


def rec_reshape(lib: Lib, rec: Any) -> Any:
    return rec.unsqueeze(0).reshape(-1)


def rec_str_rows(lib: Lib, named: Any) -> Any:
    return named[1:-1]


def rec_from_td(lib: Lib, td: Any) -> Any:
    return lib.Rec.from_tensordict(td)


def rec_labels_expand(lib: Lib, labelled: Any) -> Any:
    return labelled.unsqueeze(0).expand(2, labelled.shape[0])


def rec_labels_pick(lib: Lib, labelled: Any, index: torch.Tensor) -> Any:
    return labelled[index].clone()


def module_call(lib: Lib, x: torch.Tensor, params: Any, module: torch.nn.Module) -> Any:
    with params.to_module(module):
        return module(x)


def vmap_feature_dim(lib: Lib, w: torch.Tensor, td: Any) -> Any:
    return torch.vmap(lambda w, td: (td["goal"] - td["obs"] * w).sum(-1), (0, 1))(w, td)


# TensorDicts


def td_build(lib: Lib, obs: torch.Tensor, action: torch.Tensor, reward: torch.Tensor) -> Any:
    return lib.TensorDict({"obs": obs, "action": action}, batch_size=[obs.shape[0]])


def td_build_nested(lib: Lib, obs: torch.Tensor, action: torch.Tensor, reward: torch.Tensor) -> Any:
    return lib.TensorDict(
        {"obs": obs, "action": action, "next": {"reward": reward}}, batch_size=obs.shape[:1]
    )


def td_build_kwargs(lib: Lib, obs: torch.Tensor, action: torch.Tensor, reward: torch.Tensor) -> Any:
    return lib.TensorDict(obs=obs, reward=reward, batch_size=[obs.shape[0]])


def td_get(lib: Lib, td: Any) -> torch.Tensor:
    return td["obs"].sum(-1) + td["next", "reward"] * td.get("action")[:, 0]


def td_set(lib: Lib, td: Any) -> Any:
    out = td.clone()
    out["double"] = out["obs"] * 2
    out["next", "done"] = out["next", "reward"] > 0
    return out


def td_apply(lib: Lib, td: Any) -> Any:
    return td.apply(lambda t: t.float() * 3)


def td_apply_two(lib: Lib, a: Any, b: Any) -> Any:
    return a.apply(lambda x, y: x * y + 1, b)


def td_mul_scalar(lib: Lib, td: Any) -> Any:
    return td * 2.0 - 1.0


def td_math(lib: Lib, td: Any) -> Any:
    return td.exp().clamp(max=3.0)


def td_soft_update(lib: Lib, a: Any, b: Any) -> Any:
    target = a.clone()
    target.lerp_(b, 0.1)
    return target


def td_mean(lib: Lib, td: Any) -> Any:
    return td.mean(dim=0)


def td_sum_leaves(lib: Lib, td: Any) -> torch.Tensor:
    return sum(v.sum() for v in td.values(include_nested=True, leaves_only=True))


def td_stack(lib: Lib, a: Any, b: Any) -> Any:
    return torch.stack([a, b])


def td_float(lib: Lib, td: Any) -> Any:
    return td.double().float()


def td_update(lib: Lib, a: Any, b: Any) -> Any:
    out = a.clone()
    out.update({"obs": b["obs"], "extra": b["action"] * 2})
    return out


def td_update_inplace(lib: Lib, a: Any, b: Any) -> Any:
    out = a.clone()
    out.update_(b)
    return out


def td_select(lib: Lib, td: Any) -> Any:
    return td.select("obs", ("next", "reward"))


def td_exclude(lib: Lib, td: Any) -> Any:
    return td.exclude("obs")


def td_replace(lib: Lib, td: Any) -> Any:
    return td.replace(obs=td["obs"] * 0)


def td_reshape(lib: Lib, td: Any) -> Any:
    return td.unsqueeze(-1).permute(1, 0).reshape(-1)


def td_where(lib: Lib, a: Any, b: Any) -> Any:
    return torch.where(a["obs"][:, 0] > 0, a, b)


def td_items(lib: Lib, td: Any) -> dict[str, torch.Tensor]:
    return {key: value.sum(0) for key, value in td.items() if isinstance(value, torch.Tensor)}


def lazy_read(lib: Lib, lazy: Any) -> torch.Tensor:
    return lazy["obs"] * 2


def lazy_member(lib: Lib, lazy: Any) -> Any:
    return lazy[1]


def lazy_rows(lib: Lib, lazy: Any) -> Any:
    return lazy[:, 1:]


def lazy_nested_read(lib: Lib, lazy: Any) -> torch.Tensor:
    return lazy["next", "reward"].sum(0)


@dataclasses.dataclass(frozen=True)
class CompileCase:
    name: str
    body: Callable[..., Any]
    inputs: Inputs
    # Whether the output's batch size depends on the data (a mask): torch.compile keeps
    # such shapes in the graph only with capture_dynamic_output_shape_ops.
    data_dependent: bool = False


def alike_cases(kind: str, make: Make) -> list[CompileCase]:
    """The cases whose one body serves records and TensorDicts alike, on ``kind``'s
    inputs (``"rec"``: ``_rec``, ``"td"``: ``_td``)."""
    one = _one(make)
    return [
        CompileCase(f"{kind}[0]", first_row, one),
        CompileCase(f"{kind}[1:-1]", inner_rows, one),
        CompileCase(f"{kind}[idx]", rows_at, _with_index(make)),
        CompileCase(f"{kind}[mask]", rows_where, _with_mask(make), data_dependent=True),
        CompileCase(f"{kind} + {kind}", add, _two(make)),
        CompileCase(f"torch.cat({kind}s)", cat, _two(make)),
        CompileCase(f"{kind}.to(float64)", to_float64, one),
        CompileCase(f"{kind}[idx] = other", write_rows, _buffer(make)),
    ]


def cases_on(inputs: Inputs, bodies: dict[str, Callable[..., Any]]) -> list[CompileCase]:
    """One case per ``name: body`` of ``bodies``, all on ``inputs``."""
    return [CompileCase(name, body, inputs) for name, body in bodies.items()]


def compile_cases() -> list[CompileCase]:
    build = {
        "rec build": rec_build,
        "rec build (TensorClass)": rec_build_positional,
        "rec build nested": rec_build_nested,
        "rec build with str": rec_build_str,
        "rec.from_dict": rec_from_dict,
        "td build": td_build,
        "td build nested": td_build_nested,
        "td build kwargs": td_build_kwargs,
    }
    one_rec = {
        "rec field math": rec_field_math,
        "rec field write": rec_field_write,
        "rec apply": rec_apply,
        "rec.replace": rec_replace,
        "rec reshape": rec_reshape,
    }
    outer = {"rec nested read": rec_nested_read, "rec nested math": rec_nested_math}
    one_td = {
        "td get": td_get,
        "td set": td_set,
        "td apply": td_apply,
        "td * 2 - 1": td_mul_scalar,
        "td exp clamp": td_math,
        "td.mean(0)": td_mean,
        "td values sum": td_sum_leaves,
        "td.double().float()": td_float,
        "td.select": td_select,
        "td.exclude": td_exclude,
        "td.replace": td_replace,
        "td reshape": td_reshape,
        "td items": td_items,
    }
    two_td = {
        "td apply two": td_apply_two,
        "td soft update": td_soft_update,
        "torch.stack(tds)": td_stack,
        "td.update": td_update,
        "td.update_": td_update_inplace,
        "torch.where(td)": td_where,
    }
    lazy = {
        "lazy read": lazy_read,
        "lazy member": lazy_member,
        "lazy rows": lazy_rows,
        "lazy nested read": lazy_nested_read,
    }
    return [
        *cases_on(_tensor_args, build),
        *cases_on(_one(_rec), one_rec),
        *cases_on(_one(_outer), outer),
        CompileCase(
            "rec TensorClass math", rec_tc_math, lambda lib, n: (_rec(lib, n, cls="RecTC"),)
        ),
        CompileCase("torch.stack(recs)", rec_stack, _two(_rec)),
        CompileCase("rec with str[1:-1]", rec_str_rows, _one(_named)),
        CompileCase("labelled recs[1:-1]", inner_rows, _one(_labelled)),
        CompileCase("labelled recs expand", rec_labels_expand, _one(_labelled)),
        CompileCase("labelled recs[idx]", rec_labels_pick, _with_index(_labelled)),
        CompileCase("torch.stack(labelled recs)", rec_stack, _two(_labelled)),
        CompileCase("to_module (plain tensors)", module_call, _module_inputs),
        CompileCase("vmap in_dims=(0, 1)", vmap_feature_dim, _feature_weights),
        CompileCase("rec.from_tensordict", rec_from_td, _flat_td),
        *alike_cases("rec", _rec),
        *cases_on(_one(_td), one_td),
        *cases_on(_two(_td), two_td),
        *alike_cases("td", _td),
        *cases_on(_one(_lazy), lazy),
    ]


def bound(case: CompileCase, lib: Lib) -> Callable[..., Any]:
    """The case's body as a function of its inputs alone (what gets compiled), with a
    code object of its own: torch.compile keeps its graphs per code object, so two
    functions sharing one would share (and count against each other) their cache
    entries, and each call would test the other's guards first."""
    body = case.body

    def fn(*inputs: Any) -> Any:
        return body(lib, *inputs)

    name = f"{body.__name__}_{lib.name}"
    fn.__code__ = fn.__code__.replace(co_name=name)
    fn.__name__ = fn.__qualname__ = name
    return fn
