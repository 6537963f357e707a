"""Fixtures of the loop tests: small runs of scripted agents on the toy and fast tasks."""

from __future__ import annotations

from pathlib import Path

import pytest
from loop_helpers import make_run


@pytest.fixture(scope="session")
def noisy_guess(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A noisy student on guess (medium and hard knobs): plenty of failures."""
    path = tmp_path_factory.mktemp("noisy_guess")
    make_run(path, "noisy:0.5", n=16)
    return path
