"""``assert_close`` (``assert_allclose_td``): the peer's test helper that two collections
hold the same keys and close tensors, with the peer's errors and messages."""

from __future__ import annotations

from typing import Any

import torch

from tclass._base.implemented._collection import TensorCollection
from tclass._core._records import storage_of
from tclass._engine._lazy._stack import LazyStackedTensorDict
from tclass._engine._nontensor import is_non_tensor
from tclass.errors import EntryTypeError, KeyNotFoundError, NotCloseError, ShapeError

__all__ = ["assert_close"]


def assert_close(
    actual: Any,
    expected: Any,
    rtol: float | None = None,
    atol: float | None = None,
    equal_nan: bool = True,
    intersection: bool = False,
    msg: str = "",
    prefix: tuple[str, ...] = (),
) -> bool:
    """Checks that two collections (tensorclasses included) have the same keys and close
    tensors, each pair compared with ``torch.testing.assert_close`` (dtype, shape and
    device too); Python values are not compared. Two lazy stacks are compared member by
    member.

    Args:
        actual, expected: the collections.
        rtol, atol: the tolerances (None: torch's defaults for the dtype).
        equal_nan: NaN equals NaN.
        intersection: compare only the keys both have (else different keys raise).
        msg: appended to the error message.
        prefix: prepended to the keys in the error messages.

    Returns:
        True.

    Raises:
        EntryTypeError: (a ``TypeError``) an argument is not a collection.
        KeyNotFoundError: (a ``KeyError``) the keys differ and ``intersection`` is False.
        NotCloseError: (an ``AssertionError``) two tensors differ; the message names the
            key and the root mean squared error, then torch's description.
        ShapeError: (a ``RuntimeError``) two tensors cannot be compared at all.
    """
    if not isinstance(actual, TensorCollection) or not isinstance(expected, TensorCollection):
        msg = (
            "assert_allclose inputs must be of TensorDict type, got "
            f"{type(actual)} and {type(expected)}"
        )
        raise EntryTypeError(msg)
    actual, expected = storage_of(actual), storage_of(expected)
    options = {"rtol": rtol, "atol": atol, "equal_nan": equal_nan, "intersection": intersection}
    if isinstance(actual, LazyStackedTensorDict) and isinstance(expected, LazyStackedTensorDict):
        if expected.stack_dim != actual.stack_dim:
            expected = expected.to_lazystack(actual.stack_dim)
        pairs = list(zip(actual.tensordicts, expected.tensordicts, strict=True))
        for one, other in pairs:
            assert_close(one, other, msg=msg, prefix=prefix, **options)  # type: ignore[arg-type]
        return True
    keys, other_keys = set(actual.keys()), set(expected.keys())
    if keys != other_keys:
        if not intersection:
            _mismatch(keys, other_keys)
        actual = actual.select(*other_keys, strict=False)
        expected = expected.select(*keys, strict=False)
    for key in sorted(actual.keys(), key=str):
        one, other = actual.get(key), expected.get(key)
        path = (*prefix, key)
        if isinstance(one, TensorCollection):
            if not is_non_tensor(one):
                assert_close(one, other, msg=msg, prefix=path, **options)  # type: ignore[arg-type]
            continue
        if isinstance(one, torch.Tensor):
            msg = _compare(one, other, path, rtol, atol, equal_nan, msg)
    return True


def _compare(
    one: torch.Tensor,
    other: Any,
    path: tuple[str, ...],
    rtol: float | None,
    atol: float | None,
    equal_nan: bool,
    msg: str,
) -> str:
    """Compares one pair of tensors; returns the message for the next pair."""
    if one.is_nested:
        one, other = one.values(), other.values()
    try:
        error = (one.to(torch.float) - other.to(torch.float)).pow(2).sum()
    except Exception as err:
        text = f"Failed to compare key {path}: {err}"
        raise ShapeError(text) from err
    rmse = error.div(max(one.numel(), 1)).sqrt().item()
    local = f"key {path} does not match, got mse = {rmse:4.4f}"
    full = ",\t".join([local, msg]) if msg else local
    try:
        torch.testing.assert_close(
            one.data, other.data, rtol=rtol, atol=atol, equal_nan=equal_nan,
            msg=lambda torch_msg: f"{full}\n{torch_msg}",
        )  # fmt: skip
    except AssertionError as err:
        raise NotCloseError(str(err)) from None
    local = f"key {path} matches"
    return "\t".join([local, msg]) if msg else local


def _mismatch(keys: set[Any], other_keys: set[Any]) -> None:
    parts = ["keys in tensordicts mismatch."]
    if keys - other_keys:
        parts.append(f"The first TD has keys {keys - other_keys} that the second does not have.")
    if other_keys - keys:
        parts.append(f"The second TD has keys {other_keys - keys} that the first does not have.")
    raise KeyNotFoundError(" ".join(parts))
