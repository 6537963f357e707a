"""What one attention call of the GRPO training pass costs, by how many tokens it computes.

A pass of the training pass's prefix tree runs some tokens (queries) over the whole context
(keys): SmolLM2-135M's shapes (9 query heads, 3 key-value heads, 64 dimensions), bfloat16,
a causal mask aligned to the end, forward and backward. The CPU flash-attention backward
has a fixed part (its key and value gradients over the whole context), which is why a
stretch shorter than ``grpo.MIN_SHARED_TOKENS`` is computed with each branch rather than
in a pass of its own; the math backend is shown beside it.

    python bench/attention_backward.py --keys 2400 --queries 1,8,32,76,209,630

Figures: bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel


def median_ms(run: Callable[[], None], repeats: int) -> float:
    run()  # warm-up
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return 1000 * statistics.median(times)


BACKENDS = (SDPBackend.FLASH_ATTENTION, SDPBackend.MATH)


def call(backend: SDPBackend, query: Any, key: Any, value: Any, mask: Any) -> None:
    """One attention call with ``backend``, forward and backward."""
    with sdpa_kernel(backend):
        out = torch.nn.functional.scaled_dot_product_attention(
            query, key, value, attn_mask=mask, enable_gqa=True
        )
    out.sum().backward()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--keys", type=int, default=2400)
    parser.add_argument("--queries", default="1,8,32,76,209,630")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    keys = args.keys
    print(f"{keys} keys, bfloat16, {args.threads} threads; ms per call (one layer), median")
    print("| queries | flash fwd+bwd | math fwd+bwd |")
    print("| ---: | ---: | ---: |")
    for q in (int(x) for x in args.queries.split(",")):
        query = torch.randn(1, 9, q, 64, dtype=torch.bfloat16, requires_grad=True)
        key = torch.randn(1, 3, keys, 64, dtype=torch.bfloat16, requires_grad=True)
        value = torch.randn(1, 3, keys, 64, dtype=torch.bfloat16, requires_grad=True)
        mask = torch.ones(q, keys, dtype=torch.bool).tril(keys - q)
        tensors = (query, key, value, mask)
        cells = [median_ms(functools.partial(call, b, *tensors), args.repeats) for b in BACKENDS]
        print(f"| {q} | {cells[0]:.1f} | {cells[1]:.1f} |")


if __name__ == "__main__":
    main()
