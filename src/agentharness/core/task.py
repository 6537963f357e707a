"""The four-layer task contract.

A task is the composition of four small layers plus an expert:

1. **Prompt generation** — :class:`Generator`: ``generate(config, seed)`` builds the
   public and hidden data of one problem deterministically from the seed, and
   ``prompt(instance)`` renders the opening messages.
2. **Tool execution** — a :class:`~agentharness.core.tools.World` subclass: the
   per-episode state and its tools.
3. **Interaction control** — :class:`Interaction`: budgets and what the agent is
   told when it stops without calling a tool. Parsing and budget enforcement are done
   for every task by :class:`~agentharness.core.episode.Episode`.
4. **Reward computation** — :class:`RewardFunction`: re-verifies the answer in the
   world and returns a :class:`~agentharness.core.reward.Reward` breakdown.

:class:`TaskSpec` binds them under a versioned id. A released version never changes
behaviour in place: a change that alters instances or rewards is a new version.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Literal, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agentharness.core.instance import Instance
from agentharness.core.messages import Message
from agentharness.core.reward import Reward
from agentharness.core.tools import World

if TYPE_CHECKING:
    from agentharness.core.episode import Trajectory


# A task's own World subclass: the layers that read the world receive exactly it.
W = TypeVar("W", bound=World)
W_contra = TypeVar("W_contra", bound=World, contravariant=True)


class TaskConfigError(ValueError):
    """A difficulty or knob that the task does not accept."""


class UnsatisfiableKnobsError(TaskConfigError):
    """Knobs each accepted alone under which the generator drew no valid instance for a seed
    in its bounded number of attempts; the message names the knobs to loosen."""


@dataclass(frozen=True)
class Problem:
    """What a generator returns: the data shown to the agent and the hidden truth."""

    public: dict[str, Any]
    hidden: dict[str, Any]


class Generator(Protocol):
    """Layer 1. Must be deterministic: same config and seed, same problem and prompt.

    Seed a local ``random.Random(seed)`` or ``numpy.random.default_rng(seed)``; never
    touch global random state. Build each problem around a hidden feasible solution,
    verify it, and store it in ``hidden``.
    """

    def generate(self, config: Any, seed: int) -> Problem: ...

    def prompt(self, instance: Instance) -> list[Message]: ...


class Budgets(BaseModel):
    """Episode limits; when one runs out the episode ends with that reason."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_turns: int = Field(30, ge=1, description="assistant turns")
    max_tool_calls: int = Field(60, ge=1)
    max_tokens: int | None = Field(
        None, ge=1, description="completion tokens, when the agent reports usage"
    )
    wall_clock_s: float | None = Field(None, gt=0)
    max_nudges: int = Field(2, ge=0, description="feedback replies to a turn without a tool call")
    max_format_errors: int = Field(3, ge=0, description="malformed turns tolerated before ending")

    def override(self, **changes: Any) -> Budgets:
        """These budgets with some fields replaced (validated); the others are kept."""
        return Budgets.model_validate({**self.model_dump(), **changes})


class Interaction(Generic[W_contra]):
    """Layer 3: what the agent is told when a turn calls no tool.

    The default nudges the agent towards the final tool; tasks override
    :meth:`on_no_tool_call` with domain feedback. Returning ``None`` ends the episode
    (``no_answer``).
    """

    def __init__(self, budgets: Budgets | None = None) -> None:
        self.budgets = budgets or Budgets()

    def budgets_for(self, instance: Instance) -> Budgets:
        """The budgets of an episode on ``instance``: :attr:`budgets`, unless the task scales
        them with the instance (a knob that adds work must add the turns to do it)."""
        return self.budgets

    def on_no_tool_call(
        self, instance: Instance, world: W_contra, message: Message, nudges: int
    ) -> str | None:
        finals = [s.name for s in type(world).tool_specs().values() if s.final]
        how = f"call `{finals[0]}` with your answer" if finals else "call one of the tools"
        return (
            "You did not call a tool, so nothing happened. Continue working with the tools; "
            f"when you are done, {how}."
        )


class RewardFunction(Protocol[W_contra]):
    """Layer 4. Re-verify in the world (re-simulate the answer); never trust claims."""

    def __call__(self, instance: Instance, world: W_contra, trajectory: Trajectory) -> Reward: ...


class ExpertPolicy(Protocol):
    """A per-episode privileged solver that acts only through the task's tools."""

    def next_turn(self, messages: list[Message]) -> Message: ...


@dataclass(frozen=True)
class TaskSpec(Generic[W]):
    """A registered task: the four layers, presets, expert and metadata.

    Generic in the task's World subclass ``W``: the interaction and the reward receive
    that world, typed, so no task downcasts it.
    """

    name: str
    version: int
    modality: Literal["text", "vision"]
    description: str
    config_model: type[BaseModel]
    difficulties: Mapping[str, Mapping[str, Any]]
    generator: Generator
    world: type[W]
    interaction: Interaction[W]
    reward: RewardFunction[W]
    # None when no privileged solver exists (an adapted environment without a model of
    # its dynamics): the expert-based checks are skipped and say so; `--agent expert` fails.
    expert: Callable[[Instance], ExpertPolicy] | None
    solved_threshold: float = 0.9
    tags: tuple[str, ...] = field(default=())
    # Tasks from a source (``gym:FrozenLake-v1``, ``rg:leg_counting``) are addressed by
    # that string rather than ``name-vN``; ``version`` is then the adapter's version.
    address: str | None = None
    # Vision tasks: the expert's text-only fallback, the strongest policy that does not
    # read the image. The adversarial check runs it with ``instance.hidden`` emptied and
    # every image blanked; it must earn next to nothing, or the image is not needed.
    blind_policy: Callable[[Instance], ExpertPolicy] | None = None
    # The expert acts only on what the conversation shows (the imitability check holds it
    # to that). False marks an expert that still acts on privileged values: the check
    # reports them, and its trajectories teach a model to invent numbers.
    imitable: bool = True

    @property
    def id(self) -> str:
        return self.address or f"{self.name}-v{self.version}"

    def require_expert(self) -> Callable[[Instance], ExpertPolicy]:
        """The expert, or a clear error for a task that has none."""
        if self.expert is None:
            raise ValueError(
                f"{self.id} has no expert policy; use another agent (random, openai, local)"
            )
        return self.expert

    def make_config(self, difficulty: str = "medium", **knobs: Any) -> BaseModel:
        """The preset for ``difficulty`` with ``knobs`` overriding single fields."""
        if difficulty not in self.difficulties:
            raise TaskConfigError(
                f"{self.id} has no difficulty '{difficulty}'; choose one of {', '.join(self.difficulties)}."
            )
        unknown = set(knobs) - set(self.config_model.model_fields)
        if unknown:
            raise TaskConfigError(
                f"{self.id} has no knob(s) {', '.join(sorted(unknown))}; "
                f"its knobs are {', '.join(self.config_model.model_fields)}."
            )
        try:
            return self.config_model.model_validate({**self.difficulties[difficulty], **knobs})
        except ValidationError as e:
            # A rule over several knobs (a model validator) has no location; its message
            # names the knobs itself.
            problems = "; ".join(
                f"{'.'.join(map(str, err['loc']))}={err.get('input')!r}: {err['msg']}"
                if err["loc"]
                else err["msg"].removeprefix("Value error, ")
                for err in e.errors()
            )
            raise TaskConfigError(f"bad knob value for {self.id}: {problems}") from None

    def instance(self, seed: int, difficulty: str = "medium", **knobs: Any) -> Instance:
        config = self.make_config(difficulty, **knobs)
        return self.instance_from_config(config, seed, difficulty)

    def instance_from_config(self, config: BaseModel, seed: int, difficulty: str) -> Instance:
        seed = _as_seed(seed)
        if seed < 0:
            raise TaskConfigError(f"seed {seed} is negative; seeds are integers >= 0")
        problem = self.generator.generate(config, seed)
        for part, data in (("public", problem.public), ("hidden", problem.hidden)):
            bad = non_finite_paths(data)
            if bad:
                # JSON has no inf or nan: the stored instance would read back different.
                raise ValueError(
                    f"{self.id} seed {seed} ({difficulty}): {part} data holds non-finite "
                    f"numbers at {', '.join(bad[:3])}; store None (or a finite bound) instead"
                )
        return Instance(
            task=self.id,
            seed=seed,
            difficulty=difficulty,
            config=config.model_dump(mode="json"),
            public=problem.public,
            hidden=problem.hidden,
        )

    def config_of(self, instance: Instance) -> BaseModel:
        return self.config_model.model_validate(instance.config)


def non_finite_paths(data: Any, path: str = "") -> list[str]:
    """Where ``data`` (JSON-like) holds inf or nan, as dotted paths."""
    if isinstance(data, float):
        return [] if math.isfinite(data) else [path or "<root>"]
    if isinstance(data, dict):
        return [p for k, v in data.items() for p in non_finite_paths(v, f"{path}.{k}".lstrip("."))]
    if isinstance(data, list | tuple):
        return [p for i, v in enumerate(data) for p in non_finite_paths(v, f"{path}[{i}]")]
    return []


def _as_seed(seed: Any) -> int:
    """``seed`` as a plain int (numpy integers too); 1.5, "1" or True are errors, not
    seeds that would name a different instance than they look like."""
    if isinstance(seed, bool):
        raise TaskConfigError(f"seed {seed!r} is a bool; seeds are integers >= 0")
    try:
        return operator.index(seed)
    except TypeError:
        raise TaskConfigError(
            f"seed {seed!r} is a {type(seed).__name__}; seeds are integers >= 0"
        ) from None
