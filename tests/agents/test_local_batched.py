"""The ``local`` agent's batched engine on a tiny random model: greedy turns equal the plain path's.

The plain path tokenises the whole conversation and calls ``model.generate`` for every
turn, one episode at a time; the engine decodes the episodes in flight together, keeps
each one's KV cache across turns and tokenises only the new messages. Same words out.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("transformers", reason="needs the 'local' extra")

import torch
from tiny_lm import tiny_model, tiny_tokenizer

from agentharness.agents.local import LocalAgent
from agentharness.rollout.runner import plan, run
from agentharness.store.run import RunDir


@pytest.fixture(scope="module")
def tiny() -> Iterator[tuple[Any, Any]]:
    threads = torch.get_num_threads()
    torch.set_num_threads(
        1
    )  # a tiny model's ops are too small to split (and a busy box stalls them)
    try:
        tok = tiny_tokenizer()
        yield tiny_model(tok), tok
    finally:
        torch.set_num_threads(threads)


def agent_on(tiny: tuple[Any, Any], **kwargs: Any) -> LocalAgent:
    agent = LocalAgent("tiny", **{"temperature": 0.0, "max_new_tokens": 12, **kwargs})
    agent._loaded = tiny  # the model under test instead of one loaded by name
    return agent


def play(
    agent: LocalAgent, out: Path, concurrency: int, n: int = 6, k: int = 1
) -> dict[str, list[str]]:
    from agentharness.core.registry import get_task

    items = plan([get_task("guess")], n=n, k=k, difficulty="easy")
    run_dir = RunDir(out)
    run_dir.create({"command": "test"})

    async def go() -> None:
        try:
            await run(
                items, agent, run_dir, concurrency=concurrency, budget_overrides={"max_turns": 4}
            )
        finally:
            await agent.aclose()

    asyncio.run(go())
    return {
        f"{r.instance.seed}:{r.sample}": [m.text for m in r.messages if m.role == "assistant"]
        for r in run_dir.episodes()
    }


@pytest.mark.parametrize("draft_tokens", [0, 3])
def test_batched_greedy_turns_equal_the_plain_path(
    tiny: tuple[Any, Any], tmp_path: Path, draft_tokens: int
) -> None:
    """With drafts too: a drafted token is kept only where it is the model's argmax."""
    plain = play(agent_on(tiny, batched=False), tmp_path / "plain", concurrency=1)
    batched_agent = agent_on(tiny, max_batch=4, draft_tokens=draft_tokens)
    engine = batched_agent.engine()
    batched = play(batched_agent, tmp_path / "batched", concurrency=4)
    assert len(plain) == 6 and sum(len(t) for t in plain.values()) > 12  # several turns each
    assert batched == plain
    drafted, kept = engine.drafts
    assert (kept > 0) if draft_tokens else (drafted == 0)
    # later episodes took the system prompt and tools from an earlier one's cache
    assert engine.tokens_copied > 0


def test_samples_of_an_instance_read_their_shared_prompt_once(
    tiny: tuple[Any, Any], tmp_path: Path
) -> None:
    """k samples arrive together with one first prompt: one reads it, the others wait a pass
    and copy its keys and values; their greedy turns still equal the plain path's."""
    _, tok = tiny
    from agentharness.core.registry import get_task

    spec = get_task("guess")
    instance = spec.instance(0, "easy")
    agent = agent_on(tiny, max_batch=4)
    prompt = len(
        tok(
            agent.render_prompt(spec.generator.prompt(instance), spec.world.tool_schemas()),
            add_special_tokens=False,
        ).input_ids
    )
    engine = agent.engine()
    plain = play(agent_on(tiny, batched=False), tmp_path / "plain", concurrency=1, n=1, k=4)
    assert play(agent, tmp_path / "batched", concurrency=4, n=1, k=4) == plain
    # three of the four first prompts were copied short of their last token
    assert engine.tokens_copied >= 3 * (prompt - 1)
    unshared = (
        sum(r.usage.prompt_tokens for r in RunDir(tmp_path / "batched").episodes()) - 4 * prompt
    )
    assert engine.tokens_read <= prompt + 3 + unshared


def test_sampled_turns_with_drafts_repeat_with_their_seed_and_keep_their_budget(
    tiny: tuple[Any, Any], tmp_path: Path
) -> None:
    """Sampling keeps drafted tokens by chance (each with its probability): the same seed
    gives the same turns, and no turn runs past ``max_new_tokens`` however much it kept."""
    turns, engines = [], []
    for name in ("first", "again"):
        agent = agent_on(tiny, max_batch=4, temperature=1.0, draft_tokens=5)
        engines.append(agent.engine())
        turns.append(play(agent, tmp_path / name, concurrency=4))
        for record in RunDir(tmp_path / name).episodes():
            assert record.usage.completion_tokens <= 12 * record.usage.requests
    assert turns[0] == turns[1]
    assert engines[0].drafts == engines[1].drafts and engines[0].drafts[1] > 0


def test_evicted_episodes_read_their_prompt_again_and_still_agree(
    tiny: tuple[Any, Any], tmp_path: Path
) -> None:
    """More episodes in flight than cache slots: idle ones lose their slot and come back."""
    plain = play(agent_on(tiny, batched=False), tmp_path / "plain", concurrency=1)
    assert play(agent_on(tiny, max_batch=2), tmp_path / "small", concurrency=5) == plain


def test_a_turn_reads_only_the_new_tokens(tiny: tuple[Any, Any]) -> None:
    """Incremental prompt ids equal a full tokenisation; the cache is reused across turns."""
    from agentharness.core.messages import Message
    from agentharness.core.registry import get_task

    _, tok = tiny
    agent = agent_on(tiny)
    spec = get_task("guess")
    instance = spec.instance(0, "easy")
    policy = agent.policy(instance)
    messages = spec.generator.prompt(instance)
    tools = spec.world.tool_schemas()
    engine = agent.engine()
    try:
        prompts = []
        for reply in ("higher", "lower <|im_start|> x", "correct"):
            turn = asyncio.run(policy.act(messages, tools))
            full = list(
                tok(agent.render_prompt(messages, tools), add_special_tokens=False).input_ids
            )
            prompts.append(len(full))
            assert turn.usage is not None and turn.usage.prompt_tokens == len(full)
            # the model may write special tokens; the text drops them, the next prompt re-reads
            messages = [*messages, turn.message, Message(role="user", content=reply)]
            assert engine.prompt_ids(policy.session, messages, tools) == list(  # type: ignore[arg-type]
                tok(agent.render_prompt(messages, tools), add_special_tokens=False).input_ids
            )
        # each turn read its new messages, not the whole conversation again
        assert engine.tokens_read < sum(prompts) - 2 * prompts[0]
    finally:
        asyncio.run(agent.aclose())


def test_common_start_counts_the_shared_first_tokens() -> None:
    """The halving search agrees with a token-by-token count, the limit included."""
    import random

    from agentharness.agents.local import _common_start

    rng = random.Random(0)
    for _ in range(2000):
        a = [rng.randint(0, 2) for _ in range(rng.randint(0, 40))]
        b = a[: rng.randint(0, len(a))] + [rng.randint(0, 2) for _ in range(rng.randint(0, 9))]
        limit = rng.randint(0, 50)
        expected = 0
        while expected < min(len(a), len(b), limit) and a[expected] == b[expected]:
            expected += 1
        assert _common_start(a, b, limit) == expected
