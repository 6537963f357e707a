"""GRPO rollouts with and without copying replies between episodes that agree, A/B in one
process.

A reply to a conversation another episode of the group has already read is copied from
that episode's cache (``EpisodeRoller._read``); the "read" setting reads every reply
itself, as before. Both give the same episodes for the same sampling seeds (a copy holds
the values the read would compute), so wall times compare directly. Rounds alternate the
order; decoding and reading seconds come from the decoder's counters.

    python bench/shared_reads.py --model experiments/out/v18/models/sft/final \\
        --task robot_reach --seed 100001 --rounds 2 --groups 2

``--model`` defaults to the bundled SmolLM2-135M-Instruct. Figures: bench/RESULTS.md.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from group_setup import group_parser, group_roller

from agentharness.train.grpo import EpisodeRoller


def read_every_reply(self: EpisodeRoller, decoder: Any, rows: Any, replies: Any, known: Any) -> Any:
    return decoder.step(replies)


def main() -> None:
    parser = group_parser(max_turns=4)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--groups", type=int, default=2, help="sampling seeds per round")
    parser.set_defaults(draft_tokens=3)
    args = parser.parse_args()
    _, _, roller, instance = group_roller(args)
    copying = EpisodeRoller._read
    roller.play_group(instance, args.group, seed=99)  # warm-up, untimed
    settings = {"copy": copying, "read": read_every_reply}
    walls: dict[str, list[float]] = {name: [] for name in settings}
    print(f"{instance.task} seed {args.seed} ({args.difficulty}), group {args.group}")
    for r in range(args.rounds):
        for name in settings if r % 2 == 0 else reversed(settings):
            EpisodeRoller._read = settings[name]  # type: ignore[method-assign]
            for g in range(args.groups):
                started = time.perf_counter()
                roller.play_group(instance, args.group, seed=g)
                wall = time.perf_counter() - started
                walls[name].append(wall)
                decode, read = roller.stats["decode"], roller.stats["read"]
                print(
                    f"round {r} {name} seed {g}: {wall:.1f} s; decoding {decode[2]:.1f} s, "
                    f"{read[0]} reads of {read[1]} tokens {read[2]:.1f} s, "
                    f"{roller.copied_reads} replies copied"
                )
    EpisodeRoller._read = copying  # type: ignore[method-assign]
    base = statistics.median(walls["read"])
    print("\n| replies | s/group (median) | vs reading every reply |")
    print("| --- | ---: | ---: |")
    for name, times in walls.items():
        print(
            f"| {name} | {statistics.median(times):.1f} | {base / statistics.median(times):.2f}x |"
        )


if __name__ == "__main__":
    main()
