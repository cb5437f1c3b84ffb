"""Python values inside TensorDicts, as the peer stores them: strings, None, dicts and
objects become ``NonTensorData``; reading the key gives the value back, through indexing
and cloning too; a list of strings is a ``NonTensorStack``; ``to_dict`` returns the values.
"""

import torch

from compat.lib import NonTensorData, NonTensorStack, TensorDict


def main() -> None:
    td = TensorDict({"obs": torch.zeros(2, 3), "env": "CartPole-v1"}, batch_size=[2])
    assert td["env"] == "CartPole-v1"
    assert isinstance(td.get("env"), NonTensorData)
    assert td.get("env").data == "CartPole-v1"
    assert td[0]["env"] == "CartPole-v1"
    assert td[:1]["env"] == "CartPole-v1"
    assert td.clone()["env"] == "CartPole-v1"

    td["note"] = "first run"
    td.set("config", NonTensorData({"lr": 0.001, "layers": [64, 64]}))  # a dict would nest
    td["nothing"] = None
    assert td["note"] == "first run"
    assert td["config"]["layers"] == [64, 64]
    assert td["nothing"] is None
    assert "nothing" in td.keys()

    # numbers and lists of numbers become tensors; lists of strings a stack
    td["ids"] = [4, 5]
    assert isinstance(td["ids"], torch.Tensor) and td["ids"].tolist() == [4, 5]
    td["names"] = ["left", "right"]
    assert isinstance(td.get("names"), NonTensorStack)
    assert td["names"] == ["left", "right"]
    assert td[1]["names"] == "right"

    # the tensor part of the TensorDict is unaffected
    assert td.apply(lambda x: x + 1)["obs"].sum().item() == 6.0
    assert torch.stack([td, td]).batch_size == torch.Size([2, 2])

    # to_dict gives the Python values back
    d = td.to_dict()
    assert d["env"] == "CartPole-v1"
    assert d["config"] == {"lr": 0.001, "layers": [64, 64]}
    assert d["names"] == ["left", "right"]
    del d["config"]  # (a dict given to the constructor is a nested TensorDict)
    again = TensorDict(d, batch_size=[2])
    assert again["env"] == "CartPole-v1" and again["names"] == ["left", "right"]

    # update with Python values
    td.update({"env": "Pendulum-v1", "obs": torch.ones(2, 3)})
    assert td["env"] == "Pendulum-v1"

    # non-tensor entries can be filtered out before math
    tensors_only = td.filter_non_tensor_data()
    assert set(tensors_only.keys()) == {"obs", "ids"}

    # explicit NonTensorData, and a value shared by a whole batch
    td2 = TensorDict({"x": torch.zeros(3)}, [3])
    td2["tag"] = NonTensorData("shared")
    assert td2["tag"] == "shared"
    assert td2.get("tag").batch_size == torch.Size([3])
    assert td2[2]["tag"] == "shared"

    # stacking TensorDicts with different strings
    steps = [TensorDict({"r": torch.tensor(float(i)), "msg": f"step {i}"}, []) for i in range(3)]
    traj = torch.stack(steps)
    assert traj["msg"] == ["step 0", "step 1", "step 2"]
    assert traj[1]["msg"] == "step 1"
    assert traj[1:]["msg"] == ["step 1", "step 2"]
    assert traj["r"].tolist() == [0.0, 1.0, 2.0]
