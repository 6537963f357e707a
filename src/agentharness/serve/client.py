"""A client for the environment server that mirrors ``Env`` / ``Episode``.

:class:`RemoteEnv` stands in for :func:`agentharness.make`'s :class:`~agentharness.core.registry.Env`
and :class:`RemoteEpisode` for :class:`~agentharness.core.episode.Episode`: ``reset`` gives the
prompt ``messages`` and ``tools``, ``step`` returns the same
:class:`~agentharness.core.episode.Observation`, ``reward`` the same
:class:`~agentharness.core.reward.Reward`, and every method has an ``a``-prefixed async twin.
A trainer written against the local classes runs against a server by swapping the
constructor. The episode keeps a local copy of the conversation in step with the server, so
reading ``messages`` costs no request.

Server errors become exceptions that subclass what the local API raises where there is a
local counterpart (:class:`RemoteUnknownTaskError` is an ``UnknownTaskError``,
:class:`RemoteTaskConfigError` a ``TaskConfigError``, stepping a finished episode a
``RuntimeError``), so the same ``except`` clauses work for both.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel

from agentharness.core.episode import Observation, Usage
from agentharness.core.instance import Instance
from agentharness.core.messages import Message
from agentharness.core.registry import UnknownTaskError
from agentharness.core.reward import Reward
from agentharness.core.task import Budgets, TaskConfigError
from agentharness.serve.schema import (
    CreatedEpisode,
    EpisodeState,
    Health,
    StepResult,
    TaskInfo,
    TaskList,
)

M = TypeVar("M", bound=BaseModel)

DEFAULT_TIMEOUT_S = 300.0  # a simulator step (PyBaMM, ASE) can take a while
TOKEN_ENV = "AGENTHARNESS_SERVE_TOKEN"  # as agentharness.serve.guard, which needs the extra


class RemoteEnvError(RuntimeError):
    """The server refused a request; ``detail`` says why and how to fix it."""

    def __init__(self, message: str, *, status_code: int, error: str | None, detail: str) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.error = error
        self.detail = detail


class ServerBusyError(RemoteEnvError):
    """429: the server holds as many episodes as it may; retry after ``retry_after_s``."""

    retry_after_s: float = 1.0


class EpisodeNotFoundError(RemoteEnvError):
    """404: the episode expired after the server's ttl, was closed, or never existed."""


class EpisodeStateError(RemoteEnvError):
    """409: the episode has ended, is busy with another step, or is not done yet."""


class RemoteAuthError(RemoteEnvError):
    """401: the server requires a token and this client sent none or another one."""


class RemoteUnknownTaskError(RemoteEnvError, UnknownTaskError):
    """404: the server has no such task (``UnknownTaskError``, as locally)."""


class RemoteTaskConfigError(RemoteEnvError, TaskConfigError):
    """422: a difficulty or knob the task does not accept (``TaskConfigError``, as locally)."""


_ERRORS: dict[str, type[RemoteEnvError]] = {
    "capacity": ServerBusyError,
    "episode_not_found": EpisodeNotFoundError,
    "episode_done": EpisodeStateError,
    "episode_busy": EpisodeStateError,
    "not_done": EpisodeStateError,
    "unknown_task": RemoteUnknownTaskError,
    "bad_config": RemoteTaskConfigError,
    "unauthorized": RemoteAuthError,
}


def _check(response: httpx.Response) -> httpx.Response:
    """``response`` when it succeeded, else the matching :class:`RemoteEnvError`."""
    if response.is_success:
        return response
    error: str | None = None
    try:
        body = response.json()
        detail = str(body["detail"])
        error = body.get("error")
    except (ValueError, KeyError, TypeError):
        detail = response.text[:1000] or response.reason_phrase
    cls = _ERRORS.get(error or "", RemoteEnvError)
    request = response.request
    message = f"{request.method} {request.url} -> {response.status_code}: {detail}"
    exc = cls(message, status_code=response.status_code, error=error, detail=detail)
    if isinstance(exc, ServerBusyError):
        try:
            exc.retry_after_s = float(response.headers.get("Retry-After", "1"))
        except ValueError:
            exc.retry_after_s = 1.0
    raise exc


def _parse(model: type[M], response: httpx.Response) -> M:
    return model.model_validate(_check(response).json())


def _turn_payload(turn: Message | dict[str, Any] | str) -> Message | dict[str, Any] | str:
    # Plain dicts go as they are: the episode, not the client, judges malformed turns.
    return turn.model_dump(mode="json", exclude_none=True) if isinstance(turn, Message) else turn


class RemoteEnv:
    """A task at a fixed difficulty and knobs on a server: the remote twin of ``Env``.

    Args:
        base_url: the server, e.g. ``http://gpu-box:8000``.
        task: ``name`` (latest version on the server) or ``name-vN``.
        difficulty: a preset name of the task.
        budgets: episode limits; the task's own when ``None``.
        config: knobs as a mapping (for knob names that clash with these arguments).
        timeout_s: per-request timeout; steps that run simulators can be slow.
        http: a shared ``httpx.Client`` (any base URL; not closed by :meth:`close`); one is
            made otherwise.
        ahttp: the same for the async methods.
        token: the server's token (``bootcamp serve --token``), sent as ``Authorization:
            Bearer``; ``AGENTHARNESS_SERVE_TOKEN`` from the environment when not given.
        **knobs: config fields overriding the difficulty preset, as for ``make``.

    Nothing is sent until :meth:`reset`, so an unknown task or bad knob is reported there.
    The async client is made on first use and belongs to that event loop: ``await
    aclose()`` (or use ``async with``) before the loop ends.
    """

    def __init__(
        self,
        base_url: str,
        task: str,
        difficulty: str = "medium",
        budgets: Budgets | None = None,
        *,
        config: Mapping[str, Any] | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        http: httpx.Client | None = None,
        ahttp: httpx.AsyncClient | None = None,
        token: str | None = None,
        **knobs: Any,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.task = task
        self.difficulty = difficulty
        self.budgets = budgets
        self.knobs: dict[str, Any] = {**(config or {}), **knobs}
        self._timeout = httpx.Timeout(timeout_s, connect=min(timeout_s, 10.0))
        token = token or os.environ.get(TOKEN_ENV) or None
        # Sent with every request, so shared clients (``http=``) carry it too.
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http, self._own_http = http, http is None
        self._ahttp, self._own_ahttp = ahttp, ahttp is None

    # -- transport ----------------------------------------------------------------------
    @property
    def http(self) -> httpx.Client:
        if self._http is None:
            self._http = httpx.Client(timeout=self._timeout)
        return self._http

    @property
    def ahttp(self) -> httpx.AsyncClient:
        if self._ahttp is None:
            self._ahttp = httpx.AsyncClient(timeout=self._timeout)
        return self._ahttp

    def close(self) -> None:
        """Close the connections this env opened (episodes stay open until closed or expired)."""
        if self._own_http and self._http is not None:
            self._http.close()
            self._http = None

    async def aclose(self) -> None:
        """Close the connections of both the sync and the async methods."""
        self.close()
        if self._own_ahttp and self._ahttp is not None:
            await self._ahttp.aclose()
            self._ahttp = None

    def __enter__(self) -> RemoteEnv:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    async def __aenter__(self) -> RemoteEnv:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()

    # -- server ---------------------------------------------------------------------------
    def health(self) -> Health:
        return _parse(Health, self.http.get(f"{self.base_url}/health", headers=self.headers))

    def tasks(self) -> list[TaskInfo]:
        return _parse(TaskList, self.http.get(f"{self.base_url}/tasks", headers=self.headers)).tasks

    # -- episodes -------------------------------------------------------------------------
    def reset(self, seed: int | None = None, instance: Instance | None = None) -> RemoteEpisode:
        """Open an episode on ``instance``, or on the instance generated from ``seed``.

        Unlike ``Env.reset``, both may be omitted: the server then draws a seed, which the
        episode reports as :attr:`RemoteEpisode.seed`.

        Raises:
            ServerBusyError: the server is full; retry after ``retry_after_s`` or close episodes.
            RemoteUnknownTaskError: the server has no such task.
            RemoteTaskConfigError: the difficulty or a knob is not accepted.
        """
        created = _parse(
            CreatedEpisode,
            self.http.post(
                f"{self.base_url}/episodes", json=self._create(seed, instance), headers=self.headers
            ),
        )
        return RemoteEpisode(self, created)

    async def areset(
        self, seed: int | None = None, instance: Instance | None = None
    ) -> RemoteEpisode:
        """Async twin of :meth:`reset`."""
        response = await self.ahttp.post(
            f"{self.base_url}/episodes", json=self._create(seed, instance), headers=self.headers
        )
        return RemoteEpisode(self, _parse(CreatedEpisode, response))

    def _create(self, seed: int | None, instance: Instance | None) -> dict[str, Any]:
        body: dict[str, Any] = {"task": self.task}
        if instance is not None:  # the server checks that it belongs to the task
            body["instance"] = instance.model_dump(mode="json")
        else:
            body.update(difficulty=self.difficulty, knobs=self.knobs)
            if seed is not None:
                body["seed"] = seed
        if self.budgets is not None:
            body["budgets"] = self.budgets.model_dump(mode="json")
        return body


class RemoteEpisode:
    """An episode open on the server: the remote twin of ``Episode``.

    ``messages`` is the conversation so far, kept in step with the server's copy (the turns
    as the episode recorded them, then the tool results and feedback). Use it as a context
    manager to close the episode on the server when done.
    """

    def __init__(self, env: RemoteEnv, created: CreatedEpisode) -> None:
        self.env = env
        self.id = created.episode_id
        self.task = created.task
        self.instance_id = created.instance_id
        self.seed = created.seed
        self.difficulty = created.difficulty
        self.messages: list[Message] = list(created.messages)
        self.tools: list[dict[str, Any]] = created.tools
        self.budgets = created.budgets
        self.expires_in_s = created.expires_in_s
        self.turns = 0
        self.end_reason: str | None = None
        self.step_rewards: list[float] = []
        self.closed = False
        self._reward: Reward | None = None

    def __repr__(self) -> str:
        return (
            f"RemoteEpisode({self.id!r}, task={self.task!r}, turns={self.turns}, done={self.done})"
        )

    @property
    def done(self) -> bool:
        return self.end_reason is not None

    @property
    def _path(self) -> str:
        return f"{self.env.base_url}/episodes/{self.id}"

    # -- stepping -------------------------------------------------------------------------
    def step(self, turn: Message | dict[str, Any] | str, usage: Usage | None = None) -> Observation:
        """Send one assistant turn; the tool results, feedback and done flag come back.

        A malformed turn is not an error: it comes back as format feedback, as locally.

        Raises:
            EpisodeStateError: the episode has ended or another step is in flight.
            EpisodeNotFoundError: the episode expired or was closed.
        """
        return self._apply(
            _parse(StepResult, self.env.http.post(**self._step_request(turn, usage)))
        )

    async def astep(
        self, turn: Message | dict[str, Any] | str, usage: Usage | None = None
    ) -> Observation:
        """Async twin of :meth:`step`."""
        response = await self.env.ahttp.post(**self._step_request(turn, usage))
        return self._apply(_parse(StepResult, response))

    def _step_request(
        self, turn: Message | dict[str, Any] | str, usage: Usage | None
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"turn": _turn_payload(turn)}
        if usage is not None:
            body["usage"] = usage.model_dump()
        return {"url": f"{self._path}/step", "json": body, "headers": self.env.headers}

    def _apply(self, result: StepResult) -> Observation:
        self.messages.append(result.assistant)
        self.messages.extend(result.messages)
        self.turns = result.turns
        self.end_reason = result.end_reason
        self.step_rewards.append(result.step_reward)
        self.expires_in_s = result.expires_in_s
        return Observation(
            messages=list(result.messages),
            done=result.done,
            end_reason=result.end_reason,
            step_reward=result.step_reward,
            format_error=result.format_error,
        )

    # -- reward, state, close -------------------------------------------------------------
    def reward(self) -> Reward:
        """The final reward breakdown (fetched once, then cached).

        Raises:
            EpisodeStateError: the episode is not done yet (the server computes rewards only
                for finished episodes).
        """
        if self._reward is None:
            self._reward = _parse(
                Reward, self.env.http.get(f"{self._path}/reward", headers=self.env.headers)
            )
        return self._reward

    async def areward(self) -> Reward:
        """Async twin of :meth:`reward`."""
        if self._reward is None:
            self._reward = _parse(
                Reward, await self.env.ahttp.get(f"{self._path}/reward", headers=self.env.headers)
            )
        return self._reward

    def state(self) -> EpisodeState:
        """The server's full view: conversation, tool calls, step rewards (also keeps it alive)."""
        return _parse(EpisodeState, self.env.http.get(self._path, headers=self.env.headers))

    async def astate(self) -> EpisodeState:
        return _parse(EpisodeState, await self.env.ahttp.get(self._path, headers=self.env.headers))

    def close(self) -> None:
        """Free the episode's slot on the server; closing a closed or expired one is a no-op."""
        if not self.closed:
            self._closed(self.env.http.delete(self._path, headers=self.env.headers))

    async def aclose(self) -> None:
        if not self.closed:
            self._closed(await self.env.ahttp.delete(self._path, headers=self.env.headers))

    def _closed(self, response: httpx.Response) -> None:
        self.closed = True
        if response.status_code != 404:  # already gone is what close wants
            _check(response)

    def __enter__(self) -> RemoteEpisode:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    async def __aenter__(self) -> RemoteEpisode:
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.aclose()
