"""Flat and nested key layouts: ``flatten_keys``/``unflatten_keys`` with separators
(logging, configs, ``nn.Module`` state dicts with dotted names), ``unravel_key``-style
tuple keys and round trips.
"""

import torch
from torch import nn

from compat.lib import TensorDict


def main() -> None:
    td = TensorDict(
        {"a": torch.arange(4.0), "b": {"c": torch.ones(4), "d": {"e": torch.zeros(4)}}}, [4]
    )
    flat = td.flatten_keys()
    assert set(flat.keys()) == {"a", "b.c", "b.d.e"}
    assert flat["b.d.e"] is td["b", "d", "e"]
    flat_u = td.flatten_keys("_")
    assert set(flat_u.keys()) == {"a", "b_c", "b_d_e"}
    back = flat.unflatten_keys()
    assert set(back.keys(True, True)) == {"a", ("b", "c"), ("b", "d", "e")}
    assert back["b", "d"].batch_size == torch.Size([4])
    assert (back == td).all()
    assert set(flat_u.unflatten_keys("_").keys(True, True)) == set(td.keys(True, True))

    # a module's dotted state dict into a nested TensorDict
    net = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
    nested = TensorDict(net.state_dict(), []).unflatten_keys(".")
    assert nested["0", "weight"].shape == (3, 2)
    assert set(nested.keys()) == {"0", "2"}
    # and back to a flat dict for load_state_dict
    net.load_state_dict(nested.flatten_keys(".").to_dict())

    # logging dictionaries
    metrics = TensorDict({"loss": {"actor": torch.tensor(0.5), "critic": torch.tensor(1.5)}}, [])
    logged = {k: v.item() for k, v in metrics.flatten_keys("/").items()}
    assert logged == {"loss/actor": 0.5, "loss/critic": 1.5}

    # inplace flattening
    td2 = td.clone()
    td2.flatten_keys(inplace=True)
    assert "b.c" in td2.keys() and "b" not in td2.keys()
