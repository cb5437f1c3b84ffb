"""Family ``math``: operators (reflected and in place), pointwise methods, reductions,
comparisons, casts, ``where`` / ``masked_fill`` / ``clamp``, and torch functions."""

from __future__ import annotations

from .chooser import Chooser
from .engine import Step
from .info import Info
from .ops_common import dim, dims, leaf_value, step
from .world import Facts

OPERATORS = ("+", "-", "*", "/", "//", "%", "**")
COMPARISONS = ("==", "!=", "<", "<=", ">", ">=")
BITWISE = ("&", "|", "^")
SCALARS = ("0", "1", "2", "-1", "0.5", "True", "3")


def _operand(c: Chooser, info: Info) -> str:
    pick = c.integer(0, 5)
    if pick < 2:
        return c.choice(SCALARS)
    if pick == 2:
        return "x.clone()"
    if pick == 3:
        return "x.apply(torch.ones_like)"
    if pick == 4:
        return leaf_value(c, info.batch, c.choice(("float32", "int64")))
    return f"torch.tensor({c.choice(SCALARS)})"


def binary(c: Chooser, info: Info, facts: Facts) -> Step:
    op = c.choice(OPERATORS + COMPARISONS + BITWISE)
    other = _operand(c, info)
    pick = c.integer(0, 5)
    tags = ("peer-stops",) if op in ("//",) or (pick == 1 and op in ("**", "%")) else ()
    if pick == 1 and not other.startswith("x"):
        return step(f"{other} {op} x", f"r{op}", "math", tags=tags)
    if pick == 2 and op in OPERATORS + BITWISE:
        return step(f"x {op}= {other}", f"{op}=", "math", "exec")
    return step(f"x {op} {other}", op, "math", tags=tags)


UNARY = (
    "abs", "neg", "exp", "log", "sqrt", "sin", "cos", "sigmoid", "tanh", "floor", "ceil",
    "round", "trunc", "frac", "reciprocal", "sign", "isnan", "isfinite", "isinf", "logical_not",
    "nan_to_num", "expm1", "log1p", "erf", "relu", "sgn", "square", "bitwise_not", "rsqrt",
)  # fmt: skip


def unary(c: Chooser, info: Info, facts: Facts) -> Step:
    name = c.choice(UNARY)
    pick = c.integer(0, 4)
    if pick == 0:
        return step(f"torch.{name}(x)", name, "math")
    if pick == 1 and name not in ("isnan", "isfinite", "isinf"):
        return step(f"x.{name}_()", f"{name}_", "math", needs=(f"{name}_",))
    if pick == 2:
        return step("-x" if name == "neg" else "abs(x)", name, "math")
    return step(f"x.{name}()", name, "math", needs=(name,))


def binary_method(c: Chooser, info: Info, facts: Facts) -> Step:
    name = c.choice(
        ("add", "sub", "mul", "div", "pow", "maximum", "minimum", "lerp", "addcmul", "addcdiv")
    )
    other = _operand(c, info)
    extra = ""
    if name in ("add", "sub") and c.chance(30):
        extra = ", alpha=2"
    if name == "lerp":
        extra = ", 0.3"
    if name in ("addcmul", "addcdiv"):
        other = f"{other}, x.apply(torch.ones_like)"
        extra = c.choice(("", ", value=2"))
    if name == "div" and c.chance(30):
        return step(f'x.div({other}, rounding_mode="floor")', "div", "math", tags=("peer-stops",))
    inplace = "_" if c.chance(30) else ""
    return step(
        f"x.{name}{inplace}({other}{extra})", name + inplace, "math", needs=(name + inplace,)
    )


REDUCTIONS = (
    "sum", "mean", "prod", "std", "var", "max", "min", "amax", "amin", "any", "all",
    "nansum", "nanmean", "norm", "median", "logsumexp", "count_nonzero", "cumsum",
)  # fmt: skip


def reduction(c: Chooser, info: Info, facts: Facts) -> Step:
    name = c.choice(REDUCTIONS)
    args: list[str] = []
    pick = c.integer(0, 4)
    tags: list[str] = []
    if pick == 1 or name == "cumsum":
        args.append(f"dim={dim(c, info.ndim)}")
    elif pick == 2 and info.ndim:
        chosen = dims(c, info.ndim)
        args.append(f"dim={chosen!r}")
        tags.append("dim-tuple")
        if len(chosen) > 1:
            tags.append("multi-dim")
    if args and name in ("max", "min"):
        tags.append("values-indices")
    if args and c.chance(40) and name != "cumsum":
        args.append("keepdim=True")
    if c.chance(20) and name not in ("cumsum",):
        args.append("reduce=True")
    if name == "cumsum":
        tags.append("peer-stops")
    if info.kind == "lazy":
        tags.append("lazy-reduce")
    src = f"x.{name}({', '.join(args)})"
    if c.chance(15) and not args:
        src = f"torch.{name}(x)"
    return step(src, name, "math", needs=(name,), tags=tuple(tags))


CASTS = ("float", "double", "half", "int", "long", "bool", "bfloat16", "byte")


def cast(c: Chooser, info: Info, facts: Facts) -> Step:
    pick = c.integer(0, 3)
    if pick == 0:
        name = c.choice(CASTS)
        tags = ("peer-stops",) if name in ("long", "byte") else ()
        return step(f"x.{name}()", name, "math", needs=(name,), tags=tags)
    dtype = c.choice(("torch.float32", "torch.int64", "torch.bool", "torch.float16", "torch.uint8"))
    if pick == 1:
        return step(f"x.to({dtype})", "to_dtype", "math")
    if pick == 2:
        return step(f"x.type({dtype})", "type", "math", needs=("type",))
    return step(f"x.to(dtype={dtype})", "to_dtype", "math")


def where(c: Chooser, info: Info, facts: Facts) -> Step:
    cond = leaf_value(c, info.batch, "bool")
    other = c.choice(("0", "x.apply(torch.zeros_like)", "1.5", "x.clone()"))
    pick = c.integer(0, 4)
    if pick == 0:
        return step(f"x.where({cond}, {other})", "where", "math", needs=("where",))
    if pick == 1:
        return step(f"torch.where({cond}, x, {other})", "torch.where", "math")
    if pick == 2:
        lo, hi = c.choice((("-0.5", "0.5"), ("0", "None"), ("None", "1"), ("1", "-1")))
        return step(f"x.clamp({lo}, {hi})", "clamp", "math", needs=("clamp",))
    if pick == 3:
        name = c.choice(("clamp_min", "clamp_max"))
        return step(f"x.{name}(0)", name, "math", needs=(name,))
    return step("torch.clamp(x, min=0)", "torch.clamp", "math")


def torch_functions(c: Chooser, info: Info, facts: Facts) -> Step:
    pick = c.integer(0, 9)
    forms = {
        0: "torch.zeros_like(x)",
        1: "torch.ones_like(x)",
        2: "torch.full_like(x, 2)",
        3: "torch.clone(x)",
        4: "torch.empty_like(x).zero_()",
        5: "torch.isclose(x, x.clone()).all()",
        6: "torch.allclose(x, x.clone())",
        7: "(x == x.clone()).all()",
        8: "(x != x.clone()).any()",
        9: "x.all()",
    }
    src = forms[pick]
    return step(src, src.split("(")[0], "math")


# --- ops34: methods the generators above never called (issue 27: the acceptance run's
# programs call whatever a user calls). Added at the end of ``MATH`` so that the draws of
# the programs that pick none of them stay as they were.

UNARY_MORE = (
    "acos", "asin", "atan", "cosh", "sinh", "tan", "log10", "log2", "lgamma", "erfc",
    "isneginf", "isposinf", "isreal", "neg", "sign",
)  # fmt: skip
_PREDICATES = ("isneginf", "isposinf", "isreal")


def unary_more(c: Chooser, info: Info, facts: Facts) -> Step:
    name = c.choice(UNARY_MORE)
    if c.chance(30) and name not in _PREDICATES:
        return step(f"x.{name}_()", f"{name}_", "math", needs=(f"{name}_",))
    if c.chance(20):
        return step(f"torch.{name}(x)", name, "math")
    return step(f"x.{name}()", name, "math", needs=(name,))


def reduction_kwargs(c: Chooser, info: Info, facts: Facts) -> Step:
    """Reductions with the keyword arguments users pass: ``correction``, ``dtype``,
    ``keepdim`` spelled out, ``dim="feature"``, ``quantile``, ``logsumexp``,
    ``softmax``, ``cummax`` / ``cummin``."""
    pick = c.integer(0, 9)
    d = dim(c, info.ndim)
    keep = c.choice(("", ", keepdim=True", ", keepdim=False"))
    tags: list[str] = ["lazy-reduce"] if info.kind == "lazy" else []
    if pick == 0:
        name = c.choice(("std", "var"))
        corr = c.choice(("correction=0", "correction=1", "correction=2"))
        args = c.choice((corr, f"{d}, {corr}", f"dim={d}{keep}, {corr}"))
        src = f"x.{name}({args})"
    elif pick == 1:
        name = c.choice(("sum", "mean", "prod", "nanmean", "nansum"))
        dtype = c.choice(("torch.float64", "torch.float32"))
        args = c.choice((f"dtype={dtype}", f"{d}, dtype={dtype}", f"dim={d}{keep}"))
        src = f"x.{name}({args})"
    elif pick == 2:
        # the reductions the peer takes dim="feature" for (its max / amax / any / all
        # refuse it or fail on it)
        name = c.choice(("sum", "mean", "std", "var", "prod", "nansum"))
        src = f'x.{name}(dim="feature")'
        tags.append("feature")
    elif pick == 3:
        q = c.choice(("0.5", "0.25", "torch.tensor([0.2, 0.8])"))
        args = c.choice((q, f"{q}, {d}", f"{q}, dim={d}{keep}"))
        interp = c.choice(("", ', interpolation="nearest"', ', interpolation="lower"'))
        src = f"x.quantile({args}{interp})"
    elif pick == 4:
        src = c.choice(
            (f"x.logsumexp({d})", f"x.logsumexp(dim={d}{keep})", f"torch.logsumexp(x, {d})")
        )
        name = "logsumexp"
    elif pick == 5:
        dtype = c.choice(("", ", dtype=torch.float64"))
        src = c.choice((f"x.softmax({d}{dtype})", f"torch.softmax(x, {d})"))
        name = "softmax"
    elif pick == 6:
        name = c.choice(("cummax", "cummin"))
        indices = c.choice(("", ", return_indices=False", ", reduce=True"))
        src = f"x.{name}({d}{indices})"
        tags.append("values-indices")
    elif pick == 7:
        name = c.choice(("max", "min"))
        src = f"x.{name}(dim={d}{keep}, return_indices={c.chance(50)})"
        tags.append("values-indices")
    elif pick == 8:
        name = c.choice(("any", "all", "amax", "amin", "nansum", "std"))
        chosen = dims(c, info.ndim) if info.ndim else ()
        args = f"dim={chosen!r}" if chosen else f"{d}"
        src = f"x.{name}({args}{keep})"
        if chosen:  # the tags of ``reduction``'s tuples (the allowlist reads them)
            tags += ["dim-tuple"] + (["multi-dim"] if len(chosen) > 1 else [])
    else:
        name = "norm"
        src = c.choice(("x.norm()", "x.norm(dtype=torch.float64)", "x.float().norm()"))
    # the op is the reduction (``x.float().norm()`` is a norm, not a cast)
    op = "norm" if src == "x.float().norm()" else src.split("(")[0]
    op = op.removeprefix("x.").removeprefix("torch.")
    if "reduce=True" in src:
        tags.append("reduce")
    return step(src, op, "math", tags=tuple(tags))


def logical(c: Chooser, info: Info, facts: Facts) -> Step:
    """Two-operand methods the operators do not spell: ``logical_and``, ``bitwise_and``,
    ``rsub``, ``mod``, ``clamp_min_`` / ``clamp_max_``, ``clamp``
    with collections as bounds."""
    other = _operand(c, info)
    pick = c.integer(0, 6)
    if pick == 0:
        return step(f"x.logical_and({other})", "logical_and", "math", needs=("logical_and",))
    if pick == 1:
        return step(f"x.bool().bitwise_and({other} != 0)", "bitwise_and", "math")
    if pick == 2:
        name = c.choice(("rsub", "mod", "rsub", "mod"))
        return step(f"x.{name}({other})", name, "math", needs=(name,))
    if pick == 3:
        name = c.choice(("clamp_min_", "clamp_max_"))
        return step(f"x.{name}({c.choice(('0', '0.5', '-1'))})", name, "math", needs=(name,))
    if pick == 4:
        # bounds both collections or both numbers (the peer refuses them mixed)
        lo, hi = c.choice(
            (
                ("x.apply(torch.zeros_like)", "x.apply(torch.ones_like)"),
                ("x.apply(torch.zeros_like)", "None"),
                ("None", "1"),
                ("0", "1"),
            )
        )
        return step(f"x.clamp(min={lo}, max={hi})", "clamp", "math", needs=("clamp",))
    if pick == 5:
        return step("x.clamp_(-1, 1)", "clamp_", "math", needs=("clamp_",))
    name = c.choice(("maximum", "minimum"))
    return step(f"torch.{name}(x, {other})", f"torch.{name}", "math")


def new_like(c: Chooser, info: Info, facts: Facts) -> Step:
    """``new_zeros`` and friends, ``fill_``, ``zero_grad``, the rarer casts."""
    size = [c.integer(0, 3) for _ in range(c.integer(0, 2))]
    spelled = c.choice((repr(size), ", ".join(map(str, size)) or "()", repr(tuple(size))))
    pick = c.integer(0, 6)
    if pick == 0:
        name = c.choice(("new_zeros", "new_ones"))
        dtype = c.choice(("", ", dtype=torch.float64", ", dtype=torch.bool"))
        return step(f"x.{name}({spelled}{dtype})", name, "math", needs=(name,))
    if pick == 1:
        return step(f"x.new_full({size!r}, 2.5)", "new_full", "math", needs=("new_full",))
    if pick == 2:
        return step(f"x.new_empty({spelled}).zero_()", "new_empty", "math", needs=("new_empty",))
    if pick == 3:
        keys = [repr(path if len(path) > 1 else path[0]) for path, _, _ in info.leaves] or ['"zz"']
        value = c.choice(("0", "1", "True", "-2.5"))
        return step(f"x.fill_({c.choice(keys)}, {value})", "fill_", "math", needs=("fill_",))
    if pick == 4:
        name = c.choice(("int8", "int16", "int32", "uint16", "float16", "float64", "complex64"))
        return step(f"x.{name}()", name, "math", needs=(name,))
    if pick == 5:
        return step("x.new_tensor(x.clone())", "new_tensor", "math", needs=("new_tensor",))
    return step("x.clone().requires_grad_(False)", "requires_grad_", "math")


MATH = [
    ("binary", 6, binary),
    ("unary", 4, unary),
    ("binary_method", 3, binary_method),
    ("reduction", 4, reduction),
    ("cast", 3, cast),
    ("where", 2, where),
    ("torch_functions", 2, torch_functions),
    ("unary_more", 2, unary_more),
    ("reduction_kwargs", 3, reduction_kwargs),
    ("logical", 1, logical),
    ("new_like", 1, new_like),
]


# --- fz26d: math methods and arguments no generator called (issue 27); the family
# ``methods`` (``ops.py``).

_TRANSFORMS = ('lambda k: k + "_s"', "lambda k: k", 'lambda k: "r"')


def math_uncalled(c: Chooser, info: Info, facts: Facts) -> Step:
    """The casts ``uint32`` / ``uint64`` / ``complex128``, the torch spellings of the
    reductions with dims, ``key_transform``, ``lerp`` by a collection, ``pow(default=)``,
    ``logsumexp(out=)``."""
    d = dim(c, info.ndim)
    keep = c.choice(("", ", keepdim=True"))
    tags: list[str] = ["lazy-reduce"] if info.kind == "lazy" else []
    pick = c.integer(0, 5)
    if pick == 0:
        name = c.choice(("uint32", "uint64", "complex128"))
        return step(f"x.{name}()", name, "math", needs=(name,))
    if pick == 1:
        name = c.choice(("sum", "mean", "std", "var", "nansum", "prod"))
        args = c.choice((f"{d}", f"dim={d}{keep}", f"dim={d}, keepdim=True"))
        return step(f"torch.{name}(x, {args})", name, "math", tags=tuple(tags))
    if pick == 2:  # reduce=True and key_transform: the reduction of every leaf, keys renamed
        name = c.choice(("sum", "mean", "std", "var", "nansum", "nanmean", "prod", "norm"))
        fn = c.choice(_TRANSFORMS)
        args = f"key_transform={fn}" if name == "norm" else f"dim={d}, key_transform={fn}"
        return step(f"x.{name}({args})", name, "math", tags=(*tags, "key-transform"))
    if pick == 3:
        weight = c.choice(("x.apply(torch.ones_like) * 0.5", "0.25", "torch.tensor(0.5)"))
        return step(f"x.lerp(x.apply(torch.zeros_like), {weight})", "lerp", "math")
    if pick == 4:
        other = c.choice(('{"a": 2}', "x.select()", "x.clone()"))
        default = c.choice(("", ', default="intersection"', ", default=1"))
        return step(f"x.pow({other}{default})", "pow", "math", tags=("others",))
    return step(
        f"x.logsumexp({d}{keep}, out=x.logsumexp({d}{keep}).apply(torch.zeros_like))",
        "logsumexp",
        "math",
        tags=tuple(tags),
    )


MATH_METHODS = [("math_uncalled", 3, math_uncalled)]
