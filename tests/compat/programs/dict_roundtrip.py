"""Conversions between TensorDicts and plain Python containers: ``to_dict``,
``from_dict`` (with and without a batch size, with ``batch_dims``/``auto_batch_size``),
the constructor on nested dicts, ``TensorDict.fromkeys``, ``from_namedtuple``,
``to_namedtuple``, numpy interop.
"""

import collections

import numpy as np
import torch

from compat import lib as tensordict
from compat.lib import TensorDict


def main() -> None:
    raw = {
        "obs": torch.zeros(3, 2),
        "info": {"t": torch.arange(3), "ok": torch.ones(3, dtype=torch.bool)},
    }

    td = TensorDict.from_dict(raw, batch_size=[3])
    assert td.batch_size == torch.Size([3])
    assert td["info", "t"].tolist() == [0, 1, 2]
    assert TensorDict.from_dict(raw, batch_dims=1).batch_size == torch.Size([3])
    assert TensorDict.from_dict(raw, auto_batch_size=True).batch_size == torch.Size([3])
    assert tensordict.from_dict(raw, batch_size=[3])["obs"].shape == (3, 2)

    d = td.to_dict()
    assert isinstance(d, dict) and isinstance(d["info"], dict)
    assert torch.equal(d["info"]["t"], torch.arange(3))
    assert (TensorDict(d, batch_size=[3]) == td).all()

    # the constructor takes nested dicts and keyword batch sizes
    td2 = TensorDict(raw, [3])
    assert td2["info"].batch_size == torch.Size([3])
    td3 = TensorDict(obs=torch.zeros(3, 2), batch_size=[3])
    assert td3["obs"].shape == (3, 2)

    # fromkeys
    fk = TensorDict.fromkeys(["a", "b", ("nested", "c")], 0)
    assert set(fk.keys(True, True)) == {"a", "b", ("nested", "c")}
    assert fk["nested", "c"] == 0

    # numpy arrays are turned into tensors
    from_np = TensorDict({"x": np.arange(4.0), "y": {"z": np.ones((4, 2), dtype=np.float32)}}, [4])
    assert isinstance(from_np["x"], torch.Tensor) and from_np["x"].dtype == torch.float64
    assert from_np["y", "z"].dtype == torch.float32
    # and back
    arrays = {key: value.numpy() for key, value in from_np.items(True, True)}
    assert isinstance(arrays["x"], np.ndarray)
    assert arrays[("y", "z")].shape == (4, 2)

    # namedtuples
    Obs = collections.namedtuple("Obs", ["pos", "vel"])
    nt = Obs(pos=torch.zeros(5, 2), vel=torch.ones(5, 2))
    tdn = TensorDict.from_namedtuple(nt)
    assert set(tdn.keys()) == {"pos", "vel"}
    tdn.batch_size = [5]
    back = tdn.to_namedtuple()
    assert torch.equal(back.vel, nt.vel)

    # struct arrays
    arr = np.zeros(3, dtype=[("a", np.float32), ("b", np.int64)])
    arr["b"] = [1, 2, 3]
    tds = TensorDict.from_struct_array(arr)
    assert tds.batch_size == torch.Size([3]) and tds["b"].tolist() == [1, 2, 3]
