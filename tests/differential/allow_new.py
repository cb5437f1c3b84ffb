"""The rules of the deliberate differences (``allowlist.ENTRIES``) that the ``new_*`` ops
meet (``new_empty``, ``new_zeros``, ``new_ones``, ``new_full``, ``new_tensor``). Each rule
takes a finding and says whether the README bullet of its entry covers it."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .engine import Finding
    from .world import Facts

_NEW_FILLED = ("new_empty", "new_zeros", "new_ones", "new_full")
# the ops whose stacks of Python values the peer turns into empty TensorDicts
_NEW_LIKE = (*_NEW_FILLED, "new_tensor")
_NAMES_OF_NONE = re.compile(r"^result\S*\.names: peer \[[^\]]+\], tclass \[\]$")


def _names_fit_the_batch(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``new_empty(())`` (any ``new_*`` to no batch dims) of a named collection: no
    names in tclass, as torch gives a 0-d tensor, where the peer keeps all of the
    source's names on a result without batch dims (``names[-0:]``), more names than
    dims, which its later ops carry on."""
    if finding.kind != "result" or finding.step.op not in _NEW_FILLED:
        return False
    if getattr(mine.value, "batch_dims", None) != 0:
        return False
    return all(_NAMES_OF_NONE.match(line) for line in finding.detail)
