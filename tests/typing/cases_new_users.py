"""Programs as new users write them (session 24, nu24c): each function is one short
program with the type a checker must infer at each step, in both forms (the decorator
form through the tclass.mypy plugin). tests/pyright/cases_new_users.py holds the same
programs in the base-class form for pyright; cases_new_users_errors.py the wrong ones."""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from pathlib import Path
from typing import Any

import torch
from new_user_records import (
    Agent,
    Base,
    DAgent,
    Derived,
    DObs,
    DRun,
    Gen,
    Obs,
    Run,
    Traj,
    agent,
    dagent,
    obs,
)
from torch import nn
from typing_extensions import assert_type

import tclass
from tclass import (
    LazyStackedTensorDict,
    MetaData,
    NonTensorData,
    PersistentTensorDict,
    TensorDict,
    TensorDictBase,
    TensorDictParams,
    lazy_stack,
)
from tclass._io.store._view import PersistentTensorDictView


def optional_str_and_any_fields() -> None:
    o = Obs(torch.zeros(3, 2), batch_size=[3])
    assert_type(o.pixels, torch.Tensor)
    assert_type(o.label, str | None)
    assert_type(o.meta, Any)
    o.label = "cat"
    o.meta = {"anything": 1}


def build_with_every_keyword() -> None:
    o = Obs(torch.zeros(3), label=None, meta=[1], batch_size=(3,), device=torch.device("cpu"))
    assert_type(o, Obs)
    assert_type(Obs(pixels=torch.zeros(3), batch_size=torch.Size([3]), names=["t"]), Obs)
    assert_type(Obs(torch.zeros(3), device="cpu").device, torch.device | None)


def nested_record_fields() -> None:
    a = agent()
    assert_type(a.obs, Obs)
    assert_type(a.obs.pixels, torch.Tensor)
    assert_type(a.obs.label, str | None)
    assert_type(a.done, torch.Tensor | None)


def optional_nested_record_narrows() -> None:
    a = Agent(obs(), torch.zeros(3), hidden=obs(), batch_size=[3])
    assert_type(a.hidden, Obs | None)
    if a.hidden is not None:
        assert_type(a.hidden.pixels, torch.Tensor)


def index_then_read() -> None:
    a = agent()
    assert_type(a[0], Agent)
    assert_type(a[0].obs, Obs)
    assert_type(a[1:].obs.pixels, torch.Tensor)
    assert_type(a[torch.tensor([0, 2])].reward, torch.Tensor)
    assert_type(a[a.reward > 0], Agent)


def move_to_a_device() -> None:
    a = agent()
    assert_type(a.to("cpu"), Agent)
    assert_type(a.to(torch.device("cpu")), Agent)
    assert_type(a.to(0), Agent)
    assert_type(a.to(None), Agent)
    assert_type(a.to(device="cpu", non_blocking=True), Agent)
    assert_type(a.cpu(), Agent)


def cast_or_follow_another() -> None:
    a, td = agent(), TensorDict(r=torch.zeros(3), batch_size=[3])
    assert_type(a.to(torch.float64), Agent)
    assert_type(a.to("cpu", torch.float16), Agent)
    assert_type(a.to(torch.zeros(1)), Agent)
    assert_type(a.to(a), Agent)
    assert_type(a.to(td), Agent)
    assert_type(td.to(a), TensorDict)
    assert_type(td.to(other=td), TensorDict)
    assert_type(a.to(torch.float16).reward.dtype, torch.dtype)


def copies() -> None:
    a = agent()
    assert_type(a.clone(), Agent)
    assert_type(a.clone(recurse=False), Agent)
    assert_type(a.detach(), Agent)
    assert_type(a.contiguous(), Agent)
    assert_type(a.copy(), Agent)


def torch_stack_of_records() -> None:
    a = agent()
    assert_type(torch.stack([a, a]), Agent)
    assert_type(torch.stack([a, a]).obs.label, str | None)
    assert_type(torch.cat([a, a], 0), Agent)
    assert_type(tclass.stack([a, a], dim=1), Agent)
    assert_type(Agent.stack([a, a]), Agent)
    assert_type(Agent.cat([a, a]), Agent)


def apply_a_function() -> None:
    a = agent()
    assert_type(a.apply(lambda t: t * 2), Agent)
    assert_type(a.apply(lambda t: t.float(), batch_size=[3]), Agent)
    assert_type(a.apply(lambda t, u: t + u, a), Agent)
    assert_type(a.named_apply(lambda key, t: t), Agent)
    assert_type(a.apply_(lambda t: t.zero_()), Agent)


def save_and_load(folder: Path) -> None:
    a = agent()
    assert_type(a.memmap_(folder), Agent)
    assert_type(a.memmap(folder, num_threads=2), Agent)
    assert_type(a.memmap_like(folder), Agent)
    assert_type(Agent.load_memmap(folder), Agent)
    assert_type(Agent.load_memmap(folder).obs, Obs)
    assert_type(Agent.load(folder), Agent)
    assert_type(a.save(folder), Agent)
    assert_type(a.is_memmap(), bool)


def update_entries() -> None:
    a = agent()
    assert_type(a.update({"reward": torch.ones(3)}), Agent)
    assert_type(a.update(reward=torch.ones(3), done=None), Agent)
    assert_type(a.update(TensorDict(reward=torch.ones(3), batch_size=[3])), Agent)
    assert_type(a.update_({"reward": torch.ones(3)}), Agent)
    assert_type(a.set("reward", torch.ones(3)), Agent)
    assert_type(a.set_("reward", torch.ones(3)), Agent)


def arithmetic() -> None:
    a = agent()
    assert_type(a + 1, Agent)
    assert_type(a * 2 - a, Agent)
    assert_type(a.reward + 1, torch.Tensor)
    assert_type(-a, Agent)
    assert_type(a / a.reward.unsqueeze(-1).clamp_min(1), Agent)
    b = agent()
    b += 1
    assert_type(b, Agent)


def comparisons_and_reductions() -> None:
    a = agent()
    assert_type(a == a, Agent)
    assert_type((a == a).all(), bool)
    assert_type(a.sum(), Agent)
    assert_type(a.mean(dim=0), Agent)
    assert_type(a.sum(reduce=True), torch.Tensor)
    assert_type(a.max(0).values, Agent)


def from_tensordict() -> None:
    td = TensorDict(obs=TensorDict(pixels=torch.zeros(3, 2), batch_size=[3]), batch_size=[3])
    td["reward"] = torch.zeros(3)
    a = Agent.from_tensordict(td)
    assert_type(a, Agent)
    assert_type(a.obs.pixels, torch.Tensor)
    assert_type(Agent.from_tensordict(td, {"done": None}), Agent)
    assert_type(type(a).from_tensordict(a.to_tensordict()), Agent)


def from_dict() -> None:
    a = Agent.from_dict({"obs": {"pixels": torch.zeros(3, 2)}, "reward": torch.zeros(3)})
    assert_type(a, Agent)
    assert_type(a.reward, torch.Tensor)
    assert_type(Obs.from_dict({"pixels": torch.zeros(3)}, batch_size=[3]), Obs)
    assert_type(Obs.from_any({"pixels": torch.zeros(3)}), Obs)
    assert_type(Obs.fromkeys(["pixels"], 0), Obs)


def back_to_plain() -> None:
    a = agent()
    assert_type(a.to_tensordict(), TensorDict)
    assert_type(a.to_dict(), dict[str, Any])
    assert_type(a.to_tensordict()["reward"], Any)
    assert_type(dataclasses.asdict(a), dict[str, Any])


def inheritance() -> None:
    d = Derived(torch.zeros(3), torch.zeros(3), batch_size=[3])
    assert_type(d.x, torch.Tensor)
    assert_type(d.y, torch.Tensor)
    assert_type(d.level, int)
    assert_type(d[0], Derived)
    assert_type(d.clone(), Derived)


def inherited_classmethods(folder: Path) -> None:
    assert_type(Derived.from_tensordict(TensorDict()), Derived)
    assert_type(Derived.load_memmap(folder), Derived)
    assert_type(Derived.from_dict({"x": torch.zeros(3), "y": torch.zeros(3)}), Derived)
    assert_type(Derived.stack([Derived(torch.zeros(1), torch.zeros(1))]), Derived)


def held_as_the_base() -> None:
    b: Base = Derived(torch.zeros(3), torch.zeros(3))
    assert_type(b.clone(), Base)
    assert_type(b.x, torch.Tensor)
    assert_type(b[0], Base)


def generic_records() -> None:
    g = Gen(torch.zeros(3), 1, batch_size=[3])
    assert_type(g, Gen[int])
    assert_type(g.tag, int)
    assert_type(g[0].tag, int)
    s = Gen[str](torch.zeros(3), "a", batch_size=[3])
    assert_type(s.clone().tag, str)
    assert_type(torch.stack([s, s]).tag, str)
    assert_type(Gen[int].from_tensordict(TensorDict()), Gen[int])


def methods_returning_self() -> None:
    t = Traj(torch.zeros(4, 3), batch_size=[4])
    assert_type(t.normalized(), Traj)
    assert_type(t[0].normalized(), Traj)
    assert_type(Traj.zeros(3), Traj)
    assert_type(t.length, int)
    assert_type(Traj.KIND, str)


def defaults_and_factories() -> None:
    t = Traj(torch.zeros(4, 3), batch_size=[4])
    assert_type(t.action, torch.Tensor)
    assert_type(t.tags, list[str])
    assert_type(t.scale, int | float)
    assert_type(t.config, dict[str, Any])
    assert_type(t.note, NonTensorData | None)
    assert_type(t.nxt, Traj | None)


def self_referencing_record() -> None:
    t = Traj(torch.zeros(2, 3), nxt=Traj(torch.zeros(2, 3)), batch_size=[2])
    if t.nxt is not None:
        assert_type(t.nxt.obs, torch.Tensor)
        assert_type(t.nxt.nxt, Traj | None)


def metadata_fields() -> None:
    r = Run(torch.zeros(3), "run-7", batch_size=[3])
    assert_type(r.name, str)
    assert_type(r.name.upper(), str)
    assert_type(r.seed, int | None)
    assert_type(Run(torch.zeros(3), MetaData("run-7")).name, str)
    r.name = "run-8"
    r.seed = MetaData(3)


def metadata_nodes() -> None:
    assert_type(MetaData("x"), MetaData[str])
    assert_type(MetaData(3, batch_size=[2]), MetaData[int])
    td = TensorDict(run=MetaData("r"), batch_size=[])
    assert_type(td, TensorDict)


def unbind_split_iterate() -> None:
    a = agent()
    for row in a:
        assert_type(row, Agent)
    assert_type(a.unbind(0)[0].obs, Obs)
    assert_type(a.split(1), tuple[Agent, ...])
    assert_type([r.reward for r in a], list[torch.Tensor])
    assert_type(len(a), int)


def shapes_and_batch() -> None:
    a = agent()
    assert_type(a.batch_size, torch.Size)
    assert_type(a.shape, torch.Size)
    assert_type(a.batch_size[0], int)
    assert_type(a.names, list[Any])
    assert_type(a.reshape(-1), Agent)
    assert_type(a.unsqueeze(0).squeeze(0), Agent)
    assert_type(a.view(3), Agent)
    assert_type(a.numel(), int)


def locks_and_state() -> None:
    a = agent()
    assert_type(a.lock_(), Agent)
    assert_type(a.is_locked, bool)
    assert_type(a.unlock_(), Agent)
    with a.unlock_():
        a.reward = torch.ones(3)
    assert_type(a.state_dict(), OrderedDict[str, Any])


def replace_a_field() -> None:
    a = agent()
    assert_type(a.replace(reward=torch.ones(3)), Agent)
    assert_type(dataclasses.replace(a, reward=torch.ones(3)), Agent)
    assert_type(a.replace(done=None).done, torch.Tensor | None)


def decorator_form_basics(folder: Path) -> None:
    d = dagent()
    assert_type(d.obs, DObs)
    assert_type(d.obs.label, str | None)
    assert_type(d[0], DAgent)
    assert_type(d.to("cpu"), DAgent)
    assert_type(d.clone(), DAgent)
    assert_type(torch.stack([d, d]), DAgent)
    assert_type(d.apply(lambda t: t + 1), DAgent)
    assert_type(d.memmap_(folder), DAgent)
    assert_type(d + 1, DAgent)


def decorator_form_classmethods(folder: Path) -> None:
    td = TensorDict(pixels=torch.zeros(3, 2), batch_size=[3])
    assert_type(DObs.from_tensordict(td), DObs)
    assert_type(DObs.from_dict({"pixels": torch.zeros(3, 2)}), DObs)
    assert_type(DObs.load_memmap(folder), DObs)
    assert_type(DObs(torch.zeros(3), batch_size=[3]).to_tensordict(), TensorDict)
    assert_type(dagent().update({"reward": torch.ones(3)}), DAgent)


def decorator_form_metadata() -> None:
    r = DRun(torch.zeros(3), "a", batch_size=[3])
    assert_type(r.name, str)
    assert_type(DRun(torch.zeros(3), MetaData("b")).name, str)


def records_over_files(folder: Path) -> None:
    a = agent()
    assert_type(a.to_h5(folder / "a.h5"), Agent)
    assert_type(a.to_h5(folder / "a.h5").obs, Obs)
    assert_type(a.to_zarr(folder / "a.zarr"), Agent)
    assert_type(Agent.from_h5(folder / "a.h5"), Agent)
    assert_type(dagent().to_h5(folder / "d.h5"), DAgent)


def tensordicts_over_files(folder: Path) -> None:
    td = TensorDict(a=torch.zeros(3), batch_size=[3])
    assert_type(td.to_h5(folder / "t.h5"), TensorDictBase)
    assert_type(td.to_zarr(folder / "t.zarr"), TensorDictBase)
    ptd = PersistentTensorDict.from_h5(folder / "t.h5")
    assert_type(ptd, PersistentTensorDict)
    assert_type(ptd[0], PersistentTensorDictView)
    assert_type(ptd[1:][0], PersistentTensorDictView)
    assert_type(ptd["a"], Any)
    assert_type(ptd.to_tensordict(), TensorDict)
    with PersistentTensorDict.from_h5(folder / "t.h5") as opened:
        assert_type(opened, PersistentTensorDict)


def tensordict_basics() -> None:
    td = TensorDict({"a": torch.zeros(3), "b": {"c": torch.zeros(3)}}, batch_size=[3])
    assert_type(td["a"], Any)
    assert_type(td[0], TensorDict)
    assert_type(td.get("a"), Any)
    assert_type(td.set("d", torch.ones(3)), TensorDict)
    td["e"] = torch.ones(3)
    assert_type("a" in td, bool)
    assert_type(td.batch_size, torch.Size)


def tensordict_ops() -> None:
    td = TensorDict(a=torch.zeros(3), batch_size=[3])
    assert_type(td + 1, TensorDict)
    assert_type(td.apply(lambda t: t + 1), TensorDict)
    assert_type(td.update({"a": torch.ones(3)}), TensorDict)
    assert_type(td.select("a"), TensorDict)
    assert_type(td.exclude("a"), TensorDict)
    assert_type(td.unbind(0), tuple[TensorDict, ...])
    assert_type(td.to_dict(), dict[str, Any])
    assert_type(td.mean(reduce=True), torch.Tensor)


def tensordict_stacks() -> None:
    td = TensorDict(a=torch.zeros(3), batch_size=[3])
    assert_type(torch.stack([td, td]), TensorDict)
    assert_type(torch.cat([td, td]), TensorDict)
    assert_type(TensorDict.stack([td, td]), TensorDict)
    assert_type(TensorDict.lazy_stack([td, td]), LazyStackedTensorDict)
    assert_type(TensorDict.lazy_stack([td, td], 1).contiguous(), TensorDict)


def tensordict_constructors(folder: Path) -> None:
    assert_type(TensorDict.from_dict({"a": torch.zeros(3)}), TensorDict)
    assert_type(TensorDict.fromkeys(["a"], 0), TensorDict)
    assert_type(TensorDict.load_memmap(folder), TensorDict)
    assert_type(TensorDict(a=torch.zeros(3), batch_size=[3]), TensorDict)
    assert_type(tclass.load(folder), TensorDictBase)


def lazy_stacks() -> None:
    td = TensorDict(a=torch.zeros(3), batch_size=[3])
    ls = lazy_stack([td, td])
    assert_type(ls, LazyStackedTensorDict[TensorDict])
    assert_type(ls[1:], LazyStackedTensorDict[TensorDict])
    assert_type(ls.contiguous(), TensorDict)
    assert_type(ls.to_tensordict(), TensorDict)
    assert_type(ls.stack_dim, int)
    assert_type(ls + 1, LazyStackedTensorDict[TensorDict])
    assert_type(ls.densify(), LazyStackedTensorDict[TensorDict])


def lazy_stacks_of_records() -> None:
    a = agent()
    assert_type(lazy_stack([a, a]), Agent)
    assert_type(lazy_stack([a, a]).obs, Obs)
    assert_type(Agent.lazy_stack([a, a]), Agent)
    assert_type(LazyStackedTensorDict.lazy_stack([a.to_tensordict()]), LazyStackedTensorDict)


def module_parameters() -> None:
    module = nn.Linear(2, 2)
    params = TensorDictParams(TensorDict.from_module(module))
    assert_type(params, TensorDictParams)
    assert_type(list(params.parameters()), list[nn.Parameter])
    assert_type(params.clone(), TensorDictParams)
    assert_type(params.to("cpu"), TensorDictParams)
    assert_type(params.to_tensordict(), TensorDict)
    assert_type(TensorDictParams.lazy_stack([params, params]), LazyStackedTensorDict)
    with params.to_module(module):
        pass


def module_roundtrip() -> None:
    module = nn.Linear(2, 2)
    assert_type(TensorDict.from_module(module), TensorDict)
    assert_type(TensorDict.from_modules(module, module), TensorDict)
    params = TensorDictParams(TensorDict(w=torch.zeros(2), batch_size=[]), no_convert=True)
    assert_type(params.apply(lambda t: t * 0), TensorDictParams)
    assert_type(params.detach(), TensorDictParams)
