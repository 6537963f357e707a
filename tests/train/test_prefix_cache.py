"""The reference model's prompt cache: what it reuses equals a pass over the whole prompt."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from tiny_lm import tiny_model, tiny_tokenizer  # noqa: E402

from agentharness.train.prefix_cache import MIN_REUSED_TOKENS, PrefixCache  # noqa: E402

VOCAB = len(tiny_tokenizer())


@pytest.fixture(scope="module", autouse=True)
def one_thread() -> Iterator[None]:
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def random_ids(n: int, seed: int) -> list[int]:
    g = torch.Generator().manual_seed(seed)
    return list(torch.randint(3, VOCAB, (n,), generator=g).tolist())


def full_pass(backbone: Any, ids: list[int]) -> list[tuple[Any, Any]]:
    cache = backbone(input_ids=torch.tensor([ids]), use_cache=True).past_key_values
    return [(layer.keys, layer.values) for layer in cache.layers]


def assert_kv_close(got: list[tuple[Any, Any]], want: list[tuple[Any, Any]]) -> None:
    assert len(got) == len(want)
    for (k, v), (k0, v0) in zip(got, want, strict=True):
        torch.testing.assert_close(k, k0, atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(v, v0, atol=1e-5, rtol=1e-5)


@torch.no_grad()
def test_a_prompt_that_starts_like_one_read_computes_only_the_rest() -> None:
    backbone = tiny_model(tiny_tokenizer()).eval().model
    cache = PrefixCache(2**30)
    system = random_ids(30, seed=0)
    first, second = system + random_ids(12, seed=1), system + random_ids(9, seed=2)

    assert_kv_close(cache.keys_values(backbone, torch.tensor(first)), full_pass(backbone, first))
    assert (cache.reused_tokens, cache.computed_tokens) == (0, 42)
    assert_kv_close(cache.keys_values(backbone, torch.tensor(second)), full_pass(backbone, second))
    assert (cache.reused_tokens, cache.computed_tokens) == (30, 42 + 9)
    # the same prompt again, and a start of one: nothing computed
    assert_kv_close(cache.keys_values(backbone, torch.tensor(first)), full_pass(backbone, first))
    assert_kv_close(
        cache.keys_values(backbone, torch.tensor(first[:35])), full_pass(backbone, first[:35])
    )
    assert (cache.reused_tokens, cache.computed_tokens) == (30 + 42 + 35, 51)
    # a start shorter than MIN_REUSED_TOKENS is computed again
    short = system[: MIN_REUSED_TOKENS - 1] + random_ids(5, seed=3)
    assert_kv_close(cache.keys_values(backbone, torch.tensor(short)), full_pass(backbone, short))
    assert cache.computed_tokens == 51 + len(short)


@torch.no_grad()
def test_prompts_past_the_limit_are_dropped_least_recently_used_first() -> None:
    backbone = tiny_model(tiny_tokenizer()).eval().model
    one = PrefixCache(1e12)
    one.keys_values(backbone, torch.tensor(random_ids(40, seed=0)))
    per_prompt = one.held_bytes
    cache = PrefixCache(2.5 * per_prompt)
    a, b, c = (random_ids(40, seed=s) for s in (0, 1, 2))
    cache.keys_values(backbone, torch.tensor(a))
    cache.keys_values(backbone, torch.tensor(b))
    cache.keys_values(backbone, torch.tensor(a))  # a is now the more recent
    cache.keys_values(backbone, torch.tensor(c))  # drops b
    assert len(cache) == 2 and cache.held_bytes <= cache.limit_bytes
    computed = cache.computed_tokens
    cache.keys_values(backbone, torch.tensor(a))
    assert cache.computed_tokens == computed
    cache.keys_values(backbone, torch.tensor(b))
    assert cache.computed_tokens == computed + 40
    # a prompt larger than the whole limit is returned, not kept
    small = PrefixCache(per_prompt / 2)
    assert_kv_close(small.keys_values(backbone, torch.tensor(a)), full_pass(backbone, a))
    assert len(small) == 0


def test_the_cache_refuses_gradients_and_a_size_of_nothing() -> None:
    backbone = tiny_model(tiny_tokenizer()).model
    with pytest.raises(RuntimeError, match="without gradients"):
        PrefixCache(2**20).keys_values(backbone, torch.tensor(random_ids(20, seed=0)))
    with pytest.raises(ValueError, match="positive size"):
        PrefixCache(0)
