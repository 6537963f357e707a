from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

import pytest

from agentharness.core.reward import Reward
from agentharness.export.common import ExportError
from agentharness.export.rl import export_groups, group_advantages, grpo_groups
from agentharness.store.run import RunDir
from agentharness.store.schema import EpisodeRecord


def test_group_advantages_known_values() -> None:
    mean, std, adv, degenerate = group_advantages([0.0, 1.0, 1.0, 0.0], eps=0.0)
    assert mean == 0.5 and not degenerate
    assert std == pytest.approx(math.sqrt(1 / 3))  # sample std (ddof=1), as TRL and verl
    assert adv == pytest.approx(
        [-math.sqrt(3) / 2, math.sqrt(3) / 2, math.sqrt(3) / 2, -math.sqrt(3) / 2]
    )
    _, _, adv_eps, _ = group_advantages([0.0, 1.0], eps=0.5)
    assert adv_eps == pytest.approx([-0.5 / (math.sqrt(0.5) + 0.5), 0.5 / (math.sqrt(0.5) + 0.5)])


def test_zero_variance_groups_are_degenerate_with_zero_advantages() -> None:
    for rewards in ([1.0, 1.0, 1.0], [0.1, 0.1, 0.1, 0.1], [0.3]):
        mean, std, adv, degenerate = group_advantages(rewards)
        assert degenerate and std == 0.0 and adv == [0.0] * len(rewards)
        assert mean == pytest.approx(rewards[0])
    with pytest.raises(ValueError):
        group_advantages([])


def varied(records: list[EpisodeRecord]) -> list[EpisodeRecord]:
    """Scripted agents repeat themselves across samples: give the rollouts distinct rewards,
    except on every other instance (a zero-variance group)."""
    instances = sorted({r.instance.instance_id for r in records})
    out = []
    for r in records:
        i = instances.index(r.instance.instance_id)
        total = 0.5 if i % 2 else [0.0, 0.25, 1.0, 0.25][r.sample] * (1 - i / 20)
        out.append(r.model_copy(update={"reward": Reward(total=total, success=total > 0.9)}))
    return out


def test_groups_of_a_k4_run(guess_groups_run: Path) -> None:
    records = varied(list(RunDir(guess_groups_run).episodes()))
    groups = grpo_groups(records, k=4)
    assert len(groups) == 6
    assert sorted(e for g in groups for e in g["episode_ids"]) == sorted(
        r.episode_id for r in records
    )
    by_id = {r.episode_id: r for r in records}
    kinds = set()
    for g in groups:
        assert g["n"] == 4 and g["samples"] == [0, 1, 2, 3]
        rewards = [by_id[e].reward.total for e in g["episode_ids"]]
        assert g["rewards"] == rewards
        assert {by_id[e].instance.instance_id for e in g["episode_ids"]} == {g["instance_id"]}
        assert g["mean"] == pytest.approx(statistics.fmean(rewards))
        if g["degenerate"]:
            assert len(set(rewards)) == 1 and g["advantages"] == [0.0] * 4
        else:
            std = statistics.stdev(rewards)
            assert g["std"] == pytest.approx(std)
            assert g["advantages"] == pytest.approx(
                [(r - g["mean"]) / (std + 1e-6) for r in rewards]
            )
            assert sum(g["advantages"]) == pytest.approx(0.0, abs=1e-9)
        kinds.add(g["degenerate"])
    assert kinds == {True, False}


def test_degenerate_flag_on_a_constructed_run(guess_groups_run: Path) -> None:
    records = list(RunDir(guess_groups_run).episodes())
    first = records[0].instance.instance_id
    same = Reward(total=0.7, success=True)
    forced = [
        r.model_copy(update={"reward": same}) if r.instance.instance_id == first else r
        for r in records
    ]
    groups = {g["instance_id"]: g for g in grpo_groups(forced)}
    assert groups[first]["degenerate"] is True and groups[first]["advantages"] == [0.0] * 4


def test_wrong_group_sizes_are_skipped_with_a_warning(
    guess_groups_run: Path, tmp_path: Path
) -> None:
    records = list(RunDir(guess_groups_run).episodes())
    with pytest.warns(UserWarning, match="exactly k=3"):
        assert grpo_groups(records, k=3) == []
    with pytest.warns(UserWarning), pytest.raises(ExportError, match="k=3"):
        export_groups([guess_groups_run], tmp_path / "g.jsonl", k=3)
    # Different agents on the same instance never share a group.
    other = [r.model_copy(update={"agent": "other"}) for r in records]
    assert len(grpo_groups(records + other, k=4)) == 12


def test_export_groups_writes_jsonl(guess_groups_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "groups.jsonl"
    assert export_groups([guess_groups_run], out) == 6
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert {"instance", "rewards", "advantages", "degenerate", "episode_ids"} <= set(rows[0])
