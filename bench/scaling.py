"""Scaling a CPU-bound task from 1 to 2 Ray workers (``bootcamp eval --backend ray``).

The expert plays ``--episodes`` episodes of a simulator-heavy task (battery: PyBaMM DFN
runs, in generation and in the tools; molecule: ASE relaxations) through the Ray backend with 1 and then 2 workers,
one episode in flight per worker (each worker is one process on one core; Ray sets
OMP_NUM_THREADS to the worker's CPUs, so BLAS does not spread a worker over both cores).
Runs alternate between 1 and 2 workers so drifting load hits both alike. Timing starts
once the workers are up (they load every task first) and ends with the last episode
received; instances are generated on the workers, as in a real run. The workers' CPU time
(psutil, local runs) says how many cores they actually got: on a shared machine the
scheduler, not the backend, decides that.

    python bench/scaling.py [--task battery] [--difficulty medium] [--episodes 64] [--repeats 3] [--control]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import tempfile
import time
from typing import Any

import psutil

from agentharness import get_task
from agentharness.rollout.ray_backend import AgentSpec, RayConfig, run_ray
from agentharness.rollout.runner import plan
from agentharness.store import RunDir


def cpu_of(pids: list[int]) -> float:
    total = 0.0
    for pid in pids:
        with contextlib.suppress(psutil.NoSuchProcess):
            total += sum(psutil.Process(pid).cpu_times()[:2])
    return total


async def one_run(
    task: str, n: int, difficulty: str, seed: int, workers: int
) -> tuple[float, float, float]:
    """(seconds, worker CPU seconds, mean reward) of ``n`` expert episodes on ``workers``."""
    items = plan([get_task(task)], n=n, seed=seed, difficulty=difficulty)
    pids: list[int] = []
    t0, last, cpu0, cpu = [0.0], [0.0], [0.0], [0.0]

    def started(infos: list[dict[str, Any]]) -> None:
        pids.extend(i["pid"] for i in infos)
        cpu0[0], t0[0] = cpu_of(pids), time.perf_counter()

    def received(_: str) -> None:
        last[0], cpu[0] = time.perf_counter(), cpu_of(pids)

    with tempfile.TemporaryDirectory() as tmp:
        run_dir = RunDir(tmp)
        run_dir.create({"bench": "scaling"})
        await run_ray(
            items,
            AgentSpec("expert"),
            run_dir,
            ray_config=RayConfig(workers=workers),
            concurrency=workers,
            on_workers=started,
            on_received=received,
        )
        rewards = [r.reward.total for r in run_dir.episodes()]
    assert len(rewards) == n, f"{len(rewards)} of {n} episodes came back"
    return last[0] - t0[0], cpu[0] - cpu0[0], statistics.mean(rewards)


def burn(seconds: float) -> float:
    """Spin for ``seconds`` of wall time; the CPU seconds the scheduler gave this process."""
    t, c = time.time(), time.process_time()
    while time.time() - t < seconds:
        pass
    return time.process_time() - c


def control(seconds: float = 6.0) -> None:
    """What 1 and 2 Ray processes get of the machine when all they do is spin."""
    import ray

    task = ray.remote(num_cpus=1)(burn)
    print("control: busy loops in 1 and 2 Ray processes")
    print("| processes | cores they got together |")
    print("|---|---|")
    for k in (1, 2):
        cpu = ray.get([task.remote(seconds) for _ in range(k)])
        print(f"| {k} | {sum(cpu) / seconds:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--task", default="battery")
    parser.add_argument("--episodes", type=int, default=64)
    parser.add_argument("--difficulty", default="medium")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument(
        "--control",
        action="store_true",
        help="first measure what 1 and 2 spinning processes get of the cores",
    )
    args = parser.parse_args()

    import ray

    ray.init(
        address="local",
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        logging_level="WARNING",
    )
    try:
        if args.control:
            control()
        walls: dict[int, list[float]] = {1: [], 2: []}
        cpus: dict[int, list[float]] = {1: [], 2: []}
        for r in range(args.repeats):
            for workers in (1, 2) if r % 2 == 0 else (2, 1):
                # The same seeds every time, so both widths play the same episodes.
                wall, cpu, reward = asyncio.run(
                    one_run(args.task, args.episodes, args.difficulty, 0, workers)
                )
                walls[workers].append(wall)
                cpus[workers].append(cpu)
                print(
                    f"  run {r}: {workers} worker(s) {wall:.1f} s, worker CPU {cpu:.1f} s, "
                    f"mean reward {reward:.3f}",
                    flush=True,
                )
    finally:
        ray.shutdown()
    load = os.getloadavg()[0]
    one, two = statistics.median(walls[1]), statistics.median(walls[2])
    print(
        f"{args.task} {args.difficulty}, {args.episodes} expert episodes, medians of "
        f"{args.repeats}; load average at the end {load:.1f} on {os.cpu_count()} cores"
    )
    print(
        "| workers | wall s (median) | runs (s) | episodes/s | speed-up | worker CPU s / episode "
        "| cores the workers got (CPU / wall) |"
    )
    print("|---|---|---|---|---|---|---|")
    for workers, wall in ((1, one), (2, two)):
        runs = ", ".join(f"{w:.1f}" for w in walls[workers])
        cpu = statistics.median(cpus[workers])
        print(
            f"| {workers} | {wall:.1f} | {runs} | {args.episodes / wall:.2f} | {one / wall:.2f}x | "
            f"{cpu / args.episodes:.3f} | {cpu / wall:.2f} |"
        )


if __name__ == "__main__":
    main()
