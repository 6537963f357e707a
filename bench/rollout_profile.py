"""Where a GRPO group's rollout time goes: ``EpisodeRoller.play_group`` under cProfile.

Prints the wall time, the decoder's pass counts (decoding steps and reading passes, with
their tokens and seconds) and the functions by cumulative time, so the weights' matrix
products, the attention over the cache and sampling can be read off.

    python bench/rollout_profile.py --model experiments/out/v14/models/sft/final \\
        --task robot_reach --seed 100001 --threads 2

``--model`` defaults to the bundled SmolLM2-135M-Instruct. Figures: bench/RESULTS.md.
"""

from __future__ import annotations

import cProfile
import pstats
import time

from group_setup import group_parser, group_roller


def main() -> None:
    parser = group_parser(max_turns=6)
    args = parser.parse_args()
    _, _, roller, instance = group_roller(args)
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
    print(f"drafted tokens, kept: {roller.drafts}")
    pstats.Stats(profile).sort_stats("cumulative").print_stats(35)


if __name__ == "__main__":
    main()
