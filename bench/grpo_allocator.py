"""A GRPO stage under glibc's malloc against mimalloc: does the process slow and grow?

Each run is a whole ``bootcamp train grpo`` process of ``--steps`` steps of one group of 8
episodes on thermal-v6 medium (≤ 4 turns × 128 tokens, temperature 1, the KL term of the
experiment's stage, every group trained), the same seed, one after another in ``--modes``:
``glibc`` (``AGENTHARNESS_MALLOC=glibc``: glibc's malloc keeping freed memory, the default
before session 43), ``mimalloc-purge`` (mimalloc preloaded by the process's restart,
returning freed pages after 10 ms: the default of sessions 43-44) and ``mimalloc-keep``
(mimalloc keeping freed pages, ``MIMALLOC_PURGE_DELAY=-1``: SFT's setting since session 44,
GRPO's since session 45). The script reads each step's
rollout seconds, drafted tokens, resident memory and TRL's ``step_time`` from the log, and
reports the early and late steps' medians: a heap that fragments shows as late steps slower
than early ones, and a resident size that keeps growing. Rollout seconds are also given per
1,000 drafted tokens, since the runs' groups need not write the same tokens.

    python bench/grpo_allocator.py --steps 10 [--model DIR] [--modes glibc mimalloc-purge mimalloc-keep]

Figures: bench/RESULTS.md, "The allocator of a GRPO process".
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

BOOTCAMP = str(Path(sys.executable).with_name("bootcamp"))
# Each mode's environment. MIMALLOC_PURGE_DELAY: 10 ms is mimalloc's own default (freed
# pages go back to the system); -1 keeps them (the training commands' setting).
MODES = {
    "glibc": {"AGENTHARNESS_MALLOC": "glibc"},
    "mimalloc-purge": {"AGENTHARNESS_MALLOC": "mimalloc", "MIMALLOC_PURGE_DELAY": "10"},
    "mimalloc-keep": {"AGENTHARNESS_MALLOC": "mimalloc", "MIMALLOC_PURGE_DELAY": "-1"},
}
STEP = re.compile(
    r"\[grpo\] step (\d+): .*?rollouts ([\d.]+) s, resident ([\d.]+) GB"
    r"(?:, drafted tokens kept \d+/(\d+))?"
)
STEP_TIME = re.compile(r"'step_time': '([\d.]+)'")


def run(mode: str, steps: int, model: str | None, out: Path) -> tuple[list[dict[str, float]], str]:
    """One ``bootcamp train grpo`` process under ``mode``: a row of figures per step, and
    its log."""
    env = {**os.environ, **MODES[mode]}
    cmd = [
        BOOTCAMP, "train", "grpo", "--out", str(out), "--tasks", "thermal-v6",
        "--difficulty", "medium", "--n-instances", str(steps), "--num-generations", "8",
        "--max-turns", "4", "--max-new-tokens", "128", "--beta", "0.04",
        "--train-flat-groups", "--lr", "3e-5", "--rollout-dtype", "auto",
        "--max-steps", str(steps), "--no-progress",
        *(["--model", model] if model else []),
    ]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    log = proc.stdout + proc.stderr
    if proc.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{log[-2000:]}")
    summary = json.loads((out / "train_summary.json").read_text())
    if summary.get("allocator") != MODES[mode]["AGENTHARNESS_MALLOC"]:
        raise SystemExit(f"asked for {mode}, the run says it ran under {summary.get('allocator')}")
    rows = [
        {
            "rollouts": float(m[1]),
            "resident": float(m[2]),
            "drafted": float(m[3] or 0),
        }
        for m in STEP.findall(log)
    ]
    for row, step_time in zip(rows, STEP_TIME.findall(log), strict=False):
        row["step"] = float(step_time)
    return rows, log


def report(mode: str, rows: list[dict[str, float]]) -> dict[str, float]:
    third = max(1, len(rows) // 3)
    early, late = rows[:third], rows[-third:]

    def median(part: list[dict[str, float]], key: str) -> float:
        return statistics.median(r[key] for r in part)

    def per_k(part: list[dict[str, float]]) -> float:
        return statistics.median(1000 * r["rollouts"] / max(1.0, r["drafted"]) for r in part)

    figures = {
        "step_early": median(early, "step"),
        "step_late": median(late, "step"),
        "rollouts_per_1k_early": per_k(early),
        "rollouts_per_1k_late": per_k(late),
        "resident_early": median(early, "resident"),
        "resident_last": rows[-1]["resident"],
        "step_median": median(rows, "step"),
    }
    print(
        f"{mode:9s} step median {figures['step_median']:.1f} s "
        f"(first {third}: {figures['step_early']:.1f}, last {third}: {figures['step_late']:.1f}); "
        f"rollouts per 1k drafted tokens {figures['rollouts_per_1k_early']:.1f} -> "
        f"{figures['rollouts_per_1k_late']:.1f} s; resident "
        f"{figures['resident_early']:.1f} -> {figures['resident_last']:.1f} GB"
    )
    print("          steps: " + " ".join(f"{r['step']:.0f}" for r in rows))
    print("          rollouts: " + " ".join(f"{r['rollouts']:.0f}" for r in rows))
    print("          resident: " + " ".join(f"{r['resident']:.1f}" for r in rows))
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--model", help="checkpoint directory (default: the bundled SmolLM2)")
    parser.add_argument("--logs", type=Path, help="keep each run's log here (MODE.log)")
    parser.add_argument(
        "--modes", nargs="+", choices=list(MODES), default=["glibc", "mimalloc-purge"]
    )
    args = parser.parse_args()
    modes: list[str] = args.modes
    figures = {}
    with tempfile.TemporaryDirectory() as tmp:
        for mode in modes:
            rows, log = run(mode, args.steps, args.model, Path(tmp) / mode)
            if args.logs:
                args.logs.mkdir(parents=True, exist_ok=True)
                (args.logs / f"{mode}.log").write_text(log)
            figures[mode] = report(mode, rows)
    base = figures[modes[0]]
    for mode in modes[1:]:
        other = figures[mode]
        print(
            f"{modes[0]} / {mode}: step median {base['step_median'] / other['step_median']:.2f}x, "
            f"late steps {base['step_late'] / other['step_late']:.2f}x, late rollouts per token "
            f"{base['rollouts_per_1k_late'] / other['rollouts_per_1k_late']:.2f}x, "
            f"last resident {base['resident_last'] / other['resident_last']:.2f}x"
        )


if __name__ == "__main__":
    main()
