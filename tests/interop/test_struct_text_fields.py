"""``to_struct_array`` text fields (session 23, nu23d): at least 10 characters wide, as the
peer's, so that a longer string written into the array later is kept, not cut to the
longest one the collection held."""

from __future__ import annotations

import numpy as np
import torch

from tclass import TensorDict


def test_a_short_string_gets_a_field_of_ten_characters() -> None:
    array = TensorDict({"n": torch.arange(2), "s": "x"}, [2]).to_struct_array()
    assert array.dtype["s"] == np.dtype("U10")
    array["s"][0] = "longer one"
    assert array["s"].tolist() == ["longer one", "x"]


def test_a_longer_string_sets_the_width() -> None:
    td = TensorDict({"s": ["a", "a much longer string"]}, [2])
    assert td.to_struct_array().dtype["s"] == np.dtype("U20")
