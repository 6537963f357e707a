"""The FastAPI app that serves episodes over HTTP.

Endpoints (JSON; bodies are the models of :mod:`agentharness.serve.schema`):

==========================  ==========================================================
``GET /health``             ok, version, open episodes, capacity, ttl
``GET /tasks``              task ids with modality, difficulties and knobs
``POST /episodes``          open an episode: prompt messages and tool schemas
``POST /episodes/{id}/step`` one assistant turn: new messages, done, end reason, reward
``GET /episodes/{id}``      the conversation so far, tool calls, turns, done
``GET /episodes/{id}/reward`` the final :class:`~agentharness.core.reward.Reward` (409 until done)
``DELETE /episodes/{id}``   drop the episode and free its slot
==========================  ==========================================================

Safe to expose (:mod:`agentharness.serve.guard`): with a ``token`` every request but
``/health`` and the docs must carry it (401 otherwise); bodies and WebSocket messages over
``limits.max_body_bytes`` are refused (413); budgets a client asks for above ``limits`` are
a 422, and every episode's budgets are clamped to them.

OpenEnv's contract (``/ws``, ``/reset``, ``/step``, ``/state``, ``/schema``, ``/metadata``)
is served on the same session store by :mod:`agentharness.serve.openenv`.

How it stays up under load: the session store is bounded (429 with ``Retry-After`` when
full) and idle episodes expire; episode construction, tool calls and reward computation run
off the event loop (tools on the tool thread pool through :meth:`Episode.astep`, generation
and reward on worker threads), so one slow simulator step does not stall other episodes;
and each episode takes one step at a time (a concurrent second step is a 409, not a queue).
Model output is never an HTTP error: a malformed turn goes to the episode, which answers
with format feedback as it would in process.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import secrets
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any

from agentharness.serve import MISSING_EXTRA

try:
    import uvicorn
    from fastapi import FastAPI, Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse, Response
    from starlette.concurrency import run_in_threadpool
except ImportError as e:  # pragma: no cover - exercised only without the extra
    raise ImportError(f"{MISSING_EXTRA} ({e})") from e

import agentharness
from agentharness.core.episode import Episode
from agentharness.core.registry import UnknownTaskError, all_tasks, episode_for, get_task, make
from agentharness.core.reward import Reward
from agentharness.core.task import Budgets, TaskConfigError
from agentharness.serve.guard import BudgetLimitError, Guard, ServeLimits, require_token_for
from agentharness.serve.schema import (
    ClosedEpisode,
    CreatedEpisode,
    CreateEpisode,
    EpisodeState,
    ErrorBody,
    ErrorCode,
    Health,
    StepRequest,
    StepResult,
    TaskInfo,
    TaskList,
)
from agentharness.serve.sessions import (
    CapacityError,
    Clock,
    Session,
    SessionNotFound,
    SessionStore,
)

logger = logging.getLogger("agentharness.serve")


class ApiError(Exception):
    """An error answered as ``{"detail": ..., "error": ...}`` with ``status``."""

    def __init__(
        self,
        status: int,
        error: ErrorCode,
        detail: str,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(detail)
        self.status = status
        self.error: ErrorCode = error
        self.detail = detail
        self.headers = headers


def _error_response(
    status: int, error: ErrorCode, detail: str, headers: dict[str, str] | None = None
) -> JSONResponse:
    body = ErrorBody(detail=detail, error=error).model_dump()
    return JSONResponse(body, status_code=status, headers=headers)


def create_app(
    max_sessions: int = 256,
    ttl_s: float = 600.0,
    *,
    clock: Clock = time.monotonic,
    reap_interval_s: float | None = None,
    id_prefix: str = "",
    token: str | None = None,
    limits: ServeLimits | None = None,
) -> FastAPI:
    """The environment server as an ASGI app (run it with uvicorn or :class:`BackgroundServer`).

    Args:
        max_sessions: the most episodes held at once; beyond it ``POST /episodes`` is a 429.
            Each holds a live world, so size it to the server's memory.
        ttl_s: idle seconds after which an episode is dropped, so clients that crash or
            forget to close do not hold slots forever.
        clock: monotonic seconds; inject a fake one to test expiry without sleeping.
        reap_interval_s: how often expired episodes are swept in the background (they are
            also dropped whenever the store is used). Defaults to a quarter of the ttl,
            within 1 to 30 s.
        id_prefix: put before every episode id (``bootcamp serve --workers`` routes by it).
        token: when set, every request but ``GET /health`` and the docs must carry it
            (``Authorization: Bearer <token>``); see :mod:`agentharness.serve.guard`.
        limits: caps on request sizes and on the budgets clients may choose.

    Returns:
        The FastAPI app; its session store is ``app.state.sessions``.
    """
    store = SessionStore(max_sessions, ttl_s, clock=clock, id_prefix=id_prefix)
    limits = limits or ServeLimits()
    build = functools.partial(_build_episode, limits=limits)
    interval = reap_interval_s if reap_interval_s is not None else min(30.0, max(1.0, ttl_s / 4))
    if not interval > 0:
        raise ValueError(f"reap_interval_s must be positive, got {reap_interval_s}")

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        # Load every task before the first request: the registry loads lazily and is not
        # safe to load from two request threads at once (and PyBaMM takes seconds to import).
        await run_in_threadpool(all_tasks)
        reaper = asyncio.create_task(_reap_forever(store, interval))
        try:
            yield
        finally:
            reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reaper

    app = FastAPI(
        title="agentharness environment server",
        version=agentharness.__version__,
        summary="Step agentharness episodes over HTTP.",
        lifespan=lifespan,
        responses={
            401: {"model": ErrorBody},
            404: {"model": ErrorBody},
            409: {"model": ErrorBody},
            413: {"model": ErrorBody},
            422: {"model": ErrorBody},
            429: {"model": ErrorBody},
            500: {"model": ErrorBody},
        },
    )
    app.state.sessions = store
    app.state.token = token
    app.state.limits = limits
    _install_error_handlers(app)
    # Outermost of the app's own middleware: nothing runs for a request it refuses.
    app.add_middleware(Guard, token=token, max_body_bytes=limits.max_body_bytes)
    # OpenEnv's reset/step/state contract (WebSocket /ws and HTTP), on the same store.
    from agentharness.serve.openenv import install_openenv

    install_openenv(app, store, build, max_message_bytes=limits.max_body_bytes)

    @app.get("/health")
    async def health() -> Health:
        """Liveness and load: open episodes against capacity."""
        store.reap()
        return Health(
            ok=True,
            version=agentharness.__version__,
            sessions=len(store),
            capacity=store.max_sessions,
            ttl_s=store.ttl_s,
            expired=store.expired_total,
        )

    @app.get("/tasks")
    async def tasks() -> TaskList:
        """The tasks this server can open, with the difficulties and knobs each accepts."""
        return TaskList(
            tasks=[
                TaskInfo(
                    id=s.id,
                    name=s.name,
                    version=s.version,
                    modality=s.modality,
                    difficulties=list(s.difficulties),
                    knobs=list(s.config_model.model_fields),
                    description=s.description,
                )
                for s in all_tasks()
            ]
        )

    @app.post("/episodes", status_code=201)
    async def open_episode(req: CreateEpisode) -> CreatedEpisode:
        """Open an episode on a generated or stored instance; its prompt and tools."""
        with store.reserve() as fill:
            episode = await run_in_threadpool(build, req)
            session = fill(episode)
        return CreatedEpisode(
            **_episode_fields(session, store),
            budgets=episode.budgets,
        )

    @app.post("/episodes/{episode_id}/step")
    async def step(episode_id: str, req: StepRequest) -> StepResult:
        """Apply one assistant turn; a malformed turn is answered with feedback, not an error."""
        session = store.get(episode_id)
        episode = session.episode
        with _stepping(session, store):
            if episode.done:
                raise _done_error(episode_id, episode)
            n = len(episode.messages)
            obs = await episode.astep(req.turn, req.usage)
        return StepResult(
            assistant=episode.messages[n],
            messages=obs.messages,
            done=obs.done,
            end_reason=obs.end_reason,
            step_reward=obs.step_reward,
            format_error=obs.format_error,
            turns=episode.turns,
            expires_in_s=store.expires_in(session),
        )

    @app.get("/episodes/{episode_id}")
    async def state(episode_id: str) -> EpisodeState:
        """The whole episode so far: conversation, tool calls, step rewards, done."""
        session = store.get(episode_id)
        ep = session.episode
        return EpisodeState(
            **_episode_fields(session, store),
            done=ep.done,
            end_reason=ep.end_reason,
            turns=ep.turns,
            tool_calls=list(ep.tool_calls),
            step_rewards=list(ep.step_rewards),
        )

    @app.get("/episodes/{episode_id}/reward")
    async def reward(episode_id: str) -> Reward:
        """The final reward breakdown; 409 until the episode is done."""
        session = store.get(episode_id)
        ep = session.episode
        if not ep.done:
            raise ApiError(
                409,
                "not_done",
                f"episode {episode_id} is not done ({ep.turns} turns so far): the reward is final "
                "only once it ends. Keep stepping until the step response says done=true.",
            )
        with _stepping(session, store):  # the reward re-simulates the world: one at a time
            return await run_in_threadpool(ep.reward)

    @app.delete("/episodes/{episode_id}")
    async def close(episode_id: str) -> ClosedEpisode:
        """Drop the episode and free its slot (a step in flight still gets its answer)."""
        session = store.close(episode_id)
        ep = session.episode
        return ClosedEpisode(
            episode_id=session.id, done=ep.done, end_reason=ep.end_reason, turns=ep.turns
        )

    return app


def _episode_fields(session: Session, store: SessionStore) -> dict[str, Any]:
    """The fields every episode response shares: ids, the conversation, tools, time left."""
    ep = session.episode
    inst = ep.instance
    return {
        "episode_id": session.id,
        "task": inst.task,
        "instance_id": inst.instance_id,
        "seed": inst.seed,
        "difficulty": inst.difficulty,
        "messages": list(ep.messages),
        "tools": ep.tools,
        "expires_in_s": store.expires_in(session),
    }


def _build_episode(req: CreateEpisode, limits: ServeLimits) -> Episode:
    """The episode a create request asks for (runs on a worker thread: generation may simulate)."""
    if req.instance is not None:
        given = [name for name in ("seed", "difficulty") if getattr(req, name) is not None]
        if req.knobs:
            given.append("knobs")
        if given:
            raise ApiError(
                422,
                "bad_request",
                f"`{'`, `'.join(given)}` cannot be combined with `instance`: a stored instance "
                "already fixes its seed and config. Send the instance alone, or task/seed/knobs.",
            )
        spec = get_task(req.instance.task)
        if req.task is not None and get_task(req.task).id != spec.id:
            raise ApiError(
                422,
                "bad_request",
                f"`instance` is for {spec.id} but `task` says {req.task}; drop `task` or fix it.",
            )
        budgets = _budgets(req, spec.interaction.budgets_for(req.instance), limits)
        try:
            return episode_for(req.instance, budgets)
        except Exception as e:
            raise ApiError(
                422,
                "bad_request",
                f"the instance could not be opened ({type(e).__name__}: {e}); was it generated "
                f"by {spec.id}? Regenerate it with this task version.",
            ) from e
    if req.task is None:
        raise ApiError(
            422,
            "bad_request",
            "give `task` (GET /tasks lists them) and optionally `seed`, or a stored `instance`.",
        )
    env = make(req.task, difficulty=req.difficulty or "medium", **req.knobs)
    seed = req.seed if req.seed is not None else secrets.randbelow(2**31)
    instance = env.generate(seed)
    budgets = _budgets(req, env.spec.interaction.budgets_for(instance), limits)
    return Episode(spec=env.spec, instance=instance, budgets=budgets)


def _budgets(req: CreateEpisode, default: Budgets, limits: ServeLimits) -> Budgets:
    try:
        return limits.budgets(req.budgets, default)
    except BudgetLimitError as e:
        raise ApiError(422, "over_limit", str(e)) from e


@contextlib.contextmanager
def _stepping(session: Session, store: SessionStore) -> Iterator[None]:
    """Hold the session's step lock, or answer 409 when another request holds it."""
    if not session.try_begin_step():
        raise ApiError(
            409,
            "episode_busy",
            f"episode {session.id} is busy with another request; send one turn at a time and "
            "wait for each step's response before the next.",
        )
    try:
        yield
    finally:
        store.touch(session)  # a long step is activity: the idle clock restarts after it
        session.end_step()


def _done_error(episode_id: str, episode: Episode) -> ApiError:
    return ApiError(
        409,
        "episode_done",
        f"episode {episode_id} has ended ({episode.end_reason}, after {episode.turns} turns) and "
        f"takes no more turns. Read its reward (GET /episodes/{episode_id}/reward), close it, "
        "and open a new episode with POST /episodes.",
    )


async def _reap_forever(store: SessionStore, interval_s: float) -> None:
    while True:
        await asyncio.sleep(interval_s)
        try:
            store.reap()
        except Exception:  # the sweeper must outlive a bad episode
            logger.exception("reaping expired episodes failed")


def _install_error_handlers(app: FastAPI) -> None:
    """Every error is ``{"detail", "error"}`` with a message that says how to fix it."""

    @app.exception_handler(ApiError)
    async def api_error(_: Request, e: ApiError) -> JSONResponse:
        return _error_response(e.status, e.error, e.detail, e.headers)

    @app.exception_handler(CapacityError)
    async def capacity(_: Request, e: CapacityError) -> JSONResponse:
        return _error_response(429, "capacity", str(e), {"Retry-After": str(e.retry_after_s)})

    @app.exception_handler(SessionNotFound)
    async def not_found(_: Request, e: SessionNotFound) -> JSONResponse:
        return _error_response(404, "episode_not_found", str(e))

    @app.exception_handler(UnknownTaskError)
    async def unknown_task(_: Request, e: UnknownTaskError) -> JSONResponse:
        detail = f"{e}. GET /tasks lists the tasks this server has (or run `bootcamp tasks`)."
        return _error_response(404, "unknown_task", detail)

    @app.exception_handler(TaskConfigError)
    async def bad_config(_: Request, e: TaskConfigError) -> JSONResponse:
        return _error_response(422, "bad_config", str(e))

    @app.exception_handler(RequestValidationError)
    async def bad_request(_: Request, e: RequestValidationError) -> JSONResponse:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err.get('loc', ()))}: {err.get('msg', '')}"
            for err in e.errors()[:5]
        )
        return _error_response(
            422,
            "bad_request",
            f"invalid request ({problems}). GET /docs shows the request schemas.",
        )

    @app.middleware("http")
    async def internal_errors(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        # Answer a bug as a 500 body here rather than let it reach uvicorn, which would also
        # drop the client's keep-alive connection and fail its next request.
        try:
            return await call_next(request)
        except Exception as e:
            logger.exception("%s %s failed", request.method, request.url.path)
            return _error_response(
                500,
                "internal",
                f"{request.method} {request.url.path} failed inside the server ({type(e).__name__}: "
                f"{e}); this is a bug in the server or the task, not in the request. "
                "The server log has the traceback.",
            )


def uvicorn_config(app: Any, **options: Any) -> uvicorn.Config:
    """uvicorn's config for ``app``, with its WebSocket frame limit set to the app's body limit."""
    limits = getattr(getattr(app, "state", None), "limits", None)
    max_size = limits.max_body_bytes if isinstance(limits, ServeLimits) else None
    if max_size is not None:
        options.setdefault("ws_max_size", max_size)
    return uvicorn.Config(app, lifespan="on", **options)


class BackgroundServer:
    """A real uvicorn server on a background thread, for tests, notebooks and in-process use.

    Listens on ``port`` (0 picks a free one; read :attr:`base_url` after start)::

        with BackgroundServer(create_app(max_sessions=8)) as server:
            env = RemoteEnv(server.base_url, "escape_room")
    """

    def __init__(
        self, app: Any, host: str = "127.0.0.1", port: int = 0, log_level: str = "warning"
    ) -> None:
        state = getattr(app, "state", None)
        require_token_for(host, getattr(state, "token", None))
        self.app = app
        self.host = host
        self.port = port
        self._server = uvicorn.Server(
            uvicorn_config(app, host=host, port=port, log_level=log_level)
        )
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self, timeout_s: float = 60.0) -> BackgroundServer:
        """Start serving and wait until the socket listens.

        Raises:
            RuntimeError: the server did not come up (port taken, app failed to start).
        """
        self._thread = threading.Thread(target=self._server.run, name="serve", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(
                    f"the server did not start on {self.host}:{self.port}; is the port taken? "
                    "Use port=0 for a free one."
                )
            time.sleep(0.01)
        self.port = self._server.servers[0].sockets[0].getsockname()[1]
        return self

    def stop(self) -> None:
        """Ask the server to exit and wait for its thread."""
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None

    def __enter__(self) -> BackgroundServer:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()
