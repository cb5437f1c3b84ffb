"""The rules of the deliberate differences (``allowlist.ENTRIES``) about ragged lazy
stacks and padding: shape ops of a ragged stack without entries (the peer's dense result
with a -1 in its batch size, tclass's lazy stack), results rebuilt with more dims, and
the Python values of padded results (``pad_sequence`` and the like)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .engine import Finding
    from .world import Facts

# A shape op (or a reduction over another dim: ``var(dim=2)``) of a ragged lazy stack
# without entries: the peer's TensorDict with a -1 in its batch size (no TensorDict can
# have one), tclass's lazy stack of the ops' members.
_RAGGED_KEPT = (  # (its nested nodes alike: ``result['q']``, program 16,003,696 of
    # methods,index,shape,combine L12, fz30b)
    re.compile(r"^result(?:\['\w+'\])*\.kind: peer 'TensorDict', tclass 'LazyStackedTensorDict'$"),
    re.compile(r"^result(?:\['\w+'\])*\.<members>: peer None, tclass \d+ \("),
    re.compile(
        r"^result(?:\['\w+'\])*\.batch_size: peer \([\d, ]*-\d+[-\d, ]*\), "
        r"tclass \([\d, ]*-1[-\d, ]*\)$"
    ),
)


def _ragged_made_dense(peer: Any, mine: Any) -> bool:
    """The peer's TensorDict with a negative size where tclass's lazy stack has its ragged
    dim (``-1``; the peer's ``tile`` multiplies that ``-1``), the other sizes the same."""
    peer_size, my_size = getattr(peer, "batch_size", ()), getattr(mine, "batch_size", ())
    return (
        type(peer).__name__ == "TensorDict"
        and any(size < 0 for size in peer_size)
        and len(peer_size) == len(my_size)
        and all(p == m or (p < 0 and m == -1) for p, m in zip(peer_size, my_size))
    )


def _one_member_resolved(finding: Finding, peer: Any, mine: Any) -> bool:
    """``narrow`` of a ragged lazy stack to one member: tclass's batch size is that
    member's, where the peer's dense TensorDict keeps the ``-1`` (a size no TensorDict
    can have; program 8,704,091 of index,shape,combine --length 8)."""
    if finding.step.op != "narrow" or type(peer).__name__ != "TensorDict":
        return False
    peer_size, my_size = tuple(peer.batch_size), tuple(getattr(mine, "batch_size", ()))
    return (
        all(line.startswith("result.batch_size: ") for line in finding.detail)
        and len(peer_size) == len(my_size)
        and any(p < 0 for p in peer_size)
        and all(p == m or (p < 0 and m >= 0) for p, m in zip(peer_size, my_size))
    )


_MORE_DIMS = re.compile(
    r"the number of sizes provided \((\d+)\) must be greater or equal to the number of "
    r"dimensions in the tensor \((\d+)\)|value tensor of shape \[([\d, ]*)\] cannot be "
    r"broadcast to indexing result of shape \[([\d, ]*)\]"
)


def _rebuilt_with_more_dims(finding: Finding, peer: Any) -> bool:
    """``x[i] = x[i].to_dict()`` where the peer rebuilt a nested collection of the dict
    with more dims than the value it came from (its leaves then do not fit)."""
    if finding.step.op != "setitem" or not finding.step.src.endswith(".to_dict()"):
        return False
    found = _MORE_DIMS.search(str(peer.error))
    if found is None:
        return False
    if found.group(1) is not None:
        return int(found.group(2)) > int(found.group(1))
    return found.group(3).count(",") > found.group(4).count(",")


# The peer's view / reshape of a nested node whose batch size is not its parent's (its
# squeeze of a stack of values leaves one with the dims it squeezed out): the shape it
# passes down gets the node's extra dims appended, which its own batch cannot take.
_VIEWED_EXTRA_DIMS = re.compile(r"invalid shape \[([-\d, ]*)\] for a batch of \d+ elements")
# its unflatten checks the sizes against such a node's dim (torch takes them for the batch)
_UNFLATTEN_UNMET = re.compile(r"unflatten: Provided sizes \[[-\d, ]*\] don't multiply up to")


def _viewed_with_extra_dims(finding: Finding, peer: Any, mine: Any) -> bool:
    """``view`` / ``reshape`` to a shape torch gives the batch (the step's
    ``torch-shape=`` tag), which tclass's result has, where the peer refuses a longer
    shape that begins with it: a nested node's bogus extra dims (program 9,800,220 of
    shape,combine --length 8, fz19a); or ``unflatten``, whose sizes the peer checks
    against such a node's dim (program 9,293,892 of index,shape, inv19e)."""
    tags = [tag for tag in finding.step.tags if tag.startswith("torch-shape=")]
    if not tags or mine.error is not None:
        return False
    expected = tags[0].removeprefix("torch-shape=")
    wanted = [int(size) for size in expected.strip("[]").split(",") if size.strip()]
    if finding.step.op == "unflatten":
        unmet = _UNFLATTEN_UNMET.search(str(peer.error))
        return unmet is not None and list(getattr(mine.value, "batch_size", ())) == wanted
    found = _VIEWED_EXTRA_DIMS.search(str(peer.error))
    if finding.step.op not in ("view", "reshape") or found is None:
        return False
    refused = [int(size) for size in found.group(1).split(",") if size.strip()]
    kept = list(getattr(mine.value, "batch_size", ()))
    return kept == wanted and len(refused) > len(wanted) and refused[: len(wanted)] == wanted


def _pad_dim_ragged_refused(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``pad_sequence`` of a member ragged at ``pad_dim`` (no one length to pad): tclass's
    ``StackError``, where the peer's result is a TensorDict with a negative size in its
    batch (program 16,062,313 of methods,index,shape,combine L12, fz30i)."""
    if finding.kind != "tclass-raises" or finding.step.op != "pad_sequence":
        return False
    if type(mine.error).__name__ != "StackError" or "ragged (-1) at pad_dim" not in str(mine.error):
        return False
    peer_size = getattr(peer.value, "batch_size", ())
    return type(peer.value).__name__ == "TensorDict" and any(size < 0 for size in peer_size)


def _padded_values(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """``pad_sequence`` of tensorclasses with masks, which the peer refuses (README,
    "Stacking keeps what can be kept")."""
    if finding.step.op not in ("pad", "pad_sequence"):
        return False
    return finding.kind == "peer-raises" and "contains tensorclasses" in str(peer.error)


def _padded_slots_per_element(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A Python value read where padding added slots (``pad``, ``pad_sequence``): one
    ``None`` in one library, a list of ``None`` (one per element) in the other. The peer
    nests each slot as one value added at the dim it pads, so an index down to that dim
    reads one ``None`` there and a list beside it; tclass's value node reads every
    element of a region alike (its rows nested along the same dims). Also the value
    node itself there (one ``None`` over its batch against a list of ``None``), and the
    members of a lazy stack made of the padded result (``to_lazystack``)."""
    if finding.kind != "result" or not any(_PADDED.search(line) for line in finding.lines):
        return False
    for line in finding.detail:
        node = _VALUE_OR_VALUES.match(line)
        if node is not None:
            reads = [_snap_at(snap, node.group(1)) for snap in (peer.snap, mine.snap)]
            none = ("py", "NoneType", None)
            if (
                node.group(2) == node.group(3)
                or none not in reads
                or not all(map(_all_none, reads))
            ):
                return False
            continue
        found = _NONE_OR_LIST.match(line)
        if found is None or "NoneType" not in found.group(1) + found.group(2):
            return False
        if found.group(1) == found.group(2):
            return False
        listed = mine.snap if found.group(1) == "py ('NoneType', None)" else peer.snap
        if not _all_none(_snap_at(listed, found.group(0).split(": ")[0])):
            return False
    return True


_PADDED = re.compile(r"\bL\.pad(_sequence)?\(|\bpad\(")


_NONE_OR_LIST = re.compile(
    r"^result\S*: peer (py \('NoneType', None\)|list of \d+), "
    r"tclass (py \('NoneType', None\)|list of \d+)$"
)


_VALUE_OR_VALUES = re.compile(r"^(result\S*): peer (values?) \(.*, tclass (values?) \(")


_PATH_PART = re.compile(r"\[(\d+)\]|\['([^']*)'\]|\.<(members)>")


def _snap_at(snap: Any, path: str) -> Any:
    """The part of a snapshot at ``path`` (``result[1][2]['label']``), as ``differences``
    names it; a Python value read for the node there."""
    for index, key, members in _PATH_PART.findall(path.removeprefix("result")):
        if members:  # a lazy stack's (stack dim, members)
            snap = snap[7]
            continue
        if isinstance(snap, tuple) and snap[:1] == ("nontensor",):
            snap = snap[2]
        if key or not index:
            snap = dict(snap[6])[key] if snap[:1] == ("collection",) else dict(snap[1])[key]
        elif isinstance(snap, list):
            snap = snap[int(index)]
        else:
            snap = snap[int(index) + 1]
    if isinstance(snap, tuple) and snap[:1] == ("nontensor",):
        snap = snap[2]
    return snap


def _all_none(snap: Any) -> bool:
    if snap == ("py", "NoneType", None):
        return True
    return isinstance(snap, tuple) and snap[:1] == ("seq",) and all(map(_all_none, snap[2]))


def _about_values(line: str) -> bool:
    """A Python value line: the peer's list or values against tclass's shared value, or
    one element that is ``None`` in the peer."""
    if " list of " in line or "peer values (" in line:
        return True
    return re.search(r"\[\d+\]: peer (None|'NoneType'), tclass ", line) is not None


def _ragged_values_not_listed(finding: Finding, facts: Facts, peer: Any, mine: Any) -> bool:
    """A Python value of a lazy stack whose ragged dim comes before its stack dim, read
    whole as nested lists (``lazy.set_non_tensor("c", "").get_non_tensor("c")`` of
    ``[-1, 5]``): tclass's ragged ``NonTensorStack`` has no nested lists in that order (a
    ``HeterogeneousEntryError``), where the peer reads empty lists, the values lost
    (program 17,130,320 L16 of methods,index,shape,combine, fz34b)."""
    if finding.kind != "tclass-raises" or peer.error is not None:
        return False
    error = mine.error
    if type(error).__name__ != "HeterogeneousEntryError":
        return False
    return "there are no nested lists in that order" in str(error) and _lists_only(peer.value)


def _lists_only(value: Any) -> bool:
    """Whether ``value`` is a list holding nothing but lists of the same (no element)."""
    return isinstance(value, list) and all(_lists_only(item) for item in value)
