"""A collection saved in a folder, pickled to another process (a ``DataLoader`` or
``multiprocessing`` worker, a queue): the copy maps the same files, so its tensor writes
reach them, and its Python values written by row reach the folder's ``meta.json`` as the
saving process's do (they stayed in the copy's memory, silently lost; the peer refuses
such a write in any process)."""

from __future__ import annotations

import pickle
from pathlib import Path

import torch

import tclass
from tclass import TensorDict


@tclass.tensorclass
class Step:
    obs: torch.Tensor
    env: str


def test_a_pickled_saved_tensordict_writes_values_into_the_folder(tmp_path: Path) -> None:
    saved = TensorDict(
        {"obs": torch.zeros(3, 2), "env": "a", "n": {"tag": "t", "r": torch.zeros(3)}}, [3]
    ).memmap_(tmp_path / "buf")
    worker = pickle.loads(pickle.dumps(saved))
    assert worker.is_locked
    worker[1] = TensorDict(
        {"obs": torch.ones(2), "env": "b", "n": {"tag": "u", "r": torch.tensor(5.0)}}, []
    )
    loaded = tclass.load_memmap(tmp_path / "buf")
    assert loaded.get("env").tolist() == ["a", "b", "a"]
    assert loaded.get(("n", "tag")).tolist() == ["t", "u", "t"]
    assert loaded["obs"][1].tolist() == [1.0, 1.0] and loaded["n", "r"].tolist() == [0, 5, 0]
    assert saved["obs"][1].tolist() == [1.0, 1.0]  # the same pages


def test_a_pickled_saved_record_writes_values_into_the_folder(tmp_path: Path) -> None:
    saved = Step(obs=torch.zeros(3, 2), env="a", batch_size=[3]).memmap_(tmp_path / "rec")
    worker = pickle.loads(pickle.dumps(saved))
    worker[0] = Step(obs=torch.full((2,), 4.0), env="w0")
    loaded = Step.load_memmap(tmp_path / "rec")
    assert loaded.env == ["w0", "a", "a"]
    assert loaded.obs[0].tolist() == [4.0, 4.0]


def test_a_pickled_collection_not_saved_stays_in_memory(tmp_path: Path) -> None:
    """Only a saved node carries its folder: a copy in memory pickles as before."""
    saved = TensorDict({"obs": torch.zeros(2), "env": "a"}, [2]).memmap_(tmp_path / "m")
    copy = pickle.loads(pickle.dumps(saved.clone()))
    copy[0] = TensorDict({"obs": torch.ones(()), "env": "z"}, [])
    assert tclass.load_memmap(tmp_path / "m").get("env").tolist() == ["a", "a"]
    plain = pickle.loads(pickle.dumps(TensorDict({"obs": torch.zeros(2)}, [2])))
    assert plain["obs"].tolist() == [0.0, 0.0]
