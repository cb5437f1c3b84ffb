"""Random collections, as Python source that builds the same collection in either library.

A world is the first lines of a program: ``x = <expression>`` and sometimes a memory-mapped
copy (``x = x.memmap(D + "/w")``), a reload from that folder, ``x.lock_()``, or an HDF5
file holding ``x`` (``h5_lines``: a ``PersistentTensorDict``; ``h5_record_lines``: a
record over one; ``h5_members``: a lazy stack of files), then sometimes a world derived
from it (``derived``: a ``TensorDictParams``, a view at an index, a shape op). The
expression uses only the names every program namespace defines: ``L`` (the library),
``torch``, ``t`` (the tensor helper below), ``I`` (``I[1:, None]`` is an index), ``Rec``
and ``Inner`` (the record classes of ``libs.py``) and ``D`` (a temporary folder of the
library's own).

Tensor values come from ``t(shape, dtype, seed)``, deterministic in its arguments, so a
reported program rebuilds the same values in a fresh process.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import torch

from .chooser import Chooser

# dtype names, weighted by repetition; float32 dominates as in real use.
DTYPES = ("float32",) * 4 + ("float64", "int64", "int64", "int32", "bool", "uint8", "float16")
FLOATS = frozenset({"float32", "float64", "float16", "bfloat16"})
KEYS = ("a", "b", "c", "d")
NODE_KEYS = ("n", "m")
PY_KEYS = ("s", "v")
STRINGS = ('"pong"', '"a"', '""', '"x y"')


def t(shape: tuple[int, ...] | list[int], dtype: str = "float32", seed: int = 0) -> torch.Tensor:
    """A tensor of ``shape`` and ``dtype`` whose values depend only on ``seed``: normal
    floats, ints in [-4, 4] (uint8 in [0, 8]), bools half true."""
    g = torch.Generator().manual_seed(seed)
    kind = getattr(torch, dtype)
    if kind.is_floating_point:
        return torch.randn(tuple(shape), generator=g).to(kind)
    if kind is torch.bool:
        return torch.randint(0, 2, tuple(shape), generator=g).bool()
    low = 0 if kind is torch.uint8 else -4
    return torch.randint(low, low + 9, tuple(shape), generator=g).to(kind)


class _Index:
    """``I[1:, None]`` is the index ``x[1:, None]`` uses, as a value to pass to a call."""

    def __getitem__(self, index: object) -> object:
        return index


I = _Index()  # noqa: E741 (short: programs are read as scripts)


def tensor_src(shape: tuple[int, ...], dtype: str, seed: int) -> str:
    return f"t({list(shape)}, {dtype!r}, {seed})"


@dataclass
class Facts:
    """What the generator knows of a world (the ops re-read the live collection)."""

    kind: str  # "td", "lazy" or "record"
    python_values: bool = False
    memmap: bool = False
    h5: str = ""  # how x came to live in HDF5 files (``h5_lines``...), "" if it does not
    folders: list[str] = field(default_factory=list)
    derived: str = ""  # "params", "index" or "shape": the world is another's result


# --- structures: one shape of tree, rendered once per lazy-stack member ---------------


@dataclass
class Leaf:
    features: tuple[int, ...]
    dtype: str


@dataclass
class Value:
    src: str  # Python source of the value, may use {batch}


@dataclass
class Node:
    extra: tuple[int, ...]  # batch dims added to the parent's
    entries: list[tuple[str, Leaf | Value | Node]]
    plain_dict: bool = False  # written as a dict literal (batch size = the parent's)


def _batch(c: Chooser, dims: int, *, zero: bool = True) -> tuple[int, ...]:
    sides = []
    for _ in range(dims):
        pick = c.integer(0, 9)
        sides.append(0 if pick == 0 and zero else 1 if pick < 4 else c.integer(2, 4))
    return tuple(sides)


def _features(c: Chooser) -> tuple[int, ...]:
    return tuple(c.integer(1, 3) for _ in range(c.choice((0, 0, 1, 1, 2))))


def _python_value(c: Chooser, batch: tuple[int, ...]) -> Value:
    pick = c.integer(0, 5)
    if pick <= 2:
        return Value(c.choice(STRINGS))
    if pick == 3:
        return Value("None")
    if pick == 4 and not batch:
        return Value(str(c.integer(-2, 9)))  # a bare int: a 0-dim tensor in both
    return Value(f"L.NonTensorData({c.integer(-2, 9)}, batch_size={{batch}})")


def structure(c: Chooser, batch: tuple[int, ...], depth: int, python: bool) -> Node:
    """A tree of entries under a node of batch size ``batch``."""
    entries: list[tuple[str, Leaf | Value | Node]] = []
    count = c.choice((0, 1, 2, 2, 3, 3, 4))
    used: set[str] = set()
    for _ in range(count):
        kind = c.integer(0, 9)
        if kind < 6 or (kind < 8 and depth >= 2) or (kind >= 8 and not python):
            key = c.choice(KEYS)
            entry: Leaf | Value | Node = Leaf(_features(c), c.choice(DTYPES))
        elif kind < 8:
            key = c.choice(NODE_KEYS)
            plain = c.chance(30)
            extra = () if plain else _batch(c, c.choice((0, 0, 1)), zero=False)
            entry = structure(c, batch + extra, depth + 1, python)
            entry.extra, entry.plain_dict = extra, plain
        else:
            key = c.choice(PY_KEYS)
            entry = _python_value(c, batch)
        if key not in used:
            used.add(key)
            entries.append((key, entry))
    return Node((), entries)


def render(c: Chooser, node: Node, batch: tuple[int, ...], vary: bool = False) -> str:
    """Source of a TensorDict with ``node``'s entries; ``vary`` changes the last feature
    dim of some leaves (the members of a heterogeneous lazy stack)."""
    items = []
    for key, entry in node.entries:
        if isinstance(entry, Leaf):
            features = entry.features
            if vary and features and c.chance(30):
                features = features[:-1] + (c.integer(1, 3),)
            value = tensor_src(batch + features, entry.dtype, c.integer(0, 999))
        elif isinstance(entry, Value):
            value = entry.src.format(batch=list(batch))
        else:
            value = render(c, entry, batch + entry.extra, vary)
            if entry.plain_dict:
                value = value[len("L.TensorDict(") : value.rindex(", batch_size=")]
        items.append(f"{key!r}: {value}")
    return f"L.TensorDict({{{', '.join(items)}}}, batch_size={list(batch)})"


def _names(c: Chooser, batch: tuple[int, ...]) -> list[str | None]:
    pool = ["i", "j", "k", "l"]
    return [pool[i] if c.chance(80) else None for i in range(len(batch))]


def tensordict_src(c: Chooser, batch: tuple[int, ...], python: bool) -> str:
    src = render(c, structure(c, batch, 0, python), batch)
    if batch and c.chance(15):
        src = src[:-1] + f", names={_names(c, batch)})"
    return src


def lazy_members(c: Chooser, batch: tuple[int, ...]) -> tuple[list[str], int]:
    """The members of a lazy stack of 1-3 TensorDicts of one structure (no Python values:
    stacking them is another branch's work), ``batch`` their batch size, and its dim."""
    tree = structure(c, batch, 1, python=False)
    vary = c.chance(40)
    members = [render(c, tree, batch, vary) for _ in range(c.choice((1, 2, 2, 3)))]
    return members, c.integer(0, len(batch))


def lazy_src(c: Chooser, batch: tuple[int, ...]) -> str:
    members, dim = lazy_members(c, batch)
    return f"L.lazy_stack([{', '.join(members)}], {dim})"


def record_src(c: Chooser, batch: tuple[int, ...]) -> str:
    label = c.choice(STRINGS + ("None",))
    x = tensor_src(batch + _features(c), c.choice(DTYPES), c.integer(0, 999))
    y = tensor_src(batch + _features(c), c.choice(DTYPES), c.integer(0, 999))
    z = tensor_src(batch, "float32", c.integer(0, 999)) if c.chance(30) else "None"
    opt = tensor_src(batch + _features(c), "float32", c.integer(0, 999))
    inner = f"Inner(y={y}, z={z}, batch_size={list(batch)})"
    return (
        f"Rec(x={x}, label={label}, inner={inner}, "
        f"opt={opt if c.chance(50) else 'None'}, batch_size={list(batch)})"
    )


def derived(c: Chooser, facts: Facts, batch: tuple[int, ...]) -> list[str]:
    """Sometimes (1 world in 8) a line that makes ``x`` a result of the collection built:
    a ``TensorDictParams`` of it (TensorDicts only: the peer refuses lazy stacks), a view
    at an index, or a shape op (``permute``, ``transpose``, ``unsqueeze``, ``squeeze``)."""
    if not c.chance(12):
        return []
    pick = c.integer(0, 9)
    if pick < 4 and facts.kind == "td":
        facts.derived = "params"
        return [f"x = L.TensorDictParams(x{c.choice(('', '', ', no_convert=True'))})"]
    if batch and pick < 7:
        facts.derived = "index"
        sub = c.choice(("1:", "-1", "::2", ":, None", "..., :1", "None"))
        if sub == "-1" and not batch[0]:
            sub = "1:"
        return [f"x = x[{sub}]"]
    facts.derived = "shape"
    dims = len(batch)
    if dims >= 2 and c.chance(50):
        turn = c.integer(1, dims - 1)
        order = [*range(turn, dims), *range(turn)]
        op = c.choice((f"permute({', '.join(map(str, order))})", f"transpose(0, {dims - 1})"))
    elif 1 in batch and c.chance(50):
        op = f"squeeze({batch.index(1)})"
    else:
        op = f"unsqueeze({c.integer(-dims - 1, dims)})"
    return [f"x = x.{op}"]


def world(
    c: Chooser, *, kinds: tuple[str, ...] = ("td", "td", "td", "lazy", "record")
) -> tuple[list[str], Facts]:
    """The lines that build ``x``, and what is known of it."""
    kind = c.choice(kinds)
    batch = _batch(c, c.choice((0, 1, 1, 2, 2, 3)))
    members: list[str] = []
    if kind == "lazy":
        members, dim = lazy_members(c, batch[1:] if batch else batch)
        src, facts = f"L.lazy_stack([{', '.join(members)}], {dim})", Facts("lazy")
    elif kind == "record":
        src, facts = record_src(c, batch), Facts("record", python_values=True)
    else:
        python = c.chance(30)
        src, facts = tensordict_src(c, batch, python), Facts("td", python_values=python)
    # (a lazy stack's sides are not known here: 2 stands for "neither 0 nor 1")
    sides = (2,) * max(len(batch), 1) if kind == "lazy" else batch
    more = derived(c, facts, sides)
    lines = [f"x = {src}"]
    if c.chance(12):
        folder = 'D + "/w"'
        facts.memmap = True
        facts.folders.append(folder)
        lines += [*more, f"x = x.memmap({folder})"]
        if c.chance(50):
            loader = "Rec" if kind == "record" else c.choice(("L.TensorDict", "L"))
            if kind == "lazy" and loader == "L.TensorDict":
                loader = "L.LazyStackedTensorDict"
            lines.append(f"x = {loader}.load_memmap({folder})")
    elif c.chance(8):
        lines += [*more, "x.lock_()"]
    # ~10% of the others in a file (a third of the derived ones: a view of the file, a
    # ``TensorDictParams`` of it, a lazy stack of files); not None values (the peer
    # cannot write them) nor shape ops (the peer refuses them on a file)
    elif h5_fits(src, more) and c.chance(30 if more else 12):
        if kind == "lazy":
            lines = [f"x = {h5_members(c, members, dim, facts)}"]
        elif kind == "record":
            lines += h5_record_lines(c, "Rec", facts)
        else:
            lines += h5_lines(c, src, facts)
        lines += [h5_derived(c, line) for line in more]
    else:
        lines += more
    return lines, facts


def h5_fits(src: str, more: list[str]) -> bool:
    """Whether both libraries write the collection of ``src`` to a file and make the
    derived world of ``more`` from the file: no Python value None or list (the peer
    cannot write them), no shape op or ``None`` index (the peer refuses them on a file)."""
    if re.search(r"': None\b|\b(lst|v)=(\[|None)|'(lst|v)': \[", src):
        return False
    return not any(re.search(r"None|\.(permute|transpose|squeeze|unsqueeze)\(", m) for m in more)


def h5_derived(c: Chooser, line: str) -> str:
    """A derived world's line made from a file: a ``TensorDictParams`` of the file or of
    its ``to_tensordict()``; index views as they are."""
    if line.startswith("x = L.TensorDictParams(x") and c.chance(50):
        return line.replace("(x", "(x.to_tensordict()", 1)
    return line


def h5_lines(c: Chooser, src: str, facts: Facts) -> list[str]:
    """``x`` written to an HDF5 file and used from it (a ``PersistentTensorDict``): by
    ``from_dict``, by ``to_h5``, or written, closed and opened again for writing. The
    peer infers the batch sizes and names of a file it opens (tclass reads those it
    wrote), so the reload is drawn only where every node has the root's batch size and
    there are no names."""
    path = 'D + "/w.h5"'
    sizes = set(re.findall(r"batch_size=(\[[^\]]*\])", src))
    same = len(sizes) == 1 and "names=" not in src
    forms = ("from_dict", "to_h5") + (("reload",) if same else ())
    facts.h5 = c.choice(forms)
    if facts.h5 == "from_dict":
        return [f"x = L.PersistentTensorDict.from_dict(x, {path})"]
    if facts.h5 == "to_h5":
        return [f"x = x.to_h5({path})"]
    reopen = f'L.TensorDict.from_h5({path}, mode="r+", batch_size=x.batch_size)'
    return [f"x.to_h5({path}).close()", f"x = {reopen}"]


def h5_members(c: Chooser, members: list[str], dim: int, facts: Facts) -> str:
    """A lazy stack whose members are files, each written by ``from_dict`` or ``to_h5``."""
    facts.h5 = "members"
    files = []
    for i, member in enumerate(members):
        path = f'D + "/w{i}.h5"'
        if c.chance(50):
            files.append(f"L.PersistentTensorDict.from_dict({member}, {path})")
        else:
            files.append(f"{member}.to_h5({path})")
    return f"L.lazy_stack([{', '.join(files)}], {dim})"


def h5_record_lines(c: Chooser, cls: str, facts: Facts) -> list[str]:
    """A record ``x`` of class ``cls`` in an HDF5 file: ``x.to_h5`` (a record over the
    file), written, closed and opened again by ``cls.from_h5(..., mode="r+")``, or
    ``cls.from_tensordict`` of a ``PersistentTensorDict`` holding its entries."""
    path = 'D + "/w.h5"'
    facts.h5 = c.choice(("record_to_h5", "record_reload", "record_from_tensordict"))
    if facts.h5 == "record_to_h5":
        return [f"x = x.to_h5({path})"]
    if facts.h5 == "record_reload":
        reopen = f'{cls}.from_h5({path}, mode="r+", batch_size=x.batch_size)'
        return [f"x.to_h5({path}).close()", f"x = {reopen}"]
    write = c.choice(
        (
            f"L.PersistentTensorDict.from_dict(x.to_tensordict(), {path})",
            f"x.to_tensordict().to_h5({path})",
        )
    )
    return [f"x = {cls}.from_tensordict({write})"]
