"""Smoke test of the local agent on the bundled SmolLM2-135M-Instruct (runs in CI)."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("transformers", reason="needs the 'local' extra")

from agentharness import get_task
from agentharness.agents.base import AgentError
from agentharness.agents.local import LocalAgent, bundled_model_path
from agentharness.core.task import Budgets
from agentharness.rollout.runner import run_one


@pytest.mark.slow
def test_bundled_smollm2_plays_a_turn() -> None:
    directory, gguf = bundled_model_path()
    assert gguf.endswith(".gguf") and (directory / gguf).stat().st_size > 10_000_000
    agent = LocalAgent(max_new_tokens=8, temperature=0.0)
    inst = get_task("tsp_vision").instance(0, "easy")
    prompt = agent.render_prompt(get_task("tsp_vision").generator.prompt(inst), [])
    assert "cannot see images" in prompt and "<|im_start|>assistant" in prompt
    episode, _ = asyncio.run(run_one(inst, agent.policy(inst), budgets=Budgets(max_turns=1)))
    (turn,) = [m for m in episode.messages if m.role == "assistant"]
    assert isinstance(turn.content, str) and turn.content.strip()
    assert 0 < episode.usage.completion_tokens <= 8 and episode.usage.prompt_tokens > 100
    assert episode.end_reason in ("max_turns", "answered", "no_answer", "format_error")


def test_unknown_local_model_is_a_clear_error() -> None:
    agent = LocalAgent("/no/such/checkpoint")
    with pytest.raises(AgentError, match="never downloaded"):
        agent.generate([], [])
