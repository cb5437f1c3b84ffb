"""The per-operation cases of the tensorclass benchmark.

Same scheme as ``engine_cases``: each case is one statement written three ways, with a
tclass tensorclass (``t*`` objects, classes ``T*``), with the peer's tensorclass (``p*``,
``P*``, when ``tensordict`` is installed) and by hand on a plain ``dataclasses``
dataclass with the same fields (``d*``, ``D*``). The record is the issue's: a batch of
100, three tensor fields and one ``str`` field; the nested record has two levels.

This module deliberately has no ``from __future__ import annotations``: the peer's
classes are declared inside a function, where string annotations naming them would not
resolve, so every class here is declared with evaluated annotations.
"""

import dataclasses
import functools
from types import ModuleType
from typing import Annotated, Any

import torch

import tclass

from engine_cases import Case

BATCH = 100
PEER_TARGET = 0.5  # the default: tclass at most half the peer's time
# The tensor fields of a transition, which the hand-written statements spell out.
TENSOR_FIELDS = ("obs", "action", "reward")

# Creation and attribute access are pure Python overhead: held to a quarter of the peer.
ATTRIBUTE_TARGET = 0.25


@dataclasses.dataclass(frozen=True)
class TensorclassCase(Case):
    """A case with its own bound on tclass/peer (``engine_cases.Case`` has the one default),
    and optionally on tclass/baseline (the schema cases: their baseline is the same
    statement on the record without specs, and the checks may cost 20%)."""

    peer_target: float = PEER_TARGET
    baseline_target: float | None = None


# The schema cases' bound: specs cost at most 20% on building a record.
SPEC_TARGET = 1.2


# --- tclass ---------------------------------------------------------------------------


@tclass.tensorclass
class TTransition:
    obs: torch.Tensor
    action: torch.Tensor
    reward: torch.Tensor
    env: str


@tclass.tensorclass
class STransition:
    """TTransition with a spec on each tensor field (``k`` binds across nothing else)."""

    obs: Annotated[torch.Tensor, tclass.Spec("3 k", torch.float32)]
    action: Annotated[torch.Tensor, tclass.Spec("2", torch.float32)]
    reward: Annotated[torch.Tensor, tclass.Spec("", torch.float32)]
    env: str


@tclass.tensorclass
class CTransition:
    """STransition with value constraints on each tensor field (issue 31): one fused pass
    over each field's values when a record is built or rows are written."""

    obs: Annotated[torch.Tensor, tclass.Spec("3 k", torch.float32, finite=True)]
    action: Annotated[torch.Tensor, tclass.Spec("2", torch.float32, ge=-10, le=10)]
    reward: Annotated[torch.Tensor, tclass.Spec("", torch.float32, gt=-10, lt=10)]
    env: str


# A replay buffer's rows (the schema issue's row-write case): an 84x84 RGB frame, an action
# and a reward per row, with and without specs.
REPLAY_ROWS = 2048  # the buffer
REPLAY_BATCH = 256  # the rows written at random places


@tclass.tensorclass
class SReplay:
    obs: Annotated[torch.Tensor, tclass.Spec("3 h w", torch.uint8)]
    action: Annotated[torch.Tensor, tclass.Spec("", torch.int64)]
    reward: Annotated[torch.Tensor, tclass.Spec("", torch.float32)]


@tclass.tensorclass
class CReplay:
    """SReplay with the constraints a replay buffer states: six actions, finite rewards
    (the frames unconstrained)."""

    obs: Annotated[torch.Tensor, tclass.Spec("3 h w", torch.uint8)]
    action: Annotated[torch.Tensor, tclass.Spec("", torch.int64, isin=range(6))]
    reward: Annotated[torch.Tensor, tclass.Spec("", torch.float32, finite=True)]


@tclass.tensorclass
class TReplay:
    obs: torch.Tensor
    action: torch.Tensor
    reward: torch.Tensor


@tclass.tensorclass
class TInner:
    x: torch.Tensor


@tclass.tensorclass
class TMid:
    inner: TInner
    y: torch.Tensor


@tclass.tensorclass
class TOuter:
    mid: TMid
    z: torch.Tensor


# --- by hand --------------------------------------------------------------------------


@dataclasses.dataclass
class DTransition:
    obs: torch.Tensor
    action: torch.Tensor
    reward: torch.Tensor
    env: str


@dataclasses.dataclass
class DInner:
    x: torch.Tensor


@dataclasses.dataclass
class DMid:
    inner: DInner
    y: torch.Tensor


@dataclasses.dataclass
class DOuter:
    mid: DMid
    z: torch.Tensor


# --- the peer -------------------------------------------------------------------------


@functools.cache
def _peer_classes(peer: ModuleType) -> dict[str, type]:
    """The same four classes declared with the peer's decorator (once per peer module)."""

    @peer.tensorclass
    class PTransition:
        obs: torch.Tensor
        action: torch.Tensor
        reward: torch.Tensor
        env: str

    @peer.tensorclass
    class PInner:
        x: torch.Tensor

    @peer.tensorclass
    class PMid:
        inner: PInner
        y: torch.Tensor

    @peer.tensorclass
    class POuter:
        mid: PMid
        z: torch.Tensor

    @peer.tensorclass
    class PReplay:
        obs: torch.Tensor
        action: torch.Tensor
        reward: torch.Tensor

    return {
        "Transition": PTransition,
        "Inner": PInner,
        "Mid": PMid,
        "Outer": POuter,
        "Replay": PReplay,
    }


# --- objects --------------------------------------------------------------------------


def _leaves() -> dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(2)
    return {
        "a": torch.randn(BATCH, 3, 4, generator=generator),
        "b": torch.randn(BATCH, 2, generator=generator),
        "c": torch.randn(BATCH, generator=generator),
        "nx": torch.randn(BATCH, 3, generator=generator),
        "ny": torch.randn(BATCH, 2, generator=generator),
        "nz": torch.randn(BATCH, generator=generator),
    }


def _records(
    classes: dict[str, Any], leaves: dict[str, torch.Tensor], tensorclass: bool
) -> dict[str, Any]:
    """One implementation's objects (``r1``, ``small``, ``ones``, ...), from ``classes``."""
    transition, inner, mid, outer = (classes[k] for k in ("Transition", "Inner", "Mid", "Outer"))
    a, b, c = leaves["a"], leaves["b"], leaves["c"]
    batch: dict[str, Any] = {"batch_size": [BATCH]} if tensorclass else {}

    def record(*tensors: torch.Tensor, **options: Any) -> Any:
        return transition(*tensors, "pong", **batch, **options)

    def copy() -> Any:
        return record(a.clone(), b.clone(), c.clone())

    r1 = record(a, b, c)
    if tensorclass:
        small = r1[:10].clone()
        ones = [r1[i].clone() for i in range(BATCH)]
        on_cpu = record(a, b, c, device="cpu")
        x = inner(leaves["nx"], **batch)
        nested = outer(mid(x, leaves["ny"], **batch), leaves["nz"], **batch)
    else:
        small = transition(*(getattr(r1, f)[:10].clone() for f in TENSOR_FIELDS), r1.env)
        ones = [
            transition(*(getattr(r1, f)[i].clone() for f in TENSOR_FIELDS), r1.env)
            for i in range(BATCH)
        ]
        on_cpu = record(a, b, c)
        nested = outer(mid(inner(leaves["nx"]), leaves["ny"]), leaves["nz"])
    return {
        "r1": r1,
        "small": small,  # 10 rows sharing no memory with r1, written into it by index
        "ones": ones,  # 100 single records (batch size [])
        "many": [copy() for _ in range(10)],
        "on_cpu": on_cpu,
        "nested": nested,
        # Equal copies that no other case writes into, so that `==` compares equal data.
        "eq1": copy(),
        "eq2": copy(),
    }


def namespace(peer: ModuleType | None) -> dict[str, Any]:
    """Globals for every statement: tclass ``t*``/``T*``, peer ``p*``/``P*``, by hand
    ``d*``/``D*``."""
    leaves = _leaves()
    ns: dict[str, Any] = {"torch": torch, "tclass": tclass, "peer": peer, "BATCH": BATCH}
    ns.update(leaves)
    ns["mask"] = torch.arange(BATCH) % 3 == 0
    ns["index"] = torch.randint(0, BATCH, (10,), generator=torch.Generator().manual_seed(1))
    ns["plus_one"] = lambda v: v + 1
    implementations: list[tuple[str, dict[str, Any], bool]] = [
        ("t", {"Transition": TTransition, "Inner": TInner, "Mid": TMid, "Outer": TOuter}, True),
        ("d", {"Transition": DTransition, "Inner": DInner, "Mid": DMid, "Outer": DOuter}, False),
    ]
    if peer is not None:
        implementations.append(("p", _peer_classes(peer), True))
    ns["STransition"] = STransition
    ns["sspec"] = STransition(leaves["a"], leaves["b"], leaves["c"], "pong", batch_size=[BATCH])
    ns["ssmall"] = ns["sspec"][:10].clone()
    ns["CTransition"] = CTransition
    ns["cspec"] = CTransition(leaves["a"], leaves["b"], leaves["c"], "pong", batch_size=[BATCH])
    ns["csmall"] = ns["cspec"][:10].clone()
    ns["sother"], ns["cother"] = ns["sspec"].clone(), ns["cspec"].clone()  # copy_ sources
    ns.update(_replay(peer))
    # update() of the three tensor fields with the tensors they hold (nothing changes):
    # the record's, checked all together first, against its storage's (a TensorDict)
    ns["upd"] = {"obs": leaves["a"], "action": leaves["b"], "reward": leaves["c"]}
    ns["tstore"] = tclass.TensorDict(ns["upd"], batch_size=[BATCH])
    for prefix, classes, tensorclass in implementations:
        ns.update({prefix.upper() + name: cls for name, cls in classes.items()})
        ns.update(
            {prefix + name: obj for name, obj in _records(classes, leaves, tensorclass).items()}
        )
    return ns


def _replay(peer: ModuleType | None) -> dict[str, Any]:
    """The replay buffers (``sbuf`` with specs, ``tbuf`` without, ``pbuf`` the peer's),
    the rows written into them (``srows``...) and where (``ridx``)."""
    generator = torch.Generator().manual_seed(3)
    obs = torch.randint(0, 256, (REPLAY_BATCH, 3, 84, 84), dtype=torch.uint8, generator=generator)
    action = torch.randint(0, 6, (REPLAY_BATCH,), generator=generator)
    reward = torch.randn(REPLAY_BATCH, generator=generator)
    classes = {"s": SReplay, "t": TReplay, "c": CReplay}
    if peer is not None:
        classes["p"] = _peer_classes(peer)["Replay"]
    ns: dict[str, Any] = {
        "ridx": torch.randint(0, REPLAY_ROWS, (REPLAY_BATCH,), generator=generator)
    }
    for prefix, cls in classes.items():
        ns[prefix + "buf"] = cls(
            torch.zeros(REPLAY_ROWS, 3, 84, 84, dtype=torch.uint8),
            torch.zeros(REPLAY_ROWS, dtype=torch.int64),
            torch.zeros(REPLAY_ROWS),
            batch_size=[REPLAY_ROWS],
        )
        ns[prefix + "rows"] = cls(obs, action, reward, batch_size=[REPLAY_BATCH])
    return ns


def _both(stmt: str) -> tuple[str, str]:
    """The tclass and peer spellings of a statement: ``@`` prefixes objects, ``^`` classes."""
    return stmt.replace("@", "t").replace("^", "T"), stmt.replace("@", "p").replace("^", "P")


def _by_hand(expr: str, source: str) -> str:
    """A ``DTransition`` of ``expr`` applied to each tensor field of ``source`` (``{}``)."""
    fields = ", ".join(expr.format(f"{source}.{name}") for name in TENSOR_FIELDS)
    return f"DTransition({fields}, {source}.env)"


def _stacked(function: str, records: str) -> str:
    fields = ", ".join(f"{function}([r.{name} for r in {records}])" for name in TENSOR_FIELDS)
    return f"DTransition({fields}, {records}[0].env)"


def tensorclass_cases() -> list[TensorclassCase]:
    """Every case of the tensorclass issue's table, in order."""
    batch = "batch_size=[BATCH]"
    rows: list[tuple[str, str, str, bool, float]] = [
        (
            "tc init",
            f"^Transition(a, b, c, 'pong', {batch})",
            "DTransition(a, b, c, 'pong')",
            False,
            ATTRIBUTE_TARGET,
        ),
        ("tc read", "@r1.obs", "dr1.obs", False, ATTRIBUTE_TARGET),
        ("tc write", "@r1.obs = a", "dr1.obs = a", False, ATTRIBUTE_TARGET),
        (
            "tc nested init",
            f"^Outer(^Mid(^Inner(nx, {batch}), ny, {batch}), nz, {batch})",
            "DOuter(DMid(DInner(nx), ny), nz)",
            False,
            ATTRIBUTE_TARGET,
        ),
        ("tc nested read", "@nested.mid.inner.x", "dnested.mid.inner.x", False, ATTRIBUTE_TARGET),
        ("tc[0]", "@r1[0]", _by_hand("{}[0]", "dr1"), True, PEER_TARGET),
        ("tc[:10]", "@r1[:10]", _by_hand("{}[:10]", "dr1"), True, PEER_TARGET),
        ("tc[mask]", "@r1[mask]", _by_hand("{}[mask]", "dr1"), True, PEER_TARGET),
        (
            "tc[idx] = other",
            "@r1[index] = @small",
            "; ".join(f"dr1.{name}[index] = dsmall.{name}" for name in TENSOR_FIELDS),
            True,
            PEER_TARGET,
        ),
        (
            "tc torch.stack of 100",
            "torch.stack(@ones)",
            _stacked("torch.stack", "dones"),
            True,
            PEER_TARGET,
        ),
        (
            "tc torch.cat of 10",
            "torch.cat(@many)",
            _stacked("torch.cat", "dmany"),
            True,
            PEER_TARGET,
        ),
        (
            'tc to("cpu") (no-op)',
            "@on_cpu.to('cpu')",
            _by_hand("{}.to('cpu')", "don_cpu"),
            False,
            PEER_TARGET,
        ),
        ("tc clone", "@r1.clone()", _by_hand("{}.clone()", "dr1"), True, PEER_TARGET),
        (
            "tc apply(x + 1)",
            "@r1.apply(plus_one)",
            _by_hand("plus_one({})", "dr1"),
            True,
            PEER_TARGET,
        ),
        (
            "tc (a == b).all()",
            "(@eq1 == @eq2).all()",
            " and ".join(f"bool((deq1.{name} == deq2.{name}).all())" for name in TENSOR_FIELDS)
            + " and deq1.env == deq2.env",
            True,
            PEER_TARGET,
        ),
    ]
    cases = []
    for name, stmt, baseline, tensor_bound, peer_target in rows:
        ours, theirs = _both(stmt)
        cases.append(TensorclassCase(name, ours, theirs, baseline, tensor_bound, peer_target))
    return cases + _schema_cases()


def _schema_cases() -> list[TensorclassCase]:
    """The schema issue's cases: the record with specs against the same record without
    (the baseline column), and against the peer's record (which checks nothing)."""
    init = "Transition(a, b, c, 'pong', batch_size=[BATCH])"
    return [
        TensorclassCase(
            "tc init, 3 spec'd fields",
            f"S{init}",
            f"P{init}",
            f"T{init}",
            peer_target=ATTRIBUTE_TARGET,
            baseline_target=SPEC_TARGET,
        ),
        # A spec'd field's write also reads the tensor's dtype and shape (about 0.15 us):
        # held to the default bound.
        TensorclassCase("tc write, a spec'd field", "sspec.obs = a", "pr1.obs = a", "tr1.obs = a"),
        # Row writes check each spec'd field's dtype and feature dims first: at most 20%.
        TensorclassCase(
            "tc[idx] = rows, 3 spec'd fields",
            "sspec[index] = ssmall",
            "pr1[index] = psmall",
            "tr1[index] = tsmall",
            tensor_bound=True,
            baseline_target=SPEC_TARGET,
        ),
        # 256 rows of a replay buffer (5.4 MB of frames): the copy dominates, for the peer
        # too, so tclass is held to the peer's time rather than half of it.
        TensorclassCase(
            "tc[idx] = 256 replay rows, spec'd",
            "sbuf[ridx] = srows",
            "pbuf[ridx] = prows",
            "tbuf[ridx] = trows",
            tensor_bound=True,
            peer_target=1.0,
            baseline_target=SPEC_TARGET,
        ),
        # update() checks every field it sets (types, specs together) on a copy of the
        # record's storage before writing: against the same update of a TensorDict.
        TensorclassCase(
            "tc update({3 fields})", "tr1.update(upd)", "pr1.update(upd)", "tstore.update(upd)"
        ),
        *_constraint_cases(),
    ]


# The constraint cases' bounds against the same record with specs and no constraints:
# building 100 rows pays one aminmax and two item() per field (a few us each); a row
# write reads the rows written, once.
CONSTRAINT_INIT_TARGET = 5.0
CONSTRAINT_ROWS_TARGET = 3.0
CONSTRAINT_REPLAY_TARGET = 1.3
# In-place math and copy_ into constrained fields: each field's result computed into a
# copy, checked (one aminmax pass), then copied in: a few us per field on 100 rows.
CONSTRAINT_INPLACE_TARGET = 3.0
# In-place math on a record runs at the peer's speed (its all-or-nothing dtype and shape
# check costs what the peer's walk does); constrained fields add their copies and checks.
INPLACE_PEER_TARGET = 1.1
CONSTRAINT_INPLACE_PEER_TARGET = 3.0


def _constraint_cases() -> list[TensorclassCase]:
    """The constraint issue's cases (31): the record with constrained specs against the
    same record with unconstrained ones (the baseline column), and the peer's."""
    init = "Transition(a, b, c, 'pong', batch_size=[BATCH])"
    return [
        TensorclassCase(
            "tc init, 3 constrained fields",
            f"C{init}",
            f"P{init}",
            f"S{init}",
            peer_target=PEER_TARGET,
            baseline_target=CONSTRAINT_INIT_TARGET,
        ),
        TensorclassCase(
            "tc[idx] = rows, 3 constrained fields",
            "cspec[index] = csmall",
            "pr1[index] = psmall",
            "sspec[index] = ssmall",
            tensor_bound=True,
            baseline_target=CONSTRAINT_ROWS_TARGET,
        ),
        TensorclassCase(
            "tc[idx] = 256 replay rows, constrained",
            "cbuf[ridx] = crows",
            "pbuf[ridx] = prows",
            "sbuf[ridx] = srows",
            tensor_bound=True,
            peer_target=1.1,  # the peer checks nothing: the two passes over 256 values
            baseline_target=CONSTRAINT_REPLAY_TARGET,
        ),
        # In-place writes: unconstrained fields pay nothing (the spec'd record against the
        # plain one), constrained ones a copy and a check each.
        TensorclassCase(
            "tc.mul_(1.0), 3 spec'd fields",
            "sspec.mul_(1.0)",
            "pr1.mul_(1.0)",
            "tr1.mul_(1.0)",
            tensor_bound=True,
            peer_target=INPLACE_PEER_TARGET,
            baseline_target=SPEC_TARGET,
        ),
        TensorclassCase(
            "tc.mul_(1.0), 3 constrained fields",
            "cspec.mul_(1.0)",
            "pr1.mul_(1.0)",
            "sspec.mul_(1.0)",
            tensor_bound=True,
            peer_target=CONSTRAINT_INPLACE_PEER_TARGET,
            baseline_target=CONSTRAINT_INPLACE_TARGET,
        ),
        TensorclassCase(
            "tc.copy_(other), 3 constrained fields",
            "cspec.copy_(cother)",
            "pr1.copy_(peq1)",
            "sspec.copy_(sother)",
            tensor_bound=True,
            peer_target=CONSTRAINT_INPLACE_PEER_TARGET,
            baseline_target=CONSTRAINT_INPLACE_TARGET,
        ),
    ]
