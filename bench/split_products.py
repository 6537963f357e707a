"""Wide float32 products in blocks of output rows against one product, A/B in one process.

Part 1 times the decoding pass's two wide products alone (gate/up: 576 -> 3,072; the
vocabulary head: 576 -> 49,152, SmolLM2's shapes) at the row counts a group's decoding
steps feed (8 rows, times 1 + drafts tokens), one product against 512-row blocks, and
checks that both give the same numbers. Part 2 plays the same GRPO group (same instance,
same sampling seed, a float32 sampling model) with ``llama_forward.SPLIT_PRODUCTS`` on and
off, alternating the order each round: the group's wall time, the milliseconds per
decoding pass, and whether both sampled the same tokens (they should: the products agree
bit for bit).

    python bench/split_products.py --task thermal --difficulty medium --max-new-tokens 192 \\
        --draft-tokens 3 --rounds 3

``--model`` defaults to the bundled SmolLM2-135M-Instruct. Figures: bench/RESULTS.md.
"""

from __future__ import annotations

import statistics
import time
from functools import partial
from typing import Any

import torch
import torch.nn.functional as F
from group_setup import compare_settings, group_parser, group_roller

from agentharness.train import llama_forward

MODES = {"blocks": True, "one product": False}


def product_ms(x: Any, weight: Any, blocks: tuple[Any, ...] | None, repeats: int = 30) -> float:
    """Median milliseconds of one product of ``x`` with ``weight`` (in ``blocks`` if given)."""
    times = []
    for _ in range(5):
        started = time.perf_counter()
        for _ in range(repeats):
            if blocks is None:
                F.linear(x, weight)
            else:
                torch.cat([F.linear(x, b) for b in blocks], dim=-1)
        times.append(1000 * (time.perf_counter() - started) / repeats)
    return statistics.median(times)


def products(rows: int, tokens: int) -> None:
    """Part 1: the two wide products alone, one product against blocks."""
    generator = torch.Generator().manual_seed(0)
    for name, (inp, out) in {"gate/up": (576, 3072), "head": (576, 49152)}.items():
        weight = torch.randn(out, inp, generator=generator) * 0.02
        blocks = tuple(weight.split(llama_forward.SPLIT_BLOCK_ROWS))
        x = torch.randn(rows, tokens, inp, generator=generator)
        same = torch.equal(F.linear(x, weight), torch.cat([F.linear(x, b) for b in blocks], -1))
        one, split = product_ms(x, weight, None), product_ms(x, weight, blocks)
        print(
            f"{name:>8} {rows}x{tokens} rows: one product {one:6.2f} ms, blocks {split:6.2f} ms, "
            f"{one / split:.2f}x, same numbers: {same}"
        )


def main() -> None:
    parser = group_parser(max_turns=4)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    for tokens in (1, 1 + args.draft_tokens):
        products(args.group, tokens)
    llama_forward.ONEDNN_PRODUCTS = False  # the blocks are oneDNN's fallback (onednn_products.py)
    _, _, roller, instance = group_roller(args, rollout_dtype="float32")
    print(
        f"{instance.task} ({args.difficulty}) seed {args.seed}, group {args.group}, "
        f"{args.threads} thread(s), drafts {args.draft_tokens}, float32 sampling model"
    )
    switches = {
        mode: partial(setattr, llama_forward, "SPLIT_PRODUCTS", on) for mode, on in MODES.items()
    }
    played = compare_settings(roller, instance, args, switches, baseline="one product")
    same = played["blocks"][-1].completion_ids == played["one product"][-1].completion_ids
    print(f"same tokens sampled both ways (last round): {same}")


if __name__ == "__main__":
    main()
