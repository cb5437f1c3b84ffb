"""``densify()`` of a lazy stack whose members do not all hold a key: the members that
lack it get an empty part (no rows: 0 in the first dim past their batch dims), as
tensordict does, so the key is in the result; where no empty part fits the batch (an
entry with no dims past it, a nested collection only some members hold) it refuses,
naming the keys (README, "Stacking keeps what can be kept")."""

from __future__ import annotations

import pytest
import torch

from tclass import TensorDict, lazy_stack
from tclass.errors import HeterogeneousEntryError, NestedLayoutError


def _parts(t: torch.Tensor) -> list[list[int]]:
    return [list(part.shape) for part in t.unbind(0)]


@pytest.mark.parametrize("layout", [torch.jagged, torch.strided])
def test_a_key_some_members_lack_gets_empty_parts(layout: torch.layout) -> None:
    inner = TensorDict(e=torch.zeros(()))
    first = TensorDict(a=torch.zeros(1), b=torch.zeros(2), d=inner)
    second = TensorDict(b=torch.ones(1), c=torch.ones(2), d=inner.clone() + 1)
    dense = lazy_stack([first, second]).densify(layout=layout)
    assert type(dense) is TensorDict and dense.batch_size == (2,)
    assert set(dense.keys(True, True)) == {"a", "b", "c", ("d", "e")}
    assert _parts(dense["a"]) == [[1], [0]] and _parts(dense["c"]) == [[0], [2]]
    assert dense["a"].unbind(0)[0].tolist() == [0.0] and dense["c"].unbind(0)[1].tolist() == [1, 1]
    assert not dense["d", "e"].is_nested and dense["d", "e"].tolist() == [0.0, 1.0]


def test_the_empty_part_keeps_the_batch_dims_and_the_holders_dtype() -> None:
    sub = TensorDict(p=torch.ones(3), q=torch.ones(3, 2, dtype=torch.int64), batch_size=[3])
    members = [
        TensorDict(x=torch.ones(3), sub=sub, batch_size=[3]),
        TensorDict(x=torch.zeros(3), sub={"p": torch.zeros(3)}, batch_size=[3]),
    ]
    dense = lazy_stack(members).densify(layout=torch.jagged)
    assert _parts(dense["sub", "q"]) == [[3, 2], [3, 0]]
    assert dense["sub", "q"].dtype is torch.int64 and dense["sub", "p"].shape == (2, 3)
    wrapped = TensorDict(td=lazy_stack(members), batch_size=[2]).densify()
    assert _parts(wrapped["td", "sub", "q"]) == [[3, 2], [3, 0]]
    # the holders' later dims differ: the last dim is left empty instead
    ragged = [TensorDict(a=torch.zeros(3, 2, s), batch_size=[3]) for s in (5, 6)]
    out = lazy_stack([*ragged, TensorDict(batch_size=[3])]).densify(layout=torch.strided)
    assert _parts(out["a"]) == [[3, 2, 5], [3, 2, 6], [3, 2, 0]]


def test_no_empty_part_fits_an_entry_without_dims_past_the_batch() -> None:
    members = [TensorDict(x=torch.ones(3), z=torch.ones(3), batch_size=[3])]
    members.append(TensorDict(x=torch.zeros(3), batch_size=[3]))
    with pytest.raises(HeterogeneousEntryError, match=r"'z' in members \[0\]") as caught:
        lazy_stack(members).densify()
    assert "lazy.exclude('z')" in str(caught.value)
    sub = TensorDict(q=torch.ones(3, 2), batch_size=[3])
    lacking = [TensorDict(x=torch.ones(3), sub=sub, batch_size=[3])]
    lacking.append(TensorDict(x=torch.zeros(3), batch_size=[3]))
    with pytest.raises(HeterogeneousEntryError, match=r"\('sub', 'q'\) in members \[0\]"):
        lazy_stack(lacking).densify()
    along_1 = [TensorDict(a=torch.zeros(3, 2), batch_size=[3]), TensorDict(batch_size=[3])]
    with pytest.raises(NestedLayoutError):
        lazy_stack(along_1, 1).densify()
