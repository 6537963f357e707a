"""``rg:<dataset>`` — reasoning-gym's procedural datasets as single-answer tasks.

* **Instance**: item 0 of the dataset built with ``seed`` and ``size=1`` (reasoning-gym
  seeds each item from the dataset seed, so the same seed is the same question).
  Difficulty goes through the dataset's curriculum: ``easy``, ``medium`` and ``hard``
  are its global levels 1, 2 and 3 (level 0 is often guessable; presets beyond the
  curriculum's top level are dropped); a dataset without one has one preset, its
  default config. ``--knob level=N`` picks any level and
  ``--knob config='{"field": value}'`` overrides dataset config fields directly.
* **Tools**: one final tool, ``answer(answer)``.
* **Reward**: the dataset's own ``score_answer`` on an entry regenerated from the
  instance (never the stored copy); success is a full score. A scorer that raises
  scores 0 with the error as the explanation.
* **Expert**: submits the dataset's reference answer; datasets whose items have no
  reference answer (or whose scorer rejects it) have no expert. The expert shows no
  work, so the task is declared not imitable (its data suits answer distillation only).
"""

from __future__ import annotations

import difflib
import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agentharness.core.episode import Trajectory
from agentharness.core.instance import Instance
from agentharness.core.messages import Message, ToolCall, assistant, system, user
from agentharness.core.registry import UnknownTaskError
from agentharness.core.reward import Reward, RewardComponent
from agentharness.core.task import Budgets, Interaction, Problem, TaskSpec
from agentharness.core.tools import World, tool

ADAPTER_VERSION = 1
# Level 0 of many curricula is guessable (a handful of possible answers), so easy is 1.
LEVELS = {"easy": 1, "medium": 2, "hard": 3}


class RGConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    level: int | None = Field(
        None, ge=0, le=20, description="curriculum global level; None = the dataset's defaults"
    )
    config: dict[str, Any] = Field(
        default_factory=dict, description="dataset config fields to override"
    )


def _factory() -> Any:
    from reasoning_gym import factory

    return factory


def dataset_config(name: str, config: RGConfig, seed: int) -> Any:
    """The reasoning-gym config object for one item of ``name`` at ``config``."""
    factory = _factory()
    if config.level is not None and factory.has_curriculum(name):
        curriculum = factory.create_curriculum(name)
        curriculum.set_global_level(config.level)  # capped per attribute at its top level
        cfg = curriculum.generate_configuration({"seed": seed, "size": 1})
    else:
        cfg = factory.DATASETS[name][1](seed=seed, size=1)
    for key, value in config.config.items():
        if not hasattr(cfg, key):
            raise ValueError(f"rg:{name} has no config field '{key}'")
        setattr(cfg, key, tuple(value) if isinstance(value, list) else value)
    cfg.seed, cfg.size = seed, 1
    return cfg


def make_entry(name: str, config: RGConfig, seed: int) -> tuple[Any, dict[str, Any]]:
    """(dataset, its one entry): everything the scorer needs, rebuilt from the seed."""
    factory = _factory()
    cfg = dataset_config(name, config, seed)
    dataset = factory.DATASETS[name][0](config=cfg)
    return dataset, dataset[0]


class _Generator:
    def __init__(self, name: str) -> None:
        self.name = name

    def generate(self, config: RGConfig, seed: int) -> Problem:
        _, entry = make_entry(self.name, config, seed)
        answer = entry.get("answer")
        return Problem(
            public={"question": entry["question"]},
            hidden={"answer": None if answer is None else str(answer)},
        )

    def prompt(self, instance: Instance) -> list[Message]:
        return [
            system(
                "Solve the problem. When you are sure, call the `answer` tool once with your final "
                "answer only, in the format the problem asks for."
            ),
            user(instance.public["question"]),
        ]


class AnswerWorld(World):
    @tool(final=True)
    def answer(self, answer: str) -> str:
        """Submit your final answer; this ends the episode.

        Args:
            answer: the answer alone, in the format the problem asks for.
        """
        return "Answer recorded."


class _Reward:
    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, instance: Instance, world: World, trajectory: Trajectory) -> Reward:
        if world.final_answer is None:
            return Reward.zero("no answer submitted")
        answer = str(world.final_answer["answer"])
        config = RGConfig.model_validate(instance.config)
        try:
            dataset, entry = make_entry(self.name, config, instance.seed)
            score = float(dataset.score_answer(answer, entry))
        except Exception as e:  # the dataset's scorer is outside code: its bug scores 0
            return Reward.zero(f"rg:{self.name}'s scorer raised {type(e).__name__}: {e}")
        score = min(1.0, max(0.0, score))
        return Reward.from_components(
            [RewardComponent(name="score", value=score, weight=1.0)],
            success=score >= 1.0,
            explanation=f"reasoning-gym score_answer = {score:g}",
        )


class ReferenceExpert:
    """Submits the dataset's reference answer."""

    def __init__(self, instance: Instance) -> None:
        self.answer = instance.hidden["answer"]

    def next_turn(self, messages: list[Message]) -> Message:
        return assistant(
            tool_calls=[ToolCall.make("ref_1", "answer", {"answer": str(self.answer)})]
        )


def load(rest: str) -> TaskSpec:
    """The task for ``rg:<dataset name>``."""
    name = rest.strip()
    factory = _factory()
    if name not in factory.DATASETS:
        close = difflib.get_close_matches(name, list(factory.DATASETS), n=3)
        hint = f"; did you mean {', '.join('rg:' + c for c in close)}?" if close else ""
        raise UnknownTaskError(
            f"unknown reasoning-gym dataset '{name}'{hint} (list them with: python -c "
            "'from reasoning_gym.factory import DATASETS; print(sorted(DATASETS))')"
        )
    difficulties: dict[str, dict[str, Any]] = {}
    if factory.has_curriculum(name):
        attributes = factory.create_curriculum(name).attributes.values()
        top = max((len(a.levels) - 1 for a in attributes), default=0)
        difficulties = {d: {"level": level} for d, level in LEVELS.items() if level <= top}
    if not difficulties:  # no curriculum, or one too short: the dataset's own defaults
        difficulties = {"medium": {"level": None}}
    # The reference answer must score in full for the expert to exist.
    probe = RGConfig.model_validate(next(iter(difficulties.values())))
    dataset, entry = make_entry(name, probe, 0)
    has_reference = entry.get("answer") is not None
    if has_reference:
        try:
            has_reference = float(dataset.score_answer(str(entry["answer"]), entry)) >= 1.0
        except Exception:
            has_reference = False
    summary = json.dumps(entry["question"][:80])
    return TaskSpec(
        name="rg_" + name.lower(),
        version=ADAPTER_VERSION,
        modality="text",
        description=f"reasoning-gym {name}, e.g. {summary}",
        config_model=RGConfig,
        difficulties=difficulties,
        generator=_Generator(name),
        world=AnswerWorld,
        interaction=Interaction(Budgets(max_turns=4, max_tool_calls=4)),
        reward=_Reward(name),
        expert=ReferenceExpert if has_reference else None,
        # The expert submits the dataset's stored answer without showing how it was
        # reached, so its trajectories teach answers, not reasoning.
        imitable=False,
        solved_threshold=0.9,
        tags=("reasoning-gym", "text", "single-answer"),
        address=f"rg:{name}",
    )
