from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from agentharness.cli.main import app
from agentharness.core.registry import get_task

runner = CliRunner()


def invoke(*args: str) -> Any:
    return runner.invoke(app, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("cli_export") / "run"
    result = invoke(
        "eval",
        "--agent",
        "noisy:0.3",
        "--tasks",
        "guess,thermal",
        "-n",
        "2",
        "-k",
        "2",
        "--difficulty",
        "easy",
        "--out",
        out,
        "--quiet",
    )
    assert result.exit_code == 0, result.output
    return out


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_export_sft(run_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "sft.jsonl"
    r = invoke("export", "sft", run_dir, "-o", out)
    assert r.exit_code == 0 and "wrote 8 rows" in r.output
    rows = lines(out)
    assert len(rows) == 8 and {"messages", "tools", "task", "episode_id", "reward"} <= set(rows[0])

    r = invoke("export", "sft", run_dir, "-o", out, "--per-turn", "--tool-format", "text")
    assert r.exit_code == 0
    rows = lines(out)
    assert rows and all(set(r_["completion"][0]) == {"role", "content"} for r_ in rows)
    assert all(r_["tools"] is None for r_ in rows)

    r = invoke("export", "sft", run_dir, "-o", out, "--tool-format", "xml")
    assert r.exit_code == 2 and "'xml' is not one of 'native', 'text'" in r.output


def test_export_rl_verl_and_trl(run_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "rl.parquet"
    r = invoke("export", "rl", run_dir, "-o", out)
    assert r.exit_code == 0 and "wrote 4 prompts" in r.output
    assert pq.read_table(out).num_rows == 4
    assert (tmp_path / "rl.tools.yaml").is_file() and (tmp_path / "rl.interaction.yaml").is_file()
    assert "rl.tools.yaml" in r.output

    inst = tmp_path / "inst.jsonl"
    assert (
        invoke("generate", "thermal", "-n", "3", "--difficulty", "easy", "-o", inst).exit_code == 0
    )
    trl_out = tmp_path / "rl.jsonl"
    r = invoke("export", "rl", "--instances", inst, "--format", "trl", "-o", trl_out)
    assert r.exit_code == 0, r.output
    assert [row["seed"] for row in lines(trl_out)] == [0, 1, 2]
    assert {row["max_turns"] for row in lines(trl_out)} == {None}
    r = invoke(
        "export", "rl", "--instances", inst, "--format", "trl", "-o", trl_out,
        "--task-turns", "thermal=4",
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    assert {row["max_turns"] for row in lines(trl_out)} == {4}


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("thermal", "write TASK=TURNS"),
        ("thermal=0", "at least 1"),
        ("thermal=2.5", "at least 1"),
        ("nosuchtask=3", "nosuchtask"),
        ("guess=3", "no prompt plays"),  # a known task the instances do not hold
    ],
)
def test_export_rl_task_turns_that_cannot_apply_are_refused(
    tmp_path: Path, spec: str, message: str
) -> None:
    inst = tmp_path / "inst.jsonl"
    assert invoke("generate", "thermal", "-n", "1", "-o", inst).exit_code == 0
    out = tmp_path / "rl.parquet"
    r = invoke("export", "rl", "--instances", inst, "-o", out, "--task-turns", spec)
    assert r.exit_code != 0 and message in r.output, r.output
    assert not out.exists()


def test_export_rl_bad_arguments(run_dir: Path, tmp_path: Path) -> None:
    inst = tmp_path / "inst.jsonl"
    invoke("generate", "thermal", "-n", "1", "-o", inst)
    r = invoke("export", "rl", run_dir, "--instances", inst, "-o", tmp_path / "x.parquet")
    assert r.exit_code == 2 and "one of them" in r.output
    r = invoke("export", "rl", "-o", tmp_path / "x.parquet")
    assert r.exit_code == 2 and "one of them" in r.output
    r = invoke("export", "rl", run_dir, "--format", "trl", "-o", tmp_path / "x.parquet")
    assert r.exit_code == 2 and "writes JSONL" in r.output
    r = invoke("export", "rl", run_dir, "--format", "csv", "-o", tmp_path / "x.csv")
    assert r.exit_code == 2 and "'csv' is not one of 'verl', 'trl'" in r.output
    r = invoke(
        "export", "rl", "--instances", tmp_path / "missing.jsonl", "-o", tmp_path / "x.parquet"
    )
    assert r.exit_code == 2 and "does not exist" in r.output


def test_export_groups(run_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "groups.jsonl"
    r = invoke("export", "groups", run_dir, "-o", out, "-k", "2")
    assert r.exit_code == 0 and "wrote 4 groups" in r.output
    assert all(g["n"] == 2 and len(g["advantages"]) == 2 for g in lines(out))
    r = invoke("export", "groups", run_dir, "-o", out, "-k", "5")
    assert r.exit_code == 2
    assert "skipped 4 group(s)" in r.output and "no group has exactly k=5" in r.output


def test_bad_run_dirs_give_clean_errors(run_dir: Path, tmp_path: Path) -> None:
    r = invoke("export", "sft", tmp_path / "nope", "-o", tmp_path / "x.jsonl")
    assert r.exit_code == 2 and "does not exist" in r.output
    broken = tmp_path / "broken"
    shutil.copytree(run_dir, broken)
    with open(broken / "episodes.jsonl", "a") as f:
        f.write('{"trunc')
    r = invoke("export", "sft", broken, "-o", tmp_path / "x.jsonl")
    assert r.exit_code == 0 and "wrote 8 rows" in r.output
    assert "warning:" in r.output and "truncated" in r.output


def test_report_html(run_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    r = invoke("report", run_dir, "--html", out)
    assert r.exit_code == 0 and str(out) in r.output.replace("\n", "")
    page = out.read_text()
    assert (
        '<img src="data:image/png;base64,' in page and f'id="task-{get_task("thermal").id}"' in page
    )
    r = invoke("report", tmp_path / "nope", "--html", out)
    assert r.exit_code == 2 and "does not exist" in r.output


def test_export_sft_split_modality(run_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "sft.jsonl"
    r = invoke("export", "sft", run_dir, "-o", out, "--split-modality")
    assert r.exit_code == 0 and "wrote 8 rows to" in r.output, r.output
    text = lines(tmp_path / "sft.text.jsonl")
    vision_path = tmp_path / "sft.vision.jsonl"
    vision = lines(vision_path) if vision_path.exists() else []  # a random `picture` call
    assert len(text) + len(vision) == 8 and not out.exists()
    assert all("images" not in row for row in text) and all(row["images"] for row in vision)


def test_export_inspect(run_dir: Path, tmp_path: Path) -> None:
    from inspect_ai.log import read_eval_log

    out = tmp_path / "logs" / "run.eval"
    r = invoke("export", "inspect", run_dir, "-o", out)
    assert r.exit_code == 0 and "wrote 8 samples" in r.output, r.output
    assert len(read_eval_log(str(out)).samples or []) == 8
    r = invoke("export", "inspect", run_dir, "-o", tmp_path / "x.txt")
    assert r.exit_code == 2 and ".eval or .json" in r.output
