from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from agentharness import get_task
from agentharness.agents.scripted import ExpertAgent, NoisyAgent
from agentharness.rollout.runner import plan, plan_instances, run
from agentharness.store import RunDir
from agentharness.testing.openai_server import ScriptedOpenAIServer, cycle_tools_policy


def test_k_samples_and_resume_without_duplicates(tmp_path: Path) -> None:
    items = plan([get_task("guess")], n=4, k=3, difficulty="easy")
    run_dir = RunDir(tmp_path)
    run_dir.create({})
    first = asyncio.run(run(items[:5], NoisyAgent(0.5), run_dir, concurrency=3))
    assert first.ran == 5 and first.skipped == 0
    second = asyncio.run(run(items, NoisyAgent(0.5), run_dir, concurrency=3))
    assert second.ran == 7 and second.skipped == 5
    records = list(run_dir.episodes())
    assert len(records) == 12 == len({r.episode_id for r in records})
    assert sorted({r.sample for r in records}) == [0, 1, 2]


def test_same_instance_different_agents_are_different_episodes(tmp_path: Path) -> None:
    inst = get_task("guess").instance(0, "easy")
    run_dir = RunDir(tmp_path)
    run_dir.create({})
    asyncio.run(run(plan_instances([inst]), ExpertAgent(), run_dir))
    asyncio.run(run(plan_instances([inst]), NoisyAgent(1.0), run_dir))
    assert {r.agent for r in run_dir.episodes()} == {"expert", "noisy:1:0"}


def test_episode_timeout_is_recorded(tmp_path: Path) -> None:
    class Slow:
        name = "slow"

        def policy(self, instance, sample=0):
            return self

        async def act(self, messages, tools):
            await asyncio.sleep(10)

        async def aclose(self) -> None:
            return None

    run_dir = RunDir(tmp_path)
    run_dir.create({})
    asyncio.run(run(plan([get_task("guess")], n=2), Slow(), run_dir, episode_timeout_s=0.05))
    records = list(run_dir.episodes())
    assert [r.end_reason for r in records] == ["timeout", "timeout"]
    assert all("exceeded" in (r.error or "") for r in records)


def test_sigkill_mid_run_then_resume_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    out = tmp_path / "run"
    total = 16
    with ScriptedOpenAIServer(policy=cycle_tools_policy(turns=2), latency_s=0.15) as server:
        cmd = [
            sys.executable,
            "-m",
            "agentharness.cli.main",
            "eval",
            "--agent",
            "openai",
            "--model",
            "scripted",
            "--base-url",
            server.base_url,
            "--tasks",
            "tsp_vision",
            "-n",
            str(total),
            "--difficulty",
            "easy",
            "--concurrency",
            "2",
            "--out",
            str(out),
            "--quiet",
        ]
        env = {**os.environ, "OPENAI_API_KEY": "unused"}
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        episodes = out / "episodes.jsonl"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if episodes.exists() and episodes.read_text().count("\n") >= 3:
                break
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        before = [
            line for line in episodes.read_text().splitlines(keepends=True) if line.endswith("\n")
        ]
        assert 3 <= len(before) < total, "the run was not killed mid-way"

        subprocess.run(
            cmd,
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=300,
        )

    after = episodes.read_text().splitlines(keepends=True)
    assert after[: len(before)] == before, "finished episodes were rewritten or lost"
    ids = [json.loads(line)["episode_id"] for line in after]
    assert len(ids) == total == len(set(ids))
    assert {json.loads(line)["seed"] for line in after} == set(range(total))
