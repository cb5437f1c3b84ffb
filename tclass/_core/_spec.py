"""Shape-and-dtype specs of tensor fields: parsing, matching, allocation (pure).

A field's annotation may say what its tensors look like, in one of two spellings:

* tclass's own, with no dependency: ``Annotated[Tensor, Spec("3 h w", torch.uint8)]``.
  The dims are the **feature dims** only (those after the batch dims, which are
  ``batch_size``'s business);
* jaxtyping's (an optional extra): ``UInt8[Tensor, "*batch 3 h w"]``, which describes
  the **whole tensor**: its leading dims stand for the batch dims, and are left to
  ``batch_size`` (see :meth:`TensorSpec.features`).

Both use jaxtyping's grammar, one dim per whitespace-separated token:

==============  ==================================================================
``3``           exactly 3
``h``           any size, the same for every field of a record that names ``h``
``_``, ``_h``   any size, not compared with anything
``#h``, ``#3``  as ``h`` or ``3``, or 1 (broadcastable)
``*rest``       any number of dims (at most one variadic per spec), the same
                tuple for every field naming ``rest``; ``...``: any, unnamed
``h+1``         an expression over other dims (``+ - * // %``, parentheses)
``name=expr``   ``expr``; ``name`` only documents it
==============  ==================================================================

Named dims bind across the fields of one record (``RecordSpecs`` in ``_record_spec``).
Everything here works on shapes and dtypes alone.
"""

from __future__ import annotations

import ast
import dataclasses
import keyword
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import CodeType
from typing import Any, NamedTuple

import numpy as np
import torch

from tclass._core._constraints import Constraints, constraints_from
from tclass.errors import SpecSyntaxError

__all__ = [
    "ANON",
    "FIXED",
    "NAMED",
    "SYMBOLIC",
    "VARIADIC",
    "Bound",
    "Dim",
    "Spec",
    "TensorSpec",
    "allocation_dtype",
    "viewable",
    "allocation_shape",
    "array_type_of",
    "dtype_names",
    "exact_tensor",
    "inexact_value",
    "parse_dims",
    "spec_of",
]

FIXED, NAMED, ANON, SYMBOLIC, VARIADIC = range(5)
Bound = dict[str, "int | tuple[int, ...]"]  # a record's named dims, as bound so far


class Dim(NamedTuple):
    """One token of a spec."""

    kind: int  # FIXED, NAMED, ANON, SYMBOLIC or VARIADIC
    name: str | None = None  # NAMED, VARIADIC (None: "..."), SYMBOLIC (the expression)
    size: int = -1  # FIXED
    broadcast: bool = False  # '#': 1 also fits
    code: CodeType | None = None  # SYMBOLIC, compiled
    names: tuple[str, ...] = ()  # SYMBOLIC: the dims it reads

    @property
    def text(self) -> str:
        mark = "#" if self.broadcast else ""
        if self.kind == FIXED:
            return f"{mark}{self.size}"
        if self.kind == VARIADIC:
            return "..." if self.name is None else f"*{mark}{self.name}"
        if self.kind == ANON:
            return "_"
        return f"{mark}{self.name}"


_ALLOWED_NODES = (
    ast.Expression, ast.BinOp, ast.UnaryOp, ast.Name, ast.Load, ast.Constant,
    ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod, ast.USub, ast.UAdd,
)  # fmt: skip


def parse_dims(text: str, where: str = "") -> tuple[Dim, ...]:
    """The dims of a spec string (jaxtyping's grammar, see the module docstring).

    Raises:
        SpecSyntaxError: naming the token and ``where`` the spec was written.
    """
    if not isinstance(text, str):
        raise SpecSyntaxError(f"{where}dims must be a string like '3 h w', got {text!r}")
    dims = tuple(_parse_token(token, text, where) for token in text.split())
    if sum(dim.kind == VARIADIC for dim in dims) > 1:
        msg = f"{where}{text!r} has more than one variadic dim (*name or ...); keep one"
        raise SpecSyntaxError(msg)
    return dims


def _parse_token(token: str, text: str, where: str) -> Dim:
    def bad(why: str) -> SpecSyntaxError:
        return SpecSyntaxError(f"{where}cannot read the dim {token!r} of {text!r}: {why}")

    if token == "...":
        return Dim(VARIADIC)
    body = token
    if body.count("=") == 1 and body.split("=")[0].isidentifier():
        body = body.split("=")[1]  # "name=expr": the name documents the expression
    broadcast = variadic = anonymous = False
    while body[:1] in ("#", "*", "_", "?"):
        mark, rest = body[0], body[1:]
        if mark == "_" and rest and rest[0] not in "#*?":
            if not rest.isidentifier():
                raise bad("'_' must be followed by a name (an anonymous dim) or nothing")
            anonymous, body = True, ""  # "_h": an anonymous dim, h only documents it
            break
        broadcast |= mark == "#"
        variadic |= mark == "*"
        anonymous |= mark == "_"
        body = rest  # "?" (jaxtyping's tree-path dims) reads as a plain dim here
    if body.isdigit():
        if variadic or anonymous:
            raise bad("a fixed size cannot be variadic or anonymous")
        return Dim(FIXED, size=int(body), broadcast=broadcast)
    if body == "" or (body.isidentifier() and not keyword.iskeyword(body)):
        if variadic:
            return Dim(VARIADIC, None if anonymous or not body else body, broadcast=broadcast)
        if anonymous or not body:
            if not anonymous:
                raise bad("a mark (#, *) needs a name or a size after it")
            return Dim(ANON)
        return Dim(NAMED, body, broadcast=broadcast)
    if variadic or anonymous or broadcast:
        raise bad("an expression cannot be variadic, anonymous or broadcastable")
    return _symbolic(body, bad)


def _symbolic(body: str, bad: Any) -> Dim:
    try:
        tree = ast.parse(body, mode="eval")
    except SyntaxError:
        raise bad("not a size, a name or an expression") from None
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED_NODES):
            raise bad("expressions may use sizes, names, + - * // % and parentheses")
        if isinstance(node, ast.Constant) and type(node.value) is not int:
            raise bad("expressions may use integer constants only")
    names = tuple(sorted({node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}))
    code = compile(tree, f"<spec {body}>", "eval")
    return Dim(SYMBOLIC, body, code=code, names=names)


# --- the annotation side ---------------------------------------------------------------


class Spec:
    """The shape, dtype and value constraints of a tensor field, in an annotation::

        obs: Annotated[torch.Tensor, Spec("3 h w", torch.uint8)]
        reward: Annotated[torch.Tensor, Spec("", torch.float32)]  # one value per row
        mask: Annotated[torch.Tensor, Spec("h w", torch.bool)]  # h, w as in obs
        prob: Annotated[torch.Tensor, Spec("k", torch.float32, ge=0, le=1)]

    ``dims`` are the feature dims (after the batch dims), in jaxtyping's grammar
    (``3``, ``h``, ``_``, ``#h``, ``*rest``, ``...``, ``h+1``); ``"..."`` (the default)
    is any shape. ``dtype`` is a dtype, several, or ``None`` for any. The keywords bound
    the values (see ``_constraints``): ``ge``, ``gt``, ``le``, ``lt`` (a NaN breaks
    each), ``isin`` (the allowed values), ``finite`` (no NaN nor infinity) and
    ``multiple_of``; annotated-types' ``Ge(0)``, ``Interval(...)``... next to the
    ``Spec`` say the same. Checked when a record is built, on every write into it and
    when it is loaded; type checkers see the field as ``Tensor``.

    Raises:
        SpecSyntaxError: if ``dims`` cannot be read, or a constraint is malformed.
    """

    __slots__ = ("dims", "dtypes", "constraints", "_parsed")

    def __init__(
        self,
        dims: str = "...",
        dtype: torch.dtype | Iterable[torch.dtype] | None = None,
        *,
        ge: float | None = None,
        gt: float | None = None,
        le: float | None = None,
        lt: float | None = None,
        isin: Iterable[float] | torch.Tensor | None = None,
        finite: bool = False,
        multiple_of: float | None = None,
    ) -> None:
        self._parsed = parse_dims(dims, "Spec: ")
        self.dims = dims
        self.dtypes = _as_dtypes(dtype)
        given = {"ge": ge, "gt": gt, "le": le, "lt": lt, "isin": isin, "finite": finite}
        self.constraints = Constraints.build({**given, "multiple_of": multiple_of}, "Spec: ")

    def __repr__(self) -> str:
        parts = [repr(self.dims)]
        if self.dtypes is not None:
            names = sorted(str(dtype) for dtype in self.dtypes)
            parts.append(names[0] if len(names) == 1 else "(" + ", ".join(names) + ")")
        if self.constraints is not None:
            parts.append(self.constraints.text)
        return f"Spec({', '.join(parts)})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Spec) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def _key(self) -> tuple[object, ...]:
        return (self.dims, self.dtypes, self.constraints)


def _as_dtypes(dtype: object) -> frozenset[torch.dtype] | None:
    if dtype is None:
        return None
    if isinstance(dtype, torch.dtype):
        return frozenset((dtype,))
    if isinstance(dtype, Iterable) and not isinstance(dtype, (str, bytes)):
        items = frozenset(dtype)
        if items and all(isinstance(item, torch.dtype) for item in items):
            return items
    msg = f"Spec: dtype must be a torch.dtype, several, or None; got {dtype!r}"
    raise SpecSyntaxError(msg)


@dataclass(frozen=True)
class TensorSpec:
    """What one field's annotation says of its tensors, whichever spelling wrote it."""

    dims: tuple[Dim, ...]  # ("...",): any shape
    dtypes: frozenset[torch.dtype] | None  # None: any dtype
    whole: bool  # jaxtyping: the dims describe the whole tensor, batch dims first
    text: str  # the spec as written, for messages: Spec('3 h w', torch.uint8)
    dims_text: str = "..."
    constraints: Constraints | None = None  # bounds of the values

    @property
    def variadic(self) -> int | None:
        """The index of the variadic dim, if any."""
        for index, dim in enumerate(self.dims):
            if dim.kind == VARIADIC:
                return index
        return None

    @property
    def any_shape(self) -> bool:
        """Whether every shape fits (``...`` alone)."""
        return len(self.dims) == 1 and self.dims[0].kind == VARIADIC and self.dims[0].name is None

    def placement(
        self, ndim: int, batch_ndim: int, field: bool = False
    ) -> list[tuple[Dim, int, int]] | None:
        """Where each of the spec's dims falls on a tensor of ``ndim`` dims whose first
        ``batch_ndim`` are batch dims: ``(dim, start, stop)`` tensor positions (a
        variadic spans several); None when the tensor has too few or too many dims.

        A tclass ``Spec`` describes the feature dims exactly. A jaxtyping spec describes
        the whole tensor. Without a variadic it is aligned on the right, the dims that
        fall on batch dims being left to ``batch_size`` (a record stacked further has
        more batch dims than the spec names), and every feature dim must be described;
        in a record's ``field`` with no batch dims, leading dims the tensor lacks are
        batch dims indexing dropped (``b`` of ``"b 3"`` in a row, shape ``[3]``): they
        have no place.
        With a variadic (``*batch`` first, usually), the dims before it sit on the first
        dims of the tensor, those after it on the last, which must be feature dims.
        """
        dims, v = self.dims, self.variadic
        k, f = len(dims), ndim - batch_ndim
        if v is None:
            row = field and not batch_ndim
            if not (f <= k and (row or k <= ndim) if self.whole else k == f):
                return None
            start = ndim - k
            return [(d, start + i, start + i + 1) for i, d in enumerate(dims) if start + i >= 0]
        base = 0 if self.whole else batch_ndim
        tail = k - v - 1
        if ndim - base < k - 1 or f < tail:
            return None
        places = [(dim, base + i, base + i + 1) for i, dim in enumerate(dims[:v])]
        places.append((dims[v], base + v, ndim - tail))
        end = ndim - tail
        places += [(dim, end + j, end + j + 1) for j, dim in enumerate(dims[v + 1 :])]
        return places

    def rank_text(self) -> str:
        """How many dims the spec wants, for messages."""
        fixed = sum(dim.kind != VARIADIC for dim in self.dims)
        more = " or more" if self.variadic is not None else ""
        if self.whole:
            return f"{fixed}{more} dims in all, the leading ones batch dims"
        return f"{fixed}{more} feature dim(s)"

    def feature_dims(self, batch_ndim: int) -> tuple[Dim, ...] | None:
        """The dims that describe the features of a tensor allocated under a batch of
        ``batch_ndim`` dims (what ``placement`` gives for the tensor it allocates);
        None when the spec names fewer dims than the batch has."""
        if not self.whole:
            return self.dims
        v = self.variadic
        if v is None:
            return self.dims[batch_ndim:] if len(self.dims) >= batch_ndim else None
        return self.dims[v + 1 :] if v < batch_ndim else self.dims[batch_ndim:]

    def to_json(self) -> dict[str, Any]:
        """The spec as a saved schema records it."""
        out = {
            "dims": self.dims_text,
            "whole": self.whole,
            "dtypes": dtype_names(self.dtypes),
            "text": self.text,
        }
        if self.constraints is not None:
            out["constraints"] = self.constraints.to_json()
        return out


def allocation_dtype(spec: TensorSpec | None) -> torch.dtype:
    """The dtype a preallocated field gets: its only dtype, else the first of torch's
    default float dtype, int64, bool, uint8 the spec allows, else its first by name."""
    allowed = None if spec is None else spec.dtypes
    default = torch.get_default_dtype()
    if allowed is None:
        return default
    for preferred in (default, torch.int64, torch.bool, torch.uint8, torch.float64):
        if preferred in allowed:
            return preferred
    return min(allowed, key=str)


def dtype_names(dtypes: frozenset[torch.dtype] | None) -> list[str] | None:
    """The dtypes as the saved format names them (``torch.uint8``), sorted."""
    return None if dtypes is None else sorted(str(dtype) for dtype in dtypes)


# --- values that are not tensors yet ----------------------------------------------------


def viewable(value: Any) -> Any:
    """``value``, or where it is a numpy array torch cannot view (negative strides:
    ``a[::-1]``, ``np.flip``) a contiguous copy of it, which ``torch.as_tensor`` takes
    (as the peer copies such an array)."""
    if isinstance(value, np.ndarray) and any(stride < 0 for stride in value.strides):
        return np.ascontiguousarray(value)
    return value


def exact_tensor(value: object) -> torch.Tensor:
    """An array-like (a number, a list, a numpy array) as a tensor of its own dtype, a
    Python float as float64: nothing rounded yet, so that :func:`inexact_value` judges
    the values given.

    Raises:
        TypeError, ValueError, RuntimeError: from ``torch.as_tensor``, for a value that
            is not an array-like.
    """
    tensor = torch.as_tensor(value)
    if tensor.is_floating_point() and not isinstance(value, (torch.Tensor, np.ndarray, np.generic)):
        return torch.as_tensor(value, dtype=torch.float64)  # Python floats are doubles
    return tensor


def inexact_value(source: torch.Tensor, dtype: torch.dtype) -> object | None:
    """A value of ``source`` that ``dtype`` cannot hold exactly (as a Python number), or
    None when it holds them all. A floating dtype holds every real number (rounded to its
    precision, as floats are), a complex dtype every number; an integer or bool dtype
    holds the integers in its range (``2.0`` is one, ``2.5``, ``300`` in uint8 and ``nan``
    are not)."""
    if source.dtype == dtype or source.dtype == torch.bool or dtype.is_complex:
        return None
    bad = torch.zeros(source.shape, dtype=torch.bool, device=source.device)
    real = source
    if source.is_complex():
        bad |= source.imag != 0
        real = source.real
    if not dtype.is_floating_point:
        bad |= real.to(dtype).to(real.dtype) != real  # NaN != NaN: refused too
    if not bool(bad.any()):
        return None
    return source[bad].reshape(-1)[0].item()


# --- reading annotations ---------------------------------------------------------------


def array_type_of(annotation: object) -> type | None:
    """The array class of a shape-and-dtype annotation (jaxtyping's ``Float[Tensor, "b 3"]``
    is a class keeping it as ``array_type`` and the dims as ``dim_str``), else None;
    recognised without importing jaxtyping."""
    if isinstance(annotation, type) and isinstance(getattr(annotation, "dim_str", None), str):
        array_type = getattr(annotation, "array_type", None)
        if isinstance(array_type, type):
            return array_type
    return None


def spec_of(annotation: object, metadata: Sequence[object], where: str) -> TensorSpec | None:
    """The spec an annotation carries: a jaxtyping array type whose array type is a
    tensor, or a ``Spec`` in the metadata of an ``Annotated[Tensor, ...]`` (the last
    one wins), with the value constraints of the ``Spec`` and of the annotated-types
    objects in the metadata (``Annotated[Tensor, Ge(0)]`` alone: any shape, bounded).
    None when there is none.

    Raises:
        SpecSyntaxError: if a jaxtyping spec uses a form tclass cannot check, or a
            constraint is malformed.
    """
    spec: Spec | None = None
    for item in metadata:
        if isinstance(item, Spec):
            spec = item
    own = {} if spec is None or spec.constraints is None else dict(spec.constraints.items())
    constraints, foreign = constraints_from(own, metadata, where)
    found: TensorSpec | None = None
    if spec is not None:
        found = TensorSpec(spec._parsed, spec.dtypes, False, repr(spec), spec.dims)
    else:
        array_type = array_type_of(annotation)
        if array_type is not None:
            if not issubclass(array_type, torch.Tensor):
                return None
            dim_str: str = getattr(annotation, "dim_str", "")
            dims = parse_dims(dim_str, where)
            dtypes = _jaxtyping_dtypes(annotation)
            found = TensorSpec(dims, dtypes, True, _jaxtyping_text(annotation), dim_str)
        elif constraints is not None:  # named as written: Annotated[Tensor, Ge(ge=0)]
            written = ", ".join(
                [getattr(annotation, "__name__", repr(annotation))]
                + [repr(item) for item in metadata]
            )
            text = f"Annotated[{written}]"
            return TensorSpec(parse_dims("..."), None, False, text, constraints=constraints)
    if found is None or constraints is None:
        return found
    if spec is None:
        text = f"{found.text} with {constraints.text}"
    elif foreign:  # the Spec's shape and dtype, then every constraint, merged
        text = f"{Spec(spec.dims, spec.dtypes)!r} with {constraints.text}"
    else:
        text = found.text  # the Spec as written, with its keywords
    return dataclasses.replace(found, text=text, constraints=constraints)


def _jaxtyping_dtypes(annotation: object) -> frozenset[torch.dtype] | None:
    names = getattr(annotation, "dtypes", None)
    if not isinstance(names, (tuple, list)):
        return None  # jaxtyping's "any dtype" (Shaped)
    found = {getattr(torch, name, None) for name in names if isinstance(name, str)}
    dtypes = frozenset(dtype for dtype in found if isinstance(dtype, torch.dtype))
    return dtypes or None


def _jaxtyping_text(annotation: object) -> str:
    kind = getattr(getattr(annotation, "dtype", None), "__name__", "Shaped")
    array = getattr(getattr(annotation, "array_type", None), "__name__", "Tensor")
    return f"{kind}[{array}, {getattr(annotation, 'dim_str', '')!r}]"


def allocation_shape(
    spec: TensorSpec, batch: Sequence[int], sizes: Mapping[str, Any]
) -> tuple[list[int] | None, list[str], str | None]:
    """The full shape of a tensor allocated for ``spec`` under ``batch``, its named dims
    taken from ``sizes``; else ``None``, the names ``sizes`` lacks, and why else not."""
    if spec.any_shape:
        return None, [], f"{spec.text} allows any shape, so there is none to allocate"
    dims = spec.feature_dims(len(batch))
    if dims is None:
        return None, [], f"{spec.text} names fewer dims than the {len(batch)} batch dims"
    shape, missing = list(batch), []
    for dim in dims:
        if dim.kind == FIXED:
            shape.append(dim.size)
        elif dim.kind == ANON or (dim.kind == VARIADIC and dim.name is None):
            why = f"the dim {dim.text!r} of {spec.text} has no size to allocate; name it"
            return None, [], why
        elif dim.kind == SYMBOLIC:
            absent = [name for name in dim.names if name not in sizes]
            if absent:
                missing += absent
            else:
                values = {name: sizes[name] for name in dim.names}
                shape.append(int(eval(dim.code, {"__builtins__": {}}, values)))  # type: ignore[arg-type]  # noqa: S307 (checked AST)
        elif str(dim.name) not in sizes:
            missing.append(str(dim.name))
        elif dim.kind == VARIADIC:
            shape.extend(int(item) for item in sizes[str(dim.name)])
        else:
            shape.append(int(sizes[str(dim.name)]))
    return (None if missing else shape), missing, None
