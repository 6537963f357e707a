"""The conformance check over every built-in task (and the conftest's toy)."""

from __future__ import annotations

import dataclasses

import pytest
from pydantic import BaseModel, Field
from toy_task import GUESS, GuessConfig, GuessExpert, GuessGenerator, guess_reward

from agentharness.conformance import adversarial_check, check_task, knob_extremes
from agentharness.core import Instance, Reward, TaskSpec, World, registry
from agentharness.core.episode import Trajectory
from agentharness.core.registry import all_tasks, builtin_task_names
from agentharness.core.task import Budgets, Interaction, Problem, UnsatisfiableKnobsError


def test_builtin_tasks_are_registered() -> None:
    names = {s.name for s in all_tasks()}
    assert set(builtin_task_names()) <= names


# The adversarial check plays ~10 policies on 30 seeds per difficulty: minutes for the
# long-episode tasks (holdem's sessions), so these get more than the suite's default timeout.
# The built-in tasks and the conftest's toy; not all_tasks(), which at collection time also
# holds whatever fixture tasks other test modules registered on import (the GRPO test's
# `letters` pays any reply on purpose), so the list would depend on which files are run.
# The slowest first (holdem ~20 min on a 2-vCPU VM, robot_reach ~9): tests/conftest.py runs
# this module first, so under pytest-xdist they start at once.
SLOWEST = ("holdem", "robot_reach")
CHECKED = sorted(
    [registry.get_task(name) for name in builtin_task_names()] + [GUESS],
    key=lambda spec: SLOWEST.index(spec.name) if spec.name in SLOWEST else len(SLOWEST),
)


@pytest.mark.timeout(1800)
@pytest.mark.parametrize("spec", CHECKED, ids=lambda s: s.id)
def test_task_conforms(spec) -> None:
    report = check_task(spec, seeds=3)
    failures = [f"{r.name}: {r.detail}" for r in report.results if not r.passed]
    assert report.adversarial is not None
    assert not failures, "\n".join(failures) + "\n" + report.adversarial.table()
    assert [r.name for r in report.results][-1] == "adversarial" and len(report.results) == 8


# -- the adversarial check catches reward hacks -----------------------------------------


def _variant(monkeypatch: pytest.MonkeyPatch, **changes: object) -> TaskSpec:
    spec = dataclasses.replace(GUESS, **changes)
    all_tasks()
    monkeypatch.setitem(registry._REGISTRY, spec.id, spec)
    return spec


def test_an_honest_task_passes_and_the_table_shows_every_policy() -> None:
    report = adversarial_check(GUESS, seeds=10)
    assert report.failures == []
    assert {"expert", "lazy:defaults", "lazy:minimum", "lazy:maximum", "lazy:echo"} <= set(
        report.scores
    )
    assert {"lazy:constant", "lazy:passive0", "random", "nothing"} <= set(report.scores)
    table = report.table()
    assert table.splitlines()[0].split() == ["policy", "easy", "medium", "hard"]
    assert "margin" in table.splitlines()[-1]


# -- knob bounds -------------------------------------------------------------------------


class WideGuessConfig(BaseModel):
    high: int = Field(100, ge=2, le=10**9)


def _knob_bounds(spec: TaskSpec) -> tuple[bool, str]:
    report = check_task(spec, seeds=2, adversarial_seeds=0)
    (result,) = [r for r in report.results if r.name == "knob_bounds"]
    return result.passed, result.detail


def test_knob_bounds_pass_an_honest_task_and_name_the_extremes() -> None:
    assert knob_extremes(WideGuessConfig) == {"high": [2, 10**9]}
    passed, detail = _knob_bounds(GUESS)
    assert passed and detail.startswith("3 drawn"), detail


def test_knob_bounds_flag_a_budget_the_knob_outgrows(monkeypatch: pytest.MonkeyPatch) -> None:
    # bisecting 1..10^9 takes 30 probes: 16 turns hold the presets (at most 14), not that
    spec = _variant(
        monkeypatch,
        name="guess_wide",
        config_model=WideGuessConfig,
        interaction=Interaction(Budgets(max_turns=16)),
    )
    passed, detail = _knob_bounds(spec)
    assert not passed and "high=1000000000" in detail and "max_turns" in detail, detail
    assert "budgets_for" in detail


def test_knob_bounds_flag_a_generator_that_crashes(monkeypatch: pytest.MonkeyPatch) -> None:
    class Fragile(GuessGenerator):
        def generate(self, config: GuessConfig, seed: int) -> Problem:
            if config.high > 10**6:
                raise RuntimeError("overflow")  # not a TaskConfigError: unexplained
            return super().generate(config, seed)

    spec = _variant(
        monkeypatch, name="guess_fragile", config_model=WideGuessConfig, generator=Fragile()
    )
    passed, detail = _knob_bounds(spec)
    assert not passed and "RuntimeError: overflow" in detail, detail

    class Clear(GuessGenerator):
        def generate(self, config: GuessConfig, seed: int) -> Problem:
            if config.high > 10**6:
                raise UnsatisfiableKnobsError("guess_clear: no room that large; lower high")
            return super().generate(config, seed)

    spec = _variant(
        monkeypatch, name="guess_clear", config_model=WideGuessConfig, generator=Clear()
    )
    passed, detail = _knob_bounds(spec)
    assert passed and "3 drawn, 3 refused" in detail, detail


def test_paying_for_any_answer_fails_with_a_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    def generous(instance: Instance, world: World, trajectory: Trajectory) -> Reward:
        honest = guess_reward(instance, world, trajectory)
        if world.final_answer is None:
            return honest
        # half the reward for answering at all: the classic format-credit hack
        return honest.model_copy(update={"total": max(honest.total, 0.5)})

    spec = _variant(monkeypatch, name="guess_generous", reward=generous)
    report = adversarial_check(spec, seeds=10)
    failed = {f.split(":")[0] + ":" + f.split(":")[1] for f in report.failures}
    assert {"lazy:defaults", "lazy:minimum", "lazy:constant"} <= failed
    assert not any(f.startswith(("nothing", "expert")) for f in report.failures)
    assert any("gate the reward on solving" in f for f in report.failures)


def test_a_constant_answer_that_wins_too_often_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = _variant(
        monkeypatch,
        name="guess_narrow",
        difficulties={"easy": {"high": 3}, "medium": {"high": 100}, "hard": {"high": 1000}},
    )
    report = adversarial_check(spec, seeds=10)
    assert any(f.startswith("lazy:constant") and "on easy" in f for f in report.failures)
    assert report.scores["lazy:constant"]["easy"].success > 0.05


def test_lazy_play_earning_more_on_hard_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    def drifting(instance: Instance, world: World, trajectory: Trajectory) -> Reward:
        honest = guess_reward(instance, world, trajectory)
        bonus = 0.18 * instance.public["high"] / 10000  # lazy answers earn more when harder
        total = min(1.0, honest.total + bonus) if world.final_answer is not None else 0.0
        return honest.model_copy(update={"total": total})

    spec = _variant(monkeypatch, name="guess_drifting", reward=drifting)
    report = adversarial_check(spec, seeds=10)
    assert any(f.startswith("lazy share:") and "on hard" in f for f in report.failures), (
        report.failures
    )


def test_an_expert_that_solves_less_on_hard_is_not_an_exploit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The expert's lead over lazy play shrinks on hard by more than the tolerance, while
    lazy play still earns nothing: no rule fails, since the expert clears its threshold."""

    def weaker(instance: Instance, world: World, trajectory: Trajectory) -> Reward:
        honest = guess_reward(instance, world, trajectory)
        if instance.difficulty != "hard":
            return honest
        return honest.model_copy(update={"total": 0.96 * honest.total})

    spec = _variant(monkeypatch, name="guess_weaker", reward=weaker)
    report = adversarial_check(spec, seeds=10)
    assert report.margin("hard") < report.margin("easy") - 0.05
    assert report.failures == [], report.failures


def test_a_vision_task_needs_a_blind_policy(monkeypatch: pytest.MonkeyPatch) -> None:
    spec = _variant(monkeypatch, name="guess_vision", modality="vision")
    report = adversarial_check(spec, seeds=3)
    assert any("without a blind_policy" in f for f in report.failures)
    seeing = _variant(
        monkeypatch, name="guess_vision2", modality="vision", blind_policy=GuessExpert
    )
    report = adversarial_check(seeing, seeds=3)
    # the expert needs no image here, so played blind it still wins: the check says so
    assert any(f.startswith("blind:") and "without its image" in f for f in report.failures)
