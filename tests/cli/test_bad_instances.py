"""One bad line in an instances file never kills ``eval`` or ``export rl`` (issue 14)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from agentharness.cli.main import app
from agentharness.core.registry import get_task

runner = CliRunner()


def instances_file(tmp_path: Path) -> Path:
    """guess seeds 0-3: seed 1 without its public data, seed 0 on three lines."""
    spec = get_task("guess")
    good = [spec.instance(seed, "easy").model_dump(mode="json") for seed in range(4)]
    broken = {**good[1], "public": {}}
    lines = [good[0], broken, good[2], good[0], good[3], good[0]]
    path = tmp_path / "instances.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_eval_records_a_bad_instance_drops_repeats_and_goes_on(tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = ["eval", "--agent", "expert", "--instances", str(instances_file(tmp_path)), "-k", "2"]
    result = runner.invoke(app, [*args, "--out", str(out), "--quiet"])
    assert result.exit_code == 0, result.output
    assert "dropped 2 line(s) repeating an instance" in result.stderr
    assert "4 distinct instances" in result.stderr
    records = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    ids = [r["episode_id"] for r in records]
    assert len(ids) == len(set(ids)) == 8
    bad = [r for r in records if r["seed"] == 1]
    assert [r["end_reason"] for r in bad] == ["env_error", "env_error"]
    assert "KeyError: 'high'" in bad[0]["error"]
    assert all(r["end_reason"] == "answered" for r in records if r["seed"] != 1)
    assert "2 of 8 episodes failed: env_error: the instance cannot be used" in result.stderr

    # Resuming runs nothing twice.
    again = runner.invoke(app, [*args, "--out", str(out), "--quiet"])
    assert again.exit_code == 0 and "ran 0 episodes, skipped 8" in again.output


def test_export_rl_reports_a_bad_instance_in_one_line_and_exports_the_rest(
    tmp_path: Path,
) -> None:
    out = tmp_path / "rl.jsonl"
    args = ["export", "rl", "--instances", str(instances_file(tmp_path)), "-o", str(out)]
    result = runner.invoke(app, [*args, "--format", "trl"])
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.stderr.splitlines() if "skipped instance" in line]
    assert len(warnings) == 1 and "guess-v1:1:" in warnings[0] and "KeyError: 'high'" in warnings[0]
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(r["seed"] for r in rows) == [0, 2, 3]
