"""The episode state machine that composes the four layers.

Every consumer — the runner, trainers, the HTTP server — drives tasks through this::

    ep = agentharness.make("escape_room-v1", difficulty="easy").reset(seed=7)
    ep.messages, ep.tools          # prompt messages and OpenAI tool schemas
    obs = ep.step(assistant_turn)  # new messages, done flag, step reward
    ep.reward()                    # final Reward breakdown

``step`` never raises on model output: malformed calls, unknown tools and bad
arguments come back as messages the agent can read.
"""

from __future__ import annotations

import dataclasses
import time
import warnings
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agentharness.core.instance import Instance
from agentharness.core.messages import (
    ImagePart,
    Message,
    TextPart,
    ToolOutcome,
    coerce_message,
    tool_message,
    user,
)
from agentharness.core.parsing import MAX_ARGUMENT_CHARS, ParsedCall, parse_turn
from agentharness.core.reward import Reward
from agentharness.core.task import Budgets, TaskSpec
from agentharness.core.tools import ToolResult, World

END_REASONS = (
    "answered",  # the final tool was called successfully
    "completed",  # the world ended the episode (e.g. the session ran out of hands)
    "truncated",  # the world's own time limit ran out (an adapted env's step limit)
    "max_turns",
    "max_tool_calls",
    "max_tokens",
    "no_answer",  # stopped calling tools after the allowed nudges
    "format_error",  # too many malformed turns
    "timeout",  # wall clock ran out
    "agent_error",  # the agent failed (endpoint down, retries exhausted, crash)
    "env_error",  # the environment failed (an adapted server crashed); not the agent's fault
)

# What one turn may put into the log: a model's turn and a tool's reply are cut here
# (with a marker saying so), so one runaway generation cannot grow a log without bound.
MAX_TURN_CHARS = 32_000
MAX_TOOL_RESULT_CHARS = 32_000
MAX_IMAGES_PER_TURN = 8

# How the episode words its own messages; readers (the viewer) recognise them by these.
FORMAT_ERROR_PREFIX = "Format error:"
TOOL_IMAGES_SUFFIX = "image(s) returned by the tool call(s) above]"

# A call after the one that ended the episode in the same turn (a second answer, a move
# after the escape): it does not run, so the answer and world the reward reads are those
# the episode ended with.
NOT_RUN = ToolResult(
    text="Error: not run: the episode had already ended with an earlier call of this turn.",
    is_error=True,
)

# How long an ending episode waits for a tool call its caller gave up on (a tool or
# episode timeout) before the reward reads the world; one still running after it would
# change the world under the reward, so the episode is scored zero, saying why.
SETTLE_S = 10.0
STILL_RUNNING = (
    "not scored: a tool call that outran its timeout was still running {:g} s after the "
    "episode ended, so the world could still change; make the tool return within its timeout"
)

STILL_BUSY_NUDGE = (
    "You did not call a tool. An earlier call is still running after its timeout; "
    "call a tool to go on."
)

FORMAT_HINT = (
    'Call tools natively, or write each call as <tool_call>{"name": "TOOL", "arguments": {...}}</tool_call> '
    "with a JSON object of arguments."
)


class Usage(BaseModel):
    """Token usage and call accounting of an agent over an episode."""

    model_config = ConfigDict(extra="forbid")

    prompt_tokens: int = 0
    completion_tokens: int = 0
    requests: int = 0
    retries: int = 0

    def add(self, other: Usage | None) -> None:
        if other is None:
            return
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.requests += other.requests
        self.retries += other.retries

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


class ToolCallRecord(BaseModel):
    """One executed tool call, as logged."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    turn: int
    id: str
    name: str
    arguments: dict[str, Any]
    result: str
    is_error: bool
    data: Any = None  # the result as a JSON value, when the tool gave one
    step_reward: float | None = None
    metrics: dict[str, float] = Field(default_factory=dict)


@dataclass(frozen=True)
class Observation:
    """What one ``step`` produced."""

    messages: list[Message]
    done: bool
    end_reason: str | None
    step_reward: float
    format_error: bool = False


@dataclass(frozen=True)
class Trajectory:
    """The read-only view of an episode that the reward layer receives."""

    messages: list[Message]
    tool_calls: list[ToolCallRecord]
    turns: int
    end_reason: str | None


@dataclass
class Episode:
    """One episode: prompt, world, budgets and the conversation so far."""

    spec: TaskSpec[Any]
    instance: Instance
    budgets: Budgets
    world: World = field(init=False)
    messages: list[Message] = field(init=False)
    tools: list[dict[str, Any]] = field(init=False)
    tool_calls: list[ToolCallRecord] = field(default_factory=list, init=False)
    step_rewards: list[float] = field(default_factory=list, init=False)
    usage: Usage = field(default_factory=Usage, init=False)
    turns: int = field(default=0, init=False)
    nudges: int = field(default=0, init=False)
    format_errors: int = field(default=0, init=False)
    end_reason: str | None = field(default=None, init=False)
    error: str | None = field(default=None, init=False)
    started_at: float = field(default_factory=time.time, init=False)
    _reward: Reward | None = field(default=None, init=False)
    _closed: bool = field(default=False, init=False)
    _settle_s: float | None = field(default=None, init=False)  # None: SETTLE_S

    def __post_init__(self) -> None:
        self.world = self.spec.world(self.instance)
        # Rendering a prompt can be costly (images); every episode of an instance shares it.
        prompt = self.instance.derived(
            ("prompt", self.spec.id), lambda: tuple(self.spec.generator.prompt(self.instance))
        )
        self.messages = list(prompt)
        self.tools = self.spec.world.tool_schemas()

    @property
    def done(self) -> bool:
        return self.end_reason is not None

    # -- stepping -------------------------------------------------------------------
    def step(self, turn: Message | dict[str, Any] | str, usage: Usage | None = None) -> Observation:
        """Apply one assistant turn; run its tool calls synchronously, in order, up to the
        one that ends the episode (the calls after it are answered as not run)."""
        message, calls, errors = self._begin(turn, usage)
        results: list[ToolResult] = []
        for c in calls:
            ended = any(r.done for r in results)
            results.append(NOT_RUN if ended else self.world.execute(c.name, c.arguments))
        return self._finish_step(message, calls, results, errors)

    async def astep(
        self, turn: Message | dict[str, Any] | str, usage: Usage | None = None
    ) -> Observation:
        """Async twin of :meth:`step`; tool calls run off the event loop."""
        message, calls, errors = self._begin(turn, usage)
        results: list[ToolResult] = []
        for c in calls:
            ended = any(r.done for r in results)
            results.append(NOT_RUN if ended else await self.world.aexecute(c.name, c.arguments))
        nudge_wait = None
        # a nudge reads the world: wait for a timed-out call off the loop, and only once
        if not calls and not await self.world.await_idle(SETTLE_S):
            nudge_wait = 0.0
        observation = self._finish_step(
            message, calls, results, errors, release=False, nudge_wait=nudge_wait
        )
        if self.done:
            await self._settle()
            self._release()
        return observation

    def finish(self, reason: str, error: str | None = None) -> None:
        """End the episode from outside (timeout, agent failure)."""
        self._end(reason, error)
        self._release()

    async def afinish(self, reason: str, error: str | None = None) -> None:
        """:meth:`finish` from an event loop: a tool call the episode gave up on (its
        timeout) is waited for off the loop."""
        self._end(reason, error)
        await self._settle()
        self._release()

    async def _settle(self) -> None:
        # Wait for a call given up on off the event loop, so the reward does not block it;
        # if it still runs, the reward does not wait a second time.
        if not await self.world.await_idle(SETTLE_S):
            self._settle_s = 0.0

    def close(self) -> None:
        """Release the world's resources now, done or not (an abandoned episode).

        Episodes release them by themselves when they end; call this when dropping one
        that has not ended. Idempotent.
        """
        if not self._closed:
            self._closed = True
            if self.done:
                self.reward()
            try:
                self.world.close()
            except Exception as e:  # a leak is logged, never a crash of the caller
                warnings.warn(f"{self.spec.id}: closing the world failed: {e}", stacklevel=2)

    def _end(self, reason: str, error: str | None = None) -> None:
        if self.end_reason is None:
            self.end_reason = reason
        if error:
            self.error = error

    def _release(self) -> None:
        # The reward is computed before the world closes, so it may still query it.
        if self.done:
            self.close()

    def reward(self) -> Reward:
        """The final reward, computed once the episode is done (or now, if asked early)."""
        if self._reward is not None:
            return self._reward
        wait = SETTLE_S if self._settle_s is None else self._settle_s
        with self.world.settled(wait) as still:
            try:
                reward = (
                    self.spec.reward(self.instance, self.world, self.trajectory())
                    if still
                    else Reward.zero(STILL_RUNNING.format(SETTLE_S))
                )
            except Exception as e:  # a reward bug must not lose the episode
                reward = Reward.zero(f"reward computation failed: {type(e).__name__}: {e}")
        if self.done:
            self._reward = reward
        return reward

    def trajectory(self) -> Trajectory:
        return Trajectory(
            messages=list(self.messages),
            tool_calls=list(self.tool_calls),
            turns=self.turns,
            end_reason=self.end_reason,
        )

    # -- internals ------------------------------------------------------------------
    def _begin(
        self, turn: Message | dict[str, Any] | str, usage: Usage | None
    ) -> tuple[Message, list[ParsedCall], list[str]]:
        if self.done:
            raise RuntimeError(
                f"episode already ended ({self.end_reason}); call env.reset() for a new one"
            )
        try:
            message = coerce_message(turn)
        except Exception as e:
            message = Message(role="assistant", content=str(turn)[:2000])
            self.messages.append(message)
            self.turns += 1
            self.usage.add(usage)
            return message, [], [f"the turn is not a valid assistant message ({type(e).__name__})"]
        if message.role != "assistant":
            message = message.model_copy(update={"role": "assistant"})
        message, cut = _capped_turn(message)
        self.messages.append(message)
        self.turns += 1
        self.usage.add(usage)
        parsed = parse_turn(message, call_id_prefix=f"call_{self.turns}")
        remaining = self.budgets.max_tool_calls - len(self.tool_calls)
        return message, parsed.calls[: max(0, remaining)], [*cut, *parsed.errors]

    def _finish_step(
        self,
        message: Message,
        calls: list[ParsedCall],
        results: list[ToolResult],
        errors: list[str],
        *,
        release: bool = True,
        nudge_wait: float | None = None,  # None: SETTLE_S
    ) -> Observation:
        new: list[Message] = []
        step_reward = 0.0
        images: list[bytes] = []
        for call, result in zip(calls, results, strict=True):
            result = _capped_result(result)
            self.tool_calls.append(
                ToolCallRecord(
                    turn=self.turns,
                    id=call.id,
                    name=call.name,
                    arguments=call.arguments,
                    result=result.text,
                    is_error=result.is_error,
                    data=result.data,
                    step_reward=result.step_reward,
                    metrics=result.metrics,
                )
            )
            outcome = ToolOutcome(data=result.data, is_error=result.is_error)
            new.append(tool_message(call.id, call.name, result.text, outcome))
            images.extend(result.images)
            step_reward += result.step_reward or 0.0
            if result.done:
                self._end(result.end_reason or "answered")
        if images:
            new.append(user(f"[{len(images)} {TOOL_IMAGES_SUFFIX}", images=images))

        format_error = bool(errors)
        if errors:
            self.format_errors += 1
            listed = "; ".join(errors[:3])
            new.append(user(f"{FORMAT_ERROR_PREFIX} {listed}. {FORMAT_HINT}"))
            if self.format_errors > self.budgets.max_format_errors and not calls:
                self._end("format_error")
        elif not calls and not self.done:
            feedback = None
            if self.nudges < self.budgets.max_nudges:
                # the nudge reads the world too: not while a timed-out call changes it
                wait = SETTLE_S if nudge_wait is None else nudge_wait
                with self.world.settled(wait) as still:
                    feedback = (
                        self.spec.interaction.on_no_tool_call(
                            self.instance, self.world, message, self.nudges
                        )
                        if still
                        else STILL_BUSY_NUDGE
                    )
            if feedback is None:
                self._end("no_answer")
            else:
                self.nudges += 1
                new.append(user(feedback))

        self.messages.extend(new)
        self.step_rewards.append(step_reward)
        self._check_budgets()
        if release:
            self._release()
        return Observation(
            messages=new,
            done=self.done,
            end_reason=self.end_reason,
            step_reward=step_reward,
            format_error=format_error,
        )

    def _check_budgets(self) -> None:
        if self.done:
            return
        b = self.budgets
        if self.turns >= b.max_turns:
            self._end("max_turns")
        elif len(self.tool_calls) >= b.max_tool_calls:
            self._end("max_tool_calls")
        elif b.max_tokens is not None and self.usage.completion_tokens >= b.max_tokens:
            self._end("max_tokens")
        elif b.wall_clock_s is not None and time.time() - self.started_at >= b.wall_clock_s:
            self._end("timeout")


def _cut(text: str, limit: int) -> str:
    return f"{text[:limit]}\n[... {len(text) - limit} more characters cut]"


def _capped_turn(message: Message) -> tuple[Message, list[str]]:
    """The turn as it is kept: text, call arguments and images cut to the limits."""
    notes: list[str] = []
    update: dict[str, Any] = {}
    reasoning = message.reasoning_content
    if reasoning is not None and len(reasoning) > MAX_TURN_CHARS:
        update["reasoning_content"] = _cut(reasoning, MAX_TURN_CHARS)  # kept for the log only
    if isinstance(message.content, str) and len(message.content) > MAX_TURN_CHARS:
        update["content"] = _cut(message.content, MAX_TURN_CHARS)
        notes.append(
            f"the turn was {len(message.content)} characters; only the first "
            f"{MAX_TURN_CHARS} were read"
        )
    elif isinstance(message.content, list):
        parts = [
            p.model_copy(update={"text": _cut(p.text, MAX_TURN_CHARS)})
            if isinstance(p, TextPart) and len(p.text) > MAX_TURN_CHARS
            else p
            for p in message.content
        ]
        images = [p for p in parts if isinstance(p, ImagePart)]
        if len(images) > MAX_IMAGES_PER_TURN:
            drop = {id(p) for p in images[MAX_IMAGES_PER_TURN:]}
            parts = [p for p in parts if id(p) not in drop]
            notes.append(f"only the first {MAX_IMAGES_PER_TURN} images of the turn were kept")
        if parts != message.content:
            update["content"] = parts
    if message.tool_calls and any(
        len(tc.function.arguments) > MAX_ARGUMENT_CHARS for tc in message.tool_calls
    ):
        update["tool_calls"] = [
            tc.model_copy(
                update={
                    "function": tc.function.model_copy(
                        update={"arguments": _cut(tc.function.arguments, MAX_ARGUMENT_CHARS)}
                    )
                }
            )
            if len(tc.function.arguments) > MAX_ARGUMENT_CHARS
            else tc
            for tc in message.tool_calls
        ]
    return (message.model_copy(update=update) if update else message), notes


def _capped_result(result: ToolResult) -> ToolResult:
    if len(result.text) <= MAX_TOOL_RESULT_CHARS and len(result.images) <= MAX_IMAGES_PER_TURN:
        return result
    return dataclasses.replace(
        result,
        text=_cut(result.text, MAX_TOOL_RESULT_CHARS)
        if len(result.text) > MAX_TOOL_RESULT_CHARS
        else result.text,
        images=result.images[:MAX_IMAGES_PER_TURN],
    )
