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
