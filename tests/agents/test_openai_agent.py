"""The openai agent over real HTTP, with the real SDK, against a local scripted server."""

from __future__ import annotations

import asyncio
import base64
import re
from pathlib import Path
from typing import Any

import orjson
import pytest

from agentharness import get_task
from agentharness.agents.base import AgentError
from agentharness.agents.openai_agent import OpenAIAgent, _read_reply
from agentharness.core.episode import Usage
from agentharness.core.messages import user
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
    # The timeout far above a loaded machine's answer time, so only the stalls time out
    faults = Faults(error_rate=0.25, timeout_rate=0.05, drop_rate=0.1, stall_s=6.0, seed=3)
    items = plan([get_task("tsp_vision")], n=24, difficulty="easy")
    run_dir = RunDir(tmp_path)
    run_dir.create({})
    with ScriptedOpenAIServer(policy=cycle_tools_policy(turns=2), faults=faults) as server:
        agent = OpenAIAgent(
            "scripted",
            base_url=server.base_url,
            max_retries=2,
            backoff_s=0.01,
            request_timeout_s=5.0,
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


# -- malformed replies, on both transports (the lean HTTP/1.1 client and aiohttp) ----------
MALFORMED = {
    "malformed_json": "not JSON",
    "html": "not JSON",
    "missing_message": "has no",
    "truncate": "mid-response|ClientPayloadError|ContentLengthError|closed",
}


@pytest.mark.parametrize("lean_http", [True, False])
@pytest.mark.parametrize("kind", sorted(MALFORMED))
def test_malformed_replies_are_retried_and_their_usage_kept(kind: str, lean_http: bool) -> None:
    faults = Faults(**{f"{kind}_rate": 1.0}, seed=1)  # type: ignore[arg-type]
    with ScriptedOpenAIServer(faults=faults) as server:
        agent = OpenAIAgent(
            "scripted",
            base_url=server.base_url,
            max_retries=2,
            backoff_s=0.001,
            lean_http=lean_http,
        )
        with pytest.raises(AgentError, match="gave up after 3 attempts") as info:
            asyncio.run(agent.complete([user("hi")], []))
        served = sum(server.stats.values())
    assert re.search(MALFORMED[kind], str(info.value)), str(info.value)
    usage = info.value.usage
    assert usage is not None and usage.requests == served == 3 and usage.retries == 2
    if kind == "missing_message":  # the server billed those turns: the tokens are kept
        assert usage.prompt_tokens > 0 and usage.completion_tokens > 0


@pytest.mark.parametrize("lean_http", [True, False])
def test_every_fault_kind_at_once_loses_no_episode(tmp_path: Path, lean_http: bool) -> None:
    # Timeouts far above a loaded machine's answer time, so only the stalls time out (2 s
    # did not hold on a CI machine running an experiment beside the tests), and retries
    # enough that no request fails every attempt by chance: 7 of the 9 kinds fail, so a
    # request fails 21 attempts with probability 0.39**21 ~ 3e-9.
    faults = Faults.every_kind(0.5, stall_s=6.0, slow_s=0.01, seed=7)
    items = plan([get_task("escape_room")], n=16, difficulty="easy")
    run_dir = RunDir(tmp_path)
    run_dir.create({})
    with ScriptedOpenAIServer(policy=cycle_tools_policy(turns=3), faults=faults) as server:
        agent = OpenAIAgent(
            "scripted",
            base_url=server.base_url,
            max_retries=20,
            backoff_s=0.001,
            request_timeout_s=5.0,
            lean_http=lean_http,
        )
        result = asyncio.run(run(items, agent, run_dir, concurrency=8))
        stats = dict(server.stats)
    records = list(run_dir.episodes())
    assert result.ran == len(records) == 16 == len({r.episode_id for r in records})
    assert all(v > 0 for v in stats.values()), stats
    assert all(r.end_reason != "agent_error" for r in records), [r.error for r in records]
    assert sum(r.usage.retries for r in records) > 0
    assert sum(r.usage.requests for r in records) == sum(stats.values())


@pytest.mark.parametrize("lean_http", [True, False])
def test_a_reply_with_a_malformed_base64_image_keeps_its_text_and_notes_the_drop(
    tmp_path: Path, lean_http: bool
) -> None:
    items = plan([get_task("guess")], n=2, difficulty="easy")
    run_dir = RunDir(tmp_path)
    run_dir.create({})
    with ScriptedOpenAIServer(
        policy=cycle_tools_policy(turns=2, text_every=1), faults=Faults(bad_image_rate=1.0)
    ) as server:
        agent = OpenAIAgent("scripted", base_url=server.base_url, lean_http=lean_http)
        asyncio.run(run(items, agent, run_dir))
    for r in run_dir.episodes():
        first = next(m for m in r.messages if m.role == "assistant")
        assert "<tool_call>" in first.text and r.tool_calls, "the text of the reply was used"
        assert "1 of them with malformed base64 data" in first.text
        assert r.end_reason != "agent_error" and r.usage.retries == 0


def test_odd_but_readable_replies_do_not_fail_the_turn() -> None:
    replies = [
        {
            "choices": [
                {"message": {"content": [{"type": "text", "text": 7}, "x"], "tool_calls": 3}}
            ],
            "usage": {"prompt_tokens": "many", "completion_tokens": None},
        },
        {"choices": [{"message": {"content": 12, "reasoning": "hm"}}], "usage": [1]},
    ]
    for body in replies:
        usage = Usage()
        message = _read_reply(orjson.dumps(body), usage)
        assert message.role == "assistant" and message.tool_calls is None
        assert usage.prompt_tokens == usage.completion_tokens == 0
    with pytest.raises(Exception, match="answered 200 with an error: overloaded"):
        _read_reply(b'{"error": {"message": "overloaded"}}', Usage())
    with pytest.raises(Exception, match="not a JSON object"):
        _read_reply(b"[1, 2]", Usage())
