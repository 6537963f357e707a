"""Reward integrity per task: expert, random and the best lazy policy on each difficulty.

Runs the adversarial check of ``bootcamp check`` (:func:`agentharness.conformance.adversarial_check`)
on every registered task and prints a markdown table: mean reward / success rate of the
expert, the random agent and the best lazy policy (by mean reward) per difficulty, the
expert's margin over it, and whether the check passes. ``--json`` also writes every
policy's scores.

    python bench/adversarial.py [--seeds 30] [--tasks all] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from agentharness.conformance import AdversarialReport, adversarial_check
from agentharness.core.registry import resolve_tasks


def row(report: AdversarialReport, difficulty: str) -> str:
    s = report.scores
    best = report.best_lazy(difficulty)

    def cell(policy: str) -> str:
        score = s[policy][difficulty]
        return f"{score.mean:.2f} / {score.success:.0%}"

    return (
        f"| {report.task} | {difficulty} | {cell('expert')} | {cell('random')} | {best} | "
        f"{cell(best)} | {report.margin(difficulty):.2f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=30)
    parser.add_argument("--tasks", default="all")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()

    print(
        "| task | difficulty | expert (mean / success) | random | best lazy policy | "
        "its mean / success | margin |"
    )
    print("|---|---|---|---|---|---|---|")
    dump: dict[str, object] = {}
    failed = []
    for spec in resolve_tasks(args.tasks):
        t0 = time.perf_counter()
        report = adversarial_check(spec, seeds=args.seeds)
        for d in report.difficulties:
            print(row(report, d), flush=True)
        if report.failures:
            failed.append(spec.id)
        print(
            f"{spec.id}: {'FAIL' if report.failures else 'pass'} "
            f"({time.perf_counter() - t0:.0f} s)",
            file=sys.stderr,
            flush=True,
        )
        dump[spec.id] = {
            "failures": report.failures,
            "scores": {
                p: {d: vars(sc) for d, sc in by_d.items()} for p, by_d in report.scores.items()
            },
        }
    print(f"\nadversarial check: {len(failed)} failing: {', '.join(failed) or 'none'}")
    if args.json:
        args.json.write_text(json.dumps(dump, indent=1))


if __name__ == "__main__":
    main()
