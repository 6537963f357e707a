"""Per-task figures: generation rate, tool latency, expert and random reward per difficulty.

Runs ``bootcamp eval --agent expert|random --tasks all -n SEEDS --difficulty D`` for each
difficulty (the same command a user runs), then reads the run directories:

* generation: median seconds to generate one instance (instances / s), per task, measured
  in this process over the same seeds;
* tool latency: median ``latency_s`` of the expert's tool calls (the simulator's time);
* expert / random: mean reward and success rate per difficulty over SEEDS seeds.

    python bench/tasks.py [--seeds 20] [--out runs/bench-tasks]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

from agentharness import all_tasks
from agentharness.store import RunDir

DIFFICULTIES = ("easy", "medium", "hard")


def eval_run(agent: str, difficulty: str, seeds: int, out: Path) -> Path:
    run = out / f"{agent}-{difficulty}"
    cmd = [
        sys.executable,
        "-m",
        "agentharness.cli",
        "eval",
        "--agent",
        agent,
        "--tasks",
        "all",
        "-n",
        str(seeds),
        "--difficulty",
        difficulty,
        "--concurrency",
        "2",
        "--out",
        str(run),
        "--quiet",
    ]
    print("$ bootcamp " + " ".join(cmd[3:]), file=sys.stderr, flush=True)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return run


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--out", type=Path, default=Path("runs/bench-tasks"))
    args = parser.parse_args()

    gen: dict[str, list[float]] = defaultdict(list)
    for spec in all_tasks():
        for difficulty in DIFFICULTIES:
            for seed in range(args.seeds):
                t0 = time.perf_counter()
                spec.instance(seed, difficulty)
                gen[spec.id].append(time.perf_counter() - t0)

    scores: dict[tuple[str, str, str], tuple[float, float]] = {}
    latency: dict[str, list[float]] = defaultdict(list)
    for difficulty in DIFFICULTIES:
        for agent in ("expert", "random"):
            run = eval_run(agent, difficulty, args.seeds, args.out)
            by_task = defaultdict(list)
            for r in RunDir(run).episodes():
                by_task[r.task].append(r)
                if agent == "expert":
                    latency[r.task].extend(
                        c.metrics["latency_s"]
                        for c in r.tool_calls
                        if "latency_s" in c.metrics and not c.is_error
                    )
            for task, recs in by_task.items():
                scores[(task, difficulty, agent)] = (
                    statistics.fmean(r.reward.total for r in recs),
                    statistics.fmean(float(r.reward.success) for r in recs),
                )

    header = ["task", "gen ms (median)", "instances/s", "tool ms (median)"]
    for d in DIFFICULTIES:
        header += [f"expert {d} (reward / success)", f"random {d}"]
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for spec in all_tasks():
        g = statistics.median(gen[spec.id])
        lat = statistics.median(latency[spec.id]) * 1e3 if latency[spec.id] else float("nan")
        row = [spec.id, f"{g * 1e3:.1f}", f"{1 / g:.0f}", f"{lat:.2f}"]
        for d in DIFFICULTIES:
            e = scores.get((spec.id, d, "expert"), (float("nan"),) * 2)
            r = scores.get((spec.id, d, "random"), (float("nan"),) * 2)
            row += [f"{e[0]:.3f} / {e[1]:.2f}", f"{r[0]:.3f} / {r[1]:.2f}"]
        print("| " + " | ".join(row) + " |")
    (args.out / "tasks.json").write_text(
        json.dumps({f"{k[0]}|{k[1]}|{k[2]}": v for k, v in scores.items()})
    )


if __name__ == "__main__":
    main()
