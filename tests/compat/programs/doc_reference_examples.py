"""Small workflows from the peer's API reference, in our own words: ``apply`` reaching
Python values with ``is_leaf``, ``where`` with a padded other collection, the list a
stack of strings reads as, pytrees through TensorDicts, the state dict's metadata, and a
TensorDict rebuilt from a repr printed with the verbose print options.
"""

import torch

from compat import lib as tensordict
from compat.lib import TensorDict, is_leaf_nontensor


def _apply_on_values() -> None:
    td = TensorDict(obs=torch.zeros(3), env="pong", batch_size=[3])
    kinds = []
    td.apply(lambda x: kinds.append(type(x).__name__), is_leaf=is_leaf_nontensor)
    assert kinds == ["Tensor", "NonTensorData"]
    kinds.clear()
    td.apply(lambda x: kinds.append(type(x).__name__))
    assert kinds == ["Tensor"]
    renamed = td.apply(
        lambda x: x + 1 if isinstance(x, torch.Tensor) else "breakout", is_leaf=is_leaf_nontensor
    )
    assert renamed["env"] == "breakout" and renamed["obs"].tolist() == [1.0, 1.0, 1.0]


def _where_padded() -> None:
    td = TensorDict(x=torch.ones(2, 3), batch_size=[2])
    other = TensorDict(y=torch.zeros(2), batch_size=[2])
    out = td.where(torch.tensor([True, False]), other, pad=-1)
    assert sorted(out.keys()) == ["x", "y"]
    assert out["x"].tolist() == [[1.0] * 3, [-1.0] * 3]
    assert out["y"].tolist() == [-1.0, 0.0]


def _string_stack() -> None:
    td = TensorDict(batch_size=[3])
    td["names"] = ["a", "b", "c"]
    names = td["names"]
    names[0] = "z"
    assert td.get("names").tolist() == ["z", "b", "c"]
    assert names.tolist() == ["z", "b", "c"]


def _pytrees() -> None:
    tree = {"obs": torch.zeros(3, 4), "pair": (torch.zeros(3), torch.ones(3))}
    td = TensorDict.from_pytree(tree, auto_batch_size=True)
    assert td.batch_size == torch.Size([3])
    assert sorted(td.keys()) == ["_pytree_type", "obs", "pair"]
    assert sorted(td["pair"].keys()) == ["0", "1", "_pytree_type"]
    back = td.to_pytree()
    assert type(back["pair"]) is tuple and torch.equal(back["pair"][1], torch.ones(3))


def _state_dict_metadata() -> None:
    data = TensorDict({"1": 1, "2": 2, "3": {"3": 3}}, [])
    sd = data.state_dict()
    assert list(sd) == ["1", "2", "3.3"]
    assert dict(sd._metadata) == {
        "": {"batch_size": torch.Size([]), "device": None},
        "3": {"batch_size": torch.Size([]), "device": None},
    }
    fresh = TensorDict({"1": 0, "2": 0, "3": {"3": 0}}, [])
    fresh.load_state_dict(sd)
    assert fresh["3", "3"].item() == 3


def _verbose_repr() -> None:
    td = TensorDict(
        {"image": torch.zeros(8, 3, 2, 2), "next": {"done": torch.zeros(8, 1, dtype=torch.bool)}},
        batch_size=[8],
    )
    with tensordict.set_printoptions(compact=False):
        text = repr(td)
    assert "fields={" in text and "batch_size=torch.Size([8])" in text
    rebuilt = tensordict.parse_tensor_dict_string(text)
    assert rebuilt.batch_size == torch.Size([8])
    assert rebuilt["image"].shape == (8, 3, 2, 2) and rebuilt["next", "done"].dtype == torch.bool
    compact = tensordict.parse_tensor_dict_string(repr(td))
    assert compact["next", "done"].shape == (8, 1)


def main() -> None:
    _apply_on_values()
    _where_padded()
    _string_stack()
    _pytrees()
    _state_dict_metadata()
    _verbose_repr()


if __name__ == "__main__":
    main()
