"""Choosing keys: ``select``/``exclude`` with nested keys, ``strict=False``, ``inplace``,
the results sharing tensors with the source; the same on tensorclasses with
``select``/``exclude`` returning the class.
"""

import torch

from compat.lib import TensorDict, tensorclass


@tensorclass
class Transition:
    obs: torch.Tensor
    action: torch.Tensor
    reward: torch.Tensor


def main() -> None:
    td = TensorDict(
        {
            "obs": torch.zeros(2, 3),
            "act": torch.ones(2),
            "next": {"obs": torch.ones(2, 3), "r": torch.ones(2)},
        },
        [2],
    )
    s = td.select("obs", ("next", "r"))
    assert set(s.keys(True, True)) == {"obs", ("next", "r")}
    assert s["obs"] is td["obs"]  # no copy
    assert s["next"].batch_size == torch.Size([2])
    assert set(td.select("next").keys(True, True)) == {("next", "obs"), ("next", "r")}
    assert list(td.select("missing", strict=False).keys()) == []
    try:
        td.select("missing")
    except KeyError:
        pass
    else:
        raise AssertionError("select of a missing key must raise KeyError")

    e = td.exclude("act", ("next", "obs"))
    assert set(e.keys(True, True)) == {"obs", ("next", "r")}
    assert set(td.keys()) == {"obs", "act", "next"}  # source unchanged
    assert set(td.exclude("missing").keys()) == {"obs", "act", "next"}

    t2 = td.clone(recurse=False)
    out = t2.exclude("act", inplace=True)
    assert out is t2 and "act" not in t2.keys()
    t3 = td.clone()
    t3.select("obs", inplace=True)
    assert list(t3.keys()) == ["obs"]

    # the select-then-modify pattern writes into the source for in-place ops
    td.select("obs")["obs"].add_(1)
    assert (td["obs"] == 1).all()

    # keys with a common prefix
    assert set(td.select(("next", "obs"), "obs").keys(True, True)) == {"obs", ("next", "obs")}

    # exclude everything
    assert td.exclude(*td.keys()).is_empty()

    # on a tensorclass: the class is kept, unselected fields read as None
    tr = Transition(
        obs=torch.zeros(2, 3), action=torch.ones(2), reward=torch.ones(2), batch_size=[2]
    )
    only_obs = tr.select("obs")
    assert isinstance(only_obs, Transition)
    assert only_obs.obs is tr.obs and only_obs.reward is None
    no_reward = tr.exclude("reward")
    assert isinstance(no_reward, Transition) and no_reward.reward is None
    assert no_reward.action is tr.action
