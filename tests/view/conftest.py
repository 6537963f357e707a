"""Run directories for the viewer tests: two runs on shared instances, images, marked turns."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from agentharness import get_task, make
from agentharness.agents import make_agent
from agentharness.core.messages import ToolCall, assistant
from agentharness.rollout.runner import plan, run
from agentharness.store import EpisodeRecord, RunDir, Timings


def make_run(path: Path, agent: str, task: str, n: int, difficulty: str) -> None:
    """Append ``agent``'s episodes on ``n`` seeds of ``task`` to the run at ``path``."""
    run_dir = RunDir(path)
    run_dir.create({"command": "test"})
    items = plan([get_task(task)], n=n, k=1, seed=0, difficulty=difficulty)
    asyncio.run(run(items, make_agent(agent), run_dir, concurrency=4))


def handmade_episode(seed: int = 99) -> EpisodeRecord:
    """A guess episode with a format error, a nudge, a tool error and a tool image."""
    ep = make("guess", difficulty="easy").reset(seed=seed)
    ep.step("<tool_call>{not json</tool_call>")  # format error
    ep.step("Let me think about it first.")  # no tool call: the task nudges
    ep.step(assistant(tool_calls=[ToolCall.make("bad", "probe", {"guess": 0})]))  # tool error
    ep.step(assistant(tool_calls=[ToolCall.make("pic", "picture", {})]))  # an image
    ep.step(assistant("I give up; answering 1.", [ToolCall.make("fin", "answer", {"number": 1})]))
    assert ep.done
    return EpisodeRecord.from_episode(
        ep, agent="handmade", sample=0, timings=Timings(started_at=time.time(), wall_s=0.5)
    )


@pytest.fixture(scope="session")
def view_runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``loop/before`` (noisy student + one handmade episode + tsp_vision) and ``loop/after``."""
    root = tmp_path_factory.mktemp("view") / "loop"
    before, after = root / "before", root / "after"
    make_run(before, "noisy:0.3", "guess", n=30, difficulty="easy")
    make_run(before, "expert", "tsp_vision", n=1, difficulty="easy")
    RunDir(before).append(handmade_episode())
    make_run(after, "expert", "guess", n=30, difficulty="easy")
    return root
