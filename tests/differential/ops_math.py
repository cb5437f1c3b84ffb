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


MATH = [
    ("binary", 6, binary),
    ("unary", 4, unary),
    ("binary_method", 3, binary_method),
    ("reduction", 4, reduction),
    ("cast", 3, cast),
    ("where", 2, where),
    ("torch_functions", 2, torch_functions),
]
