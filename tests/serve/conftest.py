"""Fixtures for the server tests: real uvicorn servers on free ports and a fake clock."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from serve_helpers import GATE, FakeClock, ServerFactory

from agentharness.core import registry
from agentharness.serve import BackgroundServer, create_app


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def serve() -> Iterator[ServerFactory]:
    """Start real servers (``serve(max_sessions=.., ttl_s=.., clock=..)``); stopped after the test."""
    servers: list[BackgroundServer] = []

    def start(**kwargs: Any) -> BackgroundServer:
        server = BackgroundServer(create_app(**kwargs)).start()
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.stop()


@pytest.fixture
def server(serve: ServerFactory, clock: FakeClock) -> BackgroundServer:
    """A server with room for 8 episodes, a 100 s ttl on the fake clock and no background sweep."""
    return serve(max_sessions=8, ttl_s=100.0, clock=clock, reap_interval_s=3600.0)


@pytest.fixture
def gate_task() -> Iterator[str]:
    """The ``servegate`` test task, registered for this test only."""
    registry.register(GATE)
    yield GATE.id
    registry._REGISTRY.pop(GATE.id, None)
