"""The conformance check every task must pass (``bootcamp check``).

* determinism: the same seed gives an identical instance and prompt;
* the expert reaches the task's solved threshold on every difficulty;
* random and do-nothing policies score clearly lower than the expert;
* instances, trajectories and rewards round-trip through the log format;
* bad tool arguments and malformed turns give messages, not exceptions;
* imitable: every number the expert acts on was visible before it acted
  (:mod:`agentharness.imitability`), unless the task declares ``imitable=False``;
* knob bounds: every knob at each of its extreme accepted values, on every difficulty,
  gives an instance or a :class:`~agentharness.core.task.TaskConfigError` that names the
  task, and the expert never runs out of the budgets the task gives that instance;
* adversarial: no lazy policy earns reward (see :func:`adversarial_check`).

A task without an expert (an adapted environment with no model of its dynamics) skips
the expert checks; the report lists them as skipped, with the reason.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import statistics
import tempfile
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import annotated_types
from pydantic import BaseModel

from agentharness.agents.base import Agent
from agentharness.agents.lazy import (
    MAX_PASSIVE_VARIANTS,
    Answer,
    BlindAgent,
    ConstantAgent,
    EchoAgent,
    PassiveAgent,
    SubmitAgent,
    echo_answers,
    final_tool,
    passive_actions,
)
from agentharness.agents.scripted import ExpertAgent, NothingAgent, RandomAgent
from agentharness.core.instance import Instance
from agentharness.core.registry import episode_for
from agentharness.core.task import TaskConfigError, TaskSpec
from agentharness.rollout.runner import run_one
from agentharness.store.run import RunDir
from agentharness.store.schema import EpisodeRecord

MALFORMED_TURNS = (
    "",
    "<tool_call>{not json at all</tool_call>",
    '<tool_call>{"arguments": {}}</tool_call>',
    '<tool_call>{"name": "no_such_tool", "arguments": {}}</tool_call>',
    "```json\n[1, 2, 3]\n```",
    "<function=><parameter=x>1</parameter></function>",
    "\x00\x01 \ud7ff garbage {{{{ ]]]",
)

BAD_ARGUMENTS: tuple[dict[str, object] | str, ...] = (
    {"__unknown_argument__": 1},
    {},
    "not json",
    "[1, 2]",
)

# How an episode ends when it runs out of a budget (not of ideas).
BUDGET_ENDS = ("max_turns", "max_tool_calls", "max_tokens", "timeout")

ADVERSARIAL_SEEDS = 30
LAZY_MEAN_LIMIT = 0.2
LAZY_SUCCESS_LIMIT = 0.05
# The best lazy policy's share of the expert's score may wobble by this much between
# difficulties (30 seeds are a sample).
SHARE_TOLERANCE = 0.05
# The constant answer is fitted here, on seeds the check never evaluates.
FIT_SEEDS = range(1_000_000, 1_000_005)


@dataclass
class CheckResult:
    name: str
    passed: bool
    detail: str = ""
    skipped: bool = False


@dataclass
class CheckReport:
    task: str
    results: list[CheckResult] = field(default_factory=list)
    scores: dict[str, dict[str, float]] = field(default_factory=dict)
    adversarial: AdversarialReport | None = None

    @property
    def passed(self) -> bool:
        return all(r.passed for r in self.results)


def _mean_reward(agent: Agent, instances: list[Instance]) -> float:
    async def go() -> list[float]:
        out = []
        for inst in instances:
            ep, _ = await run_one(inst, agent.policy(inst))
            out.append(ep.reward().total)
        return out

    return statistics.fmean(asyncio.run(go()))


def _number(bound: object) -> float:
    """A numeric bound as a number (nan for any other kind, which is then left out)."""
    return bound if isinstance(bound, int | float) else math.nan


def knob_extremes(config_model: type[BaseModel]) -> dict[str, list[Any]]:
    """Each bounded knob's extreme accepted values: both for a flag, the bound itself for an
    inclusive one, just inside an exclusive one (1 for whole numbers, 1e-6 otherwise)."""
    extremes: dict[str, list[Any]] = {}
    for name, field_info in config_model.model_fields.items():
        if field_info.annotation is bool:
            extremes[name] = [True, False]
            continue
        inside = 1 if field_info.annotation is int else 1e-6
        values: list[float] = []
        for bound in field_info.metadata:
            if isinstance(bound, annotated_types.Ge):
                values.append(_number(bound.ge))
            elif isinstance(bound, annotated_types.Le):
                values.append(_number(bound.le))
            elif isinstance(bound, annotated_types.Gt):
                values.append(_number(bound.gt) + inside)
            elif isinstance(bound, annotated_types.Lt):
                values.append(_number(bound.lt) - inside)
        finite = [v for v in values if math.isfinite(v)]
        if finite:
            extremes[name] = finite
    return extremes


def check_task(
    spec: TaskSpec, seeds: int = 3, margin: float = 0.2, adversarial_seeds: int = ADVERSARIAL_SEEDS
) -> CheckReport:
    """Run every conformance check on ``spec``; never raises on a task's failure.

    ``adversarial_seeds=0`` skips the adversarial check (quick iteration only).
    """
    report = CheckReport(task=spec.id)

    def guarded(name: str, fn: Callable[[], str]) -> None:
        try:
            report.results.append(CheckResult(name, True, fn()))
        except AssertionError as e:
            report.results.append(CheckResult(name, False, str(e)))
        except Exception as e:
            tb = traceback.format_exc(limit=3)
            report.results.append(CheckResult(name, False, f"{type(e).__name__}: {e}\n{tb}"))

    instances: dict[str, list[Instance]] = {}

    def determinism() -> str:
        for difficulty in spec.difficulties:
            made = [spec.instance(seed, difficulty) for seed in range(seeds)]
            again = [spec.instance(seed, difficulty) for seed in range(seeds)]
            for a, b in zip(made, again, strict=True):
                assert a == b, f"{difficulty} seed {a.seed}: two generations differ"
                pa = [m.model_dump() for m in spec.generator.prompt(a)]
                pb = [m.model_dump() for m in spec.generator.prompt(b)]
                assert pa == pb, f"{difficulty} seed {a.seed}: prompts differ"
            if seeds > 1:
                assert len({m.model_dump_json() for m in made}) > 1, (
                    f"{difficulty}: all seeds gave the same instance"
                )
            instances[difficulty] = made
        return f"{len(spec.difficulties)} difficulties x {seeds} seeds"

    def expert_solves() -> str:
        parts = []
        for difficulty, insts in instances.items():
            score = _mean_reward(ExpertAgent(), insts)
            report.scores.setdefault(difficulty, {})["expert"] = score
            assert score >= spec.solved_threshold, (
                f"expert mean reward {score:.3f} < solved threshold {spec.solved_threshold} on {difficulty}"
            )
            parts.append(f"{difficulty}={score:.2f}")
        return "expert " + " ".join(parts)

    def baselines_lower() -> str:
        parts = []
        for difficulty, insts in instances.items():
            expert = report.scores.get(difficulty, {}).get("expert")
            if expert is None:
                expert = _mean_reward(ExpertAgent(), insts)
            for agent in (RandomAgent(), NothingAgent()):
                score = _mean_reward(agent, insts)
                report.scores.setdefault(difficulty, {})[agent.name] = score
                assert score <= expert - margin, (
                    f"{agent.name} scores {score:.3f} on {difficulty}, not clearly below the expert ({expert:.3f})"
                )
            parts.append(f"{difficulty}: random={report.scores[difficulty]['random']:.2f}")
        return "; ".join(parts)

    def round_trip() -> str:
        inst = next(iter(instances.values()))[0]
        assert Instance.model_validate_json(inst.model_dump_json()) == inst, (
            "instance JSON round trip differs"
        )
        agent: Agent = ExpertAgent() if spec.expert is not None else RandomAgent()
        ep, timings = asyncio.run(run_one(inst, agent.policy(inst)))
        record = EpisodeRecord.from_episode(ep, agent=agent.name, sample=0, timings=timings)
        with tempfile.TemporaryDirectory() as tmp:
            run = RunDir(tmp)
            run.create({"check": spec.id})
            run.append(record)
            (back,) = list(run.episodes(resolve_images=True))
        assert back == record, "episode record changed through the log"
        assert back.reward == ep.reward(), "reward changed through the log"
        replay = episode_for(back.instance)
        assert replay.reward().total <= 1.0
        return f"{len(record.messages)} messages, {len(record.tool_calls)} tool calls"

    def bad_input() -> str:
        inst = next(iter(instances.values()))[0]
        checked = 0
        for name in spec.world.tool_specs():
            ep = episode_for(inst)
            for args in BAD_ARGUMENTS:
                result = ep.world.execute(name, args)  # must not raise
                assert isinstance(result.text, str) and result.text
                checked += 1
        ep = episode_for(inst)
        for turn in MALFORMED_TURNS:
            if ep.done:
                ep = episode_for(inst)
            obs = ep.step(turn)  # must not raise
            assert obs.messages or obs.done, f"turn {turn!r} produced no feedback"
            checked += 1
        return f"{checked} bad inputs answered with messages"

    def adversarial() -> str:
        adv = adversarial_check(spec, seeds=adversarial_seeds)
        report.adversarial = adv
        assert not adv.failures, "\n".join(adv.failures)
        best = {d: adv.best_lazy(d) for d in adv.difficulties}
        return "best lazy policy: " + ", ".join(
            f"{d}={name} {adv.scores[name][d].mean:.2f}" for d, name in best.items()
        )

    def imitable() -> str:
        from agentharness.imitability import imitability_check

        found = imitability_check(spec, seeds=seeds)
        if spec.imitable:
            assert not found.flagged, (
                f"{found.summary()}; give the task a tool that computes such values and have "
                "the expert call it, or set imitable=False on its TaskSpec"
            )
            return found.summary()
        return f"declared not imitable: {found.summary()}"

    def knob_bounds() -> str:
        drawn = refused = 0
        for name, values in knob_extremes(spec.config_model).items():
            for value, difficulty in itertools.product(values, spec.difficulties):
                where = f"{difficulty}, {name}={value!r}"
                try:
                    instance = spec.instance(0, difficulty, **{name: value})
                except TaskConfigError as e:
                    assert spec.name in str(e), (
                        f"{where}: the error does not say which task refused: {e}"
                    )
                    refused += 1
                    continue
                drawn += 1
                if spec.expert is None:
                    continue
                ep, _ = asyncio.run(run_one(instance, ExpertAgent().policy(instance)))
                assert ep.end_reason not in BUDGET_ENDS, (
                    f"{where}: the expert ran out of budget ({ep.end_reason} at "
                    f"{ep.budgets}); let the task's Interaction.budgets_for grow with the knob, "
                    "or bound the knob"
                )
        return f"{drawn} drawn, {refused} refused with a message naming the task"

    guarded("determinism", determinism)
    if instances and spec.expert is None:
        for name in ("expert_solves", "baselines_lower", "imitable"):
            report.results.append(
                CheckResult(name, True, f"skipped: {spec.id} has no expert", skipped=True)
            )
    elif instances:
        guarded("expert_solves", expert_solves)
        guarded("baselines_lower", baselines_lower)
    if instances:
        guarded("round_trip", round_trip)
        guarded("bad_input", bad_input)
        if spec.expert is not None:
            guarded("imitable", imitable)
        guarded("knob_bounds", knob_bounds)
        if adversarial_seeds > 0:
            guarded("adversarial", adversarial)
    return report


# -- the adversarial check ---------------------------------------------------------------


_HINTS = {
    "lazy:constant": (
        "one fixed answer scores on unseen instances: make instances differ enough that no "
        "single answer solves them, and pay partial credit only relative to what such an "
        "answer earns on the same instance"
    ),
    "lazy:echo": (
        "the public data, submitted unchanged, scores: pay only for improvement over the "
        "given state"
    ),
    "lazy:submit": (
        "an answer read off the tool schema scores: gate the reward on solving, or normalise "
        "partial credit against what a lazy answer earns"
    ),
    "lazy:passive": (
        "repeating one cheap action scores: pay for progress toward the goal, not for "
        "legal moves or breaking even"
    ),
    "random": "random tool calls score: pay only for progress toward the goal",
    "nothing": "doing nothing scores: an episode without an answer must earn 0",
    "blind": (
        "the task is played well without its image: remove tool feedback that reveals what "
        "only the image should show"
    ),
}


@dataclass(frozen=True)
class Score:
    """A policy's results on one difficulty."""

    mean: float
    success: float
    n: int


@dataclass
class AdversarialReport:
    """Every policy's score per difficulty, and which rule each failure broke."""

    task: str
    difficulties: list[str]
    scores: dict[str, dict[str, Score]] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)

    @property
    def lazy_policies(self) -> list[str]:
        return [p for p in self.scores if p != "expert"]

    def best_lazy(self, difficulty: str) -> str:
        return max(self.lazy_policies, key=lambda p: self.scores[p][difficulty].mean)

    def margin(self, difficulty: str) -> float:
        return (
            self.scores["expert"][difficulty].mean
            - self.scores[self.best_lazy(difficulty)][difficulty].mean
        )

    def lazy_share(self, difficulty: str) -> float:
        """The best lazy policy's mean reward as a share of the expert's: how much of what
        solving earns a policy gets without trying (1.0 when the expert earns nothing)."""
        expert = self.scores["expert"][difficulty].mean
        lazy = self.scores[self.best_lazy(difficulty)][difficulty].mean
        return lazy / expert if expert > 0 else 1.0

    def table(self) -> str:
        """Policy x difficulty: mean reward and success rate."""
        width = max(len(p) for p in self.scores) if self.scores else 6
        head = f"{'policy':<{width}}  " + "  ".join(f"{d:>14}" for d in self.difficulties)
        rows = [head]
        for policy, by_d in self.scores.items():
            cells = [
                f"{by_d[d].mean:6.3f} {by_d[d].success:6.0%}" if d in by_d else f"{'-':>14}"
                for d in self.difficulties
            ]
            rows.append(f"{policy:<{width}}  " + "  ".join(cells))
        if "expert" in self.scores:  # a task without an expert has no margin
            rows.append(
                f"{'lazy share':<{width}}  "
                + "  ".join(f"{self.lazy_share(d):6.3f}{'':8}" for d in self.difficulties)
            )
            rows.append(
                f"{'margin':<{width}}  "
                + "  ".join(f"{self.margin(d):6.3f}{'':8}" for d in self.difficulties)
            )
        return "\n".join(rows)


def _play(agent: Agent, instances: list[Instance]) -> tuple[Score, list[Answer | None]]:
    """Mean reward and success rate over ``instances``, and each episode's final answer."""

    async def go() -> tuple[list[float], list[bool], list[Answer | None]]:
        totals, wins, answers = [], [], []
        for inst in instances:
            ep, _ = await run_one(inst, agent.policy(inst))
            reward = ep.reward()
            totals.append(reward.total)
            wins.append(reward.success)
            answers.append(ep.world.final_answer)
        return totals, wins, answers

    totals, wins, answers = asyncio.run(go())
    return Score(statistics.fmean(totals), statistics.fmean(wins), len(totals)), answers


def _hint(policy: str) -> str:
    for prefix in ("lazy:constant", "lazy:echo", "lazy:passive"):
        if policy.startswith(prefix):
            return _HINTS[prefix]
    if policy.startswith("lazy:"):
        return _HINTS["lazy:submit"]
    return _HINTS.get(policy, "")


def adversarial_check(spec: TaskSpec, seeds: int = ADVERSARIAL_SEEDS) -> AdversarialReport:
    """Hunt for reward hacks with generic lazy policies; every task must resist them.

    On ``seeds`` seeds per difficulty it plays the expert and: submit-at-once with the
    final tool's schema defaults, minima and maxima; the public data echoed as the answer;
    the best constant answer (the best of the expert's answers on other seeds, fitted on
    :data:`FIT_SEEDS`); passive play (one cheap action every turn); random; nothing; and,
    for a vision task, its ``blind_policy`` with no hidden data and blank images. Rules:
    every lazy policy stays at or below :data:`LAZY_MEAN_LIMIT` mean reward and
    :data:`LAZY_SUCCESS_LIMIT` success; the expert reaches the solved threshold; the best
    lazy policy's share of the expert's score does not grow from easy to hard.
    """
    difficulties = list(spec.difficulties)
    report = AdversarialReport(task=spec.id, difficulties=difficulties)
    evaluated = {d: [spec.instance(s, d) for s in range(seeds)] for d in difficulties}
    fitted = {d: [spec.instance(s, d) for s in FIT_SEEDS] for d in difficulties}
    probe = evaluated[difficulties[0]][0]

    def score(agent: Agent, name: str | None = None) -> None:
        for d in difficulties:
            result, _ = _play(agent, evaluated[d])
            report.scores.setdefault(name or agent.name, {})[d] = result

    has_expert = spec.expert is not None
    if has_expert:
        score(ExpertAgent())
    else:
        report.skipped.append(
            "the expert's threshold, the best constant answer and the lazy-share rule: "
            f"{spec.id} has no expert"
        )
    final = final_tool(probe)
    if final is None:
        report.skipped.append("submit, echo and constant answers: the task has no final tool")
    else:
        # The expert's answers on the fitting seeds: candidate constants, and the sizes of
        # lists the schema leaves open.
        expert_answers: dict[str, list[Answer | None]] = {
            d: _play(ExpertAgent(), fitted[d])[1] if has_expert else [] for d in difficulties
        }
        templates = {d: next((a for a in expert_answers[d] if a), {}) for d in difficulties}
        for mode in ("defaults", "minimum", "maximum"):
            score(SubmitAgent(mode, templates))
        for i in range(len(echo_answers(final, probe.public))):
            score(EchoAgent(i))
        constants: dict[str, Answer] = {}
        for d in difficulties:
            candidates = [a for a in expert_answers[d] if a]
            if not candidates:
                continue
            fits = [_play(ConstantAgent({d: c}), fitted[d])[0].mean for c in candidates]
            constants[d] = candidates[max(range(len(fits)), key=fits.__getitem__)]
        if constants:
            agent = ConstantAgent(constants)
            for d in difficulties:
                result = _play(agent, evaluated[d])[0] if d in constants else Score(0.0, 0.0, 0)
                report.scores.setdefault(agent.name, {})[d] = result
    for i in range(min(MAX_PASSIVE_VARIANTS, len(passive_actions(probe)))):
        score(PassiveAgent(i))
    score(RandomAgent())
    score(NothingAgent())
    if spec.blind_policy is not None:
        score(BlindAgent(spec.blind_policy))
    elif spec.modality == "vision":
        report.failures.append(
            f"{spec.id} is a vision task without a blind_policy: give its TaskSpec the "
            "strongest policy that does not read the image, to show the image is needed"
        )

    for d in difficulties:
        expert = report.scores["expert"][d].mean if has_expert else spec.solved_threshold
        if expert < spec.solved_threshold:
            report.failures.append(
                f"expert: mean reward {expert:.3f} < solved threshold {spec.solved_threshold} on "
                f"{d}; the expert must solve every difficulty"
            )
        for policy in report.lazy_policies:
            s = report.scores[policy][d]
            if s.mean > LAZY_MEAN_LIMIT or s.success > LAZY_SUCCESS_LIMIT:
                report.failures.append(
                    f"{policy}: {s.mean:.3f} mean reward, {s.success:.0%} success on {d} "
                    f"(at most {LAZY_MEAN_LIMIT} and {LAZY_SUCCESS_LIMIT:.0%}): {_hint(policy)}"
                )
    # Exploitability is relative: a harder preset where the expert solves less is fine (the
    # threshold rule above covers the expert), one where lazy play earns more of what
    # solving earns is not.
    for easier, harder in itertools.pairwise(difficulties if has_expert else []):
        s_easy, s_hard = report.lazy_share(easier), report.lazy_share(harder)
        if s_hard > s_easy + SHARE_TOLERANCE:
            report.failures.append(
                f"lazy share: the best lazy policy earns {s_hard:.0%} of the expert's score on "
                f"{harder} ({report.best_lazy(harder)}) against {s_easy:.0%} on {easier}: "
                "a harder preset must not be easier to exploit"
            )
    return report
