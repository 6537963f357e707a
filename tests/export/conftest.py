"""Fixtures of the export tests: small runs of scripted agents (built in seconds)."""

from __future__ import annotations

from pathlib import Path

import pytest
from export_helpers import TEXT_TASKS, make_run


@pytest.fixture(scope="session")
def text_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A noisy agent on four text tasks: native tool calls with varied arguments."""
    return make_run(tmp_path_factory.mktemp("text_run"), "noisy:0.3", TEXT_TASKS)


@pytest.fixture(scope="session")
def vision_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tsp_vision: images in the prompt and in tool results."""
    return make_run(tmp_path_factory.mktemp("vision_run"), "noisy:0.3", "tsp_vision")


@pytest.fixture(scope="session")
def guess_groups_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """k=4 rollouts per instance of the toy task by a noisy agent: varied rewards."""
    return make_run(tmp_path_factory.mktemp("guess_k4"), "noisy:0.5", "guess", n=6, k=4)
