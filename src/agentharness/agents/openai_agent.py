"""An agent behind any OpenAI-compatible chat endpoint (vLLM, SGLang, LMDeploy, Ollama, OpenAI).

Transient failures (429, 5xx, timeouts, dropped connections) are retried with
exponential backoff and jitter; after ``max_retries`` the turn fails with
:class:`AgentError` and the runner records the episode as ``agent_error``. A
semaphore bounds the number of requests in flight across all episodes.
"""

from __future__ import annotations

import asyncio
import os
import random
from typing import Any

from agentharness.agents.base import AgentError, AgentTurn
from agentharness.agents.textformat import with_tools_in_prompt
from agentharness.core.episode import Usage
from agentharness.core.instance import Instance
from agentharness.core.messages import FunctionCall, Message, ToolCall, to_openai_payload

DEFAULT_BASE_URL = "https://api.openai.com/v1"
CONNECTIONS_PER_SHARD = 16


class OpenAIAgent:
    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        concurrency: int = 64,
        max_retries: int = 5,
        backoff_s: float = 0.5,
        request_timeout_s: float = 120.0,
        tool_format: str = "native",
        sampling: dict[str, Any] | None = None,
    ) -> None:
        if tool_format not in ("native", "text"):
            raise ValueError(f"tool_format must be 'native' or 'text', got {tool_format!r}")
        import openai

        self.model = model
        self.name = f"openai:{model}"
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
        key = api_key or os.environ.get("OPENAI_API_KEY")
        if not key and self.base_url == DEFAULT_BASE_URL:
            raise AgentError(
                "set OPENAI_API_KEY (or pass --base-url for a local server that needs no key)"
            )
        # Retries are ours (recorded per episode), so the SDK's own are off. The SDK's HTTP
        # pool scans all its connections for every request, which is quadratic at high
        # concurrency, so requests are spread over shards of at most 64 connections each
        # (bench/throughput.py). The Limits class comes from the SDK: its HTTP library
        # differs across versions.
        shards = max(1, -(-concurrency // CONNECTIONS_PER_SHARD))
        per_shard = -(-concurrency // shards)
        limits_cls = type(openai.DEFAULT_CONNECTION_LIMITS)
        self.clients = [
            openai.AsyncOpenAI(
                base_url=self.base_url,
                api_key=key or "EMPTY",
                max_retries=0,
                timeout=request_timeout_s,
                http_client=openai.DefaultAsyncHttpxClient(
                    limits=limits_cls(max_connections=per_shard, max_keepalive_connections=per_shard),
                    timeout=request_timeout_s,
                ),
            )
            for _ in range(shards)
        ]
        self._next_shard = 0
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.tool_format = tool_format
        self.sampling = dict(sampling or {})
        self._semaphore = asyncio.Semaphore(concurrency)
        self._rng = random.Random(0)

    def policy(self, instance: Instance, sample: int = 0) -> _OpenAIPolicy:
        # An episode keeps one shard so its requests reuse a warm connection.
        self._next_shard = (self._next_shard + 1) % len(self.clients)
        return _OpenAIPolicy(self, self.clients[self._next_shard])

    @property
    def client(self) -> Any:
        return self.clients[0]

    async def aclose(self) -> None:
        for client in self.clients:
            await client.close()

    async def complete(
        self, messages: list[Message], tools: list[dict[str, Any]], client: Any = None
    ) -> AgentTurn:
        import openai

        if self.tool_format == "text":
            messages, tools = with_tools_in_prompt(messages, tools), []
        request: dict[str, Any] = {
            "model": self.model,
            "messages": to_openai_payload(messages),
            **self.sampling,
        }
        if tools:
            request["tools"] = tools
        usage = Usage(requests=0)
        last_error = ""
        for attempt in range(self.max_retries + 1):
            try:
                async with self._semaphore:
                    usage.requests += 1
                    # The low-level post skips the SDK's per-field request transform, which
                    # costs ~10 ms per call on long conversations (bench/throughput.py); the
                    # body is already in wire format.
                    response = await (client or self.clients[0]).post(
                        "/chat/completions", cast_to=openai.types.chat.ChatCompletion, body=request
                    )
                if not response.choices:
                    raise _Transient("the server returned no choices")
                break
            except (
                openai.RateLimitError,
                openai.APITimeoutError,
                openai.APIConnectionError,
                openai.InternalServerError,
                _Transient,
            ) as e:
                last_error = _describe(e)
            except openai.APIStatusError as e:
                if e.status_code in (408, 409, 425, 429) or e.status_code >= 500:
                    last_error = _describe(e)
                else:  # a client error will not go away by retrying
                    raise AgentError(
                        f"{self.base_url} rejected the request: {_describe(e)}", usage
                    ) from e
            except openai.APIError as e:  # malformed body and the like: the server may recover
                last_error = _describe(e)
            if attempt < self.max_retries:
                usage.retries += 1
                delay = self.backoff_s * (2**attempt) * (0.5 + self._rng.random())
                await asyncio.sleep(delay)
        else:
            raise AgentError(
                f"{self.base_url}: gave up after {self.max_retries + 1} attempts; last error: {last_error}",
                usage,
            )

        choice = response.choices[0].message
        tool_calls = [
            ToolCall(
                id=tc.id or f"call_{i}",
                function=FunctionCall(
                    name=tc.function.name or "", arguments=tc.function.arguments or ""
                ),
            )
            for i, tc in enumerate(choice.tool_calls or [])
            if getattr(tc, "function", None) is not None
        ]
        reasoning = getattr(choice, "reasoning_content", None)
        message = Message(
            role="assistant",
            content=choice.content,
            tool_calls=tool_calls or None,
            reasoning_content=reasoning if isinstance(reasoning, str) else None,
        )
        if response.usage is not None:
            usage.prompt_tokens = response.usage.prompt_tokens or 0
            usage.completion_tokens = response.usage.completion_tokens or 0
        return AgentTurn(message=message, usage=usage)


class _Transient(Exception):
    pass


class _OpenAIPolicy:
    def __init__(self, agent: OpenAIAgent, client: Any) -> None:
        self.agent = agent
        self.client = client

    async def act(self, messages: list[Message], tools: list[dict[str, Any]]) -> AgentTurn:
        return await self.agent.complete(messages, tools, self.client)


def _describe(e: Exception) -> str:
    status = getattr(e, "status_code", None)
    text = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
    return f"{type(e).__name__}{f' {status}' if status else ''}: {text[:200]}"
