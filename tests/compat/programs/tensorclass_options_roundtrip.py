"""Class options kept through what users do to records: ``autocast``, ``nocast`` and
``frozen`` records saved to a folder and loaded back, pickled by ``torch.save``, cloned,
indexed and stacked, the option meaning the same after each; an optional Python value
field left unset, filled by a row write of a record of the class; and a state dict
giving back the float it saved, to the sign of a zero.
"""

import io
import tempfile
from typing import Optional

import torch

from compat.lib import tensorclass


@tensorclass(autocast=True)
class Casting:
    obs: torch.Tensor
    step: int = 0


@tensorclass(nocast=True)
class Keeping:
    obs: torch.Tensor
    extra: torch.Tensor = None


@tensorclass(frozen=True)
class Fixed:
    obs: torch.Tensor
    tag: str = "a"


@tensorclass
class Scored:
    obs: torch.Tensor
    score: Optional[float] = None
    scale: float = 0.0


def _copies(record, folder):
    record.memmap(folder)
    buffer = io.BytesIO()
    torch.save(record, buffer)
    buffer.seek(0)
    return [
        type(record).load_memmap(folder),
        torch.load(buffer, weights_only=False),
        record.clone(),
        record[1:],
        torch.stack([record, record])[0],
    ]


def _refused(write) -> bool:
    try:
        write()
    except Exception:
        return True
    return False


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        casting = Casting(obs=torch.zeros(3), step="2", batch_size=[3])
        assert casting.step == 2
        for i, copy in enumerate(_copies(casting, f"{tmp}/casting")):
            assert copy.step == 2 and type(copy.step) is int, i
            copy = copy.clone()
            copy.step = "7"
            assert copy.step == 7, i

        keeping = Keeping(obs=torch.zeros(3), extra=4, batch_size=[3])
        for i, copy in enumerate(_copies(keeping, f"{tmp}/keeping")):
            assert copy.extra == 4 and type(copy.extra) is int, i

        fixed = Fixed(obs=torch.zeros(3), batch_size=[3])
        for i, copy in enumerate(_copies(fixed, f"{tmp}/fixed")):
            assert _refused(lambda c=copy: setattr(c, "tag", "b")), i
            assert copy.tag == "a", i

    # an unset optional value, filled by writing every row from a record of the class
    buffer = Scored(obs=torch.zeros(3), batch_size=[3])
    assert buffer.score is None
    buffer[:] = Scored(obs=torch.ones(3), score=0.5, batch_size=[3])
    assert buffer.score == 0.5 and buffer.obs.tolist() == [1.0, 1.0, 1.0]

    # a state dict gives back the value it saved, -0.0 too
    saved = Scored(obs=torch.zeros(2), scale=-0.0, batch_size=[2]).state_dict()
    restored = Scored(obs=torch.ones(2), scale=0.0, batch_size=[2])
    restored.load_state_dict(saved)
    assert str(restored.scale) == "-0.0" and restored.obs.tolist() == [0.0, 0.0]


if __name__ == "__main__":
    main()
