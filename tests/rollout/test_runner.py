from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from agentharness import get_task
from agentharness.agents.base import AgentTurn
from agentharness.agents.scripted import ExpertAgent, NoisyAgent
from agentharness.core.messages import (
    PNG_DATA_URL_PREFIX,
    ImagePart,
    ImageURL,
    Message,
    TextPart,
    ToolCall,
    assistant,
)
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


def test_an_episode_timeout_mid_call_is_scored_after_the_call_returns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The episode's clock runs out while a tool call runs: the reward reads the world
    once that call has returned, not while it changes, and the wait leaves the event loop
    free (here the gate that lets the call return is opened by a coroutine on that loop)."""
    import dataclasses
    import threading

    from toy_task import GUESS, GuessWorld

    from agentharness.core import episode as episode_module
    from agentharness.core import tool
    from agentharness.core.episode import Episode
    from agentharness.rollout.runner import _play

    gate = threading.Event()

    class Stalling(GuessWorld):
        @tool(timeout_s=20)
        def stall(self) -> str:
            """Hold the world until the gate opens, then count 100 probes."""
            gate.wait(timeout=30)
            self.probes += 100
            return "done"

    class Staller:
        async def act(self, messages: Any, tools: Any) -> AgentTurn:
            return AgentTurn(assistant(tool_calls=[ToolCall.make("s", "stall", {})]))

    async def open_gate() -> None:
        await asyncio.sleep(0.3)
        gate.set()

    async def main() -> None:
        opener = asyncio.ensure_future(open_gate())
        await _play(episode, Staller(), 0.05, time.time(), time.perf_counter())
        await opener

    monkeypatch.setattr(episode_module, "SETTLE_S", 3.0)
    spec = dataclasses.replace(GUESS, world=Stalling)
    episode = Episode(
        spec=spec, instance=spec.instance(0, "easy"), budgets=spec.interaction.budgets
    )
    asyncio.run(main())
    assert episode.end_reason == "timeout"
    assert episode.reward().component("efficiency") == pytest.approx(1 / 11)


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


# -- one bad input never kills a run ------------------------------------------------------
def test_bad_instances_are_recorded_as_env_error_and_the_run_goes_on(tmp_path: Path) -> None:
    good = [get_task("guess").instance(seed, "easy") for seed in range(3)]
    no_public = good[1].model_copy(update={"public": {}, "seed": 10})
    wrong_type = good[2].model_copy(update={"public": {"high": "many"}, "seed": 11})
    run_dir = RunDir(tmp_path)
    run_dir.create({})
    items = plan_instances([good[0], no_public, good[1], wrong_type, good[2]], k=2)
    result = asyncio.run(run(items, ExpertAgent(), run_dir, concurrency=3))
    records = {r.episode_id: r for r in run_dir.episodes()}
    assert result.ran == len(records) == 10 and not result.failed_to_generate
    bad = [r for r in records.values() if r.seed in (10, 11)]
    assert len(bad) == 4
    for r in bad:
        assert r.end_reason in ("env_error", "agent_error") and r.turns == 0 and r.error
        assert r.reward.total == 0.0 and not r.reward.success
    prompt_failed = [r for r in bad if r.seed == 10]
    assert all(r.end_reason == "env_error" for r in prompt_failed)
    assert "cannot be used by guess-v1: KeyError: 'high'" in (prompt_failed[0].error or "")
    assert all(r.end_reason == "answered" for r in records.values() if r.seed < 10)


def test_an_agent_that_cannot_start_or_an_environment_that_fails_mid_episode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = get_task("guess")

    class Picky:
        name = "picky"

        def policy(self, instance, sample=0):
            if instance.seed == 1:
                raise KeyError("secret")
            return self

        async def act(self, messages, tools):
            return AgentTurn(assistant("no tool call"))

        async def aclose(self) -> None:
            return None

    def broken_feedback(*args: Any) -> str:
        raise ValueError("the interaction read a field the instance lacks")

    monkeypatch.setattr(spec.interaction, "on_no_tool_call", broken_feedback)
    run_dir = RunDir(tmp_path)
    run_dir.create({})
    asyncio.run(run(plan([spec], n=2, difficulty="easy"), Picky(), run_dir))
    by_seed = {r.seed: r for r in run_dir.episodes()}
    assert by_seed[1].end_reason == "agent_error" and by_seed[1].turns == 0
    assert "could not start on this instance: KeyError: 'secret'" in (by_seed[1].error or "")
    assert by_seed[0].end_reason == "env_error" and by_seed[0].turns == 1
    assert "ValueError: the interaction read a field" in (by_seed[0].error or "")


def test_duplicate_instances_never_give_duplicate_episode_ids(tmp_path: Path) -> None:
    insts = [get_task("guess").instance(seed, "easy") for seed in (0, 1, 0, 0, 1)]
    items = plan_instances(insts, k=2)
    assert len(items) == 4
    run_dir = RunDir(tmp_path)
    run_dir.create({})
    # Items repeated by hand are run once too.
    result = asyncio.run(run(items + items[:3], ExpertAgent(), run_dir))
    ids = [r.episode_id for r in run_dir.episodes()]
    assert result.ran == len(ids) == len(set(ids)) == 4


def test_an_unreadable_image_in_a_turn_is_logged_as_a_note(tmp_path: Path) -> None:
    bad = ImagePart(image_url=ImageURL(url=PNG_DATA_URL_PREFIX + "iVBORw0KGgoAAAANSUhEUg"))

    class Painter:
        name = "painter"

        def policy(self, instance, sample=0):
            return self

        async def act(self, messages, tools):
            return AgentTurn(Message(role="assistant", content=[TextPart(text="look"), bad]))

        async def aclose(self) -> None:
            return None

    run_dir = RunDir(tmp_path)
    run_dir.create({})
    result = asyncio.run(run(plan([get_task("guess")], n=3), Painter(), run_dir))
    records = list(run_dir.episodes())
    assert result.ran == len(records) == 3
    for r in records:
        assert "replaced by a note" in (r.error or "")
        parts = [p for m in r.messages if isinstance(m.content, list) for p in m.content]
        assert not any(isinstance(p, ImagePart) for p in parts)
        assert any(isinstance(p, TextPart) and "image was dropped" in p.text for p in parts)
