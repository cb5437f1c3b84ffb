"""Recreate the golden folders in ``tests/data/golden/``: memory-mapped TensorDicts written
by hand in the on-disk format of the peer library ``tensordict`` 0.15.3.

Run ``python tests/data/make_golden.py`` from anywhere. It needs only numpy, and uses
neither tclass nor tensordict: the folders are written from the format description
(``peer-format.md``: meta.json schemas §3, dtype names §4, key encoding §5, raw
little-endian ``.memmap`` files §6, the version 0 layout §13), so that tclass is tested
against the format rather than against its own writer.

Conventions reproduced from the peer:
* meta.json is ``json.dumps(meta)`` (``", "`` / ``": "`` separators, ASCII only), except
  NonTensorStack nodes, which use compact separators;
* a node's entries come first in insertion order, then ``shape``, ``device``, ``_type``
  and, from version 1 on, ``_format_version`` and ``_class``;
* a 0-element leaf has no file;
* tensorclass classes are named by the module the tests import them from
  (``golden_classes``: ``tests/helpers`` is on pytest's ``pythonpath``).
"""

from __future__ import annotations

import json
import os
import struct
from typing import Any

import numpy as np

GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden")
CLASS_MODULE = "golden_classes"

TD_TYPE = "<class 'tensordict._td.TensorDict'>"
NON_TENSOR_DATA_TYPE = "<class 'tensordict.tensorclass.NonTensorData'>"
NON_TENSOR_STACK_TYPE = "<class 'tensordict.tensorclass.NonTensorStack'>"
LAZY_STACK_TYPE = "<class 'tensordict._lazy.LazyStackedTensorDict'>"

# torch dtype name -> explicit little-endian numpy dtype ("bfloat16" is handled apart).
NUMPY_DTYPES = {
    "bool": "|b1", "uint8": "|u1", "int8": "|i1",
    "int16": "<i2", "int32": "<i4", "int64": "<i8",
    "uint16": "<u2", "uint32": "<u4", "uint64": "<u8",
    "float16": "<f2", "float32": "<f4", "float64": "<f8",
    "complex64": "<c8", "complex128": "<c16",
}  # fmt: skip


# --- low-level writers -------------------------------------------------------------------


def make_dir(*parts: str) -> str:
    path = os.path.join(*parts)
    os.makedirs(path, exist_ok=True)
    return path


def write_meta(node_dir: str, meta: dict[str, Any], compact: bool = False) -> None:
    separators = (",", ":") if compact else None  # None: json's default ", " / ": "
    with open(os.path.join(node_dir, "meta.json"), "w", encoding="utf-8") as file:
        file.write(json.dumps(meta, separators=separators))


def file_name(key: str) -> str:
    """The peer's file name for a key (§5), enough for the keys used here."""
    return "".join(f"%{ord(char):02X}" if char in '/<>:"|?* \\%' else char for char in key)


def bfloat16_bytes(values: list[float]) -> bytes:
    # bfloat16 is the top half of a float32: bytes 2-3 of its little-endian encoding.
    return b"".join(struct.pack("<f", value)[2:] for value in values)


def leaf(
    node_dir: str,
    key: str,
    dtype: str,
    shape: list[int],
    values: list[Any],
    device: str = "cpu",
    pad_to: int = 0,
) -> dict[str, Any]:
    """Write ``values`` (flat, row-major) as ``<key>.memmap``; return the meta.json entry.
    ``pad_to``: append junk bytes up to that file size, as older writers rounded files up
    to a page."""
    if dtype == "bfloat16":
        data = bfloat16_bytes(values)
    else:
        data = np.asarray(values, dtype=NUMPY_DTYPES[dtype]).tobytes(order="C")
    data += b"\xa5" * max(0, pad_to - len(data))
    if len(values) > 0:  # a 0-element leaf is rebuilt from its metadata: no file (§2)
        with open(os.path.join(node_dir, file_name(key) + ".memmap"), "wb") as file:
            file.write(data)
    return {"device": device, "shape": shape, "dtype": f"torch.{dtype}", "is_nested": False}


# --- node writers ------------------------------------------------------------------------


def td_node(
    node_dir: str, entries: dict[str, Any], batch: list[int], version: int = 1, device: str = "cpu"
) -> None:
    """A TensorDict node (§3.1); version 0 has no ``_format_version`` / ``_class`` (§13)."""
    meta = dict(entries)
    meta.update({"shape": batch, "device": device, "_type": TD_TYPE})
    if version >= 1:
        meta.update({"_format_version": 1, "_class": "tensordict:TensorDict"})
    write_meta(node_dir, meta)


def non_tensor_data(parent_dir: str, key: str, value: Any) -> dict[str, Any]:
    """A NonTensorData sub-node (§3.5): no batch size, no ``_tensordict`` folder."""
    meta = {"_type": NON_TENSOR_DATA_TYPE, "data": value, "_metadata": None, "_is_non_tensor": True}
    write_meta(make_dir(parent_dir, file_name(key)), meta)
    return {"type": "NonTensorData"}


def non_tensor_stack(parent_dir: str, key: str, values: list[Any]) -> dict[str, Any]:
    """A NonTensorStack sub-node (§3.6): values inline, compact JSON, no member folders."""
    meta = {
        "_type": NON_TENSOR_STACK_TYPE, "_format_version": 1, "_class": "tensordict:NonTensorStack",
        "stack_dim": 0, "device": None, "data": values,
    }  # fmt: skip
    write_meta(make_dir(parent_dir, file_name(key)), meta, compact=True)
    return {"type": "NonTensorStack"}


def tensorclass_node(node_dir: str, class_name: str) -> str:
    """A tensorclass node (§3.2); returns its ``_tensordict`` folder, for the fields."""
    write_meta(node_dir, {"_type": f"<class '{CLASS_MODULE}.{class_name}'>"})
    return make_dir(node_dir, "_tensordict")


# --- the golden folders ------------------------------------------------------------------


def v1_nested_td(root: str) -> None:
    nxt = make_dir(root, "next")
    td_node(nxt, {"reward": leaf(nxt, "reward", "int64", [3], [1, 2, 3])}, [3])
    entries = {
        "obs": leaf(root, "obs", "float32", [3, 2], list(range(6))),
        "done": leaf(root, "done", "bool", [3], [True, False, True]),
        "next": {"type": "TensorDict"},
        "label": non_tensor_data(root, "label", "pong"),
        "a/b": leaf(root, "a/b", "float64", [3], [0.5, 1.5, 2.5]),
        "empty": leaf(root, "empty", "float32", [3, 0], []),
    }
    td_node(root, entries, [3])


def v0_nested_td(root: str) -> None:
    sub = make_dir(root, "sub")
    td_node(sub, {"y": leaf(sub, "y", "float16", [2], [1.0, -2.0])}, [2], version=0)
    entries = {"x": leaf(root, "x", "int32", [2, 2], [1, 2, 3, 4]), "sub": {"type": "TensorDict"}}
    td_node(root, entries, [2], version=0)


def v0_legacy_padded(root: str) -> None:
    """Like the peer's own test artifact (``test/artifacts/mmap_example``): version 0,
    data files padded to a 4096-byte page, devices written as the string ``"None"``."""
    nested = make_dir(root, "nested")
    entries = {
        "int64": leaf(nested, "int64", "int64", [2, 1], [3, -4], device="None", pad_to=4096),
        "string": non_tensor_data(nested, "string", "a string!"),
        "bfloat16": leaf(
            nested, "bfloat16", "bfloat16", [2, 1], [1.5, -2.0], device="None", pad_to=4096
        ),
        "empty": leaf(nested, "empty", "float32", [2, 1, 0], [], device="None"),
    }
    td_node(nested, entries, [2, 1], version=0, device="None")
    entries = {
        "nested": {"type": "TensorDict"},
        "x": leaf(root, "x", "float32", [2, 1, 3], [0, 1, 2, 3, 4, 5], device="None", pad_to=4096),
        "exact": leaf(root, "exact", "uint8", [2, 1], [7, 8], device="None"),
    }
    td_node(root, entries, [2, 1], version=0, device="None")


def v1_tensorclass(root: str) -> None:
    fields = tensorclass_node(root, "Step")
    inner_fields = tensorclass_node(make_dir(fields, "inner"), "Inner")
    td_node(inner_fields, {"z": leaf(inner_fields, "z", "int64", [2], [7, 8])}, [2])
    entries = {
        "obs": leaf(fields, "obs", "float32", [2, 3], list(range(6))),
        "name": non_tensor_data(fields, "name", "walker"),
        "inner": {"type": "Inner"},
    }
    td_node(fields, entries, [2])


def v1_lazy_stack(root: str) -> None:
    first = make_dir(root, "0")
    td_node(first, {"a": leaf(first, "a", "float32", [2], [1, 2])}, [])
    second = make_dir(root, "1")
    entries = {
        "a": leaf(second, "a", "float32", [3], [3, 4, 5]),
        "b": leaf(second, "b", "int64", [], [9]),
    }
    td_node(second, entries, [])
    # No member count: the peer counts 0/, 1/, ... up to the first gap (§3.7).
    meta = {
        "_type": LAZY_STACK_TYPE,
        "_format_version": 1,
        "_class": "tensordict:LazyStackedTensorDict",
        "stack_dim": 0,
        "stack_dim_name": None,
    }
    write_meta(root, meta)


def v1_nontensor_stack(root: str) -> None:
    td_node(root, {"names": non_tensor_stack(root, "names", ["x", "y"])}, [2])


def v1_dtypes(root: str) -> None:
    entries = {}
    for dtype in [*NUMPY_DTYPES, "bfloat16"]:
        values: list[Any] = [1 + 2j, 0] if dtype.startswith("complex") else [1, 0]
        entries[dtype] = leaf(root, dtype, dtype, [2], values)
    td_node(root, entries, [2])


def nested_leaf(node_dir: str, key: str, dtype: str, parts: list[np.ndarray]) -> dict[str, Any]:
    """A nested (strided) leaf (§3.3): the parts' elements back to back in
    ``<key>.memmap``, their shapes as an int64 table ``[N, ndim - 1]`` in
    ``<key>.shape.memmap``; the entry's shape is the table's."""
    sizes = np.asarray([part.shape for part in parts], dtype="<i8")
    data = b"".join(
        np.asarray(part, dtype=NUMPY_DTYPES[dtype]).tobytes(order="C") for part in parts
    )
    for suffix, raw in ((".memmap", data), (".shape.memmap", sizes.tobytes(order="C"))):
        if raw:  # a 0-element file is not written (§2)
            with open(os.path.join(node_dir, file_name(key) + suffix), "wb") as file:
                file.write(raw)
    return {
        "device": "cpu",
        "shape": list(sizes.shape),
        "dtype": f"torch.{dtype}",
        "is_nested": True,
    }


def v1_nested_tensor(root: str) -> None:
    """§3.3's example ([arange(3), arange(5)]), and 2-d parts of one batch dim [2, 3]."""
    entries = {
        "nt": nested_leaf(root, "nt", "int64", [np.arange(3), np.arange(5)]),
        "img": nested_leaf(
            root, "img", "float32", [np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(4, 3)]
        ),
        "x": leaf(root, "x", "float32", [2], [1.0, 2.0]),
    }
    td_node(root, entries, [2])


FOLDERS = {
    "v1_nested_td": v1_nested_td,
    "v0_nested_td": v0_nested_td,
    "v0_legacy_padded": v0_legacy_padded,
    "v1_tensorclass": v1_tensorclass,
    "v1_lazy_stack": v1_lazy_stack,
    "v1_nontensor_stack": v1_nontensor_stack,
    "v1_dtypes": v1_dtypes,
    "v1_nested_tensor": v1_nested_tensor,
}


def remove_tree(path: str) -> None:
    # Start from empty folders so no stale file survives a change here (the peer's W6).
    for dirpath, dirnames, filenames in os.walk(path, topdown=False):
        for name in filenames:
            os.remove(os.path.join(dirpath, name))
        for name in dirnames:
            os.rmdir(os.path.join(dirpath, name))
    if os.path.isdir(path):
        os.rmdir(path)


def main() -> None:
    for name, write in FOLDERS.items():
        root = os.path.join(GOLDEN, name)
        remove_tree(root)
        write(make_dir(root))
        print("wrote", os.path.relpath(root))


if __name__ == "__main__":
    main()
