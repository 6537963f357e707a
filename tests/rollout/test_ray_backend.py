"""The Ray backend on a private local Ray of two workers (CPU only, no timing asserts)."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from agentharness import get_task
from agentharness.agents import make_agent
from agentharness.rollout.runner import plan, run
from agentharness.store import EpisodeRecord, RunDir
from agentharness.testing.openai_server import ScriptedOpenAIServer, cycle_tools_policy

ray = pytest.importorskip("ray")

from agentharness.rollout.ray_backend import (  # noqa: E402
    AgentSpec,
    RayBackendError,
    RayConfig,
    run_ray,
)

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module", autouse=True)
def local_ray() -> Any:
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def comparable(record: EpisodeRecord) -> dict[str, Any]:
    """The record minus what measures time."""
    data = record.model_dump(mode="json")
    data.pop("timings")
    for call in data["tool_calls"]:
        call["metrics"].pop("latency_s", None)
    return data


def test_same_episodes_as_the_single_process_runner_and_resume(tmp_path: Path) -> None:
    items = plan([get_task("escape_room"), get_task("tsp_vision")], n=4, k=2, difficulty="easy")
    local = RunDir(tmp_path / "local")
    local.create({})
    asyncio.run(run(items, make_agent("noisy:0.3"), local, concurrency=4))

    spread = RunDir(tmp_path / "ray")
    spread.create({})
    first = asyncio.run(
        run_ray(items[:5], AgentSpec("noisy:0.3"), spread, ray_config=RayConfig(workers=2))
    )
    assert first.ran == 5 and first.workers == 2
    seen: list[str] = []
    second = asyncio.run(
        run_ray(
            items,
            AgentSpec("noisy:0.3"),
            spread,
            ray_config=RayConfig(workers=2),
            concurrency=4,
            on_done=lambda r: seen.append(r.episode_id),
        )
    )
    assert second.skipped == 5 and second.ran == len(items) - 5 == len(seen)

    a = {r.episode_id: comparable(r) for r in local.episodes()}
    b = [comparable(r) for r in spread.episodes()]
    assert len(b) == len(items) == len({r["episode_id"] for r in b}), "no episode twice"
    assert {r["episode_id"]: r for r in b} == a
    # Images went to the driver's run directory, referred to by file.
    assert any((tmp_path / "ray" / "images").iterdir())


def test_a_worker_killed_mid_run_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    total = 12
    items = plan([get_task("tsp_vision")], n=total, difficulty="easy")
    run_dir = RunDir(tmp_path)
    run_dir.create({})
    pids: list[int] = []
    done: list[str] = []
    killed: list[int] = []

    def kill_one_after_two(record: EpisodeRecord) -> None:
        done.append(record.episode_id)
        if len(done) == 2:  # both workers still hold unfinished episodes
            killed.append(pids[0])
            os.kill(pids[0], signal.SIGKILL)

    with ScriptedOpenAIServer(policy=cycle_tools_policy(turns=2), latency_s=0.2) as server:
        spec = AgentSpec(
            "openai", {"model": "scripted", "base_url": server.base_url, "concurrency": 2}
        )
        result = asyncio.run(
            run_ray(
                items,
                spec,
                run_dir,
                ray_config=RayConfig(workers=2),
                concurrency=4,
                on_done=kill_one_after_two,
                on_workers=lambda infos: pids.extend(i["pid"] for i in infos),
            )
        )
    assert killed, "the worker was never killed"
    assert result.worker_failures >= 1 and result.requeued >= 1, result
    records = list(run_dir.episodes())
    ids = [r.episode_id for r in records]
    assert len(ids) == total == len(set(ids)) == result.ran
    assert {r.seed for r in records} == set(range(total))
    assert all(r.end_reason != "agent_error" for r in records)


def test_workers_that_cannot_build_the_agent_fail_clearly(tmp_path: Path) -> None:
    run_dir = RunDir(tmp_path)
    run_dir.create({})
    items = plan([get_task("escape_room")], n=2, difficulty="easy")
    with pytest.raises(RayBackendError, match="did not start"):
        asyncio.run(run_ray(items, AgentSpec("bogus"), run_dir, ray_config=RayConfig(workers=1)))
    assert not run_dir.episodes_path.exists() or run_dir.episodes_path.read_text() == ""


def test_the_loop_rollout_stages_on_ray_give_the_local_loop_results(tmp_path: Path) -> None:
    from agentharness.loop.pipeline import LoopConfig, run_loop
    from agentharness.store import load_runs

    config = LoopConfig(
        student="random",
        teacher="noisy:0.2",
        tasks="tsp_vision",
        difficulty="easy",
        heldout_n=3,
        synth_n=3,
        concurrency=2,
    )
    local = run_loop(config, tmp_path / "local", log=lambda _: None)
    spread = run_loop(
        config.model_copy(update={"backend": "ray", "ray_workers": 2}),
        tmp_path / "ray",
        log=lambda _: None,
    )
    assert _same_but_paths(spread.model_dump(), local.model_dump())
    for stage in ("heldout_before", "teacher", "heldout_after"):
        runs = [
            {
                r.episode_id: comparable(r)
                for r in load_runs([d / "round_1" / stage], allow_empty=True).records
            }
            for d in (tmp_path / "local", tmp_path / "ray")
        ]
        assert runs[0] == runs[1] and runs[0], stage


def _same_but_paths(a: Any, b: Any) -> bool:
    """Summaries name their own directories; everything else must agree."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_but_paths(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same_but_paths(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, str) and isinstance(b, str) and ("/local" in a or "/ray" in a):
        return a.replace("/local", "/ray") == b.replace("/local", "/ray")
    return bool(a == b)


def test_remote_environments_step_a_group_like_local_ones() -> None:
    """The environment side of `train grpo --env-backend ray`: the same episodes, in parallel."""
    from agentharness.rollout.ray_backend import LocalEnvs, RayEnvs
    from agentharness.store.schema import Timings

    spec = get_task("escape_room")
    instance = spec.instance(5, "easy")
    budgets = spec.interaction.budgets
    local, remote = LocalEnvs(), RayEnvs(RayConfig(workers=2))
    try:
        groups = [[envs.open(instance, budgets) for _ in range(3)] for envs in (local, remote)]
        assert {e.worker for e in groups[1]} == set(remote.workers)  # spread over both
        experts = [[spec.expert(instance) for _ in range(3)] for _ in range(2)]
        while not all(e.done for e in groups[0]):
            for envs, episodes, policies in zip((local, remote), groups, experts, strict=True):
                turns = []
                for i, (episode, policy) in enumerate(zip(episodes, policies, strict=True)):
                    if not episode.done:
                        # The text a model would write: sample i says nothing on its first turn.
                        turn = policy.next_turn(list(episode.messages))
                        text = "thinking" if i == 1 and episode.turns == 0 else _as_text(turn)
                        turns.append((episode, text))
                envs.step_all(turns)
            for a, b in zip(*groups, strict=True):
                assert (a.done, a.end_reason, a.turns) == (b.done, b.end_reason, b.turns)
                assert a.messages == b.messages
        groups[1][2].finish("max_tokens")  # already done: the first end reason stays
        timings = Timings(started_at=0.0)
        records = [
            [envs.record(e, agent="grpo", sample=0, timings=timings) for e in episodes]
            for envs, episodes in zip((local, remote), groups, strict=True)
        ]
        assert [comparable(r) for r in records[0]] == [comparable(r) for r in records[1]]
        assert any(r.reward.total > 0 for r in records[1])
    finally:
        remote.close()


def _as_text(turn: Any) -> str:
    from agentharness.agents.textformat import as_plain_text

    return as_plain_text(turn).text
