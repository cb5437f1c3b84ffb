"""Moving and casting collections: ``to(device)``, ``to(dtype)``, ``to(device, dtype)``,
``cpu()``, the cast shortcuts, ``clear_device_``, and a TensorDict with ``device=`` that
moves what is put into it.
"""

import torch

from compat.lib import TensorDict, tensorclass


@tensorclass
class Batch:
    x: torch.Tensor
    y: torch.Tensor


def main() -> None:
    td = TensorDict(
        {
            "f": torch.rand(4, 2),
            "i": torch.arange(4),
            "n": {"h": torch.rand(4, dtype=torch.float64)},
        },
        batch_size=[4],
        device="cpu",
    )
    assert td.device == torch.device("cpu")
    assert td["n"].device == torch.device("cpu")

    same = td.to("cpu")
    assert same.device == torch.device("cpu")
    assert td.to(torch.device("cpu"))["f"].device.type == "cpu"
    assert td.cpu().device == torch.device("cpu")

    d = td.to(torch.float64)
    assert d["f"].dtype == torch.float64
    assert d["i"].dtype == torch.float64  # to(dtype) casts every leaf
    assert d.device == td.device
    assert td.to("cpu", torch.float16)["f"].dtype == torch.float16
    assert td.to(device="cpu", dtype=torch.float32)["n", "h"].dtype == torch.float32

    assert td.float()["n", "h"].dtype == torch.float32
    assert td.double()["f"].dtype == torch.float64
    assert td.half()["f"].dtype == torch.float16
    assert td.bfloat16()["f"].dtype == torch.bfloat16
    assert td.int()["f"].dtype == torch.int32
    assert td.int64()["f"].dtype == torch.int64
    assert td.float32()["n", "h"].dtype == torch.float32
    assert td.uint8()["i"].dtype == torch.uint8
    assert td.bool()["i"].dtype == torch.bool
    assert td.type(torch.float64)["f"].dtype == torch.float64

    # a tensor-like sample: to(other_tensor) takes its dtype and device
    assert td.to(torch.zeros((), dtype=torch.float64))["f"].dtype == torch.float64

    # clear_device_ lets leaves live anywhere; setting a device back moves them
    td.clear_device_()
    assert td.device is None
    assert td["n"].device is None
    td2 = td.to("cpu")
    assert td2.device == torch.device("cpu")

    # entries put into a TensorDict with a device are moved there
    td3 = TensorDict(batch_size=[2], device="cpu")
    td3["x"] = torch.zeros(2, 3)
    assert td3["x"].device == torch.device("cpu")

    # a dtype-agnostic copy with new device semantics
    none_dev = TensorDict({"a": torch.zeros(3)}, [3])
    assert none_dev.device is None

    # tensorclasses move the same way, and keep their class
    b = Batch(x=torch.rand(3, 2), y=torch.arange(3), batch_size=[3])
    b64 = b.to(torch.float64)
    assert isinstance(b64, Batch)
    assert b64.x.dtype == torch.float64 and b64.y.dtype == torch.float64
    assert isinstance(b.to("cpu"), Batch)
    assert b.to("cpu").device == torch.device("cpu")
    assert b.float().y.dtype == torch.float32

    # non_blocking is accepted
    nb = td.to("cpu", non_blocking=True)
    assert torch.equal(nb["f"], td["f"])

    if torch.cuda.is_available():
        g = td.to("cuda")
        assert g.device.type == "cuda" and g["n", "h"].device.type == "cuda"
        assert torch.equal(g.cpu()["f"], td["f"])
        assert b.cuda().x.device.type == "cuda"
