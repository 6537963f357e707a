"""Edge cases of the robot_reach task: kinematics, collisions, tools, reward, expert."""

from __future__ import annotations

import dataclasses
import functools
import itertools
import json
import math
import statistics
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from agentharness.agents.scripted import ExpertAgent, NoisyAgent, RandomAgent
from agentharness.core.episode import Episode
from agentharness.core.instance import Instance
from agentharness.core.messages import Message, ToolOutcome, assistant
from agentharness.core.registry import episode_for
from agentharness.core.reward import Reward
from agentharness.core.task import TaskConfigError
from agentharness.imitability import imitability_check, unsourced_numbers
from agentharness.tasks.robot_reach import TASK as SPEC
from agentharness.tasks.robot_reach.config import RobotReachConfig
from agentharness.tasks.robot_reach.expert import STEPS_PER_START, RobotReachExpert
from agentharness.tasks.robot_reach.interaction import par_tool_calls
from agentharness.tasks.robot_reach.problem import Hidden, Public
from agentharness.tasks.robot_reach.reward import (
    PARTIAL_CAP,
    SHAPE_FRAC,
    START_FRAC,
    W_REACH,
    reach_score,
    shaped_radius,
)
from agentharness.tasks.robot_reach.simulator import (
    Arm,
    point_segment_distances,
    scene_from_public,
    segment_segment_distance,
    solve_ik,
)
from agentharness.tasks.robot_reach.tools import (
    RobotReachWorld,
    angles_text,
    dls_step_text,
    start_poses_text,
    step_verdict,
)
from agentharness.testing.tasks import call, run_agent, run_expert, step_call


def public(inst: Instance) -> Public:
    return inst.public_as(Public)


def hidden(inst: Instance) -> Hidden:
    return inst.hidden_as(Hidden)


def world(ep: Episode) -> RobotReachWorld:
    w = ep.world
    assert isinstance(w, RobotReachWorld)
    return w


def _handmade(hidden_solution: tuple[float, ...] = (90.0, -90.0), **overrides: Any) -> Instance:
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
        hidden={
            "solution": list(hidden_solution),
            "solution_distance": 0.0,
            "solution_clearance": 0.0,
        },
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
        scene = scene_from_public(public(inst))
        q = scene.arm.validate(list(hidden(inst).solution))  # within limits
        ev = scene.evaluate(q)
        assert ev.distance <= scene.tolerance
        assert ev.collision_free
        assert len(scene.obstacles) == inst.config["n_obstacles"]
        assert scene.arm.n_joints == inst.config["n_links"]


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_typed_views_are_exactly_the_stored_data(difficulty: str) -> None:
    inst = SPEC.instance(0, difficulty)
    # Same values and the same key order: the generator stores these models' dumps.
    assert json.dumps(public(inst).model_dump(mode="json")) == json.dumps(inst.public)
    assert json.dumps(hidden(inst).model_dump(mode="json")) == json.dumps(inst.hidden)


def test_hard_is_spatial_and_obstacles_are_close() -> None:
    inst = SPEC.instance(0, "hard")
    assert public(inst).dims == 3 and len(public(inst).target) == 3
    assert public(inst).joint_axes[:2] == ("z", "y")
    assert hidden(inst).solution_clearance < 3 * inst.config["obstacle_gap"]


def test_prompt_states_goal_and_rules_and_the_tools_describe_themselves() -> None:
    inst = SPEC.instance(3, "medium")
    text = "\n".join(m.text for m in SPEC.generator.prompt(inst))
    n = public(inst).n_joints
    for needle in (f"exactly {n} angles in degrees", "limits", "Scoring", "Obstacles"):
        assert needle in text
    # v5: the tools are described once, in their schemas (which every agent is given),
    # not listed again in the prompt.
    tools = {t["function"]["name"]: t["function"]["description"] for t in episode_for(inst).tools}
    assert "dls_step" not in text and set(tools) >= {
        "forward_kinematics",
        "check_collision",
        "jacobian",
        "dls_step",
        "submit_angles",
    }
    assert "within tolerance" in tools["dls_step"] and "improved" in tools["dls_step"]
    assert json.dumps(public(inst).target) in text
    assert str(hidden(inst).solution[0]) not in text


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
    scene = scene_from_public(public(_handmade()))
    hit = scene.evaluate(np.array([0.0, 90.0]))
    assert hit.distance == pytest.approx(0.0, abs=1e-9)
    assert not hit.collision_free
    (c,) = hit.collisions
    assert (c.link, c.obstacle) == (2, 1) and c.clearance == pytest.approx(-0.24)
    free = scene.evaluate(np.array([90.0, -90.0]))
    assert free.collision_free and free.distance == pytest.approx(0.0, abs=1e-9)
    # Folded back through a 5 cm link, link 3 runs 5 cm above link 1 (< 2 x 4 cm).
    folded = scene_from_public(
        public(
            _handmade(
                n_joints=3,
                link_lengths=[1.0, 0.05, 1.0],
                joint_axes=["z"] * 3,
                joint_limits_deg=[[-180.0, 180.0]] * 3,
                obstacles=[],
                self_collision=True,
            )
        )
    )
    ev = folded.evaluate(np.array([0.0, 90.0, 90.0]))
    assert [(c.link, c.other_link) for c in ev.collisions] == [(1, 3)]


def test_ik_jacobian_matches_finite_differences() -> None:
    inst = SPEC.instance(2, "hard")
    scene = scene_from_public(public(inst))
    q = np.asarray(hidden(inst).solution) + 3.0
    f, J, _, _ = scene.residuals(q, margin=0.5)
    assert len(f) > 3  # some clearance rows are active
    h = 1e-6
    for k in range(len(q)):
        e = np.zeros_like(q)
        e[k] = math.degrees(h)
        fd = (scene.residuals(q + e, 0.5)[0] - scene.residuals(q - e, 0.5)[0]) / (2 * h)
        assert np.allclose(fd, J[:, k], atol=1e-6)


def test_ik_finds_the_collision_free_elbow() -> None:
    scene = scene_from_public(public(_handmade()))
    q = solve_ik(scene, [np.array([0.0, 80.0]), np.array([80.0, -80.0])])
    assert q is not None
    ev = scene.evaluate(q)
    assert ev.collision_free and ev.distance <= scene.tolerance


# -- tools -------------------------------------------------------------------------


def test_forward_kinematics_feedback() -> None:
    w = RobotReachWorld(_handmade())
    res = w.execute("forward_kinematics", {"joint_angles": [0, 0]})
    assert not res.is_error
    data = res.data
    # The model reads the JSON (and a hint below it); scripted policies read the same as data.
    assert isinstance(data, dict) and res.text.splitlines()[0] == json.dumps(data)
    assert data["joint_positions"] == [[0.0, 0.0], [1.0, 0.0], [2.0, 0.0]]
    assert data["offset_to_target"] == [-1.0, 1.0]
    assert data["distance_to_target"] == pytest.approx(math.sqrt(2), abs=1e-4)
    assert data["within_tolerance"] is False and data["end_effector"]["heading_deg"] == 0.0
    assert "beyond the tolerance" in res.text
    ok = w.execute("forward_kinematics", {"joint_angles": [90, -90]}).data
    assert ok["within_tolerance"] is True
    assert w.best is not None and w.best[1] == [90.0, -90.0]


def test_spatial_forward_kinematics_reports_pose() -> None:
    inst = SPEC.instance(0, "hard")
    res = RobotReachWorld(inst).execute(
        "forward_kinematics", {"joint_angles": list(hidden(inst).solution)}
    )
    data = res.data
    assert res.text.splitlines()[0] == json.dumps(data)
    assert len(data["joint_positions"]) == public(inst).n_joints + 1
    assert len(data["end_effector"]["rotation_matrix"]) == 3
    assert np.linalg.norm(data["end_effector"]["approach_direction"]) == pytest.approx(1, abs=1e-3)
    assert data["within_tolerance"] is True


def test_check_collision_feedback() -> None:
    w = RobotReachWorld(_handmade())
    res = w.execute("check_collision", {"joint_angles": [0, 90]})
    data = res.data
    assert isinstance(data, dict) and res.text.splitlines()[0] == json.dumps(data)
    assert data["collision_free"] is False
    assert data["collisions"] == [{"link": 2, "penetration": 0.24, "obstacle": 1}]
    assert data["min_clearance"] == pytest.approx(-0.24)
    assert "link 2 into obstacle 1" in res.text
    free = w.execute("check_collision", {"joint_angles": [90, -90]}).data
    assert free["collision_free"] is True and free["collisions"] == []
    assert [entry["link"] for entry in free["links"]] == [1, 2]


def test_tool_messages_carry_results_as_data() -> None:
    ep = episode_for(_handmade())
    fk = step_call(ep, "forward_kinematics", {"joint_angles": [90, -90]})
    assert fk.outcome is not None and not fk.outcome.is_error
    assert fk.outcome.data == json.loads(fk.text.splitlines()[0]) == ep.tool_calls[-1].data
    done = step_call(ep, "submit_angles", {"joint_angles": [0, 90]}, "c2")
    assert done.outcome is not None and done.outcome.data == {
        "distance_to_target": 0.0,
        "tolerance": 0.05,
        "collision_free": False,
        "collisions": 1,
    }
    assert done.text == "Submitted: 0 m from the target, within tolerance, colliding."
    json.dumps([r.data for r in ep.tool_calls])  # plain JSON values, as logged


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
        obs = ep.step(call(name, args))
        assert not obs.done
        (msg,) = obs.messages
        assert msg.role == "tool" and msg.text.startswith("Error") and needle in msg.text
        assert msg.outcome is not None and msg.outcome.is_error and msg.outcome.data is None
        assert ep.tool_calls[-1].is_error
        assert ep.world.final_answer is None
        # The agent can still answer correctly afterwards.
        ep.step(call("submit_angles", {"joint_angles": [90, -90]}, "t2"))
        assert ep.done and ep.reward().success


def test_simulator_guards_non_finite_angles() -> None:
    arm = scene_from_public(public(_handmade())).arm
    with pytest.raises(ValueError, match="not finite"):
        arm.validate([float("nan"), 0.0])
    with pytest.raises(ValueError, match="exactly 2"):
        arm.validate([0.0] * 8)


# -- reward ------------------------------------------------------------------------


def _reward_after(instance: Instance, turns: list[Message]) -> tuple[Episode, Reward]:
    ep = episode_for(instance)
    for turn in turns:
        ep.step(turn)
    return ep, ep.reward()


def test_reward_full_partial_collision_and_none() -> None:
    inst = _handmade()  # no start given: the straight pose, 1.414 m away, is the start
    _, full = _reward_after(inst, [call("submit_angles", {"joint_angles": [90, -90]})])
    assert full.success and full.total == pytest.approx(1.0)

    _, near = _reward_after(inst, [call("submit_angles", {"joint_angles": [85, -85]})])
    _, nearer = _reward_after(inst, [call("submit_angles", {"joint_angles": [86, -86]})])
    _, far = _reward_after(inst, [call("submit_angles", {"joint_angles": [100, -30]})])
    assert not near.success and not nearer.success and not far.success
    assert 0.0 < near.total < nearer.total <= W_REACH * PARTIAL_CAP < SPEC.solved_threshold
    assert near.component("collision_free") == 1.0 and near.component("efficiency") == 0.0
    # Collision-free but 1.24 m away: nothing for merely avoiding the obstacle (v1: 0.15+).
    assert far.total == 0.0 and far.component("collision_free") == 1.0
    assert "no credit" in far.explanation

    _, hit = _reward_after(inst, [call("submit_angles", {"joint_angles": [0, 90]})])
    assert hit.total == 0.0 and not hit.success and hit.component("reach") == 1.0
    assert "collides" in hit.explanation

    ep, none = _reward_after(inst, [assistant("thinking...")])
    assert none.total == 0.0 and not ep.done


def test_reach_score_and_shaped_radius() -> None:
    assert reach_score(0.04, 0.05, 0.5) == 1.0
    assert reach_score(0.5, 0.05, 0.5) == 0.0 and reach_score(0.7, 0.05, 0.5) == 0.0
    assert reach_score(0.06, 0.05, 0.04) == 0.0  # a radius inside the tolerance pays nothing
    mid = reach_score(0.275, 0.05, 0.5)
    assert mid == pytest.approx(PARTIAL_CAP * 0.25)
    assert reach_score(0.1, 0.05, 0.5) > mid > reach_score(0.4, 0.05, 0.5) > 0.0
    scene = scene_from_public(public(_handmade()))  # reach 2 m
    # The nearest collision-free simple pose, [60, 0], is 0.732 m away: half of that bounds
    # the radius (v6), below a quarter of the reach (0.5 m); a nearer start bounds it more.
    assert shaped_radius(scene, 10.0) == pytest.approx(START_FRAC * (math.sqrt(3) - 1))
    assert shaped_radius(scene, 0.6) == pytest.approx(START_FRAC * 0.6)
    assert START_FRAC * (math.sqrt(3) - 1) < SHAPE_FRAC * 2.0


def test_partial_credit_is_measured_against_the_start() -> None:
    # The same answer earns less when the arm started closer: it must halve the start's
    # distance before partial credit is paid.
    answer = call("submit_angles", {"joint_angles": [80, -80]})
    far_start = _handmade(start={"joint_angles": [-90.0, 0.0]})  # 3.16 m away
    near_start = _handmade(start={"joint_angles": [60.0, -20.0]})
    _, a = _reward_after(far_start, [answer])
    _, b = _reward_after(near_start, [answer])
    d0 = scene_from_public(public(near_start)).evaluate(np.array([60.0, -20.0])).distance
    assert 0.0 < b.total < a.total and "start" in a.components[0].detail
    _, echo = _reward_after(near_start, [call("submit_angles", {"joint_angles": [60, -20]})])
    assert echo.total == 0.0 and d0 > 0.05


def test_reward_efficiency_falls_with_many_calls() -> None:
    inst = _handmade()
    probes = [call("forward_kinematics", {"joint_angles": [0, 0]}, f"t{i}") for i in range(30)]
    _, slow = _reward_after(
        inst, [*probes, call("submit_angles", {"joint_angles": [90, -90]}, "t99")]
    )
    assert slow.success and 0.9 < slow.total < 1.0
    assert 0.0 < (slow.component("efficiency") or 0.0) < 1.0


def test_nudge_mentions_closest_configuration() -> None:
    ep = episode_for(_handmade())
    ep.step(call("forward_kinematics", {"joint_angles": [80, -80]}))
    best = world(ep).best
    assert best is not None and best[1] == [80.0, -80.0]
    obs = ep.step(assistant("I think I'm done."))
    assert not obs.done
    text = obs.messages[-1].text
    assert "submit_angles" in text and "[80.0, -80.0]" in text


# -- reward integrity: lazy answers earn nothing (issue 10) -------------------------
# Over 30 seeds per difficulty each stays at or below 0.2 mean reward and 5% success;
# robot_reach-v1 paid 0.15 for any collision-free answer anywhere.

LAZY_SEEDS = 30
DIFFS = ("easy", "medium", "hard")


@functools.cache
def lazy_instances(difficulty: str) -> tuple[Instance, ...]:
    return tuple(SPEC.instance(s, difficulty) for s in range(LAZY_SEEDS))


def one_shot(inst: Instance, angles: list[float]) -> Reward:
    ep = episode_for(inst)
    ep.step(call("submit_angles", {"joint_angles": angles}))
    ep.finish(ep.end_reason or "no_answer")
    return ep.reward()


def assert_lazy(rewards: list[Reward], what: str) -> None:
    mean = statistics.fmean(r.total for r in rewards)
    success = statistics.fmean(r.success for r in rewards)
    assert mean <= 0.2 and success <= 0.05, f"{what}: mean {mean:.3f}, success {success:.2f}"


def _collision_free_pose(inst: Instance) -> list[float]:
    scene = scene_from_public(public(inst))
    rng = np.random.default_rng([inst.seed, 99])
    lo, hi = np.asarray(scene.arm.lower_deg), np.asarray(scene.arm.upper_deg)
    for _ in range(500):
        q = np.round(rng.uniform(lo, hi), 2)
        if scene.evaluate(q).collision_free:
            return [float(x) for x in q]
    raise AssertionError("no collision-free pose found")


def start_angles(inst: Instance) -> list[float]:
    start = public(inst).start
    assert start is not None
    return list(start.joint_angles)


LAZY_ANGLES: dict[str, Callable[[Instance], list[float]]] = {
    "straight pose (all zero)": lambda i: [0.0] * public(i).n_joints,
    "lower limits": lambda i: [lo for lo, _ in public(i).joint_limits_deg],
    "upper limits": lambda i: [hi for _, hi in public(i).joint_limits_deg],
    "the start configuration": start_angles,
    "link lengths echoed": lambda i: list(public(i).link_lengths),
    "schema maximum": lambda i: [360.0] * public(i).n_joints,
    "any collision-free pose": _collision_free_pose,
}


@pytest.mark.parametrize("difficulty", DIFFS)
def test_lazy_answers_earn_nothing(difficulty: str) -> None:
    insts = lazy_instances(difficulty)
    for name, angles in LAZY_ANGLES.items():
        rewards = [one_shot(i, angles(i)) for i in insts]
        assert_lazy(rewards, f"{difficulty}, {name}")
    # Collision-free answers anywhere earn next to nothing (v1: at least 0.15 each).
    free = [one_shot(i, _collision_free_pose(i)) for i in insts]
    assert statistics.fmean(r.total for r in free) <= 0.05
    assert sum(r.total > 0 for r in free) <= 0.2 * len(free)


@pytest.mark.parametrize("difficulty", DIFFS)
def test_best_constant_answer_earns_little(difficulty: str) -> None:
    constants = []
    for seed in range(1000, 1008):
        ep = run_expert(SPEC.instance(seed, difficulty))
        assert ep.world.final_answer is not None
        constants.append(list(ep.world.final_answer["joint_angles"]))
    for k, angles in enumerate(constants):
        rewards = [one_shot(i, angles) for i in lazy_instances(difficulty)]
        assert_lazy(rewards, f"{difficulty}, constant #{k} {angles}")


@pytest.mark.parametrize("difficulty", DIFFS)
def test_random_and_passive_play_earn_nothing(difficulty: str) -> None:
    insts = lazy_instances(difficulty)
    assert_lazy([run_agent(RandomAgent(), i).reward() for i in insts], f"{difficulty}, random")
    for inst in insts[:10]:  # the same probe every turn, never an answer
        ep = episode_for(inst)
        while not ep.done:
            ep.step(
                call("forward_kinematics", {"joint_angles": start_angles(inst)}, f"t{ep.turns}")
            )
        assert ep.reward().total == 0.0


@pytest.mark.parametrize("difficulty", DIFFS)
def test_start_is_collision_free_far_and_stated(difficulty: str) -> None:
    config = SPEC.make_config(difficulty)
    assert isinstance(config, RobotReachConfig)
    for inst in lazy_instances(difficulty)[:10]:
        scene = scene_from_public(public(inst))
        start = public(inst).start
        assert start is not None and start.end_effector is not None
        ev = scene.evaluate(scene.arm.validate(list(start.joint_angles)))
        assert ev.collision_free
        assert ev.distance >= config.start_distance * scene.arm.reach
        assert ev.distance == pytest.approx(start.distance_to_target, abs=1e-4)
        assert list(start.end_effector) == pytest.approx(
            list(ev.points[-1][: scene.arm.dims]), abs=1e-4
        )
        text = "\n".join(m.text for m in SPEC.generator.prompt(inst))
        assert json.dumps(start.joint_angles) in text


def test_presets_get_harder_for_a_solver_that_ignores_obstacles() -> None:
    # IK from the start towards the target, blind to the obstacles: how often it lands
    # collision-free within the tolerance falls from easy to hard.
    rates = {}
    for difficulty in DIFFS:
        ok = 0
        for inst in lazy_instances(difficulty):
            scene = scene_from_public(public(inst))
            bare = dataclasses.replace(scene, obstacles=(), self_collision=False)
            q = solve_ik(bare, [np.asarray(start_angles(inst))])
            ok += q is not None and scene.evaluate(q).collision_free
        rates[difficulty] = ok / LAZY_SEEDS
    assert rates["easy"] > rates["medium"] > rates["hard"], rates
    assert rates["hard"] <= 0.15, rates


# -- the jacobian and the calculator ----------------------------------------------------


def test_tools_offered() -> None:
    assert set(RobotReachWorld.tool_specs()) == {
        "forward_kinematics",
        "check_collision",
        "jacobian",
        "solve_linear",
        "dls_step",
        "start_poses",
        "calculate",
        "submit_angles",
    }
    # The computation tools take what their docstrings say (the schema is their only listing).
    args = {
        t["function"]["name"]: set(t["function"]["parameters"]["properties"])
        for t in episode_for(SPEC.instance(0, "easy")).tools
    }
    assert args["jacobian"] == {"joint_angles", "margin"}
    assert args["solve_linear"] == {"a", "b"}
    assert args["dls_step"] == {"joint_angles", "damping"}
    assert args["calculate"] == {"expression"}
    assert args["start_poses"] == set()


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_jacobian_matches_finite_differences(difficulty: str) -> None:
    # Per degree: the end effector's Jacobian and every near contact's clearance gradient.
    inst = SPEC.instance(2, difficulty)
    scene = scene_from_public(public(inst))
    q = np.asarray(hidden(inst).solution) + 2.0
    w = RobotReachWorld(inst)
    margin = 1.0
    data = w.execute("jacobian", {"joint_angles": q.tolist(), "margin": margin}).data
    dims = public(inst).dims
    ev = scene.evaluate(q)
    assert data["offset_to_target"] == pytest.approx(list(ev.offset[:dims]), abs=1e-4)
    assert data["distance_to_target"] == pytest.approx(ev.distance, abs=1e-5)
    assert data["collision_free"] == ev.collision_free
    assert data["min_clearance"] == pytest.approx(ev.min_clearance, abs=1e-5)
    h = 1e-4
    jac = np.asarray(data["jacobian"])
    assert jac.shape == (dims, len(q))
    for k in range(len(q)):
        e = np.zeros_like(q)
        e[k] = h
        fd = (scene.end_effector(q + e) - scene.end_effector(q - e)) / (2 * h)
        assert jac[:, k] == pytest.approx(fd[:dims], abs=2e-6)
    # Near contacts: every pair below the margin, sorted by clearance, with its gradient.
    near = data["near_contacts"]
    expected = [c for c in ev.contacts if c.clearance < margin]
    assert len(near) == len(expected) and len(near) > 0
    assert [c["clearance"] for c in near] == sorted(c["clearance"] for c in near)

    def clearance(q2: np.ndarray, c: dict[str, Any]) -> float:
        match = [
            x
            for x in scene.evaluate(q2).contacts
            if x.link == c["link"]
            and x.obstacle == c.get("obstacle")
            and x.other_link == c.get("other_link")
        ]
        return match[0].clearance

    for c in near:
        assert c["shortfall"] == pytest.approx(margin - c["clearance"], abs=1e-5)
        for k in range(len(q)):
            e = np.zeros_like(q)
            e[k] = h
            slope = (clearance(q + e, c) - clearance(q - e, c)) / (2 * h)
            assert c["gradient"][k] == pytest.approx(slope, abs=2e-6)


def test_jacobian_feedback_and_errors() -> None:
    ep = episode_for(_handmade())
    reply = step_call(ep, "jacobian", {"joint_angles": [0, 90]})
    data = reply.outcome.data if reply.outcome is not None else None
    assert isinstance(data, dict) and json.loads(reply.text) == data
    # q = [0, 90]: the end effector is on the target, link 2 runs through the circle.
    assert data["within_tolerance"] is True and data["collision_free"] is False
    d = math.pi / 180
    assert data["jacobian"][0] == pytest.approx([-d, -d], abs=1e-6)
    assert data["jacobian"][1] == pytest.approx([d, 0.0], abs=1e-6)
    (contact,) = data["near_contacts"]
    assert contact["link"] == 2 and contact["obstacle"] == 1
    assert contact["clearance"] == pytest.approx(-0.24) and "other_link" not in contact
    assert data["margin"] == 0.01 and contact["shortfall"] == pytest.approx(0.25)
    # Nothing near with a zero margin; the free elbow has no contact within 1 cm.
    free = step_call(ep, "jacobian", {"joint_angles": [90, -90], "margin": 0.0}, "c2")
    assert free.outcome is not None and free.outcome.data["near_contacts"] == []
    assert free.outcome.data["collision_free"] is True
    best = world(ep).best  # the jacobian tool tracks the closest configuration too
    assert best is not None and best[1] == [0.0, 90.0]
    cases: list[tuple[dict[str, Any], str]] = [
        ({"joint_angles": [130.0, 0.0]}, "above its upper limit"),
        ({"joint_angles": [0.0]}, "exactly 2 angles"),
        ({"joint_angles": [0.0, 0.0], "margin": -0.1}, "greater than or equal to 0"),
        ({"joint_angles": [0.0, 0.0], "margin": 5}, "less than or equal to 1"),
    ]
    for args, needle in cases:
        bad = step_call(ep, "jacobian", args, "c3")
        assert bad.outcome is not None and bad.outcome.is_error and needle in bad.text, bad.text
    assert not ep.done


def test_a_damped_step_from_the_tools_moves_towards_the_target() -> None:
    # The recipe of the jacobian tool's description, through the tools only.
    ep = episode_for(_handmade(obstacles=[]))
    q = [60.0, -30.0]
    before = step_call(ep, "jacobian", {"joint_angles": q}).outcome
    assert before is not None
    rep = before.data
    a = [*rep["jacobian"], [0.01, 0.0], [0.0, 0.01]]
    solved = step_call(ep, "solve_linear", {"a": a, "b": [*rep["offset_to_target"], 0, 0]}, "c2")
    assert solved.outcome is not None
    q2 = [x + d for x, d in zip(q, solved.outcome.data["x"], strict=True)]
    after = step_call(ep, "forward_kinematics", {"joint_angles": q2}, "c3").outcome
    assert after is not None
    assert after.data["distance_to_target"] < 0.9 * rep["distance_to_target"]


@pytest.mark.parametrize("q", [[0.0, 60.0], [60.0, -30.0]])
def test_dls_step_is_the_jacobian_recipe_in_one_call(q: list[float]) -> None:
    # [0, 60] has link 2 within 1 cm of the circle (a clearance row); [60, -30] has none.
    ep = episode_for(_handmade())

    def result(name: str, args: dict[str, Any], call_id: str) -> Message:
        reply = step_call(ep, name, args, call_id)
        assert reply.outcome is not None and not reply.outcome.is_error, reply.text
        return reply

    rep = result("jacobian", {"joint_angles": q}, "c1").outcome.data
    a = [*rep["jacobian"]]
    b = [*rep["offset_to_target"]]
    for c in rep["near_contacts"]:
        a.append([3 * g for g in c["gradient"]])
        b.append(3 * c["shortfall"])
    a += [[0.05, 0.0], [0.0, 0.05]]
    b += [0.0, 0.0]
    dq = result("solve_linear", {"a": a, "b": b}, "c2").outcome.data["x"]
    step = result("dls_step", {"joint_angles": q, "damping": 0.05}, "c3")
    data = step.outcome.data
    # v7: the verdict, the angles to copy, the other numbers; the full report is the data.
    verdict, angles, numbers = step.text.splitlines()
    assert step.text == dls_step_text(data) and verdict == step_verdict(data) + "."
    assert angles == "joint_angles: " + json.dumps(data["joint_angles"])
    assert f"cost {data['cost_before']:g} -> " in numbers and "largest step" in numbers
    assert data["joint_angles"] == pytest.approx(
        [x + d for x, d in zip(q, dq, strict=True)], abs=1e-3
    )
    assert data["largest_step_deg"] == pytest.approx(max(abs(d) for d in dq), abs=1e-3)
    shortfalls = sum((3 * c["shortfall"]) ** 2 for c in rep["near_contacts"])
    offset = rep["offset_to_target"]
    assert data["cost_before"] == pytest.approx(
        offset[0] ** 2 + offset[1] ** 2 + shortfalls, rel=1e-4
    )
    # The report at the new angles is of exactly the numbers it gives.
    there = result("jacobian", {"joint_angles": data["joint_angles"]}, "c4").outcome.data
    assert data["distance_to_target"] == there["distance_to_target"]
    assert data["collision_free"] == there["collision_free"]
    assert data["improved"] == (data["cost_after"] < data["cost_before"])
    assert world(ep).best is not None


def test_dls_step_holds_angles_at_the_limits_and_rejects_bad_arguments() -> None:
    # The target lies at -171 degrees, past joint 1's lower limit of -120: the step from
    # -115 runs into the limit and stops there.
    ep = episode_for(_handmade(obstacles=[], target=[-1.95, -0.3]))
    held = step_call(ep, "dls_step", {"joint_angles": [-115.0, 0.0]}, "c1")
    assert held.outcome is not None
    data = held.outcome.data
    assert data["held_at_limit"] and data["joint_angles"][0] == -120.0, data
    assert data["largest_step_deg"] > 5.0
    cases: list[tuple[dict[str, Any], str]] = [
        ({"joint_angles": [0.0, 0.0], "damping": 0}, "greater than 0"),
        ({"joint_angles": [0.0, 0.0], "damping": -1}, "greater than 0"),
        ({"joint_angles": [0.0]}, "exactly 2 angles"),
        ({"joint_angles": [130.0, 0.0]}, "above its upper limit"),
    ]
    for args, needle in cases:
        bad = step_call(ep, "dls_step", args, "bad")
        assert bad.outcome is not None and bad.outcome.is_error and needle in bad.text, bad.text
    assert not ep.done


def test_start_poses_ranks_simple_poses_by_where_a_few_steps_lead() -> None:
    # On the handmade arm the simple pose nearest the target, [60, 0], is on the circle's
    # wrong side: damped steps from it stall. The tool lists first the elbow-up pose from
    # which four steps reach the target, then the others by the distance their steps reach.
    inst = _handmade()
    scene = RobotReachWorld(inst).scene
    simple = [
        (a, b) for a in (-120.0, -60.0, 0.0, 60.0, 120.0) for b in (-150.0, -75.0, 0.0, 75.0, 150.0)
    ]
    ep = episode_for(inst)
    reply = step_call(ep, "start_poses")
    assert reply.outcome is not None and not reply.outcome.is_error
    assert reply.text == start_poses_text(reply.outcome.data)
    poses = reply.outcome.data["poses"]
    # v7: a numbered line per pose, its angles as a call carries them (copied verbatim).
    for k, (pose, line) in enumerate(zip(poses, reply.text.splitlines()[1:], strict=True), 1):
        assert line.startswith(f"{k}. {json.dumps(pose['joint_angles'])}: ")
    assert len(poses) == 3
    for pose in poses:
        assert tuple(pose["joint_angles"]) in simple
        assert scene.evaluate(np.asarray(pose["joint_angles"])).collision_free
    assert poses[0]["joint_angles"] == [120.0, -75.0]
    assert poses[0]["distance_after_4_steps"] <= 0.05 < poses[1]["distance_after_4_steps"]
    reached = [p["distance_after_4_steps"] for p in poses]
    assert reached == sorted(reached)
    assert [60.0, 0.0] in [p["joint_angles"] for p in poses[1:]]  # nearest, but it stalls
    # An obstacle on the base: every pose collides, and the tool says where to start instead.
    blocked = episode_for(_handmade(obstacles=[{"center": [0.0, 0.0], "radius": 0.2}]))
    error = step_call(blocked, "start_poses")
    assert error.outcome is not None and error.outcome.is_error
    assert "rest pose" in error.text and not blocked.done


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_submitting_a_listed_start_pose_earns_next_to_nothing(difficulty: str) -> None:
    # The tool ranks starts; it does not answer. Its first pose, submitted as is, is far
    # from the target (outside the partial-credit radius almost always).
    totals = []
    for seed in range(8):
        ep = episode_for(SPEC.instance(seed, difficulty))
        listed = step_call(ep, "start_poses", call_id="s")
        assert listed.outcome is not None
        first = listed.outcome.data["poses"][0]["joint_angles"]
        step_call(ep, "submit_angles", {"joint_angles": first}, "a")
        totals.append(ep.reward().total)
    assert statistics.fmean(totals) < 0.05, totals


# -- expert ------------------------------------------------------------------------


@pytest.mark.parametrize("difficulty", ["easy", "medium"])
def test_expert_and_noisy_expert_solve(difficulty: str) -> None:
    results = []
    for agent in (ExpertAgent(), NoisyAgent(0.5)):
        for seed in range(3):
            inst = SPEC.instance(100 + seed, difficulty)
            ep = run_agent(agent, inst)
            assert ep.end_reason == "answered"
            results.append((ep.reward().total, ep))
    assert all(total >= SPEC.solved_threshold for total, _ in results)
    for _, ep in results[:3]:  # the clean expert: start_poses, dls_step..., submit
        names = [r.name for r in ep.tool_calls]
        assert names[0] == "start_poses" and names[-1] == "submit_angles"
        assert set(names[1:-1]) == {"dls_step"}
        assert len(names) <= par_tool_calls(public(ep.instance).n_joints)
        assert not any(r.is_error for r in ep.tool_calls)
        # It starts from the first pose start_poses listed.
        listed = ep.tool_calls[0].data["poses"]
        assert ep.tool_calls[1].arguments["joint_angles"] == listed[0]["joint_angles"]
        final = ep.tool_calls[-1].arguments["joint_angles"]
        # Angles a step reported (copied, not computed), none of them the hidden solution.
        assert final in [r.data["joint_angles"] for r in ep.tool_calls[1:-1]]
        assert final != list(hidden(ep.instance).solution)


def test_expert_on_hard_solves_some_and_never_collides() -> None:
    # From the listed poses alone (no privileged start since v6) the expert solves about half
    # of the hard instances; whatever it submits is collision-free.
    solved = []
    for seed in range(100, 106):
        ep = run_expert(SPEC.instance(seed, "hard"))
        assert ep.end_reason == "answered"
        assert ep.reward().component("collision_free") == 1.0
        solved.append(ep.reward().success)
    assert sum(solved) >= 2, solved


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_expert_is_imitable(difficulty: str) -> None:
    # Every number in every expert action was visible before it was sent: the start is
    # the rest pose, the straight pose or simple fractions of the limits, each next angle
    # list is one a dls_step reported, each damping a tenth or ten times the last.
    for seed in range(3):
        ep = run_expert(SPEC.instance(seed, difficulty))
        assert list(unsourced_numbers(ep.messages, ep.tools)) == []


def test_imitability_check_passes() -> None:
    assert SPEC.imitable
    report = imitability_check(SPEC, seeds=2)
    assert report.actions >= 6 * 3 and not report.flagged, report.summary()


def test_expert_steps_around_the_obstacle_on_the_handmade_arm() -> None:
    # Only the elbow-up pose [90, -90] reaches (1, 1) without crossing the circle.
    inst = _handmade()
    ep = run_expert(inst)
    assert ep.reward().success
    names = [r.name for r in ep.tool_calls]
    assert names[0] == "start_poses" and names[-1] == "submit_angles"
    assert set(names[1:-1]) == {"dls_step"}
    assert list(unsourced_numbers(ep.messages, ep.tools)) == []


def test_expert_search_keeps_good_steps_and_damps_bad_ones() -> None:
    # Levenberg-Marquardt bookkeeping, fed made-up dls_step reports: a step that lowers the
    # cost is kept (the next starts from its reported angles) and the damping divided by 10;
    # a worse one is dropped (the next starts again from the kept angles) and the damping
    # multiplied by 10, as is a step of more than 30 degrees.
    expert = RobotReachExpert(_handmade())

    def step(
        before: float, after: float, angles: list[float], distance: float, largest: float = 5.0
    ) -> dict[str, Any]:
        return {
            "improved": after < before,
            "cost_before": before,
            "cost_after": after,
            "joint_angles": angles,
            "largest_step_deg": largest,
            "distance_to_target": distance,
            "within_tolerance": distance <= 0.05,
            "min_clearance": 0.5,
            "collision_free": True,
        }

    search = expert._search([10.0, 20.0], "Start.")
    name, args, _ = next(search)
    assert name == "dls_step" and args == {"joint_angles": [10.0, 20.0], "damping": 0.01}
    name, args, text = search.send(step(0.25, 0.1, [15.0, 19.0], 0.3))  # better: kept
    assert name == "dls_step" and args == {"joint_angles": [15.0, 19.0], "damping": 0.001}
    assert text == (
        "Improved, 0.3 m from the target, not within tolerance, collision-free: "
        "I step again from these angles with damping 0.001."
    )
    name, args, text = search.send(step(0.1, 0.2, [16.0, 18.0], 0.4))  # worse: dropped
    assert name == "dls_step" and args == {"joint_angles": [15.0, 19.0], "damping": 0.01}
    assert text.startswith("Not improved") and "the angles I kept, [15.0, 19.0]," in text
    name, args, text = search.send(step(0.1, 0.01, [50.0, 19.0], 0.1, largest=35.0))  # too long
    assert name == "dls_step" and args == {"joint_angles": [15.0, 19.0], "damping": 0.1}
    assert text.startswith("Improved, but a joint moved 35 degrees, more than 30")
    name, args, text = search.send(step(0.1, 0.0001, [12.0, 20.0], 0.01))  # better, close
    assert name == "submit_angles" and args == {"joint_angles": [12.0, 20.0]}
    assert text.endswith("within tolerance, collision-free: I submit these angles.")


# The words each flag's two states are said in, by dls_step's first line and the expert.
FLAG_WORDS = {
    "improved": ("Improved", "Not improved"),
    "within_tolerance": ("within tolerance", "not within tolerance"),
    "collision_free": ("collision-free", "colliding"),
}


@pytest.mark.parametrize("improved", [True, False])
@pytest.mark.parametrize("within", [True, False])
@pytest.mark.parametrize("free", [True, False])
def test_dls_step_states_each_flag_in_the_words_the_expert_narrates(
    improved: bool, within: bool, free: bool
) -> None:
    # v7: SmolLM2 trained on v6 read `"within_tolerance": false` and wrote "within
    # tolerance". The reply now opens with the flags in words, and the expert's narration of
    # a kept step is that line word for word, of a dropped one its first words: copying.
    report = {
        "joint_angles": [12.0, 20.5],
        "improved": improved,
        "cost_before": 0.25,
        "cost_after": 0.001 if improved else 0.5,
        "largest_step_deg": 5.0,
        "held_at_limit": False,
        "distance_to_target": 0.01 if within else 0.3,
        "within_tolerance": within,
        "min_clearance": 0.2 if free else -0.01,
        "collision_free": free,
    }
    first = dls_step_text(report).splitlines()[0]
    said, distance, *flags = first.removesuffix(".").split(", ")
    words = {name: pair[not report[name]] for name, pair in FLAG_WORDS.items()}
    assert [said, *flags] == [words["improved"], words["within_tolerance"], words["collision_free"]]
    assert distance == f"{report['distance_to_target']:g} m from the target"
    search = RobotReachExpert(_handmade())._search([10.0, 20.0], "Start.")
    next(search)
    name, _, text = search.send(report)
    if improved:  # kept: the whole line, then the decision
        assert text.startswith(first.removesuffix(".") + ": ")
        assert name == ("submit_angles" if within and free else "dls_step")
    else:
        assert text.startswith("Not improved, so I keep the old angles: ") and name == "dls_step"


def test_dls_step_states_the_flags_of_real_steps() -> None:
    # On the handmade arm: a step through the circle improves but collides; a step from the
    # free solution cannot improve on a zero cost.
    ep = episode_for(_handmade())
    through = step_call(ep, "dls_step", {"joint_angles": [0.0, 60.0]}, "c1")
    assert through.text.splitlines()[0].endswith(
        "m from the target, not within tolerance, colliding."
    )
    assert through.text.startswith("Improved, ")
    solved = step_call(ep, "dls_step", {"joint_angles": [90.0, -90.0]}, "c2")
    assert solved.text.splitlines()[0] == (
        "Not improved, 0 m from the target, within tolerance, collision-free."
    )
    assert solved.outcome is not None and solved.outcome.data["improved"] is False


@pytest.mark.parametrize("difficulty", ["easy", "medium"])
def test_expert_narration_copies_the_replies(difficulty: str) -> None:
    # Every step the expert narrates opens with the words of the reply it read: the whole
    # first line for a kept step, "Not improved" or "Improved, but" for a dropped one.
    # Every list of angles it sends was printed in a reply before, as the call carries it.
    for seed in range(4):
        ep = run_expert(SPEC.instance(seed, difficulty))
        messages = [m for m in ep.messages if m.role in ("assistant", "tool")]
        for reply, turn in itertools.pairwise(messages):
            if reply.role != "tool" or turn.role != "assistant":
                continue
            first = reply.text.splitlines()[0]
            if first.startswith(("Improved", "Not improved")):  # a dls_step reply
                kept = turn.text.startswith(first.removesuffix(".") + ": ")
                assert kept or turn.text.startswith(("Not improved, ", "Improved, but ")), (
                    first,
                    turn.text,
                )
        shown = ""
        for m in messages:
            if m.role == "tool":
                shown += m.text
            for tc in m.tool_calls or []:
                sent = json.loads(tc.function.arguments).get("joint_angles")
                assert sent is None or angles_text(sent) in shown, sent


def test_expert_tries_the_next_listed_pose_when_a_start_does_not_converge() -> None:
    # Made-up replies: STEPS_PER_START steps that never reach the target, then the expert
    # steps from the second listed pose; the flags it was shown are what it says.
    expert = RobotReachExpert(_handmade())
    plan = expert._plan()
    name, args, _ = next(plan)
    assert (name, args) == ("start_poses", {})
    poses = [[10.0, 20.0], [-30.0, 40.0], [50.0, -60.0]]
    name, args, text = plan.send(
        {"poses": [{"joint_angles": q, "distance_to_target": 0.5} for q in poses]}
    )
    assert args == {"joint_angles": poses[0], "damping": 0.01}
    assert text.startswith("I start from pose 1, [10.0, 20.0].")
    stuck = {
        "improved": False,
        "cost_before": 0.25,
        "cost_after": 0.25,
        "joint_angles": [11.0, 21.0],
        "largest_step_deg": 1.0,
        "distance_to_target": 0.5,
        "within_tolerance": False,
        "min_clearance": 0.5,
        "collision_free": True,
    }
    for _ in range(STEPS_PER_START - 1):
        name, args, text = plan.send(stuck)
        assert name == "dls_step" and args["joint_angles"] == poses[0]
        assert text.startswith("Not improved")
    name, args, text = plan.send(stuck)
    assert name == "dls_step" and args == {"joint_angles": poses[1], "damping": 0.01}
    assert "so I try pose 2, [-30.0, 40.0]." in text
    better = {**stuck, "improved": True, "cost_after": 0.1, "joint_angles": [-29.0, 41.0]}
    name, args, text = plan.send(better)
    assert args == {"joint_angles": [-29.0, 41.0], "damping": 0.001}
    assert text.startswith("Improved, 0.5 m from the target, not within tolerance, collision-free")


def test_expert_gives_up_with_its_closest_collision_free_angles() -> None:
    # Out of reach: the search stalls, and the expert submits the closest collision-free
    # angles it checked, not a made-up answer.
    inst = _handmade(hidden_solution=(45.0, 0.0), target=[2.5, 2.5])
    ep = run_expert(inst)
    assert ep.end_reason == "answered" and not ep.reward().success
    final = ep.tool_calls[-1].arguments["joint_angles"]
    checked = [r for r in ep.tool_calls if r.name == "dls_step" and r.data["collision_free"]]
    assert final in [r.data["joint_angles"] for r in checked]
    assert ep.reward().component("collision_free") == 1.0
    assert len(ep.tool_calls) <= 30


def test_expert_repeats_a_failed_call() -> None:
    inst = _handmade()
    expert = RobotReachExpert(inst)
    ep = episode_for(inst)
    first = expert.next_turn(ep.messages)
    (tc,) = first.tool_calls or []
    failed = Message(
        role="tool",
        tool_call_id=tc.id,
        content="Error: timed out",
        outcome=ToolOutcome(is_error=True),
    )
    again = expert.next_turn([*ep.messages, first, failed])
    (tc2,) = again.tool_calls or []
    assert tc2.function.name == tc.function.name and tc2.function.arguments == tc.function.arguments
    assert "repeat" in again.text


def test_expert_reads_results_as_data_not_text() -> None:
    # With every tool message's text blanked, the expert still solves: it decides from the
    # outcomes alone.
    inst = _handmade()
    expert = RobotReachExpert(inst)
    ep = episode_for(inst)
    while not ep.done:
        blank = [
            m.model_copy(update={"content": ""}) if m.role == "tool" else m for m in ep.messages
        ]
        ep.step(expert.next_turn(blank))
    assert ep.reward().success


def test_an_arm_with_nothing_to_hit_reads_back_from_a_file_and_is_solved() -> None:
    # With no obstacle and no self-collision the clearance is infinite; JSON has no inf.
    inst = SPEC.instance(3, "easy", n_obstacles=0)
    assert inst.hidden["solution_clearance"] is None
    again = Instance.model_validate_json(inst.model_dump_json())
    assert again == inst
    assert run_expert(again).reward().success
