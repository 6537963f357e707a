"""An agent behind any OpenAI-compatible chat endpoint (vLLM, SGLang, LMDeploy, Ollama, OpenAI).

Transient failures (429, 5xx, timeouts, dropped connections, malformed replies) are
retried with exponential backoff and jitter; after ``max_retries`` the turn fails with
:class:`AgentError` and the runner records the episode as ``agent_error``. Other 4xx
answers fail at once. A semaphore bounds the number of requests in flight across all
episodes.

The request path is lean on purpose (``bench/throughput.py cpu``): request bodies are
assembled from per-message JSON encoded once per episode with orjson (a conversation grows
by appending, so each turn encodes only its new messages), sent by a minimal HTTP/1.1
client to plain-http servers (agents/http11.py; aiohttp for TLS and proxies), and the
reply is read straight into a :class:`Message`. The openai SDK spent ~4 ms of CPU per
request in its HTTP stack and models, which capped one process at a few hundred turns
per second.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import os
import random
from typing import Any, Protocol

import aiohttp
import orjson

from agentharness.agents.base import AgentError, AgentTurn
from agentharness.agents.http11 import Http11Pool
from agentharness.agents.textformat import with_tools_in_prompt
from agentharness.core.episode import Usage
from agentharness.core.instance import Instance
from agentharness.core.messages import FunctionCall, Message, ToolCall, openai_payload_entry

DEFAULT_BASE_URL = "https://api.openai.com/v1"
# Statuses worth retrying: the server may answer differently next time.
RETRY_STATUSES = frozenset({408, 409, 425, 429})
_RESERVED_KEYS = ("model", "messages", "tools")


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
        lean_http: bool = True,
    ) -> None:
        if tool_format not in ("native", "text"):
            raise ValueError(f"tool_format must be 'native' or 'text', got {tool_format!r}")
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency}")
        sampling = dict(sampling or {})
        clash = [k for k in _RESERVED_KEYS if k in sampling]
        if clash:
            raise ValueError(f"sampling options may not set {', '.join(clash)}")
        self.model = model
        self.name = f"openai:{model}"
        self.base_url = base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
        key = api_key or os.environ.get("OPENAI_API_KEY")
        if not key and self.base_url == DEFAULT_BASE_URL:
            raise AgentError(
                "set OPENAI_API_KEY (or pass --base-url for a local server that needs no key)"
            )
        self.url = self.base_url.rstrip("/") + "/chat/completions"
        self.headers = {
            "Content-Type": "application/json",
            "Authorization": f"Bearer {key or 'EMPTY'}",
        }
        # The headers the openai SDK sends from the same environment variables.
        for env, header in (
            ("OPENAI_ORG_ID", "OpenAI-Organization"),
            ("OPENAI_PROJECT_ID", "OpenAI-Project"),
        ):
            if os.environ.get(env):
                self.headers[header] = os.environ[env]
        self.concurrency = max(1, concurrency)
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.request_timeout_s = request_timeout_s
        self.tool_format = tool_format
        self.sampling = sampling
        # Request bodies are assembled from pre-encoded fragments (see _BodyEncoder).
        self._head = b'{"model":' + orjson.dumps(model) + b',"messages":['
        self._tail = (
            b"".join(b"," + orjson.dumps(k) + b":" + orjson.dumps(v) for k, v in sampling.items())
            + b"}"
        )
        # Plain http:// without a proxy (a local vLLM or SGLang) takes the minimal client.
        self.lean_http = lean_http
        self._transport: _Transport | None = None
        self._transport_loop: asyncio.AbstractEventLoop | None = None
        self._keeper: asyncio.Task[None] | None = None
        self._semaphore = asyncio.Semaphore(self.concurrency)
        self._rng = random.Random(0)

    def policy(self, instance: Instance, sample: int = 0) -> _OpenAIPolicy:
        return _OpenAIPolicy(self)

    async def aclose(self) -> None:
        transport, self._transport, self._transport_loop = self._transport, None, None
        keeper, self._keeper = self._keeper, None
        if keeper is not None:
            keeper.cancel()
        if transport is not None:
            await transport.close()

    def _transport_here(self) -> _Transport:
        """The transport of the running event loop (an agent may outlive one ``asyncio.run``)."""
        loop = asyncio.get_running_loop()
        if self._transport is None or self._transport_loop is not loop:
            proxy = _env_proxy(self.url)
            if self.lean_http and self.url.startswith("http://") and proxy[0] is None:
                self._transport = _LeanTransport(self)
            else:
                self._transport = _AiohttpTransport(self, proxy)
            self._transport_loop = loop
            self._semaphore = asyncio.Semaphore(self.concurrency)
            # asyncio.run cancels the tasks still pending when its coroutine returns, so
            # this one closes the connections while their loop still runs, for callers
            # that never call aclose (an unclosed socket warns when it is collected, often
            # in the middle of someone else's code).
            self._keeper = loop.create_task(_close_at_loop_end(self._transport))
        return self._transport

    async def complete(
        self,
        messages: list[Message],
        tools: list[dict[str, Any]],
        encoder: _BodyEncoder | None = None,
    ) -> AgentTurn:
        body = (encoder or _BodyEncoder(self)).body(messages, tools)
        transport = self._transport_here()
        usage = Usage(requests=0)
        last_error = ""
        for attempt in range(self.max_retries + 1):
            try:
                async with self._semaphore:
                    usage.requests += 1
                    status, raw = await transport.post(body)
                if status >= 300:
                    error = _status_error(status, raw)
                    if status in RETRY_STATUSES or status >= 500:
                        raise _Transient(error)
                    # A client error will not go away by retrying.
                    raise AgentError(f"{self.base_url} rejected the request: {error}", usage)
                message = _read_reply(raw, usage)
                break
            except _Transient as e:
                last_error = str(e)
            except asyncio.TimeoutError:
                last_error = f"TimeoutError: no answer within {self.request_timeout_s:g} s"
            except (aiohttp.ClientError, OSError) as e:  # refused, dropped, truncated
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
        return AgentTurn(message=message, usage=usage)


class _Transient(Exception):
    """A failed attempt worth retrying."""


async def _close_at_loop_end(transport: _Transport) -> None:
    try:
        await asyncio.Event().wait()
    finally:
        await transport.close()


class _Transport(Protocol):
    async def post(self, body: bytes) -> tuple[int, bytes]: ...

    async def close(self) -> None: ...


class _LeanTransport:
    """Plain http:// without a proxy: the minimal client (agents/http11.py)."""

    def __init__(self, agent: OpenAIAgent) -> None:
        self.pool = Http11Pool(agent.url, agent.headers)
        self.timeout_s = agent.request_timeout_s

    async def post(self, body: bytes) -> tuple[int, bytes]:
        return await self.pool.post(body, self.timeout_s)

    async def close(self) -> None:
        await self.pool.close()


class _AiohttpTransport:
    """TLS, proxies: aiohttp, with one session per event loop."""

    def __init__(
        self, agent: OpenAIAgent, proxy: tuple[str | None, aiohttp.BasicAuth | None]
    ) -> None:
        self.url = agent.url
        self.proxy = proxy
        # Connections are pooled per host with no per-request scan; the agent's semaphore,
        # not the pool, bounds requests in flight.
        self.session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=agent.concurrency, limit_per_host=0),
            timeout=aiohttp.ClientTimeout(total=agent.request_timeout_s),
            headers=agent.headers,
            trust_env=False,
            skip_auto_headers=("User-Agent",),
        )

    async def post(self, body: bytes) -> tuple[int, bytes]:
        async with self.session.post(
            self.url,
            data=body,
            proxy=self.proxy[0],
            proxy_auth=self.proxy[1],
            allow_redirects=False,
        ) as response:
            return response.status, await response.read()

    async def close(self) -> None:
        if not self.session.closed:
            await self.session.close()


class _BodyEncoder:
    """Request bodies for one episode, encoding each message once.

    Messages are frozen, and an episode's conversation only grows, so the JSON of every
    message already sent is reused by identity; a conversation that was rewritten (a
    different object at some position) is re-encoded from there on.
    """

    def __init__(self, agent: OpenAIAgent) -> None:
        self.agent = agent
        self._sources: list[Message] = []
        self._parts: list[bytes] = []
        self._open_ids: list[frozenset[str]] = []
        self._tools_src: list[dict[str, Any]] | None = None
        self._tools_json = b""
        self._head_key: tuple[Message | None, int] | None = None
        self._head: list[Message] = []

    def body(self, messages: list[Message], tools: list[dict[str, Any]]) -> bytes:
        if self.agent.tool_format == "text" and tools:
            messages, tools = self._with_tools_in_prompt(messages, tools), []
        n = 0
        limit = min(len(messages), len(self._sources))
        while n < limit and messages[n] is self._sources[n]:
            n += 1
        del self._sources[n:], self._parts[n:], self._open_ids[n:]
        open_ids = self._open_ids[-1] if self._open_ids else frozenset()
        for m in messages[n:]:
            entry, open_ids = openai_payload_entry(m, open_ids)
            self._sources.append(m)
            self._parts.append(orjson.dumps(entry))
            self._open_ids.append(open_ids)
        if tools is not self._tools_src:
            self._tools_src = tools
            self._tools_json = b'],"tools":' + orjson.dumps(tools) if tools else b"]"
        return self.agent._head + b",".join(self._parts) + self._tools_json + self.agent._tail

    def _with_tools_in_prompt(
        self, messages: list[Message], tools: list[dict[str, Any]]
    ) -> list[Message]:
        # The merged system prompt is a new object each time it is built: build it once.
        first = messages[0] if messages else None
        key = (first, id(tools))
        if (
            self._head_key is None
            or self._head_key[0] is not first
            or self._head_key[1] != id(tools)
        ):
            self._head_key = key
            self._head = with_tools_in_prompt(messages[:1], tools)
        return [*self._head, *messages[1:]]


class _OpenAIPolicy:
    def __init__(self, agent: OpenAIAgent) -> None:
        self.agent = agent
        self.encoder = _BodyEncoder(agent)

    async def act(self, messages: list[Message], tools: list[dict[str, Any]]) -> AgentTurn:
        return await self.agent.complete(messages, tools, self.encoder)


def _read_reply(raw: bytes, usage: Usage) -> Message:
    """The assistant message of a chat-completions reply; its tokens are added to ``usage``.

    A body that is not a usable reply (not JSON, an HTML page, no ``choices`` or no
    ``message``) raises :class:`_Transient`, so it is retried like a 5xx; whatever tokens it
    reports are counted all the same. Image parts in the reply are dropped (an assistant
    turn goes back to the server as text), with a note in the turn's text saying so.
    """
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as e:
        raise _Transient(f"the server's reply is not JSON ({e}): {_snippet(raw)}") from e
    if not isinstance(data, dict):
        raise _Transient(f"the server's reply is not a JSON object: {_snippet(raw)}")
    tokens = _tokens(data.get("usage"))
    if tokens is not None:
        usage.prompt_tokens += tokens[0]
        usage.completion_tokens += tokens[1]
    choices = data.get("choices")
    choice = choices[0] if isinstance(choices, list) and choices else None
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        error = data.get("error")
        if isinstance(error, dict):
            error = error.get("message")
        if error:
            raise _Transient(f"the server answered 200 with an error: {str(error)[:200]}")
        what = "no message in its first choice" if choice is not None else "no choices"
        raise _Transient(f"the server's reply has {what}: {_snippet(raw)}")
    calls = []
    raw_calls = message.get("tool_calls")
    for i, tc in enumerate(raw_calls if isinstance(raw_calls, list) else []):
        fn = tc.get("function") if isinstance(tc, dict) else None
        if not isinstance(fn, dict):
            continue
        args = fn.get("arguments")
        if not isinstance(args, str):  # some servers send the object itself
            args = "" if args is None else orjson.dumps(args).decode()
        calls.append(
            ToolCall(
                id=str(tc.get("id") or f"call_{i}"),
                function=FunctionCall(name=str(fn.get("name") or ""), arguments=args),
            )
        )
    content = message.get("content")
    if isinstance(content, list):  # content parts: keep the text
        content = _text_of_parts(content)
    elif content is not None and not isinstance(content, str):
        content = str(content)
    reasoning = message.get("reasoning_content")
    if not isinstance(reasoning, str):
        reasoning = message.get("reasoning")  # newer vLLM
    return Message(
        role="assistant",
        content=content,
        tool_calls=calls or None,
        reasoning_content=reasoning if isinstance(reasoning, str) else None,
    )


def _text_of_parts(parts: list[Any]) -> str:
    """The text of a list of content parts, and a note for every image dropped from it."""
    texts: list[str] = []
    images = broken = 0
    for p in parts:
        if not isinstance(p, dict):
            continue
        text = p.get("text")
        if isinstance(text, str):
            texts.append(text)
        elif p.get("type") in ("image_url", "image") or "image_url" in p:
            images += 1
            if not _readable_image(p):
                broken += 1
    joined = "".join(texts)
    if images:
        why = f"{broken} of them with malformed base64 data; " if broken else ""
        note = f"[{images} image(s) in this reply were dropped ({why}assistant turns keep text)]"
        joined = f"{joined}\n{note}" if joined else note
    return joined


def _readable_image(part: dict[str, Any]) -> bool:
    """Whether an image part's inline ``data:`` URL decodes (remote URLs count as readable)."""
    image = part.get("image_url")
    url = image.get("url") if isinstance(image, dict) else image
    if not isinstance(url, str):
        return False
    if not url.startswith("data:"):
        return True
    head, sep, payload = url.partition(",")
    if not sep:
        return False
    if not head.endswith(";base64"):
        return True
    try:
        base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def _tokens(usage: Any) -> tuple[int, int] | None:
    """(prompt, completion) tokens of a reply's ``usage``, None when it has none that reads."""
    if not isinstance(usage, dict):
        return None
    try:
        return max(0, int(usage.get("prompt_tokens") or 0)), max(
            0, int(usage.get("completion_tokens") or 0)
        )
    except (TypeError, ValueError, OverflowError):
        return None


def _snippet(raw: bytes) -> str:
    text = raw[:120].decode("utf-8", "replace")
    return repr(text) + (f" ... ({len(raw)} bytes)" if len(raw) > 120 else "")


def _status_error(status: int, raw: bytes) -> str:
    """``HTTP <status>: <the server's message>``, from an OpenAI error body when there is one."""
    text = ""
    try:
        data = orjson.loads(raw)
        err = data.get("error") if isinstance(data, dict) else None
        if isinstance(err, dict):
            text = str(err.get("message") or "")
        elif isinstance(err, str):
            text = err
        elif isinstance(data, dict) and isinstance(data.get("detail"), str):
            text = data["detail"]
    except (orjson.JSONDecodeError, TypeError):
        pass
    if not text:
        text = raw.decode("utf-8", "replace").strip()
    text = text.splitlines()[0] if text else "(empty body)"
    return f"HTTP {status}: {text[:200]}"


def _describe(e: BaseException) -> str:
    text = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return f"{type(e).__name__}: {text[:200]}" if text else type(e).__name__


def _env_proxy(url: str) -> tuple[str | None, aiohttp.BasicAuth | None]:
    """The proxy HTTP(S)_PROXY / NO_PROXY give for ``url``, as the SDK would use."""
    from aiohttp.helpers import get_env_proxy_for_url
    from yarl import URL

    try:
        proxy, auth = get_env_proxy_for_url(URL(url))
    except LookupError:
        return None, None
    return str(proxy), auth
