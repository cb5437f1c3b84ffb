"""Python values and dim names through a DataLoader: a TensorDict dataset with a string per
row (``collate_fn=lambda x: x``); tensorclass rows with a nested record and a label each,
read by two workers, one by one and through a batch sampler; ragged samples collated with
``lazy_stack``; a memory-mapped record dataset read by workers; then a named batch indexed
(mask, tensor index, ``None``), stacked dense and lazily, and saved with its names.
"""

import tempfile

import torch
from torch.utils.data import BatchSampler, DataLoader, Dataset, SequentialSampler

from compat import lib as tensordict
from compat.lib import TensorDict, tensorclass


@tensorclass
class Inner:
    v: torch.Tensor


@tensorclass
class Row:
    x: torch.Tensor
    inner: Inner
    tag: str


class Ragged(Dataset):
    def __len__(self) -> int:
        return 4

    def __getitem__(self, i: int) -> TensorDict:
        return TensorDict({"obs": torch.full((i + 1,), float(i)), "tag": f"t{i}"}, [])


def _rows() -> Row:
    rows = [
        Row(
            x=torch.tensor(float(i)),
            inner=Inner(v=torch.ones(2) * i, batch_size=[]),
            tag=f"t{i}",
            batch_size=[],
        )
        for i in range(6)
    ]
    return torch.stack(rows)


def _loaders() -> None:
    data = TensorDict({"a": torch.arange(6.0), "s": ["a", "b", "c", "d", "e", "f"]}, [6])
    seen = [b["s"] for b in DataLoader(data, batch_size=3, collate_fn=lambda x: x)]
    assert seen == [["a", "b", "c"], ["d", "e", "f"]]
    rows = _rows()
    batches = list(DataLoader(rows, batch_size=4, collate_fn=lambda x: x, num_workers=2))
    assert [b.tag for b in batches] == [["t0", "t1", "t2", "t3"], ["t4", "t5"]]
    assert batches[1].inner.v[:, 0].tolist() == [4.0, 5.0] and isinstance(batches[1].inner, Inner)
    single = list(DataLoader(rows, batch_size=None))
    assert len(single) == 6 and single[3].tag == "t3" and single[3].inner.v.tolist() == [3.0, 3.0]
    sampler = BatchSampler(SequentialSampler(range(6)), batch_size=4, drop_last=False)
    sampled = list(DataLoader(rows, sampler=sampler, batch_size=None))
    assert [b.batch_size for b in sampled] == [torch.Size([4]), torch.Size([2])]
    ragged = list(DataLoader(Ragged(), batch_size=2, collate_fn=tensordict.lazy_stack))
    assert ragged[1]["tag"] == ["t2", "t3"]
    assert [t.shape[0] for t in ragged[1].get("obs", as_list=True)] == [3, 4]
    with tempfile.TemporaryDirectory() as folder:
        saved = _rows().memmap_(folder)
        read = list(DataLoader(saved, batch_size=4, collate_fn=lambda x: x, num_workers=2))
        assert read[0].tag == ["t0", "t1", "t2", "t3"] and read[1].inner.v[:, 1].tolist() == [
            4.0,
            5.0,
        ]


def _names() -> None:
    batch = TensorDict(
        {"a": torch.arange(24.0).reshape(2, 3, 4), "n": {"b": torch.zeros(2, 3)}, "s": "x"},
        [2, 3],
        names=["env", "time"],
    )
    assert batch[..., 0].names == ["env"] and batch[:, None].names == ["env", None, "time"]
    assert batch[torch.tensor([1, 0])].names == ["env", "time"]
    assert batch[torch.tensor([[True, False, True], [False, True, True]])].names == [None]
    assert batch["n"][0].names == ["time"]
    assert torch.stack([batch, batch], 1).names == ["env", None, "time"]
    lazy = tensordict.lazy_stack([batch, batch.clone()], 0)
    lazy.names = ["agent", "env", "time"]
    assert lazy[:, 1].names == ["agent", "time"] and lazy.tensordicts[0].names == ["env", "time"]
    assert batch.reshape(6).names == [None] and batch.unbind(1)[0].names == ["env"]
    with tempfile.TemporaryDirectory() as folder:
        lazy.memmap(folder)
        back = TensorDict.load_memmap(folder)
        assert back.names == ["agent", "env", "time"] and back[1, 0, 2]["s"] == "x"
        batch.memmap(folder + "/dense")
        again = TensorDict.load_memmap(folder + "/dense")
        assert again.names == ["env", "time"] and again["n"].names == ["env", "time"]


def main() -> None:
    _loaders()
    _names()


if __name__ == "__main__":
    main()
