"""The storage step of a tensorclass's generated ``__init__``, unrolled per class.

``init_record`` (``_builder.py``) checks and stores the fields in a loop over the class's
rules, for any class. A class whose rules are known when it is built (no annotation
naming a class that does not exist yet) gets this step generated from source instead,
one block per field, with the rule's common case inline and everything else through
``FieldRule.store``, as ``init_record`` does it:

- a plain tensor in a tensor field: its device, then its batch dims (a spec'd field also
  its spec, the generated checks of ``RecordSpecs.inline``, on the same shape);
- a value of exactly the class a field of Python values names (``env: str`` given a
  ``str``): kept as it is (``FieldRule.value_class``);
- a collection of exactly the class of a collection field (a nested record): kept as it
  is when it is on the record's device and its batch size starts with the record's.

The constants a block reads (its rule ``R<i>``, the class it tests ``C<i>``) are looked
up once, when the class is built: a call reads nothing from the class.
"""

from __future__ import annotations

import linecache
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch

from tclass._core._batch import ONE_DIM_SIZES, as_batch_size
from tclass._core._device import as_device
from tclass._core._jagged import leaf_shape
from tclass._core._tracing import tracing
from tclass._core._unbatched import UnbatchedTensor
from tclass._engine._nontensor import NonTensorData
from tclass._engine._scope import name_built
from tclass._engine._td import TensorDict
from tclass._tensorclass._fields import may_hold_collections

if TYPE_CHECKING:
    from tclass._core._record_spec import Inline
    from tclass._tensorclass._builder import ClassInfo
    from tclass._tensorclass._fields import FieldRule

__all__ = ["lock_at_init", "unrolled_init"]

# The first lines of every unrolled body: the batch size (`batch_size=[n]`, the common
# spelling, looked up without a call, except while torch.compile traces), the device.
_PREAMBLE = [
    "def init(record, info, values, batch_size, device, names):",
    "    batch = None",
    "    if (",
    "        batch_size.__class__ is list",
    "        and len(batch_size) == 1",
    "        and batch_size[0].__class__ is int",
    "        and not tracing()",
    "    ):",
    "        batch = one_dim_sizes.get(batch_size[0])",
    "    if batch is None:",
    "        batch = as_batch_size(batch_size)",
    "    dev = None if device is None else as_device(device)",
    "    n = len(batch)",
    "    first = batch[0] if n == 1 else -1",
    "    t = {}",
    "    ub = False",
]


def lock_at_init(info: ClassInfo) -> bool:
    """Whether the constructor's storage step locks the record: a frozen class's, unless
    it has a ``__post_init__``, which may set fields (``object.__setattr__(self, ...)``,
    as with a frozen dataclass) and after which the generated ``__init__`` locks it."""
    return bool(info.options["frozen"]) and not hasattr(info.cls, "__post_init__")


def unrolled_init(info: ClassInfo) -> Callable[..., None] | None:
    """``init_record`` unrolled for the class of ``info`` (see the module docstring);
    None when its rules are not resolved yet, when it defines ``__setattr__``, or when
    it has specs that are not ones ``RecordSpecs.inline`` generates checks for."""
    rules, specs = info._rules, info._specs
    inline = specs.inline if specs is not None else None
    if rules is None or info.setattr_hook or (specs is not None and inline is None):
        return None
    namespace: dict[str, Any] = {
        "one_dim_sizes": ONE_DIM_SIZES,
        "tracing": tracing,
        "as_batch_size": as_batch_size,
        "as_device": as_device,
        "leaf_shape": leaf_shape,
        "_Tensor": torch.Tensor,
        "_Unbatched": UnbatchedTensor,
        "_value": NonTensorData._make,
        "_new": TensorDict._new_unchecked,
        "_name": name_built,
        "_specs": specs,
        **(inline.namespace if inline is not None else {}),
    }
    lines = [*_PREAMBLE, *("    " + line for line in (inline.preamble if inline else ()))]
    for index, name in enumerate(info.field_names):
        namespace[f"R{index}"] = rules[name]
        lines += _field_lines(index, name, rules[name], inline, namespace)
    if inline is not None:
        lines += ["    if bad:", "        _specs.check(t, n)"]  # shapes, then values
        if specs is not None and specs.constrained:  # one pass over each bounded field
            lines += ["    else:", "        _specs.check_values(t)"]
    lines += [
        "    td = _new(t, batch, dev)",
        "    if ub:",
        "        td._mark_unbatched()",
        *(
            ["    _name(td, names)"]
            if may_hold_collections(rules.values())
            else ["    if names is not None:", "        _name(td, names)"]
        ),
        "    record._tensordict = td",
        *(["    td.lock_()"] if lock_at_init(info) else []),
    ]
    source = "\n".join(lines) + "\n"
    filename = f"<tclass record init {info.cls.__module__}.{info.cls.__qualname__}>"
    exec(compile(source, filename, "exec"), namespace)  # noqa: S102
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    init: Callable[..., None] = namespace["init"]
    return init


def _field_lines(
    index: int, name: str, rule: FieldRule, inline: Inline | None, namespace: dict[str, Any]
) -> list[str]:
    """The block storing field ``name`` (``values[index]``): the rule's common case, if
    it has one, then ``FieldRule.store``."""
    spec_lines = inline.fields.get(name) if inline is not None else None
    lines = [f"    # {name}: {' '.join(rule.text.split())}", f"    v = values[{index}]"]
    kept = f"        t[{name!r}] = v"
    if rule.tensor:  # a plain tensor: its batch dims read on the shape a spec check reads
        lines += [
            "    if v.__class__ is _Tensor:",
            "        if dev is not None and v.device != dev:",
            "            v = v.to(dev)",
        ]
        if spec_lines is not None:  # (one batch dim: its size compared, no slice made)
            lines += [
                "        s = leaf_shape(v) if v.is_nested else v.shape",
                "        if (not s or s[0] != first) if n == 1 else n and s[:n] != batch:",
                f"            R{index}._check_batch(v, batch)",
                *("        " + line for line in spec_lines),
            ]
        else:
            lines += [
                "        if n:",
                "            s = leaf_shape(v) if v.is_nested else v.shape",
                "            if (not s or s[0] != first) if n == 1 else s[:n] != batch:",
                f"                R{index}._check_batch(v, batch)",
            ]
        lines.append(kept)
    elif rule.value_class is not None and rule.values is None and spec_lines is None:
        namespace[f"C{index}"] = rule.value_class
        lines += [
            f"    if v.__class__ is C{index}:  # a {rule.value_class.__name__}, kept as it is",
            f"        t[{name!r}] = _value(v, batch, dev)",
        ]
    elif rule.convert_to is not None and rule.cast is None and spec_lines is None:
        namespace[f"C{index}"] = rule.convert_to
        lines += [
            f"    if v.__class__ is C{index} and (dev is None or v.device == dev):",
            "        s = v.batch_size",  # kept unless the batch differs (the rule says how)
            "        if n and s != batch and s[:n] != batch:",
            f"            v = R{index}.store(v, batch, dev)",
            kept,
        ]
    else:
        return lines + [f"    {line}" for line in _stored(index, name, spec_lines)]
    return lines + ["    else:", *(f"        {line}" for line in _stored(index, name, spec_lines))]


def _stored(index: int, name: str, spec_lines: list[str] | None) -> list[str]:
    """The general case: the value as ``FieldRule.store`` keeps it (None: not set)."""
    return [
        f"v = R{index}.store(v, batch, dev)",
        "if v is not None:",
        f"    t[{name!r}] = v",
        "    ub = ub or v.__class__ is _Unbatched",
        *(["    bad = True"] if spec_lines is not None else []),  # the matcher judges it
    ]
