"""Run many episodes concurrently and append each finished one to the run log.

The runner is resumable: an episode's id is a function of its instance (task, seed,
config), sample index and agent name, and ids already in ``episodes.jsonl`` are
skipped. Work items hold the config, not the generated instance, so resuming a large
run does not regenerate finished instances.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from agentharness.agents.base import Agent, AgentError, Policy
from agentharness.core.episode import Episode
from agentharness.core.instance import Instance
from agentharness.core.registry import episode_for, get_task
from agentharness.core.task import Budgets, TaskSpec
from agentharness.store.run import RunDir
from agentharness.store.schema import EpisodeRecord, Timings


@dataclass(frozen=True)
class WorkItem:
    """One episode to run: a stored instance, or a (spec, config, seed) to generate."""

    sample: int
    instance: Instance | None = None
    spec: TaskSpec | None = None
    config: dict[str, Any] | None = None
    seed: int = 0
    difficulty: str = "medium"

    def instance_id(self) -> str:
        return self.materialize_stub().instance_id

    def materialize_stub(self) -> Instance:
        """An instance with only the id-relevant fields (no generation)."""
        if self.instance is not None:
            return self.instance
        assert self.spec is not None and self.config is not None
        return Instance(
            task=self.spec.id,
            seed=self.seed,
            difficulty=self.difficulty,
            config=self.config,
            public={},
            hidden={},
        )

    def materialize(self) -> Instance:
        if self.instance is not None:
            return self.instance
        assert self.spec is not None
        config = self.spec.config_model.model_validate(self.config)
        return self.spec.instance_from_config(config, self.seed, self.difficulty)


def plan(
    specs: Iterable[TaskSpec],
    *,
    n: int,
    k: int = 1,
    seed: int = 0,
    difficulty: str = "medium",
    **knobs: Any,
) -> list[WorkItem]:
    """``n`` seeds per task, ``k`` samples per instance."""
    items: list[WorkItem] = []
    for spec in specs:
        config = spec.make_config(difficulty, **knobs).model_dump(mode="json")
        for s in range(seed, seed + n):
            items.extend(
                WorkItem(sample=j, spec=spec, config=config, seed=s, difficulty=difficulty)
                for j in range(k)
            )
    return items


def plan_instances(instances: Iterable[Instance], *, k: int = 1) -> list[WorkItem]:
    return [WorkItem(sample=j, instance=inst) for inst in instances for j in range(k)]


async def drive(episode: Episode, policy: Policy) -> float:
    """Alternate agent and environment until the episode ends; returns agent seconds.

    Agent failures end the episode as ``agent_error`` with the message recorded.
    """
    agent_s = 0.0
    while not episode.done:
        t0 = time.perf_counter()
        try:
            turn = await policy.act(list(episode.messages), episode.tools)
        except AgentError as e:
            episode.usage.add(e.usage)
            episode.finish("agent_error", error=str(e))
            break
        except asyncio.CancelledError:
            raise
        except Exception as e:  # an agent bug is recorded, not fatal to the run
            episode.finish("agent_error", error=f"{type(e).__name__}: {e}")
            break
        finally:
            agent_s += time.perf_counter() - t0
        await episode.astep(turn.message, turn.usage)
    return agent_s


async def run_one(
    instance: Instance,
    policy: Policy,
    *,
    budgets: Budgets | None = None,
    timeout_s: float | None = None,
) -> tuple[Episode, Timings]:
    episode = episode_for(instance, budgets)
    started, t0 = time.time(), time.perf_counter()
    agent_s = 0.0
    try:
        agent_s = await asyncio.wait_for(drive(episode, policy), timeout_s)
    except asyncio.TimeoutError:
        episode.finish("timeout", error=f"episode exceeded {timeout_s:g} s")
    wall = time.perf_counter() - t0
    episode.reward()
    return episode, Timings(
        started_at=started, wall_s=wall, agent_s=agent_s, env_s=max(0.0, wall - agent_s)
    )


@dataclass
class RunResult:
    ran: int
    skipped: int
    failed_to_generate: list[str]


async def run(
    items: list[WorkItem],
    agent: Agent,
    run_dir: RunDir,
    *,
    concurrency: int = 8,
    episode_timeout_s: float | None = None,
    budget_overrides: Mapping[str, Any] | None = None,
    on_done: Callable[[EpisodeRecord], None] | None = None,
) -> RunResult:
    """Run ``items`` with at most ``concurrency`` episodes in flight; append as they finish.

    ``budget_overrides`` replaces single fields of each task's own budgets (e.g.
    ``{"max_turns": 4}``); the rest of the task's budgets stay as the task set them.
    """
    done_ids = run_dir.done_ids()
    todo = [
        it
        for it in items
        if EpisodeRecord.make_id(it.materialize_stub(), it.sample, agent.name) not in done_ids
    ]
    skipped = len(items) - len(todo)
    semaphore = asyncio.Semaphore(concurrency)
    failed: list[str] = []
    instance_cache: dict[str, asyncio.Future[Instance]] = {}

    async def instance_of(item: WorkItem) -> Instance:
        # k samples of one instance share a single generation.
        key = item.instance_id()
        if key not in instance_cache:
            instance_cache[key] = asyncio.ensure_future(asyncio.to_thread(item.materialize))
        return await instance_cache[key]

    async def one(item: WorkItem) -> None:
        async with semaphore:
            try:
                instance = await instance_of(item)
            except Exception as e:
                failed.append(f"{item.instance_id()}: {type(e).__name__}: {e}")
                return
            budgets = None
            if budget_overrides:
                own = get_task(instance.task).interaction.budgets
                budgets = own.override(**budget_overrides)
            episode, timings = await run_one(
                instance,
                agent.policy(instance, sample=item.sample),
                budgets=budgets,
                timeout_s=episode_timeout_s,
            )
            record = EpisodeRecord.from_episode(
                episode, agent=agent.name, sample=item.sample, timings=timings
            )
            run_dir.append(record)
            if on_done is not None:
                on_done(record)

    await asyncio.gather(*(one(it) for it in todo))
    return RunResult(ran=len(todo) - len(failed), skipped=skipped, failed_to_generate=failed)
