from __future__ import annotations

from pathlib import Path

import pytest

from agentharness.loop.runs import LoopInputError, load_runs, mixed_versions
from agentharness.store import RunDir


def test_the_same_run_twice_counts_each_episode_once(noisy_guess: Path) -> None:
    loaded = load_runs([noisy_guess, noisy_guess])
    assert len(loaded.records) == 16 and loaded.duplicates == 16
    assert "more than once" in loaded.warnings[-1]
    assert mixed_versions(loaded.records) is None


def test_empty_and_unreadable_runs(tmp_path: Path) -> None:
    empty = RunDir(tmp_path / "empty")
    empty.write_all([], {"command": "filter"})
    with pytest.raises(LoopInputError, match="holds no episodes yet"):
        load_runs([empty.path])
    assert load_runs([empty.path], allow_empty=True).records == []
    garbage = tmp_path / "garbage"
    garbage.mkdir()
    (garbage / "episodes.jsonl").write_text('{"not": "an episode"}\nnot json\n')
    with pytest.raises(LoopInputError, match=r"none of the lines .* \(2 skipped"):
        load_runs([garbage])
    with pytest.raises(LoopInputError, match="no run directories"):
        load_runs([])
