"""Edge cases of the tsp_vision task: generation, tools, reward and expert."""

from __future__ import annotations

import functools
import io
import itertools
import json
import math
import re
import statistics
import typing

import numpy as np
import pytest
from PIL import Image

from agentharness.agents.scripted import ExpertAgent, NoisyAgent
from agentharness.core.episode import Episode
from agentharness.core.instance import Instance
from agentharness.core.messages import Message, ToolCall, ToolOutcome, assistant
from agentharness.core.registry import episode_for, get_task
from agentharness.core.task import TaskConfigError
from agentharness.tasks.tsp_vision import simulator
from agentharness.tasks.tsp_vision.problem import Hidden, Public
from agentharness.tasks.tsp_vision.reward import closeness
from agentharness.tasks.tsp_vision.tools import TspVisionWorld
from agentharness.testing.tasks import call, episode, run_agent, step_call

SPEC = get_task("tsp_vision")


def _world(ep: Episode) -> TspVisionWorld:
    assert isinstance(ep.world, TspVisionWorld)
    return ep.world


def _with_hidden(inst: Instance, hidden: dict[str, typing.Any]) -> Instance:
    """``inst`` with other hidden data, built afresh: ``model_copy`` would share the
    cached typed views of the original."""
    return Instance.model_validate({**inst.model_dump(), "hidden": hidden})


# -- generation ---------------------------------------------------------------------


def test_same_seed_same_instance_and_prompt() -> None:
    a, b = SPEC.instance(5, "medium"), SPEC.instance(5, "medium")
    assert a == b
    pa = [m.model_dump() for m in SPEC.generator.prompt(a)]
    pb = [m.model_dump() for m in SPEC.generator.prompt(b)]
    assert pa == pb
    assert SPEC.instance(6, "medium").hidden["cities"] != a.hidden["cities"]


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_typed_views_read_exactly_the_stored_data(difficulty: str) -> None:
    """Public and Hidden describe the instance data field for field, in stored order."""
    for seed in range(3):
        inst = SPEC.instance(seed, difficulty)
        pub, hidden = inst.public_as(Public), inst.hidden_as(Hidden)
        assert json.dumps(pub.model_dump(mode="json")) == json.dumps(inst.public)
        assert json.dumps(hidden.model_dump(mode="json")) == json.dumps(inst.hidden)
        assert inst.public_as(Public) is pub  # validated once
        assert pub.labels == tuple(inst.public["labels"])
        assert hidden.cities[0] == tuple(inst.hidden["cities"][0])


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_cities_respect_grid_and_separation(difficulty: str) -> None:
    for seed in range(3):
        inst = SPEC.instance(seed, difficulty)
        cfg = SPEC.config_of(inst)
        cities = inst.hidden["cities"]
        assert len(cities) == cfg.n_cities == len(inst.public["labels"])  # type: ignore[attr-defined]
        for x, y in cities:
            assert isinstance(x, int) and isinstance(y, int)
            assert 0 <= x <= cfg.grid_size and 0 <= y <= cfg.grid_size  # type: ignore[attr-defined]
        for p, q in itertools.combinations(cities, 2):
            assert math.dist(p, q) >= cfg.min_separation  # type: ignore[attr-defined]


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_hidden_solution_verifies(difficulty: str) -> None:
    inst = SPEC.instance(1, difficulty)
    cities = [tuple(c) for c in inst.hidden["cities"]]
    tour = simulator.order_to_indices(inst.hidden["solution"], inst.public["labels"])
    assert sorted(tour) == list(range(len(cities)))
    length = simulator.tour_length(cities, tour)
    assert length == pytest.approx(inst.hidden["optimal_length"])
    assert inst.hidden["exact"] is True
    assert simulator.crossing_edges(cities, tour) == []
    # no local-search tour beats the exact one
    dist = simulator.distance_matrix(cities)
    _, heuristic = simulator.heuristic_tour(dist, np.random.default_rng(0))
    assert heuristic >= length - 1e-9


def test_held_karp_matches_brute_force() -> None:
    rng = np.random.default_rng(42)
    for n in (4, 5, 6, 7, 8):
        pts = simulator.sample_cities(rng, n, 100, 5.0, 2)
        assert pts is not None
        dist = simulator.distance_matrix(pts)
        tour, length = simulator.held_karp(dist)
        brute = min(
            simulator.tour_length(pts, (0, *p)) for p in itertools.permutations(range(1, n))
        )
        assert length == pytest.approx(brute)
        assert sorted(tour) == list(range(n))


def test_many_cities_use_best_known_heuristic() -> None:
    inst = SPEC.instance(0, "hard", n_cities=20)
    assert inst.hidden["method"] == "2opt+oropt" and inst.hidden["exact"] is False
    cities = [tuple(c) for c in inst.hidden["cities"]]
    tour = simulator.order_to_indices(inst.hidden["solution"], inst.public["labels"])
    assert simulator.crossing_edges(cities, tour) == []


def test_prompt_has_image_but_no_coordinates() -> None:
    inst = SPEC.instance(2, "medium")
    msgs = SPEC.generator.prompt(inst)
    images = [img for m in msgs for img in m.images]
    assert len(images) == 1
    png = images[0].png_bytes()
    assert png is not None
    img = Image.open(io.BytesIO(png))
    assert img.size == (inst.public["image_size"],) * 2
    text = "\n".join(m.text for m in msgs)
    for x, y in inst.hidden["cities"]:
        assert f"({x}, {y})" not in text and f"{x},{y}" not in text and f"{x}, {y}" not in text
    assert "submit_tour" in text and "tour_length" in text
    for key in ("cities", "solution", "optimal_length"):
        assert key not in inst.public


def test_config_validation() -> None:
    with pytest.raises(TaskConfigError):
        SPEC.make_config("easy", n_cities=26, grid_size=20, min_separation=10)
    with pytest.raises(TaskConfigError):
        SPEC.make_config("easy", n_cities=3)
    with pytest.raises(TaskConfigError):
        SPEC.make_config("easy", colour="red")
    cfg = SPEC.make_config("easy", show_grid=False, image_size=400)
    assert cfg.show_grid is False  # type: ignore[attr-defined]


def test_no_grid_map_renders() -> None:
    inst = SPEC.instance(0, "easy", show_grid=False, grid_size=50, min_separation=6)
    png = SPEC.generator.prompt(inst)[1].images[0].png_bytes()
    assert png is not None and Image.open(io.BytesIO(png)).size == (640, 640)
    assert "ticks every 5 units on the axes" in SPEC.generator.prompt(inst)[1].text


# -- tools --------------------------------------------------------------------------


def test_tour_length_reports_only_the_total_length() -> None:
    ep = episode("tsp_vision", 0, "medium")
    inst = ep.instance
    labels = inst.public["labels"]
    cities = [tuple(c) for c in inst.hidden["cities"]]
    res = ep.world.execute("tour_length", {"order": inst.hidden["solution"]})
    assert not res.is_error
    assert f"{inst.hidden['optimal_length']:.2f}" in res.text
    assert "shortest valid tour so far" in res.text and "2 tour_length checks left" in res.text
    assert res.metrics["tour_length"] == pytest.approx(inst.hidden["optimal_length"])
    # the alphabetical tour on a random map almost surely crosses itself
    alphabetical = list(range(len(labels)))
    assert simulator.crossing_edges(cities, alphabetical)
    res2 = ep.world.execute("tour_length", {"order": labels})
    expected = simulator.tour_length(cities, alphabetical)
    assert res2.metrics["tour_length"] == pytest.approx(expected)
    assert set(res2.metrics) <= {"tour_length", "latency_s"}
    # no per-leg lengths and no crossing legs: the geometry is for the image to tell
    leg = math.dist(cities[0], cities[1])
    assert f"{leg:.2f}" not in res2.text.replace(f"{expected:.2f}", "")
    assert "cross" not in res2.text.lower() and "-" not in res2.text
    assert f"so far has length {inst.hidden['optimal_length']:.2f}" in res2.text
    best = _world(ep).best
    assert best is not None and best[1] == pytest.approx(inst.hidden["optimal_length"])


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_tour_length_checks_are_limited(difficulty: str) -> None:
    ep = episode("tsp_vision", 1, difficulty)
    limit = ep.instance.config["max_checks"]
    labels = ep.instance.public["labels"]
    assert ep.world.execute("tour_length", {"order": ["A"]}).is_error  # invalid: not counted
    for k in range(limit):
        res = ep.world.execute("tour_length", {"order": labels[k:] + labels[:k]})
        assert not res.is_error
    over = ep.world.execute("tour_length", {"order": labels})
    assert over.is_error and "no tour_length checks left" in over.text
    assert "length" not in over.text.replace("tour_length", "")
    assert _world(ep).checks == limit
    # the map and the answer stay available
    assert not ep.world.execute("show_tour", {"order": labels}).is_error
    ep.step(call("submit_tour", {"order": ep.instance.hidden["solution"]}))
    assert ep.reward().success


def test_tool_results_carry_what_the_text_says_as_data() -> None:
    ep = episode("tsp_vision", 0, "easy")
    hidden = ep.instance.hidden_as(Hidden)
    labels = list(ep.instance.public_as(Public).labels)
    sol = list(hidden.solution)
    best = round(hidden.optimal_length, 2)
    reply = step_call(ep, "tour_length", {"order": sol})
    assert reply.outcome is not None and not reply.outcome.is_error
    assert reply.outcome.data == {
        "order": sol,
        "cities": len(sol),
        "length": best,
        "shortest_so_far": True,
        "best_length": best,
        "checks_left": 2,
    }
    assert f"Total length: {best:.2f}" in reply.text
    reply = step_call(ep, "tour_length", {"order": labels}, "c2")
    assert reply.outcome is not None and reply.outcome.data["shortest_so_far"] is False
    assert reply.outcome.data["best_length"] == best and reply.outcome.data["checks_left"] == 1
    assert ep.tool_calls[-1].data == reply.outcome.data  # the trajectory records it too
    # a bad tour is an error without data
    reply = step_call(ep, "tour_length", {"order": ["A", "B"]}, "c3")
    assert reply.outcome is not None and reply.outcome.is_error and reply.outcome.data is None
    # the route drawn, open or closed
    reply = step_call(ep, "show_tour", {"order": sol[:3]}, "c4")
    assert reply.outcome is not None and reply.outcome.data == {
        "route": sol[:3],
        "closed": False,
        "not_visited": [lab for lab in labels if lab not in sol[:3]],
    }
    step_call(ep, "tour_length", {"order": sol}, "c5")
    # out of checks: an error the policies can tell apart, with checks_left 0
    reply = step_call(ep, "tour_length", {"order": sol}, "c6")
    assert reply.text.startswith("Error: no tour_length checks left (you had 3).")
    assert reply.outcome is not None and reply.outcome.is_error
    assert reply.outcome.data == {"checks_left": 0, "max_checks": 3}
    reply = step_call(ep, "submit_tour", {"order": sol}, "c7")
    assert reply.outcome is not None
    assert reply.outcome.data == {"order": sol, "cities": len(sol), "length": best}
    assert ep.done and ep.reward().success


def test_the_expert_reads_the_outcome_not_the_text() -> None:
    """Same text, different outcome: the expert re-checks after a failed check."""
    inst = SPEC.instance(0, "easy")
    ep = episode_for(inst)
    expert = SPEC.expert(inst)
    ep.step(expert.next_turn(ep.messages))
    reply = ep.messages[-1]
    assert reply.role == "tool" and reply.outcome is not None
    assert expert.next_turn(ep.messages).tool_calls[0].function.name == "submit_tour"  # type: ignore[index]
    failed = reply.model_copy(update={"outcome": ToolOutcome(is_error=True)})
    messages = [*ep.messages[:-1], failed]
    assert SPEC.expert(inst).next_turn(messages).tool_calls[0].function.name == "tour_length"  # type: ignore[index]


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_too_few_checks_to_solve_for_distances(difficulty: str) -> None:
    """Tour lengths are linear in the leg lengths: with as many independent tours as the
    dimension of their span (n(n-3)/2 + 1), every tour's length follows by least squares.
    The check budget stays far below it, so lengths cannot replace the map."""
    cfg = SPEC.make_config(difficulty)
    n = cfg.n_cities  # type: ignore[attr-defined]
    assert cfg.max_checks < (n * (n - 3) // 2 + 1) // 4  # type: ignore[attr-defined]


def test_order_normalisation_accepts_closing_repeat_and_lowercase() -> None:
    ep = episode("tsp_vision", 0, "easy")
    sol = ep.instance.hidden["solution"]
    res = ep.world.execute("tour_length", {"order": [s.lower() for s in sol] + [sol[0]]})
    assert not res.is_error
    assert res.metrics["tour_length"] == pytest.approx(ep.instance.hidden["optimal_length"])


@pytest.mark.parametrize(
    ("order", "needle"),
    [
        (["A", "B", "C"], "missing: D, E, F, G, H"),
        (["A", "B", "C", "D", "E", "E", "F"], "visited more than once: E"),
        (["A", "B", "C", "D", "E", "Z"], "unknown label(s) Z"),
        (["A", "B", "C", "D", "E", "F", "G", "H", "I"], "unknown label(s) I"),
    ],
)
def test_invalid_tours_name_the_problem(order: list[str], needle: str) -> None:
    ep = episode("tsp_vision", 0, "easy")
    obs = ep.step(call("tour_length", {"order": order}))
    assert not obs.done
    tool_msg = obs.messages[0]
    assert tool_msg.text.startswith("Error") and needle in tool_msg.text
    assert ep.tool_calls[-1].is_error


@pytest.mark.parametrize(
    "args",
    [
        {},
        {"order": "ABCDEF"},
        {"order": [1, 2, 3]},
        {"order": [float("nan")]},
        {"order": []},
        {"order": ["A"] * 65},
        {"order": ["A" * 17]},
        {"order": ["A"], "extra": 1},
        "not json",
    ],
)
def test_bad_arguments_are_errors_and_episode_continues(args: object) -> None:
    ep = episode("tsp_vision", 0, "easy")
    for name in ("tour_length", "show_tour", "submit_tour"):
        res = ep.world.execute(name, args)  # type: ignore[arg-type]
        assert res.is_error and res.text.startswith("Error")
    assert ep.world.final_answer is None
    obs = ep.step(call("tour_length", {"order": ep.instance.hidden["solution"]}))
    assert not obs.done and not ep.tool_calls[-1].is_error


def test_show_tour_draws_full_and_partial_routes() -> None:
    ep = episode("tsp_vision", 0, "easy")
    sol = ep.instance.hidden["solution"]
    full = ep.world.execute("show_tour", {"order": sol})
    assert not full.is_error and len(full.images) == 1 and "closed tour" in full.text
    part = ep.world.execute("show_tour", {"order": sol[:3]})
    assert "open route" in part.text and "not yet visited" in part.text
    assert full.images[0] != part.images[0]
    img = Image.open(io.BytesIO(full.images[0]))
    plain = Image.open(
        io.BytesIO(SPEC.generator.prompt(ep.instance)[1].images[0].png_bytes() or b"")
    )
    assert img.size == plain.size and img.tobytes() != plain.tobytes()
    # the image reaches the agent as a user message after the tool result
    obs = ep.step(call("show_tour", {"order": sol}))
    assert obs.messages[-1].role == "user" and obs.messages[-1].images
    dup = ep.world.execute("show_tour", {"order": ["A", "B", "A", "C"]})
    assert dup.is_error and "more than once" in dup.text


def test_submit_invalid_tour_keeps_episode_open() -> None:
    ep = episode("tsp_vision", 0, "easy")
    obs = ep.step(call("submit_tour", {"order": ["A", "B"]}))
    assert not obs.done and ep.world.final_answer is None
    obs = ep.step(call("submit_tour", {"order": ep.instance.hidden["solution"]}, "t2"))
    assert obs.done and ep.end_reason == "answered"
    assert ep.reward().total == pytest.approx(1.0) and ep.reward().success


# -- reward -------------------------------------------------------------------------


def test_reward_pays_nothing_for_a_tour_beyond_the_tolerance() -> None:
    ep = episode("tsp_vision", 3, "medium")
    labels = ep.instance.public["labels"]
    cities = [tuple(c) for c in ep.instance.hidden["cities"]]
    ep.step(call("submit_tour", {"order": labels}))
    r = ep.reward()
    length = simulator.tour_length(cities, list(range(len(labels))))
    ratio = ep.instance.hidden["optimal_length"] / length
    assert 0.3 < ratio < 0.9  # v2 paid this ratio for the labels in their given order
    assert r.total == 0.0 and r.component("optimality") == 0.0
    assert r.component("validity") == 1.0 and not r.success
    assert "longer" in r.explanation


def test_closeness_is_linear_within_the_tolerance() -> None:
    assert closeness(0.0, 0.1) == 1.0
    assert closeness(-0.01, 0.1) == 1.0  # beating a best-known length
    assert closeness(0.05, 0.1) == pytest.approx(0.5)
    assert closeness(0.1, 0.1) == 0.0 and closeness(0.3, 0.1) == 0.0


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_reward_credit_for_a_near_optimal_tour(difficulty: str) -> None:
    """A tour a little longer than optimal (one or-opt move away) earns partial credit
    by the stated rule, and success needs a gap of at most 1%."""
    for seed in range(12):
        inst = SPEC.instance(seed, difficulty)
        sol = list(inst.hidden["solution"])
        cities = [tuple(c) for c in inst.hidden["cities"]]
        labels = inst.public["labels"]
        best = inst.hidden["optimal_length"]
        tol = inst.config["tolerance"]
        for i in range(1, len(sol)):
            moved = sol[:i] + sol[i + 1 :]
            moved.insert((i + 1) % len(moved) + 1, sol[i])
            length = simulator.tour_length(cities, simulator.order_to_indices(moved, labels))
            gap = length / best - 1
            if 0.01 < gap < tol:
                ep = episode_for(inst)
                ep.step(call("submit_tour", {"order": moved}))
                r = ep.reward()
                assert r.total == pytest.approx(1 - gap / tol)
                assert 0 < r.total < 1 and not r.success
                return
    pytest.skip("no near-optimal one-move tour found")


def test_reward_rechecks_the_answer_not_the_world_claims() -> None:
    ep = episode("tsp_vision", 0, "easy")
    world = _world(ep)
    world.final_answer = {"order": ["A", "B", "C"]}  # invalid, e.g. a tampered log
    world.submitted_length = 1.0
    r = SPEC.reward(ep.instance, world, ep.trajectory())
    assert r.total == 0.0 and not r.success and "missing" in r.explanation
    world.final_answer = {"order": "ABCDEF"}
    assert SPEC.reward(ep.instance, world, ep.trajectory()).total == 0.0


def test_no_answer_scores_zero_after_nudges() -> None:
    ep = episode("tsp_vision", 0, "easy")
    obs = ep.step("I think A, B, C.")
    assert not obs.done and "tour_length" in obs.messages[-1].text
    ep.step(call("tour_length", {"order": ep.instance.hidden["solution"]}, "t2"))
    obs = ep.step("done")
    assert "best valid tour so far" in obs.messages[-1].text
    obs = ep.step("done")
    assert obs.done and ep.end_reason == "no_answer"
    assert ep.reward().total == 0.0 and ep.reward().component("optimality") == 0.0


def test_beating_best_known_caps_at_one() -> None:
    inst = SPEC.instance(0, "hard", n_cities=20)
    tol = inst.config["tolerance"]
    hidden = {**inst.hidden, "optimal_length": inst.hidden["optimal_length"] / (1 + tol / 2)}
    ep = episode_for(_with_hidden(inst, hidden))
    ep.step(call("submit_tour", {"order": inst.hidden["solution"]}))
    assert ep.reward().total == pytest.approx(0.5)
    hidden = {**inst.hidden, "optimal_length": inst.hidden["optimal_length"] * 2}
    ep = episode_for(_with_hidden(inst, hidden))
    ep.step(call("submit_tour", {"order": inst.hidden["solution"]}))
    assert ep.reward().total == 1.0 and ep.reward().success


# -- expert ---------------------------------------------------------------------------


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_expert_solves(difficulty: str) -> None:
    ep = run_agent(ExpertAgent(), SPEC.instance(7, difficulty))
    assert ep.end_reason == "answered" and ep.turns == 2
    assert ep.reward().total >= SPEC.solved_threshold and ep.reward().success
    assert [c.name for c in ep.tool_calls] == ["tour_length", "submit_tour"]


def test_expert_submits_when_the_checks_are_used_up() -> None:
    inst = SPEC.instance(2, "easy")
    ep = episode_for(inst)
    labels = inst.public["labels"]
    for k in range(inst.config["max_checks"]):
        ep.step(call("tour_length", {"order": labels[k:] + labels[:k]}, f"t{k + 1}"))
    expert = SPEC.expert(inst)
    while not ep.done:
        ep.step(expert.next_turn(ep.messages))
    assert ep.end_reason == "answered" and ep.reward().success


def test_expert_survives_noise() -> None:
    for seed in range(4):
        ep = run_agent(NoisyAgent(0.4, seed=seed), SPEC.instance(seed, "medium"))
        assert ep.end_reason == "answered"
        assert ep.reward().total == pytest.approx(1.0)


# -- reward integrity: the exploits of issue 10, played on >= 30 seeds ------------------

SEEDS = range(30)
LAZY_LIMIT = 0.2


@functools.cache
def _seeded(difficulty: str) -> tuple[Instance, ...]:
    return tuple(SPEC.instance(seed, difficulty) for seed in SEEDS)


def _lengths(messages: list[Message], ids: dict[str, list[str]]) -> list[tuple[float, list[str]]]:
    out = []
    for m in messages:
        if m.role == "tool" and m.tool_call_id in ids:
            found = re.search(r"Total length: (\d+\.\d+)", m.text)
            if found:
                out.append((float(found.group(1)), ids[m.tool_call_id]))
    return out


class GivenOrder:
    """Submits the labels in their given order at once: no tool, no image."""

    def __init__(self, instance: Instance) -> None:
        self.labels = list(instance.public["labels"])

    def next_turn(self, messages: list[Message]) -> Message:
        return call("submit_tour", {"order": self.labels}, "t1")


class Uncross:
    """v2's crossing-leg feedback as a search: check a tour, reverse the stretch between
    the first reported pair of crossing legs, repeat; submit the shortest measured."""

    def __init__(self, instance: Instance) -> None:
        self.order = list(instance.public["labels"])
        self.sent: dict[str, list[str]] = {}
        self.n = 0

    def next_turn(self, messages: list[Message]) -> Message:
        self.n += 1
        last = messages[-1]
        measured = _lengths(messages, self.sent)
        if self.n > 1:
            found = re.search(r"([A-Z])-([A-Z]) crosses ([A-Z])-([A-Z])", last.text)
            if last.text.startswith("Error") or found is None:
                best = min(measured)[1] if measured else self.order
                return call("submit_tour", {"order": best}, "t99")
            _, b, c, _ = found.groups()
            i, j = self.order.index(b), self.order.index(c)
            if i > j:
                i, j = j, i
            self.order[i : j + 1] = reversed(self.order[i : j + 1])
        turn = call("tour_length", {"order": list(self.order)}, f"t{self.n}")
        self.sent[turn.tool_calls[0].id] = list(self.order)  # type: ignore[index]
        return turn


class LeastSquares:
    """Tour lengths are linear in the leg lengths: check many random tours in one turn,
    fit the legs by least squares, submit the tour shortest under the fit."""

    def __init__(self, instance: Instance) -> None:
        self.labels = list(instance.public["labels"])
        n = len(self.labels)
        self.pairs = {p: k for k, p in enumerate(itertools.combinations(range(n), 2))}
        rng = np.random.default_rng(instance.seed)
        calls = SPEC.interaction.budgets.max_tool_calls - 1
        self.tours = [[int(c) for c in rng.permutation(n)] for _ in range(calls)]
        self.sent: dict[str, list[str]] = {}

    def _row(self, tour: list[int]) -> np.ndarray:
        v = np.zeros(len(self.pairs))
        for a, b in zip(tour, [*tour[1:], tour[0]], strict=True):
            v[self.pairs[(min(a, b), max(a, b))]] += 1
        return v

    def next_turn(self, messages: list[Message]) -> Message:
        if not self.sent:
            calls = []
            for k, tour in enumerate(self.tours):
                order = [self.labels[i] for i in tour]
                self.sent[f"q{k}"] = order
                calls.append(ToolCall.make(f"q{k}", "tour_length", {"order": order}))
            return assistant(tool_calls=calls)
        index = {lab: i for i, lab in enumerate(self.labels)}
        measured = _lengths(messages, self.sent)
        rows = np.array([self._row([index[x] for x in o]) for _, o in measured])
        fit, *_ = np.linalg.lstsq(rows, np.array([x for x, _ in measured]), rcond=None)
        n = len(self.labels)
        dist = np.zeros((n, n))
        for (a, b), k in self.pairs.items():
            dist[a, b] = dist[b, a] = fit[k]
        tour = simulator.local_search(dist, list(range(n)))
        return call("submit_tour", {"order": [self.labels[i] for i in tour]}, "t99")


def _blind(instance: Instance) -> object:
    """The task's blind policy, given the instance as the adversarial check does (the
    hidden data emptied)."""
    assert SPEC.blind_policy is not None
    return SPEC.blind_policy(_with_hidden(instance, {}))


def _play(factory: typing.Callable[[Instance], typing.Any], difficulty: str) -> tuple[float, float]:
    """Mean reward and success rate of a scripted policy over the seeded instances."""
    totals, wins = [], []
    for inst in _seeded(difficulty):
        policy = factory(inst)
        ep = episode_for(inst)
        while not ep.done:
            ep.step(policy.next_turn(ep.messages))
        totals.append(ep.reward().total)
        wins.append(ep.reward().success)
    return statistics.fmean(totals), statistics.fmean(wins)


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
@pytest.mark.parametrize(
    "exploit",
    [GivenOrder, Uncross, LeastSquares, _blind],
    ids=["given", "uncross", "lstsq", "blind"],
)
def test_exploits_without_the_map_earn_nothing(
    exploit: typing.Callable[[Instance], typing.Any], difficulty: str
) -> None:
    """v2: given order 0.78/0.59/0.44, uncrossing 0.93/0.80/0.63, least squares 1.0 on easy."""
    mean, success = _play(exploit, difficulty)
    assert mean <= LAZY_LIMIT and success <= 0.05, (mean, success)


@pytest.mark.parametrize("difficulty", ["easy", "medium", "hard"])
def test_experts_margin_holds_on_every_difficulty(difficulty: str) -> None:
    mean, success = _play(SPEC.expert, difficulty)
    assert mean >= SPEC.solved_threshold and success == 1.0


def test_blind_policy_uses_every_check_and_never_the_hidden_data() -> None:
    inst = SPEC.instance(4, "easy")
    policy = _blind(inst)
    ep = episode_for(inst)
    while not ep.done:
        ep.step(policy.next_turn(ep.messages))  # type: ignore[attr-defined]
    names = [c.name for c in ep.tool_calls]
    assert names == ["tour_length"] * inst.config["max_checks"] + ["submit_tour"]
    submitted = ep.world.final_answer["order"]  # type: ignore[index]
    best = min(c.metrics["tour_length"] for c in ep.tool_calls[:-1])
    assert ep.tool_calls[-1].metrics["tour_length"] == pytest.approx(best)
    assert sorted(submitted) == sorted(inst.public["labels"])


def test_presets_get_harder() -> None:
    cfgs = [SPEC.make_config(d) for d in ("easy", "medium", "hard")]
    cities = [c.n_cities for c in cfgs]  # type: ignore[attr-defined]
    tolerances = [c.tolerance for c in cfgs]  # type: ignore[attr-defined]
    assert cities == sorted(cities) and len(set(cities)) == 3
    assert tolerances == sorted(tolerances, reverse=True) and len(set(tolerances)) == 3
