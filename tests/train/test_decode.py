"""The batched decoder and the GRPO roller on a tiny random model: what is computed with the
KV cache kept across turns must equal one unbatched forward pass over the whole sequence."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("transformers", reason="needs the 'local' extra")

import torch
from tiny_lm import tiny_model, tiny_tokenizer

from agentharness.core.registry import get_task
from agentharness.train import grpo
from agentharness.train.chat import plain_chat, render
from agentharness.train.decode import ATTENTION, Decoder, sampler
from agentharness.train.grpo import EpisodeRoller, GRPOOptions


@pytest.fixture(scope="module")
def tiny() -> Iterator[tuple[Any, Any]]:
    threads = torch.get_num_threads()
    # A tiny model's ops are too small to split over threads (and a busy box stalls them).
    torch.set_num_threads(1)
    try:
        tok = tiny_tokenizer()
        yield tiny_model(tok), tok
    finally:
        torch.set_num_threads(threads)


def full_logp(net: Any, ids: list[int]) -> Any:
    """Log-probabilities after every position, by one plain forward pass."""
    with torch.no_grad():
        return torch.log_softmax(net(input_ids=torch.tensor([ids])).logits[0].float(), -1)


def test_decoder_rows_compute_what_one_forward_pass_does(tiny: tuple[Any, Any]) -> None:
    """Forked, idle, cropped, closed and moved sequences, with feeds of different widths."""
    net, _ = tiny
    gen = torch.Generator().manual_seed(0)
    prompt = torch.randint(0, 300, (230,), generator=gen).tolist()
    decoder = Decoder(net, 2)  # fewer slots than sequences: the cache grows
    root = decoder.open()
    last = {root: decoder.step({root: prompt})[root]}
    seqs = decoder.fork(root, 4)
    ids = {s: list(prompt) for s in seqs}
    last.update({s: last[root] for s in seqs})
    for i in range(40):  # past the first capacity (256): the buffers grow mid-decoding
        feeds: dict[int, list[int]] = {}
        for k, s in enumerate(seqs):
            if k == 2 and i % 3:  # idles most steps: a dummy row in the others' passes
                continue
            token = int(torch.argmax(last[s]))
            feeds[s] = [token]
            if k == 1 and i % 10 == 7:  # an environment reply: read in a pass of its own
                feeds[s] += torch.randint(0, 300, (9,), generator=gen).tolist()
            ids[s] += feeds[s]
        if i == 20:
            decoder.crop(seqs[3], len(prompt) + 5)  # roll back, then go on from there
            ids[seqs[3]] = ids[seqs[3]][: len(prompt) + 5]
            feeds[seqs[3]] = [7]
            ids[seqs[3]].append(7)
        if i == 30:
            decoder.close(seqs[0])  # the last slot moves into the hole
            for d in (feeds, ids):
                d.pop(seqs[0], None)
            seqs = seqs[1:]
        last.update(decoder.step(feeds))
    assert max(len(ids[s]) for s in seqs) > 256
    for s in seqs:
        assert decoder.length(s) == len(ids[s])
        expected = full_logp(net, ids[s])[-1]
        assert torch.allclose(torch.log_softmax(last[s], -1), expected, atol=1e-4)
    assert net.config._attn_implementation != ATTENTION  # restored after each pass


def test_rollout_logprobs_equal_a_full_forward_pass(tiny: tuple[Any, Any]) -> None:
    """Each sampled token's recorded log-probability is the one an unbatched forward pass over
    the episode gives; sampled and environment tokens decode to the conversation as rendered."""
    net, tok = tiny
    opts = GRPOOptions(max_turns=3, max_new_tokens=12, max_completion_length=600, temperature=0.7)
    roller = EpisodeRoller(net, tok, opts)
    rollouts = roller.play_group(get_task("guess").instance(0, "easy"), 4, seed=3)
    assert len({tuple(r.completion_ids) for r in rollouts}) == 4  # independent samples
    assert any(r.turns > 1 for r in rollouts)
    for r in rollouts:
        assert len(r.completion_ids) == len(r.env_mask) == len(r.logprobs)
        logp = full_logp(net, r.prompt_ids + r.completion_ids)
        start = len(r.prompt_ids) - 1
        for i, (token, sampled) in enumerate(zip(r.completion_ids, r.env_mask, strict=True)):
            if sampled:  # recorded under the sampling distribution (temperature 0.7)
                scaled = torch.log_softmax(logp[start + i] / 0.7, -1)
                assert float(scaled[token]) == pytest.approx(r.logprobs[i], abs=1e-4)
        chat = plain_chat(r.record.messages, r.record.tools)
        text = tok.decode(r.prompt_ids + r.completion_ids, skip_special_tokens=False)
        assert render(tok, chat, generation_prompt=False).startswith(text)


def test_a_group_decodes_on_from_a_prompt_pass_given_to_it(tiny: tuple[Any, Any]) -> None:
    """With ``prompt_pass`` (the training pass's prompt forward, in a trainer) the group
    reads only the prompt's last token and samples what it samples reading it all."""
    net, tok = tiny
    opts = GRPOOptions(max_turns=2, max_new_tokens=12, max_completion_length=600, temperature=0.7)
    instance = get_task("guess").instance(0, "easy")
    roller = EpisodeRoller(net, tok, opts)
    alone = roller.play_group(instance, 3, seed=5)
    read_alone = roller.stats["read"][1]
    given: list[int] = []

    def prompt_pass(ids: list[int]) -> list[tuple[Any, Any]]:
        given.append(len(ids))
        with torch.no_grad():
            cache = net.model(input_ids=torch.tensor([ids[:-1]]), use_cache=True).past_key_values
        return [(layer.keys, layer.values) for layer in cache.layers]

    roller.prompt_pass = prompt_pass
    passed = roller.play_group(instance, 3, seed=5)
    prompt = len(alone[0].prompt_ids)
    assert given == [prompt]
    assert roller.stats["read"][1] == read_alone - prompt
    for a, b in zip(alone, passed, strict=True):
        assert a.completion_ids == b.completion_ids
        assert a.logprobs == pytest.approx(b.logprobs, abs=1e-4)


def test_greedy_rollout_logprobs_are_exact(tiny: tuple[Any, Any]) -> None:
    net, tok = tiny
    opts = GRPOOptions(max_turns=3, max_new_tokens=10, max_completion_length=600, temperature=0)
    (r,) = EpisodeRoller(net, tok, opts).play_group(get_task("guess").instance(1, "easy"), 1, 0)
    logp = full_logp(net, r.prompt_ids + r.completion_ids)
    start = len(r.prompt_ids) - 1
    sampled = [i for i, m in enumerate(r.env_mask) if m]
    assert sampled and r.turns > 1
    for i in sampled:
        token = r.completion_ids[i]
        assert int(torch.argmax(logp[start + i])) == token
        assert float(logp[start + i, token]) == pytest.approx(r.logprobs[i], abs=1e-4)


def test_bfloat16_sampling_stays_close_to_the_float32_model(tiny: tuple[Any, Any]) -> None:
    """A bfloat16 copy samples; its log-probabilities are the float32 model's up to rounding."""
    net, tok = tiny
    opts = GRPOOptions(
        max_turns=2, max_new_tokens=10, max_completion_length=600, rollout_dtype="bfloat16"
    )
    before = {k: v.clone() for k, v in net.state_dict().items()}
    rollouts = EpisodeRoller(net, tok, opts).play_group(get_task("guess").instance(2, "easy"), 2, 1)
    assert all(torch.equal(before[k], v) for k, v in net.state_dict().items())  # untouched
    assert next(net.parameters()).dtype == torch.float32
    diffs = []
    for r in rollouts:
        logp = full_logp(net, r.prompt_ids + r.completion_ids)
        start = len(r.prompt_ids) - 1
        for i, (token, sampled) in enumerate(zip(r.completion_ids, r.env_mask, strict=True)):
            if sampled:
                diffs.append(abs(float(logp[start + i, token]) - r.logprobs[i]))
    assert diffs and max(diffs) < 0.25 and sum(diffs) / len(diffs) < 0.05
    with pytest.raises(ValueError, match="float32 or bfloat16"):
        sampler(net, "int3")


def test_a_reused_bfloat16_copy_gets_the_current_weights() -> None:
    """The copy a GRPO roller keeps between groups is refreshed in place: after the model's
    weights change it computes exactly what a fresh copy computes."""
    tok = tiny_tokenizer()
    net = tiny_model(tok)
    ids = torch.tensor([list(range(5, 25))])
    first = sampler(net, "bfloat16")
    with torch.no_grad():
        for p in net.parameters():
            p.mul_(1.5).add_(0.01)
        again = sampler(net, "bfloat16", reuse=first)
        assert again is first
        assert next(again.parameters()).dtype == torch.bfloat16
        fresh = sampler(net, "bfloat16")
        torch.testing.assert_close(
            again(input_ids=ids).logits, fresh(input_ids=ids).logits, atol=0, rtol=0
        )
        assert sampler(net, "float32", reuse=first) is net


def test_inference_mode_decodes_the_same_tokens_as_no_grad(tiny: tuple[Any, Any]) -> None:
    """``decode.INFERENCE_MODE`` changes autograd's bookkeeping only: same samples, same
    log-probabilities (bench/rollout_overheads.py times the two)."""
    from agentharness.train import decode

    net, tok = tiny
    opts = GRPOOptions(max_turns=2, max_new_tokens=10, max_completion_length=600)
    instance = get_task("guess").instance(2, "easy")
    played = {}
    try:
        for mode in (True, False):
            decode.INFERENCE_MODE = mode
            rollouts = EpisodeRoller(net, tok, opts).play_group(instance, 3, 1)
            played[mode] = [(r.completion_ids, r.logprobs) for r in rollouts]
    finally:
        decode.INFERENCE_MODE = True
    assert played[True] == played[False]


def test_extend_gives_the_logits_after_every_fed_token(tiny: tuple[Any, Any]) -> None:
    """Rows fed different numbers of tokens in one pass (the shorter padded past their end),
    then cropped back and fed again: every position's logits are a full forward pass's."""
    net, _ = tiny
    gen = torch.Generator().manual_seed(1)
    prompt = torch.randint(0, 300, (40,), generator=gen).tolist()
    decoder = Decoder(net, 3)
    root = decoder.open()
    decoder.step({root: prompt})
    seqs = decoder.fork(root, 3)
    ids = {s: list(prompt) for s in seqs}
    for round_ in range(3):
        feeds = {
            s: torch.randint(0, 300, (1 + (k + round_) % 4,), generator=gen).tolist()
            for k, s in enumerate(seqs)
        }
        seen = decoder.extend(feeds)
        for s, fed in feeds.items():
            expected = full_logp(net, ids[s] + fed)[len(ids[s]) :]
            assert seen[s].shape[0] == len(fed)
            assert torch.allclose(torch.log_softmax(seen[s], -1), expected, atol=1e-4)
            keep = max(1, len(fed) - 1)  # drop the last token, as a refused draft is dropped
            decoder.crop(s, len(ids[s]) + keep)
            ids[s] += fed[:keep]
    for s in seqs:
        assert decoder.length(s) == len(ids[s])


@pytest.mark.parametrize("temperature", [0.0, 0.7])
def test_drafted_rollouts_are_exact(tiny: tuple[Any, Any], temperature: float) -> None:
    """With drafts verified by the model, a sampled token's recorded log-probability is still
    a full forward pass's, and greedy rollouts are the undrafted ones token for token."""
    net, tok = tiny
    instance = get_task("guess").instance(4, "easy")
    played = {}
    for draft_tokens in (0, 4):
        opts = GRPOOptions(
            max_turns=3,
            max_new_tokens=24,
            max_completion_length=900,
            temperature=temperature,
            draft_tokens=draft_tokens,
        )
        roller = EpisodeRoller(net, tok, opts)
        played[draft_tokens] = roller.play_group(instance, 3, seed=2)
    assert roller.drafts[1] > 0  # some drafts were verified and kept
    for r in played[4]:
        assert len(r.completion_ids) == len(r.env_mask) == len(r.logprobs)
        logp = full_logp(net, r.prompt_ids + r.completion_ids)
        start = len(r.prompt_ids) - 1
        for i, (token, sampled) in enumerate(zip(r.completion_ids, r.env_mask, strict=True)):
            if sampled:
                scaled = torch.log_softmax(logp[start + i] / (temperature or 1.0), -1)
                assert float(scaled[token]) == pytest.approx(r.logprobs[i], abs=1e-4)
        chat = plain_chat(r.record.messages, r.record.tools)
        text = tok.decode(r.prompt_ids + r.completion_ids, skip_special_tokens=False)
        assert render(tok, chat, generation_prompt=False).startswith(text)
    if temperature == 0.0:
        assert [r.completion_ids for r in played[4]] == [r.completion_ids for r in played[0]]


def test_a_copied_read_continues_like_its_own(tiny: tuple[Any, Any]) -> None:
    """``Decoder.copy`` gives a sequence the keys and values another computed for the same
    tokens: decoding on from the copy gives a full forward pass's log-probabilities."""
    net, _ = tiny
    decoder = Decoder(net, 2)
    prompt = list(range(5, 40))
    root = decoder.open()
    decoder.step({root: prompt})
    source, target = decoder.fork(root, 2)
    reply = list(range(60, 90))
    decoder.step({source: reply})
    decoder.step({source: [7]})  # the source goes on; the copy takes only what it needs
    decoder.copy(source, target, len(prompt) + len(reply))
    assert decoder.length(target) == len(prompt) + len(reply)
    logits = decoder.step({target: [9]})[target]
    expected = full_logp(net, prompt + reply + [9])[-1]
    assert torch.allclose(torch.log_softmax(logits, -1), expected, atol=1e-4)
    with pytest.raises(ValueError, match="cannot copy"):
        decoder.copy(source, target, decoder.length(source) + 1)


@pytest.mark.parametrize("llama_pass", [True, False])
def test_loaded_keys_and_values_continue_like_a_read(
    tiny: tuple[Any, Any], llama_pass: bool, monkeypatch: Any
) -> None:
    """``Decoder.load`` takes a prompt's keys and values from a transformers pass (the GRPO
    training pass's): decoding on from them, forked, gives a full forward pass's
    log-probabilities."""
    from agentharness.train import decode

    monkeypatch.setattr(decode, "LLAMA_FORWARD", llama_pass)
    net, _ = tiny
    prompt = torch.randint(0, 300, (300,), generator=torch.Generator().manual_seed(4)).tolist()
    with torch.no_grad():
        cache = net.model(input_ids=torch.tensor([prompt[:-1]]), use_cache=True).past_key_values
        decoder = Decoder(net, 2)
        root = decoder.open()
        decoder.load(root, [(layer.keys, layer.values) for layer in cache.layers])
        assert decoder.length(root) == len(prompt) - 1
        first = decoder.step({root: prompt[-1:]})[root]
        a, b = decoder.fork(root, 2)
        after = decoder.step({a: [11], b: [12]})
    expected = full_logp(net, [*prompt, 11])
    assert torch.allclose(torch.log_softmax(first, -1), expected[-2], atol=1e-4)
    assert torch.allclose(torch.log_softmax(after[a], -1), expected[-1], atol=1e-4)
    assert torch.allclose(
        torch.log_softmax(after[b], -1), full_logp(net, [*prompt, 12])[-1], atol=1e-4
    )
    with pytest.raises(ValueError, match="empty sequence"):
        decoder.load(a, [(layer.keys, layer.values) for layer in cache.layers])
    fresh = Decoder(net, 1)
    with pytest.raises(ValueError, match="layers of keys and values"):
        fresh.load(fresh.open(), [])


@pytest.mark.parametrize("draft_tokens", [0, 3])
def test_episodes_that_agree_read_each_reply_once(
    tiny: tuple[Any, Any], draft_tokens: int, monkeypatch: Any
) -> None:
    """Greedy episodes of a group agree turn after turn: each reply is read by one of them
    and copied to the others, and the rollouts are those of reading every reply."""
    net, tok = tiny
    instance = get_task("guess").instance(4, "easy")
    opts = GRPOOptions(
        max_turns=3,
        max_new_tokens=16,
        max_completion_length=900,
        temperature=0.0,
        draft_tokens=draft_tokens,
    )
    roller = EpisodeRoller(net, tok, opts)
    shared = roller.play_group(instance, 3, seed=1)
    assert all(r.turns > 1 for r in shared)
    assert roller.copied_reads == 2 * (shared[0].turns - 1)  # two of three rows, each turn

    def read_every_reply(self: Any, decoder: Any, rows: Any, replies: Any, known: Any) -> Any:
        return decoder.step(replies)

    monkeypatch.setattr(EpisodeRoller, "_read", read_every_reply)
    alone = EpisodeRoller(net, tok, opts).play_group(instance, 3, seed=1)
    for a, b in zip(shared, alone, strict=True):
        assert a.completion_ids == b.completion_ids and a.env_mask == b.env_mask
        assert a.logprobs == pytest.approx(b.logprobs, abs=1e-5)


@pytest.mark.parametrize("draft_tokens", [0, 3])
@pytest.mark.parametrize(("temperature", "seed"), [(0.1, 0), (0.05, 1), (0.0, 0)])
def test_rows_that_agree_decode_as_one_and_part_exactly(
    tiny: tuple[Any, Any], temperature: float, seed: int, draft_tokens: int, monkeypatch: Any
) -> None:
    """Episodes that have written the same tokens are decoded as one row until one draws
    another token (grpo.MERGE_AGREEING_ROWS): fewer rows a pass, and the rollouts, their
    log-probabilities and the conversations are those of every row decoding itself.
    Cases: rows that agree a while then all part (0.1), rows two of which agree to the
    end, following on across turns (0.05), and greedy rows that never part (0.0); with
    drafts, followers verify the row's draft each with its own generator."""
    net, tok = tiny
    instance = get_task("guess").instance(0, "easy")
    opts = GRPOOptions(
        max_turns=3,
        max_new_tokens=12,
        max_completion_length=600,
        temperature=temperature,
        draft_tokens=draft_tokens,
    )
    played, fed = {}, {}
    for merge in (True, False):
        monkeypatch.setattr(grpo, "MERGE_AGREEING_ROWS", merge)
        roller = EpisodeRoller(net, tok, opts)
        played[merge] = roller.play_group(instance, 4, seed=seed)
        fed[merge] = roller.stats["decode"][1]  # tokens fed to decoding passes
    merged, alone = played[True], played[False]
    distinct = len({tuple(r.completion_ids) for r in merged})
    assert distinct == {0.1: 4, 0.05: 2, 0.0: 1}[temperature] or draft_tokens
    assert all(r.turns == 3 for r in merged)
    assert fed[True] < fed[False]
    if temperature == 0.0:  # one row decodes for all four
        assert fed[True] * 4 == fed[False]
    for a, b in zip(merged, alone, strict=True):
        assert a.completion_ids == b.completion_ids and a.env_mask == b.env_mask
        # at temperature 0.1 a logit's last bits (a row of 1 against a row of 4) count x10
        assert a.logprobs == pytest.approx(b.logprobs, abs=1e-4)
        assert [m.text for m in a.record.messages] == [m.text for m in b.record.messages]
    for r in merged:  # a follower's log-probabilities are its own conversation's
        logp = full_logp(net, r.prompt_ids + r.completion_ids)
        start = len(r.prompt_ids) - 1
        for i, (token, sampled) in enumerate(zip(r.completion_ids, r.env_mask, strict=True)):
            if sampled and temperature > 0:
                scaled = torch.log_softmax(logp[start + i] / temperature, -1)
                assert float(scaled[token]) == pytest.approx(r.logprobs[i], abs=1e-4)
            elif sampled:
                assert token == int(logp[start + i].argmax())
