"""Other ways tensordict code builds collections: ``make_tensordict`` with keywords and
with a dict, ``TensorDict.fromkeys``, positional ``TensorDict(source, batch_size, device)``,
``from_any`` on nested Python structures, ``TensorDict(**kwargs)`` style.
"""

import torch

from compat import lib as tensordict
from compat.lib import TensorDict, make_tensordict


def main() -> None:
    m = make_tensordict(a=torch.zeros(3), b=torch.ones(3, 2))
    assert set(m.keys()) == {"a", "b"}
    assert m.batch_size == torch.Size([])
    m2 = make_tensordict({"a": torch.zeros(3)}, batch_size=[3])
    assert m2.batch_size == torch.Size([3])

    fk = TensorDict.fromkeys(["x", "y"], torch.zeros(2))
    assert fk["x"].tolist() == [0.0, 0.0]
    fk["x"][0] = 1.0
    assert fk["x"][0].item() == 1.0

    positional = TensorDict({"a": torch.zeros(2)}, [2], "cpu")
    assert positional.device == torch.device("cpu")

    anything = tensordict.from_any({"a": torch.zeros(3, 2), "b": {"c": torch.ones(3)}})
    assert isinstance(anything, TensorDict)
    assert anything["b", "c"].shape == (3,)

    kw = TensorDict(a=torch.zeros(4), b=torch.ones(4), batch_size=[4])
    assert kw.batch_size == torch.Size([4]) and set(kw.keys()) == {"a", "b"}

    # a tuple of tensors
    tup = TensorDict.from_tuple((torch.zeros(2), torch.ones(2)))
    assert list(tup.keys()) == ["0", "1"]
