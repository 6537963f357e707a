from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from toy_task import GUESS

from agentharness.core.registry import register

register(GUESS)


@pytest.fixture
def guess_env():
    from agentharness import make

    return make("guess", difficulty="medium")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The conformance checks (minutes each) run first. Under pytest-xdist (scripts/test.sh)
    the longest tests then start at once, while the other worker takes the rest, instead of
    one worker finishing them alone at the end."""
    items.sort(key=lambda item: item.path.name != "test_conformance.py")
