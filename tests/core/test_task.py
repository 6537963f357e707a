"""TaskSpec's instance making: what it refuses to store."""

from __future__ import annotations

import dataclasses
import math

import pytest
from toy_task import GUESS, GuessConfig

from agentharness.core.instance import Instance
from agentharness.core.task import Problem, non_finite_paths


class _InfiniteGenerator:
    def generate(self, config: GuessConfig, seed: int) -> Problem:
        return Problem(public={"high": config.high}, hidden={"secret": 1, "gap": [0.5, math.inf]})

    def prompt(self, instance: Instance) -> list:
        return []


def test_non_finite_numbers_are_refused_with_where_they_are() -> None:
    spec = dataclasses.replace(GUESS, generator=_InfiniteGenerator())
    with pytest.raises(ValueError, match=r"hidden data holds non-finite numbers at gap\[1\]"):
        spec.instance(0, "easy")


def test_non_finite_paths_walks_nested_data() -> None:
    data = {"a": 1.0, "b": [0.0, {"c": math.nan}], "d": "inf", "e": -math.inf}
    assert non_finite_paths(data) == ["b[1].c", "e"]
    assert non_finite_paths({"ok": [1, 2.5, None]}) == []
