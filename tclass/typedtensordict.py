"""``tensordict.typedtensordict``'s public name (``from tclass.typedtensordict import
TypedTensorDict``)."""

from tclass._engine._typed import TypedTensorDict as TypedTensorDict

__all__ = ["TypedTensorDict"]
