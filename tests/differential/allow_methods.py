"""The rules of the deliberate differences (``allowlist.ENTRIES``) that the ops of the
family ``methods`` meet (the methods no other family called: ``detach_``, ``pow`` /
``lerp`` with ``default=``, ``torch.gather``, ``from_struct_array``...). Each rule takes
a finding and says whether the README bullet of its entry covers it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .engine import Finding
    from .world import Facts

# What the peer raises from inside where tclass answers, by op (README: "Where the peer
# fails inside, tclass answers"): torch's refusal of ``view.detach_()`` (called on every
# leaf), ``torch._foreach_pow`` given no tensors (``pow`` of a collection with none in
# common with the other), its own check of ``torch.gather``'s index (torch gathers by an
# empty index), its ``from_struct_array`` of a nested or Python entry, and its ``lerp``
# by a 0-d tensor weight, taken as a number, of integer tensors (torch's tensor weight
# promotes them); fz27d: its own refusal of ``detach_`` of a view of a file's rows, the
# unlock inside ``share_memory_`` of a locked record, and its numpy copy inside
# ``from_struct_array`` of a lazy stack's struct array.
_METHOD_FAILS_INSIDE = {
    "detach_": ("Can't detach views in-place", "Detaching a sub-tensordict in-place"),
    "pow": ("Tensor list must have at least one tensor",),
    "gather": ("Cannot use torch.gather with an empty index",),
    "from_struct_array": ("not enough values to unpack", "could not broadcast input array"),
    "lerp": ('"lerp_kernel_scalar" not implemented',),
    "share_memory_": ("Cannot unlock a tensordict that is part of a locked graph",),
}


# ``pow(other)`` (no ``default``) by a collection holding no tensor: the peer's key check
# skips it and ``torch._foreach_pow`` fails on the lengths, where its ``pow`` of
# collections with different tensors raises a ``KeyError``, as tclass's always does
_POW_LENGTHS = "Tensor list must have same number of elements as scalar list"


def _method_fails_inside(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """The peer raised one of ``_METHOD_FAILS_INSIDE``'s errors for its op, where
    tclass answered (fz26d: programs 15,000,xxx of methods,index,shape,combine); or its
    ``pow`` failed on the lengths of no tensors, where tclass names the keys the other
    collection lacks (``KeyNotFoundError``, a ``KeyError``: fz27b, ``x.pow(x.select())``,
    programs 15,010,388 and 15,020,224 of methods,index,shape,combine)."""
    if finding.kind == "family" and finding.step.op == "pow":
        return _POW_LENGTHS in str(peer.error) and type(mine.error).__name__ == ("KeyNotFoundError")
    if finding.kind != "peer-raises":
        return False
    texts = _METHOD_FAILS_INSIDE.get(finding.step.op, ())
    return any(text in str(peer.error) for text in texts)
