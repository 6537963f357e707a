"""verl adapters: our episodes behind verl's tool and interaction interfaces, and its reward hook.

verl (cluster-scale RL on Ray) plays multi-turn rollouts itself and calls out to

* **tools** — ``BaseTool`` (``verl/tools/base_tool.py``): ``create`` / ``execute`` /
  ``calc_reward`` / ``release``, all async;
* **interactions** — ``BaseInteraction`` (``verl/interactions/base.py``, verl <= 0.7):
  ``start_interaction`` / ``generate_response`` / ``calculate_score`` /
  ``finalize_interaction``;
* **a reward function** — ``compute_score(data_source, solution_str, ground_truth,
  extra_info)`` for its reward manager (``custom_reward_function.path`` /
  ``.name=compute_score``).

The YAML configs (written by ``bootcamp export rl``, see :mod:`agentharness.export.verl`)
point at :class:`AgentHarnessTool` and :class:`AgentHarnessInteraction`.

**One episode per trajectory.** Every tool of a task shares one
:class:`~agentharness.core.episode.Episode` per verl trajectory, kept in a bounded
in-process store. verl has called tools in two ways, both supported:

* the SGLang rollout (verl <= 0.5): ``create(request_id, **create_kwargs)`` once per tool,
  then ``execute(request_id, arguments)`` per call, ``calc_reward`` and ``release`` at the
  end — the trajectory is the ``instance_id``;
* the agent loop (verl >= 0.5, the only one from 0.8): ``create(create_kwargs=...)``,
  ``execute(instance_id, arguments, agent_data=...)`` and ``release`` around *every* call
  with a fresh ``instance_id`` — the trajectory is ``agent_data.request_id``, which is also
  the ``instance_id`` the interaction is started with.

``create_kwargs`` carries ``{"instance": <Instance JSON>, "max_turns": ...}`` (``null`` for
a tool of another task in the same dataset); ``max_turns``, when set, is the turn budget the
episode plays under (``bootcamp export rl --task-turns``), and the interaction and
:func:`compute_score`'s replay read it from ``interaction_kwargs``. When a call ends the
episode, the tool writes the final reward to ``agent_data.extra_fields["agentharness_reward"]``;
verl's reward manager merges those fields into ``extra_info``, and :func:`compute_score` uses
it. Without it (a trajectory
that stopped before the final tool, or another rollout path), :func:`compute_score`
re-executes the episode from the instance and the tool calls in ``solution_str``.

**What is optimized.** :func:`compute_score` scores ``Reward.total`` by default; with
``reward_signal: success`` in verl's ``custom_reward_function.reward_kwargs`` it scores 1
for a solved episode and 0 otherwise, as ``bootcamp train grpo --reward-signal success``
does (partial credit then cannot rank failures).

Interaction-only training (no verl tools; the model writes ``<tool_call>`` text and the
interaction runs the tools, as InternBootcamp's verl interactions do) works too:
:meth:`AgentHarnessInteraction.generate_response` steps the episode with the assistant's
text and answers with the tool results as ``<tool_response>`` text.

verl is never imported at module import time. The two classes are built on first access:
subclasses of verl's real ``BaseTool`` / ``BaseInteraction`` when verl is installed, plain
classes with the same methods otherwise (verl 0.8+ has no ``BaseInteraction``; verl loads
classes by name and calls these methods, so either works).
"""

from __future__ import annotations

import asyncio
import importlib
import json
import re
import threading
from collections import OrderedDict
from typing import Any
from uuid import uuid4

from agentharness.agents.textformat import as_plain_text
from agentharness.core.episode import FORMAT_HINT, Episode
from agentharness.core.instance import Instance
from agentharness.core.messages import ImagePart, Message, ToolCall
from agentharness.core.registry import episode_for, positive_turns
from agentharness.train import TrainInputError, signal_score

INTERACTION_NAME = "agentharness"
REWARD_FIELD = "agentharness_reward"
SUCCESS_FIELD = "agentharness_success"
MAX_SESSIONS = 20_000  # open episodes per process; the least recently used are dropped


# -- the episode store ---------------------------------------------------------------
class _Sessions:
    """Episodes by trajectory id, least recently used dropped beyond ``limit``."""

    def __init__(self, limit: int = MAX_SESSIONS) -> None:
        self.limit = limit
        self._data: OrderedDict[str, Episode] = OrderedDict()
        self._final: OrderedDict[str, float] = OrderedDict()  # rewards of closed episodes
        self._lock = threading.Lock()

    def get(self, key: str) -> Episode | None:
        with self._lock:
            ep = self._data.get(key)
            if ep is not None:
                self._data.move_to_end(key)
            return ep

    def open(
        self, key: str, instance: Instance | str | dict[str, Any], max_turns: Any = None
    ) -> Episode:
        """The episode of ``key``, created on ``instance`` (under ``max_turns``, the row's turn
        budget; ``None``: the task's) if there is none yet."""
        with self._lock:
            ep = self._data.get(key)
            if ep is None:
                ep = _episode(instance, max_turns)
                self._data[key] = ep
                while len(self._data) > self.limit:
                    self._data.popitem(last=False)
            self._data.move_to_end(key)
            return ep

    def close(self, key: str) -> Episode | None:
        """Drop the episode of ``key``, remembering its reward for late ``calc_reward`` calls."""
        with self._lock:
            ep = self._data.pop(key, None)
            if ep is not None:
                self._final[key] = float(ep.reward().total)
                while len(self._final) > self.limit:
                    self._final.popitem(last=False)
            return ep

    def reward(self, key: str) -> float:
        """``Reward.total`` of the episode of ``key``, open or recently closed (else 0)."""
        ep = self.get(key)
        if ep is not None:
            return float(ep.reward().total)
        with self._lock:
            return self._final.get(key, 0.0)

    def __len__(self) -> int:
        return len(self._data)


SESSIONS = _Sessions()


def _episode(raw: Instance | str | dict[str, Any], max_turns: Any) -> Episode:
    """An episode on the row's instance under the row's turn budget (``None``: the task's)."""
    instance = parse_instance(raw)
    if max_turns is not None:
        try:
            positive_turns(max_turns)
        except ValueError as e:
            raise TrainInputError(
                f"the row's max_turns: {e}; write the data with `bootcamp export rl --format verl`"
            ) from e
    return episode_for(instance, max_turns=max_turns)


def parse_instance(raw: Instance | str | dict[str, Any]) -> Instance:
    """An :class:`Instance` from itself, its JSON text or its dict."""
    if isinstance(raw, Instance):
        return raw
    if isinstance(raw, str):
        return Instance.model_validate_json(raw)
    return Instance.model_validate(raw)


def _trajectory_key(instance_id: str, kwargs: dict[str, Any]) -> str:
    agent_data = kwargs.get("agent_data")
    request_id = getattr(agent_data, "request_id", None)
    return str(request_id) if request_id is not None else instance_id


def _observation_text(messages: list[Message]) -> str:
    """What the environment said, as the text-format model reads it (interaction path)."""
    return "\n".join(as_plain_text(m).text for m in messages)


def _tool_text(messages: list[Message]) -> str:
    """What a native tool call returns to verl: the bare result text.

    verl sends it as a ``tool`` message and the chat template wraps it in
    ``<tool_response>``; wrapping it here too would show the model the tags twice.
    """
    return "\n".join(m.text for m in messages if m.text)


def _pil_images(messages: list[Message]) -> list[Any]:
    images: list[Any] = []
    for m in messages:
        for part in m.images:
            png = part.png_bytes() if isinstance(part, ImagePart) else None
            if png is not None:
                import io

                from PIL import Image

                images.append(Image.open(io.BytesIO(png)).convert("RGB"))
    return images


def _create_kwargs(kwargs: dict[str, Any]) -> dict[str, Any]:
    nested = kwargs.get("create_kwargs")
    return dict(nested) if isinstance(nested, dict) else dict(kwargs)


# -- tool ------------------------------------------------------------------------------
class _ToolImpl:
    """The behaviour of :class:`AgentHarnessTool` (mixed into verl's ``BaseTool`` when present)."""

    def __init__(self, config: dict[str, Any], tool_schema: Any) -> None:
        self.config = dict(config or {})
        if tool_schema is None:
            raise TrainInputError(
                "AgentHarnessTool needs a tool_schema (written by `bootcamp export rl`)"
            )
        self.tool_schema = tool_schema
        function = (
            tool_schema.get("function", {})
            if isinstance(tool_schema, dict)
            else tool_schema.function
        )
        self.name = function["name"] if isinstance(function, dict) else function.name
        # call id -> (the row's instance, its turn budget), until the episode opens
        self._pending: dict[str, tuple[str | dict[str, Any], Any]] = {}

    def get_openai_tool_schema(self) -> Any:
        return self.tool_schema

    async def create(self, instance_id: str | None = None, **kwargs: Any) -> tuple[str, Any]:
        """Register a call (agent loop) or open the trajectory's episode (SGLang rollout).

        ``create_kwargs`` (nested or spread) carry ``instance`` and ``max_turns`` (the row's
        turn budget); a ``None`` instance means the tool is not part of this row's task, and
        calling it yields an error message.
        """
        iid = instance_id or str(uuid4())
        create = _create_kwargs(kwargs)
        instance, max_turns = create.get("instance"), create.get("max_turns")
        if instance is not None:
            self._pending[iid] = (instance, max_turns)
            if instance_id is not None:  # SGLang path: instance_id is the trajectory
                SESSIONS.open(iid, instance, max_turns)
        return iid, tool_response()

    async def execute(
        self, instance_id: str, parameters: dict[str, Any] | str, **kwargs: Any
    ) -> tuple[Any, float, dict[str, Any]]:
        """Run this tool in the trajectory's episode; returns (response, step reward, metrics)."""
        key = _trajectory_key(instance_id, kwargs)
        episode = SESSIONS.get(key)
        if episode is None:
            pending = self._pending.get(instance_id)
            if pending is None:
                return (
                    tool_response(f"Error: tool {self.name} is not available in this task."),
                    0.0,
                    {},
                )
            episode = SESSIONS.open(key, *pending)
        if episode.done:
            return (
                tool_response(f"The episode has ended ({episode.end_reason}); no more actions."),
                0.0,
                {"done": True},
            )
        args = parameters if isinstance(parameters, dict) else _loads_object(parameters)
        call = ToolCall.make(f"call_{episode.turns + 1}", self.name, args)
        obs = await episode.astep(Message(role="assistant", content="", tool_calls=[call]))
        metrics: dict[str, Any] = {"done": obs.done, "turns": episode.turns}
        if obs.done:
            reward = episode.reward()
            metrics.update(reward=reward.total, success=reward.success, end_reason=obs.end_reason)
            extra = getattr(kwargs.get("agent_data"), "extra_fields", None)
            if isinstance(extra, dict):
                extra[REWARD_FIELD] = float(reward.total)
                extra[SUCCESS_FIELD] = bool(reward.success)
        images = _pil_images(obs.messages)
        return tool_response(_tool_text(obs.messages), images), obs.step_reward, metrics

    async def calc_reward(self, instance_id: str, **kwargs: Any) -> float:
        """The episode's reward so far (``Reward.total``; 0 when there is no episode)."""
        return SESSIONS.reward(_trajectory_key(instance_id, kwargs))

    async def release(self, instance_id: str, **kwargs: Any) -> None:
        """Forget the call; in the SGLang path (instance id = trajectory) close the episode."""
        self._pending.pop(instance_id, None)
        SESSIONS.close(instance_id)


# -- interaction -----------------------------------------------------------------------
class _InteractionImpl:
    """The behaviour of :class:`AgentHarnessInteraction` (on verl's ``BaseInteraction`` when present)."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.config = dict(config or {})
        self.name: str = self.config.get("name", INTERACTION_NAME)

    async def start_interaction(self, instance_id: str | None = None, **kwargs: Any) -> str:
        """Open the episode of ``instance_id`` (verl passes the trajectory's request id)."""
        key = instance_id or str(uuid4())
        instance = kwargs.get("instance")
        if instance is None:
            raise TrainInputError(
                "interaction_kwargs need 'instance' (the Instance JSON); write the data with "
                "`bootcamp export rl --format verl`"
            )
        SESSIONS.open(key, instance, kwargs.get("max_turns"))
        return key

    async def generate_response(
        self, instance_id: str, messages: list[dict[str, Any]], **kwargs: Any
    ) -> tuple[bool, str, float, dict[str, Any]]:
        """Step the episode with the last assistant message; reply with what the environment says.

        Returns ``(should_terminate, response text, turn score, extra data)``: the turn
        score is the step reward, or the final ``Reward.total`` once the episode is over.
        """
        episode = SESSIONS.get(instance_id)
        if episode is None:
            return True, "This episode is not open (expired or never started).", 0.0, {}
        if episode.done:
            return True, "", float(episode.reward().total), {"end_reason": episode.end_reason}
        text = next(
            (
                _content_text(m.get("content"))
                for m in reversed(messages)
                if m.get("role") == "assistant"
            ),
            "",
        )
        obs = await episode.astep(text)
        data: dict[str, Any] = {"turns": episode.turns, "end_reason": obs.end_reason}
        if obs.done:
            reward = episode.reward()
            data.update(reward=reward.total, success=reward.success)
            return True, _observation_text(obs.messages), float(reward.total), data
        return False, _observation_text(obs.messages), float(obs.step_reward), data

    async def calculate_score(self, instance_id: str | None = None, **kwargs: Any) -> float:
        """The episode's ``Reward.total`` (0 when there is no such episode)."""
        return SESSIONS.reward(instance_id) if instance_id is not None else 0.0

    async def finalize_interaction(self, instance_id: str | None = None, **kwargs: Any) -> None:
        """Close the episode."""
        if instance_id is not None:
            SESSIONS.close(instance_id)


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def _loads_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return {"_raw": text}
    return value if isinstance(value, dict) else {"_raw": value}


# -- reward ----------------------------------------------------------------------------
_TOOL_RESPONSE = re.compile(r"<tool_response>.*?(?:</tool_response>|$)", re.DOTALL)
_TOOL_CALL = re.compile(r"<tool_call>.*?(?:</tool_call>|$)", re.DOTALL)


def compute_score(
    data_source: str,
    solution_str: str,
    ground_truth: str | dict[str, Any] | None,
    extra_info: dict[str, Any] | None = None,
    reward_signal: str = "total",
    **kwargs: Any,
) -> dict[str, Any]:
    """verl reward function: the task's reward for one rollout, under ``reward_signal``.

    ``reward_signal`` (verl's ``custom_reward_function.reward_kwargs``) is ``total``
    (``Reward.total``) or ``success`` (1 solved, 0 not). Uses the reward the tools recorded
    when the episode ended (``extra_info["agentharness_reward"]`` and ``..._success``);
    otherwise re-executes the episode: the instance comes from ``ground_truth`` (the
    Instance JSON the exporter stores there) or ``extra_info["interaction_kwargs"]["instance"]``,
    the turn budget from ``extra_info["interaction_kwargs"]["max_turns"]``, and each
    ``<tool_call>`` the model wrote in ``solution_str`` (tool responses and format hints
    removed) is replayed as one turn. Returns ``{"score", "total", "success",
    "replayed", "end_reason"}`` (verl logs the extras).
    """
    signal_score(0.0, False, reward_signal)  # a misspelt signal fails before any scoring
    info = extra_info or {}
    live, solved = info.get(REWARD_FIELD), info.get(SUCCESS_FIELD)
    if isinstance(live, int | float) and isinstance(solved, bool):
        return {
            "score": signal_score(live, solved, reward_signal),
            "total": float(live),
            "success": solved,
            "replayed": False,
            "end_reason": "recorded",
        }
    row = info.get("interaction_kwargs") or {}
    raw = ground_truth or row.get("instance")
    if raw is None:
        raise TrainInputError(
            f"{data_source}: no instance in ground_truth or extra_info to score against"
        )
    episode = replay(raw, solution_str, row.get("max_turns"))
    reward = episode.reward()
    return {
        "score": signal_score(reward.total, reward.success, reward_signal),
        "total": float(reward.total),
        "success": bool(reward.success),
        "replayed": True,
        "end_reason": episode.end_reason,
    }


def replay(
    instance: Instance | str | dict[str, Any], solution_str: str, max_turns: Any = None
) -> Episode:
    """A finished episode on ``instance`` (under ``max_turns``; ``None``: the task's budget)
    with the tool calls written in ``solution_str``."""
    text = _TOOL_RESPONSE.sub("", solution_str.replace(FORMAT_HINT, ""))
    calls = _TOOL_CALL.findall(text)
    episode = _episode(instance, max_turns)
    for call in calls:
        if episode.done:
            break
        episode.step(call)
    if not episode.done:
        episode.finish("max_turns" if calls else "no_answer")
    return episode


# -- config helpers (the exporter writes the files) -----------------------------------
def tool_config_yaml(tasks: list[str]) -> dict[str, Any]:
    """verl's tool config (as a dict) for ``tasks``: one :class:`AgentHarnessTool` per tool."""
    from agentharness.core.registry import get_task
    from agentharness.export.verl import collect_tools, tool_config

    specs = [get_task(t) for t in tasks]
    return tool_config(collect_tools((s.id, s.world.tool_schemas()) for s in specs))


def interaction_config_yaml() -> dict[str, Any]:
    """verl's interaction config (as a dict): :class:`AgentHarnessInteraction` named ``agentharness``."""
    from agentharness.export.verl import interaction_config

    return interaction_config()


# -- lazy classes on verl's bases ------------------------------------------------------
def _verl_base(module: str, name: str) -> type | None:
    try:
        return getattr(importlib.import_module(module), name)
    except Exception:  # verl missing, or present without this module (BaseInteraction >= 0.8)
        return None


def tool_response(text: str | None = None, images: list[Any] | None = None) -> Any:
    """verl's ``ToolResponse`` when verl is installed, else an equivalent pydantic model."""
    cls = _verl_base("verl.tools.schemas", "ToolResponse") or _FallbackToolResponse
    return cls(text=text, image=images or None) if images else cls(text=text)


def _fallback_response_class() -> type:
    from pydantic import BaseModel

    class ToolResponse(BaseModel):
        """The fields of verl's ``ToolResponse`` (used when verl is not installed)."""

        text: str | None = None
        image: list[Any] | None = None
        video: list[Any] | None = None

    return ToolResponse


_FallbackToolResponse = _fallback_response_class()
_built: dict[str, type] = {}
_build_lock = threading.Lock()


def _build(name: str) -> type:
    with _build_lock:
        if name in _built:
            return _built[name]
        if name == "AgentHarnessTool":
            base = _verl_base("verl.tools.base_tool", "BaseTool")
            impl: type = _ToolImpl
            doc = "A tool of an agentharness task for verl (one episode per trajectory)."
        else:
            base = _verl_base("verl.interactions.base", "BaseInteraction")
            impl = _InteractionImpl
            doc = "An agentharness episode as a verl interaction (the environment replies)."
        bases = (impl, base) if base is not None else (impl,)
        cls = type(name, bases, {"__doc__": doc, "__module__": __name__})
        _built[name] = cls
        return cls


def __getattr__(name: str) -> Any:
    if name in ("AgentHarnessTool", "AgentHarnessInteraction"):
        return _build(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def run_sync(coro: Any) -> Any:
    """Run a coroutine to completion (for scripts and tests driving the async interface)."""
    return asyncio.run(coro)
