"""Run many episodes concurrently and append each finished one to the run log.

The runner is resumable: an episode's id is a function of its instance (task, seed,
config), sample index and agent name, and ids already in ``episodes.jsonl`` are
skipped. Work items hold the config, not the generated instance, so resuming a large
run does not regenerate finished instances.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import time
from collections.abc import AsyncIterator, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from agentharness.agents.base import Agent, AgentError, Policy
from agentharness.core.episode import Episode, Usage
from agentharness.core.instance import Instance
from agentharness.core.messages import ImagePart, Message, TextPart
from agentharness.core.registry import episode_for, get_task
from agentharness.core.reward import Reward
from agentharness.core.task import Budgets, TaskSpec
from agentharness.store.run import EncodedRecord, RunDir
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
    """``k`` samples of each instance; a repeated instance (same id) is planned once."""
    unique, _ = distinct_instances(instances)
    return [WorkItem(sample=j, instance=inst) for inst in unique for j in range(k)]


def distinct_instances(instances: Iterable[Instance]) -> tuple[list[Instance], int]:
    """The instances with each id once (the first of its kind), and how many were dropped.

    An episode's id is its instance's id (task, seed, config) with the sample and agent, so
    two instances with one id would give one run two episodes with one id.
    """
    unique: dict[str, Instance] = {}
    n = 0
    for inst in instances:
        unique.setdefault(inst.instance_id, inst)
        n += 1
    return list(unique.values()), n - len(unique)


def describe_error(e: BaseException) -> str:
    """``Type: message`` on one line; a pydantic ``ValidationError`` names its first problems."""
    if isinstance(e, ValidationError):
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err.get('loc', ())) or 'value'}: {err.get('msg', '')}"
            for err in e.errors()[:3]
        )
        more = f" (and {e.error_count() - 3} more)" if e.error_count() > 3 else ""
        return f"ValidationError for {e.title}: {problems}{more}"
    text = str(e).strip()
    first = text.splitlines()[0][:300] if text else ""
    return f"{type(e).__name__}: {first}" if first else type(e).__name__


async def drive(episode: Episode, policy: Policy) -> float:
    """Alternate agent and environment until the episode ends; returns agent seconds.

    Agent failures end the episode as ``agent_error`` with the message recorded; an
    environment that fails while stepping (a task's interaction or world raising on the
    instance's data) ends it as ``env_error``.
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
        try:
            await episode.astep(turn.message, turn.usage)
        except Exception as e:  # the run goes on; the episode says what failed
            episode.finish("env_error", error=f"the environment failed: {describe_error(e)}")
            break
    return agent_s


async def run_one(
    instance: Instance,
    policy: Policy,
    *,
    budgets: Budgets | None = None,
    timeout_s: float | None = None,
) -> tuple[Episode, Timings]:
    episode = episode_for(instance, budgets)
    return episode, await _play(episode, policy, timeout_s, time.time(), time.perf_counter())


async def _play(
    episode: Episode, policy: Policy, timeout_s: float | None, started: float, t0: float
) -> Timings:
    agent_s = 0.0
    try:
        agent_s = await asyncio.wait_for(drive(episode, policy), timeout_s)
    except asyncio.TimeoutError:
        await episode.afinish("timeout", error=f"episode exceeded {timeout_s:g} s")
    wall = time.perf_counter() - t0
    episode.reward()
    return Timings(started_at=started, wall_s=wall, agent_s=agent_s, env_s=max(0.0, wall - agent_s))


class _NoPolicy:
    async def act(self, messages: list[Message], tools: list[dict[str, Any]]) -> Any:
        raise AssertionError("an episode that ended before its first turn is never stepped")


_NO_POLICY = _NoPolicy()


def failed_record(
    instance: Instance,
    sample: int,
    agent: str,
    end_reason: str,
    error: str,
    started: float,
    t0: float,
) -> EpisodeRecord:
    """The record of an episode that could not be played (or kept): no turns, the error."""
    try:
        tools = get_task(instance.task).world.tool_schemas()
    except Exception:
        tools = []
    wall = time.perf_counter() - t0
    return EpisodeRecord(
        episode_id=EpisodeRecord.make_id(instance, sample, agent),
        task=instance.task,
        seed=instance.seed,
        difficulty=instance.difficulty,
        sample=sample,
        agent=agent,
        instance=instance,
        messages=[],
        tools=tools,
        tool_calls=[],
        step_rewards=[],
        reward=Reward.zero(error),
        end_reason=end_reason,
        turns=0,
        usage=Usage(),
        timings=Timings(started_at=started, wall_s=wall, env_s=wall),
        error=error,
    )


def encode_record(record: EpisodeRecord) -> EncodedRecord:
    """``RunDir.encode(record)``, made safe: an episode the log cannot take is still logged.

    An image whose inline data is not valid base64 (a model server's broken reply, an
    agent's bug) is replaced by a text note and the episode's error says so; if the line
    still cannot be written, the episode is logged without its messages and with the
    reason. Either way the run goes on and the episode id is recorded once.
    """
    try:
        return RunDir.encode(record)
    except Exception as e:
        first = describe_error(e)
    messages, dropped = _without_bad_images(record.messages)
    note = f"{dropped} image(s) with unreadable data were replaced by a note ({first})"
    try:
        return RunDir.encode(
            record.model_copy(update={"messages": messages, "error": _join(record.error, note)})
        )
    except Exception as e:
        error = _join(
            record.error, f"the episode's messages could not be logged ({describe_error(e)})"
        )
        bare = record.model_copy(update={"messages": [], "tool_calls": [], "error": error})
        return RunDir.encode(bare)


def _join(error: str | None, note: str) -> str:
    return f"{error}; {note}" if error else note


def _without_bad_images(messages: list[Message]) -> tuple[list[Message], int]:
    out, dropped = [], 0
    for m in messages:
        if isinstance(m.content, list):
            parts: list[Any] = []
            for p in m.content:
                if isinstance(p, ImagePart):
                    try:
                        p.png_bytes()
                    except Exception:
                        dropped += 1
                        p = TextPart(text="[an image was dropped: its data is not valid base64]")
                parts.append(p)
            m = m.model_copy(update={"content": parts})
        out.append(m)
    return out, dropped


@dataclass
class RunResult:
    ran: int
    skipped: int
    failed_to_generate: list[str]


def pending(items: list[WorkItem], agent_name: str, run_dir: RunDir) -> list[WorkItem]:
    """The items whose episode is not in ``run_dir`` yet (what a resumed run still has to do).

    Items that would repeat an episode id (the same instance and sample twice) are kept
    once, so one run never holds two episodes with one id.
    """
    seen = set(run_dir.done_ids())
    todo = []
    for it in items:
        eid = EpisodeRecord.make_id(it.materialize_stub(), it.sample, agent_name)
        if eid not in seen:
            seen.add(eid)
            todo.append(it)
    return todo


@dataclass(frozen=True)
class GenerationFailed:
    """An item whose instance could not be generated (reported, never logged as an episode)."""

    item: WorkItem
    message: str


class EpisodeSource:
    """Runs work items as episodes and hands each result over as soon as it finishes.

    Shared by the single-process runner and by each Ray worker (rollout/ray_backend.py).
    One source bounds the episodes in flight across all its :meth:`stream` calls, and
    ``k`` samples of one instance share a single generation.
    """

    def __init__(
        self,
        agent: Agent,
        *,
        concurrency: int = 8,
        episode_timeout_s: float | None = None,
        budget_overrides: Mapping[str, Any] | None = None,
    ) -> None:
        if concurrency < 1:  # a semaphore of 0 would start no episode and wait forever
            raise ValueError(f"concurrency must be at least 1, got {concurrency}")
        if episode_timeout_s is not None and not episode_timeout_s > 0:
            raise ValueError(
                f"episode_timeout_s must be above 0 (or None), got {episode_timeout_s}"
            )
        self.agent = agent
        self.episode_timeout_s = episode_timeout_s
        self.budget_overrides = dict(budget_overrides or {})
        self._semaphore = asyncio.Semaphore(concurrency)
        self._instances: dict[str, asyncio.Future[Instance]] = {}

    async def _instance_of(self, item: WorkItem) -> Instance:
        key = item.instance_id()
        if key not in self._instances:
            self._instances[key] = asyncio.ensure_future(asyncio.to_thread(item.materialize))
        return await self._instances[key]

    async def one(self, item: WorkItem) -> EpisodeRecord | GenerationFailed:
        async with self._semaphore:
            try:
                instance = await self._instance_of(item)
            except Exception as e:
                return GenerationFailed(item, f"{item.instance_id()}: {type(e).__name__}: {e}")
            return await self._episode(item, instance)

    async def _episode(self, item: WorkItem, instance: Instance) -> EpisodeRecord:
        """Play one episode; whatever fails is recorded on it, never raised to the run."""
        started, t0 = time.time(), time.perf_counter()
        agent = self.agent.name
        try:
            budgets = None
            if self.budget_overrides:
                own = get_task(instance.task).interaction.budgets_for(instance)
                budgets = own.override(**self.budget_overrides)
        except Exception as e:
            error = f"the budget overrides do not fit {instance.task}: {describe_error(e)}"
            return failed_record(instance, item.sample, agent, "env_error", error, started, t0)
        try:
            episode = episode_for(instance, budgets)
        except Exception as e:  # the instance's data does not fit its task (world, prompt)
            error = f"the instance cannot be used by {instance.task}: {describe_error(e)}"
            return failed_record(instance, item.sample, agent, "env_error", error, started, t0)
        try:
            policy = self.agent.policy(instance, sample=item.sample)
        except Exception as e:  # e.g. an expert that cannot read the hidden data
            episode.finish(
                "agent_error",
                error=f"the agent could not start on this instance: {describe_error(e)}",
            )
            policy = _NO_POLICY
        timings = await _play(episode, policy, self.episode_timeout_s, started, t0)
        try:
            return EpisodeRecord.from_episode(
                episode, agent=agent, sample=item.sample, timings=timings
            )
        except Exception as e:  # the episode holds something the log cannot take
            error = f"the episode could not be recorded: {describe_error(e)}"
            reason = episode.end_reason or "env_error"
            return failed_record(instance, item.sample, agent, reason, error, started, t0)

    async def stream(
        self, items: Iterable[WorkItem]
    ) -> AsyncIterator[EpisodeRecord | GenerationFailed]:
        """Results in the order they finish; closing the stream cancels what is still running."""
        tasks = [asyncio.ensure_future(self.one(it)) for it in items]
        try:
            for next_done in asyncio.as_completed(tasks):
                yield await next_done
        finally:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)


class RunWriter:
    """Appends finished episodes to a run directory off the event loop, one fsync per batch.

    Writing one episode at a time blocked the event loop for a whole fsync (~10 ms here)
    per episode; here the episodes that finish while one batch is being written go out
    together in the next. ``on_done`` is called for each record just before its batch is
    committed, in commit order; if it raises, the records up to and including that one are
    committed, nothing after it is, and the error is raised from :meth:`close`.
    A process killed mid-run loses at most the batch not yet flushed: episodes finished
    within the last fsync.
    """

    def __init__(
        self, run_dir: RunDir, on_done: Callable[[EpisodeRecord], None] | None = None
    ) -> None:
        self.run_dir = run_dir
        self.on_done = on_done
        self.written = 0
        self._queue: asyncio.Queue[tuple[EncodedRecord, EpisodeRecord | None] | None] = (
            asyncio.Queue()
        )
        # One thread, so batches reach the file in order and never interleave.
        self._pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="run-writer")
        self._task = asyncio.ensure_future(self._drain())

    def put(
        self, record: EpisodeRecord | EncodedRecord, parsed: EpisodeRecord | None = None
    ) -> None:
        """Queue a finished episode; ``parsed`` is what ``on_done`` gets for an encoded one."""
        self._check()
        if isinstance(record, EpisodeRecord):
            self._queue.put_nowait((encode_record(record), record))
        else:
            self._queue.put_nowait((record, parsed))

    def _check(self) -> None:
        if self._task.done() and not self._task.cancelled() and self._task.exception():
            raise self._task.exception()  # type: ignore[misc]

    async def _drain(self) -> None:
        loop = asyncio.get_running_loop()
        stop = False
        while not stop:
            batch = [await self._queue.get()]
            while not self._queue.empty():
                batch.append(self._queue.get_nowait())
            stop = batch[-1] is None
            entries = [b for b in batch if b is not None]
            committed: list[EncodedRecord] = []
            error: BaseException | None = None
            for encoded, parsed in entries:
                committed.append(encoded)
                if self.on_done is not None and parsed is not None:
                    try:
                        self.on_done(parsed)
                    except BaseException as e:
                        error = e
                        break
            await loop.run_in_executor(self._pool, self.run_dir.append_encoded, committed)
            self.written += len(committed)
            if error is not None:
                raise error

    async def close(self) -> None:
        """Commit everything queued, then stop; raises what ``on_done`` or the disk raised."""
        if not self._task.done():
            self._queue.put_nowait(None)
        try:
            await asyncio.shield(self._task)
        finally:
            self._pool.shutdown(wait=True)  # a batch in flight reaches the disk


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
    todo = pending(items, agent.name, run_dir)
    source = EpisodeSource(
        agent,
        concurrency=concurrency,
        episode_timeout_s=episode_timeout_s,
        budget_overrides=budget_overrides,
    )
    writer = RunWriter(run_dir, on_done)
    failed: list[str] = []
    try:
        async for result in source.stream(todo):
            if isinstance(result, GenerationFailed):
                failed.append(result.message)
            else:
                writer.put(result)
    finally:
        await writer.close()
    return RunResult(
        ran=len(todo) - len(failed), skipped=len(items) - len(todo), failed_to_generate=failed
    )
