"""bfloat16 against float32 matrix products on this CPU, and what ``auto`` picks here.

Training and sampling spend their time in matrix products of a few shapes: SmolLM2-135M's
MLP (512 tokens × 576 by 576 × 1536) and its LM head (64 tokens × 576 by 576 × 49,152;
few tokens, so that the slow case ends). This
times each shape in float32, in bfloat16, and in float32 under bfloat16 autocast (what
``--train-dtype bfloat16`` runs), medians of ``--repeats`` calls after a warm-up, and
prints the ratios against float32 in the same process, with the CPU's relevant flags and
what ``--train-dtype auto`` resolves to (``train.model.resolve_dtype``):

    python bench/dtype_matmul.py --threads 2

On a CPU with AVX-512 BF16 or AMX, bfloat16 is the faster; on one with AVX2 only, torch
emulates it and it is far slower. Figures: bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path

SHAPES = {"mlp": (512, 576, 1536), "lm head": (64, 576, 49152)}
FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_bf16")


def cpu_flags() -> list[str]:
    """The flags in FLAGS this CPU reports (Linux)."""
    info = Path("/proc/cpuinfo")
    if not info.exists():
        return []
    words = set(
        next((ln for ln in info.read_text().splitlines() if ln.startswith("flags")), "").split()
    )
    return [f for f in FLAGS if f in words]


def median_ms(call: Callable[[], object], repeats: int) -> float:
    """Median milliseconds of ``call`` over ``repeats`` calls, after one warm-up call."""
    call()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    import torch

    from agentharness.train.model import fast_bfloat16, resolve_dtype

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    print(
        f"torch {torch.__version__}, {args.threads} threads, CPU flags {cpu_flags()}, "
        f"fast bfloat16: {fast_bfloat16()}, --train-dtype auto -> {resolve_dtype('auto')}"
    )
    print(
        "| shape | float32 ms | bfloat16 ms | autocast ms | bfloat16 / float32 | autocast / float32 |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, (m, k, n) in SHAPES.items():
        a, b = torch.randn(m, k), torch.randn(k, n)
        a16, b16 = a.bfloat16(), b.bfloat16()

        def autocast(a: torch.Tensor = a, b: torch.Tensor = b) -> torch.Tensor:
            with torch.autocast("cpu", dtype=torch.bfloat16):
                return a @ b

        fp32 = median_ms(lambda a=a, b=b: a @ b, args.repeats)
        bf16 = median_ms(lambda a=a16, b=b16: a @ b, args.repeats)
        auto = median_ms(autocast, args.repeats)
        print(
            f"| {name} {m}×{k} by {k}×{n} | {fp32:.1f} | {bf16:.1f} | {auto:.1f} | "
            f"{bf16 / fp32:.2f} | {auto / fp32:.2f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
