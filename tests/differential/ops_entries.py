"""Families ``index`` (indexing and writing through an index) and ``entries`` (reading,
writing, selecting and renaming entries; views of keys; conversions to and from dicts
and state dicts; ``apply``; clone / lock / names / memmap round trips; record fields)."""

from __future__ import annotations

import ast
import re

from .chooser import Chooser
from .engine import Step
from .info import Info
from .ops_common import BAD, dim, index, key, keys_arg, leaf_value, seed, step, top_key
from .world import STRINGS, Facts

# --- index ---------------------------------------------------------------------------


def getitem(c: Chooser, info: Info, facts: Facts) -> Step:
    src, beyond = index(c, info.batch)
    return step(f"x[{src}]", "getitem", "index", tags=("beyond-batch",) if beyond else ())


def setitem(c: Chooser, info: Info, facts: Facts) -> Step:
    src, beyond = index(c, info.batch)
    pick = c.integer(0, 5)
    if pick == 0:
        value = c.choice(("0", "1", "1.5", "True"))
    elif pick == 1:
        other, _ = index(c, info.batch)
        value = f"x[{other}].clone()"
    elif pick == 2:
        value = f"x[{src}].apply(torch.ones_like)"
    elif pick == 3 and info.kind == "td":
        value = f"x[{src}].to_dict()"
    else:
        value = f"x[{src}].clone().zero_()"
    tags = ("beyond-batch",) if beyond else ()
    if pick == 0:
        tags += ("number",)
    return step(f"x[{src}] = {value}", "setitem", "index", "exec", tags=tags)


def masked_fill(c: Chooser, info: Info, facts: Facts) -> Step:
    mask = leaf_value(c, info.batch, "bool")
    value = c.choice(("0", "1", "-1.5", "True"))
    inplace = c.chance(40)
    name = "masked_fill_" if inplace else "masked_fill"
    return step(f"x.{name}({mask}, {value})", name, "index", needs=(name,))


def get_at(c: Chooser, info: Info, facts: Facts) -> Step:
    src, _ = index(c, info.batch)
    return step(f"x.get_at({key(c, info, leaf=True)}, I[{src}])", "get_at", "index", "eval")


def select_rows(c: Chooser, info: Info, facts: Facts) -> Step:
    """Indexing through torch-style calls: ``index_select``-like forms the peer has."""
    if not info.batch:
        return getitem(c, info, facts)
    d = dim(c, info.ndim)
    n = info.batch[d] if -info.ndim <= d < info.ndim else 1
    rows = [c.integer(0, max(n - 1, 0)) for _ in range(c.integer(0, 3))]
    return step(f"x[{'' if d == 0 else ':, ' * (d % info.ndim)}{rows}]", "getitem", "index")


def index_more(c: Chooser, info: Info, facts: Facts) -> Step:
    """ops34: ``masked_select``, ``update_at_`` / ``set_at_`` / ``copy_at_``."""
    src, _ = index(c, info.batch)
    pick = c.integer(0, 3)
    if pick == 0:
        mask = leaf_value(c, info.batch, "bool")
        return step(f"x.masked_select({mask})", "masked_select", "index", needs=("masked_select",))
    if pick == 1:
        return step(
            f"x.update_at_(x[{src}].apply(torch.zeros_like), I[{src}])",
            "update_at_",
            "index",
            needs=("update_at_",),
        )
    if pick == 2:
        k = key(c, info, leaf=True)
        return step(
            f"x.set_at_({k}, x.get({k})[{src}] * 0, I[{src}])",
            "set_at_",
            "index",
            needs=("set_at_",),
        )
    # the peer's fast path (the default) takes a dense TensorDict only: fast=False else
    fast = "" if info.kind == "td" else ", fast=False"
    return step(
        f"x.copy_at_(x[{src}].clone().zero_(), I[{src}]{fast})",
        "copy_at_",
        "index",
        needs=("copy_at_",),
    )


INDEX = [
    ("getitem", 6, getitem),
    ("setitem", 5, setitem),
    ("masked_fill", 1, masked_fill),
    ("get_at", 1, get_at),
    ("rows", 1, select_rows),
    ("index_more", 1, index_more),
]


# --- entries -------------------------------------------------------------------------


def _new_value(c: Chooser, info: Info, under: tuple[int, ...] | None = None) -> str:
    batch = info.batch if under is None else under
    pick = c.integer(0, 7)
    if pick < 4:
        features = tuple(c.integer(1, 3) for _ in range(c.integer(0, 1)))
        return leaf_value(c, batch + features, c.choice(("float32", "int64", "bool")))
    if pick == 4:
        return c.choice(STRINGS)
    if pick == 5:
        return f'{{"q": {leaf_value(c, batch)}}}'
    if pick == 6 and batch:
        return leaf_value(c, batch[:-1] + (batch[-1] + 1,))  # the wrong batch size
    return f"L.TensorDict({{}}, batch_size={list(batch)})"


def get(c: Chooser, info: Info, facts: Facts) -> Step:
    k = key(c, info)
    form = c.integer(0, 3)
    if form == 0:
        return step(f"x.get({k})", "get", "entries", "eval")
    if form == 1:
        return step(f"x.get({k}, None)", "get_default", "entries", "eval")
    if form == 2:
        return step(
            f"x.get({k}, default={leaf_value(c, info.batch)})", "get_default", "entries", "eval"
        )
    return step(f"x[{k}]", "getitem_key", "entries", "eval")


def set_entry(c: Chooser, info: Info, facts: Facts) -> Step:
    k = key(c, info, missing=40)
    value = _new_value(c, info)
    form = c.integer(0, 3)
    if form == 0:
        return step(f"x.set({k}, {value})", "set", "entries")
    if form == 1:
        return step(f"x.set_({k}, {value})", "set_", "entries")
    if form == 2 and info.kind == "record":
        field = c.choice(("x", "label", "inner", "opt"))
        return step(f"x.{field} = {value}", "setattr", "entries", "exec")
    return step(f"x[{k}] = {value}", "setitem_key", "entries", "exec")


def update(c: Chooser, info: Info, facts: Facts) -> Step:
    pick = c.integer(0, 4)
    if pick == 0:
        src = f"{{{key(c, info, missing=40)}: {_new_value(c, info)}}}"
    elif pick == 1:
        src = "x.clone().apply(torch.zeros_like)"
    elif pick == 2:
        src = f"x.select({', '.join([*keys_arg(c, info), 'strict=False'])}).clone()"
    elif pick == 3:
        src = "x.to_dict()"
    else:
        src = f"{{{key(c, info, missing=30)}: {_new_value(c, info)}}}, inplace=False"
        return step(f"x.update({src})", "update", "entries")
    name = c.choice(("update", "update", "update_"))
    return step(f"x.{name}({src})", name, "entries")


def select_exclude(c: Chooser, info: Info, facts: Facts) -> Step:
    name = c.choice(("select", "exclude"))
    args = keys_arg(c, info)
    if name == "select" and c.chance(40):
        args.append("strict=False")
    if c.chance(15):
        args.append("inplace=True")
    return step(f"x.{name}({', '.join(args)})", name, "entries")


def pop(c: Chooser, info: Info, facts: Facts) -> Step:
    k = key(c, info)
    if c.chance(30):
        return step(f"x.pop({k}, None)", "pop", "entries", "eval")
    return step(f"x.pop({k})", "pop", "entries", "eval")


def delete(c: Chooser, info: Info, facts: Facts) -> Step:
    k = key(c, info)
    if c.chance(50):
        return step(f"del x[{k}]", "del", "entries", "exec")
    return step(f"x.del_({k})", "del_", "entries")


def rename(c: Chooser, info: Info, facts: Facts) -> Step:
    old = key(c, info)
    new = c.choice(('"zz"', '"renamed"', top_key(c, info), '("n", "w")'))
    safe = ", safe=True" if c.chance(30) else ""
    return step(f"x.rename_key_({old}, {new}{safe})", "rename_key_", "entries")


def views(c: Chooser, info: Info, facts: Facts) -> Step:
    name = c.choice(("keys", "values", "items"))
    nested, leaves = c.chance(50), c.chance(50)
    args = c.choice(
        ("", f"{nested}", f"{nested}, {leaves}", f"include_nested={nested}, leaves_only={leaves}")
    )
    if name == "keys" and c.chance(20):
        args += ", sort=True" if args else "sort=True"
    return step(f"list(x.{name}({args}))", name, "entries", "eval")


def contains(c: Chooser, info: Info, facts: Facts) -> Step:
    k = key(c, info, missing=30)
    form = c.choice((f"{k} in x.keys()", f"{k} in x.keys(True)", f"{k} in x.keys(True, True)"))
    if c.chance(20) and k.startswith('"'):
        form = f"{k} in x"
    tags = ("lazy",) if info.kind == "lazy" or info.over_lazy else ()  # (a record over one)
    inner = info.python + info.nodes  # no leaves: not in keys(True, True) in tclass
    asked = ast.literal_eval(k)  # (a missing key's source quotes as '"zz"', repr as "'zz'")
    if (asked if isinstance(asked, tuple) else (asked,)) in inner:
        tags += ("node",)  # (a node however made: a dict, '("zz", "a")' set earlier: 15,701,971)
    return step(form, "contains", "entries", "eval", tags=tags)


def sizes(c: Chooser, info: Info, facts: Facts) -> Step:
    attr = c.choice(
        (
            "len(x)",
            "x.batch_size",
            "x.shape",
            "x.ndim",
            "x.batch_dims",
            "x.numel()",
            "x.is_empty()",
            "x.device",
            "x.is_locked",
            "x.is_memmap()",
            "x.names",
            "bool(x.is_shared())",
            "x.sorted_keys",
        )
    )
    needs = tuple(re.findall(r"x\.(\w+)", attr))
    tags = ("lazy",) if info.kind == "lazy" else ()
    if not info.leaves:  # (is_memmap of a collection without tensors: _memmap_by_data)
        tags += ("no-tensors",)
    return step(attr, attr, "entries", "eval", needs=needs, tags=tags)


def flatten_keys(c: Chooser, info: Info, facts: Facts) -> Step:
    sep = c.choice(("", '"."', '"_"', '"/"'))
    src = f"x.flatten_keys({sep})"
    if c.chance(40):
        src += f".unflatten_keys({sep})"
    return step(src, "flatten_keys", "entries")


def to_dict(c: Chooser, info: Info, facts: Facts) -> Step:
    pick = c.integer(0, 4)
    if pick == 0:
        return step("x.to_dict()", "to_dict", "entries", "eval")
    if pick == 1:
        return step(
            f"L.TensorDict.from_dict(x.to_dict(), batch_size={list(info.batch)})",
            "from_dict",
            "entries",
        )
    if pick == 2:
        return step("L.TensorDict.from_dict(x.to_dict())", "from_dict", "entries")
    if pick == 3:
        return step(
            f"L.TensorDict(x.to_dict(), batch_size={list(info.batch)})", "from_dict", "entries"
        )
    return step("x.to_tensordict()", "to_tensordict", "entries")


def state_dict(c: Chooser, info: Info, facts: Facts) -> Step:
    pick = c.integer(0, 3)
    if pick == 0:
        return step("x.state_dict()", "state_dict", "entries", "eval")
    if pick == 1:
        return step("x.state_dict(keep_vars=True)", "state_dict", "entries", "eval")
    if pick == 2:
        strict = c.choice(("", ", strict=False", ", strict=True"))
        return step(
            f"x.load_state_dict(x.clone().apply(torch.zeros_like).state_dict(){strict})",
            "load_state_dict",
            "entries",
        )
    return step(
        f"x.clone().zero_().load_state_dict(x.state_dict(), strict={c.chance(50)})",
        "load_state_dict",
        "entries",
    )


def apply(c: Chooser, info: Info, facts: Facts) -> Step:
    pick = c.integer(0, 8)
    fns = (
        "torch.zeros_like",
        "lambda v: v + 1",
        "lambda v: v.float()",
        "lambda v: v * 2",
        "lambda v: None",
        "lambda v: v.sum()",
    )
    if pick < 4:
        extra = c.choice(("", ", nested_keys=True", f", batch_size={list(info.batch)}", ""))
        return step(f"x.apply({c.choice(fns)}{extra})", "apply", "entries")
    if pick == 4:
        return step("x.apply(lambda a, b: a - b, x.clone())", "apply", "entries")
    if pick == 5:
        return step("x.clone().apply_(lambda v: v.zero_())", "apply_", "entries")
    if pick == 6:
        nested = c.chance(50)
        return step(
            f"x.named_apply(lambda k, v: v.clone(), nested_keys={nested})", "named_apply", "entries"
        )
    if pick == 7:
        return step("x.apply(lambda v: v, filter_empty=True)", "apply", "entries")
    tags = ("lazy",) if info.kind == "lazy" else ()
    return step("x.apply(lambda v: v[..., None], batch_size=[])", "apply", "entries", tags=tags)


def copies(c: Chooser, info: Info, facts: Facts) -> Step:
    src = c.choice(
        (
            "x.clone()",
            "x.clone(False)",
            "x.detach()",
            "x.contiguous()",
            "x.copy()",
            "x.cpu()",
            'x.to("cpu")',
            "x.to(torch.float64)",
            "x.to(dtype=torch.int32)",
            "x.zero_()",
            "x.empty()",
            "x.empty(recurse=True)",
            "x.data",
            "x.to_tensordict()",
            "x.copy_(x.clone().apply(torch.ones_like))",
            "x.exclude()",
        )
    )
    name = src.split("(")[0].removeprefix("x.")
    return step(src, name, "entries", needs=(name,) if name.isidentifier() else ())


def lock(c: Chooser, info: Info, facts: Facts) -> Step:
    pick = c.integer(0, 3)
    if pick == 0:
        return step("x.lock_()", "lock_", "entries")
    if pick == 1:
        return step("x.unlock_()", "unlock_", "entries")
    if pick == 2:
        return step("x.is_locked", "is_locked", "entries", "eval")
    return step(f"x.set({key(c, info, missing=50)}, {_new_value(c, info)})", "set", "entries")


def names(c: Chooser, info: Info, facts: Facts) -> Step:
    pool = ("i", "j", "k", "l", None)
    chosen = [c.choice(pool) for _ in range(info.ndim + (1 if c.chance(BAD) else 0))]
    pick = c.integer(0, 3)
    if pick == 0:
        return step(f"x.names = {chosen!r}", "set_names", "entries", "exec")
    if pick == 1:
        return step(f"x.refine_names(*{chosen!r})", "refine_names", "entries")
    if pick == 2:
        return step(f"x.rename(*{chosen!r})", "rename", "entries")
    return step("x.names", "names", "entries", "eval")


def memmap(c: Chooser, info: Info, facts: Facts) -> Step:
    folder = f'D + "/o{seed(c)}"'
    pick = c.integer(0, 5)
    if pick == 0:
        return step(f"x.memmap({folder})", "memmap", "entries")
    if pick == 1:
        return step(f"x.memmap_like({folder})", "memmap_like", "entries")
    if pick == 2:
        return step("x.clone().memmap_()", "memmap_", "entries")
    if pick == 3:
        src = f"x.memmap({folder}, num_threads=2)"
        return step(src, "memmap", "entries", tags=("any-order",))
    loader = "Rec" if info.kind == "record" else "L"
    if info.kind == "lazy" and c.chance(50):
        loader = "L.LazyStackedTensorDict"
    # the folder just written, loaded back (``x.memmap`` returns x, so ``and`` asked its truth)
    src = f"{loader}.load_memmap((x.memmap({folder}), {folder})[1])"
    return step(src, "load_memmap", "entries")


def record_fields(c: Chooser, info: Info, facts: Facts) -> Step:
    if info.kind != "record":
        return get(c, info, facts)
    field = c.choice(("x", "label", "inner", "opt", "inner.y", "inner.z"))
    return step(f"x.{field}", "getattr", "entries", "eval")


# ops34: entry methods the generators above never called: the dict API (setdefault,
# popitem, clear, fromkeys, replace, non-tensor accessors), filters and splits of keys,
# apply / named_apply with their keyword arguments, exports (numpy, namedtuples, pytrees,
# lists) and their round trips.


def dict_api(c: Chooser, info: Info, facts: Facts) -> Step:
    k = key(c, info, missing=30)
    pick = c.integer(0, 8)
    if pick == 0:
        return step(f"x.setdefault({k}, {_new_value(c, info)})", "setdefault", "entries", "eval")
    if pick == 1:
        return step("x.popitem()", "popitem", "entries", "eval", needs=("popitem",))
    if pick == 2:
        return step("x.clear()", "clear", "entries", needs=("clear",))
    if pick == 3:
        keys = keys_arg(c, info)
        return step(
            f"L.TensorDict.fromkeys([{', '.join(keys)}], {c.choice(('0', '1.5', 'None'))})",
            "fromkeys",
            "entries",
        )
    if pick == 4:
        return step(
            f"x.replace({{{k}: {_new_value(c, info)}}})", "replace", "entries", needs=("replace",)
        )
    if pick == 5:
        return step(
            "list(x.non_tensor_items())",
            "non_tensor_items",
            "entries",
            "eval",
            needs=("non_tensor_items",),
        )
    if pick == 6:
        return step(
            f"x.get_non_tensor({k}, None)",
            "get_non_tensor",
            "entries",
            "eval",
            needs=("get_non_tensor",),
        )
    if pick == 7:
        return step(
            f"x.set_non_tensor({k}, {c.choice(STRINGS)})",
            "set_non_tensor",
            "entries",
            needs=("set_non_tensor",),
        )
    return step(f"x.replace({k}, {_new_value(c, info)})", "replace", "entries", needs=("replace",))


def key_filters(c: Chooser, info: Info, facts: Facts) -> Step:
    pick = c.integer(0, 7)
    if pick == 0:
        return step(
            "x.filter_non_tensor_data()",
            "filter_non_tensor_data",
            "entries",
            needs=("filter_non_tensor_data",),
        )
    if pick == 1:
        return step("x.filter_empty_()", "filter_empty_", "entries", needs=("filter_empty_",))
    if pick == 2:
        sets = [f"[{', '.join(keys_arg(c, info))}]" for _ in range(c.integer(1, 2))]
        extra = c.choice(("", ", strict=False", ", inplace=True", ", default=None"))
        return step(
            f"x.split_keys({', '.join(sets)}{extra})",
            "split_keys",
            "entries",
            "eval",
            needs=("split_keys",),
        )
    if pick == 3:
        extra = c.choice(("", "strict=False", "default=None", "filter_empty=False"))
        args = ", ".join(keys_arg(c, info) + ([extra] if extra else []))
        return step(f"x.separates({args})", "separates", "entries", "eval", needs=("separates",))
    if pick == 4:
        dims_ = c.choice(
            ("", "1", "batch_dims=0", f"batch_dims={info.ndim}", "keep_compliant_size=True")
        )
        return step(
            f"x.clone().auto_batch_size_({dims_})",
            "auto_batch_size_",
            "entries",
            needs=("auto_batch_size_",),
        )
    if pick == 5:
        recurse = c.choice(("", "recurse=True", "True", f"batch_size={list(info.batch[:1])}"))
        return step(f"x.empty({recurse})", "empty", "entries", needs=("empty",))
    if pick == 6:
        return step(
            f"x.exclude({', '.join(keys_arg(c, info) + ['inplace=False'])})", "exclude", "entries"
        )
    return step("x.depth", "depth", "entries", "eval", needs=("depth",))


def apply_kwargs(c: Chooser, info: Info, facts: Facts) -> Step:
    fn = c.choice(("lambda v: v + 1", "lambda v: v * 0", "torch.zeros_like", "lambda v: v.float()"))
    pick = c.integer(0, 7)
    name = c.choice(("apply", "apply", "named_apply"))
    if name == "named_apply":
        fn = (
            "lambda k, v: " + fn.removeprefix("lambda v: ")
            if fn.startswith("lambda")
            else f"lambda k, v: {fn}(v)"
        )
    if pick == 0:
        extra = f"batch_size={list(info.batch[: c.integer(0, info.ndim)])}"
    elif pick == 1:
        chosen = [c.choice(("i", "j", None)) for _ in range(info.ndim)]
        extra = f"names={chosen!r}"
    elif pick == 2:
        extra = "inplace=True"
    elif pick == 3:
        extra = f"filter_empty={c.chance(50)}"
    elif pick == 4:
        extra = c.choice(("default=0", "default=None"))
        return step(f"x.{name}({fn}, x.clone(), {extra})", name, "entries", tags=("others",))
    elif pick == 5:
        extra = "call_on_nested=True"
        fn = "lambda v: v.clone()" if name == "apply" else "lambda k, v: v.clone()"
    elif pick == 6:
        extra = "propagate_lock=True"
    else:
        extra = "out=x.clone()"
    tags = ("lazy",) if info.kind == "lazy" else ()
    return step(f"x.{name}({fn}, {extra})", name, "entries", tags=tags)


def exports(c: Chooser, info: Info, facts: Facts) -> Step:
    pick = c.integer(0, 9)
    if pick == 0:
        return step("x.numpy()", "numpy", "entries", "eval", needs=("numpy",))
    if pick == 1:
        return step(
            "x.to_namedtuple()", "to_namedtuple", "entries", "eval", needs=("to_namedtuple",)
        )
    if pick == 2:
        return step(
            f"L.TensorDict.from_namedtuple(x.to_namedtuple(), batch_size={list(info.batch)})",
            "from_namedtuple",
            "entries",
        )
    if pick == 3:
        return step("x.tolist()", "tolist", "entries", "eval", needs=("tolist",))
    if pick == 4:
        return step("x.to_pytree()", "to_pytree", "entries", "eval", needs=("to_pytree",))
    if pick == 5:
        auto = c.choice(
            ("auto_batch_size=True", f"batch_size={list(info.batch)}", f"batch_dims={info.ndim}")
        )
        return step(f"L.TensorDict.from_any(x.to_dict(), {auto})", "from_any", "entries")
    if pick == 6:
        auto = c.choice(
            ("auto_batch_size=True", f"batch_dims={info.ndim}", f"batch_size={list(info.batch)}")
        )
        return step(f"L.TensorDict.from_dict(x.to_dict(), {auto})", "from_dict", "entries")
    if pick == 7:
        return step(
            c.choice(
                (
                    "x.bytes()",
                    "x.is_contiguous()",
                    "x.param_count()",
                    "x.to_dict(retain_none=False)",
                )
            ),
            "exports",
            "entries",
            "eval",
        )
    if pick == 8:
        return step("x.flatten_keys().unflatten_keys()", "flatten_keys", "entries")
    return step("x.to_dict(convert_tensors=True)", "to_dict", "entries", "eval")


ENTRIES = [
    ("get", 4, get),
    ("set", 4, set_entry),
    ("update", 2, update),
    ("select_exclude", 3, select_exclude),
    ("pop", 1, pop),
    ("delete", 1, delete),
    ("rename", 1, rename),
    ("views", 3, views),
    ("contains", 1, contains),
    ("sizes", 2, sizes),
    ("flatten_keys", 1, flatten_keys),
    ("to_dict", 2, to_dict),
    ("state_dict", 2, state_dict),
    ("apply", 3, apply),
    ("copies", 3, copies),
    ("lock", 1, lock),
    ("names", 1, names),
    ("memmap", 2, memmap),
    ("record_fields", 2, record_fields),
    ("dict_api", 2, dict_api),
    ("key_filters", 2, key_filters),
    ("apply_kwargs", 3, apply_kwargs),
    ("exports", 2, exports),
]


# --- fz26d: entry methods no generator called (issue 27). They form the family
# ``methods`` (``ops.py``) with those of ``ops_math`` and ``ops_shape``: added to the
# families above, they would renumber the programs ``test_differential.DECIDED`` pins.


def _two_keys(c: Chooser, info: Info) -> tuple[str, str]:
    first = key(c, info, leaf=True)
    return first, (first if c.chance(20) else key(c, info, leaf=True))


def entry_queries(c: Chooser, info: Info, facts: Facts) -> Step:
    """What a collection says of one entry or of itself: ``get_item_shape``,
    ``is_non_tensor``, ``entry_class``, ``data_ptr``, ``is_consolidated`` and the
    properties (``is_cpu``, ``is_meta``, ``requires_grad``, ``dtype``)."""
    k = key(c, info, missing=10)
    pick = c.integer(0, 5)
    if pick == 0:
        return step(f"x.get_item_shape({k})", "get_item_shape", "entries", "eval")
    if pick == 1:
        return step(f"x.is_non_tensor({k})", "is_non_tensor", "entries", "eval")
    if pick == 2:
        # (the peer's record classes are named Peer<name> in ``libs.py``)
        src = f'x.entry_class({k}).__name__.removeprefix("Peer")'
        return step(src, "entry_class", "entries", "eval")
    if pick == 3:  # the addresses differ between the libraries: their keys and count do not
        storage = c.choice(("", "storage=True"))
        src = f"list(x.data_ptr({storage}).keys(True, True))"
        return step(src, "data_ptr", "entries", "eval", needs=("data_ptr",))
    if pick == 4:
        return step("x.is_consolidated()", "is_consolidated", "entries", "eval")
    attr = c.choice(("is_cpu", "is_meta", "requires_grad", "dtype", "is_floating_point()"))
    return step(f"x.{attr}", attr.removesuffix("()"), "entries", "eval")


def entry_edits(c: Chooser, info: Info, facts: Facts) -> Step:
    """Edits of entries by methods: ``rename_keys``, ``create_nested``,
    ``cat_tensors`` / ``stack_tensors``, ``set_non_tensor`` then ``get_non_tensor``."""
    pick = c.integer(0, 4)
    if pick == 0:
        old = key(c, info)
        new = c.choice(('"zz"', '"renamed"', top_key(c, info), '("n", "w")'))
        strict = c.choice(("", ", strict=False", ", strict=True"))
        return step(f"x.rename_keys({{{old}: {new}}}{strict})", "rename_keys", "entries")
    if pick == 1:
        where = c.choice(('"q"', '("n", "q")', top_key(c, info), '("q", "r")'))
        return step(f"x.create_nested({where})", "create_nested", "entries")
    if pick in (2, 3):
        name = "cat_tensors" if pick == 2 else "stack_tensors"
        first, second = _two_keys(c, info)
        out = c.choice(('"out"', '("n", "out")', first))
        keep = c.choice(("", ", keep_entries=True", ", keep_entries=False"))
        d = dim(c, info.ndim + 1, inclusive=name == "stack_tensors")
        src = f"x.{name}({first}, {second}, out_key={out}, dim={d}{keep})"
        return step(src, name, "entries", needs=(name,))
    k = key(c, info, missing=40)
    value = c.choice(STRINGS + ("3", "None", "[1, 2]"))
    return step(
        f"x.set_non_tensor({k}, {value}).get_non_tensor({k})", "set_non_tensor", "entries", "eval"
    )


def in_place_state(c: Chooser, info: Info, facts: Facts) -> Step:
    """In-place methods of state and storage: ``clear_device_``, ``auto_device_``,
    ``detach_``, ``share_memory_``, ``zero_grad``, ``rename_`` (dim names), ``as_tensor``."""
    pick = c.integer(0, 6)
    if pick == 6:
        chosen = [
            c.choice(("i", "j", None)) for _ in range(info.ndim + (1 if c.chance(BAD) else 0))
        ]
        return step(f"x.rename_(*{chosen!r})", "rename_", "entries")
    name = ("clear_device_", "auto_device_", "detach_", "share_memory_", "zero_grad", "as_tensor")[
        pick
    ]
    return step(f"x.{name}()", name, "entries", needs=(name,))


def round_trips(c: Chooser, info: Info, facts: Facts) -> Step:
    """Exports read back: ``from_list``, ``from_pytree``, ``from_tuple``,
    ``from_struct_array``, ``to_json`` / ``from_json``, ``load_memmap_``, ``load_``,
    ``memmap_refresh_``, ``make_memmap`` / ``make_memmap_from_tensor``, ``saved_path``."""
    name = f"f{seed(c)}"
    folder = f'D + "/{name}"'
    batch = list(info.batch)
    auto = c.choice(
        ("", ", auto_batch_size=True", f", batch_size={batch}", f", batch_dims={info.ndim}")
    )
    pick = c.integer(0, 9)
    if pick == 0:
        return step(f"L.TensorDict.from_list(x.tolist(){auto})", "from_list", "entries")
    if pick == 1:
        return step(f"L.TensorDict.from_pytree(x.to_pytree(){auto})", "from_pytree", "entries")
    if pick == 2:
        return step(f"L.TensorDict.from_tuple(tuple(x.values()){auto})", "from_tuple", "entries")
    if pick == 3:
        src = f"L.TensorDict.from_struct_array(x.to_struct_array(){auto})"
        return step(src, "from_struct_array", "entries", needs=("to_struct_array",))
    if pick == 4:
        lines = c.choice(("", ", lines=True"))
        path = f'{folder} + ".json"'
        src = f'L.TensorDict.from_json((x.to_json({path}, separator="."{lines}), {path})[1]{auto})'
        return step(src, "from_json", "entries", needs=("to_json",))
    if pick == 5:
        src = f"x.clone().load_memmap_((x.memmap({folder}), {folder})[1])"
        return step(src, "load_memmap_", "entries", needs=("load_memmap_",))
    if pick == 6:
        src = f"x.clone().load_((x.save({folder}), {folder})[1])"
        return step(src, "load_", "entries", needs=("load_",))
    if pick == 7:
        return step(f"x.memmap({folder}).memmap_refresh_()", "memmap_refresh_", "entries")
    if pick == 8:
        shape = batch + [c.integer(1, 3) for _ in range(c.integer(0, 1))]
        k = c.choice(('"mm"', '("n", "mm")', key(c, info, leaf=True)))
        form = c.choice((f"make_memmap({k}, {shape})", f"make_memmap_from_tensor({k}, t({shape}))"))
        return step(f"x.memmap({folder}).{form}", form.split("(")[0], "entries", "eval")
    src = f'str(x.memmap({folder}).saved_path).endswith("/{name}")'
    return step(src, "saved_path", "entries", "eval")


ENTRY_METHODS = [
    ("entry_queries", 3, entry_queries),
    ("entry_edits", 3, entry_edits),
    ("in_place_state", 2, in_place_state),
    ("round_trips", 3, round_trips),
]


# --- fz27e: the rest of the blind spots (issue 27): entry methods no generator reached
# after fz26d. They form the family ``features`` (``ops.py``) with those of ``ops_math``,
# ``ops_shape`` and ``ops_records``: added to ``methods``, they would renumber the
# programs that family's OPEN lines and pins name.


def autograd(c: Chooser, info: Info, facts: Facts) -> Step:
    """``backward`` of a collection by a collection of gradients, ``grad`` read and
    assigned, ``requires_grad_`` then ``detach``."""
    pick = c.integer(0, 3)
    if pick == 0:
        scale = c.choice(("2", "x.float().detach()", "1.5"))
        # (the peer's backward takes a TensorDict of gradients, not a record)
        ones = "y.detach().apply(torch.ones_like)" + (
            ".to_tensordict()" if info.kind == "record" else ""
        )
        src = f"(y := x.float().requires_grad_(), (y * {scale}).backward({ones}), y.grad)[2]"
        return step(src, "backward", "entries", needs=("backward",))
    if pick == 1:
        return step("x.float().requires_grad_().grad", "grad", "entries", "eval")
    if pick == 2:  # (the peer's records have no ``grad`` setter; its ``grad = None`` fails)
        base = "x.to_tensordict()" if info.kind == "record" else "x"
        src = f"x = {base}.float().requires_grad_(); x.grad = x.detach().apply(torch.ones_like)"
        return step(src, "set_grad", "entries", "exec")
    return step("x.float().requires_grad_().detach().requires_grad", "detach", "entries", "eval")


def _schema(c: Chooser, info: Info) -> str:
    """A ``from_schema`` schema from ``x``'s leaves (now and then a dtype name)."""
    items = []
    for path, dtype, shape in info.leaves[: c.integer(0, 3)]:
        k = repr(path[0] if len(path) == 1 else path)
        items.append(f"{k}: ({list(shape[info.ndim :])}, {dtype})")
    return "{" + ", ".join(items) + "}"


def built_from(c: Chooser, info: Info, facts: Facts) -> Step:
    """Constructors from other objects: ``from_dict_instance``, ``from_dataclass`` (a
    record or a plain dataclass), ``from_consolidated`` (a file ``consolidate`` wrote),
    ``from_schema``, ``attrs`` (and ``to`` by them), ``pack``."""
    batch = list(info.batch)
    auto = c.choice(("", ", auto_batch_size=True", f", batch_size={batch}"))
    pick = c.integer(0, 6)
    if pick == 0:
        return step(f"x.from_dict_instance(x.to_dict(){auto})", "from_dict_instance", "entries")
    if pick == 1:
        target = "x" if info.kind == "record" else "x.to_tensordict()"
        extra = c.choice((auto, ", as_tensorclass=True", f", batch_dims={info.ndim}"))
        src = f"L.TensorDict.from_dataclass({target}{extra})"
        return step(src, "from_dataclass", "entries", needs=("from_dataclass",))
    if pick == 2:
        value = leaf_value(c, info.batch[:1] + (2,))
        made = f'__import__("dataclasses").make_dataclass("DC", ["a", "b"])({value}, "s")'
        return step(f"L.TensorDict.from_dataclass({made}{auto})", "from_dataclass", "entries")
    if pick == 3:
        path = f'D + "/c{seed(c)}.mmap"'
        src = f"L.TensorDict.from_consolidated((x.consolidate(filename={path}), {path})[1])"
        return step(src, "from_consolidated", "entries", needs=("consolidate",))
    if pick == 4:
        src = f"L.TensorDict.from_schema({_schema(c, info)}, batch_size={batch})"
        return step(src, "from_schema", "entries")
    if pick == 5:
        form = c.choice(("x.attrs()", "x.clone().zero_().to(x.attrs())"))
        return step(form, "attrs", "entries", needs=("attrs",))
    d = c.choice(("", "-1", "0"))
    return step(f"x.float().pack({d})[0]", "pack", "entries", "eval", needs=("pack",))


def tables(c: Chooser, info: Info, facts: Facts) -> Step:
    """Exports to tables and back: ``to_pandas`` / ``from_pandas``, CSV, parquet, zarr."""
    sep = c.choice(("", 'separator="."', 'separator="/"'))
    name = f'D + "/t{seed(c)}'
    # (a record's nested record would be written as its repr: the class names differ)
    src_x = "x.to_tensordict()" if info.kind == "record" else "x"
    pick = c.integer(0, 4)
    if pick == 0:
        return step(f"{src_x}.to_pandas({sep}).to_dict()", "to_pandas", "entries", "eval")
    if pick == 1:
        back = c.choice(("", f", batch_size={list(info.batch[:1])}", ", auto_batch_size=True"))
        src = f"L.TensorDict.from_pandas({src_x}.to_pandas({sep}){back})"
        return step(src, "from_pandas", "entries", needs=("to_pandas",))
    if pick == 2:
        path = name + '.csv"'
        src = (
            f"L.TensorDict.from_csv(({src_x}.to_csv({path}{', ' + sep if sep else ''}), {path})[1])"
        )
        return step(src, "from_csv", "entries", needs=("to_csv",))
    if pick == 3:
        path = name + '.parquet"'
        extra = ", " + sep if sep else ""
        src = f"L.TensorDict.from_parquet(({src_x}.to_parquet({path}{extra}), {path})[1])"
        return step(src, "from_parquet", "entries", needs=("to_parquet",))
    path = name + '.zarr"'
    src = f"L.TensorDict.from_zarr(({src_x}.to_zarr({path}), {path})[1]).to_tensordict()"
    return step(src, "from_zarr", "entries", needs=("to_zarr",))


ENTRY_FEATURES = [("autograd", 2, autograd), ("built_from", 3, built_from), ("tables", 2, tables)]
