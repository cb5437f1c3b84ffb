"""Lazy stacks: ``LazyStackedTensorDict`` and the member-wise machinery behind it."""
