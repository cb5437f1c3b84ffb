"""Whether ``torch.compile`` is tracing the code that asks.

Dynamo answers ``True`` for :func:`tracing` while it traces (it folds the call to a
constant); run eagerly it is a plain call returning ``False`` (about 30 ns, a third of
``torch.compiler.is_compiling``, which first asks TorchScript). The hot paths use it
to step around what a trace cannot keep symbolic: a dict or cache looked up with a batch
size (a lookup by a symbolic size pins the size, and the graph recompiles for every
new one), ``operator.attrgetter`` and the like.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

__all__ = ["tracing"]

tracing: Callable[[], bool] = torch.compiler.is_dynamo_compiling
