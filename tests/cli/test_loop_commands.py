from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentharness.cli.main import app
from agentharness.store import RunDir

runner = CliRunner()


def invoke(*args: str) -> Any:
    return runner.invoke(app, list(args), catch_exceptions=False)


def make_eval(out: Path, agent: str = "noisy:0.2", *extra: str) -> Path:
    result = invoke(
        "eval",
        "--agent",
        agent,
        "--tasks",
        "guess",
        "-n",
        "8",
        "--out",
        str(out),
        "--quiet",
        *extra,
    )
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="module")
def noisy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_eval(tmp_path_factory.mktemp("cli") / "noisy")


def test_mine_says_what_fails_and_how_often(noisy: Path) -> None:
    result = invoke("mine", str(noisy))
    assert result.exit_code == 0
    assert "of 8 episodes failed" in result.stdout and "guess-v1 medium" in result.stdout
    data = json.loads(invoke("mine", str(noisy), "--json").stdout)
    assert data["episodes"] == 8 and data["failures"] == sum(
        c["failures"] for c in data["clusters"]
    )
    assert {"task", "difficulty", "params", "end_reason", "weakest", "rate", "examples"} <= set(
        data["clusters"][0]
    )


def test_synth_writes_instances_that_eval_takes(noisy: Path, tmp_path: Path) -> None:
    out = tmp_path / "synth.jsonl"
    result = invoke("synth", str(noisy), "-o", str(out), "-n", "5", "--seed", "2")
    assert result.exit_code == 0 and "wrote 5 of 5" in result.stdout
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(lines) == 5 and all(x["provenance"]["variant"] for x in lines)
    first = out.read_text()
    invoke("synth", str(noisy), "-o", str(out), "-n", "5", "--seed", "2")
    assert out.read_text() == first  # same inputs and seed, same file
    run = tmp_path / "on_synth"
    result = invoke(
        "eval", "--agent", "expert", "--instances", str(out), "--out", str(run), "--quiet"
    )
    assert result.exit_code == 0
    assert len(list(RunDir(run).episodes())) == 5


def test_filter_prints_what_it_dropped_and_writes_a_run(noisy: Path, tmp_path: Path) -> None:
    out = tmp_path / "kept"
    result = invoke("filter", str(noisy), "-o", str(out), "--success-only", "--allow-tool-errors")
    assert result.exit_code == 0, result.output
    assert (
        "kept " in result.stdout
        and "dropped" in result.stdout
        and "not_successful" in result.stdout
    )
    counts = json.loads(
        invoke(
            "filter", str(noisy), "-o", str(out), "--success-only", "--allow-tool-errors", "--json"
        ).stdout
    )
    assert counts["kept"] + sum(counts["dropped"].values()) == 8
    assert invoke("report", str(out)).exit_code == 0
    assert invoke("mine", str(out), "--json").exit_code == 0
    assert invoke("compare", str(noisy), str(out)).exit_code == 0
    refused = invoke("filter", str(noisy), "-o", str(noisy))
    assert refused.exit_code == 2 and "one of the input runs" in refused.stderr
    other = make_eval(tmp_path / "other", "expert")
    refused = invoke("filter", str(noisy), "-o", str(other))
    assert refused.exit_code == 2 and "refusing to overwrite" in refused.stderr


def test_compare_pairs_the_same_instances(noisy: Path, tmp_path: Path) -> None:
    expert = make_eval(tmp_path / "expert", "expert")
    data = json.loads(invoke("compare", str(noisy), str(expert), "--json", "--seed", "1").stdout)
    (task,) = data["tasks"]
    assert task["paired"] and task["reward"]["delta"] > 0
    assert task["wins"] > 0 and task["solved_lost"] == 0
    shown = invoke("compare", str(noisy), str(expert)).stdout
    assert "guess-v1" in shown and f"+{task['wins']} / -{task['losses']}" in shown


@pytest.mark.parametrize("command", ["mine", "filter", "synth", "compare"])
def test_missing_and_foreign_run_directories(command: str, noisy: Path, tmp_path: Path) -> None:
    def run(target: Path) -> Any:
        args = {
            "mine": ["mine", str(target)],
            "filter": ["filter", str(target), "-o", str(tmp_path / "f")],
            "synth": ["synth", str(target), "-o", str(tmp_path / "s.jsonl")],
            "compare": ["compare", str(noisy), str(target)],
        }[command]
        return invoke(*args)

    missing = run(tmp_path / "nope")
    assert missing.exit_code == 2 and "does not exist" in missing.stderr
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("hello")
    result = run(foreign)
    assert result.exit_code == 2 and "not a run directory" in result.stderr
    instances = tmp_path / "instances"
    instances.mkdir()
    assert (
        invoke("generate", "guess", "-n", "2", "-o", str(instances / "episodes.jsonl")).exit_code
        == 0
    )
    result = run(instances)
    assert result.exit_code == 2 and "none of the lines" in result.stderr
    a_file = tmp_path / "file.jsonl"
    a_file.write_text("{}\n")
    result = run(a_file)
    assert result.exit_code == 2 and "is not a directory" in result.stderr


def test_truncated_last_line_is_skipped_with_a_warning(noisy: Path, tmp_path: Path) -> None:
    cut = tmp_path / "cut"
    shutil.copytree(noisy, cut)
    data = (cut / "episodes.jsonl").read_bytes()
    (cut / "episodes.jsonl").write_bytes(data[: len(data) - 200])
    result = invoke("mine", str(cut), "--json")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["episodes"] == 7
    assert "truncated" in result.stderr
    assert invoke("filter", str(cut), "-o", str(tmp_path / "f")).exit_code == 0
    assert invoke("compare", str(noisy), str(cut)).exit_code == 0
    assert invoke("synth", str(cut), "-o", str(tmp_path / "s.jsonl"), "-n", "2").exit_code == 0


def test_mixed_task_versions_are_named(noisy: Path, tmp_path: Path) -> None:
    v2 = tmp_path / "v2"
    v2.mkdir()
    lines = (noisy / "episodes.jsonl").read_text().replace('"guess-v1', '"guess-v2')
    (v2 / "episodes.jsonl").write_text(lines)
    mined = invoke("mine", str(noisy), str(v2))
    assert mined.exit_code == 0 and "mix task versions (guess-v1, guess-v2)" in mined.stderr
    refused = invoke("compare", str(noisy), str(v2))
    assert refused.exit_code == 2
    assert "guess-v1 in run A but guess-v2 in run B" in refused.stderr


def test_loop_runs_and_resumes(tmp_path: Path) -> None:
    out = tmp_path / "loop"
    args = [
        "loop",
        "--student",
        "noisy:0.5",
        "--teacher",
        "expert",
        "--tasks",
        "guess",
        "-n",
        "5",
        "--synth-n",
        "4",
        "--out",
        str(out),
    ]
    first = invoke(*args)
    assert first.exit_code == 0, first.output
    assert "round 1 compare" in first.stderr and "verdict" in first.stdout
    # Without --trainer the round says why nothing was trained.
    assert "trained=False, reason=no --trainer" in first.stderr
    for name in (
        "heldout_before",
        "mine.json",
        "synth.jsonl",
        "teacher",
        "filtered",
        "sft.jsonl",
        "heldout_after",
        "compare.json",
    ):
        assert (out / "round_1" / name).exists(), name
    again = invoke(*args)
    assert again.exit_code == 0 and again.stderr.count("already done") == 9
    refused = invoke(*args, "--trainer", "sft")
    assert refused.exit_code == 2 and "--student local" in refused.stderr
    # A loop directory is reported run by run.
    report = invoke("report", str(out))
    assert report.exit_code == 0
    assert "round_1/heldout_before" in report.stdout and "round_1/heldout_after" in report.stdout
    summaries = json.loads(invoke("report", str(out), "--json").stdout)
    assert {"round_1/heldout_before", "round_1/teacher"} <= set(summaries)


def test_loop_says_when_the_student_never_fails(tmp_path: Path) -> None:
    args = ["loop", "--student", "expert", "--tasks", "guess", "-n", "3", "--synth-n", "2"]
    result = invoke(*args, "--out", str(tmp_path / "loop"))
    assert result.exit_code == 0
    assert "no failure to learn from" in result.stderr and "weaker student" in result.stderr


def test_mine_writes_its_report_for_the_html_report(noisy: Path, tmp_path: Path) -> None:
    out = tmp_path / "mine.json"
    assert invoke("mine", str(noisy), "-o", str(out)).exit_code == 0
    data = json.loads(out.read_text())
    assert data["episodes"] == 8 and data["clusters"]
    assert invoke("mine", str(noisy), "-o", str(tmp_path)).exit_code == 2


def test_report_shows_pass_at_k_only_with_several_samples(tmp_path: Path) -> None:
    one = invoke("report", str(make_eval(tmp_path / "k1", "expert")))
    assert "pass@1" not in one.stdout and "mean reward" in one.stdout
    two = invoke("report", str(make_eval(tmp_path / "k2", "expert", "-k", "2")))
    assert "pass@1" in two.stdout and "(k=2)" in two.stdout
