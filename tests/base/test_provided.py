"""The slots of the base layer (tclass/_base/_provided.py): each bound once, by the layer
that implements it, when tclass is imported."""

from __future__ import annotations

import ast
import inspect

import pytest

import tclass
from tclass._base import _provided
from tclass._base._provided import Provided
from tclass.errors import NotProvidedError, TclassError


def _declared_slots() -> dict[str, list[str]]:
    """Each table's slots, as _provided.py declares them under TYPE_CHECKING."""
    tree = ast.parse(inspect.getsource(_provided))
    tables: dict[str, list[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name.isupper():
            names = []
            for statement in ast.walk(node):
                if isinstance(statement, ast.Assign):
                    names += [t.id for t in statement.targets if isinstance(t, ast.Name)]
                elif isinstance(statement, ast.AnnAssign) and isinstance(
                    statement.target, ast.Name
                ):
                    names.append(statement.target.id)
            tables[node.name] = names
    return tables


def test_every_declared_slot_is_bound_by_import_tclass() -> None:
    tables = _declared_slots()
    assert set(tables) == {"DISTRIBUTED", "ENGINE", "INTEROP", "IO", "TENSORCLASS"}
    for table_name, slots in tables.items():
        table = getattr(_provided, table_name)
        assert slots, table_name
        unbound = [slot for slot in slots if slot not in vars(table)]
        assert not unbound, f"{table_name}: {unbound}"


def test_bound_slots_are_the_implementations() -> None:
    from tclass._engine._consolidate import consolidate
    from tclass._interop._constructors import from_dict
    from tclass._io.store._open import to_h5
    from tclass._tensorclass._attrs import attrs_of
    from tclass.distributed import _collectives, _transfer

    assert _provided.DISTRIBUTED.send is _transfer.send
    assert _provided.DISTRIBUTED.scatter is _collectives.scatter
    assert _provided.ENGINE.consolidate is consolidate
    assert _provided.ENGINE.LazyStackedTensorDict is tclass.LazyStackedTensorDict
    assert _provided.IO.to_h5 is to_h5
    assert _provided.INTEROP.from_dict is from_dict
    assert _provided.TENSORCLASS.attrs_of is attrs_of


def test_no_base_module_imports_a_layer_above_inside_a_function() -> None:
    import pathlib

    upper = ("tclass._engine", "tclass._interop", "tclass._io", "tclass.distributed")
    upper += ("tclass._tensorclass",)
    for path in pathlib.Path(_provided.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for inner in ast.walk(node):
                    if isinstance(inner, ast.ImportFrom) and inner.module:
                        assert not inner.module.startswith(upper), (path.name, node.name)


_TABLES = frozenset({"DISTRIBUTED", "ENGINE", "INTEROP", "IO", "TENSORCLASS"})
# Methods of the public TensorCollection class whose worker lives in the engine: they stay
# on that class (tensorclasses answer them too), so they stay in implemented/_collection.py.
_FORWARDING_PRIMITIVES = {"set_non_tensor", "get_non_tensor"}


def _methods(folder: str) -> list[tuple[str, ast.FunctionDef]]:
    """The methods of the classes of tclass/_base/<folder>/*.py (overloads left out)."""
    import pathlib

    found = []
    for path in sorted((pathlib.Path(_provided.__file__).parent / folder).glob("_*.py")):
        for cls in ast.parse(path.read_text()).body:
            if isinstance(cls, ast.ClassDef):
                for node in cls.body:
                    if isinstance(node, ast.FunctionDef) and not any(
                        isinstance(d, ast.Name) and d.id == "overload" for d in node.decorator_list
                    ):
                        found.append((f"{path.stem}.{cls.name}", node))
    return found


def _body(function: ast.FunctionDef) -> list[ast.stmt]:
    """The statements of ``function`` after its docstring."""
    first = function.body[0]
    docstring = isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
    return function.body[1:] if docstring else function.body


def _forwards(function: ast.FunctionDef) -> bool:
    """Whether ``function`` is one statement reading a slot of ``_provided.py``."""
    names = {node.id for node in ast.walk(function) if isinstance(node, ast.Name)}
    return len(_body(function)) == 1 and bool(names & _TABLES)


def _called(function: ast.FunctionDef) -> str | None:
    """The method of ``self`` / ``cls`` that the one statement of ``function`` returns."""
    (statement,) = _body(function)
    call = statement.value if isinstance(statement, ast.Return) else None
    if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute):
        return call.func.attr
    return None


def test_declared_methods_forward_to_the_layers_above() -> None:
    # Every public method of declared/ is one statement: a slot of _provided.py read, or
    # another declared method called (save is memmap, load is load_memmap: a classmethod
    # of its own for type checkers); private ones are their hooks.
    methods = [(where, f) for where, f in _methods("declared") if not f.name.startswith("_")]
    assert len(methods) > 60
    for where, function in methods:
        assert len(_body(function)) == 1, (where, function.name)
    aliases = {f.name: _called(f) for _, f in methods if not _forwards(f)}
    assert aliases == {"save": "memmap", "load": "load_memmap"}


def test_implemented_methods_do_not_forward() -> None:
    # A public method whose work is done above is declared, in declared/; implemented/
    # keeps only private hooks (_pinned, _stack_lazily) and the primitives' two.
    methods = _methods("implemented")
    assert len(methods) > 300
    forwarding = {
        function.name
        for _, function in methods
        if _forwards(function) and not function.name.startswith("_")
    }
    assert forwarding == _FORWARDING_PRIMITIVES


def test_an_unbound_slot_names_itself_and_the_layer_that_binds_it() -> None:
    class LATER(metaclass=Provided, layer="tclass._upper"):
        pass

    with pytest.raises(NotProvidedError, match=r"LATER\.thing is not bound: tclass\._upper"):
        LATER.thing  # type: ignore[attr-defined]  # noqa: B018
    assert issubclass(NotProvidedError, TclassError)
    assert issubclass(NotProvidedError, RuntimeError)
    assert not hasattr(LATER, "__wrapped__")  # dunder probes stay plain AttributeErrors


def test_a_slot_is_bound_once() -> None:
    class ONCE(metaclass=Provided, layer="tclass._upper"):
        pass

    ONCE.thing = len  # type: ignore[attr-defined]
    assert ONCE.thing is len  # type: ignore[attr-defined]
    with pytest.raises(NotProvidedError, match=r"ONCE\.thing is bound twice"):
        ONCE.thing = len  # type: ignore[attr-defined]


def test_forwarders_reach_their_implementations() -> None:
    td = tclass.TensorDict({"a": tclass.TensorDict({}, [2])}, [2])
    td.set_non_tensor("x", "hello")
    assert td.get_non_tensor("x") == "hello"
    assert not td.is_consolidated()
    assert td.consolidate().is_consolidated()
    assert type(tclass.TensorDict.lazy_stack([td, td])) is tclass.LazyStackedTensorDict
    assert tclass.TensorDict.from_dict({"a": [1, 2]}, auto_batch_size=True).batch_size == (2,)
    assert not td.is_memmap()
    with pytest.raises(tclass.errors.DistributedError):
        td.send(1)  # no process group: the implementation's own error
