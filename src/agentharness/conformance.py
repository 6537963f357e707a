"""The conformance check every task must pass (``bootcamp check``).

* determinism: the same seed gives an identical instance and prompt;
* the expert reaches the task's solved threshold on every difficulty;
* random and do-nothing policies score clearly lower than the expert;
* instances, trajectories and rewards round-trip through the log format;
* bad tool arguments and malformed turns give messages, not exceptions.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field

from agentharness.agents.base import Agent
from agentharness.agents.scripted import ExpertAgent, NothingAgent, RandomAgent
from agentharness.core.instance import Instance
from agentharness.core.registry import episode_for
from agentharness.core.task import TaskSpec
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


@dataclass
class CheckResult:
    name: str
    passed: bool
    detail: str = ""


@dataclass
class CheckReport:
    task: str
    results: list[CheckResult] = field(default_factory=list)
    scores: dict[str, dict[str, float]] = field(default_factory=dict)

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


def check_task(spec: TaskSpec, seeds: int = 3, margin: float = 0.2) -> CheckReport:
    """Run every conformance check on ``spec``; never raises on a task's failure."""
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
        ep, timings = asyncio.run(run_one(inst, ExpertAgent().policy(inst)))
        record = EpisodeRecord.from_episode(ep, agent="expert", sample=0, timings=timings)
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

    guarded("determinism", determinism)
    if instances:
        guarded("expert_solves", expert_solves)
        guarded("baselines_lower", baselines_lower)
        guarded("round_trip", round_trip)
        guarded("bad_input", bad_input)
    return report
