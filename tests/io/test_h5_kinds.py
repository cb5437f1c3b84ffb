"""A ``PersistentTensorDict`` where it meets other features (found by the differential
fuzzer's HDF5 worlds): the dim names its in-memory results keep, in-place math on a
lazy stack that holds a file as a member, which must write the file, and a record made
by ``from_tensordict`` of a file, which reads and writes the file."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

import tclass
from tclass import LazyStackedTensorDict, PersistentTensorDict, TensorDict, tensorclass
from tclass.errors import InPlaceWriteError, SchemaMismatchError

pytest.importorskip("h5py")


def _named() -> TensorDict:
    nested = TensorDict({"c": torch.arange(6.0).view(2, 3)}, batch_size=[2, 3])
    return TensorDict({"b": torch.arange(6.0).view(2, 3), "n": nested}, batch_size=[2], names=["i"])


@pytest.fixture
def ptd(tmp_path: Path) -> Iterator[PersistentTensorDict]:
    out = PersistentTensorDict.from_dict(_named(), tmp_path / "f.h5")
    yield out
    out.close()


RESULTS: dict[str, Callable[[Any, Path], Any]] = {
    "double": lambda x, _: x.double(),
    "detach": lambda x, _: x.detach(),
    "mul": lambda x, _: x.mul(2),
    "full_like": lambda x, _: torch.full_like(x, 2),
    "apply": lambda x, _: x.apply(lambda t: t + 1),
    "memmap": lambda x, folder: x.memmap(folder / "copy"),
    # read back (the peer's saved copy of a file drops the names)
    "load_memmap": lambda x, folder: TensorDict.load_memmap(x.memmap(folder / "m").saved_path),
    "load": lambda x, folder: tclass.load((x.save(folder / "s"), folder / "s")[1]),
}


@pytest.mark.parametrize("name", sorted(RESULTS))
def test_results_read_from_a_file_keep_its_dim_names_as_a_tensordicts_do(
    ptd: PersistentTensorDict, tmp_path: Path, name: str
) -> None:
    dense = RESULTS[name](_named(), tmp_path / "dense")
    result = RESULTS[name](ptd, tmp_path / "file")
    assert type(result) is TensorDict
    assert result.names == dense.names == ["i"]
    assert result["n"].names == dense["n"].names == ["i", None]
    assert torch.equal(result["b"], dense["b"])


def test_a_result_over_another_batch_size_has_no_names(ptd: PersistentTensorDict) -> None:
    result = ptd.apply(lambda t: t[:1], batch_size=[1])
    assert result.names == [None]


def _stack(ptd: PersistentTensorDict) -> LazyStackedTensorDict:
    return LazyStackedTensorDict(
        ptd["n"], ptd["n"].to_tensordict().apply(torch.ones_like), stack_dim=1
    )


IN_PLACE: dict[str, tuple[Callable[[Any], Any], Callable[[torch.Tensor], torch.Tensor]]] = {
    "zero_": (lambda s: s.zero_(), torch.zeros_like),
    "mul_": (lambda s: s.mul_(3), lambda t: t * 3),
    "+=": (lambda s: s.__iadd__(1), lambda t: t + 1),
    "clamp_": (lambda s: s.clamp_(max=2.0), lambda t: t.clamp(max=2.0)),
}


@pytest.mark.parametrize("name", sorted(IN_PLACE))
def test_in_place_math_on_a_lazy_stack_writes_its_file_member(
    ptd: PersistentTensorDict, name: str
) -> None:
    op, expected = IN_PLACE[name]
    before = ptd["n", "c"]
    stack = _stack(ptd)
    assert op(stack) is stack
    assert torch.equal(ptd["n", "c"], expected(before))  # the file, read again
    assert torch.equal(stack[:, 0]["c"], expected(before))
    assert torch.equal(stack[:, 1]["c"], expected(torch.ones(2, 3)))


@pytest.mark.parametrize("name", sorted(IN_PLACE))
def test_in_place_math_on_a_lazy_stack_of_lazy_stacks_writes_the_file_inside(
    ptd: PersistentTensorDict, name: str
) -> None:
    op, expected = IN_PLACE[name]
    before = ptd["n", "c"]
    inner = _stack(ptd)  # [2, 2, 3]: the file's rows, then rows in memory
    outer = LazyStackedTensorDict(inner, inner.to_tensordict().apply(torch.ones_like), stack_dim=0)
    assert op(outer) is outer
    assert torch.equal(ptd["n", "c"], expected(before))  # the file, read again
    assert torch.equal(outer[0][:, 0]["c"], expected(before))
    assert torch.equal(outer[1]["c"], expected(torch.ones(2, 2, 3)))


def test_refused_in_place_math_on_a_lazy_stack_of_lazy_stacks_leaves_the_file_unchanged(
    ptd: PersistentTensorDict,
) -> None:
    before = ptd["n", "c"]
    inner = _stack(ptd)
    outer = LazyStackedTensorDict(inner, inner.to_tensordict(), stack_dim=0)
    with pytest.raises(InPlaceWriteError):
        outer.add_(torch.full((2, 2, 2, 3), 1j))
    assert torch.equal(ptd["n", "c"], before)


def test_refused_in_place_math_on_a_lazy_stack_leaves_its_file_member_unchanged(
    ptd: PersistentTensorDict,
) -> None:
    before = ptd["n", "c"]
    stack = _stack(ptd)
    with pytest.raises(InPlaceWriteError) as caught:
        stack.add_(torch.full((2, 2, 3), 1j))  # a complex result does not fit float32
    assert isinstance(caught.value, RuntimeError)
    assert torch.equal(ptd["n", "c"], before)


def test_renaming_an_entry_to_its_own_ancestor_replaces_the_group_with_it(
    tmp_path: Path,
) -> None:
    inner = TensorDict({"a": torch.ones(3, 2)}, batch_size=[3, 2])
    source = TensorDict({"m": {"n": inner}, "b": torch.zeros(3)}, batch_size=[3])
    dense = source.clone().rename_key_(("m", "n", "a"), "m")
    ptd = PersistentTensorDict.from_dict(source, tmp_path / "f.h5")
    try:
        assert ptd.rename_key_(("m", "n", "a"), "m") is ptd
        assert sorted(ptd.keys(True, True)) == sorted(dense.keys(True, True)) == ["b", "m"]
        assert torch.equal(ptd["m"], dense["m"])
        assert torch.equal(ptd["m"], torch.ones(3, 2))
    finally:
        ptd.close()


@pytest.mark.parametrize("rows", [0, 3])
def test_an_empty_list_of_rows_writes_nothing_as_for_a_tensordict(
    tmp_path: Path, rows: int
) -> None:
    source = TensorDict({"a": torch.arange(float(rows)), "n": {"b": torch.ones(rows, 2)}}, [rows])
    dense = source.clone()
    dense[[]] = True
    ptd = PersistentTensorDict.from_dict(source, tmp_path / "f.h5")
    try:
        ptd[[]] = True
        ptd.set_at_("a", 5.0, [])
        assert (ptd == dense).all()
        assert torch.equal(ptd["a"], torch.arange(float(rows)))
        assert ptd[[]].batch_size == torch.Size([0])
    finally:
        ptd.close()


@pytest.mark.parametrize("key", ["zz", ("n", "zz"), ("zz", "a")])
def test_get_at_of_a_missing_key_gives_the_default_as_a_tensordicts_does(
    ptd: PersistentTensorDict, key: Any
) -> None:
    dense = _named()
    assert dense.get_at(key, 0) is None
    assert ptd.get_at(key, 0) is None
    assert ptd.get_at(key, 0, default=7) == dense.get_at(key, 0, default=7) == 7
    assert torch.equal(ptd.get_at(("n", "c"), 1), dense.get_at(("n", "c"), 1))


@pytest.mark.parametrize("index", [(1, -1), (slice(None), 0), (0, slice(1, 3)), (1, [0, 2])])
def test_get_at_an_index_past_the_batch_dims_picks_within_the_tensor(
    ptd: PersistentTensorDict, index: Any
) -> None:
    # As a TensorDict's get_at (get(key)[index]): the tensor's own dims after the batch's.
    dense = _named()
    assert torch.equal(ptd.get_at("b", index), dense["b"][index])
    with pytest.raises(IndexError, match="too many indices"):
        ptd.get_at("n", (0, *index))  # a collection's rows take only its batch dims


def test_a_lazy_stack_with_members_over_a_file_is_saved_read(
    ptd: PersistentTensorDict, tmp_path: Path
) -> None:
    # As the peer: the members over the file are read and saved as the others.
    stack = LazyStackedTensorDict(ptd, _named(), stack_dim=0)
    for saved in (stack.memmap(tmp_path / "o"), stack.memmap_like(tmp_path / "like")):
        assert isinstance(saved, LazyStackedTensorDict) and saved.is_locked
        assert saved.batch_size == torch.Size([2, 2])
        assert all(type(member) is TensorDict for member in saved.tensordicts)
    saved = LazyStackedTensorDict.load_memmap(tmp_path / "o")
    assert torch.equal(saved["b"], torch.stack([_named()["b"]] * 2))
    assert torch.equal(saved["n", "c"], torch.stack([_named()["n", "c"]] * 2))
    assert isinstance(stack.tensordicts[0], PersistentTensorDict)  # the stack unchanged


def test_a_str_written_into_the_rows_of_a_tensor_is_an_in_place_write_error(
    ptd: PersistentTensorDict,
) -> None:
    view = ptd[0]
    with pytest.raises(InPlaceWriteError, match=r"cannot write a str into .*'/b'") as caught:
        view.set("b", "a")
    assert isinstance(caught.value, RuntimeError)  # the peer's builtin here
    with pytest.raises(InPlaceWriteError, match="cannot write a str"):
        ptd.set_at_("b", "a", 0)
    assert torch.equal(ptd["b"], _named()["b"])  # nothing written
    ptd["b"] = "a"  # the entry replaced through the file itself
    assert ptd["b"] == "a"


@pytest.mark.parametrize("safe", [False, True])
def test_an_entry_renamed_to_itself_stays_as_a_tensordicts_does(
    ptd: PersistentTensorDict, safe: bool
) -> None:
    # It was deleted from the file (without safe) or refused as already present (with).
    for key in ("b", ("n", "c")):
        assert ptd.rename_key_(key, key, safe=safe) is ptd
        assert set(_named().rename_key_(key, key, safe=safe).keys(True)) == set(ptd.keys(True))
    assert (ptd.to_tensordict() == _named()).all()
    with pytest.raises(KeyError, match="zz"):
        ptd.rename_key_("zz", "zz")


@tensorclass
class Part:
    y: torch.Tensor
    z: torch.Tensor | None = None


@tensorclass
class Whole:
    x: torch.Tensor
    label: str
    part: Part


def _whole_file(path: Path) -> PersistentTensorDict:
    part = Part(y=torch.arange(3.0), batch_size=[3])
    whole = Whole(x=torch.ones(3, 2), label="run", part=part, batch_size=[3])
    return PersistentTensorDict.from_dict(whole.to_tensordict(), path)


def test_from_tensordict_of_a_file_is_a_record_over_it(tmp_path: Path) -> None:
    ptd = _whole_file(tmp_path / "w.h5")
    record = Whole.from_tensordict(ptd)
    assert type(record) is Whole and type(record.part) is Part
    assert record.label == "run" and torch.equal(record.part.y, torch.arange(3.0))
    record.x = torch.zeros(3, 2)  # writes go to the file, as the peer's
    record.part.y += 1
    assert torch.equal(ptd["x"], torch.zeros(3, 2))
    assert torch.equal(ptd["part", "y"], torch.arange(1.0, 4.0))
    # the collection given reads its groups as before, not as records
    assert type(ptd.get("part")) is PersistentTensorDict
    ptd.close()


def test_from_tensordict_of_a_file_checks_it_as_from_h5_does(tmp_path: Path) -> None:
    extra = TensorDict({"x": torch.ones(3, 2), "q": torch.ones(3)}, batch_size=[3])
    ptd = PersistentTensorDict.from_dict(extra, tmp_path / "q.h5")
    with pytest.raises(SchemaMismatchError, match="q is in the file") as caught:
        Whole.from_tensordict(ptd)
    assert isinstance(caught.value, ValueError)  # the peer's error for a key not a field
    ptd.close()


def test_from_tensordict_of_a_view_of_a_file_is_a_record_over_its_rows(tmp_path: Path) -> None:
    ptd = _whole_file(tmp_path / "w.h5")
    record = Whole.from_tensordict(ptd[1:])
    assert type(record) is Whole and type(record.part) is Part
    assert record.batch_size == torch.Size([2])
    assert torch.equal(record.part.y, torch.arange(1.0, 3.0))
    record.x = torch.zeros(2, 2)  # writes rows 1 and 2 of the file
    assert torch.equal(ptd["x"], torch.tensor([[1.0, 1.0], [0.0, 0.0], [0.0, 0.0]]))
    ptd.close()


@pytest.mark.parametrize("index", [..., 0, slice(1, None)], ids=["all", "row", "rows"])
def test_a_number_written_into_rows_is_converted_to_each_dtype_as_in_a_tensordict(
    tmp_path: Path, index: Any
) -> None:
    td = TensorDict(
        {"b": torch.zeros(2, dtype=torch.bool), "i": torch.zeros(2, 3, dtype=torch.int32)},
        batch_size=[2],
    )
    ptd = PersistentTensorDict.from_dict(td, tmp_path / "d.h5")
    td[index] = 1.5  # a float into a bool dataset: h5py has no conversion
    ptd[index] = 1.5
    for key in ("b", "i"):
        assert ptd[key].dtype == td[key].dtype and torch.equal(ptd[key], td[key])
    ptd.close()


def test_get_at_masks_that_do_not_broadcast_is_an_index_error_as_for_a_tensordict(
    tmp_path: Path,
) -> None:
    td = TensorDict({"d": torch.arange(12).view(3, 4)}, batch_size=[3, 4])
    ptd = PersistentTensorDict.from_dict(td, tmp_path / "m.h5")
    masks = (torch.tensor([True, True, False]), torch.tensor([True, True, True, False]))
    with pytest.raises(IndexError, match="could not be broadcast"):
        td.get_at("d", masks)
    with pytest.raises(IndexError, match="could not be broadcast"):  # (a RuntimeError)
        ptd.get_at("d", masks)
    both = (torch.tensor([True, False, True]), torch.tensor([False, True, False, True]))
    assert torch.equal(ptd.get_at("d", both), td.get_at("d", both))
    ptd.close()


def test_a_value_set_through_a_view_of_a_file_without_rows_is_written(tmp_path: Path) -> None:
    ptd = PersistentTensorDict.from_dict(
        TensorDict({"a": torch.zeros(0, 2)}, batch_size=[0]), tmp_path / "e.h5"
    )
    view = ptd[torch.zeros(0, dtype=torch.long)]
    view["n", "s"] = "pong"  # as in a TensorDict of no rows (the peer's file drops it)
    assert ptd["n", "s"] == "pong" and ("n", "s") in ptd.keys(include_nested=True)
    full = PersistentTensorDict.from_dict(
        TensorDict({"a": torch.zeros(2)}, batch_size=[2]), tmp_path / "f.h5"
    )
    with pytest.raises(InPlaceWriteError, match="other rows would hold none"):
        full[:1]["s"] = "pong"
    ptd.close()
    full.close()


def test_set_non_tensor_at_a_new_nested_key_of_a_lazy_stack_of_files_is_written(
    tmp_path: Path,
) -> None:
    """Each member file gets the group and the value (the peer's get the group and drop
    the value: fuzz35b's program 2,405,544, a deliberate difference)."""
    files = [TensorDict({}, [2]).to_h5(tmp_path / f"w{i}.h5") for i in range(2)]
    lazy = LazyStackedTensorDict.lazy_stack(files, 1)
    lazy.set_non_tensor(("zz", "a"), "v")
    assert ("zz", "a") in lazy.keys(True)
    for member in files:
        assert member.get_non_tensor(("zz", "a")) == "v"
    assert lazy.get_non_tensor(("zz", "a")) == [["v", "v"], ["v", "v"]]  # as in memory


def test_tensor_split_of_a_lazy_stack_of_files_reads_each_members_pieces(tmp_path: Path) -> None:
    # along a dim other than the stack dim, each member's own tensor_split, as the peer's
    # (split): a file's pieces are read into memory, not the file itself or views of it
    files = [PersistentTensorDict.from_dict(_named(), tmp_path / f"f{i}.h5") for i in range(2)]
    stack = LazyStackedTensorDict(*files, stack_dim=0)
    (whole,) = stack.tensor_split([], -1)
    halves = stack.tensor_split(torch.tensor([1]), 1)
    for piece in (whole, *halves):
        assert isinstance(piece, LazyStackedTensorDict)
        assert all(type(m) is TensorDict for m in piece.tensordicts)
    assert whole.batch_size == torch.Size([2, 2]) and halves[1].batch_size == torch.Size([2, 1])
    assert torch.equal(halves[1]["b"], stack["b"][:, 1:])
    whole["b"].zero_()  # a copy: the files are unchanged
    assert files[0]["b"].sum() > 0
    for f in files:
        f.close()


def test_a_mask_over_the_stack_dim_and_a_files_dims_reads_the_rows(tmp_path: Path) -> None:
    # elements gathered from members over several dims are copies, as torch's advanced
    # indexing and the peer's (it unbinds the rows it read): in memory, the files unchanged
    rows = TensorDict({"b": torch.arange(6.0).view(2, 3)}, batch_size=[2, 3])
    files = [PersistentTensorDict.from_dict(rows, tmp_path / f"f{i}.h5") for i in range(3)]
    stack = LazyStackedTensorDict(*files, stack_dim=0)
    mask = torch.tensor([[True, False], [False, False], [True, True]])
    for picked in (stack[mask], stack[torch.tensor([0, 2]), torch.tensor([1, 0])]):
        assert all(type(m) is TensorDict for m in picked.tensordicts)
        picked += 100  # a copy: the files are unchanged
    assert stack[mask].batch_size == torch.Size([3, 3])
    assert torch.equal(stack[mask]["b"], torch.stack([f["b"] for f in files])[mask])
    assert all(f["b"].max() < 100 for f in files)
    assert type(stack[torch.tensor([True, False, True])].tensordicts[0]) is PersistentTensorDict
    for f in files:
        f.close()


def test_a_view_of_a_files_rows_is_not_contiguous_as_the_file(ptd: PersistentTensorDict) -> None:
    # (the peer's file says False, its views True)
    assert not ptd.is_contiguous()
    assert not ptd[..., :1].is_contiguous() and not ptd[:1].is_contiguous()
    assert ptd[:1].contiguous().is_contiguous()


@tensorclass
class _Half:
    t: torch.Tensor


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float8_e4m3fn])
def test_a_dtype_hdf5_lacks_is_a_type_error_as_the_peers(
    tmp_path: Path, dtype: torch.dtype
) -> None:
    # The peer's h5py raises TypeError ("unsupported ScalarType"); tclass's message says
    # what to do, and code catching the peer's TypeError catches it (it was a
    # NotImplementedError only).
    name = str(dtype).removeprefix("torch.")
    for data in (
        TensorDict(x=torch.zeros(2, dtype=dtype), batch_size=[2]),
        _Half(t=torch.zeros(2, dtype=dtype), batch_size=[2]),
    ):
        with pytest.raises(TypeError, match=f"HDF5 has no {name}; convert") as info:
            data.to_h5(tmp_path / "x.h5")
        assert isinstance(info.value, tclass.errors.UnsupportedError)


@pytest.mark.parametrize(
    "value", [2**64, -(2**63) - 1, [1, 2**70], 2**63, -(2**63), 1e-320, True, b"raw"]
)
def test_python_numbers_and_bytes_round_trip(tmp_path: Path, value: Any) -> None:
    # numpy makes an object array of an int beyond 64 bits, which HDF5 cannot store as
    # the opaque number the peer writes: such a value goes as JSON (h5py raised a bare
    # TypeError before anything told the user which value); bytes are the peer's opaque
    # fixed-width strings, read back as bytes (as the peer reads them; tclass gave a str)
    td = TensorDict({"x": torch.zeros(2)}, [2])
    td.set_non_tensor("v", value)
    td.to_h5(tmp_path / "a.h5")
    back = PersistentTensorDict.from_h5(tmp_path / "a.h5").to_tensordict()
    got = back.get_non_tensor("v")
    assert got == value and type(got) is type(value)


@tensorclass
class _BigInt:
    x: torch.Tensor
    i: int


def test_a_record_with_an_int_beyond_64_bits_round_trips(tmp_path: Path) -> None:
    rec = _BigInt(x=torch.zeros(2), i=2**64, batch_size=[2])
    rec.to_h5(tmp_path / "r.h5")
    assert _BigInt.from_h5(tmp_path / "r.h5").i == 2**64
    stacked = torch.stack([rec, _BigInt(x=torch.zeros(2), i=1, batch_size=[2])])
    stacked.to_h5(tmp_path / "s.h5")
    assert _BigInt.from_h5(tmp_path / "s.h5").i == [[2**64] * 2, [1, 1]]


def test_maybe_dense_stack_of_files_whose_nested_entries_differ_is_a_tensordict(
    tmp_path: Path,
) -> None:
    """``maybe_dense_stack`` (and ``collate``) of files that agree but for a nested
    group's shapes: a TensorDict of the files' tensors, the nested groups stacked
    lazily, as for TensorDicts and as the peer's (it was a lazy stack of the files;
    og32a, program 16,435,545 L4 of the extra family)."""
    sources = [
        TensorDict({"c": torch.zeros(1), "n": {"d": torch.zeros(3), "c": torch.zeros(2)}}),
        TensorDict({"c": torch.ones(1), "n": {"d": torch.ones(3), "c": torch.ones(3)}}),
    ]
    files = [
        PersistentTensorDict.from_dict(td, tmp_path / f"w{i}.h5") for i, td in enumerate(sources)
    ]
    for result in (tclass.maybe_dense_stack(files), tclass.collate(files)):
        assert type(result) is TensorDict and result.batch_size == torch.Size([2])
        assert torch.equal(result["c"], torch.tensor([[0.0], [1.0]]))
        nested = result.get("n")
        assert isinstance(nested, LazyStackedTensorDict)
        assert [m["c"].tolist() for m in nested.tensordicts] == [[0.0, 0.0], [1.0, 1.0, 1.0]]
        assert torch.equal(nested["d"], torch.stack([torch.zeros(3), torch.ones(3)]))
    with pytest.raises(tclass.errors.StackError):  # a top-level tensor's shapes differ
        tclass.stack([files[0].get("n"), files[1].get("n")])
    for file in files:
        file.close()
