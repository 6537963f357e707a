"""Edge cases of the robot_reach task: kinematics, collisions, tools, reward, expert."""

from __future__ import annotations

import asyncio
import json
import math
from typing import Any

import numpy as np
import pytest

from agentharness.agents.scripted import NoisyAgent
from agentharness.core.instance import Instance
from agentharness.core.messages import ToolCall, assistant
from agentharness.core.registry import episode_for, get_task
from agentharness.core.task import TaskConfigError
from agentharness.rollout.runner import run_one
from agentharness.tasks.robot_reach.expert import RobotReachExpert
from agentharness.tasks.robot_reach.simulator import (
    Arm,
    point_segment_distances,
    scene_from_public,
    segment_segment_distance,
    solve_ik,
)

SPEC = get_task("robot_reach")


def _call(name: str, args: dict[str, Any] | str, n: int = 1) -> Any:
    return assistant(tool_calls=[ToolCall.make(f"t{n}", name, args)])


def _handmade(**overrides: Any) -> Instance:
    """Planar 2-link arm (1 m + 1 m), target (1, 1), one circle at (1, 0.5).

    q = [0, 90] reaches the target through the circle; q = [90, -90] reaches it freely.
    """
    public = {
        "dims": 2,
        "spatial": False,
        "n_joints": 2,
        "link_lengths": [1.0, 1.0],
        "joint_axes": ["z", "z"],
        "joint_limits_deg": [[-120.0, 120.0], [-150.0, 150.0]],
        "link_radius": 0.04,
        "obstacles": [{"center": [1.0, 0.5], "radius": 0.2}],
        "target": [1.0, 1.0],
        "tolerance": 0.05,
        "self_collision": False,
    }
    public.update(overrides)
    return Instance(
        task=SPEC.id,
        seed=0,
        difficulty="easy",
        config=SPEC.make_config("easy").model_dump(mode="json"),
        public=public,
        hidden={"solution": [90.0, -90.0]},
    )


# -- generator ---------------------------------------------------------------------


def test_determinism_and_variety() -> None:
    for difficulty in SPEC.difficulties:
        a, b = SPEC.instance(11, difficulty), SPEC.instance(11, difficulty)
        assert a == b
        assert [m.model_dump() for m in SPEC.generator.prompt(a)] == [
            m.model_dump() for m in SPEC.generator.prompt(b)
        ]
        assert SPEC.instance(12, difficulty).public != a.public


@pytest.mark.parametrize(
    ("difficulty", "knobs"),
    [
        ("easy", {}),
        ("medium", {}),
        ("hard", {}),
        ("hard", {"n_links": 7, "n_obstacles": 12}),
        ("medium", {"spatial": True, "n_links": 3, "narrow_passages": True, "n_obstacles": 6}),
        ("easy", {"n_obstacles": 0}),
    ],
)
def test_hidden_solution_verifies(difficulty: str, knobs: dict[str, Any]) -> None:
    for seed in range(6):
        inst = SPEC.instance(seed, difficulty, **knobs)
        scene = scene_from_public(inst.public)
        q = scene.arm.validate(inst.hidden["solution"])  # within limits
        ev = scene.evaluate(q)
        assert ev.distance <= scene.tolerance
        assert ev.collision_free
        assert len(scene.obstacles) == inst.config["n_obstacles"]
        assert scene.arm.n_joints == inst.config["n_links"]


def test_hard_is_spatial_and_obstacles_are_close() -> None:
    inst = SPEC.instance(0, "hard")
    assert inst.public["dims"] == 3 and len(inst.public["target"]) == 3
    assert inst.public["joint_axes"][:2] == ["z", "y"]
    assert inst.hidden["solution_clearance"] < 3 * inst.config["obstacle_gap"]


def test_prompt_states_goal_tools_and_rules() -> None:
    inst = SPEC.instance(3, "medium")
    text = "\n".join(m.text for m in SPEC.generator.prompt(inst))
    for needle in ("forward_kinematics", "check_collision", "submit_angles", "degrees", "limits"):
        assert needle in text
    assert json.dumps(inst.public["target"]) in text
    assert str(inst.hidden["solution"][0]) not in text


def test_bad_knobs_are_rejected() -> None:
    with pytest.raises(TaskConfigError):
        SPEC.make_config("easy", n_links=8)
    with pytest.raises(TaskConfigError):
        SPEC.make_config("easy", wingspan=3)


# -- simulator ---------------------------------------------------------------------


def test_planar_forward_kinematics_matches_closed_form() -> None:
    arm = Arm((0.7, 1.1, 0.5), ("z",) * 3, (-170.0,) * 3, (170.0,) * 3, 0.04, False)
    q = np.array([30.0, -45.0, 100.0])
    points, _ = arm.frames(q)
    theta = np.cumsum(np.radians(q))
    expected = np.cumsum(
        [[L * math.cos(t), L * math.sin(t)] for L, t in zip(arm.link_lengths, theta, strict=True)],
        axis=0,
    )
    assert np.allclose(points[1:, :2], expected)
    assert np.allclose(points[:, 2], 0.0)


def test_spatial_forward_kinematics_matches_homogeneous_transforms() -> None:
    arm = Arm((0.5, 1.0, 0.7, 0.3), ("z", "y", "z", "y"), (-170.0,) * 4, (170.0,) * 4, 0.04, True)
    rng = np.random.default_rng(0)
    for _ in range(10):
        q = rng.uniform(-170, 170, 4)
        points, R = arm.frames(q)
        T = arm.transform(q)
        assert np.allclose(T[:3, 3], points[-1]) and np.allclose(T[:3, :3], R)
    # A positive pitch tilts the next link from +x towards -z.
    points, _ = arm.frames(np.array([0.0, 90.0, 0.0, 0.0]))
    assert np.allclose(points[1], [0.5, 0.0, 0.0]) and np.allclose(points[2], [0.5, 0.0, -1.0])
    assert np.allclose(points[-1], [0.5, 0.0, -2.0])


def test_distances_against_brute_force() -> None:
    rng = np.random.default_rng(1)
    grid = np.linspace(0.0, 1.0, 301)
    for _ in range(40):
        p = rng.normal(size=(4, 3))
        seg_a = p[0] + grid[:, None] * (p[1] - p[0])
        seg_b = p[2] + grid[:, None] * (p[3] - p[2])
        brute = np.min(np.linalg.norm(seg_a[:, None] - seg_b[None], axis=2))
        exact = segment_segment_distance(*p)
        assert exact <= brute + 1e-12 and brute - exact < 2e-2
        d = point_segment_distances(p[None, 0], p[None, 1], p[2:3])[0, 0]
        brute_point = np.min(np.linalg.norm(seg_a - p[2], axis=1))
        assert d <= brute_point + 1e-12 and brute_point - d < 2e-2
    parallel = np.array([[0.0, 0, 0], [1, 0, 0], [0.5, 0.3, 0], [2, 0.3, 0]])
    assert segment_segment_distance(*parallel) == pytest.approx(0.3)
    skew = np.array([[-1.0, 0, 0], [1, 0, 0], [0.2, -1, 0.7], [0.2, 1, 0.7]])
    assert segment_segment_distance(*skew) == pytest.approx(0.7)
    touching = np.array([[0.0, 0, 0], [1, 1, 0], [0, 1, 0], [1, 0, 0]])
    assert segment_segment_distance(*touching) == pytest.approx(0.0, abs=1e-12)


def test_obstacle_and_self_collision() -> None:
    scene = scene_from_public(_handmade().public)
    hit = scene.evaluate(np.array([0.0, 90.0]))
    assert hit.distance == pytest.approx(0.0, abs=1e-9)
    assert not hit.collision_free
    (c,) = hit.collisions
    assert (c.link, c.obstacle) == (2, 1) and c.clearance == pytest.approx(-0.24)
    free = scene.evaluate(np.array([90.0, -90.0]))
    assert free.collision_free and free.distance == pytest.approx(0.0, abs=1e-9)
    # Folded back through a 5 cm link, link 3 runs 5 cm above link 1 (< 2 x 4 cm).
    folded = scene_from_public(
        _handmade(
            n_joints=3,
            link_lengths=[1.0, 0.05, 1.0],
            joint_axes=["z"] * 3,
            joint_limits_deg=[[-180.0, 180.0]] * 3,
            obstacles=[],
            self_collision=True,
        ).public
    )
    ev = folded.evaluate(np.array([0.0, 90.0, 90.0]))
    assert [(c.link, c.other_link) for c in ev.collisions] == [(1, 3)]


def test_ik_jacobian_matches_finite_differences() -> None:
    inst = SPEC.instance(2, "hard")
    scene = scene_from_public(inst.public)
    q = np.asarray(inst.hidden["solution"]) + 3.0
    f, J, _, _ = scene.residuals(q, margin=0.5)
    assert len(f) > 3  # some clearance rows are active
    h = 1e-6
    for k in range(len(q)):
        e = np.zeros_like(q)
        e[k] = math.degrees(h)
        fd = (scene.residuals(q + e, 0.5)[0] - scene.residuals(q - e, 0.5)[0]) / (2 * h)
        assert np.allclose(fd, J[:, k], atol=1e-6)


def test_ik_finds_the_collision_free_elbow() -> None:
    scene = scene_from_public(_handmade().public)
    q = solve_ik(scene, [np.array([0.0, 80.0]), np.array([80.0, -80.0])])
    assert q is not None
    ev = scene.evaluate(q)
    assert ev.collision_free and ev.distance <= scene.tolerance


# -- tools -------------------------------------------------------------------------


def test_forward_kinematics_feedback() -> None:
    ep = episode_for(_handmade())
    res = ep.world.execute("forward_kinematics", {"joint_angles": [0, 0]})
    assert not res.is_error
    data = json.loads(res.text.splitlines()[0])
    assert data["joint_positions"] == [[0.0, 0.0], [1.0, 0.0], [2.0, 0.0]]
    assert data["offset_to_target"] == [-1.0, 1.0]
    assert data["distance_to_target"] == pytest.approx(math.sqrt(2), abs=1e-4)
    assert data["within_tolerance"] is False and data["end_effector"]["heading_deg"] == 0.0
    assert "beyond the tolerance" in res.text
    ok = json.loads(
        ep.world.execute("forward_kinematics", {"joint_angles": [90, -90]}).text.splitlines()[0]
    )
    assert ok["within_tolerance"] is True


def test_spatial_forward_kinematics_reports_pose() -> None:
    inst = SPEC.instance(0, "hard")
    ep = episode_for(inst)
    data = json.loads(
        ep.world.execute(
            "forward_kinematics", {"joint_angles": inst.hidden["solution"]}
        ).text.splitlines()[0]
    )
    assert len(data["joint_positions"]) == inst.public["n_joints"] + 1
    assert len(data["end_effector"]["rotation_matrix"]) == 3
    assert np.linalg.norm(data["end_effector"]["approach_direction"]) == pytest.approx(1, abs=1e-3)
    assert data["within_tolerance"] is True


def test_check_collision_feedback() -> None:
    ep = episode_for(_handmade())
    res = ep.world.execute("check_collision", {"joint_angles": [0, 90]})
    data = json.loads(res.text.splitlines()[0])
    assert data["collision_free"] is False
    assert data["collisions"] == [{"link": 2, "penetration": 0.24, "obstacle": 1}]
    assert data["min_clearance"] == pytest.approx(-0.24)
    assert "link 2 into obstacle 1" in res.text
    free = json.loads(
        ep.world.execute("check_collision", {"joint_angles": [90, -90]}).text.splitlines()[0]
    )
    assert free["collision_free"] is True and free["collisions"] == []
    assert [entry["link"] for entry in free["links"]] == [1, 2]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        ({"joint_angles": [10.0]}, "exactly 2 angles"),
        ({"joint_angles": [10.0, 20.0, 30.0]}, "exactly 2 angles"),
        ({"joint_angles": [130.0, 0.0]}, "above its upper limit 120"),
        ({"joint_angles": [0.0, -151.0]}, "below its lower limit -150"),
        ({"joint_angles": [float("nan"), 0.0]}, "joint_angles"),
        ({"joint_angles": [1e9, 0.0]}, "joint_angles"),
        ({"joint_angles": [0.0] * 50}, "joint_angles"),
        ({"joint_angles": []}, "joint_angles"),
        ({"joint_angles": "ten, twenty"}, "joint_angles"),
        ({"joint_angles": ["a", "b"]}, "joint_angles"),
        ({}, "joint_angles"),
        ({"joint_angles": [0, 0], "speed": 2}, "unexpected argument"),
    ],
)
def test_bad_inputs_are_tool_errors_and_episode_continues(args: Any, needle: str) -> None:
    for name in ("forward_kinematics", "check_collision", "submit_angles"):
        ep = episode_for(_handmade())
        obs = ep.step(_call(name, args))
        assert not obs.done
        (msg,) = obs.messages
        assert msg.role == "tool" and msg.text.startswith("Error") and needle in msg.text
        assert ep.tool_calls[-1].is_error
        assert ep.world.final_answer is None
        # The agent can still answer correctly afterwards.
        ep.step(_call("submit_angles", {"joint_angles": [90, -90]}, 2))
        assert ep.done and ep.reward().success


def test_simulator_guards_non_finite_angles() -> None:
    arm = scene_from_public(_handmade().public).arm
    with pytest.raises(ValueError, match="not finite"):
        arm.validate([float("nan"), 0.0])
    with pytest.raises(ValueError, match="exactly 2"):
        arm.validate([0.0] * 8)


# -- reward ------------------------------------------------------------------------


def _reward_after(instance: Instance, turns: list[Any]) -> Any:
    ep = episode_for(instance)
    for turn in turns:
        ep.step(turn)
    return ep, ep.reward()


def test_reward_full_partial_collision_and_none() -> None:
    inst = _handmade()
    _, full = _reward_after(inst, [_call("submit_angles", {"joint_angles": [90, -90]})])
    assert full.success and full.total == pytest.approx(1.0)

    _, near = _reward_after(inst, [_call("submit_angles", {"joint_angles": [85, -85]})])
    _, far = _reward_after(inst, [_call("submit_angles", {"joint_angles": [100, -30]})])
    assert not near.success and not far.success
    assert 0.15 < far.total < near.total < 0.9
    assert near.component("collision_free") == 1.0 and near.component("efficiency") == 0.0

    _, hit = _reward_after(inst, [_call("submit_angles", {"joint_angles": [0, 90]})])
    assert hit.total == 0.0 and not hit.success and hit.component("reach") == 1.0
    assert "collides" in hit.explanation

    ep, none = _reward_after(inst, [assistant("thinking...")])
    assert none.total == 0.0 and not ep.done


def test_reward_efficiency_falls_with_many_calls() -> None:
    inst = _handmade()
    probes = [_call("forward_kinematics", {"joint_angles": [0, 0]}, i) for i in range(30)]
    _, slow = _reward_after(
        inst, [*probes, _call("submit_angles", {"joint_angles": [90, -90]}, 99)]
    )
    assert slow.success and 0.9 < slow.total < 1.0
    assert 0.0 < (slow.component("efficiency") or 0.0) < 1.0


def test_nudge_mentions_closest_configuration() -> None:
    ep = episode_for(_handmade())
    ep.step(_call("forward_kinematics", {"joint_angles": [80, -80]}))
    obs = ep.step(assistant("I think I'm done."))
    assert not obs.done
    text = obs.messages[-1].text
    assert "submit_angles" in text and "[80.0, -80.0]" in text


# -- expert ------------------------------------------------------------------------


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_expert_and_noisy_expert_solve(difficulty: str) -> None:
    from agentharness.agents.scripted import ExpertAgent

    async def run() -> list[tuple[float, int]]:
        out = []
        for agent in (ExpertAgent(), NoisyAgent(0.5)):
            for seed in range(3):
                inst = SPEC.instance(100 + seed, difficulty)
                ep, _ = await run_one(inst, agent.policy(inst))
                assert ep.end_reason == "answered"
                out.append((ep.reward().total, len(ep.tool_calls)))
        return out

    results = asyncio.run(run())
    assert all(total >= SPEC.solved_threshold for total, _ in results)
    assert all(calls == 3 for _, calls in results[:3])  # the clean expert: check, check, submit


def test_expert_falls_back_when_its_candidate_is_refuted() -> None:
    inst = _handmade()
    expert = RobotReachExpert(inst)
    ep = episode_for(inst)
    # Poison the plan: the first candidate collides, so the collision check refutes it.
    expert.candidates = [("a bad guess", [0.0, 90.0]), ("fallback", [90.0, -90.0])]
    while not ep.done:
        ep.step(expert.next_turn(ep.messages))
    assert [c.name for c in ep.tool_calls] == [
        "forward_kinematics",
        "check_collision",
        "forward_kinematics",
        "check_collision",
        "submit_angles",
    ]
    assert ep.reward().success
