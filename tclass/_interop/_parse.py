"""``parse_tensor_dict_string``: a TensorDict rebuilt from a printed repr.

The repr (``tclass._engine._repr``, the peer's compact form) shows keys, dtypes, feature dims,
batch sizes and devices, not values. Parsing gives a TensorDict with that structure,
every tensor zero-filled, as the peer does: a debugging tool to reproduce from a log a
collection of the same layout. The grammar, for one or many lines alike::

    repr    := NAME "(batch_size=" DIMS ["," "device=" DEV] ["," "stack_dim=" INT]
               (stack_dim before the device too: tclass printed it so before 0.15.3's order)
               ", fields={" fields "})"
             | NAME "(fields={" vfields "}" ("," ATTR)* ")"      printed with compact=False
             | NAME "(" vfields ("," ATTR)* ")"                   its tensorclass form
    fields  := [field ("," field)*]
    field   := KEY ": " value
    value   := "None"                          a tensorclass field holding nothing: skipped
             | CODE DIMS ["@" DEV]             a tensor: dtype code, feature dims
             | [NAME] [DIMS] "{" fields "}"    a nested collection adding DIMS batch dims
             | NAME                            a Python value of that type

where ``vfields`` are ``KEY ": " VALUE`` (``KEY "=" VALUE`` for a tensorclass), a value
being ``Tensor(shape=torch.Size([...]), device=..., dtype=torch.NAME, is_shared=...)`` or a
nested ``NAME(...)``, and ``ATTR`` one of ``batch_size=torch.Size([...])``, ``device=``,
``is_shared=``, ``stack_dim=`` and a lazy stack's (empty) ``exclusive_fields={}``.

A key is read up to the first ``": "`` that lets the rest parse, so keys holding ``": "``
or ``", "`` are found too. Tensorclass reprs give TensorDicts (no class is imported); a
Python value of a builtin type gets that type's empty value (``""``, ``0``, ``[]``...).
"""

from __future__ import annotations

import copy
import re
from typing import NoReturn

import torch

from tclass._base._tensordict_base import Value
from tclass._engine._nontensor import NonTensorData
from tclass._engine._td import TensorDict
from tclass.errors import ReprParseError

__all__ = ["parse_tensor_dict_string"]

_HEADER = re.compile(
    r"\s*(?P<name>[A-Za-z_][\w.]*)\(batch_size=(?P<batch>\[[^\]]*\])"
    r"(?:, stack_dim=-?\d+)?(?:, device=(?P<device>[^,]+))?(?:, stack_dim=-?\d+)?, fields=\{"
)
_VERBOSE_HEADER = re.compile(r"\s*[A-Za-z_][\w.]*\(\s*(?:fields=\{|[^\s:=(){}]+=)")
_VERBOSE_TENSOR = re.compile(
    r"\w*Tensor\(shape=torch\.Size\((?P<dims>\[[^\]]*\])\), device=(?P<device>[^,]+), "
    r"dtype=torch\.(?P<dtype>\w+), is_shared=\w+\)"
)
_VERBOSE_ATTR = re.compile(
    r"(?:batch_size=torch\.Size\((?P<batch>\[[^\]]*\])\)|device=(?P<device>[^,)\s]+)"
    r"|is_shared=\w+|stack_dim=-?\d+|(?P<exclusive>exclusive_fields=\{))"
)
_DIMS = re.compile(r"\[(-?\d+(?:, ?-?\d+)*)?\]")
_NAME = re.compile(r"[A-Za-z_]\w*")
_DEVICE = re.compile(r"@([A-Za-z]+(?::\d+)?)")
_SPACE = re.compile(r"\s*")
# The empty value of each builtin type a Python-value field can show.
_EMPTY_VALUES: dict[str, object] = {
    "str": "",
    "bytes": b"",
    "int": 0,
    "float": 0.0,
    "complex": 0j,
    "bool": False,
    "list": [],
    "dict": {},
    "tuple": (),
    "set": set(),
    "NoneType": None,
}


def parse_tensor_dict_string(s: str) -> TensorDict:
    """A TensorDict with the keys, dtypes, shapes, batch sizes and devices of a printed
    one (``repr(td)`` or ``print(td)``, a tensorclass or lazy stack's too), every tensor
    filled with zeros.

    Example:
        >>> done = torch.ones(3, dtype=torch.bool)
        >>> td = TensorDict({"obs": torch.ones(3, 4), "next": {"done": done}}, [3])
        >>> rebuilt = parse_tensor_dict_string(repr(td))
        >>> rebuilt["next", "done"].dtype, rebuilt.batch_size, rebuilt["obs"].sum()
        (torch.bool, torch.Size([3]), tensor(0.))

    Raises:
        ReprParseError: if ``s`` is not such a repr, naming the position and what was
            expected there; or a field cannot be rebuilt (a lazy stack's entry whose
            members differ, shown ``-1`` or ``?``; a per-element ``NonTensorStack``; a
            Python value of a type that is not a builtin).
    """
    header = _HEADER.match(s)
    if header is None:
        if _VERBOSE_HEADER.match(s):  # printed with set_printoptions(compact=False)
            parser = _Parser(s)
            td, end = parser.verbose_node(s.index("(") + 1, "")
            if s[end:].strip():
                parser.fail(end, "the end of the repr")
            return td
        msg = (
            "parse_tensor_dict_string: expected a repr starting with "
            "'Name(batch_size=[...], ..., fields={' (or, printed with compact=False, "
            f"'Name(fields={{' or a tensorclass's 'Name(key=...'), got "
            f"{s[:60]!r}{'...' if len(s) > 60 else ''}"
        )
        raise ReprParseError(msg)
    batch = torch.Size(_dims(header.group("batch"), s, header.start("batch")))
    device = _device(header.group("device"))
    parser = _Parser(s)
    entries, end = parser.fields(header.end(), batch, device)
    end = parser.expect(end, "})")
    if s[end:].strip():
        parser.fail(end, "the end of the repr")
    return TensorDict._new_unchecked(entries, batch, device)


class _Parser:
    """A recursive-descent parser over one repr string; positions are indices into it."""

    def __init__(self, text: str) -> None:
        self.text = text

    def fail(self, pos: int, expected: str) -> NoReturn:
        snippet = self.text[pos : pos + 40].replace("\n", "\\n")
        msg = f"parse_tensor_dict_string: expected {expected} at position {pos}, got {snippet!r}"
        raise ReprParseError(msg)

    def skip(self, pos: int) -> int:
        match = _SPACE.match(self.text, pos)
        return match.end() if match else pos

    def expect(self, pos: int, token: str) -> int:
        pos = self.skip(pos)
        if not self.text.startswith(token, pos):
            self.fail(pos, repr(token))
        return pos + len(token)

    def fields(
        self, pos: int, batch: torch.Size, device: torch.device | None
    ) -> tuple[dict[str, Value], int]:
        """The fields up to (not including) the closing ``}``."""
        entries: dict[str, Value] = {}
        pos = self.skip(pos)
        if self.text.startswith("}", pos):
            return entries, pos
        while True:
            key, value, pos = self.field(pos, batch, device)
            if value is not None:
                entries[key] = value
            pos = self.skip(pos)
            if self.text.startswith(",", pos):
                pos = self.skip(pos + 1)
                continue
            if self.text.startswith("}", pos):
                return entries, pos
            self.fail(pos, "',' or '}' after a field")

    def field(
        self, pos: int, batch: torch.Size, device: torch.device | None
    ) -> tuple[str, Value | None, int]:
        """One ``key: value``, trying each ``": "`` in turn as the key's end."""
        start = pos
        error: ReprParseError | None = None
        search = pos
        while True:
            colon = self.text.find(": ", search)
            if colon < 0 or "\n" in self.text[start:colon]:
                if error is not None:
                    raise error
                self.fail(start, "'key: value'")
            key = self.text[start:colon]
            try:
                value, end = self.value(colon + 2, key, batch, device)
                after = self.skip(end)
                if not self.text.startswith((",", "}"), after):
                    self.fail(after, "',' or '}' after a field")
                return key, value, end
            except ReprParseError as failure:
                error = error or failure
                search = colon + 1

    def value(
        self, pos: int, key: str, batch: torch.Size, device: torch.device | None
    ) -> tuple[Value | None, int]:
        text = self.text
        if text.startswith("{", pos):
            return self.nested(pos, (), key, batch, device)
        name = _NAME.match(text, pos)
        dims_at = name.end() if name else pos
        dims = _DIMS.match(text, dims_at)
        if dims is not None:
            after = dims.end()
            if text.startswith("{", after):  # a nested collection adding batch dims
                return self.nested(after, _dims(dims.group(0), text, dims_at), key, batch, device)
            if name is None:
                self.fail(pos, "a dtype code before the dims")
            return self.tensor(name.group(0), dims.group(0), after, key, batch, device)
        if name is None:
            if text.startswith("?", pos):
                _unbuildable(key, "its members' dtypes differ (a lazy stack)")
            self.fail(pos, "a value (a dtype code with dims, a nested '{...}' or a type name)")
        if text.startswith("{", name.end()):
            return self.nested(name.end(), (), key, batch, device)
        return _python_value(name.group(0), key, batch, device), name.end()

    def nested(
        self,
        pos: int,
        extra: tuple[int, ...],
        key: str,
        batch: torch.Size,
        device: torch.device | None,
    ) -> tuple[Value | None, int]:
        inner = batch + torch.Size(extra)
        entries, end = self.fields(pos + 1, inner, device)
        return TensorDict._new_unchecked(entries, inner, device), end + 1

    # --- the repr printed with set_printoptions(compact=False) ------------------------------

    def verbose_node(self, pos: int, key: str) -> tuple[TensorDict, int]:
        """The collection whose ``Name(`` ends before ``pos``, up to its closing ``)``:
        ``fields={key: value, ...}`` (a tensorclass: ``key=value, ...``), then its
        ``batch_size=torch.Size([...])``, ``device=``, ``is_shared=``, ``stack_dim=``
        and a lazy stack's ``exclusive_fields={...}`` (which must be empty)."""
        text = self.text
        pos = self.skip(pos)
        entries: dict[str, Value] = {}
        batch = torch.Size([])
        device: torch.device | None = None
        if text.startswith("fields={", pos):
            pos = self.verbose_fields(pos + len("fields={"), ": ", entries)
            pos = self.expect(pos, "}")
        else:  # a tensorclass: its fields, then the attributes
            pos = self.verbose_fields(pos, "=", entries)
        while True:
            pos = self.skip(pos)
            if text.startswith(")", pos):
                return TensorDict._new_unchecked(entries, batch, device), pos + 1
            if text.startswith(",", pos):
                pos += 1
                continue
            attr = _VERBOSE_ATTR.match(text, pos)
            if attr is None:
                self.fail(pos, "batch_size=, device=, is_shared= or ')'")
            if attr.group("batch") is not None:
                batch = torch.Size(_dims(attr.group("batch"), text, pos))
            elif attr.group("device") is not None:
                device = None if attr.group("device") == "None" else _device(attr.group("device"))
            elif attr.group("exclusive") is not None:
                end = self.skip(attr.end())
                if not text.startswith("}", end):
                    what = f"the field {key!r}" if key else "the repr"
                    msg = (
                        f"parse_tensor_dict_string: cannot rebuild {what}: it is a lazy "
                        "stack whose members hold different keys (exclusive_fields)"
                    )
                    raise ReprParseError(msg)
                pos = end + 1
                continue
            pos = attr.end()

    def verbose_fields(self, pos: int, separator: str, entries: dict[str, Value]) -> int:
        """``key<separator>value`` entries (into ``entries``), up to what follows them."""
        text = self.text
        while True:
            pos = self.skip(pos)
            if text.startswith("}", pos) or _VERBOSE_ATTR.match(text, pos):
                return pos
            key, value, pos = self.verbose_field(pos, separator)
            if value is not None:  # a tensorclass field holding nothing: skipped
                entries[key] = value
            after = self.skip(pos)
            if not text.startswith(",", after):
                return after
            pos = after + 1

    def verbose_field(self, pos: int, separator: str) -> tuple[str, Value | None, int]:
        """One field (None: a tensorclass field holding nothing), trying each
        ``separator`` in turn as the key's end."""
        text = self.text
        search = pos
        while True:
            cut = text.find(separator, search)
            if cut < 0 or "\n" in text[pos:cut]:
                self.fail(pos, f"'key{separator}value'")
            key, at = text[pos:cut], cut + len(separator)
            tensor = _VERBOSE_TENSOR.match(text, at)
            if tensor is not None:
                dims = _dims(tensor.group("dims"), text, at)
                dtype = getattr(torch, tensor.group("dtype"), None)
                if not isinstance(dtype, torch.dtype):
                    msg = f"parse_tensor_dict_string: the field {key!r} has an unknown dtype"
                    raise ReprParseError(msg)
                place = _device(tensor.group("device"))
                return key, torch.zeros(dims, dtype=dtype, device=place), tensor.end()
            name = _NAME.match(text, at)
            if name is not None and name.group(0) == "None":
                if text.startswith((",", ")"), self.skip(name.end())):
                    return key, None, name.end()
            if name is not None and text.startswith("(", name.end()):
                if name.group(0) in ("NonTensorData", "NonTensorStack", "MetaData"):
                    _unbuildable(
                        key,
                        "it holds Python values, whose types a compact=False repr does not show",
                    )
                node, end = self.verbose_node(name.end() + 1, key)
                return key, node, end
            search = cut + 1

    def tensor(
        self,
        code: str,
        dims_text: str,
        pos: int,
        key: str,
        batch: torch.Size,
        device: torch.device | None,
    ) -> tuple[Value | None, int]:
        dtype = _dtype(code, key)
        features = _dims(dims_text, self.text, pos)
        if any(size < 0 for size in features):
            _unbuildable(key, f"its members' shapes differ ({dims_text}, a lazy stack)")
        where = device
        at = _DEVICE.match(self.text, pos)
        if at is not None:
            where = _device(at.group(1))
            pos = at.end()
        return torch.zeros(batch + torch.Size(features), dtype=dtype, device=where), pos


def _dims(text: str, source: str, pos: int) -> tuple[int, ...]:
    inside = text.strip()[1:-1].strip()
    if not inside:
        return ()
    try:
        return tuple(int(part) for part in inside.split(","))
    except ValueError:
        msg = f"parse_tensor_dict_string: bad dims {text!r} at position {pos} of {source[:40]!r}"
        raise ReprParseError(msg) from None


def _device(text: str | None) -> torch.device | None:
    if text is None:
        return None
    try:
        return torch.device(text.strip())
    except RuntimeError:
        msg = f"parse_tensor_dict_string: unknown device {text!r}"
        raise ReprParseError(msg) from None


_PREFIXES = (("bf", "bfloat"), ("f", "float"), ("u", "uint"), ("i", "int"), ("c", "complex"))


def _dtype(code: str, key: str) -> torch.dtype:
    """The dtype a repr code stands for (``f32`` -> float32, ``f8_e5m2`` ->
    float8_e5m2), as ``tclass._engine._repr.dtype_code`` writes them."""
    name = code
    for short, long in _PREFIXES:
        if code.startswith(short) and code[len(short) : len(short) + 1].isdigit():
            name = long + code[len(short) :]
            break
    dtype = getattr(torch, name, None)
    if not isinstance(dtype, torch.dtype):
        msg = f"parse_tensor_dict_string: the field {key!r} has an unknown dtype code {code!r}"
        raise ReprParseError(msg)
    return dtype


def _python_value(
    type_name: str, key: str, batch: torch.Size, device: torch.device | None
) -> Value | None:
    if type_name == "None":
        return None  # a tensorclass field holding nothing
    if type_name == "NonTensorStack":
        _unbuildable(key, "it holds one Python value per element, which a repr does not show")
    if type_name not in _EMPTY_VALUES:
        _unbuildable(key, f"it holds a {type_name} value, which is not a builtin type")
    return NonTensorData._make(copy.copy(_EMPTY_VALUES[type_name]), batch, device)


def _unbuildable(key: str, why: str) -> NoReturn:
    msg = (
        f"parse_tensor_dict_string: cannot rebuild the field {key!r}: {why}; remove it from "
        "the string to parse the rest"
    )
    raise ReprParseError(msg)
