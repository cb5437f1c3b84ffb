"""Named batch dimensions: ``names=`` at construction, ``names`` after shape ops,
``refine_names``, ``rename``/``rename_``, and names kept through indexing and stacking.
"""

import torch

from compat.lib import TensorDict


def main() -> None:
    td = TensorDict({"obs": torch.zeros(2, 5, 3)}, batch_size=[2, 5], names=["env", "time"])
    assert td.names == ["env", "time"]
    assert td[0].names == ["time"]
    assert td[:, 1:].names == ["env", "time"]
    assert td.unsqueeze(0).names == [None, "env", "time"]
    assert td.permute(1, 0).names == ["time", "env"]
    assert torch.stack([td, td], 0).names == [None, "env", "time"]

    renamed = td.rename("e", "t")
    assert renamed.names == ["e", "t"] and td.names == ["env", "time"]
    td.rename_(time="step")
    assert td.names == ["env", "step"]

    unnamed = TensorDict({"obs": torch.zeros(2, 5)}, [2, 5])
    assert unnamed.names == [None, None]
    refined = unnamed.refine_names("env", "time")
    assert refined.names == ["env", "time"]

    # names setter
    unnamed.names = ["a", "b"]
    assert unnamed.names == ["a", "b"]

    # a leaf added later gets the batch names too
    td["extra"] = torch.ones(2, 5)
    assert td["extra"].shape == (2, 5)
