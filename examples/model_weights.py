"""Model weights as a folder of memory-mapped files: save them, inspect them, load all or part.

Run it with ``python examples/model_weights.py [--hidden N]``. It

1. reads a model's parameters and buffers with ``TensorDict.from_module`` (the tensors
   themselves, one nested TensorDict per submodule);
2. saves them with ``memmap``: one raw file per tensor, one sub-folder per submodule;
3. inspects the folder with ``load_memmap(device="meta")``: shapes and dtypes, no data read;
4. loads every weight into a freshly initialised model with ``load_memmap`` and
   ``to_module(inplace=True)``, and checks that both models now compute the same thing;
5. loads only the encoder, from its sub-folder, into another model;
6. tries the saved weights on a model for one ``with`` block, after which the model's own
   weights are back.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import torch
from torch import nn

import tclass
from tclass import TensorDict

FEATURES = 512


class AutoEncoder(nn.Module):
    """An encoder and a decoder; BatchNorm adds buffers next to the parameters."""

    def __init__(self, features: int, hidden: int, code: int) -> None:
        super().__init__()
        self.encoder = nn.Sequential(
            nn.Linear(features, hidden), nn.BatchNorm1d(hidden), nn.ReLU(), nn.Linear(hidden, code)
        )
        self.decoder = nn.Sequential(
            nn.Linear(code, hidden), nn.ReLU(), nn.Linear(hidden, features)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.decoder(self.encoder(x))
        return out


def build(hidden: int, seed: int) -> AutoEncoder:
    """A model in evaluation mode (BatchNorm uses its running statistics)."""
    torch.manual_seed(seed)
    model = AutoEncoder(features=FEATURES, hidden=hidden, code=64)
    if seed == 0:  # saved running statistics that differ from a fresh model's
        with torch.no_grad():  # from_module's leaves are the module's own tensors
            TensorDict.from_module(model)["encoder", "1", "running_mean"].uniform_(-1, 1)
    return model.eval()


def count(weights: TensorDict) -> tuple[int, int]:
    """(number of values, bytes) of every tensor in ``weights``."""
    tensors = list(weights.values(include_nested=True, leaves_only=True))
    return sum(t.numel() for t in tensors), sum(t.numel() * t.element_size() for t in tensors)


def save(model: AutoEncoder, folder: Path) -> None:
    weights = TensorDict.from_module(model)
    assert weights["encoder", "0", "weight"] is model.get_parameter("encoder.0.weight")  # no copy
    start = time.perf_counter()
    weights.memmap(folder, num_threads=4)
    values, size = count(weights)
    files = sorted(path.relative_to(folder).as_posix() for path in folder.rglob("*.memmap"))
    print(
        f"1-2. from_module + memmap: {values:,} values ({size / 2**20:.1f} MiB) in {len(files)} "
        f"files in {(time.perf_counter() - start) * 1e3:.0f} ms"
    )
    print(f"     e.g. {', '.join(files[:3])}, ...")


def inspect(folder: Path) -> None:
    shapes = TensorDict.load_memmap(folder, device="meta")  # reads meta.json files only
    print("3. load_memmap(device='meta'), no data read:")
    for name in ("encoder", "decoder"):
        values, size = count(shapes[name])
        weight = shapes[name, "0", "weight"]
        print(
            f"   {name}: {values:,} values, {size / 2**20:.2f} MiB; first layer "
            f"{str(weight.dtype).removeprefix('torch.')}{list(weight.shape)} on {weight.device}"
        )


def load_all(folder: Path, hidden: int, reference: nn.Module, x: torch.Tensor) -> None:
    fresh = build(hidden, seed=1)
    assert not torch.equal(fresh(x), reference(x))
    weight = fresh.get_parameter("encoder.0.weight")
    TensorDict.load_memmap(folder).to_module(fresh, inplace=True)  # copied into its tensors
    assert fresh.get_parameter("encoder.0.weight") is weight  # the same Parameter, new values
    assert torch.equal(fresh(x), reference(x))
    print(
        "4. load_memmap + to_module(inplace=True) into a fresh model: same outputs as the saved one"
    )


def load_encoder(folder: Path, hidden: int, reference: AutoEncoder, x: torch.Tensor) -> None:
    other = build(hidden, seed=2)
    decoder = TensorDict.from_module(other.decoder).clone()
    encoder = TensorDict.load_memmap(folder / "encoder")  # only this sub-folder is opened
    encoder.to_module(other.encoder, inplace=True)
    assert torch.equal(other.encoder(x), reference.encoder(x))
    assert (TensorDict.from_module(other.decoder) == decoder).all()  # untouched
    print(
        f"5. load_memmap({folder.name}/encoder) into another model's encoder: same codes, "
        f"its decoder unchanged"
    )


def try_weights(folder: Path, hidden: int, reference: nn.Module, x: torch.Tensor) -> None:
    model = build(hidden, seed=3)
    before = model(x)
    with TensorDict.load_memmap(folder).to_module(model):  # swapped in for the block only
        assert torch.equal(model(x), reference(x))
    assert torch.equal(model(x), before)
    print(
        "6. with load_memmap(...).to_module(model): the saved weights inside the block, the "
        "model's own after it"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--hidden", type=int, default=2048, help="width of the hidden layers")
    args = parser.parse_args()
    print(f"tclass {tclass.__version__}, torch {torch.__version__}")
    model = build(args.hidden, seed=0)
    x = torch.randn(8, FEATURES)
    with tempfile.TemporaryDirectory(prefix="tclass-weights-") as tmp:
        folder = Path(tmp) / "weights"
        save(model, folder)
        inspect(folder)
        load_all(folder, args.hidden, model, x)
        load_encoder(folder, args.hidden, model, x)
        try_weights(folder, args.hidden, model, x)


if __name__ == "__main__":
    main()
