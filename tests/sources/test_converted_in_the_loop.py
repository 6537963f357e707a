"""Converted tasks go through the loop like built-in ones: eval, synth, export, serve."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

pytest.importorskip("gymnasium")
pytest.importorskip("reasoning_gym")
pytest.importorskip("fastapi")

from agentharness.cli.main import app, read_instances
from agentharness.serve import BackgroundServer, RemoteEnv, create_app

TASKS = "gym:FrozenLake-v1,rg:leg_counting"


def _ok(args: list[str]) -> str:
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    return result.output


def test_eval_synth_eval_export(tmp_path: Path) -> None:
    runs = tmp_path / "random"
    _ok(
        [
            "eval",
            "--agent",
            "random",
            "--tasks",
            TASKS,
            "-n",
            "3",
            "--difficulty",
            "easy",
            "--quiet",
            "--out",
            str(runs),
        ]
    )
    synth = tmp_path / "synth.jsonl"
    out = _ok(["synth", str(runs), "-o", str(synth), "-n", "4"])
    assert "wrote 4 of 4" in out, out
    instances = read_instances(synth)
    assert {i.task for i in instances} <= set(TASKS.split(","))
    assert all(i.provenance for i in instances)  # synthesized around the failures
    teacher = tmp_path / "teacher"
    _ok(["eval", "--agent", "expert", "--instances", str(synth), "--quiet", "--out", str(teacher)])
    sft = tmp_path / "sft.jsonl"
    _ok(["export", "sft", str(teacher), "-o", str(sft)])
    rows = [json.loads(line) for line in sft.read_text().splitlines()]
    assert len(rows) == 4 and all(r["tools"] for r in rows)
    rl = tmp_path / "rl.jsonl"
    _ok(["export", "rl", "--instances", str(synth), "-o", str(rl), "--format", "trl"])
    assert len(rl.read_text().splitlines()) == 4


def test_the_env_server_serves_converted_tasks() -> None:
    server = BackgroundServer(create_app()).start()
    try:
        cases = (
            ("gym:FrozenLake-v1", {"action": 2}, {"max_steps": 1}),
            ("rg:leg_counting", None, {}),
        )
        for task, action, knobs in cases:
            env = RemoteEnv(server.base_url, task, difficulty="easy", **knobs)
            with env.reset(seed=1) as ep:
                assert ep.tools and ep.messages
                if action is None:
                    call = {"name": "answer", "arguments": json.dumps({"answer": "0"})}
                else:
                    call = {"name": "step", "arguments": json.dumps(action)}
                ep.step(
                    {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [{"id": "c1", "type": "function", "function": call}],
                    }
                )
                assert ep.messages[-1].role in ("tool", "user") and ep.done
                assert ep.reward().total == 0.0  # one step reaches no goal; "0" is no answer
        bad = RemoteEnv(server.base_url, "gym:NoSuchEnv-v0")
        with pytest.raises(Exception, match="unknown Gymnasium env"):
            bad.reset(seed=0)
    finally:
        server.stop()
