"""Scaling a CPU-bound task from 1 to 2 Ray workers (``bootcamp eval --backend ray``).

The expert plays ``--episodes`` episodes of a simulator-heavy task (molecule: ASE
relaxations; battery: PyBaMM DFN runs) through the Ray backend with 1 and then 2 workers,
one episode in flight per worker (each worker is one process on one core; Ray sets
OMP_NUM_THREADS to the worker's CPUs, so BLAS does not spread a worker over both cores).
Runs alternate between 1 and 2 workers so drifting load hits both alike. Timing starts
once the workers are up (they load every task first) and ends with the last episode
received; instances are generated on the workers, as in a real run.

    python bench/scaling.py [--task molecule] [--episodes 12] [--difficulty easy] [--repeats 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time

from agentharness import get_task
from agentharness.rollout.ray_backend import AgentSpec, RayConfig, run_ray
from agentharness.rollout.runner import plan
from agentharness.store import RunDir


async def one_run(task: str, n: int, difficulty: str, seed: int, workers: int) -> tuple[float, float]:
    """(seconds, mean reward) of ``n`` expert episodes on ``workers`` workers."""
    items = plan([get_task(task)], n=n, seed=seed, difficulty=difficulty)
    t0, last = [0.0], [0.0]
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = RunDir(tmp)
        run_dir.create({"bench": "scaling"})
        await run_ray(
            items,
            AgentSpec("expert"),
            run_dir,
            ray_config=RayConfig(workers=workers),
            concurrency=workers,
            on_workers=lambda _: t0.__setitem__(0, time.perf_counter()),
            on_received=lambda _: last.__setitem__(0, time.perf_counter()),
        )
        rewards = [r.reward.total for r in run_dir.episodes()]
    assert len(rewards) == n, f"{len(rewards)} of {n} episodes came back"
    return last[0] - t0[0], statistics.mean(rewards)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--task", default="molecule")
    parser.add_argument("--episodes", type=int, default=12)
    parser.add_argument("--difficulty", default="easy")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    import ray

    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False,
             logging_level="WARNING")
    try:
        walls: dict[int, list[float]] = {1: [], 2: []}
        for r in range(args.repeats):
            for workers in (1, 2) if r % 2 == 0 else (2, 1):
                # The same seeds every time, so both widths play the same episodes.
                wall, reward = asyncio.run(one_run(args.task, args.episodes, args.difficulty, 0, workers))
                walls[workers].append(wall)
                print(f"  run {r}: {workers} worker(s) {wall:.1f} s, mean reward {reward:.3f}", flush=True)
    finally:
        ray.shutdown()
    load = os.getloadavg()[0]
    one, two = statistics.median(walls[1]), statistics.median(walls[2])
    print(f"{args.task} {args.difficulty}, {args.episodes} expert episodes, medians of "
          f"{args.repeats}; load average at the end {load:.1f} on {os.cpu_count()} cores")
    print("| workers | wall s (median) | runs (s) | episodes/s | speed-up |")
    print("|---|---|---|---|---|")
    for workers, wall in ((1, one), (2, two)):
        runs = ", ".join(f"{w:.1f}" for w in walls[workers])
        print(f"| {workers} | {wall:.1f} | {runs} | {args.episodes / wall:.2f} | {one / wall:.2f}x |")


if __name__ == "__main__":
    main()
