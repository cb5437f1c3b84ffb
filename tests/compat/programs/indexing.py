"""Indexing along batch dims with ints, slices, steps, ellipsis, None, lists, index
tensors and boolean masks; setitem with TensorDicts, dicts and masks; results checked
against the same indexing on the leaves.
"""

import torch

from compat.lib import TensorDict


def main() -> None:
    a = torch.arange(60.0).reshape(3, 4, 5)
    b = torch.arange(12).reshape(3, 4)
    td = TensorDict({"a": a, "n": {"b": b}}, batch_size=[3, 4])

    def check(index, leaf_index=None):
        # an ellipsis spans the batch dims only: the leaves' feature dims stay untouched
        leaf_index = index if leaf_index is None else leaf_index
        sub = td[index]
        assert torch.equal(sub["a"], a[leaf_index]), index
        assert torch.equal(sub["n", "b"], b[index]), index
        assert sub.batch_size == b[index].shape, index

    for index in [
        0,
        -1,
        (1, 2),
        slice(1, None),
        slice(None, None, 2),
        (slice(None), 1),
        (slice(None), slice(1, 3)),
        (0, Ellipsis),
        Ellipsis,
        None,
        (None, 0),
        (slice(None), None),
        [0, 2],
        torch.tensor([2, 0, 1]),
        torch.tensor([[0, 1], [1, 2]]),
        (torch.tensor([0, 2]), torch.tensor([1, 3])),
        (slice(None), torch.tensor([3, 0])),
        b > 5,
        (b > 5)[:, 0],
        (slice(None), torch.tensor([True, False, True, False])),
        (1, torch.tensor([0, 0, 3])),
    ]:
        check(index)
    check((Ellipsis, 0), (slice(None), 0))
    check((Ellipsis, torch.tensor([1, 2])), (slice(None), torch.tensor([1, 2])))
    check((Ellipsis, None), (slice(None), slice(None), None))

    # writes through indices
    td2 = td.clone()
    td2[0] = TensorDict({"a": torch.zeros(4, 5), "n": {"b": torch.zeros(4, dtype=torch.long)}}, [4])
    assert (td2["a"][0] == 0).all() and (td2["n", "b"][0] == 0).all()
    assert torch.equal(td2["a"][1:], a[1:])

    td2[:, 1] = td[:, 2]
    assert torch.equal(td2["a"][:, 1], a[:, 2])

    mask = b % 2 == 0
    td2[mask] = td[mask].apply(lambda x: x * 0 - 1)
    assert (td2["n", "b"][mask] == -1).all()
    assert (td2["a"][mask] == -1).all()

    idx = torch.tensor([2, 0])
    td2[idx] = td[:2]
    assert torch.equal(td2["a"][2], a[0]) and torch.equal(td2["a"][0], a[1])

    # setitem with a plain dict of tensors
    td2[1] = {"a": torch.ones(4, 5), "n": {"b": torch.ones(4, dtype=torch.long)}}
    assert (td2["a"][1] == 1).all() and (td2["n", "b"][1] == 1).all()

    # setitem of a scalar fills every leaf at those indices
    td2[2] = 0
    assert (td2["a"][2] == 0).all() and (td2["n", "b"][2] == 0).all()

    # a string index is a key, a tuple of strings a nested key
    assert td2["n", "b"] is td2["n"]["b"]

    # an empty mask gives an empty batch
    empty = td[b > 100]
    assert empty.batch_size == torch.Size([0])
    assert empty["a"].shape == (0, 5)

    # indexing a 1-d TensorDict with a boolean mask then writing back
    flat = td.reshape(-1).clone()
    keep = flat["n", "b"] > 6
    sub = flat[keep]
    sub["a"] += 1000
    flat[keep] = sub
    assert (flat["a"][keep] >= 1000).all() and (flat["a"][~keep] < 1000).all()

    # masked_fill on the whole TensorDict
    filled = td.masked_fill(b > 9, 0)
    assert (filled["a"][b > 9] == 0).all() and (filled["n", "b"][b > 9] == 0).all()
    assert torch.equal(filled["a"][b <= 9], a[b <= 9])
