"""The wire format of the environment server: pydantic request and response bodies.

Everything is JSON. Messages are the project's :class:`~agentharness.core.messages.Message`
(the OpenAI chat wire format; images travel inline as ``data:image/png;base64`` URLs), rewards
are :class:`~agentharness.core.reward.Reward` and budgets are
:class:`~agentharness.core.task.Budgets`, so a trainer on another host reads the same shapes
it would get in process. Requests forbid unknown fields, so a typo (``seeds`` for ``seed``)
is a 422 that names the field instead of a silently ignored option.

Every error response is an :class:`ErrorBody`: ``detail`` says what was wrong and how to fix
it, ``error`` is a stable code a client can branch on.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from agentharness.core.episode import ToolCallRecord, Usage
from agentharness.core.instance import Instance
from agentharness.core.messages import Message
from agentharness.core.task import Budgets

ErrorCode = Literal[
    "bad_request",  # the request body does not validate
    "bad_config",  # unknown difficulty, unknown knob or bad knob value (TaskConfigError)
    "unknown_task",
    "capacity",  # too many open episodes: close some or retry after Retry-After
    "episode_not_found",  # unknown, closed or expired episode
    "episode_done",  # the episode has ended; it takes no more turns
    "episode_busy",  # another step on the same episode is in flight
    "not_done",  # the reward was asked for before the episode ended
    "unauthorized",  # 401: the server requires a token and the request has none or another
    "too_large",  # 413: the request body is over the server's limit
    "over_limit",  # 422: budgets above the server's caps
    "internal",  # a bug in the server or a task; the detail names it
]


class _Request(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class _Response(BaseModel):
    model_config = ConfigDict(frozen=True)


class ErrorBody(_Response):
    """The body of every non-2xx response."""

    detail: str = Field(description="What was wrong and how to fix it.")
    error: ErrorCode


# -- requests -------------------------------------------------------------------------
class CreateEpisode(_Request):
    """Open an episode on a generated instance (``task`` + ``seed``) or a stored one."""

    task: str | None = Field(
        None, description="'name' (latest version) or 'name-vN'; optional with `instance`."
    )
    seed: int | None = Field(
        None, description="Instance seed; the server draws one (and returns it) when omitted."
    )
    difficulty: str | None = Field(None, description="Preset name; 'medium' when omitted.")
    knobs: dict[str, Any] = Field(
        default_factory=dict,
        validation_alias=AliasChoices("knobs", "config"),
        description="Config fields overriding the difficulty preset (also accepted as `config`).",
    )
    instance: Instance | None = Field(
        None, description="Replay this stored instance instead of generating one."
    )
    budgets: Budgets | None = Field(None, description="Episode limits; the task's by default.")


class StepRequest(_Request):
    """One assistant turn.

    ``turn`` is whatever the model wrote: a Message, an OpenAI message dict (extra keys such
    as ``refusal`` are dropped) or plain text. A turn that is not a valid message is still
    fed to the episode, which answers with format feedback: bad model output is the agent's
    problem to learn from, never an HTTP error.
    """

    turn: Message | str | dict[str, Any]
    usage: Usage | None = Field(
        None, description="Token usage of the turn, so a `max_tokens` budget can end the episode."
    )


# -- responses ------------------------------------------------------------------------
class Health(_Response):
    ok: bool
    version: str
    sessions: int = Field(description="Episodes currently open.")
    capacity: int = Field(description="The most episodes the server holds at once.")
    ttl_s: float = Field(description="Idle seconds after which an episode expires.")
    expired: int = Field(description="Episodes dropped for idleness since the server started.")


class TaskInfo(_Response):
    id: str
    name: str
    version: int
    modality: Literal["text", "vision"]
    difficulties: list[str]
    knobs: list[str] = Field(description="Config fields a request may override.")
    description: str


class TaskList(_Response):
    tasks: list[TaskInfo]


class CreatedEpisode(_Response):
    episode_id: str
    task: str = Field(description="Versioned task id.")
    instance_id: str
    seed: int
    difficulty: str
    messages: list[Message] = Field(description="The prompt.")
    tools: list[dict[str, Any]] = Field(description="OpenAI function-tool schemas.")
    budgets: Budgets
    expires_in_s: float


class StepResult(_Response):
    assistant: Message = Field(
        description="The turn as the episode recorded it (coerced to an assistant message)."
    )
    messages: list[Message] = Field(
        description="Messages the environment added after it (tool results, feedback)."
    )
    done: bool
    end_reason: str | None
    step_reward: float
    format_error: bool
    turns: int
    expires_in_s: float


class EpisodeState(_Response):
    episode_id: str
    task: str
    instance_id: str
    seed: int
    difficulty: str
    messages: list[Message] = Field(description="The whole conversation so far.")
    tools: list[dict[str, Any]]
    done: bool
    end_reason: str | None
    turns: int
    tool_calls: list[ToolCallRecord]
    step_rewards: list[float]
    expires_in_s: float


class ClosedEpisode(_Response):
    episode_id: str
    done: bool
    end_reason: str | None
    turns: int
