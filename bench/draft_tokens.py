"""GRPO rollouts with and without drafts (speculative sampling, ``--draft-tokens``), A/B in
one process.

Plays groups of one instance with each ``--drafts`` setting, rounds alternating the order,
the same sampling seeds for every setting. Drafting changes which random numbers a token
uses, so the settings sample different (equally distributed) episodes of different
lengths: besides wall time per group the table gives seconds per sampled token and the
forward passes per sampled token, which do not depend on how long the episodes ran.

    python bench/draft_tokens.py --model experiments/out/v18/models/sft/final \\
        --task robot_reach --seed 100001 --drafts 0,3 --rounds 3 --groups 2

``--model`` defaults to the bundled SmolLM2-135M-Instruct. Figures: bench/RESULTS.md.
"""

from __future__ import annotations

import dataclasses
import statistics
import time

from group_setup import group_parser, group_roller


def main() -> None:
    parser = group_parser(max_turns=4)
    parser.add_argument("--drafts", default="0,3", help="draft_tokens settings to compare")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--groups", type=int, default=2, help="sampling seeds per round")
    args = parser.parse_args()
    settings = [int(k) for k in args.drafts.split(",")]
    _, _, roller, instance = group_roller(args)
    base_opts = roller.opts
    roller.play_group(instance, args.group, seed=99)  # warm-up, untimed
    rows: dict[int, dict[str, list[float]]] = {
        k: {"wall": [], "tokens": [], "passes": [], "drafted": [], "kept": []} for k in settings
    }
    print(f"{instance.task} seed {args.seed}, group {args.group}, {args.threads} thread(s)")
    for r in range(args.rounds):
        order = settings if r % 2 == 0 else list(reversed(settings))
        for k in order:
            roller.opts = dataclasses.replace(base_opts, draft_tokens=k)
            for g in range(args.groups):
                started = time.perf_counter()
                rollouts = roller.play_group(instance, args.group, seed=g)
                wall = time.perf_counter() - started
                sampled = sum(sum(x.env_mask) for x in rollouts)
                passes = roller.stats["decode"][0]
                row = rows[k]
                row["wall"].append(wall)
                row["tokens"].append(sampled)
                row["passes"].append(passes)
                row["drafted"].append(roller.drafts[0])
                row["kept"].append(roller.drafts[1])
                print(
                    f"round {r} drafts {k} seed {g}: {wall:.1f} s, {sampled} sampled tokens, "
                    f"{passes} decoding passes, drafts kept {roller.drafts[1]}/{roller.drafts[0]}"
                )
    base = settings[0]
    base_rate = sum(rows[base]["wall"]) / sum(rows[base]["tokens"])
    print(f"\n{args.rounds} rounds x {args.groups} groups per setting")
    print(
        "| draft tokens | s/group (median) | ms per sampled token | vs "
        f"{base} | decoding passes per sampled token | drafts kept |"
    )
    print("| ---: | ---: | ---: | ---: | ---: | ---: |")
    for k, row in rows.items():
        rate = sum(row["wall"]) / sum(row["tokens"])
        per_pass = sum(row["passes"]) / sum(row["tokens"])
        drafted = sum(row["drafted"])
        kept = f"{sum(row['kept']) / drafted:.0%}" if drafted else "-"
        print(
            f"| {k} | {statistics.median(row['wall']):.1f} | {1000 * rate:.1f} | "
            f"{base_rate / rate:.2f}x | {per_pass:.2f} | {kept} |"
        )


if __name__ == "__main__":
    main()
