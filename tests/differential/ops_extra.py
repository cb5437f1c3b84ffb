"""Family ``extra`` (fz31b, issue 27): the module functions users call beside the methods
that no other family called: ``merge_tensordicts``, ``dense_stack_tds``,
``make_tensordict``, ``unpad_sequence``, ``collate``, ``group_by``, ``assert_close``, the
``torch.nn.functional`` losses, and the safetensors and Arrow round trips. A family of its
own, so that the programs the other families' OPEN lines and pins name keep their draws;
the runner and the short pytest run leave it out unless it is named (``ops.OPT_IN``)."""

from __future__ import annotations

from .chooser import Chooser
from .engine import Step
from .info import Info
from .ops_common import dim, key, seed, step
from .world import Facts

_LOSSES = ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss")


def _other(c: Chooser) -> str:
    return c.choice(("x.clone()", "x.apply(torch.zeros_like)", "x.clone().apply(torch.ones_like)"))


def joined(c: Chooser, info: Info, facts: Facts) -> Step:
    """``merge_tensordicts`` of x and its parts or copies, ``dense_stack_tds`` of x and
    copies (a list or a lazy stack), ``collate`` of x's rows or copies."""
    pick = c.integer(0, 4)
    if pick == 0:
        parts = c.choice(
            (
                f"x, {_other(c)}",
                f"x.select({key(c, info)}, strict=False), x.exclude({key(c, info)})",
                f"{_other(c)}, x, x.select()",
            )
        )
        return step(f"L.merge_tensordicts({parts})", "merge_tensordicts", "extra")
    if pick == 1:
        d = dim(c, info.ndim, inclusive=True)
        items = ", ".join(["x"] + [_other(c) for _ in range(c.integer(0, 2))])
        form = c.choice(("[{items}], {d}", "[{items}], dim={d}", "L.lazy_stack([{items}], {d})"))
        return step(f"L.dense_stack_tds({form.format(items=items, d=d)})", "dense_stack", "extra")
    if pick == 2:
        items = ", ".join(["x"] + [_other(c) for _ in range(c.integer(0, 2))])
        return step(f"L.collate([{items}])", "collate", "extra")
    if pick == 3 and info.ndim:
        return step("L.collate(list(x.unbind(0)))", "collate", "extra")
    return step(f"L.merge_tensordicts(x, {_other(c)}, {_other(c)})", "merge_tensordicts", "extra")


def built(c: Chooser, info: Info, facts: Facts) -> Step:
    """``make_tensordict`` from x's ``to_dict()`` (its batch size, inferred, none),
    ``unpad_sequence`` of a ``pad_sequence`` with its mask, ``group_by`` of a key."""
    pick = c.integer(0, 3)
    if pick == 0:
        batch = c.choice(("batch_size=x.batch_size", "auto_batch_size=True", "", "batch_size=[]"))
        return step(f"L.make_tensordict(x.to_dict(), {batch})", "make_tensordict", "extra")
    if pick == 1 and info.ndim:
        side = info.batch[0]
        items = ", ".join(["x"] + [f"x[:{c.integer(0, side)}]" for _ in range(c.integer(0, 2))])
        # (a record's masks come as a pair in tclass, refused by the peer: README)
        mask = "" if info.kind == "record" else c.choice(("", ", return_mask=True"))
        src = f"L.unpad_sequence(L.pad_sequence([{items}]{mask}))"
        if mask and c.chance(50):
            src = f'L.unpad_sequence(L.pad_sequence([{items}]{mask}), mask="masks")'
        return step(src, "unpad_sequence", "extra")
    if pick == 2:
        return step(f"L.group_by(x, {key(c, info)})", "group_by", "extra")
    src = "L.make_tensordict(x.to_dict(), batch_size=x.batch_size, device='cpu')"
    return step(src, "make_tensordict", "extra")


def losses(c: Chooser, info: Info, facts: Facts) -> Step:
    """The ``torch.nn.functional`` losses of two collections (the peer handles them in
    ``__torch_function__``), of float copies, with each ``reduction``."""
    name = c.choice(_LOSSES)
    other = c.choice(("x.float().apply(torch.zeros_like)", "x.float() * 2", "x.float()"))
    reduction = c.choice(("", ", reduction='sum'", ", reduction='none'", ", reduction='mean'"))
    return step(f"torch.nn.functional.{name}(x.float(), {other}{reduction})", name, "extra")


def checked(c: Chooser, info: Info, facts: Facts) -> Step:
    """``assert_close`` of x and a copy, a changed copy or a part (an ``AssertionError``
    in both where they differ)."""
    other = c.choice(("x.clone()", "x.apply(torch.zeros_like)", "x.select()", "x"))
    extra = c.choice(("", ", intersection=True", ", rtol=0.1, atol=0.1"))
    return step(f"L.assert_close(x, {other}{extra})", "assert_close", "extra", mode="eval")


def round_trips(c: Chooser, info: Info, facts: Facts) -> Step:
    """x written to a safetensors file and read back; to an Arrow table and back."""
    if c.chance(50):
        path = f'D + "/e{seed(c)}.safetensors"'
        src = f"L.from_safetensors((L.to_safetensors(x, {path}), {path})[1])"
        return step(src, "safetensors", "extra")
    nulls = c.choice(("", ", copy=True", ", nulls='fill'"))
    return step(f"L.from_arrow(L.to_arrow(x){nulls})", "arrow", "extra")


EXTRA = [
    ("joined", 3, joined),
    ("built", 3, built),
    ("losses", 2, losses),
    ("checked", 1, checked),
    ("round_trips", 2, round_trips),
]
