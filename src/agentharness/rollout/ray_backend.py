"""Episodes spread over Ray workers, on one machine or a cluster; the driver owns the run.

Each worker is an async Ray actor that builds its own agent and runs its share of the
episodes with the same :class:`~agentharness.rollout.runner.EpisodeSource` as the
single-process runner, so tools and simulators run where the episode runs, never on the
driver. A worker streams every finished episode back as an encoded log line
(:meth:`RunDir.encode`) the moment it finishes; the driver alone appends to the run
directory, so resume, the log schema and the report are those of ``bootcamp eval``.

Work goes out in small chunks as a worker's episodes come back: each worker holds its
episodes in flight plus a half again queued, so it never idles waiting for the next chunk
and the end of the run is not left queued behind one slow worker.
When a worker dies, the episodes of its chunks that had not come back are queued again
and run on another worker (or on the same one once Ray restarts it); the driver keeps
the ids it wrote, so an episode is never written twice. An item lost with its worker
``MAX_ATTEMPTS`` times is reported, not written, and a later resume tries it again.

Ray is imported only here, and only when the backend is used (the ``ray`` extra).
"""

from __future__ import annotations

import asyncio
import collections
import math
import os
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agentharness.agents.base import Agent
from agentharness.core.episode import Episode
from agentharness.core.instance import Instance
from agentharness.core.messages import Message
from agentharness.core.registry import all_tasks, episode_for, get_task
from agentharness.core.task import Budgets
from agentharness.rollout.runner import (
    EpisodeSource,
    GenerationFailed,
    RunResult,
    RunWriter,
    WorkItem,
    encode_record,
    pending,
)
from agentharness.store.run import EncodedRecord, RunDir
from agentharness.store.schema import EpisodeRecord, Timings

MAX_ATTEMPTS = 3
# How long a lost worker may take to come back (Ray restarts it; it reloads every task).
PROBE_TIMEOUT_S = 300.0


class RayBackendError(RuntimeError):
    """The Ray backend cannot go on (no Ray, no cluster, every worker gone)."""


@dataclass(frozen=True)
class RayConfig:
    """Where and how wide to run.

    ``address`` None starts a private local Ray on this machine (``ray.init(address=
    "local")``, so it never joins someone else's); otherwise it is passed to ``ray.init``
    (``auto``, ``ray://head:10001``, ``head:6379``) to join an existing cluster, whose
    nodes must have this agentharness installed.
    """

    address: str | None = None
    workers: int = 2
    cpus_per_worker: float = 1.0
    # Ray restarts a killed worker this many times; its lost episodes run again anyway.
    max_restarts: int = 2

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise ValueError(f"--workers must be at least 1, got {self.workers}")
        if self.cpus_per_worker <= 0:
            raise ValueError(f"cpus per worker must be positive, got {self.cpus_per_worker}")


@dataclass(frozen=True)
class AgentSpec:
    """How each worker builds its agent (clients and models do not cross processes)."""

    kind: str
    options: dict[str, Any] = field(default_factory=dict)

    def __call__(self) -> Agent:
        from agentharness.agents import make_agent

        return make_agent(self.kind, **self.options)


@dataclass
class RayRunResult(RunResult):
    workers: int = 0
    nodes: int = 0
    worker_failures: int = 0  # chunks lost with a dead or unreachable worker
    requeued: int = 0  # episodes sent out again after their worker was lost


# -- work items on the wire ---------------------------------------------------------------
WireItem = tuple[int, Instance | None, str | None, dict[str, Any] | None, int, str]


def to_wire(item: WorkItem) -> WireItem:
    """A work item with its task by id: a TaskSpec holds code, which stays on each side."""
    return (
        item.sample,
        item.instance,
        item.spec.id if item.spec is not None else None,
        item.config,
        item.seed,
        item.difficulty,
    )


def from_wire(wire: WireItem) -> WorkItem:
    sample, instance, task_id, config, seed, difficulty = wire
    spec = get_task(task_id) if task_id is not None else None
    return WorkItem(
        sample=sample, instance=instance, spec=spec, config=config, seed=seed, difficulty=difficulty
    )


def episode_id(item: WorkItem, agent_name: str) -> str:
    return EpisodeRecord.make_id(item.materialize_stub(), item.sample, agent_name)


# -- the worker ----------------------------------------------------------------------------
class RolloutWorker:
    """One Ray actor: an agent and an episode source for the chunks sent to it."""

    def __init__(
        self,
        make_agent: Callable[[], Agent],
        concurrency: int,
        episode_timeout_s: float | None,
        budget_overrides: Mapping[str, Any] | None,
    ) -> None:
        # Load every task now: the registry loads lazily (PyBaMM alone takes seconds), and
        # a worker should be ready when it says it is up.
        all_tasks()
        self.agent = make_agent()
        self.source = EpisodeSource(
            self.agent,
            concurrency=concurrency,
            episode_timeout_s=episode_timeout_s,
            budget_overrides=budget_overrides,
        )

    def info(self) -> dict[str, Any]:
        import ray

        return {
            "agent": self.agent.name,
            "pid": os.getpid(),
            "node": ray.get_runtime_context().get_node_id(),
        }

    async def run(
        self, chunk: list[tuple[str, WireItem]]
    ) -> AsyncIterator[list[tuple[str, EncodedRecord | str]]]:
        """Batches of ``(episode id, encoded record)``, or ``(id, error)`` for a failure.

        A batch is what finished since the last one was taken, so under load one Ray
        object carries several episodes (each object costs the driver ~1 ms) while a lone
        episode still goes out at once. Ids are the driver's, echoed back, so an item this
        node cannot even read is still accounted for.
        """
        ready: asyncio.Queue[tuple[str, EncodedRecord | str] | None] = asyncio.Queue()
        items: list[WorkItem] = []
        ids: dict[int, str] = {}
        for eid, wire in chunk:
            try:
                item = from_wire(wire)
            except Exception as e:  # e.g. a task this node does not have
                ready.put_nowait((eid, f"{type(e).__name__}: {e}"))
                continue
            items.append(item)
            ids[id(item)] = eid

        async def pump() -> None:
            try:
                async for result in self.source.stream(items):
                    if isinstance(result, GenerationFailed):
                        ready.put_nowait((ids[id(result.item)], result.message))
                    else:
                        ready.put_nowait((result.episode_id, encode_record(result)))
            finally:
                ready.put_nowait(None)

        pumping = asyncio.ensure_future(pump())
        try:
            finished = False
            while not finished:
                batch = []
                for entry in [await ready.get(), *_drain(ready)]:
                    if entry is None:
                        finished = True
                    else:
                        batch.append(entry)
                if batch:
                    yield batch
            await pumping  # raises what the episodes raised, if anything
        finally:
            pumping.cancel()

    async def close(self) -> None:
        await self.agent.aclose()


def _drain(queue: asyncio.Queue[Any]) -> list[Any]:
    out = []
    while not queue.empty():
        out.append(queue.get_nowait())
    return out


def _ray() -> Any:
    try:
        import ray
    except ImportError as e:
        raise RayBackendError('the Ray backend needs ray: pip install "agentharness[ray]"') from e
    return ray


def init_ray(config: RayConfig) -> bool:
    """Connect to (or start) Ray; True when this call started it (and should shut it down)."""
    ray = _ray()
    if ray.is_initialized():
        return False
    kwargs: dict[str, Any] = {"log_to_driver": False, "logging_level": "WARNING"}
    try:
        if config.address is None:
            cpus = max(os.cpu_count() or 1, math.ceil(config.workers * config.cpus_per_worker))
            ray.init(address="local", num_cpus=cpus, include_dashboard=False, **kwargs)
        else:
            ray.init(address=config.address, **kwargs)
    except Exception as e:
        where = config.address or "a local Ray"
        raise RayBackendError(f"could not start or join {where}: {type(e).__name__}: {e}") from e
    return True


async def run_ray(
    items: list[WorkItem],
    make_agent: Callable[[], Agent],
    run_dir: RunDir,
    *,
    ray_config: RayConfig | None = None,
    concurrency: int = 8,
    episode_timeout_s: float | None = None,
    budget_overrides: Mapping[str, Any] | None = None,
    on_done: Callable[[EpisodeRecord], None] | None = None,
    on_received: Callable[[str], None] | None = None,
    on_workers: Callable[[list[dict[str, Any]]], None] | None = None,
) -> RayRunResult:
    """:func:`~agentharness.rollout.runner.run` over Ray workers.

    ``make_agent`` must pickle (an :class:`AgentSpec`, or a module-level function);
    ``concurrency`` is the total of episodes in flight, split over the workers.
    ``on_done`` is the runner's (the driver parses each record to call it: ~1 ms of driver
    CPU per episode); ``on_received`` only gets the id of each episode queued for writing,
    which is all a progress bar needs. ``on_workers`` gets each worker's ``{"agent", "pid",
    "node"}`` once they are up.
    """
    config = ray_config or RayConfig()
    ray = _ray()
    started = init_ray(config)
    per_worker = max(1, math.ceil(concurrency / config.workers))
    actor_cls = ray.remote(RolloutWorker).options(
        num_cpus=config.cpus_per_worker,
        max_restarts=config.max_restarts,
        max_task_retries=0,  # a lost chunk is re-planned here, minus what already came back
        scheduling_strategy="SPREAD",
    )
    workers = [
        actor_cls.remote(make_agent, per_worker, episode_timeout_s, budget_overrides)
        for _ in range(config.workers)
    ]
    try:
        try:
            infos = list(await asyncio.gather(*(w.info.remote() for w in workers)))
        except ray.exceptions.RayError as e:
            raise RayBackendError(
                f"the Ray workers did not start ({_last_line(e)}); on a cluster, every node needs "
                "this agentharness and its tasks installed"
            ) from e
        names = {i["agent"] for i in infos}
        if len(names) != 1:
            raise RayBackendError(f"workers built different agents: {sorted(names)}")
        if on_workers is not None:
            on_workers(infos)
        driver = _Driver(
            ray,
            workers,
            names.pop(),
            run_dir,
            on_done,
            on_received,
            per_worker=per_worker,
            max_failures=config.max_restarts + 1,
        )
        result = await driver.run(items)
        result.nodes = len({i["node"] for i in infos})
        return result
    finally:
        await _close_workers(ray, workers)
        if started:
            ray.shutdown()


async def _close_workers(ray: Any, workers: list[Any]) -> None:
    async def close(w: Any) -> None:
        try:
            await asyncio.wait_for(_resolve(w.close.remote()), 10)
        except Exception:  # a dead worker has nothing to close
            pass
        ray.kill(w, no_restart=True)

    await asyncio.gather(*(close(w) for w in workers))


async def _resolve(ref: Any) -> Any:
    return await ref


class _Driver:
    """Hands out chunks, takes back finished episodes, writes each one exactly once."""

    def __init__(
        self,
        ray: Any,
        workers: list[Any],
        agent_name: str,
        run_dir: RunDir,
        on_done: Callable[[EpisodeRecord], None] | None,
        on_received: Callable[[str], None] | None,
        *,
        per_worker: int,
        max_failures: int,
    ) -> None:
        self.ray = ray
        self.workers = workers
        self.agent_name = agent_name
        self.run_dir = run_dir
        self.on_done = on_done
        self.on_received = on_received
        self.chunk = max(1, per_worker // 2)
        self.cap = per_worker + self.chunk  # episodes given to a worker and not back yet
        self.assigned = [0] * len(workers)
        self.progress = asyncio.Event()
        self.max_failures = max_failures
        # A worker's deaths, counted once per death however many chunks it took down. A lost
        # worker gets no work until a probe sees it back (restarted), so episodes do not
        # bounce off a worker that is still down and use up their attempts.
        self.deaths = [0] * len(workers)
        self.epoch = [0] * len(workers)
        self.healthy = [True] * len(workers)
        self.probes: dict[int, asyncio.Future[None]] = {}
        self.written: set[str] = set()
        self.attempts: collections.Counter[str] = collections.Counter()
        self.failed: list[str] = []
        self.requeued = 0
        self.lost_chunks = 0

    def alive(self) -> list[int]:
        return [i for i, n in enumerate(self.deaths) if n < self.max_failures and self.healthy[i]]

    def _lost(self, w: int, epoch: int) -> None:
        """Worker ``w`` died or went away while running a chunk sent in ``epoch``."""
        if epoch != self.epoch[w]:
            return  # this death was already counted by another of its chunks
        self.epoch[w] += 1
        self.deaths[w] += 1
        self.healthy[w] = False
        if self.deaths[w] < self.max_failures and w not in self.probes:
            self.probes[w] = asyncio.ensure_future(self._probe(w))

    async def _probe(self, w: int) -> None:
        """Wait for Ray to bring the worker back before it gets more work."""
        try:
            while self.deaths[w] < self.max_failures:
                try:
                    await asyncio.wait_for(_resolve(self.workers[w].info.remote()), PROBE_TIMEOUT_S)
                except (self.ray.exceptions.RayError, asyncio.TimeoutError):
                    self.deaths[w] += 1
                else:
                    self.healthy[w] = True
                    return
        finally:
            self.probes.pop(w, None)
            self.progress.set()

    async def run(self, items: list[WorkItem]) -> RayRunResult:
        todo = pending(items, self.agent_name, self.run_dir)
        by_id = {episode_id(it, self.agent_name): it for it in todo}
        queue = collections.deque(by_id)
        writer = RunWriter(self.run_dir, self.on_done)
        inflight: dict[asyncio.Future[Any], int] = {}
        try:
            while queue or inflight:
                for w in self.alive():
                    while queue and self.assigned[w] < self.cap:
                        n = min(self.chunk, self.cap - self.assigned[w], len(queue))
                        ids = [queue.popleft() for _ in range(n)]
                        self.assigned[w] += n
                        task = asyncio.ensure_future(self._chunk(w, ids, by_id, writer, queue))
                        inflight[task] = w
                if not inflight and not self.probes:
                    raise RayBackendError(
                        f"every Ray worker died ({len(queue)} episodes not run; the finished ones "
                        "are saved: re-run the same command to resume)"
                    )
                # Wake when a chunk ends or any episode comes back (a worker has room again).
                self.progress.clear()
                waiter: asyncio.Future[Any] = asyncio.ensure_future(self.progress.wait())
                done, _ = await asyncio.wait(
                    [*inflight, waiter], return_when=asyncio.FIRST_COMPLETED
                )
                waiter.cancel()
                for finished in done:
                    if finished is not waiter:
                        del inflight[finished]
                        finished.result()  # a writer failure (disk, on_done) ends the run
        finally:
            for pending_chunk in [*inflight, *self.probes.values()]:
                pending_chunk.cancel()
            await asyncio.gather(*inflight, *self.probes.values(), return_exceptions=True)
            await writer.close()
        return RayRunResult(
            ran=len(self.written),
            skipped=len(items) - len(todo),
            failed_to_generate=self.failed,
            workers=len(self.workers),
            worker_failures=self.lost_chunks,
            requeued=self.requeued,
        )

    async def _chunk(
        self,
        w: int,
        ids: list[str],
        by_id: dict[str, WorkItem],
        writer: RunWriter,
        queue: collections.deque[str],
    ) -> None:
        back: set[str] = set()
        epoch = self.epoch[w]
        try:
            stream = (
                self.workers[w]
                .run.options(num_returns="streaming")
                .remote([(i, to_wire(by_id[i])) for i in ids])
            )
            async for ref in stream:
                for eid, payload in await ref:
                    back.add(eid)
                    self.assigned[w] -= 1
                    self.progress.set()
                    if eid in self.written:  # a chunk re-sent after a false alarm finished twice
                        continue
                    if isinstance(payload, str):
                        self.failed.append(f"{eid}: {payload}")
                        continue
                    self.written.add(eid)
                    parsed = None
                    if self.on_done is not None:
                        parsed = EpisodeRecord.model_validate_json(payload.line)
                    writer.put(payload, parsed)
                    if self.on_received is not None:
                        self.on_received(eid)
        except self.ray.exceptions.RayError as e:
            # The worker died or could not be reached: what did not come back runs again.
            self.lost_chunks += 1
            self.assigned[w] -= len(set(ids) - back)
            self.progress.set()
            if isinstance(e, self.ray.exceptions.RayActorError):
                self._lost(w, epoch)
            for eid in ids:
                if eid in back or eid in self.written:
                    continue
                self.attempts[eid] += 1
                if self.attempts[eid] >= MAX_ATTEMPTS:
                    self.failed.append(
                        f"{eid}: lost with its worker {MAX_ATTEMPTS} times; last: {_first_line(e)}"
                    )
                else:
                    self.requeued += 1
                    queue.append(eid)


def _last_line(e: BaseException) -> str:
    """The root cause at the end of a Ray error's traceback text."""
    lines = [line.strip() for line in str(e).splitlines() if line.strip()]
    return lines[-1][:300] if lines else type(e).__name__


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return f"{type(e).__name__}: {text.splitlines()[0][:200] if text else ''}"


# -- environments stepped on Ray workers (the environment side of `train grpo`) -------------
class LocalEnvs:
    """Episodes in this process: what a trainer uses without Ray."""

    def open(self, instance: Instance, budgets: Budgets | None) -> Any:
        return episode_for(instance, budgets)

    def step_all(self, turns: list[tuple[Any, str]]) -> None:
        for episode, text in turns:
            episode.step(text)

    def record(self, episode: Any, *, agent: str, sample: int, timings: Timings) -> EpisodeRecord:
        return EpisodeRecord.from_episode(episode, agent=agent, sample=sample, timings=timings)

    def close(self) -> None:
        return None


class EnvWorker:
    """A Ray actor holding episodes; their tools and simulators run in its process."""

    def __init__(self) -> None:
        all_tasks()
        self.episodes: dict[int, Episode] = {}

    def open(
        self, key: int, instance: Instance, budgets: Budgets | None
    ) -> tuple[list[Message], list[dict[str, Any]]]:
        episode = episode_for(instance, budgets)
        self.episodes[key] = episode
        return episode.messages, episode.tools

    async def step(self, key: int, turn: str) -> tuple[list[Message], str | None, int]:
        """The messages the step added (the assistant turn first), end reason and turns."""
        episode = self.episodes[key]
        n = len(episode.messages)
        await episode.astep(turn)
        return episode.messages[n:], episode.end_reason, episode.turns

    async def finish(self, key: int, reason: str) -> None:
        # a tool call that outran its timeout is waited for off the actor's event loop
        await self.episodes[key].afinish(reason)

    def record(self, key: int, agent: str, sample: int, timings: Timings) -> EpisodeRecord:
        episode = self.episodes.pop(key)
        return EpisodeRecord.from_episode(episode, agent=agent, sample=sample, timings=timings)


class RemoteEpisode:
    """The client side of an episode held by an :class:`EnvWorker`.

    Mirrors what a trainer reads of an :class:`~agentharness.core.episode.Episode`
    (``instance``, ``messages``, ``tools``, ``done``, ``end_reason``, ``turns``) and its
    ``step`` / ``finish``; the conversation is kept in step with the worker's copy.
    """

    def __init__(
        self,
        ray: Any,
        worker: Any,
        key: int,
        instance: Instance,
        messages: list[Message],
        tools: list[dict[str, Any]],
    ) -> None:
        self._ray, self.worker, self.key = ray, worker, key
        self.instance = instance
        self.messages = list(messages)
        self.tools = tools
        self.end_reason: str | None = None
        self.turns = 0

    @property
    def done(self) -> bool:
        return self.end_reason is not None

    def submit_step(self, turn: str) -> Any:
        return self.worker.step.remote(self.key, turn)

    def apply(self, result: tuple[list[Message], str | None, int]) -> None:
        added, self.end_reason, self.turns = result
        self.messages.extend(added)

    def step(self, turn: str) -> None:
        self.apply(self._ray.get(self.submit_step(turn)))

    def finish(self, reason: str) -> None:
        if self.end_reason is None:
            self.end_reason = reason
        self._ray.get(self.worker.finish.remote(self.key, reason))


class RayEnvs:
    """Episodes spread over Ray :class:`EnvWorker` actors; a group's steps run in parallel.

    Each new episode goes to the worker holding the fewest, and a turn of every episode
    of a group is sent at once, so simulator-heavy tools (PyBaMM, ASE) of one group run
    on several cores or machines while the trainer waits once.
    """

    def __init__(self, config: RayConfig | None = None) -> None:
        self.config = config or RayConfig()
        self._ray = _ray()
        self._started = init_ray(self.config)
        actor = self._ray.remote(EnvWorker).options(
            num_cpus=self.config.cpus_per_worker, scheduling_strategy="SPREAD"
        )
        self.workers = [actor.remote() for _ in range(self.config.workers)]
        self._held = [0] * len(self.workers)
        self._where: dict[int, int] = {}
        self._next_key = 0

    def open(self, instance: Instance, budgets: Budgets | None) -> RemoteEpisode:
        w = min(range(len(self.workers)), key=self._held.__getitem__)
        key, self._next_key = self._next_key, self._next_key + 1
        messages, tools = self._get(self.workers[w].open.remote(key, instance, budgets))
        self._held[w] += 1
        self._where[key] = w
        return RemoteEpisode(self._ray, self.workers[w], key, instance, messages, tools)

    def step_all(self, turns: list[tuple[Any, str]]) -> None:
        refs = [episode.submit_step(text) for episode, text in turns]
        for (episode, _), result in zip(turns, self._get(refs), strict=True):
            episode.apply(result)

    def record(self, episode: Any, *, agent: str, sample: int, timings: Timings) -> EpisodeRecord:
        record: EpisodeRecord = self._get(
            episode.worker.record.remote(episode.key, agent, sample, timings)
        )
        self._held[self._where.pop(episode.key)] -= 1
        return record

    def _get(self, refs: Any) -> Any:
        try:
            return self._ray.get(refs)
        except self._ray.exceptions.RayError as e:
            raise RayBackendError(f"an environment worker failed: {_first_line(e)}") from e

    def close(self) -> None:
        for w in self.workers:
            self._ray.kill(w, no_restart=True)
        if self._started:
            self._ray.shutdown()
