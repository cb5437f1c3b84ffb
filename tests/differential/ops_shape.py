"""Families ``shape`` (the batch-shape methods and their torch spellings) and ``combine``
(stack, cat, lazy stacks, pad, pad_sequence)."""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from .chooser import Chooser
from .engine import Step
from .info import Info
from .ops_common import BAD, dim, dims, leaf_value, seed, step
from .world import Facts

# --- shape -----------------------------------------------------------------------------


def _factor(c: Chooser, numel: int) -> list[int]:
    """A shape of ``numel`` elements (1 to 3 dims), with a -1 now and then."""
    if numel == 0:
        shape = [0] + [c.integer(1, 3) for _ in range(c.integer(0, 2))]
        c_shape = shape[:]
        if c.chance(20):
            c_shape[1 if len(c_shape) > 1 else 0] = -1
        return c_shape
    shape = []
    rest = numel
    for _ in range(c.integer(0, 2)):
        divisors = [d for d in range(1, rest + 1) if rest % d == 0]
        d = c.choice(divisors)
        shape.append(d)
        rest //= d
    shape.append(rest)
    if c.chance(25):
        shape[c.integer(0, len(shape) - 1)] = -1
    if c.chance(20):
        shape.insert(c.integer(0, len(shape)), 1)
    return shape


def _as_torch(
    batch: tuple[int, ...], reshaped: Callable[[torch.Tensor], torch.Tensor]
) -> tuple[str, ...]:
    """The tag ``torch-shape=[...]``: the shape torch gives a tensor of the batch size
    (none where torch refuses), which the allowlist compares results with."""
    try:
        return (f"torch-shape={list(reshaped(torch.empty(batch, device='meta')).shape)}",)
    except (RuntimeError, ValueError, IndexError, TypeError):
        return ()


def reshape(c: Chooser, info: Info, facts: Facts) -> Step:
    shape = _factor(c, info.numel)
    if c.chance(BAD):
        shape.append(2)
    name = c.choice(("reshape", "view", "reshape", "view"))
    spelled = c.choice((", ".join(map(str, shape)), repr(shape), repr(tuple(shape))))
    if name == "view" and c.chance(20):
        spelled = f"torch.Size({shape})" if -1 not in shape else spelled
    tags = _as_torch(info.batch, lambda tensor: tensor.reshape(shape))
    return step(f"x.{name}({spelled})", name, "shape", tags=tags)


def set_batch_size(c: Chooser, info: Info, facts: Facts) -> Step:
    cut = c.integer(0, info.ndim)
    size = list(info.batch[:cut])
    if c.chance(20):
        size.append(c.integer(1, 3))
    return step(f"x.batch_size = {size}", "set_batch_size", "shape", "exec")


def permute(c: Chooser, info: Info, facts: Facts) -> Step:
    order = list(range(info.ndim))
    for i in range(len(order) - 1, 0, -1):
        j = c.integer(0, i)
        order[i], order[j] = order[j], order[i]
    order = [d - info.ndim if c.chance(25) else d for d in order]
    if c.chance(BAD):
        order = order[:-1] if order else [0]
    form = c.integer(0, 2)
    if form == 0:
        return step(f"x.permute({', '.join(map(str, order))})", "permute", "shape")
    if form == 1:
        return step(f"x.permute({order})", "permute", "shape")
    return step(f"torch.permute(x, {order})", "permute", "shape")


def transpose(c: Chooser, info: Info, facts: Facts) -> Step:
    a, b = dim(c, info.ndim), dim(c, info.ndim)
    name = c.choice(("transpose", "swapdims", "swapaxes", "transpose"))
    if c.chance(20):
        return step(f"torch.transpose(x, {a}, {b})", "transpose", "shape")
    return step(f"x.{name}({a}, {b})", name, "shape", needs=(name,))


def squeeze(c: Chooser, info: Info, facts: Facts) -> Step:
    forms = (
        ("x.squeeze()", "squeeze"),
        ("x.squeeze({d})", "squeeze"),
        ("torch.squeeze(x, {d})", "squeeze"),
        ("torch.unsqueeze(x, {u})", "unsqueeze"),
        ("x.unsqueeze({u})", "unsqueeze"),
    )
    form, op = forms[c.integer(0, len(forms) - 1)]
    d, u = dim(c, info.ndim), dim(c, info.ndim, inclusive=True)
    return step(form.format(d=d, u=u), op, "shape")


def expand(c: Chooser, info: Info, facts: Facts) -> Step:
    shape = [c.integer(1, 3) for _ in range(c.integer(0, 2))]
    shape += [c.integer(1, 3) if side == 1 and c.chance(50) else side for side in info.batch]
    if c.chance(20):
        shape[-len(info.batch) :] = [-1] * len(info.batch) if info.batch else []
    if c.chance(BAD):
        shape.append(2)
    form = c.integer(0, 3)
    if form == 0:
        return step(f"x.expand({shape})", "expand", "shape")
    if form == 1:
        return step(f"x.expand(torch.Size({[abs(s) for s in shape]}))", "expand", "shape")
    if form == 2:
        return step(f"x.expand_as(t({[abs(s) for s in shape]}))", "expand_as", "shape")
    return step(f"x.expand({', '.join(map(str, shape))})", "expand", "shape")


def flatten(c: Chooser, info: Info, facts: Facts) -> Step:
    if c.chance(50) or info.ndim == 0:
        args = c.choice(("", f"{dim(c, info.ndim)}", f"{dim(c, info.ndim)}, {dim(c, info.ndim)}"))
        tags = ("no-batch-dims",) if info.ndim == 0 else ()
        if c.chance(20):
            src = f"torch.flatten(x{', ' + args if args else ''})"
            return step(src, "flatten", "shape", tags=tags)
        return step(f"x.flatten({args})", "flatten", "shape", tags=tags)
    d = dim(c, info.ndim)
    side = info.batch[d] if -info.ndim <= d < info.ndim else 1
    sizes = _factor(c, side)
    tags = _as_torch(info.batch, lambda tensor: tensor.unflatten(d, sizes))
    return step(f"x.unflatten({d}, {sizes})", "unflatten", "shape", tags=tags)


def split(c: Chooser, info: Info, facts: Facts) -> Step:
    d = dim(c, info.ndim)
    side = info.batch[d] if -info.ndim <= d < info.ndim else 2
    pick = c.integer(0, 5)
    if pick == 0:
        return step(f"x.split({c.integer(1, 3)}, {d})", "split", "shape", "eval")
    if pick == 1:
        sizes = []
        rest = side
        while rest > 0:
            sizes.append(c.integer(1, rest) if not c.chance(10) else 0)
            rest -= sizes[-1]
        if c.chance(BAD):
            sizes.append(1)
        return step(f"x.split({sizes}, dim={d})", "split", "shape", "eval")
    if pick == 2:
        return step(f"x.chunk({c.integer(1, 4)}, {d})", "chunk", "shape", "eval")
    if pick == 3:
        return step(f"x.unbind({d})", "unbind", "shape", "eval")
    if pick == 4:
        return step(f"torch.unbind(x, {d})", "unbind", "shape", "eval")
    return step(f"torch.split(x, {c.integer(1, 3)}, {d})", "split", "shape", "eval")


def flip_roll(c: Chooser, info: Info, facts: Facts) -> Step:
    chosen = list(dims(c, info.ndim)) or [0]
    pick = c.integer(0, 3)
    if pick == 0:
        return step(f"x.flip({chosen})", "flip", "shape", needs=("flip",))
    if pick == 1:
        return step(f"torch.flip(x, {chosen})", "flip", "shape")
    shifts = [c.integer(-3, 3) for _ in chosen]
    if pick == 2:
        return step(f"x.roll({shifts}, {chosen})", "roll", "shape", needs=("roll",))
    return step(f"torch.roll(x, {shifts[0]}, {chosen[0]})", "roll", "shape")


def repeat(c: Chooser, info: Info, facts: Facts) -> Step:
    reps = [c.integer(1, 2) for _ in range(info.ndim + c.choice((0, 0, 1)))]
    pick = c.integer(0, 3)
    if pick == 0:
        return step(f"x.repeat({', '.join(map(str, reps)) or '()'})", "repeat", "shape")
    if pick == 1:
        n = c.integer(0, 2)
        return step(
            f"x.repeat_interleave({n}, dim={dim(c, info.ndim)})",
            "repeat_interleave",
            "shape",
            needs=("repeat_interleave",),
        )
    if pick == 2:
        return step(f"x.tile({reps})", "tile", "shape", needs=("tile",))
    return step(f"torch.tile(x, {reps})", "tile", "shape")


def gather(c: Chooser, info: Info, facts: Facts) -> Step:
    if info.ndim == 0:
        return step("x.gather(0, torch.zeros((), dtype=torch.long))", "gather", "shape")
    d = dim(c, info.ndim)
    side = info.batch[d] if -info.ndim <= d < info.ndim else 1
    shape = list(info.batch)
    if -info.ndim <= d < info.ndim:
        shape[d] = c.integer(0, 3)
    generator = f"torch.Generator().manual_seed({seed(c)})"
    values = f"torch.randint(0, {max(side, 1)}, {shape}, generator={generator})"
    return step(f"x.gather({d}, {values})", "gather", "shape", needs=("gather",))


def narrow(c: Chooser, info: Info, facts: Facts) -> Step:
    d = dim(c, info.ndim)
    side = info.batch[d] if -info.ndim <= d < info.ndim else 1
    start = c.integer(0, side)
    length = c.integer(0, side - start)
    if c.chance(BAD):
        length += 1
    if c.chance(20):
        return step(f"torch.narrow(x, {d}, {start}, {length})", "narrow", "shape")
    return step(f"x.narrow({d}, {start}, {length})", "narrow", "shape", needs=("narrow",))


def movedim(c: Chooser, info: Info, facts: Facts) -> Step:
    a, b = dim(c, info.ndim), dim(c, info.ndim)
    if c.chance(30):
        return step(f"torch.movedim(x, {a}, {b})", "movedim", "shape")
    return step(f"x.movedim({a}, {b})", "movedim", "shape", needs=("movedim",))


# ops34: shape methods the generators above never called (rot90, fliplr / flipud,
# tensor_split, atleast_nd, moveaxis, broadcast_to, size / dim), and the conversions
# between dense and lazy stacks (to_lazystack, densify, to_padded_tensor).


def shape_more(c: Chooser, info: Info, facts: Facts) -> Step:
    pick = c.integer(0, 8)
    a, b = dim(c, info.ndim), dim(c, info.ndim)
    if pick == 0:
        k = c.choice(("", "2", "-1", "3"))
        dims_ = c.choice(("", f", ({a}, {b})", f", [{a}, {b}]"))
        args = f"{k or 1}{dims_}" if dims_ else k
        return step(f"x.rot90({args})", "rot90", "shape", needs=("rot90",))
    if pick == 1:
        name = c.choice(("fliplr", "flipud"))
        return step(f"x.{name}()", name, "shape", needs=(name,))
    if pick == 2:
        side = info.batch[a] if -info.ndim <= a < info.ndim else 2
        sections = c.choice(
            (str(c.integer(1, 3)), repr(sorted(c.integer(0, side) for _ in range(c.integer(0, 2)))))
        )
        spelled = c.choice((f"{sections}, {a}", f"{sections}, dim={a}", sections))
        return step(f"x.tensor_split({spelled})", "tensor_split", "shape", "eval")
    if pick == 3:
        name = c.choice(("atleast_1d", "atleast_2d", "atleast_3d"))
        return step(f"x.{name}()", name, "shape", needs=(name,))
    if pick == 4:
        return step(f"x.moveaxis({a}, {b})", "moveaxis", "shape", needs=("moveaxis",))
    if pick == 5:
        shape = [c.integer(1, 2) for _ in range(c.integer(0, 1))] + list(info.batch)
        return step(f"x.broadcast_to({shape})", "broadcast_to", "shape", needs=("broadcast_to",))
    if pick == 6:
        return step(
            c.choice((f"x.size({a})", "x.size()", "x.dim()", "x.ndimension()")),
            "size",
            "shape",
            "eval",
        )
    if pick == 7:
        return step(
            f"x.unsqueeze({dim(c, info.ndim, inclusive=True)}).squeeze({a})", "squeeze", "shape"
        )
    return step(f"x.flatten().unflatten(0, {list(info.batch) or [1]})", "unflatten", "shape")


def lazy_forms(c: Chooser, info: Info, facts: Facts) -> Step:
    pick = c.integer(0, 4)
    if pick == 0:
        d = dim(c, info.ndim)
        return step(f"x.to_lazystack({d})", "to_lazystack", "shape", needs=("to_lazystack",))
    if pick == 1:
        # the peer's order of the keys is a set's (its lazy stack's exclusive keys)
        return step("x.densify()", "densify", "shape", needs=("densify",), tags=("any-order",))
    if pick == 2:
        return step("x.contiguous()", "contiguous", "shape")
    if pick == 3:
        value = c.choice(("", "padding=-1", "padding=0.5"))
        return step(
            f"x.to_padded_tensor({value})", "to_padded_tensor", "shape", needs=("to_padded_tensor",)
        )
    return step("x.is_contiguous()", "is_contiguous", "shape", "eval", needs=("is_contiguous",))


SHAPE = [
    ("reshape", 4, reshape),
    ("set_batch_size", 1, set_batch_size),
    ("permute", 2, permute),
    ("transpose", 2, transpose),
    ("squeeze", 3, squeeze),
    ("expand", 2, expand),
    ("flatten", 2, flatten),
    ("split", 3, split),
    ("flip_roll", 2, flip_roll),
    ("repeat", 2, repeat),
    ("gather", 1, gather),
    ("narrow", 1, narrow),
    ("movedim", 1, movedim),
    ("shape_more", 3, shape_more),
    ("lazy_forms", 2, lazy_forms),
]


# --- combine ---------------------------------------------------------------------------


def _other(c: Chooser) -> str:
    return c.choice(("x.clone()", "x.apply(torch.zeros_like)", "x.clone().apply(torch.ones_like)"))


def stack(c: Chooser, info: Info, facts: Facts) -> Step:
    d = dim(c, info.ndim, inclusive=True)
    items = ", ".join(["x"] + [_other(c) for _ in range(c.integer(0, 2))])
    name = c.choice(("torch.stack", "L.stack", "torch.stack", "L.maybe_dense_stack"))
    spelled = f"{name}([{items}], {d})" if c.chance(70) else f"{name}([{items}], dim={d})"
    return step(spelled, name.split(".")[-1], "combine", needs=(name,) if name[0] == "L" else ())


def cat(c: Chooser, info: Info, facts: Facts) -> Step:
    d = dim(c, info.ndim)
    part = "x"
    if info.ndim and c.chance(40):
        part = f"x[{':, ' * (d % info.ndim)}:1]"
    items = ", ".join(["x", part] + ([_other(c)] if c.chance(30) else []))
    name = c.choice(("torch.cat", "L.cat", "torch.cat"))
    return step(f"{name}([{items}], {d})", "cat", "combine")


def lazy(c: Chooser, info: Info, facts: Facts) -> Step:
    d = dim(c, info.ndim, inclusive=True)
    items = ", ".join(["x"] + [_other(c) for _ in range(c.integer(0, 2))])
    form = c.choice(
        (
            "L.lazy_stack([{items}], {d})",
            "L.LazyStackedTensorDict.lazy_stack([{items}], dim={d})",
            "L.LazyStackedTensorDict({items}, stack_dim={d})",
        )
    )
    return step(form.format(items=items, d=d), "lazy_stack", "combine")


def pad(c: Chooser, info: Info, facts: Facts) -> Step:
    widths = [c.integer(0, 2) for _ in range(2 * c.integer(1, max(info.ndim, 1)))]
    value = c.choice(("", ", value=0", ", value=-1", ", value=1.5"))
    return step(f"L.pad(x, {widths}{value})", "pad", "combine")


def pad_sequence(c: Chooser, info: Info, facts: Facts) -> Step:
    if not info.ndim:
        return pad(c, info, facts)
    side = info.batch[0]
    items = ["x"] + [f"x[:{c.integer(0, side)}]" for _ in range(c.integer(0, 2))]
    extra = c.choice(("", ", return_mask=True", ", padding_value=-1", ", pad_dim=0"))
    src = f"L.pad_sequence([{', '.join(items)}]{extra})"
    return step(src, "pad_sequence", "combine", tags=("any-order",))


def reassemble(c: Chooser, info: Info, facts: Facts) -> Step:
    """Split-and-join round trips: the pieces must fit back together the same way."""
    d = dim(c, info.ndim)
    pick = c.integer(0, 2)
    if pick == 0:
        return step(f"torch.stack(x.unbind({d}), {d})", "unbind_stack", "combine")
    if pick == 1:
        return step(f"torch.cat(x.split(1, {d}), {d})", "split_cat", "combine")
    n = max(1, math.ceil((info.batch[d] if -info.ndim <= d < info.ndim else 1) / 2))
    return step(
        f"L.lazy_stack(list(x.chunk({n}, {d})), {d})", "chunk_lazy", "combine", tags=("ragged",)
    )


COMBINE = [
    ("stack", 4, stack),
    ("cat", 3, cat),
    ("lazy", 3, lazy),
    ("pad", 1, pad),
    ("pad_sequence", 1, pad_sequence),
    ("reassemble", 2, reassemble),
]

__all__ = ["COMBINE", "SHAPE", "SHAPE_METHODS", "leaf_value"]


# --- fz26d: the torch spellings of shape methods no generator called (issue 27): the
# peer handles them in ``__torch_function__``; and the arguments never passed
# (``masked_select(inplace=)``, ``repeat_interleave`` by a tensor / ``output_size``).


def torch_spellings(c: Chooser, info: Info, facts: Facts) -> Step:
    a, b = dim(c, info.ndim), dim(c, info.ndim)
    side = info.batch[a] if -info.ndim <= a < info.ndim else 1
    pick = c.integer(0, 11)
    if pick == 0:
        return step(f"torch.chunk(x, {c.integer(1, 3)}, {a})", "chunk", "shape", "eval")
    if pick == 1:
        sections = c.choice((str(c.integer(1, 3)), repr(sorted({c.integer(0, side), side}))))
        return step(f"torch.tensor_split(x, {sections}, {a})", "tensor_split", "shape", "eval")
    if pick == 2:
        shape = list(info.batch)
        if -info.ndim <= a < info.ndim:
            shape[a] = c.integer(0, 3)
        values = f"t({shape}, 'int64', {seed(c)}).abs() % {max(side, 1)}"
        return step(f"torch.gather(x, {a}, {values})", "gather", "shape")
    if pick == 3:
        mask = leaf_value(c, info.batch, "bool")
        form = c.choice(
            (f"torch.masked_select(x, {mask})", f"x.clone().masked_select({mask}, inplace=True)")
        )
        return step(form, "masked_select", "index")
    if pick == 4:
        n = c.integer(0, 2)
        reps = c.choice((str(n), f"torch.tensor({n})", f"torch.tensor([{n}] * {side})"))
        size = c.choice(("", f", output_size={n * side}"))
        return step(
            f"torch.repeat_interleave(x, {reps}, dim={a}{size})", "repeat_interleave", "shape"
        )
    if pick == 5:
        shape = _factor(c, info.numel)
        tags = _as_torch(info.batch, lambda tensor: tensor.reshape(shape))
        return step(f"torch.reshape(x, {shape})", "reshape", "shape", tags=tags)
    if pick == 6:
        return step(f"torch.rot90(x, {c.choice((1, 2, -1))}, [{a}, {b}])", "rot90", "shape")
    if pick == 7:
        name = c.choice(("swapaxes", "swapdims", "moveaxis"))
        return step(f"torch.{name}(x, {a}, {b})", name, "shape")
    if pick == 8:
        sizes = _factor(c, side)
        tags = _as_torch(info.batch, lambda tensor: tensor.unflatten(a, sizes))
        return step(f"torch.unflatten(x, {a}, {sizes})", "unflatten", "shape", tags=tags)
    if pick == 9:
        name = c.choice(("atleast_1d", "atleast_2d", "atleast_3d", "fliplr", "flipud"))
        return step(f"torch.{name}(x)", name, "shape")
    if pick == 10:
        shape = [c.integer(1, 2) for _ in range(c.integer(0, 1))] + list(info.batch)
        return step(f"torch.broadcast_to(x, {shape})", "broadcast_to", "shape")
    inplace = c.choice(("", ", inplace=True"))
    src = f"x.clone().repeat_interleave({c.integer(0, 2)}, dim={a}{inplace})"
    return step(src, "repeat_interleave", "shape")


def lazy_members(c: Chooser, info: Info, facts: Facts) -> Step:
    """A lazy stack's own list methods: ``append``, ``insert``, ``extend``, and
    ``get_nestedtensor`` (another collection becomes a lazy stack first)."""
    if info.kind != "lazy":
        d = dim(c, info.ndim, inclusive=True)
        return step(f"L.lazy_stack([x, x.clone()], {d})", "lazy_stack", "combine")
    member = c.choice(("x.tensordicts[0].clone()", "x.tensordicts[-1].apply(torch.zeros_like)"))
    pick = c.integer(0, 3)
    if pick == 0:
        return step(f"x.append({member})", "append", "combine", "exec")
    if pick == 1:
        at = c.integer(-1, 2)
        return step(f"x.insert({at}, {member})", "insert", "combine", "exec")
    if pick == 2:
        return step(f"x.extend([{member}, x.tensordicts[0].clone()])", "extend", "combine", "exec")
    k = c.choice(
        [repr(path if len(path) > 1 else path[0]) for path, _, _ in info.leaves] or ['"zz"']
    )
    return step(f"x.get_nestedtensor({k})", "get_nestedtensor", "combine", "eval")


SHAPE_METHODS = [("torch_spellings", 4, torch_spellings), ("lazy_members", 2, lazy_members)]


# --- fz27e: shape methods no generator reached after fz26d (issue 27); the family
# ``features`` (``ops.py``).


def leaves_joined(c: Chooser, info: Info, facts: Facts) -> Step:
    """The leaves joined into one tensor: ``cat_from_tensordict`` /
    ``stack_from_tensordict`` (by dim, sorted or in a given key order); a lazy stack's
    ``valid_keys``; ``view`` by a dtype."""
    d = dim(c, info.ndim + 1)
    pick = c.integer(0, 4)
    if pick < 3:
        name = c.choice(("cat_from_tensordict", "stack_from_tensordict"))
        leaves = [repr(p[0] if len(p) == 1 else p) for p, _, _ in info.leaves]
        order = c.choice(("", ", sorted=True", f", sorted=[{', '.join(leaves[::-1])}]"))
        # a collection of one dtype and feature shape: the form users call it on
        flat = f"x.apply(lambda v: v.float().reshape(*v.shape[: {info.ndim}], -1))"
        src = c.choice(("x", "x.float()", flat))
        return step(f"{src}.{name}({d}{order})", name, "shape", "eval", needs=(name,))
    if pick == 3:
        nested, leaves_only = c.chance(50), c.chance(50)
        if info.kind != "lazy":
            return step(f"list(x.keys({nested}, {leaves_only}))", "keys", "entries", "eval")
        src = f"list(x.valid_keys({nested}, {leaves_only}))"
        return step(src, "valid_keys", "shape", "eval", needs=("valid_keys",))
    dtype = c.choice(("torch.int32", "torch.float32", "torch.uint8", "torch.int64"))
    return step(f"x.view({dtype})", "view_dtype", "shape", needs=("view",))


SHAPE_FEATURES = [("leaves_joined", 2, leaves_joined)]
