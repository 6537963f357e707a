"""Two per-group overheads of GRPO rollouts, each A/B in one process.

1. The bfloat16 sampling copy: a fresh deep copy of the model (what every group made
   before) against refreshing the copy the roller keeps (``sampler(..., reuse=...)``);
   median of ``--copies`` calls each.
2. Decoding under ``torch.inference_mode`` against ``torch.no_grad``: the same group (same
   instance, same sampling seed) played with ``decode.INFERENCE_MODE`` on and off,
   alternating; per round the wall time, the milliseconds per decoding step and the seconds
   in reading passes, and whether both modes sampled the same tokens (they must: the arithmetic is
   the same, only autograd's bookkeeping differs).

    python bench/rollout_overheads.py --model experiments/out/v16/models/sft/final \\
        --task robot_reach --seed 100001 --rounds 3

``--model`` defaults to the bundled SmolLM2-135M-Instruct. Figures: bench/RESULTS.md.
"""

from __future__ import annotations

import statistics
import time
from functools import partial

from group_setup import compare_settings, group_parser, group_roller

from agentharness.train import decode
from agentharness.train.decode import sampler

MODES = {"inference_mode": True, "no_grad": False}


def main() -> None:
    parser = group_parser(max_turns=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--copies", type=int, default=5)
    args = parser.parse_args()
    net, _, roller, instance = group_roller(args)
    kept = sampler(net, "bfloat16")
    times: dict[str, list[float]] = {"fresh copy": [], "refreshed copy": []}
    for _ in range(args.copies):
        for kind in times:
            started = time.perf_counter()
            sampler(net, "bfloat16", reuse=kept if kind == "refreshed copy" else None)
            times[kind].append(time.perf_counter() - started)
    for kind, seconds in times.items():
        print(f"{kind}: {statistics.median(seconds):.3f} s (median of {args.copies})")
    del kept
    print(f"{instance.task} seed {args.seed}, group {args.group}, {args.threads} thread(s)")
    switches = {mode: partial(setattr, decode, "INFERENCE_MODE", on) for mode, on in MODES.items()}
    played = compare_settings(roller, instance, args, switches, baseline="no_grad")
    same = played["inference_mode"][-1].completion_ids == played["no_grad"][-1].completion_ids
    print(f"same tokens in both modes (last round): {same}")


if __name__ == "__main__":
    main()
