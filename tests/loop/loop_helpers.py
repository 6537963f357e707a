"""Plain helpers of the loop tests (imported by name; fixtures live in conftest.py).

A module of its own, not conftest.py: pytest may import several conftest modules under
the one name ``conftest``, so ``from conftest import ...`` breaks when test folders run
together.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from agentharness import get_task
from agentharness.agents import Agent, make_agent
from agentharness.rollout.runner import plan, run
from agentharness.store import EpisodeRecord, RunDir


def make_run(
    path: Path,
    agent: str | Agent,
    task: str = "guess",
    *,
    n: int = 8,
    k: int = 1,
    difficulty: str = "medium",
    seed: int = 0,
    **knobs: Any,
) -> Path:
    """A run directory of ``agent`` on ``n`` seeds of ``task``."""
    the_agent = make_agent(agent) if isinstance(agent, str) else agent
    items = plan([get_task(task)], n=n, k=k, seed=seed, difficulty=difficulty, **knobs)
    run_dir = RunDir(path)
    run_dir.create({"command": "test"})
    asyncio.run(run(items, the_agent, run_dir, concurrency=4))
    return path


def records_of(path: Path) -> list[EpisodeRecord]:
    return list(RunDir(path).episodes())
