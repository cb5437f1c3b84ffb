"""A record is saved only with values its class loads back.

Values written into a field's tensor itself (``record.prob[0] = 5``) pass no check; a
save of such a record (a folder, a ``.tdz`` archive, an HDF5 file, nested in a
TensorDict too) is refused before any file is written, as ``append_memmap`` refuses such
rows, rather than writing a folder that ``Cls.load_memmap`` then refuses. ``memmap_like``
fills a field whose constraints refuse 0 as ``Cls.allocate`` does, so that the class
loads the new folder.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import tclass
from tclass import TensorDict, errors

from schema_records import Scored, scored  # noqa: E402

FieldSpecError = errors.FieldSpecError


def broken() -> Scored:
    record = scored()
    record.prob[2, 1] = 1.5  # into the tensor itself: not checked
    return record


@pytest.mark.parametrize(
    "save",
    [
        pytest.param(lambda r, p: r.memmap(p / "s"), id="memmap"),
        pytest.param(lambda r, p: r.memmap_(p / "s"), id="memmap_"),
        pytest.param(lambda r, p: r.save(p / "s.tdz"), id="tdz"),
        pytest.param(lambda r, p: r.to_h5(p / "s.h5"), id="h5"),
        pytest.param(lambda r, p: TensorDict(rec=r, batch_size=[4]).memmap(p / "s"), id="nested"),
        pytest.param(
            lambda r, p: TensorDict(rec=r, batch_size=[4]).to_h5(p / "s.h5"), id="h5-nested"
        ),
    ],
)
def test_values_its_class_would_refuse_are_not_saved(save: object, tmp_path: Path) -> None:
    with pytest.raises(
        FieldSpecError,
        match=r"cannot save Scored .*Scored\.prob holds 1\.5 at index \(2, 1\), which breaks le=1",
    ) as caught:
        save(broken(), tmp_path)  # type: ignore[operator]
    assert "write it through the record" in str(caught.value)
    assert caught.value.problems[0].field == "prob"
    assert not any(tmp_path.iterdir())  # nothing written


def test_a_valid_record_saves_and_loads_as_before(tmp_path: Path) -> None:
    record = scored()
    record.prob[2, 1] = 0.25  # a write past the checks that meets them saves
    record.memmap(tmp_path / "s")
    assert (Scored.load_memmap(tmp_path / "s") == record).all()
    # what is not a load into the class is not checked: shared memory, a TensorDict copy
    assert broken().memmap_().prob[2, 1] == 1.5
    broken().to_tensordict().memmap(tmp_path / "td")


def test_memmap_like_fills_what_its_class_loads(tmp_path: Path) -> None:
    like = scored().memmap_like(tmp_path / "s")
    assert like.part.level.tolist() == [1, 1, 1, 1]  # isin=(1, 2, 3) refuses 0
    assert like.prob.sum() == 0 and like.free.sum() == 0  # the others stay zero
    loaded = Scored.load_memmap(tmp_path / "s")
    assert (loaded == like).all() and loaded.part.level.tolist() == [1, 1, 1, 1]
    assert scored().memmap_like().part.level.tolist() == [1, 1, 1, 1]  # no folder too


def test_a_record_over_a_lazy_stack_is_checked_and_filled_member_by_member(
    tmp_path: Path,
) -> None:
    members = [scored(4), scored(2)]
    stack = tclass.lazy_stack(members)  # a Scored over a lazy stack: its class checks members
    like = stack.memmap_like(tmp_path / "like")
    assert [m.part.level.tolist() for m in like.unbind(0)] == [[1] * 4, [1] * 2]
    assert Scored.load_memmap(tmp_path / "like").unbind(0)[1].part.level.tolist() == [1, 1]
    members[1].prob[1, 0] = -0.5  # past the checks, in the second member
    with pytest.raises(FieldSpecError, match=r"cannot save Scored .*holds -0\.5 at index \(1, 0\)"):
        stack.memmap(tmp_path / "s")
    assert not (tmp_path / "s").exists()


def test_writes_into_a_record_held_by_a_file_are_checked(tmp_path: Path) -> None:
    """A record nested in a PersistentTensorDict is written through the file too (a
    nested key, rows of the file): checked as the record's own writes, nothing written."""
    file = TensorDict(rec=scored(), y=torch.zeros(4), batch_size=[4]).to_h5(tmp_path / "f.h5")
    with pytest.raises(FieldSpecError, match=r"at '/rec/prob': Scored\.prob holds 5\.0"):
        file.set(("rec", "prob"), torch.full((4, 3), 5.0))
    with pytest.raises(FieldSpecError, match=r"at '/rec': Scored\.prob holds 2\.0"):
        file[0] = TensorDict(rec=TensorDict(prob=torch.full((3,), 2.0)), y=torch.tensor(1.0))
    with pytest.raises(FieldSpecError, match=r"Part\.level holds 7"):
        file[1:3] = {"rec": {"part": {"level": torch.tensor([7, 1])}}}
    with pytest.raises(FieldSpecError, match=r"Scored\.prob holds 3"):
        file[0] = 3  # a number for every field
    bad = torch.full((4, 3), 5.0)
    for write in (
        lambda: file.update({"rec": {"prob": bad}}),
        lambda: file.update_(TensorDict(rec=TensorDict(prob=bad, batch_size=[4]), batch_size=[4])),
        lambda: file.set_(("rec", "prob"), bad),
        lambda: file.set_at_(("rec", "prob"), bad[0], 1),
        lambda: file.fill_(("rec", "prob"), 5.0),
        lambda: file.apply_(lambda t: t + 4.5),
        lambda: file[1:3].__setitem__(slice(None), {"rec": {"prob": bad[:2]}}),
        lambda: file[1:3].add_(5),
    ):
        with pytest.raises(FieldSpecError, match=r"Scored\.prob(: the result would)? hold"):
            write()
    reread = tclass.PersistentTensorDict.from_h5(tmp_path / "f.h5")
    assert (reread["rec"] == scored()).all() and reread["y"].tolist() == [0.0] * 4
    file[0] = TensorDict(rec=TensorDict(prob=torch.full((3,), 0.25)), y=torch.tensor(1.0))
    file.set(("rec", "free"), torch.full((4,), 5.0), inplace=True)  # unconstrained: written
    assert file["rec"].prob[0].tolist() == [0.25] * 3 and file["y"].tolist()[0] == 1.0
