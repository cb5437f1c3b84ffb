"""``apply`` and ``named_apply`` as users write them: map a function over leaves, over two
TensorDicts at once, in place, changing the batch size, filtering leaves out by returning
``None``, and with the key names.
"""

import torch

from compat.lib import TensorDict


def main() -> None:
    td = TensorDict(
        {"a": torch.arange(6.0).reshape(2, 3), "nested": {"b": torch.ones(2, 4)}},
        batch_size=[2],
    )

    doubled = td.apply(lambda x: x * 2)
    assert isinstance(doubled, TensorDict)
    assert doubled.batch_size == td.batch_size
    assert torch.equal(doubled["a"], td["a"] * 2)
    assert torch.equal(doubled["nested", "b"], torch.full((2, 4), 2.0))
    assert td["nested", "b"].sum() == 8  # the source is untouched

    # two collections with the same structure
    summed = td.apply(lambda x, y: x + y, doubled)
    assert torch.equal(summed["a"], td["a"] * 3)

    # changing the batch size of the result
    first = td.apply(lambda x: x[0], batch_size=[])
    assert first.batch_size == torch.Size([])
    assert first["a"].tolist() == [0.0, 1.0, 2.0]

    # in place
    td.apply_(lambda x: x.add_(1))
    assert td["a"][0, 0].item() == 1.0
    out = td.apply(lambda x: x - 1, inplace=True)
    assert out is td
    assert td["a"][0, 0].item() == 0.0

    # a function returning None drops the entry
    only_a = td.apply(lambda x: x if x.shape[-1] == 3 else None)
    assert list(only_a.keys(True, True)) == ["a"]

    # named_apply gets the key: nested keys as tuples when nested_keys=True
    seen = []

    def record(name, x):
        seen.append(name)
        return x.float().mean(-1)

    means = td.named_apply(record, nested_keys=True)
    assert sorted(map(str, seen)) == sorted(map(str, ["a", ("nested", "b")]))
    assert means["a"].shape == (2,)

    seen.clear()
    td.named_apply(lambda name, x: seen.append(name))
    assert "b" in seen and ("nested", "b") not in seen

    # scale some keys only, through the key name
    scaled = td.named_apply(lambda name, x: x * 10 if name == "a" else x)
    assert torch.equal(scaled["a"], td["a"] * 10)
    assert torch.equal(scaled["nested", "b"], td["nested", "b"])

    # apply to produce a different dtype / device
    as_long = td.apply(lambda x: x.long())
    assert as_long["nested", "b"].dtype == torch.long

    # apply with a default for keys missing in the second collection
    partial = TensorDict({"a": torch.ones(2, 3)}, batch_size=[2])
    merged = td.apply(lambda x, y: x + y, partial, default=torch.zeros(()))
    assert torch.equal(merged["a"], td["a"] + 1)
    assert torch.equal(merged["nested", "b"], td["nested", "b"])
