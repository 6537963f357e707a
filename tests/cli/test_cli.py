from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from agentharness.cli.main import app
from agentharness.core.registry import get_task

runner = CliRunner()


def invoke(*args: str) -> object:
    return runner.invoke(app, list(args), catch_exceptions=False)


def test_tasks_json_lists_every_task_with_contract_fields() -> None:
    result = invoke("tasks", "--json")
    rows = json.loads(result.output)
    assert {"guess-v1", get_task("tsp_vision").id} <= {r["id"] for r in rows}
    for row in rows:
        assert set(row) == {"id", "modality", "difficulties", "description"}
        assert row["modality"] in ("text", "vision")


def test_show_prints_prompt_and_saves_images(tmp_path: Path) -> None:
    result = invoke(
        "show", "tsp_vision", "--seed", "2", "--difficulty", "easy", "--images-dir", str(tmp_path)
    )
    assert result.exit_code == 0
    assert "submit_tour" in result.output
    (png,) = tmp_path.glob("*.png")
    assert png.read_bytes().startswith(b"\x89PNG")


def test_generate_writes_instances(tmp_path: Path) -> None:
    out = tmp_path / "inst.jsonl"
    result = invoke(
        "generate", "guess", "-n", "3", "--difficulty", "easy", "--seed", "5", "-o", str(out)
    )
    assert result.exit_code == 0
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert [x["seed"] for x in lines] == [5, 6, 7] and all(x["task"] == "guess-v1" for x in lines)


def test_eval_writes_contract_fields_and_resumes(tmp_path: Path) -> None:
    out = tmp_path / "run"
    args = (
        "eval",
        "--agent",
        "noisy:0.3",
        "--tasks",
        "guess-v1",
        "-n",
        "3",
        "-k",
        "2",
        "--difficulty",
        "easy",
        "--concurrency",
        "4",
        "--out",
        str(out),
        "--quiet",
    )
    assert invoke(*args).exit_code == 0
    lines = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert len(lines) == 6
    for ep in lines:
        for key in (
            "task",
            "seed",
            "difficulty",
            "sample",
            "agent",
            "instance",
            "messages",
            "reward",
            "end_reason",
            "turns",
            "usage",
            "timings",
        ):
            assert key in ep, key
        assert {"total", "success", "components"} <= set(ep["reward"])
    run_json = json.loads((out / "run.json").read_text())
    assert run_json["agent"] == "noisy:0.3" and run_json["tasks"] == ["guess-v1"]
    again = invoke(*args)
    assert "ran 0 episodes, skipped 6" in again.output
    assert len((out / "episodes.jsonl").read_text().splitlines()) == 6


def test_eval_on_instances_file(tmp_path: Path) -> None:
    inst = tmp_path / "i.jsonl"
    invoke("generate", "guess", "-n", "2", "-o", str(inst))
    out = tmp_path / "run"
    result = invoke(
        "eval", "--agent", "expert", "--instances", str(inst), "--out", str(out), "--quiet"
    )
    assert result.exit_code == 0
    assert len((out / "episodes.jsonl").read_text().splitlines()) == 2


def test_report_json(tmp_path: Path) -> None:
    out = tmp_path / "run"
    invoke(
        "eval",
        "--agent",
        "expert",
        "--tasks",
        "guess",
        "-n",
        "2",
        "-k",
        "2",
        "--out",
        str(out),
        "--quiet",
    )
    summary = json.loads(invoke("report", str(out), "--json").output)["guess-v1"]
    assert summary["episodes"] == 4 and summary["success_rate"] == 1.0 and summary["pass@2"] == 1.0
    assert summary["end_reasons"] == {"answered": 4}


def test_bad_input_gets_clear_errors(tmp_path: Path) -> None:
    r = runner.invoke(app, ["eval", "--tasks", "nosuchtask", "--out", str(tmp_path / "x")])
    assert r.exit_code == 2 and "unknown task 'nosuchtask'" in r.output
    r = runner.invoke(
        app, ["eval", "--agent", "bogus", "--tasks", "guess", "--out", str(tmp_path / "x")]
    )
    assert r.exit_code == 2 and "unknown agent" in r.output
    r = runner.invoke(
        app, ["eval", "--agent", "noisy:abc", "--tasks", "guess", "--out", str(tmp_path / "x")]
    )
    assert r.exit_code == 2 and "noisy:<rate>" in r.output
    r = runner.invoke(app, ["show", "guess", "--difficulty", "extreme"])
    assert r.exit_code == 2 and "no difficulty" in r.output
    r = runner.invoke(app, ["generate", "guess", "--knob", "nonsense"])
    assert r.exit_code == 2 and "name=value" in r.output
    r = runner.invoke(app, ["report", str(tmp_path / "missing")])
    assert r.exit_code == 2 and "does not exist" in r.output
    r = runner.invoke(
        app, ["eval", "--instances", str(tmp_path / "none.jsonl"), "--out", str(tmp_path / "y")]
    )
    assert r.exit_code == 2 and "does not exist" in r.output


def test_check_passes_on_a_good_task() -> None:
    result = invoke("check", "guess")
    assert result.exit_code == 0 and "PASS guess-v1" in result.output
