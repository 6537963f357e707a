"""Scripted agents: the noisy agent's failures reach the reward at the rate asked for."""

from __future__ import annotations

import asyncio
import random
import statistics

import pytest
from toy_task import GUESS

from agentharness.agents import make_agent
from agentharness.agents.scripted import NoisyAgent, perturb
from agentharness.rollout.runner import run_one


def _success(agent: NoisyAgent, n: int = 60) -> float:
    wins = []
    for seed in range(n):
        inst = GUESS.instance(seed, "easy")
        ep, _ = asyncio.run(run_one(inst, agent.policy(inst)))
        wins.append(ep.reward().success)
    return statistics.fmean(wins)


def test_noisy_spoils_about_rate_of_the_answers() -> None:
    assert _success(NoisyAgent(0.0, spoil=0.0)) == 1.0
    spoiled = _success(NoisyAgent(0.0, spoil=0.5))
    assert 0.3 <= spoiled <= 0.7
    assert _success(NoisyAgent(0.0, spoil=1.0)) == 0.0


def test_noisy_by_name_spoils_at_its_rate() -> None:
    agent = make_agent("noisy:0.3")
    assert isinstance(agent, NoisyAgent) and agent.spoil == 0.3 and agent.name == "noisy:0.3"
    calm = make_agent("noisy:0.3:0")
    assert isinstance(calm, NoisyAgent) and calm.spoil == 0.0 and calm.name == "noisy:0.3:0"
    with pytest.raises(ValueError, match=r"noisy:<rate>\[:<spoil>\]"):
        make_agent("noisy:0.3:2")


def test_perturb_moves_every_value() -> None:
    rng = random.Random(0)
    answer = {"n": 7, "x": 2.0, "order": ["A", "B", "C"], "code": "1234", "zero": 0}
    moved = perturb(rng, answer)
    assert moved["n"] != 7 and moved["x"] != 2.0 and moved["zero"] != 0
    assert sorted(moved["order"]) == ["A", "B", "C"] and moved["order"] != ["A", "B", "C"]
    assert moved["code"] != "1234"


def test_noisy_random_turns_never_answer() -> None:
    # All noise, no spoil: random calls fill every turn but never call the answer tool.
    inst = GUESS.instance(3, "easy")
    ep, _ = asyncio.run(run_one(inst, NoisyAgent(1.0).policy(inst)))
    assert ep.tool_calls and all(c.name != "answer" for c in ep.tool_calls)
    assert ep.end_reason != "answered"
