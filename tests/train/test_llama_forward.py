"""The decoder's own Llama pass: the same logits as the model's forward, for every kind of
feed (a read, decoding steps of forked rows over their shared prefix, drafts), and no pass
at all for a model it does not cover."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("transformers", reason="needs the 'local' extra")

import torch
from tiny_lm import tiny_model, tiny_tokenizer

import agentharness.train.decode as decode
from agentharness.train.decode import Decoder, sampler
from agentharness.train.llama_forward import LlamaForward


@pytest.fixture(scope="module")
def tiny() -> Iterator[Any]:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield tiny_model(tiny_tokenizer())
    finally:
        torch.set_num_threads(threads)


def play(net: Any, llama_forward: bool) -> list[Any]:
    """Every logit tensor a fixed script of feeds gives: a prompt read, forked rows decoding
    (one of them reading a reply mid-way), then drafts verified in one pass."""
    saved = decode.LLAMA_FORWARD
    decode.LLAMA_FORWARD = llama_forward
    try:
        gen = torch.Generator().manual_seed(0)
        decoder = Decoder(net, 3)
        assert (decoder._llama is not None) == llama_forward
        root = decoder.open()
        seen = [decoder.step({root: torch.randint(0, 300, (60,), generator=gen).tolist()})[root]]
        seqs = decoder.fork(root, 3)
        for i in range(6):
            feeds = {s: [int(torch.randint(0, 300, (1,), generator=gen))] for s in seqs}
            if i == 3:
                feeds[seqs[1]] += torch.randint(0, 300, (20,), generator=gen).tolist()
                seen.append(decoder.step({seqs[1]: feeds.pop(seqs[1])})[seqs[1]])
            seen += decoder.step(feeds).values()
        drafts = {
            s: torch.randint(0, 300, (1 + k,), generator=gen).tolist() for k, s in enumerate(seqs)
        }
        seen += decoder.extend(drafts).values()
        return seen
    finally:
        decode.LLAMA_FORWARD = saved


def test_the_llama_pass_gives_the_models_own_logits(tiny: Any) -> None:
    own, lean = play(tiny, False), play(tiny, True)
    assert len(own) == len(lean) > 20
    for a, b in zip(own, lean, strict=True):
        assert a.shape == b.shape
        assert torch.allclose(a, b, atol=1e-5)


def test_wide_products_in_blocks_give_the_same_logits(
    tiny: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Products split into blocks of output rows (ragged last block; the 60-token read
    above the few-rows limit keeps one product) give the one product's logits, up to the
    summation order of a block's kernel."""
    from agentharness.train import llama_forward

    monkeypatch.setattr(llama_forward, "ONEDNN_PRODUCTS", False)  # the fallback's products
    monkeypatch.setattr(llama_forward, "SPLIT_MIN_OUT", 16)
    monkeypatch.setattr(llama_forward, "SPLIT_BLOCK_ROWS", 7)
    monkeypatch.setattr(llama_forward, "SPLIT_MAX_TOKENS", 8)
    monkeypatch.setattr(llama_forward, "SPLIT_PRODUCTS", False)
    whole = play(tiny, True)
    monkeypatch.setattr(llama_forward, "SPLIT_PRODUCTS", True)
    forward = LlamaForward(tiny)
    assert forward.head.blocks is not None and len(forward.head.blocks) > 2
    blocks = play(tiny, True)
    assert len(whole) == len(blocks)
    for a, b in zip(whole, blocks, strict=True):
        assert torch.allclose(a, b, atol=1e-5)


def test_onednn_products_give_the_same_logits(tiny: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """float32 products through oneDNN's packed weights (the default where torch has it)
    give the logits of plain products, up to summation order."""
    from agentharness.train import llama_forward

    if llama_forward._packed(torch.zeros(4, 4)) is None:
        pytest.skip("this torch has no oneDNN products")
    monkeypatch.setattr(llama_forward, "ONEDNN_PRODUCTS", False)
    plain = play(tiny, True)
    monkeypatch.setattr(llama_forward, "ONEDNN_PRODUCTS", True)
    forward = LlamaForward(tiny)
    assert forward.head.packed is not None and forward.head.weight is None
    packed = play(tiny, True)
    assert len(plain) == len(packed) > 20
    for a, b in zip(plain, packed, strict=True):
        assert torch.allclose(a, b, atol=1e-5)


def test_in_bfloat16_it_is_as_close_to_the_float32_model_as_the_models_own_pass(tiny: Any) -> None:
    """A bfloat16 copy's keys, values and attention scores are rounded to bfloat16 (the
    model's own bfloat16 forward keeps float32 scores): the log-probabilities stay as close
    to the float32 model's as the model's own bfloat16 pass is."""
    exact = play(tiny, False)
    copy = sampler(tiny, "bfloat16")
    own, lean = play(copy, False), play(copy, True)

    def gaps(seen: list[Any]) -> Any:
        return torch.stack(
            [
                (torch.log_softmax(a, -1) - torch.log_softmax(b, -1)).abs().max()
                for a, b in zip(seen, exact, strict=True)
            ]
        )

    own_gap, lean_gap = gaps(own), gaps(lean)
    assert float(lean_gap.max()) <= 1.5 * float(own_gap.max())
    assert float(lean_gap.mean()) <= 1.5 * float(own_gap.mean())


def test_models_it_does_not_cover_decode_through_their_own_forward() -> None:
    tok = tiny_tokenizer()
    plain = tiny_model(tok)
    assert LlamaForward.build(plain) is not None
    biased = tiny_model(tok)
    biased.config.attention_bias = True
    assert LlamaForward.build(biased) is None
    dynamic = tiny_model(tok)
    dynamic.config.rope_parameters = {"rope_type": "dynamic", "rope_theta": 10000.0, "factor": 2.0}
    assert LlamaForward.build(dynamic) is None
    other = tiny_model(tok)
    other.config.model_type = "mistral"
    assert LlamaForward.build(other) is None
    decoder = Decoder(biased, 1)
    assert decoder._llama is None
    root = decoder.open()
    logits = decoder.step({root: [5, 6, 7]})[root]
    with torch.no_grad():
        expected = biased(input_ids=torch.tensor([[5, 6, 7]])).logits[0, -1]
    assert torch.allclose(logits, expected, atol=1e-5)
