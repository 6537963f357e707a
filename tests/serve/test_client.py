"""RemoteEnv / RemoteEpisode against a real server: the same episodes, rewards and errors as
the in-process Env / Episode, so a trainer can swap one for the other."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from serve_helpers import FakeClock, ServerFactory

from agentharness import Budgets, get_task, make
from agentharness.core.episode import Episode, Usage
from agentharness.core.registry import UnknownTaskError
from agentharness.core.task import TaskConfigError
from agentharness.serve import (
    BackgroundServer,
    EpisodeNotFoundError,
    EpisodeStateError,
    RemoteEnv,
    RemoteEpisode,
    ServerBusyError,
)


def play_expert(episode: Episode | RemoteEpisode, task: str, seed: int, difficulty: str) -> None:
    """Drive either kind of episode with the task's expert (the loop a trainer writes)."""
    policy = get_task(task).expert(get_task(task).instance(seed, difficulty))
    while not episode.done:
        episode.step(policy.next_turn(list(episode.messages)))


@pytest.mark.parametrize(("task", "seed"), [("escape_room", 3), ("tsp_vision", 1)])
def test_an_expert_episode_over_http_equals_the_local_one(
    server: BackgroundServer, task: str, seed: int
) -> None:
    local = make(task, difficulty="easy").reset(seed=seed)
    play_expert(local, task, seed, "easy")
    with (
        RemoteEnv(server.base_url, task, difficulty="easy") as env,
        env.reset(seed=seed) as remote,
    ):
        assert remote.instance_id == local.instance.instance_id
        play_expert(remote, task, seed, "easy")
        assert remote.end_reason == local.end_reason == "answered"
        assert remote.turns == local.turns and remote.step_rewards == local.step_rewards
        assert remote.messages == local.messages  # the local mirror matches the server's copy
        assert remote.state().messages == local.messages
        assert remote.reward() == local.reward()
        assert remote.reward().total >= get_task(task).solved_threshold
    assert env.health().sessions == 0  # the context manager closed the episode


def test_observations_match_the_local_step(server: BackgroundServer) -> None:
    env = RemoteEnv(server.base_url, "guess", difficulty="easy")
    remote, local = env.reset(seed=2), make("guess", difficulty="easy").reset(seed=2)
    for turn in ["no tools", '<tool_call>{"name": "probe", "arguments": {"guess": 3}}</tool_call>']:
        assert remote.step(turn) == local.step(turn)
    assert remote.tools == local.tools and remote.messages == local.messages
    env.close()


def test_instances_knobs_and_budgets_reach_the_server(server: BackgroundServer) -> None:
    instance = get_task("guess").instance(9, "hard", high=50)
    env = RemoteEnv(server.base_url, "guess", config={"high": 50}, budgets=Budgets(max_turns=1))
    replay = env.reset(instance=instance)
    assert replay.instance_id == instance.instance_id and replay.difficulty == "hard"
    generated = RemoteEnv(server.base_url, "guess", "hard", high=50).reset(seed=9)
    assert generated.instance_id == instance.instance_id
    obs = replay.step("thinking")
    assert obs.done and obs.end_reason == "max_turns"
    drawn = env.reset()  # no seed: the server draws one and says which
    assert drawn.instance_id == get_task("guess").instance(drawn.seed, high=50).instance_id


def test_usage_counts_against_the_token_budget(server: BackgroundServer) -> None:
    env = RemoteEnv(server.base_url, "guess", budgets=Budgets(max_tokens=5))
    obs = env.reset(seed=1).step("hm", usage=Usage(completion_tokens=6))
    assert obs.done and obs.end_reason == "max_tokens"


def test_errors_are_the_exceptions_the_local_api_raises(server: BackgroundServer) -> None:
    with pytest.raises(UnknownTaskError, match="GET /tasks"):
        RemoteEnv(server.base_url, "nope").reset(seed=1)
    with pytest.raises(TaskConfigError, match="has no knob"):
        RemoteEnv(server.base_url, "guess", hgh=3).reset(seed=1)
    env = RemoteEnv(server.base_url, "guess", difficulty="easy")
    ep = env.reset(seed=3)
    with pytest.raises(EpisodeStateError, match="not done") as not_done:
        ep.reward()
    assert not_done.value.status_code == 409 and not_done.value.error == "not_done"
    play_expert(ep, "guess", 3, "easy")
    with pytest.raises(RuntimeError, match="has ended"):  # like Episode.step after the end
        ep.step("more")
    ep.close()
    ep.close()  # closing twice is fine
    with pytest.raises(EpisodeNotFoundError, match="was closed"):
        ep.state()


def test_a_full_server_raises_server_busy_with_retry_after(
    serve: ServerFactory, clock: FakeClock
) -> None:
    server = serve(max_sessions=1, ttl_s=30.0, clock=clock, reap_interval_s=3600.0)
    env = RemoteEnv(server.base_url, "guess")
    first = env.reset(seed=1)
    with pytest.raises(ServerBusyError) as busy:
        env.reset(seed=2)
    assert busy.value.retry_after_s == 30.0 and "--max-sessions" in str(busy.value)
    clock.advance(31)  # the idle episode expires, so its slot is free again
    env.reset(seed=2)
    with pytest.raises(EpisodeNotFoundError, match="expired"):
        first.step("hi")
    first.close()  # already gone: nothing to do


def test_async_twins_run_episodes_concurrently(server: BackgroundServer) -> None:
    seeds = [1, 2, 3, 4]

    async def play(env: RemoteEnv, seed: int) -> float:
        policy = get_task("escape_room").expert(get_task("escape_room").instance(seed, "easy"))
        async with await env.areset(seed=seed) as ep:
            while not ep.done:
                await ep.astep(policy.next_turn(list(ep.messages)))
            assert (await ep.astate()).done
            return (await ep.areward()).total

    async def main() -> list[float]:
        async with RemoteEnv(server.base_url, "escape_room", difficulty="easy") as env:
            return list(await asyncio.gather(*(play(env, s) for s in seeds)))

    totals = asyncio.run(main())
    local = []
    for seed in seeds:
        ep = make("escape_room", difficulty="easy").reset(seed=seed)
        play_expert(ep, "escape_room", seed, "easy")
        local.append(ep.reward().total)
    assert totals == local
    assert RemoteEnv(server.base_url, "escape_room").health().sessions == 0


def test_a_shared_http_client_is_used_and_left_open(server: BackgroundServer) -> None:
    with httpx.Client() as shared:
        env = RemoteEnv(server.base_url, "guess", http=shared)
        env.reset(seed=1).close()
        env.close()
        assert not shared.is_closed
        assert [t.id for t in env.tasks() if t.id == "guess-v1"] == ["guess-v1"]
