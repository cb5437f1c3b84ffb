"""Helpers that the peer keeps in ``tensordict.utils``, where code written for it imports
them from (``from tclass.utils import print_directory_tree``)."""

from tclass._io._tree import print_directory_tree as print_directory_tree

__all__ = ["print_directory_tree"]
