"""Throughput of N concurrent episodes against a local OpenAI-compatible server with 100 ms latency.

The server (agentharness.testing.openai_server, in its own process) answers every request
after a fixed latency L with a scripted policy: three tool-calling turns, then plain text,
which the episode answers with nudges until it ends as ``no_answer`` (six requests per
episode). With N episodes in flight, no harness can exceed N / L requests per second; the
figure reported is the achieved request rate as a fraction of that bound, measured end to
end through the real openai SDK, the episode loop, tool execution and the run log.

    python bench/throughput.py [--sizes 64 256 1024] [--latency 0.1] [--repeats 3]
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from agentharness import get_task
from agentharness.agents.openai_agent import OpenAIAgent
from agentharness.rollout.runner import plan, run
from agentharness.store import RunDir


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for(port: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("server did not start")


async def sdk_only_round(base_url: str, n: int, task: str, requests_per_episode: int) -> tuple[float, int]:
    """Baseline: the same agent and requests with no environment, tools or log."""
    env_prompt = get_task(task).instance(0, "easy")
    from agentharness.core.registry import episode_for

    episode = episode_for(env_prompt)
    agent = OpenAIAgent("scripted", base_url=base_url, concurrency=n, request_timeout_s=60)

    async def one(i: int) -> None:
        policy = agent.policy(env_prompt)
        for _ in range(requests_per_episode):
            await policy.act(list(episode.messages), episode.tools)

    t0 = time.perf_counter()
    await asyncio.gather(*(one(i) for i in range(n)))
    wall = time.perf_counter() - t0
    await agent.aclose()
    return wall, n * requests_per_episode


async def one_round(base_url: str, n: int, task: str) -> tuple[float, int]:
    items = plan([get_task(task)], n=n, difficulty="easy")
    agent = OpenAIAgent("scripted", base_url=base_url, concurrency=n, request_timeout_s=60)
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = RunDir(tmp)
        run_dir.create({"bench": "throughput"})
        t0 = time.perf_counter()
        await run(items, agent, run_dir, concurrency=n)
        wall = time.perf_counter() - t0
        requests = sum(r.usage.requests for r in run_dir.episodes())
    await agent.aclose()
    return wall, requests


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[64, 256, 1024])
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--task", default="escape_room")
    args = parser.parse_args()

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, 8192)), hard))
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "agentharness.testing.openai_server", "--port", str(port),
         "--latency", str(args.latency), "--turns", "3"],
        stdout=subprocess.DEVNULL,
    )
    try:
        wait_for(port)
        base_url = f"http://127.0.0.1:{port}/v1"
        asyncio.run(one_round(base_url, 8, args.task))  # warm-up: imports, connections
        print(
            f"| N | requests/episode | harness wall s (median of {args.repeats}) | harness req/s "
            "| SDK-only req/s | harness / SDK-only | bound N/L | fraction of bound |"
        )
        print("|---|---|---|---|---|---|---|---|")
        for n in args.sizes:
            walls, base_walls, reqs = [], [], 0
            for _ in range(args.repeats):
                wall, reqs = asyncio.run(one_round(base_url, n, args.task))
                walls.append(wall)
                base_wall, base_reqs = asyncio.run(sdk_only_round(base_url, n, args.task, reqs // n))
                base_walls.append(base_wall)
            wall = statistics.median(walls)
            rate = reqs / wall
            base_rate = base_reqs / statistics.median(base_walls)
            bound = n / args.latency
            print(
                f"| {n} | {reqs / n:.1f} | {wall:.2f} | {rate:.0f} | {base_rate:.0f} | "
                f"{rate / base_rate:.2f} | {bound:.0f} | {rate / bound:.2f} |",
                flush=True,
            )
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
    main()
