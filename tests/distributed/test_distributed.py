"""tclass.distributed: records over torch.distributed, with real processes.

Two ranks joined by gloo on 127.0.0.1 are spawned once per module (a process costs about
1.5 s to start here) and run each scenario below on request; a scenario that fails or
hangs restarts them for the next test. The wire-format helpers (``_wire.py``) are tested
in this process. The NCCL cases are marked ``cuda`` and need at least one GPU (NCCL
refuses two ranks on one device, so they run a single-rank group).
"""

from __future__ import annotations

import os
import queue
import socket
import traceback
import warnings
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import tclass
from tclass import LazyStackedTensorDict, NonTensorStack, TensorClass, TensorDict
from tclass.distributed import _wire
from tclass.errors import (
    DistributedError,
    NotSerializableError,
    StructureMismatchError,
    UnsupportedError,
)

has_cuda = torch.cuda.is_available()
needs_cuda = [pytest.mark.cuda, pytest.mark.skipif(not has_cuda, reason="needs a CUDA device")]


class Inner(TensorClass):
    x: torch.Tensor


class Step(TensorClass):
    obs: torch.Tensor
    reward: torch.Tensor
    inner: Inner
    env: str = "pong"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


# --- the two ranks ------------------------------------------------------------------------


def _serve(rank: int, world: int, port: int, inbox: Any, outbox: Any) -> None:
    """A rank: joins the group, then runs ``(function, args)`` jobs until ``None``."""
    warnings.simplefilter("error")  # as pytest's filterwarnings = error
    dist.init_process_group(
        "gloo",
        init_method=f"tcp://127.0.0.1:{port}",
        rank=rank,
        world_size=world,
        timeout=timedelta(seconds=20),
    )
    while (job := inbox.get()) is not None:
        function, args = job
        try:
            outbox.put((rank, True, function(rank, *args)))
        except BaseException:
            outbox.put((rank, False, traceback.format_exc()))
    dist.destroy_process_group()


class Ranks:
    """Two spawned gloo ranks; ``run(f, *args)`` calls ``f(rank, *args)`` on both and
    returns their results in rank order (a rank's exception fails the test)."""

    def __init__(self, world: int = 2) -> None:
        self.world = world
        self._processes: list[Any] = []

    def _start(self) -> None:
        context = mp.get_context("spawn")
        port = free_port()
        self._inboxes = [context.SimpleQueue() for _ in range(self.world)]
        self._outbox = context.Queue()
        self._processes = [
            context.Process(
                target=_serve,
                args=(rank, self.world, port, self._inboxes[rank], self._outbox),
                daemon=True,
            )
            for rank in range(self.world)
        ]
        for process in self._processes:
            process.start()

    def run(self, function: Callable[..., Any], *args: Any, timeout: float = 60) -> list[Any]:
        if not self._processes or not all(process.is_alive() for process in self._processes):
            self.close()
            self._start()
        for inbox in self._inboxes:
            inbox.put((function, args))
        results: dict[int, Any] = {}
        try:
            for _ in range(self.world):
                rank, ok, value = self._outbox.get(timeout=timeout)
                results[rank] = (ok, value)
        except queue.Empty:
            self.close()  # a hung rank: start afresh for the next test
            pytest.fail(f"{function.__name__} did not finish within {timeout} s on every rank")
        failures = [
            f"rank {rank}:\n{value}" for rank, (ok, value) in sorted(results.items()) if not ok
        ]
        if failures:
            self.close()
            pytest.fail("\n".join(failures))
        return [results[rank][1] for rank in range(self.world)]

    def close(self) -> None:
        for process in self._processes:
            if process.is_alive():
                self._inboxes[self._processes.index(process)].put(None)
        for process in self._processes:
            process.join(5)
            if process.is_alive():
                process.kill()
                process.join()
        self._processes = []


@pytest.fixture(scope="module")
def ranks() -> Iterator[Ranks]:
    pool = Ranks()
    yield pool
    pool.close()


def _record(rank: int) -> TensorDict:
    """Mixed dtypes and sizes: packed small leaves, large ones alone, empty and 0-d."""
    base = float(rank * 1000)
    return TensorDict(
        {
            "a": torch.arange(12.0).reshape(4, 3) + base,
            "big": torch.arange(4 * 20_000, dtype=torch.float32).reshape(4, 20_000) + base,
            "n": {
                "i": torch.arange(4, dtype=torch.int64) + rank,
                "flag": torch.tensor([True, False, True, bool(rank)]),
                "h": torch.full((4, 2), base, dtype=torch.bfloat16),
                "empty": torch.zeros(4, 0),
            },
            "scalar": torch.full((4,), base, dtype=torch.float64),
        },
        batch_size=[4],
    )


def _same(a: Any, b: Any) -> bool:
    items = dict(a.items(include_nested=True, leaves_only=True))
    other = dict(b.items(include_nested=True, leaves_only=True))
    return items.keys() == other.keys() and all(torch.equal(items[k], other[k]) for k in items)


def _step(rank: int, env: str = "pong") -> Step:
    return Step(
        obs=torch.full((3, 5), float(rank)),
        reward=torch.arange(3.0) + rank,
        inner=Inner(torch.full((3, 50_000), rank, dtype=torch.int16), batch_size=[3]),
        env=env,
        batch_size=[3],
    )


# --- point to point --------------------------------------------------------------------------


def send_recv_td(rank: int, consolidated: bool | None) -> bool:
    mine = _record(rank)
    if rank == 0:
        assert mine.send(1, consolidated=consolidated) is None
        return True
    out = mine.recv(0)
    return out is mine and _same(mine, _record(0))


@pytest.mark.parametrize("consolidated", [None, True, False])
def test_send_recv_fills_the_preallocated_record(ranks: Ranks, consolidated: bool | None) -> None:
    assert ranks.run(send_recv_td, consolidated) == [True, True]


def send_recv_tensorclass(rank: int) -> tuple[str, bool, str]:
    record = _step(rank, env=f"env{rank}")
    if rank == 0:
        record.send(1, init_tag=7)
        return ("sent", True, record.env)
    # A receiver whose leaves are not contiguous, and locked: written in place all the same.
    record.obs = torch.zeros(5, 3).t()
    record.lock_()
    out = record.recv(0, init_tag=7)
    same = torch.equal(out.obs, _step(0).obs) and torch.equal(out.inner.x, _step(0).inner.x)
    return (type(out).__name__, out is record and same and not out.obs.is_contiguous(), out.env)


def test_tensorclass_values_travel_as_json(ranks: Ranks) -> None:
    assert ranks.run(send_recv_tensorclass)[1] == ("Step", True, "env0")


def send_parameters(rank: int) -> list[bool]:
    """Leaves that require grad travel and are written in place without autograd."""
    weight = torch.nn.Parameter(torch.full((3, 4), float(rank)))
    record = TensorDict(
        w=weight, b=torch.nn.Parameter(torch.full((4, 3), float(rank)).t()), batch_size=[3]
    )
    if rank == 0:
        record.send(1)
        record.all_reduce()
        return [True, True]
    record.recv(0)
    received = (
        bool(weight.eq(0).all()) and record["b"] is not None and bool(record["b"].eq(0).all())
    )
    record.all_reduce()
    return [received and weight.requires_grad, weight.grad is None and bool(weight.eq(0).all())]


def test_leaves_that_require_grad(ranks: Ranks) -> None:
    assert ranks.run(send_parameters) == [[True, True], [True, True]]


def send_lazy_stack(rank: int) -> bool:
    members = [
        TensorDict(a=torch.full((2, size), float(rank)), batch_size=[2]) for size in (3, 40_000)
    ]
    stack = tclass.lazy_stack(members)
    if rank == 0:
        stack.send(1)
        return True
    assert isinstance(stack.recv(0), LazyStackedTensorDict)
    return all(bool(member["a"].eq(0).all()) for member in stack.tensordicts)


def test_lazy_stacks_travel_member_by_member(ranks: Ranks) -> None:
    assert ranks.run(send_lazy_stack) == [True, True]


def mismatched(rank: int, change: str) -> list[Any]:
    """Rank 1 receives into a record that differs; then a matching transfer on the same
    tags still works (nothing was left pending)."""
    if rank == 0:
        _record(0).send(1)
        _record(0).send(1)
        return []
    wrong = _record(1)
    if change == "shape":
        wrong["a"] = torch.zeros(4, 5)
    elif change == "dtype":
        wrong["n", "i"] = torch.zeros(4, dtype=torch.int32)
    elif change == "missing":
        del wrong["n", "flag"]
    else:
        wrong["extra"] = torch.zeros(4)
    before = wrong.clone()
    try:
        wrong.recv(0)
    except StructureMismatchError as error:
        outcome = [str(error), error.key, error.rank, _same(wrong, before)]
    else:
        outcome = ["no error"]
    right = _record(1)
    right.recv(0)
    return [*outcome, _same(right, _record(0))]


@pytest.mark.parametrize(
    ("change", "key", "words"),
    [
        ("shape", ("a",), "rank 0 sent float32 [4, 3], this record has float32 [4, 5]"),
        ("dtype", ("n", "i"), "rank 0 sent int64 [4], this record has int32 [4]"),
        ("missing", ("n", "flag"), "rank 0 sent bool [4], this record has nothing"),
        ("extra", ("extra",), "rank 0 sent nothing, this record has float32 [4]"),
    ],
)
def test_a_different_structure_names_the_first_key(
    ranks: Ranks, change: str, key: tuple[str, ...], words: str
) -> None:
    message, error_key, rank, unchanged, then_ok = ranks.run(mismatched, change)[1]
    assert error_key == key and rank == 0 and unchanged and then_ok
    named = repr(key[0]) if len(key) == 1 else repr(key)
    assert message.startswith(
        f"recv: the record rank 0 sent differs from this one at key {named}: "
    )
    assert words in message and "pre-allocate the receiving record" in message


def refused_values(rank: int) -> str:
    if rank == 0:
        bad = _record(0)
        bad["tag"] = tclass.NonTensorData(object(), batch_size=[4])
        try:
            bad.send(1)
        except NotSerializableError as error:
            message = str(error)
        _record(0).send(1)  # no data was sent before the error, only its refusal
        return message
    try:
        _record(1).recv(0)
    except DistributedError as error:
        refusal = str(error)
    mine = _record(1).recv(0)
    return refusal if _same(mine, _record(0)) else "not received"


def test_a_value_that_is_not_json_is_refused_before_sending(ranks: Ranks) -> None:
    message, refusal = ranks.run(refused_values)
    assert "key ('tag',)" in message and "send_object_list" in message
    assert f"NotSerializableError: {message}" in refusal


def _jagged() -> Inner:
    rows = [torch.arange(3.0), torch.arange(5.0)]
    return Inner(torch.nested.as_nested_tensor(rows, layout=torch.jagged), batch_size=[2])


def refused_sends(rank: int, how: str) -> tuple[str, bool]:
    """Rank 0's ``how`` refuses a record that cannot travel (rank 1 waits for it in
    recv / irecv / from_remote_init); then a record that can goes through."""
    if rank == 0:
        bad = _record(0)
        bad["tag"] = tclass.NonTensorData(object(), batch_size=[4])
        try:
            if how == "send":
                bad.send(1)
            elif how == "isend":
                _jagged().isend(1, return_early=True)
            else:
                bad.init_remote(dst=1)
        except (NotSerializableError, UnsupportedError) as error:
            message = f"{type(error).__name__}: {error}"
        else:
            message = "no error"
        if how == "init_remote":
            _record(0).init_remote(dst=1)
        else:
            _record(0).send(1)
        return message, True
    try:
        if how == "send":
            _record(1).recv(0)
        elif how == "isend":
            _record(1).irecv(0, return_premature=True).wait(timeout=20)
        else:
            TensorDict.from_remote_init(src=0)
    except DistributedError as error:
        message = str(error)
    else:
        message = "no error"
    if how == "init_remote":
        then = TensorDict.from_remote_init(src=0)
    else:
        then = _record(1).recv(0)
    return message, _same(then, _record(0))


@pytest.mark.parametrize("how", ["send", "isend", "init_remote"])
def test_a_refused_send_releases_the_receiving_rank(ranks: Ranks, how: str) -> None:
    # the sender raised before sending anything, so the receiver waited in recv forever
    # (and the peer: its send drops a Python value silently, a jagged leaf ...); now it
    # is sent a refusal and raises the sender's error, and the next transfer goes through
    (sent, _), (received, then) = ranks.run(refused_sends, how, timeout=40)
    words = "NotSerializableError: cannot send the Python value at key ('tag',)"
    if how == "isend":
        words = "UnsupportedError: "
    assert sent.startswith(words), sent
    assert received.startswith("rank 0 raised instead of sending, so nothing was received here")
    assert sent in received
    assert then


def not_a_record(rank: int) -> str:
    if rank == 0:
        dist.send(torch.zeros(_wire.HEADER_SIZE, dtype=torch.int64), 1, tag=3)
        return ""
    try:
        _record(1).recv(0, init_tag=3)
    except DistributedError as error:
        return str(error)
    return "no error"


def test_a_plain_tensor_is_not_taken_for_a_record(ranks: Ranks) -> None:
    assert "rank 0 did not send a tclass record" in ranks.run(not_a_record)[1]


def async_exchange(rank: int) -> list[bool]:
    """Both ranks send and receive at once, on separate tag ranges."""
    mine, theirs = _record(rank), _record(rank)
    sending = mine.isend(1 - rank, init_tag=100 * rank, return_early=True)
    receiving = theirs.irecv(1 - rank, init_tag=100 * (1 - rank), return_premature=True)
    assert sending.wait(timeout=20) is mine
    out = receiving.wait(timeout=20)
    return [
        out is theirs,
        _same(theirs, _record(1 - rank)),
        receiving.is_completed(),
        sending.is_completed(),
    ]


def test_isend_irecv_handles(ranks: Ranks) -> None:
    assert ranks.run(async_exchange) == [[True, True, True, True]] * 2


def irecv_error(rank: int) -> str:
    if rank == 0:
        _record(0).send(1)
        return ""
    handle = TensorDict(a=torch.zeros(2), batch_size=[2]).irecv(0, return_premature=True)
    try:
        handle.wait()
    except StructureMismatchError as error:
        return type(error).__name__
    return "no error"


def test_irecv_raises_from_wait(ranks: Ranks) -> None:
    assert ranks.run(irecv_error)[1] == "StructureMismatchError"


def waited_exchange(rank: int) -> list[Any]:
    """The peer's flags: without them isend / irecv return once the transfer is done (so
    the record can be read or changed at once), with them the handle is waited on as
    the peer's list of works is."""
    td = TensorDict(a=torch.full((3,), float(rank)), batch_size=[3])
    if rank == 0:
        done = td.isend(dst=1).is_completed()
        td["a"] += 1  # safe: isend returned once sent
        works = td.isend(dst=1, return_early=True)
        for work in works:
            work.wait()
        return [done]
    td.irecv(src=0)
    first = td["a"].tolist()  # read at once: irecv returned once it held the data
    works = td.irecv(src=0, return_premature=True)
    for work in works:
        work.wait()
    return [first, td["a"].tolist()]


def test_isend_irecv_wait_unless_given_the_peers_flags(ranks: Ranks) -> None:
    assert ranks.run(waited_exchange) == [[True], [[0.0] * 3, [1.0] * 3]]


def into_memmap(rank: int, folder: str) -> bool:
    if rank == 0:
        _record(0).send(1)
        return True
    files = _record(1).memmap_like(os.path.join(folder, "received"))
    files.recv(0)
    back = TensorDict.load_memmap(os.path.join(folder, "received"))
    return files.is_memmap() and _same(back, _record(0))


def test_recv_into_a_memory_mapped_record_writes_its_files(ranks: Ranks, tmp_path: Any) -> None:
    assert ranks.run(into_memmap, str(tmp_path)) == [True, True]


# --- collectives ---------------------------------------------------------------------------


def broadcast_cases(rank: int) -> list[Any]:
    own = _record(rank)
    got = own.broadcast(0)
    built = (_step(0, env="built") if rank == 0 else TensorDict()).broadcast(0)
    # a receiver's record of another structure is no matter either, as in the peer
    other = (_record(0) if rank == 0 else TensorDict(z=torch.ones(2), batch_size=[2])).broadcast(0)
    # the sender's lock is built on every rank, as the peer's broadcast does
    locked = (_record(0).lock_() if rank == 0 else TensorDict()).broadcast(0)
    return [
        _same(got, _record(0)),
        (got is own) == (rank == 0),
        _same(own, _record(rank)),  # the receiver's own record is left as it was
        type(built).__name__,
        built.env,
        built.batch_size,
        _same(built, _step(0)),
        _same(other, _record(0)),
        (locked.is_locked, got.is_locked),
    ]


def test_broadcast_returns_the_senders_record_and_leaves_the_receivers(ranks: Ranks) -> None:
    for result in ranks.run(broadcast_cases):
        assert result == [
            True,
            True,
            True,
            "Step",
            "built",
            torch.Size([3]),
            True,
            True,
            (True, False),
        ]


def refused_broadcast(rank: int) -> tuple[str, bool]:
    record = _record(rank)
    if rank == 0:
        record["tag"] = tclass.NonTensorData(object(), batch_size=[4])
    try:
        record.broadcast(0)
    except (NotSerializableError, DistributedError) as error:
        message = f"{type(error).__name__}: {error}"
    else:
        message = "no error"
    return message, _same(_record(rank).broadcast(0), _record(0))


def test_a_refused_broadcast_releases_the_receiving_ranks(ranks: Ranks) -> None:
    # the source refuses a value JSON cannot hold and tells the waiting ranks (the
    # peer's receivers block forever there); the next broadcast goes through
    (sent, again_0), (received, again_1) = ranks.run(refused_broadcast, timeout=30)
    assert sent.startswith("NotSerializableError: cannot send the Python value at key ('tag',)")
    assert received.startswith(
        "DistributedError: rank 0 raised instead of sending, so nothing was received here"
    )
    assert "NotSerializableError: cannot send the Python value at key ('tag',)" in received
    assert again_0 and again_1


def reduce_cases(rank: int) -> list[Any]:
    record = _record(rank)
    del record["n", "flag"]  # gloo sums bools as ints; keep to numbers
    expected = {
        key: value.clone() for key, value in _record(0).exclude(("n", "flag")).items(True, True)
    }
    second = _record(1).exclude(("n", "flag"))
    summed = record.all_reduce()
    exact = all(
        torch.equal(summed.get(key), value + second.get(key)) for key, value in expected.items()
    )
    record = _record(rank).exclude(("n", "flag"))
    handle = record.all_reduce(dist.ReduceOp.MAX, async_op=True)
    maxed = handle.wait()
    return [summed is not None, exact, _same(maxed, second)]


def test_all_reduce_sums_every_leaf(ranks: Ranks) -> None:
    assert ranks.run(reduce_cases) == [[True, True, True]] * 2


def reduce_mismatch(rank: int) -> list[Any]:
    record = TensorDict(a=torch.zeros(3 + rank), batch_size=[])
    try:
        record.all_reduce()
    except StructureMismatchError as error:
        return [str(error), error.rank]
    return ["no error"]


def test_all_reduce_of_different_records_fails_on_every_rank(ranks: Ranks) -> None:
    for message, rank in ranks.run(reduce_mismatch):
        assert rank == 1
        assert message.startswith(
            "all_reduce: the ranks' records differ at key 'a': rank 0 has float32 [3], "
            "rank 1 has float32 [4]"
        )


def gather_cases(rank: int) -> list[Any]:
    step = _step(rank, env=f"env{rank}")
    gathered = step.all_gather()
    same_env = _step(rank).all_gather()
    plain = _record(rank).all_gather()
    lazy = tclass.lazy_stack(
        [TensorDict(a=torch.full((2, size), float(rank)), batch_size=[2]) for size in (3, 5)]
    )
    lazy_gathered = lazy.all_gather()
    members = [
        (member["a"].shape, member["a"][:, 0, 0].tolist()) for member in lazy_gathered.tensordicts
    ]
    return [
        type(gathered).__name__, gathered.batch_size, _same(gathered[1], _step(1)), gathered.env,
        isinstance(gathered._tensordict._tensors["env"], NonTensorStack), same_env.env,
        plain.batch_size, _same(plain[0], _record(0)) and _same(plain[1], _record(1)),
        type(lazy_gathered).__name__, lazy_gathered.batch_size, members,
    ]  # fmt: skip


def test_all_gather_stacks_every_rank(ranks: Ranks) -> None:
    for result in ranks.run(gather_cases):
        assert result == [
            "Step",
            torch.Size([2, 3]),
            True,
            [["env0"] * 3, ["env1"] * 3],
            True,
            "pong",
            torch.Size([2, 4]),
            True,
            "LazyStackedTensorDict",
            torch.Size([2, 2, 2]),
            [(torch.Size([2, 2, 3]), [0.0, 1.0]), (torch.Size([2, 2, 5]), [0.0, 1.0])],
        ]


def gather_uniform_lazy(rank: int) -> list[Any]:
    """A lazy stack whose members have one shape (which ``unsqueeze`` would make dense)."""
    rows = TensorDict(a=torch.arange(6.0).reshape(3, 2) + 10 * rank, batch_size=[3])
    gathered = tclass.lazy_stack([rows[0], rows[1]]).all_gather()
    holder = TensorDict(x=tclass.lazy_stack([rows[0], rows[1]]), batch_size=[2]).all_gather()
    return [
        type(holder.get("x")).__name__,
        [member["x", "a"].tolist() for member in holder],
        type(gathered).__name__,
        gathered.batch_size,
        gathered.stack_dim,
        [member["a"].tolist() for member in gathered],
    ]


def test_all_gather_of_a_lazy_stack_of_one_shape_stays_lazy(ranks: Ranks) -> None:
    """Gathered into a lazy stack of its members, each ``[world, ...]`` (an IndexError
    before: the target was made dense, and its leaves no longer matched the stack's)."""
    for result in ranks.run(gather_uniform_lazy):
        assert result == [
            "LazyStackedTensorDict",  # a lazy stack below the root too, as the peer
            [[[0.0, 1.0], [2.0, 3.0]], [[10.0, 11.0], [12.0, 13.0]]],
            "LazyStackedTensorDict",
            torch.Size([2, 2]),
            1,
            [[[0.0, 1.0], [2.0, 3.0]], [[10.0, 11.0], [12.0, 13.0]]],
        ]


def gather_lazy_records(rank: int) -> list[Any]:
    """Lazy stacks of records of one shape: alone, held by a TensorDict, as a field."""
    rows = [Inner(torch.full((2, 3), float(10 * rank + i)), batch_size=[2]) for i in range(2)]
    stacked = tclass.lazy_stack(rows)
    gathered = stacked.all_gather()
    holder = TensorDict(x=tclass.lazy_stack(rows), batch_size=[2]).all_gather()
    steps = [_step(rank, env=f"e{i}") for i in range(2)]
    field = tclass.lazy_stack(steps).all_gather()
    return [
        type(gathered).__name__,
        type(gathered._tensordict).__name__,
        gathered.batch_size,
        gathered._tensordict.stack_dim,
        gathered.x[:, :, :, 0].tolist(),
        type(holder.get("x")).__name__,
        holder.get("x").x[:, :, :, 0].tolist(),
        type(field).__name__,
        field.batch_size,
        field.inner.x[:, :, 0, 0].tolist(),
        field.env,
    ]


def test_all_gather_of_a_lazy_stack_of_records_stays_a_lazy_record(ranks: Ranks) -> None:
    """A record over a lazy stack is gathered into a record over a lazy stack, each member
    ``[world, ...]`` (an UnsupportedError before when the members had one shape: the
    target was made dense; the peer gathers it, into a list of each rank's stack)."""
    for result in ranks.run(gather_lazy_records):
        assert result == [
            "Inner",
            "LazyStackedTensorDict",
            torch.Size([2, 2, 2]),
            1,
            [[[0.0, 0.0], [1.0, 1.0]], [[10.0, 10.0], [11.0, 11.0]]],
            "Inner",
            [[[0.0, 0.0], [1.0, 1.0]], [[10.0, 10.0], [11.0, 11.0]]],
            "Step",
            torch.Size([2, 2, 3]),
            [[0, 0], [1, 1]],
            [[["e0"] * 3, ["e1"] * 3]] * 2,
        ]


# --- without processes ---------------------------------------------------------------------


def test_not_initialized_says_how_to_fix() -> None:
    if dist.is_initialized():
        pytest.skip("a process group is initialized in this process")
    with pytest.raises(DistributedError, match="init_process_group"):
        _record(0).send(1)


def test_the_description_ignores_insertion_order_and_values() -> None:
    a = TensorDict({"x": torch.zeros(2), "y": {"z": torch.ones(2, dtype=torch.int8)}}, [2])
    b = TensorDict({"y": {"z": torch.ones(2, dtype=torch.int8)}, "x": torch.ones(2)}, [2])
    assert _wire.layout_of(a).digest == _wire.layout_of(b).digest
    assert [t.dtype for t in _wire.layout_of(b).leaves] == [torch.float32, torch.int8]
    assert _wire.layout_of(_step(0, "a")).digest == _wire.layout_of(_step(1, "b")).digest
    b["x"] = torch.ones(3, dtype=torch.float32)[:2]
    b["y", "z"] = torch.ones(2, dtype=torch.int16)
    path, mine, theirs = _wire.first_difference(
        _wire.layout_of(a).description, _wire.layout_of(b).description
    )
    assert (path, mine, theirs) == (("y", "z"), "int8 [2]", "int16 [2]")


def test_bucket_plan_packs_small_leaves_and_sends_large_ones_alone() -> None:
    sizes = [10, 40_000, 0, 20, 30_000, 5]
    assert _wire.bucket_plan(sizes, 32_768, 1 << 20) == [[0, 3, 4, 5], [1]]
    assert _wire.bucket_plan(sizes, 32_768, 32) == [[0, 3], [4], [5], [1]]
    assert _wire.bucket_plan(sizes, -1, 0) == [[0], [1], [3], [4], [5]]


def test_pack_and_unpack_round_trip_any_layout() -> None:
    leaves = [
        torch.arange(6.0).reshape(2, 3).t(),
        torch.tensor([True, False]),
        torch.tensor(7, dtype=torch.int64),
        torch.tensor([1 + 2j], dtype=torch.complex64).conj(),
        torch.arange(3, dtype=torch.bfloat16),
    ]
    buffer = _wire.pack(leaves, torch.device("cpu"))
    targets = [torch.empty_like(leaf.resolve_conj()) for leaf in leaves]
    targets[0] = torch.empty(2, 3).t()  # a non-contiguous target
    _wire.unpack(buffer, targets)
    assert all(torch.equal(t, leaf.resolve_conj()) for t, leaf in zip(targets, leaves))


def test_values_refuse_what_json_cannot_hold() -> None:
    record = _record(0)
    record["tag"] = tclass.NonTensorData({1, 2}, batch_size=[4])
    with pytest.raises(NotSerializableError, match=r"key \('tag',\)"):
        _wire.encode_values(_wire.layout_of(record).slots)


def test_values_set_replaces_only_what_changed() -> None:
    record = _step(0, "pong")
    slots = _wire.layout_of(record).slots
    node = slots[0].node
    _wire.set_values(slots, [{"one": "pong"}])
    assert record._tensordict._tensors["env"] is node
    _wire.set_values(slots, [{"each": ["a", "b", "c"]}])
    assert record.env == ["a", "b", "c"]


def test_only_collections_travel() -> None:
    with pytest.raises(UnsupportedError, match="cannot transfer a NonTensorData"):
        _wire.layout_of(tclass.NonTensorData("x"))


def test_a_nested_tensor_is_refused_by_key_before_sending() -> None:
    """A jagged nested tensor has no fixed shape to receive into (the peer fails in
    torch.distributed, with no kernel for it); named before any message is sent."""
    rows = [torch.arange(3.0), torch.arange(5.0)]
    jagged = torch.nested.as_nested_tensor(rows, layout=torch.jagged)
    record = TensorDict({"x": torch.ones(2), "n": {"nt": jagged}}, [2])
    with pytest.raises(UnsupportedError, match=r"key \('n', 'nt'\) \(layout torch.jagged\)"):
        _wire.layout_of(record)
    with pytest.raises(NotImplementedError):  # as the peer raises
        _wire.layout_of(record.consolidate())


# --- NCCL (a GPU machine) --------------------------------------------------------------------


@pytest.mark.cuda
@pytest.mark.skipif(not has_cuda, reason="needs a CUDA device")
def test_nccl_collectives_on_one_gpu() -> None:
    """NCCL moves CUDA tensors; a one-rank group runs every collective's code path."""
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ["MASTER_PORT"] = str(free_port())
    dist.init_process_group("nccl", rank=0, world_size=1)
    try:
        record = _record(0).exclude(("n", "flag")).to("cuda")
        expected = record.clone()
        assert _same(record.all_reduce(), expected)
        assert _same(record.broadcast(0), expected)
        gathered = record.all_gather()
        assert gathered.batch_size == torch.Size([1, 4]) and _same(gathered[0], expected)
        assert gathered["a"].device.type == "cuda"
    finally:
        dist.destroy_process_group()
