"""A dataset kept in a zarr store, as the zarr tutorial of the peer's docs walks through it:
a batch of images with labels and a text description written with ``to_zarr``, opened
again lazily with ``from_zarr`` (batch size and Python values kept), rows read with
``get_at``, chunked and compressed copies, and a replay buffer preallocated in a zarr
store with ``from_schema`` and filled row by row. Skipped without zarr.
"""

import os
import tempfile

import torch

from compat.lib import PersistentTensorDict, TensorDict, require


def main() -> None:
    zarr = require("zarr")
    with tempfile.TemporaryDirectory() as root:
        frames = torch.arange(20 * 3 * 4 * 4, dtype=torch.float32).reshape(20, 3, 4, 4)
        data = TensorDict(
            {"frames": frames, "label": torch.arange(20) % 5, "info": {"source": "camera-1"}},
            batch_size=[20],
        )
        written = data.to_zarr(os.path.join(root, "frames.zarr"))
        assert isinstance(written, PersistentTensorDict)
        written.close()

        opened = TensorDict.from_zarr(os.path.join(root, "frames.zarr"))
        assert opened.batch_size == torch.Size([20])
        assert opened["info", "source"] == "camera-1"  # the value, as a TensorDict gives it
        assert torch.equal(opened.get_at("frames", 3), frames[3])
        assert torch.equal(opened.get_at("frames", slice(4, 8)), frames[4:8])
        picked = opened.get_at("label", torch.tensor([0, 6, 19]))
        assert picked.tolist() == [0, 1, 4]
        rows = opened[2:5]  # the selected rows of every entry, in memory
        assert rows.batch_size == torch.Size([3]) and torch.equal(rows["frames"], frames[2:5])
        opened.close()

        data.to_zarr(os.path.join(root, "chunked.zarr"), chunks=(5, 3, 4, 4)).close()
        codecs = zarr.codecs
        data.to_zarr(
            os.path.join(root, "small.zarr"), chunks=(5, 3, 4, 4), compressors=codecs.ZstdCodec()
        ).close()
        for name in ("chunked.zarr", "small.zarr"):
            again = TensorDict.from_zarr(os.path.join(root, name))
            assert torch.equal(again.get_at("frames", 11), frames[11])
            assert torch.equal(again["label"], data["label"])
            again.close()

        buffer = TensorDict.from_schema(
            {"obs": ([3], torch.float32), "reward": ([], torch.float32)},
            batch_size=[50],
            storage="zarr",
            filename=os.path.join(root, "buffer.zarr"),
        )
        for step in range(5):
            buffer[step] = TensorDict(
                obs=torch.full((3,), float(step)), reward=torch.tensor(step * 0.5), batch_size=[]
            )
        assert buffer["reward"][:5].tolist() == [0.0, 0.5, 1.0, 1.5, 2.0]
        assert torch.equal(buffer["obs"][4], torch.full((3,), 4.0))
        assert buffer["obs"][5:].abs().sum().item() == 0
        buffer.close()


if __name__ == "__main__":
    main()
