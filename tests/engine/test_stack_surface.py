"""The peer's spellings around stacking and building, and the keywords of existing methods.

Classmethod forms (``TensorDict.stack`` / ``cat`` / ``lazy_stack`` /
``maybe_dense_stack``, ``LazyStackedTensorDict.lazy_stack``, ``from_any``, ``from_list``,
``from_tuple``, ``from_dict`` on the base class), method forms of module functions
(``td.pad``, ``td.to_lazystack``) and ``unpad_sequence``, lazy-stack methods (``insert``,
``append``, ``densify``), the peer's keywords (``to_tensordict(retain_none=)``,
``consolidate(num_threads=, filename=, inplace=, ...)``, ``apply(device=,
filter_empty=, call_on_nested=, ...)``), lazy ``cat`` / ``view`` / ``reshape``, and
``print_directory_tree``.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch

import tclass
from tclass import LazyStackedTensorDict, TensorClass, TensorDict, TensorDictBase, errors


class Frame(TensorClass):
    obs: torch.Tensor
    reward: torch.Tensor | None = None
    env: str = "pong"


def _td(n: int = 3) -> TensorDict:
    return TensorDict({"a": torch.arange(float(n)), "n": {"c": torch.ones(n, 2)}}, [n])


def _frame(n: int = 3) -> Frame:
    return Frame(obs=torch.arange(float(n)), batch_size=[n])


# --- classmethod spellings -------------------------------------------------------------


def test_classmethod_stack_and_cat() -> None:
    a, b = _td(), _td()
    assert type(TensorDict.stack([a, b])) is TensorDict
    assert TensorDict.stack([a, b], 1).batch_size == torch.Size([3, 2])
    assert TensorDict.cat([a, b]).batch_size == torch.Size([6])
    out = TensorDict.stack([a, b]).zero_()
    TensorDict.stack([a, b], out=out)
    assert torch.equal(out["a"][1], b["a"])
    assert type(Frame.stack([_frame(), _frame()])) is Frame
    assert type(Frame.cat([_frame(), _frame()])) is Frame


def test_classmethod_lazy_stack_and_maybe_dense_stack() -> None:
    a, b = _td(), _td()
    lazy = TensorDict.lazy_stack([a, b], 1)
    assert isinstance(lazy, LazyStackedTensorDict) and lazy.stack_dim == 1
    assert isinstance(LazyStackedTensorDict.lazy_stack([a, b]), LazyStackedTensorDict)
    assert type(TensorDict.maybe_dense_stack([a, b])) is TensorDict
    ragged = TensorDict({"a": torch.zeros(3, 2)}, [3])
    mixed = LazyStackedTensorDict.maybe_dense_stack(
        [TensorDict({"a": torch.zeros(3)}, [3]), ragged]
    )
    assert isinstance(mixed, LazyStackedTensorDict)
    assert type(Frame.lazy_stack([_frame(), _frame()])) is Frame
    assert type(Frame.maybe_dense_stack([_frame(), _frame()])) is Frame


def test_lazy_stack_classmethod_takes_the_peer_keywords() -> None:
    tensors = [torch.ones(2), torch.ones(3)]
    padded = LazyStackedTensorDict.lazy_stack(tensors, as_padded_tensor=True, padding_value=-1)
    assert padded.tolist() == [[1.0, 1.0, -1.0], [1.0, 1.0, 1.0]]
    assert LazyStackedTensorDict.lazy_stack(tensors, as_list=True) == tensors
    nested = tclass.lazy_stack(tensors, as_nested_tensor=True)
    assert nested.is_nested
    assert torch.equal(
        tclass.lazy_stack([torch.ones(2), torch.zeros(2)]), torch.tensor([[1.0, 1], [0, 0]])
    )
    members = [_td(), _td()]
    kept = LazyStackedTensorDict.lazy_stack(members, device="cpu", strict_shape=True)
    assert kept.tensordicts == members  # device= is the peer's unused keyword
    with pytest.raises(RuntimeError):
        LazyStackedTensorDict.lazy_stack([])
    with pytest.raises(errors.StackError):
        tclass.lazy_stack([torch.ones(3), _td()])


def test_stack_accepts_contiguous() -> None:
    out = tclass.stack([_td(), _td()], contiguous=True)
    assert type(out) is TensorDict and out.batch_size == torch.Size([2, 3])


def test_from_dict_on_the_base_class_gives_a_tensordict() -> None:
    out = TensorDictBase.from_dict({"a": torch.zeros(3)}, auto_batch_size=True)
    assert type(out) is TensorDict and out.batch_size == torch.Size([3])


def test_from_any() -> None:
    assert tclass.from_any({"a": torch.zeros(3)}).batch_size == torch.Size([])
    assert TensorDict.from_any({"a": torch.zeros(3)}, auto_batch_size=True).batch_size == (
        torch.Size([3])
    )
    from_tuple = tclass.from_any((torch.zeros(3), torch.ones(3)))
    assert list(from_tuple.keys()) == ["0", "1"]
    td = _td()
    assert tclass.from_any(td) is td
    import numpy as np

    array = np.zeros(2, dtype=[("x", "<f8")])
    assert tclass.from_any(array).batch_size == torch.Size([2])


class _Rec(TensorClass):
    v: torch.Tensor


def test_the_class_constructors_return_a_record_as_it_is() -> None:
    # As the peer: TensorDict.from_any(record) is the record (it read a TensorDict's
    # storage from it, an AttributeError), and from_list of rows restacks their class.
    rec = _Rec(v=torch.arange(2.0), batch_size=[2])
    assert TensorDict.from_any(rec) is rec and tclass.from_any(rec) is rec
    assert type(TensorDict.from_any(rec, auto_batch_size=True)) is _Rec
    rows = TensorDict.from_list([rec[0], rec[1]])
    assert type(rows) is _Rec and torch.equal(rows.v, rec.v)


def test_from_any_dataclasses_lists_and_tensors_as_the_peer() -> None:
    import dataclasses

    @dataclasses.dataclass
    class Data:
        obs: torch.Tensor
        extra: tuple[object, ...]

    data = Data(obs=torch.zeros(3, 4), extra=(torch.ones(3), {"x": torch.ones(3)}))
    td = TensorDict.from_any(data, auto_batch_size=True)
    assert td.batch_size == torch.Size([3])
    assert sorted(td.keys(True, True), key=str) == [("extra", "0"), ("extra", "1", "x"), "obs"]
    assert td["obs"] is data.obs  # the values themselves, as from_dict takes them
    assert torch.equal(TensorDict.from_any([1, 2, 3]), torch.tensor([1, 2, 3]))
    assert isinstance(tclass.from_any(["a", "b"]), tclass.NonTensorStack)
    tensor = torch.zeros(2)
    assert tclass.from_any(tensor) is tensor
    # a tuple holding tensors or mappings nests under "0", "1"... in from_dict too
    nested = TensorDict.from_dict({"pair": (torch.zeros(3), torch.ones(3, 1))}, batch_size=[3])
    assert sorted(nested.keys(True, True), key=str) == [("pair", "0"), ("pair", "1")]
    # anything else is returned as it is, as the peer's (nu23d: it raised EntryTypeError)
    thing = object()
    assert tclass.from_any(thing) is thing and TensorDict.from_any(thing) is thing
    assert TensorDict.from_any(None) is None and TensorDict.from_any("x") == "x"
    assert TensorDict.from_any(3.5) == 3.5
    array = np.zeros(3)
    assert TensorDict.from_any(array) is array
    with pytest.raises(errors.EntryTypeError, match="dataclass type"):
        tclass.from_any(type(data))


def test_from_any_nests_dataclasses_and_tuples_inside_mappings() -> None:
    import dataclasses

    @dataclasses.dataclass
    class Point:
        a: int

    td = TensorDict.from_any({"dataclass": Point(a=0), "tuple": (1, 2, 3), "mixed": (1, "z")})
    assert set(td.keys(True, True)) >= {("dataclass", "a"), ("tuple", "0"), ("tuple", "2")}
    assert td["tuple", "1"] == 2 and td["mixed", "1"] == "z"  # kept (the peer drops "z")
    # from_dict nests it too, as the peer's (its from_any of each value; fz30f); the
    # constructor makes it one tensor, as the peer's
    assert TensorDict.from_dict({"tuple": (1, 2, 3)})["tuple", "2"] == 3
    assert TensorDict({"tuple": (1, 2, 3)})["tuple"].tolist() == [1, 2, 3]


def test_from_tuple() -> None:
    td = TensorDict.from_tuple((torch.zeros(3), {"x": torch.ones(3)}))
    assert list(td.keys(True)) == ["0", ("1", "x"), "1"]
    assert tclass.from_tuple((torch.zeros(3),), auto_batch_size=True).batch_size == torch.Size([3])


def test_from_list() -> None:
    td = TensorDict.from_list([{"a": torch.zeros(3)}, {"a": torch.ones(3)}])
    assert type(td) is TensorDict and td.batch_size == torch.Size([2])
    assert torch.equal(td["a"][1], torch.ones(3))
    auto = TensorDict.from_list([{"a": torch.zeros(3)}, {"a": torch.ones(3)}], auto_batch_size=True)
    assert auto.batch_size == torch.Size([2, 3])
    ragged = TensorDict.from_list([{"a": torch.zeros(3)}, {"a": torch.ones(2)}])
    assert isinstance(ragged, LazyStackedTensorDict)
    lazy = TensorDict.from_list([{"a": torch.zeros(3)}, {"a": torch.zeros(3)}], lazy=True)
    assert isinstance(lazy, LazyStackedTensorDict)
    records = Frame.from_list([{"obs": torch.zeros(2)}, {"obs": torch.ones(2)}])
    assert type(records) is Frame and records.batch_size == torch.Size([2])


# --- method forms -------------------------------------------------------------------------


def test_pad_method() -> None:
    td = _td()
    out = td.pad([1, 0], value=-1.0)
    assert out.batch_size == torch.Size([4]) and out["a"][0].item() == -1.0
    assert td.pad([0, 1], inplace=True) is td and td.batch_size == torch.Size([4])
    frame = _frame().pad([0, 2])
    assert type(frame) is Frame and frame.batch_size == torch.Size([5])
    assert tclass.pad(_td(), [1, 1], safe=False).batch_size == torch.Size([5])


def test_pad_of_a_lazy_stack_in_place_grows_the_stack() -> None:
    lazy = tclass.lazy_stack([_td(), _td()])
    assert lazy.pad([0, 1, 1, 0], value=5.0, inplace=True) is lazy
    assert lazy.batch_size == torch.Size([3, 4])
    assert len(lazy.tensordicts) == 3
    assert bool((lazy.tensordicts[2]["a"] == 5).all())


def test_to_lazystack() -> None:
    td = TensorDict({"a": torch.arange(6.0).reshape(2, 3)}, [2, 3])
    lazy = td.to_lazystack(1)
    assert isinstance(lazy, LazyStackedTensorDict) and lazy.stack_dim == 1
    assert len(lazy.tensordicts) == 3
    assert lazy.tensordicts[0]["a"].data_ptr() == td["a"].data_ptr()  # views, no copy
    assert torch.equal(lazy["a"], td["a"])
    with pytest.raises(IndexError):
        TensorDict({"a": torch.zeros(())}, []).to_lazystack()
    record = _frame().to_lazystack()
    assert type(record) is Frame and isinstance(record._tensordict, LazyStackedTensorDict)


def test_unpad_sequence_inverts_pad_sequence() -> None:
    seq = [TensorDict({"x": torch.arange(n), "y": {"z": torch.ones(n, 2)}}, [n]) for n in (2, 3)]
    padded = tclass.pad_sequence(seq, return_mask=True)
    out = tclass.unpad_sequence(padded)
    assert isinstance(out, LazyStackedTensorDict)
    # Each member keeps its own length: a ragged stack, as the peer's.
    assert [m.batch_size for m in out.tensordicts] == [torch.Size([2]), torch.Size([3])]
    assert out.batch_size == torch.Size([2, -1])
    assert [m["y", "z"].shape for m in out.tensordicts] == [(2, 2), (3, 2)]
    assert torch.equal(out.tensordicts[0]["x"], torch.arange(2))
    assert "masks" not in out.keys()
    left = tclass.pad_sequence(seq, return_mask=True, padding_side="left")
    assert [m["x"].tolist() for m in tclass.unpad_sequence(left).tensordicts] == [[0, 1], [0, 1, 2]]
    bare = tclass.pad_sequence(seq)
    with pytest.raises(ValueError):
        tclass.unpad_sequence(bare)
    by_tensor = tclass.unpad_sequence(bare, padded["masks", "x"])
    assert [m["x"].shape for m in by_tensor.tensordicts] == [torch.Size([2]), torch.Size([3])]
    features = [TensorDict({"x": torch.ones(2, n)}, [2]) for n in (2, 3)]
    padded_f = tclass.pad_sequence(features, pad_dim=1, return_mask=True)
    back = tclass.unpad_sequence(padded_f, pad_dim=1)
    assert [m["x"].shape for m in back.tensordicts] == [torch.Size([2, 2]), torch.Size([2, 3])]


# --- lazy-stack methods -------------------------------------------------------------------


def test_insert_and_append() -> None:
    members = [TensorDict({"a": torch.full((2,), float(i))}, [2]) for i in range(3)]
    lazy = LazyStackedTensorDict(*members)
    assert lazy.insert(1, TensorDict({"a": torch.full((2,), 9.0)}, [2])) is None
    assert lazy.batch_size == torch.Size([4, 2])
    assert lazy["a"][:, 0].tolist() == [0.0, 9.0, 1.0, 2.0]
    lazy.append(TensorDict({"a": torch.full((2,), 7.0)}, [2]))
    assert lazy["a"][:, 0].tolist() == [0.0, 9.0, 1.0, 2.0, 7.0]
    lazy.insert(-1, TensorDict({"a": torch.full((2,), 5.0)}, [2]))
    assert lazy["a"][:, 0].tolist() == [0.0, 9.0, 1.0, 2.0, 5.0, 7.0]
    with pytest.raises(ValueError, match="as many batch dims"):
        lazy.append(TensorDict({"a": torch.zeros(3, 2)}, [3, 2]))
    with pytest.raises(ValueError, match="Batch sizes in tensordicts differs.*\\[2\\].*\\[3\\]"):
        lazy.append(TensorDict({"a": torch.zeros(3)}, [3]))  # as the peer
    assert lazy.batch_size == torch.Size([6, 2]) and len(lazy.tensordicts) == 6
    ragged = tclass.lazy_stack([TensorDict(a=torch.zeros(2), batch_size=[2]), members[0][:1]])
    ragged.append(TensorDict({"a": torch.zeros(3)}, [3]))  # a ragged stack takes any size
    assert ragged.batch_size == torch.Size([3, -1]) and ragged[-1].batch_size == (3,)
    lazy = LazyStackedTensorDict(*members)
    for add in (lambda: lazy.append(torch.zeros(2)), lambda: lazy.insert(0, torch.zeros(2))):
        # a TypeError, in the peer's words, which code written for it matches
        with pytest.raises(
            TypeError, match="is a Tensor. Expected new value to be TensorDictBase instance"
        ):
            add()
    assert len(lazy.tensordicts) == 3
    with pytest.raises(RuntimeError):
        lazy.lock_().append(TensorDict({"a": torch.zeros(2)}, [2]))


def test_an_empty_lazy_stack_grows_by_append() -> None:
    lazy = LazyStackedTensorDict(stack_dim=0)
    assert lazy.batch_size == torch.Size([0]) and list(lazy.keys()) == []
    assert lazy.device is None and len(lazy.tensordicts) == 0
    assert "LazyStackedTensorDict" in repr(lazy)
    lazy.append(TensorDict({"a": torch.zeros(3)}, [3]))
    assert lazy.batch_size == torch.Size([1, 3]) and lazy["a"].shape == torch.Size([1, 3])
    later = LazyStackedTensorDict(stack_dim=1)
    later.append(TensorDict({"a": torch.zeros(3)}, [3]))
    assert later.batch_size == torch.Size([3, 1])


def test_densify() -> None:
    ragged = tclass.lazy_stack(
        [TensorDict({"a": torch.ones(2)}, []), TensorDict({"a": torch.ones(3)}, [])]
    )
    dense = ragged.densify(layout=torch.jagged)
    assert type(dense) is TensorDict and dense["a"].is_nested
    assert dense["a"].layout == torch.jagged
    plain = tclass.lazy_stack([_td(), _td()]).densify()
    assert type(plain) is TensorDict and plain.batch_size == torch.Size([2, 3])
    assert type(_td().densify()) is TensorDict
    across = tclass.lazy_stack(
        [TensorDict({"a": torch.ones(4, 2)}, [4]), TensorDict({"a": torch.ones(4, 1)}, [4])], 1
    )
    with pytest.raises(NotImplementedError, match="stack along dim 0"):  # as the peer
        across.densify()
    with pytest.raises(errors.HeterogeneousEntryError):
        across.densify()


def test_cat_of_lazy_stacks_and_tensordicts_stays_lazy() -> None:
    lazy = tclass.lazy_stack([TensorDict({"a": torch.full((3,), float(i))}, [3]) for i in (1, 2)])
    dense = TensorDict({"a": torch.zeros(2, 3)}, [2, 3])
    along = torch.cat([lazy, dense], 0)
    assert isinstance(along, LazyStackedTensorDict) and along.batch_size == torch.Size([4, 3])
    assert along["a"][:, 0].tolist() == [1.0, 2.0, 0.0, 0.0]
    across = torch.cat([dense, lazy], 1)
    assert isinstance(across, LazyStackedTensorDict) and across.batch_size == torch.Size([2, 6])
    assert across["a"][0].tolist() == [0.0, 0.0, 0.0, 1.0, 1.0, 1.0]
    both = torch.cat([lazy, lazy], 0)
    assert isinstance(both, LazyStackedTensorDict) and both.batch_size == torch.Size([4, 3])
    stacked = torch.stack([lazy, dense])
    assert stacked.batch_size == torch.Size([2, 2, 3])
    assert stacked["a"][1].sum().item() == 0.0


def test_view_and_reshape_of_a_lazy_stack_regroup_its_members() -> None:
    ragged = tclass.lazy_stack([TensorDict({"a": torch.ones(3, i + 1)}, [3]) for i in range(2)])
    assert ragged.view(2, 3) is ragged
    flat = ragged.view(-1)
    assert isinstance(flat, LazyStackedTensorDict) and flat.batch_size == torch.Size([6])
    assert flat.device == ragged.device
    assert [m["a"].shape[-1] for m in flat.tensordicts] == [1, 1, 1, 2, 2, 2]
    assert ragged.reshape(6).batch_size == torch.Size([6])
    back = flat.view(2, 3)
    assert back.batch_size == torch.Size([2, 3])
    with pytest.raises(RuntimeError):
        ragged.view(3, 2)  # mixes members: reshape a dense copy instead
    with pytest.raises(RuntimeError):
        ragged.view()
    homogeneous = tclass.lazy_stack([_td(), _td()])
    assert torch.equal(homogeneous.reshape(3, 2)["a"], homogeneous.contiguous().reshape(3, 2)["a"])


def test_view_of_an_empty_lazy_stack_to_any_shape_of_no_elements() -> None:
    # No element to mix: the peer answers with the dense stack reshaped; so does tclass.
    members = [TensorDict({"b": torch.zeros(0, 2), "n": {"d": torch.zeros(0, 2, 3)}}, [0])]
    empty = tclass.lazy_stack(members, 1)
    out = empty.view(0, 2, 3)
    assert out.batch_size == torch.Size([0, 2, 3])
    assert out["b"].shape == torch.Size([0, 2, 3, 2])
    assert out["n", "d"].shape == torch.Size([0, 2, 3, 2, 3])
    assert not out.is_locked
    assert empty.lock_().view(0, 6).is_locked  # a locked input gives a locked result
    with pytest.raises(RuntimeError, match="without mixing its members"):
        tclass.lazy_stack([_td(), _td()], 1).view(2, 3)


# --- keywords of existing methods -----------------------------------------------------------


def test_to_tensordict_retain_none() -> None:
    frame = _frame()
    assert set(frame.to_tensordict().keys()) == {"obs", "env"}
    assert set(frame.to_tensordict(retain_none=True).keys()) == {"obs", "env", "reward"}
    assert frame.to_tensordict(retain_none=True).get("reward").data is None
    assert set(_td().to_tensordict(retain_none=False).keys()) == {"a", "n"}


def test_consolidate_locks_detaches_and_takes_the_peer_keywords(tmp_path: Path) -> None:
    td = TensorDict({"a": torch.ones(2, requires_grad=True), "b": {"c": torch.zeros(2, 3)}}, [2])
    packed = td.consolidate()
    assert packed.is_locked and not td.is_locked
    assert not packed["a"].requires_grad
    assert td.consolidate(num_threads=2).is_locked
    path = tmp_path / "buffer.mmap"
    on_file = td.consolidate(filename=path)
    assert path.exists() and os.path.getsize(path) > 0
    assert torch.equal(on_file["b", "c"], td["b", "c"])
    plain = TensorDict({"a": torch.ones(2), "b": {"c": torch.zeros(2, 3)}}, [2])
    assert plain.consolidate(inplace=True) is plain and plain.is_locked
    future = _td().consolidate(return_early=True, num_threads=2)
    assert torch.equal(future.result()["a"], _td()["a"])
    assert _td().consolidate(share_memory=True)["a"].is_shared()
    assert torch.equal(_td().consolidate(device="cpu", non_blocking=True)["a"], _td()["a"])
    assert _td().consolidate(metadata=True).is_locked
    assert _td().consolidate(use_buffer=True).is_locked


def test_apply_device_names_and_filter_empty() -> None:
    td = TensorDict({"a": torch.ones(2), "b": {"c": torch.zeros(2, 3)}}, [2])
    assert td.apply(lambda x: x, device="cpu").device == torch.device("cpu")
    assert td.apply(lambda x: x, device=None).device is None
    assert td.apply(lambda x: None) is None
    assert list(td.apply(lambda x: None, filter_empty=False).keys()) == ["b"]
    assert list(td.apply(lambda x: None if x.ndim > 1 else x).keys()) == ["a"]
    seen: list[str] = []

    def on_nested(value: object) -> object:
        seen.append(type(value).__name__)
        return value

    td.apply(on_nested, call_on_nested=True)
    assert seen == ["Tensor", "TensorDict"]
    out = td.apply(lambda x: x + 1, out=td.clone())
    assert bool((out["a"] == 2).all())
    locked = td.clone().lock_()
    assert locked.apply(lambda x: x, propagate_lock=True).is_locked
    assert not locked.apply(lambda x: x).is_locked
    other = TensorDict({"a": torch.ones(2)}, [2])
    summed = td.apply(lambda x, y: x + y, other, default=torch.zeros(()))
    assert bool((summed["a"] == 2).all()) and bool((summed["b", "c"] == 0).all())


def test_apply_inplace_on_expanded_tensors_is_a_value_error() -> None:
    expanded = torch.zeros(3).expand(2, 3)
    td = TensorDict({"a": expanded}, [2])
    with pytest.raises(ValueError) as info:
        td.apply(lambda x: x + 1, inplace=True)
    assert isinstance(info.value, RuntimeError) and isinstance(info.value, errors.TclassError)
    assert "'a'" in str(info.value)
    with pytest.raises(ValueError):
        td.apply_(lambda x: x + 1)


# --- print_directory_tree ------------------------------------------------------------------


def test_print_directory_tree(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _td().memmap(tmp_path / "saved")
    text = tclass.print_directory_tree(tmp_path / "saved")
    assert capsys.readouterr().out == text + "\n"  # shown, as the peer's console log
    lines = text.splitlines()
    assert lines[0].startswith("Directory size:")
    assert lines[1] == "saved/"
    assert "    n/" in lines and "        c.memmap" in lines and "    a.memmap" in lines
    assert "    meta.json" in lines
    bare = tclass.print_directory_tree(tmp_path / "saved", indent="  ", display_metadata=False)
    assert bare.splitlines()[0] == "  saved/"
    with pytest.raises(errors.MissingFileError):
        tclass.print_directory_tree(tmp_path / "absent")


def test_print_directory_tree_where_the_peer_has_it() -> None:
    from tclass.utils import print_directory_tree  # the peer's tensordict.utils

    assert print_directory_tree is tclass.print_directory_tree


def test_apply_of_a_locked_lazy_stack_propagates_its_lock() -> None:
    # As the peer: propagate_lock locks the restacked result (and its members).
    stack = tclass.lazy_stack([_td(), _td()]).lock_()
    for result in (
        stack.apply(lambda x: x + 1, propagate_lock=True),
        stack.named_apply(lambda key, x: x.float(), propagate_lock=True),
    ):
        assert isinstance(result, LazyStackedTensorDict) and result.is_locked
        assert all(member.is_locked for member in result.tensordicts)
    assert not stack.apply(lambda x: x + 1).is_locked


def test_empty_of_a_lazy_stack_with_a_batch_size() -> None:
    stack = tclass.lazy_stack([_td(), _td()])
    out = stack.empty(batch_size=[5])  # a device not given is no device error
    assert out.batch_size == (5,) and list(out.keys()) == []


def test_unpad_sequence_of_members_over_no_elements() -> None:
    """fz31b (the extra family, program 16,435,153 L4): ``unpad_sequence`` of a padded
    stack whose members have no elements (batch ``[0, 1]``) gives the members back, as
    the peer's; tclass's mask reading reshaped no elements to ``[0, -1]`` and raised."""
    x = TensorDict({"c": torch.zeros(0, 1), "b": torch.zeros(0, 1, 2)}, [0, 1])
    padded = tclass.pad_sequence([x, x[:0]], return_mask=True)
    parts = tclass.unpad_sequence(padded)
    assert parts.batch_size == torch.Size([2, 0, 1])
    assert [m.batch_size for m in parts.tensordicts] == [torch.Size([0, 1])] * 2
    assert sorted(parts.tensordicts[0].keys()) == ["b", "c"]
