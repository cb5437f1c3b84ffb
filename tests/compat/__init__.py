"""Acceptance corpus: tensordict programs that must run unchanged on tclass.

See README.md in this folder.
"""
