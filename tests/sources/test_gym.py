"""gym: Gymnasium envs as tasks: ids, tool schemas, rewards that pay for solving, bad input."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

pytest.importorskip("gymnasium")

import agentharness
from agentharness.agents.scripted import ExpertAgent, RandomAgent
from agentharness.cli.main import app
from agentharness.conformance import check_task
from agentharness.core.messages import ToolCall, assistant
from agentharness.core.registry import UnknownTaskError, get_task
from agentharness.rollout.runner import run_one
from agentharness.sources.gym import action_schema
from agentharness.store.run import RunDir


def _step(action: object, n: int = 1) -> dict:
    return assistant(tool_calls=[ToolCall.make(f"c{n}", "step", {"action": action})]).model_dump()


def test_frozen_lake_is_a_task_with_a_typed_action_tool() -> None:
    spec = get_task("gym:FrozenLake-v1")
    assert spec.id == "gym:FrozenLake-v1" and spec.modality == "text"
    assert get_task(" gym:FrozenLake-v1 ") is spec  # resolved once, then registered
    (schema,) = spec.world.tool_schemas()
    action = schema["function"]["parameters"]["properties"]["action"]
    assert (action["type"], action["minimum"], action["maximum"]) == ("integer", 0, 3)
    assert "0 = left" in action["description"]
    # The seed makes the map: different seeds, different problems; same seed, same one.
    a, b = spec.instance(1, "easy"), spec.instance(2, "easy")
    assert a == spec.instance(1, "easy") and a.public["text"] != b.public["text"]


def test_action_outside_the_space_is_a_message_not_a_step() -> None:
    ep = agentharness.make("gym:FrozenLake-v1", difficulty="easy").reset(seed=0)
    obs = ep.step(_step(7))
    assert "greater than the maximum of 3" in obs.messages[0].content
    assert not obs.done and ep.world.steps == 0  # type: ignore[attr-defined]
    assert "not of type 'integer'" in ep.world.execute("step", {"action": "left"}).text


def test_box_actions_are_bounded_arrays() -> None:
    import gymnasium

    box = gymnasium.spaces.Box(low=np.array([-1.0, 0.0]), high=np.array([1.0, 5.0]))
    schema = action_schema(box)
    assert schema["minItems"] == schema["maxItems"] == 2
    assert [i["maximum"] for i in schema["prefixItems"]] == [1.0, 5.0]
    md = action_schema(gymnasium.spaces.MultiDiscrete([3, 4]))
    assert [i["maximum"] for i in md["prefixItems"]] == [2, 3]
    ep = agentharness.make("gym:MountainCarContinuous-v0").reset(seed=0)
    result = ep.world.execute("step", {"action": [5.0]})
    assert result.is_error and "greater than the maximum of 1.0" in result.text
    assert not ep.world.execute("step", {"action": [0.5]}).is_error


def test_termination_ends_the_episode_and_the_reward_pays_only_for_solving() -> None:
    spec = get_task("gym:FrozenLake-v1")
    inst = spec.instance(0, "easy")
    expert, _ = asyncio.run(run_one(inst, ExpertAgent().policy(inst)))
    assert expert.end_reason == "completed" and expert.reward().success
    assert expert.reward().total == pytest.approx(1.0)
    # Walking into a hole also terminates, and earns nothing.
    grid = inst.public["text"].splitlines()[1:]
    ep = agentharness.make("gym:FrozenLake-v1", difficulty="easy").reset(instance=inst)
    col = grid[0].find("H")
    row = 0 if col >= 0 else next(r for r, line in enumerate(grid) if line[0] == "H")
    moves = [2] * col if col >= 0 else [1] * row  # right along row 0, or down column 0
    for i, move in enumerate(moves):
        ep.step(_step(move, i))
    assert ep.end_reason == "completed" and ep.reward().total == 0.0
    assert ep.world.env is not None


def test_time_limit_is_truncated() -> None:
    ep = agentharness.make("gym:FrozenLake-v1", difficulty="easy", max_steps=3).reset(seed=0)
    for i in range(3):
        ep.step(_step(0, i))  # left into the wall: never terminates
    assert ep.end_reason == "truncated" and ep.reward().total == 0.0


def test_lazy_and_random_policies_earn_nothing() -> None:
    spec = get_task("gym:Taxi-v4")
    for seed in range(5):
        inst = spec.instance(seed, "medium")
        ep, _ = asyncio.run(run_one(inst, RandomAgent().policy(inst)))
        assert ep.reward().total == 0.0
        ep = agentharness.make("gym:Taxi-v4").reset(instance=inst)
        for i in range(100):  # passive: south forever
            if ep.done:
                break
            ep.step(_step(0, i))
        assert ep.reward().total == 0.0


@pytest.mark.parametrize("task", ["gym:FrozenLake-v1", "gym:Taxi-v4", "gym:CliffWalking-v1"])
def test_toy_text_envs_pass_the_check(task: str) -> None:
    report = check_task(get_task(task), seeds=2)
    assert report.passed, [(r.name, r.detail) for r in report.results if not r.passed]


def test_without_a_transition_model_the_check_says_what_it_skipped() -> None:
    spec = get_task("gym:CartPole-v1")
    assert spec.expert is None
    report = check_task(spec, seeds=2)
    skipped = {r.name for r in report.results if r.skipped}
    assert skipped == {"expert_solves", "baselines_lower", "imitable"}
    assert report.passed
    with pytest.raises(ValueError, match="no expert"):
        ExpertAgent().policy(spec.instance(0))


def test_vision_returns_frames() -> None:
    spec = get_task("gym:FrozenLake-v1@vision")
    assert spec.modality == "vision" and spec.blind_policy is not None
    ep = agentharness.make("gym:FrozenLake-v1@vision", difficulty="easy").reset(seed=0)
    assert ep.messages[-1].images and "H" not in ep.messages[-1].text.split("Current state:")[1]
    obs = ep.step(_step(2))
    assert any(m.images for m in obs.messages)


@pytest.mark.parametrize(
    ("address", "message"),
    [
        ("gym:NoSuchEnv-v0", "unknown Gymnasium env 'NoSuchEnv-v0'"),
        ("gym:Pendulum-v1", "documents no reward_threshold"),
        ("gym:", "names no gym: task"),
        ("gymx:FrozenLake-v1", "unknown task source 'gymx:'"),
    ],
)
def test_bad_ids_say_what_is_wrong(address: str, message: str) -> None:
    with pytest.raises(UnknownTaskError, match=message):
        get_task(address)


def test_eval_runs_and_logs_like_a_builtin_task(tmp_path: Path) -> None:
    out = tmp_path / "run"
    tasks = "gym:FrozenLake-v1,rg:leg_counting,rg:basic_arithmetic"
    result = CliRunner().invoke(
        app,
        ["eval", "--agent", "random", "--tasks", tasks, "-n", "2", "--quiet", "--out", str(out)],
    )
    assert result.exit_code == 0, result.output
    records = list(RunDir(out).episodes())
    assert sorted({r.task for r in records}) == sorted(tasks.split(","))
    assert len(records) == 6
    again = CliRunner().invoke(
        app,
        ["eval", "--agent", "random", "--tasks", tasks, "-n", "2", "--quiet", "--out", str(out)],
    )
    assert "skipped 6" in again.output  # resumes like any run
    listed = CliRunner().invoke(app, ["tasks"])
    assert "gym:" in listed.output and "rg:" in listed.output and "mcp:" in listed.output
    bad = CliRunner().invoke(app, ["eval", "--agent", "expert", "--tasks", "gym:CartPole-v1"])
    assert bad.exit_code == 2 and "has no expert policy" in bad.output
