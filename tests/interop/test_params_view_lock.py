"""Views of a ``TensorDictParams`` follow the lock of the TensorDict it wraps, as the
peer's: over a locked TensorDict (or one built with ``lock=True``, or unlocked after it),
``data`` and every shape view (``unsqueeze``, ``view``, ``permute``, ``reshape``,
``expand``, ``flatten``...) is locked, though the params object itself reads unlocked;
over an unlocked one they are unlocked, and math results stay unlocked in both."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch

from tclass import TensorDict, TensorDictParams
from tclass.errors import LockedError


def _wrapped(how: str) -> TensorDictParams:
    data = TensorDict(
        w=torch.ones(2, 3),
        n=TensorDict(v=torch.zeros(2, 3, 1), batch_size=[2, 3]),
        batch_size=[2, 3],
    )
    if how == "locked":
        return TensorDictParams(data.lock_())
    if how == "lock=True":
        return TensorDictParams(data, lock=True)
    if how == "unlocked after lock=True":
        return TensorDictParams(data, lock=True).unlock_()
    return TensorDictParams(data)


_VIEWS: dict[str, Callable[[Any], Any]] = {
    "data": lambda p: p.data,
    "unsqueeze": lambda p: p.unsqueeze(0),
    "squeeze": lambda p: p.unsqueeze(0).squeeze(0),
    "view": lambda p: p.view(3, 2),
    "view(-1)": lambda p: p.view(-1),
    "reshape": lambda p: p.reshape(-1),
    "permute": lambda p: p.permute(1, 0),
    "transpose": lambda p: p.transpose(0, 1),
    "expand": lambda p: p.expand(4, 2, 3),
    "flatten": lambda p: p.flatten(0, 1),
    "unflatten": lambda p: p.unflatten(0, (1, 2)),
    "repeat": lambda p: p.repeat(2, 1),
    "split": lambda p: p.split(1)[0],
    "chunk": lambda p: p.chunk(2)[0],
    "tensor_split": lambda p: p.tensor_split(2, 1)[0],
    "where": lambda p: p.where(torch.ones(2, 3, dtype=torch.bool), 0.0),
}


@pytest.mark.parametrize("how", ["locked", "lock=True", "unlocked after lock=True"])
@pytest.mark.parametrize("op", list(_VIEWS))
def test_views_of_params_over_a_locked_tensordict_are_locked(how: str, op: str) -> None:
    params = _wrapped(how)
    out = _VIEWS[op](params)
    assert not params.is_locked
    assert type(out) is TensorDict and out.is_locked and out["n"].is_locked
    with pytest.raises(RuntimeError, match="locked"):
        out["new"] = torch.zeros(out.batch_size)


@pytest.mark.parametrize("op", list(_VIEWS))
def test_views_of_params_over_an_unlocked_tensordict_are_unlocked(op: str) -> None:
    out = _VIEWS[op](_wrapped("unlocked"))
    assert not out.is_locked
    out["new"] = torch.zeros(out.batch_size)
    assert "new" in out.keys()


def test_the_data_view_of_locked_params_shares_their_storage() -> None:
    params = _wrapped("locked")
    params.data["w"].mul_(3.0)
    assert torch.equal(params["w"].detach(), torch.full((2, 3), 3.0))


@pytest.mark.parametrize("op", [lambda p: p + 1, lambda p: p.abs(), lambda p: p.float()])
def test_math_on_params_over_a_locked_tensordict_stays_unlocked(
    op: Callable[[Any], Any],
) -> None:
    assert not op(_wrapped("locked")).is_locked


def test_a_locked_tensordict_keeps_locking_its_views() -> None:
    data = TensorDict(w=torch.ones(2, 3), batch_size=[2, 3]).lock_()
    assert all(_VIEWS[op](data).is_locked for op in _VIEWS)


@pytest.mark.parametrize("how", ["locked", "lock=True", "unlocked"])
def test_detach_of_params_is_unlocked_throughout(how: str) -> None:
    out = _wrapped(how).detach()
    assert not out.is_locked and not out["n"].is_locked
    out["n", "new"] = torch.zeros(2, 3)
    assert "new" in out["n"].keys()


def test_detach_of_an_unlocked_tensordict_unlocks_a_locked_nested_copy() -> None:
    data = TensorDict(a=torch.zeros(2))
    data["n"] = TensorDict(b=torch.zeros(2)).lock_()
    out = data.detach()
    assert not out["n"].is_locked and data["n"].is_locked
    assert data.lock_().detach()["n"].is_locked


def test_memmap_in_place_of_a_locked_one_refuses_before_moving_anything(tmp_path: Any) -> None:
    """A locked ``TensorDictParams``' ``memmap_`` moved every parameter into its file,
    then failed to unlock the wrapped TensorDict ("nested in a locked TensorDictParams"):
    the parameters were left plain MemoryMappedTensors, no longer requiring grad. It is
    refused first now (the peer refuses ``memmap_`` of any, a ``RuntimeError`` too)."""
    params = TensorDictParams(TensorDict(a=torch.zeros(3)))
    params.lock_()
    with pytest.raises(LockedError, match="locked TensorDict \\(a TensorDictParams"):
        params.memmap_(tmp_path / "saved")
    leaf = params.get("a")
    assert isinstance(leaf, torch.nn.Parameter) and leaf.requires_grad
    assert not (tmp_path / "saved").exists()


@pytest.mark.parametrize("how", ["locked", "lock=True", "unlocked"])
def test_grad_of_params_follows_the_lock_of_the_wrapped_tensordict(how: str) -> None:
    """``params.grad`` is locked where ``params.data`` is, as the peer's (its lock came
    from the params object, which reads unlocked, so it was never locked)."""
    params = _wrapped(how)
    (params["w"].sum() * 2 + params["n", "v"].sum()).backward()
    grad = params.grad
    assert type(grad) is TensorDict and grad.is_locked == params.data.is_locked
    assert grad.is_locked == (how != "unlocked")
    assert torch.equal(grad["w"], torch.full((2, 3), 2.0))
    assert torch.equal(grad["n", "v"], torch.ones(2, 3, 1))


def test_grad_of_a_module_ensemble_is_locked_as_the_peer() -> None:
    stacked = TensorDict.from_modules(torch.nn.Linear(3, 2), torch.nn.Linear(3, 2))
    params = TensorDictParams(stacked)
    params["weight"].sum().backward()
    assert params.grad.is_locked
    assert torch.equal(params.grad["weight"], torch.ones(2, 2, 3))


@pytest.mark.parametrize("no_convert", [True, False])
def test_share_memory_locks_as_a_tensordicts(no_convert: bool) -> None:
    """``share_memory_()`` moves the tensors into shared memory and locks, as a
    TensorDict's in both libraries, so an entry set afterwards cannot silently stay
    private (the peer's TensorDictParams stays unlocked: program 15,826,341 of
    methods,index,shape,combine L12)."""
    data = TensorDict({"d": torch.zeros(()), "b": torch.zeros(2, dtype=torch.int64)}, [])
    params = TensorDictParams(data, no_convert=no_convert)
    shared = params.share_memory_()
    assert shared is params and shared.is_locked and shared.is_shared()
    with pytest.raises(LockedError, match="'new'"):
        shared["new"] = torch.ones(())
    assert isinstance(shared.unlock_(), TensorDictParams) and not shared.is_locked
