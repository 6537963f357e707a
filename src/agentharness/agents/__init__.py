"""Agents: ``openai``, ``local``, and the scripted ``expert``, ``noisy:<rate>``, ``random``."""

from __future__ import annotations

from typing import Any

from agentharness.agents.base import Agent, AgentError, AgentTurn, Policy
from agentharness.agents.scripted import ExpertAgent, NoisyAgent, NothingAgent, RandomAgent

AGENT_KINDS = (
    "openai",
    "local",
    "expert",
    "noisy:<rate>[:<spoil>]",
    "random",
    "nothing",
    "lazy:defaults|minimum|maximum|echo|passive",
)


def make_agent(
    kind: str,
    *,
    model: str | None = None,
    base_url: str | None = None,
    concurrency: int = 64,
    seed: int = 0,
    sampling: dict[str, Any] | None = None,
    tool_format: str = "native",
) -> Agent:
    """An agent from its command-line name."""
    if kind == "expert":
        return ExpertAgent()
    if kind == "random":
        return RandomAgent(seed=seed)
    if kind == "nothing":
        return NothingAgent()
    if kind.startswith("lazy:"):
        return _lazy_agent(kind)
    if kind.startswith("noisy"):
        parts = kind.split(":")[1:] or ["0.3"]
        try:
            rate = float(parts[0] or 0.3)
            spoil = float(parts[1]) if len(parts) > 1 else rate
            if len(parts) > 2:
                raise ValueError(kind)
            return NoisyAgent(rate, seed=seed, spoil=spoil)
        except ValueError as e:
            raise ValueError(
                f"bad noisy agent {kind!r}: write noisy:<rate>[:<spoil>] with values in [0, 1], "
                "e.g. noisy:0.3"
            ) from e
    if kind == "openai":
        from agentharness.agents.openai_agent import OpenAIAgent

        if not model:
            raise ValueError("--agent openai needs --model (the model name the server serves)")
        return OpenAIAgent(
            model,
            base_url=base_url,
            concurrency=concurrency,
            sampling=sampling,
            tool_format=tool_format,
        )
    if kind == "local":
        from agentharness.agents.local import DEFAULT_MODEL, LocalAgent

        extra = dict(sampling or {})
        return LocalAgent(
            model or DEFAULT_MODEL,
            seed=seed,
            temperature=float(extra.get("temperature", 0.7)),
            max_new_tokens=int(extra.get("max_tokens", 256)),
            max_batch=concurrency,  # episodes in flight are decoded together
        )
    raise ValueError(f"unknown agent {kind!r}; choose one of {', '.join(AGENT_KINDS)}")


def _lazy_agent(kind: str) -> Agent:
    from agentharness.agents.lazy import EchoAgent, PassiveAgent, SubmitAgent

    what = kind.partition(":")[2]
    if what in ("defaults", "minimum", "maximum"):
        return SubmitAgent(what)  # type: ignore[arg-type]
    for prefix, make in (("echo", EchoAgent), ("passive", PassiveAgent)):
        if what.startswith(prefix) and (what[len(prefix) :] or "0").isdigit():
            return make(int(what[len(prefix) :] or 0))
    raise ValueError(
        f"unknown lazy agent {kind!r}; choose lazy:defaults, lazy:minimum, lazy:maximum, "
        "lazy:echo[N] or lazy:passive[N]"
    )


__all__ = [
    "AGENT_KINDS",
    "Agent",
    "AgentError",
    "AgentTurn",
    "ExpertAgent",
    "NoisyAgent",
    "NothingAgent",
    "Policy",
    "RandomAgent",
    "make_agent",
]
