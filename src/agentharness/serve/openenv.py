"""OpenEnv's face of the environment server: its reset/step/state contract over our episodes.

OpenEnv (``openenv-core``) clients such as ``GenericEnvClient`` and TRL's OpenEnv
integration talk to an environment through a WebSocket session at ``/ws`` (one episode per
connection) and, for scripts, plain HTTP. Both shapes are served here:

* ``WS /ws`` — messages ``{"type": "reset", "data": {...}}``, ``{"type": "step", "data":
  action}``, ``{"type": "state"}`` and ``{"type": "close"}``; answers ``{"type":
  "observation", "data": {"observation", "reward", "done"}}``, ``{"type": "state", "data":
  ...}`` or ``{"type": "error", "data": {"message", "code"}}`` (OpenEnv's error codes);
* ``POST /reset``, ``POST /step``, ``GET /state`` — the same over HTTP, with OpenEnv's
  request and response bodies; since HTTP has no connection to hold the episode, the reset
  answer names it (``observation.episode_id``) and ``/step`` and ``/state`` take it back
  (``episode_id`` in the body or query);
* ``GET /schema`` (action, observation and state JSON schemas) and ``GET /metadata``.

The **reset** data are what ``POST /episodes`` takes (``task``, ``seed``, ``difficulty``,
``knobs``, ``instance``, ``budgets``). An **action** is one assistant turn:
``{"message": <an OpenAI assistant message or plain text>}`` (an OpenAI message's own fields
at the top level work too). The **observation** carries the new ``messages`` (after reset:
the prompt), the ``tools`` at reset, ``end_reason`` and ``turns``; ``reward`` is the step
reward, and on the step that ends the episode the task's final ``Reward.total`` (the
breakdown is in ``observation.metadata.reward``). Episodes live in the server's one session
store, so ``--max-sessions`` and ``--ttl`` bound them as they bound ``/episodes``.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, Query, WebSocket, WebSocketDisconnect
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.concurrency import run_in_threadpool

import agentharness
from agentharness.core.episode import Episode, Observation
from agentharness.core.registry import UnknownTaskError
from agentharness.core.task import TaskConfigError
from agentharness.serve.schema import CreateEpisode
from agentharness.serve.sessions import CapacityError, Session, SessionNotFound, SessionStore

_ACTION_FIELDS = ("role", "content", "tool_calls", "reasoning_content")


class OpenEnvAction(BaseModel):
    """One assistant turn: ``message`` is an OpenAI assistant message or plain text."""

    model_config = ConfigDict(extra="allow")

    message: dict[str, Any] | str | None = Field(
        None, description="The assistant turn (OpenAI message dict or text)."
    )
    metadata: dict[str, Any] = Field(default_factory=dict)

    def turn(self) -> dict[str, Any] | str:
        if self.message is not None:
            return self.message
        extra = self.model_extra or {}
        fields = {k: extra[k] for k in _ACTION_FIELDS if k in extra}
        if not fields:
            raise ValueError(
                'an action is {"message": <assistant message or text>} (or the message fields '
                "role/content/tool_calls themselves)"
            )
        return fields


class OpenEnvObservation(BaseModel):
    """What the environment said: new messages (the prompt after reset) and the episode's status."""

    episode_id: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]] | None = None
    end_reason: str | None = None
    turns: int = 0
    step_reward: float = 0.0
    done: bool = False
    reward: float | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)


class OpenEnvState(BaseModel):
    """OpenEnv's ``State`` (``episode_id``, ``step_count``) plus the whole conversation."""

    episode_id: str | None = None
    step_count: int = 0
    task: str | None = None
    instance_id: str | None = None
    done: bool = False
    end_reason: str | None = None
    messages: list[dict[str, Any]] = Field(default_factory=list)


class _Failure(Exception):
    def __init__(self, code: str, message: str, status: int = 422) -> None:
        super().__init__(message)
        self.code, self.message, self.status = code, message, status


def _observation_payload(session: Session, obs: Observation | None) -> dict[str, Any]:
    """``{"observation", "reward", "done"}``, the layout of OpenEnv's ``serialize_observation``."""
    ep = session.episode
    if obs is None:  # after reset: the prompt and the tools
        body = OpenEnvObservation(
            episode_id=session.id,
            messages=[m.to_openai() for m in ep.messages],
            tools=ep.tools,
            metadata={
                "task": ep.instance.task,
                "instance_id": ep.instance.instance_id,
                "seed": ep.instance.seed,
                "difficulty": ep.instance.difficulty,
            },
        )
        reward: float | None = None
    else:
        reward = obs.step_reward
        metadata: dict[str, Any] = {"format_error": obs.format_error}
        if obs.done:
            final = ep.reward()
            reward = final.total
            metadata["reward"] = final.model_dump()
        body = OpenEnvObservation(
            episode_id=session.id,
            messages=[m.to_openai() for m in obs.messages],
            end_reason=obs.end_reason,
            turns=ep.turns,
            step_reward=obs.step_reward,
            done=obs.done,
            reward=reward,
            metadata=metadata,
        )
    observation = body.model_dump(exclude={"done", "reward"})
    return {"observation": observation, "reward": reward, "done": body.done}


def _state(session: Session | None) -> dict[str, Any]:
    if session is None:
        return OpenEnvState().model_dump()
    ep = session.episode
    return OpenEnvState(
        episode_id=session.id,
        step_count=ep.turns,
        task=ep.instance.task,
        instance_id=ep.instance.instance_id,
        done=ep.done,
        end_reason=ep.end_reason,
        messages=[m.to_openai() for m in ep.messages],
    ).model_dump()


def install_openenv(
    app: FastAPI,
    store: SessionStore,
    build: Callable[[CreateEpisode], Episode],
    *,
    max_message_bytes: int | None = None,
) -> None:
    """Add the OpenEnv endpoints to ``app``, keeping episodes in ``store``.

    ``build(CreateEpisode) -> Episode`` opens an episode (the server's own builder, so the
    rules for seeds, knobs, stored instances and budget limits are the same as ``POST
    /episodes``). A WebSocket message longer than ``max_message_bytes`` is answered with an
    error and not read (HTTP bodies are limited by the server's guard).
    """

    async def open_session(data: dict[str, Any]) -> Session:
        fields = {k: v for k, v in data.items() if k != "episode_id"}  # OpenEnv's tracking id
        try:
            req = CreateEpisode.model_validate(fields)
        except ValidationError as e:
            raise _Failure("VALIDATION_ERROR", f"bad reset data: {_first_error(e)}") from e
        try:
            with store.reserve() as fill:
                episode: Episode = await run_in_threadpool(build, req)
                return fill(episode)
        except CapacityError as e:
            raise _Failure("CAPACITY_REACHED", str(e), status=429) from e
        except (UnknownTaskError, TaskConfigError) as e:
            raise _Failure("VALIDATION_ERROR", str(e)) from e
        except Exception as e:
            detail = getattr(e, "detail", None) or f"{type(e).__name__}: {e}"
            if getattr(e, "status", None) == 422:  # the request's fault (budgets, instance)
                raise _Failure("VALIDATION_ERROR", str(detail)) from e
            raise _Failure("FACTORY_ERROR", str(detail)) from e

    async def step_session(session: Session, data: dict[str, Any]) -> dict[str, Any]:
        try:
            turn = OpenEnvAction.model_validate(data).turn()
        except (ValidationError, ValueError) as e:
            message = _first_error(e) if isinstance(e, ValidationError) else str(e)
            raise _Failure("VALIDATION_ERROR", message) from e
        if session.episode.done:
            raise _Failure(
                "SESSION_ERROR",
                f"episode {session.id} has ended ({session.episode.end_reason}); reset for a new one",
                status=409,
            )
        if not session.try_begin_step():
            raise _Failure(
                "SESSION_ERROR", f"episode {session.id} is busy; one step at a time", 409
            )
        try:
            obs = await session.episode.astep(turn)
            payload = await run_in_threadpool(_observation_payload, session, obs)
        finally:
            store.touch(session)
            session.end_step()
        return payload

    def lookup(episode_id: str | None) -> Session:
        if not episode_id:
            raise _Failure(
                "SESSION_ERROR",
                "HTTP has no session: pass the episode_id that /reset returned (or use the /ws "
                "WebSocket, where the connection holds the episode)",
            )
        try:
            return store.get(episode_id)
        except SessionNotFound as e:
            raise _Failure("SESSION_ERROR", str(e), status=404) from e

    # -- WebSocket: one episode per connection -------------------------------------------
    @app.websocket("/ws")
    async def openenv_ws(websocket: WebSocket) -> None:
        await websocket.accept()
        session: Session | None = None
        try:
            while True:
                raw = await websocket.receive_text()
                try:
                    if max_message_bytes is not None and len(raw) > max_message_bytes:
                        raise _Failure(
                            "MESSAGE_TOO_LARGE",
                            f"the message is {len(raw)} characters; this server takes at most "
                            f"{max_message_bytes} (bootcamp serve --max-body). A step holds one "
                            "assistant turn.",
                        )
                    message = json.loads(raw)
                    if not isinstance(message, dict):
                        raise _Failure("INVALID_JSON", "a message is a JSON object with a type")
                    kind, data = message.get("type"), message.get("data") or {}
                    if kind == "reset":
                        if session is not None:
                            store.close(session.id)
                            session = None
                        session = await open_session(data)
                        reply = {"type": "observation", "data": _observation_payload(session, None)}
                    elif kind == "step":
                        if session is None:
                            raise _Failure("SESSION_ERROR", "send a reset before the first step")
                        reply = {"type": "observation", "data": await step_session(session, data)}
                    elif kind == "state":
                        reply = {"type": "state", "data": _state(session)}
                    elif kind == "close":
                        break
                    else:
                        raise _Failure("UNKNOWN_TYPE", f"unknown message type {kind!r}")
                except json.JSONDecodeError as e:
                    reply = _ws_error("INVALID_JSON", f"Invalid JSON: {e}")
                except _Failure as e:
                    reply = _ws_error(e.code, e.message)
                except SessionNotFound as e:  # expired while the client idled
                    session = None
                    reply = _ws_error("SESSION_ERROR", str(e))
                await websocket.send_text(json.dumps(reply))
        except WebSocketDisconnect:
            pass
        finally:
            if session is not None:
                with contextlib.suppress(SessionNotFound):
                    store.close(session.id)

    # -- HTTP ---------------------------------------------------------------------------
    def http_error(e: _Failure) -> JSONResponse:
        return JSONResponse({"detail": e.message, "error": e.code.lower()}, status_code=e.status)

    @app.post("/reset", tags=["OpenEnv"])
    async def openenv_reset(body: dict[str, Any] | None = None) -> Any:
        """OpenEnv reset: open an episode; ``observation.episode_id`` names it for /step."""
        try:
            session = await open_session(body or {})
        except _Failure as e:
            return http_error(e)
        return _observation_payload(session, None)

    @app.post("/step", tags=["OpenEnv"])
    async def openenv_step(body: dict[str, Any]) -> Any:
        """OpenEnv step: ``{"action": {...}, "episode_id": ...}``."""
        try:
            action = body.get("action")
            if not isinstance(action, dict):
                raise _Failure(
                    "VALIDATION_ERROR", 'a step body is {"action": {...}, "episode_id": ...}'
                )
            return await step_session(lookup(body.get("episode_id")), action)
        except _Failure as e:
            return http_error(e)

    @app.get("/state", tags=["OpenEnv"])
    async def openenv_state(episode_id: str | None = Query(None)) -> Any:
        """OpenEnv state of ``episode_id``: step count and the conversation so far."""
        try:
            return _state(lookup(episode_id))
        except _Failure as e:
            return http_error(e)

    @app.get("/schema", tags=["OpenEnv"])
    async def openenv_schema() -> dict[str, Any]:
        """JSON schemas of the action, observation and state."""
        return {
            "action": OpenEnvAction.model_json_schema(),
            "observation": OpenEnvObservation.model_json_schema(),
            "state": OpenEnvState.model_json_schema(),
        }

    @app.get("/metadata", tags=["OpenEnv"])
    async def openenv_metadata() -> dict[str, Any]:
        """OpenEnv's environment metadata."""
        return {
            "name": "agentharness",
            "description": "Executable, verifiable multi-turn tasks; reset with a task id "
            "(GET /tasks lists them) and step with assistant turns.",
            "version": agentharness.__version__,
        }


def _ws_error(code: str, message: str) -> dict[str, Any]:
    return {"type": "error", "data": {"message": message, "code": code}}


def _first_error(e: ValidationError) -> str:
    err = e.errors()[0]
    where = ".".join(str(p) for p in err.get("loc", ())) or "body"
    return f"{where}: {err.get('msg')}"


__all__ = ["OpenEnvAction", "OpenEnvObservation", "OpenEnvState", "install_openenv"]
