"""float32 products through oneDNN (packed weights) against MKL's, A/B in one process.

Part 1 times SmolLM2-135M's five products (q/k/v fused 576 -> 960, o 576 -> 576, gate/up
fused 576 -> 3,072, down 1,536 -> 576, the vocabulary head 576 -> 49,152) at the rows a
group's decoding steps feed (8, 32 with 3 drafts) and a read (512): ``F.linear`` (MKL's
sgemm), MKL in 512-row blocks where the decoder used them (``SPLIT_PRODUCTS``), and
oneDNN's kernels on a weight packed once (``torch.ops.mkldnn._linear_pointwise``), with the
largest difference from ``F.linear``. Part 2 plays the same GRPO group (same instance and
sampling seed, the float32 sampling model) with ``llama_forward.ONEDNN_PRODUCTS`` on and
off (off: the blocks), alternating the order each round: the group's wall time and the
milliseconds per decoding pass (the comparable figure: the two ways' logits differ in
summation order, so their samples may part and the groups differ in length).

    python bench/onednn_products.py --task thermal --difficulty medium --max-turns 2 \\
        --max-new-tokens 128 --draft-tokens 3 --rounds 2

``--model`` defaults to the bundled SmolLM2-135M-Instruct. Figures: bench/RESULTS.md.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import torch
import torch.nn.functional as F
from group_setup import compare_settings, group_parser, group_roller

from agentharness.train import llama_forward

MODES = {"oneDNN": True, "MKL (blocks)": False}
SHAPES = {
    "q/k/v": (960, 576),
    "o": (576, 576),
    "gate/up": (3072, 576),
    "down": (576, 1536),
    "head": (49152, 576),
}


def median_ms(product: Callable[[], Any], repeats: int) -> float:
    product()
    times = []
    for _ in range(5):
        started = time.perf_counter()
        for _ in range(repeats):
            product()
        times.append(1000 * (time.perf_counter() - started) / repeats)
    return statistics.median(times)


def in_blocks(x: Any, blocks: tuple[Any, ...]) -> Any:
    return torch.cat([F.linear(x, b) for b in blocks], -1)


def products() -> None:
    """Part 1: each product alone, MKL (one product and blocks) against oneDNN."""
    generator = torch.Generator().manual_seed(0)
    print("product  rows   MKL ms  blocks ms  oneDNN ms  oneDNN vs best MKL  max |diff|")
    for rows in (8, 32, 512):
        for name, (out, inp) in SHAPES.items():
            weight = torch.randn(out, inp, generator=generator) * 0.02
            x = torch.randn(rows, inp, generator=generator)
            packed = llama_forward._packed(weight)
            assert packed is not None, "this torch has no oneDNN products"
            blocks = tuple(weight.split(llama_forward.SPLIT_BLOCK_ROWS))
            repeats = max(3, int(1e8 / (rows * out * inp)))
            onednn_product = partial(
                torch.ops.mkldnn._linear_pointwise, x, packed, None, "none", [], ""
            )
            mkl = median_ms(partial(F.linear, x, weight), repeats)
            split = median_ms(partial(in_blocks, x, blocks), repeats)
            onednn = median_ms(onednn_product, repeats)
            diff = (onednn_product() - F.linear(x, weight)).abs().max()
            print(
                f"{name:>7} {rows:5d} {mkl:8.2f} {split:10.2f} {onednn:10.2f} "
                f"{min(mkl, split) / onednn:18.2f}x {float(diff):11.1e}"
            )


def main() -> None:
    parser = group_parser(max_turns=4)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    products()
    _, _, roller, instance = group_roller(args, rollout_dtype="float32")
    print(
        f"{instance.task} ({args.difficulty}) seed {args.seed}, group {args.group}, "
        f"{args.threads} thread(s), drafts {args.draft_tokens}, float32 sampling model"
    )
    switches = {
        mode: partial(setattr, llama_forward, "ONEDNN_PRODUCTS", on) for mode, on in MODES.items()
    }
    compare_settings(roller, instance, args, switches, baseline="MKL (blocks)")


if __name__ == "__main__":
    main()
