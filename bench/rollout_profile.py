"""Where a GRPO group's rollout time goes: ``EpisodeRoller.play_group`` under cProfile.

Prints the wall time, the decoder's pass counts (decoding steps and reading passes, with
their tokens and seconds) and the functions by cumulative time, so the weights' matrix
products, the attention over the cache and sampling can be read off.

    python bench/rollout_profile.py --model experiments/out/v14/models/sft/final \\
        --task robot_reach-v5 --seed 100001 --threads 2

``--model`` defaults to the bundled SmolLM2-135M-Instruct. Figures: bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import time

import torch

from agentharness import get_task
from agentharness.train.grpo import EpisodeRoller, GRPOOptions
from agentharness.train.model import load_trainable


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default=None)
    parser.add_argument("--task", default="robot_reach-v5")
    parser.add_argument("--seed", type=int, default=100001, help="the instance's seed (easy)")
    parser.add_argument("--group", type=int, default=8)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--max-turns", type=int, default=6)
    parser.add_argument("--max-new-tokens", type=int, default=160)
    parser.add_argument("--rollout-dtype", default="bfloat16")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    net, tok = load_trainable(args.model)
    opts = GRPOOptions(
        max_turns=args.max_turns,
        max_new_tokens=args.max_new_tokens,
        max_completion_length=4096,
        rollout_dtype=args.rollout_dtype,
    )
    roller = EpisodeRoller(net, tok, opts)
    instance = get_task(args.task).instance(args.seed, "easy")
    profile = cProfile.Profile()
    started = time.perf_counter()
    profile.enable()
    rollouts = roller.play_group(instance, args.group, seed=0)
    profile.disable()
    wall = time.perf_counter() - started
    sampled = sum(sum(r.env_mask) for r in rollouts)
    print(f"{instance.task} seed {args.seed}, group {args.group}, {args.threads} thread(s)")
    print(f"wall {wall:.1f} s, {sampled} sampled tokens, {roller.forward_passes} forward passes")
    print(f"decoder [passes, tokens, seconds]: {roller.stats}")
    pstats.Stats(profile).sort_stats("cumulative").print_stats(35)


if __name__ == "__main__":
    main()
