"""Model weights on disk (seed 02): ``from_module`` -> ``memmap`` with threads ->
``load_memmap`` -> ``to_module`` into a fresh model; inspecting a checkpoint on the meta
device; loading one submodule's weights from its sub-folder.
"""

import os
import tempfile

import torch
from torch import nn

from compat import lib as tensordict
from compat.lib import TensorDict


def main() -> None:
    torch.manual_seed(0)
    model = nn.Transformer(
        d_model=16, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=32
    )
    weights = TensorDict.from_module(model)
    with tempfile.TemporaryDirectory() as root:
        path = os.path.join(root, "weights")
        weights_disk = weights.memmap(path, num_threads=4)
        new_weights = TensorDict.load_memmap(path)
        assert (weights_disk == new_weights).all()
        assert (new_weights == weights).all()

        fresh = nn.Transformer(
            d_model=16, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=32
        )
        new_weights.to_module(fresh)
        src = torch.randn(5, 1, 16)
        tgt = torch.randn(3, 1, 16)
        model.eval()
        fresh.eval()
        with torch.no_grad():
            assert torch.allclose(model(src, tgt), fresh(src, tgt), atol=1e-6)

        meta = tensordict.load_memmap(path, device="meta")
        n_params = sum(v.numel() for v in meta.values(True, True))
        assert n_params == sum(p.numel() for p in model.parameters()) + sum(
            b.numel() for b in model.buffers()
        )
        assert all(v.device.type == "meta" for v in meta.values(True, True))

        enc = TensorDict.load_memmap(os.path.join(path, "encoder"))
        assert set(enc.keys()) >= {"layers", "norm"}
        new_encoder = nn.Transformer(
            d_model=16, nhead=2, num_encoder_layers=1, num_decoder_layers=1, dim_feedforward=32
        ).encoder
        enc.to_module(new_encoder)
        assert torch.equal(new_encoder.norm.weight, model.encoder.norm.weight)
