"""``bootcamp serve --workers``: several processes on one port, each episode pinned to one."""

from __future__ import annotations

import asyncio
import os
import signal
from collections.abc import Iterator

import httpx
import pytest

from agentharness import get_task, make
from agentharness.serve import EpisodeNotFoundError, RemoteEnv, RemoteEnvError, ServerBusyError
from agentharness.serve.workers import WorkerPool, share_of


@pytest.fixture(scope="module")
def pool() -> Iterator[WorkerPool]:
    with WorkerPool("127.0.0.1", 0, 2, max_sessions=6, ttl_s=120.0) as p:
        yield p


def test_capacity_shares_add_up() -> None:
    assert [share_of(7, 3, i) for i in range(3)] == [3, 2, 2]
    assert sum(share_of(256, 2, i) for i in range(2)) == 256


def test_episodes_on_both_processes_play_as_in_process(pool: WorkerPool) -> None:
    seeds = [1, 2, 3, 4]

    async def play(seed: int) -> tuple[str, float, list[object]]:
        # One client per episode, each with its own connection: they land on both processes.
        policy = get_task("escape_room").expert(get_task("escape_room").instance(seed, "easy"))
        async with RemoteEnv(pool.base_url, "escape_room", difficulty="easy") as env:
            async with await env.areset(seed=seed) as ep:
                while not ep.done:
                    await ep.astep(policy.next_turn(list(ep.messages)))
                return ep.id, (await ep.areward()).total, list(ep.messages)

    async def main() -> list[tuple[str, float, list[object]]]:
        return list(await asyncio.gather(*(play(s) for s in seeds)))

    results = asyncio.run(main())
    for seed, (_, total, messages) in zip(seeds, results, strict=True):
        local = make("escape_room", difficulty="easy").reset(seed=seed)
        policy = get_task("escape_room").expert(local.instance)
        while not local.done:
            local.step(policy.next_turn(list(local.messages)))
        assert messages == local.messages and total == local.reward().total
    assert {eid.split(".")[0] for eid, _, _ in results} <= {"w0", "w1"}


def test_requests_on_other_connections_reach_the_episode_s_process(pool: WorkerPool) -> None:
    env = RemoteEnv(pool.base_url, "escape_room", difficulty="easy")
    episodes = [env.reset(seed=s) for s in range(4)]  # one connection: fills one process first
    owners = {ep.id.split(".")[0] for ep in episodes}
    assert owners == {"w0", "w1"}, "the full process should have passed opens to the other"
    for ep in episodes:
        # A fresh connection for every request: the kernel picks either process.
        for _ in range(3):
            r = httpx.get(f"{pool.base_url}/episodes/{ep.id}")
            assert r.status_code == 200 and r.json()["episode_id"] == ep.id
        r = httpx.post(f"{pool.base_url}/episodes/{ep.id}/step", json={"turn": "no tool"})
        assert r.status_code == 200 and r.json()["turns"] == 1
    health = env.health()
    assert health.sessions == 4 and health.capacity == 6
    for ep in episodes:
        ep.close()
    with pytest.raises(EpisodeNotFoundError, match="was closed"):
        episodes[0].state()
    assert env.health().sessions == 0
    env.close()


def test_the_pool_is_full_only_when_every_process_is(pool: WorkerPool) -> None:
    env = RemoteEnv(pool.base_url, "escape_room", difficulty="easy")
    held = [env.reset(seed=s) for s in range(6)]
    with pytest.raises(ServerBusyError):
        env.reset(seed=99)
    for ep in held:
        ep.close()
    env.reset(seed=99).close()
    env.close()


def test_episodes_of_a_killed_process_answer_clearly() -> None:
    with WorkerPool("127.0.0.1", 0, 2, max_sessions=4, ttl_s=120.0) as pool:
        env = RemoteEnv(pool.base_url, "escape_room", difficulty="easy")
        episodes = [env.reset(seed=s) for s in range(4)]
        victim = next(ep for ep in episodes if ep.id.startswith("w1."))
        os.kill(pool.processes[1].pid, signal.SIGKILL)
        pool.processes[1].join(10)
        survivor = next(ep for ep in episodes if ep.id.startswith("w0."))
        for _ in range(3):  # only the survivor accepts now; it cannot reach the owner
            r = httpx.get(f"{pool.base_url}/episodes/{victim.id}")
            assert r.status_code == 503 and "worker 1" in r.json()["detail"]
        with pytest.raises(RemoteEnvError, match="worker 1"):
            victim.state()
        assert survivor.state().turns == 0  # the other process's episodes are untouched
        assert env.health().ok is False  # one process is down
        env.close()
