"""GRPO rollout throughput: a group played in one lockstep batch vs. its episodes one by one.

Both sides run the same ``EpisodeRoller`` code in the same process: the baseline calls
``play_group(instance, 1, ...)`` G times, the batched side ``play_group(instance, G, ...)``
once. Rounds alternate the two so load drifts hit both alike. Reported per round: wall
seconds per group and sampled (model-written) tokens per second; medians over rounds.

    python bench/grpo_rollout.py [--model DIR] [--task thermal] [--group 4] [--rounds 3]

``--model`` defaults to the bundled SmolLM2-135M-Instruct.
"""

from __future__ import annotations

import argparse
import statistics
import time

from agentharness import get_task
from agentharness.train.grpo import EpisodeRoller, GRPOOptions
from agentharness.train.model import load_trainable


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default=None)
    parser.add_argument("--task", default="thermal")
    parser.add_argument("--group", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-turns", type=int, default=3)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    args = parser.parse_args()
    net, tok = load_trainable(args.model)
    opts = GRPOOptions(
        max_turns=args.max_turns, max_new_tokens=args.max_new_tokens, max_completion_length=4096
    )
    roller = EpisodeRoller(net, tok, opts)
    spec = get_task(args.task)
    results: dict[str, list[tuple[float, float]]] = {"one by one": [], "batched": []}
    for r in range(args.rounds):
        instance = spec.instance(100_000 + r, "easy")
        for side in results:
            t0 = time.perf_counter()
            if side == "batched":
                rollouts = roller.play_group(instance, args.group, seed=r)
            else:
                rollouts = [
                    roller.play_group(instance, 1, seed=r * 100 + k)[0] for k in range(args.group)
                ]
            wall = time.perf_counter() - t0
            sampled = sum(sum(x.env_mask) for x in rollouts)
            results[side].append((wall, sampled / wall))
            print(f"round {r} {side:>10}: {wall:6.1f} s/group, {sampled / wall:5.1f} sampled tok/s")
    med = {
        side: (statistics.median(w for w, _ in v), statistics.median(t for _, t in v))
        for side, v in results.items()
    }
    print(
        f"\n{spec.id} easy, group {args.group}, <= {args.max_turns} turns x "
        f"{args.max_new_tokens} tokens, {args.rounds} rounds (medians)"
    )
    print("| side | s/group | sampled tok/s |\n| --- | ---: | ---: |")
    for side, (wall, rate) in med.items():
        print(f"| {side} | {wall:.1f} | {rate:.1f} |")
    print(f"batched / one-by-one throughput: {med['batched'][1] / med['one by one'][1]:.2f}x")


if __name__ == "__main__":
    main()
