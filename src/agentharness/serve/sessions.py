"""A bounded store of open episodes that expire when left idle.

The server holds live :class:`~agentharness.core.episode.Episode` objects (worlds with
simulator state), so memory is the resource to protect: the store holds at most
``max_sessions`` episodes and drops any that nobody touched for ``ttl_s`` seconds, since a
trainer that crashed or forgot to close its episodes would otherwise fill the server for
good. When full it refuses new episodes (:class:`CapacityError`, with a hint of when a slot
frees up) instead of growing without bound.

All methods are short critical sections under one :class:`threading.Lock`, so the store
is safe to use from the event loop and from worker threads alike; none of them blocks on
an episode. The clock is injectable so expiry is tested by moving time, not by sleeping.
"""

from __future__ import annotations

import logging
import math
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Literal

from agentharness.core.episode import Episode

logger = logging.getLogger("agentharness.serve")

Clock = Callable[[], float]
Gone = Literal["expired", "closed", "unknown"]


@dataclass(eq=False)
class Session:
    """One open episode, when it was last used, and its step lock.

    The step lock admits one step at a time: a second concurrent step is refused rather
    than queued, because two writers of one conversation is a client bug that queueing
    would hide.
    """

    id: str
    episode: Episode
    created_at: float
    last_used: float
    _step_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def busy(self) -> bool:
        """Whether a step is in flight (busy sessions never expire)."""
        return self._step_lock.locked()

    def try_begin_step(self) -> bool:
        """Take the step lock without waiting; ``False`` when another step holds it."""
        return self._step_lock.acquire(blocking=False)

    def end_step(self) -> None:
        self._step_lock.release()


class CapacityError(RuntimeError):
    """The store is full; ``retry_after_s`` is when the next idle episode would expire."""

    def __init__(self, capacity: int, retry_after_s: int) -> None:
        self.capacity = capacity
        self.retry_after_s = retry_after_s
        super().__init__(
            f"the server is at capacity ({capacity} open episodes). Close finished episodes "
            "(DELETE /episodes/{id}, or RemoteEpisode.close()), retry after "
            f"{retry_after_s} s, or restart the server with a larger --max-sessions."
        )


class SessionNotFound(KeyError):
    """No open episode has this id; ``gone`` says whether it expired, was closed or never was."""

    def __init__(self, episode_id: str, gone: Gone, ttl_s: float) -> None:
        self.episode_id = episode_id
        self.gone = gone
        self.ttl_s = ttl_s
        super().__init__(episode_id)

    def __str__(self) -> str:
        reopen = "Open a new one with POST /episodes"
        if self.gone == "expired":
            return (
                f"episode {self.episode_id} expired: it was idle for more than {self.ttl_s:g} s "
                f"and was dropped. {reopen}, and step it more often than every {self.ttl_s:g} s "
                "or start the server with a larger --ttl."
            )
        if self.gone == "closed":
            return f"episode {self.episode_id} was closed (DELETE). {reopen}."
        return (
            f"no episode {self.episode_id}: it may have expired after the server's ttl of "
            f"{self.ttl_s:g} s idle, been closed, or the server restarted. {reopen}."
        )


class SessionStore:
    """Open episodes by id, at most ``max_sessions`` of them, each expiring after ``ttl_s`` idle.

    Expired episodes are reaped lazily whenever the store is used and by :meth:`reap`, which
    the server also calls periodically. Ids of recently dropped episodes are remembered (a
    bounded number) so a late client is told its episode *expired* or *was closed* rather
    than that it never existed.
    """

    def __init__(
        self,
        max_sessions: int = 256,
        ttl_s: float = 600.0,
        *,
        clock: Clock = time.monotonic,
        remember_gone: int | None = None,
        id_prefix: str = "",
    ) -> None:
        if max_sessions < 1:
            raise ValueError(f"max_sessions must be at least 1, got {max_sessions}")
        if not ttl_s > 0:
            raise ValueError(f"ttl_s must be a positive number of seconds, got {ttl_s}")
        self.max_sessions = max_sessions
        self.ttl_s = float(ttl_s)
        self.clock = clock
        # Names the process holding the episode when several serve one port (serve/workers.py).
        self.id_prefix = id_prefix
        self.expired_total = 0
        self._sessions: dict[str, Session] = {}
        self._reserved = 0
        self._gone: OrderedDict[str, Gone] = OrderedDict()
        self._remember_gone = remember_gone or max(1024, 4 * max_sessions)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        """Episodes held right now (expired ones not yet reaped included)."""
        with self._lock:
            return len(self._sessions)

    # -- opening ------------------------------------------------------------------------
    @contextmanager
    def reserve(self) -> Iterator[Callable[[Episode], Session]]:
        """Claim a slot before building an episode, so a full server refuses cheaply.

        Yields a function that stores the built episode in the claimed slot. If the block
        raises (or never stores an episode) the slot is given back.

        Raises:
            CapacityError: every slot is taken by an open or still-building episode.
        """
        with self._lock:
            self._reap_locked()
            if len(self._sessions) + self._reserved >= self.max_sessions:
                raise CapacityError(self.max_sessions, self._retry_after_locked())
            self._reserved += 1
        filled = False

        def fill(episode: Episode) -> Session:
            nonlocal filled
            with self._lock:
                if filled:
                    raise RuntimeError("a reserved slot holds one episode")
                filled = True
                self._reserved -= 1
                now = self.clock()
                session = Session(self.id_prefix + secrets.token_urlsafe(16), episode, now, now)
                self._sessions[session.id] = session
                return session

        try:
            yield fill
        finally:
            if not filled:
                with self._lock:
                    self._reserved -= 1

    # -- access -------------------------------------------------------------------------
    def get(self, episode_id: str) -> Session:
        """The open session with this id; using it restarts its idle clock.

        Raises:
            SessionNotFound: the id is unknown, closed or expired.
        """
        with self._lock:
            self._reap_locked()
            session = self._sessions.get(episode_id)
            if session is None:
                raise SessionNotFound(episode_id, self._gone.get(episode_id, "unknown"), self.ttl_s)
            session.last_used = self.clock()
            return session

    def touch(self, session: Session) -> None:
        """Restart the idle clock (after a long step, which counts as activity)."""
        with self._lock:
            session.last_used = self.clock()

    def expires_in(self, session: Session) -> float:
        """Seconds until ``session`` expires if nobody uses it."""
        return max(0.0, session.last_used + self.ttl_s - self.clock())

    def close(self, episode_id: str) -> Session:
        """Drop an episode on request; a step still running finishes and is answered.

        Raises:
            SessionNotFound: the id is unknown, closed or expired.
        """
        with self._lock:
            self._reap_locked()
            session = self._sessions.pop(episode_id, None)
            if session is None:
                raise SessionNotFound(episode_id, self._gone.get(episode_id, "unknown"), self.ttl_s)
            self._remember_locked(episode_id, "closed")
        if not session.busy:  # a running step keeps its world; the GC finalizer closes it
            session.episode.close()
        return session

    def reap(self) -> list[Session]:
        """Drop every idle episode past its ttl now; returns what was dropped."""
        with self._lock:
            return self._reap_locked()

    # -- internals ----------------------------------------------------------------------
    def _reap_locked(self) -> list[Session]:
        now = self.clock()
        expired = [
            s for s in self._sessions.values() if not s.busy and now - s.last_used >= self.ttl_s
        ]
        for s in expired:
            del self._sessions[s.id]
            self._remember_locked(s.id, "expired")
            s.episode.close()  # releases a world's outside resources (an MCP session)
            logger.info(
                "episode %s (%s, %d turns, %s) expired after %g s idle and was dropped",
                s.id,
                s.episode.instance.task,
                s.episode.turns,
                s.episode.end_reason or "not done",
                self.ttl_s,
            )
        self.expired_total += len(expired)
        return expired

    def _remember_locked(self, episode_id: str, gone: Gone) -> None:
        self._gone[episode_id] = gone
        while len(self._gone) > self._remember_gone:
            self._gone.popitem(last=False)

    def _retry_after_locked(self) -> int:
        now = self.clock()
        waits = [s.last_used + self.ttl_s - now for s in self._sessions.values() if not s.busy]
        return max(1, math.ceil(min(waits, default=self.ttl_s)))
