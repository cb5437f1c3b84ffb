"""A misspelt keyword names the public class the user called, not an internal mixin
(``ApplyOps.clone()`` before), and the renamed functions still pickle by reference."""

from __future__ import annotations

import pickle

import pytest
import torch

import tclass


@tclass.tensorclass
class _Rec:
    a: torch.Tensor


def _td() -> tclass.TensorDict:
    return tclass.TensorDict(a=torch.zeros(3), batch_size=[3])


@pytest.mark.parametrize(
    ("call", "named"),
    [
        (lambda: _td().clone(recurse=True, foo=1), "TensorDictBase.clone()"),
        (lambda: _td().to_dict(retain_nonee=True), "TensorDictBase.to_dict()"),
        (lambda: _td().exclude("a", inplac=True), "TensorDict.exclude()"),
        (
            lambda: tclass.lazy_stack([_td(), _td()]).clone(recurs=False),
            "LazyStackedTensorDict.clone()",
        ),
        (lambda: _Rec(a=torch.zeros(3), batch_size=[3]).clone(recurs=True), "TensorClass.clone()"),
        (
            lambda: _Rec(a=torch.zeros(3), batch_size=[3]).to_dict(retain_nonee=True),
            "TensorClass.to_dict()",
        ),
        (
            lambda: tclass.MemoryMappedTensor.from_tensor(torch.zeros(2), filenam=None),
            "MemoryMappedTensor.from_tensor()",
        ),
        # the wrapped TensorDict's method does the saving: the params' name all the same
        (lambda: tclass.TensorDictParams(_td()).memmap_(bogus=1), "TensorDictParams.memmap_()"),
        (lambda: tclass.TensorDictParams(_td()).memmap(bogus=1), "TensorDictParams.memmap()"),
        (
            lambda: tclass.TensorDictParams(_td()).memmap_like(bogus=1),
            "TensorDictParams.memmap_like()",
        ),
    ],
)
def test_unexpected_keyword_names_the_public_class(call, named) -> None:
    with pytest.raises(TypeError, match=r"unexpected keyword argument") as info:
        call()
    message = str(info.value)
    assert message.startswith(named), message
    assert "Ops." not in message


def test_renamed_methods_pickle_by_reference() -> None:
    for function in (tclass.TensorDict.clone, tclass.TensorDict.exclude, tclass.TensorClass.clone):
        assert pickle.loads(pickle.dumps(function)) is function


def test_torch_methods_keep_their_names() -> None:
    assert tclass.MemoryMappedTensor.clone.__qualname__ == torch.Tensor.clone.__qualname__
    assert torch.Tensor.add.__qualname__.startswith("TensorBase.")


@pytest.mark.parametrize(
    ("call", "named"),
    [
        (lambda r, path: r.memmap_(path, prefx=1), "memmap_"),
        (lambda r, path: r.memmap(path, num_thread=2), "memmap"),
        (lambda r, path: r.memmap_like(path, exists_ok=True), "memmap_like"),
        (lambda r, path: r.save(path, prefx=1), "save"),
        (lambda r, path: type(r).load_memmap(path, sub_path="a"), "load_memmap"),
        (lambda r, path: type(r).load(path, sub_path="a"), "load"),
        (lambda r, path: type(r).from_tuple((torch.zeros(3),), batch_sze=[3]), "from_tuple"),
    ],
)
@pytest.mark.parametrize("kind", ["record", "td"])
def test_forwarded_options_name_the_callers_class(call, named, kind, tmp_path) -> None:
    # they said "saved_copy() / _load() / from_tuple() got an unexpected keyword argument"
    source = _Rec(a=torch.zeros(3), batch_size=[3]) if kind == "record" else _td()
    with pytest.raises(TypeError, match=r"unexpected keyword argument") as info:
        call(source, tmp_path / "m")
    cls = "_Rec" if kind == "record" else "TensorDict"
    assert str(info.value).startswith(f"{cls}.{named}() got an unexpected keyword argument")
    assert isinstance(info.value, tclass.errors.TclassError)
    assert not (tmp_path / "m").exists()
