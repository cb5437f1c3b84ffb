"""Tests for tclass.errors: the hierarchy, messages, and that the API raises these errors."""

from __future__ import annotations

import importlib
import inspect
import pickle
import re
import warnings
from collections.abc import Callable
from typing import Any

import pytest
import torch

import tclass
from tclass import TensorDict, errors

# What each class must also be, from the module's docstrings and DESIGN.md (the builtin a
# caller would catch, plus the builtin the peer raises in the same situation).
EXPECTED_BASES: dict[str, tuple[type[BaseException], ...]] = {
    "KeyNotFoundError": (KeyError,),
    "KeyConflictError": (KeyError,),
    "StateDictKeyError": (KeyError, RuntimeError),
    "KeyThroughTensorError": (KeyError, ValueError),
    "InvalidKeyError": (TypeError, KeyError),
    "EntryTypeError": (TypeError,),
    "LockedError": (RuntimeError,),
    "BatchSizeError": (ValueError, RuntimeError),
    "BatchSizeTypeError": (ValueError, RuntimeError, TypeError),
    "BatchMismatchError": (ValueError, RuntimeError),
    "ShapeError": (ValueError, RuntimeError),
    "DimError": (IndexError, ValueError, RuntimeError),
    "IndexTypeError": (IndexError, ValueError, RuntimeError, TypeError),
    "DimNameError": (ValueError, RuntimeError),
    "DimNameTypeError": (ValueError, RuntimeError, TypeError),
    "DimNameCountError": (ValueError, RuntimeError, IndexError),
    "InPlaceWriteError": (ValueError, RuntimeError),
    "InPlaceKernelError": (ValueError, RuntimeError, NotImplementedError),
    "InPlaceKeysError": (NotImplementedError, ValueError),
    "NoneFieldError": (KeyError, ValueError, RuntimeError),
    "ReadOnlyError": (ValueError, RuntimeError),
    "StackError": (ValueError, RuntimeError),
    "StackTypeError": (ValueError, RuntimeError, TypeError),
    "StackKeysError": (ValueError, RuntimeError, KeyError),
    "HeterogeneousEntryError": (ValueError, RuntimeError),
    "MixedEntryError": (ValueError, RuntimeError, TypeError),
    "NestedLayoutError": (ValueError, RuntimeError, NotImplementedError),
    "MemberKeyError": (ValueError, RuntimeError, KeyError),
    "DeviceError": (ValueError, RuntimeError),
    "DeviceUnavailableError": (ValueError, RuntimeError, AssertionError),
    "MetaTensorError": (ValueError, RuntimeError, NotImplementedError),
    "MissingFileError": (FileNotFoundError,),
    "MissingFolderError": (FileNotFoundError, OSError, RuntimeError),
    "PickledFileMissingError": (FileNotFoundError, RuntimeError),
    "NotAFileError": (OSError, ValueError, RuntimeError),
    "NotAFolderError": (NotADirectoryError, OSError, ValueError, RuntimeError),
    "FileConflictError": (FileExistsError, RuntimeError),
    "FileFormatError": (ValueError, RuntimeError),
    "FolderWriteError": (OSError,),
    "MetadataError": (ValueError, RuntimeError),
    "BufferTypeError": (TypeError, ValueError, RuntimeError),
    "UnsafePathError": (ValueError,),
    "FilePermissionError": (PermissionError,),
    "ReadOnlyFileError": (PermissionError, ValueError, KeyError, RuntimeError),
    "SubpathError": (ValueError, LookupError),
    "ClassResolutionError": (RuntimeError, LookupError),
    "ClassMismatchError": (TypeError,),
    "PickleRefusedError": (RuntimeError,),
    "NotSerializableError": (TypeError,),
    "NotSerializableWriteError": (TypeError, RuntimeError),
    "ConsolidatedFileError": (TypeError, RuntimeError),
    "UnpicklableError": (TypeError,),
    "UnsupportedError": (NotImplementedError,),
    "StoreDtypeError": (NotImplementedError, TypeError),
    "StoreShapeError": (ValueError, RuntimeError, TypeError),
    "StoreFormatError": (ValueError, RuntimeError, OSError),
    "OperandError": (TypeError,),
    "ReductionError": (ValueError, RuntimeError),
    "AppendError": (ValueError,),
    "AppendTargetError": (ValueError, AttributeError),
    "ShardSchemaError": (ValueError, RuntimeError),
    "MissingDependencyError": (ModuleNotFoundError,),
    "FileBusyError": (BlockingIOError,),
    "ClosedFileError": (KeyError, ValueError),
    "ReprParseError": (ValueError,),
    "ClassDefinitionError": (TypeError,),
    "ReservedNameError": (TypeError, AttributeError),
    "FieldTypeError": (TypeError,),
    "CastError": (TypeError, ValueError),
    "ArgumentError": (TypeError,),
    "UnknownArgumentError": (TypeError, AttributeError),
    "DuplicateArgumentError": (TypeError, ValueError),
    "DtypeArgumentError": (TypeError, ValueError, RuntimeError),
    "UnsetFieldError": (AttributeError,),
    "ArgumentValueError": (ValueError,),
    "UnravelKeyError": (TypeError, KeyError, RuntimeError),
    "NotCloseError": (AssertionError,),
    "UnknownFieldError": (AttributeError, ValueError),
    "FrozenInstanceError": (AttributeError, RuntimeError),
    "FieldIndexError": (ValueError, TypeError),
    "SpecSyntaxError": (TypeError, ValueError),
    "FieldSpecError": (TypeError, ValueError),
    "SchemaMismatchError": (ValueError, RuntimeError),
    "DistributedError": (RuntimeError,),
    "StructureMismatchError": (RuntimeError, ValueError),
    "UpdateArgumentError": (TypeError, RuntimeError),
    "GradError": (RuntimeError,),
    "EntryExistsError": (KeyError, RuntimeError),
    "EntriesTwiceError": (TypeError, ValueError),
    "SourceTypeError": (TypeError, ValueError),
    "ModuleStructureError": (TypeError, KeyError),
    "KeyRenameError": (KeyError, ValueError),
    "NamedTupleKeyError": (TypeError, KeyError, ValueError),
    "NotConsolidatedError": (AttributeError,),
    "NotAMappingError": (TypeError, AttributeError),
    "StateDictDestinationError": (TypeError, AttributeError),
    "NotSavedError": (AttributeError, RuntimeError),
    "NotProvidedError": (RuntimeError,),
}
SUBCLASSES = sorted(EXPECTED_BASES)
# Warnings: a base of tclass's own, and the builtin category the peer uses.
WARNINGS: dict[str, tuple[type[Warning], ...]] = {
    "TclassWarning": (UserWarning,),
    "SharedDefaultWarning": (UserWarning, FutureWarning),
    "IgnoredValuesWarning": (UserWarning, FutureWarning),
    "IgnoredKeywordWarning": (UserWarning, FutureWarning),
    "EntryReplacedWarning": (UserWarning,),
}
# Classes built from a message alone (BatchMismatchError is built from key and shapes).
MESSAGE_ONLY = [name for name in SUBCLASSES if name != "BatchMismatchError"]


def _error_class(name: str) -> type[errors.TclassError]:
    cls = getattr(errors, name)
    assert isinstance(cls, type) and issubclass(cls, BaseException)
    return cls


class TestHierarchy:
    def test_all_is_exactly_the_error_classes(self) -> None:
        assert sorted(errors.__all__) == sorted([*SUBCLASSES, "TclassError", *WARNINGS])
        defined = {
            name
            for name, obj in vars(errors).items()
            if isinstance(obj, type)
            and issubclass(obj, BaseException)
            and obj.__module__ == errors.__name__
        }
        assert defined == set(errors.__all__)

    def test_base(self) -> None:
        assert errors.TclassError.__bases__ == (Exception,)
        assert tclass.TclassError is errors.TclassError
        assert "TclassError" in tclass.__all__ and "errors" in tclass.__all__

    @pytest.mark.parametrize("name", SUBCLASSES)
    def test_bases(self, name: str) -> None:
        cls = _error_class(name)
        assert issubclass(cls, errors.TclassError)
        for builtin in EXPECTED_BASES[name]:
            assert issubclass(cls, builtin), f"{name} should derive from {builtin.__name__}"
        assert cls.__doc__ and cls.__doc__.strip()

    @pytest.mark.parametrize("name", MESSAGE_ONLY)
    def test_caught_by_each_base(self, name: str) -> None:
        cls = _error_class(name)
        for catch in (errors.TclassError, *EXPECTED_BASES[name]):
            with pytest.raises(catch):
                raise cls("boom")

    @pytest.mark.parametrize("name", sorted(WARNINGS))
    def test_warning_bases(self, name: str) -> None:
        cls = getattr(errors, name)
        assert issubclass(cls, errors.TclassWarning) and not issubclass(cls, errors.TclassError)
        for builtin in WARNINGS[name]:
            assert issubclass(cls, builtin)
        with pytest.warns(cls):
            warnings.warn(cls("boom"), stacklevel=1)

    def test_errors_importable_as_module(self) -> None:
        module = importlib.import_module("tclass.errors")
        assert module.LockedError is errors.LockedError
        assert set(module.__all__) == set(errors.__all__)


class TestMessages:
    @pytest.mark.parametrize("name", ["TclassError", *MESSAGE_ONLY])
    def test_str_is_the_message(self, name: str) -> None:
        cls = _error_class(name)
        message = "key 'obs' not found: try 'obs2'"
        err = cls(message)
        assert str(err) == message
        assert err.args == (message,)

    def test_key_not_found_is_not_quoted(self) -> None:
        assert str(errors.KeyNotFoundError("m")) == "m"
        assert str(KeyError("m")) == "'m'"  # what the override avoids
        assert str(errors.InvalidKeyError("m")) == "m"
        assert str(errors.KeyConflictError("m")) == "m"

    @pytest.mark.parametrize("name", ["TclassError", *MESSAGE_ONLY])
    def test_pickle_round_trip(self, name: str) -> None:
        cls = _error_class(name)
        out = pickle.loads(pickle.dumps(cls("some message")))
        assert type(out) is cls and str(out) == "some message"


class TestBatchMismatchError:
    def test_message_names_key_and_both_shapes(self) -> None:
        err = errors.BatchMismatchError(("n", "x"), torch.Size([3, 2]), torch.Size([4]))
        assert str(err).startswith("batch dimension mismatch for key ('n', 'x'): its shape [3, 2]")
        assert "batch size [4]" in str(err)
        assert (err.key, err.shape, err.batch_size) == (("n", "x"), (3, 2), (4,))
        for base in (errors.BatchSizeError, errors.TclassError, ValueError, RuntimeError):
            assert isinstance(err, base)

    def test_under_prefixes_the_parent_key(self) -> None:
        inner = errors.BatchMismatchError("c", [3], [4])
        assert inner.under("b").key == ("b", "c")
        assert inner.under("b").under("a").key == ("a", "b", "c")

    def test_pickle_round_trip(self) -> None:
        err = errors.BatchMismatchError("x", [3], [4])
        out = pickle.loads(pickle.dumps(err))
        assert type(out) is errors.BatchMismatchError and str(out) == str(err)
        assert (out.key, out.shape, out.batch_size) == ("x", (3,), (4,))

    def test_construction_error_names_the_full_nested_key(self) -> None:
        with pytest.raises(errors.BatchMismatchError) as info:
            TensorDict({"a": {"b": {"c": torch.zeros(3)}}}, batch_size=[4])
        assert info.value.key == ("a", "b", "c")

    def test_a_top_level_key_reads_as_a_string(self) -> None:
        # td.batch_size = [5] over a leaf of shape [3, 4] checks each entry by its path
        td = TensorDict({"a": torch.zeros(3, 4)}, [3])
        with pytest.raises(errors.BatchMismatchError) as info:
            td.batch_size = [5]
        assert info.value.key == "a" and "for key 'a':" in str(info.value)
        assert errors.BatchMismatchError(("x",), [3], [4]).key == "x"

    def test_a_scalar_gets_a_hint(self) -> None:
        with pytest.raises(errors.BatchMismatchError) as info:
            TensorDict({"c": 3.0}, [3])
        assert "Python scalar is stored as a 0-dim tensor" in str(info.value)
        assert "set_non_tensor" in str(info.value)
        # a tensor with dims, or a 0-dim batch size, gets no such hint
        assert "scalar" not in str(errors.BatchMismatchError("c", [4], [3]))
        assert "scalar" not in str(errors.BatchMismatchError("c", [], []))


def _locked() -> TensorDict:
    return TensorDict({"a": torch.zeros(4)}, [4], lock=True)


def _plain() -> TensorDict:
    return TensorDict({"a": torch.zeros(4, 3), "b": {"c": torch.zeros(4)}}, [4])


# (operation, the tclass error, the builtins it must also be, words the message must hold)
API_ERRORS: list[
    tuple[str, Callable[[], Any], type[errors.TclassError], tuple[type[BaseException], ...], str]
] = [
    ("missing key", lambda: _plain()["zz"], errors.KeyNotFoundError, (KeyError,), "zz"),
    ("missing nested", lambda: _plain()["b", "zz"], errors.KeyNotFoundError, (KeyError,), "zz"),
    ("pop missing", lambda: _plain().pop("zz"), errors.KeyNotFoundError, (KeyError,), "zz"),
    ("set_ missing", lambda: _plain().set_("zz", 1), errors.KeyNotFoundError, (KeyError,), "zz"),
    (
        "invalid key",
        lambda: _plain().get(("a", 1)),
        errors.InvalidKeyError,
        (TypeError, KeyError),
        "invalid key",
    ),
    (
        "invalid set key",
        lambda: _plain().set(3, torch.zeros(4)),
        errors.InvalidKeyError,
        (TypeError,),
        "3",
    ),
    (
        "rename conflict",
        lambda: _plain().rename_key_("a", "b", safe=True),
        errors.KeyConflictError,
        (KeyError,),
        "'b'",
    ),
    ("not a mapping", lambda: TensorDict(5), errors.EntryTypeError, (TypeError,), "mapping"),
    (
        "locked set",
        lambda: _locked().set("x", torch.zeros(4)),
        errors.LockedError,
        (RuntimeError,),
        "locked",
    ),
    ("locked del", lambda: _locked().del_("a"), errors.LockedError, (RuntimeError,), "locked"),
    (
        "bad batch",
        lambda: TensorDict({}, [-1]),
        errors.BatchSizeError,
        (ValueError, RuntimeError),
        "-1",
    ),
    (
        "leaf mismatch",
        lambda: TensorDict({"x": torch.zeros(3)}, [4]),
        errors.BatchSizeError,
        (ValueError, RuntimeError),
        "'x'",
    ),
    (
        "set_ shape",
        lambda: _plain().set_("a", torch.zeros(5)),
        errors.BatchSizeError,
        (RuntimeError,),
        "'a'",
    ),
    ("too many idx", lambda: _plain()[0, 0], errors.DimError, (IndexError,), "too many"),
    (
        "no batch dims",
        lambda: TensorDict({"a": torch.zeros(1)})[0],
        errors.DimError,
        (IndexError,),
        "no batch dims",
    ),
    (
        "bad device",
        lambda: TensorDict({}, [], device="nope"),
        errors.DeviceError,
        (ValueError, RuntimeError),
        "nope",
    ),
    ("bad to", lambda: _plain().to("nope"), errors.DeviceError, (ValueError,), "nope"),
    (
        "name not hashable",
        lambda: TensorDict({}, [2, 3], names=["x", [1]]),
        errors.DimNameTypeError,
        (TypeError, errors.DimNameError),
        "got [1] in ['x', [1]]",
    ),
    (
        "names not a sequence",
        lambda: TensorDict({}, [2], names=5),
        errors.DimNameTypeError,
        (TypeError,),
        "got int 5",
    ),
    (
        "iterate no batch dims",
        lambda: list(TensorDict({"a": torch.zeros(())}, [])),
        errors.IndexTypeError,
        (TypeError,),
        "keys(), values() or items()",
    ),
    ("negative step", lambda: _plain()[::-1], errors.ArgumentValueError, (ValueError,), "-1"),
    (
        "lazy negative step",
        lambda: tclass.lazy_stack([_plain(), _plain()], 1)[::-2],  # a member dim
        errors.ArgumentValueError,
        (ValueError,),
        "-2",
    ),
    (
        "mmt no size",
        lambda: tclass.MemoryMappedTensor.empty(),
        errors.ArgumentError,
        (TypeError,),
        "missing size",
    ),
    (
        "mmt size twice",
        lambda: tclass.MemoryMappedTensor.empty(2, shape=(3,)),
        errors.ArgumentError,
        (TypeError,),
        "shape=(3,)",
    ),
    (
        "mmt dtype",
        lambda: tclass.MemoryMappedTensor.empty(2, dtype="float"),
        errors.ArgumentError,
        (TypeError,),
        "'float'",
    ),
    (
        "mmt bytes filename",
        lambda: tclass.MemoryMappedTensor.empty(2, filename=b"/tmp/x"),
        errors.ArgumentError,
        (TypeError,),
        "os.fsdecode",
    ),
    (
        "mmt not a tensor",
        lambda: tclass.MemoryMappedTensor.from_tensor(5),  # type: ignore[arg-type]
        errors.EntryTypeError,
        (TypeError,),
        "builtins.int",
    ),
    (
        "mmt sparse",
        lambda: tclass.MemoryMappedTensor.from_tensor(torch.zeros(2).to_sparse()),
        errors.EntryTypeError,
        (TypeError,),
        "sparse_coo",
    ),
    (
        "mmt file mode",
        lambda: tclass.MemoryMappedTensor.from_filename("/tmp/x", torch.float32, (2,), mode="w"),
        errors.ArgumentValueError,
        (ValueError,),
        "'w'",
    ),
    (
        "load mode",
        lambda: TensorDict.load_memmap("/nonexistent", mode="w"),
        errors.ArgumentValueError,
        (ValueError,),
        "'w'",
    ),
    (
        "merge nothing",
        lambda: tclass.merge_tensordicts(),
        errors.StackError,
        (ValueError, RuntimeError),
        "at least one",
    ),
    (
        "pad side",
        lambda: tclass.pad_sequence([_plain()[0], _plain()[1]], padding_side="up"),
        errors.ArgumentValueError,
        (ValueError,),
        "'up'",
    ),
    (
        "unpad no mask",
        lambda: tclass.unpad_sequence(_plain()),
        errors.ArgumentValueError,
        (ValueError,),
        "return_mask=True",
    ),
    (
        "non-tensor index",
        lambda: tclass.NonTensorData("x", batch_size=[2])[5],
        errors.DimError,
        (IndexError,),
        "index 5",
    ),
    (
        "locked non-tensor stack",
        lambda: tclass.NonTensorStack("x", "y").lock_().__setitem__(0, "z"),
        errors.LockedError,
        (RuntimeError,),
        "Cannot modify locked TensorDict (a NonTensorStack): ",
    ),
    (
        "locked non-tensor data",
        lambda: tclass.NonTensorData("x").lock_().__setitem__((), "y"),
        errors.LockedError,
        (RuntimeError,),
        "Cannot modify locked TensorDict (a NonTensorData): ",
    ),
]


@pytest.mark.parametrize(
    "name, op, cls, builtins, words", API_ERRORS, ids=[case[0] for case in API_ERRORS]
)
def test_api_raises_tclass_errors(
    name: str, op: Callable[[], Any], cls: type[errors.TclassError],
    builtins: tuple[type[BaseException], ...], words: str,
) -> None:  # fmt: skip
    with pytest.raises(cls) as info:
        op()
    err = info.value
    assert isinstance(err, errors.TclassError)
    for builtin in builtins:
        assert isinstance(err, builtin)
    assert words in str(err), str(err)
    assert str(err)[:1] not in ("'", '"')  # messages are not quoted like KeyError's


def test_error_messages_do_not_chain_internal_errors() -> None:
    """Errors that translate a torch error hide it (raise ... from None) but keep its text."""
    td = _plain()
    with pytest.raises(errors.BatchSizeError) as info:
        td.set_("a", torch.zeros(5))
    assert info.value.__cause__ is None and info.value.__suppress_context__


def test_every_error_class_is_documented_in_the_module_docstring_style() -> None:
    for name in SUBCLASSES:
        doc = inspect.getdoc(_error_class(name))
        assert doc is not None and doc.endswith(".")


def test_not_a_file_error_is_no_is_a_directory_error(tmp_path: Any) -> None:
    # It is raised for a file where a folder must be, too: an OSError (as the file system
    # would say), a ValueError and a RuntimeError (as the peer raises in these cases),
    # never an IsADirectoryError.
    assert not issubclass(errors.NotAFileError, IsADirectoryError)
    (tmp_path / "file").write_bytes(b"not a folder")
    (tmp_path / "folder.tdz").mkdir()
    for action in (
        lambda: TensorDict(a=torch.zeros(1)).memmap(tmp_path / "file"),  # peer: NotADirectoryError
        lambda: TensorDict.load_memmap(tmp_path / "file"),  # peer: ValueError
        lambda: TensorDict(a=torch.zeros(1)).save(tmp_path / "folder.tdz"),  # peer: ValueError
        lambda: tclass.MemoryMappedTensor.from_tensor(  # peer: RuntimeError
            torch.ones(2), filename=tmp_path / "folder.tdz", existsok=True
        ),
    ):
        with pytest.raises(errors.NotAFileError) as info:
            action()
        assert isinstance(info.value, (OSError, ValueError, RuntimeError))
        assert not isinstance(info.value, IsADirectoryError)


# --- phrases code written for the peer matches on ----------------------------------------
# Messages are tclass's own; where the peer's tests (and code written against it) match an
# error by a short phrase (``pytest.raises(match=...)``, a regex), tclass's message matches.


def _phrase_cases(lib: Any, tmp: Any) -> dict[str, tuple[Callable[[], Any], str]]:
    td_cls = lib.TensorDict

    def plain() -> Any:
        return td_cls({"a": torch.zeros(4, 3), "b": {"c": torch.zeros(4)}}, [4])

    def setitem() -> None:
        plain()[:2] = td_cls({"a": torch.ones(3, 3), "b": {"c": torch.ones(3)}}, [3])

    def memmap_existing() -> None:
        td = plain().memmap_(tmp / "one")
        td_cls(a=td["a"], batch_size=[4]).memmap_(tmp / "two")

    def locked_del() -> None:
        del plain().lock_()["a"]

    def make_memmap() -> None:
        plain().memmap_(tmp / "three").make_memmap(("b", "c"), shape=[4])

    def reserved() -> None:
        lib.tensorclass(type("Bad", (), {"__annotations__": {"reshape": torch.Tensor}}))

    def signature() -> None:
        fields = {"x": torch.Tensor, "y": torch.Tensor, "z": torch.Tensor}
        lib.tensorclass(type("Sig", (), {"__annotations__": fields}))(batch_size=[])

    def pickle_policy() -> None:
        plain().memmap(tmp / "five")
        td_cls.load_memmap(tmp / "five", allow_pickle=1)

    def lazy(*sizes: int, **options: Any) -> Any:
        members = [td_cls(a=torch.zeros(n, 3), batch_size=[n]) for n in sizes]
        return lib.lazy_stack(members, **options)

    def setitem_batch() -> None:
        td = td_cls(a=torch.zeros(3, 4, 5), batch_size=[3, 4])
        td[:, [1, 2]] = td.clone()

    def mixed_records() -> None:
        kinds = [
            lib.tensorclass(type(name, (), {"__annotations__": {"x": torch.Tensor}}))
            for name in ("A", "B")
        ]
        torch.cat([kind(x=torch.zeros(2), batch_size=[2]) for kind in kinds])

    def locked_by(method: str, key: str) -> Callable[[], Any]:
        def write() -> None:
            td = td_cls({"a": torch.zeros(4, 5)}, batch_size=(4, 5))
            td.share_memory_() if method == "share" else td.memmap_(tmp / f"lock_{key}")
            td.set(key, torch.ones(4, 5))

        return write

    def gather(index: torch.Tensor, **options: Any) -> Any:
        return td_cls({"a": torch.zeros(3, 4)}, [3, 4]).gather(0, index, **options)

    def storage_with_file() -> None:
        td = td_cls().memmap_(tmp / "five")
        other = lib.MemoryMappedTensor.ones([5, 6], filename=tmp / "other.memmap")
        td.make_memmap_from_storage("d", other.untyped_storage(), shape=[5, 6], dtype=torch.float32)

    ragged = [td_cls(a=torch.zeros(2)), td_cls(a=torch.zeros(3))]
    three_dims = td_cls(a=torch.zeros(2, 3, 4), batch_size=[2, 3, 4])
    grad = torch.ones(3, requires_grad=True)
    return {
        "setitem": (setitem, "differs from the source batch size|batch dimension mismatch"),
        "setitem_batch": (setitem_batch, "indexed destination TensorDict batch size is"),
        "mixed_records": (mixed_records, "Multiple dispatch failed|no implementation found"),
        "hetero": (lambda: lib.lazy_stack(ragged)["a"], "Failed to stack tensors within"),
        "rename": (lambda: plain().rename_key_("a", "b", safe=True), "already present in"),
        "bool": (lambda: bool(plain()), "Converting a tensordict to boolean value"),
        "where": (
            lambda: torch.where(torch.ones(4, dtype=torch.bool), plain(), plain().exclude("a")),
            "not found and no pad value provided",
        ),
        "memmap_existing": (memmap_existing, "the tensor already has a file associated"),
        "transpose": (lambda: plain().transpose(0, 5), "dim0 and dim1 must be within the range"),
        "locked": (locked_del, "Cannot modify locked TensorDict"),
        "locked_lazy_set": (
            lambda: lazy(2, 2).lock_().set("z", torch.zeros(2, 2)),
            "Cannot modify locked TensorDict",
        ),
        "locked_lazy_del": (
            lambda: lazy(2, 2).lock_().del_("a"),
            "Cannot modify locked TensorDict",
        ),
        "locked_shared_new": (locked_by("share", "b"), "Cannot modify locked TensorDict"),
        "locked_memmap_new": (locked_by("memmap", "b"), "Cannot modify locked TensorDict"),
        "locked_memmap_set": (locked_by("memmap", "a"), "Cannot modify locked TensorDict"),
        "gather_ndim": (lambda: gather(torch.tensor([0, 1]), inplace=True), "index.ndim"),
        "gather_out": (
            lambda: gather(torch.zeros(3, 4, dtype=torch.long), out=plain(), inplace=True),
            "mutually exclusive",
        ),
        "movedim_count": (lambda: three_dims.movedim(0, (0, 1)), "same number of elements"),
        "split_dim": (lambda: td_cls().split(1, 0), "Incompatible dim"),
        "split_type": (lambda: plain().split("1", 0), "must be int or list of ints"),
        "split_empty": (lambda: plain().split([], 0), "Insufficient number of elements"),
        "split_sum": (
            lambda: td_cls({}, [3]).split([1, 1], 0),
            "expects split_size to sum exactly",
        ),
        "in_not_a_key": (lambda: 0 in plain(), "NestedKey"),
        "storage_with_file": (storage_with_file, "Providing a storage with an associated filename"),
        "pad_identity": (
            lambda: lib.pad(lib.NonTensorData("a", batch_size=[2]), [0, 1], inplace=True),
            "cannot preserve the identity",
        ),
        "flatten_keys": (
            lambda: td_cls({"a.b": torch.zeros(1), "a": {"b": torch.zeros(1)}}).flatten_keys("."),
            "Flattening keys in tensordict causes keys",
        ),
        "pad": (lambda: lib.pad(plain(), [-10, 0]), "negative output size"),
        "fliplr": (lambda: plain().fliplr(), "requires at least 2"),
        "rot90": (lambda: plain().rot90(), "requires at least 2"),
        "update_": (lambda: plain().update_(zz=torch.ones(4)), "was not found"),
        "movedim": (lambda: three_dims.movedim((0, 1), (2, 2)), "repeated dim in destination"),
        "no_grad": (lambda: td_cls(a=torch.ones(1)).backward(), "no leaf tensor requiring"),
        "non_scalar": (lambda: td_cls(a=grad * 2).backward(), "only for scalar outputs"),
        "missing_grad": (
            lambda: td_cls(a=grad[:1] * 2).backward(td_cls(b=torch.ones(1))),
            "Missing gradient entry for key 'a'",
        ),
        "compression": (
            lambda: plain().memmap(tmp / "four", compression="deflate"),
            "compression is only supported",
        ),
        "make_memmap": (make_memmap, "already exists within the target tensordict"),
        "strict_shape": (lambda: lazy(3, 4, strict_shape=True), "stacking tensordicts requires"),
        "reserved": (reserved, "Attribute name reshape can't be used with @tensorclass"),
        "signature": (signature, "missing 3 required positional arguments"),
        "lazy_in_place": (lambda: lazy(2, 2, dim=1).flatten(0, 1, inplace=True), "flatten"),
        "pickle_policy": (pickle_policy, "allow_pickle must be a bool or None"),
        "typed_metadata": (
            lambda: lib.MetaData[int]("a string"),
            "Expected data of type int, got str",
        ),
        "isin_key": (
            lambda: lib.utils.isin(plain(), plain(), "zz"),
            "Key 'zz' not found in input or not a tensor",
        ),
        "isin_dim": (
            lambda: lib.utils.isin(plain(), plain(), "a", 5),
            r"The specified dimension '5' is invalid for an input TensorDict with batch size",
        ),
        "isin_ndim": (
            lambda: lib.utils.isin(plain(), td_cls(a=torch.zeros(3)), "a"),
            "The number of dimensions in the batch size of the input and reference must be",
        ),
        "dedup_missing": (
            lambda: lib.utils.remove_duplicates(plain(), "zz"),
            "The key 'zz' does not exist in the TensorDict",
        ),
        "dedup_node": (
            lambda: lib.utils.remove_duplicates(plain(), "b"),
            "The key 'b' does not point to a tensor in the TensorDict",
        ),
        "dedup_dim": (
            lambda: lib.utils.remove_duplicates(plain(), "a", -2),
            r"The specified dimension '-2' is invalid for a TensorDict with batch size",
        ),
        "backward_type": (
            lambda: td_cls(a=grad * 2).backward(torch.ones(1)),
            "gradient must be a TensorDictBase",
        ),
        "schema_storage": (
            lambda: td_cls.from_schema({"a": ([1], torch.float32)}, storage="nope"),
            "Unknown storage backend",
        ),
        "iterate_0d": (lambda: list(td_cls(a=torch.zeros(()))), "iteration over a 0-d tensordict"),
        "lazy_insert_locked": (
            lambda: lazy(2, 2).lock_().insert(0, td_cls(a=torch.zeros(2, 3), batch_size=[2])),
            "Cannot modify locked",
        ),
        "stack_batch_sizes": (
            lambda: torch.stack([plain(), plain()[:2]]),
            "requires them to have congruent batch sizes",
        ),
        "cat_keys": (
            lambda: torch.cat([plain(), plain().exclude("a")]),
            "all tensordicts must have the same keys",
        ),
        "mask_shape": (
            lambda: plain()[torch.tensor([True, False, True])],
            "does not match the shape of the indexed tensor",
        ),
        "nontensor_insert_locked": (
            lambda: lib.NonTensorStack(lib.NonTensorData("x")).lock_().insert(0, "y"),
            "Cannot modify locked",
        ),
    }


PHRASE_CASES = sorted(_phrase_cases(tclass, None))


@pytest.mark.parametrize("case", PHRASE_CASES)
def test_messages_hold_the_phrase_the_peer_is_matched_on(case: str, tmp_path: Any) -> None:
    op, phrase = _phrase_cases(tclass, tmp_path)[case]
    with pytest.raises(errors.TclassError) as info:
        op()
    assert re.search(phrase, str(info.value)), str(info.value)
    peer = pytest.importorskip("tensordict", reason="the peer (tensordict) is not installed")
    (tmp_path / "peer").mkdir()
    peer_op, _ = _phrase_cases(peer, tmp_path / "peer")[case]
    builtins = tuple(
        base
        for base in type(info.value).__mro__
        if base.__module__ == "builtins" and base not in (object, BaseException, Exception)
    )
    with pytest.raises(builtins) as peer_info:  # the peer raises one of tclass's builtins
        peer_op()
    assert re.search(phrase, str(peer_info.value)), str(peer_info.value)
