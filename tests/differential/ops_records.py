"""Family ``records``: records of every class option (``libs.py``: ``Rec`` / ``Inner``,
``Auto`` with ``autocast``, ``NoCast`` with ``nocast``, ``TOnly`` with ``tensor_only``,
``Frozen`` with ``frozen``), built every way (constructor, ``from_tensordict``,
``from_dict``, ``torch.stack`` / ``lazy_stack``, indexing), carried through I/O (memory
maps, ``save`` / ``load``, ``consolidate``) and conversions (``to(dtype)``, ``clone``,
``update``, ``apply``, ``select`` / ``exclude``, dicts, lists, ``unbind`` / ``split``,
state dicts), then read field by field.

The family has its own world (``records_world``): a record, and sometimes its memory-
mapped copy or a reload of it, or the record in an HDF5 file (``world.h5_record_lines``).
Its ops also run on the other families' worlds.
"""

from __future__ import annotations

import keyword

from .chooser import Chooser
from .engine import Step
from .info import Info
from .ops_common import BAD, dim, index, keys_arg, seed, step
from .world import (
    DTYPES,
    STRINGS,
    Facts,
    _batch,
    _features,
    derived,
    h5_derived,
    h5_fits,
    h5_record_lines,
    record_src,
    tensor_src,
)

# The fields of each record class and what they hold: "tensor", "opt" (an optional
# tensor), "int", "str", "list", "any", "inner" (an ``Inner`` record), "optint".
FIELDS: dict[str, tuple[tuple[str, str], ...]] = {
    "Rec": (("x", "tensor"), ("label", "str"), ("inner", "inner"), ("opt", "opt")),
    "Inner": (("y", "tensor"), ("z", "opt")),
    "Auto": (("x", "tensor"), ("n", "int"), ("s", "str"), ("lst", "list"), ("opt", "opt")),
    "NoCast": (("x", "tensor"), ("n", "int"), ("v", "any")),
    "TOnly": (("x", "tensor"), ("y", "opt")),
    "Frozen": (("x", "tensor"), ("s", "str"), ("n", "optint")),
}
CLASSES = ("Auto", "Auto", "NoCast", "TOnly", "Frozen", "Rec", "Inner")
LISTS = ("[1, 2]", "[]", '["a", "b"]', "[[1], [2]]", "[0.5]")
FAMILY = "records"


def _value(c: Chooser, kind: str, cls: str, batch: tuple[int, ...]) -> str:
    """Source of a value for a field of ``kind`` under a record of batch size ``batch``."""
    if kind == "tensor" or (kind == "opt" and c.chance(60)):
        shape = batch + _features(c)
        if cls == "Auto" and 0 not in shape and c.chance(20):  # autocast: a list cast
            return f"{tensor_src(shape, 'float32', seed(c))}.tolist()"
        return tensor_src(shape, c.choice(DTYPES), seed(c))
    if kind == "int" or (kind == "optint" and c.chance(60)):
        return str(c.integer(-2, 9))
    if kind == "str":
        return c.choice(STRINGS)
    if kind == "list":
        return c.choice(LISTS)
    if kind == "any":
        return c.choice(("None", "3", '"a"', "[1, 2]", tensor_src(batch, "int64", seed(c))))
    if kind == "inner":
        return _ctor(c, "Inner", batch)
    return "None"


def _fields(c: Chooser, cls: str, batch: tuple[int, ...]) -> list[tuple[str, str]]:
    """(field, source) for the fields given: optional ones are sometimes left out."""
    chosen = []
    for name, kind in FIELDS[cls]:
        if kind in ("opt", "optint") and c.chance(30):
            continue
        chosen.append((name, _value(c, kind, cls, batch)))
    return chosen


def _ctor(c: Chooser, cls: str, batch: tuple[int, ...]) -> str:
    args = ", ".join(f"{name}={src}" for name, src in _fields(c, cls, batch))
    return f"{cls}({args}, batch_size={list(batch)})"


def _dict(c: Chooser, cls: str, batch: tuple[int, ...]) -> str:
    items = ", ".join(f"{name!r}: {src}" for name, src in _fields(c, cls, batch))
    return "{" + items + "}"


def record_of(c: Chooser, cls: str, batch: tuple[int, ...]) -> str:
    """Source of a record of ``cls``, built one of the ways users build them."""
    if cls == "Rec" and c.chance(50):
        return record_src(c, batch)
    pick = c.integer(0, 9)
    if pick < 4:
        return _ctor(c, cls, batch)
    if pick < 6:
        body = _dict(c, cls, batch)
        return f"{cls}.from_tensordict(L.TensorDict({body}, batch_size={list(batch)}))"
    if pick < 8:
        sizes = c.choice((f", batch_size={list(batch)}", f", batch_dims={len(batch)}", ""))
        return f"{cls}.from_dict({_dict(c, cls, batch)}{sizes})"
    if pick == 8 and batch:
        src, beyond = index(c, batch)  # (an index beyond the batch dims: index's family)
        return _ctor(c, cls, batch) if beyond else f"{_ctor(c, cls, batch)}[{src}]"
    members = [_ctor(c, cls, batch) for _ in range(c.choice((1, 2, 2, 3)))]
    stack = c.choice(("torch.stack", "L.lazy_stack"))
    return f"{stack}([{', '.join(members)}], {c.integer(0, len(batch))})"


def records_world(c: Chooser) -> tuple[list[str], Facts]:
    """The lines that build ``x``, a record, and what is known of it."""
    cls = c.choice(CLASSES)
    batch = _batch(c, c.choice((0, 1, 1, 2, 2, 3)))
    facts = Facts("record", python_values=True)
    src = record_of(c, cls, batch)
    more = derived(c, facts, batch)
    lines = [f"x = {src}", *more]
    pick = c.integer(0, 9)
    folder = 'D + "/w"'
    # a record in an HDF5 file (then the derived world made from the file): one built
    # as a record of ``cls`` (not a stack), whose values the peer can write
    if pick == 4 and src.startswith(cls) and h5_fits(src, more):
        lines = [lines[0], *h5_record_lines(c, cls, facts), *[h5_derived(c, m) for m in more]]
    elif pick < 2:
        facts.memmap = True
        facts.folders.append(folder)
        lines.append(f"x = x.memmap({folder})")
        if pick == 0:
            lines.append(f"x = {c.choice((cls, 'L'))}.load_memmap({folder})")
    elif pick == 2:
        facts.folders.append(folder)
        lines.append(f"x = {c.choice((cls, 'L'))}.load((x.save({folder}), {folder})[1])")
    elif pick == 3:
        lines.append("x.lock_()")
    return lines, facts


# --- ops -----------------------------------------------------------------------------


def _loader(c: Chooser, info: Info) -> str:
    if info.cls and c.chance(70):
        return info.cls
    if info.kind == "lazy" and c.chance(50):
        return "L.LazyStackedTensorDict"
    return c.choice(("L", "L.TensorDict"))


def memmaps(c: Chooser, info: Info, facts: Facts) -> Step:
    folder = f'D + "/o{seed(c)}"'
    pick = c.integer(0, 6)
    if pick == 0:
        return step(f"x.memmap({folder})", "memmap", FAMILY)
    if pick == 1:
        return step(f"x.memmap_like({folder})", "memmap_like", FAMILY)
    if pick == 2:
        return step("x.clone().memmap_()", "memmap_", FAMILY)
    if pick == 3:
        return step(f"x.clone().memmap_({folder})", "memmap_", FAMILY)
    if pick == 4:
        return step(f"x.memmap_like({folder}, existsok=True).copy_(x)", "memmap_like", FAMILY)
    src = f"{_loader(c, info)}.load_memmap((x.memmap({folder}), {folder})[1])"
    return step(src, "load_memmap", FAMILY)


def saves(c: Chooser, info: Info, facts: Facts) -> Step:
    folder = f'D + "/s{seed(c)}"'
    pick = c.integer(0, 3)
    if pick == 0:
        return step(f"x.save({folder})", "save", FAMILY)
    if pick == 1:
        return step(f"x.dumps({folder})", "dumps", FAMILY, needs=("dumps",))
    loader = c.choice(("L.load", f"{_loader(c, info)}.load"))
    return step(f"{loader}((x.save({folder}), {folder})[1])", "load", FAMILY)


def consolidate(c: Chooser, info: Info, facts: Facts) -> Step:
    src = c.choice(
        (
            "x.consolidate()",
            "x.consolidate().clone()",
            "x.consolidate(metadata=True)",
            f'x.consolidate(filename=D + "/c{seed(c)}.mmap")',
        )
    )
    return step(src, "consolidate", FAMILY, needs=("consolidate",))


def conversions(c: Chooser, info: Info, facts: Facts) -> Step:
    src = c.choice(
        (
            "x.to(torch.float64)",
            "x.to(dtype=torch.float16)",
            "x.to(torch.int32)",
            "x.double()",
            "x.int()",
            "x.bool()",
            "x.clone()",
            "x.clone(False)",
            "x.copy()",
            "x.detach()",
            "x.contiguous()",
            "x.to_tensordict()",
        )
    )
    name = src.split("(")[0].removeprefix("x.")
    return step(src, name, FAMILY, needs=(name,))


def _field_value(c: Chooser, info: Info, name: str, kind: str) -> str:
    return _value(c, kind, info.cls, info.batch)


def update(c: Chooser, info: Info, facts: Facts) -> Step:
    fields = FIELDS.get(info.cls, ())
    pick = c.integer(0, 4)
    if pick == 0 and fields:
        name, kind = c.choice(fields)
        src = f"{{{name!r}: {_field_value(c, info, name, kind)}}}"
    elif pick == 1:
        src = "x.clone().apply(torch.zeros_like)"
    elif pick == 2:
        src = "x.to_dict()"
    elif pick == 3:
        src = "x.to_tensordict()"
    else:
        src = f"x.clone().select({', '.join(keys_arg(c, info))})"
    name = c.choice(("update", "update", "update_"))
    return step(f"x.{name}({src})", name, FAMILY)


def set_field(c: Chooser, info: Info, facts: Facts) -> Step:
    fields = FIELDS.get(info.cls, ())
    if not fields:
        return update(c, info, facts)
    name, kind = c.choice(fields)
    if c.chance(BAD):
        name = "nope"
    value = _field_value(c, info, name, kind)
    if c.chance(30):
        return step(f"x.set({name!r}, {value})", "set", FAMILY)
    return step(f"x.{name} = {value}", "setattr", FAMILY, "exec")


def apply(c: Chooser, info: Info, facts: Facts) -> Step:
    fn = c.choice(
        (
            "torch.zeros_like",
            "lambda v: v + 1",
            "lambda v: v.float()",
            "lambda v: v.to(torch.int64)",
            "lambda v: None",
        )
    )
    if c.chance(20):
        return step(f"x.clone().apply_({fn})", "apply_", FAMILY)
    return step(f"x.apply({fn})", "apply", FAMILY)


def select_exclude(c: Chooser, info: Info, facts: Facts) -> Step:
    name = c.choice(("select", "exclude"))
    args = keys_arg(c, info)
    if name == "select" and c.chance(30):
        args.append("strict=False")
    return step(f"x.{name}({', '.join(args)})", name, FAMILY)


def dicts(c: Chooser, info: Info, facts: Facts) -> Step:
    pick = c.integer(0, 5)
    if pick == 0:
        return step("x.to_dict()", "to_dict", FAMILY, "eval")
    if pick == 1:
        return step("x.tolist()", "tolist", FAMILY, "eval", needs=("tolist",))
    owner = info.cls if info.cls and c.chance(70) else "L.TensorDict"
    if pick == 2:
        return step(f"{owner}.from_dict(x.to_dict())", "from_dict", FAMILY)
    if pick == 3:
        sizes = f"batch_size={list(info.batch)}"
        return step(f"{owner}.from_dict(x.to_dict(), {sizes})", "from_dict", FAMILY)
    if pick == 4 and info.cls:
        return step(f"{info.cls}.from_tensordict(x.to_tensordict())", "from_tensordict", FAMILY)
    return step(f"L.TensorDict(x.to_dict(), batch_size={list(info.batch)})", "from_dict", FAMILY)


def pieces(c: Chooser, info: Info, facts: Facts) -> Step:
    d = dim(c, info.ndim)
    pick = c.integer(0, 3)
    if pick == 0:
        return step(f"x.unbind({d})", "unbind", FAMILY, "eval")
    if pick == 1:
        return step(f"x.split({c.integer(1, 3)}, {d})", "split", FAMILY, "eval")
    if pick == 2:
        return step(f"x.unbind({d})[{c.integer(-1, 0)}]", "unbind", FAMILY)
    return step(f"x.split({c.integer(1, 2)}, {d})[0]", "split", FAMILY)


def state_dicts(c: Chooser, info: Info, facts: Facts) -> Step:
    pick = c.integer(0, 3)
    if pick == 0:
        return step("x.state_dict()", "state_dict", FAMILY, "eval")
    if pick == 1:
        return step(
            "x.load_state_dict(x.clone().apply(torch.zeros_like).state_dict())",
            "load_state_dict",
            FAMILY,
        )
    if pick == 2:
        return step("x.clone().zero_().load_state_dict(x.state_dict())", "load_state_dict", FAMILY)
    return step("x.load_state_dict(x.state_dict(), strict=False)", "load_state_dict", FAMILY)


def builds(c: Chooser, info: Info, facts: Facts) -> Step:
    """New records from ``x``: stacks, cats, indexing."""
    pick = c.integer(0, 4)
    if pick == 0:
        d = dim(c, info.ndim, inclusive=True)
        return step(f"torch.stack([x, x.clone()], {d})", "stack", FAMILY)
    if pick == 1:
        d = dim(c, info.ndim, inclusive=True)
        return step(f"L.lazy_stack([x, x.clone()], {d})", "lazy_stack", FAMILY)
    if pick == 2 and info.ndim:
        return step(f"torch.cat([x, x.clone()], {dim(c, info.ndim)})", "cat", FAMILY)
    src, beyond = index(c, info.batch)
    return step(f"x[{src}]", "getitem", FAMILY, tags=("beyond-batch",) if beyond else ())


def reads(c: Chooser, info: Info, facts: Facts) -> Step:
    """A field read: attribute, ``get``, through the dense TensorDict, at an index."""
    # (keys that are no identifier, as from_tuple's "0", cannot be read as attributes)
    named = [key for key in info.top if key.isidentifier()]
    fields = [name for name, _ in FIELDS.get(info.cls, ())] or named or ["x"]
    name = c.choice(fields)
    pick = c.integer(0, 5)
    if not name.isidentifier() or keyword.iskeyword(name):  # (a key '0': no attribute)
        pick = 2 if pick < 2 or pick == 4 else pick
    if pick < 2:
        return step(f"x.{name}", "getattr", FAMILY, "eval")
    if pick == 2:
        return step(f"x.get({name!r})", "get", FAMILY, "eval")
    if pick == 3:
        return step(f"x.to_tensordict()[{name!r}]", "getitem_key", FAMILY, "eval")
    if pick == 4 and info.batch and info.batch[0]:
        return step(f"x[{c.integer(0, info.batch[0] - 1)}].{name}", "getattr", FAMILY, "eval")
    return step(f"x.get({name!r}, None)", "get_default", FAMILY, "eval")


RECORDS = [
    ("memmaps", 4, memmaps),
    ("saves", 3, saves),
    ("consolidate", 2, consolidate),
    ("conversions", 3, conversions),
    ("update", 2, update),
    ("set_field", 2, set_field),
    ("apply", 2, apply),
    ("select_exclude", 2, select_exclude),
    ("dicts", 3, dicts),
    ("pieces", 2, pieces),
    ("state_dicts", 2, state_dicts),
    ("builds", 2, builds),
    ("reads", 5, reads),
]


# --- fz27e: record features and value classes no generator reached (issue 27); the
# family ``features`` (``ops.py``): the dataclass habits users bring to records, the
# Python-value classes (``NonTensorData`` / ``NonTensorStack`` / ``MetaData``) and the
# ``torch.nn.Module`` side of ``TensorDictParams`` and of ``from_module`` / ``to_module``.

_DC = '__import__("dataclasses")'
_COPY = '__import__("copy")'


def record_habits(c: Chooser, info: Info, facts: Facts) -> Step:
    """``fields()`` / ``dataclasses.fields``, ``dataclasses.replace`` / ``asdict`` /
    ``astuple``, ``copy.copy`` / ``copy.deepcopy``, ``is_tensorclass``; a record's
    ``to_tensordict`` read back by ``from_tensordict``."""
    pick = c.integer(0, 6)
    if pick == 0:
        return step(f"{_COPY}.{c.choice(('copy', 'deepcopy'))}(x)", "copy", FAMILY)
    if pick == 1:
        src = c.choice(
            ("L.is_tensorclass(x)", "L.is_tensor_collection(x)", f"{_DC}.is_dataclass(x)")
        )
        return step(src, "is_tensorclass", FAMILY, "eval")
    if info.kind != "record":
        return step(f"{_COPY}.copy(x)", "copy", FAMILY)
    fields = FIELDS.get(info.cls, ())
    if pick == 2:
        src = c.choice(("type(x).fields()", f"{_DC}.fields(x)"))
        return step(f"[f.name for f in {src}]", "fields", FAMILY, "eval")
    if pick == 3 and fields:
        name, kind = c.choice(fields)
        value = _field_value(c, info, name, kind)
        return step(f"{_DC}.replace(x, {name}={value})", "replace", FAMILY)
    if pick == 4:
        name = c.choice(("asdict", "astuple"))
        return step(f"{_DC}.{name}(x)", name, FAMILY, "eval")
    if pick == 5:
        retain = c.choice(("", "retain_none=True", "retain_none=False"))
        src = f"{info.cls}.from_tensordict(x.to_tensordict({retain}))"
        return step(src, "from_tensordict", FAMILY)
    return step(f"{info.cls}(**x.to_dict(), batch_size={list(info.batch)})", "ctor", FAMILY)


def _python_key(c: Chooser, info: Info) -> str:
    pool = [repr(p[0] if len(p) == 1 else p) for p in info.python]
    return c.choice(pool) if pool and c.chance(80) else c.choice(('"s"', '("n", "md")', '"md"'))


def value_classes(c: Chooser, info: Info, facts: Facts) -> Step:
    """Python values by their classes: ``MetaData`` and ``NonTensorStack`` written,
    ``NonTensorData.maybe_to_stack`` / ``NonTensorStack.from_nontensordata``, a value's
    ``tolist`` / ``data`` (not its class's ``fields()``: the peer's lists its private
    ``_metadata`` and ``_is_non_tensor``)."""
    batch = list(info.batch)
    data = c.choice(("'a'", "3", "{'k': 1}", "[1, 2]", "None"))
    k = _python_key(c, info)
    pick = c.integer(0, 6)
    if pick == 0:
        return step(f"x.set({k}, L.MetaData({data}, batch_size={batch}))", "set", FAMILY)
    if pick == 1:
        items = ", ".join(c.choice(STRINGS) for _ in range(batch[0] if batch else 0))
        # (not into an HDF5 file: the peer's reads its strings back as one bytes value)
        stack = batch and not facts.h5
        src = f"x.set({k}, L.NonTensorStack({items}))" if stack else f"x.set({k}, {data})"
        return step(src, "set", FAMILY)
    # (read, not made ``x``: a value stack as the collection programs go on with is
    # another family's world)
    if pick == 2:
        src = f"L.NonTensorData({data}, batch_size={batch}).maybe_to_stack()"
        return step(src, "maybe_to_stack", FAMILY, "eval")
    if pick == 3:
        src = f"L.NonTensorStack.from_nontensordata(L.NonTensorData({data}, batch_size={batch}))"
        return step(src, "from_nontensordata", FAMILY, "eval")
    read = c.choice(("tolist()", "data", "batch_size", "maybe_to_stack().tolist()"))
    if pick in (4, 5):
        return step(f"x.get({k}).{read}", "value_read", FAMILY, "eval")
    return step(f"x.get({k}).maybe_to_stack()", "maybe_to_stack", FAMILY, "eval")


_MODULE = "(torch.manual_seed({0}), torch.nn.Linear(2, 3))[1]"


def modules(c: Chooser, info: Info, facts: Facts) -> Step:
    """``TensorDictParams`` as a module (``parameters`` / ``named_parameters`` /
    ``buffers`` / ``named_buffers``, ``train`` / ``eval``, ``children`` /
    ``named_modules``, ``get_parameter``, ``requires_grad_``), ``from_module`` /
    ``from_modules`` / ``to_module``."""
    params = "x" if facts.derived == "params" else "L.TensorDictParams(x.to_tensordict())"
    pick = c.integer(0, 7)
    if info.kind == "lazy" or info.over_lazy:  # (the peer refuses a lazy stack in params)
        pick = c.integer(5, 7)
    if pick == 0:
        name = c.choice(("named_parameters", "named_buffers"))
        return step(f"[k for k, _ in {params}.{name}()]", name, FAMILY, "eval")
    if pick == 1:
        name = c.choice(("parameters", "buffers"))
        return step(f"[tuple(v.shape) for v in {params}.{name}()]", name, FAMILY, "eval")
    if pick == 2:
        mode = c.choice(("train()", "train(False)", "eval()"))
        return step(f"{params}.{mode}.training", "train", FAMILY, "eval")
    if pick == 3:
        form = c.choice(("list(P.children())", "[n for n, _ in P.named_modules()]"))
        return step(form.replace("P", params), "children", FAMILY, "eval")
    if pick == 4:
        leaves = [".".join(p) for p, _, _ in info.leaves] or ["zz"]
        src = f"{params}.get_parameter({c.choice(leaves)!r})"
        return step(src, "get_parameter", FAMILY, "eval")
    first, second = _MODULE.format(seed(c)), _MODULE.format(seed(c))
    if pick == 5:
        return step(f"L.TensorDict.from_module({first})", "from_module", FAMILY)
    if pick == 6:
        extra = c.choice(("", ", as_module=True", ", lazy_stack=True"))
        return step(f"L.TensorDict.from_modules({first}, {second}{extra})", "from_modules", FAMILY)
    inplace = c.choice(("", ", inplace=True", ", return_swap=False"))
    src = f"L.TensorDict.from_module({first}).apply(torch.zeros_like).to_module({second}{inplace})"
    return step(src, "to_module", FAMILY)


RECORD_FEATURES = [
    ("record_habits", 3, record_habits),
    ("value_classes", 3, value_classes),
    ("modules", 2, modules),
]
