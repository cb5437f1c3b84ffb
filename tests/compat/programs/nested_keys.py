"""Nested keys every way tensordict code spells them: tuples, chained getitem, get with a
default, set creating intermediate levels, ``in``, del, pop, rename_key_, and the
``keys``/``items``/``values`` views with ``include_nested`` and ``leaves_only``.
"""

import torch

from compat.lib import TensorDict


def main() -> None:
    td = TensorDict(batch_size=[2])
    td["obs"] = torch.zeros(2, 3)
    td["agents", "pos"] = torch.ones(2, 2)  # creates the "agents" level
    td.set(("agents", "vel"), torch.full((2, 2), 2.0))
    td.set(("agents", "sensor", "lidar"), torch.rand(2, 8))
    assert isinstance(td["agents"], TensorDict)
    assert td["agents"].batch_size == torch.Size([2])
    assert td["agents"]["sensor"]["lidar"].shape == (2, 8)
    assert td["agents", "sensor", "lidar"] is td.get(("agents", "sensor", "lidar"))

    # membership: top-level names, nested tuples, and the nested views
    assert "agents" in td.keys()
    assert ("agents", "pos") in td.keys(include_nested=True)
    assert ("agents", "pos") not in td.keys()
    assert ("agents", "sensor") in td.keys(True)
    assert ("agents", "missing") not in td.keys(True)

    # get with a default, for a missing leaf and a missing level
    default = torch.zeros(2)
    assert td.get("nope", default) is default
    assert td.get(("agents", "nope"), None) is None
    assert td.get(("nope", "deeper"), default) is default
    try:
        td["nope"]
    except KeyError:
        pass
    else:
        raise AssertionError("missing key must raise KeyError")

    leaves = list(td.keys(include_nested=True, leaves_only=True))
    assert sorted(map(str, leaves)) == sorted(
        map(str, ["obs", ("agents", "pos"), ("agents", "vel"), ("agents", "sensor", "lidar")])
    )
    nodes = set(td.keys(True))
    assert nodes == set(leaves) | {"agents", ("agents", "sensor")}
    assert len(td.keys()) == 2

    # items/values agree with keys
    for key, value in td.items(True, True):
        assert value is td.get(key)
    sizes = sorted(v.shape[-1] for v in td.values(include_nested=True, leaves_only=True))
    assert sizes == [2, 2, 3, 8]
    for key, _ in td.items():
        assert key in ("obs", "agents")

    # rename, pop, delete
    td.rename_key_(("agents", "vel"), ("agents", "velocity"))
    assert ("agents", "velocity") in td.keys(True)
    assert ("agents", "vel") not in td.keys(True)
    td.rename_key_("obs", "observation")
    assert "obs" not in td.keys() and "observation" in td.keys()
    lidar = td.pop(("agents", "sensor", "lidar"))
    assert lidar.shape == (2, 8)
    assert td["agents", "sensor"].is_empty()
    assert td.pop("missing", None) is None
    del td["agents", "sensor"]
    assert ("agents", "sensor") not in td.keys(True)
    td.del_("observation")
    assert list(td.keys()) == ["agents"]

    # a nested TensorDict is a live view: writing into it writes into the parent
    agents = td["agents"]
    agents["health"] = torch.ones(2)
    assert ("agents", "health") in td.keys(True, True)
    td["agents", "health"][0] = 0.0
    assert agents["health"].tolist() == [0.0, 1.0]

    # nested dicts given to the constructor nest
    td2 = TensorDict({"a": {"b": {"c": torch.zeros(3)}}, "d": torch.ones(3)}, batch_size=[3])
    assert td2["a", "b", "c"].shape == (3,)
    assert td2["a"]["b"].batch_size == torch.Size([3])
    assert ("a", "b", "c") in td2.keys(True, True)
    # a key given as a one-element tuple is the plain key
    assert td2[("d",)] is td2["d"]
    assert td2.get(("a",)) is td2["a"]
