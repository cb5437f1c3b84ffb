"""Comparing collections the way tests and assertions do: ``==``/``!=`` with collections
and scalars, ``.all()``/``.any()`` to a Python bool, ``assert_close``, ``isnan``,
``numpy()``/``tolist()`` for checks against reference data.
"""

import numpy as np
import torch

from compat import lib as tensordict
from compat.lib import TensorDict


def main() -> None:
    td = TensorDict({"a": torch.arange(4.0), "b": {"c": torch.ones(4)}}, [4])
    eq = td == td.clone()
    assert isinstance(eq, TensorDict) and eq.batch_size == td.batch_size
    assert eq["b", "c"].dtype == torch.bool
    assert eq.all() and bool(eq.all()) is True
    assert not (td != td.clone()).any()
    ones = td == 1
    assert ones["a"].tolist() == [False, True, False, False]
    assert ones["b", "c"].all()
    assert (td == torch.ones(4)).any()

    other = td.clone()
    other["b", "c"][2] = 0.0
    diff = td != other
    assert diff["b", "c"].tolist() == [False, False, True, False]
    assert diff.any() and not diff.all()

    tensordict.assert_close(td, td.clone())
    try:
        tensordict.assert_close(td, other)
    except AssertionError:
        pass
    else:
        raise AssertionError("assert_close must fail on different values")

    nan = TensorDict({"x": torch.tensor([1.0, float("nan")])}, [2])
    assert nan.isnan()["x"].tolist() == [False, True]
    assert not (nan == nan).all()

    arrays = td.numpy()
    assert isinstance(arrays["a"], np.ndarray)
    assert arrays["b"]["c"].tolist() == [1.0, 1.0, 1.0, 1.0]
    rows = td.tolist()
    assert len(rows) == 4 and float(rows[2]["a"]) == 2.0 and float(rows[2]["b"]["c"]) == 1.0

    # comparing a collection with itself after a round trip through a dict
    assert (TensorDict(td.to_dict(), batch_size=[4]) == td).all()
