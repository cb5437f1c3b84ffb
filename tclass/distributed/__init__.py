"""Records over ``torch.distributed``: point-to-point transfers and collectives.

Every collection (``TensorDict``, lazy stacks, tensorclasses) has these as methods
(``td.send(1)``, ``td.recv(0)``...); the functions here are the same methods, taking the
record first (``tclass.distributed.send(td, 1)``). They ride on the process group the
program already has (``torch.distributed.init_process_group``): gloo moves CPU tensors,
NCCL CUDA ones.

How a record travels (``_wire.py`` has the details): both sides walk the leaves in sorted
key order; the sender sends a small header (a digest of its keys, dtypes and shapes, and
the sizes that follow), then its description and Python values as JSON, then the data,
with leaves up to 32 KiB packed into buckets of up to 1 MiB and larger leaves sent alone,
all messages in flight at once. The receiver checks the digest against its own record's
before writing anything: a receiver whose structure differs still receives every message
(the sender is never left blocked) and then raises
:class:`~tclass.errors.StructureMismatchError` naming the first differing key. No message
goes back to the sender, so checking costs no round trip.

Python values (``NonTensorData``, e.g. a tensorclass's ``str`` field) travel as JSON with
the description and replace the receiver's values; a value that is not JSON is a
:class:`~tclass.errors.NotSerializableError` at send time (nothing is ever unpickled).
"""

from __future__ import annotations

from tclass._base.declared._dist_ops import DistributedOps
from tclass.distributed._transfer import BackgroundTransfer, Handle, Transfer

__all__ = [
    "BackgroundTransfer", "Handle", "Transfer", "all_gather", "all_reduce", "broadcast",
    "irecv", "isend", "recv", "send",
]  # fmt: skip

send = DistributedOps.send
isend = DistributedOps.isend
recv = DistributedOps.recv
irecv = DistributedOps.irecv
broadcast = DistributedOps.broadcast
all_reduce = DistributedOps.all_reduce
all_gather = DistributedOps.all_gather
