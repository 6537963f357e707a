"""The openai agent over real HTTP, with the real SDK, against a local scripted server."""

from __future__ import annotations

import asyncio
import base64
from pathlib import Path
from typing import Any

import pytest

from agentharness import get_task
from agentharness.agents.base import AgentError
from agentharness.agents.openai_agent import OpenAIAgent
from agentharness.rollout.runner import plan, run, run_one
from agentharness.store import RunDir
from agentharness.testing.openai_server import Faults, ScriptedOpenAIServer, cycle_tools_policy


def test_native_and_text_tool_calls_and_image_prompt() -> None:
    inst = get_task("tsp_vision").instance(0, "easy")
    with ScriptedOpenAIServer(policy=cycle_tools_policy(turns=3, text_every=2)) as server:
        agent = OpenAIAgent(
            "scripted", base_url=server.base_url, sampling={"temperature": 0.3, "top_p": 0.9}
        )
        episode, _ = asyncio.run(run_one(inst, agent.policy(inst)))
        requests = list(server.requests)

    # The image prompt arrived as a base64 PNG data URL.
    first = requests[0]
    parts = [p for m in first["messages"] if isinstance(m["content"], list) for p in m["content"]]
    urls = [p["image_url"]["url"] for p in parts if p["type"] == "image_url"]
    assert urls and urls[0].startswith("data:image/png;base64,")
    assert base64.b64decode(urls[0].split(",", 1)[1]).startswith(b"\x89PNG")
    assert first["temperature"] == 0.3 and first["top_p"] == 0.9
    assert {t["function"]["name"] for t in first["tools"]} == {
        s["function"]["name"] for s in episode.tools
    }

    # Turn 1 native, turn 2 written in text, turn 3 native: all executed.
    assistant = [m for m in episode.messages if m.role == "assistant"]
    assert (
        assistant[0].tool_calls
        and not assistant[1].tool_calls
        and "<tool_call>" in assistant[1].text
    )
    assert [c.turn for c in episode.tool_calls] == [1, 2, 3]
    assert episode.tool_calls[0].id == assistant[0].tool_calls[0].id

    # The text call's result went back as a user <tool_response>, the native one as a tool message.
    third = requests[2]["messages"]
    assert any(m["role"] == "tool" and m["tool_call_id"] == "call_0" for m in third)
    assert third[-1]["role"] == "user" and third[-1]["content"].startswith("<tool_response>")
    assert episode.usage.requests == len(requests) and episode.usage.completion_tokens > 0
    assert episode.end_reason == "no_answer"


def test_flaky_server_run_completes_and_records_errors(tmp_path: Path) -> None:
    faults = Faults(error_rate=0.25, timeout_rate=0.05, drop_rate=0.1, stall_s=2.0, seed=3)
    items = plan([get_task("tsp_vision")], n=24, difficulty="easy")
    run_dir = RunDir(tmp_path)
    run_dir.create({})
    with ScriptedOpenAIServer(policy=cycle_tools_policy(turns=2), faults=faults) as server:
        agent = OpenAIAgent(
            "scripted",
            base_url=server.base_url,
            max_retries=2,
            backoff_s=0.01,
            request_timeout_s=0.5,
        )
        result = asyncio.run(run(items, agent, run_dir, concurrency=8))
        stats = dict(server.stats)
    records = list(run_dir.episodes())
    assert result.ran == len(records) == 24
    assert stats["error"] and stats["dropped"] and stats["stalled"]
    failed = [r for r in records if r.end_reason == "agent_error"]
    for r in failed:
        assert r.error and "gave up after 3 attempts" in r.error
        assert r.usage.retries >= 2
    assert sum(r.usage.retries for r in records) > len(failed) * 2, (
        "retries that succeeded are recorded too"
    )
    assert len(failed) < len(records), "retries should rescue most episodes"


def test_client_errors_are_not_retried() -> None:
    def bad_request(body: dict[str, Any]) -> dict[str, Any]:
        raise AssertionError("never called")

    with ScriptedOpenAIServer(policy=bad_request) as server:
        agent = OpenAIAgent(
            "scripted", base_url=server.base_url.replace("/v1", "/nope"), max_retries=3
        )
        with pytest.raises(AgentError, match="rejected the request") as info:
            asyncio.run(agent.complete([], []))
        assert info.value.usage is not None and info.value.usage.retries == 0


def test_missing_key_for_openai_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(AgentError, match="OPENAI_API_KEY"):
        OpenAIAgent("gpt-4o")


def test_text_tool_format_puts_tools_in_the_prompt() -> None:
    inst = get_task("tsp_vision").instance(0, "easy")
    with ScriptedOpenAIServer(policy=cycle_tools_policy(turns=1)) as server:
        agent = OpenAIAgent("scripted", base_url=server.base_url, tool_format="text")
        asyncio.run(run_one(inst, agent.policy(inst)))
        first = server.requests[0]
    assert "tools" not in first
    assert "<tools>" in first["messages"][0]["content"]
