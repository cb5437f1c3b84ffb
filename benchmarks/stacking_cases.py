"""The stacking cases: lazy stacks, ``maybe_dense_stack`` and ``pad_sequence``.

Same scheme as ``tensorclass_cases`` (whose objects these statements reuse: ``*ones`` is a
list of 100 single transitions): each case is one statement written with tclass, with
the peer and by hand. By hand, a lazy stack is the list of its records, and padding is
``torch.nn.utils.rnn.pad_sequence`` on each key.
"""

from types import ModuleType
from typing import Any

import torch

import tclass

import tensorclass_cases
from tensorclass_cases import PEER_TARGET, TensorclassCase

# Sequence lengths 1..64 for pad_sequence, with the engine benchmark's three leaves.
LENGTHS = range(1, 65)


def _sequences() -> list[dict[str, torch.Tensor]]:
    generator = torch.Generator().manual_seed(3)
    return [
        {
            "obs": torch.randn(length, 3, 4, generator=generator),
            "action": torch.randn(length, 2, generator=generator),
            "reward": torch.randn(length, generator=generator),
        }
        for length in LENGTHS
    ]


def namespace(peer: ModuleType | None) -> dict[str, Any]:
    """The tensorclass namespace plus 100-member lazy stacks (``*lazy``) and 64
    variable-length TensorDicts (``*seqs``)."""
    ns = tensorclass_cases.namespace(peer)
    sequences = _sequences()
    ns["tlazy"] = tclass.lazy_stack(ns["tones"])
    ns["dlazy"] = list(ns["dones"])
    ns["dseqs"] = sequences
    ns["tseqs"] = [tclass.TensorDict(dict(s), batch_size=[len(s["reward"])]) for s in sequences]
    if peer is not None:
        ns["plazy"] = peer.lazy_stack(ns["pones"])
        ns["pseqs"] = [peer.TensorDict(dict(s), batch_size=[len(s["reward"])]) for s in sequences]
    return ns


def _stacked_by_hand(records: str) -> str:
    fields = ", ".join(
        f"torch.stack([r.{name} for r in {records}])" for name in tensorclass_cases.TENSOR_FIELDS
    )
    return f"DTransition({fields}, {records}[0].env)"


def stacking_cases() -> list[TensorclassCase]:
    """The stacking issue's cases, in order."""
    padded_by_hand = (
        "{k: torch.nn.utils.rnn.pad_sequence([s[k] for s in dseqs], batch_first=True) "
        "for k in dseqs[0]}"
    )
    rows: list[tuple[str, str, str, str, bool]] = [
        (
            "lazy_stack of 100 records",
            "tclass.lazy_stack(tones)",
            "peer.lazy_stack(pones)",
            "list(dones)",
            False,
        ),
        ("lazy[37] of 100 members", "tlazy[37]", "plazy[37]", "dlazy[37]", False),
        (
            "maybe_dense_stack of 100 equal",
            "tclass.maybe_dense_stack(tones)",
            "peer.maybe_dense_stack(pones)",
            _stacked_by_hand("dones"),
            True,
        ),
        (
            "pad_sequence of 64 (len 1..64)",
            "tclass.pad_sequence(tseqs)",
            "peer.pad_sequence(pseqs)",
            padded_by_hand,
            True,
        ),
    ]
    return [
        TensorclassCase(name, ours, theirs, baseline, tensor_bound, PEER_TARGET)
        for name, ours, theirs, baseline, tensor_bound in rows
    ]
