"""The HTTP environment server and its client: step episodes from other processes or hosts.

Serve the registered tasks (``bootcamp serve --port 8000``), then drive an episode from a
trainer exactly as in process, with :class:`RemoteEnv` in place of ``agentharness.make``::

    from agentharness.serve import RemoteEnv

    env = RemoteEnv("http://gpu-box:8000", "escape_room", difficulty="easy")
    with env.reset(seed=7) as ep:        # closes the episode on the server afterwards
        while not ep.done:
            obs = ep.step(policy(ep.messages, ep.tools))
        print(ep.reward().total)

The server bounds how many episodes it holds and expires idle ones, answering 429 with
``Retry-After`` when full (see :mod:`agentharness.serve.sessions`). The client needs only
httpx (a core dependency); the server needs the ``serve`` extra (FastAPI, uvicorn), which
is imported only when :func:`create_app` or :class:`BackgroundServer` is first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentharness.serve.client import (
    EpisodeNotFoundError,
    EpisodeStateError,
    RemoteAuthError,
    RemoteEnv,
    RemoteEnvError,
    RemoteEpisode,
    RemoteTaskConfigError,
    RemoteUnknownTaskError,
    ServerBusyError,
)

if TYPE_CHECKING:
    from agentharness.serve.app import BackgroundServer, create_app

MISSING_EXTRA = (
    "the environment server needs FastAPI and uvicorn, which are not installed; "
    "install them with: pip install 'agentharness[serve]'"
)

__all__ = [
    "MISSING_EXTRA",
    "BackgroundServer",
    "EpisodeNotFoundError",
    "EpisodeStateError",
    "RemoteAuthError",
    "RemoteEnv",
    "RemoteEnvError",
    "RemoteEpisode",
    "RemoteTaskConfigError",
    "RemoteUnknownTaskError",
    "ServerBusyError",
    "create_app",
]


def __getattr__(name: str) -> Any:
    # The server half is imported on first use so the client works without the extra.
    if name in ("create_app", "BackgroundServer"):
        from agentharness.serve import app

        return getattr(app, name)
    raise AttributeError(f"module 'agentharness.serve' has no attribute {name!r}")
