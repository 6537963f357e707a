"""Small helpers of the GRPO trainer that need no model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentharness.core.registry import get_task
from agentharness.train import TrainInputError
from agentharness.train.grpo import GRPOOptions, _matches, _training_rows, train_grpo


def test_task_filter_takes_versioned_ids_and_bare_names() -> None:
    assert _matches("escape_room-v1", ["escape_room"])
    assert _matches("escape_room-v1", ["escape_room-v1"])
    assert not _matches("escape_room-v1", ["escape_room-v2"])
    # a name containing "-v" is not cut there
    assert _matches("my-vault-v3", ["my-vault"])
    assert not _matches("my-vault-v3", ["my"])


def test_an_instance_no_episode_can_start_on_is_skipped_with_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A bad line is one warning before training, not a crash some steps into it."""
    spec = get_task("guess")
    good = [spec.instance(seed, "easy").model_dump(mode="json") for seed in range(3)]
    broken = {**good[1], "public": {}}  # data the task cannot read
    path = tmp_path / "instances.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in (good[0], broken, good[2])))

    rows = _training_rows([], None, path, GRPOOptions())
    assert sorted(json.loads(row["instance"])["seed"] for row in rows) == [0, 2]
    (warning,) = capsys.readouterr().err.strip().splitlines()
    assert "skipped instance guess-v1:1:" in warning and "KeyError" in warning

    path.write_text(json.dumps(broken) + "\n")
    with pytest.raises(TrainInputError, match=r"no instance .* can start an episode"):
        train_grpo([], tmp_path / "out", model="/nonexistent", data=path)
