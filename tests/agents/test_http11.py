"""The minimal HTTP/1.1 client of the openai agent, and the aiohttp path it stands in for."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agentharness import get_task
from agentharness.agents import http11
from agentharness.agents.http11 import BadResponse, Http11Pool, _parse
from agentharness.agents.openai_agent import OpenAIAgent
from agentharness.rollout.runner import plan, run
from agentharness.store import RunDir
from agentharness.testing.openai_server import Faults, ScriptedOpenAIServer, cycle_tools_policy


def test_parser_reads_lengths_chunks_interim_answers_and_close() -> None:
    plain = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhelloHTTP/1.1"
    assert _parse(bytearray(plain), eof=False) == (200, b"hello", True, len(plain) - 8)
    assert _parse(bytearray(plain[:30]), eof=False) is None  # body still coming

    chunked = (
        b"HTTP/1.1 100 Continue\r\n\r\n"
        b"HTTP/1.1 429 Too Many\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
        b"3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\nX-Trailer: 1\r\n\r\n"
    )
    assert _parse(bytearray(chunked), eof=False) == (429, b"abcde", False, len(chunked))
    assert _parse(bytearray(chunked[:-3]), eof=False) is None

    until_eof = b"HTTP/1.0 500 Oops\r\n\r\nbroken"
    assert _parse(bytearray(until_eof), eof=False) is None
    assert _parse(bytearray(until_eof), eof=True) == (500, b"broken", False, len(until_eof))

    for bad in (b"SSH-2.0-OpenSSH\r\n\r\n", b"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n"):
        with pytest.raises(BadResponse):
            _parse(bytearray(bad), eof=False)


def test_parser_refuses_a_body_too_long_before_reading_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(http11, "MAX_BODY", 10)
    for head in (
        b"HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nabcdef\r\n6\r\n",
        b"HTTP/1.0 200 OK\r\n\r\n" + b"x" * 11,
    ):
        with pytest.raises(BadResponse, match=r"too long|longer than"):
            _parse(bytearray(head), eof=False)


def test_pool_survives_a_server_that_closes_after_each_answer() -> None:
    async def main() -> list[tuple[int, bytes]]:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok")
            await writer.drain()
            writer.close()

        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        pool = Http11Pool(f"http://127.0.0.1:{port}/v1/chat/completions", {})
        try:
            return [await pool.post(b"{}", 5.0) for _ in range(3)]
        finally:
            await pool.close()
            server.close()

    assert asyncio.run(main()) == [(200, b"ok")] * 3


@pytest.mark.parametrize("lean_http", [True, False])
def test_both_transports_retry_the_same_faults(tmp_path: Path, lean_http: bool) -> None:
    # Timeouts far above a loaded machine's answer time, so only the stalls time out (0.5 s
    # failed a CI run beside a GRPO stage: answers that came late were counted as stalls),
    # and 6 attempts, so a request fails every one (0.35**6 ~ 2e-3) too rarely for 4 of 12
    # episodes to end in agent errors by chance.
    faults = Faults(error_rate=0.2, timeout_rate=0.05, drop_rate=0.1, stall_s=6.0, seed=5)
    items = plan([get_task("escape_room")], n=12, difficulty="easy")
    run_dir = RunDir(tmp_path)
    run_dir.create({})
    with ScriptedOpenAIServer(policy=cycle_tools_policy(turns=2), faults=faults) as server:
        agent = OpenAIAgent(
            "scripted",
            base_url=server.base_url,
            max_retries=5,
            backoff_s=0.01,
            request_timeout_s=5.0,
            lean_http=lean_http,
        )
        result = asyncio.run(run(items, agent, run_dir, concurrency=4))
        stats = dict(server.stats)
    records = list(run_dir.episodes())
    assert result.ran == len(records) == 12
    assert stats["error"] and stats["dropped"] and stats["stalled"]
    assert sum(r.usage.retries for r in records) > 0
    assert sum(r.end_reason != "agent_error" for r in records) >= 9
