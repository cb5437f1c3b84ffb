"""``torch.func.jacrev``, ``jacfwd`` and ``hessian`` of functions of collections.

These transforms rebuild collections from tensors with more leading dims than the
collection was flattened with (basis vectors: one more dim; Jacobians: the output's shape
then the input's), outside ``torch.vmap``. The rebuilt collection keeps its batch size
where the tensors still start with it, and takes the dims they share in front otherwise,
so that it stays consistent. The oracle is the same transform of plain dicts of tensors.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch.utils._pytree as pytree

import tclass
from tclass import TensorDict

func = torch.func

# torch's jacfwd scripts a helper with torch.jit.script, which warns in torch >= 2.10
pytestmark = pytest.mark.filterwarnings("ignore:`torch.jit.script` is deprecated")

BATCHES = [(), (2,), (2, 3)]


def _input(batch: tuple[int, ...]) -> TensorDict:
    torch.manual_seed(0)
    return TensorDict({"a": torch.randn(*batch, 4), "b": torch.randn(*batch, 3)}, batch)


def _as_dict(collection: Any) -> Any:
    if isinstance(collection, tclass.TensorDictBase):
        return {key: _as_dict(value) for key, value in collection.items()}
    if isinstance(collection, tuple):
        return tuple(_as_dict(value) for value in collection)
    return collection


def _powers(t: Any) -> Any:
    out = {"x": t["a"] ** 2, "y": t["b"] ** 3}
    if isinstance(t, dict):
        return out
    return TensorDict(out, t.batch_size)


def _scalar(t: Any) -> torch.Tensor:
    return (t["a"] ** 3).sum() + (t["a"].sum() * t["b"] ** 2).sum()


def _assert_same(got: Any, expected: Any, batch: torch.Size) -> None:
    """``got`` (collections, tuples, tensors) holds the tensors of ``expected`` (dicts...)
    and every collection in it has the input's batch size."""
    if isinstance(expected, dict):
        assert isinstance(got, TensorDict)
        assert got.batch_size == batch
        assert set(got.keys()) == set(expected)
        for key, value in expected.items():
            _assert_same(got.get(key), value, batch)
    elif isinstance(expected, tuple):
        assert isinstance(got, tuple) and len(got) == len(expected)
        for mine, theirs in zip(got, expected):
            _assert_same(mine, theirs, batch)
    else:
        assert got.shape == expected.shape
        torch.testing.assert_close(got, expected)


TRANSFORMS: dict[str, Callable[[Callable[..., Any]], Callable[..., Any]]] = {
    "jacrev": func.jacrev,
    # a chunk of as many basis vectors as the first batch dim is ambiguous (the peer's too)
    "jacrev chunk_size=5": lambda f: func.jacrev(f, chunk_size=5),
    "jacfwd": func.jacfwd,
}


@pytest.mark.parametrize("batch", BATCHES, ids=str)
@pytest.mark.parametrize("name", TRANSFORMS)
def test_jacobian_of_a_collection_valued_function(name: str, batch: tuple[int, ...]) -> None:
    td = _input(batch)
    transform = TRANSFORMS[name]
    jacobian = transform(_powers)(td)
    expected = transform(_powers)(_as_dict(td))
    _assert_same(jacobian, expected, td.batch_size)
    # d x / d a is diagonal: 2 a on it
    flat = jacobian["x", "a"].reshape(td["a"].numel(), td["a"].numel())
    torch.testing.assert_close(flat, torch.diag(2 * td["a"].flatten()))


@pytest.mark.parametrize("batch", BATCHES, ids=str)
def test_hessian_of_a_scalar_function(batch: tuple[int, ...]) -> None:
    td = _input(batch)
    hessian = func.hessian(_scalar)(td)
    _assert_same(hessian, func.hessian(_scalar)(_as_dict(td)), td.batch_size)
    assert hessian["a", "b"].shape == (*td["a"].shape, *td["b"].shape)


@pytest.mark.parametrize("batch", BATCHES, ids=str)
def test_jacrev_with_aux_and_two_arguments(batch: tuple[int, ...]) -> None:
    td = _input(batch)
    other = TensorDict({"c": torch.randn(*batch, 4)}, batch)

    def f(t: Any, u: Any) -> Any:
        out = {"x": t["a"] + u["c"] ** 2}
        return (out if isinstance(t, dict) else TensorDict(out, t.batch_size)), t["b"].sum()

    jacobian, aux = func.jacrev(f, argnums=(0, 1), has_aux=True)(td, other)
    expected, expected_aux = func.jacrev(f, argnums=(0, 1), has_aux=True)(
        _as_dict(td), _as_dict(other)
    )
    torch.testing.assert_close(aux, expected_aux)
    assert isinstance(jacobian.get("x"), tuple)  # one Jacobian per argument, as torch's
    _assert_same(jacobian.get("x"), expected["x"], td.batch_size)


def test_rebuilt_from_children_with_a_leading_dim_takes_it_into_its_batch() -> None:
    td = _input((2,))
    children, spec = pytree.tree_flatten(td)
    grown = pytree.tree_unflatten([torch.zeros(5, *child.shape) for child in children], spec)
    assert grown.batch_size == (5, 2)  # not (2,): its tensors start with 5
    same = pytree.tree_unflatten([torch.zeros(child.shape) for child in children], spec)
    assert same.batch_size == (2,)


def test_a_spec_with_placeholder_leaves_prints() -> None:
    # torch prints a mismatching tree structure with placeholder leaves (in its errors)
    _, spec = pytree.tree_flatten(TensorDict({"a": {"b": torch.zeros(2)}}, [2]))
    text = pytree.treespec_pprint(spec)
    assert "a: {b: *}" in text
