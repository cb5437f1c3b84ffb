"""Masking collections: ``torch.where`` with TensorDicts and scalars, ``td.where``,
``masked_fill``/``masked_fill_``, episode resets written with masks, and
``masked_select``-style boolean indexing.
"""

import torch

from compat.lib import TensorDict


def main() -> None:
    td = TensorDict({"a": torch.arange(4.0), "b": {"c": torch.ones(4, 2)}}, [4])
    zero = torch.zeros_like(td)
    cond = torch.tensor([True, False, True, False])

    w = torch.where(cond, td, zero)
    assert isinstance(w, TensorDict)
    assert w["a"].tolist() == [0.0, 0.0, 2.0, 0.0]
    assert w["b", "c"][:, 0].tolist() == [1.0, 0.0, 1.0, 0.0]
    assert torch.where(cond, td, 0.0)["a"].tolist() == [0.0, 0.0, 2.0, 0.0]
    assert td.where(cond, zero)["a"].tolist() == [0.0, 0.0, 2.0, 0.0]

    mf = td.masked_fill(cond, -1.0)
    assert mf["a"].tolist() == [-1.0, 1.0, -1.0, 3.0]
    assert (mf["b", "c"][cond] == -1).all()
    td2 = td.clone()
    td2.masked_fill_(~cond, 5.0)
    assert td2["a"].tolist() == [0.0, 5.0, 2.0, 5.0]

    # resetting the environments that are done, as a vectorised env would
    state = TensorDict(
        {"obs": torch.arange(8.0).reshape(4, 2), "t": torch.tensor([3, 9, 1, 9])}, [4]
    )
    fresh = TensorDict({"obs": torch.zeros(4, 2), "t": torch.zeros(4, dtype=torch.long)}, [4])
    done = state["t"] >= 9
    state = torch.where(done, fresh, state)
    assert state["t"].tolist() == [3, 0, 1, 0]
    assert state["obs"][1].tolist() == [0.0, 0.0]
    state[done] = fresh[done].apply(lambda x: x + 1)
    assert state["t"].tolist() == [3, 1, 1, 1]

    # boolean indexing selects rows of every leaf
    sel = td[td["a"] > 1]
    assert sel.batch_size == torch.Size([2]) and sel["b", "c"].shape == (2, 2)
