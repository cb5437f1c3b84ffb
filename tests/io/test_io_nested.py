"""Nested tensors (``torch.nested``, strided and jagged layouts) in saved folders and
archives: round trips of values, layout, dtype and ragged sizes; the load modes; the
peer's folders both ways; what cannot be saved; damaged entries (a clear error, never
a crash: a seeded fuzzer of the entry and of its two files)."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

import pytest
import torch

import tclass
from tclass import MemoryMappedTensor, TensorDict, tensorclass
from tclass.__main__ import main
from tclass.errors import (
    FileConflictError,
    MetadataError,
    MissingFileError,
    TclassError,
    UnsupportedError,
)

pytestmark = pytest.mark.filterwarnings(
    "ignore:The PyTorch API of nested tensors is in prototype stage"
)

LAYOUTS = [torch.strided, torch.jagged]


def nested(shapes: list[tuple[int, ...]], layout: torch.layout, dtype: Any = torch.float32) -> Any:
    parts = [torch.arange(int(torch.Size(s).numel()) or 1)[: torch.Size(s).numel()] for s in shapes]
    components = [(p + 10 * i).reshape(s).to(dtype) for i, (p, s) in enumerate(zip(parts, shapes))]
    return torch.nested.nested_tensor(components, layout=layout)


def same(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Same layout, dtype, components (shapes and values)."""
    if a.layout != b.layout or a.dtype != b.dtype or not (a.is_nested and b.is_nested):
        return False
    left, right = a.unbind(0), b.unbind(0)
    return len(left) == len(right) and all(
        x.shape == y.shape and torch.equal(x, y) for x, y in zip(left, right)
    )


def sample(layout: torch.layout) -> TensorDict:
    return TensorDict(
        {
            "nt": nested([(2, 3), (4, 3)], layout),
            "x": torch.arange(2.0),
            "sub": {"deeper": {"nt": nested([(0, 3), (1, 3)], layout, torch.int32)}},
        },
        batch_size=[2],
    )


# --- round trips ------------------------------------------------------------------------


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("where", ["folder", "archive"])
@pytest.mark.parametrize("mode", [None, "r"])
def test_round_trip(tmp_path: Path, layout: torch.layout, where: str, mode: Any) -> None:
    td = sample(layout)
    path = tmp_path / ("td.tdz" if where == "archive" else "td")
    saved = td.save(path)
    assert same(saved["nt"], td["nt"]) and same(
        saved["sub", "deeper", "nt"], td["sub", "deeper", "nt"]
    )
    loaded = TensorDict.load_memmap(path, mode=mode)
    for key in ("nt", ("sub", "deeper", "nt")):
        assert same(loaded[key], td[key]), key
    assert torch.equal(loaded["x"], td["x"])


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize(
    "dtype", [torch.float64, torch.int8, torch.bool, torch.bfloat16, torch.complex64]
)
def test_dtypes_round_trip(tmp_path: Path, layout: torch.layout, dtype: torch.dtype) -> None:
    td = TensorDict({"nt": nested([(3, 2), (1, 2), (5, 2)], layout, dtype)}, batch_size=[3])
    td.memmap(tmp_path / "td")
    assert same(TensorDict.load_memmap(tmp_path / "td")["nt"], td["nt"])


def test_folder_layout_is_the_peers(tmp_path: Path) -> None:
    td = TensorDict({"nt": nested([(3,), (5,)], torch.strided, torch.int64)}, batch_size=[2])
    td.memmap(tmp_path / "td")
    meta = json.loads((tmp_path / "td" / "meta.json").read_text())
    assert meta["nt"] == {
        "device": "cpu",
        "shape": [2, 1],
        "dtype": "torch.int64",
        "is_nested": True,
        "_tclass": {"nested_format": 1, "layout": "strided"},
    }
    assert (tmp_path / "td" / "nt.shape.memmap").read_bytes() == torch.tensor(
        [3, 5]
    ).numpy().tobytes()
    assert (tmp_path / "td" / "nt.memmap").read_bytes() == torch.cat(
        [torch.arange(3), torch.arange(5) + 10]
    ).numpy().tobytes()


@pytest.mark.parametrize("layout", LAYOUTS)
def test_empty_components_and_files(tmp_path: Path, layout: torch.layout) -> None:
    # Components with no elements; and a tensor of no elements at all, which (like any
    # empty leaf) writes no data file.
    some = nested([(0, 4), (2, 4), (0, 4)], layout)
    none = nested([(0, 4), (0, 4)], layout)
    td = TensorDict({"some": some, "none": none}, batch_size=[])
    td.memmap(tmp_path / "td")
    assert not (tmp_path / "td" / "none.memmap").exists()
    loaded = TensorDict.load_memmap(tmp_path / "td")
    assert same(loaded["some"], some) and same(loaded["none"], none)


def test_a_jagged_tensor_with_holes_saves_its_components(tmp_path: Path) -> None:
    # A narrowed jagged tensor has lengths: gaps between its components in its values.
    base = torch.arange(80.0).view(2, 10, 4)
    holes = torch.nested.narrow(
        base, 1, torch.tensor([0, 5]), torch.tensor([2, 3]), layout=torch.jagged
    )
    assert holes.lengths() is not None
    TensorDict({"h": holes}, batch_size=[2]).memmap(tmp_path / "td")
    loaded = TensorDict.load_memmap(tmp_path / "td")["h"]
    assert loaded.layout == torch.jagged and [p.tolist() for p in loaded.unbind()] == [
        base[0, 0:2].tolist(),
        base[1, 5:8].tolist(),
    ]


def test_zero_dim_components_write_no_size_file(tmp_path: Path) -> None:
    scalars = torch.nested.nested_tensor([torch.tensor(1.5), torch.tensor(-2.0)])
    TensorDict({"s": scalars}, batch_size=[2]).memmap(tmp_path / "td")
    assert not (tmp_path / "td" / "s.shape.memmap").exists()
    assert same(TensorDict.load_memmap(tmp_path / "td")["s"], scalars)


def test_batch_dims_inside_the_components(tmp_path: Path) -> None:
    # batch [2, 3]: each component starts with 3 (the peer's test_save_td_with_nested)
    nt = nested([(3, 4), (3, 5)], torch.strided, torch.float64)
    td = TensorDict({"a": nt}, batch_size=[2, 3])
    td.memmap(tmp_path / "td")
    loaded = TensorDict.load_memmap(tmp_path / "td")
    assert loaded.batch_size == (2, 3) and same(loaded["a"], nt)
    assert torch.equal(loaded[1, 2]["a"], nt[1, 2])


@tensorclass
class Episode:
    obs: torch.Tensor
    steps: torch.Tensor


@pytest.mark.parametrize("layout", LAYOUTS)
def test_records_and_lazy_stacks_hold_nested_leaves(tmp_path: Path, layout: torch.layout) -> None:
    episode = Episode(
        obs=nested([(2, 3), (5, 3)], layout), steps=torch.tensor([2, 5]), batch_size=[2]
    )
    stack = tclass.lazy_stack(
        [TensorDict(nt=nested([(1,), (n,)], layout), batch_size=[2]) for n in (2, 4)]
    )
    td = TensorDict({"episode": episode, "stack": stack}, batch_size=[])
    td.memmap(tmp_path / "td")
    loaded = TensorDict.load_memmap(tmp_path / "td")
    assert isinstance(loaded["episode"], Episode) and same(loaded["episode"].obs, episode.obs)
    assert same(loaded["stack"][1]["nt"], stack[1]["nt"])
    episode.memmap(tmp_path / "ep")
    alone = Episode.load_memmap(tmp_path / "ep")
    assert same(alone.obs, episode.obs) and torch.equal(alone.steps, episode.steps)


# --- modes and writes ------------------------------------------------------------------------


@pytest.mark.parametrize("layout", LAYOUTS)
def test_r_plus_writes_reach_the_file_and_r_writes_do_not(
    tmp_path: Path, layout: torch.layout
) -> None:
    sample(layout).memmap(tmp_path / "td")
    shared = TensorDict.load_memmap(tmp_path / "td", mode="r+")
    shared["nt"].unbind()[1].fill_(-1)
    private = TensorDict.load_memmap(tmp_path / "td", mode="r")
    private["nt"].unbind()[0].fill_(7)
    again = TensorDict.load_memmap(tmp_path / "td")["nt"].unbind()
    assert (again[1] == -1).all() and torch.equal(again[0], torch.arange(6.0).view(2, 3))


def test_saved_copy_maps_its_files(tmp_path: Path) -> None:
    saved = sample(torch.strided).memmap(tmp_path / "td")
    assert isinstance(saved["nt"], MemoryMappedTensor) and saved["nt"].filename == str(
        tmp_path / "td" / "nt.memmap"
    )
    saved["nt"].unbind()[0].add_(100)
    assert TensorDict.load_memmap(tmp_path / "td")["nt"].unbind()[0][0, 0] == 100


def test_archive_refuses_r_plus_naming_the_entry(tmp_path: Path) -> None:
    sample(torch.jagged).save(tmp_path / "td.tdz")
    with pytest.raises(UnsupportedError, match="entry 'nt' is a nested tensor") as refused:
        TensorDict.load_memmap(tmp_path / "td.tdz", mode="r+")
    assert isinstance(refused.value, RuntimeError) and "unpack_memmap" in str(refused.value)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("where", ["td", "td.tdz"])
def test_memmap_like_keeps_the_sizes(tmp_path: Path, layout: torch.layout, where: str) -> None:
    td = sample(layout)
    like = td.memmap_like(tmp_path / where)
    for out in (like, TensorDict.load_memmap(tmp_path / where)):
        components = out["nt"].unbind()
        assert out["nt"].layout == layout and [c.shape for c in components] == [(2, 3), (4, 3)]
        assert all((c == 0).all() for c in components)


def test_memmap_in_place_and_anonymous(tmp_path: Path) -> None:
    td = sample(torch.jagged)
    expected = td.clone()
    td.memmap_(tmp_path / "td")
    assert same(td["nt"], expected["nt"]) and td.is_locked
    shared = sample(torch.strided).memmap()  # anonymous shared memory
    assert same(shared["nt"], sample(torch.strided)["nt"])


@pytest.mark.parametrize("layout", LAYOUTS)
def test_make_memmap_from_tensor_adds_a_nested_leaf(tmp_path: Path, layout: torch.layout) -> None:
    td = TensorDict(batch_size=[2]).memmap_(tmp_path / "td")
    other = TensorDict.load_memmap(tmp_path / "td")
    nt = nested([(2, 2), (1, 2)], layout)
    made = td.make_memmap_from_tensor(("a", "b"), nt)
    blank = td.make_memmap_from_tensor("z", nt, copy_data=False)
    assert same(made, nt) and [c.shape for c in blank.unbind()] == [(2, 2), (1, 2)]
    assert all((c == 0).all() for c in blank.unbind())
    other.memmap_refresh_()
    assert same(other["a", "b"], nt) and same(TensorDict.load_memmap(tmp_path / "td")["z"], blank)


def test_renaming_a_saved_nested_leaf_moves_both_files(tmp_path: Path) -> None:
    loaded = sample(torch.strided).memmap(tmp_path / "td")
    loaded.unlock_().rename_key_("nt", "renamed")
    assert sorted(p.name for p in (tmp_path / "td").glob("*.memmap")) == [
        "renamed.memmap",
        "renamed.shape.memmap",
        "x.memmap",
    ]
    assert same(TensorDict.load_memmap(tmp_path / "td")["renamed"], sample(torch.strided)["nt"])


def test_from_tensor_maps_a_strided_one_and_refuses_a_jagged_one(tmp_path: Path) -> None:
    nt = nested([(2, 3), (1, 3)], torch.strided)
    mapped = MemoryMappedTensor.from_tensor(nt, filename=tmp_path / "nt.memmap")
    assert type(mapped) is MemoryMappedTensor and same(mapped, nt)
    with pytest.raises(UnsupportedError, match="jagged layout is not memory-mapped") as refused:
        MemoryMappedTensor.from_tensor(nested([(2, 3), (1, 3)], torch.jagged))
    assert isinstance(refused.value, NotImplementedError)  # as the peer


# --- the peer -------------------------------------------------------------------------------


def test_the_peers_folders_load_and_ours_load_in_the_peer(tmp_path: Path) -> None:
    tensordict = pytest.importorskip("tensordict")
    nt = nested([(2, 3), (4, 3)], torch.strided)
    tensordict.TensorDict({"nt": nt}, batch_size=[2]).memmap(tmp_path / "theirs")
    assert same(TensorDict.load_memmap(tmp_path / "theirs")["nt"], nt)
    td = TensorDict({"s": nt, "j": nested([(2, 3), (4, 3)], torch.jagged)}, batch_size=[2])
    td.memmap(tmp_path / "ours")
    theirs = tensordict.TensorDict.load_memmap(tmp_path / "ours")
    assert same(theirs["s"], nt)  # a jagged one: the same components, strided
    assert all(torch.equal(a, b) for a, b in zip(theirs["j"].unbind(0), nt.unbind()))


# --- refused ---------------------------------------------------------------------------------


def test_what_cannot_be_saved_is_refused_naming_the_key(tmp_path: Path) -> None:
    transposed = nested([(2, 3), (4, 3)], torch.jagged).transpose(1, 2)
    with pytest.raises(UnsupportedError, match=r"'t'.*ragged dim at dim 1.*dim 2.*transpose"):
        TensorDict({"t": transposed}, batch_size=[2]).memmap(tmp_path / "a")
    empty = torch.nested.nested_tensor([])
    with pytest.raises(UnsupportedError, match="'e'.*no components"):
        TensorDict({"e": empty}, batch_size=[]).memmap(tmp_path / "b")
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_a_key_taking_the_size_files_name_is_refused(tmp_path: Path) -> None:
    # The peer lets "x.shape" overwrite the sizes of "x" (its W10): here, an error.
    nt = nested([(3,), (5,)], torch.strided)
    td = TensorDict({"x": nt, "x.shape": torch.ones(2, 1)}, batch_size=[2])
    with pytest.raises(FileConflictError, match=r"'x.shape.memmap'.*'x.shape'.*rename"):
        td.memmap(tmp_path / "td")


# --- damaged entries -------------------------------------------------------------------------


def _saved(tmp_path: Path, layout: torch.layout = torch.strided) -> Path:
    td = TensorDict({"nt": nested([(2, 3), (4, 3)], layout), "x": torch.ones(2)}, [2])
    td.memmap(tmp_path / "td")
    return tmp_path / "td"


def _edit_entry(path: Path, **fields: Any) -> None:
    meta = json.loads((path / "meta.json").read_text())
    meta["nt"].update(fields)
    (path / "meta.json").write_text(json.dumps(meta))


def _refusal(path: Path, **kwargs: Any) -> TclassError:
    with pytest.raises(TclassError) as refused:
        TensorDict.load_memmap(path, **kwargs)
    assert str(path / "meta.json") in str(refused.value) or str(path) in str(refused.value)
    return refused.value


@pytest.mark.parametrize(
    ("fields", "error", "words"),
    [
        ({"shape": [2, 2, 1]}, MetadataError, "size table's"),
        ({"shape": [3, 2]}, MetadataError, "batch size [2]"),
        ({"shape": [2, -1]}, MetadataError, "size table's"),
        ({"shape": [1 << 40, 2]}, MetadataError, "MiB tclass reads"),
        ({"dtype": "torch.nope"}, MetadataError, "dtype"),
        ({"_tclass": {"nested_format": 2, "layout": "strided"}}, UnsupportedError, "upgrade"),
        ({"_tclass": {"nested_format": 1, "layout": "sparse"}}, MetadataError, "layout"),
        ({"_tclass": "jagged"}, MetadataError, "_tclass"),
    ],
)
def test_damaged_entries_are_clear_errors(
    tmp_path: Path, fields: dict[str, Any], error: type, words: str
) -> None:
    path = _saved(tmp_path)
    _edit_entry(path, **fields)
    refused = _refusal(path)
    assert isinstance(refused, error) and words in str(refused) and "'nt'" in str(refused)
    assert main(["info", str(path)]) != 0


@pytest.mark.parametrize(
    ("sizes", "words"),
    [
        ([[2, 3], [-4, 3]], "negative size"),
        ([[2, 3], [4, 4]], "first dim only"),  # jagged: only the first dim may differ
        ([[2, 3], [1 << 62, 3]], "more elements"),
        ([[2, 3], [40, 3]], "holds 72 bytes"),  # past the data file
    ],
)
def test_damaged_size_tables_are_clear_errors(
    tmp_path: Path, sizes: list[list[int]], words: str
) -> None:
    path = _saved(tmp_path, torch.jagged)
    (path / "nt.shape.memmap").write_bytes(torch.tensor(sizes).numpy().tobytes())
    assert words in str(_refusal(path))
    assert main(["info", str(path)]) != 0


def test_missing_or_short_files_are_clear_errors(tmp_path: Path) -> None:
    path = _saved(tmp_path)
    (path / "nt.shape.memmap").write_bytes(b"\x02" * 12)
    assert "nt.shape.memmap" in str(_refusal(path))
    (path / "nt.shape.memmap").unlink()
    assert isinstance(_refusal(path), MissingFileError)
    path = _saved(tmp_path / "again")
    (path / "nt.memmap").write_bytes(b"\0" * 8)
    assert "nt.memmap" in str(_refusal(path))


def _fuzz_cases(good_meta: dict[str, Any], good_sizes: bytes, rng: random.Random) -> list[Any]:
    junk: list[Any] = [None, True, -1, 0, 1, 2, 3, 1 << 62, 1.5, "x", [], {}, [2], [2, 2, 2]]
    junk += [[-1, 2], [2, 1 << 62], {"nested_format": 1}, {"layout": "jagged"}]
    cases: list[Any] = []
    for _ in range(60):
        entry = dict(good_meta["nt"])
        for name in rng.sample(["shape", "dtype", "is_nested", "_tclass", "device"], 2):
            entry[name] = rng.choice(junk)
        cases.append(("entry", entry))
    for _ in range(60):
        sizes = bytearray(good_sizes)
        for _ in range(rng.randrange(1, 4)):
            sizes[rng.randrange(len(sizes))] = rng.randrange(256)
        cut = rng.choice([len(sizes), len(sizes), rng.randrange(len(sizes))])
        cases.append(("sizes", bytes(sizes[:cut])))
    return cases


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("archive", [False, True])
def test_fuzzed_nested_entries_never_crash_a_loader(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], layout: torch.layout, archive: bool
) -> None:
    # Junk in the entry's fields, bytes changed in the size table or the table cut short:
    # every loader (load_memmap in each mode, device="meta", info, unpack) loads or raises
    # a TclassError; nothing else escapes, nothing crashes.
    good = _saved(tmp_path, layout)
    good_meta = json.loads((good / "meta.json").read_text())
    good_sizes = (good / "nt.shape.memmap").read_bytes()
    for index, (kind, change) in enumerate(_fuzz_cases(good_meta, good_sizes, random.Random(7))):
        path = tmp_path / f"case{index}"
        shutil.copytree(good, path)
        if kind == "entry":
            (path / "meta.json").write_text(json.dumps({**good_meta, "nt": change}))
        else:
            (path / "nt.shape.memmap").write_bytes(change)
        target = path
        if archive:
            target = tclass.pack_memmap(path, tmp_path / f"case{index}.tdz")
        for kwargs in ({}, {"mode": "r"}, {"device": torch.device("meta")}):
            try:
                loaded = TensorDict.load_memmap(target, **kwargs)
            except TclassError:
                continue
            assert loaded.batch_size == (2,)
        main(["info", str(target)])
        capsys.readouterr()
        if archive:
            try:
                tclass.unpack_memmap(target, tmp_path / f"out{index}")
            except TclassError:
                pass
        shutil.rmtree(path)


def test_make_memmap_with_element_shapes_allocates_a_nested_leaf(tmp_path: Path) -> None:
    td = TensorDict(batch_size=[]).memmap_(tmp_path / "td")
    made = td.make_memmap(("e", "f"), shape=torch.tensor([[1, 2], [1, 3]]), dtype=torch.int16)
    assert made.dtype == torch.int16 and [c.shape for c in made.unbind()] == [(1, 2), (1, 3)]
    loaded = TensorDict.load_memmap(tmp_path / "td")["e", "f"]
    assert loaded.is_nested and same(loaded, made) and not loaded.unbind()[1].any()
    with pytest.raises(tclass.errors.ShapeError, match=r"'g'.*table of element shapes"):
        td.make_memmap("g", shape=torch.tensor([[1, -2]]))


def test_info_shows_nested_leaves(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sample(torch.jagged).memmap(tmp_path / "td")
    assert main(["info", str(tmp_path / "td")]) == 0
    shown = capsys.readouterr().out
    assert "nt   float32 nested jagged  [2]  72 B" in shown
    assert "int32 nested jagged  [2]  12 B" in shown


def test_adding_an_entry_onto_a_sizes_file_is_refused(tmp_path: Path) -> None:
    # Into a saved folder, either order: a key "x.shape" beside a nested "x", or the reverse.
    nt = nested([(3,), (5,)], torch.strided)
    td = TensorDict({"x": nt}, batch_size=[2]).memmap_(tmp_path / "a")
    with pytest.raises(FileConflictError, match=r"'x.shape.memmap'.*rename one of 'x.shape'"):
        td.make_memmap_from_tensor("x.shape", torch.ones(2, 1))
    td = TensorDict({"x.shape": torch.ones(2, 1)}, batch_size=[2]).memmap_(tmp_path / "b")
    with pytest.raises(FileConflictError, match=r"'x.shape.memmap'.*rename one of 'x'"):
        td.make_memmap_from_tensor("x", nt)
    for folder in ("a", "b"):  # nothing was written
        assert TensorDict.load_memmap(tmp_path / folder).batch_size == (2,)
    assert torch.equal(TensorDict.load_memmap(tmp_path / "b")["x.shape"], torch.ones(2, 1))


@tensorclass
class _RefreshInner:
    y: torch.Tensor


@tensorclass
class _RefreshOuter:
    x: torch.Tensor
    inner: _RefreshInner


def test_memmap_refresh_keeps_a_nested_record_locked(tmp_path: Path) -> None:
    """A nested record is refreshed in place (the same object, still locked), as the
    peer's nested tensorclass; it was replaced by an unlocked reload (fuzzer, fz26d)."""
    rec = _RefreshOuter(
        x=torch.zeros(3), inner=_RefreshInner(y=torch.ones(3), batch_size=[3]), batch_size=[3]
    )
    saved = rec.memmap(tmp_path / "r")
    inner = saved.inner
    assert saved.memmap_refresh_() is saved
    assert saved.inner.is_locked and saved.is_locked
    assert saved.inner._tensordict is inner._tensordict
    assert torch.equal(saved.inner.y, torch.ones(3))


def test_memmap_refresh_keeps_a_tensor_without_elements_memory_mapped(tmp_path: Path) -> None:
    """A tensor with no elements has no file; ``memmap()`` gives it as a
    ``MemoryMappedTensor`` and ``memmap_refresh_()`` keeps it one (the peer's too), nested
    ones included, so ``is_memmap()`` stays true; a load gives plain tensors (both)."""
    td = TensorDict(
        {"a": torch.zeros(0, 2), "n": TensorDict({"c": torch.zeros(0, 2, 3)}, [0])}, [0]
    )
    saved = td.memmap(tmp_path / "w")
    refreshed = saved.memmap_refresh_()
    for key in ("a", ("n", "c")):
        assert type(refreshed.get(key)) is MemoryMappedTensor
    assert refreshed.get(("n", "c")).shape == (0, 2, 3)
    assert refreshed.is_memmap() and refreshed.is_locked
    assert type(TensorDict.load_memmap(tmp_path / "w").get("a")) is torch.Tensor


def test_memmap_refresh_keeps_nested_stacks_and_values_locked(tmp_path: Path) -> None:
    """``memmap_refresh_()`` of a locked saved TensorDict keeps the nested lazy stack (and
    its members) and Python-value nodes it reads back locked, as ``memmap()`` left them
    and as the peer's refresh does; they were put back unlocked (fuzzer: program
    16,021,871 L12 of methods,index,shape,combine, fz30a). ``unlock_()`` unlocks them all."""
    members = [TensorDict({"a": torch.full((), float(i))}, []) for i in range(2)]
    td = TensorDict(
        {"c": torch.zeros(2), "s": "hi", "n": tclass.lazy_stack(members, 0)}, batch_size=[2]
    )
    saved = td.memmap(tmp_path / "w")
    assert saved.memmap_refresh_() is saved
    stack = saved.get("n")
    assert saved.is_locked and stack.is_locked and saved.get("s").is_locked
    assert all(member.is_locked for member in stack.tensordicts)
    with pytest.raises(RuntimeError, match="locked"):
        stack.tensordicts[0]["a"] = torch.ones(())
    saved.unlock_()
    assert not stack.is_locked and not stack.tensordicts[1].is_locked
    assert not saved.get("s").is_locked
