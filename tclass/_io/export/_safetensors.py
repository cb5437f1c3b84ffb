"""Safetensors files in the peer's layout (``to_safetensors`` / ``from_safetensors``).

Each tensor is stored under its nested key joined with ``"."`` (the names of a model's
``state_dict``); the structure (batch size and dim names of each level, the class of each
record, the stack dim of each lazy stack, JSON Python values, unbatched tensors) is one
JSON document in the file's ``__metadata__`` under ``"tensordict"`` (version 1), so that
the peer reads what tclass writes and the other way round. A file without that document
(a model checkpoint) loads as nested TensorDicts with an empty batch size, as
``from_module`` lays them out. Loading runs no code: the metadata is JSON, a record's
class is found among the classes defined in this process, never imported.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from typing import Any

import torch

from tclass._core._device import DeviceLike, as_device
from tclass._core._records import is_record, storage_of
from tclass._core._registry import resolve_class
from tclass._core._unbatched import UnbatchedTensor
from tclass._engine._lazy._stack import LazyStackedTensorDict
from tclass._engine._nontensor import NonTensorData
from tclass._engine._nontensor_stack import NonTensorStack
from tclass._engine._td import TensorDict
from tclass._io._optional import need
from tclass.errors import (
    FileFormatError,
    KeyConflictError,
    NotSerializableError,
)

__all__ = ["from_safetensors", "to_safetensors"]

PathLike = str | os.PathLike[str]
_KEY = "tensordict"  # the peer's key in __metadata__
_VERSION = 1


def _is_json(value: Any) -> bool:
    """Whether JSON gives ``value`` back with the same types."""
    kind = type(value)
    if kind in (str, int, float, bool, type(None)):
        return True
    if kind is list:
        return all(map(_is_json, value))
    if kind is dict:
        return all(type(key) is str and _is_json(item) for key, item in value.items())
    return False


def _encode(node: Any, path: tuple[str, ...], tensors: dict[str, torch.Tensor]) -> dict[str, Any]:
    """The JSON description of ``node``; its tensors are added to ``tensors``."""
    inner = storage_of(node)
    names = list(inner.names)
    level: dict[str, Any] = {
        "batch_size": list(node.batch_size),
        "names": names if any(name is not None for name in names) else None,
    }
    if isinstance(inner, LazyStackedTensorDict):
        level["stack_dim"] = inner.stack_dim
    if is_record(node):
        level["class"] = str(type(node))
    entries: dict[str, Any] = {}
    level["keys"] = entries
    for key, value in inner.items():
        entries[key] = _entry(value, (*path, key), tensors)
    return level


def _entry(value: Any, path: tuple[str, ...], tensors: dict[str, torch.Tensor]) -> Any:
    if isinstance(value, NonTensorStack):
        msg = (
            f"cannot save the entry {path} as safetensors: it holds one Python value per "
            "element (a NonTensorStack); only one JSON value per entry is supported"
        )
        raise NotSerializableError(msg)
    if isinstance(value, NonTensorData):
        if not _is_json(value.data):
            msg = (
                f"cannot save the entry {path} as safetensors: a "
                f"{type(value.data).__name__} is not a JSON value (str, int, float, bool, "
                "None, list or dict)"
            )
            raise NotSerializableError(msg)
        return {"non_tensor": value.data}
    if not isinstance(value, torch.Tensor):
        return {"td": _encode(value, path, tensors)}
    unbatched = type(value) is UnbatchedTensor
    tensor = value.as_tensor() if unbatched else value  # type: ignore[attr-defined]
    if tensor.is_nested or tensor.layout != torch.strided:
        msg = (
            f"cannot save the tensor {path} as safetensors: only dense tensors are "
            f"supported, got layout {tensor.layout}{' (nested)' if tensor.is_nested else ''}"
        )
        raise NotSerializableError(msg)
    name = ".".join(path)
    if name in tensors:
        msg = f"two keys have the safetensors name {name!r}; rename one of them"
        raise KeyConflictError(msg)
    tensors[name] = tensor.detach().contiguous()
    return {"tensor": name, "unbatched": True} if unbatched else {"tensor": name}


def _separate(tensors: dict[str, torch.Tensor]) -> None:
    """Copies the tensors that overlap another one in memory (safetensors refuses them)."""
    by_storage: dict[tuple[torch.device, int], list[str]] = defaultdict(list)
    for name, tensor in tensors.items():
        if tensor.numel() and tensor.device.type != "meta":
            by_storage[tensor.device, tensor.untyped_storage().data_ptr()].append(name)
    for names in by_storage.values():
        names.sort(key=lambda name: tensors[name].data_ptr())
        end = 0
        for name in names:
            tensor = tensors[name]
            if tensor.data_ptr() < end:
                tensors[name] = tensor.clone()
            else:
                end = tensor.data_ptr() + tensor.numel() * tensor.element_size()


def to_safetensors(data: Any, path: PathLike) -> None:
    """Saves a collection (a record included) to a safetensors file readable by the peer's
    ``from_safetensors`` and by any safetensors reader (tensors under their ``"."``-joined
    keys). Tensors sharing memory are saved as separate copies; tensors on another device
    go through the CPU. Needs ``pip install 'tclass[formats]'`` (safetensors).

    Raises:
        NotSerializableError: (a ``TypeError``) a nested or sparse tensor, a Python value
            that is not JSON, a ``NonTensorStack``, or a bare ``NonTensorData``.
        HeterogeneousEntryError: a lazy stack whose members' shapes differ.
        KeyConflictError: (a ``KeyError``) two keys join to the same name (``"a.b"`` and
            ``("a", "b")``).
    """
    torch_api = need("safetensors.torch", "formats", "to_safetensors")
    if isinstance(data, (NonTensorData, NonTensorStack)):
        msg = "cannot save a Python value alone as safetensors: put it in a TensorDict first"
        raise NotSerializableError(msg)
    tensors: dict[str, torch.Tensor] = {}
    root = _encode(data, (), tensors)
    _separate(tensors)
    tensors = {name: tensor.cpu() for name, tensor in tensors.items()}
    metadata = json.dumps({"version": _VERSION, "root": root})
    torch_api.save_file(tensors, os.fspath(path), metadata={_KEY: metadata})


def from_safetensors(path: PathLike, *, device: DeviceLike = None) -> Any:
    """Loads a safetensors file: one written by ``to_safetensors`` (tclass's or the peer's)
    with its structure (records, lazy stacks, names, Python values); any other file (a
    model checkpoint) as nested TensorDicts with an empty batch size, each name split on
    ``"."``, ready for ``to_module``. A record's class must be defined in this process
    (tclass never imports a module named in a file).

    Args:
        path: the file.
        device: where the tensors load (and the result's device); None: the CPU, and no
            device.

    Raises:
        MissingDependencyError: safetensors is not installed.
        FileFormatError: the metadata has another version, or the file holds tensors
            its metadata does not name.
        ClassResolutionError: a saved record's class is not defined in this process.
    """
    safetensors = need("safetensors", "formats", "from_safetensors")
    target = None if device is None else as_device(device)
    where = os.fspath(path)
    with safetensors.safe_open(where, framework="pt", device=str(target or "cpu")) as file:
        text = (file.metadata() or {}).get(_KEY)
        if text is None:
            plain = TensorDict(device=target)
            for name in file.keys():
                plain.set(tuple(name.split(".")), file.get_tensor(name))
            return plain
        document = json.loads(text)
        if not isinstance(document, dict) or document.get("version") != _VERSION:
            version = document.get("version") if isinstance(document, dict) else None
            msg = (
                f"cannot load {where}: its tensordict metadata has version {version!r}, and "
                f"this version of tclass reads version {_VERSION}"
            )
            raise FileFormatError(msg)
        used: set[str] = set()
        out = _decode(document["root"], file, target, where, used)
        unnamed = set(file.keys()) - used
        if unnamed:
            msg = f"the tensors {sorted(unnamed)} of {where} are not in its tensordict metadata"
            raise FileFormatError(msg)
        return out


def _decode(level: dict[str, Any], file: Any, device: Any, where: str, used: set[str]) -> Any:
    node = TensorDict(batch_size=level["batch_size"], device=device)
    for key, entry in level["keys"].items():
        if "tensor" in entry:
            used.add(entry["tensor"])
            tensor = file.get_tensor(entry["tensor"])
            node.set(key, UnbatchedTensor(tensor) if entry.get("unbatched") else tensor)
        elif "non_tensor" in entry:
            node.set_non_tensor(key, entry["non_tensor"])
        else:
            node.set(key, _decode(entry["td"], file, device, where, used))
    names = level.get("names")
    result: Any = node
    stack_dim = level.get("stack_dim")
    if stack_dim is not None and node.batch_size[stack_dim] > 0:
        result = LazyStackedTensorDict(*node.unbind(stack_dim), stack_dim=stack_dim)
    if names is not None:
        result.names = names
    saved_class = level.get("class")
    if saved_class is not None:
        name = saved_class.removeprefix("<class '").removesuffix("'>")
        return resolve_class(name, (), where).from_tensordict(result)  # type: ignore[attr-defined]
    return result
