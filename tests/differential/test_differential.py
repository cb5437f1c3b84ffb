"""The short differential run: random programs in tclass and the peer, outcomes compared.

Deterministic: hypothesis is derandomized (the same programs every run) and the seeded
programs are numbered as the standalone runner numbers them (``python -m
tests.differential.run --replay N`` shows program N). A failure prints the program as a
script; anything the allowlist does not cover is a bug to fix in tclass.
"""

from __future__ import annotations

import pathlib
import re

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from . import allowlist
from .chooser import DataChooser, RandomChooser
from .compare import differences, snapshot
from .engine import Finding, Program, Stats, Step, run_program
from .libs import Lib, libraries
from .ops import DEFAULT_FAMILIES, generators, world_of
from .world import Facts

pytestmark = pytest.mark.peer

PROGRAMS = settings(
    max_examples=40,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
README = pathlib.Path(__file__).parents[2] / "README.md"
# The records family's programs write folders (memmap, save, consolidate), as do the
# methods and features families' round trips: fewer of them keep the run as long as it was.
EXAMPLES = {"records": 24, "methods": 24, "features": 24}
NUMBERED = 160


@pytest.fixture(scope="module")
def libs() -> tuple[Lib, Lib]:
    pytest.importorskip("tensordict")
    found = libraries()
    assert found is not None
    return found


def _check(stats: Stats) -> None:
    bugs = [finding for finding in stats.findings if finding.is_bug]
    assert not bugs, "\n\n".join(finding.report() for finding in bugs[:3])


@pytest.mark.parametrize("family", sorted(DEFAULT_FAMILIES))
def test_programs_of_one_family(family: str, libs: tuple[Lib, Lib]) -> None:
    gens = generators([family])
    build = world_of([family])

    @settings(PROGRAMS, max_examples=EXAMPLES.get(family, PROGRAMS.max_examples))
    @given(st.data())
    def run(data: st.DataObject) -> None:
        stats = Stats()
        run_program(DataChooser(data), libs, gens, stats, length=4, build=build)
        _check(stats)

    run()


@PROGRAMS
@given(data=st.data())
def test_programs_of_every_family(data: st.DataObject) -> None:
    libs = libraries()
    if libs is None:
        pytest.skip("needs the peer library tensordict")
    stats = Stats()
    run_program(DataChooser(data), libs, generators(sorted(DEFAULT_FAMILIES)), stats, length=6)
    _check(stats)


def test_numbered_programs(libs: tuple[Lib, Lib]) -> None:
    """Programs 0..159 of the runner (all families, 4 ops each)."""
    stats = Stats()
    gens = generators(DEFAULT_FAMILIES)  # the runner's order: program n is the runner's n
    for n in range(NUMBERED):
        run_program(RandomChooser(n), libs, gens, stats, length=4)
    assert stats.programs == NUMBERED and sum(stats.steps.values()) > 2 * NUMBERED
    _check(stats)


def test_the_runner_reports_and_exits_clean(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("tensordict")
    from .run import main

    assert main(["--examples", "20", "--seed", "5000", "--stats"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"^20 programs, \d+ steps compared", out, re.M)
    assert "\n0 discrepancies" in out


def test_the_runner_lists_the_open_signatures_it_saw(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--open-seen``: each OPEN signature a run showed, with its programs, then each
    new one; allowed findings are not listed."""
    pytest.importorskip("tensordict")
    from . import run

    def fake(
        chooser: RandomChooser, libs: object, gens: object, stats: Stats, *rest: object
    ) -> None:
        n = stats.programs  # programs 0.. in order (--seed 0)
        stats.programs += 1
        if n % 2:
            step = Step(src="x.op()", op="op", family="fam")
            why = {1: "open", 3: "open", 5: None}[n]
            stats.findings.append(
                Finding("result", step, ["x"], ["result: peer 1, tclass 2"], open=why)
            )

    monkeypatch.setattr(run, "run_program", fake)
    assert run.main(["--examples", "6", "--seed", "0", "--open-seen"]) == 1  # program 5 is new
    out = capsys.readouterr().out
    seen = [line for line in out.splitlines() if line.endswith("]")]
    assert seen == [
        "open-seen 'fam/op/result: result: peer , tclass ' programs [1, 3]",
        "new-seen 'fam/op/result: result: peer , tclass ' programs [5]",
    ]


def test_every_allowed_difference_cites_the_readme() -> None:
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Differences from tensordict") :]
    names = [entry.name for entry in allowlist.ENTRIES]
    # One entry per documented rule; the cap keeps the set small enough to review.
    assert len(names) == len(set(names)) and len(names) <= 24
    for entry in allowlist.ENTRIES:
        assert entry.readme in section, f"{entry.name}: {entry.readme!r} not in the README"


_FIVE = "index,entries,shape,combine,math"
_FEATURES = "features,index,shape,combine"

# Programs decided as the peer's inconsistencies (left46b): families, ops per program, the
# program's number and the entry that covers its finding.
_METHODS = "methods,index,shape,combine"
_RECORDS4 = "methods,features,entries,records"
_ALL = "index,entries,shape,combine,math,records,methods,features"  # the runner's default
_ALL9 = "methods,features,entries,records,index,shape,combine,math,extra"
DECIDED = [
    ("shape,combine", 4, 4_625, "stacking-keeps"),  # unflatten: a value list one level deeper
    ("shape,combine", 4, 7_753, "stacking-keeps"),  # torch.stack of lazy stacks of lazy stacks
    ("shape,combine", 4, 51_962, "stacking-keeps"),  # transpose: nested lazy stacks of records
    ("shape,combine", 4, 55_813, "checked-as-torch"),  # batch_size = [1] of a nested empty node
    ("index,entries,shape,combine,math,records", 4, 7_700_325, "stacking-keeps"),  # pad names
    ("shape,combine,math", 8, 7_502_593, "checked-as-torch"),  # squeeze() of per-element values
    # inv18b: the prune17 lines of index/* and math/* (programs of the five families)
    (_FIVE, 4, 17_546, "bitwise-in-place"),  # ^= of a lazy stack: the peer's x ^ 0.5
    (_FIVE, 4, 34_292, "bitwise-in-place"),  # |= of a lazy stack: the peer's x | 2
    (_FIVE, 4, 46_825, "checked-as-torch"),  # nansum(dim=) keeps the stack dim's name
    (_FIVE, 4, 20_793, "checked-as-torch"),  # new_zeros(()) of a named TD holding a value
    (_FIVE, 4, 14_611, "peer-fails-inside"),  # nanmean along a ragged stack's stack dim
    (_FIVE, 4, 24_629, "peer-fails-inside"),  # td < tensor, a lazy stack nested
    (_FIVE, 4, 65_451, "peer-fails-inside"),  # a write at an index along a ragged dim
    (_FIVE, 4, 10_359, "values-kept-shared"),  # addcdiv with an apply result over none
    (_FIVE, 4, 20_756, "index-beyond-batch"),  # update_at_ broadcast into a nested TD
    (_FIVE, 4, 42_482, "index-beyond-batch"),  # a record's update_at_: the peer's update()
    (_FIVE, 4, 46_765, "index-beyond-batch"),  # the same, I[:, None, None]
    (_FIVE, 4, 58_742, "index-beyond-batch"),  # the same, an index the source does not fit
    (_FIVE, 4, 66_005, "index-beyond-batch"),  # the same, memory-mapped tensors kept
    # inv18c: the prune17 shape/combine lines
    ("shape,combine", 4, 66_874, "peer-fails-inside"),  # stack: a value node's stale name
    ("shape,combine", 4, 14_449, "peer-fails-inside"),  # transpose of values over no elements
    ("shape,combine", 4, 68_631, "peer-fails-inside"),  # to_padded_tensor without leaves
    ("shape,combine", 4, 14_517, "stacking-keeps"),  # expand_as of a memory-mapped lazy stack
    ("index,entries,shape,combine,math", 4, 63_772, "checked-as-torch"),  # squeeze() names
    ("index,entries,shape,combine,math", 4, 17_255, "peer-fails-inside"),  # separates: empty kept
    ("index,entries,shape,combine,math", 4, 18_951, "stacking-keeps"),  # expand_as of locked
    ("index,entries,shape,combine,math", 4, 25_372, "stacking-keeps"),  # unflatten, no elements
    ("shape,combine", 4, 14_138, "stacking-keeps"),  # maybe_dense_stack: ragged, params
    ("records", 4, 3_255, "values-kept-shared"),  # prune18: loaded empty lists, apply
    ("records", 4, 901_130, "values-kept-shared"),  # prune18: ... memmap_like of consolidated
    # inv18d: a Python value through a view of a file's rows, which the peer drops
    ("index,entries", 4, 401_695, "h5-files"),  # view["b"] = "pong" over a bool tensor
    ("index,entries", 4, 1_105_466, "h5-files"),  # view.set(("n", "zz"), "x y")
    ("index,entries,shape,combine,math,records", 4, 1_500_395, "h5-files"),  # a lazy stack's
    ("index,entries", 4, 401_328, "values-kept-shared"),  # loaded[None] = 1.5: memmap kept
    ("index", 4, 3_001_732, "h5-files"),  # a write into a file's view at repeated rows
    ("index,entries", 4, 1_107_020, "h5-files"),  # split_keys(inplace=True) of files
    ("index,entries", 4, 1_001_201, "params-write-their-data"),  # split_keys of locked params
    ("index,entries", 4, 401_365, "values-kept-shared"),  # separates of a value, unlock_
    ("index,entries", 4, 1_004_589, "values-kept-shared"),  # separates(): the node shared
    ("index,entries", 4, 1_105_079, "values-kept-shared"),  # empty(recurse=True), lazy, pop
    ("index,entries,shape,combine,math,records", 4, 1_500_506, "ragged-values-keep-sizes"),
    ("index,entries", 4, 1_005_853, "stacking-keeps"),  # x[0] = rows: the node kept
    ("shape,combine", 4, 12_893, "checked-as-torch"),  # squeeze(): values as the batch
    # fz18b
    ("index,shape,combine", 8, 8_700_257, "stacking-keeps"),  # [1] of a view of records
    ("entries,records", 4, 8_600_176, "peer-fails-inside"),  # get after an h5 separates
    ("records,math", 4, 8_500_028, "bitwise-in-place"),  # %=: an empty nested record kept
    ("records,math", 4, 8_501_629, "peer-fails-inside"),  # ** torch.tensor(0.5): last bit
    ("index,shape,combine", 8, 8_704_091, "peer-fails-inside"),  # narrow to one member
    ("index,shape,combine", 8, 8_702_738, "index-beyond-batch"),  # update_at_, I[None, t]
    # inv19a: the prune18b lines of index/* and math/*
    ("math", 4, 4_834, "peer-fails-inside"),  # .pow(torch.tensor(0.5)): torch.pow's inf
    ("math", 4, 17_045, "math-beyond-the-peer"),  # max along a dim of size 0, lazy
    ("math", 4, 2_827, "params-write-their-data"),  # params **= t over a file: itself
    ("index,entries", 4, 51_918, "index-beyond-batch"),  # x[None, 0:0:3] = rows: nothing
    ("index,entries", 4, 61_552, "peer-fails-inside"),  # a record's update_at_, I[[-1, -1]]
    ("index,entries", 4, 113_056, "peer-fails-inside"),  # copy_at_ of a memmapped record
    ("index,entries", 4, 55_867, "h5-files"),  # ptd[mask, None] = True: h5py fails inside
    ("index,entries", 4, 2_400_281, "peer-fails-inside"),  # update_at_ of no member, a value
    # fz18a: fresh windows of index,entries,records (--length 8)
    ("index,entries,records", 8, 8_300_268, "peer-fails-inside"),  # a value or a TD: mixed
    ("index,entries,records", 8, 8_301_067, "checked-as-torch"),  # stack of stacks' names
    ("index,entries,records", 8, 8_301_273, "h5-files"),  # update_at_(v, None) of a file
    ("index,entries,records", 8, 8_301_445, "peer-fails-inside"),  # separates: label twice
    ("index,entries,records", 8, 8_303_409, "index-beyond-batch"),  # a record's update_at_
    ("index,entries,records", 8, 8_303_496, "peer-fails-inside"),  # split_keys: nested dims
    ("index,entries,records", 8, 8_304_339, "params-write-their-data"),  # empty() of locked
    ("index,entries,records", 8, 8_305_880, "stacking-keeps"),  # split_keys, from_dict's None
    ("shape,combine,math", 6, 8_403_514, "math-beyond-the-peer"),  # == of a stacked ragged stack
    ("shape,combine,math", 6, 8_405_363, "peer-fails-inside"),  # tensor_split(1), ragged dim
    # fz18c
    (_FIVE + ",records", 4, 9_302_004, "values-kept-shared"),  # empty(True): nested lock
    ("records,entries", 4, 9_201_843, "none-field-unset"),  # rename_key_ of inner.z
    ("records,entries", 4, 9_212_728, "values-kept-shared"),  # empty(True): the source's node
    # fz19a
    ("shape,combine", 8, 9_800_220, "peer-fails-inside"),  # view after squeeze of a value
    (_FIVE + ",records", 6, 9_901_758, "annotation-casts"),  # update: a dict label kept
    # inv19c: prune18b's index,entries lines
    ("index,entries", 4, 64_403, "params-write-their-data"),  # locked named_apply(inplace)
    ("index,entries", 4, 100_900, "apply-keeps-fitting-values"),  # and the stack dim's name
    ("index,entries", 4, 69_335, "h5-files"),  # clone().auto_batch_size_(batch_dims=0)
    ("index,entries", 4, 57_520, "none-field-unset"),  # pop of inner.z after update
    ("records", 4, 1_001_866, "values-kept-shared"),  # select(("n", "zz")), over no elements
    # inv19b: prune18b's entries/* lines (index,entries, PYTHONHASHSEED=0)
    ("index,entries", 4, 858, "annotation-casts"),  # update_ of a dict into a saved str field
    ("index,entries", 4, 3_259, "records-predictable"),  # from_namedtuple: [] over no elements
    ("index,entries", 4, 7_444, "peer-fails-inside"),  # get_non_tensor through a tensor
    ("index,entries", 4, 13_873, "peer-fails-inside"),  # TensorDict(to_dict()) after separates
    ("index,entries", 4, 15_500, "values-kept-shared"),  # setdefault saved, seen by del_
    ("index,entries", 4, 51_550, "peer-fails-inside"),  # split_keys: nested dims, memmap kept
    ("index,entries", 4, 54_380, "h5-files"),  # split_keys(inplace=True) of params over a file
    ("index,entries", 4, 102_128, "none-field-unset"),  # split_keys of inner.z (from_dict None)
    ("index,entries", 4, 106_755, "h5-files"),  # split_keys(inplace=True) of a view of rows
    # split19: the inv18c shape/squeeze line
    ("shape,combine", 4, 10_347, "checked-as-torch"),  # squeeze() of a value over none
    ("shape", 4, 17_618, "checked-as-torch"),  # flatten after a record's peer squeeze()
    ("shape", 8, 22_692, "checked-as-torch"),  # flatten(1) of a value over none
    # fz19b
    (_FIVE + ",records", 6, 9_905_671, "stacking-keeps"),  # stack of unbind: padded values
    ("shape,combine,math", 4, 10_101_904, "params-write-their-data"),  # to: nested lazy
    ("shape,combine,math", 4, 10_102_854, "peer-fails-inside"),  # x < x.apply(f), no elements
    ("index,entries", 8, 10_202_540, "peer-fails-inside"),  # numpy() after separates
    ("entries,records", 4, 10_005_577, "checked-as-torch"),  # unbind: the stack dim's name
    # inv19d: inv19c's index lines
    ("index", 4, 354, "checked-as-torch"),  # an entry-less source into a file's view
    ("index", 4, 5_671, "h5-files"),  # stack[mask] = rows of files: h5py's fancy indexing
    ("index", 4, 1_746, "h5-files"),  # masked_fill_ through a file's view at repeated rows
    ("index", 4, 5_667, "h5-files"),  # f[-2:] = f[None].clone(): the peer's file refuses
    # inv19e: the allowlist's crash on a plain dict (records,entries)
    ("records,entries", 4, 9_194_497, "annotation-casts"),  # from_dict: a dict label kept
    ("records,entries", 4, 9_190_756, "none-field-unset"),  # filter_empty_ of inner.z None
    ("records,entries", 4, 9_191_437, "h5-files"),  # separates of a file deleted 'd'
    ("records,entries", 4, 9_194_225, "memmap-by-data"),  # LazyStackedTensorDict.load
    ("index,shape", 4, 9_293_892, "peer-fails-inside"),  # unflatten after squeeze()
    # inv19f: nu19a's, split19's and prune18b's last "not investigated" lines
    ("index,shape", 4, 9_294_995, "checked-as-torch"),  # squeeze() of a reshaped None
    ("shape", 4, 3_227, "checked-as-torch"),  # an HDF5 file's batch size of more dims
    ("shape,combine,math", 4, 19_582, "checked-as-torch"),  # torch.stack after squeeze()
    ("index,shape,combine", 4, 3_496, "peer-fails-inside"),  # x[...] = of a lazy stack of stacks
    # fz19c
    (_FIVE + ",records", 6, 10_300_305, "h5-files"),  # replace: a new group named, file kept
    (_FIVE + ",records", 6, 10_300_741, "checked-as-torch"),  # fliplr after a stack's reshape
    ("records", 4, 1_909_802, "annotation-casts"),  # set of a list: lazy stack dim 1 (nu19c)
    ("records", 4, 1_911_215, "annotation-casts"),  # .v = a list: lazy stack dim 2 (nu19c)
    ("records", 4, 1_926_694, "annotation-casts"),  # stack of Auto: opt a list, a tensor
    ("records", 4, 1_802_186, "annotation-casts"),  # lazy stack of Auto: ragged opt lists
    ("index,entries,shape,combine,math", 4, 52_511, "peer-fails-inside"),  # apply drops a node
    ("index,entries,shape,combine,math", 4, 71_025, "peer-fails-inside"),  # x[i] = to_dict()
    ("index,combine,shape,entries", 6, 10_801_264, "peer-fails-inside"),  # params rows write
    ("index,combine,shape,entries", 6, 10_801_208, "peer-fails-inside"),  # memmap value rows
    ("index,entries", 4, 302_208, "index-beyond-batch"),  # x[None] = x[None, None]: broadcast
    ("records", 4, 1_924_046, "annotation-casts"),  # from_dict at []: the str of a list
    # fz20a
    ("records", 6, 10_511_424, "annotation-casts"),  # Auto.from_dict: a list field kept whole
    ("records", 6, 10_511_054, "peer-fails-inside"),  # loaded lazy stack [1, 2]: .lst read
    ("combine", 6, 10_520_720, "checked-as-torch"),  # pad_sequence: [2, -1] and [0, 2]
    ("combine", 6, 10_521_735, "stacking-keeps"),  # torch.stack(unbind) of stacks of Rec
    ("entries", 6, 10_541_280, "records-predictable"),  # auto_batch_size_ past [3, 1] {}
    # fz20b
    (_FIVE + ",records", 8, 10_601_333, "peer-fails-inside"),  # separates: __delitem__
    (_FIVE + ",records", 8, 10_601_418, "peer-fails-inside"),  # fill_ of an expanded stack
    ("records", 4, 1_900_664, "values-kept-shared"),  # update_ of a torch.stack: its source
    ("records", 4, 1_904_794, "none-field-unset"),  # lazy stack update_({'opt': None})
    ("records", 4, 1_916_597, "peer-fails-inside"),  # loaded load_state_dict: lst's floats
    ("records", 4, 1_924_952, "annotation-casts"),  # stack of NoCast: v a list, a tensor
    # fz20c
    ("index", 8, 10_980_271, "index-beyond-batch"),  # update_at_(v, I[None]): memmap kept
    (_FIVE + ",records", 4, 10_991_077, "peer-fails-inside"),  # split_keys: lazy Rec's inner
    # inv20e
    ("index,combine,shape,entries", 6, 10_803_424, "checked-as-torch"),  # unflatten(-1, [-1])
    ("entries,combine", 6, 10_805_075, "params-write-their-data"),  # load into params clones
    ("index,combine,shape,entries", 8, 10_814_864, "peer-fails-inside"),  # separates of Recs
    ("index,combine,shape,entries", 8, 10_813_522, "peer-fails-inside"),  # x[None, :-6:2] = v
    ("index,combine,shape,entries", 4, 10_808_016, "peer-fails-inside"),  # apply over none
    # inv20f
    ("shape", 8, 10_939_813, "checked-as-torch"),  # batch_size = [3]: a nested node's 'j' kept
    ("index,combine", 6, 10_950_376, "peer-fails-inside"),  # masked_fill of a ragged stack
    ("index,combine", 6, 10_950_665, "peer-fails-inside"),  # masked_fill_ of a ragged stack
    ("index,combine", 6, 10_950_919, "peer-fails-inside"),  # cat of a lazy stack of a Rec
    ("index,combine", 6, 10_950_397, "values-kept-shared"),  # stack with apply of values only
    # fz21a
    (_FIVE + ",records", 6, 11_001_976, "h5-files"),  # apply(names=[None, None]) of a file
    # inv21e: numpy() of a padded record gathered: the peer drops a label whose first row is None
    ("index,combine,shape,entries", 8, 10_814_140, "values-kept-shared"),
    # inv21c
    ("index,combine", 6, 10_905_699, "values-kept-shared"),  # maybe_dense_stack, apply over none
    # inv21d
    ("index,combine", 6, 10_904_302, "values-kept-shared"),  # cat: apply empties a value node
    ("index,combine", 6, 10_903_873, "peer-fails-inside"),  # cat: Rec(*members, stack_dim=)
    ("index,combine", 6, 11_100_941, "values-kept-shared"),  # saved[...] = its own value rows
    # fz21b
    ("combine,entries", 6, 11_040_612, "ragged-values-keep-sizes"),  # separates(strict=False)
    # fz22c: to_tensordict of a broadcast TensorDict: the peer's value stack kept its names
    (_FIVE + ",records", 6, 11_600_984, "checked-as-torch"),
    # fz22d
    ("index,combine,records", 12, 11_710_218, "values-kept-shared"),  # stack with a clone
    ("entries,math,shape", 8, 11_720_426, "peer-fails-inside"),  # popitem of a value stack
    # fz22e: replace({'label': {...}}) of a lazy stack of records: kept per element, as assigned
    (_FIVE + ",records", 6, 11_801_062, "annotation-casts"),
    # fz22g: a record's update_at_(v, I[None, -1:]): the peer's label one list level deeper
    (_FIVE + ",records", 6, 12_000_549, "index-beyond-batch"),
    # fz22g: from_namedtuple(x.to_namedtuple()) of a value stack over no elements: peer's IndexError
    ("records,entries,combine", 10, 12_010_240, "peer-fails-inside"),
    # fz22h: update_ of maybe_dense_stack's result reaches the peer's stacked records' values
    (_FIVE + ",records", 8, 12_100_807, "values-kept-shared"),
    # fz23b: pad_sequence([x, x[:0]]) of a named lazy stack of values: the peer's slice unnamed
    (_FIVE + ",records", 10, 12_300_550, "peer-fails-inside"),
    # fz23b: min(dim=(2, 0), reduce=True) of a lazy stack: tclass's TypeError as for a TD
    (_FIVE + ",records", 10, 12_305_296, "math-beyond-the-peer"),
    # fz23d: flatten(1, 2)[..., -2] of a value stack over none: tclass a member's value, peer []
    ("index,shape,combine", 12, 12_520_528, "values-kept-shared"),
    # fz23e: rot90(3) of a named lazy stack of members without batch dims: the peer unnamed
    (_FIVE + ",records", 12, 12_600_068, "checked-as-torch"),
    # fz23f: x[-1, 1] = 0 of a locked lazy stack read before: the peer's cache hides the
    # number it writes into the label until torch.cat builds from the members
    ("index,shape,combine", 12, 12_710_065, "values-kept-shared"),
    # fz23g: LazyStackedTensorDict(x, x.clone(), x.apply(fn)) over none: the peer's apply
    # drops the label stack, so its lazy stack lists the shared keys only
    ("index,shape,combine", 12, 12_810_485, "peer-fails-inside"),
    # fz24a: separates() of a lazy stack of lazy stacks holding an empty node: the peer's
    # filter_empty_() drops it from an earlier result's members' members too
    (_FIVE + ",records", 12, 13_400_414, "peer-fails-inside"),
    # fz24d: x[-62] = x[-62].to_dict() of a view of a torch.stack holding NonTensorData(2):
    # tclass stores the dict's tensor(2), the peer's member keeps its equal 2
    ("index,shape,combine", 12, 13_710_360, "values-kept-shared"),
    # fz24c: memmap_like over none of a value stack in a nested node: the peer drops both
    (_FIVE + ",records", 12, 13_600_433, "values-kept-shared"),
    # fz24c: x != x.apply(fn) after x.update(x.to_dict()) with inner.z None: the peer
    # compares the None it stored, tclass leaves the field unset
    (_FIVE + ",records", 12, 13_600_047, "none-field-unset"),
    # fz24e: x <= x.apply(fn) over no elements: the peer's apply drops the value stack
    (_FIVE + ",records", 12, 13_800_289, "peer-fails-inside"),
    # fz24e: tensor_split(1, dim=0) of a stack of lazy stacks along their ragged dim
    ("index,shape,combine", 12, 13_810_130, "peer-fails-inside"),
    # fz25b: x[-1] of x.squeeze() after memmap: the peer's squeeze() without a dim drops
    # its memory-mapped flag (squeeze(dim) keeps it), so its rows are unlocked
    ("index,shape,combine", 12, 14_110_012, "memmap-by-data"),
    # fz25c
    ("index,shape,combine", 12, 14_210_116, "stacking-keeps"),  # is_contiguous after narrow
    ("index,shape,combine", 12, 14_210_396, "peer-fails-inside"),  # cat after repeat of none
    # fz26e: x.where(mask, 0) of a lazy stack of a consolidated TD and its clone: the
    # peer's member where keeps the consolidated member locked, tclass's the stack's lock
    (_FIVE + ",records", 16, 15_200_429, "lock-follows-sharing"),
    # fz26e: load_memmap of its own memmap of a record whose label holds a dict of tensors
    (_FIVE + ",records", 16, 15_310_501, "values-kept-shared"),
    # fz26e: keys(False, True) of a lazy stack of records: the peer lists the label too
    (_FIVE + ",records", 16, 15_320_258, "records-predictable"),
    # fz27b: x.pow(x.select()): the peer's _foreach_pow fails on the lengths of no tensors
    ("methods,index,shape,combine", 12, 15_010_388, "peer-fails-inside"),
    ("methods,index,shape,combine", 8, 15_020_224, "peer-fails-inside"),
    # fz27b: pow({"a": 2}, default=1) without tensors: refused as torch refuses the dict
    ("methods,index,shape,combine", 8, 15_000_036, "checked-as-torch"),
    # fz27b: x[-1] after share_memory_() and squeeze(): the peer's squeeze drops the flag
    ("methods,index,shape,combine", 8, 15_000_265, "lock-follows-sharing"),
    # fz27b: a str after share_memory_(): the peer's SynchronizedString, x[[]] and lazy_stack
    ("methods,index,shape,combine", 8, 15_020_032, "values-kept-shared"),
    ("methods,index,shape,combine", 8, 15_020_472, "values-kept-shared"),
    # fz27g: an int after share_memory_(): the peer's Synchronized, a later flatten
    ("methods,index,shape,combine", 8, 15_520_535, "values-kept-shared"),
    # fz27b: repeat_interleave(inplace=True) of a TensorDict holding a NonTensorStack
    ("methods,index,shape,combine", 8, 15_000_345, "values-kept-shared"),
    # fz27g: x.clone().masked_select(m, inplace=True) of a collection holding a NonTensorStack
    ("methods,index,shape,combine", 12, 15_530_225, "values-kept-shared"),
    # fz27g: repeat_interleave(2, dim=0, inplace=True) of a collection without batch dims
    ("methods,index,shape,combine", 16, 15_550_304, "values-kept-shared"),
    # fz27b: x.clone().masked_select(m, inplace=True) of a file: tclass's clone is in memory
    ("methods,index,shape,combine", 8, 15_020_389, "h5-files"),
    # lo26c: ('v',) in x.keys(True, True) of a nested node: not a member, as iterating it
    ("entries", 4, 51, "stacking-keeps"),
    # lo26c: 's' in x.keys(True, True) of a Python value: not a member, as iterating it
    ("entries", 4, 367, "stacking-keeps"),
    # fz27g: ("zz", "a") in x.keys(True, True) of a node set from a dict (the generator's tag
    # missed a missing key's source quoted '("zz", "a")': now compared as keys)
    ("entries", 8, 15_701_971, "stacking-keeps"),
    # fz27g: from_namedtuple(x.to_namedtuple()) of a padded record: the peer's plain tuple;
    # tclass's the peer's batch mismatch for a TensorDict's namedtuple (a [4, 1, 0] list)
    ("index,combine,shape,entries", 8, 15_740_054, "records-predictable"),
    # fz27g: values(True, False) after separates(("m", "a"), filter_empty=False) of a node
    # holding only a str: the peer's empty(recurse=True) shares the node, the str goes back
    ("index,combine,shape,entries", 6, 15_730_054, "values-kept-shared"),
    # fz27e (family features): a record's grad with no grads, the peer's rebuilt None
    (_FEATURES, 8, 15_600_481, "peer-fails-inside"),
    # fz27e: to_csv of a collection without batch dims (pandas refuses the peer's frame)
    (_FEATURES, 8, 15_600_111, "peer-fails-inside"),
    # fz27e: TensorDictParams of a loaded unsqueezed record (the peer's lazy stack refused)
    (_FEATURES, 8, 15_600_059, "peer-fails-inside"),
    # fz27e: from_consolidated of a file: the keys in their order (the peer's by kind)
    (_FEATURES, 8, 15_600_040, "memmap-by-data"),
    # fz27e: Rec(**rec.to_dict()): the dict given for inner is an Inner (the peer's a dict)
    (_FEATURES, 12, 15_610_088, "annotation-casts"),
    # fz27d: detach_() of a lazy stack of files' rows: the peer refuses its sub-tensordict
    ("methods,index,shape,combine", 8, 15_500_328, "peer-fails-inside"),
    # fz27d: share_memory_() of a locked record: the peer unlocks its nested storage inside
    ("methods,index,shape,combine", 8, 15_520_251, "peer-fails-inside"),
    # fz27d: from_struct_array(auto_batch_size=True) of a lazy stack: the peer's numpy copy
    ("methods,index,shape,combine", 16, 15_550_218, "peer-fails-inside"),
    # fz27d: create_nested(("q", "r")) of a lazy stack of files: the peer drops the empty r
    ("methods,index,shape,combine", 16, 15_540_236, "h5-files"),
    # fz27d: x[..., :-1] = ... after uint32() of a padded record over no elements: the
    # peer's cast leaves its value stack at [0]
    ("methods,index,shape,combine", 16, 15_540_591, "peer-fails-inside"),
    # fz27c: set_non_tensor(("inner", "y"), v) of a stack of records: the record's field
    # annotation refuses a Python value, as for one record (the value spans the batch now)
    (_METHODS, 8, 15_000_457, "annotation-casts"),
    # fz27c: update_at_(x[..., None]...) of a stack of records: torch's broadcast refusal,
    # the ShapeError a TensorDict's raises in both, where the peer's record replaces fields
    (_METHODS, 8, 15_000_521, "index-beyond-batch"),
    # fz27c: stack_tensors into an out_key of a loaded lazy stack member: saved in its folder
    (_METHODS, 12, 15_010_338, "values-kept-shared"),
    # fz27c: cat_tensors of a lazy stack into an out_key that does not fit the node
    (_METHODS, 12, 15_030_296, "checked-as-torch"),
    # fz27a: from_struct_array(x.to_struct_array()) of None / an int: the peer's numpy
    # array of their strings, read whole by every row; tclass reads the values back
    ("methods,index,shape,combine", 8, 15_020_387, "peer-fails-inside"),
    # fz27a: the same of a str set in an empty batch: the peer's nested empty arrays
    ("methods,index,shape,combine", 8, 15_000_589, "peer-fails-inside"),
    # fz27a: from_list(x.tolist()) of 2 batch dims: the peer reads each two-key row as a pair
    ("methods,index,shape,combine", 8, 15_000_190, "peer-fails-inside"),
    # fz27a: from_list(rec.tolist()): the peer's tolist leaves the None field out
    (_FIVE + ",records,methods", 4, 5_017, "records-predictable"),
    # fz27a: unsqueeze after memmap_refresh_: the peer's label keeps dims past the batch
    ("methods,index,shape,combine", 8, 15_000_286, "checked-as-torch"),
    # fz27a: create_nested of a loaded record's str field: an empty dict, as set(k, {})
    ("methods,index,shape,combine", 8, 15_020_107, "annotation-casts"),
    # fz27a: saved_path of an HDF5 file's memmap(folder): the peer's says None
    ("methods,index,shape,combine", 12, 15_030_441, "h5-files"),
    # fz27f: attrs() of a record is a TensorDict (the peer's a record of its class)
    (_FEATURES, 8, 15_600_062, "records-predictable"),
    # fz27f: from_dataclass(record, as_tensorclass=True): inner an Inner (the peer's a dict)
    (_FEATURES, 8, 15_620_137, "annotation-casts"),
    # fz28f: TensorDictParams(x.to_tensordict()).get_parameter of an integer leaf over a
    # peer's lazy stack: its constructor refuses the stack, tclass's "not an nn.Parameter"
    (_FEATURES, 16, 15_890_223, "peer-fails-inside"),
    # fz28f: the same of a locked x holding a str: the peer's copy cannot be unlocked
    (_FEATURES, 16, 15_891_179, "peer-fails-inside"),
    # fz28f: set('label', 3) of a loaded record: the str field keeps the number (the
    # peer's 0-d tensor); dataclasses.replace of a stack of records: the label's lists
    (_FEATURES, 8, 15_870_710, "annotation-casts"),
    (_FEATURES, 8, 15_870_012, "annotation-casts"),
    # fz28d: copy.copy of a stack of attrs() records: tgt_shape stays a torch.Size (the
    # peer's copy of the value stack turns it into a plain tuple)
    (_FEATURES, 12, 15_610_171, "values-kept-shared"),
    # fz28d: x[idx] = rows into a torch.stack of value stacks: the stacked ones keep theirs
    (_FEATURES, 8, 15_600_178, "values-kept-shared"),
    # fz28e: lerp(end, torch.tensor(0.5)) of a float16 0-d entry (nested lazy stacks of
    # members without batch dims): torch.lerp's float32, the peer's fused kernel's float16
    (_METHODS, 12, 15_850_282, "math-beyond-the-peer"),
    # fz28e: from_struct_array of a stack of None: the peer's one object array per row
    (_METHODS, 8, 15_841_861, "peer-fails-inside"),
    # fz28e: the same of a str over no elements (the peer's value cut short in the line)
    (_METHODS, 8, 15_841_300, "peer-fails-inside"),
    # fz28e: share_memory_() of a memory-mapped record after memmap_refresh_(): kept in
    # its files and locked (the peer: "memmap and shared memory are mutually exclusive")
    (_METHODS, 8, 15_841_360, "memmap-by-data"),
    # fz28e: share_memory_() of rows of a lazy stack of HDF5 files (the peer's sub-tensordicts)
    (_METHODS, 12, 15_851_292, "h5-files"),
    # fz28e: x[i] = x[i].to_dict() after torch.cat of a NonTensorData(-1): the written
    # tensor([[-1]]) stored, where the peer's member keeps its -1 (comparing equal)
    (_METHODS, 8, 15_840_648, "values-kept-shared"),
    # fz28e: rec.set_non_tensor("label", None).get_non_tensor("label"): None (the peer's a list)
    (_METHODS, 8, 15_841_600, "none-field-unset"),
    # fz28e: x[None, mask] = x[None, mask].to_dict() of no True: the peer's own empty list
    (_METHODS, 8, 15_840_636, "peer-fails-inside"),
    # fz28e: TensorDictParams(x).share_memory_() locked (the peer's top level unlocked)
    (_METHODS, 16, 15_861_175, "params-write-their-data"),
    # fz28e: saved_path of memmap(folder) of a locked TensorDictParams (the peer refuses)
    (_METHODS, 16, 15_861_502, "params-write-their-data"),
    # fz28e: x.clone().load_(x.save(folder)) of a memory-mapped x of no elements
    (_METHODS, 16, 15_861_952, "empty-tensors-have-no-file"),
    # fz28e: repeat_interleave(inplace=True) of a TensorDict holding a lazy stack
    (_METHODS, 12, 15_850_221, "values-kept-shared"),
    # fz28e: pad of a collection holding a lazy stack (kept lazy; the peer's dense)
    (_METHODS, 16, 15_860_458, "stacking-keeps"),
    # fz28e: tensor_split at indices along a lazy stack's ragged dim: each member sliced
    (_METHODS, 16, 15_860_058, "ragged-dim-unsupported"),
    # fz28e: cat_tensors of a lazy stack of records gives the record (the peer's its storage)
    (_METHODS, 16, 15_861_116, "stacking-keeps"),
    # fz28e: from_struct_array of a list value [1, 2]: the list (the peer's a tensor)
    (_METHODS, 16, 15_861_988, "peer-fails-inside"),
    # fz28e: create_nested("inner") of a lazy stack of records: an empty Inner (the peer's
    # a lazy stack of empty TensorDicts)
    (_METHODS, 8, 15_841_558, "annotation-casts"),
    # fz28e: x[..., None] = rows of a lazy stack of records: values per element in members
    (_METHODS, 16, 15_860_433, "values-kept-shared"),
    # fz28e: x[None] of torch.flip of a shared lazy stack: unlocked (a copy not shared)
    (_METHODS, 8, 15_841_465, "lock-follows-sharing"),
    # fz28e: auto_device_() of an index: the peer's earlier results' values fail to read
    (_METHODS, 8, 15_841_500, "peer-fails-inside"),
    # fz28e: from_struct_array of an int value beside a str: the peer's tensor of the int
    (_METHODS, 8, 15_845_492, "peer-fails-inside"),
    # fz28e: entry_class of a missing key of a TensorDictParams made of a file: NoneType
    (_METHODS, 16, 15_865_109, "h5-files"),
    # fz28a: lazy_stack([x, x.clone()]) of a MetaData: the peer's clone with a device shares it
    (_FEATURES, 8, 15_600_031, "values-kept-shared"),
    # fz28a: attrs() of a lazy stack of records: the label's values kept (the peer's empty TD)
    (_FEATURES, 12, 15_610_183, "records-predictable"),
    # fz28a: attrs() of a TensorDict holding a value stack (the peer's an empty TensorDict)
    (_FEATURES, 12, 15_801_170, "values-kept-shared"),
    # fz28a: create_nested of a lazy stack of records' str field: {} per element
    (_METHODS, 16, 15_550_431, "annotation-casts"),
    # fz28a: from_nontensordata / maybe_to_stack over [0, 1, 3]: the peer's stack is [0]
    (_FEATURES, 12, 15_610_455, "values-kept-shared"),
    (_FEATURES, 8, 15_600_576, "values-kept-shared"),
    # fz29h: a str field keeps a list given whole: Rec(**x.to_dict()) over a zero-size
    # dim (nested empty lists), set('label', [1, 2]), dataclasses.replace of one
    (_FEATURES, 8, 15_820_290, "annotation-casts"),
    ("features,math,index", 8, 15_910_541, "annotation-casts"),
    (_FEATURES, 8, 15_830_760, "annotation-casts"),
    # fz29h: keys after dataclasses.replace stay in the fields' order
    ("features,entries,math,records", 12, 15_905_445, "records-predictable"),
    (_FEATURES, 8, 16_020_137, "records-predictable"),  # lazy_stack: the key order
    ("features,entries,math,records", 8, 16_028_588, "records-predictable"),  # values()
    # fz29h: set_non_tensor(field, None) of a lazy stack of records unsets it in each
    (_METHODS, 16, 15_865_803, "none-field-unset"),
    # fz29h: a value set into a lazy stack of a file and a TensorDict (the peer's read fails)
    (_FEATURES, 8, 15_800_755, "h5-files"),
    # fz29h: from_dict_instance of a record whose str field holds a dict (a MetaData of one)
    ("features,entries,math,records", 12, 16_025_848, "annotation-casts"),
    # fz29a: from_dict_instance / x[::2] = x[::2].to_dict() of a MetaData of a dict: the
    # peer passes the dict's items to MetaData as keywords (TypeError)
    ("features,math,index", 12, 15_921_132, "peer-fails-inside"),
    ("features,math,index", 12, 15_922_129, "peer-fails-inside"),
    # fz29a: a list value set into a lazy stack of HDF5 files: the peer reads a numpy array
    ("methods,features,entries,records", 12, 15_911_261, "h5-files"),
    (_METHODS, 8, 15_831_908, "h5-files"),
    # fz29a: cat_tensors of a Python value and a tensor: the peer's AttributeError inside
    ("methods,features,entries,records", 12, 15_954_320, "peer-fails-inside"),
    # fz29d: from_pandas(to_pandas(attrs())) without batch dims: one row (the peer's frame
    # spreads each tgt_shape's numbers over rows)
    (_FEATURES, 8, 15_810_799, "peer-fails-inside"),
    # fz29d: to_pandas of a collection of 0-d values (pandas refuses the peer's frame)
    ("features,math,index", 12, 15_920_433, "peer-fails-inside"),
    # fz29d: attrs() of a loaded record: a TensorDict in the loaded keys' order
    ("methods,features,entries,records", 12, 15_911_200, "records-predictable"),
    # fz29c: consolidate(filename=) of a collection zero_() kept consolidated (not written)
    ("methods,features,entries,records", 12, 15_910_631, "memmap-by-data"),
    # fz29c: consolidate() in memory keeps each nested collection's device
    ("methods,features,entries,records", 12, 15_912_879, "memmap-by-data"),
    # fz29c: consolidate(filename=) of a from_consolidated result: locked, on cpu
    ("methods,features,entries,records", 8, 15_970_822, "memmap-by-data"),
    # fz29g: load_state_dict into leaves requiring grad (float().requires_grad_())
    (_RECORDS4, 8, 15_910_051, "state-dict-as-nn-module"),
    # fz29g: tolist after dataclasses.replace: the declared field order
    (_RECORDS4, 12, 15_912_064, "records-predictable"),
    # fz29g: dataclasses.astuple of a memory-mapped record moved to the cpu
    (_RECORDS4, 8, 15_910_390, "peer-fails-inside"),
    # fz29g: memmap of the locked TensorDictParams from_modules(..., as_module=True) gives
    (_RECORDS4, 12, 15_911_703, "params-write-their-data"),
    # fz29g: stack_tensors of a lazy stack into an out_key that does not fit the node
    (_METHODS, 16, 15_540_631, "checked-as-torch"),
    # fz29g: rename_keys of an entry into a nested collection it does not fit
    (_RECORDS4, 12, 16_011_185, "checked-as-torch"),
    # fz29i: the locked TensorDictParams from_modules(..., as_module=True) gives: the peer
    # fails inside its empty() (its own lock), L.load(x.save()), memmap_ and consolidate
    ("methods,features,entries,records", 12, 16_027_200, "peer-fails-inside"),  # empty()
    ("methods,features,entries,records", 12, 16_027_960, "peer-fails-inside"),  # load
    ("features,entries,math,records", 12, 16_025_039, "peer-fails-inside"),  # memmap_
    (_FEATURES, 8, 16_020_404, "peer-fails-inside"),  # from_consolidated
    ("methods,features,entries,records", 12, 16_027_813, "peer-fails-inside"),  # load_memmap_
    # fz29i: Rec.load's is_memmap(); view(dtype) of a consolidated TensorDict locked; the
    # memmap of a memmap_like record over a zero-size dim given as load_memmap_'s folder
    ("methods,features,entries,records", 12, 16_027_557, "memmap-by-data"),
    ("methods,features,entries,records", 12, 16_027_909, "lock-follows-sharing"),
    ("methods,features,entries,records", 8, 16_026_097, "empty-tensors-have-no-file"),
    # fz30c: row writes (setitem / set_)
    (_FEATURES, 8, 15_983_003, "stacking-keeps"),  # a number into keys some members hold
    (_METHODS, 8, 16_022_285, "stacking-keeps"),  # reshape of an expanded narrowed stack
    (_RECORDS4, 8, 16_022_963, "h5-files"),  # set_ of negative ints into a uint8 dataset
    (_FEATURES, 12, 15_953_732, "peer-fails-inside"),  # x[i] = x[i].to_dict(): MetaData(k=1)
    (_FEATURES, 12, 15_984_873, "peer-fails-inside"),  # the same at x[[]]
    ("features,math,index", 12, 15_961_449, "values-kept-shared"),  # tensors in values
    (_METHODS, 16, 16_029_467, "peer-fails-inside"),  # set_non_tensor: params members
    (_RECORDS4, 8, 15_962_188, "none-field-unset"),  # set_non_tensor(('inner',), None)
    (_METHODS, 8, 16_002_810, "none-field-unset"),  # set_non_tensor(('opt',), None)
    ("features,math,index", 12, 15_983_945, "values-kept-shared"),  # rows of a MetaData
    ("features,math,index", 8, 15_984_733, "values-kept-shared"),  # True into attrs()
    (_FEATURES, 12, 15_951_161, "values-kept-shared"),  # a value set past the members' dims
    (_FEATURES, 12, 15_984_092, "values-kept-shared"),  # the same, a MetaData
    ("features,math,index", 12, 15_952_145, "values-kept-shared"),  # the same, loaded
    (_FEATURES, 12, 16_070_170, "values-kept-shared"),  # the same, a MetaData list
    (_METHODS, 8, 16_071_590, "peer-fails-inside"),  # rows after share_memory_() of a str
    # fz30f: update(x.to_dict()) of attrs(): a record's Size field takes the size (the peer's
    # record update makes a TensorDict of its numbers)
    ("methods,features,entries,records", 12, 16_027_127, "records-predictable"),
    ("features,entries,math,records", 12, 15_973_725, "records-predictable"),
    # fz30f: attrs() of a lazy stack of records (its nested 'inner' a TensorDict)
    (_FEATURES, 8, 15_982_841, "records-predictable"),
    (_FEATURES, 8, 16_102_456, "records-predictable"),  # a MetaData value, loaded keys
    # fz30f: a TensorDict's from_dict_instance of attrs() records: one value per element
    (_FEATURES, 8, 15_960_402, "records-predictable"),
    # fz30f: record.from_dict_instance(d, auto_batch_size=True): the value counts for the batch
    ("features,math,index", 8, 16_020_373, "annotation-casts"),  # a number in a str field
    ("features,entries,math,records", 12, 15_951_119, "records-predictable"),  # a value stack
    # fz30f: to_namedtuple after dataclasses.replace: the declared field order
    ("features,entries,math,records", 8, 16_014_304, "records-predictable"),
    # og34l: to_namedtuple of a merge's record: the merge's key order, the peer's plain tuple
    ("extra,entries", 10, 17_155_262, "records-predictable"),
    # og34l: group_by of a lazy stack after separates: the peer drops an empty node it
    # did not empty; set_non_tensor of a from_modules params' cpu() copy (the peer's inner
    # TensorDict stays locked); from_struct_array of attrs(): a Size read as batch [1]
    ("extra,entries", 10, 17_155_798, "peer-fails-inside"),
    ("features,entries,math,records", 16, 17_154_742, "peer-fails-inside"),
    ("methods,features,entries,records", 25, 17_137_593, "peer-fails-inside"),
    # og34l: a padded row of a string over no elements (nested empty lists in tclass);
    # t != masked_select(lazy stack): the peer's nested lazy stack gets the whole tensor
    ("methods,index,shape,combine", 6, 17_230_493, "values-kept-shared"),
    ("features,math,index", 6, 17_231_571, "peer-fails-inside"),
    # og34l: list(x.items(True)) of a merge's result: the merge's key order
    ("extra,entries", 10, 17_270_599, "stacking-keeps"),
    # fz30f: split_keys of a nested key, then its parent, beside an attrs() shape
    ("features,entries,math,records", 8, 16_010_219, "peer-fails-inside"),
    # fz30f: auto_device_() of an HDF5 file's view; to(dtype) keeps nested devices
    ("methods,features,entries,records", 8, 15_982_093, "peer-fails-inside"),
    ("features,math,index", 8, 15_966_607, "memmap-by-data"),
    ("methods,features,entries,records", 12, 15_951_963, "memmap-by-data"),
    # fz30f: from_struct_array(to_struct_array()) of attrs(): a shape read back as a Size
    ("methods,features,entries,records", 12, 16_101_819, "peer-fails-inside"),
    # fz30h: .grad of a record whose nested record holds the peer's stored None values;
    # binary math dropping a node that held only an empty value stack (peer only)
    ("features,math,index", 8, 15_966_106, "none-field-unset"),
    ("features,entries,math,records", 8, 15_970_697, "none-field-unset"),
    ("methods,features,entries,records", 12, 15_953_576, "none-field-unset"),
    ("features,math,index", 8, 16_022_209, "values-kept-shared"),  # mul
    ("features,math,index", 8, 16_022_522, "values-kept-shared"),  # clamp
    ("features,entries,math,records", 8, 15_966_655, "values-kept-shared"),  # clamp_min
    # fz30h: the peer's ^= of attrs()' devices, |= of from_csv's object arrays
    ("features,entries,math,records", 12, 15_965_586, "peer-fails-inside"),
    ("features,math,index", 8, 15_964_143, "peer-fails-inside"),
    # fz30e: stores, tables and struct arrays: a value stack of stacks (the peer's store
    # keeps one of its values) and one of no elements read back per element; the peer's
    # writer failing on a stack over a dim of size 0; create_nested / stack_tensors of
    # a file (new groups named, the file returned); a MetaData dict and a None field
    # through to_struct_array; get(key, None) after separates; to_json of one row
    (_FEATURES, 8, 15_950_728, "h5-files"),
    (_FEATURES, 12, 16_021_911, "h5-files"),
    (_RECORDS4, 8, 15_960_784, "h5-files"),
    (_FEATURES, 8, 15_982_062, "peer-fails-inside"),
    (_RECORDS4, 12, 15_982_417, "h5-files"),
    (_RECORDS4, 12, 15_951_699, "h5-files"),
    (_RECORDS4, 12, 15_954_932, "h5-files"),
    (_RECORDS4, 12, 15_971_880, "peer-fails-inside"),
    (_RECORDS4, 12, 15_951_283, "peer-fails-inside"),
    ("features,entries,math,records", 8, 15_950_288, "peer-fails-inside"),
    (_RECORDS4, 8, 15_960_713, "peer-fails-inside"),
    # fz30g: stack_tensors of a Python value and the collection holding it (the peer fails
    # inside); separates(("n", "zz"), strict=False) of a lazy stack: the None spans n
    ("methods,features,entries,records", 8, 16_024_476, "peer-fails-inside"),
    ("methods,index,shape,combine", 12, 15_953_122, "peer-fails-inside"),
    ("features,entries,math,records", 8, 15_964_195, "values-kept-shared"),
    # fz30g: None fields the peer stores (update, to_tensordict(retain_none=True),
    # set_non_tensor(key, None)): rename_keys, separates, keys, items, is_non_tensor
    ("methods,features,entries,records", 8, 15_964_497, "none-field-unset"),
    ("features,entries,math,records", 12, 15_963_362, "none-field-unset"),
    ("features,math,index", 12, 16_011_517, "none-field-unset"),
    ("features,entries,math,records", 8, 16_028_277, "none-field-unset"),
    ("methods,index,shape,combine", 12, 16_025_336, "none-field-unset"),
    # fz30g: the key order after dataclasses.replace: state_dict, to_tensordict
    ("methods,features,entries,records", 12, 15_985_814, "records-predictable"),
    ("features,entries,math,records", 12, 15_983_016, "records-predictable"),
    # fz30g: apply(fn, batch_size=...) keeps a nested collection of Python values
    ("methods,features,entries,records", 12, 15_953_908, "apply-keeps-fitting-values"),
    # fz30a: auto_device_() of an index of a lazy stack of a saved record, other steps after
    (_METHODS, 8, 15_962_386, "peer-fails-inside"),
    # fz30a: x.dumps(folder) into the folder an earlier result was loaded from: the peer
    # writes into the mapped files, tclass swaps a new tree in (the earlier data kept)
    ("features,entries,math,records", 8, 16_010_505, "memmap-by-data"),
    # fz30a: the peer's auto_batch_size_ grows the caller's nested nodes (from_dataclass; a
    # node of one dim; a Python value's node; a value node of a grown node)
    ("features,math,index", 8, 15_982_551, "records-predictable"),
    ("methods,features,entries,records", 8, 15_952_859, "records-predictable"),
    ("methods,features,entries,records", 12, 15_985_560, "records-predictable"),
    ("methods,features,entries,records", 8, 16_024_755, "records-predictable"),
    # fz30a: unbind of a reshape of a shared record: locked (the peer's reshape drops its
    # shared flag); view(dtype) of from_modules' locked result: locked
    (_METHODS, 12, 15_965_055, "lock-follows-sharing"),
    (_FEATURES, 8, 15_982_499, "lock-follows-sharing"),
    # fz30a: separates(filter_empty=False) of a saved collection: the peer's result holds
    # the source's locked Python-value node
    ("features,entries,math,records", 12, 15_963_434, "values-kept-shared"),
    # fz30a: an index of fliplr() of a saved collection without tensors: the peer's flag
    (_FEATURES, 12, 15_951_680, "memmap-by-data"),
    # fz30a: view(dtype) after masked_fill over no elements: the peer's kept strides
    (_FEATURES, 8, 16_000_617, "peer-fails-inside"),
    # fz30a: get_parameter('n.v') of a locked TensorDictParams: the peer cannot unlock
    ("methods,features,entries,records", 12, 15_982_617, "peer-fails-inside"),
    # fz30a: from_struct_array(x.to_struct_array()) of from_pandas(separator="."): the
    # peer's string arrays under a dotted key ('n.zz')
    ("methods,features,entries,records", 12, 16_054_329, "peer-fails-inside"),
    # fz30d: a value JSON cannot hold (attrs()'s torch.device, a dict of tensors) saved by
    # the step before it reads the folder: load_memmap_, memmap_refresh_, saved_path
    (_RECORDS4, 8, 15_972_218, "values-kept-shared"),
    (_RECORDS4, 12, 15_963_254, "values-kept-shared"),
    (_RECORDS4, 8, 15_964_872, "values-kept-shared"),
    # fz30d: load_memmap_ into a TensorDictParams clone (the peer's nested leaves become
    # MemoryMappedTensors); into the clone of a lazy stack the peer's unflatten densifies
    (_METHODS, 8, 16_081_159, "params-write-their-data"),
    (_RECORDS4, 12, 15_973_246, "params-write-their-data"),  # load_
    (_METHODS, 12, 16_001_000, "stacking-keeps"),
    # fz30d: memmap_refresh_ reads a value at its node's batch size (as a load in both);
    # is_memmap() of a clone load_ (x.save) filled; load_ of stacked lists (fz29b's rule)
    (_METHODS, 8, 16_012_132, "checked-as-torch"),
    (_RECORDS4, 8, 16_020_759, "memmap-by-data"),
    (_METHODS, 8, 15_992_429, "values-kept-shared"),
    (_METHODS, 12, 16_021_857, "stacking-keeps"),  # data_ptr of an unflatten kept lazy
    # fz30d: the peer's memmap of a locked TensorDictParams inside the step's op (its
    # save / dumps, a load of what it saved, make_memmap into its folder); consolidate
    (_RECORDS4, 12, 15_982_736, "params-write-their-data"),  # L.TensorDict.load_memmap
    (_RECORDS4, 8, 15_966_400, "params-write-their-data"),  # lock_(), load_memmap_
    (_RECORDS4, 12, 15_953_896, "params-write-their-data"),  # make_memmap
    (_RECORDS4, 8, 16_022_044, "params-write-their-data"),  # dumps
    ("features,entries,math,records", 8, 16_012_097, "params-write-their-data"),  # save
    (_RECORDS4, 12, 16_023_727, "peer-fails-inside"),  # consolidate(filename=)
    (_RECORDS4, 12, 15_982_517, "memmap-by-data"),  # share_memory_ of a broadcast_to
    # (memmap(folder2) of a collection memory-mapped before: its empty tensors)
    (_RECORDS4, 12, 15_982_827, "empty-tensors-have-no-file"),
    (_METHODS, 12, 15_993_641, "empty-tensors-have-no-file"),
    # fz30d: consolidate(filename=) of a consolidated x, kept by load_state_dict / by a
    # line giving no collection (to_module(return_swap=False), min(reduce=True))
    (_RECORDS4, 8, 16_020_298, "memmap-by-data"),
    (_RECORDS4, 8, 16_014_282, "memmap-by-data"),
    ("features,entries,math,records", 12, 16_021_107, "memmap-by-data"),
    (_RECORDS4, 12, 15_982_529, "memmap-by-data"),  # is_memmap() of a mixed lazy stack
    # fz30b: a record's update_at_(v, I[..., mask]) whose mask meets a feature dim
    ("methods,index,shape,combine", 8, 16_002_854, "index-beyond-batch"),
    # fz30b: tile of a ragged stack with a nested node (the peer's -2 there too)
    ("methods,index,shape,combine", 12, 16_003_696, "peer-fails-inside"),
    # fz30b: the peer's value node left at [0] by a cast, stacked; its stack of an empty
    # value stack and its clone (maybe_dense_stack falls back to a lazy stack)
    ("methods,index,shape,combine", 8, 15_992_610, "peer-fails-inside"),
    ("features,index,shape,combine", 8, 16_022_937, "peer-fails-inside"),
    ("features,index,shape,combine", 12, 15_991_411, "peer-fails-inside"),  # pad names
    ("methods,index,shape,combine", 12, 16_023_726, "stacking-keeps"),  # expand, shared
    ("features,index,shape,combine", 8, 16_000_859, "values-kept-shared"),  # MetaData
    # fz30i: pad_sequence of a member ragged at pad_dim (the peer's TensorDict with a -1);
    # pad of a ragged stack with a zero pair there (the peer's dense result with its -1)
    (_METHODS, 12, 16_062_313, "ragged-dim-unsupported"),
    (_METHODS, 12, 16_123_108, "stacking-keeps"),
    # fz30j: unsqueeze of a record after set_non_tensor(field, None): the field unset
    ("methods,index,shape,combine", 12, 16_123_011, "none-field-unset"),
    # fz30j: from_csv(x.to_csv()) without batch dims: the peer's frame reads a list as rows
    ("methods,features,entries,records", 8, 16_059_236, "peer-fails-inside"),
    # og33k: to_pandas without batch dims: the peer's frame reads a dict value as rows
    ("features,entries,math,records", 6, 33_750_029, "peer-fails-inside"),
    # og33k: load_state_dict of equal Python values keeps tclass's consolidation
    ("methods,features,entries,records", 12, 17_075_828, "memmap-by-data"),
    # og33k: from_struct_array of a value stack of strings: the peer's one np.str_ array
    ("methods,features,entries,records", 12, 17_075_743, "peer-fails-inside"),
    # og33k: merge_tensordicts of attrs() results: tclass keeps TensorAttrs and a Size
    ("extra,features", 8, 17_065_358, "stacking-keeps"),
    # og33k: create_nested over an existing group of a lazy stack of HDF5 files
    ("methods,index,shape,combine", 12, 17_073_843, "h5-files"),
    # og33k: index of broadcast_to of a memory-mapped lazy stack: tclass's copy in memory
    ("features,index,shape,combine", 12, 17_070_894, "lock-follows-sharing"),
    # og33k: merge_tensordicts of a memory-mapped lazy stack: the peer's entries set whole
    ("extra,features", 8, 17_122_088, "peer-fails-inside"),
    ("extra,features", 8, 17_122_564, "peer-fails-inside"),  # of from_modules' lazy stack
    # fz30j: from_zarr of a stack of one list value: tclass reads it per element
    ("methods,features,entries,records", 12, 16_101_945, "h5-files"),
    # fz30j: load_memmap_ of a lazy stack of lazy stacks holding a list value
    ("methods,index,shape,combine", 12, 16_062_516, "values-kept-shared"),
    # fz30j: cat_from_tensordict after dataclasses.replace: the leaves in key order
    ("features,math,index", 12, 16_072_585, "records-predictable"),
    # fz30j: a mask's pick of a flipped stack of MetaData: tclass's flip shares the values
    ("features,index,shape,combine", 12, 16_021_799, "values-kept-shared"),
    # fz30j: a mask of a lazy stack of lazy stacks over no elements: members' grouping
    ("methods,index,shape,combine", 12, 15_951_676, "stacking-keeps"),
    # fz30k: from_tuple of a named collection's values (its value node unnamed in tclass)
    ("methods,features,entries,records", 8, 16_115_276, "checked-as-torch"),
    ("methods,index,shape,combine", 8, 16_060_007, "checked-as-torch"),
    ("methods,index,shape,combine", 8, 16_071_633, "checked-as-torch"),  # lazy flatten names
    ("methods,index,shape,combine", 8, 16_060_084, "lock-follows-sharing"),  # unbind, shared
    ("methods,index,shape,combine", 8, 16_055_702, "memmap-by-data"),  # a lazy stack's narrow
    # fz30k: the peer's load of its own state dict (MetaData None, an empty value stack)
    ("methods,features,entries,records", 8, 16_020_594, "peer-fails-inside"),
    ("features,entries,math,records", 12, 16_104_548, "peer-fails-inside"),
    ("features,entries,math,records", 8, 15_953_199, "peer-fails-inside"),
    ("features,index,shape,combine", 8, 16_090_121, "peer-fails-inside"),  # ragged tensor_split
    ("methods,features,entries,records", 8, 16_024_549, "params-write-their-data"),
    ("features,entries,math,records", 8, 16_010_671, "records-predictable"),  # parameters()
    ("methods,features,entries,records", 8, 16_105_774, "none-field-unset"),  # grad of None
    ("features,entries,math,records", 8, 16_092_389, "peer-fails-inside"),  # to_dict, separates
    ("features,entries,math,records", 8, 16_126_422, "peer-fails-inside"),  # separates default
    ("features,entries,math,records", 12, 16_013_650, "records-predictable"),  # div, empty record
    # ol31a: reshape of a ragged lazy stack into a shape no element count fits
    ("features,index,shape,combine", 8, 16_053_669, "checked-as-torch"),
    # ol31a: from_dict_instance of a nested dict whose first entry is an empty dict
    ("features,entries,math,records", 8, 16_112_117, "records-predictable"),
    # ol31a: from_zarr of flattened keys: the group "n" read with its arrays' shared batch
    ("methods,features,entries,records", 8, 16_105_153, "h5-files"),
    # ol31a: pow(default="intersection") of a collection holding no tensor
    ("methods,index,shape,combine", 12, 16_013_886, "math-beyond-the-peer"),
    # ol31a: unflatten of a named lazy stack over no elements (the peer's unnamed)
    ("methods,index,shape,combine", 12, 16_201_121, "checked-as-torch"),
    # ol31a: view of a lazy stack merging dims of size 1: the members grouped otherwise
    ("features,index,shape,combine", 8, 16_024_715, "stacking-keeps"),
    # ol31a: unflatten into dims of size 1: a nested value stack loses two in the peer
    ("methods,index,shape,combine", 12, 16_023_400, "checked-as-torch"),
    # ol31a: separates of a nested key then its parent, of a loaded lazy stack
    ("methods,features,entries,records", 12, 16_101_206, "peer-fails-inside"),
    # ol31a: from_consolidated after consolidate(filename=) of an identity permute's result
    ("features,index,shape,combine", 8, 16_300_813, "memmap-by-data"),
    # ol31a: a record's None field read by key after from_tensordict(retain_none=True)
    ("methods,features,entries,records", 12, 16_302_047, "none-field-unset"),
    # fm31e: memmap_refresh_ of a saved stack of list values: one list per element kept
    ("methods,index,shape,combine", 8, 16_952_539, "values-kept-shared"),
    # fz31b: fresh windows at --length 16 / 20 and new mixes; the extra family
    (_METHODS, 16, 16_400_914, "peer-fails-inside"),  # auto_device_ of a file view, nested
    (_RECORDS4, 16, 16_402_481, "peer-fails-inside"),  # its own state dict, a nested key
    ("features,entries,math,records", 16, 16_404_085, "checked-as-torch"),  # lazy new_empty
    (_FEATURES, 20, 16_406_778, "checked-as-torch"),  # a write over no elements
    ("math,combine,records", 8, 16_412_383, "checked-as-torch"),  # lazy maximum_ operand
    (_ALL, 12, 16_415_402, "records-predictable"),  # cat_tensors of a loaded record
    (_ALL, 12, 16_415_819, "values-kept-shared"),  # .data of a None first row
    ("methods,math,shape", 12, 16_418_485, "stacking-keeps"),  # uint32 of a kept lazy stack
    ("entries,index,combine", 12, 16_419_260, "peer-fails-inside"),  # update_(to_dict()), none
    ("extra", 4, 16_491_005, "stacking-keeps"),  # merge_tensordicts key order
    ("extra", 4, 16_491_079, "peer-fails-inside"),  # merge_tensordicts of a lazy stack
    # og31g: the extra family's losses and make_tensordict
    ("extra", 4, 16_491_030, "values-kept-shared"),  # l1_loss keeps the Python values
    ("extra", 4, 16_435_279, "peer-fails-inside"),  # l1_loss, an empty node in one operand
    ("extra", 4, 16_435_083, "records-predictable"),  # make_tensordict infers past {}
    # og32b: OPEN lines decided
    ("features,entries,math,records", 16, 16_434_045, "values-kept-shared"),  # exclude() copy
    (_FEATURES, 8, 31_410_434, "values-kept-shared"),  # a write into a permute reaches values
    (_FEATURES, 8, 31_410_013, "peer-fails-inside"),  # expand of a repeat_interleave over none
    (_RECORDS4, 8, 16_311_759, "params-write-their-data"),  # memmap of locked params, then
    (_RECORDS4, 8, 16_310_652, "h5-files"),  # update of params over a file: a new group
    (_RECORDS4, 8, 16_311_647, "records-predictable"),  # from_tuple grows a copy, then a write
    ("methods,math,shape", 8, 16_413_667, "stacking-keeps"),  # identity unflatten, append
    ("entries,index,combine", 16, 17_014_010, "peer-fails-inside"),  # non_tensor_items
    ("entries,index,combine", 16, 17_014_983, "h5-files"),  # masked_select of a file: groups
    # fz32c: fresh windows of the extra family's mixes and L10 / L14 / L24
    ("extra,entries", 8, 17_022_904, "values-kept-shared"),  # mse_loss, a node of values
    ("extra,entries", 8, 17_022_490, "checked-as-torch"),  # safetensors of a named stack
    ("extra,index", 8, 17_023_221, "lock-follows-sharing"),  # merge: the peer's empty node
    (_METHODS, 10, 17_024_993, "peer-fails-inside"),  # auto_device_ of a stack of file views
    (_METHODS, 14, 17_029_497, "peer-fails-inside"),  # broadcast_to, a value stack's names
    ("features,math,index", 14, 17_032_695, "bitwise-in-place"),  # ^= of a repeated member
    (_RECORDS4, 14, 17_031_904, "stacking-keeps"),  # get(key, default) of a partial key
    (_FEATURES, 14, 17_030_415, "none-field-unset"),  # from_consolidated, a None field
    (_FEATURES, 14, 17_030_985, "peer-fails-inside"),  # x[:0] = x[None]: its copy fails
    (_METHODS, 10, 17_037_977, "memmap-by-data"),  # share_memory_, a memmap and a copy
    # og32a: the merge keeps its first input's kind; setdefault under a lazy stack's node
    ("features,entries,math,records", 8, 16_301_688, "checked-as-torch"),  # setdefault
    ("extra", 4, 16_491_036, "stacking-keeps"),  # merge: a later input's leafless record
    ("extra", 4, 16_435_281, "stacking-keeps"),  # merge: a later input's leafless node
    ("extra", 4, 16_435_799, "stacking-keeps"),  # merge: a later node keeps its own dims
    ("extra", 4, 16_491_068, "stacking-keeps"),  # merge: a later value under a record
    ("extra", 4, 16_491_010, "stacking-keeps"),  # unpad_sequence key order
    ("extra", 4, 16_491_040, "stacking-keeps"),  # make_tensordict of a merge: its order
    ("extra", 4, 17_000_312, "peer-fails-inside"),  # merge of a lazy stack: members cut
    # og33a: OPEN lines decided
    (_METHODS, 8, 17_002_598, "index-beyond-batch"),  # copy_at_(fast=False) at I[None, ...]
    (_METHODS, 8, 17_002_919, "h5-files"),  # entry_class of a group through a file's view
    (_METHODS, 8, 17_002_297, "peer-fails-inside"),  # struct array: rows of None as 'None'
    # fz33b: fresh windows 17,050,000-17,067,999
    ("extra,math", 8, 17_064_359, "peer-fails-inside"),  # merge of a ragged lazy stack
    ("extra,index", 8, 17_063_672, "peer-fails-inside"),  # merge: a lazy stack along dim 1
    (_ALL9, 10, 17_066_906, "checked-as-torch"),  # gather of flatten().unflatten(): names
    (_FEATURES, 12, 17_051_604, "values-kept-shared"),  # stack with an apply of values only
    ("extra,entries", 8, 17_062_027, "stacking-keeps"),  # merge order and an empty node's lock
    ("extra,entries", 8, 17_062_061, "stacking-keeps"),  # from_dict of a merge: its order
    ("extra,records", 8, 17_061_572, "stacking-keeps"),  # state_dict of a merge: its order
    ("extra", 6, 17_060_561, "stacking-keeps"),  # from_arrow(to_arrow()) of a merge: its order
    (_FEATURES, 20, 17_056_770, "memmap-by-data"),  # from_consolidated: a list MetaData
    ("extra,features", 8, 17_065_914, "none-field-unset"),  # arrow: the peer's null column
    (_FEATURES, 12, 17_051_932, "checked-as-torch"),  # torch.stack(unbind) of a squeezed record
    ("extra,index", 8, 17_071_064, "peer-fails-inside"),  # collate with an apply over none
    ("extra,index", 8, 17_063_798, "peer-fails-inside"),  # dense_stack_tds: the same
    (_ALL9, 10, 17_072_026, "math-beyond-the-peer"),  # smooth_l1_loss sum of values per element
    (_ALL9, 10, 17_072_842, "peer-fails-inside"),  # merge of a record over a lazy stack
    (_ALL9, 10, 17_072_672, "stacking-keeps"),  # merge of lazy stacks: a later empty node kept
    (_RECORDS4, 8, 17_103_003, "none-field-unset"),  # get_item_shape of a None field
    (_METHODS, 8, 17_101_482, "peer-fails-inside"),  # update_at_ of a shared Python value
    ("extra,features", 8, 17_065_628, "math-beyond-the-peer"),  # x * 2: grads of other leaves
    (_FEATURES, 8, 17_100_599, "annotation-casts"),  # from_dataclass: a list MetaData kept
    (_METHODS, 8, 17_101_901, "values-kept-shared"),  # x[mask] = 1.5 around a member's list
    ("extra,index", 8, 17_063_957, "state-dict-as-nn-module"),  # make_tensordict: tensors
    # fz34b: fresh windows 17,130,000-17,179,999
    (_METHODS, 16, 17_130_067, "records-predictable"),  # from_list past an empty dict
    (_METHODS, 16, 17_130_320, "ragged-dim-unsupported"),  # get_non_tensor, ragged first
    (_METHODS, 25, 17_135_624, "peer-fails-inside"),  # cat_tensors of a value and its node
    (_METHODS, 25, 17_135_174, "values-kept-shared"),  # share_memory_'s lists written back
    (_METHODS, 25, 17_135_002, "values-kept-shared"),  # x[...] = 0 around a list value
    ("features,math,index", 25, 17_138_479, "values-kept-shared"),  # x[1] = 1, array value
    (_RECORDS4, 25, 17_137_590, "stacking-keeps"),  # named_apply(batch_size=): lazy kept
    ("extra,math", 10, 17_144_478, "peer-fails-inside"),  # merge: members of two shapes
    ("extra,shape", 10, 17_146_940, "peer-fails-inside"),  # merge of a to_lazystack result
    ("extra,records", 10, 17_141_859, "stacking-keeps"),  # to_dict of a merge: its order
    ("extra,entries", 10, 17_142_525, "stacking-keeps"),  # to_dict of a merge: its order
    ("extra,features", 10, 17_145_353, "stacking-keeps"),  # to_tensordict of a merge
    ("extra,entries", 10, 17_142_364, "stacking-keeps"),  # keys() of a merge: its order
    (_RECORDS4, 16, 17_151_991, "none-field-unset"),  # entry_class of a None nested field
    (_RECORDS4, 16, 17_151_454, "records-predictable"),  # values() of Rec(**d): field order
    ("extra,entries", 10, 17_155_308, "stacking-keeps"),  # from_any of a merge: its order
    (_METHODS, 3, 17_200_854, "stacking-keeps"),  # rename_ after an identity unflatten
    (_RECORDS4, 6, 17_213_473, "peer-fails-inside"),  # view(dtype): the peer's clone strides
    ("extra,index", 8, 17_063_232, "stacking-keeps"),  # unpad_sequence: unnamed rows
    (_METHODS, 6, 33_338_862, "h5-files"),  # from_tuple of a file's empty group
    (_METHODS, 20, 17_055_200, "stacking-keeps"),  # reshape into dims of size 1: names
    ("extra,index", 8, 17_114_086, "peer-fails-inside"),  # assert_close: names of its apply
    ("records", 4, 17_220_437, "none-field-unset"),  # TOnly.from_tensordict: y None
    ("records", 4, 17_220_673, "none-field-unset"),  # the same, lazy_stack: list of None
    ("records", 4, 17_220_710, "none-field-unset"),  # the same, saved: keys of to_tensordict
    (_RECORDS4, 6, 17_232_793, "none-field-unset"),  # sorted_keys after retain_none=True
    (_RECORDS4, 6, 17_232_313, "apply-keeps-fitting-values"),  # a stack of values only
    ("records", 4, 17_260_431, "none-field-unset"),  # the same, select of the None field
]


@pytest.mark.parametrize(("families", "length", "number", "entry"), DECIDED)
def test_decided_programs_are_allowed(
    families: str, length: int, number: int, entry: str, libs: tuple[Lib, Lib]
) -> None:
    """Each program still differs from the peer, and only as its entry allows."""
    chosen = families.split(",")
    stats = Stats()
    finding = run_program(
        RandomChooser(number), libs, generators(chosen), stats, length, world_of(chosen)
    )
    assert finding is not None, "the peer and tclass agree now: drop the program here"
    assert finding.allowed == entry, finding.report()


def test_reshape_of_a_lazy_stack_keeping_nested_dims_is_allowed(
    libs: tuple[Lib, Lib], tmp_path: pathlib.Path
) -> None:
    """The OPEN line ``shape/reshape/result: result.kind`` made by hand (ol31a):
    ``reshape`` of a lazy stack of one member stacked at 1 into five dims of size 1 stays
    lazy in tclass, its nested collection keeping its own two dims of size 1, where the
    peer's dense result drops both (``stacking-keeps``)."""
    world = (
        "L.lazy_stack([L.TensorDict({'a': torch.zeros(1, 2), 'n': L.TensorDict("
        "{'c': torch.zeros(1, 1, 1)}, [1, 1, 1])}, [1])], 1)"
    )
    program, facts = Program(*libs, str(tmp_path / "p")), Facts(kind="lazy")
    assert program.step(Step(world, "world", "world"), facts, Stats()) is None
    tags = frozenset({"torch-shape=[1, 1, 1, 1, 1]"})
    step = Step("x.reshape([1, 1, 1, 1, 1])", "reshape", "shape", tags=tags)
    finding = program.step(step, facts, Stats())
    assert isinstance(finding, Finding) and finding.allowed == "stacking-keeps", finding
    assert "result['n'].batch_size: peer (1, 1, 1, 1, 1), tclass (1, 1, 1, 1, 1, 1, 1)" in (
        finding.detail
    )


def test_nested_tensors_compare_by_their_parts() -> None:
    """Torch numbers a jagged tensor's ragged dim per process (``j1``, ``j2``): the
    snapshot compares the parts' shapes and values instead (fz34b)."""
    made = [
        torch.nested.nested_tensor([torch.zeros(2), torch.ones(3)], layout=torch.jagged)
        for _ in range(2)
    ]
    assert made[0].shape != made[1].shape  # j1 and j2
    assert list(differences(snapshot(made[0]), snapshot(made[1]))) == []
    swapped = torch.nested.nested_tensor([torch.ones(3), torch.zeros(2)], layout=torch.jagged)
    assert list(differences(snapshot(made[0]), snapshot(swapped)))
