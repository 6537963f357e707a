"""``gym:<env id>`` — Gymnasium environments as tasks, without hand-written layers.

* **Instance** (layer 1): ``env.reset(seed)`` on the env made from the config; for
  FrozenLake the map itself is generated from the seed too (the env's own
  ``generate_random_map``), so every seed is a different problem.
* **Tools** (layer 2): one ``step(action)`` tool whose JSON schema is the action space
  (Discrete -> a bounded integer, MultiDiscrete/MultiBinary/Box -> a fixed-length array
  with per-dimension bounds). An action outside the space is an error message, never a
  step. Observations come back as text (a domain description for the known toy-text
  envs, else the ANSI render and the raw observation); ``gym:ID@vision`` returns the
  ``rgb_array`` frame instead of the state description.
* **Interaction** (layer 3): the env's termination ends the episode as ``completed``,
  its time limit (``max_steps``) as ``truncated``.
* **Reward** (layer 4): the recorded actions are replayed on a fresh env with the same
  seed. Reward pays for *solving* (reaching the goal; for envs without a profile,
  a return at or above the env's documented ``reward_threshold``): an unsolved episode
  earns 0, a solved one 0.8 plus 0.2 x the return normalised by the env's documented
  bounds. So a lazy, constant or random policy earns next to nothing.
* **Expert**: value iteration on the env's transition model ``P`` where it has one
  (FrozenLake, Taxi, CliffWalking); otherwise none, and ``bootcamp check`` skips the
  expert checks and says so.

Blackjack-v1 converts but cannot pass the check: an episode's outcome is mostly the
deal, so standing on every hand wins about 38% of games against an optimal 43%.
CliffWalking-v1 passes, but its map is fixed: seeds differ only with ``is_slippery``, so
one memorised path solves every instance (the generic lazy policies do not find it).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from agentharness.core.episode import Trajectory
from agentharness.core.instance import Instance
from agentharness.core.messages import Message, ToolCall, assistant, png_bytes, system, user
from agentharness.core.registry import UnknownTaskError
from agentharness.core.reward import Reward, RewardComponent
from agentharness.core.task import Budgets, Interaction, Problem, TaskSpec
from agentharness.core.tools import SchemaWorld, ToolError, ToolResult, World

ADAPTER_VERSION = 1
VISION_SUFFIX = "@vision"
SUCCESS_WEIGHT, RETURN_WEIGHT = 0.8, 0.2


def _gym() -> Any:
    import os

    os.environ.setdefault("SDL_VIDEODRIVER", "dummy")  # rgb_array frames need no display
    import gymnasium

    return gymnasium


# -- configs and per-env profiles ---------------------------------------------------------


class GymConfig(BaseModel):
    """Knobs every adapted env has: its time limit."""

    model_config = ConfigDict(extra="forbid")

    max_steps: int = Field(100, ge=1, le=2000, description="env steps before truncation")


class FrozenLakeConfig(GymConfig):
    map_size: int = Field(4, ge=3, le=12, description="the map is map_size x map_size")
    frozen: float = Field(0.8, ge=0.5, le=1.0, description="probability a tile is frozen")
    is_slippery: bool = Field(
        False, description="slippery ice moves sideways 2/3 of the time; caps success below 1"
    )


class TaxiConfig(GymConfig):
    is_rainy: bool = Field(False, description="moves go sideways 20% of the time")


class CliffConfig(GymConfig):
    is_slippery: bool = False


@dataclass(frozen=True)
class Profile:
    """What Gymnasium's docs say about one env: how to read it and what solving means."""

    about: str
    goal: str  # what solving means, for the prompt
    config_model: type[GymConfig]
    difficulties: dict[str, dict[str, Any]]
    return_bounds: tuple[float, float]
    solved: Callable[[float, bool], bool]  # (return, terminated) -> solved
    describe: Callable[[Any, Any], str] | None = None  # (unwrapped env, obs) -> state text
    make_kwargs: Callable[[Any, int], dict[str, Any]] = lambda config, seed: {}
    action_names: tuple[str, ...] = ()
    # Whether the state text gives the frame away (then a vision task shows only the frame).
    hides_in_vision: bool = True


def _frozen_lake_kwargs(config: Any, seed: int) -> dict[str, Any]:
    from gymnasium.envs.toy_text.frozen_lake import generate_random_map

    desc = generate_random_map(size=config.map_size, p=config.frozen, seed=seed)
    return {"desc": desc, "is_slippery": config.is_slippery}


def _describe_frozen_lake(env: Any, obs: Any) -> str:
    ncol = env.ncol
    row, col = int(obs) // ncol, int(obs) % ncol
    grid = [[c.decode() for c in line] for line in env.desc]
    grid[row][col] = "*"
    lines = "\n".join("".join(r) for r in grid)
    return f"You (*) are at row {row}, column {col}.\n{lines}"


_TAXI_STOPS = ("R", "G", "Y", "B")


def _describe_taxi(env: Any, obs: Any) -> str:
    taxi_row, taxi_col, passenger, dest = env.decode(int(obs))
    where = "in the taxi" if passenger == 4 else f"waiting at {_TAXI_STOPS[passenger]}"
    ansi = re.sub(r"\x1b\[[0-9;]*m", "", env.render() or "") if env.render_mode == "ansi" else ""
    return (
        f"Taxi at row {taxi_row}, column {taxi_col}; passenger {where}; destination "
        f"{_TAXI_STOPS[dest]}. Stops: R (0,0), G (0,4), Y (4,0), B (4,3).\n{ansi.strip()}"
    )


def _describe_cliff(env: Any, obs: Any) -> str:
    row, col = int(obs) // 12, int(obs) % 12
    return (
        f"You are at row {row}, column {col} of the 4x12 grid. Start (3,0), goal (3,11); "
        "the cliff is row 3, columns 1-10 (stepping on it costs -100 and sends you back)."
    )


def _describe_blackjack(env: Any, obs: Any) -> str:
    player, dealer, ace = obs
    return f"Your sum is {player}; the dealer shows {dealer}; usable ace: {'yes' if ace else 'no'}."


PROFILES: dict[str, Profile] = {
    "FrozenLake-v1": Profile(
        about=(
            "Cross a frozen lake from the start S to the goal G without falling into a hole H. "
            "F tiles are frozen (safe)."
        ),
        goal="Solving it means reaching G.",
        config_model=FrozenLakeConfig,
        # Measured on 150 maps: a random walk reaches the goal of a 5x5 map ~5% of the
        # time, and a blind down/right zigzag ~12% of 6x6 maps at the env's default 80%
        # frozen tiles, 1% of 8x8 maps at 70%. So: large maps with more holes.
        difficulties={
            "easy": {"map_size": 8, "frozen": 0.7, "max_steps": 100},
            "medium": {"map_size": 10, "frozen": 0.7, "max_steps": 120},
            "hard": {"map_size": 12, "frozen": 0.65, "max_steps": 150},
        },
        return_bounds=(0.0, 1.0),
        solved=lambda ret, terminated: ret >= 1.0,
        describe=_describe_frozen_lake,
        make_kwargs=_frozen_lake_kwargs,
        action_names=("left", "down", "right", "up"),
    ),
    "Taxi-v4": Profile(
        about=(
            "Drive the taxi to the passenger, pick them up, drive to the destination and drop "
            "them off. -1 per step, +20 for the drop-off, -10 for an illegal pickup or drop-off."
        ),
        goal="Solving it means dropping the passenger off at the destination.",
        config_model=TaxiConfig,
        # A shortest delivery takes at most about 20 steps; with gym's own 200 a random
        # driver delivers in ~5% of episodes, so the budgets are tighter.
        difficulties={
            "easy": {"max_steps": 60},
            "medium": {"max_steps": 40},
            "hard": {"max_steps": 25},
        },
        # The best return is 20 minus the steps; -200 is 200 steps without a delivery.
        return_bounds=(-200.0, 20.0),
        solved=lambda ret, terminated: terminated,
        describe=_describe_taxi,
        make_kwargs=lambda config, seed: {"is_rainy": config.is_rainy},
        action_names=("south", "north", "east", "west", "pickup", "dropoff"),
    ),
    "CliffWalking-v1": Profile(
        about=(
            "Walk from the start to the goal along a cliff. -1 per step; stepping onto the cliff "
            "costs -100 and sends you back to the start."
        ),
        goal="Solving it means reaching the goal.",
        config_model=CliffConfig,
        difficulties={
            "easy": {"max_steps": 100},
            "medium": {"max_steps": 50},
            "hard": {"max_steps": 25},
        },
        return_bounds=(-100.0, -13.0),  # -13 is the shortest safe path
        solved=lambda ret, terminated: terminated,
        describe=_describe_cliff,
        make_kwargs=lambda config, seed: {"is_slippery": config.is_slippery},
        action_names=("up", "right", "down", "left"),
    ),
    "Blackjack-v1": Profile(
        about="Beat the dealer: get closer to 21 than the dealer without going over.",
        goal="Solving it means winning the hand.",
        config_model=GymConfig,
        difficulties={"medium": {"max_steps": 20}},
        return_bounds=(-1.0, 1.0),
        solved=lambda ret, terminated: ret > 0,
        describe=_describe_blackjack,
        action_names=("stick", "hit"),
    ),
}
PROFILES["FrozenLake8x8-v1"] = PROFILES["FrozenLake-v1"]


# -- action spaces as JSON schemas ----------------------------------------------------------


def action_schema(space: Any, names: tuple[str, ...] = ()) -> dict[str, Any]:
    """The JSON schema of one action in ``space`` (raises UnknownTaskError if unsupported)."""
    spaces = _gym().spaces
    if isinstance(space, spaces.Discrete):
        first = int(space.start)
        last = first + int(space.n) - 1
        desc = f"an integer from {first} to {last}"
        if names and len(names) == space.n:
            desc += ": " + ", ".join(f"{first + i} = {n}" for i, n in enumerate(names))
        return {"type": "integer", "minimum": first, "maximum": last, "description": desc}
    if isinstance(space, spaces.MultiBinary | spaces.MultiDiscrete | spaces.Box):
        if len(space.shape) != 1:
            raise UnknownTaskError(
                f"action space {space} has shape {space.shape}; only 1-D arrays convert"
            )
        los: list[float]
        his: list[float]
        if isinstance(space, spaces.MultiBinary):
            los, his, kind = [0.0] * space.shape[0], [1.0] * space.shape[0], "integer"
        elif isinstance(space, spaces.MultiDiscrete):
            starts = np.asarray(getattr(space, "start", np.zeros_like(space.nvec)))
            los = [float(x) for x in starts]
            his = [float(s + n - 1) for s, n in zip(starts, space.nvec, strict=True)]
            kind = "integer"
        else:
            los, his, kind = list(map(float, space.low)), list(map(float, space.high)), "number"
        items = []
        for lo, hi in zip(los, his, strict=True):
            item: dict[str, Any] = {"type": kind}
            if np.isfinite(lo):
                item["minimum"] = int(lo) if kind == "integer" else lo
            if np.isfinite(hi):
                item["maximum"] = int(hi) if kind == "integer" else hi
            items.append(item)
        n = space.shape[0]
        schema: dict[str, Any] = {
            "type": "array",
            "minItems": n,
            "maxItems": n,
            "description": f"{n} {kind}s, one per dimension, each within its bounds",
        }
        if all(i == items[0] for i in items):
            schema["items"] = items[0]
        else:
            schema["prefixItems"] = items
            schema["items"] = False
        return schema
    raise UnknownTaskError(
        f"action space {type(space).__name__} does not convert to a tool; supported: Discrete, "
        "MultiDiscrete, MultiBinary and 1-D Box"
    )


def _to_action(space: Any, value: Any) -> Any:
    spaces = _gym().spaces
    if isinstance(space, spaces.Discrete):
        return np.int64(value)
    return np.asarray(value, dtype=space.dtype)


def _jsonable_obs(obs: Any) -> Any:
    if isinstance(obs, tuple | list):
        return [_jsonable_obs(o) for o in obs]
    if isinstance(obs, dict):
        return {k: _jsonable_obs(v) for k, v in obs.items()}
    if hasattr(obs, "tolist"):
        return obs.tolist()
    return obs


# -- the adapter ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Env:
    """Everything needed to build the task for one env id (shared by its layers)."""

    env_id: str
    address: str
    vision: bool
    profile: Profile | None
    threshold: float | None
    render_modes: tuple[str, ...]
    action: dict[str, Any]  # the action's JSON schema

    def make(self, instance: Instance, render: bool = True) -> Any:
        """The env of ``instance`` (its config and generated kwargs), not yet reset."""
        config = self.config_model.model_validate(instance.config)
        return self.make_from(config, instance.hidden.get("env_kwargs", {}), render)

    def make_from(self, config: GymConfig, kwargs: dict[str, Any], render: bool = True) -> Any:
        mode = self.render_mode if render else None
        return _gym().make(
            self.env_id, render_mode=mode, max_episode_steps=config.max_steps, **kwargs
        )

    @property
    def config_model(self) -> type[GymConfig]:
        return self.profile.config_model if self.profile else GymConfig

    @property
    def render_mode(self) -> str | None:
        if self.vision:
            return "rgb_array"
        return "ansi" if "ansi" in self.render_modes else None

    def describe(self, env: Any, obs: Any) -> str:
        """The observation as text: the state description unless vision shows it."""
        raw = f"observation: {_jsonable_obs(obs)}"
        if self.vision and (self.profile is None or self.profile.hides_in_vision):
            return raw
        if self.profile is not None and self.profile.describe is not None:
            return f"{self.profile.describe(env.unwrapped, obs)}\n{raw}"
        if env.render_mode == "ansi":
            frame = re.sub(r"\x1b\[[0-9;]*m", "", env.render() or "").rstrip()
            return f"{frame}\n{raw}"
        return raw

    def frame(self, env: Any) -> tuple[bytes, ...]:
        if not self.vision:
            return ()
        from PIL import Image

        return (png_bytes(Image.fromarray(np.asarray(env.render(), dtype=np.uint8))),)

    def solved(self, ret: float, terminated: bool) -> bool:
        if self.profile is not None:
            return self.profile.solved(ret, terminated)
        assert self.threshold is not None
        return ret >= self.threshold

    def normalised(self, ret: float) -> float:
        lo, hi = self.profile.return_bounds if self.profile else (0.0, self.threshold or 1.0)
        return float(min(1.0, max(0.0, (ret - lo) / (hi - lo)))) if hi > lo else 0.0


class _Generator:
    def __init__(self, env: _Env) -> None:
        self.env = env

    def generate(self, config: Any, seed: int) -> Problem:
        e = self.env
        kwargs = e.profile.make_kwargs(config, seed) if e.profile else {}
        env = e.make_from(config, kwargs)
        try:
            obs, _ = env.reset(seed=seed)
            text = e.describe(env, obs)
        finally:
            env.close()
        return Problem(
            public={"env_id": e.env_id, "observation": _jsonable_obs(obs), "text": text},
            hidden={"env_kwargs": kwargs},
        )

    def prompt(self, instance: Instance) -> list[Message]:
        e = self.env
        schema = e.action
        about = e.profile.about if e.profile else f"Act in the Gymnasium environment {e.env_id}."
        lo, hi = e.profile.return_bounds if e.profile else (0.0, e.threshold)
        goal = (
            e.profile.goal
            if e.profile
            else f"Solving it means an episode return of at least {e.threshold:g}."
        )
        text = (
            f"{about}\n\nAct with the `step` tool; action = {schema['description']}. Each call "
            f"advances the environment one step and returns the new observation, the reward and "
            f"whether the episode ended. You have {instance.config['max_steps']} steps. {goal} "
            f"Returns range from {lo:g} to {hi:g}; an unsolved episode scores 0.\n\n"
            f"Current state:\n{instance.public['text']}"
        )
        images: list[bytes] = []
        if e.vision:
            env = e.make(instance)
            try:
                env.reset(seed=instance.seed)
                images = list(e.frame(env))
            finally:
                env.close()
            text += "\n(The image shows the current state.)"
        return [
            system(f"You are an agent acting in the {e.env_id} environment."),
            user(text, images),
        ]


class GymWorld(SchemaWorld):
    """One live env per episode; ``step`` is the only tool. Built per env by :func:`load`."""

    adapted: _Env

    def __init__(self, instance: Instance) -> None:
        super().__init__(instance)
        self.env = self.adapted.make(instance)
        self.env.reset(seed=instance.seed)
        self.total_return = 0.0
        self.steps = 0

    def call_schema_tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        space = self.env.action_space
        action = _to_action(space, arguments["action"])
        if not space.contains(action):
            raise ToolError(
                f"action {arguments['action']} is outside the action space {space}; "
                "send one inside its bounds"
            )
        obs, reward, terminated, truncated, _ = self.env.step(action)
        self.steps += 1
        self.total_return += float(reward)
        text = (
            f"{self.adapted.describe(self.env, obs)}\nreward: {float(reward):g} "
            f"(return so far {self.total_return:g}, step {self.steps})"
        )
        reason = "completed" if terminated else ("truncated" if truncated else None)
        if reason is not None:
            text += f"\nThe episode ended ({'terminated' if terminated else 'time limit'})."
        return ToolResult(
            text=text,
            images=self.adapted.frame(self.env),
            step_reward=float(reward),
            done=reason is not None,
            end_reason=reason,
        )

    def close(self) -> None:
        self.env.close()


def replay(adapted: _Env, instance: Instance, trajectory: Trajectory) -> tuple[float, bool, int]:
    """Re-run the accepted actions on a fresh env: (return, terminated, steps)."""
    env = adapted.make(instance, render=False)
    try:
        env.reset(seed=instance.seed)
        ret, terminated, steps = 0.0, False, 0
        for call in trajectory.tool_calls:
            if call.name != "step" or call.is_error:
                continue
            _, r, term, trunc, _ = env.step(_to_action(env.action_space, call.arguments["action"]))
            ret, steps = ret + float(r), steps + 1
            if term or trunc:
                terminated = bool(term)
                break
        return ret, terminated, steps
    finally:
        env.close()


class _Reward:
    def __init__(self, env: _Env) -> None:
        self.env = env

    def __call__(self, instance: Instance, world: World, trajectory: Trajectory) -> Reward:
        ret, terminated, steps = replay(self.env, instance, trajectory)
        solved = self.env.solved(ret, terminated)
        norm = self.env.normalised(ret)
        return Reward.from_components(
            [
                RewardComponent(name="solved", value=float(solved), weight=SUCCESS_WEIGHT),
                RewardComponent(name="return", value=norm, weight=RETURN_WEIGHT),
            ],
            success=solved,
            gate=1.0 if solved else 0.0,
            explanation=(
                f"return {ret:g} over {steps} steps ({'solved' if solved else 'not solved'}; "
                "an unsolved episode earns 0)"
            ),
        )


class TabularExpert:
    """Value iteration on the env's transition model ``P``; acts through ``step``."""

    def __init__(self, adapted: _Env, instance: Instance) -> None:
        env = adapted.make(instance, render=False)
        model = env.unwrapped.P
        n_s, n_a = len(model), len(model[0])
        value = np.zeros(n_s)
        q = np.zeros((n_s, n_a))
        for _ in range(2000):
            for s in range(n_s):
                for a in range(n_a):
                    q[s, a] = sum(
                        p * (r + (0.0 if done else 0.99 * value[s2]))
                        for p, s2, r, done in model[s][a]
                    )
            new = q.max(axis=1)
            if np.max(np.abs(new - value)) < 1e-9:
                break
            value = new
        env.close()
        self.policy = q.argmax(axis=1)
        self.state = int(instance.public["observation"])
        self.n = 0

    def next_turn(self, messages: list[Message]) -> Message:
        for m in reversed(messages):
            if m.role == "tool":
                found = re.search(r"^observation: (\d+)$", m.text, re.M)
                if found:
                    self.state = int(found.group(1))
                    break
        self.n += 1
        action = int(self.policy[self.state])
        return assistant(tool_calls=[ToolCall.make(f"vi_{self.n}", "step", {"action": action})])


class _PassiveBlind:
    """The vision blind policy: no map, so it walks the same fixed pattern every time."""

    def __init__(self, instance: Instance) -> None:
        self.n = 0

    def next_turn(self, messages: list[Message]) -> Message:
        self.n += 1
        return assistant(
            tool_calls=[ToolCall.make(f"blind_{self.n}", "step", {"action": 1 + self.n % 2})]
        )


def load(rest: str) -> TaskSpec:
    """The task for ``gym:<env id>[@vision]``."""
    address = f"gym:{rest}"
    vision = rest.endswith(VISION_SUFFIX)
    env_id = rest[: -len(VISION_SUFFIX)] if vision else rest
    gym = _gym()
    try:
        spec = gym.spec(env_id)
    except Exception as e:  # gymnasium raises several error types for a bad id
        raise UnknownTaskError(
            f"unknown Gymnasium env '{env_id}' ({type(e).__name__}: {str(e).splitlines()[0]}); "
            "list them with: python -c 'import gymnasium; gymnasium.pprint_registry()'"
        ) from e
    profile = PROFILES.get(env_id)
    threshold = spec.reward_threshold
    if profile is None and threshold is None:
        raise UnknownTaskError(
            f"gym:{env_id} documents no reward_threshold, so solving it has no definition here; "
            f"envs with a profile: {', '.join(sorted(PROFILES))}"
        )
    probe = gym.make(env_id)
    try:
        # Fails here, with the reason, when the action space does not convert.
        schema = action_schema(probe.action_space, profile.action_names if profile else ())
        modes = tuple(probe.metadata.get("render_modes", []))
        has_model = hasattr(probe.unwrapped, "P")
    finally:
        probe.close()
    if vision and "rgb_array" not in modes:
        raise UnknownTaskError(f"gym:{env_id} renders no rgb_array frames; drop '@vision'")
    default_steps = spec.max_episode_steps or 100
    adapted = _Env(env_id, address, vision, profile, threshold, modes, schema)
    world = type(
        "GymWorld_" + re.sub(r"\W", "_", env_id),
        (GymWorld,),
        {
            "adapted": adapted,
            "schema_tools": (
                {
                    "type": "function",
                    "function": {
                        "name": "step",
                        "description": f"Take one action in {env_id}.",
                        "parameters": {
                            "type": "object",
                            "properties": {"action": schema},
                            "required": ["action"],
                            "additionalProperties": False,
                        },
                    },
                },
            ),
        },
    )
    difficulties = profile.difficulties if profile else {"medium": {"max_steps": default_steps}}
    max_steps = max(int(d.get("max_steps", default_steps)) for d in difficulties.values())
    slug = re.sub(r"[^a-z0-9_]", "_", f"gym_{env_id}{'_vision' if vision else ''}".lower())
    return TaskSpec(
        name=slug,
        version=ADAPTER_VERSION,
        modality="vision" if vision else "text",
        description=f"Gymnasium {env_id}"
        + (" (rgb frames)" if vision else "")
        + (f": {profile.about}" if profile else ""),
        config_model=profile.config_model if profile else GymConfig,
        difficulties=difficulties,
        generator=_Generator(adapted),
        world=world,
        interaction=Interaction(Budgets(max_turns=max_steps + 10, max_tool_calls=max_steps + 10)),
        reward=_Reward(adapted),
        expert=functools.partial(TabularExpert, adapted) if has_model else None,
        tags=("gym", "vision" if vision else "text"),
        address=address,
        blind_policy=_PassiveBlind if vision else None,
    )
