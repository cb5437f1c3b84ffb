"""Seed 02's listing of a saved folder: ``tensordict.utils.print_directory_tree`` on a
nested TensorDict holding a stacked list of TensorDicts and a tensorclass.
"""

import contextlib
import io
import logging
import tempfile

import torch

from compat import lib
from compat.lib import TensorDict, submodule, tensorclass


@tensorclass
class MyClass:
    data: torch.Tensor
    metadata: str


def main() -> None:
    print_directory_tree = submodule("utils").print_directory_tree
    td_list = [TensorDict({"item": i}, batch_size=[]) for i in range(4)]
    tc = MyClass(torch.randn(3), metadata="some text", batch_size=[])
    data = TensorDict({"td_list": torch.stack(td_list), "tensorclass": tc}, [])
    with tempfile.TemporaryDirectory() as tempdir:
        data.memmap_(tempdir)
        # the listing may be printed or logged (the peer logs it through its logger)
        out = io.StringIO()
        handler = logging.StreamHandler(out)
        loggers = [logging.getLogger(), logging.getLogger(lib.NAME)]
        for logger in loggers:
            logger.addHandler(handler)
        try:
            with contextlib.redirect_stdout(out):
                print_directory_tree(tempdir)
        finally:
            for logger in loggers:
                logger.removeHandler(handler)
        listing = out.getvalue()
    for name in ("tensorclass/", "_tensordict/", "data.memmap", "td_list/", "meta.json"):
        assert name in listing, (name, listing)
